"""Live servers: their /metrics endpoints and Prometheus read into the model, and the
applications on top.

* ``metrics`` (scraping /metrics: bounded, deadlines, no redirects, escaped text; the Recorder
  and its tables), ``histograms`` (TTFT/TPOT quantiles from bucket counts), ``prom``
  (Prometheus' HTTP API, on metrics' HTTP code) and ``live_sources`` (both read into a
  ParsedLog for ``api.parse``): the readers' layer, importing the model and below.
* ``watch`` (the live view and its alerts) and ``fleet`` (every replica's verdict): applications,
  importing the analyses too.
* ``rules`` (the Prometheus recording and alerting rules of ``export --prometheus-rules``):
  core, importing nothing of eaglelog.

docs/dev/architecture.md draws the layers; tests/test_layers.py keeps them.
"""
