"""expected() (nsys_diag.synth.answers): exact for the worked example, consistent with each
preset's design, equal to what plain SQL recomputes from the written rows."""
from __future__ import annotations


import pytest

from nsys_diag import synth
from nsys_diag.synth import (
    MS, US, GpuMetricsSpec, KernelSpec, PhaseSpec, Scenario)
from synth_sink import open_ro, query


# ============================================================================ expected()
def test_worked_example_answers_are_exact():
    e = synth.expected("worked_example")
    assert e["verdict"] == "input_bound" and e["tolerance"] == 0
    assert e["steps"]["count"] == 11 and e["steps"]["warmup"] == [0]
    assert e["steps"]["analysed_count"] == 10 and e["steps"]["mean_ms"] == 800.0
    assert {p["name"]: p["share"] for p in e["phases"]} == {
        "data_loading": 0.525, "forward": 0.225, "backward": 0.1875, "optimizer_step": 0.0375,
        "logging": 0.025}
    assert {p["name"]: p["gpu_work_ms"] for p in e["phases"]} == {
        "data_loading": 0.0, "forward": 80.0, "backward": 100.0, "optimizer_step": 12.0,
        "logging": 0.0}
    assert e["gpu"]["utilization"] == pytest.approx(0.24, abs=1e-12)
    assert e["gpu"]["compute_busy_ms_per_step"] == pytest.approx(192.0, abs=1e-9)
    assert e["memory"]["peak_bytes"] == 30 * (1 << 30)


@pytest.mark.parametrize("name", list(synth.PRESETS))
def test_expected_answers_are_consistent_with_the_design(name):
    sc = synth.preset(name)
    e = synth.expected(name)
    assert e["verdict"] == sc.expected_verdict
    assert sum(p["share"] for p in e["phases"]) == pytest.approx(1.0, abs=1e-9)
    assert e["steps"]["count"] == sc.steps and e["steps"]["warmup_ms"] > e["steps"]["mean_ms"]
    tol = e["tolerance"]
    for p, spec in zip(e["phases"], sc.phases):  # base phases keep their nominal duration
        assert p["mean_ms"] == pytest.approx(spec.dur_ns / MS, rel=tol + 1e-12)
    util = e["gpu"]["utilization"]
    k = e["kernels"]
    if name == "healthy_tc":
        assert util >= 0.9 and k["tensor_core_share"] > 0.8 and k["tc_share_of_gemm"] == 1.0
    elif name == "simt_gemm":
        assert util >= 0.85 and k["tensor_core_share"] == 0.0 and k["gemm_share"] > 0.8
    elif name in ("memory_bound", "inference"):
        m = e["gpu_metrics"]
        dram = m["DRAM Read Bandwidth [Throughput %]"] + m["DRAM Write Bandwidth [Throughput %]"]
        assert 70 <= dram <= 85 and m["Tensor Active [Throughput %]"] == 0
        assert 30 <= m["SMs Active [Throughput %]"] <= 60 and util >= 0.75
    elif name == "overhead_bound":
        per_step = sum(p["share"] for p in e["phases"] if p["canonical"] == "overhead")
        assert per_step > 0.3
        log = next(p for p in e["phases"] if p["name"] == "log_metrics")
        assert log["mean_ms"] / sum(p.dur_ns for p in sc.phases) * MS > 0.10  # without checkpoints
        assert e["steps"]["periodic"][0]["steps"] == [4, 9]
    elif name == "launch_bound":
        assert k["small_fraction"] == 1.0 and util < 0.3 and k["per_step"] >= 1000
    elif name == "multi_gpu":
        assert e["processes"] == 2
        for d in e["gpu"]["per_device"]:
            assert 0.10 < d["exposed_comm_share"] < 0.2 and d["hidden_comm_ms"] > 0
    elif name == "no_cuda":
        assert k["total"] == 0 and util == 0
    elif name == "worked_example":
        assert util == pytest.approx(0.24)


@pytest.mark.parametrize("name", ["worked_example", "multi_gpu", "launch_bound"])
def test_expected_utilization_matches_the_written_rows(tmp_path, name):
    """Recompute GPU busy from the file with SQL + a plain interval union: must equal expected()."""
    e = synth.expected(name, steps=4)
    con = open_ro(synth.write_preset(tmp_path / "x.sqlite", name, steps=4))
    prefix = synth.preset(name).step_prefix
    for dev in e["gpu"]["per_device"]:
        gpid = (1 << 48) | (dev["pid"] << 24)
        main = gpid | dev["pid"]
        steps = sorted(query(con, "SELECT start, end FROM NVTX_EVENTS WHERE text LIKE ? AND globalTid = ?",
                          prefix + "%", main))
        lo, hi = steps[1][0], steps[-1][1]
        ks = query(con, "SELECT start, end FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE globalPid = ? "
                     "ORDER BY start", gpid)
        busy, cur_s, cur_e = 0, None, None
        for s, t in ks:
            s, t = max(s, lo), min(t, hi)
            if t <= s:
                continue
            if cur_e is None or s > cur_e:
                busy += 0 if cur_e is None else cur_e - cur_s
                cur_s, cur_e = s, t
            else:
                cur_e = max(cur_e, t)
        busy += 0 if cur_e is None else cur_e - cur_s
        assert busy / (hi - lo) == pytest.approx(dev["utilization"], abs=1e-12)


def test_overrides_and_scale_keep_the_design():
    e = synth.expected("worked_example", steps=5, scale=4)
    assert e["steps"]["count"] == 5 and e["kernels"]["per_step"] == 4 * 128
    assert e["gpu"]["utilization"] == pytest.approx(0.24, abs=1e-3)
    assert [round(p["share"], 6) for p in e["phases"]] == [0.525, 0.225, 0.1875, 0.0375, 0.025]
    sc = synth.preset("healthy_tc", jitter=0.0)
    assert synth.expected(sc)["tolerance"] == 0
    with pytest.raises(ValueError):
        synth.preset("nope")
    with pytest.raises(ValueError):
        GpuMetricsSpec(levels={"*": {"SM Active": 50.0}})  # names must be nsys's exact labels
    ph = PhaseSpec("p", MS, kernels=[KernelSpec("ew_add", 100 * US, 2)])  # lists are accepted
    assert isinstance(ph.kernels, tuple)
    assert synth.expected(Scenario(steps=3, phases=[ph]))["kernels"]["per_step"] == 2
    with pytest.raises(ValueError):
        synth.write_preset("/nonexistent/x.sqlite", "worked_example", schema="1999")
