"""Typed errors. The CLI maps each to a one-line message and an exit code.

Exit codes (public contract, see README "Exit codes"):
    0 ok · 1 internal error · 2 usage · 3 unreadable/unusable input ·
    4 batch finished with skipped inputs · 5 compare found a regression ·
    6 `profile`: nsys not installed (command printed instead) ·
    7 `compare --fail-on-regression`: the gate could not be evaluated (no steps on a side, no
      confidence interval, or an incomparable pair); ``--allow-unevaluable`` makes it 0
"""
from __future__ import annotations

from nsys_diag.model.text import single_line
from pathlib import Path

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_USAGE = 2
EXIT_BAD_INPUT = 3
EXIT_PARTIAL_BATCH = 4
EXIT_REGRESSION = 5
EXIT_NSYS_MISSING = 6
EXIT_NOT_EVALUABLE = 7


class NsysDiagError(Exception):
    """Base of every error the tool raises on purpose."""

    exit_code = EXIT_INTERNAL

    def one_line(self) -> str:
        return str(self)


class InputError(NsysDiagError):
    """An input path cannot be read or understood. Exit code 3.

    Message form: ``cannot read PATH: REASON`` + optional ``hint: …``.
    """

    exit_code = EXIT_BAD_INPUT

    def __init__(self, path: str | Path, reason: str, hint: str | None = None):
        self.path = str(path)
        self.reason = reason
        self.hint = hint
        super().__init__(self.one_line())

    def one_line(self) -> str:
        msg = f"cannot read {self.path}: {self.reason}"
        if self.hint:
            msg += f" (hint: {self.hint})"
        return printable_line(msg)


MAX_MESSAGE_CHARS = 2000


def printable_line(text: str) -> str:
    """``text`` as one terminal-safe line (``model.text.single_line``): ANSI sequences dropped,
    every run of control, bidi and line-break characters turned into a space, at most
    ``MAX_MESSAGE_CHARS`` characters. Error messages quote file names and SQLite's own messages,
    which can hold bytes of the file."""
    return single_line(text, MAX_MESSAGE_CHARS)


class UnrecognizedFormatError(InputError):
    """Neither an nsys SQLite export nor an ncu CSV."""


class SchemaError(InputError):
    """A SQLite file that is not an nsys export, or an unknown schema variant."""


class ResourceLimitError(InputError):
    """The input would exceed a user-set limit such as ``--max-memory``."""


class UsageError(NsysDiagError):
    """Bad option values detected after parsing (exit code 2)."""

    exit_code = EXIT_USAGE

