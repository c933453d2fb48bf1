"""The replay wired into ``analyze``: the ``replay`` section, in memory and streamed alike."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nsys_diag.app.analyze import analyze_path
from nsys_diag.app.replay import canonical, span_frames
from nsys_diag.model.options import AnalyzeOptions

SAMPLES = Path(__file__).resolve().parents[2] / "sample_traces"


def _what_if(view: dict, wid: str) -> dict:
    return next(w for w in view["replay"]["what_if"] if w["id"] == wid)


def test_worked_example_replays_its_steps_and_prices_the_input_wait():
    view = analyze_path(str(SAMPLES / "worked_example.sqlite"))
    r = view["replay"]
    assert r["available"] is True and r["fidelity"]["basis"] == "steps"
    assert abs(r["fidelity"]["error_pct"]) < 5
    step = view["steps"]["median_ms"]
    assert _what_if(view, "instant_input")["saves_ms_per_step"] == pytest.approx(420, rel=0.1)
    assert sum(c["ms_per_step"] for c in r["critical_path"]) == pytest.approx(
        r["fidelity"]["replayed_ms"], rel=0.02)
    median = next(s for s in r["fidelity"]["steps"] if s["kind"] == "median")
    assert median["replayed_ms"] == pytest.approx(step, rel=0.05)


def test_each_process_has_its_replay_and_the_top_level_is_the_headline():
    view = analyze_path(str(SAMPLES / "multi_gpu.sqlite"))
    rows = view["processes"]
    assert len(rows) >= 2 and all(p["replay"]["available"] for p in rows)
    head = next(p for p in rows if p["is_headline"])
    assert view["replay"] == head["replay"]


def test_streamed_replay_equals_in_memory():
    path = str(SAMPLES / "multi_gpu.sqlite")
    whole = analyze_path(path, generated_at="2026-01-01T00:00:00Z")
    streamed = analyze_path(path, AnalyzeOptions(chunk_rows=1000),
                            generated_at="2026-01-01T00:00:00Z")
    assert streamed["trace"].get("chunks", {}).get("count", 0) > 1
    assert streamed["replay"] == whole["replay"]
    assert [p["replay"] for p in streamed["processes"]] == [p["replay"] for p in whole["processes"]]
    # both runs are diagnosed again with the same prices
    for key in ("code", "finding", "projected_step_ms_if_fixed", "headline"):
        assert streamed["verdict"][key] == whole["verdict"][key]
    assert any(e["metric"] == "replay.saves_share" for e in streamed["verdict"]["evidence"])
    # and project more GPUs from the same data-parallel replay
    assert whole["scaling"] and all(r["basis"] == "replay" for r in whole["scaling"])
    assert streamed["scaling"] == whole["scaling"]
    assert streamed["verdict"]["scale_advice"] == whole["verdict"]["scale_advice"]


def test_streamed_window_replay_equals_in_memory(tmp_path):
    """Without steps (basis ``window``): the same what-ifs, waits and verdict either way."""
    import dataclasses

    from nsys_diag.synth.replay_cases import REPLAY_CASES
    from nsys_diag.synth.writer import write_nsys_sqlite

    path = tmp_path / "no_steps.sqlite"
    write_nsys_sqlite(path, dataclasses.replace(REPLAY_CASES["item_per_layer"](),
                                                nvtx_steps=False))
    whole = analyze_path(str(path), generated_at="2026-01-01T00:00:00Z")
    streamed = analyze_path(str(path), AnalyzeOptions(chunk_rows=500),
                            generated_at="2026-01-01T00:00:00Z")
    assert streamed["trace"].get("chunks", {}).get("count", 0) > 1
    assert whole["replay"]["fidelity"]["basis"] == "window"
    assert whole["replay"]["what_if"] and whole["replay"]["critical_path_segments"]
    assert streamed["replay"] == whole["replay"]
    for key in ("code", "finding", "projected_step_ms_if_fixed", "headline"):
        assert streamed["verdict"][key] == whole["verdict"][key]


def test_no_replay_env_turns_it_off(monkeypatch):
    monkeypatch.setenv("NSYS_DIAG_NO_REPLAY", "1")
    view = analyze_path(str(SAMPLES / "worked_example.sqlite"))
    assert view["replay"]["available"] is False
    assert "NSYS_DIAG_NO_REPLAY" in view["replay"]["reason"]


def test_no_gpu_work_is_unavailable_with_a_reason():
    view = analyze_path(str(SAMPLES / "no_cuda.sqlite"))
    assert view["replay"]["available"] is False and view["replay"]["reason"]


def test_a_failing_read_is_unavailable_not_a_crash(monkeypatch):
    import nsys_diag.loaders.nsys_replay as nr

    def broken(*a, **k):
        raise ValueError("broken table")

    monkeypatch.setattr(nr, "read_replay_columns", broken)
    view = analyze_path(str(SAMPLES / "worked_example.sqlite"))
    assert view["replay"]["available"] is False and "broken table" in view["replay"]["reason"]


def _frame(**cols) -> pd.DataFrame:
    return pd.DataFrame({k: np.asarray(v) for k, v in cols.items()})


def test_a_span_keeps_the_launch_of_its_work_and_follows_work_queued_past_its_end():
    ops = _frame(start_ns=[50, 150, 210, 400], end_ns=[60, 170, 260, 500],
                 correlation_id=[1, 2, 3, 4], launch_start_ns=[5, 90, 120, 300])
    empty = ops.iloc[:0]
    api = _frame(start_ns=[5, 90, 120, 300], end_ns=[8, 95, 125, 305],
                 correlation_id=[1, 2, 3, 4], global_tid=[1, 1, 1, 1])
    nvtx = _frame(start_ns=[0, 100], end_ns=[10, 200], closed=[True, True], global_tid=[1, 1])
    f = {"kernels": ops, "memcpy": empty, "memset": empty, "sync": empty, "api": api,
         "nvtx": nvtx, "osrt": None}
    got, end = span_frames(f, (100, 200, 300))
    assert end == 260  # the kernel launched in the step runs past its end
    assert got["kernels"]["correlation_id"].tolist() == [2, 3]
    assert got["api"]["correlation_id"].tolist() == [2, 3]  # 2 launched before the step
    assert got["nvtx"]["start_ns"].tolist() == [100]
    _, capped = span_frames(f, (100, 200, 220))
    assert capped == 220


def test_canonical_rows_do_not_depend_on_their_source_order():
    a = _frame(start_ns=[3, 1, 2], end_ns=[4, 2, 3])
    b = _frame(start_ns=[2, 3], end_ns=[3, 4])
    assert canonical([a]).equals(canonical([b, a.iloc[::-1]]))


def test_fired_findings_carry_the_saving_of_their_what_if():
    view = analyze_path(str(SAMPLES / "worked_example.sqlite"))
    fired = [f for f in view["findings"] if f["fired"]]
    inp = next(f for f in fired if f["cause"] == "input")
    assert inp["saves_ms_per_step"] == _what_if(view, "overlapped_input")["saves_ms_per_step"]
    assert all("saves_ms_per_step" not in f for f in view["findings"] if not f["fired"])


def test_a_finding_without_a_what_if_says_why(monkeypatch):
    monkeypatch.setenv("NSYS_DIAG_NO_REPLAY", "1")
    view = analyze_path(str(SAMPLES / "worked_example.sqlite"))
    inp = next(f for f in view["findings"] if f["fired"])
    assert inp["saves_ms_per_step"] is None and "not available" in inp["saves_reason"]


# ---------------------------------------------------------------- the verdict follows the replay
@pytest.fixture(scope="module")
def replay_cases(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("verdict_cases")


def _priced_verdict(view: dict) -> tuple[dict, dict]:
    """The verdict and the what-if that prices its finding (from the view's own findings)."""
    vd = view["verdict"]
    fired = next(f for f in view["findings"] if f["cause"] == vd["finding"])
    wid = next(e["value"] for e in fired["evidence"] if e["metric"] == "replay.what_if")
    return vd, _what_if(view, wid)


@pytest.mark.parametrize("name, code, what_if", [
    ("input_bound_loop", "input_bound", "overlapped_input"),
    ("allreduce_after_backward", "communication_bound", "hidden_communication")])
def test_the_verdict_and_its_projection_are_the_replays(replay_cases, name, code, what_if):
    from tests.analyses.replay.replay_helpers import case_path

    view = analyze_path(str(case_path(replay_cases, name)))
    vd, w = _priced_verdict(view)
    assert (vd["code"], w["id"]) == (code, what_if)
    assert vd["projected_step_ms_if_fixed"] == w["step_ms_after"]
    assert f"saves {w['saves_ms_per_step']:.0f}" in vd["headline"].replace(",", "") or \
        f"saves {w['saves_ms_per_step']:.1f}" in vd["headline"]
    best = max(view["replay"]["what_if"], key=lambda r: r["saves_ms_per_step"])
    assert w["saves_ms_per_step"] >= best["saves_ms_per_step"] or w["finding"] == best["finding"]
    if name == "input_bound_loop":  # the worked example's shape: max(data 420, rest 380)
        assert vd["projected_step_ms_if_fixed"] == pytest.approx(420, rel=0.02)
    if name == "allreduce_after_backward":  # hidden behind the 90 ms backward, never over 150
        assert 0 < view["steps"]["mean_ms"] - vd["projected_step_ms_if_fixed"] <= 150


def test_syncs_that_wait_microseconds_do_not_make_the_verdict(replay_cases):
    from tests.analyses.replay.replay_helpers import case_path

    view = analyze_path(str(case_path(replay_cases, "microsecond_syncs")))
    assert view["verdict"]["finding"] != "sync" and view["verdict"]["code"] != "overhead_bound"


def test_without_the_replay_the_verdict_falls_back_and_says_so(monkeypatch):
    monkeypatch.setenv("NSYS_DIAG_NO_REPLAY", "1")
    vd = analyze_path(str(SAMPLES / "worked_example.sqlite"))["verdict"]
    assert vd["code"] == "input_bound"
    row = next(e for e in vd["evidence"] if e["metric"] == "replay.unavailable_reason")
    assert "NSYS_DIAG_NO_REPLAY=1" in row["value"]
    assert vd["projected_step_ms_if_fixed"] == pytest.approx(420, rel=0.02)  # max(data, rest)


def test_every_process_row_reads_the_rediagnosed_verdict():
    view = analyze_path(str(SAMPLES / "multi_gpu.sqlite"))
    head = next(p for p in view["processes"] if p["is_headline"])
    assert head["verdict_code"] == head["verdict"]["code"] == view["verdict"]["code"]
    for p in view["processes"]:
        assert p["verdict_code"] == p["verdict"]["code"]
        vd, w = _priced_verdict(p)
        assert vd["projected_step_ms_if_fixed"] == w["step_ms_after"]


def test_the_replay_names_phases_with_the_users_phase_map():
    opts = AnalyzeOptions(phase_map=(("overhead", ("^data_loading$",)),))
    view = analyze_path(str(SAMPLES / "worked_example.sqlite"), opts)
    assert _what_if(view, "no_overhead_phases")["saves_ms_per_step"] == pytest.approx(440, rel=0.05)
    assert _what_if(view, "instant_input")["saves_ms_per_step"] < 5
    assert view["verdict"]["code"] == "overhead_bound"
    assert view["verdict"]["projected_step_ms_if_fixed"] == \
        _what_if(view, "no_overhead_phases")["step_ms_after"]


def test_ncu_dram_bytes_are_per_launch_and_by_kernel_family():
    from types import SimpleNamespace as NS

    from nsys_diag.app.replay import ncu_dram_bytes

    k = [NS(normalized_name="ampere_sgemm", dram_bytes=4e9, launches=4),
         NS(normalized_name="ampere_sgemm", dram_bytes=3e9, launches=1),
         NS(normalized_name="ew_gelu", dram_bytes=None, launches=2)]
    assert ncu_dram_bytes(NS(kernels=k)) == {"ampere_sgemm": 3e9}  # the family's largest
    assert ncu_dram_bytes(None) is None
    assert ncu_dram_bytes(NS(kernels=k[2:])) is None


def test_streamed_spans_read_as_chunks_hold_the_rows_of_a_plain_windowed_read(monkeypatch):
    """``span_reader`` (zone map, the skeleton's NVTX and threads) keeps the rows ``span_frames``
    takes from a plain read of each span."""
    from nsys_diag.app import replay as AR
    from nsys_diag.loaders import load_trace
    from nsys_diag.loaders import zone_map as Z
    from nsys_diag.loaders.nsys_db import NsysDb

    monkeypatch.setattr(Z, "BLOCK_ROWS", 16)
    monkeypatch.setattr(Z, "MIN_ZONED_ROWS", 32)
    path = str(SAMPLES / "worked_example.sqlite")
    skeleton = load_trace(path, kernel_detail=False, skeleton=True)
    with NsysDb(path) as db:
        zones = Z.build_zone_map(db)
    assert zones.tables
    read = AR.span_reader(path, skeleton, zones)
    whole = load_trace(path, kernel_detail=False)
    (gpid,) = sorted(set(whole.kernels["global_pid"].tolist()))
    s = whole.kernels["start_ns"].to_numpy(np.int64)
    spans = [(int(np.quantile(s, q)), int(np.quantile(s, q + 0.1)), int(np.quantile(s, q + 0.2)))
             for q in (0.1, 0.5)]
    for span in spans:
        plain, _ = span_frames(AR._frames_of(AR._read_span(path, span), gpid), span)
        chunked, _ = span_frames(AR._frames_of(read(span), gpid), span)
        for name in AR.FRAMES:
            if plain[name] is None:
                assert chunked[name] is None
                continue
            assert len(plain[name]) > 0 or name in ("memset", "osrt", "sync")
            assert canonical([chunked[name]]).equals(canonical([plain[name]])), name


def test_more_gpus_comes_from_the_data_parallel_replay(tmp_path):
    from nsys_diag.synth.replay_cases import ALLREDUCE_NS, REPLAY_CASES
    from nsys_diag.synth.writer import write_nsys_sqlite

    path = tmp_path / "allreduce_after_backward.sqlite"
    write_nsys_sqlite(path, REPLAY_CASES["allreduce_after_backward"]())
    view = analyze_path(str(path))
    rows = {r["gpus"]: r for r in view["scaling"]}
    assert sorted(rows) == [1, 2, 4, 8] and view["scaling_reason"] is None
    assert all(r["basis"] == "replay" for r in rows.values())
    # the exposed 150 ms all-reduce of two ranks grows to 225 ms at four, all of it exposed
    assert rows[4]["allreduce_ms"] == pytest.approx(1.5 * ALLREDUCE_NS / 1e6, rel=1e-3)
    assert rows[4]["step_ms"] - rows[2]["step_ms"] == pytest.approx(
        0.5 * ALLREDUCE_NS / 1e6, rel=0.02)
    assert rows[2]["step_ms"] == pytest.approx(view["steps"]["mean_ms"], rel=1e-6)
    advice = view["verdict"]["scale_advice"]
    assert "exposed communication as measured" in advice and "stays hidden" not in advice
