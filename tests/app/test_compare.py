"""compare at the library level: the cache, and --no-cache re-analysing every trace."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

import batch_traces as bt
from nsys_diag.app import compare, trace_job
from nsys_diag.cli import main
from nsys_diag.model.errors import EXIT_OK


@pytest.fixture(autouse=True)
def _cache_in_tmp(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))


@pytest.fixture
def counted(monkeypatch):
    """Count the traces really analysed (in this process: jobs=1)."""
    calls: list[str] = []
    real = trace_job.run_analysis

    def counting(path, th, generated_at):
        calls.append(path)
        return real(path, th, generated_at)

    monkeypatch.setattr(trace_job, "run_analysis", counting)
    return calls


def test_compare_uses_the_cache_and_no_cache_reanalyses(tmp_path, counted):
    base = bt.write(tmp_path / "in" / "base.sqlite", bt.tiny(1, steps=6))
    cand = bt.write(tmp_path / "in" / "cand.sqlite", bt.tiny(2, steps=6))
    quiet = dict(echo=lambda s: None, jobs=1, generated_at="2026-01-01T00:00:00Z")
    assert compare.compare_command(str(base), str(cand), **quiet) == EXIT_OK
    assert len(counted) == 2
    assert compare.compare_command(str(base), str(cand), **quiet) == EXIT_OK
    assert len(counted) == 2  # both from the cache
    assert compare.compare_command(str(base), str(cand), use_cache=False, **quiet) == EXIT_OK
    assert len(counted) == 4  # --no-cache: analysed again


def test_the_cli_threads_no_cache_through(tmp_path, monkeypatch):
    seen = {}

    def fake(baseline, candidate, **kw):
        seen.update(kw)
        return EXIT_OK

    monkeypatch.setattr(compare, "compare_command", fake)
    assert CliRunner().invoke(main, ["compare", "a", "b", "--no-cache"]).exit_code == 0
    assert seen["use_cache"] is False
    assert CliRunner().invoke(main, ["compare", "a", "b"]).exit_code == 0
    assert seen["use_cache"] is True


def test_compare_shows_the_baseline_prediction_beside_the_measured_candidate(tmp_path):
    import dataclasses
    import json

    from nsys_diag.synth.replay_cases import input_bound_loop
    from nsys_diag.synth.scenarios import MS

    before = input_bound_loop()  # 420 ms of data loading in an 800 ms step
    data = dataclasses.replace(before.phases[0], dur_ns=10 * MS)  # the loader fixed
    after = dataclasses.replace(before, phases=(data, *before.phases[1:]))
    base = bt.write(tmp_path / "in" / "before.sqlite", before)
    cand = bt.write(tmp_path / "in" / "after.sqlite", after)
    out = tmp_path / "cmp.json"
    md, html = tmp_path / "cmp.md", tmp_path / "cmp.html"
    assert compare.compare_command(str(base), str(cand), echo=lambda s: None, jobs=1,
                                   generated_at="2026-01-01T00:00:00Z", json_out=str(out),
                                   md_out=str(md), html_out=str(html)) == EXIT_OK
    p = json.loads(out.read_text())["predicted"]
    assert p["available"] and p["finding"] == "input"
    assert p["what_if"] in ("instant_input", "overlapped_input")
    assert p["predicted_step_ms"] == pytest.approx(380, rel=0.05)
    assert p["candidate_step_ms"] == pytest.approx(390, rel=0.05)  # 10 ms of loading left
    assert abs(p["error_pct"]) < 5
    assert p["measured_saves_ms"] == pytest.approx(410, rel=0.05)
    assert "Predicted vs measured" in md.read_text()
    assert 'id="predicted-vs-measured"' in html.read_text()
