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


def _na_series(dtype: str, n: int) -> pd.Series:
    return pd.Series(_typed([None] * n, dtype) if n < 4096 else
                     pd.array([None] * n, dtype=dtype) if dtype != "float64" else
                     np.full(n, np.nan))


def concat_frames(table: Table, frames: list[pd.DataFrame], consume: bool = False) -> pd.DataFrame:
    """Concatenate partial frames of one table column by column, keeping the schema dtypes
    (categories are unioned, not degraded to object).  With ``consume`` each column is deleted
    from the parts once copied, so a large table is never held twice."""
    frames = [f for f in frames if len(f)]
    if not frames:
        return build_frame(table, [])
    if len(frames) == 1:
        return frames[0].reset_index(drop=True)
    lens = [len(f) for f in frames]
    names = list(dict.fromkeys(c for f in frames for c in f.columns))
    schema = {c.name: c for c in table.columns}
    order = [c.name for c in table.columns if c.name in names] + \
        [k for k in names if k not in schema]
    out: dict[str, object] = {}
    for name in order:
        col = schema.get(name)
        parts = [f[name] if name in f.columns else None for f in frames]
        if col is not None:
            parts = [_na_series(col.dtype, n) if p is None else
                     p if str(p.dtype) == col.dtype else _convert(p, col.dtype)
                     for p, n in zip(parts, lens)]
            if col.dtype == "category":     # one category list for all parts: codes recoded
                cats = list(dict.fromkeys(c for p in parts for c in p.cat.categories))
                parts = [p.cat.set_categories(cats) for p in parts]
                merged = pd.concat(parts, ignore_index=True)
            else:
                merged = pd.concat(parts, ignore_index=True)
                if str(merged.dtype) != col.dtype:
                    merged = _convert(merged, col.dtype)
        else:     # a server_args key: typed from its values across all parts
            merged = pd.concat([pd.Series([None] * n, dtype=object) if p is None else p
                                for p, n in zip(parts, lens)], ignore_index=True)
            if merged.dtype == object or str(merged.dtype) != str(parts[0].dtype if parts[0]
                                                                  is not None else object):
                vals = [None if (v is None or v is pd.NA or (isinstance(v, float) and v != v))
                        else (v.item() if hasattr(v, "item") else v) for v in merged.tolist()]
                vals, dtype = _config_column(vals)
                merged = pd.Series(_typed(vals, dtype))
        out[name] = merged.reset_index(drop=True)
        del parts
        if consume:
            for f in frames:
                if name in f.columns:
                    del f[name]
    return pd.DataFrame(out, copy=False)
