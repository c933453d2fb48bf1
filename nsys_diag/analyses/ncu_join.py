"""Join an ncu roofline to the nsys timeline: match kernels by name, weight by timeline time.

Matching (per *unique* name on each side, never per kernel row), most specific key first:

1. ``signature`` — ``kernel_signature_key``: name without ``void``/parameters/casts/spaces, template
   arguments kept (``at::native::foo<4,float>``);
2. ``base`` — ``kernel_base_name``: bare function name (``foo``; CUTLASS wrappers named after their
   template argument);
3. ``family`` — ``normalize_kernel_name``: tile-variant / Triton-suffix stripped (``ampere_sgemm``).

A timeline name takes the first level at which some ncu kernel shares its key (its demangled name
first, then its ``short_name``). When several ncu kernels share that key, the timeline time is
split by their ncu time. Each timeline name's time is then divided among bound classes by the
matched ncu kernels' ``bound_shares`` → "X% of GPU kernel time is in memory-bound kernels …".
Shares are of **all** timeline kernel time; ``unmatched`` holds the rest, so the shares sum to 1.
Counter evidence for Tensor Cores (``tensor_core_share_by_time``) outranks name heuristics.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from nsys_diag.model.jsonsafe import fnum
from nsys_diag.analyses.base import Unavailable
from nsys_diag.analyses.kernel_names import (kernel_base_name, kernel_signature_key,
                                             normalize_kernel_name)
from nsys_diag.analyses.roofline import BOUND_CLASSES, RooflineResult, TIME_WEIGHT_KEYS
from nsys_diag.model.vocabulary import NSYS_TRACE_CUDA_NVTX

MATCH_LEVELS = ("signature", "base", "family")
_KEYERS = {"signature": kernel_signature_key, "base": kernel_base_name,
           "family": normalize_kernel_name}
MAX_LISTED = 50
"""Unmatched / match lists are capped (largest first) to keep the JSON small."""


@dataclass(frozen=True)
class KernelMatch:
    timeline_name: str
    ncu_names: tuple[str, ...]
    level: str
    time_ns: int
    share: float
    bound: str
    tensor_core_share: float | None

    def to_json(self) -> dict:
        return {"timeline_name": self.timeline_name, "ncu_names": list(self.ncu_names),
                "level": self.level, "time_ns": int(self.time_ns), "share": fnum(self.share),
                "bound": self.bound, "tensor_core_share": fnum(self.tensor_core_share)}


@dataclass(frozen=True)
class RooflineJoinResult:
    """The roofline re-weighted by nsys timeline time."""

    roofline: RooflineResult
    timeline_kernel_time_ns: int
    matched_time_ns: int
    matched_share: float
    time_weighted: dict[str, float]
    time_weighted_matched: dict[str, float]
    kernel_timeline: dict[str, tuple[int, float]]  # ncu kernel name -> (timeline ns, share)
    matches: tuple[KernelMatch, ...]
    unmatched: tuple[tuple[str, int, float], ...]  # (timeline name, ns, share)
    unmatched_ncu: tuple[str, ...]
    tensor_core_share_by_time: float | None
    tensor_core_share_of_matched: float | None
    tensor_core_evidence: str | None
    match_levels: dict[str, float]
    confidence: str

    available = True

    def to_json(self) -> dict:
        base = self.roofline.to_json()
        kernels = []
        for k in base["kernels"]:  # ncu kernels absent from the timeline get None
            ns, share = self.kernel_timeline.get(k["name"], (None, None))
            kernels.append({**k, "timeline_time_ns": ns, "timeline_share": fnum(share)})
        kernels.sort(key=lambda k: -(k["timeline_time_ns"] or 0))
        base.update({
            "kernels": kernels,
            "time_basis": "timeline",
            "time_weighted": {k: fnum(v) for k, v in self.time_weighted.items()},
            "time_weighted_ncu": base["time_weighted"],
            "time_weighted_matched": {k: fnum(v) for k, v in self.time_weighted_matched.items()},
            "timeline_kernel_time_ns": int(self.timeline_kernel_time_ns),
            "matched_time_ns": int(self.matched_time_ns),
            "matched_share": fnum(self.matched_share),
            "match_levels": {k: fnum(v) for k, v in self.match_levels.items()},
            "matches": [m.to_json() for m in self.matches],
            "unmatched": [{"name": n, "time_ns": int(t), "share": fnum(s)}
                          for n, t, s in self.unmatched],
            "unmatched_ncu": list(self.unmatched_ncu),
            "tensor_core_share_by_time": fnum(self.tensor_core_share_by_time),
            "tensor_core_share_of_matched": fnum(self.tensor_core_share_of_matched),
            "tensor_core_evidence": self.tensor_core_evidence,
            "confidence": self.confidence,
        })
        return base


def _timeline_by_name(kernels: pd.DataFrame) -> pd.DataFrame:
    """Total timeline ns per unique (name, short_name) — a groupby, no row loop."""
    dur = (kernels["end_ns"].to_numpy(dtype=np.int64) - kernels["start_ns"].to_numpy(dtype=np.int64))
    short = kernels["short_name"] if "short_name" in kernels else pd.Series("", index=kernels.index)
    df = pd.DataFrame({"name": kernels["name"].reset_index(drop=True),
                       "short_name": short.reset_index(drop=True),
                       "ns": np.clip(dur, 0, None)})
    g = df.groupby(["name", "short_name"], sort=False, observed=True, as_index=False)["ns"].sum()
    return g.assign(name=g["name"].astype(str), short_name=g["short_name"].astype(str))


def _ncu_index(names: list[str]) -> dict[str, dict[str, list[str]]]:
    """ncu kernel names indexed by each key level (a few dozen unique names)."""
    ncu_index: dict[str, dict[str, list[str]]] = {lvl: {} for lvl in MATCH_LEVELS}
    for name in names:
        for lvl in MATCH_LEVELS:
            ncu_index[lvl].setdefault(_KEYERS[lvl](name), []).append(name)
    return ncu_index


def _find_match(name: str, short: str, ncu_index: dict[str, dict[str, list[str]]]
                ) -> tuple[list[str] | None, str]:
    """(ncu kernels a timeline kernel matches, the level): the strictest level first, full name
    before short name at each level; (None, '') when none matches."""
    for lvl in MATCH_LEVELS:
        for candidate in (name, short):
            key = _KEYERS[lvl](candidate) if candidate else ""
            if key and key in ncu_index[lvl]:
                return ncu_index[lvl][key], lvl
    return None, ""


def _join_confidence(matched_share: float, family_frac: float, roofline_confidence: str) -> str:
    """high: ≥ 80% of timeline kernel time matched, mostly above family level, a high-confidence
    roofline; medium: ≥ 50% matched; else low."""
    if matched_share >= 0.8 and roofline_confidence == "high" and family_frac < 0.5:
        return "high"
    if matched_share >= 0.5 and roofline_confidence in ("high", "medium"):
        return "medium"
    return "low"


def join_roofline_to_timeline(roofline_result: RooflineResult | Unavailable,
                              kernels_frame: pd.DataFrame) -> RooflineJoinResult | Unavailable:
    """Weight the ncu bound classes by nsys timeline kernel time (see module doc)."""
    if not isinstance(roofline_result, RooflineResult):
        return roofline_result
    if kernels_frame is None or len(kernels_frame) == 0:
        return Unavailable("no timeline kernels to weight the ncu roofline with",
                           f"capture the nsys trace with CUDA tracing (`{NSYS_TRACE_CUDA_NVTX}`)")
    tl = _timeline_by_name(kernels_frame)
    total_ns = int(tl["ns"].sum())
    ncu = roofline_result.kernels
    ncu_time = {k.name: k.time_ns for k in ncu}
    ncu_index = _ncu_index([k.name for k in ncu])
    by_name = {k.name: k for k in ncu}

    matches: list[KernelMatch] = []
    unmatched: list[tuple[str, int, float]] = []
    bound_ns = {c: 0.0 for c in BOUND_CLASSES}
    level_ns = {lvl: 0.0 for lvl in MATCH_LEVELS}
    tc_ns = 0.0
    tc_known_ns = 0.0
    kernel_tl_ns: dict[str, float] = {}
    used_ncu: set[str] = set()
    # loop over unique timeline names (bounded by distinct kernels, not launches)
    for name, short, ns in zip(tl["name"], tl["short_name"], tl["ns"]):
        hit, level = _find_match(name, short, ncu_index)
        if not hit:
            unmatched.append((name, int(ns), ns / total_ns if total_ns else 0.0))
            continue
        weights = np.array([max(ncu_time[n], 1) for n in hit], dtype=np.float64)
        weights /= weights.sum()
        level_ns[level] += ns
        tc_parts = []
        bound_here: dict[str, float] = {}
        for n, w in zip(hit, weights):
            k = by_name[n]
            used_ncu.add(n)
            kernel_tl_ns[n] = kernel_tl_ns.get(n, 0.0) + ns * w
            for cls, share in (k.bound_shares or {"unknown": 1.0}).items():
                bound_ns[cls] += ns * w * share
                bound_here[cls] = bound_here.get(cls, 0.0) + w * share
            if k.tensor_core_share is not None:
                tc_ns += ns * w * k.tensor_core_share
                tc_known_ns += ns * w
                tc_parts.append(w * k.tensor_core_share)
        matches.append(KernelMatch(
            timeline_name=name, ncu_names=tuple(hit), level=level, time_ns=int(ns),
            share=ns / total_ns if total_ns else 0.0,
            bound=max(bound_here, key=lambda c: bound_here[c]) if bound_here else "unknown",
            tensor_core_share=float(sum(tc_parts)) if tc_parts else None))

    matched_ns = float(sum(level_ns.values()))
    tw = {v: 0.0 for v in TIME_WEIGHT_KEYS.values()}
    tw_matched = dict(tw)
    for cls, ns in bound_ns.items():
        key = TIME_WEIGHT_KEYS[cls]
        tw[key] += ns / total_ns if total_ns else 0.0
        tw_matched[key] += ns / matched_ns if matched_ns else 0.0
    tw["unmatched"] = (total_ns - matched_ns) / total_ns if total_ns else 0.0
    matched_share = matched_ns / total_ns if total_ns else 0.0
    has_tc = roofline_result.tensor_evidence is not None and tc_known_ns > 0
    tc_share = tc_ns / total_ns if has_tc and total_ns else None
    tc_of_matched = tc_ns / tc_known_ns if has_tc else None

    confidence = _join_confidence(matched_share,
                                  level_ns["family"] / matched_ns if matched_ns else 0.0,
                                  roofline_result.confidence)
    matches.sort(key=lambda m: -m.time_ns)
    unmatched.sort(key=lambda u: -u[1])
    kernel_timeline = {n: (int(round(v)), v / total_ns if total_ns else 0.0)
                       for n, v in kernel_tl_ns.items()}
    return RooflineJoinResult(
        roofline=roofline_result, timeline_kernel_time_ns=total_ns,
        matched_time_ns=int(round(matched_ns)), matched_share=matched_share,
        time_weighted=tw, time_weighted_matched=tw_matched, kernel_timeline=kernel_timeline,
        matches=tuple(matches[:MAX_LISTED]), unmatched=tuple(unmatched[:MAX_LISTED]),
        unmatched_ncu=tuple(sorted(set(ncu_time) - used_ncu))[:MAX_LISTED],
        tensor_core_share_by_time=tc_share, tensor_core_share_of_matched=tc_of_matched,
        tensor_core_evidence=roofline_result.tensor_evidence if has_tc else None,
        match_levels={lvl: (v / matched_ns if matched_ns else 0.0) for lvl, v in level_ns.items()},
        confidence=confidence,
    )
