"""numpy and pandas, imported on first use by the modules a scan runs through.

Importing pandas takes about 0.3 s.  The scanning modules (api, parallel, tables, parsers) use it
only once rows are turned into frames, so they name it through these stand-ins: the C
accelerator's threads can start reading a large log while the command imports pandas and its
analysis modules (cli.read_logs), instead of after.
"""
from __future__ import annotations

import importlib
from types import ModuleType


class LazyModule:
    """Stands for a module; the first attribute looked up imports it."""

    def __init__(self, name: str) -> None:
        self.__dict__["_name"] = name
        self.__dict__["_module"] = None

    def _load(self) -> ModuleType:
        mod = self.__dict__["_module"]
        if mod is None:
            mod = importlib.import_module(self.__dict__["_name"])
            self.__dict__["_module"] = mod
        return mod

    def __getattr__(self, attr: str):
        return getattr(self._load(), attr)

    def __repr__(self) -> str:
        return f"<lazy module {self.__dict__['_name']!r}>"


np = LazyModule("numpy")
pd = LazyModule("pandas")
