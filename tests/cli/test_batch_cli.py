"""`nsys-diag batch` on the command line: exit codes, outputs, messages.

(Named ``test_batch_cli.py``: ``tests/app/test_batch.py`` exists and test basenames must be unique
because the test directories are not packages.)
"""
from __future__ import annotations

import json
import sys

import pytest
from click.testing import CliRunner

import batch_traces as bt
from nsys_diag.cli import main
from nsys_diag.model.errors import EXIT_BAD_INPUT, EXIT_OK, EXIT_PARTIAL_BATCH, EXIT_USAGE


@pytest.fixture(autouse=True)
def _cache_in_tmp(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture
def traces(tmp_path):
    d = tmp_path / "traces"
    bt.write(d / "rank2.sqlite", bt.tiny(1, steps=5))
    bt.write(d / "rank10.sqlite", bt.tiny(2, steps=5))
    return d


def test_batch_ok_writes_reports_and_index(traces, tmp_path):
    out = tmp_path / "out"
    r = run("batch", traces, "-o", out, "-j", 2, "--json", "-")
    assert r.exit_code == EXIT_OK, r.output
    index = json.loads(r.stdout)
    assert [t["label"] for t in index["traces"]] == ["rank2.sqlite", "rank10.sqlite"]
    assert "2 of 2 traces analysed" in r.stderr
    for name in ("index.html", "index.json", "index.md", "rank2.nsys-diag.html",
                 "rank10.nsys-diag.json"):
        assert (out / name).is_file(), name
    assert index["ranks"]["available"] and index["ranks"]["count"] == 2


def test_batch_with_a_bad_file_exits_4_and_lists_it(traces, tmp_path):
    (traces / "broken.sqlite").write_bytes(b"SQLite format 2 ... not really")
    before = bt.tree_hashes(traces)
    r = run("batch", traces, "-o", tmp_path / "out", "-j", 1, "--md", "-")
    assert r.exit_code == EXIT_PARTIAL_BATCH, r.output
    assert "skipped broken.sqlite" in r.stderr
    assert "**Skipped (1):**" in r.stdout and "broken.sqlite" in r.stdout
    assert "Traceback" not in r.output
    assert bt.tree_hashes(traces) == before


def test_batch_missing_dir_exits_3(tmp_path):
    r = run("batch", tmp_path / "nope", "-o", tmp_path / "out")
    assert r.exit_code == EXIT_BAD_INPUT
    assert "no such file or directory" in r.output


def test_batch_no_cache_and_cache_messages(traces, tmp_path):
    r1 = run("batch", traces, "-o", tmp_path / "o1", "-j", 1)
    r2 = run("batch", traces, "-o", tmp_path / "o2", "-j", 1)
    r3 = run("batch", traces, "-o", tmp_path / "o3", "-j", 1, "--no-cache")
    assert "(0 from cache)" in r1.stderr
    assert "(2 from cache)" in r2.stderr
    assert "(0 from cache)" in r3.stderr


def test_batch_dask_flag_without_dask_is_a_usage_error(traces, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "dask.distributed", None)
    r = run("batch", traces, "-o", tmp_path / "out", "--dask", "--no-cache")
    assert r.exit_code == EXIT_USAGE
    assert "pip install 'nsys-diag[dask]'" in r.output


def test_batch_prints_a_per_trace_table_and_the_index_has_confidence(traces, tmp_path):
    out = tmp_path / "out"
    r = run("batch", traces, "-o", out, "-j", 1)
    assert r.exit_code == EXIT_OK, r.output
    index = json.loads((out / "index.json").read_text())
    lines = r.stderr.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("trace "))
    assert lines[head].split() == ["trace", "verdict", "confidence", "median", "step"]
    for row, line in zip(index["traces"], lines[head + 1: head + 3]):
        assert row["confidence"] in ("high", "medium", "low")
        assert line.split()[:3] == [row["label"], row["verdict"], row["confidence"]]
    summary = next(i for i, line in enumerate(lines) if line.startswith("nsys-diag batch: "))
    assert lines[summary].startswith("nsys-diag batch: 2 of 2 traces analysed") and summary < head
    assert all(line.startswith("  job: ") for line in lines[summary + 1:head])  # the job's answer
    md = (out / "index.md").read_text()
    assert "| trace | verdict | confidence | step (median) |" in md
    assert f"`{index['traces'][0]['verdict']}` | {index['traces'][0]['confidence']} |" in md
    page = (out / "index.html").read_text()
    assert ">confidence</th>" in page and f">{index['traces'][0]['confidence']}</td>" in page
