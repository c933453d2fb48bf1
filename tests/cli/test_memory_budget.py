"""`--memory-budget --memory-mode middle`: an export whose analysis would not fit is analysed over
the middle window of its timeline that does (``trace.read_window``), never refused; ``none``
reads everything (the default mode, streaming, is tested in tests/app/test_stream.py)."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from nsys_diag import synth
from nsys_diag.app.analyze import analyze_path
from nsys_diag.app.memory_policy import plan_memory
from nsys_diag.loaders import memory_estimate as me
from nsys_diag.cli import main
from nsys_diag.model.options import DEFAULT_MEMORY_BUDGET_BYTES, AnalyzeOptions


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    return synth.write_preset(tmp_path_factory.mktemp("mb") / "t.sqlite", "worked_example",
                              steps=30)


def _analyze(trace, *args):
    res = CliRunner().invoke(main, ["analyze", str(trace), "--no-html", "--json", "-", *args])
    return res


def _view(res) -> dict:
    """The JSON document at the start of the output (the terminal summary follows it)."""
    return json.JSONDecoder().raw_decode(res.output[res.output.index("{"):])[0]


def _half_budget(trace) -> int:
    est, _ = me.estimate_memory(str(trace))
    return me.BASE_MEMORY_BYTES + est // 2


def test_budget_below_the_estimate_reads_a_middle_window(trace):
    res = _analyze(trace, "--memory-budget", str(_half_budget(trace)), "--memory-mode", "middle")
    assert res.exit_code == 0, res.output
    view = _view(res)
    rw = view["trace"]["read_window"]
    assert rw["reason"] == "memory_budget" and 0.45 < rw["row_fraction"] < 0.55
    assert any(q["code"] == "memory_window" for q in view["data_quality"])
    assert view["steps"]["analysed_count"] < 30  # only the steps wholly inside the window
    assert view["verdict"]


def test_default_and_none_read_everything(trace):
    for args in ([], ["--memory-budget", "none"]):
        res = _analyze(trace, *args)
        assert res.exit_code == 0, res.output
        view = _view(res)
        assert view["trace"]["read_window"] is None
        assert not any(q["code"] == "memory_window" for q in view["data_quality"])


@pytest.mark.parametrize("value", ["1K", "lots"])
def test_bad_budget_is_a_usage_error(trace, value):
    res = _analyze(trace, "--memory-budget", value)
    assert res.exit_code == 2
    assert "--memory-budget" in res.output


def test_max_memory_is_checked_against_what_the_budget_reads(trace):
    half = _half_budget(trace)
    # the whole export does not fit --max-memory: refused (exit 3) ...
    res = _analyze(trace, "--memory-budget", "none", "--max-memory", str(half))
    assert res.exit_code == 3 and "--memory-budget" in res.output
    # ... a window that fits the budget, and so the limit, runs
    res = _analyze(trace, "--memory-budget", str(half), "--max-memory", str(half),
                   "--memory-mode", "middle")
    assert res.exit_code == 0, res.output
    assert _view(res)["trace"]["read_window"]["reason"] == "memory_budget"


def test_user_window_is_pushed_down(trace):
    res = _analyze(trace, "--window", "2s:4s")
    assert res.exit_code == 0, res.output
    view = _view(res)
    assert view["trace"]["read_window"] == {"start_ns": 2_000_000_000, "end_ns": 4_000_000_000,
                                            "reason": "window"}


def test_read_fraction_rules(trace, tmp_path):
    half = _half_budget(trace)

    def frac(path, options):
        return plan_memory(path, options).fraction

    assert AnalyzeOptions().memory_budget_bytes == DEFAULT_MEMORY_BUDGET_BYTES
    assert frac(str(trace), AnalyzeOptions()) is None  # a small file fits the default
    assert frac(str(trace), AnalyzeOptions(memory_budget_bytes=None)) is None
    middle = plan_memory(str(trace), AnalyzeOptions(memory_budget_bytes=half, memory_mode="middle"))
    assert middle.kind == "middle" and 0.45 < middle.fraction < 0.55
    # the default mode streams the whole export instead of reading a window
    streamed = plan_memory(str(trace), AnalyzeOptions(memory_budget_bytes=half))
    assert streamed.kind == "stream" and streamed.fraction is None and streamed.chunk_rows
    # --max-memory is a refusal, not a budget
    assert frac(str(trace), AnalyzeOptions(memory_budget_bytes=None, max_memory_bytes=half)) \
        is None
    assert frac(str(trace), AnalyzeOptions(memory_budget_bytes=half, window_ns=(0, 10),
                                           memory_mode="middle")) is None
    csv = tmp_path / "x.csv"
    csv.write_text('"ID","Kernel Name"\n' * 1000)
    assert frac(str(csv), AnalyzeOptions(memory_budget_bytes=me.BASE_MEMORY_BYTES + 1,
                                         memory_mode="middle")) \
        is None


@pytest.mark.parametrize("preset", ["launch_bound", "worked_example", "multi_gpu"])
def test_a_middle_window_keeps_the_verdict_and_its_evidence(tmp_path, preset):
    """The window is representative: on a 40-step capture, the middle half gives the verdict of
    the whole export, with utilization within a percentage point."""
    path = synth.write_preset(tmp_path / "t.sqlite", preset, steps=40)
    whole = analyze_path(str(path), AnalyzeOptions(memory_budget_bytes=None))
    est, _ = me.estimate_memory(str(path))
    half = analyze_path(str(path), AnalyzeOptions(
        memory_budget_bytes=me.BASE_MEMORY_BYTES + est // 2, memory_mode="middle"))
    assert half["trace"]["read_window"]["reason"] == "memory_budget"
    assert half["verdict"]["code"] == whole["verdict"]["code"] == synth.expected(preset)["verdict"]
    assert half["steps"]["analysed_count"] < whole["steps"]["analysed_count"]
    assert half["gpu"]["utilization"] == pytest.approx(whole["gpu"]["utilization"], abs=0.01)
