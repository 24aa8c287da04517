#!/usr/bin/env python3
"""The schedules eaglelog emits, loaded by the engines' own code at pinned releases.

    python benchmarks/engine_configs.py        # vLLM 0.24.0, 0.34.0; SGLang 0.5.14, 0.5.18, 0.5.23
    python benchmarks/engine_configs.py --vllm 0.34.0 --sglang 0.5.23 --wheels /tmp/wheels

Each release's wheel is fetched with ``pip download --no-deps`` (into --wheels, kept) and the
few source files the checks need are read from it — nothing of the engines is installed:

* vLLM: ``vllm/v1/spec_decode/dynamic/utils.py`` (``validate_and_normalize_dynamic_sd_schedule``,
  ``build_dynamic_sd_schedule_lookup``: no imports) and the method names of
  ``vllm/config/speculative.py`` (its ``SpeculativeMethod`` literals, read with ``ast``).
* SGLang: ``sglang/srt/speculative/adaptive_spec_params.py`` (``_load_adaptive_config``,
  ``AdaptiveSpeculativeParams._route``, ``adaptive_unsupported_reason``) and
  ``generate_decode_cuda_graph_batch_sizes`` of ``sglang/srt/arg_groups/cuda_graph_hook.py``,
  imported with their package imports stubbed (the views are the arguments themselves).

For the bundled schedule runs (sample_logs/schedule) and the same runs under every
algorithm × topk × data/attention parallelism the output allows or refuses, it checks:
what eaglelog emits loads in the engine (or eaglelog refused it, and the engine would refuse or
ignore it too); the engine's dense K per batch size equals eaglelog's (vLLM), and SGLang's K per
batch after its CUDA-graph padding is the intended one except where eaglelog says it is not.
Prints one line per release and case, and a count of disagreements (exit 1 when any).
"""
from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import types
import zipfile
from types import SimpleNamespace

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from eaglelog import engine_schedules as es  # noqa: E402

VLLM_FILES = ("vllm/v1/spec_decode/dynamic/utils.py", "vllm/config/speculative.py")
SGLANG_FILES = ("sglang/srt/speculative/adaptive_spec_params.py",
                "sglang/srt/arg_groups/cuda_graph_hook.py")


def wheel(pkg: str, ver: str, where: str) -> str:
    os.makedirs(where, exist_ok=True)
    have = [f for f in os.listdir(where) if f.startswith(f"{pkg}-{ver}-") and f.endswith(".whl")]
    if not have:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q",
                        f"{pkg}=={ver}", "-d", where], check=True)
        have = [f for f in os.listdir(where)
                if f.startswith(f"{pkg}-{ver}-") and f.endswith(".whl")]
    return os.path.join(where, have[0])


def extract(whl: str, names, dest: str) -> dict[str, str]:
    out = {}
    with zipfile.ZipFile(whl) as z:
        for n in names:
            if n in z.namelist():
                z.extract(n, dest)
                out[n] = os.path.join(dest, n)
    return out


def load(path: str, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def vllm_methods(path: str) -> set[str]:
    """Every string literal inside the ``*Types`` / ``SpeculativeMethod`` Literal[…] of
    vllm/config/speculative.py."""
    tree = ast.parse(open(path).read())
    out: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and (t.id.endswith("Types") or t.id == "SpeculativeMethod")
                for t in node.targets):
            out |= {c.value for c in ast.walk(node.value)
                    if isinstance(c, ast.Constant) and isinstance(c.value, str)}
    return out


class _Args(SimpleNamespace):
    """Server args: a flag the case does not set is off (False)."""

    def __getattr__(self, name):
        return False


class _Anything:
    def __call__(self, *a, **k):
        return a[0] if a else None

    def __getattr__(self, name):
        return _Anything()


def _stub(name: str, **attrs) -> None:
    mod = types.ModuleType(name)
    mod.__dict__.update(attrs)
    mod.__getattr__ = lambda n: _Anything()
    sys.modules[name] = mod


def sglang_modules(files: dict[str, str], tag: str):
    """adaptive_spec_params and cuda_graph_hook of one release, their imports stubbed."""
    for pkg in ("sglang", "sglang.srt", "sglang.srt.arg_groups", "sglang.srt.speculative",
                "sglang.srt.model_executor", "sglang.srt.utils"):
        _stub(pkg)
    _stub("sglang.srt.arg_groups.overrides", resolved_view=lambda s: s, resolving_view=lambda s: s)
    _stub("sglang.srt.runtime_context",
          attn_dp_enabled_of=lambda v: (getattr(v, "attn_dp_size", 1) or 1) > 1
          or bool(getattr(v, "enable_dp_attention", False)))
    _stub("sglang.srt.speculative.spec_info", SpeculativeAlgorithm=SimpleNamespace(
        from_string=lambda a: SimpleNamespace(get_platform_worker_cls=lambda: None)))
    _stub("sglang.srt.utils", log_info_on_rank0=lambda *a, **k: None)
    for extra in ("sglang.srt.connector", "sglang.srt.model_executor.cuda_graph_config",
                  "sglang.srt.utils.common"):
        _stub(extra)
    asp = load(files[SGLANG_FILES[0]], f"asp_{tag}")
    cgh = load(files[SGLANG_FILES[1]], f"cgh_{tag}") if SGLANG_FILES[1] in files else None
    return asp, cgh


def cases():
    """(label, server config, expected: None to emit, else the refusal's words)."""
    base = {"speculative_algorithm": "EAGLE3", "speculative_eagle_topk": 1, "dp_size": 1,
            "attn_dp_size": 1, "enable_dp_attention": False, "cuda_graph_max_bs": 64}
    for algo in ("EAGLE3", "EAGLE", "STANDALONE", "NEXTN", "NGRAM", "UNO"):
        for topk in (1, 4):
            for dp, adp in ((1, 1), (2, 1), (2, 2)):
                yield (f"{algo} topk {topk} dp {dp} attn-dp {adp}",
                       {**base, "speculative_algorithm": algo, "speculative_eagle_topk": topk,
                        "dp_size": dp, "attn_dp_size": adp, "enable_dp_attention": adp > 1})
    for flag in ("enable_multi_layer_eagle", "enable_two_batch_overlap", "enable_pdmux"):
        yield f"EAGLE3 {flag}", {**base, flag: True}


def sample_schedule() -> list[tuple[int, int, int]]:
    import glob
    import eaglelog
    runs = sorted(glob.glob(os.path.join(ROOT, "sample_logs", "schedule", "steps*.log")))
    r = eaglelog.schedule(runs, baseline_log=os.path.join(ROOT, "sample_logs",
                                                          "batch_baseline.log"))
    return [tuple(x) for x in r.vllm["num_speculative_tokens_per_batch_size"]]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vllm", default="0.24.0,0.34.0")
    ap.add_argument("--sglang", default="0.5.14,0.5.18,0.5.23")
    ap.add_argument("--wheels", default=os.path.expanduser("~/.cache/eaglelog-wheels"))
    a = ap.parse_args()
    ranges = sample_schedule()
    slots = [(lo, k) for lo, _, k in ranges]
    bad = checked = 0
    with tempfile.TemporaryDirectory() as tmp:
        for ver in a.vllm.split(","):
            files = extract(wheel("vllm", ver, a.wheels), VLLM_FILES, os.path.join(tmp, ver))
            dyn = load(files[VLLM_FILES[0]], f"vllm_dyn_{ver.replace('.', '_')}")
            methods = vllm_methods(files[VLLM_FILES[1]])
            for label, cfg in cases():
                checked += 1
                try:
                    m = es.vllm_method(cfg["speculative_algorithm"])
                    ours = "emit" if es.vllm_ignores(cfg) is None else "refuse (ignored)"
                except es.EngineConfigError:
                    m, ours = None, "refuse (no method)"
                theirs = ("refuse (no method)" if m is None or m not in methods else
                          "refuse (ignored)" if cfg["dp_size"] > 1 else "emit")
                ok = ours == theirs
                if ok and ours == "emit":
                    norm = dyn.validate_and_normalize_dynamic_sd_schedule(
                        [list(r) for r in ranges])
                    k_max = max(k for _, _, k in ranges)
                    dense = dyn.build_dynamic_sd_schedule_lookup(norm, 64, k_max)
                    mine = es.vllm_lookup(ranges, k_max, 64)
                    ok = [int(x) for x in dense[1:65]] == mine[1:65]
                bad += not ok
                print(f"vllm {ver:7} {label:38} method {m or '-':12} eaglelog {ours:18} "
                      f"engine {theirs:18} {'ok' if ok else 'DISAGREE'}")
        for ver in a.sglang.split(","):
            files = extract(wheel("sglang", ver, a.wheels), SGLANG_FILES, os.path.join(tmp, ver))
            asp, cgh = sglang_modules(files, ver.replace(".", "_"))
            path = os.path.join(tmp, f"adaptive-{ver}.json")
            with open(path, "w") as f:
                json.dump(es.sglang_config(slots), f)
            for label, cfg in cases():
                checked += 1
                ours = "emit" if es.sglang_ignores(cfg) is None else "refuse (ignored)"
                why = asp.adaptive_unsupported_reason(_Args(**cfg))
                theirs = "emit" if why is None else "refuse (ignored)"
                ok = ours == theirs
                if ok and ours == "emit":
                    p = asp.AdaptiveSpeculativeParams(initial_steps=slots[0][1], cfg_path=path)
                    graph = cgh.generate_decode_cuda_graph_batch_sizes(SimpleNamespace(
                        disable_cuda_graph_padding=False,
                        speculative_algorithm=cfg["speculative_algorithm"]), 64) \
                        if cgh is not None and hasattr(
                            cgh, "generate_decode_cuda_graph_batch_sizes") \
                        else es.sglang_spec_graph_bs(64)
                    p.set_cuda_graph_bs(graph)
                    moved = {b: g for b, _, g in es.sglang_padding_changes(slots, 64, 64)}
                    want = []
                    for b in range(1, 65):
                        i = max(j for j, (lo, _) in enumerate(slots) if lo <= b) \
                            if b >= slots[0][0] else 0
                        want.append(moved.get(b, slots[i][1]))
                    got = [p.get_steps_for_batch(b) for b in range(1, 65)]
                    ok = got == want and sorted(graph) == es.sglang_spec_graph_bs(64)
                bad += not ok
                print(f"sglang {ver:7} {label:36} eaglelog {ours:18} engine {theirs:18} "
                      f"{'ok' if ok else 'DISAGREE'}")
    print(f"# {checked} cases, {bad} disagreements")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
