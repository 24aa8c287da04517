"""The one declaration of every table eaglelog produces.

Parsers fill columns by these names, ``tables.build_frame`` applies the dtypes, renderers read the
units, and ``docs/tables.md`` is generated from here.  A column name is part of the public
interface: add columns freely, never rename one.

dtype vocabulary (pandas): ``category`` (repeated labels), ``string``, ``Int64`` (nullable integer,
NA when the log did not print it), ``Int32`` (the same, for numbers that are small by nature:
start-up segments, rank tags, batch sizes; 4 bytes a row less), ``float64`` (NaN when not printed),
``boolean`` (nullable), ``datetime64[us]`` (naive local wall clock, as SGLang prints it).
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
    C("startup", "Int32", "", "server start-up segment of the input: 0 before its first "
      "server_args line, k from the k-th one on (a log that holds several runs)"),
)
_WHEN = (
    C("timestamp", "datetime64[us]", "", "time of the SGLang logger prefix (local wall clock, no "
      "time zone); date completed from --date or the file's mtime for time-only prefixes"),
    C("ranks", "category", "", "rank tags of the prefix as printed, e.g. 'DP1 TP0'; NA when the "
      "line had no tags"),
) + tuple(
    C(tag.lower(), "Int32", "", f"{tag} rank from the prefix tags; NA when absent")
    for tag in RANK_TAGS
)

PROF = Table(
    "prof",
    "one row per EAGLE3_PROF block (eagle3_prof.md); incomplete blocks are kept with "
    "complete=False",
    _WHERE + _WHEN + (
        C("mode", "category", "", "'no sync' (trustworthy wall clock), 'sync' (distorted by device "
          "synchronisation) or NA when the header has no mode"),
        C("cycles", "Int64", "cycles", "draft+verify cycles the block covers"),
        C("tokens", "Int64", "tokens",
          "tokens accepted for the profiled request(s) in those cycles"),
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
        C("block", "Int64", "",
          "line_no of the block's header (join with prof.line_no and source)"),
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
    "one row per stats window of one scheduler, the same meaning for every engine.  SGLang: one "
    "row per 'Decode batch' line (every version, sglang.md §2), window means over "
    "decode_log_interval decode iterations.  vLLM (engine='vllm'): one row per throughput line "
    "joined with the spec line printed right after it by the same process (or per spec line "
    "that follows none), a window of seconds (5 s in V0 and early V1, VLLM_LOG_STATS_INTERVAL "
    "later); token_usage = GPU KV cache usage / 100, queue_req = Waiting (V1) / Pending (V0), dp "
    "= the engine index",
    _WHERE + _WHEN + (
        C("gpu", "Int64", "", "GPU id printed in the message ([gpu_id=N] / [gpu=N], ≤ v0.2.13)"),
        C("iter", "Int64", "", "forward-iteration counter of 'Decode batch [N],'"),
        C("running_req", "Int32", "requests", "decode batch size at the logging instant"),
        C("cached_token", "Int64", "tokens", "decode-side prefix-cache hits (non-mainline)"),
    ) + _USAGE + (
        C("accept_len", "float64", "tokens/verify", "pooled window mean of tokens committed per "
          "request per verify step, bonus included; NaN on non-speculative lines", "higher"),
        C("accept_rate", "float64", "", "SGLang: as printed, its formula depends on the release "
          "(sglang.md §3.2); vLLM: (accept_len − 1) / k, the share of drafted positions "
          "committed (SGLang v0.5.11's definition for a chain), not vLLM's printed rate (that is "
          "vllm_spec.draft_acceptance_rate)", "higher"),
        C("cap_len", "float64", "", "DSpark cap length"),
        C("block_accept_len", "float64", "", "DSpark block accept length", "higher"),
        C("pre_allocated_usage", "float64", "fraction", "PD decode: pre-allocated KV / capacity"),
        C("prealloc_req", "Int64", "requests", "PD decode: pre-allocation queue"),
        C("transfer_req", "Int64", "requests", "PD decode: transfer queue"),
        C("retracted_req", "Int64", "requests", "PD decode: retracted queue"),
        C("host_receive_req", "Int64", "requests", "PD decode: host-receive queue (sglang 0.5.23 "
          "metrics_reporter.py:1028, when the receive threshold is below 1)"),
        C("waiting_image_req", "Int64", "requests", "EPD waiting list"),
    ) + _GRAPH + (
        C("gen_throughput", "float64", "tokens/s", "decode tokens in the window / wall time since "
          "the previous decode line (includes prefill and idle time)", "higher"),
        C("largest_len", "Int64", "tokens", "scheduler bookkeeping (v0.4.3.post3 – v0.4.4.post1)"),
        C("queue_req", "Int64", "requests", "waiting-queue length at the logging instant"),
        C("line_timestamp", "datetime64[us]", "", "the 'timestamp:' field (v0.4.9.post1 – post2)"),
        C("wrapper_time", "datetime64[us]", "", "a sub-second date-time that a wrapper printed "
          "in front of the SGLang prefix (docker logs --timestamps, a Kubernetes log file, a "
          "collector), in the wrapper's own clock (often UTC): only the time between two lines "
          "is used (sglang.md §1.3); NA where no wrapper printed one", core=False),
        C("est_decode_tflops", "float64", "TFLOPS", "model-based MFU estimate, per GPU"),
        C("est_read_bw", "float64", "GB/s", "estimated read bandwidth per GPU"),
        C("est_write_bw", "float64", "GB/s", "estimated write bandwidth per GPU"),
        C("fwd_occupancy", "float64", "%", "device-timer forward occupancy"),
        C("fwd_idle_occupancy", "float64", "%", "device-timer forward + idle occupancy "
          "('fwd+idle occupancy: X%', sglang 0.5.23 metrics_reporter.py:222–225)"),
        C("engine", "category", "", "'vllm' on rows from vLLM logs (NA, not carried, for SGLang "
          "rows)"),
        C("prompt_throughput", "float64", "tokens/s", "vLLM: prompt tokens per second in the "
          "window (a window with prefill work is not clean)"),
        C("drafts", "float64", "drafts", "vLLM: proposals (request × verify steps) in the "
          "window (vllm_spec.drafts); weighs accept_len exactly where SGLang's running_req × "
          "decode_log_interval approximates it"),
        C("gen_throughput_steps", "boolean", "", "vLLM: True on V0 rows, whose gen_throughput "
          "counts one token per decoding sequence per engine step, not the tokens emitted "
          "(llm_engine.py _get_stats, vllm issue 6669): under speculation the step (cycle) "
          "time is 1000 × running_req / gen_throughput and the delivered rate gen_throughput × "
          "accept_len (docs/formats-vllm.md); False on V1 rows (emitted tokens); NA on SGLang "
          "rows and on vLLM rows without a throughput line"),
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
        C("running_req", "Int32", "requests", "running decode batch size now"),
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
        C("replay_token", "Int64", "tokens", "prompt tokens replayed (sglang 0.5.23 "
          "metrics_reporter.py:765, printed when non-zero)"),
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
        C("wrapper_time", "datetime64[us]", "", "as in decode: a wrapper's sub-second "
          "date-time in front of the SGLang prefix; NA where none", core=False),
        C("est_prefill_tflops", "float64", "TFLOPS", "MFU estimate, per GPU"),
        C("fwd_occupancy", "float64", "%", "device-timer forward occupancy"),
        C("fwd_idle_occupancy", "float64", "%", "device-timer forward + idle occupancy "
          "('fwd+idle occupancy: X%', sglang 0.5.23 metrics_reporter.py:222–225)"),
    ) + _LINE_META,
)

SERVER_ARGS = Table(
    "server_args",
    "one row per server start-up: SGLang's 'server_args=ServerArgs(...)' line, or the vLLM "
    "start-up lines printed together ('non-default args: {…}', 'args: Namespace(…)', "
    "'Initializing … LLM engine (v…) with config: …', docs/formats-vllm.md); the columns after "
    "these are the config keys as SGLang names them (vLLM keys of the same meaning mapped to "
    "them, the others as vLLM names them; values that are not Python literals are kept as "
    "source text; lists and dicts as JSON text)",
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
        C("verify_ct", "Int64", "verifies",
          "spec_verify_ct: verify steps that included the request"),
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
        C("prompt_hash", "string", "", "16 hex digits of SHA-256 of the prompt as logged (obj "
          "'text', else 'input_ids'; printed at --log-requests-level 2 and 3, long values "
          "truncated alike in both formats): the same prompt in two runs has the same hash "
          "(`compare --paired`); NA when the level leaves the prompt out"),
        C("custom_labels", "string", "", "JSON object: the request's custom_labels "
          "(GenerateReqInput.custom_labels, logged at every level; `requests --by label`)"),
    ),
)

# ---------------------------------------------------------------------------------------- vLLM
# vLLM logs (vllm.md) fill these tables with the engine's own numbers, and the engine-neutral
# 'decode' table with one row per stats window (see DECODE's 'engine' column).
_VLLM_WHO = (
    C("timestamp", "datetime64[us]", "", "time of the vLLM prefix 'MM-DD hh:mm:ss' (local wall "
      "clock); vLLM prints no year: it comes from --date (the first line's date), else from the "
      "file's modification date (the last line's year), and rolls over at a December → January "
      "step"),
    C("process", "category", "", "label of the '(Label pid=N)' process prefix, e.g. 'APIServer', "
      "'EngineCore_DP0'; NA when the line has none (V0, single process)"),
    C("pid", "Int64", "", "pid of the process prefix"),
    C("level", "category", "", "log level as printed ('INFO', or 'DEBUG' when idle)"),
    C("dp", "Int64", "", "engine (DP rank) index: 'Engine NNN:' of the throughput line (a spec "
      "line takes the index of the throughput line it follows) or the '_DP<r>' suffix of the "
      "process label; NA for single-engine and aggregated lines"),
)

VLLM_SPEC = Table(
    "vllm_spec",
    "one row per vLLM speculative-decoding metrics line: V0 'Speculative metrics:' (cumulative "
    "counters, windows by differencing) and V1 'Speculative metrics:' / 'SpecDecoding metrics:' "
    "(every version, already windows), vllm.md §2.1, §3.1",
    _WHERE + _VLLM_WHO + (
        C("variant", "category", "", "line shape: 'v0-a' (doubled 'tokens tokens'), 'v0-b', "
          "'v1-a' … 'v1-e' (vllm.md §2.1, §3.1)"),
        C("cumulative", "boolean", "", "True for V0 lines, whose counters count since engine "
          "start"),
        C("segment", "Int64", "", "V0: engine run within the series, 0 at the first line, +1 at "
          "each restart (a counter that drops); NA for V1"),
        C("k", "Int64", "tokens", "draft tokens per proposal: V0 'Number of speculative tokens'; "
          "V1 the length of the per-position list (NA when the line has none or it was elided)"),
        C("draft_acceptance_rate", "float64", "fraction", "'(Avg) Draft acceptance rate' as "
          "printed, as a fraction: accepted / draft tokens (V0: cumulative, counting accepted "
          "positions after a rejection too; V1: the window). Not comparable across engines or k: "
          "see accept_rate"),
        C("rate_unit", "category", "", "unit the rate was printed in: 'fraction' or 'percent'"),
        C("system_efficiency", "float64", "fraction", "V0 'System efficiency' as printed "
          "(cumulative emitted / maximum emittable)"),
        C("mean_acceptance_length", "float64", "tokens/draft", "V1 'Mean acceptance length' as "
          "printed (2 decimals; bonus included)", "higher"),
        C("accepted_throughput", "float64", "tokens/s", "V1 'Accepted throughput'"),
        C("drafted_throughput", "float64", "tokens/s", "V1 'Drafted throughput'"),
        C("accepted_tokens", "Int64", "tokens", "accepted draft tokens as printed (bonus "
          "excluded; V0 cumulative)"),
        C("draft_tokens", "Int64", "tokens", "drafted tokens as printed (V0 cumulative)"),
        C("emitted_tokens", "Int64", "tokens", "V0 'Number of emitted tokens' (cumulative)"),
        C("window_accepted", "Int64", "tokens", "accepted draft tokens in the window: V0 the "
          "difference from the previous line of the series (the counters themselves after a "
          "restart; NA for the series' first line, whose window start is unknown), V1 as "
          "printed"),
        C("window_draft_tokens", "Int64", "tokens", "drafted tokens in the window (as "
          "window_accepted)"),
        C("window_emitted", "Int64", "tokens", "V0: emitted tokens in the window"),
        C("drafts", "float64", "drafts", "proposals (request × verify steps) in the window: V0 "
          "window_draft_tokens / k; V1 draft_tokens / k when that reproduces the printed mean "
          "acceptance length (fixed k), else accepted / (MAL − 1), rounded (lossy)"),
        C("drafts_from", "category", "", "how drafts was recovered: 'draft_tokens/k' or "
          "'accepted/(mal-1)'"),
        C("accept_len", "float64", "tokens/verify", "window τ, bonus included: V1 1 + accepted "
          "/ drafts; V0 window_emitted / drafts (= system efficiency × (k + 1) over the window); "
          "the same convention as SGLang's accept len", "higher"),
        C("window_acceptance_rate", "float64", "fraction", "accepted / drafted tokens over the "
          "window, unrounded (V0: by differencing)"),
        C("accept_rate", "float64", "fraction", "comparable rate: (accept_len − 1) / k, the share "
          "of drafted positions committed (SGLang's v0.5.11 definition for a chain)", "higher"),
        C("per_position", "string", "", "V1 'Per-position acceptance rate' as a JSON list "
          "(unconditional: element i = drafts whose position i was accepted / drafts)"),
        C("per_position_elided", "boolean", "", "True when the list was shortened with '...'"),
        C("window_s", "float64", "s", "window length, draft_tokens / drafted_throughput (V1-d/e)"),
        C("paired_line", "Int64", "", "line_no of the throughput line this line was printed with "
          "(it gives the decode row); NA when none preceded it"),
        C("extra", "string", "", "unknown fields and suffixes (forks), as printed; NA if none"),
    ),
)

VLLM_STATS = Table(
    "vllm_stats",
    "one row per vLLM throughput line ('Avg prompt throughput: …', V0 and V1 T1–T4, vllm.md "
    "§2.4, §3.3), with the V0 'Prefix cache hit rate: GPU:' line folded into the row it follows",
    _WHERE + _VLLM_WHO + (
        C("variant", "category", "", "'v0' (Swapped/CPU KV fields), 'T1' … 'T4' (vllm.md §3.3)"),
        C("engines_aggregated", "Int64", "engines", "n of an 'n Engines Aggregated:' prefix"),
        C("prompt_throughput", "float64", "tokens/s", "prompt tokens in the window / window "
          "seconds"),
        C("gen_throughput", "float64", "tokens/s", "emitted tokens (accepted + bonus) in the "
          "window / window seconds", "higher"),
        C("running_req", "Int32", "requests", "'Running: N reqs' at logging time"),
        C("waiting_req", "Int64", "requests", "'Waiting' (V1) or 'Pending' (V0) at logging time"),
        C("swapped_req", "Int64", "requests", "V0 'Swapped'"),
        C("deferred_req", "Int64", "requests", "'Deferred'"),
        C("preemptions", "Int64", "", "'Preemptions' in the window"),
        C("corrupted_req", "Int64", "requests", "'Corrupted'"),
        C("gpu_kv_usage", "float64", "%", "'GPU KV cache usage' — the accelerator's: 'NPU', 'XPU' "
          "… the same column (vllm 0.34.0 v1/metrics/loggers.py:117, 314)"),
        C("kv_device", "category", "", "the KV cache's device when it is not a GPU ('NPU', "
          "'XPU', …; NA for GPU)"),
        C("kv_fetch_waiting", "Int64", "requests", "'KV fetch: N waiting to start' (vLLM 0.3x, "
          "a KV connector: loggers.py:303–308)"),
        C("kv_fetch_in_progress", "Int64", "requests", "'… N in progress'"),
        C("kv_fetch_completed", "Int64", "requests", "'… N completed waiting'"),
        C("cpu_kv_usage", "float64", "%", "V0 'CPU KV cache usage'"),
        C("prefix_hit_rate", "float64", "%", "V1 'Prefix cache hit rate'"),
        C("prefix_hit_gpu", "float64", "%", "V0 prefix-cache line, GPU"),
        C("prefix_hit_cpu", "float64", "%", "V0 prefix-cache line, CPU"),
        C("external_prefix_hit_rate", "float64", "%", "'External prefix cache hit rate'"),
        C("mm_cache_hit_rate", "float64", "%", "'MM cache hit rate'"),
        C("extra", "string", "", "unknown fields, as printed; NA if none"),
    ),
)

VLLM_STAGES = Table(
    "vllm_stages",
    "one row per V0 'SpecDecodeWorker stage times:' line (vllm.md §2.3): per-step means over the "
    "~5 s window; draft + scoring + verification is not a full cycle (scheduling is left out)",
    _WHERE + _VLLM_WHO + (
        C("proposal_ms_per_token", "float64", "ms/token", "'average_time_per_proposal_tok_ms'",
          "lower"),
        C("k", "Int64", "tokens", "k of the latest V0 spec line of the same process before this "
          "line; NA before any"),
        C("draft_ms", "float64", "ms/step", "draft phase per step, k × proposal_ms_per_token",
          "lower"),
        C("scoring_ms", "float64", "ms/step", "target-model scoring (verify forward) per step",
          "lower"),
        C("verification_ms", "float64", "ms/step", "rejection sampling per step", "lower"),
        C("prefill_sync_ms", "float64", "ms/step", "'prefill_sync_time_ms' (later versions)",
          "lower"),
        C("stage_sum_ms", "float64", "ms/step", "draft_ms + scoring_ms + verification_ms "
          "(+ prefill_sync_ms): a lower bound of the cycle", "lower"),
    ),
)

VLLM_ITERATIONS = Table(
    "vllm_iterations",
    "one row per V1 per-iteration detail line ('Iteration(N): …', vllm.md §3.5)",
    _WHERE + _VLLM_WHO + (
        C("iteration", "Int64", "", "engine step counter"),
        C("ctx_req", "Int64", "requests", "context (prefill) requests in the step"),
        C("ctx_tokens", "Int64", "tokens", "context tokens in the step"),
        C("gen_req", "Int64", "requests", "generation (decode) requests in the step"),
        C("gen_tokens", "Int64", "tokens", "generation tokens (whether draft positions count is "
          "not established)"),
        C("iter_ms", "float64", "ms", "wall time of the step", "lower"),
        C("dummy", "boolean", "", "a dummy iteration ('… ms (dummy)': an idle DP engine runs one "
          "to keep step with the others; vllm 0.34.0 v1/metrics/loggers.py:199–213)"),
        C("kv_cache_usage", "float64", "fraction", "'<device> KV cache usage: X%' after the "
          "elapsed time (vLLM 0.26 →), as a fraction"),
    ),
)

SPEC_PARAMS = Table(
    "spec_params",
    "one row per SGLang 'Adaptive spec params updated: steps A -> B (ema_accept_len=X)' line "
    "(adaptive speculation, v0.5.11 →, speculative/adaptive_spec_params.py; sglang.md §3.7b): "
    "num_steps changed at run time; the analyses treat the decode lines between two such lines "
    "as a run of their own (docs/engines.md)",
    _WHERE + _WHEN + (
        C("steps_from", "Int32", "steps", "speculative num_steps before the change (A)"),
        C("steps_to", "Int32", "steps", "speculative num_steps from here on (B); 0 turns "
          "speculation off"),
        C("ema_accept_len", "float64", "tokens/verify", "the controller's moving average of "
          "accepted drafts per request and verify, BONUS EXCLUDED, as printed (2 decimals)"),
    ),
)

# The accept-length conventions of the bench table's accept_len (others.md §6)
ACCEPT_LEN_DEFS = {
    "per-draft": "pooled over every draft/verify step of the run: 1 + accepted / drafts "
                 "(llama.cpp, vllm bench serve, vLLM offline example)",
    "server-lifetime": "the server's lifetime average of DP rank 0, read after the run "
                       "(SGLang bench_serving, bench_one_batch_server, bench_speculative): "
                       "includes the server's history before the run unless the cache was "
                       "flushed",
    "request": "one request: completion_tokens / verify steps, first (prefill) token included "
               "(SGLang send_one)",
    "pooled-with-first-token": "Σ completion tokens / Σ verify steps over the run: each "
                               "request's first token included (SGLang mtbench script, "
                               "SpecForge bench_eagle3)",
    "request-mean": "unweighted mean of per-request values (SGLang run_eval, adaptive bench, "
                    "TRT-LLM [AL] AVERAGE)",
    "iteration": "one engine iteration, requests with drafts only: (accepted + requests) / "
                 "requests (TRT-LLM specDecodingStats)",
    "per-step": "mean over all decoding steps at batch size 1 (Spec-Bench, EAGLE answer files)",
    "request-steps": "one request: 1 + accepted draft tokens / its speculative steps, first "
                     "(prefill) token excluded (vLLM --per-request-spec-decode-metrics)",
}

_BENCH_WHERE = _WHERE[:2] + (
    C("startup", "Int64", "", "server start-up segment when the input also holds SGLang "
      "server lines (as in the other tables); 0 otherwise"),
)
_BENCH_WHO = (
    C("tool", "category", "", "the program that printed the row: 'llama.cpp' (server statistics "
      "lines), 'llama-speculative-simple', 'trtllm-bench', 'trtllm', 'sglang.bench_serving', "
      "'sglang.bench_one_batch_server', 'sglang.bench_speculative', 'sglang.mtbench', "
      "'sglang.send_one', 'sglang.bench_adaptive_speculative', 'sglang.run_eval', "
      "'vllm.bench_serve', 'vllm.spec_decode_example', 'spec-bench', 'eagle' (others.md), "
      "'vllm.response' (a saved API response with per-request spec metrics), "
      "'sglang.response' (a saved SGLang OpenAI response with sglext.spec_tokens_details), "
      "'llama.cpp.response' (a saved llama-server response with timings.draft_n), "
      "'specforge.bench_eagle3' (a SpecForge results file) — docs/requests.md"),
    C("engine", "category", "", "serving engine measured: 'llama.cpp', 'tensorrt-llm', "
      "'sglang', 'vllm'; NA for research harnesses (their own HF-transformers loop) and for a "
      "serving-benchmark block that does not say which engine printed it"),
)

BENCH = Table(
    "bench",
    "one row per benchmark result or engine summary of other engines and benchmark scripts "
    "(others.md: llama.cpp, trtllm-bench, SGLang and vLLM benchmark scripts, Spec-Bench); "
    "engine-neutral columns, every number in the column of its meaning whatever the tool "
    "called it; multi-line blocks cut short are kept with complete=False",
    _BENCH_WHERE + _BENCH_WHO + (
        C("scope", "category", "", "what one row describes: 'run' (a benchmark run or offline "
          "run), 'request' (one request), 'aggregate' (an engine's running totals, llama.cpp "
          "'statistics'), 'config' (one configuration of a sweep; a llama-server start-up line: "
          "model, draft model, n_slots, the drafter and its n_max), 'phase' (one phase of the "
          "adaptive bench), 'task' (a Spec-Bench task, a SpecForge benchmark or one of its "
          "categories), 'depth' (a llama.cpp adaptive draft-depth change: max_draft_len is the "
          "depth from then on, stats its depth before, draft/accepted tokens the round that "
          "moved it)"),
        C("format", "category", "", "how the tool printed it: 'line', 'block', 'table' (a row of "
          "a printed table) or 'jsonl' (a JSON record); one run printed twice (a table row and "
          "a line, a stdout line and a JSONL record) gives two rows"),
        C("label", "string", "", "the tool's own name for the row: TRT-LLM speculative mode, "
          "llama.cpp drafting implementation ('draft-eagle3'), adaptive-bench phase, Spec-Bench "
          "task, bench_speculative 'i=N', llama-server request 'task N'; NA if none"),
        C("accept_len", "float64", "tokens/step", "acceptance length τ: mean tokens emitted per "
          "draft/verify step, BONUS TOKEN INCLUDED, as the tool printed it (every tool of "
          "others.md prints τ with the bonus; none needed converting); pooling and weighting "
          "differ by tool: see accept_len_def", "higher"),
        C("accept_len_def", "category", "", "how accept_len was pooled (others.md §6): "
          + "; ".join(f"'{k}' = {v}" for k, v in ACCEPT_LEN_DEFS.items())),
        C("accept_len_derived", "float64", "tokens/step", "τ recomputed from the printed counts "
          "with ONE definition for every tool: 1 + accepted_tokens / drafts (pooled per draft, "
          "bonus included, unrounded); NaN when the tool prints no draft count", "higher"),
        C("accept_len_min", "float64", "tokens/step", "smallest per-request τ (TRT-LLM [AL] "
          "MINIMUM, run_eval min)"),
        C("accept_len_max", "float64", "tokens/step", "largest per-request τ (TRT-LLM [AL] "
          "MAXIMUM, run_eval max)"),
        C("acceptance_rate", "float64", "fraction", "the tool's own draft acceptance rate as "
          "printed, percentages divided by 100; definitions differ: llama.cpp accepted / "
          "drafted tokens (older builds: / tested); vllm bench serve Δaccepted / Δdraft tokens; "
          "TRT-LLM [DAR] AVERAGE = mean over requests of ADT / (max_draft_len × iterations), an "
          "upper-bound denominator", "higher"),
        C("accept_rate_derived", "float64", "fraction", "accepted_tokens / draft_tokens from the "
          "printed counts (one definition for every tool); NaN without both counts", "higher"),
        C("per_position", "string", "", "JSON list: element i = drafts whose position i was "
          "accepted ÷ all drafts (unconditional fraction; vLLM's percentages divided by 100)"),
        C("requests", "Int64", "requests", "requests in the run (successful requests, "
          "#questions, run_eval n = requests with a value)"),
        C("drafts", "Int64", "drafts", "draft/verify steps with a draft (llama.cpp #gen drafts, "
          "vLLM num_drafts)"),
        C("accepted_drafts", "Int64", "drafts", "drafts with at least one accepted token "
          "(llama.cpp #acc drafts)"),
        C("draft_tokens", "Int64", "tokens", "draft tokens proposed"),
        C("accepted_tokens", "Int64", "tokens", "draft tokens accepted, bonus excluded"),
        C("output_tokens", "Int64", "tokens", "output tokens generated (llama-speculative-simple "
          "n_predict, send_one Tokens, bench_serving Total generated tokens, llama-server "
          "'eval time … / N tokens': every output token of the request, the first included)"),
        C("max_draft_len", "Int64", "tokens", "configured maximum draft length (llama.cpp "
          "n_draft; llama-server --spec-draft-n-max, printed at trace level, -lv 4)"),
        C("mean_draft_len", "float64", "tokens", "draft_tokens / drafts (may be below the "
          "configured maximum)"),
        C("batch_size", "Int64", "requests", "configured batch size / concurrency of a sweep "
          "configuration (bench_speculative, bench_one_batch_server; llama-server n_slots)"),
        C("spec_steps", "Int64", "", "SGLang --speculative-num-steps of the configuration"),
        C("spec_topk", "Int64", "", "SGLang --speculative-eagle-topk of the configuration"),
        C("spec_draft_tokens", "Int64", "tokens", "SGLang --speculative-num-draft-tokens of the "
          "configuration"),
        C("output_tok_s", "float64", "tokens/s", "output tokens per second of the whole run, "
          "all requests together", "higher"),
        C("per_request_tok_s", "float64", "tokens/s", "decode tokens per second of one request "
          "stream (send_one speed, bench_speculative speed = acc_length / step_time, Spec-Bench "
          "tokens per second at batch 1, llama-server 'eval time … tokens per second' as "
          "printed: decode_tokens / eval_ms)", "higher"),
        C("baseline_tok_s", "float64", "tokens/s", "the same rate without speculation, as the "
          "tool printed it (Spec-Bench)", "higher"),
        C("speedup", "float64", "x", "speedup over the baseline as printed (Spec-Bench: ratio "
          "of mean speeds)", "higher"),
        C("step_time_ms", "float64", "ms", "time of one decode iteration (one spec cycle): "
          "bench_speculative's 20th percentile of the scheduler's step times (JSONL seconds × "
          "1000)", "lower"),
        C("avg_latency_s", "float64", "s", "end-to-end latency of one request (send_one) or "
          "mean over requests (adaptive bench)", "lower"),
        C("duration_s", "float64", "s", "wall time of the whole run (bench_serving Benchmark "
          "duration, mtbench JSONL latency)", "lower"),
        C("concurrency", "float64", "requests", "bench_serving's measured mean concurrency; "
          "llama-server request: the slots processing a task when the request finished, itself "
          "included (from the 'processing task' / 'stop processing' lines; NA where the log "
          "does not show them)"),
        C("errors", "Int64", "requests", "failed requests"),
        C("calls_b", "Int64", "calls", "llama.cpp #calls(b,g,a), first value"),
        C("calls_g", "Int64", "calls", "llama.cpp #calls(b,g,a), second value"),
        C("calls_a", "Int64", "calls", "llama.cpp #calls(b,g,a), third value"),
        C("dur_b_ms", "float64", "ms", "llama.cpp dur(b,g,a) first value, as printed (whether "
          "total or per call is not established)"),
        C("dur_g_ms", "float64", "ms", "llama.cpp dur(b,g,a) second value (draft generation), as "
          "printed"),
        C("dur_a_ms", "float64", "ms", "llama.cpp dur(b,g,a) third value, as printed"),
        C("stats", "string", "", "JSON: the tool's distribution rows as printed, e.g. TRT-LLM "
          "{\"DT\": {\"MINIMUM\": 96.0, …}, \"ADT\": …, \"DAR\": …, \"AL\": …} (DT is an "
          "upper bound: max_draft_len × iterations)"),
        C("extra", "string", "", "JSON object: other printed values of the row (unmapped "
          "labels of a result block or table columns), as printed"),
        C("complete", "boolean", "", "False when a block was cut short (missing rows; the rows it "
          "printed are kept); True otherwise, single lines included"),
        C("end_line", "Int64", "", "line number of the row's last line (blocks and tables)"),
        C("category", "string", "", "workload of the row: the question's category (Spec-Bench "
          "and EAGLE answer files), the benchmark (SpecForge results); NA if none"),
        C("steps", "Int64", "steps", "scope 'request': the request's draft/verify steps "
          "(Spec-Bench: len(accept_lengths); EAGLE: Σ (idx + 1); vLLM response: "
          "num_spec_steps; llama-server: its verification steps, read back from the printed "
          "mean len — the integer s with 1 + accepted / s printing as it (and as the per-position "
          "values where printed), the nearest to accepted / (mean len − 1) when several do; NA "
          "when nothing was accepted) — the denominator of its per-request τ"),
        C("step_tokens", "Int64", "tokens", "scope 'request': tokens those steps committed, bonus "
          "included (Spec-Bench: Σ accept_lengths; EAGLE: Σ new_tokens; vLLM response: "
          "num_spec_steps + accepted draft tokens; llama-server: steps + accepted draft tokens): "
          "τ_r = step_tokens / steps"),
        C("prompt_tokens", "Int64", "tokens", "scope 'request': prompt length (vLLM response "
          "usage.prompt_tokens; llama-server 'prompt eval time … / N tokens': the prompt tokens "
          "processed, those reused from the cache not counted)"),
        C("prompt_ms", "float64", "ms", "scope 'request', llama-server 'prompt eval time': "
          "processing of the request's prompt, up to its first output token", "lower"),
        C("eval_ms", "float64", "ms", "scope 'request', llama-server 'eval time': generation "
          "from the first output token to the last (drafting and verifying included) — the "
          "interval of the per-stream rate", "lower"),
        C("decode_tokens", "Int64", "tokens", "scope 'request', llama-server: the tokens "
          "generated within eval_ms, the count its printed tokens per second divides (read back "
          "as rate × eval_ms: output_tokens − 1 in builds that leave the first token, which "
          "comes from the prompt pass, out; output_tokens in older ones)"),
        C("slot_id", "Int32", "", "llama-server: the slot that served the request ('id N' of "
          "the slot prefix)"),
        C("task_id", "Int64", "", "llama-server: the request's task ('task N' of the slot "
          "prefix)"),
        C("finish_reason", "category", "", "scope 'request': why generation stopped ('stop', "
          "'length', …) when the tool says"),
    ),
)

BENCH_ITERS = Table(
    "bench_iters",
    "long form: one row per engine iteration of TensorRT-LLM (the PyTorch executor's "
    "per-iteration log line, others.md §2.2, and iteration-stats records with "
    "specDecodingStats, §2.3)",
    _BENCH_WHERE + _BENCH_WHO + (
        C("format", "category", "", "'iter_log' (per-iteration log line) or 'iter_stats' "
          "(specDecodingStats JSON)"),
        C("timestamp", "datetime64[us]", "", "the line's 'timestamp =' field when it reads as a "
          "date and time; NA otherwise"),
        C("iter", "Int64", "", "iteration number"),
        C("global_rank", "Int64", "", "global process rank"),
        C("rank", "Int64", "", "process rank"),
        C("currank_requests", "Int64", "requests", "currank_total_requests, first number"),
        C("total_requests", "Int64", "requests", "currank_total_requests, second number"),
        C("host_step_time_ms", "float64", "ms", "host wall time of the whole iteration (draft + "
          "verify); includes whatever else the process did", "lower"),
        C("prev_device_step_time_ms", "float64", "ms", "device time of the PREVIOUS iteration, "
          "as printed on this line", "lower"),
        C("device_step_time_ms", "float64", "ms", "device time of THIS iteration: "
          "prev_device_step_time of the line of iter + 1 on the same rank (NaN for the last)",
          "lower"),
        C("num_scheduled_requests", "Int64", "requests", "batch size of the iteration"),
        C("num_ctx_requests", "Int64", "requests", "requests with context (prefill) work"),
        C("num_ctx_tokens", "Int64", "tokens", "context tokens computed"),
        C("num_generation_tokens", "Int64", "tokens", "generation tokens, DRAFT TOKENS INCLUDED "
          "(requests × (1 + draft length))"),
        C("kv_cache_util", "float64", "", "KV-cache utilisation as printed (later versions)"),
        C("num_draft_tokens", "Int64", "tokens", "specDecodingStats numDraftTokens"),
        C("num_accepted_tokens", "Int64", "tokens", "specDecodingStats numAcceptedTokens (draft "
          "tokens, bonus excluded)"),
        C("num_requests_with_drafts", "Int64", "requests", "specDecodingStats "
          "numRequestsWithDraftTokens"),
        C("accept_len", "float64", "tokens/step", "specDecodingStats acceptanceLength as printed: "
          "(accepted + requests) / requests, bonus included, requests with drafts only",
          "higher"),
        C("accept_len_derived", "float64", "tokens/step", "1 + num_accepted_tokens / "
          "num_requests_with_drafts (the same definition, unrounded)", "higher"),
        C("iter_latency_ms", "float64", "ms", "specDecodingStats iterLatencyMS: the draft-token "
          "generation part of the iteration only", "lower"),
        C("draft_overhead", "float64", "fraction", "specDecodingStats draftOverhead: draft "
          "phase's share of the iteration latency", "lower"),
        C("extra", "string", "", "JSON object: other keys of the line or record, as printed"),
    ),
)

# the per-request result table of `eaglelog requests` (analysis/requests_table.py:
# request_table(); RequestsResult.to_frame(), `requests -f csv`); not a parsed table, so not in
# TABLES
REQUEST_COLUMNS = (
    C("run", "string", "", "the run: the input, and its server start-up when it holds several"),
    C("source", "category", "", "the input the request came from"),
    C("line_no", "Int64", "", "line of the request's record in the input"),
    C("startup", "Int32", "", "server start-up segment (SGLang logs)"),
    C("origin", "category", "", "what printed it: 'sglang' (Finish: line), 'spec-bench', "
      "'eagle' (answer files), 'vllm' (a saved API response)"),
    C("id", "string", "", "request id (SGLang rid, vLLM response id) or benchmark question id"),
    C("category", "string", "", "the question's category (benchmark files), or the custom "
      "label named 'category' (SGLang)"),
    C("label", "string", "", "the request's custom labels (SGLang custom_labels) as "
      "'key=value, …'"),
    C("finish_reason", "category", "", "'stop', 'length', 'abort', …"),
    C("prompt_tokens", "Int64", "tokens", "prompt length"),
    C("output_tokens", "Int64", "tokens", "output length (SGLang completion_tokens, the first "
      "token included; Spec-Bench/EAGLE Σ new_tokens)"),
    C("steps", "Int64", "verifies", "verify (draft/verify) steps of the request"),
    C("step_tokens", "Int64", "tokens", "tokens those steps committed, bonus included, the first "
      "(prefill) token not (SGLang: completion_tokens − 1)"),
    C("tau", "float64", "tokens/verify", "τ_r = step_tokens / steps; NaN without a verify step",
      "higher"),
    C("tau_printed", "float64", "tokens/verify", "the tool's own per-request value as printed "
      "(SGLang spec_accept_length = completion / verify_ct, first token included)"),
    C("e2e_latency", "float64", "s", "end-to-end latency (SGLang e2e_latency; Spec-Bench/EAGLE "
      "Σ wall_time)", "lower"),
    C("prompt_hash", "string", "", "hash of the logged prompt (SGLang --log-requests-level ≥ 2)"),
    C("timestamp", "datetime64[us]", "", "when the request finished (SGLang)"),
)


CORE = {
    "prof": "source line_no startup timestamp ranks mode cycles tokens total_ms accept_len "
            "eff_tok_s complete n_phases phase_sum_ms end_line",
    "prof_phases": "source line_no startup block phase ms_per_cycle pct",
    "decode": "source line_no startup timestamp ranks running_req num_tokens token_usage "
              "accept_len accept_rate graph gen_throughput queue_req",
    "prefill": "source line_no startup timestamp ranks new_seq new_token cached_token token_usage "
               "running_req queue_req",
    "server_args": "source line_no startup timestamp parse_ok",
    "requests": "source line_no startup timestamp rid finish_reason prompt_tokens "
                "completion_tokens cached_tokens e2e_latency verify_ct accepted_drafts "
                "proposed_drafts accept_histogram spec_accept_length format",
    "vllm_spec": "source line_no startup timestamp process pid dp variant cumulative k "
                 "draft_acceptance_rate accepted_tokens draft_tokens window_accepted "
                 "window_draft_tokens drafts accept_len accept_rate",
    "vllm_stats": "source line_no startup timestamp process pid dp variant prompt_throughput "
                  "gen_throughput running_req waiting_req gpu_kv_usage",
    "vllm_stages": "source line_no startup timestamp proposal_ms_per_token k draft_ms scoring_ms "
                   "verification_ms stage_sum_ms",
    "vllm_iterations": "source line_no startup timestamp process pid dp iteration ctx_req "
                       "ctx_tokens gen_req gen_tokens iter_ms",
    "bench": "source line_no startup tool engine scope format label accept_len accept_len_def "
             "accept_len_derived acceptance_rate requests output_tok_s complete end_line",
    "bench_iters": "source line_no startup tool engine format iter host_step_time_ms "
                   "num_scheduled_requests accept_len",
    "spec_params": "source line_no startup timestamp ranks steps_from steps_to ema_accept_len",
}


def _with_core(t: Table) -> Table:
    core = set(CORE[t.name].split())
    cols = tuple(Column(c.name, c.dtype, c.unit, c.doc, c.better, c.name in core)
                 for c in t.columns)
    return Table(t.name, t.doc, cols)


TABLES: dict[str, Table] = {t.name: _with_core(t) for t in (PROF, PROF_PHASES, DECODE, PREFILL,
                                                            SERVER_ARGS, REQUESTS, VLLM_SPEC,
                                                            VLLM_STATS, VLLM_STAGES,
                                                            VLLM_ITERATIONS, BENCH, BENCH_ITERS,
                                                            SPEC_PARAMS)}

# The columns of the two large tables that the analyses read (summary, breakeven, reconcile,
# compare, sweep, export, plot, report); every command but `parse` asks for only these, which
# keeps a gigabyte log's tables in memory small.  tests/test_projection.py runs every analysis
# both ways and requires the same output.
_RANKS = tuple(tag.lower() for tag in RANK_TAGS)
ANALYSIS_COLUMNS: dict[str, tuple[str, ...]] = {
    "decode": ("source", "line_no", "startup", "timestamp", "ranks") + _RANKS + (
        "running_req", "accept_len", "accept_rate", "gen_throughput", "header", "engine",
        "prompt_throughput", "drafts", "gen_throughput_steps", "line_timestamp", "wrapper_time",
        "num_tokens"),
    "prefill": ("source", "line_no", "startup", "timestamp", "ranks") + _RANKS + (
        "new_seq", "new_token", "cached_token", "running_req", "input_throughput",
        "wrapper_time"),
}


# The CLI spells table names in kebab-case (--table prof-phases).
def cli_name(table: str) -> str:
    return table.replace("_", "-")


def table_from_cli(name: str) -> str:
    return name.replace("-", "_")



# ------------------------------------------------------------------ load tests (`latency`)
# Read by parsers/loadtest.py for `eaglelog latency` (docs/latency.md), not by `parse`: a load
# test's result is one JSON document per run, outside the line-based families of TABLES.
def _load_where(what: str) -> tuple[Column, ...]:
    return (
        C("source", "category", "", "the result file the row came from"),
        C("line_no", "Int64", "", "the line the run's JSON object starts on (JSON lines: "
          "--append-result)"),
        C("run", "string", "", "the benchmark's --label (else its backend)"),
        C("load", "float64", "req/s or requests", f"the load point of the {what}: the "
          "configured request rate when finite, else --max-concurrency (load_kind says which)"),
    )


LOAD_REQUESTS = Table(
    "load_requests",
    "one row per request of a load test: `vllm bench serve --save-detailed` or SGLang "
    "`bench_serving --output-details` lists, aiperf profile_export.jsonl records "
    "(docs/latency.md §1); failed requests kept with ok=False",
    _load_where("request's run") + (
        C("request", "Int64", "", "0-based index of the request in the file's lists"),
        C("ok", "boolean", "", "completed: no error and output_len > 0 (failed requests count "
          "against goodput)"),
        C("ttft_ms", "float64", "ms", "time to first token (ttfts × 1000)", "lower"),
        C("tpot_ms", "float64", "ms", "time per output token after the first: (e2el − ttft) / "
          "(output_tokens − 1), as vLLM computes it; NaN for output_tokens ≤ 1", "lower"),
        C("itl_mean_ms", "float64", "ms", "mean gap between streamed chunks (itls); a chunk may "
          "carry several tokens under speculation", "lower"),
        C("itl_chunks", "Int64", "", "gaps in the request's itls list (chunks after the first)"),
        C("e2el_ms", "float64", "ms", "end-to-end latency (latencies × 1000; ttft + Σ itl in "
          "releases that saved no latencies)", "lower"),
        C("output_tokens", "Int64", "tokens", "output_lens (0 for a failed request)"),
        C("prompt_tokens", "Int64", "tokens", "input_lens"),
        C("error", "string", "", "the client's error text (truncated to 200 characters); NA "
          "for a success"),
        C("accept_len", "float64", "tokens/step", "the request's acceptance length, 1 + "
          "accepted / verify steps (aiperf's spec_decode_acceptance_length)", "higher",
          core=False),
    ))

LOAD_RUNS = Table(
    "load_runs",
    "one row per load-test run (vllm bench serve, SGLang bench_serving, aiperf): its "
    "configuration and its own numbers as the tool computed them",
    _load_where("run") + (
        C("load_kind", "category", "", "'rate' (request_rate) or 'concurrency' "
          "(max_concurrency)"),
        C("tool", "category", "", "the harness that wrote the file: vllm (bench serve), sglang "
          "(bench_serving), aiperf, specdec_bench", core=False),
        C("request_rate", "float64", "req/s", "configured --request-rate (inf: all at once)"),
        C("max_concurrency", "float64", "requests", "configured --max-concurrency; NaN unset"),
        C("duration_s", "float64", "s", "benchmark duration"),
        C("completed", "Int64", "requests", "successful requests"),
        C("failed", "Int64", "requests", "failed requests"),
        C("num_prompts", "Int64", "requests", "--num-prompts"),
        C("total_output_tokens", "float64", "tokens", "output tokens of the run"),
        C("output_tok_s", "float64", "tok/s", "aggregate output throughput (output_throughput)",
          "higher"),
        C("request_throughput", "float64", "req/s", "completed requests per second", "higher"),
        C("detailed", "boolean", "", "the per-request lists are there (--save-detailed)"),
        C("accept_len", "float64", "tokens/step", "spec_decode_acceptance_length, the "
          "server's acceptance length over the run (bonus included), when saved", "higher",
          core=False),
        C("model", "string", "", "model_id", core=False),
    ) + tuple(
        C(f"{stat}_{m}_ms", "float64", "ms", f"{stat if stat != 'median' else 'p50'} of "
          f"{m.upper()} as the tool printed it", "lower", core=stat in ("median", "p99"))
        for m in ("ttft", "tpot", "itl", "e2el") for stat in ("mean", "median", "std", "p90",
                                                              "p99")
    ) + (
        C("extra", "string", "", "JSON of the tool's other percentiles (p95, p99.9, …)",
          core=False),
    ))

LOAD_TABLES: dict[str, Table] = {t.name: t for t in (LOAD_REQUESTS, LOAD_RUNS)}


# ------------------------------------------------------------------ latency histograms (live)
# Made by metrics.parsed_log from the engines' TTFT and TPOT histograms (docs/formats-metrics.md
# §9) beside TABLES (a log has none): ParsedLog.tables["latency_hist"] of metrics sources.
LATENCY_HIST = Table(
    "latency_hist",
    "one row per window (two consecutive samples) of one histogram series of a metrics source: "
    "the increments of its buckets (eaglelog/live/histograms.py reads the quantiles from them)",
    (
        C("source", "category", "", "the run the row belongs to (as the decode table's)"),
        C("startup", "Int32", "", "the run's start-up (counter resets, as the decode table's)"),
        C("metric", "category", "", "'ttft' (time_to_first_token_seconds) or 'tpot' "
          "(request_time_per_output_token_seconds)"),
        C("series", "string", "", "the series' other labels (SGLang is_streaming, vLLM engine)"),
        C("t_start", "float64", "s", "the window's first sample (Unix time)"),
        C("t_end", "float64", "s", "the window's last sample (Unix time)"),
        C("bounds", "string", "", "JSON list of the buckets' upper bounds as exposed (le), "
          "the last '+Inf'"),
        C("counts", "string", "", "JSON list of the window's increment of each bucket "
          "(cumulative in le, as the buckets are)"),
        C("requests", "float64", "requests", "the window's increment of the +Inf bucket: the "
          "requests observed"),
        C("sum_s", "float64", "s", "the window's increment of the histogram's _sum"),
        C("reset", "boolean", "", "a count fell (a restart): the increment is the later "
          "sample's counts"),
    ))
