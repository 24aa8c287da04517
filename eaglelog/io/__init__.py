"""Bytes and lines in, and parsing at scale — the input layer beside the parsers:

* ``sources`` (a path, '-', gz/xz/bz2/zst, read in chunks that end at line boundaries) and
  ``remote`` (``host:/path`` over the system's OpenSSH client): below the parsers, importing
  only the core (errors).
* ``parallel`` (byte ranges parsed by worker processes), ``batch`` (many small inputs in one
  pass) and ``cache`` (the typed tables kept between runs): above the parsers, which they drive.
* ``follow`` (a growing log, re-read as it grows): above the model (it builds ParsedLogs).

docs/dev/architecture.md draws the layers; tests/test_layers.py keeps them.
"""
