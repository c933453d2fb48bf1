"""Tensor Cores (``analyze_tensor_cores``) of a process from its chunks: ``partial_tensor_cores``
per chunk, ``merge_tensor_cores`` at the end — the same ``TensorCoreResult`` as the in-memory
suite, from the merged kernel table (``kernels.table``) and the chunks' Tensor Active readings.

Two global values come first, from a pass over the GPU-metric samples alone
(``partial_tensor_sampling`` / ``merge_tensor_sampling``): the Tensor Active sampling period
(``tensor_counters.sample_period_ns``: an exact median, see ``gpu_metrics.Spacing``) and the
devices with Tensor Active samples.

Readings (``tensor_counters``), each a sum over the samples a chunk owns (``ts`` in
``[lo, hi)``), measured against every window kernel the chunk sees (they overlap ``[lo, hi]``,
so every kernel running at an owned sample's time is seen):

* during kernels / during GEMMs — Σ value, count (and count > 0) of the samples inside the
  union of the device's (GEMM-family) kernels: exact;
* per kernel name — ``attribute_to_kernels`` with the global period on the seen kernels. It
  needs the kernels around ``(ts - period, ts]`` and the one started last before ``ts - period``;
  a chunk sees all of them except for the **head** samples of a device (``ts - period`` before
  the chunk's first kernel start on it). For those the in-memory answer is the chunk's answer
  when (a) the kernel started last before ``lo`` (a previous chunk's) still runs at ``lo``, and,
  for ``ts - period < lo``, (b) no kernel the chunk cannot see (ended by ``lo``) ends after
  ``ts - period``. A part keeps its head hits apart — summed per (device, name) when only (a)
  applies, one by one (≤ one sampled period after ``lo``) otherwise — and two facts per device
  for the next chunks: the end of its last-started owned kernel and the latest end ``≤ hi``
  among the kernels it sees. The merge applies (a) and (b): exact.

A part is O(devices × names); levels are Σ / n, equal to the in-memory means to float rounding.
A kernel name's category and Tensor Core basis come from the chunk's name table (the name and
its first row's short name) and GEMM-family membership from it, as in memory.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from nsys_diag.analyses.engine.context import ChunkInputs
from nsys_diag.analyses.engine.declaration import Declaration, FinishContext, declare
from nsys_diag.analyses.kernels.table import window_kernels
from nsys_diag.analyses.gpu_metrics import process_samples
from nsys_diag.analyses.timeline.spacing import Spacing, median_spacing, spacing_of
from nsys_diag.analyses.kernels.table import kernel_name_stats
from nsys_diag.analyses.kernels.tensor_cores import (TensorCoreResult, analyze_tensor_cores, gemm_family,
                                                     kernel_row_names, tensor_result)
from nsys_diag.analyses.kernels.tensor_counters import (RESOLVE_PERIODS, Samples, TensorLevels, attribute_to_kernels,
                                                device_orders, inside_merged, merged_by_device,
                                                metric_samples)
from nsys_diag.model.thresholds import Thresholds
from nsys_diag.model.schema_types import List, Obj, Section
from nsys_diag.model.vocabulary import HINT_CAPTURE_CUDA_COMMAND

_NO_END = int(np.iinfo(np.int64).min)


# ------------------------------------------------------------------------------ sampling pass
@dataclass(frozen=True)
class TensorSamplingPart:
    """One chunk's Tensor Active timestamps: per device their spacings; the first sample's
    device."""

    spacings: dict[int, Spacing]
    first_device: int | None


@dataclass(frozen=True)
class TensorSampling:
    """The global values ``partial_tensor_cores`` needs: the Tensor Active sampling period (ns,
    None when unknown) and the devices with Tensor Active samples."""

    period_ns: int | None
    devices: tuple[int, ...]


def _tensor_samples(ci: ChunkInputs, key: str) -> Samples | None:
    return metric_samples(process_samples(ci.frames.get("gpu_metrics"), ci.devices), key)


def partial_tensor_sampling(ci: ChunkInputs) -> TensorSamplingPart:
    """The chunk's Tensor Active timestamps (first pass, samples only)."""
    ta = _tensor_samples(ci, "tensor_active")
    if ta is None:
        return TensorSamplingPart({}, None)
    sp = {int(d): spacing_of(ta.ts[ta.dev == d]) for d in np.unique(ta.dev)}
    return TensorSamplingPart({d: s for d, s in sp.items() if s is not None}, int(ta.dev[0]))


def merge_tensor_sampling(parts: list[TensorSamplingPart]) -> TensorSampling:
    """Period of the first sample's device (``sample_period_ns``) and the sampled devices."""
    first = next((p.first_device for p in parts if p.first_device is not None), None)
    devices = tuple(sorted({d for p in parts for d in p.spacings}))
    if first is None:
        return TensorSampling(None, devices)
    return TensorSampling(median_spacing([p.spacings.get(first) for p in parts]), devices)


# ------------------------------------------------------------------------------- chunk readings
def _acc() -> list:
    return [0.0, 0, 0.0, 0]  # Tensor Active Σ, n; SM Active Σ, n


@dataclass(frozen=True)
class TensorPart:
    """One chunk's Tensor Active sums (see the module docstring). ``names``: name → [TA Σ, n,
    SM Σ, n] of samples attributed to it; ``head``: device → the same for head hits needing (a);
    ``head_items``: (device, ts - period, name, is SM, value) needing (a) and (b);
    ``last_end``/``end_upto_hi``: per device, the facts the next chunks' head hits need."""

    lo_ns: int
    ta_total: int
    kernel: tuple[float, int, int]
    gemm: tuple[float, int, float, int]
    names: dict[str, list] = field(default_factory=dict)
    head: dict[int, dict[str, list]] = field(default_factory=dict)
    head_items: list[tuple[int, int, str, bool, float]] = field(default_factory=list)
    last_end: dict[int, int] = field(default_factory=dict)
    end_upto_hi: dict[int, int] = field(default_factory=dict)


def _boundary_facts(ci: ChunkInputs, seen: pd.DataFrame) -> tuple[dict, dict, dict]:
    """Per device: end of the last-started owned kernel, latest end ≤ hi of the seen kernels,
    first seen start ≥ lo."""
    s = seen["start_ns"].to_numpy(np.int64)
    e = seen["end_ns"].to_numpy(np.int64)
    dev = seen["device_id"].to_numpy(np.int64)
    own = (s >= ci.lo_ns) & (s < ci.hi_ns)
    last, upto, first = {}, {}, {}
    for d in np.unique(dev).tolist():  # a handful of devices
        on = dev == d
        o = np.flatnonzero(on & own)
        if o.size:  # the last of the latest start, in row order (a stable sort's last)
            top = o[s[o] == s[o].max()]
            last[d] = int(e[top[-1]])
        done = on & (e <= ci.hi_ns)
        if done.any():
            upto[d] = int(e[done].max())
        later = on & (s >= ci.lo_ns)
        if later.any():
            first[d] = int(s[later].min())
    return last, upto, first


def _attribute(part: TensorPart, smp: Samples | None, is_sm: bool, k: tuple, names: np.ndarray,
               period: int, orders: dict, first_start: dict, first_chunk: bool) -> None:
    """Attribute ``smp`` to kernels and add the hits to ``part`` (final or head)."""
    if smp is None:
        return
    k_dev, k_s, k_e, row_name = k
    hit = attribute_to_kernels(smp, k_dev, k_s, k_e, period, orders)
    ok = np.flatnonzero(hit >= 0)
    if not ok.size:
        return
    rows = row_name.take(hit[ok])
    name_of = names[np.maximum(rows, 0)]
    valid = rows >= 0
    t0 = smp.ts[ok] - period
    slot = 2 if is_sm else 0
    for i, nm, good, t in zip(ok.tolist(), name_of.tolist(), valid.tolist(), t0.tolist()):
        if not good:  # a name outside the table: not attributed (as in memory)
            continue
        d = int(smp.dev[i])
        v = float(smp.val[i])
        if first_chunk or t >= first_start.get(d, np.iinfo(np.int64).max):
            acc = part.names.setdefault(nm, _acc())
        elif t >= part.lo_ns:
            acc = part.head.setdefault(d, {}).setdefault(nm, _acc())
        else:
            part.head_items.append((d, int(t), str(nm), is_sm, v))
            continue
        acc[slot] += v
        acc[slot + 1] += 1


def partial_tensor_cores(ci: ChunkInputs, *, sampling: TensorSampling) -> TensorPart:
    """The chunk's Tensor Active readings; ``sampling``: ``merge_tensor_sampling`` of every
    chunk's ``partial_tensor_sampling`` (global)."""
    ta = _tensor_samples(ci, "tensor_active")
    seen = window_kernels(ci, owned_only=False)
    empty = TensorPart(ci.lo_ns, 0 if ta is None else ta.size, (0.0, 0, 0), (0.0, 0, 0.0, 0))
    if ta is None or seen.empty:
        return empty
    sm = _tensor_samples(ci, "sm_active")
    table = kernel_name_stats(seen)
    row_name = kernel_row_names(seen, table)
    family = gemm_family(table["category"].to_numpy(dtype=object),
                         table["tc_basis"].to_numpy(dtype=object))
    k_dev = seen["device_id"].to_numpy(np.int64)
    k_s = seen["start_ns"].to_numpy(np.int64)
    k_e = seen["end_ns"].to_numpy(np.int64)
    devices = np.array(sampling.devices, np.int64)
    inside = inside_merged(ta, merged_by_device(np.unique(ta.dev), k_dev, k_s, k_e))
    kv = ta.val[inside]
    gemm_rows = row_name.mask(family)
    gemm = (0.0, 0, 0.0, 0)
    if gemm_rows.any():
        merged = merged_by_device(devices, k_dev[gemm_rows], k_s[gemm_rows], k_e[gemm_rows])
        in_gemm = inside_merged(ta, merged)
        in_sm = inside_merged(sm, merged) if sm is not None else np.zeros(0, bool)
        gemm = (float(ta.val[in_gemm].sum()), int(in_gemm.sum()),
                float(sm.val[in_sm].sum()) if sm is not None else 0.0, int(in_sm.sum()))
    last, upto, first = _boundary_facts(ci, seen)
    part = TensorPart(ci.lo_ns, ta.size, (float(kv.sum()), int(kv.size), int((kv > 0).sum())),
                      gemm, last_end=last, end_upto_hi=upto)
    period = sampling.period_ns
    if period and ((k_e - k_s) >= RESOLVE_PERIODS * period).any():
        orders = device_orders(devices, k_dev, k_s, k_e)
        names = table["name"].to_numpy(dtype=object).astype(str)
        k = (k_dev, k_s, k_e, row_name)
        _attribute(part, ta, False, k, names, period, orders, first, ci.is_first)
        _attribute(part, sm, True, k, names, period, orders, first, ci.is_first)
    return part


# ---------------------------------------------------------------------------------------- merge
def _resolved_head(parts: list[TensorPart]) -> dict[str, list]:
    """Per name, the head hits whose conditions the previous chunks' facts meet."""
    out: dict[str, list] = {}
    last: dict[int, int] = {}
    upto: dict[int, int] = {}
    for p in parts:  # in chunk order
        for d, per_name in p.head.items():
            if last.get(d, _NO_END) > p.lo_ns:  # (a) the last-started kernel still runs at lo
                for nm, acc in per_name.items():
                    o = out.setdefault(nm, _acc())
                    for i in range(4):
                        o[i] += acc[i]
        for d, t0, nm, is_sm, v in p.head_items:
            if last.get(d, _NO_END) > p.lo_ns and upto.get(d, _NO_END) <= t0:  # (a) and (b)
                o = out.setdefault(nm, _acc())
                o[2 if is_sm else 0] += v
                o[3 if is_sm else 1] += 1
        last.update(p.last_end)
        for d, e in p.end_upto_hi.items():
            upto[d] = max(upto.get(d, _NO_END), e)
    return out


def _mean(s: float, n: float) -> float | None:
    return s / n if n else None


def merge_tensor_levels(parts: list[TensorPart], *, table: pd.DataFrame,
                        sampling: TensorSampling) -> TensorLevels | None:
    """The process's ``TensorLevels`` (per row of the merged kernel ``table``); None without
    Tensor Active samples or kernels, as ``tensor_levels``."""
    if not sum(p.ta_total for p in parts) or not len(table):
        return None
    row_of = {str(n): i for i, n in enumerate(table["name"].tolist())}
    acc = np.zeros((len(table), 4))
    for src in [*(p.names for p in parts), _resolved_head(parts)]:
        for nm, a in src.items():
            if nm in row_of:
                acc[row_of[nm]] += a
    ks, kn, kpos = (sum(p.kernel[i] for p in parts) for i in range(3))
    gs, gn, ss, sn = (sum(p.gemm[i] for p in parts) for i in range(4))
    with np.errstate(invalid="ignore", divide="ignore"):
        name_level = np.where(acc[:, 1] > 0, acc[:, 0] / np.maximum(acc[:, 1], 1), np.nan)
        name_sm = np.where(acc[:, 3] > 0, acc[:, 2] / np.maximum(acc[:, 3], 1), np.nan)
    return TensorLevels(
        kernel_level=_mean(ks, kn), kernel_share_positive=_mean(kpos, kn),
        kernel_samples=int(kn), level_during_gemm=_mean(gs, gn), sm_during_gemm=_mean(ss, sn),
        gemm_samples=int(gn), period_ns=sampling.period_ns, name_level=name_level,
        name_sm=name_sm, name_samples=acc[:, 1].astype(np.int64))


def merge_tensor_cores(parts: list[TensorPart], *, table: pd.DataFrame, th: Thresholds,
                       sampling: TensorSampling, counters: dict | None = None
                       ) -> TensorCoreResult:
    """The process's ``TensorCoreResult``. ``table``: the merged kernel table
    (``merge_kernels(...).table``); ``counters``: what the suite passes
    (``suite._tensor_counters`` of the process's roofline, None without ncu)."""
    lv = merge_tensor_levels(parts, table=table, sampling=sampling)
    return tensor_result(table, lv, th=th, counters=counters)


# -------------------------------------------------------------------------------- declaration
def _finish_tensor_cores(states, ctx: FinishContext) -> TensorCoreResult:
    from nsys_diag.analyses.process import tensor_counters  # the ending imports this package

    return merge_tensor_cores(list(states), table=ctx.results["kernel_table"].table, th=ctx.th,
                              sampling=ctx.glob.tensor_sampling,
                              counters=tensor_counters(ctx.results["roofline"]))


def _whole_tensor_cores(p, kt, roofline, busy) -> TensorCoreResult:
    from nsys_diag.analyses.process import tensor_counters  # the ending imports this package

    return analyze_tensor_cores(kt[0], p.metrics, th=p.th, counters=tensor_counters(roofline),
                                name_table=kt[1].table,  # perf: the name table is computed once
                                busy=busy, busy_window=p.window_ns)  # and the kernels merged once


_TC_KERNEL = Obj({"name": "str", "share": "share"},
                 carried={"short_name": "str", "label": "str", "total_ns": "int", "category": "str",
                          "evidence": "str"})
TENSOR_CORES_SPEC = Section(Obj({
    "share_of_kernel_time": "share?", "gemm_share": "share?", "tc_share_of_gemm": "share?",
    "evidence": "str", "confidence": "str", "non_tc_gemm_share": "share?", "source": "str",
    "evidence_list": List("str"), "advice": "str?", "non_tc_gemm_kernels": List(_TC_KERNEL),
    "tensor_active_during_gemm": "share?", "engaged": "bool?", "basis": "str?",
    "non_tc_gemm_source": "str?"},
    carried={"name_share_of_kernel_time": "share?", "metrics_share_of_kernel_time": "share?",
             "counters_share_of_kernel_time": "share?", "tensor_active_mean": "share?",
             "tensor_active_samples": "int", "tensor_active_gemm_samples": "int",
             "non_tc_attention_share": "share?", "unknown_tc_share": "share?",
             "unknown_tc_kernels": List(_TC_KERNEL), "tc_kernels": List(_TC_KERNEL)}),
    "Tensor Core use could not be assessed (no kernels).", HINT_CAPTURE_CUDA_COMMAND, per_process=True)
"""The ``tensor_cores`` section of the analysis JSON (model/schema_types.py)."""

TENSOR_CORES = declare(Declaration(
    "tensor_cores", section="tensor_cores", spec=TENSOR_CORES_SPEC,
    reads=("kernel_table", "roofline"),
    partial=lambda span, *, glob, **_: partial_tensor_cores(span, sampling=glob.tensor_sampling),
    finish=_finish_tensor_cores, rank=12, pooled=True,
    whole_reads=("kernel_table", "roofline", "busy"), whole=_whole_tensor_cores))
"""Tensor Core use of the window's kernels (the ``tensor_cores`` section)."""
