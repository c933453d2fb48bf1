"""batch orchestration: discovery, cache, skipped inputs, ranks, reports, Dask, real trace."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import batch_traces as bt
from conftest import shared_trace
from nsys_diag.app import batch, trace_job
from nsys_diag.model.errors import EXIT_OK, EXIT_PARTIAL_BATCH, InputError, UsageError

GEN = "2026-11-30T00:00:00Z"


@pytest.fixture(autouse=True)
def _cache_in_tmp(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))


def _run(dirs, out, **kw) -> tuple[int, dict, list[str]]:
    lines: list[str] = []
    kw.setdefault("jobs", 1)
    code = batch.batch_command([str(d) for d in dirs], outdir=str(out), echo=lines.append,
                               generated_at=GEN, **kw)
    index = json.loads((Path(out) / "index.json").read_text(encoding="utf-8"))
    return code, index, lines


# ---------------------------------------------------------------------------------- batch runs
def test_garbage_file_is_skipped_with_reason_and_exit_4(tmp_path):
    d = tmp_path / "traces"
    bt.write(d / "good.sqlite", bt.tiny(1, steps=6))
    (d / "garbage.sqlite").write_bytes(b"\x00\x01 definitely not sqlite " * 20)
    (d / "empty.sqlite").write_bytes(b"")
    before = bt.tree_hashes(d)
    code, index, lines = _run([d], tmp_path / "out")
    assert code == EXIT_PARTIAL_BATCH == index["exit_code"]
    assert [r["label"] for r in index["traces"]] == ["good.sqlite"]
    skipped = {s["label"]: s["reason"] for s in index["skipped"]}
    assert set(skipped) == {"garbage.sqlite", "empty.sqlite"}
    assert "empty" in skipped["empty.sqlite"]
    assert "SQLite" in skipped["garbage.sqlite"] or "not" in skipped["garbage.sqlite"]
    assert any("skipped garbage.sqlite" in ln for ln in lines)
    md = (tmp_path / "out" / "index.md").read_text()
    assert "garbage.sqlite" in md and "Skipped (2)" in md
    html = (tmp_path / "out" / "index.html").read_text()
    assert "garbage.sqlite" in html and 'href="./good.nsys-diag.html"' in html
    assert (tmp_path / "out" / "good.nsys-diag.html").stat().st_size > 1000
    view = json.loads((tmp_path / "out" / "good.nsys-diag.json").read_text())
    assert view["verdict"]["code"] and view["generated_at"] == GEN
    assert bt.tree_hashes(d) == before


def test_index_row_content_and_no_nan(tmp_path):
    d = tmp_path / "traces"
    bt.write(d / "run.sqlite", bt.tiny(1, steps=8))
    code, index, _ = _run([d], tmp_path / "out")
    assert code == EXIT_OK
    row = index["traces"][0]
    assert row["verdict"] == "input_bound"
    assert row["steps"] == 7  # warm-up excluded
    assert row["step_median_ms"] == pytest.approx(120, rel=0.05)
    assert row["phase_shares"]["data"] == pytest.approx(0.5, abs=0.05)
    assert 0 < row["gpu_busy"] < 1 and row["tensor_core_share"] > 0.5
    assert index["phase_columns"][:4] == ["data", "forward", "backward", "optimizer"]
    text = (tmp_path / "out" / "index.json").read_text()
    assert "NaN" not in text and "Infinity" not in text
    assert str(tmp_path) not in text  # no absolute paths in the index


def test_cache_reuse_on_a_grown_directory(tmp_path):
    d = tmp_path / "traces"
    bt.write(d / "a.sqlite", bt.tiny(1, steps=6))
    bt.write(d / "b.sqlite", bt.tiny(2, steps=6))
    code, first, lines = _run([d], tmp_path / "out1")
    assert code == 0 and first["counts"]["analysed"] == 2 and first["counts"]["from_cache"] == 0
    bt.write(d / "c.sqlite", bt.tiny(3, steps=6))
    code, second, lines = _run([d], tmp_path / "out2")
    assert second["counts"] == {"found": 3, "analysed": 1, "from_cache": 2, "ok": 3,
                                "skipped": 0, "ignored": 0}
    assert {r["label"]: r["cached"] for r in second["traces"]} == {
        "a.sqlite": True, "b.sqlite": True, "c.sqlite": False}
    assert "(2 from cache)" in lines[0]
    # cached rows carry the same numbers, and reports are still written in the new OUTDIR
    assert second["traces"][0]["step_median_ms"] == first["traces"][0]["step_median_ms"]
    assert (tmp_path / "out2" / "a.nsys-diag.html").exists()
    # the cache lives in the user cache dir, never beside the inputs
    assert sorted(p.name for p in d.iterdir()) == ["a.sqlite", "b.sqlite", "c.sqlite"]
    assert list((tmp_path / "xdg-cache" / "nsys-diag" / "batch").rglob("*.json.gz"))
    # --no-cache analyses everything again
    _, third, _ = _run([d], tmp_path / "out3", use_cache=False)
    assert third["counts"]["from_cache"] == 0 and third["counts"]["analysed"] == 3


def test_corrupt_cache_entry_is_a_miss(tmp_path):
    d = tmp_path / "traces"
    bt.write(d / "a.sqlite", bt.tiny(1, steps=6))
    _run([d], tmp_path / "out1")
    for entry in (tmp_path / "xdg-cache").rglob("*.json.gz"):
        entry.write_bytes(b"not gzip")
    code, index, _ = _run([d], tmp_path / "out2")
    assert code == 0 and index["counts"]["from_cache"] == 0 and index["counts"]["ok"] == 1


def test_sixteen_ranks_with_a_planted_straggler(tmp_path):
    d = tmp_path / "job"
    for r in range(16):
        node = r // 8
        sc = bt.tiny(100 + r, steps=5, jitter=0.01, data_ms=95.0 if r == 11 else 60.0,
                     comm_ms=2.0 if r == 11 else 6.0, rank=r, world_size=16,
                     utc_start_ns=bt.UTC0 + node * 3_000_000_000 + r * 1_000)
        bt.write(d / f"node{node}" / f"node{node}_rank{r}.sqlite", sc)
    code, index, lines = _run([d], tmp_path / "out", jobs=2)
    assert code == 0
    labels = [r["label"] for r in index["traces"]]
    assert labels.index("node0/node0_rank2.sqlite") < labels.index("node1/node1_rank10.sqlite")
    ranks = index["ranks"]
    assert ranks["available"] and ranks["count"] == 16
    assert [row["rank"] for row in ranks["rows"]] == list(range(16))
    assert [(s["rank"], s["phase"]) for s in ranks["stragglers"]] == [(11, "data")]
    assert ranks["stragglers"][0]["phase_excess_ms"] == pytest.approx(35, rel=0.15)
    assert ranks["spread"]["max_over_median"] > 1.2
    assert ranks["alignment"]["common_steps"] == 4
    comm = {row["rank"]: row["comm_ms"] for row in ranks["rows"]}
    assert comm[0] == pytest.approx(6.0, rel=0.05) and comm[11] == pytest.approx(2.0, rel=0.05)
    assert ranks["communication"]["lowest_rank"] == 11
    assert "UTC" in ranks["alignment"]["basis"]
    assert {r["label"]: r["rank"] for r in index["traces"]}["node1/node1_rank11.sqlite"] == 11
    assert any("straggler: rank 11" in ln for ln in lines)
    html = (tmp_path / "out" / "index.html").read_text()
    assert "Straggler: rank 11" in html and 'id="sec-ranks"' in html
    assert "straggler rank 11" in (tmp_path / "out" / "index.md").read_text()


def test_rank_identity_from_the_trace_environment(tmp_path):
    d = tmp_path / "job"
    for i, r in enumerate((1, 0, 2)):
        sc = bt.tiny(10 + r, steps=4, jitter=0.0, rank=r, world_size=3)
        bt.write(d / f"trace_{'abc'[i]}.sqlite", sc)
    _, index, _ = _run([d], tmp_path / "out")
    ranks = index["ranks"]
    assert ranks is not None and "environment" in ranks["source"]
    assert {r["label"]: r["rank"] for r in index["traces"]} == {
        "trace_a.sqlite": 1, "trace_b.sqlite": 0, "trace_c.sqlite": 2}
    assert ranks["stragglers"] == []


def test_no_ranks_section_without_identities(tmp_path):
    d = tmp_path / "sweep"
    bt.write(d / "bs32.sqlite", bt.tiny(1, steps=4))
    bt.write(d / "bs64.sqlite", bt.tiny(2, steps=4))
    _, index, _ = _run([d], tmp_path / "out")
    assert index["ranks"] is None


def test_hostile_file_name_is_escaped_everywhere(tmp_path):
    d = tmp_path / "traces"
    evil = "<img src=x onerror=alert(1)>|`x`.sqlite"
    bt.write(d / evil, bt.tiny(1, steps=4))
    (d / "<script>alert(1)<!--.sqlite").write_bytes(b"garbage")
    code, index, lines = _run([d], tmp_path / "out")
    assert code == EXIT_PARTIAL_BATCH
    html = (tmp_path / "out" / "index.html").read_text()
    assert "<img src=x" not in html and "<script>alert" not in html
    assert "&lt;script&gt;alert(1)&lt;!--.sqlite" in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    md = (tmp_path / "out" / "index.md").read_text()
    assert "<img" not in md and "&lt;img" in md
    table_rows = [ln for ln in md.splitlines() if ln.startswith("| ") and "img" in ln]
    assert table_rows and all(ln.count(" | ") == table_rows[0].count(" | ") for ln in table_rows)


def test_no_traces_is_an_input_error(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError):
        batch.batch_command([str(tmp_path / "empty")], outdir=str(tmp_path / "out"),
                            echo=lambda s: None)


def test_nsys_rep_without_nsys_is_skipped_with_hint(tmp_path, monkeypatch):
    monkeypatch.setattr(trace_job.shutil, "which", lambda name: None)
    d = tmp_path / "traces"
    bt.write(d / "good.sqlite", bt.tiny(1, steps=4))
    (d / "capture.nsys-rep").write_bytes(b"not really a report")
    code, index, _ = _run([d], tmp_path / "out")
    assert code == EXIT_PARTIAL_BATCH
    (skip,) = index["skipped"]
    assert skip["label"] == "capture.nsys-rep" and "nsys" in skip["reason"]
    assert "nsys export" in skip["hint"]
    assert sorted(p.name for p in d.iterdir()) == ["capture.nsys-rep", "good.sqlite"]


def test_internal_error_in_one_trace_does_not_abort(tmp_path, monkeypatch):
    d = tmp_path / "traces"
    bt.write(d / "a.sqlite", bt.tiny(1, steps=4))
    bt.write(d / "b.sqlite", bt.tiny(2, steps=4))
    real = trace_job.run_analysis

    def flaky(path, th, generated_at):
        if path.endswith("b.sqlite"):
            raise RuntimeError("boom")
        return real(path, th, generated_at)

    monkeypatch.setattr(trace_job, "run_analysis", flaky)
    code, index, _ = _run([d], tmp_path / "out", use_cache=False)
    assert code == EXIT_PARTIAL_BATCH
    assert index["skipped"][0]["label"] == "b.sqlite"
    assert "internal error" in index["skipped"][0]["reason"] and "boom" in index["skipped"][0]["reason"]


# ------------------------------------------------------------------------------------- real trace
@pytest.mark.realtrace
def test_real_two_process_fastvideo_trace_in_a_batch(tmp_path):
    src = shared_trace("nsys/fastvideo_train_2xh100_2026.2.sqlite")
    d = tmp_path / "real"
    d.mkdir()
    shutil.copy(src, d / "fastvideo.sqlite")
    bt.write(d / "synthetic.sqlite", bt.tiny(1, steps=4))
    before = bt.tree_hashes(d)
    code, index, _ = _run([d], tmp_path / "out", jobs=2)
    assert code == EXIT_OK
    rows = {r["label"]: r for r in index["traces"]}
    fv = rows["fastvideo.sqlite"]
    assert fv["processes"] == 2
    assert fv["verdict"] and 0 < fv["gpu_busy"] <= 1
    assert fv["tensor_core_share"] > 0
    assert fv["comm_ms_per_step"] and fv["comm_ms_per_step"] > 0  # NCCL kernels counted
    assert (tmp_path / "out" / "fastvideo.nsys-diag.html").exists()
    assert bt.tree_hashes(d) == before
    assert bt.sha256(d / "fastvideo.sqlite") == bt.sha256(src)


# ------------------------------------------------------------------------------------------ Dask
def test_dask_missing_gives_install_hint(tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "dask.distributed", None)
    d = tmp_path / "traces"
    bt.write(d / "a.sqlite", bt.tiny(1, steps=4))
    with pytest.raises(UsageError, match=r"nsys-diag\[dask\]"):
        batch.batch_command([str(d)], outdir=str(tmp_path / "out"), use_dask=True,
                            echo=lambda s: None, use_cache=False)


@pytest.mark.slow
def test_dask_local_cluster_runs_the_same_work(tmp_path):
    distributed = pytest.importorskip("distributed", reason="dask[distributed] not installed")
    d = tmp_path / "traces"
    bt.write(d / "a.sqlite", bt.tiny(1, steps=5))
    bt.write(d / "b.sqlite", bt.tiny(2, steps=5, data_ms=80))
    (d / "bad.sqlite").write_bytes(b"junk")
    code_local, local, _ = _run([d], tmp_path / "out-local", use_cache=False)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        code, index, lines = _run([d], tmp_path / "out-dask", scheduler=cluster.scheduler_address,
                                  use_cache=False)
    assert code == code_local == EXIT_PARTIAL_BATCH
    strip = lambda rows: [{k: v for k, v in r.items() if k != "cached"} for r in rows]  # noqa: E731
    assert strip(index["traces"]) == strip(local["traces"])
    assert index["skipped"] == local["skipped"]
    assert (tmp_path / "out-dask" / "b.nsys-diag.html").exists()


def test_nsys_rep_is_exported_into_the_cache_never_beside_it(tmp_path, monkeypatch):
    src = bt.write(tmp_path / "src" / "exported.sqlite", bt.tiny(1, steps=4))
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "nsys"
    fake.write_text('#!/bin/sh\n# fake `nsys export`: copies a prepared SQLite to --output\n'
                    'while [ $# -gt 0 ]; do if [ "$1" = "--output" ]; then out="$2"; fi; shift; done\n'
                    f'cp "{src}" "$out"\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:/usr/bin:/bin")
    d = tmp_path / "traces"
    d.mkdir()
    (d / "capture.nsys-rep").write_bytes(b"a report nsys would read")
    before = bt.tree_hashes(d)
    code, index, _ = _run([d], tmp_path / "out")
    assert code == EXIT_OK, index["skipped"]
    (row,) = index["traces"]
    assert row["label"] == "capture.nsys-rep" and row["verdict"] == "input_bound"
    assert bt.tree_hashes(d) == before  # nothing written beside the report
    exports = list((tmp_path / "xdg-cache" / "nsys-diag" / "batch" / "exports").glob("*.sqlite"))
    assert len(exports) == 1
    view = json.loads((tmp_path / "out" / "capture.nsys-diag.json").read_text())
    assert view["trace"]["path"] == "capture.nsys-rep"
