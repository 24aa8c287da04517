"""The per-input overview that ``eaglelog parse`` prints without --table."""
from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd

from .api import ParsedLog, contiguous
from .schema import CONFIG_LABELS, cli_name

SPEC_KEYS = tuple(kv for kv in CONFIG_LABELS if kv[1] != "model")
_NAT = np.iinfo(np.int64).min




def overview(log: ParsedLog) -> list[dict]:
    out = []
    from .parsers import family_tables

    # each table's stamps and rank codes once (many inputs:
    # a DataFrame per input and table was most of `parse`'s time over 2,000 small logs)
    stamp_arrays = {name: df["timestamp"].to_numpy(dtype="datetime64[us]")
                    for name, df in log.tables.items() if not df.empty and "timestamp" in df}
    rank_codes = {}
    for name in ("decode", "prefill", "prof"):
        df = log.tables.get(name)
        if df is not None and not df.empty and "ranks" in df:
            col = df["ranks"]
            if isinstance(col.dtype, pd.CategoricalDtype):     # its codes: no copy of 10⁶ strings
                rank_codes[name] = (col.cat.codes.to_numpy(), list(col.cat.categories))
            else:
                c, u = pd.factorize(col.astype(object), use_na_sentinel=True)
                rank_codes[name] = (c, list(u))

    diags: dict[str, list] = {}
    for d in log.diagnostics:
        diags.setdefault(d.source, []).append(d)
    for info in log.sources:
        own = family_tables(info.engine)     # the tables of its family (another's are empty)
        item: dict = {"source": info.name, "engine": info.engine, "compression": info.compression,
                      "bytes": info.bytes, "lines": info.lines,
                      "tables": {t: n for t, n in info.counts.items() if own is None or t in own
                                 or n}}
        if info.remote:
            item["remote"] = dict(info.remote)
        if info.error and not info.counts:
            item["error"] = info.error
            out.append(item)
            continue
        stamps, ranks = [], set()
        for name, df in log.tables.items():
            if df.empty or "timestamp" not in df:
                continue
            at = log.positions(info.name, name)
            if not len(at):
                continue
            at = contiguous(at) or at                    # a slice copies nothing
            v = stamp_arrays[name][at].view(np.int64)     # NaT is the least int64
            top = int(v.max())
            if top != _NAT:
                low = int(np.min(v, where=v != _NAT, initial=np.iinfo(np.int64).max))
                stamps += [np.datetime64(low, "us"), np.datetime64(top, "us")]
            if name in ("decode", "prefill", "prof") and "ranks" in df:
                codes = rank_codes[name]
                got = np.unique(codes[0][at])
                ranks.update(str(codes[1][c]) for c in got if c >= 0)
        if stamps:
            lo, hi = pd.Timestamp(min(stamps)), pd.Timestamp(max(stamps))
            item["time_span"] = {"start": lo.isoformat(), "end": hi.isoformat(),
                                 "seconds": (hi - lo).total_seconds()}
        else:
            item["time_span"] = None
        item["ranks"] = sorted(ranks)
        cfg = log.config(info.name)
        item["spec_config"] = {label: cfg.get(key) for key, label in SPEC_KEYS} if cfg else None
        sa = log.rows_of(info.name, "server_args", ["startup", "line_no"])
        ups = []
        for _, r in sa.iterrows():
            c = log.config(info.name, int(r["startup"]))
            ups.append({"startup": int(r["startup"]), "line": int(r["line_no"]),
                        "spec_config": {label: c.get(key) for key, label in SPEC_KEYS}})
        item["startups"] = ups
        kinds: Counter = Counter()
        for d in diags.get(info.name, ()):    # one kept, or one standing for d.more counted
            kinds[d.kind] += d.more or 1
        item["skipped_lines"] = info.skipped
        item["first_skipped_line"] = info.first_skipped
        # the header lines of the blocks listed (the first MAX_KEPT); "reported" counts all
        item["incomplete_blocks"] = [d.line_no for d in diags.get(info.name, ())
                                     if d.kind == "incomplete_block" and not d.more]
        item["reported"] = {k: v for k, v in sorted(kinds.items())}
        if info.error:
            item["error"] = info.error
        out.append(item)
    return out


def _incomplete(item: dict) -> int:
    """Incomplete blocks of an overview item: every one reported, listed or counted."""
    return (item.get("reported") or {}).get("incomplete_block",
                                             len(item.get("incomplete_blocks") or []))


def overview_rows(items: list[dict]) -> list[dict]:
    """The overview as flat rows (csv, markdown, parquet)."""
    rows = []
    for it in items:
        row = {"source": it["source"], "engine": it.get("engine"),
               "compression": it.get("compression"), "bytes": it.get("bytes"),
               "lines": it.get("lines")}
        row.update({f"rows_{k}": v for k, v in it.get("tables", {}).items()})
        span = it.get("time_span") or {}
        row.update({"start": span.get("start"), "end": span.get("end"),
                    "seconds": span.get("seconds")})
        row["ranks"] = " ".join(it.get("ranks") or []) or None
        row.update({f"spec_{k}": v for k, v in (it.get("spec_config") or {}).items()})
        row["startups"] = len(it.get("startups") or [])
        row["skipped_lines"] = it.get("skipped_lines")
        row["first_skipped_line"] = it.get("first_skipped_line")
        row["incomplete_blocks"] = _incomplete(it)
        row["error"] = it.get("error")
        rows.append(row)
    return rows


def render_overview(items: list[dict]) -> str:
    from .units import fmt_bytes, fmt_duration

    lines = []
    for it in items:
        head = f"{it['source']}"
        if "error" in it and not it["tables"]:
            lines += [head, f"  error       {it['error']}", ""]
            continue
        comp = f" · {it['compression']}" if it.get("compression") else ""
        size = it["remote"]["size"] if it.get("remote") else it["bytes"]
        lines.append(f"{head}  ({it['engine']}{comp} · {it['lines']:,} lines · "
                     f"{fmt_bytes(size)})")
        found = [f"{cli_name(t)} {n:,}" for t, n in it["tables"].items() if n]
        lines.append(f"  tables      {' · '.join(found) if found else 'none'}")
        span = it.get("time_span")
        if span:
            lines.append(f"  time span   {span['start'].replace('T', ' ')[:19]} → "
                         f"{span['end'].replace('T', ' ')[:19]} ({fmt_duration(span['seconds'])})")
        lines.append(f"  ranks       {', '.join(it['ranks']) if it['ranks'] else 'untagged'}")
        sc = it.get("spec_config")
        if sc:
            if sc.get("algorithm"):
                parts = [str(sc["algorithm"])]
                parts += [f"{k.replace('_', ' ')} {sc[k]}" for k in
                          ("draft", "steps", "topk", "draft_tokens") if sc.get(k) is not None]
            else:
                parts = ["no speculative decoding (speculative_algorithm=None)"]
            parts += [f"{k.replace('_', ' ')} {sc[k]}" for k in ("tp", "dp", "decode_log_interval")
                      if sc.get(k) is not None]
            lines.append(f"  spec config {' · '.join(parts)}")
        else:
            lines.append("  spec config no server_args line")
        ups = it.get("startups") or []
        if len(ups) > 1:
            keys = [k for k in ups[0]["spec_config"]
                    if len({repr(u["spec_config"].get(k)) for u in ups}) > 1]
            diff = "; ".join(f"{k.replace('_', ' ')} " + " → ".join(
                str(u["spec_config"].get(k)) for u in ups) for k in keys)
            lines.append(f"  start-ups   {len(ups)} server start-ups (lines "
                         f"{', '.join(str(u['line']) for u in ups)}): spec config above is the "
                         f"last; {'they differ in ' + diff if keys else 'same spec config'}; "
                         "the analyses treat each start-up as its own run")
        notes = []
        if it["skipped_lines"]:
            n = it['skipped_lines']
            notes.append(f"{n:,} line{'s' if n != 1 else ''} without a record skipped"
                         + (f" (first at line {it['first_skipped_line']})"
                            if it.get("first_skipped_line") else ""))
        inc, n_inc = it["incomplete_blocks"], _incomplete(it)
        if n_inc:
            shown = ", ".join(str(x) for x in inc[:5]) + (" …" if n_inc > len(inc[:5]) else "")
            notes.append(f"{n_inc:,} incomplete EAGLE3_PROF block{'s' if n_inc > 1 else ''} "
                         f"(line {shown})")
        other = {k: v for k, v in it["reported"].items() if k not in ("incomplete_block", "date")}
        if other:
            words = {"malformed": "record line(s) not parsed", "truncated": "cut-short last line",
                     "bad_value": "unreadable value(s)", "identity": "identity break(s)",
                     "block_line": "unknown block line(s)", "input_error": "input error",
                     "long_line": "over-long line(s)"}
            notes.append(", ".join(f"{v:,} {words.get(k, k.replace('_', ' '))}"
                                   for k, v in other.items()) + " (see stderr)")
        lines.append(f"  notes       {' · '.join(notes) if notes else 'none'}")
        if it.get("error"):
            lines.append(f"  error       {it['error']}")
        lines.append("")
    return "\n".join(lines)
