"""GPU fill from the launch shape: how much of the GPU's resident threads each launch can occupy.

A GPU can be busy in time and still idle in space: a kernel launched as 40 blocks of 32 threads
on a 40-SM T4 keeps every SM "active" while it holds 32 of the 1,024 threads an SM can run.
Launch configurations (grid, block, registers per thread, shared memory per block) are in every
nsys export's kernel table; this module turns a sample of them into the ``gpu_fill`` section.

Per launch (the occupancy calculator's arithmetic, ``sm_limits`` for the per-SM limits):

* ``threads`` = blockX·blockY·blockZ, ``blocks`` = gridX·gridY·gridZ;
* blocks one SM can hold = min(max blocks per SM, ⌊max threads per SM ÷ threads⌋,
  ⌊registers per SM ÷ registers per block⌋, ⌊shared memory per SM ÷ shared memory per block⌋),
  registers allocated per warp in units of 256, at least one block;
* ``fill`` = min(blocks, blocks per SM × SMs) × threads ÷ (SMs × max threads per SM) — the share of
  the GPU's resident threads the launch occupies (0..1), limited by the grid when it is small.

``limited_by`` names what bounds the fill: ``grid`` (too few blocks), ``blocks_per_sm`` (the
per-SM block limit: small blocks), ``threads``, ``registers`` or ``shared_memory``.

A launch is **under-filled** when its grid has fewer blocks than the GPU has SMs (some SMs get
nothing), when its blocks have fewer than 64 threads (two warps: too few to hide latency,
whatever the grid), or when ``fill`` < 0.25 and the shape itself is the limit (a grid smaller
than the GPU, or small blocks at the per-SM block limit). A launch whose residency is limited by
registers or shared memory, or whose grid gives every SM at least one block of ≥ 64 threads
(a persistent, one-block-per-SM kernel), is not called under-filled by its shape: GEMM and
attention kernels trade occupancy for registers, shared memory and tiles by design, and only
ncu's achieved occupancy can judge them.
These are heuristics on the launch shape; ncu's occupancy, when joined, measures what the shape
only bounds. Shares are of kernel time, each sampled launch weighted by its duration and by how
many launches it stands for.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from nsys_diag.analyses.base import Unavailable
from nsys_diag.analyses.kernels.sm_limits import (EXPORT_LIMITS_SOURCE, REGISTER_UNIT, WARP_SIZE,
                                                  SmLimits, from_export, limits_for,
                                                  limits_source)
from nsys_diag.model.vocabulary import (FILL_NCU_ONLY, FILL_NO_KERNELS, HINT_FILL_NCU,
                                        HINT_FILL_NO_SHAPE)

UNDERFILLED_FILL = 0.25
"""A launch occupying less than a quarter of the GPU's resident threads is under-filled."""
MIN_THREADS_PER_BLOCK = 64
"""Blocks of fewer threads (two warps) are too small to hide memory latency on any SM."""
MAX_KERNEL_ROWS = 20
"""Kernel names listed in ``gpu_fill.kernels`` (by time share)."""
HINT_NO_SHAPE = HINT_FILL_NO_SHAPE
NO_SHAPE = "no kernel launch configuration in this export"
SHAPE_COLUMNS = ("name", "duration_ns", "weight", "grid_x", "grid_y", "grid_z", "block_x",
                 "block_y", "block_z", "registers_per_thread", "smem_static_bytes",
                 "smem_dynamic_bytes")
"""Columns of the launch-shape sample ``analyze_gpu_fill`` reads (``weight``: launches one
sampled row stands for)."""


@dataclass(frozen=True)
class KernelFill:
    """One kernel name: its most time-consuming launch shape and its time-weighted fill."""

    name: str
    launches: int
    blocks: int
    threads_per_block: int
    regs_per_thread: int
    smem_bytes: int
    blocks_per_sm: int
    fill: float
    limited_by: str
    time_share: float
    underfilled: bool

    def to_json(self) -> dict:
        return {"name": self.name, "launches": self.launches, "blocks": self.blocks,
                "threads_per_block": self.threads_per_block,
                "regs_per_thread": self.regs_per_thread, "smem_bytes": self.smem_bytes,
                "blocks_per_sm": self.blocks_per_sm, "fill": self.fill,
                "limited_by": self.limited_by, "time_share": self.time_share, "underfilled": self.underfilled}


@dataclass(frozen=True)
class GpuFillResult:
    """``gpu_fill``: per kernel name, and the share of kernel time in under-filled launches."""

    kernels: tuple[KernelFill, ...]
    underfilled_share: float
    tiny_block_share: float
    small_grid_share: float
    sm_count: int
    limits: SmLimits
    sampled_launches: int
    launches: int
    basis: str

    available = True  # the one check, ``base.is_available``

    def to_json(self) -> dict:
        lim = self.limits
        return {"available": True, "kernels": [k.to_json() for k in self.kernels],
                "underfilled_share": self.underfilled_share,
                "tiny_block_share": self.tiny_block_share,
                "small_grid_share": self.small_grid_share, "sm_count": self.sm_count,
                "limits": {"max_threads_per_sm": lim.max_threads, "max_blocks_per_sm": lim.max_blocks,
                           "registers_per_sm": lim.registers, "smem_per_sm_bytes": lim.smem_bytes,
                           "source": lim.source},
                "sampled_launches": self.sampled_launches, "launches": self.launches,
                "basis": self.basis}


RESIDENCY_LIMITS = ("blocks_per_sm", "threads", "registers", "shared_memory")
"""What can bound the blocks one SM holds, in the order ``blocks_per_sm`` reports ties."""


def blocks_per_sm(threads: np.ndarray, regs: np.ndarray, smem: np.ndarray,
                  limits: SmLimits) -> tuple[np.ndarray, np.ndarray]:
    """(blocks of each launch one SM can hold at once (int64, ≥ 1), the index in
    ``RESIDENCY_LIMITS`` of the limit that binds); see the module docstring."""
    threads = np.maximum(threads, 1)
    warps = -(-threads // WARP_SIZE)
    regs_per_warp = -(-np.maximum(regs, 0) * WARP_SIZE // REGISTER_UNIT) * REGISTER_UNIT
    regs_per_block = regs_per_warp * warps
    smem_per_block = np.maximum(smem, 0) + limits.reserved_smem_per_block
    big = np.iinfo(np.int64).max
    by_regs = np.where(regs_per_block > 0, limits.registers // np.maximum(regs_per_block, 1), big)
    by_smem = np.where(smem_per_block > 0, limits.smem_bytes // np.maximum(smem_per_block, 1), big)
    candidates = np.stack([np.full(len(threads), limits.max_blocks, np.int64),
                           limits.max_threads // threads, by_regs, by_smem])
    binding = np.argmin(candidates, axis=0)
    return np.maximum(candidates.min(axis=0), 1).astype(np.int64), binding


def _shape_arrays(shapes: pd.DataFrame) -> dict[str, np.ndarray]:
    def col(name: str) -> np.ndarray:
        return shapes[name].to_numpy(np.int64)

    known = (col("grid_x") > 0) & (col("block_x") > 0)
    one = np.ones(len(shapes), np.int64)
    grid = col("grid_x") * np.maximum(col("grid_y"), one) * np.maximum(col("grid_z"), one)
    block = col("block_x") * np.maximum(col("block_y"), one) * np.maximum(col("block_z"), one)
    smem = np.maximum(col("smem_static_bytes"), 0) + np.maximum(col("smem_dynamic_bytes"), 0)
    time = shapes["duration_ns"].to_numpy(np.float64) * shapes["weight"].to_numpy(np.float64)
    return {"known": known, "blocks": grid, "threads": block,
            "regs": np.maximum(col("registers_per_thread"), 0), "smem": smem,
            "time": np.maximum(time, 0.0), "weight": shapes["weight"].to_numpy(np.float64)}


def analyze_gpu_fill(shapes: pd.DataFrame, *, sm_count: int, limits: SmLimits | None,
                     basis_note: str = "") -> GpuFillResult | Unavailable:
    """``gpu_fill`` of a launch-shape sample (``SHAPE_COLUMNS``) on a GPU of ``sm_count`` SMs.

    Unavailable when the sample holds no launch configuration, or the GPU's SM count or
    per-SM limits are unknown (name the GPU with ``--gpu``)."""
    if shapes is None or not len(shapes):
        return Unavailable(NO_SHAPE, HINT_NO_SHAPE)
    a = _shape_arrays(shapes)
    if not a["known"].any():
        return Unavailable("the kernel table holds no launch configuration (grid/block)",
                           HINT_NO_SHAPE)
    if sm_count <= 0 or limits is None:
        return Unavailable("the GPU's SM count or per-SM limits are unknown",
                           "name the GPU with --gpu (e.g. --gpu H100)")
    keep = a["known"]
    a = {k: v[keep] for k, v in a.items()}
    names = shapes["name"].astype(str).to_numpy()[keep]
    per_sm, binding = blocks_per_sm(a["threads"], a["regs"], a["smem"], limits)
    grid_bound = a["blocks"] < per_sm * sm_count
    resident = np.minimum(a["blocks"], per_sm * sm_count) * a["threads"]
    fill = np.minimum(resident / float(sm_count * limits.max_threads), 1.0)
    limited_by = np.where(grid_bound, "grid", np.asarray(RESIDENCY_LIMITS, dtype=object)[binding])
    small_grid = a["blocks"] < sm_count
    # the shape is the limit: a grid smaller than the GPU, or small blocks at the block limit
    shape_bound = (grid_bound & small_grid) | (~grid_bound & (binding == 0))
    tiny = a["threads"] < MIN_THREADS_PER_BLOCK
    under = ((fill < UNDERFILLED_FILL) & shape_bound) | tiny | small_grid
    total = float(a["time"].sum())

    def share(mask: np.ndarray) -> float:
        return float(a["time"][mask].sum() / total) if total > 0 else 0.0

    rows = _kernel_rows(names, a, per_sm, fill, under, limited_by, total)
    launches = int(round(float(a["weight"].sum())))
    basis = (f"launch configuration of {int(keep.sum()):,} sampled launches standing for "
             f"{launches:,}; {sm_count} SMs, per-SM limits from the {limits.source}"
             + (f"; {basis_note}" if basis_note else ""))
    return GpuFillResult(kernels=rows, underfilled_share=share(under), tiny_block_share=share(tiny),
                         small_grid_share=share(small_grid), sm_count=int(sm_count), limits=limits,
                         sampled_launches=int(keep.sum()), launches=launches, basis=basis)


def _kernel_rows(names: np.ndarray, a: dict[str, np.ndarray], per_sm: np.ndarray,
                 fill: np.ndarray, under: np.ndarray, limited_by: np.ndarray, total: float
                 ) -> tuple[KernelFill, ...]:
    """Per kernel name (top ``MAX_KERNEL_ROWS`` by time): the shape of its most time-consuming
    sampled launch and its time-weighted mean fill."""
    frame = pd.DataFrame({"name": names, "time": a["time"], "weight": a["weight"],
                          "fill_time": fill * a["time"], "under_time": under * a["time"]})
    by_name = frame.groupby("name", sort=False).agg(
        time=("time", "sum"), weight=("weight", "sum"), fill_time=("fill_time", "sum"),
        under_time=("under_time", "sum")).sort_values("time", ascending=False, kind="stable")
    dominant = frame.assign(i=np.arange(len(frame))).sort_values(
        "time", ascending=False, kind="stable").drop_duplicates("name").set_index("name")["i"]
    out = []
    for name, r in by_name.head(MAX_KERNEL_ROWS).iterrows():  # ≤ 20 names
        i = int(dominant[name])
        t = float(r["time"])
        out.append(KernelFill(
            name=str(name), launches=int(round(float(r["weight"]))), blocks=int(a["blocks"][i]),
            threads_per_block=int(a["threads"][i]), regs_per_thread=int(a["regs"][i]),
            smem_bytes=int(a["smem"][i]), blocks_per_sm=int(per_sm[i]),
            fill=float(r["fill_time"] / t) if t > 0 else float(fill[i]),
            limited_by=str(limited_by[i]),
            time_share=t / total if total > 0 else 0.0,
            underfilled=bool(r["under_time"] * 2 > t) if t > 0 else bool(under[i])))
    return tuple(out)


CLUSTER_CC = (9, 0)
"""Thread-block clusters exist from compute capability 9.0 (Hopper) on; 9.0 and 10.0 share the
per-SM limits of the table, so a launch with a cluster gives the limits of 9.0."""


def _gpu_row(gpus: pd.DataFrame, device: int) -> tuple[int, tuple[int, int], str]:
    """(SM count, compute capability, name) of ``device`` in the ``GPUS`` frame (-1, (-1, -1),
    '' where the export does not say)."""
    g = gpus.loc[gpus["device_id"].to_numpy() == device] if len(gpus) else gpus
    if not len(g):
        return -1, (-1, -1), ""
    return (int(g["sm_count"].iloc[0]), (int(g["cc_major"].iloc[0]), int(g["cc_minor"].iloc[0])),
            str(g["name"].iloc[0] or ""))


def sm_count_from_clusters(shapes: pd.DataFrame, limits: SmLimits) -> int:
    """A lower bound of the SM count from launches with thread-block clusters: CUPTI's
    ``maxActiveClusters`` × the cluster's blocks is how many of the launch's blocks the whole GPU
    holds at once, so the GPU has at least that ÷ blocks one SM holds (``blocks_per_sm``) SMs;
    the largest bound over the sampled launches (0: no such launch)."""
    need = ("cluster_x", "max_active_clusters")
    if shapes is None or not len(shapes) or any(c not in shapes.columns for c in need):
        return 0
    cx = shapes["cluster_x"].to_numpy(np.int64)
    cy = np.maximum(shapes["cluster_y"].to_numpy(np.int64), 1)
    cz = np.maximum(shapes["cluster_z"].to_numpy(np.int64), 1)
    active = shapes["max_active_clusters"].to_numpy(np.int64)
    ok = (cx > 0) & (active > 0)
    if not ok.any():
        return 0
    a = _shape_arrays(shapes.loc[ok])
    per_sm, _ = blocks_per_sm(a["threads"], a["regs"], a["smem"], limits)
    resident = active[ok] * cx[ok] * cy[ok] * cz[ok]
    return int((-(-resident // per_sm)).max())


def device_limits(gpus: pd.DataFrame, sm_limits: pd.DataFrame, device: int,
                  shapes: pd.DataFrame | None = None, limits_label: str = EXPORT_LIMITS_SOURCE
                  ) -> tuple[int, SmLimits | None, str]:
    """(SM count, per-SM limits, where the SM count comes from) of ``device``: the input's own
    values where present (``limits_label``: an nsys export's ``TARGET_INFO_GPU``, a Kineto
    trace's ``deviceProperties``), completed from the compute capability's row of the
    spec table; without an SM count, the GPU's name in the spec table (``gpu_specs``); without a
    name either, a lower bound from the launches with thread-block clusters
    (``sm_count_from_clusters``, limits of compute capability 9.0). (0, None, ''): unknown."""
    sm_count, cc, name = _gpu_row(gpus, device)
    source = "export" if sm_count > 0 else ""
    if sm_count <= 0 and name:
        from nsys_diag.analyses.roofline.gpu_specs import lookup_gpu  # the spec table

        spec = lookup_gpu(name)
        if spec is not None:
            sm_count, source = spec.sm_count, f"spec table ({spec.display})"
            cc = cc if cc[0] >= 0 else spec.cc
    fallback = limits_for(*cc) if cc[0] >= 0 else None
    lim = sm_limits.loc[sm_limits["device_id"].to_numpy() == device] if len(sm_limits) else sm_limits
    if len(lim):
        r = lim.iloc[0]
        limits = from_export(int(r["max_threads_per_sm"]), int(r["max_blocks_per_sm"]),
                             int(r["registers_per_sm"]), int(r["smem_per_sm_bytes"]), fallback,
                             limits_label)
    else:
        limits = fallback
    if sm_count <= 0 and shapes is not None:
        cluster_limits = limits or limits_for(*CLUSTER_CC)
        inferred = sm_count_from_clusters(shapes, cluster_limits) if cluster_limits else 0
        if inferred > 0:
            sm_count, limits = inferred, cluster_limits
            source = ("inferred from thread-block-cluster launches (CUPTI maxActiveClusters; "
                      "compute capability ≥ 9.0; a lower bound)")
    return max(sm_count, 0), limits, source


KERNEL_TABLE = "CUPTI_ACTIVITY_KIND_KERNEL"


def has_kernel_rows(bundle) -> bool:
    """Whether the capture holds kernel rows: not an nsys export whose kernel table is absent or
    empty (``meta.extra["launch_calls_without_kernels"]`` is counted exactly then, by the
    in-memory load and the streamed skeleton alike), and kernel rows loaded (a streamed summary:
    a sample of them) or counted in the file (a read window may hold none)."""
    if bundle.meta.extra.get("launch_calls_without_kernels") is not None:
        return False
    return bool(len(bundle.kernels)) or bool(bundle.meta.tables.get(KERNEL_TABLE, 0))


def without_shapes(trace_format: str = "", kernel_rows: bool = True) -> Unavailable:
    """``gpu_fill`` of an input without a launch-shape sample, with the reason and hint that fit
    it: an ncu CSV read alone (ncu's launch statistics, or an nsys capture), a capture without
    kernel rows (nothing to judge: no hint), else an export whose kernel table lacks the launch
    configuration columns."""
    if trace_format == "ncu-csv":
        return Unavailable(FILL_NCU_ONLY, HINT_FILL_NCU)
    if not kernel_rows:
        return Unavailable(FILL_NO_KERNELS, "")
    return Unavailable(NO_SHAPE, HINT_NO_SHAPE)


def process_gpu_fill(shapes: pd.DataFrame, gpus: pd.DataFrame, sm_limits: pd.DataFrame,
                     gpid: int, devices: tuple[int, ...], *, trace_format: str = "",
                     kernel_rows: bool = True) -> GpuFillResult | Unavailable:
    """``gpu_fill`` of one process (``gpid`` -1: every launch) from the file's launch-shape
    sample (``contracts.LAUNCH_SHAPES``), on its first GPU's SM count and limits. The sample
    covers the whole capture (not only the analysed window); the basis says so.
    ``trace_format`` (``meta.format``) and ``kernel_rows`` (whether the capture holds kernel
    rows) word the reason when there is no sample (``without_shapes``) and label the per-SM
    limits the input carries (``sm_limits.limits_source``)."""
    if shapes is None or not len(shapes):
        return without_shapes(trace_format, kernel_rows)
    keep = np.ones(len(shapes), bool)
    if gpid != -1:
        keep &= shapes["global_pid"].to_numpy(np.int64) == gpid
    if devices:
        keep &= np.isin(shapes["device_id"].to_numpy(np.int64), devices)
    mine = shapes.loc[keep]
    if not len(mine):
        return Unavailable("no sampled kernel launch of this process", "")
    device = int(devices[0]) if devices else int(mine["device_id"].iloc[0])
    sm_count, limits, sm_source = device_limits(gpus, sm_limits, device, mine,
                                                limits_source(trace_format))
    note = "sample of the whole capture" + (f"; GPU {device} of {len(devices)}"
                                            if len(devices) > 1 else "")
    if sm_source and sm_source != "export":
        note += f"; SM count from the {sm_source}" if sm_source.startswith("spec") \
            else f"; SM count {sm_source}"
    return analyze_gpu_fill(mine, sm_count=sm_count, limits=limits, basis_note=note)
