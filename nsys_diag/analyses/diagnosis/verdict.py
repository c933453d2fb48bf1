"""One verdict from the findings: code, headline, evidence (with thresholds), advice, projection.

``diagnose(inputs, th)`` works on ``VerdictInputs`` — plain numbers gathered by ``suite.py`` — so
each rule is testable without a trace. Every number it compares is a field of ``Thresholds``.
The findings (one per measured cost, fired or not) are built by ``analyses/diagnosis/findings.py``; their
advice, each text with the condition that earns it, by ``analyses/diagnosis/advice.py``.

Rules, in the order they are applied
------------------------------------
0. ``insufficient_data`` — no CUDA kernel in the analysed window (or an empty window). An Nsight
   Compute CSV alone (kernel counters, no timeline) gives ``memory_bound``/``compute_bound`` when
   ≥ 50% of the profiled kernel time is in that roofline class, else ``insufficient_data``.
1. Abstain only when blind: less than ``min_kernel_time_ns_to_diagnose`` of kernel time in the
   whole capture, or the GPU busy < ``min_busy_share_to_diagnose`` of the capture and of the
   window (without a launch-shape sample: fewer than ``min_kernels_to_diagnose`` kernels or
   under 10 ms in the window) → ``insufficient_data`` "too little GPU work to diagnose", with
   capture-range advice; the findings are still reported. Abstaining is high confidence unless
   a data-quality warning lowers it.
2. Start-up idle ≥ ``startup_dominated_share`` of the window → ``insufficient_data`` ("the
   capture is mostly start-up"), capture-range advice.
3. With the replay's prices (``VerdictInputs.savings``: finding cause → what-if saving, the map
   of ``analyses/diagnosis/pricing.py``): the finding whose what-if saves the most wins when it
   saves ≥ ``verdict_min_saving_share`` of the mean analysed step — of the replayed window when
   there are no steps (its savings are then ms over that window) — (rule row
   ``replay.saves_share``; only a fired finding: one its own rule did not fire never decides); its
   headline says what the fix saves. Otherwise the fired idle findings that no what-if prices
   (none exists for the cause, or it saves nothing in every replayed step: the replay does not
   model that mechanism in this trace) by their measured cost (evidence ``replay.unpriced``, no
   projection); otherwise a fired GPU-side finding in the order memory-bound > latency-bound >
   no Tensor Cores, then rule 5 (where the kernel-name rule needs utilization ≥
   ``low_utilization`` and ``no_dominant_cause`` says what the step waits on — the critical
   path's top kinds — and the largest savings). Rule 4 does not apply.
   Without the replay's prices (``NSYS_DIAG_NO_REPLAY=1``, an ncu CSV, data the replay cannot
   model, inputs made by hand) the fallback: the fired finding with the largest cost (idle
   causes, exposed communication, memory-bound and no-Tensor-Core kernel time) is the verdict,
   and its evidence says why the replay did not price it (``replay.unavailable_reason``).
4. Fallback only: nothing fired but utilization < ``low_utilization``: the largest idle cause is
   promoted (its rule row "gpu.utilization < low_utilization" added) and decides with low
   confidence.
5. Otherwise the GPU side decides: ``memory_bound`` (low confidence) when, without counters,
   ≥ ``elementwise_share_memory_bound`` of kernel time is elementwise/reduction/memory kernels,
   else ``compute_bound`` when its own rule holds (utilization ≥ ``high_utilization``), else
   ``no_dominant_cause`` (low confidence; no default verdict). ``latency_bound`` is a fired
   finding of rule 3 (``findings.latency_finding``). A healthy run (utilization ≥
   ``healthy_utilization``) cannot have an idle finding at warning: at most 10% idle remains, the lowest idle threshold.

Confidence: high when the verdict's saving (fallback: cost) is ≥ 2 × the next largest one (GPU
side: counters and
≥ ``high_utilization``), medium otherwise, low for the fallbacks of rules 4–5 and for unattributed
(``other``) idle. Capped at medium with fewer than ``min_steps_for_high_confidence`` analysed
steps, without phases, without counters (no GPU metrics, no ncu) or without steps; lowered one
level by data-quality warnings. ``secondary`` lists the codes of the other fired findings at
warning or above. ``recommendations`` (= ``advice`` texts) hold only advice of fired findings, the
verdict's first. A fired finding the replay priced below ``limiting_min_saving_share`` of the step
(it made the change; the step stayed as long) is not limiting: it stays listed, without advice,
with the evidence ``replay.not_limiting``, and gives no secondary verdict.
``projected_step_ms_if_fixed`` is the replay's ``step_ms_after`` of the
verdict finding's what-if, ``None`` when no what-if prices it. Fallback without the replay's
prices only: the verdict finding's share removed from the mean step (input with a data phase:
loader overlapped → max(data, rest of step); no Tensor Cores: non-TC GEMM time halved, a
conservative speed-up); ``None`` without steps or a sound projection.
"""
from __future__ import annotations

import dataclasses
import re

from nsys_diag.analyses.diagnosis.findings import (
    GPU_SIDE_CAUSES,
    MEMORY_BOUND_ROOFLINE_SHARE,
    Advice,
    Evidence,
    Finding,
    context,
    make,
    promote,
    rule,
)
from nsys_diag.analyses.diagnosis.findings import ms_text as _ms
from nsys_diag.analyses.diagnosis.advice import (Rule, advice_flavour, build_findings, with_advice,
                                                 worded)
from nsys_diag.analyses.diagnosis.pricing import (Saving, as_not_limiting, covers_part_of, made_of_words,
                                                  not_limiting, per_of, top_savings_words,
                                                  unpriced_reason)
from nsys_diag.model.thresholds import Thresholds
from nsys_diag.analyses.diagnosis.scale_advice import scale_advice
from nsys_diag.analyses.diagnosis.verdict_types import Verdict, VerdictInputs
from nsys_diag.model.vocabulary import (NCU_CAPTURE_COMMAND, NSYS_CAPTURE_COMMAND,
                                        NSYS_EXPORT_SQLITE, NSYS_TRACE_CUDA_NVTX)

__all__ = ["Evidence", "Finding", "Verdict", "VerdictInputs", "diagnose"]

NON_TC_ASSUMED_SPEEDUP = 2.0
"""Projection only: GEMMs moved from CUDA cores to Tensor Cores assumed ≥ 2× faster (peak ratios
are 8–16× for TF32/BF16 vs FP32 on A100/H100; 2× keeps the promise conservative)."""

LARGER_BATCH = re.compile(r"larger (?:per-GPU )?batch|batch size|raise the batch", re.IGNORECASE)
"""Advice that asks for a larger batch: never offered beside an input-bound verdict (the GPU
already waits for its input; a larger batch makes each wait longer)."""

NOT_COMPETING = ("compute", "startup", "too_little_work")
"""Causes that never win by cost: compute is the no-problem outcome, start-up and too little work
are abstain rules applied before the costs."""


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.0f}%"


def _lower(conf: str) -> str:
    return {"high": "medium", "medium": "low", "low": "low"}[conf]


def _cap(conf: str, limit: str) -> str:
    order = ("low", "medium", "high")
    return order[min(order.index(conf), order.index(limit))]


RECOMMENDATIONS: dict[str, tuple[Rule, ...]] = {
    "memory_bound": (
        Rule("Fuse chains of elementwise/normalization kernels (torch.compile) to cut DRAM round "
             "trips.", ("roofline.memory_bound_share",),
             variants=(("neutral", "Fuse chains of memory-bound kernels (one pass over the data "
                                   "instead of several) to cut DRAM round trips."),)),
        Rule("Keep activations in bf16/fp16 (autocast) to halve the bytes moved.",
             ("roofline.memory_bound_share",),
             variants=(("neutral", "Keep the data in 16-bit types (bf16/fp16) where the "
                                   "precision allows, to halve the bytes moved."),)),
    ),
    "compute_bound": (
        Rule("The GPU is the bottleneck: use fused/optimized kernels (FlashAttention, fused "
             "optimizers, torch.compile) for the top kernels of the roofline table.",
             ("roofline.compute_bound_share",),
             variants=(("neutral", "The GPU is the bottleneck: use tuned library kernels "
                                   "(cuBLAS, cuDNN, CUTLASS) for the top kernels of the "
                                   "roofline table where they fit."),)),
    ),
}
"""Kernel-level (ncu CSV only) advice, worded per program (``advice.worded``); everything else is
in ``advice.ADVICE``."""


def _as_advice(recs, because: tuple[str, ...] = ()) -> tuple[Advice, ...]:
    return tuple(Advice(r, because) for r in recs)


def _memory_advice(x: VerdictInputs, th: Thresholds, code: str = ""
                   ) -> tuple[str | None, Evidence | None]:
    """Batch-size advice earned by the GPU memory peak (context for every verdict), worded per
    program; never a larger batch for an input-bound run (the GPU already waits for input)."""
    if x.memory_peak_share is None:
        return None, None
    torch = advice_flavour(x.framework) == "pytorch"
    if x.memory_peak_share < th.memory_headroom_frac and code != "input_bound":
        more = ("raise the per-GPU batch size (or reduce gradient accumulation)" if torch else
                "give each GPU a larger problem (more work per launch)")
        return (f"GPU memory headroom: peak use is {_pct(x.memory_peak_share)} of device memory — "
                f"{more} to give each kernel more work." if torch else
                f"GPU memory headroom: peak use is {_pct(x.memory_peak_share)} of device memory — "
                f"{more}.",
                rule("memory.peak_share", x.memory_peak_share, th.memory_headroom_frac, "<", "timeline"))
    if x.memory_peak_share > th.memory_near_full_frac:
        fix = ("use activation (gradient) checkpointing, mixed precision or sharding (FSDP/ZeRO) "
               "before raising the batch" if torch else
               "keep fewer arrays resident, use 16-bit types where the precision allows, or split "
               "the problem across GPUs before making it larger")
        return (f"GPU memory nearly full ({_pct(x.memory_peak_share)} peak): {fix}.",
                rule("memory.peak_share", x.memory_peak_share, th.memory_near_full_frac, ">", "timeline"))
    return None, None


def _insufficient(x: VerdictInputs) -> Verdict:
    missing = ", ".join(x.missing) if x.missing else "no CUDA kernels in the analysed window"
    if x.window_selection_empty:  # the selection missed the GPU work: nothing to re-capture
        recs = tuple(f"{h}." for h in x.capture_hints)
        scale = ("Unknown: the analysed window holds no GPU activity to judge; analyse one "
                 "that does before deciding on more or bigger GPUs.")
    else:
        recs = tuple(f"Re-capture: {h}" for h in x.capture_hints) or (
            f"Re-capture with: {NSYS_CAPTURE_COMMAND}, then {NSYS_EXPORT_SQLITE} report.nsys-rep",)
        scale = ("Unknown: the trace has no GPU activity to judge; re-capture it with the "
                 "flags below before deciding on more or bigger GPUs.")
    return Verdict(
        code="insufficient_data",
        headline=f"Not enough data for a diagnosis: {missing}.",
        confidence="medium" if x.data_warnings else "high",
        scale_advice=scale,
        evidence=(Evidence("kernels_in_window", 0, None, "info", "capture"),) + ((
            Evidence("capture.launch_calls_without_kernels", x.launch_calls_without_kernels,
                     None, "info", "capture"),) if x.launch_calls_without_kernels else ()),
        recommendations=recs, projected_step_ms_if_fixed=None,
        advice=_as_advice(recs, ("kernels_in_window",)), finding="too_little_work")


def _kernel_facts(x: VerdictInputs) -> tuple[str, list[Evidence]]:
    """What an ncu CSV alone says in words: its profiled kernels and, where the tensor pipe was
    measured, their Tensor Core share — and the evidence rows those numbers come from."""
    n = int(x.kernel_count or 0)
    ms = float(x.kernel_time_ms or 0.0)
    ev = [context("kernels.count", n, "ncu"), context("kernels.total_ns", int(round(ms * 1e6)),
                                                       "ncu")]
    text = f"{n} profiled kernel launches ({ms:.3f} ms)"
    if x.tc_share_of_kernel_time is not None:
        ev.append(context("tensor_cores.share_of_kernel_time", x.tc_share_of_kernel_time, "ncu"))
        text += (f", {_pct(x.tc_share_of_kernel_time)} of their time on Tensor Cores "
                 f"({x.tc_confidence or 'ncu'} confidence)")
    return text, ev


def _kernel_level(x: VerdictInputs) -> Verdict:
    """An ncu CSV without a timeline: classify the profiled kernel time when the roofline
    counters are there, else list what the counters say and what is missing."""
    flavour = advice_flavour(x.framework)
    timeline = (f"Capture an nsys timeline of the same run ({NSYS_TRACE_CUDA_NVTX}) to see "
                "whether the GPU waits on input, launches or the host between kernels.")
    facts, facts_ev = _kernel_facts(x)
    unknown = ("Unknown without a timeline: capture one with nsys before deciding on more or "
               "bigger GPUs.")
    if x.roofline_memory_share is None:  # the roofline counters (FLOP, DRAM bytes) are missing
        recs = (f"Re-profile with the roofline counters (FLOP and DRAM bytes): "
                f"{NCU_CAPTURE_COMMAND}.", timeline)
        return Verdict(
            "insufficient_data",
            f"Kernel-level data only: {facts}; roofline not available: counters missing (no FLOP "
            "or DRAM-byte counters), and without a timeline the run cannot be judged.",
            "medium", unknown, tuple(facts_ev), recs, None,
            advice=_as_advice(recs, ("roofline.available", "kernels.count")),
            finding="too_little_work")
    mem = float(x.roofline_memory_share or 0.0)
    comp = float(x.roofline_compute_share or 0.0)
    conf = _lower(x.roofline_confidence or "medium")  # counters, but no run-level timeline
    ev = (rule("roofline.memory_bound_share", mem, MEMORY_BOUND_ROOFLINE_SHARE, ">=", "ncu"),
          rule("roofline.compute_bound_share", comp, MEMORY_BOUND_ROOFLINE_SHARE, ">=", "ncu"),
          *facts_ev)
    because = ("roofline.memory_bound_share", "roofline.compute_bound_share")
    if mem >= MEMORY_BOUND_ROOFLINE_SHARE or comp >= MEMORY_BOUND_ROOFLINE_SHARE:
        code = "memory_bound" if mem >= comp else "compute_bound"
        what = "memory-bound" if code == "memory_bound" else "compute-bound"
        head = (f"{what.capitalize()} kernels: {_pct(max(mem, comp))} of the profiled kernel time "
                f"(Nsight Compute roofline; kernel level only, no timeline).")
        kept: tuple[str, ...] = tuple(t for t in (worded(r, flavour) for r in RECOMMENDATIONS[code])
                                      if t is not None) + (timeline,)
        return Verdict(code, head, conf, scale_advice(code, "", None, x), ev, kept, None,
                       advice=_as_advice(kept, because),
                       finding="memory_bound" if code == "memory_bound" else "compute")
    recs = (timeline, "Latency-bound kernels: raise occupancy and grid size (more blocks and "
                      "threads per launch, fewer tiny launches), then re-profile with "
                      f"{NCU_CAPTURE_COMMAND}.")
    return Verdict(
        "insufficient_data",
        f"Kernel-level data only: {_pct(mem)} memory-bound and {_pct(comp)} compute-bound "
        "kernel time — most profiled time is latency-bound or under-occupied, and without a "
        "timeline the run cannot be judged.",
        conf, unknown, ev, recs, None, advice=_as_advice(recs, because), finding="too_little_work")


# ----------------------------------------------------------------------------- choice
def _by_cause(fs: list[Finding], cause: str) -> Finding | None:
    return next((f for f in fs if f.cause == cause), None)


def _gpu_side(x: VerdictInputs, th: Thresholds, fs: list[Finding]) -> tuple[Finding, str]:
    """Nothing fired: memory-bound by kernel names (low confidence), compute-bound when its own
    rule holds, else no dominant cause (no default verdict). With the replay's prices the
    kernel-name rule needs the GPU busy (utilization ≥ ``low_utilization``): a mostly idle GPU
    is not limited by its kernels, and ``no_dominant_cause`` says what the step waits on."""
    ew = sum(float(x.category_share.get(c, 0.0)) for c in ("elementwise", "reduction", "memory"))
    busy = x.savings is None or x.utilization >= th.low_utilization
    if ew >= th.elementwise_share_memory_bound and busy:
        f = make(x, "memory_bound", None,
                 [rule("kernels.elementwise_share", ew, th.elementwise_share_memory_bound, ">=",
                       "kernel names")], th.elementwise_share_memory_bound, ew,
                 f"Memory-bound: {_pct(ew)} of kernel time in elementwise/reduction kernels")
        return f, "low"
    comp = _by_cause(fs, "compute")
    assert comp is not None
    if not comp.fired:
        return _no_dominant_cause(comp, x, th, fs), "low"
    counters = _has_counters(x)
    high = x.utilization >= th.high_utilization
    return comp, "high" if high and counters else "medium"


def _no_dominant_cause(comp: Finding, x: VerdictInputs, th: Thresholds,
                       fs: list[Finding]) -> Finding:
    """No rule decided, the compute-bound one included: say so, with the rule rows that did not
    fire; with the replay's prices, what the step is made of and the largest savings."""
    head = (f"No dominant cause: no rule fired (GPU utilization {_pct(x.utilization)}, below the "
            "compute-bound level, and no idle cause or GPU-side limit reached its threshold)")
    evidence = comp.evidence
    if x.savings is not None:
        made = made_of_words(x.made_of)
        tops = top_savings_words(x.savings)
        per = per_of(x.savings)
        evidence += tuple(context(m, v, "replay") for m, v in (
            ("replay.waits_on", made), ("replay.top_savings", tops)) if v)
        head = ("No dominant cause: " + (f"the {per} waits on {made}; " if made else "")
                + "no cause that reached its threshold has a fix saving "
                + f"{_pct(th.verdict_min_saving_share)} of the {per}"
                + (f" (largest what-if savings, any cause: {tops})" if tops else "")
                + f"; GPU utilization {_pct(x.utilization)}")
    return Finding(code="no_dominant_cause", cause="no_dominant_cause", severity="info",
                   fired=False, share_of_window=None, per_step_ms=None, threshold=comp.threshold,
                   evidence=evidence, headline=head)


def _has_counters(x: VerdictInputs) -> bool:
    if x.has_counters is not None:
        return bool(x.has_counters)
    return bool(x.metrics) or x.roofline_memory_share is not None \
        or x.tensor_active_during_gemm is not None


OTHER_MARGIN = 1.25
"""``other`` (idle time no trace evidence explains) decides by measured cost over a named cause
only when it costs more than this many times as much: a named cause of about the same cost
(the host's code after a sync, 27.2%, beside 27.3% unexplained) is the verdict a user can act
on."""


def _rank(f: Finding) -> float:
    """A fired finding's measured cost as the verdict ranks it (``OTHER_MARGIN``)."""
    return f.cost / OTHER_MARGIN if f.cause == "other" else f.cost


def _choose(x: VerdictInputs, th: Thresholds, fs: list[Finding]) -> tuple[Finding, str]:
    """(the verdict's finding, confidence before the caps); see the module docstring."""
    for cause in ("too_little_work", "startup"):
        f = _by_cause(fs, cause)
        if f is not None and f.fired:
            return f, "high"
    if x.savings is not None:
        return _choose_priced(x, th, fs)
    competing = [f for f in fs if f.cause not in NOT_COMPETING]
    fired = [f for f in competing if f.fired]
    if fired:
        top = max(fired, key=_rank)
        rest = sorted((f.cost for f in competing if f is not top), reverse=True)
        second = rest[0] if rest else 0.0
        conf = "high" if top.cost >= 2 * max(second, 1e-12) else "medium"
        if top.cause == "other":
            conf = "low"  # idle time that no phase, CUDA call or OS call explains
        return top, conf
    idle = [f for f in competing if f.cause not in ("memory_bound", "no_tensor_cores", "exposed_communication")
            and f.cost > 0 and all(e.fired for e in f.evidence if e.role == "rule"
                                   and not e.metric.startswith("gaps."))]  # e.g. launch: small kernels
    if x.utilization < th.low_utilization and idle:
        top = max(idle, key=lambda f: f.cost)
        return promote(top, rule("gpu.utilization", x.utilization, th.low_utilization, "<",
                                 "timeline")), "low"
    return _gpu_side(x, th, fs)


GPU_SIDE_ORDER = ("memory_bound", "latency", "no_tensor_cores")
"""Fired GPU-side findings decide in this order when no fix saves enough (compute, then
``no_dominant_cause``, follow in ``_gpu_side``)."""


def _choose_priced(x: VerdictInputs, th: Thresholds, fs: list[Finding]) -> tuple[Finding, str]:
    """Rule 3 with the replay's prices: the fired, priced finding that saves the most, when it
    saves ≥ ``verdict_min_saving_share`` of the step and no fired idle finding that no what-if
    prices idles the GPU longer than that saving (its fix may save more: the host's own code
    after a sync, 27% of the window, beside MPI calls whose removal saves 16%; ``_rank``) (a
    finding its own rule did not fire never
    decides: its saving is listed by ``no_dominant_cause`` and the what-if table, and the user's
    thresholds keep their meaning); else the fired idle findings no what-if
    prices (none, or one that saves nothing in every replayed step: the replay does not model
    their mechanism in this trace, e.g. MPI host calls, unified-memory migrations) by their
    measured cost; else the GPU side in ``GPU_SIDE_ORDER``."""
    savings = {c: v for c, v in (x.savings or {}).items() if v.prices}
    priced = [(f, savings[f.cause]) for f in fs
              if f.fired and f.cause not in NOT_COMPETING and f.cause in savings]
    unpriced = [f for f in fs if f.fired and f.cause not in NOT_COMPETING
                and f.cause not in savings and f.cause not in GPU_SIDE_CAUSES]
    if priced:
        top, s = max(priced, key=lambda fs_: (fs_[1].saves_ms, fs_[0].cost))
        # an unpriced cause that idles the GPU longer than the best fix saves may save more
        larger = [f for f in unpriced if _rank(f) > s.saves_share]
        if s.saves_share >= th.verdict_min_saving_share and not larger:
            rest = [v.saves_ms for v in {v.what_if: v for v in savings.values()}.values()
                    if v.what_if != s.what_if]
            conf = "high" if s.saves_ms >= 2 * max(max(rest, default=0.0), 1e-12) else "medium"
            return _with_price(top, s, th), "low" if top.cause == "other" else conf
    gpu_side = max((f.cost for f in fs if f.fired and f.cause in GPU_SIDE_ORDER), default=0.0)
    unpriced = [f for f in unpriced if f.cost > gpu_side]  # a larger GPU-side limit comes first
    if unpriced:  # the replay cannot model their mechanism here: their measured cost decides
        top = max(unpriced, key=_rank)
        rest = sorted((f.cost for f in unpriced if f is not top), reverse=True)
        conf = "medium" if top.cost >= 2 * max(rest[0] if rest else 0.0, 1e-12) else "low"
        return dataclasses.replace(top, evidence=top.evidence + (context(
            "replay.unpriced", f"{unpriced_reason(top.cause)}: the verdict by its measured cost",
            "replay"),)), conf
    for cause in GPU_SIDE_ORDER:
        f = _by_cause(fs, cause)
        if f is not None and f.fired and not not_limiting(f, savings, th.limiting_min_saving_share):
            s_ = savings.get(cause)
            f = _with_price(f, s_, th) if s_ is not None else f
            return f, "high" if _has_counters(x) and cause != "latency" else "medium"
    return _gpu_side(x, th, fs)


def _with_price(f: Finding, s: Saving, th: Thresholds) -> Finding:
    """``f`` with its replay price as evidence: the saving's rule row and the what-if."""
    return dataclasses.replace(f, evidence=f.evidence + (
        # the replay's own figures, unrounded: the rows point at them (report/quantities.py)
        rule("replay.saves_share", s.saves_share, th.verdict_min_saving_share, ">=", "replay"),
        context("replay.saves_ms_per_step", s.saves_ms, "replay"),
        context("replay.what_if", s.what_if, "replay"),
        context("replay.change", s.change, "replay"),
        context("replay.step_ms_after", s.step_ms_after, "replay"),
        # the mean step the saving is a share of (saving + step after: the headline's "of the
        # … ms mean step")
        context("replay.step_ms", s.saves_ms + s.step_ms_after, "replay")))


def _saves(x: VerdictInputs, f: Finding) -> float:
    """The replay's saving of ``f`` (ms per step; -1 when it is not priced)."""
    s = (x.savings or {}).get(f.cause)
    return s.saves_ms if s is not None else -1.0


def _confidence(x: VerdictInputs, th: Thresholds, conf: str, chosen: Finding) -> str:
    if chosen.code == "insufficient_data":  # abstaining: only the data-quality warnings lower it
        return _lower(conf) if x.data_warnings else conf
    # the warnings that there are no steps count once, as the no-steps cap below
    if x.data_warnings - x.no_steps_warnings > 0 and conf != "low":
        conf = _lower(conf)
    few = x.steps_source is None or (x.analysed_steps is not None
                                    and x.analysed_steps < th.min_steps_for_high_confidence)
    if few or not x.phase_share or not _has_counters(x):
        conf = _cap(conf, "medium")
    return conf


def diagnose(x: VerdictInputs, th: Thresholds | None = None) -> Verdict:
    """Exactly one verdict (see module docstring for the rules)."""
    th = th or Thresholds()
    if x.kernel_level_only and (x.has_kernels or x.roofline_memory_share is not None):
        return _kernel_level(x)
    if not x.has_kernels or x.window_ms <= 0:
        return _insufficient(x)
    fs = build_findings(x, th)
    chosen, conf = _choose(x, th, fs)
    # priced by the replay at (almost) nothing: listed with the reason, argued from never
    fs = [as_not_limiting(f, (x.savings or {})[f.cause]) if f.cause != chosen.cause
          and not_limiting(f, x.savings, th.limiting_min_saving_share) else f for f in fs]
    chosen = with_advice(chosen, x, th, force=True)
    fs = [chosen if f.cause == chosen.cause else f for f in fs]
    if all(f.cause != chosen.cause for f in fs):
        fs.append(chosen)
    conf = _confidence(x, th, conf, chosen)
    # abstaining: the findings stay listed, but no secondary verdict or advice is argued from them
    # (nor from the ones not limiting: as_not_limiting left them at severity info)
    others = [] if chosen.code == "insufficient_data" else [
        f for f in fs if f is not chosen and f.fired and f.severity != "info"
        and f.code != "insufficient_data"]
    others.sort(key=lambda f: (-_saves(x, f), -f.cost))
    secondary = tuple(dict.fromkeys(f.code for f in others if f.code != chosen.code))
    advice = list(chosen.advice)
    for f in others:
        advice += [a for a in f.advice[:2]
                   if not (chosen.code == "input_bound" and LARGER_BATCH.search(a.text))]
    ev = list(chosen.evidence)
    if not any(e.metric == "gpu.utilization" for e in ev):
        ev.insert(0, context("gpu.utilization", x.utilization, "timeline"))
    if x.copy_only_share > 0.05:
        ev.append(context("gpu.copy_only_share", x.copy_only_share, "timeline"))
    if x.savings is None and x.replay_reason and chosen.code != "insufficient_data":
        ev.append(context("replay.unavailable_reason", "no fix is priced by the replay, so "
                          f"the measured costs decide: {x.replay_reason}", "replay"))
    if chosen.code != "insufficient_data":
        mem_rec, mem_ev = _memory_advice(x, th, chosen.code)
        if mem_rec and mem_ev is not None:
            advice.append(Advice(mem_rec, ("memory.peak_share",)))
            ev.append(mem_ev)
    advice = list({a.text: a for a in advice}.values())
    return Verdict(code=chosen.code, headline=_headline(chosen, x), confidence=conf,
                   scale_advice=scale_advice(chosen.code, chosen.cause, chosen.share_of_window, x),
                   evidence=tuple(ev), recommendations=tuple(a.text for a in advice),
                   projected_step_ms_if_fixed=_project(chosen, x),
                   secondary=secondary, advice=tuple(advice), finding=chosen.cause,
                   findings=tuple(_sorted(fs)))


def _sorted(fs: list[Finding]) -> list[Finding]:
    return sorted(fs, key=lambda f: (not f.fired, -f.cost))


def _project(f: Finding, x: VerdictInputs) -> float | None:
    """The replay's step after the verdict finding's what-if (module docstring); the fallback
    formulas only without the replay's prices."""
    if x.savings is not None:
        s = x.savings.get(f.cause)
        priced = s is not None and s.prices and f.code != "insufficient_data"
        return s.step_ms_after if priced and s is not None else None
    step = x.step_ms
    if step is None or step <= 0 or f.code in ("insufficient_data", "memory_bound", "compute_bound",
                                                "latency_bound", "no_dominant_cause"):
        return None
    if f.cause == "input":
        data = x.phase_ms.get("data")
        if data:
            return max(data, step - data)
    if f.cause == "no_tensor_cores":
        if not x.non_tc_gemm_share:
            return None
        kernel_ms = x.utilization * step
        return step - kernel_ms * x.non_tc_gemm_share * (1 - 1 / NON_TC_ASSUMED_SPEEDUP)
    return step * (1 - min(max(f.cost, 0.0), 1.0))


def _headline(f: Finding, x: VerdictInputs) -> str:
    if f.cause == "too_little_work" and x.capture_kernel_ms is not None:
        return (f"Not enough data for a diagnosis: too little GPU work to diagnose "
                f"({x.capture_kernel_ms:.1f} ms of kernel time in the capture, the GPU busy "
                f"{_pct(x.capture_busy_share)}).")
    if f.cause == "too_little_work":
        return (f"Not enough data for a diagnosis: too little GPU work to diagnose "
                f"({x.kernel_count if x.kernel_count is not None else '?'} kernels, "
                f"{(x.kernel_time_ms or 0.0):.1f} ms of kernel time in the analysed window).")
    if f.cause == "startup":
        return f"Not enough data for a diagnosis: {f.headline[0].lower()}{f.headline[1:]}."
    if f.cause == "compute":  # the finding states the fact; the verdict names it
        return f"Compute-bound: {f.headline[0].lower()}{f.headline[1:]}."
    if f.cause == "no_dominant_cause":
        return f.headline + "."
    s = (x.savings or {}).get(f.cause)
    priced = any(e.metric == "replay.saves_share" for e in f.evidence)  # its numbers are rows
    if s is not None and s.prices and priced:
        step = s.saves_ms + s.step_ms_after
        of = f"the {_ms(step)} ms " + ("mean step" if s.per == "step" else "window (no steps)")
        if s.per == "window" and covers_part_of(x.window_ms, step):
            of = (f"the first {_ms(step)} ms of the {_ms(x.window_ms)} ms window, the part the "
                  "replay covers (no steps)")
        return (f"{f.headline}; the replay: fixing it saves {_ms(s.saves_ms)} ms of {of} "
                f"({_pct(s.saves_share)}; {s.change}); GPU utilization {_pct(x.utilization)}.")
    return f"{f.headline}; GPU utilization {_pct(x.utilization)}."
