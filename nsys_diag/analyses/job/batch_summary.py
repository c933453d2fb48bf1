"""Per-trace summaries (for batch indexes, caching and compare) and run-set comparison.

``summarize_view`` shrinks one analysis view (docs/JSON.md) to the numbers batch and compare need:
per-step durations (and per-step phase times when the view has them), canonical phase means and
shares, GPU busy, Tensor Core share, idle time by cause per step, top kernels keyed by their
normalised family name, communication time, session start (UTC), rank evidence, the GPU models,
the replay's what-ifs (``what_if``: id, finding, change, saving and step after, for
``compare_predicted``) and — without steps — the fixed 10 ms bins of the window
(``timeline.window_bins``, for ``analyses/compare_window``). It is small and JSON-able, so it
is what the batch cache stores.

``compare_runs`` compares two lists of summaries (each list = runs of one side) metric by metric
with ``compare_stats``, explains the step-time delta, scores the pair's comparability, compares
window rates when a side has no steps, and decides whether the ``--fail-on-regression`` gate can
be evaluated (``gate``). Pure: no I/O.
"""
from __future__ import annotations

from nsys_diag.model.jsonsafe import finite

from collections import Counter
from typing import Sequence, cast

import numpy as np

from nsys_diag.analyses.job.compare_stats import (
    DEFAULT_SETTINGS,
    CompareSettings,
    MetricComparison,
    compare_metric,
    explain_delta,
    is_regression,
    mean_delta,
)
from nsys_diag.analyses.job.compare_predicted import predicted_vs_measured
from nsys_diag.analyses.job.compare_window import comparability, window_rate_metrics
from nsys_diag.analyses.kernels.names import normalize_kernel_name
from nsys_diag.analyses.job.ranks import RankInput
from nsys_diag.model.vocabulary import EXPLAIN_OTHER, PHASE_DISPLAY_ORDER, gpu_named

SUMMARY_VERSION = 3
TOP_KERNELS = 40
"""Kernel families kept per trace summary (by total time)."""
COMPARE_KERNELS = 10
"""Kernel families compared (the largest by time across both sides)."""
ANALYSED_KINDS = ("normal", "outlier")
"""Steps that count in distributions: warm-up and incomplete steps are excluded (like analyze);
outlier steps (e.g. a periodic checkpoint) are real cost and stay in."""


def _section(view: dict, key: str) -> dict:
    v = view.get(key)
    return v if isinstance(v, dict) else {}


def phase_sort_key(name: str) -> tuple:
    return (PHASE_DISPLAY_ORDER.index(name) if name in PHASE_DISPLAY_ORDER
            else len(PHASE_DISPLAY_ORDER), name)


def _phase_means(view: dict) -> dict[str, dict]:
    """Mean ms and share per canonical phase (rows of one canonical summed), display order, with
    the GPU side of each phase: ``gpu_busy_ms`` (kernel busy time inside the phase's span) and
    ``gpu_work_ms`` (durations of the kernels launched in it), mean ms per step, None when the
    view has no GPU activity (analyses/steps/phases.py)."""
    phases: dict[str, dict] = {}
    for row in view.get("phases") or []:
        if not isinstance(row, dict):
            continue
        canon = str(row.get("canonical") or "other")
        agg = phases.setdefault(canon, {"mean_ms": 0.0, "share": 0.0, "gpu_busy_ms": None,
                                        "gpu_work_ms": None})
        agg["mean_ms"] += finite(row.get("mean_ms")) or 0.0
        agg["share"] += finite(row.get("share")) or 0.0
        for key in ("gpu_busy_ms", "gpu_work_ms"):
            v = finite(row.get(key))
            if v is not None:
                agg[key] = (agg[key] or 0.0) + v
    return {k: phases[k] for k in sorted(phases, key=phase_sort_key)}


def _kernel_families(view: dict, per_step_div: int | None) -> tuple[list[dict], float | None]:
    """(the ``TOP_KERNELS`` kernel families by total time, with ms per step; communication
    kernel ms per step — None without kernels). Per run when there are no steps."""
    families: dict[str, dict] = {}
    for k in view.get("kernels") or []:
        if not isinstance(k, dict):
            continue
        raw = k.get("name") or k.get("short_name") or ""
        key = normalize_kernel_name(raw) or str(k.get("short_name") or raw)[:200]
        fam = families.setdefault(key, {"key": key, "name": str(raw)[:300], "total_ns": 0,
                                        "count": 0, "category": k.get("category"),
                                        "tensor_core": bool(k.get("tensor_core"))})
        fam["total_ns"] += int(finite(k.get("total_ns")) or 0)
        fam["count"] += int(finite(k.get("count")) or 0)
        fam["tensor_core"] = fam["tensor_core"] or bool(k.get("tensor_core"))
    kernels = sorted(families.values(), key=lambda f: (-f["total_ns"], f["key"]))[:TOP_KERNELS]
    for f in kernels:
        f["ms_per_step"] = f["total_ns"] / 1e6 / per_step_div if per_step_div else f["total_ns"] / 1e6
    comm_ns = sum(f["total_ns"] for f in families.values() if f.get("category") == "communication")
    comm = None
    if kernels:
        comm = comm_ns / 1e6 / per_step_div if per_step_div else comm_ns / 1e6
    return kernels, comm


def _gpu_models(trace: dict) -> list[str]:
    """Distinct GPU model names of the trace (``trace.gpus[].name``), sorted; GPUs the input
    does not name (``name_known`` false: a ``GPU <id>`` placeholder) are no model."""
    return sorted({str(g.get("name"))[:200] for g in trace.get("gpus") or []
                   if isinstance(g, dict) and gpu_named(g)})


def summarize_view(view: dict, *, rank_evidence: Sequence[dict] = ()) -> dict:
    """Small JSON-able summary of one analysis view (see module docstring).

    ``rank_evidence``: dicts ``{rank, local_rank, node, source, strength}`` found in the trace
    (environment, thread names) — numbers only.
    """
    trace = _section(view, "trace")
    steps = _section(view, "steps")
    verdict = _section(view, "verdict")
    per_step = [s for s in (steps.get("per_step") or []) if isinstance(s, dict)]
    analysed = [s for s in per_step if s.get("kind", "normal") in ANALYSED_KINDS
                and finite(s.get("duration_ms")) is not None]
    step_phase: dict[str, list[float]] = {}
    if analysed and all(isinstance(s.get("phases"), dict) for s in analysed):
        names = sorted({k for s in analysed for k in s["phases"]}, key=phase_sort_key)
        step_phase = {n: [float(finite(s["phases"].get(n)) or 0.0) for s in analysed] for n in names}
    n_steps = len(analysed)

    phases = _phase_means(view)
    per_step_div = n_steps if n_steps else None
    gaps = _section(view, "gaps")
    gaps_per_step = {}
    for cause, ms in (gaps.get("by_cause") or {}).items():
        v = finite(ms)
        if v is not None:
            gaps_per_step[str(cause)] = v / per_step_div if per_step_div else v
    kernels, comm = _kernel_families(view, per_step_div)
    kernel_total_ns = sum(int(finite(k.get("total_ns")) or 0) for k in view.get("kernels") or []
                          if isinstance(k, dict))
    wbins = _section(view, "timeline").get("window_bins")

    gpu = _section(view, "gpu")
    tc = _section(view, "tensor_cores")
    procs = []
    for p in view.get("processes") or []:
        if isinstance(p, dict):
            procs.append({"pid": p.get("pid"), "name": str(p.get("name") or "")[:200],
                          "steps_mean_ms": finite(p.get("steps_mean_ms")),
                          "verdict_code": p.get("verdict_code")})
    return {
        "summary_version": SUMMARY_VERSION,
        "format": trace.get("format"),
        "verdict": verdict.get("code"),
        "headline": verdict.get("headline"),
        "confidence": verdict.get("confidence"),
        "steps": {
            "available": bool(steps.get("available", bool(per_step))) and n_steps > 0,
            "count": steps.get("count"),
            "analysed_count": n_steps,
            "median_ms": float(np.median([s["duration_ms"] for s in analysed])) if analysed else
            finite(steps.get("median_ms")),
            "mean_ms": float(np.mean([s["duration_ms"] for s in analysed])) if analysed else
            finite(steps.get("mean_ms")),
            "source": steps.get("source"),
        },
        "per_step": {
            "index": [int(s.get("index", i)) for i, s in enumerate(analysed)],
            "start_ns": [int(s.get("start_ns") or 0) for s in analysed],
            "duration_ms": [float(s["duration_ms"]) for s in analysed],
            "phases": step_phase,
        },
        "phases": phases,
        "gpu_busy": finite(gpu.get("utilization")),
        "tensor_core_share": finite(tc.get("share_of_kernel_time")) if tc.get("available", True)
        else None,
        "gaps_ms_per_step": gaps_per_step,
        "kernels": kernels,
        "kernels_per_step": bool(per_step_div),
        "kernel_total_ns": kernel_total_ns,
        "gpus": _gpu_models(trace),
        "window_bins": wbins if isinstance(wbins, dict) else None,
        "comm_ms_per_step": comm,
        "session_start_utc_ns": trace.get("session_start_utc_ns"),
        "processes": procs,
        "rank_evidence": [dict(e) for e in rank_evidence],
        "what_if": _what_ifs(view),
    }


def _what_ifs(view: dict) -> list[dict]:
    """The replay's what-ifs of the view (none when the replay is not available)."""
    replay = view.get("replay")
    if not isinstance(replay, dict) or not replay.get("available"):
        return []
    return [{"id": str(w.get("id")), "finding": w.get("finding"), "change": w.get("change"),
             "saves_ms_per_step": finite(w.get("saves_ms_per_step")),
             "step_ms_after": finite(w.get("step_ms_after"))}
            for w in replay.get("what_if") or [] if isinstance(w, dict)]


# ------------------------------------------------------------------------------------ compare
def _mode(codes: Sequence) -> str | None:
    codes = [c for c in codes if c]
    if not codes:
        return None
    counts = Counter(codes)
    best = max(counts.values())
    return sorted(c for c, n in counts.items() if n == best)[0]


def _scalar_runs(side: Sequence[dict], getter) -> list[list[float]]:
    out = []
    for s in side:
        v = finite(getter(s))
        if v is not None:
            out.append([v])
    return out


def _phase_samples(side: Sequence[dict], canon: str, per_step: bool) -> list:
    if per_step:
        return [np.asarray(s["per_step"]["phases"].get(canon, [0.0] * len(s["per_step"]["duration_ms"])),
                           dtype=float) for s in side]
    return [[(s.get("phases", {}).get(canon) or {}).get("mean_ms", 0.0)] for s in side
            if s.get("phases")]


def _kernel_ms(summary: dict, key: str) -> float | None:
    if not summary.get("kernels"):
        return None
    for k in summary["kernels"]:
        if k["key"] == key:
            return k["ms_per_step"]
    return 0.0


def _phase_metrics(baseline: Sequence[dict], candidate: Sequence[dict], per_step_phases: bool,
                   ms_floor: float, seed: int, settings: CompareSettings) -> dict[str, MetricComparison]:
    """One comparison per canonical phase either side has, in display order (ms per step)."""
    everything = list(baseline) + list(candidate)
    canons = sorted({c for s in everything for c in (s.get("phases") or {})}
                    | {c for s in everything for c in s["per_step"]["phases"]}, key=phase_sort_key)
    return {c: compare_metric(f"phase.{c}_ms", _phase_samples(baseline, c, per_step_phases),
                              _phase_samples(candidate, c, per_step_phases), unit="ms", seed=seed,
                              abs_floor=ms_floor, settings=settings) for c in canons}


def _run_metrics(baseline: Sequence[dict], candidate: Sequence[dict], ms_floor: float, seed: int,
                 settings: CompareSettings) -> list[MetricComparison]:
    """Per-run scalars: GPU busy share, Tensor Core share, idle ms per step per gap cause."""
    out = [compare_metric("gpu_busy", _scalar_runs(baseline, lambda s: s.get("gpu_busy")),
                          _scalar_runs(candidate, lambda s: s.get("gpu_busy")),
                          unit="share", higher_is_worse=False, seed=seed, abs_floor=0.01,
                          settings=settings),
           compare_metric(
               "tensor_core_share", _scalar_runs(baseline, lambda s: s.get("tensor_core_share")),
               _scalar_runs(candidate, lambda s: s.get("tensor_core_share")), unit="share",
               higher_is_worse=False, seed=seed, abs_floor=0.01, settings=settings)]
    everything = list(baseline) + list(candidate)
    causes = sorted({c for s in everything for c in (s.get("gaps_ms_per_step") or {})})
    for cause in causes:
        out.append(compare_metric(
            f"gaps.{cause}_ms",
            _scalar_runs(baseline, lambda s, c=cause: (s.get("gaps_ms_per_step") or {}).get(c, 0.0)),
            _scalar_runs(candidate, lambda s, c=cause: (s.get("gaps_ms_per_step") or {}).get(c, 0.0)),
            unit="ms", seed=seed, abs_floor=ms_floor, settings=settings))
    return out


def _kernel_metrics(baseline: Sequence[dict], candidate: Sequence[dict], ms_floor: float, seed: int,
                    settings: CompareSettings) -> dict[str, MetricComparison]:
    """The ``COMPARE_KERNELS`` kernel families with the most ms per step across both sides."""
    totals: Counter = Counter()
    for side in (baseline, candidate):
        for s in side:
            for k in s.get("kernels") or []:
                totals[k["key"]] += k["ms_per_step"] / max(len(side), 1)
    top_keys = [k for k, _ in sorted(totals.items(), key=lambda kv: (-kv[1], kv[0]))][:COMPARE_KERNELS]
    kernel_cmps = {}
    for key in top_keys:
        m = compare_metric(f"kernel.{key}_ms",
                           _scalar_runs(baseline, lambda s, k=key: _kernel_ms(s, k)),
                           _scalar_runs(candidate, lambda s, k=key: _kernel_ms(s, k)),
                           unit="ms", seed=seed, abs_floor=ms_floor, settings=settings)
        m.extra["kernel"] = key
        kernel_cmps[key] = m
    return kernel_cmps


def _side_mean(samples) -> float | None:
    runs = [np.asarray(r, float) for r in samples if len(r)]
    return float(np.concatenate(runs).mean()) if runs else None


def _explain(baseline: Sequence[dict], candidate: Sequence[dict], step_delta: float | None,
             phase_cmps: dict[str, MetricComparison], kernel_cmps: dict[str, MetricComparison],
             per_step_phases: bool) -> list[dict]:
    """Components of the mean step-time delta in two additive groups, each closed by an
    ``other`` row so that the group's rows sum to the delta: ``phases`` (phase means sum to the
    step mean; ``other`` = time not covered by phases) and ``kernels`` (GPU ms per step of every
    kernel family; ``other`` = the remaining families and wall time outside kernels). Both
    signs, ranked by ``|delta|``. Empty without steps on both sides."""
    if step_delta is None:
        return []
    phase_rows = []
    for c, m in phase_cmps.items():
        b = _phase_samples(baseline, c, per_step_phases)
        k = _phase_samples(candidate, c, per_step_phases)
        d = mean_delta(b, k)
        if d is not None:
            phase_rows.append(("phase", c, d, m.significant if m.method != "none" else None,
                               _side_mean(b), _side_mean(k)))
    keys = sorted({k["key"] for side in (baseline, candidate) for s in side
                   for k in s.get("kernels") or []})
    kernel_rows = []
    for key in keys:  # the families of the summaries (≤ 2 × TOP_KERNELS)
        b = _scalar_runs(baseline, lambda s, k=key: _kernel_ms(s, k))
        k = _scalar_runs(candidate, lambda s, k=key: _kernel_ms(s, k))
        d = mean_delta(b, k)
        if d is not None:
            km = kernel_cmps.get(key)
            sig = km.significant if km is not None and km.method != "none" else None
            kernel_rows.append(("kernel", key, d, sig, _side_mean(b), _side_mean(k)))
    out = []
    if phase_rows:
        out += explain_delta(step_delta, phase_rows, group="phases",
                             other_name=EXPLAIN_OTHER["phases"])
    if kernel_rows:
        out += explain_delta(step_delta, kernel_rows, group="kernels",
                             other_name=EXPLAIN_OTHER["kernels"])
    return [c.to_json() for c in out]


def _summary_line(step_cmp: MetricComparison, significant: list[MetricComparison],
                  settings: CompareSettings) -> str:
    if step_cmp.method == "none" or step_cmp.baseline is None:
        summary = "step time: not enough steps for a confidence interval"
    elif step_cmp.significant:
        word = "slower" if cast(float, step_cmp.delta) > 0 else "faster"
        summary = (f"step time {step_cmp.delta_pct:+.1f}% ({word}; {int(100 * settings.confidence)}% CI "
                   f"{step_cmp.ci_low_pct:+.1f}% … {step_cmp.ci_high_pct:+.1f}%)")
    else:
        others = len(significant)
        summary = "no significant change in step time" + (
            f" ({others} other metric{'s' if others != 1 else ''} changed)" if others else "")
    if not significant:
        summary = "no significant change" + ("" if step_cmp.method != "none" else
                                             " (too few samples for intervals)")
    return summary


def gate_status(step_cmp: MetricComparison, fail_pct: float | None, comp: dict,
                min_score: float, has_steps: dict[str, bool]) -> dict:
    """The ``--fail-on-regression`` gate: ``{requested_pct, evaluated, reason, passed}``.

    Not evaluable (never "passed") when the pair is incomparable (comparability score below
    ``min_score``), a side has no steps, or the step-time comparison has no confidence interval.
    The exit code is the app's (it knows ``--allow-unevaluable``).
    """
    gate: dict = {"requested_pct": fail_pct, "evaluated": False, "reason": None, "passed": None}
    if fail_pct is None:
        gate["reason"] = "no --fail-on-regression requested"
        return gate
    reasons = []
    if comp["score"] < min_score:
        reasons.append(f"the pair is not comparable (comparability {comp['score']:.2f} < "
                       f"{min_score:g}: " + "; ".join(comp["reasons"][:3]) + ")")
    missing = [r for r, ok in has_steps.items() if not ok]
    if missing:
        reasons.append("step time not available: no steps on the " + " and ".join(missing)
                       + " side" + ("s" if len(missing) > 1 else ""))
    elif step_cmp.method == "none" or step_cmp.ci_low is None:
        reasons.append("the step-time comparison has no confidence interval (" +
                       (step_cmp.note or "too few samples") + ")")
    if reasons:
        gate["reason"] = "; ".join(reasons)
        return gate
    gate["evaluated"] = True
    gate["passed"] = not is_regression(step_cmp, fail_pct)
    return gate


def _verdict_change(baseline: Sequence[dict], candidate: Sequence[dict]) -> dict:
    """The most common verdict of each side and whether it changed."""
    vb = _mode([s.get("verdict") for s in baseline])
    vc = _mode([s.get("verdict") for s in candidate])
    return {"baseline": vb, "candidate": vc, "changed": bool(vb and vc and vb != vc),
            "baseline_runs": [s.get("verdict") for s in baseline],
            "candidate_runs": [s.get("verdict") for s in candidate]}


def _settings_json(settings: CompareSettings, seed: int) -> dict:
    return {"n_boot": settings.n_boot, "confidence": settings.confidence,
            "min_rel_change": settings.min_rel_change,
            "effect_size_floor": settings.effect_size_floor, "seed": seed, "stat": "median"}


def compare_runs(baseline: Sequence[dict], candidate: Sequence[dict], *, seed: int = 0,
                 fail_pct: float | None = None,
                 settings: CompareSettings = DEFAULT_SETTINGS,
                 min_comparability: float = 0.5) -> dict:
    """Compare two run sets (lists of ``summarize_view`` summaries). JSON-able result:

    ``step_time`` (metric), ``metrics`` (all metrics), ``explain`` (components of the mean
    step-time delta, groups ``phases``/``kernels`` each summing to it), ``verdict_change``,
    ``summary`` (one line), ``regression``, ``gate``, ``comparability``, ``window_rates`` (when
    a side has no steps), ``notes``.
    """
    notes: list[str] = []
    step_b = [np.asarray(s["per_step"]["duration_ms"], float) for s in baseline]
    step_c = [np.asarray(s["per_step"]["duration_ms"], float) for s in candidate]
    step_cmp = compare_metric("step_time_ms", step_b, step_c, unit="ms", seed=seed,
                              settings=settings)
    base_step_ms = step_cmp.baseline or 0.0
    ms_floor = 0.01 * base_step_ms  # a component appearing from 0 must be ≥ 1% of the step
    has_steps = {"baseline": any(a.size for a in step_b), "candidate": any(a.size for a in step_c)}
    window_rates = None
    if not all(has_steps.values()):
        notes.append("no steps detected on one side: step time was not available, so the "
                     "comparison uses window-normalised rates (annotate steps with NVTX or pass "
                     "traces with a repeating pattern)")
        window_rates = window_rate_metrics(baseline, candidate, seed=seed, settings=settings)
        if not window_rates["available"]:
            notes.append(f"window rates not compared: {window_rates['reason']}")
    per_step_phases = all(s["per_step"]["duration_ms"] and s["per_step"]["phases"]
                          for s in list(baseline) + list(candidate))
    phase_cmps = _phase_metrics(baseline, candidate, per_step_phases, ms_floor, seed, settings)
    if phase_cmps and not per_step_phases:
        notes.append("phase times are per-run means here (no per-step phase data): their "
                     "intervals come from runs only")
    kernel_cmps = _kernel_metrics(baseline, candidate, ms_floor, seed, settings)
    metrics = [step_cmp, *phase_cmps.values(),
               *_run_metrics(baseline, candidate, ms_floor, seed, settings), *kernel_cmps.values()]
    explain = _explain(baseline, candidate, mean_delta(step_b, step_c), phase_cmps,
                       kernel_cmps, per_step_phases)

    verdict_change = _verdict_change(baseline, candidate)
    significant = [m for m in metrics if m.significant]
    comp = comparability(baseline, candidate)
    comp["min_score"] = min_comparability
    comp["comparable"] = comp["score"] >= min_comparability
    if not comp["comparable"] and fail_pct is None:
        notes.append(f"the pair may not be comparable (comparability {comp['score']:.2f} < "
                     f"{min_comparability:g}): " + "; ".join(comp["reasons"]))
    gate = gate_status(step_cmp, fail_pct, comp, min_comparability, has_steps)
    regression = bool(gate["evaluated"] and gate["passed"] is False)
    if fail_pct is not None and not gate["evaluated"]:
        notes.append(f"--fail-on-regression could not be evaluated: {gate['reason']}")
    out = {
        "step_time": step_cmp.to_json(),
        "metrics": [m.to_json() for m in metrics],
        "explain": explain,
        "explain_basis": "difference of mean ms per step, both signs, ranked by size; the "
                         "phases group and the kernels group each add up (with their other row) "
                         "to the step-time delta; kernel rows are GPU time and explain wall time "
                         "only where the GPU is on the critical path",
        "verdict_change": verdict_change,
        "significant_count": len(significant),
        "summary": _summary_line(step_cmp, significant, settings),
        "regression": regression,
        "fail_on_regression_pct": fail_pct,
        "gate": gate,
        "comparability": comp,
        "notes": notes,
        "settings": _settings_json(settings, seed),
        "predicted": predicted_vs_measured(baseline, candidate),
    }
    if window_rates is not None:
        out["window_rates"] = window_rates
        if window_rates["available"]:
            changed = sum(1 for m in window_rates["metrics"] if m["significant"])
            out["summary"] = (f"step time not available; {changed} window rate"
                              f"{'s' if changed != 1 else ''} changed significantly")
    return out


# ------------------------------------------------------------------------------------ ranks
def rank_inputs(summaries: Sequence[dict], ranks: Sequence[int], labels: Sequence[str]) -> list[RankInput]:
    """Build ``RankInput``s from trace summaries and their assigned ranks."""
    out = []
    for s, r, label in zip(summaries, ranks, labels):
        ps = s["per_step"]
        out.append(RankInput(
            rank=int(r), label=label,
            step_ms=np.asarray(ps["duration_ms"], float),
            step_index=np.asarray(ps["index"], np.int64),
            step_start_ns=np.asarray(ps["start_ns"], np.int64),
            session_start_utc_ns=s.get("session_start_utc_ns"),
            phase_ms={c: float(v.get("mean_ms") or 0.0) for c, v in (s.get("phases") or {}).items()},
            comm_ms=s.get("comm_ms_per_step"),
            phase_gpu_ms={c: float(v["gpu_work_ms"]) for c, v in (s.get("phases") or {}).items()
                          if v.get("gpu_work_ms") is not None},
            gaps_ms={str(c): float(v) for c, v in (s.get("gaps_ms_per_step") or {}).items()
                     if v is not None},
            step_phase_ms={str(c): np.asarray(v, float) for c, v in
                           (ps.get("phases") or {}).items()
                           if len(v) == len(ps["duration_ms"])},
        ))
    return out
