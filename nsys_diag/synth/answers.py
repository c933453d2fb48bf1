"""Known answers of the trace generator: :func:`expected` computes, from a scenario's built
timeline (never typed in), what an analysis of the written file should find.

Times in ms (float), shares in 0..1, counts as int. Busy times are interval unions (ns) over a
process's analysed window = [first analysed step start, last analysed step end]; step 0 is the
warm-up and never analysed (unless it is the only step).
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from nsys_diag.synth.presets import preset
from nsys_diag.synth.scenarios import MS, US, Scenario
from nsys_diag.synth.schema import GPU_METRIC_NAMES, gpu_model
from nsys_diag.synth.timeline import Timeline, build_timeline, covered_before, union_intervals


def _busy_in(s: np.ndarray, e: np.ndarray, lo: int, hi: int) -> int:
    us, ue = union_intervals(s, e)
    c = covered_before(us, ue, np.array([lo, hi]))
    return int(c[1] - c[0])


def expected(scenario: str | Scenario, **overrides) -> dict:
    """The known answers of a preset (or Scenario), computed from its definition by building
    its timeline — never typed in. Times in ms (float), shares in 0..1.

    ``steps``: count, warm-up indices (step 0 — it carries ``warmup_extra_ns``), analysed steps
    (all others), step mean over analysed steps, periodic-phase steps. ``phases``: one row per
    phase name (in step order, periodic phases last) with the mean CPU duration over analysed
    steps (0 where absent), share of the mean step, canonical class and GPU work launched from it
    (sum of kernel durations per analysed step). ``gpu``: per device (= process), kernel busy
    (interval union) over that process's analysed window = [first analysed step start, last
    analysed step end], utilization = busy / window, copy busy likewise; the top-level values
    are process 0's. Plus kernel counts, Tensor Core share,
    exposed communication, GPU-metric means and GPU memory peak where the scenario has them.
    ``tolerance`` is the jitter fraction (0 = exact)."""
    if isinstance(scenario, str):
        sc = preset(scenario, **overrides)
    else:
        sc = replace(scenario, **overrides) if overrides else scenario
    tl = build_timeline(sc)
    st = tl.steps
    p0 = st["pidx"] == 0
    analysed = np.arange(1, sc.steps) if sc.steps > 1 else np.arange(sc.steps)
    sel = p0 & np.isin(st["step"], analysed)
    step_ms = (st["end"][sel] - st["start"][sel]) / MS
    step_mean = float(step_ms.mean())
    n_an = int(analysed.size)
    per_device = [_device_row(tl, p.index, analysed) for p in tl.processes]
    out: dict[str, Any] = {
        "preset": sc.name,
        "verdict": sc.expected_verdict,
        "description": sc.description,
        "gpu_name": gpu_model(sc.gpu).name,
        "processes": len(tl.processes),
        "tolerance": sc.jitter,
        "steps": {
            "count": sc.steps, "warmup": [0] if sc.steps > 1 else [],
            "analysed": analysed.tolist(), "analysed_count": n_an,
            "range_prefix": sc.step_prefix, "mean_ms": step_mean,
            "min_ms": float(step_ms.min()), "max_ms": float(step_ms.max()),
            "nominal_ms": sum(p.dur_ns for p in sc.phases) / MS,
            "warmup_ms": float((st["end"][p0][0] - st["start"][p0][0]) / MS),
            "periodic": [{"phase": q.phase.name, "every": q.every,
                          "steps": [int(i) for i in range(1, sc.steps) if i % q.every == q.every - 1]}
                         for q in sc.periodic],
        },
        "phases": _phase_rows(tl, analysed, step_mean),
        "gpu": {"utilization": per_device[0]["utilization"],
                "compute_busy_ms_per_step": per_device[0]["compute_busy_ms"] / n_an,
                "copy_busy_ms_per_step": per_device[0]["copy_busy_ms"] / n_an,
                "window_ms": per_device[0]["window_ms"], "per_device": per_device},
        "kernels": _kernel_summary(tl, analysed),
        "batch_size": sc.batch_size,
    }
    lo, hi = _window(tl, 0, analysed)
    mt = tl.metrics
    if mt["ts"].size:
        w = (mt["ts"] > lo) & (mt["ts"] <= hi) & (mt["device"] == tl.processes[0].device)
        out["gpu_metrics"] = {name: float(mt["value"][w & (mt["metric"] == i)].mean())
                              for i, name in enumerate(GPU_METRIC_NAMES)}
    if sc.gpu_memory is not None:
        gm = sc.gpu_memory
        peak = gm.weights_bytes // gm.chunks * gm.chunks + gm.activation_bytes // gm.chunks * gm.chunks
        total_mem = gpu_model(sc.gpu).total_memory
        out["memory"] = {"peak_bytes": peak, "device_bytes": total_mem,
                         "peak_share": peak / total_mem}
    return out


def _window(tl: Timeline, pidx: int, analysed: np.ndarray) -> tuple[int, int]:
    """[first analysed step start, last analysed step end] of one process (ns)."""
    st = tl.steps
    m = (st["pidx"] == pidx) & np.isin(st["step"], analysed)
    return int(st["start"][m].min()), int(st["end"][m].max())


def _phase_rows(tl: Timeline, analysed: np.ndarray, step_mean: float) -> list[dict]:
    """Process 0, per phase (step order, periodic last): mean CPU ms per analysed step (0 where
    absent), share of the mean step, kernel ms launched from it per analysed step."""
    sc, occ, k = tl.scenario, tl.phase_occ, tl.kernels
    n_an = int(analysed.size)
    phases = []
    for ph in list(sc.phases) + [q.phase for q in sc.periodic]:
        code = tl.phase_names.code(ph.name)
        om = (occ["pidx"] == 0) & (occ["phase"] == code) & np.isin(occ["step"], analysed)
        mean = float((occ["end"][om] - occ["start"][om]).sum()) / MS / n_an
        km = (k["pidx"] == 0) & (k["phase"] == code) & np.isin(k["step"], analysed)
        phases.append({"name": ph.name, "canonical": ph.canonical, "mean_ms": mean,
                       "share": mean / step_mean,
                       "gpu_work_ms": float((k["end"][km] - k["start"][km]).sum()) / MS / n_an,
                       "occurrences": int(om.sum())})
    return phases


def _device_row(tl: Timeline, pidx: int, analysed: np.ndarray) -> dict:
    """One process's GPU: kernel and copy busy (interval unions) over its analysed window,
    utilization = busy / window; with NCCL kernels also communication exposed (not overlapped
    by compute kernels) and hidden."""
    p = tl.processes[pidx]
    k = tl.kernels
    cat = np.array([i.category for i in tl.kernel_infos], object)
    lo, hi = _window(tl, p.index, analysed)
    pm = k["pidx"] == p.index
    compute = pm & (cat[k["kinfo"]] != "nccl") if k["start"].size else pm
    busy = _busy_in(k["start"][pm], k["end"][pm], lo, hi)
    copies_s = np.concatenate([tl.memcpy["start"][tl.memcpy["pidx"] == p.index],
                               tl.memset["start"][tl.memset["pidx"] == p.index]])
    copies_e = np.concatenate([tl.memcpy["end"][tl.memcpy["pidx"] == p.index],
                               tl.memset["end"][tl.memset["pidx"] == p.index]])
    row = {"device_id": p.device, "pid": p.pid, "window_ms": (hi - lo) / MS,
           "compute_busy_ms": busy / MS, "utilization": busy / (hi - lo),
           "copy_busy_ms": _busy_in(copies_s, copies_e, lo, hi) / MS}
    nccl = pm & (cat[k["kinfo"]] == "nccl") if k["start"].size else pm
    if nccl.any():
        comm_s, comm_e = union_intervals(k["start"][nccl], k["end"][nccl])
        comm = _busy_in(comm_s, comm_e, lo, hi)
        both = _busy_in(np.concatenate([k["start"][nccl], k["start"][compute]]),
                        np.concatenate([k["end"][nccl], k["end"][compute]]), lo, hi)
        exposed = both - _busy_in(k["start"][compute], k["end"][compute], lo, hi)
        row.update({"comm_ms": comm / MS, "exposed_comm_ms": exposed / MS,
                    "hidden_comm_ms": (comm - exposed) / MS,
                    "exposed_comm_share": exposed / (hi - lo)})
    return row


def _kernel_summary(tl: Timeline, analysed: np.ndarray) -> dict:
    """Process 0's kernels in the analysed steps: count per step, total, share under 10 µs,
    Tensor Core / GEMM shares of kernel time, kernel time share per category."""
    k = tl.kernels
    n_an = int(analysed.size)
    is_tc = np.array([i.tensor_core for i in tl.kernel_infos], bool)
    cat = np.array([i.category for i in tl.kernel_infos], object)
    km = (k["pidx"] == 0) & np.isin(k["step"], analysed)
    kd = (k["end"] - k["start"])[km]
    kinfo = k["kinfo"][km]
    total = float(kd.sum())
    gemm = np.isin(cat[kinfo], ("gemm",)) if kd.size else np.zeros(0, bool)
    return {
        "per_step": float(km.sum()) / n_an,
        "total": int(k["start"].size),
        "small_fraction": float((kd < 10 * US).mean()) if kd.size else 0.0,
        "tensor_core_share": float(kd[is_tc[kinfo]].sum()) / total if total else 0.0,
        "gemm_share": float(kd[gemm].sum()) / total if total else 0.0,
        "tc_share_of_gemm": (float(kd[gemm & is_tc[kinfo]].sum()) / float(kd[gemm].sum())
                             if kd.size and kd[gemm].sum() else None),
        "categories": {str(c): float(kd[cat[kinfo] == c].sum()) / total
                       for c in sorted(set(cat[kinfo].tolist()))} if total else {},
    }
