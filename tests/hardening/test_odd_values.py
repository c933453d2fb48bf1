"""Odd content and values (issue 27 item 7/8): data-quality warnings, never tracebacks; a
compare gate that cannot see every run does not pass; trace text stays inert in JSON and
Markdown."""
from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

import batch_traces as bt
from nsys_diag.app import compare
from nsys_diag.cli import main
from nsys_diag.model.errors import EXIT_NOT_EVALUABLE, EXIT_OK
from nsys_diag.app.outputs import dumps
from nsys_diag.model.text import markdown_cell, markdown_text
from nsys_diag.report.inventory_render import inspect_to_json
from nsys_diag.report.json_out import to_json
from nsys_diag.report.render_common import md_escape

LIVE_LINK = re.compile(r"(?i)\b(https?|ftp|file|mailto|javascript|data):|\bwww\.")


@pytest.fixture(autouse=True)
def _cache_in_tmp(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))


def _cli(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def _null_gpu_ids(path: Path) -> None:
    """TARGET_INFO_GPU rebuilt without its NOT NULL constraint, every id NULL."""
    con = sqlite3.connect(path)
    sql = con.execute("SELECT sql FROM sqlite_master WHERE name = 'TARGET_INFO_GPU'").fetchone()[0]
    con.execute("ALTER TABLE TARGET_INFO_GPU RENAME TO old_gpu")
    con.execute(sql.replace("id INTEGER NOT NULL", "id INTEGER"))
    con.execute("INSERT INTO TARGET_INFO_GPU SELECT * FROM old_gpu")
    con.execute("DROP TABLE old_gpu")
    con.execute("UPDATE TARGET_INFO_GPU SET id = NULL")
    con.commit()
    con.close()


def test_a_null_gpu_id_is_a_data_quality_warning(tmp_path):
    p = bt.write(tmp_path / "nullid.sqlite", bt.tiny(1, steps=6))
    _null_gpu_ids(p)
    js = tmp_path / "v.json"
    res = _cli("analyze", str(p), "--no-html", "--json", str(js))
    assert res.exit_code == EXIT_OK, res.output
    codes = [q["code"] for q in json.loads(js.read_text())["data_quality"]]
    assert "gpu_rows_without_id" in codes
    assert _cli("inspect", str(p)).exit_code == EXIT_OK
    assert _cli("compare", str(p), str(p)).exit_code == EXIT_OK


def test_a_gate_with_unreadable_candidate_runs_is_not_passed(tmp_path):
    base, cand = tmp_path / "base", tmp_path / "cand"
    for i in range(2):
        bt.write(base / f"r{i}.sqlite", bt.tiny(i + 1))
    bt.write(cand / "r0.sqlite", bt.tiny(7))
    (cand / "r1.sqlite").write_bytes(b"not a database at all" * 10)
    (cand / "r2.sqlite").write_bytes(b"")
    md = tmp_path / "c.json"
    res = _cli("compare", str(base), str(cand), "--fail-on-regression", "50", "--json", str(md))
    assert res.exit_code == EXIT_NOT_EVALUABLE, res.output
    gate = json.loads(md.read_text())["gate"]
    assert gate["evaluated"] is False and "2 run(s) on the candidate side" in gate["reason"]
    res = _cli("compare", str(base), str(cand), "--fail-on-regression", "50",
               "--allow-unevaluable")
    assert res.exit_code == EXIT_OK, res.output
    # a gate that found a regression keeps it, skipped runs or not
    found = {"gate": {"requested_pct": 5.0, "evaluated": True, "passed": False, "reason": None}}
    skipped = [{"side": "candidate", "label": "x", "reason": "empty file", "hint": ""}]
    assert compare.gate_with_skipped_runs(found, skipped) is found


def test_markdown_cells_and_prose_never_link_trace_text():
    for text in ("https://evil.example/x", "see www.evil.example", "file:///etc/passwd",
                 "javascript:alert(1)"):
        for out in (markdown_cell(text), md_escape(text), markdown_text(text)):
            assert not LIVE_LINK.search(out), out


def test_json_text_holds_no_raw_bidi_or_c1_controls():
    data = {"name\u202e": ["k\u202ernel", "csi\x9b31m", "nel\x85", "iso\u2066", "ok", "é"]}
    for text in (dumps(data), to_json(data), inspect_to_json(data)):
        for bad in ("\u202e", "\x9b", "\x85", "\u2066"):
            assert bad not in text
        assert json.loads(text) == data  # escaped, not altered: the data survives as it was
    assert "\\u202e" in dumps(data) and "é" in dumps(data)


def test_the_streamed_census_ignores_a_blob_end(tmp_path):
    from nsys_diag.app.stream import census_span

    p = bt.write(tmp_path / "blob.sqlite", bt.tiny(1, steps=6))
    clean = census_span(str(p))
    con = sqlite3.connect(p)
    con.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET \"end\" = X'00112233' WHERE rowid = 3")
    con.commit()
    con.close()
    lo, hi = census_span(str(p))
    assert isinstance(hi, int) and clean is not None and lo == clean[0] and hi <= clean[1]


def _set_sql(path: Path, *sql: str) -> None:
    con = sqlite3.connect(path)
    for s in sql:
        con.execute(s)
    con.commit()
    con.close()


def _views(path: Path) -> tuple[dict, dict]:
    """The analysis JSON of ``path`` in memory and streamed (small chunks)."""
    from nsys_diag.app.analyze import analyze_path
    from nsys_diag.app.options import build_options

    return tuple(json.loads(dumps(analyze_path(str(path), build_options(**kw), generated_at="t")))
                 for kw in ({}, {"chunk_rows": 100}))


def test_impossible_copy_sizes_are_dropped_and_sums_never_wrap(tmp_path):
    """Sizes of 2^62 bytes wrapped an int64 sum into ``bytes: -10`` in memory (7.4e19 streamed):
    such rows (and negative sizes) are invalid rows now, in memory and streamed alike."""
    p = bt.write(tmp_path / "bytes.sqlite", bt.tiny(1, steps=8))
    kept = bt.write(tmp_path / "kept.sqlite", bt.tiny(1, steps=8))
    _set_sql(kept, "DELETE FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE rowid % 3 != 1")
    _set_sql(p, "UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET bytes = 4611686018427387904 "
                "WHERE rowid % 3 = 0",
             "UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET bytes = -5 WHERE rowid % 3 = 2")
    want = _views(kept)[0]["transfers"]["by_kind"]["H2D"]
    whole, streamed = _views(p)
    for view in (whole, streamed):
        h2d = view["transfers"]["by_kind"]["H2D"]
        assert h2d == want and 0 < h2d["bytes"] < 1 << 40
        warning = next(q for q in view["data_quality"] if q["code"] == "invalid_rows")
        assert "impossible byte count" in warning["message"]
    assert whole["transfers"] == streamed["transfers"]


def test_an_impossible_memory_peak_is_a_warning_not_a_claim(tmp_path):
    from nsys_diag.synth.scenarios import GpuMemorySpec

    p = bt.write(tmp_path / "mem.sqlite", bt.tiny(1, steps=6, gpu_memory=GpuMemorySpec()))
    _set_sql(p, "UPDATE CUDA_GPU_MEMORY_USAGE_EVENTS SET bytes = bytes * 100000000")
    for view in _views(p):
        codes = [q["code"] for q in view["data_quality"]]
        assert "implausible_memory_peak" in codes
        assert view["memory"]["max_peak_share"] is None
        assert "nearly full" not in json.dumps(view)


def _without_rowid(path: Path, table: str, key: str) -> None:
    """``table`` rebuilt as a ``WITHOUT ROWID`` table keyed by ``key`` (same columns and rows)."""
    con = sqlite3.connect(path)
    sql = con.execute("SELECT sql FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0]
    con.execute(f"ALTER TABLE {table} RENAME TO old_t")
    con.execute(sql.rstrip().rstrip(")") + f", PRIMARY KEY ({key})) WITHOUT ROWID")
    con.execute(f"INSERT INTO {table} SELECT * FROM old_t")
    con.execute("DROP TABLE old_t")
    con.commit()
    con.close()


def test_a_without_rowid_kernel_table_is_read_in_memory_with_a_note(tmp_path):
    """Streaming reads rowid ranges; a ``WITHOUT ROWID`` kernel table (no rowid) failed streamed
    while it worked in memory. Streamed now falls back to the in-memory read and says so."""
    p = bt.write(tmp_path / "norowid.sqlite", bt.tiny(1, steps=6))
    want, _ = _views(p)
    _without_rowid(p, "CUPTI_ACTIVITY_KIND_KERNEL", "start, correlationId")
    whole, streamed = _views(p)
    assert "chunks" not in streamed["trace"]
    note = [q for q in streamed["data_quality"] if q["code"] == "not_streamed"]
    assert len(note) == 1 and "CUPTI_ACTIVITY_KIND_KERNEL" in note[0]["message"]
    assert note[0]["severity"] == "info"
    assert "not_streamed" not in [q["code"] for q in whole["data_quality"]]
    assert streamed["verdict"] == whole["verdict"] == want["verdict"]
    assert streamed["kernels"] == whole["kernels"]
    res = _cli("analyze", str(p), "--no-html", "--chunk-rows", "100")
    assert res.exit_code == EXIT_OK, res.output
