"""One capability probe: `inspect` promises exactly what `analyze` finds (issue 15: inspect said
"[yes] steps and phases" on fastvideo, where analyze found no step)."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from conftest import SAMPLE_TRACES, SHARED_TRACES
from nsys_diag.analyses.capabilities import analysed_process_ids, probe
from nsys_diag.analyses.inventory import analyze_inventory
from nsys_diag.app.analyze import analyze_path
from nsys_diag.loaders import load_trace

TRACES = sorted(SAMPLE_TRACES.glob("*.sqlite")) + sorted((SHARED_TRACES / "nsys").glob("*.sqlite"))


def _status(inv_json: dict, name: str) -> str:
    return {a["name"]: a for a in inv_json["analyses"]}[name]["status"]


@pytest.mark.parametrize("path", TRACES, ids=lambda p: Path(p).name)
def test_inspect_and_analyze_share_one_probe(path):
    inv = analyze_inventory(load_trace(path)).to_json()
    view = analyze_path(str(path))
    assert inv["capabilities"] == view["capabilities"]
    caps = view["capabilities"]
    head_steps = bool(view["steps"].get("available", True)) and bool(view["steps"].get("count"))
    if len(caps["processes"]) == 1:  # the probe's steps/phases are the analysed ones
        assert caps["steps"] == head_steps
        assert caps["phases"] == bool([p for p in view["phases"] if p["name"] != "other"])
    if _status(inv, "steps_and_phases") == "yes":
        assert caps["steps"] and caps["phases"] and caps["gpu_activity"]
    else:
        assert not (caps["steps"] and caps["phases"] and caps["gpu_activity"])


def test_fastvideo_has_nvtx_but_no_step_and_inspect_says_so():
    path = SHARED_TRACES / "nsys" / "fastvideo_train_2xh100_2026.2.sqlite"
    if not path.exists():
        pytest.skip("../shared/traces not present")
    inv = analyze_inventory(load_trace(path)).to_json()
    row = {a["name"]: a for a in inv["analyses"]}["steps_and_phases"]
    assert row["status"] == "partial" and "no step found" in row["reason"]
    assert "--step-range" in row["hint"]
    assert inv["capabilities"]["steps"] is False and inv["capabilities"]["nvtx_ranges"] > 0


def test_probe_reuses_what_analyze_found_and_reads_optional_frames(tmp_path):
    from nsys_diag import synth

    bundle = load_trace(synth.write_preset(tmp_path / "w.sqlite", "worked_example", steps=3))
    caps = probe(bundle)
    assert caps.steps and caps.phases and caps.gpu_activity and not caps.gpu_metrics
    assert [p.steps for p in caps.processes] == [3] and caps.processes[0].phases == 5
    assert caps.osrt is False and caps.cpu_samples is False  # absent frames count as empty

    class _NoSteps:
        available = False
        reason = "given"
    given = probe(bundle, analysed={analysed_process_ids(bundle)[0]: (_NoSteps(), _NoSteps())})
    assert not given.steps and given.processes[0].steps_reason == "given"


def test_analysed_process_ids_fall_back_to_nvtx_then_the_whole_bundle(tmp_path):
    from nsys_diag import synth

    nvtx_only = load_trace(synth.write_preset(tmp_path / "n.sqlite", "no_cuda", steps=2))
    assert analysed_process_ids(nvtx_only) == sorted(pd.unique(nvtx_only.nvtx["global_pid"]))
