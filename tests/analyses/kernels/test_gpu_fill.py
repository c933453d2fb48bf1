"""GPU fill from the launch shape (analyses/kernels/gpu_fill.py) and the per-SM limits table."""
from __future__ import annotations

import pandas as pd
import pytest

from nsys_diag.analyses.base import is_available
from nsys_diag.analyses.kernels.gpu_fill import analyze_gpu_fill, blocks_per_sm
from nsys_diag.analyses.kernels.sm_limits import SmLimits, from_export, limits_for

import numpy as np


def shapes(*rows: dict) -> pd.DataFrame:
    """Launch-shape rows; each dict gives name, duration_ns, grid and block (x only unless said)."""
    base = {"weight": 1.0, "grid_y": 1, "grid_z": 1, "block_y": 1, "block_z": 1,
            "registers_per_thread": 32, "smem_static_bytes": 0, "smem_dynamic_bytes": 0}
    return pd.DataFrame([{**base, **r} for r in rows])


T4 = limits_for(7, 5)
RTX3090 = limits_for(8, 6)
H100 = limits_for(9, 0)


def test_table_rows_for_pascal_volta_turing_and_nearest_minor():
    assert limits_for(6, 1).max_threads == 2048 and limits_for(7, 0).max_blocks == 32
    assert T4.max_threads == 1024 and T4.max_blocks == 16
    assert limits_for(9, 5) == H100  # nearest lower minor of the same major
    assert limits_for(5, 2) is None


def test_export_values_win_and_are_completed_from_the_table():
    lim = from_export(1536, 0, -1, 0, fallback=T4)
    assert (lim.max_threads, lim.max_blocks, lim.registers) == (1536, 16, 65536)
    assert lim.source.startswith("export")
    assert from_export(0, 0, 0, 0, fallback=T4).source == "spec table"
    assert from_export(0, 0, 0, 0, fallback=None) is None


def test_small_grid_of_warp_sized_blocks_on_a_t4_fills_three_percent():
    """The sparse solver of the issue: 40 blocks x 32 threads on 40 SMs."""
    r = analyze_gpu_fill(shapes({"name": "spmv", "duration_ns": 1000, "grid_x": 40, "block_x": 32}),
                         sm_count=40, limits=T4)
    k = r.kernels[0]
    assert k.fill == pytest.approx(40 * 32 / (40 * 1024))
    assert k.underfilled and r.underfilled_share == 1.0 and r.tiny_block_share == 1.0
    assert k.limited_by == "grid"


def test_a_million_blocks_of_16_threads_is_limited_by_blocks_per_sm():
    """The Gaussian elimination of the issue on an RTX 3090 (82 SMs)."""
    r = analyze_gpu_fill(shapes({"name": "fan2", "duration_ns": 5000, "grid_x": 1 << 20,
                                 "block_x": 16}), sm_count=82, limits=RTX3090)
    k = r.kernels[0]
    assert k.blocks_per_sm == 16 and k.limited_by == "blocks_per_sm"
    assert k.fill == pytest.approx(16 * 16 / 1536)
    assert k.underfilled and r.small_grid_share == 0.0


def test_register_limited_gemm_is_not_called_under_filled():
    """A Hopper GEMM at one 384-thread block per SM (168 registers, 200 KiB shared memory)."""
    r = analyze_gpu_fill(shapes({"name": "sm90_gemm", "duration_ns": 10_000, "grid_x": 132,
                                 "block_x": 384, "registers_per_thread": 168,
                                 "smem_dynamic_bytes": 200 * 1024}), sm_count=132, limits=H100)
    k = r.kernels[0]
    assert k.blocks_per_sm == 1 and k.limited_by == "registers"
    assert k.fill == pytest.approx(384 / 2048)
    assert not k.underfilled and r.underfilled_share == 0.0


def test_shares_are_of_kernel_time_weighted_by_launches_represented():
    r = analyze_gpu_fill(shapes(
        {"name": "tiny", "duration_ns": 100, "grid_x": 8, "block_x": 32, "weight": 30.0},
        {"name": "big", "duration_ns": 1000, "grid_x": 10_000, "block_x": 256}),
        sm_count=80, limits=limits_for(7, 0))
    assert r.underfilled_share == pytest.approx(3000 / 4000)
    assert [k.name for k in r.kernels] == ["tiny", "big"]
    assert r.kernels[0].launches == 30 and r.launches == 31 and r.sampled_launches == 2
    assert r.kernels[1].fill == 1.0 and not r.kernels[1].underfilled
    j = r.to_json()
    assert j["available"] and j["kernels"][0]["time_share"] == pytest.approx(0.75)
    assert "2 sampled launches standing for 31" in j["basis"]


def test_unavailable_without_configuration_or_sm_count():
    no_cfg = shapes({"name": "k", "duration_ns": 1, "grid_x": -1, "block_x": -1})
    assert not is_available(analyze_gpu_fill(no_cfg, sm_count=80, limits=H100))
    assert not is_available(analyze_gpu_fill(no_cfg.iloc[:0], sm_count=80, limits=H100))
    ok = shapes({"name": "k", "duration_ns": 1, "grid_x": 4, "block_x": 64})
    r = analyze_gpu_fill(ok, sm_count=-1, limits=H100)
    assert not is_available(r) and "--gpu" in r.hint


def test_blocks_per_sm_register_granularity():
    """255 registers x 256 threads: 8 warps x 8,192 registers = 65,536 → one block per SM."""
    per_sm, _ = blocks_per_sm(np.array([256]), np.array([255]), np.array([0]),
                              SmLimits(2048, 32, 65536, 96 * 1024))
    assert per_sm.tolist() == [1]


# ------------------------------------------------------------- SM count without TARGET_INFO_GPU
def _gpus(name: str = "", sm_count: int = -1, cc: tuple[int, int] = (-1, -1)) -> pd.DataFrame:
    from nsys_diag.model import contracts as C

    return C.GPUS.validate(pd.DataFrame({
        "device_id": [0], "name": [name], "chip_name": [""], "sm_count": [sm_count],
        "clock_hz": [-1], "memory_bandwidth_bytes_per_s": [float("nan")],
        "total_memory_bytes": [-1], "cc_major": [cc[0]], "cc_minor": [cc[1]],
        "bus_location": [""]}))


def _no_limits() -> pd.DataFrame:
    from nsys_diag.model import contracts as C

    return C.SM_LIMITS.empty()


def test_the_gpu_name_gives_the_sm_count_from_the_spec_table():
    from nsys_diag.analyses.kernels.gpu_fill import device_limits

    n, lim, source = device_limits(_gpus("NVIDIA H100 80GB HBM3"), _no_limits(), 0)
    assert n == 132 and lim == H100 and source.startswith("spec table")
    assert device_limits(_gpus(""), _no_limits(), 0)[:2] == (0, None)


def test_cluster_launches_bound_the_sm_count_from_below():
    """An H100 GEMM launched in clusters of 2 blocks, one block per SM (213 KB of shared memory):
    CUPTI says 66 such clusters fit at once, so the GPU has at least 132 SMs."""
    from nsys_diag.analyses.kernels.gpu_fill import device_limits, sm_count_from_clusters

    rows = shapes({"name": "nvjet_tst_192x192", "duration_ns": 10_000, "grid_x": 2,
                   "grid_y": 66, "block_x": 384, "registers_per_thread": 168,
                   "smem_dynamic_bytes": 213_196, "cluster_x": 2, "cluster_y": 1, "cluster_z": 1,
                   "max_active_clusters": 66},
                  {"name": "elementwise", "duration_ns": 1000, "grid_x": 4096, "block_x": 128,
                   "cluster_x": 0, "cluster_y": 0, "cluster_z": 0, "max_active_clusters": 0})
    assert sm_count_from_clusters(rows, H100) == 132
    n, lim, source = device_limits(_gpus(), _no_limits(), 0, rows)
    assert (n, lim) == (132, H100) and "lower bound" in source
    no_clusters = rows.iloc[[1]]
    assert device_limits(_gpus(), _no_limits(), 0, no_clusters)[:2] == (0, None)


def test_fastvideo_without_target_info_gpu_gets_its_gpu_fill():
    """The shared H100 export has no TARGET_INFO_GPU and no GPU name: its cluster launches give
    the SM count (132, an H100 SXM), so gpu_fill is computed, and says where the count came from."""
    from conftest import shared_trace

    from nsys_diag.analyses.kernels.gpu_fill import process_gpu_fill
    from nsys_diag.loaders import load_trace

    b = load_trace(str(shared_trace("nsys/fastvideo_train_2xh100_2026.2.sqlite")))
    assert (b.gpus["sm_count"] <= 0).all()
    r = process_gpu_fill(b.launch_shapes, b.gpus, b.sm_limits, -1, (0,))
    assert is_available(r) and r.sm_count == 132
    assert "maxActiveClusters" in r.basis
