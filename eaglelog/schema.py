"""The one declaration of every table eaglelog produces.

Parsers fill columns by these names, ``tables.build_frame`` applies the dtypes, renderers read the
units, and ``docs/tables.md`` is generated from here.  A column name is part of the public
interface: add columns freely, never rename one.

dtype vocabulary (pandas): ``category`` (repeated labels), ``string``, ``Int64`` (nullable integer,
NA when the log did not print it), ``float64`` (NaN when not printed), ``boolean`` (nullable),
``datetime64[us]`` (naive local wall clock, as SGLang prints it).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Column:
    name: str
    dtype: str
    unit: str = ""
    doc: str = ""
    better: str | None = None  # "higher", "lower" or None when direction has no meaning
    core: bool = True          # core columns are always present; the others only when the
                               # input printed them (a table never carries all-NA optional ones)


@dataclass(frozen=True)
class Table:
    name: str
    doc: str
    columns: tuple[Column, ...]

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    def column(self, name: str) -> Column:
        for c in self.columns:
            if c.name == name:
                return c
        raise KeyError(name)


C = Column

# server_args keys shown as a run's config (key -> short label), in display order
CONFIG_LABELS = (("speculative_algorithm", "algorithm"), ("speculative_draft_model_path", "draft"),
                 ("speculative_num_steps", "steps"), ("speculative_eagle_topk", "topk"),
                 ("speculative_num_draft_tokens", "draft_tokens"), ("tp_size", "tp"),
                 ("dp_size", "dp"), ("decode_log_interval", "decode_log_interval"),
                 ("model_path", "model"))

# output formats of every command (-f/--format)
FORMATS = ("table", "markdown", "csv", "json", "jsonl", "parquet")

# Rank tags of SGLang's logger prefix, in SGLang's current print order (sglang.md §1.1).
RANK_TAGS = ("DP", "PP", "ATTN_CP", "MOE_DP", "TP", "EP")

_WHERE = (
    C("source", "category", "", "the input the row came from (path, '-' for stdin)"),
    C("line_no", "Int64", "", "1-based line number in the (decompressed) input"),
    C("startup", "Int64", "", "server start-up segment of the input: 0 before its first "
      "server_args line, k from the k-th one on (a log that holds several runs)"),
)
_WHEN = (
    C("timestamp", "datetime64[us]", "", "time of the SGLang logger prefix (local wall clock, no "
      "time zone); date completed from --date or the file's mtime for time-only prefixes"),
    C("ranks", "category", "", "rank tags of the prefix as printed, e.g. 'DP1 TP0'; NA when the "
      "line had no tags"),
) + tuple(
    C(tag.lower(), "Int64", "", f"{tag} rank from the prefix tags; NA when absent")
    for tag in RANK_TAGS
)

PROF = Table(
    "prof",
    "one row per EAGLE3_PROF block (eagle3_prof.md); incomplete blocks are kept with complete=False",
    _WHERE + _WHEN + (
        C("mode", "category", "", "'no sync' (trustworthy wall clock), 'sync' (distorted by device "
          "synchronisation) or NA when the header has no mode"),
        C("cycles", "Int64", "cycles", "draft+verify cycles the block covers"),
        C("tokens", "Int64", "tokens", "tokens accepted for the profiled request(s) in those cycles"),
        C("total_ms", "float64", "ms/cycle", "mean cycle time (TOTAL line)", "lower"),
        C("accept_len", "float64", "tokens/cycle", "the profiler's accept length (= tokens/cycles)",
          "higher"),
        C("eff_tok_s", "float64", "tokens/s", "profiler's effective rate, 1000*accept_len/total_ms",
          "higher"),
        C("complete", "boolean", "", "False when the block was cut short (missing TOTAL, Accept "
          "len or Eff tok/s line)"),
        C("n_phases", "Int64", "", "number of phase lines in the block"),
        C("phase_sum_ms", "float64", "ms/cycle", "sum of the phase lines (identity: ≈ total_ms)"),
        C("end_line", "Int64", "", "line number of the block's last line"),
    ),
)

PROF_PHASES = Table(
    "prof_phases",
    "long form: one row per phase line of an EAGLE3_PROF block, any label",
    _WHERE + (
        C("block", "Int64", "", "line_no of the block's header (join with prof.line_no and source)"),
        C("phase", "category", "", "the label as printed, e.g. 'Target verify'"),
        C("ms_per_cycle", "float64", "ms/cycle", "mean wall time per cycle in this phase", "lower"),
        C("pct", "float64", "%", "share of TOTAL as printed; NaN when the line has none"),
    ),
)

_GRAPH = (
    C("graph_backend", "category", "", "'cuda graph', 'cpu graph', 'npu graph' or 'musa graph'"),
    C("graph", "boolean", "", "whether the triggering batch ran as a captured graph (for EAGLE "
      "decode: the target-verify forward)"),
)
_USAGE = (
    C("num_tokens", "Int64", "tokens", "KV-cache slots in use, '#token' (plain pool)"),
    C("token_usage", "float64", "fraction", "KV slots in use / pool capacity (plain pool)"),
    C("full_token", "Int64", "tokens", "full-attention pool slots (hybrid models)"),
    C("full_token_usage", "float64", "fraction", "full-attention pool usage"),
    C("swa_token", "Int64", "tokens", "sliding-window pool slots"),
    C("swa_token_usage", "float64", "fraction", "sliding-window pool usage"),
    C("mamba_num", "Int64", "states", "Mamba state pool in use"),
    C("mamba_usage", "float64", "fraction", "Mamba state pool usage"),
    C("gpu_token", "Int64", "tokens", "HiSparse GPU tier"),
    C("gpu_token_usage", "float64", "fraction", "HiSparse GPU tier usage"),
    C("cpu_token", "Int64", "tokens", "HiSparse CPU tier"),
    C("cpu_token_usage", "float64", "fraction", "HiSparse CPU tier usage"),
)
_LINE_META = (
    C("header", "category", "", "header punctuation as printed: '.', ',', '[N],', 'none' "
      "(legacy lines) — identifies the version family (sglang.md §11)"),
    C("trailing_comma", "boolean", "", "whether the line ended with ', '"),
    C("extra", "string", "", "unknown 'key: value' segments and free text, as printed; NA if none"),
)

DECODE = Table(
    "decode",
    "one row per SGLang 'Decode batch' line (every version, sglang.md §2); window means over "
    "decode_log_interval decode iterations of one scheduler",
    _WHERE + _WHEN + (
        C("gpu", "Int64", "", "GPU id printed in the message ([gpu_id=N] / [gpu=N], ≤ v0.2.13)"),
        C("iter", "Int64", "", "forward-iteration counter of 'Decode batch [N],'"),
        C("running_req", "Int64", "requests", "decode batch size at the logging instant"),
        C("cached_token", "Int64", "tokens", "decode-side prefix-cache hits (non-mainline)"),
    ) + _USAGE + (
        C("accept_len", "float64", "tokens/verify", "pooled window mean of tokens committed per "
          "request per verify step, bonus included; NaN on non-speculative lines", "higher"),
        C("accept_rate", "float64", "", "as printed; its formula depends on the release "
          "(sglang.md §3.2)", "higher"),
        C("cap_len", "float64", "", "DSpark cap length"),
        C("block_accept_len", "float64", "", "DSpark block accept length", "higher"),
        C("pre_allocated_usage", "float64", "fraction", "PD decode: pre-allocated KV / capacity"),
        C("prealloc_req", "Int64", "requests", "PD decode: pre-allocation queue"),
        C("transfer_req", "Int64", "requests", "PD decode: transfer queue"),
        C("retracted_req", "Int64", "requests", "PD decode: retracted queue"),
        C("waiting_image_req", "Int64", "requests", "EPD waiting list"),
    ) + _GRAPH + (
        C("gen_throughput", "float64", "tokens/s", "decode tokens in the window / wall time since "
          "the previous decode line (includes prefill and idle time)", "higher"),
        C("largest_len", "Int64", "tokens", "scheduler bookkeeping (v0.4.3.post3 – v0.4.4.post1)"),
        C("queue_req", "Int64", "requests", "waiting-queue length at the logging instant"),
        C("line_timestamp", "datetime64[us]", "", "the 'timestamp:' field (v0.4.9.post1 – post2)"),
        C("est_decode_tflops", "float64", "TFLOPS", "model-based MFU estimate, per GPU"),
        C("est_read_bw", "float64", "GB/s", "estimated read bandwidth per GPU"),
        C("est_write_bw", "float64", "GB/s", "estimated write bandwidth per GPU"),
        C("fwd_occupancy", "float64", "%", "device-timer forward occupancy"),
    ) + _LINE_META,
)

PREFILL = Table(
    "prefill",
    "one row per SGLang 'Prefill batch' line (every version, sglang.md §4); every prefill batch "
    "and every chunk is logged",
    _WHERE + _WHEN + (
        C("gpu", "Int64", "", "GPU id printed in the message (≤ v0.2.13)"),
        C("iter", "Int64", "", "forward-iteration counter of 'Prefill batch [N],'"),
        C("new_seq", "Int64", "requests", "requests (or chunks) in this prefill batch"),
        C("new_token", "Int64", "tokens", "prompt tokens computed in this batch"),
        C("cached_token", "Int64", "tokens", "prompt tokens served from the prefix cache"),
        C("token_usage", "float64", "fraction", "KV pool usage now"),
        C("running_req", "Int64", "requests", "running decode batch size now"),
        C("queue_req", "Int64", "requests", "waiting queue now"),
        C("mixed_running_req", "Int64", "requests", "decode requests mixed into a chunked prefill "
          "('Prefill batch(mixed #running-req: N).', v0.2.14 – v0.3.5)"),
        C("cache_hit_rate", "float64", "%", "prefix-cache hit rate (≤ v0.4.3.post2)"),
        C("num_tokens", "Int64", "tokens", "KV slots in use, '#token' (v0.4.9 – v0.4.9.post2)"),
        C("full_token", "Int64", "tokens", "full-attention pool slots (v0.4.9 hybrid spelling)"),
        C("full_token_usage", "float64", "fraction", "full-attention pool usage"),
        C("swa_token", "Int64", "tokens", "sliding-window pool slots (v0.4.9 hybrid spelling)"),
        C("swa_token_usage", "float64", "fraction", "sliding-window pool usage"),
        C("mamba_usage", "float64", "fraction", "Mamba state pool usage"),
        C("pending_token", "Int64", "tokens", "prompt tokens still waiting to be prefilled"),
        C("unbootstrapped_req", "Int64", "requests", "PD prefill queue (v0.4.6 – v0.5.2)"),
        C("transferring_req", "Int64", "requests", "PD prefill queue (v0.4.6 – v0.5.2)"),
        C("pd_time", "float64", "", "PD prefill 'time:' value (v0.4.7 only; unit unspecified)"),
        C("bootstrap_req", "Int64", "requests", "PD prefill bootstrap queue ('#prealloc-req' "
          "v0.5.3 – v0.5.11, '#bootstrap-req' from v0.5.12)"),
        C("inflight_req", "Int64", "requests", "PD prefill in-flight transfers"),
        C("optimistic_req", "Int64", "requests", "PD prefill optimistic queue"),
        C("waiting_image_req", "Int64", "requests", "EPD waiting list"),
    ) + _GRAPH + (
        C("input_throughput", "float64", "tokens/s", "#new-token / wall time since the previous "
          "prefill line", "higher"),
        C("line_timestamp", "datetime64[us]", "", "the 'timestamp:' field (v0.4.9.post1 – post2)"),
        C("est_prefill_tflops", "float64", "TFLOPS", "MFU estimate, per GPU"),
        C("fwd_occupancy", "float64", "%", "device-timer forward occupancy"),
    ) + _LINE_META,
)

SERVER_ARGS = Table(
    "server_args",
    "one row per 'server_args=ServerArgs(...)' start-up line; the columns after these are the "
    "config keys as SGLang names them (values that are not Python literals are kept as source "
    "text; lists and dicts as JSON text)",
    _WHERE + (
        C("timestamp", "datetime64[us]", "", "time of the logger prefix"),
        C("parse_ok", "boolean", "", "False when the repr could not be parsed as a whole and keys "
          "were recovered one by one"),
    ),
)

REQUESTS = Table(
    "requests",
    "one row per finished request ('Finish:' text lines and 'request.finished' JSON lines, "
    "sglang.md §7); spec keys of every release normalised to one column set",
    _WHERE + (
        C("timestamp", "datetime64[us]", "", "time of the logger prefix or the JSON 'timestamp'"),
        C("rid", "string", "", "request id"),
        C("finish_reason", "category", "", "finish_reason.type ('length', 'stop', 'abort', …)"),
        C("prompt_tokens", "Int64", "tokens", ""),
        C("completion_tokens", "Int64", "tokens", "output tokens, including the first token that "
          "came from prefill"),
        C("cached_tokens", "Int64", "tokens", ""),
        C("e2e_latency", "float64", "s", "end-to-end latency", "lower"),
        C("verify_ct", "Int64", "verifies", "spec_verify_ct: verify steps that included the request"),
        C("accepted_drafts", "Int64", "tokens", "accepted draft tokens, bonus excluded "
          "(spec_num_correct_drafts / spec_accepted_drafts / spec_accept_token_num)"),
        C("proposed_drafts", "Int64", "tokens", "proposed draft tokens (spec_num_proposed_drafts / "
          "spec_proposed_drafts / spec_draft_token_num)"),
        C("accept_histogram", "string", "", "JSON list: index i = drafts accepted in a verify, "
          "value = number of verifies"),
        C("spec_accept_length", "float64", "tokens/verify", "as printed (= completion_tokens / "
          "verify_ct, biased upward for short outputs)", "higher"),
        C("spec_accept_rate", "float64", "", "as printed; definition changed by release"),
        C("cap_length", "float64", "", "DSpark spec_cap_length"),
        C("block_accept_length", "float64", "", "DSpark spec_block_accept_length"),
        C("total_retractions", "Int64", "", "times the request was retracted"),
        C("format", "category", "", "'text' (Finish: line) or 'json' (request.finished)"),
    ),
)

CORE = {
    "prof": "source line_no startup timestamp ranks mode cycles tokens total_ms accept_len eff_tok_s "
            "complete n_phases phase_sum_ms end_line",
    "prof_phases": "source line_no startup block phase ms_per_cycle pct",
    "decode": "source line_no startup timestamp ranks running_req num_tokens token_usage accept_len "
              "accept_rate graph gen_throughput queue_req",
    "prefill": "source line_no startup timestamp ranks new_seq new_token cached_token token_usage "
               "running_req queue_req",
    "server_args": "source line_no startup timestamp parse_ok",
    "requests": "source line_no startup timestamp rid finish_reason prompt_tokens completion_tokens "
                "cached_tokens e2e_latency verify_ct accepted_drafts proposed_drafts "
                "accept_histogram spec_accept_length format",
}


def _with_core(t: Table) -> Table:
    core = set(CORE[t.name].split())
    cols = tuple(Column(c.name, c.dtype, c.unit, c.doc, c.better, c.name in core)
                 for c in t.columns)
    return Table(t.name, t.doc, cols)


TABLES: dict[str, Table] = {t.name: _with_core(t) for t in (PROF, PROF_PHASES, DECODE, PREFILL,
                                                            SERVER_ARGS, REQUESTS)}

# The columns of the two large tables that the analyses read (summary, breakeven, reconcile,
# compare, sweep, export, plot, report); every command but `parse` asks for only these, which
# keeps a gigabyte log's tables in memory small.  tests/test_projection.py runs every analysis
# both ways and requires the same output.
_RANKS = tuple(tag.lower() for tag in RANK_TAGS)
ANALYSIS_COLUMNS: dict[str, tuple[str, ...]] = {
    "decode": ("source", "line_no", "startup", "timestamp", "ranks") + _RANKS + (
        "running_req", "accept_len", "accept_rate", "gen_throughput", "header"),
    "prefill": ("source", "line_no", "startup", "timestamp", "ranks") + _RANKS,
}


# The CLI spells table names in kebab-case (--table prof-phases).
def cli_name(table: str) -> str:
    return table.replace("_", "-")


def table_from_cli(name: str) -> str:
    return name.replace("-", "_")

