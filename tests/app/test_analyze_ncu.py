"""``analyze TRACE --ncu CSV`` end to end on generated nsys exports: the join compares the kernels'
launch configurations (grid × block, loaded only with ``--ncu``), one kernel name launched with two
configurations of very different durations is not weighted as one kernel, and every report says
how each pairing's launch config compared."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from nsys_diag.app.analyze import analyze_path
from nsys_diag.cli import main
from nsys_diag.model.options import AnalyzeOptions
from nsys_diag.synth.ncu import SynthKernel, write_ncu_csv
from nsys_diag.synth.scenarios import MS, US, KernelSpec, PhaseSpec, Scenario
from nsys_diag.synth.writer import write_nsys_sqlite

GEMM = "ampere_sgemm_64x64_nn"  # catalog geometry: grid (128, 16, 1), block (128, 1, 1)
BIG = (128, 16, 1)
SMALL = (4, 1, 1)


def two_config_trace(path):
    """Per step: 4 × 400 µs GEMMs at the catalog's 2048 blocks, 40 × 5 µs at 4 blocks."""
    sc = Scenario(name="two_configs", steps=6, gpu="A100", seed=3, phases=(
        PhaseSpec("fwd", 4 * MS, canonical="forward", kernels=(
            KernelSpec(GEMM, 400 * US, 4),
            KernelSpec(GEMM, 5 * US, 40, grid=SMALL))),))
    return write_nsys_sqlite(path, sc)


def big_gemm(**kw) -> SynthKernel:
    return SynthKernel(GEMM, launches=2, duration_ns=400_000, sm_pct=88, mem_pct=30,
                       counts={"ffma": 1e9}, dram_bytes=1e8, grid=BIG, block=(128, 1, 1), **kw)


def small_gemm() -> SynthKernel:
    return SynthKernel(GEMM, launches=3, duration_ns=5_000, sm_pct=15, mem_pct=10,
                       counts={"ffma": 1e6}, dram_bytes=1e6, grid=SMALL, block=(128, 1, 1),
                       waves=4.0)


def roofline(trace, csv) -> dict:
    view = analyze_path(str(trace), AnalyzeOptions(ncu_path=str(csv)))
    return view["roofline"]


def test_the_short_launches_of_another_config_are_not_weighted_as_the_profiled_gemm(tmp_path):
    trace = two_config_trace(tmp_path / "t.sqlite")
    csv = write_ncu_csv(tmp_path / "k.csv", [big_gemm()], gpu_name="NVIDIA A100-SXM4-40GB")
    rl = roofline(trace, csv)
    (m,) = rl["matches"]
    assert m["level"] == "signature" and m["launch_config"] == "same"
    assert m["timeline_launch_config"] == "2048x128" and m["launches"] % 4 == 0
    assert m["duration_ratio"] == pytest.approx(1.0, rel=0.05)
    # the 4-block launches (10 per big one): exact name, another config, 80x shorter → refused
    assert rl["refused_pairings"] == 1
    assert [u["name"] for u in rl["unmatched"]] == [GEMM]
    assert rl["unmatched"][0]["time_ns"] == pytest.approx(m["launches"] * 10 * 5 * US, rel=0.05)
    assert rl["matched_share"] == pytest.approx(1600 / 1800, rel=0.01)


def test_each_config_takes_its_own_ncu_launches(tmp_path):
    trace = two_config_trace(tmp_path / "t.sqlite")
    csv = write_ncu_csv(tmp_path / "k.csv", [big_gemm(), small_gemm()],
                        gpu_name="NVIDIA A100-SXM4-40GB")
    rl = roofline(trace, csv)
    by_cfg = {m["timeline_launch_config"]: m for m in rl["matches"]}
    assert set(by_cfg) == {"2048x128", "4x128"}
    assert {m["launch_config"] for m in rl["matches"]} == {"same"}
    assert by_cfg["2048x128"]["bound"] == "compute" and by_cfg["4x128"]["bound"] == "latency"
    assert (by_cfg["2048x128"]["ncu_launches"], by_cfg["4x128"]["ncu_launches"]) == (2, 3)
    assert by_cfg["4x128"]["duration_ratio"] == pytest.approx(1.0, rel=0.05)
    assert rl["matched_share"] == pytest.approx(1.0)


def test_without_ncu_the_launch_configs_are_not_loaded(tmp_path):
    """The plain analyze path keeps its fast load: no roofline, no kernel detail read."""
    from nsys_diag.app.analyze import load_for_analysis

    trace = two_config_trace(tmp_path / "t.sqlite")
    b = load_for_analysis(str(trace), AnalyzeOptions())
    assert (b.kernels["grid_x"] == -1).all() and b.meta.extra["kernel_detail"] is False


def test_reports_show_the_launch_config_of_each_fallback_pairing(tmp_path):
    trace = two_config_trace(tmp_path / "t.sqlite")
    # ncu profiled only the small config: the timeline's big launches are 80x longer → refused;
    # a 10x-longer small-config profile is kept as a labelled base pairing of another config
    csv = write_ncu_csv(tmp_path / "k.csv", [SynthKernel(
        GEMM, launches=2, duration_ns=60_000, sm_pct=80, mem_pct=30, grid=(64, 1, 1),
        block=(128, 1, 1))], gpu_name="NVIDIA A100-SXM4-40GB")
    js, md, html = tmp_path / "a.json", tmp_path / "a.md", tmp_path / "a.html"
    res = CliRunner().invoke(main, ["analyze", str(trace), "--ncu", str(csv), "--json", str(js),
                                    "--md", str(md), "-o", str(html)],
                             env={"SOURCE_DATE_EPOCH": "0"})
    assert res.exit_code == 0, res.output
    rl = json.loads(js.read_text())["roofline"]
    (m,) = rl["matches"]
    assert (m["level"], m["launch_config"], m["timeline_launch_config"]) == ("base", "different",
                                                                             "2048x128")
    words = "other launch config (timeline 2048 blocks × 128 threads; not profiled by ncu)"
    assert words in res.output and "Not exact pairings" in res.output
    assert words in md.read_text() and words in html.read_text()
    assert "Peak source: the GPU the ncu CSV names" in res.output
