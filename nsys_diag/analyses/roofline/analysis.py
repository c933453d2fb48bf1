"""Roofline from Nsight Compute metrics: per launch, then per kernel name (NCU_CSV.md §6–§7).

Per launch (vectorised over launches; base units from the loader):

* duration ``t`` = ``gpu__time_duration.sum``, else ``sm__cycles_elapsed.avg ÷
  sm__cycles_elapsed.avg.per_second`` (never the ``Kernel Time`` timestamp);
* CUDA-core FLOPs with ncu's own weights: FP64 = dadd + dmul + 2·dfma, FP32 = fadd + fmul +
  2·ffma, FP16 = 2·hadd + 2·hmul + 4·hfma (ncu's half roofline, packed half2). HFMA2.MMA-like
  thread ops (``hfma`` explained by tensor-pipe instructions, §6.2) are removed from FP16;
* Tensor Core work only from ``sm__ops_path_tensor_*`` (ncu OP counts, treated as FLOP-equivalent
  like ncu's tensor roofline); otherwise tensor-pipe utilisation / MMA instruction counts are
  reported as *evidence* only — no instruction×constant FLOP model (NERSC's 512 is V100-only);
* DRAM / L2 / L1 bytes (``dram__bytes.sum``, ``lts__t_bytes.sum``, ``l1tex__t_bytes.sum`` or their
  per-second / ncu hierarchical equivalents), arithmetic intensity ``AI = FLOPs / bytes``
  (None for 0 bytes), achieved FLOP/s and bytes/s;
* peaks: ``.peak_sustained × clock`` metrics when exported, else the built-in table
  (``gpu_specs``) at the *profiled* SM clock, with the provenance stated;
* bound: ncu's SOLBottleneck rule on SM % / memory % (≥ 80 bound, all < 60 latency — "small
  grid"/under-occupied when waves < 1 —, else the larger one unless within 10 points:
  balanced); without SOL metrics the same rule on roofline percentages (achieved ÷ peak).

Per kernel name: sums, AI from sums, time-weighted occupancy/SOL, ``bound`` = the class holding
most of the kernel's time (``bound_shares`` gives the split), ``tensor_core_share`` = share of the
kernel's profiled time in launches with Tensor Core evidence. ``time_weighted`` shares use ncu
durations (the join in ``ncu_join.py`` re-weights by the nsys timeline).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from nsys_diag.model.jsonsafe import fnum, ratio
from nsys_diag.analyses.base import Unavailable
from nsys_diag.analyses.roofline.gpu_choice import GPU_HINT, peaks_source
from nsys_diag.analyses.roofline.gpu_specs import GpuSpec, arch_rates, lookup_gpu
from nsys_diag.analyses.kernels.names import normalize_kernel_name
from nsys_diag.analyses.roofline.metrics import (
    CYCLE_PAIRS,
    FLOP_WEIGHTS,
    MetricTable,
    MEM_PCT,
    MMA_INST,
    OCCUPANCY,
    PEAK_FMA,
    SM_CLOCK,
    SM_PCT,
    TENSOR_AGG_INST,
    TENSOR_PCT_STEMS,
    WAVES,
    level_bytes,
    sass_count,
    tensor_op_counts,
    wide_metrics,
)
from nsys_diag.analyses.roofline.results import (  # noqa: F401 (re-exported names)
    BOUND_CLASSES,
    KernelRoofline,
    Peaks,
    ROOFLINE_METRICS,
    RooflineResult,
    TIME_WEIGHT_KEYS,
    capture_hint,
)
from nsys_diag.model.thresholds import DEFAULT_THRESHOLDS, Thresholds

# ---------------------------------------------------------------------------------- the analysis
def analyze_roofline(ncu_launches: pd.DataFrame, ncu_metrics: pd.DataFrame,
                     gpus: pd.DataFrame | None = None, *,
                     th: Thresholds = DEFAULT_THRESHOLDS, gpu_source: str | None = None,
                     gpu_note: str = "") -> RooflineResult | Unavailable:
    """Roofline + bound per kernel from validated NCU_LAUNCHES / NCU_METRICS (and GPUS) frames.

    Steps: per-launch duration (s) and SM clock (Hz), FLOPs by precision, bytes per memory level,
    Tensor Core evidence, peaks, per-launch bound; then per kernel name and the result.
    ``gpu_source``/``gpu_note``: where ``gpus`` came from (``gpu_choice.roofline_gpu``) → the
    result's ``peaks_source`` and a note; inferred from the inputs when None."""
    if ncu_launches is None or len(ncu_launches) == 0:
        return Unavailable("no Nsight Compute data (no ncu CSV was given)",
                           "add `--ncu kernels.csv`; " + capture_hint())
    launches = ncu_launches.drop_duplicates("launch_id").set_index("launch_id")
    m = MetricTable(wide_metrics(ncu_metrics, launches.index))
    notes: list[str] = []
    t, duration_source = _durations(m)
    if t.isna().all():
        need = ["gpu__time_duration.sum", "(or sm__cycles_elapsed.avg + sm__cycles_elapsed.avg.per_second)"]
        return Unavailable("roofline unavailable: need " + " ".join(need) + " — the ncu CSV has no "
                           "kernel duration", capture_hint(need))
    if t.isna().any():
        notes.append(f"{int(t.isna().sum())} launch(es) without a duration were left out")
    clock = m.get(*SM_CLOCK)
    clock = clock.fillna((m.get("sm__cycles_elapsed.avg") / t).where(m.get("sm__cycles_elapsed.avg").notna()))
    w = _work(m, t, clock, notes)
    tensor = _tensor_evidence(m, w, th)
    gpu_name, spec, gpu_row = _identify_gpu(launches, gpus)
    peaks, peak_series = _peaks(m, clock, spec, gpu_row, w.tensor_peaks, gpu_name)
    source = peaks_source(peaks.provenance_by_peak, gpu_source, launches, gpu_row)
    if gpu_note and source not in ("none", "ncu_peak_metrics"):
        notes.append(gpu_note)
    if gpu_name is None and spec is None and source == "none":
        notes.append("GPU model unknown (no device name or attributes in the ncu CSV, no GPU in "
                     "the nsys export): no peaks; " + GPU_HINT + ", or capture with `--metrics "
                     "device__attribute_display_name`")
    table, have_sol, above = _launch_table(m, launches, t, w, tensor, peak_series, th, notes)
    roofline_complete = bool(w.flops.notna().any() and w.dram.notna().any())
    need = sorted(set(w.missing))
    if not roofline_complete and not have_sol.any():
        core = [n for n in need if n.startswith(("sm__sass", "dram__"))] or need
        return Unavailable("roofline not available: counters missing — need " + ", ".join(core) +
                           " (or the SOL metrics sm__throughput.avg.pct_of_peak_sustained_elapsed "
                           "and gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed)",
                           capture_hint(core))
    if not roofline_complete:
        notes.append("no FLOP or DRAM byte counters: bounds come from ncu's SOL percentages only")
    return replace(_result(table, list(w.work.columns), gpu_name=gpu_name, peaks=peaks,
                           duration_source=duration_source, tensor_evidence=tensor.label,
                           roofline_complete=roofline_complete, need=need, notes=notes,
                           above=above), peaks_source=source)


def _durations(m: MetricTable) -> tuple[pd.Series, str]:
    """Per-launch duration in s (``gpu__time_duration.sum``, else cycles ÷ clock; ≤ 0 → NaN)
    and the metrics it came from."""
    t = m.get("gpu__time_duration.sum", "Duration [s]")
    duration_source = "gpu__time_duration.sum" if t.notna().any() else ""
    for cyc, clk in CYCLE_PAIRS:
        if t.notna().all():
            break
        fallback = m.get(cyc) / m.get(clk)
        if fallback.notna().any():
            duration_source = (duration_source + " + " if duration_source else "") + f"{cyc} ÷ {clk}"
        t = t.fillna(fallback)
    return t.where(t > 0), duration_source


@dataclass
class _Work:
    """Per-launch work: FLOPs by precision (``work``), their sum, bytes per level, and the raw
    counters the Tensor Core evidence reads."""

    work: pd.DataFrame
    flops: pd.Series
    have_any_flops: pd.Series
    dram: pd.Series
    l2: pd.Series
    l1: pd.Series
    missing: list[str]
    tensor_ops: dict[str, pd.Series]
    tensor_peaks: dict[str, pd.Series]
    agg_tensor: pd.Series
    hfma: pd.Series


def _work(m: MetricTable, t: pd.Series, clock: pd.Series, notes: list[str]) -> _Work:
    """FLOPs per precision with ncu's weights (HFMA2.MMA-like hfma removed from FP16), tensor OP
    counts, and DRAM/L2/L1 bytes per launch; ``missing`` names the absent counters."""
    smsp_clock = m.get("smsp__cycles_elapsed.avg.per_second").fillna(clock)
    counts = {op: sass_count(m, op, t, smsp_clock)
              for ops in FLOP_WEIGHTS.values() for op, _ in ops}
    agg_tensor = m.get(TENSOR_AGG_INST)
    hfma = counts["hfma"]
    # HFMA2.MMA-like: hfma thread ops that the tensor-pipe count can explain (≤ 32 per inst)
    mma_like_hfma = np.minimum(hfma, 32.0 * agg_tensor).where(agg_tensor.notna() & hfma.notna(), 0.0)
    flops_by_prec: dict[str, pd.Series] = {}
    missing: list[str] = []
    for prec, ops in FLOP_WEIGHTS.items():
        total = sum(w * counts[op] for op, w in ops)
        if prec == "fp16":
            total = total - 4.0 * mma_like_hfma
        flops_by_prec[prec] = total
        absent = [op for op, _ in ops if counts[op].isna().all()]
        if absent:
            missing += [f"sm__sass_thread_inst_executed_op_{op}_pred_on.sum" for op in absent]
    if bool((mma_like_hfma > 0).any()):
        notes.append("FP16 CUDA-core FLOPs exclude HFMA2.MMA-like instructions (hfma explained by "
                     "tensor-pipe instructions, NCU_CSV.md §6.2)")
    tensor_ops, tensor_peaks = tensor_op_counts(m, t, clock)
    for key, v in tensor_ops.items():
        flops_by_prec[key] = v
    work = pd.DataFrame(flops_by_prec)
    have_any_flops = work.notna().any(axis=1)
    levels = {level: level_bytes(m, level, t) for level in ("dram", "l2", "l1")}
    for level, metric in (("dram", "dram__bytes.sum"), ("l2", "lts__t_bytes.sum"),
                          ("l1", "l1tex__t_bytes.sum")):
        if levels[level].isna().all():
            missing.append(metric)
    return _Work(work=work, flops=work.sum(axis=1, min_count=1).where(have_any_flops),
                 have_any_flops=have_any_flops, dram=levels["dram"], l2=levels["l2"],
                 l1=levels["l1"], missing=missing, tensor_ops=tensor_ops, tensor_peaks=tensor_peaks,
                 agg_tensor=agg_tensor, hfma=hfma)


@dataclass
class _Tensor:
    """Per-launch Tensor Core evidence: pipe % (max over families), MMA instructions, the 0/1
    flag (NaN = no evidence) and the label of the first evidence source present."""

    pct: pd.Series
    mma_inst: pd.Series
    flag: pd.Series
    label: str | None


def _tensor_evidence(m: MetricTable, w: _Work, th: Thresholds) -> _Tensor:
    """Tensor Core evidence per launch, from OP counters, MMA instruction counts, the tensor-pipe
    count minus HFMA2.MMA-like instructions, then pipe utilisation ≥ ``tensor_pipe_active_pct``."""
    ids = m.w.index
    tensor_pct_cols = [f"{s}.avg.pct_of_peak_sustained_{kind}" for s in TENSOR_PCT_STEMS
                       for kind in ("elapsed", "active")]
    present_pct = [c for c in tensor_pct_cols if c in m.w.columns]
    tensor_pct = m.w[present_pct].max(axis=1) if present_pct else m.nan  # max over families (§6.3)
    pure_mma = m.w[[c for c in MMA_INST if c in m.w.columns]].sum(axis=1, min_count=1) \
        if any(c in m.w.columns for c in MMA_INST) else m.nan
    # aggregate tensor-pipe count minus what HFMA2.MMA can explain: a lower bound on real MMA
    # (unknown without the hfma counter: the aggregate alone may be all HFMA2.MMA)
    agg_mma = (w.agg_tensor - w.hfma).clip(lower=0)
    ops_total = pd.DataFrame(w.tensor_ops).sum(axis=1, min_count=1) if w.tensor_ops else m.nan
    evidence_sources = [
        ("sm__ops_path_tensor_* (tensor OP counters)", ops_total > 0, ops_total.notna()),
        ("tensor-pipe MMA instruction counts", pure_mma > 0, pure_mma.notna()),
        ("sm__inst_executed_pipe_tensor.sum minus HFMA2.MMA-like instructions", agg_mma > 0,
         w.agg_tensor.notna() & w.hfma.notna()),
        ("tensor-pipe utilisation", tensor_pct >= th.tensor_pipe_active_pct, tensor_pct.notna()),
    ]
    tc_known = pd.Series(False, index=ids)
    tc_yes = pd.Series(False, index=ids)
    label = None
    for name, positive, known in evidence_sources:
        if known.any() and label is None:
            label = name
        tc_known |= known
        tc_yes |= positive.fillna(False) & known
    return _Tensor(pct=tensor_pct, mma_inst=pure_mma.fillna(agg_mma),
                   flag=tc_yes.astype(np.float64).where(tc_known), label=label)


def _launch_table(m: MetricTable, launches: pd.DataFrame, t: pd.Series, w: _Work, tensor: _Tensor,
                  peak_series: dict, th: Thresholds,
                  notes: list[str]) -> tuple[pd.DataFrame, pd.Series, list[str]]:
    """One row per launch with a duration: work, SOL %, peaks at the dominant precision and the
    bound (ncu SOL when both SOL % exist, else the roofline position); also which launches had
    SOL metrics and the kernels whose rates exceed a peak by ``roofline_above_peak_factor``."""
    ids = launches.index
    sm_pct, mem_pct, waves = m.get(*SM_PCT), m.get(*MEM_PCT), m.get(*WAVES)
    work = w.work
    dominant = work.fillna(0).idxmax(axis=1).where(w.have_any_flops & (work.fillna(0).max(axis=1) > 0))
    peak_dom = pd.Series(np.nan, index=ids)
    for prec, s in peak_series["flop"].items():
        peak_dom = peak_dom.mask(dominant == prec, s)
    pct_flop = 100.0 * (w.flops / t) / peak_dom
    pct_dram = 100.0 * (w.dram / t) / peak_series["dram"]
    have_sol = sm_pct.notna() & mem_pct.notna()
    bound = _classify(sm_pct.where(have_sol, pct_flop), mem_pct.where(have_sol, pct_dram), waves, th)
    bound_src = pd.Series(np.where(have_sol, "ncu SOL", "roofline position"), index=ids)
    bound_src = bound_src.where(bound != "unknown", "")
    above: list[str] = []
    factor = th.roofline_above_peak_factor
    over = (pct_flop > 100 * factor) | (pct_dram > 100 * factor)
    for prec, s in peak_series["flop"].items():
        over |= (work.get(prec, m.nan) / t) > s * factor
    if over.any():
        above = sorted(set(launches.loc[over[over].index, "kernel_name"].astype(str)))
        notes.append(f"{int(over.sum())} launch(es) exceed a peak — a unit or parse error, not real "
                     "performance; check the CSV's units/locale")
    table = pd.DataFrame({
        "kernel_name": launches["kernel_name"].astype(str),
        "t_s": t, "flops": w.flops, "dram": w.dram, "l2": w.l2, "l1": w.l1,
        "sm_pct": sm_pct, "mem_pct": mem_pct, "waves": waves, "occupancy": m.get(*OCCUPANCY),
        "tensor_pct": tensor.pct, "mma_inst": tensor.mma_inst, "tc": tensor.flag,
        "bound": bound, "bound_source": bound_src, "dominant": dominant,
        "peak_flop": peak_dom, "peak_dram": peak_series["dram"],
        **{c: launches[c].astype(str) for c in ("grid_size", "block_size") if c in launches},
    }, index=ids)
    for prec in work.columns:
        table[f"w_{prec}"] = work[prec]
    return table[table["t_s"].notna()], have_sol, above


def _result(table: pd.DataFrame, precisions: list[str], *, gpu_name: str | None, peaks: Peaks,
            duration_source: str, tensor_evidence: str | None, roofline_complete: bool,
            need: list[str], notes: list[str], above: list[str]) -> RooflineResult:
    """The result from the launch table: per-kernel rows, time-weighted bound shares, the
    Tensor Core share of profiled time, the capture hint for missing counters, the confidence."""
    kernels = _per_kernel(table, precisions)
    total_t = float(table["t_s"].sum())
    time_weighted = _time_shares(table.groupby("bound")["t_s"].sum(), total_t)
    tc_time = table.loc[table["tc"].notna()]
    tc_share = (float((tc_time["t_s"] * tc_time["tc"]).sum()) / total_t
                if len(tc_time) and total_t > 0 else None)
    hint = ""
    if need:
        hint = ("roofline " + ("incomplete" if roofline_complete else "unavailable") +
                ": need " + ", ".join(need) + "; " + capture_hint(need))
    sources = set(table.loc[table["bound_source"] != "", "bound_source"])
    bound_source = " + ".join(sorted(sources)) if sources else None
    confidence = ("high" if sources == {"ncu SOL"} else "medium" if sources else "low")
    return RooflineResult(
        gpu=gpu_name, peaks=peaks, kernels=tuple(kernels), time_weighted=time_weighted,
        total_time_ns=int(round(total_t * 1e9)), launch_count=int(len(table)),
        duration_source=duration_source, bound_source=bound_source,
        tensor_evidence=tensor_evidence, tensor_core_share_by_time=tc_share,
        roofline_complete=roofline_complete, missing_metrics=tuple(need), hint=hint,
        notes=tuple(notes), above_peak=tuple(above), confidence=confidence, launch_table=table,
    )


def _classify(sm: pd.Series, mem: pd.Series, waves: pd.Series, th: Thresholds) -> pd.Series:
    """ncu SOLBottleneck (sections/SpeedOfLight.py) on SM % and memory %, vectorised."""
    known = sm.notna() & mem.notna()
    high = (sm >= th.sol_bound_pct) | (mem >= th.sol_bound_pct)
    low = (sm < th.sol_latency_pct) & (mem < th.sol_latency_pct)
    diff = sm - mem
    conds = [
        ~known,
        high & (sm >= mem),
        high,
        low & (waves < th.sol_waves_min),
        low,
        diff >= th.sol_imbalance_pts,
        diff <= -th.sol_imbalance_pts,
    ]
    choices = ["unknown", "compute", "memory", "under_occupied", "latency", "compute", "memory"]
    return pd.Series(np.select(conds, choices, default="balanced"), index=sm.index)


def _time_shares(by_class: pd.Series, total: float) -> dict[str, float]:
    out = {v: 0.0 for v in TIME_WEIGHT_KEYS.values()}
    if total > 0:
        for cls, t in by_class.items():
            out[TIME_WEIGHT_KEYS.get(str(cls), "unknown")] += float(t) / total
    return out


def _identify_gpu(launches: pd.DataFrame, gpus: pd.DataFrame | None):
    """(name, spec, gpus-row) for the GPU most launches ran on."""
    names = launches["gpu_name"].astype(str) if "gpu_name" in launches else pd.Series(dtype=str)
    gpu_row = None
    if gpus is not None and len(gpus):
        g = gpus.reset_index(drop=True)
        dev = launches["device_id"] if "device_id" in launches else pd.Series(dtype=np.int64)
        known_dev = dev[dev >= 0]
        if len(known_dev):
            mode_dev = int(known_dev.mode().iloc[0])
            hit = g[g["device_id"] == mode_dev]
            gpu_row = hit.iloc[0] if len(hit) else None
        if gpu_row is None and g["name"].astype(str).nunique() == 1:
            gpu_row = g.iloc[0]
        if gpu_row is None and (names == "").all():
            gpu_row = g.iloc[0]
    name = None
    non_empty = names[names != ""]
    if len(non_empty):
        name = str(non_empty.mode().iloc[0])
        if gpu_row is not None and str(gpu_row["name"]) and not _same_gpu(name, str(gpu_row["name"])):
            gpu_row = None  # the trace's GPU is another model: the CSV's GPU sets the peaks
    elif gpu_row is not None and str(gpu_row["name"]):
        name = str(gpu_row["name"])
    return name, lookup_gpu(name), gpu_row


def _same_gpu(a: str, b: str) -> bool:
    sa, sb = lookup_gpu(a), lookup_gpu(b)
    if sa is not None and sb is not None:
        return sa.key == sb.key
    return a.strip().lower() == b.strip().lower()


_PEAK_PRECISIONS = ("fp64", "fp32", "fp16", "tensor_fp16", "tensor_tf32", "tensor_fp8",
                    "tensor_int8", "tensor_fp64")


def _peaks(m: MetricTable, clock: pd.Series, spec: GpuSpec | None, gpu_row, tensor_peaks: dict,
           gpu_name: str | None) -> tuple[Peaks, dict]:
    """Per-launch peak series (FLOP/s by precision, DRAM bytes/s) + the summary Peaks (medians,
    at the median profiled SM clock)."""
    ids = m.w.index
    median_clock = fnum(clock.median()) if clock.notna().any() else None
    flop, prov = _flop_peaks(m, clock, spec, gpu_row, tensor_peaks)
    dram, l2, l1 = _memory_peaks(m, spec, gpu_row, prov)
    summary = {p: (fnum(flop[p].median()) if p in flop else None) for p in _PEAK_PRECISIONS}
    for extra in sorted(set(flop) - set(_PEAK_PRECISIONS)):
        summary[extra] = fnum(flop[extra].median())
    label = spec.display if spec else (gpu_name or "unknown GPU")
    peaks = Peaks(
        flop_per_s=summary,
        dram_bytes_per_s=fnum(dram.median()) if dram.notna().any() else None,
        l2_bytes_per_s=fnum(l2.median()) if l2.notna().any() else None,
        l1_bytes_per_s=fnum(l1.median()) if l1.notna().any() else None,
        provenance=_provenance(prov, spec, label, median_clock), provenance_by_peak=prov,
        sm_clock_hz=median_clock,
    )
    return peaks, {"flop": flop, "dram": dram if dram.notna().any() else pd.Series(np.nan, index=ids)}


def _flop_peaks(m: MetricTable, clock: pd.Series, spec: GpuSpec | None, gpu_row,
                tensor_peaks: dict) -> tuple[dict[str, pd.Series], dict[str, str]]:
    """Per-launch FLOP/s peaks by precision and where each came from, first found: ncu
    ``.peak_sustained`` × SM clock, the built-in table (at the profiled clock, else datasheet),
    the architecture rate × SMs × SM clock."""
    ids = m.w.index
    prov: dict[str, str] = {}
    flop: dict[str, pd.Series] = {}
    gpu_clock = None
    rates = None
    if gpu_row is not None:
        gpu_clock = float(gpu_row["clock_hz"]) if int(gpu_row["clock_hz"]) > 0 else None
        if int(gpu_row["cc_major"]) >= 0 and int(gpu_row["sm_count"]) > 0:
            rates = arch_rates(int(gpu_row["cc_major"]), max(int(gpu_row["cc_minor"]), 0))
    eff_clock = clock if clock.notna().any() else None
    for prec in ("fp64", "fp32", "fp16"):
        op, w = PEAK_FMA[prec]
        stem = f"sass_thread_inst_executed_op_{op}_pred_on.sum.peak_sustained"
        ncu_pk = w * m.get(f"sm__{stem}", f"smsp__{stem}") * clock
        if ncu_pk.notna().any():
            flop[prec] = ncu_pk
            prov[prec] = "ncu .peak_sustained × profiled SM clock"
    for key, s in tensor_peaks.items():
        flop[key] = s
        prov[key] = "ncu sm__ops_path_tensor_*.peak_sustained × profiled SM clock"
    for prec in _PEAK_PRECISIONS:
        if prec in flop:
            continue
        rate = spec.rate(prec) if spec is not None else None
        if spec is not None and rate is not None:
            if eff_clock is not None:
                flop[prec] = rate * spec.sm_count * eff_clock
                prov[prec] = f"built-in table ({spec.display}, {spec.source}) at the profiled SM clock"
            else:
                flop[prec] = pd.Series(spec.peak_flop_per_s(prec), index=ids)
                prov[prec] = f"built-in table ({spec.display}, {spec.source}) datasheet/boost clock"
        elif rates is not None and prec in rates:
            sm = int(gpu_row["sm_count"])
            clk = eff_clock if eff_clock is not None else (
                pd.Series(gpu_clock, index=ids) if gpu_clock else None)
            if clk is not None:
                flop[prec] = rates[prec] * sm * clk
                prov[prec] = (f"architecture rate (CC {int(gpu_row['cc_major'])}."
                              f"{int(gpu_row['cc_minor'])}) × {sm} SMs × SM clock")
    return flop, prov


def _memory_peaks(m: MetricTable, spec: GpuSpec | None, gpu_row,
                  prov: dict[str, str]) -> tuple[pd.Series, pd.Series, pd.Series]:
    """Per-launch DRAM / L2 / L1 bytes/s ceilings (ncu peak metrics × their clocks; DRAM falls
    back to the device-reported bandwidth, then the built-in table); records provenance."""
    ids = m.w.index
    dram = m.get("dram__bytes.sum.peak_sustained") * m.get("dram__cycles_elapsed.avg.per_second")
    if dram.notna().any():
        prov["dram"] = "ncu dram__bytes.sum.peak_sustained × dram__cycles_elapsed.avg.per_second"
    elif gpu_row is not None and np.isfinite(float(gpu_row["memory_bandwidth_bytes_per_s"])) \
            and float(gpu_row["memory_bandwidth_bytes_per_s"]) > 0:
        dram = pd.Series(float(gpu_row["memory_bandwidth_bytes_per_s"]), index=ids)
        prov["dram"] = "device-reported memory bandwidth (GPU info)"
    elif spec is not None and spec.dram_bytes_per_s:
        dram = pd.Series(spec.dram_bytes_per_s, index=ids)
        prov["dram"] = f"built-in table ({spec.display}, {spec.source})"
    l2 = (32.0 * m.get("lts__lts2xbar_cycles_active.sum.peak_sustained")
          * m.get("lts__cycles_elapsed.avg.per_second"))
    if l2.notna().any():
        prov["l2"] = "ncu 32 × lts__lts2xbar_cycles_active.sum.peak_sustained × L2 clock"
    l1 = 128.0 * m.get("l1tex__lsu_writeback_active_mem_lgds.sum.peak_sustained",
                       "l1tex__lsu_writeback_active_mem_lg.sum.peak_sustained",
                       "l1tex__lsu_writeback_active.sum.peak_sustained") \
        * m.get("l1tex__cycles_elapsed.avg.per_second")
    if l1.notna().any():
        prov["l1"] = "ncu 128 × l1tex LSU writeback .peak_sustained × L1 clock"
    return dram, l2, l1


def _provenance(prov: dict[str, str], spec: GpuSpec | None, label: str,
                median_clock: float | None) -> str:
    """One sentence saying where the peaks came from."""
    kinds = set(prov.values())
    if not kinds:
        if label == "unknown GPU":
            return "no peaks: the GPU is not named and the CSV has no .peak_sustained metrics"
        return f"no peaks: {label} is not in the built-in table and the CSV has no " \
               ".peak_sustained metrics"
    if all(v.startswith("ncu") for v in kinds):
        return "ncu .peak_sustained metrics × measured clocks"
    if spec is None:
        return "; ".join(sorted(kinds))
    clock_txt = (f"scaled to the median profiled SM clock {median_clock / 1e9:.3f} GHz"
                 if median_clock else "datasheet values at boost clock")
    provenance = f"built-in table: {spec.display} ({spec.source}), {clock_txt}"
    if prov.get("dram", "").startswith("device-reported"):
        provenance += "; DRAM bandwidth as reported by the device"
    return provenance


def _per_kernel(table: pd.DataFrame, precisions: list[str]) -> list[KernelRoofline]:
    """Aggregate launches by kernel name (groupby; loops only over the result rows)."""
    if table.empty:
        return []
    t = table["t_s"]
    tw = table.assign(
        occ_t=table["occupancy"] * t, sm_t=table["sm_pct"] * t, mem_t=table["mem_pct"] * t,
        occ_w=t.where(table["occupancy"].notna()), sm_w=t.where(table["sm_pct"].notna()),
        mem_w=t.where(table["mem_pct"].notna()), tc_t=table["tc"] * t, tc_w=t.where(table["tc"].notna()),
        tp_t=table["tensor_pct"] * t, tp_w=t.where(table["tensor_pct"].notna()),
        pf_t=table["peak_flop"] * t, pf_w=t.where(table["peak_flop"].notna()),
        pd_t=table["peak_dram"] * t, pd_w=t.where(table["peak_dram"].notna()),
        n=1,
    )
    sum_cols = ["t_s", "flops", "dram", "l2", "l1", "mma_inst", "occ_t", "occ_w", "sm_t", "sm_w",
                "mem_t", "mem_w", "tc_t", "tc_w", "tp_t", "tp_w", "pf_t", "pf_w", "pd_t", "pd_w",
                "n"] + [f"w_{p}" for p in precisions]
    g = tw.groupby("kernel_name", sort=False)[sum_cols].sum(min_count=1)
    g["waves"] = tw.groupby("kernel_name", sort=False)["waves"].median()
    shares = tw.groupby(["kernel_name", "bound"], sort=False)["t_s"].sum().unstack(fill_value=0.0)
    shares = shares.div(g["t_s"], axis=0)
    srcs = tw[tw["bound_source"] != ""].groupby("kernel_name", sort=False)["bound_source"].agg(
        lambda s: " + ".join(sorted(set(s))))
    g = g.sort_values("t_s", ascending=False)

    def div(a, b):
        return (a / b).where(b > 0)

    g["ai_dram"] = div(g["flops"], g["dram"])
    g["ai_l2"] = div(g["flops"], g["l2"])
    g["ai_l1"] = div(g["flops"], g["l1"])
    out = []
    # one record per *kernel name* (a few dozen), never per launch
    for name, r in zip(g.index, g.to_dict("records")):
        t_s = float(r["t_s"])
        share_row = shares.loc[name] if name in shares.index else pd.Series(dtype=float)
        bound_shares = {c: float(share_row.get(c, 0.0)) for c in BOUND_CLASSES if share_row.get(c, 0.0) > 0}
        bound = max(bound_shares, key=bound_shares.__getitem__) if bound_shares else "unknown"
        by_prec = {p: fnum(r[f"w_{p}"]) for p in precisions}
        work: dict[str, float] = {p: v for p, v in by_prec.items() if v}
        dominant = max(work, key=work.__getitem__) if work else None
        flops = fnum(r["flops"])
        ach_flop = flops / t_s if flops is not None and t_s > 0 else None
        dram = fnum(r["dram"])
        ach_dram = dram / t_s if dram is not None and t_s > 0 else None
        pk_flop = ratio(r["pf_t"], r["pf_w"])
        pk_dram = ratio(r["pd_t"], r["pd_w"])
        out.append(KernelRoofline(
            name=str(name), normalized_name=normalize_kernel_name(name),
            launches=int(r["n"]), time_ns=int(round(t_s * 1e9)), flops=flops,
            flops_by_precision=by_prec, dram_bytes=dram, l2_bytes=fnum(r["l2"]),
            l1_bytes=fnum(r["l1"]), ai_dram=fnum(r["ai_dram"]), ai_l2=fnum(r["ai_l2"]),
            ai_l1=fnum(r["ai_l1"]), achieved_flop_per_s=ach_flop,
            achieved_dram_bytes_per_s=ach_dram,
            achieved_l2_bytes_per_s=fnum(r["l2"] / t_s) if t_s > 0 else None,
            achieved_l1_bytes_per_s=fnum(r["l1"] / t_s) if t_s > 0 else None,
            dominant_precision=dominant,
            pct_of_peak_flop=(100 * ach_flop / pk_flop) if ach_flop is not None and pk_flop else None,
            pct_of_peak_dram=(100 * ach_dram / pk_dram) if ach_dram is not None and pk_dram else None,
            bound=bound, bound_shares=bound_shares, bound_source=(srcs.get(name) or None),
            tensor_core_share=ratio(r["tc_t"], r["tc_w"]),
            tensor_pipe_pct=ratio(r["tp_t"], r["tp_w"]),
            tensor_mma_inst=fnum(r["mma_inst"]),
            achieved_occupancy=ratio(r["occ_t"], r["occ_w"]),
            sol_compute_pct=ratio(r["sm_t"], r["sm_w"]),
            sol_memory_pct=ratio(r["mem_t"], r["mem_w"]),
            waves_per_sm=fnum(r["waves"]),
        ))
    return out


__all__ = ["analyze_roofline", "RooflineResult", "KernelRoofline", "Peaks", "Unavailable",
           "ROOFLINE_METRICS", "capture_hint", "BOUND_CLASSES", "TIME_WEIGHT_KEYS"]
