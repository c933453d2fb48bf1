"""Unit tests for the loader fixes the fuzzers led to (each names the failing case it fixes)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from nsys_diag import synth
from nsys_diag.loaders import load_trace
from nsys_diag.loaders.ncu_csv import parse_numbers
from nsys_diag.model.errors import InputError, printable_line


def test_adbc_text_overflow_falls_back_to_sqlite3(tmp_path, monkeypatch):
    """> 2 GiB of distinct text in one column made pyarrow's dictionary_encode raise
    ArrowCapacityError (a traceback) — and crash at 10 GiB. Now the sqlite3 reader takes over."""
    pa = pytest.importorskip("pyarrow")
    pc = pytest.importorskip("pyarrow.compute")
    pytest.importorskip("adbc_driver_sqlite")
    monkeypatch.delenv("NSYS_DIAG_NO_ADBC", raising=False)
    p = synth.write_preset(tmp_path / "t.sqlite", "worked_example", steps=2)
    normal = load_trace(p)
    assert normal.meta.extra["reader"] == "adbc"

    def too_big(*a, **k):
        raise pa.ArrowCapacityError("array cannot contain more than 2147483646 bytes")

    monkeypatch.setattr(pc, "dictionary_encode", too_big)
    fallback = load_trace(p)
    assert fallback.meta.extra["reader"] == "sqlite3"
    for name in normal.FRAMES:
        pd.testing.assert_frame_equal(getattr(normal, name), getattr(fallback, name),
                                      check_categorical=False)


def test_error_messages_are_one_terminal_safe_line():
    """SQLite's error text quotes bytes of a damaged schema (e.g. '\\x1f')."""
    err = InputError("/tmp/a\nb.sqlite", "sqlite: unrecognized token: \"\x1f\" \x1b[31mred\x1b[0m\r",
                     "hint \u202eevil")
    line = err.one_line()
    assert "\n" not in line and "\r" not in line and "\x1b" not in line and "\u202e" not in line
    assert "red" in line and "unrecognized token" in line
    assert len(printable_line("x" * 10_000)) <= 2000


def test_ncu_non_finite_numbers_are_missing():
    """'inf' / '1e400' cells became float infinity and an OverflowError in the roofline."""
    out = parse_numbers(pd.Series(["inf", "1e400", "-inf", "nan", "5", "-1e400"]), ".")
    assert np.isnan(out.iloc[[0, 1, 2, 3, 5]]).all() and out.iloc[4] == 5.0
