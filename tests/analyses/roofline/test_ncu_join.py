"""ncu ↔ nsys join: name matching at three levels, timeline time weighting, unmatched lists."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from nsys_diag.analyses.base import Unavailable
from nsys_diag.analyses.roofline.ncu_join import RooflineJoinResult, join_roofline_to_timeline
from nsys_diag.analyses.roofline.analysis import RooflineResult, analyze_roofline
from nsys_diag.loaders import load_trace
from nsys_diag.model import contracts as C
from nsys_diag.synth.ncu import SynthKernel, write_ncu_csv

US = 1_000


def timeline(rows: list[tuple[str, int]], short: dict[str, str] | None = None, *,
             grid: int = 1024, block: int = 256) -> pd.DataFrame:
    """nsys KERNELS frame: one back-to-back kernel per (name, duration_ns) row, launched with the
    synthetic ncu kernels' default config (grid 1024, block 256) unless told otherwise."""
    out, t = [], 0
    for name, dur in rows:
        out.append(dict(start_ns=t, end_ns=t + dur, device_id=0, context_id=1, stream_id=7,
                        correlation_id=-1, global_pid=1 << 24, pid=1, name=name,
                        short_name=(short or {}).get(name, name), grid_x=grid, grid_y=1, grid_z=1,
                        block_x=block, block_y=1, block_z=1, registers_per_thread=32,
                        smem_static_bytes=0, smem_dynamic_bytes=0, graph_node_id=-1,
                        launch_global_tid=-1, launch_start_ns=-1, launch_end_ns=-1,
                        launch_api="cudaLaunchKernel"))
        t += dur + 500
    return C.KERNELS.validate(pd.DataFrame(out))


def roofline_of(path, gpus=None) -> RooflineResult:
    b = load_trace(path)
    r = analyze_roofline(b.ncu_launches, b.ncu_metrics, b.gpus if gpus is None else gpus)
    assert isinstance(r, RooflineResult)
    return r


@pytest.fixture
def demo_roofline(tmp_path) -> RooflineResult:
    return roofline_of(write_ncu_csv(tmp_path / "k.csv", gpu_name="NVIDIA A100-SXM4-80GB"))


# nsys spells the same kernels differently from ncu: const placement, "> >", another tile variant
GEMM_NSYS = "void gemm_kernel<float, 128>(float const*, float const*, float*, int)"
ADD_NSYS = ("void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float> >"
            "(int, at::native::AddFunctor<float>)")
XMMA_NSYS = ("sm80_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize256x128x32_stage3_warpsize4x2x1"
             "_tensor16x8x16_kernel")


def test_time_weighted_by_timeline(demo_roofline):
    k = timeline([(GEMM_NSYS, 400 * US), (GEMM_NSYS, 200 * US), (ADD_NSYS, 300 * US),
                  (XMMA_NSYS, 50 * US), ("void other_kernel<1>(int)", 50 * US)])
    j = join_roofline_to_timeline(demo_roofline, k)
    assert isinstance(j, RooflineJoinResult)
    assert j.timeline_kernel_time_ns == 1_000 * US
    assert j.matched_share == pytest.approx(0.95)
    tw = j.time_weighted
    assert tw["compute_bound"] == pytest.approx(0.65)  # gemm 600 µs + xmma 50 µs
    assert tw["memory_bound"] == pytest.approx(0.30)
    assert tw["latency_bound"] == 0 and tw["under_occupied"] == 0
    assert tw["unmatched"] == pytest.approx(0.05)
    assert sum(tw.values()) == pytest.approx(1.0)
    assert j.time_weighted_matched["memory_bound"] == pytest.approx(0.30 / 0.95)
    levels = {m.timeline_name: m.level for m in j.matches}
    assert levels == {GEMM_NSYS: "signature", ADD_NSYS: "signature", XMMA_NSYS: "family"}
    assert [u[0] for u in j.unmatched] == ["void other_kernel<1>(int)"]
    assert set(j.unmatched_ncu) == {"tiny_kernel", "void reduce_kernel<512>(float *, int)"}
    # Tensor Cores from counters: only the xmma kernel (50 µs of 1 ms)
    assert j.tensor_core_share_by_time == pytest.approx(0.05)
    assert j.tensor_core_share_of_matched == pytest.approx(0.05 / 0.95)
    assert j.tensor_core_evidence.startswith("sm__ops_path_tensor_")
    assert j.confidence == "high"


def test_join_json_shape_and_text(demo_roofline):
    k = timeline([(GEMM_NSYS, 600 * US), (ADD_NSYS, 300 * US), ("mystery", 100 * US)])
    j = join_roofline_to_timeline(demo_roofline, k).to_json()
    json.dumps(j, allow_nan=False)
    assert j["available"] is True and j["time_basis"] == "timeline"
    assert {"gpu", "peaks", "kernels", "time_weighted", "matched_share", "unmatched",
            "tensor_core_share_by_time", "confidence", "time_weighted_ncu"} <= set(j)
    assert j["unmatched"] == [{"name": "mystery", "time_ns": 100 * US, "share": pytest.approx(0.1)}]
    first = j["kernels"][0]
    assert first["name"].startswith("void gemm_kernel") and first["timeline_time_ns"] == 600 * US
    assert first["timeline_share"] == pytest.approx(0.6)
    not_in_timeline = [x for x in j["kernels"] if x["name"] == "tiny_kernel"][0]
    assert not_in_timeline["timeline_time_ns"] is None


def test_family_match_splits_time_by_ncu_time(tmp_path):
    ks = [SynthKernel("ampere_sgemm_128x128_tn", duration_ns=30_000, sm_pct=90, mem_pct=20),
          SynthKernel("ampere_sgemm_32x32_sliced1x4_tn", duration_ns=10_000, sm_pct=5, mem_pct=5)]
    r = roofline_of(write_ncu_csv(tmp_path / "k.csv", ks))
    j = join_roofline_to_timeline(r, timeline([("ampere_sgemm_64x64_nn", 100 * US)]))
    assert j.matches[0].level == "family"
    assert set(j.matches[0].ncu_names) == {k.name for k in ks}
    assert j.time_weighted["compute_bound"] == pytest.approx(0.75)
    assert j.time_weighted["latency_bound"] == pytest.approx(0.25)
    assert j.confidence == "medium"  # full coverage, but only at family level


def test_exact_match_preferred_over_family(tmp_path):
    ks = [SynthKernel("ampere_sgemm_128x128_tn", sm_pct=90, mem_pct=20),
          SynthKernel("ampere_sgemm_32x32_sliced1x4_tn", sm_pct=5, mem_pct=5)]
    r = roofline_of(write_ncu_csv(tmp_path / "k.csv", ks))
    j = join_roofline_to_timeline(r, timeline([("ampere_sgemm_32x32_sliced1x4_tn", 100 * US)]))
    assert j.matches[0].level == "signature"
    assert j.matches[0].ncu_names == ("ampere_sgemm_32x32_sliced1x4_tn",)
    assert j.time_weighted["latency_bound"] == pytest.approx(1.0)


def test_short_name_fallback_and_mangled_names(tmp_path):
    ks = [SynthKernel("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_10AddFunctorIfEEEEviT0_",
                      sm_pct=10, mem_pct=95)]
    r = roofline_of(write_ncu_csv(tmp_path / "k.csv", ks))
    k = timeline([("<name not demangled>", 10 * US)],
                 short={"<name not demangled>": "vectorized_elementwise_kernel"})
    j = join_roofline_to_timeline(r, k)
    assert j.matched_share == 1.0 and j.matches[0].level == "base"
    assert j.time_weighted["memory_bound"] == pytest.approx(1.0)


def test_real_a100_file_joined_to_nsys_spellings(shared):
    b = load_trace(shared("ncu/interp_a100_details.csv"))
    r = analyze_roofline(b.ncu_launches, b.ncu_metrics, b.gpus)
    nsys_split_k = ("void splitKreduce_kernel<float, float, float, float>(cublasSplitKParams<float>, "
                    "const float *, const float *, float *, const float *, const float *, const float *)")
    k = timeline([("ampere_sgemm_32x32_sliced1x4_tn", 8 * US), (nsys_split_k, 4 * US)])
    j = join_roofline_to_timeline(r, k)
    assert j.matched_share == 1.0 and not j.unmatched and not j.unmatched_ncu
    assert j.time_weighted["latency_bound"] == pytest.approx(1.0)
    assert j.tensor_core_share_by_time == 0.0  # counters present and all zero


def test_low_coverage_is_low_confidence(demo_roofline):
    k = timeline([(GEMM_NSYS, 10 * US), ("unprofiled_a", 500 * US), ("unprofiled_b", 490 * US)])
    j = join_roofline_to_timeline(demo_roofline, k)
    assert j.matched_share == pytest.approx(0.01)
    assert j.confidence == "low"
    assert [u[0] for u in j.unmatched] == ["unprofiled_a", "unprofiled_b"]


def test_no_tensor_metrics_gives_no_tensor_share(tmp_path):
    r = roofline_of(write_ncu_csv(tmp_path / "k.csv", [SynthKernel("k", tensor_pipe_inst=None)]))
    j = join_roofline_to_timeline(r, timeline([("k", 10 * US)]))
    assert j.tensor_core_share_by_time is None and j.tensor_core_evidence is None


def test_unavailable_and_empty_inputs(demo_roofline):
    u = Unavailable("roofline unavailable: need x", "ncu ...")
    assert join_roofline_to_timeline(u, timeline([("k", 1)])) is u
    empty = join_roofline_to_timeline(demo_roofline, C.KERNELS.empty())
    assert isinstance(empty, Unavailable)


def test_family_fallback_refused_beyond_10x_per_launch(shared):
    """Issue 16: ncu's 7.5 µs sgemm_32x32 is not the timeline's sgemm_64x64 at 24 ms a launch."""
    b = load_trace(shared("ncu/interp_a100_details.csv"))
    r = analyze_roofline(b.ncu_launches, b.ncu_metrics, b.gpus)
    j = join_roofline_to_timeline(r, timeline([("ampere_sgemm_64x64_nn", 24_000 * US)] * 11))
    assert j.matches == () and j.matched_share == 0.0 and j.refused_pairings == 1
    assert "refused" in j.to_json()["notes"][-1]
    # within 10x the same family pairing is kept, labelled and with its ratio
    j = join_roofline_to_timeline(r, timeline([("ampere_sgemm_64x64_nn", 30 * US)] * 4))
    (m,) = j.matches
    assert m.level == "family" and m.launches == 4 and m.ncu_launches == 1
    ncu_ns = next(k.time_ns for k in r.kernels if k.name == "ampere_sgemm_32x32_sliced1x4_tn")
    assert m.duration_ratio == pytest.approx(ncu_ns / (30 * US))
    js = j.to_json()["matches"][0]
    assert js["duration_ratio"] == pytest.approx(m.duration_ratio) and js["launches"] == 4


def test_exact_name_with_other_launch_config_is_a_fallback(demo_roofline):
    """The exact name with another launch config on both sides (grid/block of the timeline frame,
    blocks x threads) is not a ``signature`` match: it is a ``base`` fallback, subject to the
    duration check; without the timeline's grid/block (-1: not loaded) only the name decides."""
    def tl(dur, grid=1024, block=256):
        return timeline([(GEMM_NSYS, dur)], grid=grid, block=block)

    same = join_roofline_to_timeline(demo_roofline, tl(100 * US)).matches[0]
    assert (same.level, same.launch_config, same.timeline_launch_config) == ("signature", "same",
                                                                             "1024x256")
    other = join_roofline_to_timeline(demo_roofline, tl(100 * US, grid=7)).matches[0]
    assert (other.level, other.launch_config) == ("base", "different")
    assert other.duration_ratio == pytest.approx(1.0)
    js = join_roofline_to_timeline(demo_roofline, tl(100 * US, grid=7)).to_json()["matches"][0]
    assert js["launch_config"] == "different" and js["timeline_launch_config"] == "7x256"
    far = join_roofline_to_timeline(demo_roofline, tl(5_000 * US, grid=7))
    assert far.matches == () and far.refused_pairings >= 1
    # an exact name is kept whatever its duration when the configs agree or one side lacks them
    exact = join_roofline_to_timeline(demo_roofline, tl(5_000 * US))
    assert exact.matches[0].level == "signature"
    assert exact.matches[0].duration_ratio == pytest.approx(0.02)
    unknown = join_roofline_to_timeline(demo_roofline, tl(5_000 * US, grid=-1, block=-1)).matches[0]
    assert (unknown.level, unknown.launch_config) == ("signature", "unknown")
    assert unknown.timeline_launch_config == "" and unknown.to_json()["timeline_launch_config"] is None


def test_one_name_two_launch_configs_of_very_different_durations(tmp_path):
    """ncu profiled the 1024-block launches (100 µs); the timeline also runs the same kernel with
    64 blocks for 2 µs a launch: those are refused (50x shorter), not weighted as the big GEMM."""
    big = SynthKernel(GEMM_NSYS, launches=2, duration_ns=100_000, sm_pct=85, mem_pct=30)
    r = roofline_of(write_ncu_csv(tmp_path / "k.csv", [big]))
    k = pd.concat([timeline([(GEMM_NSYS, 100 * US)] * 3),
                   timeline([(GEMM_NSYS, 2 * US)] * 50, grid=64)], ignore_index=True)
    j = join_roofline_to_timeline(r, C.KERNELS.validate(k))
    (m,) = j.matches
    assert (m.level, m.launch_config, m.launches) == ("signature", "same", 3)
    assert m.timeline_launch_config == "1024x256" and m.duration_ratio == pytest.approx(1.0)
    assert j.unmatched == ((GEMM_NSYS, 100 * US, pytest.approx(100 / 400)),)
    assert j.refused_pairings == 1 and j.matched_share == pytest.approx(300 / 400)
    assert j.time_weighted["compute_bound"] == pytest.approx(0.75)


def test_each_launch_config_is_weighted_with_its_own_ncu_launches(tmp_path):
    """ncu profiled both configs of one name (compute-bound big grid, latency-bound small grid):
    each timeline config takes the bound class and duration of its own ncu launches."""
    ks = [SynthKernel(GEMM_NSYS, launches=2, duration_ns=100_000, sm_pct=85, mem_pct=30),
          SynthKernel(GEMM_NSYS, launches=3, duration_ns=2_000, sm_pct=20, mem_pct=10,
                      grid=(64, 1, 1))]
    r = roofline_of(write_ncu_csv(tmp_path / "k.csv", ks))
    k = pd.concat([timeline([(GEMM_NSYS, 100 * US)] * 2),
                   timeline([(GEMM_NSYS, 2 * US)] * 100, grid=64)], ignore_index=True)
    j = join_roofline_to_timeline(r, C.KERNELS.validate(k))
    by_cfg = {m.timeline_launch_config: m for m in j.matches}
    assert set(by_cfg) == {"1024x256", "64x256"}
    assert all(m.level == "signature" and m.launch_config == "same" for m in j.matches)
    assert by_cfg["1024x256"].bound == "compute" and by_cfg["64x256"].bound == "latency"
    assert by_cfg["64x256"].duration_ratio == pytest.approx(1.0)
    assert (by_cfg["1024x256"].ncu_launches, by_cfg["64x256"].ncu_launches) == (2, 3)
    assert j.time_weighted["compute_bound"] == pytest.approx(0.5)
    assert j.time_weighted["latency_bound"] == pytest.approx(0.5)


def test_ncu_grid_text_with_thousands_separators():
    from nsys_diag.analyses.roofline.ncu_join import _config_key

    got = _config_key(pd.Series(["(1024, 1, 1)", "1,024", "1.024", "", "(2, 3, 4)"]),
                      pd.Series(["(256, 1, 1)", "256", "256", "256", "32"]))
    assert list(got) == ["1024x256", "1024x256", "1024x256", "", "24x32"]
