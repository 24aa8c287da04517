"""SGLang 0.5.19 → logs its start-up configuration as a dict: the launcher prints
``server_args={server_args.resolved_dict()}`` (sglang 0.5.19: srt/entrypoints/engine.py:265;
0.5.18 printed ``{server_args=}``, the ServerArgs(…) repr, engine.py:253), in 0.5.23
``_server_args_for_logging``, the same dict with secrets redacted (engine.py:173–174 and 311;
srt/server_args.py:316–333, where ``enable_dp_attention`` is kept only as the deprecated alias
``attn_dp_size > 1``).  Issue 35, items 1–2: the dict is read like the ServerArgs(…) repr, and a
line with the marker in neither shape is said, not skipped.  The logs here are the bundled
synthetic samples with their ServerArgs(…) line rewritten in the dict shape."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import eaglelog
from eaglelog.parsers import sglang

SAMPLES = Path(__file__).resolve().parent.parent / "sample_logs"


def dict_shape(text: str) -> str:
    """The log with its ServerArgs(k=v, …) line as 0.5.19 → prints it: server_args={'k': v}."""
    out = []
    for line in text.splitlines(keepends=True):
        i = line.find("server_args=ServerArgs(")
        if i < 0:
            out.append(line)
            continue
        args, whole = sglang.parse_server_args(line[i:])
        assert whole
        args.setdefault("attn_dp_size", 1)
        out.append(line[:i] + "server_args=" + repr(args) + "\n")
    return "".join(out)


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    d = tmp_path_factory.mktemp("shape")
    src = SAMPLES / "eagle3_5step.log"
    new = d / "eagle3_5step_0523.log"
    new.write_text(dict_shape(src.read_text()))
    return src, new


def test_the_dict_line_is_read_like_the_repr():
    line = ("[2026-11-02 10:00:00] server_args={'model_path': '/m/llama', 'tp_size': 2, "
            "'dp_size': 1, 'attn_dp_size': 2, 'speculative_algorithm': 'EAGLE3', "
            "'speculative_num_steps': 5, 'speculative_eagle_topk': 1, "
            "'speculative_num_draft_tokens': 6, 'lora_paths': [LoRARef(name='x')], "
            "'speculative_adaptive_config': None}")
    r = sglang.parse_server_args_line(line)
    assert r.problems == [] and r.record["parse_ok"] is True
    a = r.record["_args"]
    assert (a["speculative_algorithm"], a["speculative_num_steps"], a["tp_size"]) == \
        ("EAGLE3", 5, 2)
    assert a["lora_paths"] == "[LoRARef(name='x')]"          # not a literal: its text
    assert a["enable_dp_attention"] is True                 # from attn_dp_size 2
    cut = sglang.parse_server_args_line(line[:150])
    assert cut.record["parse_ok"] is False and cut.record["_args"]["tp_size"] == 2
    assert cut.problems == ["server_args line is not a complete {…} dict (cut short?); "
                            "5 keys recovered one by one"]


def test_a_marker_line_of_another_shape_is_said():
    r = sglang.parse_server_args_line("[2026-11-02 10:00:00] server_args=SrvConfig(tp=2)")
    assert r.record is None and len(r.problems) == 1
    assert "a server_args= line in a shape eaglelog does not know" in r.problems[0]
    assert "server_args={…} (0.5.19 →)" in r.problems[0]
    # code that merely names the argument (a traceback) is not a record
    assert sglang.parse_server_args_line(
        '  File "x.py", line 3, in run(server_args=server_args)') .problems == []


def test_every_command_answers_the_same_on_both_shapes(both, run):
    src, new = both
    assert eaglelog.parse(str(new)).config(str(new))["speculative_num_steps"] == 5
    for args in (["summary", "-f", "json"], ["breakeven", "--baseline-toks", "90", "-f", "json"],
                 ["reconcile", "-f", "json"]):
        a = run(*args, str(src))
        b = run(*args, str(new))
        assert a.exit_code == b.exit_code == 0, (args, b.output)
        ja, jb = json.loads(a.output), json.loads(b.output)
        for r in ja["runs"] + jb["runs"]:
            r.pop("source", None)
        assert ja["runs"] == jb["runs"], args


def test_whatif_and_schedule_read_the_steps_from_the_dict(tmp_path, run):
    """Without the config, whatif exited 1: 'no speculative_num_steps in its server_args'."""
    paths = []
    for name in ("eagle3_2step.log", "eagle3_5step.log"):
        p = tmp_path / name
        p.write_text(dict_shape((SAMPLES / name).read_text()))
        paths.append(str(p))
    r = run("whatif", "--steps", "3", "-f", "json", *paths)
    assert r.exit_code == 0, r.output
    want = run("whatif", "--steps", "3", "-f", "json",
               *[str(SAMPLES / n) for n in ("eagle3_2step.log", "eagle3_5step.log")])
    got = json.loads(r.output.replace(f"{tmp_path}/", ""))
    want = json.loads(want.output.replace(f"{SAMPLES}/", ""))
    assert got["predictions"] == want["predictions"]
    assert got["predictions"][0]["steps"] == 3


def test_a_decode_line_in_an_unknown_shape_is_said(tmp_path):
    """'Decode batch' with a head no release printed (sglang 0.5.23 still prints 'Decode
    batch{iter_msg}, #running-req: …': srt/managers/scheduler_components/
    metrics_reporter.py:963) is one warning with its file and line, not a silent skip; prose
    that names decode batches is not a record."""
    p = tmp_path / "shape.log"
    p.write_text("[2026-11-02 10:00:00 TP0] Decode batch, #running-req: 4, #token: 900, token "
                 "usage: 0.01, accept len: 2.50, cuda graph: True, gen throughput (token/s): "
                 "400.00, #queue-req: 0\n"
                 "[2026-11-02 10:00:01 TP0] Decode batch: running=4 tokens=900 accept=2.5\n"
                 "[2026-11-02 10:00:02 TP0] Decode batch size 4 captured\n")
    log = eaglelog.parse(str(p))
    assert len(log.decode) == 1
    said = [d for d in log.diagnostics if "shape eaglelog does not know" in d.message]
    assert [(d.line_no, d.source) for d in said] == [(2, str(p))]
    assert "'Decode batch. …', 'Decode batch, …' and 'Decode batch [N]. …'" in said[0].message


NEW = SAMPLES / "sglang-0.5.23"


def test_the_bundled_samples_in_the_new_shape_are_synthetic_and_read():
    for p in NEW.rglob("*.log"):
        text = p.read_text()
        assert text.startswith("# SYNTHETIC LOG") and "server_args={'model_path'" in text
        assert "server_args=ServerArgs(" not in text
        old = (SAMPLES / p.relative_to(NEW)).read_text().splitlines()
        new = text.splitlines()
        assert len(old) == len(new)
        assert sum(a != b for a, b in zip(old, new)) == 2        # the header and the config


@pytest.mark.parametrize("args, files", [
    (["summary", "-f", "json"], ["eagle3_5step.log"]),
    (["breakeven", "--baseline-log", "{base}", "--by", "batch", "-f", "json"],
     ["batch_eagle3.log"]),
    (["reconcile", "-f", "json"], ["eagle3_2step.log"]),
    (["compare", "-f", "json"], ["eagle3_2step.log", "eagle3_5step.log"]),
    (["sweep", "-f", "json"], ["sweep/steps1.log", "sweep/steps3.log", "sweep/steps7.log"]),
    (["acceptance", "-f", "json"], ["sweep/steps5.log"]),
    (["requests", "-f", "json"], ["eagle3_5step.log"]),
    (["whatif", "--steps", "4", "-f", "json"], ["sweep/steps3.log", "sweep/steps5.log"]),
    (["schedule", "--baseline-log", "{base}", "-f", "json"],
     ["schedule/steps1.log", "schedule/steps3.log", "schedule/steps5.log"]),
])
def test_every_command_answers_the_same_on_the_new_shape(run, args, files):
    args_old = [a.replace("{base}", str(SAMPLES / "batch_baseline.log")) for a in args]
    args_new = [a.replace("{base}", str(NEW / "batch_baseline.log")) for a in args]
    a = run(*args_old, *[str(SAMPLES / f) for f in files])
    b = run(*args_new, *[str(NEW / f) for f in files])
    assert a.exit_code == b.exit_code == 0, (args, b.output[-500:])
    ja = json.loads(a.stdout.replace(f"{SAMPLES}/", ""))
    jb = json.loads(b.stdout.replace(f"{NEW}/", ""))
    assert ja == jb, args
    assert a.stderr.replace(f"{SAMPLES}/", "") == b.stderr.replace(f"{NEW}/", "")
