"""Many small inputs typed together: their rows are kept raw and become one frame per table.

A dozen typed frames per input cost tens of milliseconds of pandas work whatever the input's
size, which dominates a glob of hundreds of small logs (remote or local).  For a small SGLang
input ``api.parse`` keeps what the scanner read (Scanner.finish_rows: the C accelerator's column
arrays, the Python parser's row dicts) in a ``Batch``; the batch types every table once, in
input order and line order within an input, with the same columns and dtypes as per-input frames
concatenated (tests/test_batch.py).
"""
from __future__ import annotations

from .._lazy import np, pd
from ..schema import TABLES
from ..tables import build_frame, concat_frames

SMALL = 8 << 20          # inputs up to this many bytes are batched
BATCH_BYTES = 256 << 20  # a batch is typed when its inputs reach this size (memory stays bounded)
_SHIFT = 40              # order key: input index << 40 | line number (lines < 2**40)


class Batch:
    """The raw rows of consecutive small inputs (``add``), typed once (``frames``)."""

    def __init__(self, columns: dict | None = None) -> None:
        self.columns = columns or {}
        self.names: list[str] = []
        self.bytes = 0
        self.fast = None                                    # FastRows of all inputs, merged
        self.codes: dict[str, list] = {t: [] for t in TABLES}   # input index of each C row
        self.rows: dict[str, list[dict]] = {t: [] for t in TABLES}
        self.parts: dict[str, list] = {t: [] for t in TABLES}

    def __len__(self) -> int:
        return len(self.names)

    def add(self, name: str, nbytes: int, fast_rows, rows: dict, parts: dict) -> dict[str, int]:
        """One input's rows (Scanner.finish_rows); returns its row count per table."""
        idx = len(self.names)
        self.names.append(name)
        self.bytes += nbytes
        base = idx << _SHIFT
        counts = {}
        for t in TABLES:
            n_fast = fast_rows.cols.get(t, {}).get("", 0) if fast_rows is not None else 0
            if n_fast:
                self.codes[t].append(np.full(n_fast, idx, dtype=np.int64))
            for r in rows.get(t, ()):
                r["_order"] = base + r["line_no"]
            self.rows[t].extend(rows.get(t, ()))
            for df in parts.get(t, ()):
                df["_order"] = base + df["line_no"].to_numpy(dtype=np.int64)
                self.parts[t].append(df)
            counts[t] = n_fast + len(rows.get(t, ())) + sum(len(df) for df in parts.get(t, ()))
        if fast_rows is not None:
            if self.fast is None:
                self.fast = fast_rows
            else:
                self.fast.merge(fast_rows, 0, 0)
        return counts

    def frames(self) -> dict[str, pd.DataFrame]:
        """Every table of the batch's inputs, in input order and line order; the batch keeps
        nothing."""
        out = {}
        for t, table in TABLES.items():
            pieces = []
            if self.fast is not None:
                df = self.fast.frame(t, "")
                if df is not None:
                    codes = np.concatenate(self.codes[t])
                    df["source"] = pd.Categorical.from_codes(codes, categories=self.names)
                    codes <<= _SHIFT
                    codes += df["line_no"].to_numpy(dtype=np.int64)
                    df["_order"] = codes
                    pieces.append(df)
            if self.rows[t]:
                df = build_frame(table, self.rows[t], keep=("_order",))
                df["_order"] = df["_order"].astype(np.int64)
                keep = self.columns.get(t)
                if keep is not None:
                    df = df[[c for c in df.columns if c in keep or c == "_order"]]
                pieces.append(df)
            pieces += self.parts[t]
            df = concat_frames(table, pieces, consume=True, order_by="_order")
            out[t] = df.drop(columns="_order") if "_order" in df.columns else df
        self.__init__(self.columns)
        return out
