"""What stands behind each gap cause, in words: the strongest evidence per cause
(``gaps.by_cause_detail``), the evidence of each top gap (``gaps.top[].evidence``) and the host
frames CPU sampling caught in unattributed (``other``) gap time (``gaps.other_top_frames``).

The causes and their precedence are defined in ``analyses/gaps/causes.py``. Here the gap time each cause
*took* (its pieces: gap ∩ its evidence, minus what earlier causes took) weights the evidence
rows, so a detail names what explains that cause's own time, never time an earlier cause holds.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from nsys_diag.analyses.timeline import intervals as iv
from nsys_diag.analyses.gaps.rows import EvidenceRows
from nsys_diag.model.vocabulary import GAP_CAUSES, NEEDS_NSYS_CAPTURE

TOP_FRAMES = 5
"""``other_top_frames`` lists at most this many frames."""
UNRESOLVED_FRAME = "(unresolved)"
EMPTY = np.zeros(0, np.int64)
ROW_CAUSES = GAP_CAUSES[:GAP_CAUSES.index("other")]
"""The causes whose evidence is a set of named rows (everything before ``other``; ``launch``'s
rows are the long launch calls, its short gaps are taken whole besides)."""


def fmt_ms(ns: float) -> str:
    """``527 ms`` / ``3.1 ms`` / ``0.042 ms``."""
    ms = ns / 1e6
    return f"{ms:,.0f} ms" if ms >= 100 else f"{ms:.2g} ms"


@dataclass(frozen=True)
class DeviceCauses:
    """One device's gaps (ns, sorted, disjoint), launch flags and per-cause evidence rows in
    precedence order (``ROW_CAUSES``), with the growing unions ``unions[k]`` = evidence of causes
    0..k merged (what ``gaps._cause_ns`` built)."""

    device_id: int
    gs: np.ndarray
    ge: np.ndarray
    launch: np.ndarray
    rows: tuple[EvidenceRows, ...]
    unions: tuple[tuple[np.ndarray, np.ndarray], ...]
    totals: np.ndarray = field(default_factory=lambda: np.zeros(len(GAP_CAUSES), np.int64))
    """ns per ``GAP_CAUSES`` summed over the device's gaps (what ``_cause_ns`` summed)."""

    def pieces(self, cause: str) -> tuple[np.ndarray, np.ndarray]:
        """Merged intervals of the gap time ``cause`` took on this device (ns)."""
        if cause == "other":
            last = self.unions[-1] if self.unions else (EMPTY, EMPTY)
            return iv.subtract_merged(self.gs[~self.launch], self.ge[~self.launch], *last)
        got = self.row_pieces(cause)
        if cause == "launch" and self.launch.any():  # and the flagged short gaps, whole
            k = ROW_CAUSES.index(cause)
            before = self.unions[k - 1] if len(self.unions) >= k else (EMPTY, EMPTY)
            got = iv.union_merged(*got, *iv.subtract_merged(self.gs[self.launch],
                                                            self.ge[self.launch], *before))
        return got

    def taken_whole(self, gap_start_ns: int) -> bool:
        """The gap starting at ``gap_start_ns`` is a short launch gap (``launch`` takes it
        whole)."""
        i = int(np.searchsorted(self.gs, gap_start_ns))
        return i < self.gs.size and int(self.gs[i]) == gap_start_ns and bool(self.launch[i])

    def row_pieces(self, cause: str) -> tuple[np.ndarray, np.ndarray]:
        """The part of ``pieces(cause)`` its evidence rows cover (``launch``: in the gaps not
        taken whole — a chunk of a streamed run sees the same rows there)."""
        k = ROW_CAUSES.index(cause)
        new = self.rows[k].cover
        if k and len(self.unions) >= k and self.unions[k - 1][0].size:
            new = iv.subtract_merged(*new, *self.unions[k - 1])
        if cause == "launch":
            return iv.intersect_merged(*new, self.gs[~self.launch], self.ge[~self.launch])
        return iv.intersect_merged(*new, self.gs, self.ge)  # perf: the small side first


def label_weights(devices: list[DeviceCauses], cause: str) -> dict[str, tuple[int, int]]:
    """label → (gap ns its rows cover inside the cause's own pieces, rows that cover any)."""
    out: dict[str, tuple[int, int]] = {}
    k = ROW_CAUSES.index(cause)
    for d in devices:  # a handful of devices
        rows = d.rows[k]
        if not len(rows):
            continue
        ns, n = rows.weights(*d.row_pieces(cause))
        for i in np.flatnonzero(ns):  # labels that covered anything (a few)
            lab = rows.labels[int(i)]
            a, b = out.get(lab, (0, 0))
            out[lab] = (a + int(ns[i]), b + int(n[i]))
    return out


def other_phase_ns(devices: list[DeviceCauses], spans) -> dict[str, int]:
    """phase name → gap ns left to ``other`` inside its spans (``evidence.PhaseSpans``), and
    ``""`` → the ``other`` ns outside every span, summed over devices: host time that no
    evidence covers may still be inside a named range."""
    ps, pe, names = spans
    out: dict[str, int] = {}
    uniq, inv = np.unique(np.asarray(names, dtype=object), return_inverse=True) if ps.size \
        else (np.zeros(0, dtype=object), EMPTY)
    for d in devices:  # a handful of devices
        os_, oe = d.pieces("other")
        if not os_.size:
            continue
        inside = 0
        if ps.size:
            ns = np.bincount(inv, weights=iv.covered_length_per_window_merged(os_, oe, ps, pe),
                             minlength=uniq.size).astype(np.int64)
            for i in np.flatnonzero(ns):  # phases that hold other time (a few)
                out[str(uniq[i])] = out.get(str(uniq[i]), 0) + int(ns[i])
            inside = int(ns.sum())
        out[""] = out.get("", 0) + int((oe - os_).sum()) - inside
    return out


def _other_where(other_phases: dict[str, int] | None) -> tuple[str, bool]:
    """(" in PHASE[ (x% of it)]" when one phase holds ≥ half of the ``other`` time, else the
    share outside every range when that is ≥ 50%, else the (up to three) phases holding most of
    it with their shares — "" when ≥ 95% of it lies outside every range; whether it counts as
    inside ranges)."""
    if not other_phases:
        return "", False
    total = sum(other_phases.values())
    named = sorted(((v, k) for k, v in other_phases.items() if k and v > 0), reverse=True)
    if not total or not named or other_phases.get("", 0) >= 0.95 * total:
        return "", False
    ns, name = named[0]
    if ns >= 0.5 * total:
        return f" in {name}" + (f" ({ns / total:.0%} of it)" if ns < 0.95 * total else ""), True
    outside = other_phases.get("", 0) / total
    if outside >= 0.5:
        return f" ({outside:.0%} of it outside every NVTX range)", True
    return " in " + ", ".join(f"{k} ({v / total:.0%})" for v, k in named[:3]), True


def cause_detail(cause: str, total_ns: float, devices: list[DeviceCauses], *,
                 launch_gaps: int, launch_max_ns: int, other_frames: list[dict],
                 samples_available: bool, osrt_available: bool, host_io_min_ns: int,
                 other_phases: dict[str, int] | None = None,
                 launch_weights: dict[str, tuple[int, int]] | None = None,
                 sampling_in_format: bool = True) -> str:
    """A short description of the strongest evidence behind ``cause``'s ``total_ns`` (per GPU);
    ``other_phases``: ``other_phase_ns`` (the phase holding most ``other`` time is named);
    ``launch_weights``: the long launch calls' ``label_weights`` when ``devices`` is not given
    (the streamed merge); ``sampling_in_format``: False for an input that cannot hold CPU
    samples (a PyTorch profiler trace: the sampling then needs an Nsight Systems capture)."""
    if cause == "launch":
        calls = launch_weights if launch_weights is not None else label_weights(devices, cause)
        return launch_detail(total_ns, launch_gaps, launch_max_ns, calls)
    if cause == "other":
        where, in_range = _other_where(other_phases)
        if other_frames:
            f = other_frames[0]
            return (f"host time{where} that no trace evidence covers; most sampled frame: "
                    f"{f['frame']} ({f['share']:.0%} of {f['samples']} samples)")
        covered = ("CUDA call or copy" if in_range else "NVTX range, CUDA call or copy") + \
            (" or OS-runtime call" if osrt_available else "")
        if samples_available:
            tail = ""
        elif sampling_in_format:
            tail = "; CPU sampling in the capture would name it"
        else:
            tail = f"; CPU sampling would name it, but it {NEEDS_NSYS_CAPTURE}"
        return f"host time{where} that no {covered} covers{tail}"
    return weights_detail(cause, total_ns, label_weights(devices, cause),
                          host_io_min_ns=host_io_min_ns)


def launch_detail(total_ns: float, short_gaps: int, short_max_ns: int,
                  calls: dict[str, tuple[int, int]]) -> str:
    """``launch``'s detail: the short gaps it took whole and the launch calls that outlast the
    queued work in longer gaps (``calls``: label → (ns, rows), the strongest named)."""
    parts = []
    if short_gaps:
        parts.append(f"{short_gaps} short gap{'s' if short_gaps != 1 else ''} "
                     f"(≤ {short_max_ns / 1e3:.0f} µs) while the CPU was launching work")
    if calls:
        parts.append("launch calls the GPU waited for: "
                     + weights_detail("launch", total_ns, calls, host_io_min_ns=0))
    return "; ".join(parts) or "launch"


def weights_detail(cause: str, total_ns: float, weights: dict[str, tuple[int, int]], *,
                   host_io_min_ns: int) -> str:
    """The detail of a row cause from its ``label_weights`` (label → (ns, rows)): the strongest
    label and a runner-up holding ≥ 10% of ``total_ns`` (ties: the earlier label first)."""
    if not weights:
        return cause
    ranked = sorted(weights.items(), key=lambda kv: -kv[1][0])
    parts: list[str] = []
    for lab, (got, n) in ranked[:2]:  # the strongest, and a runner-up that matters
        if parts and got < 0.1 * total_ns:
            break
        ns = min(float(got), total_ns)
        if cause == "host_io":
            floor = f" ≥ {host_io_min_ns / 1e6:g} ms" if host_io_min_ns > 0 else ""
            parts.append(f"{lab} {n} call{'s' if n != 1 else ''}{floor}, {fmt_ms(ns)}")
        else:
            parts.append(f"{lab} {fmt_ms(ns)}")
    return "; ".join(parts)


def other_top_frames(samples: pd.DataFrame | None, devices: list[DeviceCauses]
                     ) -> list[dict]:
    """The most sampled host frames (stack depth 0) of the process's threads inside the gap time
    left to ``other`` on any device: ``[{frame, samples, share}]``, ≤ ``TOP_FRAMES``, ``share`` of
    the samples that fell in that time."""
    merged, total = other_frame_counts(samples, devices)
    return top_frames(merged, total)


def other_frame_counts(samples: pd.DataFrame | None, devices: list[DeviceCauses]
                       ) -> tuple[dict[str, int], int]:
    """(frame → samples, samples in all) of the CPU samples inside the gap time left to
    ``other`` on any device (frames named as ``other_top_frames`` names them)."""
    if samples is None or not len(samples) or not devices:
        return {}, 0
    parts = [d.pieces("other") for d in devices]
    ps, pe = iv.merge_intervals(np.concatenate([p[0] for p in parts]),
                                np.concatenate([p[1] for p in parts]))
    inside = iv.containing_interval(samples["ts_ns"].to_numpy(np.int64), ps, pe) >= 0
    total = int(inside.sum())
    if not total:
        return {}, 0
    frame = samples["top_frame"]
    cat = frame if isinstance(frame.dtype, pd.CategoricalDtype) else frame.astype("category")
    codes = cat.cat.codes.to_numpy().astype(np.int64)[inside]
    n_cat = len(cat.cat.categories)
    codes[codes < 0] = n_cat  # missing → unresolved
    counts = np.bincount(codes, minlength=n_cat + 1)
    names = [str(c) or UNRESOLVED_FRAME for c in cat.cat.categories] + [UNRESOLVED_FRAME]
    merged: dict[str, int] = {}
    for i in np.flatnonzero(counts):  # distinct frames seen (bounded by the samples)
        merged[names[int(i)]] = merged.get(names[int(i)], 0) + int(counts[i])
    return merged, total


def top_frames(merged: dict[str, int], total: int) -> list[dict]:
    """``[{frame, samples, share}]`` of the ``TOP_FRAMES`` most sampled frames (ties: by name)."""
    if not total:
        return []
    top = sorted(merged.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP_FRAMES]
    return [{"frame": f, "samples": n, "share": n / total} for f, n in top]


def gap_evidence_rows(row: np.ndarray, gs: int, ge: int, d: DeviceCauses,
                      samples: pd.DataFrame | None) -> list[dict]:
    """``top[].evidence`` of one gap: ``[{cause, ms, detail}]``, largest first, from its row of
    the cause matrix (ns per cause) and what covered it on its device."""
    out = []
    for ci in np.argsort(-row, kind="stable"):  # 12 causes
        ns = int(row[ci])
        if ns <= 0:
            break
        cause = GAP_CAUSES[int(ci)]
        if cause == "other":
            detail = _sampled_in(samples, gs, ge) or "no trace evidence covers this time"
        elif cause == "launch" and d.taken_whole(gs):
            detail = "short gap while the CPU was launching work"
        else:  # launch: the long launch call that covers most of the gap
            best = d.rows[ROW_CAUSES.index(cause)].best(gs, ge)
            detail = best[0] if best else cause
        out.append({"cause": cause, "ms": ns / 1e6, "detail": detail})
    return out


def _sampled_in(samples: pd.DataFrame | None, gs: int, ge: int) -> str | None:
    """'most sampled: FRAME (n of m samples)' for the CPU samples inside ``[gs, ge)``."""
    if samples is None or not len(samples):
        return None
    ts = samples["ts_ns"].to_numpy(np.int64)
    m = (ts >= gs) & (ts < ge)
    n = int(m.sum())
    if not n:
        return None
    top = samples["top_frame"][m].astype(str).value_counts()
    name = str(top.index[0]) or UNRESOLVED_FRAME
    return f"most sampled: {name} ({int(top.iloc[0])} of {n} samples)"
