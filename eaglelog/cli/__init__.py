"""The command line: parse arguments, call the library, render, echo.  Nothing else lives here.

``_base.py`` is the shell (the `eaglelog` group, its one-line errors, the shared options, reading
inputs, writing results, the console entry ``run``); the commands live one family a module:
``inputs`` (parse, export, cache), ``analyses`` (summary, breakeven, reconcile, compare, sweep,
requests, acceptance, whatif, schedule, latency), ``pictures`` (plot, report), ``live`` (watch,
fleet).  Importing them registers their commands on ``main``.
"""
from ._base import ENGINE_CHOICES, main, run  # noqa: F401
from . import inputs, analyses, pictures, live  # noqa: F401,E402  (register the commands)
from .analyses import PAIR_BY, REQUEST_GROUPINGS  # noqa: F401
from .pictures import PLOT_KINDS  # noqa: F401
