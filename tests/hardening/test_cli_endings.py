"""The promise at the CLI: exit 0 with a report (warnings included) or exit 3 with exactly one
clean `nsys-diag: error: …` line — never a traceback or exit 1 — for damaged inputs of each kind."""
from __future__ import annotations

import os
import random
import re
import sqlite3

import pytest
from click.testing import CliRunner

from fuzz import fuzzlib as F
from nsys_diag import synth
from nsys_diag.synth import ncu as synth_ncu
from nsys_diag.cli import main

CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\u202a-\u202e]")


@pytest.fixture(scope="module")
def seed(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli_end")
    return (synth.write_preset(d / "s.sqlite", "multi_gpu", schema="2026.2", steps=3),
            synth_ncu.write_ncu_csv(d / "k.csv", layout="details", junk=True))


def _damaged(kind, seed, tmp_path):
    sq, csv = seed
    data = sq.read_bytes()
    if kind == "truncated":
        p = tmp_path / "t.sqlite"
        p.write_bytes(data[: len(data) // 2])
    elif kind == "header_flip":
        p = tmp_path / "h.sqlite"
        p.write_bytes(F.mutate_sqlite_bytes(data, "flip_page_header", random.Random(3175571579))[0])
    elif kind == "rows":
        p = tmp_path / "r.sqlite"
        p.write_bytes(data)
        con = sqlite3.connect(p)
        con.execute('UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET "end" = start - 9 WHERE rowid % 4 = 0')
        con.execute('UPDATE NVTX_EVENTS SET "end" = NULL WHERE rowid % 5 = 0')
        con.execute("UPDATE StringIds SET value = CAST(? AS TEXT) WHERE rowid % 3 = 0",
                    (b"\xff\xfe\xc3\x28",))
        con.commit()
        con.close()
    elif kind == "csv_junk":
        p = tmp_path / "j.csv"
        p.write_bytes(F.mutate_csv_bytes(csv.read_bytes(), "junk_field", random.Random(5))[0])
    elif kind == "csv_cut":
        p = tmp_path / "c.csv"
        p.write_bytes(csv.read_bytes()[:3000])
    elif kind == "rep_garbage":
        p = tmp_path / "report.nsys-rep"
        p.write_bytes(os.urandom(2048))
    elif kind == "hostile_name":
        p = tmp_path / "bad\nname\x1b[31m\u202e.sqlite"
        p.write_bytes(b"garbage " * 100)
    else:
        raise ValueError(kind)
    return p


@pytest.mark.parametrize("kind", ["truncated", "header_flip", "rows", "csv_junk", "csv_cut",
                                  "rep_garbage", "hostile_name"])
@pytest.mark.parametrize("command", ["analyze", "inspect"])
def test_cli_ends_with_report_or_one_line_error(seed, tmp_path, kind, command, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")  # no nsys: a .nsys-rep cannot be converted
    p = _damaged(kind, seed, tmp_path)
    args = [command, str(p)] + (["--json", str(tmp_path / "o.json"), "--md", str(tmp_path / "o.md"),
                                 "-o", str(tmp_path / "o.html")] if command == "analyze" else [])
    res = CliRunner().invoke(main, args)
    assert res.exit_code in (0, 3), res.output
    assert "Traceback" not in res.output and "internal error" not in res.output
    errors = [ln for ln in res.output.splitlines() if ln.startswith("nsys-diag: error:")]
    if res.exit_code == 3:
        assert len(errors) == 1 and not CONTROL.search(errors[0]), errors
        assert "(hint: " in errors[0]
    else:
        assert not errors
        if command == "analyze":
            assert (tmp_path / "o.html").exists() and (tmp_path / "o.json").exists()
    if kind == "rows":
        assert res.exit_code == 0
        if command == "analyze":
            assert "invalid_rows" in (tmp_path / "o.json").read_text()
    if kind in ("truncated", "rep_garbage", "hostile_name"):
        assert res.exit_code == 3
