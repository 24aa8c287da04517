"""Rows (lists of dicts from the scanner) -> typed DataFrames, as declared in schema.py."""
from __future__ import annotations

import json
from dataclasses import dataclass
from itertools import repeat
from typing import Callable


from . import frame as _frame
from ._lazy import np, pd
from .schema import Table


def _typed(values: list, dtype: str) -> pd.api.extensions.ExtensionArray | np.ndarray:
    if dtype == "category":
        return pd.Categorical(values)
    if dtype == "float64":
        return np.array([np.nan if v is None else v for v in values], dtype="float64")
    if dtype.startswith("datetime64"):
        return _datetimes(values)
    return pd.array(values, dtype=dtype)


def _datetimes(values: list, bad: list[int] | None = None) -> np.ndarray:
    """ISO date-times as datetime64[us]; a value that names no instant ('2026-02-10 14:00:99',
    out of datetime64's range) becomes NaT and its index goes to ``bad``: one damaged stamp
    never costs the column (the parsers range-check their stamps; this is the last guard)."""
    try:
        return pd.to_datetime(pd.Series(values, dtype="object"), format="ISO8601").to_numpy(
            dtype="datetime64[us]")
    except (ValueError, OverflowError, TypeError):
        pass
    out = np.full(len(values), np.datetime64("NaT"), dtype="datetime64[us]")
    for i, v in enumerate(values):
        if v is None or (isinstance(v, float) and v != v):
            continue
        try:
            out[i] = pd.Timestamp(pd.to_datetime(v, format="ISO8601")).to_datetime64()
        except (ValueError, OverflowError, TypeError):
            if bad is not None:
                bad.append(i)
    return out


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
        return pd.Series(_datetimes(col.astype("object").where(col.notna(), None).tolist()),
                         index=col.index)
    if dtype == "string":
        return col.astype("string")
    return pd.array(col.astype("object").where(col.notna(), None), dtype=dtype)


def _present(v) -> bool:
    return v is not None and v == v          # NaN (v != v) counts as missing, as in pandas


def _column(values: list, dtype: str, bad: list[int] | None = None):
    """One column's values (None for missing) as the schema dtype (a date-time that names no
    instant: NaT, its index in ``bad``)."""
    if dtype == "float64":
        nan = float("nan")
        try:
            return np.array([nan if v is None else v for v in values], dtype="float64")
        except (TypeError, ValueError):      # a text where a number belongs: NA, as before
            return pd.to_numeric(pd.Series(values, dtype=object), errors="coerce").to_numpy(
                dtype="float64")
    if dtype == "category":
        return pd.Categorical([v if v is not None and v == v else None for v in values])
    if dtype.startswith("datetime64"):
        return _datetimes(values, bad)
    if dtype == "string":
        return pd.array([v if v is None or isinstance(v, str) else str(v) for v in values],
                        dtype="string")
    clean = [v if v is not None and v == v else None for v in values]   # (_present, inline)
    try:
        return pd.array(clean, dtype=dtype)
    except (OverflowError, TypeError, ValueError):
        if not dtype.startswith(("Int", "UInt")):
            raise
    # an integer the column cannot hold (a 21-digit task id): left empty, its index in ``bad``
    info = np.iinfo(dtype.lower())
    for i, v in enumerate(clean):
        if v is not None and not (isinstance(v, (int, np.integer)) and info.min <= v <= info.max):
            clean[i] = None
            if bad is not None:
                bad.append(i)
    return pd.array(clean, dtype=dtype)


_EMPTY: dict[tuple[str, tuple], pd.DataFrame] = {}


def build_frame(table: Table, rows: list[dict], keep: tuple[str, ...] = (),
                report: Callable[[int | None, str], None] | None = None) -> pd.DataFrame:
    """Typed frame with the schema's columns in order (missing ones all-NA), plus server_args'
    config keys, plus the private columns named in ``keep`` when present.  Built column by
    column from the rows (no intermediate frame of objects: a small log's dozen tables cost
    well under a millisecond each).  A value a column cannot hold (a date-time that names no
    instant) is left empty, its row kept, and said to ``report(line_no, message)``.  While a
    light parse builds (frame.LIGHT), a Frame of the same columns where every value is one its
    column takes as it is (_light_column); else, and always outside one, a DataFrame."""
    n = len(rows)
    if not n and _frame.LIGHT:
        return _frame.Frame({c.name: light_all_na(c.dtype, 0) for c in table.columns
                             if c.core}, 0)
    if _frame.LIGHT:
        try:
            return _frame.Frame(_columns(table, rows, keep, _LIGHT), n)
        except _Untyped:
            pass                     # (a value only pandas types: the pandas build)
    if not n:       # every input has empty tables: one frame per table, copied
        key = (table.name, keep)
        if key not in _EMPTY:
            _EMPTY[key] = pd.DataFrame({c.name: _typed([], c.dtype) for c in table.columns
                                        if c.core}, index=pd.RangeIndex(0))
        return _EMPTY[key].copy()

    def schema(name: str, vals: list, dtype: str, rows_: list[dict]):
        bad: list[int] = []
        col = _column(vals, dtype, bad)
        what = "a valid date and time" if dtype.startswith("datetime64") else \
            f"a whole number this column holds ({dtype})"
        for i in bad:
            if report is not None:
                report(rows_[i].get("line_no"), f"{name} {str(vals[i])[:40]!r} is not "
                       f"{what}; the record is kept without it")
        return col
    cols = _columns(table, rows, keep, _Typing(
        schema, lambda dtype, n_: _typed([None] * n_, dtype), _typed, lambda a: a))
    return pd.DataFrame(cols, index=pd.RangeIndex(n))


@dataclass(frozen=True)
class _Typing:
    """How _columns makes each kind of column: a schema column's values (name, values, dtype,
    the rows), a schema column no row has (dtype, rows), a server_args config key's values
    (values, dtype), a private column's objects (an object array)."""
    schema: Callable
    missing: Callable
    config: Callable
    objects: Callable


class _Untyped(Exception):
    """A value a light column does not take as it is (build_frame: the pandas build then)."""


def _light(vals: list, dtype: str):
    col = _light_column(vals, dtype)
    if col is None:
        raise _Untyped
    return col


_LIGHT = _Typing(lambda name, vals, dtype, rows: _light(vals, dtype),
                 lambda dtype, n: light_all_na(dtype, n, inferred=True), _light,
                 lambda a: _frame.Column.of(a))


def _columns(table: Table, rows: list[dict], keep: tuple[str, ...], typing: _Typing) -> dict:
    """build_frame's columns, in order, each made as ``typing`` says: the schema's (by the
    keys the rows hold; a missing one only if core), server_args' config keys in the order
    they first appear, then the private columns of ``keep`` the rows hold."""
    present = set().union(*rows)          # (the keys of every row: only asked 'in')
    n = len(rows)
    cols: dict[str, object] = {}
    for c in table.columns:
        if c.name in present:
            vals = list(map(dict.get, rows, repeat(c.name)))
            if c.core or any(v is not None and v == v for v in vals):     # (_present)
                cols[c.name] = typing.schema(c.name, vals, c.dtype, rows)
        elif c.core:
            cols[c.name] = typing.missing(c.dtype, n)
    if table.name == "server_args" and "_args" in present:
        args = [r.get("_args") or {} for r in rows]
        keys: list[str] = []
        seen = set(table.names)
        for a in args:
            for k in a:
                if k not in seen:
                    seen.add(k)
                    keys.append(k)
        for k in keys:
            vals, dtype = _config_column([a.get(k) for a in args])
            cols[k] = typing.config(vals, dtype)
    for k in keep:
        if k in present:
            a = np.empty(n, dtype=object)
            a[:] = [r.get(k) for r in rows]
            cols[k] = typing.objects(a)
    return cols


_ISO = None      # the ISO date-times numpy reads as pandas does (_light_column)


def _light_column(values: list, dtype: str) -> "_frame.Column | None":
    """_column's values as a Frame's column, or None where pandas' typing is needed (a value
    of another type than the column's, a date-time not in the plain ISO form)."""
    global _ISO
    C = _frame.Column
    kinds = {type(v) for v in values}
    kinds.discard(type(None))
    if dtype == "float64":
        return C.of(_column(values, dtype)) if kinds <= {int, float} else None
    if dtype in ("Int64", "Int32") and kinds <= {int}:
        info = np.iinfo(dtype.lower())
        if any(v is not None and not info.min <= v <= info.max for v in values):
            return None
        mask = np.array([v is None for v in values], dtype=bool)
        return C.masked(np.array([0 if v is None else v for v in values],
                                 dtype=dtype.lower()), mask)
    if dtype == "boolean" and kinds <= {bool}:
        return C.masked(np.array([bool(v) for v in values], dtype=bool),
                        np.array([v is None for v in values], dtype=bool))
    if dtype == "category" and kinds <= {str}:
        cats = sorted({v for v in values if v is not None})
        at = {v: i for i, v in enumerate(cats)}
        return C.categorical(np.array([-1 if v is None else at[v] for v in values]),
                             cats or _frame.Inferred())
    if dtype == "string" and kinds <= {str}:
        a = np.empty(len(values), dtype=object)
        a[:] = values
        return C.ext(a, "string")
    if dtype.startswith("datetime64") and kinds <= {str}:
        if _ISO is None:
            import re
            _ISO = re.compile(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(\.\d{1,6})?")
        if not all(v is None or _ISO.fullmatch(v) for v in values):
            return None
        try:
            return C.of(np.array(values, dtype="datetime64[us]"))
        except ValueError:
            return None
    return None


def light_all_na(dtype: str, rows: int, inferred: bool = False) -> "_frame.Column":
    """A column of ``rows`` NAs of schema type ``dtype``, as a Frame's (frame.py), for a
    column the C scanner did not fill (``inferred``: _typed's, whose categories pandas infers
    from the missing values)."""
    C = _frame.Column
    if dtype == "float64":
        return C.of(np.full(rows, np.nan))
    if dtype == "Int64":
        return C.masked(np.zeros(rows, np.int64), np.ones(rows, bool))
    if dtype == "Int32":
        return C.masked(np.ones(rows, np.int32), np.ones(rows, bool))
    if dtype == "boolean":
        return C.masked(np.zeros(rows, bool), np.ones(rows, bool))
    if dtype == "category":
        return C.categorical(np.full(rows, -1, np.int8), _frame.Inferred() if inferred else [])
    if dtype.startswith("datetime64"):
        return C.of(np.full(rows, np.datetime64("NaT"), dtype=dtype))
    return C.ext(np.full(rows, None, dtype=object), dtype)


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


MAX_SEGMENTS = 64     # an ordered merge of more runs than this sorts instead (a slice per
                      # run and column costs more than one take per column)
CONSUME_ROWS = 1 << 16  # concat_frames(consume=True) frees the parts' columns from this size


def _merge_runs(frames: list[pd.DataFrame], key: str) -> list[tuple[int, int, int]] | None:
    """How to interleave the parts so that ``key`` ascends (ties keep the parts' order): runs of
    (part, first row, rows), or None when the plain concatenation is already in order.  A run
    list too long to copy run by run comes back as [(-1, 0, 0)]: sort instead."""
    keys = [f[key].to_numpy(dtype="int64") for f in frames]
    if all(len(k) < 2 or bool((k[1:] >= k[:-1]).all()) for k in keys) and \
            all(a[-1] <= b[0] for a, b in zip(keys, keys[1:])):
        return None
    starts = np.cumsum([0] + [len(k) for k in keys])
    perm = np.argsort(np.concatenate(keys), kind="stable")
    del keys
    # a run ends where the next row is not the next row of the same part
    brk = np.diff(perm) != 1
    brk |= np.isin(perm[1:], starts[1:-1])
    firsts = np.concatenate([[0], np.flatnonzero(brk) + 1])
    if len(firsts) > MAX_SEGMENTS:
        return [(-1, 0, 0)]
    lengths = np.diff(np.concatenate([firsts, [len(perm)]]))
    part = np.searchsorted(starts, perm[firsts], side="right") - 1
    return [(int(k), int(g - starts[k]), int(n))
            for k, g, n in zip(part, perm[firsts], lengths)]


def concat_frames(table: Table, frames: list[pd.DataFrame], consume: bool = False,
                  order_by: str | None = None) -> pd.DataFrame:
    """Concatenate partial frames of one table column by column, keeping the schema dtypes
    (categories are unioned, not degraded to object).  With ``consume`` each column is deleted
    from the parts once copied, so a large table is never held twice.  With ``order_by`` the
    rows come out in that column's order, the parts interleaved in the one copy (each part is
    mostly in order: a few rows the Python parser read among the C accelerator's millions)."""
    frames = [f for f in frames if len(f)]
    if not frames:
        return build_frame(table, [])
    if len(frames) == 1 and order_by is None:
        return frames[0].reset_index(drop=True)
    if any(isinstance(f, _frame.Frame) for f in frames):
        got = _light_concat(table, frames, order_by, consume)
        if got is not None:
            return got
        frames = [_frame.promoted(f) for f in frames]     # (what it does not join: pandas')
    if len(frames) == 1 and order_by is None:
        return frames[0].reset_index(drop=True)
    runs = _merge_runs(frames, order_by) if order_by else None
    if runs == [(-1, 0, 0)]:          # far from ordered: concatenate, then sort
        df = concat_frames(table, frames, consume)
        return df.sort_values(order_by, kind="stable", ignore_index=True)
    if len(frames) == 1 and runs is None:
        return frames[0].reset_index(drop=True)
    lens = [len(f) for f in frames]
    big = sum(lens) >= CONSUME_ROWS
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
                merged = _concat(parts, runs)
            else:
                merged = _concat(parts, runs)
                if str(merged.dtype) != col.dtype:
                    merged = _convert(merged, col.dtype)
        else:     # a server_args key: typed from its values across all parts
            merged = _concat([pd.Series([None] * n, dtype=object) if p is None else p
                              for p, n in zip(parts, lens)], runs)
            if merged.dtype == object or str(merged.dtype) != str(parts[0].dtype if parts[0]
                                                                  is not None else object):
                vals = [None if (v is None or v is pd.NA or (isinstance(v, float) and v != v))
                        else (v.item() if hasattr(v, "item") else v) for v in merged.tolist()]
                vals, dtype = _config_column(vals)
                merged = pd.Series(_typed(vals, dtype))
        out[name] = merged.reset_index(drop=True)
        del parts
        if consume and big:   # (deleting a column rebuilds a frame's blocks: large ones only)
            for f in frames:
                if name in f.columns:
                    del f[name]
    return pd.DataFrame(out, copy=False)


def _light_concat(table: Table, frames: list, order_by: str | None,
                  consume: bool = False) -> "_frame.Frame | None":
    """concat_frames' frame of Frames (frame.py) whose columns are the schema's, of their
    schema types, categories unioned in the order they occur; None for anything else (a
    server_args key, a private column, a pandas part): pandas joins those.  ``consume``: each
    column leaves the parts once joined (a large table is never held twice)."""
    schema = {c.name: c for c in table.columns}
    if not all(isinstance(f, _frame.Frame) and f._pd is None for f in frames):
        return None
    runs = _merge_runs(frames, order_by) if order_by else None
    if runs == [(-1, 0, 0)]:
        return None
    if len(frames) == 1 and runs is None:
        return frames[0].reset_index(drop=True)
    names = list(dict.fromkeys(c for f in frames for c in f.columns))
    if any(k not in schema for k in names):
        return None
    kinds = {"float64": "np", "datetime64[us]": "np", "category": "cat", "Int64": "masked",
             "Int32": "masked", "boolean": "masked"}
    for f in frames:
        for k, c in f._cols.items():
            want = schema[k].dtype
            if kinds.get(want) != c.kind or (c.kind != "cat" and str(c.dtype) != want):
                return None
    lens = [len(f) for f in frames]
    for c in table.columns:      # (empty categories of two types: pandas' union, not ours)
        if c.dtype == "category" and c.name in names:
            inferred = {isinstance(f._cols[c.name].cats, _frame.Inferred) if c.name in f._cols
                        else False for f in frames}
            if len(inferred) > 1 and not any(f._cols[c.name].cats for f in frames
                                             if c.name in f._cols):
                return None
    pieces = [(k, 0, n) for k, n in enumerate(lens)] if runs is None else runs
    total = sum(lens)
    C = _frame.Column
    out: dict[str, object] = {}
    for c in table.columns:
        if c.name not in names:
            continue
        parts = [f._cols[c.name] if c.name in f._cols else light_all_na(c.dtype, n)
                 for f, n in zip(frames, lens)]
        if c.dtype == "category":
            cats = list(dict.fromkeys(x for p in parts for x in p.cats))
            if not cats and isinstance(parts[0].cats, _frame.Inferred):
                cats = _frame.Inferred()
            luts = [np.array([cats.index(x) for x in p.cats] + [-1], dtype=np.int64)
                    for p in parts]
            codes = np.concatenate([luts[k][parts[k].values[a:a + n]] for k, a, n in pieces]) \
                if total else np.empty(0, dtype=np.int8)
            out[c.name] = C.categorical(codes, cats)
        else:
            vals = np.concatenate([parts[k].values[a:a + n] for k, a, n in pieces])
            if parts[0].kind == "masked":
                out[c.name] = C.masked(vals, np.concatenate([parts[k].mask[a:a + n]
                                                             for k, a, n in pieces]))
            else:
                out[c.name] = C.of(vals)
        del parts
        if consume:
            for f in frames:
                f._cols.pop(c.name, None)
    return _frame.Frame(out, total)


def _concat(parts: list[pd.Series], runs: list[tuple[int, int, int]] | None) -> pd.Series:
    if runs is not None:      # slices are views: the concatenation is the one copy
        parts = [parts[k].iloc[a:a + n] for k, a, n in runs]
    return pd.concat(parts, ignore_index=True)
