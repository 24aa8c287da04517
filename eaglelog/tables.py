"""Rows (lists of dicts from the scanner) -> typed DataFrames, as declared in schema.py."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd

from .schema import Table


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


def _convert(col: pd.Series, dtype: str):
    if dtype == "category":
        return col.astype("category")
    if dtype == "float64":
        return pd.to_numeric(col, errors="coerce").astype("float64")
    if dtype.startswith("datetime64"):
        return pd.to_datetime(col, format="ISO8601").astype("datetime64[us]")
    if dtype == "string":
        return col.astype("string")
    return pd.array(col.astype("object").where(col.notna(), None), dtype=dtype)


def build_frame(table: Table, rows: list[dict], keep: tuple[str, ...] = ()) -> pd.DataFrame:
    """Typed frame with the schema's columns in order (missing ones all-NA), plus server_args'
    config keys, plus the private columns named in ``keep`` when present."""
    n = len(rows)
    raw = pd.DataFrame(rows) if n else pd.DataFrame()
    cols: dict[str, object] = {}
    for c in table.columns:
        if c.name in raw.columns:
            col = raw[c.name]
            if c.core or col.notna().any():
                cols[c.name] = _convert(col, c.dtype)
        elif c.core:
            cols[c.name] = _typed([None] * n, c.dtype)
    if table.name == "server_args" and "_args" in raw.columns:
        args = raw["_args"].tolist()
        keys: list[str] = []
        seen = set(table.names)
        for a in args:
            for k in a:
                if k not in seen:
                    seen.add(k)
                    keys.append(k)
        for k in keys:
            vals, dtype = _config_column([a.get(k) for a in args])
            cols[k] = _typed(vals, dtype)
    for k in keep:
        if k in raw.columns:
            cols[k] = raw[k].to_numpy()
    return pd.DataFrame(cols, index=pd.RangeIndex(n))


def conform(table: Table, df: pd.DataFrame) -> pd.DataFrame:
    """Give every schema column its schema dtype (after a parquet round trip, say)."""
    for c in table.columns:
        if c.name in df.columns and str(df[c.name].dtype) != c.dtype:
            df[c.name] = _convert(df[c.name], c.dtype)
    return df


def concat_frames(table: Table, frames: list[pd.DataFrame]) -> pd.DataFrame:
    """Concatenate partial frames of one table, keeping the schema dtypes (categories are
    unioned, not degraded to object)."""
    frames = [f for f in frames if len(f)]
    if not frames:
        return build_frame(table, [])
    if len(frames) == 1:
        return frames[0].reset_index(drop=True)
    out = pd.concat(frames, ignore_index=True, sort=False)
    known = [c for c in table.columns if c.name in out.columns]
    for c in known:  # a column missing from some parts comes back as object/float: re-type it
        if str(out[c.name].dtype) != c.dtype:
            out[c.name] = _convert(out[c.name], c.dtype)
    names = {c.name for c in known}
    for k in out.columns:       # server_args keys typed differently in different parts
        if k not in names and out[k].dtype == object:
            vals = [None if (v is None or v is pd.NA or (isinstance(v, float) and v != v))
                    else (v.item() if hasattr(v, "item") else v) for v in out[k].tolist()]
            vals, dtype = _config_column(vals)
            out[k] = _typed(vals, dtype)
    return out[[c.name for c in known] + [k for k in out.columns if k not in names]]
