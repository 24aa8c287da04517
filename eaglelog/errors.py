"""Errors meant for users: one line, naming the input (and line) and, where there is one, the fix.

The CLI maps every EaglelogError to ``eaglelog: error: <message>`` and exit code 1 in one place;
``-v`` shows the traceback.
"""


def printable(text: str) -> str:
    """One line on a terminal: control characters (ESC, NUL, CR, U+2028 …) that a log's text
    may carry into a message are written as escapes, never sent raw (a log must not be able to
    drive the terminal or forge a second message line)."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


class EaglelogError(Exception):
    """Base class: an expected failure with a message written for the user."""

    exit_code = 1


class InputError(EaglelogError):
    """An input cannot be read: missing, a directory, empty, binary, corrupt compressed data."""


class NoRecordsError(EaglelogError):
    """An input was read but carries no record of any known log family."""


class MissingDependency(EaglelogError):
    """An optional extra is not installed (e.g. matplotlib for plots): the message names it."""


class UsageProblem(EaglelogError, ValueError):
    """The call asks for something its inputs cannot give (compare with one run): exit code 2,
    as for a usage error of the command line."""

    exit_code = 2


class GateFailed(EaglelogError):
    """A check the user asked for (--check, --fail-on-regression) failed: exit code 3."""

    exit_code = 3


_COMPRESSED_MAGIC = (b"\x1f\x8b", b"\xfd7zXZ\x00", b"BZh", b"\x28\xb5\x2f\xfd")


def _size_text(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{n} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"     # (not reached)


def out_of_memory_message(inputs) -> str:
    """What the command line says when an analysis runs out of memory (MemoryError): the
    input's size (the sum of the local inputs' sizes on disk; compressed ones said, as their
    text is larger) and the remedies, in one line.  It allocates little: it runs when memory
    has just run out."""
    import os

    total, files, compressed, unknown = 0, 0, 0, []
    for spec in inputs or ():
        spec = str(spec)
        try:
            if spec == "-" or not os.path.isfile(spec):
                unknown.append("standard input" if spec == "-" else spec)
                continue
            total += os.path.getsize(spec)
            files += 1
            with open(spec, "rb") as f:
                head = f.read(8)
            compressed += any(head.startswith(m) for m in _COMPRESSED_MAGIC)
        except (OSError, ValueError):
            unknown.append(spec)
    if files:
        size = (f"{_size_text(total)} of input"
                + (f" in {files} files" if files > 1 else "")
                + (f" ({compressed} of them compressed, so more once decompressed)"
                   if compressed and files > 1 else
                   " (compressed, so more once decompressed)" if compressed else ""))
        if unknown:
            size += f" and {len(unknown)} input{'s' if len(unknown) > 1 else ''} of unknown size"
    elif unknown:
        more = ", …" if len(unknown) > 3 else ""
        size = f"input of unknown size ({', '.join(unknown[:3])}{more})"
    else:
        size = "the input"
    return (f"out of memory analysing {size}: analyse a part of it (--since/--until, "
            "--startup N), use one worker (EAGLELOG_WORKERS=1), run on a machine with more "
            "memory, or take only the table you need (eaglelog parse --table decode -f csv "
            "-o decode.csv LOG)")
