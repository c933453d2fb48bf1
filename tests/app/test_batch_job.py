"""batch → index.json ``job``: the job verdict from per-rank traces (rank only in the environment)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import batch_traces as bt
from nsys_diag.app import batch

GEN = "2026-11-30T00:00:00Z"


@pytest.fixture(autouse=True)
def _cache_in_tmp(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))


def _run(d: Path, out: Path) -> tuple[dict, list[str]]:
    lines: list[str] = []
    code = batch.batch_command([str(d)], outdir=str(out), echo=lines.append, generated_at=GEN,
                               jobs=1)
    assert code == 0
    return json.loads((out / "index.json").read_text(encoding="utf-8")), lines


def test_straggler_in_data_makes_the_job_input_bound(tmp_path):
    index, lines = _run(bt.rank_set(tmp_path / "job", where="data"), tmp_path / "out")
    assert "environment" in index["ranks"]["source"]
    job = index["job"]
    print(job, [(r["rank"], r["verdict"]) for r in index["traces"]])
    assert job["available"] and job["verdict"] == "input_bound"
    assert job["bound_by"] == {"rank": 2, "phase": "data"} and job["cause"] is None
    assert job["headline"].startswith("input-bound on rank 2: the other 3 ranks wait")
    median = index["ranks"]["spread"]["median_ms"]
    assert job["projected_step_ms_if_fixed"] == pytest.approx(median, rel=0.05)
    assert job["projected_step_ms_if_fixed"] < job["current_step_ms"] - 40
    assert lines[1].startswith("  job: input_bound — input-bound on rank 2")
    md = (tmp_path / "out" / "index.md").read_text()
    assert md.index("**Job: `input_bound`**") < md.index("| trace |")
    html = (tmp_path / "out" / "index.html").read_text()
    assert 'id="sec-job"' in html and html.index('id="sec-job"') < html.index('id="sec-batch"')


def test_straggler_in_compute_makes_the_job_compute_bound(tmp_path):
    index, _ = _run(bt.rank_set(tmp_path / "job", where="forward"), tmp_path / "out")
    job = index["job"]
    print(job, [(r["rank"], r["verdict"]) for r in index["traces"]])
    assert job["verdict"].startswith("compute_bound")
    assert job["bound_by"] == {"rank": 2, "phase": "forward"}
    assert job["projected_step_ms_if_fixed"] < job["current_step_ms"] - 40
    assert job["cause"]["kind"] == "gpu_compute" and job["cause"]["gpu_excess_ms"] > 40
    straggler = next(r for r in index["ranks"]["rows"] if r["rank"] == 2)
    assert straggler["phase_gpu_ms"]["forward"] > 40 + index["ranks"]["rows"][0]["phase_gpu_ms"]["forward"]


def test_straggler_slow_on_the_host_in_forward_is_not_compute_bound(tmp_path):
    index, lines = _run(bt.rank_set(tmp_path / "job", where="host_forward"), tmp_path / "out")
    job = index["job"]
    print(job, [(r["rank"], r["verdict"]) for r in index["traces"]])
    assert job["bound_by"] == {"rank": 2, "phase": "forward"}
    assert job["cause"]["kind"] == "host" and job["cause"]["host_excess_ms"] > 40
    assert abs(job["cause"]["gpu_excess_ms"]) < 5
    assert not job["verdict"].startswith("compute_bound") and job["verdict"] in (
        "overhead_bound", "launch_bound", "input_bound")
    assert "host time, not GPU work" in job["headline"]
    assert any("host time with the GPU idle" in e["text"] for e in job["evidence"])
    assert job["projected_step_ms_if_fixed"] < job["current_step_ms"] - 40


def test_no_straggler_gives_the_common_verdict(tmp_path):
    index, _ = _run(bt.rank_set(tmp_path / "job", excess_ms=0.0), tmp_path / "out")
    job = index["job"]
    assert index["ranks"]["stragglers"] == []
    codes = {r["verdict"] for r in index["traces"]}
    assert job["basis"] == ("common" if len(codes) == 1 else "most_expensive")
    assert job["verdict"] in codes and job["projected_step_ms_if_fixed"] is None


def test_no_ranks_no_job(tmp_path):
    d = tmp_path / "sweep"
    bt.write(d / "bs32.sqlite", bt.tiny(1, steps=4))
    index, _ = _run(d, tmp_path / "out")
    assert index["ranks"] is None and index["job"]["available"] is False
    assert index["job"]["reason"]


def test_the_job_replay_prices_the_straggler_in_index_json(tmp_path):
    index, _ = _run(bt.rank_set(tmp_path / "job", where="data"), tmp_path / "out")
    job = index["job"]
    (w,) = job["what_if"]
    assert w["id"] == "straggler_fixed" and w["rank"] == 2 and w["phase"] == "data"
    assert abs(w["error_pct"]) < 5  # the barrier model reproduces the measured job step
    assert w["saves_ms_per_step"] == pytest.approx(50.0, rel=0.1)  # the 50 ms of extra data
    assert w["saves_range_ms"][0] <= w["saves_ms_per_step"] <= w["saves_range_ms"][1]
    assert job["projected_step_ms_if_fixed"] == pytest.approx(w["step_ms_after"])
    assert any(e["metric"] == "job.what_if.straggler_fixed.step_ms_after"
               for e in job["evidence"])
    index, _ = _run(bt.rank_set(tmp_path / "even", excess_ms=0.0), tmp_path / "out2")
    assert index["job"].get("what_if", []) == []
