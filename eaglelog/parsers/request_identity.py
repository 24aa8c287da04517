"""The identity of an SGLang request in its ``Finish:`` line (docs/requests.md): a hash of the
prompt as logged and the request's custom labels, for ``compare --paired`` and
``requests --by label``.  Pure functions that never raise; no import of the other parsers (the
SGLang line parser imports this module).

Source: SGLang ``python/sglang/srt/utils/request_logger.py`` (v0.5.18 / main):
``log_finished_request`` prints ``obj`` with ``_dataclass_to_string_truncated`` (text format)
or ``_transform_data_for_logging`` (JSON format).  ``text`` and ``input_ids`` are left out at
``--log-requests-level`` 0 and 1 and printed at 2 (values longer than 2048 characters / items
cut to their two halves: ``repr(a) + ' ... ' + repr(b)`` in text, ``a + '...' + b`` in JSON) and
3; ``custom_labels`` (``GenerateReqInput.custom_labels: Optional[Dict[str, str]]``,
``managers/io_struct.py``) is printed at every level.  The prompt is hashed after undoing either
rendering, so the same prompt has the same hash in both formats.
"""
from __future__ import annotations

import ast
import json
import re

_FIELD = re.compile(r"\s*([A-Za-z_]\w*)=")


def _value_end(s: str, i: int) -> int:
    """The end of the value starting at s[i] in a Python-repr argument list: the first ',' or
    ')' at nesting depth 0 outside quotes (a truncated 'a' ... 'b' value stays one value)."""
    depth, n = 0, len(s)
    while i < n:
        c = s[i]
        if c in "'\"":
            i = _string_end(s, i)
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                return i
            depth -= 1
        elif c == "," and depth == 0:
            return i
        i += 1
    return n


def _string_end(s: str, i: int) -> int:
    """The index after the Python string literal starting at s[i] (its quote)."""
    q, j, n = s[i], i + 1, len(s)
    while j < n:
        c = s[j]
        if c == "\\":
            j += 2
            continue
        if c == q:
            return j + 1
        j += 1
    return n


def _fields(obj_text: str) -> dict[str, str]:
    """The top-level ``name=value`` fields of 'GenerateReqInput(name=value, …)' as source text
    (values not evaluated)."""
    p = obj_text.find("(")
    if p < 0:
        return {}
    out: dict[str, str] = {}
    i, n = p + 1, len(obj_text)
    while i < n:
        m = _FIELD.match(obj_text, i)
        if not m:
            break
        start = m.end()
        end = _value_end(obj_text, start)
        out.setdefault(m.group(1), obj_text[start:end].strip())
        if end >= n or obj_text[end] == ")":
            break
        i = end + 1
    return out


def _text_value(src: str):
    """A printed str/list value, with the truncation of the text format undone into the JSON
    format's ('a' ... 'b' -> 'a...b'; [1, 2] ... [8, 9] -> [1, 2, '...', 8, 9]); None when it
    is None or cannot be read."""
    if src in ("", "None"):
        return None
    try:
        return ast.literal_eval(src)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        pass
    parts = _split_cut(src)
    if len(parts) == 2:
        try:
            a, b = (ast.literal_eval(p) for p in parts)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return None
        if isinstance(a, str) and isinstance(b, str):
            return a + "..." + b
        if isinstance(a, list) and isinstance(b, list):
            return a + ["..."] + b
    return None


def _split_cut(src: str) -> list[str]:
    """'x ... y' split at the ' ... ' that lies outside any literal."""
    i, n, depth = 0, len(src), 0
    while i < n:
        c = src[i]
        if c in "'\"":
            i = _string_end(src, i)
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif depth == 0 and src.startswith(" ... ", i):
            return [src[:i].strip(), src[i + 5:].strip()]
        i += 1
    return [src]


def prompt_hash(text=None, input_ids=None) -> str | None:
    """16 hex digits of SHA-256 of the logged prompt: 'text' when printed, else 'input_ids'."""
    if isinstance(text, str):
        key = "t:" + text
    elif isinstance(text, list) and text and all(isinstance(t, str) for t in text):
        key = "T:" + json.dumps(text, ensure_ascii=False)
    elif isinstance(input_ids, list) and input_ids:
        key = "i:" + ",".join(str(x) for x in input_ids)
    else:
        return None
    import hashlib         # (here: ~4 ms of every command's start otherwise)
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _labels(v) -> str | None:
    if isinstance(v, dict) and v:
        return json.dumps({str(k): str(x) for k, x in v.items()}, ensure_ascii=False,
                          sort_keys=True)
    return None


def identity_from_text(obj_text: str) -> dict:
    """prompt_hash and custom_labels of a text-format Finish line's obj part."""
    if "text=" not in obj_text and "input_ids=" not in obj_text and \
            "custom_labels=" not in obj_text:
        return {}      # (none of the fields read below: _FIELD's 'name=' never matches)
    f = _fields(obj_text)
    rec = {}
    h = prompt_hash(_text_value(f.get("text", "")), _text_value(f.get("input_ids", "")))
    if h:
        rec["prompt_hash"] = h
    lab = _labels(_text_value(f.get("custom_labels", "")))
    if lab:
        rec["custom_labels"] = lab
    return rec


def identity_from_json(obj) -> dict:
    """The same for a JSON-format request.finished record's 'obj' object."""
    if not isinstance(obj, dict):
        return {}
    rec = {}
    h = prompt_hash(obj.get("text"), obj.get("input_ids"))
    if h:
        rec["prompt_hash"] = h
    lab = _labels(obj.get("custom_labels"))
    if lab:
        rec["custom_labels"] = lab
    return rec
