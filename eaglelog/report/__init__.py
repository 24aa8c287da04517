"""Rendering: one ``render_frame(df, fmt)`` for every table format, and the human blocks.

Machine formats (csv, json, jsonl, parquet) carry raw values in the schema's units; the human
formats (table, markdown) drop columns that are empty in every row and round floats.
"""
from __future__ import annotations

from ..units import fmt_bytes, fmt_duration  # noqa: F401  (re-exported)

import io
import json
import math

import numpy as np
from .._lazy import pd

from ..errors import EaglelogError, UsageProblem

from ..schema import FORMATS  # noqa: E402  (re-exported)


def _iso_strings(df: pd.DataFrame, uniform: bool = False) -> pd.DataFrame:
    """Datetime columns as ISO 8601 text with the precision each value has (whole seconds,
    milliseconds with SGLANG_LOG_MS=1, or microseconds); ``uniform``: one precision per column,
    the finest any value needs (CSV readers parse a column with one format)."""
    out = df.copy()
    for c in out.columns:
        if pd.api.types.is_datetime64_any_dtype(out[c]):
            s = out[c]
            us = s.dt.microsecond.fillna(0).astype("int64").to_numpy()
            if uniform:
                us = np.full_like(us, 1 if (us % 1000).any() else (1000 if us.any() else 0))
            full = s.dt.strftime("%Y-%m-%dT%H:%M:%S.%f").to_numpy(dtype=object)
            text = np.where(us == 0, [t[:-7] if isinstance(t, str) else t for t in full],
                            np.where(us % 1000 == 0,
                                     [t[:-3] if isinstance(t, str) else t for t in full], full))
            out[c] = pd.Series(text, index=s.index, dtype=object).where(s.notna(), None)
    return out


JSON_LIST_COLUMNS = {"accept_histogram", "per_position"}


def records(df: pd.DataFrame) -> list[dict]:
    """Rows as plain Python dicts: NA -> None, datetimes -> ISO text, floats exact (repr
    round-trips), JSON-list columns as lists.  The JSON shape of a table."""
    out = _iso_strings(df)
    cols = {}
    for c in out.columns:
        s = out[c]
        ok = s.notna()
        if pd.api.types.is_float_dtype(s.dtype):
            ok &= np.isfinite(s.to_numpy(dtype="float64", na_value=np.nan))   # JSON has no inf
        vals = s.astype(object).where(ok, None).tolist()
        if c in JSON_LIST_COLUMNS:
            vals = [json.loads(v) if isinstance(v, str) else v for v in vals]
        cols[c] = [v.item() if hasattr(v, "item") else v for v in vals]
    names = list(cols)
    return [dict(zip(names, row)) for row in zip(*cols.values())] if names else []


def _human_value(v) -> str:
    if v is None or v is pd.NA or v is pd.NaT:
        return ""
    if isinstance(v, float):
        if math.isnan(v):
            return ""
        return f"{v:.4g}" if abs(v) >= 1e5 or (v != 0 and abs(v) < 1e-3) else f"{v:.4f}".rstrip(
            "0").rstrip(".")
    if isinstance(v, pd.Timestamp):
        text = v.isoformat(sep=" ", timespec="microseconds")
        return text[:-7] if v.microsecond == 0 else text[:-3] if v.microsecond % 1000 == 0 \
            else text
    return str(v)


# columns the human formats leave out: version-family bookkeeping and the rank numbers that the
# 'ranks' column already shows (machine formats keep them all)
HUMAN_HIDDEN = {"header", "trailing_comma", "dp", "pp", "attn_cp", "moe_dp", "tp", "ep"}


def human_table(df: pd.DataFrame, tablefmt: str = "simple", drop_empty: bool = True) -> str:
    if drop_empty and len(df):
        keep = [c for c in df.columns if c not in HUMAN_HIDDEN and df[c].notna().any()]
        if "startup" in keep and df["startup"].nunique() <= 1:
            keep.remove("startup")
        df = df[keep]
    rows = [[_human_value(v) for v in row] for row in df.itertuples(index=False, name=None)]
    headers = list(df.columns)
    if tablefmt == "github":        # a "|" in a cell ends it in markdown: escape it
        headers = [md_cell(h) for h in headers]
        rows = [[md_cell(v) for v in row] for row in rows]
    from .table_text import draw        # (the simple format without tabulate's import)
    return draw(rows, headers, tablefmt)


def md_cell(v):
    """A markdown table cell's text: "|" escaped (GitHub's tables split cells on it)."""
    return v.replace("|", "\\|") if isinstance(v, str) else v


def render_frame(df: pd.DataFrame, fmt: str, output: str | None = None) -> str | None:
    """Return the text to print, or write ``output`` (parquet always needs a file)."""
    if fmt == "parquet":
        if not output:
            raise UsageProblem("-f parquet writes a binary file: give it with -o FILE.parquet")
        try:
            df.to_parquet(output, index=False)
        except ImportError:
            raise EaglelogError("-f parquet needs pyarrow: pip install pyarrow") from None
        return None
    if fmt == "table":
        text = human_table(df) + "\n"
    elif fmt == "markdown":
        text = human_table(df, "github") + "\n"
    elif fmt == "csv":
        buf = io.StringIO()
        _iso_strings(df, uniform=True).to_csv(buf, index=False)
        text = buf.getvalue()
    elif fmt == "json":
        text = _dumps(finite(records(df)), indent=1) + "\n"
    elif fmt == "jsonl":
        text = "".join(_dumps(r) + "\n" for r in finite(records(df)))
    else:
        raise EaglelogError(f"unknown format {fmt!r}; choose from {', '.join(FORMATS)}")
    return text


# characters a log line may carry that line-splitting tools take for line ends (Python's
# str.splitlines, editors): JSON leaves them raw with ensure_ascii=False; escaped, the same value
_LINE_ENDS = {0x85: "\\u0085", 0x2028: "\\u2028", 0x2029: "\\u2029"}


def _dumps(obj, **kw) -> str:
    """json.dumps as the machine formats write it (UTF-8 text, strict JSON), with U+0085,
    U+2028 and U+2029 escaped: a JSON Lines record stays one line for every reader (they can
    stand only inside strings, where the escape is the same character)."""
    text = json.dumps(obj, ensure_ascii=False, allow_nan=False, **kw)
    if "\x85" in text or "\u2028" in text or "\u2029" in text:
        text = text.translate(_LINE_ENDS)
    return text


def finite(obj):
    """``obj`` with every non-finite float (NaN, ±inf, numpy's too) replaced by None, so that
    the JSON written is strict JSON (json.dumps would write NaN and Infinity, which JSON has
    not); other values as they are."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite(v) for v in obj]
    if isinstance(obj, np.floating):
        return float(obj) if np.isfinite(obj) else None
    return obj


def render_object(obj, fmt: str) -> str:
    """A result object (a dict) in a machine format (strict JSON: NaN and inf are null)."""
    if fmt == "json":
        return _dumps(finite(obj), indent=2, default=_jsonable) + "\n"
    if fmt == "jsonl":
        return _dumps(finite(obj), default=_jsonable) + "\n"
    raise EaglelogError(f"format {fmt!r} is not available here")


def _jsonable(v):
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating,)):
        return float(v) if np.isfinite(v) else None
    if isinstance(v, (pd.Timestamp,)):
        return v.isoformat()
    if v is pd.NA or v is pd.NaT:
        return None
    return str(v)
