"""The C accelerator of the scanner (eaglelog/parsers/_fastscan.c); everything else is in
pyproject.toml.  It is optional: without a C compiler the package installs and reads every log
with the Python parser alone, several times more slowly
(`python -c "from eaglelog.parsers import scan; print(scan.fast_available())"` says which)."""
from setuptools import Extension, setup

setup(ext_modules=[Extension("eaglelog.parsers._fastscan", ["eaglelog/parsers/_fastscan.c"],
                             extra_compile_args=["-O2"], optional=True)])
