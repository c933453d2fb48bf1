"""Known facts of the program cases (:mod:`nsys_diag.synth.programs`, defined in
:mod:`nsys_diag.synth.program_cases`): what the rows hold
(computed from the built timeline or the ncu kernels, never typed in), what ran (issue 26's
framework), and what the tool should conclude.

``facts(name)`` keys (times ms as float, shares 0..1):

* ``case``, ``format`` (``nsys`` | ``ncu``), ``description``, ``gpu_name``, ``gpus`` (rows of
  TARGET_INFO_GPU), ``sm_count`` (None where the file does not say: the ncu cases, whose
  ``--metrics`` list holds no device attribute; they state ``compute_capability`` and ``metrics``);
* ``framework`` (``framework_any_of`` the defensible answers where the file cannot tell; one of
  issue 26's ``pytorch``, ``jax``, ``tensorflow``, ``tensorrt``,
  ``openmp_offload``, ``openacc``, ``stdpar``, ``cuda``, ``unknown``), ``libraries``;
* ``kernels``: ``count`` and ``total_ms`` of the kernel rows in the file, ``launch_calls`` (API
  calls that launched a kernel, rows or not), ``by_name`` (demangled name → short, count, total_ms, share,
  blocks, threads_per_block, registers, fill, underfilled; keyed by demangled name), ``underfilled_share``;
* ``copies``: count, total_ms, pageable_ms, and per copy kind (H2D, D2H, uvm_h2d, …) count /
  total_ms / bytes; ``osrt``: per OS-runtime function count / total_ms; ``api_calls``: per CUDA
  API (base name) count; ``nvtx_domains``, ``main_thread``, ``process``;
* ``capture_ms`` (first event to capture end), ``kernel_busy_share`` (kernel interval union /
  capture), ``gpu_busy_share`` (kernels and copies);
* ``expected``: ``verdict`` (what issue 26 says the tool should conclude; ``verdict_any_of`` where
  two are defensible), ``not_verdict``, ``cause``, ``abstain`` (may the tool say "too little GPU
  work"?), ``capture_hint`` (what the capture advice must say, or None), ``advice_variant``,
  ``forbidden_advice_words`` (PyTorch-only words for non-PyTorch programs), ``notes``.

Fill (issue 26, item 2): resident threads of one launch = min(blocks, SMs × blocks per SM) ×
threads per block, blocks per SM limited by the GPU's block, warp and register limits; ``fill`` =
resident / (SMs × max warps per SM × 32). A launch is under-filled when fill < 0.25 and the launch
shape is what limits it (the grid, or small blocks at the blocks-per-SM limit — a kernel held to
few blocks per SM by its registers, like a CUTLASS GEMM at 12.5%, is a design choice, not an
under-filled launch), when the grid has fewer blocks than SMs, or a block has fewer than 64
threads.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from nsys_diag.synth.events import COPY_KIND, MEM_PAGEABLE
from nsys_diag.synth.kernels import KernelInfo
from nsys_diag.synth.program_cases import (NCU_CASES, NCU_METRICS, PYTORCH_ONLY_WORDS,
                                           SCENARIOS, TENSOR_PIPE_METRIC, ncu_kernels)
from nsys_diag.synth.scenarios import MS
from nsys_diag.synth.schema import GpuModel, gpu_model
from nsys_diag.synth.timeline import Timeline, build_timeline, union_intervals

_NEUTRAL = "the advice of the detected framework (issue 26 item 1); no PyTorch-only words"

EXPECTED: dict[str, dict[str, Any]] = {
    "openmp_offload": {
        "framework": "openmp_offload", "libraries": [],
        "verdict": "overhead_bound", "cause": "host",
        "not_verdict": ["compute_bound", "insufficient_data"], "abstain": False,
        "capture_hint": None, "advice_variant": "openmp_offload",
        "notes": "the GPU idles ~94% of the capture in serial host code after each region's "
                 "sync; advice in OpenMP terms (nowait/depend, target data regions, offload the "
                 "host loops), never PyTorch's"},
    "openacc": {
        "framework": "openacc", "libraries": [],
        "verdict": "overhead_bound", "cause": "host",
        "not_verdict": ["compute_bound", "insufficient_data"], "abstain": False,
        "capture_hint": None, "advice_variant": "openacc",
        "notes": "host idles the GPU between compute regions, each waited for; advice in "
                 "OpenACC terms (async/wait queues, data regions)"},
    "cuda_tiny_blocks": {
        "framework": "cuda", "libraries": [],
        "verdict": "latency_bound", "cause": "underfilled_launches",
        "not_verdict": ["compute_bound"], "abstain": False, "capture_hint": None,
        "advice_variant": "cuda",
        "notes": "Fan2 (99.5% of kernel time) launches 1M blocks of 16 threads: at most 16 "
                 "blocks per SM on cc 8.6 → 17% of the resident threads; a tiny-blocks finding"},
    "sparse_solver_t4": {
        "framework": "cuda", "libraries": [],
        "verdict": "latency_bound", "cause": "underfilled_launches",
        "not_verdict": ["compute_bound"], "abstain": False, "capture_hint": None,
        "advice_variant": "cuda",
        "notes": "≥ 50% of kernel time in launches of 40 blocks × 32 threads on 40 SMs while the "
                 "GPU is ≥ 50% time-busy; no 'scales linearly' claim"},
    "cutlass_pageable": {
        "framework": "cuda", "libraries": ["cutlass"],
        "verdict": "input_bound", "cause": "transfer",
        "not_verdict": ["insufficient_data"], "abstain": False, "capture_hint": None,
        "advice_variant": "cuda",
        "notes": "162 ms of GEMMs is diagnosable; the 361 ms of pageable copies dominate: pin "
                 "the host buffers (cudaMallocHost / cudaHostRegister), not pin_memory=True"},
    "host_writes": {
        "framework": "stdpar", "libraries": ["thrust_cub"],
        "verdict": "overhead_bound", "cause": "host_io",
        "not_verdict": ["insufficient_data"], "abstain": False, "capture_hint": None,
        "advice_variant": "neutral",
        "notes": "host I/O ≈ 70 ms (869 pwrite64 of ~80 µs, every call counted, no per-call "
                 "minimum) on the launching thread in the GPU's idle stretches; unified-memory "
                 "migrations (5,511) reported"},
    "launches_no_kernel_rows": {
        "framework": "cuda", "libraries": [],
        "framework_any_of": ["cuda", "unknown"],  # no kernel names: only the API use tells
        "verdict": "insufficient_data", "cause": "kernel_activity_missing",
        "not_verdict": [], "abstain": True,
        "capture_hint": "kernel activity was not recorded (CUPTI buffer/collection failure?) — "
                        "not 'trace CUDA with -t cuda': CUDA was traced",
        "advice_variant": "neutral",
        "notes": "12,870 cudaLaunchKernel calls and no CUPTI_ACTIVITY_KIND_KERNEL table"},
    "cuda_init_no_launch": {
        "framework": "cuda", "libraries": [],
        "framework_any_of": ["cuda", "unknown"],
        "verdict": "insufficient_data", "cause": "no_gpu_work",
        "not_verdict": [], "abstain": True,
        "capture_hint": "CUDA was initialised but nothing was launched (a CPU build?) — not "
                        "'trace CUDA with -t cuda'",
        "advice_variant": "neutral", "notes": "runtime calls only; no kernel, copy or memset"},
    "mpi_saxpy": {
        "framework": "cuda", "libraries": ["mpi"],
        "verdict": "input_bound", "verdict_any_of": ["input_bound", "communication_bound"],
        "cause": "transfer", "not_verdict": ["insufficient_data"], "abstain": False,
        "capture_hint": None, "advice_variant": "cuda",
        "notes": "88.6 ms of kernels, pageable 250 MiB copies and MPI_Send/Recv: not only capture "
                 "advice, never torch.cuda.profiler; a step selection says what it left out"},
    "ncu_raw_no_flops": {
        "framework": "pytorch", "libraries": ["cublas"],
        "verdict": None, "cause": None, "not_verdict": [], "abstain": False,
        "capture_hint": "the ncu command from the vocabulary for the missing FLOP/DRAM counters",
        "advice_variant": "pytorch",
        "notes": "kernels listed with tensor-pipe / SM-throughput evidence, "
                 "tensor_cores.share_of_kernel_time from the tensor pipe, roofline 'not "
                 "available: counters missing'; never 'no CUDA kernels or copies'"},
}
EXPECTED["ncu_raw_no_flops_64"] = dict(EXPECTED["ncu_raw_no_flops"])


def launch_fill(info: KernelInfo, gpu: GpuModel) -> tuple[float, bool, str]:
    """(fill, under-filled, limited by) of one launch of ``info`` on ``gpu`` (see the module
    docstring); ``limited by`` is ``grid``, ``blocks``, ``warps`` or ``registers``."""
    blocks = info.grid[0] * info.grid[1] * info.grid[2]
    tpb = info.block[0] * info.block[1] * info.block[2]
    warps = -(-tpb // 32)
    limits = {"blocks": gpu.max_blocks_per_sm, "warps": gpu.max_warps_per_sm // warps,
              "registers": 65_536 // max(1, info.registers * warps * 32)}
    binding = min(limits, key=lambda k: limits[k])
    per_sm = limits[binding]
    if blocks < gpu.sm_count * per_sm:
        binding = "grid"
    resident = min(blocks, gpu.sm_count * per_sm) * tpb
    fill = resident / (gpu.sm_count * gpu.max_warps_per_sm * 32)
    shape_bound = binding in ("grid", "blocks")
    return fill, bool((fill < 0.25 and shape_bound) or blocks < gpu.sm_count or tpb < 64), binding


def _union_ms(s: np.ndarray, e: np.ndarray) -> float:
    us, ue = union_intervals(s, e)
    return float((ue - us).sum()) / MS


def _kernel_facts(tl: Timeline, gpu: GpuModel, has_rows: bool) -> dict[str, Any]:
    k = tl.kernels
    dur = k["end"] - k["start"]
    total = int(dur.sum())
    by_name: dict[str, dict[str, Any]] = {}
    under_ns = 0
    for i, info in enumerate(tl.kernel_infos):
        m = k["kinfo"] == i
        ns = int(dur[m].sum())
        fill, under, limited_by = launch_fill(info, gpu)
        under_ns += ns if under else 0
        by_name[info.demangled] = {
            "short": info.short, "count": int(m.sum()), "total_ms": ns / MS, "share": ns / total if total else 0.0,
            "blocks": info.grid[0] * info.grid[1] * info.grid[2],
            "threads_per_block": info.block[0] * info.block[1] * info.block[2],
            "registers": info.registers, "fill": fill, "limited_by": limited_by,
            "underfilled": under}
    out: dict[str, Any] = {"launch_calls": int(k["start"].size),
                           "count": int(k["start"].size) if has_rows else 0,
                           "total_ms": total / MS if has_rows else 0.0,
                           "by_name": by_name if has_rows else {},
                           "underfilled_share": under_ns / total if total and has_rows else 0.0}
    return out


def _copy_facts(tl: Timeline) -> dict[str, Any]:
    m = tl.memcpy
    dur = m["end"] - m["start"]
    pageable = (m["src_kind"] == MEM_PAGEABLE) | (m["dst_kind"] == MEM_PAGEABLE)
    kinds = {}
    for name, code in COPY_KIND.items():
        sel = m["copy_kind"] == code
        if sel.any():
            kinds[name] = {"count": int(sel.sum()), "total_ms": int(dur[sel].sum()) / MS,
                           "bytes": int(m["bytes"][sel].sum())}
    return {"count": int(dur.size), "total_ms": int(dur.sum()) / MS,
            "pageable_ms": int(dur[pageable].sum()) / MS, "by_kind": kinds}


def _nsys_facts(name: str) -> dict[str, Any]:
    sc = SCENARIOS[name]()
    tl = build_timeline(sc)
    gpu = gpu_model(sc.gpu)
    has_rows = name != "launches_no_kernel_rows"
    uvm = name == "host_writes"  # migrations lose their API call after writing
    api_counts: dict[str, int] = {}
    names = np.array(tl.api_names.values, dtype=object)
    for n, c in zip(*np.unique(names[tl.api["name"]], return_counts=True)):
        api_counts[str(n)] = int(c)
    if uvm:
        api_counts.pop("cudaMemcpyAsync", None)
    osrt = {}
    for code, fn in enumerate(tl.osrt_names.values):
        sel = tl.osrt["name"] == code
        osrt[fn] = {"count": int(sel.sum()),
                    "total_ms": int((tl.osrt["end"][sel] - tl.osrt["start"][sel]).sum()) / MS}
    capture_ms = (tl.capture_end - tl.first_ts) / MS
    ks, ke = tl.kernels["start"], tl.kernels["end"]
    gs = np.concatenate([ks, tl.memcpy["start"]])
    ge = np.concatenate([ke, tl.memcpy["end"]])
    kernels = _kernel_facts(tl, gpu, has_rows)
    return {"case": name, "format": "nsys", "description": sc.description,
            "gpu_name": gpu.name, "gpus": 1 + sc.idle_devices, "sm_count": gpu.sm_count,
            "compute_capability": f"{gpu.compute[0]}.{gpu.compute[1]}",
            "process": sc.process_name, "main_thread": sc.main_thread_name or sc.process_name,
            "kernels": kernels, "copies": _copy_facts(tl), "osrt": osrt, "api_calls": api_counts,
            "nvtx_domains": list(tl.domains), "nvtx": bool(sc.nvtx),
            "capture_ms": capture_ms,
            "kernel_busy_share": (_union_ms(ks, ke) / capture_ms) if has_rows else 0.0,
            "gpu_busy_share": _union_ms(gs, ge) / capture_ms if has_rows else
            _union_ms(tl.memcpy["start"], tl.memcpy["end"]) / capture_ms}


def _ncu_facts(name: str) -> dict[str, Any]:
    ks = ncu_kernels(name)
    total = sum(k.duration_ns * k.launches for k in ks)
    tc_ns = sum(k.duration_ns * k.launches for k in ks if k.extra_metrics[TENSOR_PIPE_METRIC][0] > 0)
    weighted = sum(k.duration_ns * k.launches * k.extra_metrics[TENSOR_PIPE_METRIC][0] / 100
                   for k in ks)
    by_name = {k.name: {"count": k.launches, "total_ms": k.duration_ns * k.launches / MS,
                        "share": k.duration_ns * k.launches / total,
                        "sm_throughput_pct": k.sm_pct,
                        "tensor_pipe_pct": k.extra_metrics[TENSOR_PIPE_METRIC][0]} for k in ks}
    return {"case": name, "format": "ncu", "description":
            f"ncu --page raw --csv of {sum(k.launches for k in ks)} kernel launches with "
            "tensor-pipe and SM-throughput metrics but no FLOP or DRAM-bytes counters",
            "gpu_name": None, "compute_capability": "8.0", "gpus": 1, "sm_count": None,
            "metrics": list(NCU_METRICS),
            "kernels": {"count": sum(k.launches for k in ks), "total_ms": total / MS,
                        "by_name": by_name},
            "tensor_pipe_metric": TENSOR_PIPE_METRIC,
            "tensor_pipe_kernel_share": tc_ns / total, "tensor_pipe_weighted_share": weighted / total,
            "missing_counters": ["flops", "dram_bytes"]}


def facts(name: str) -> dict[str, Any]:
    """The known facts of case ``name`` (see the module docstring)."""
    if name in NCU_CASES:
        out = _ncu_facts(name)
    elif name in SCENARIOS:
        out = _nsys_facts(name)
    else:
        raise KeyError(f"unknown case {name!r}")
    exp = dict(EXPECTED[name])
    out["framework"] = exp.pop("framework")
    out["libraries"] = exp.pop("libraries")
    out["framework_any_of"] = exp.pop("framework_any_of", [out["framework"]])
    exp["forbidden_advice_words"] = [] if out["framework"] == "pytorch" else list(PYTORCH_ONLY_WORDS)
    out["expected"] = exp
    return out
