"""Rows (lists of dicts from the scanner) -> typed DataFrames, as declared in schema.py."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd

from .schema import TABLES, Table


def _typed(values: list, dtype: str) -> pd.api.extensions.ExtensionArray | np.ndarray:
    if dtype == "category":
        return pd.Categorical(values)
    if dtype == "float64":
        return np.array([np.nan if v is None else v for v in values], dtype="float64")
    if dtype.startswith("datetime64"):
        return pd.to_datetime(pd.Series(values, dtype="object"), format="ISO8601").to_numpy(
            dtype="datetime64[us]")
    return pd.array(values, dtype=dtype)


def _config_column(values: list) -> tuple[list, str]:
    """Pick a dtype for one server_args key across rows; containers become JSON text."""
    kinds = {type(v) for v in values if v is not None}
    if kinds <= {bool}:
        return values, "boolean"
    if kinds <= {int}:
        return values, "Int64"
    if kinds <= {int, float}:
        return [None if v is None else float(v) for v in values], "float64"
    out = []
    for v in values:
        if v is None or isinstance(v, str):
            out.append(v)
        elif isinstance(v, (list, dict, tuple)):
            try:
                out.append(json.dumps(v, default=str))
            except (TypeError, ValueError):
                out.append(repr(v))
        else:
            out.append(repr(v) if not isinstance(v, (bool, int, float)) else str(v))
    return out, "string"


def build_frame(table: Table, rows: list[dict]) -> pd.DataFrame:
    cols: dict[str, object] = {}
    n = len(rows)
    for c in table.columns:
        vals = [r.get(c.name) for r in rows] if n else []
        cols[c.name] = _typed(vals, c.dtype)
    if table.name == "server_args":
        keys: list[str] = []
        seen = set(table.names)
        for r in rows:
            for k in r.get("_args", {}):
                if k not in seen:
                    seen.add(k)
                    keys.append(k)
        for k in keys:
            vals, dtype = _config_column([r.get("_args", {}).get(k) for r in rows])
            cols[k] = _typed(vals, dtype)
    return pd.DataFrame(cols, index=pd.RangeIndex(n))


def empty_frame(name: str) -> pd.DataFrame:
    return build_frame(TABLES[name], [])
