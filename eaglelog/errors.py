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
