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
from nsys_diag.model.thresholds import DEFAULT_THRESHOLDS
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
    launches: int = 0
    """Timeline launches of ``timeline_name``."""
    ncu_launches: int = 0
    """Profiled ncu launches of ``ncu_names``."""
    duration_ratio: float | None = None
    """ncu per-launch duration ÷ timeline per-launch duration (1 ≈ the same work)."""

    def to_json(self) -> dict:
        return {"timeline_name": self.timeline_name, "ncu_names": list(self.ncu_names),
                "level": self.level, "time_ns": int(self.time_ns), "share": fnum(self.share),
                "bound": self.bound, "tensor_core_share": fnum(self.tensor_core_share),
                "launches": int(self.launches), "ncu_launches": int(self.ncu_launches),
                "duration_ratio": fnum(self.duration_ratio)}


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
    refused_pairings: int = 0
    join_notes: tuple[str, ...] = ()

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
            "refused_pairings": int(self.refused_pairings),
            "notes": [*base["notes"], *self.join_notes],
        })
        return base


def _timeline_by_name(kernels: pd.DataFrame) -> pd.DataFrame:
    """Per unique (name, short_name): total timeline ns, launches and the launch configs seen
    (``"<blocks>x<threads>"``, as ``_config_key``) — groupbys, no row loop."""
    dur = (kernels["end_ns"].to_numpy(dtype=np.int64) - kernels["start_ns"].to_numpy(dtype=np.int64))
    short = kernels["short_name"] if "short_name" in kernels else pd.Series("", index=kernels.index)
    df = pd.DataFrame({"name": kernels["name"].astype(str).to_numpy(),
                       "short_name": short.astype(str).to_numpy(), "ns": np.clip(dur, 0, None)})
    # launch configs: ``analyze`` loads kernels without their grid/block (kernel_detail=False, a
    # fast path), so the timeline side has none yet; a frame that carries ``launch_config``
    # ("<blocks>x<threads>") is used for the signature check
    df["cfg"] = (kernels["launch_config"].astype(str).to_numpy() if "launch_config" in kernels
                 else "")
    keys = ["name", "short_name"]
    g = df.groupby(keys, sort=False, as_index=False).agg(ns=("ns", "sum"), launches=("ns", "size"))
    known = df.loc[df["cfg"] != "", keys + ["cfg"]].drop_duplicates()
    cfgs = known.groupby(keys, sort=False)["cfg"].agg(frozenset)
    g["configs"] = [cfgs.get((a, b), frozenset()) for a, b in zip(g["name"], g["short_name"])]
    return g


def _config_key(grid: pd.Series, block: pd.Series) -> pd.Series:
    """``"<blocks>x<threads>"`` from ncu's launch-config text (``(256, 1, 1)`` or the scalar
    ``launch__grid_size``): the products of the printed dimensions; '' when unknown."""
    def total(s: pd.Series) -> pd.Series:
        s = s.astype(str).reset_index(drop=True)
        dims = s.str.extractall(r"(\d+(?:\.\d*)?)")[0].astype(np.float64).round()
        prod = dims.groupby(level=0).prod().astype(np.int64)
        return prod.reindex(range(len(s))).astype("Int64").astype(str).replace("<NA>", "")

    g, b = total(grid), total(block)
    return (g + "x" + b).where((g != "") & (b != "") & (g != "0") & (b != "0"), "")


@dataclass(frozen=True)
class _NcuSide:
    """The ncu kernels, indexed by each key level, with their per-launch time and configs."""

    index: dict[str, dict[str, list[str]]]
    per_launch_ns: dict[str, float]
    launches: dict[str, int]
    configs: dict[str, frozenset]


def _ncu_side(roofline: RooflineResult) -> _NcuSide:
    index: dict[str, dict[str, list[str]]] = {lvl: {} for lvl in MATCH_LEVELS}
    for k in roofline.kernels:  # a few dozen unique names
        for lvl in MATCH_LEVELS:
            index[lvl].setdefault(_KEYERS[lvl](k.name), []).append(k.name)
    configs: dict[str, frozenset] = {}
    lt = roofline.launch_table
    if len(lt) and {"grid_size", "block_size"} <= set(lt.columns):
        cfg = _config_key(lt["grid_size"], lt["block_size"])
        known = pd.DataFrame({"name": lt["kernel_name"].astype(str).to_numpy(), "cfg": cfg.to_numpy()})
        known = known[known["cfg"] != ""]
        configs = {str(n): frozenset(c) for n, c in known.groupby("name")["cfg"]}
    return _NcuSide(index=index,
                    per_launch_ns={k.name: k.time_ns / max(k.launches, 1) for k in roofline.kernels},
                    launches={k.name: int(k.launches) for k in roofline.kernels}, configs=configs)


def _ratio(hit: list[str], side: _NcuSide, tl_per_launch_ns: float) -> float | None:
    """ncu per-launch duration of ``hit`` (all their launches) ÷ the timeline's per-launch one."""
    launches = sum(side.launches[n] for n in hit)
    ncu_ns = sum(side.per_launch_ns[n] * side.launches[n] for n in hit)
    if not launches or tl_per_launch_ns <= 0:
        return None
    return ncu_ns / launches / tl_per_launch_ns


def _find_match(name: str, short: str, configs: frozenset, tl_per_launch_ns: float,
                side: _NcuSide, max_ratio: float) -> tuple[list[str] | None, str, set[str]]:
    """(ncu kernels a timeline kernel matches, the level, ncu kernels refused for duration).

    ``signature`` (the exact name) first, kept only where both sides' launch configs are known
    and share one (or either side lacks them); then ``base`` and ``family`` as labelled
    fallbacks, each ncu candidate kept only within ``max_ratio``× per-launch duration."""
    refused: set[str] = set()
    for lvl in MATCH_LEVELS:
        for candidate in (name, short):
            key = _KEYERS[lvl](candidate) if candidate else ""
            hit = side.index[lvl].get(key) if key else None
            if not hit:
                continue
            if lvl == "signature":
                hit = [n for n in hit if not configs or not side.configs.get(n)
                       or configs & side.configs[n]]
            else:
                ok = [n for n in hit if (r := _ratio([n], side, tl_per_launch_ns)) is not None
                      and 1.0 / max_ratio <= r <= max_ratio]
                refused |= set(hit) - set(ok)
                hit = ok
            if hit:
                return hit, lvl, refused - set(hit)
    return None, "", refused


def _join_confidence(matched_share: float, family_frac: float, roofline_confidence: str) -> str:
    """high: ≥ 80% of timeline kernel time matched, mostly above family level, a high-confidence
    roofline; medium: ≥ 50% matched; else low."""
    if matched_share >= 0.8 and roofline_confidence == "high" and family_frac < 0.5:
        return "high"
    if matched_share >= 0.5 and roofline_confidence in ("high", "medium"):
        return "medium"
    return "low"


@dataclass
class _Acc:
    """Running sums of the join (ns, floats: a timeline name's time is split by ncu time)."""

    bound_ns: dict[str, float]
    level_ns: dict[str, float]
    tc_ns: float = 0.0
    tc_known_ns: float = 0.0
    refused: int = 0


def _weigh(name: str, ns: int, launches: int, hit: list[str], level: str, side: _NcuSide,
           by_name: dict, acc: _Acc, kernel_tl_ns: dict[str, float], total_ns: int) -> KernelMatch:
    """Split one timeline name's time among its ncu kernels (by ncu time) into bound classes."""
    weights = np.array([max(by_name[n].time_ns, 1) for n in hit], dtype=np.float64)
    weights /= weights.sum()
    acc.level_ns[level] += ns
    tc_parts = []
    bound_here: dict[str, float] = {}
    for n, w in zip(hit, weights):
        k = by_name[n]
        kernel_tl_ns[n] = kernel_tl_ns.get(n, 0.0) + ns * w
        for cls, share in (k.bound_shares or {"unknown": 1.0}).items():
            acc.bound_ns[cls] += ns * w * share
            bound_here[cls] = bound_here.get(cls, 0.0) + w * share
        if k.tensor_core_share is not None:
            acc.tc_ns += ns * w * k.tensor_core_share
            acc.tc_known_ns += ns * w
            tc_parts.append(w * k.tensor_core_share)
    return KernelMatch(
        timeline_name=name, ncu_names=tuple(hit), level=level, time_ns=int(ns),
        share=ns / total_ns if total_ns else 0.0,
        bound=max(bound_here, key=lambda c: bound_here[c]) if bound_here else "unknown",
        tensor_core_share=float(sum(tc_parts)) if tc_parts else None,
        launches=int(launches), ncu_launches=sum(side.launches[n] for n in hit),
        duration_ratio=_ratio(hit, side, ns / launches if launches else 0.0))


def join_roofline_to_timeline(roofline_result: RooflineResult | Unavailable,
                              kernels_frame: pd.DataFrame, *,
                              max_duration_ratio: float = DEFAULT_THRESHOLDS.ncu_join_max_duration_ratio
                              ) -> RooflineJoinResult | Unavailable:
    """Weight the ncu bound classes by nsys timeline kernel time (see module doc)."""
    if not isinstance(roofline_result, RooflineResult):
        return roofline_result
    if kernels_frame is None or len(kernels_frame) == 0:
        return Unavailable("no timeline kernels to weight the ncu roofline with",
                           f"capture the nsys trace with CUDA tracing (`{NSYS_TRACE_CUDA_NVTX}`)")
    tl = _timeline_by_name(kernels_frame)
    total_ns = int(tl["ns"].sum())
    side = _ncu_side(roofline_result)
    by_name = {k.name: k for k in roofline_result.kernels}
    acc = _Acc(bound_ns={c: 0.0 for c in BOUND_CLASSES}, level_ns={lvl: 0.0 for lvl in MATCH_LEVELS})
    matches: list[KernelMatch] = []
    unmatched: list[tuple[str, int, float]] = []
    kernel_tl_ns: dict[str, float] = {}
    # loop over unique timeline names (bounded by distinct kernels, not launches)
    for name, short, ns, launches, cfgs in zip(tl["name"], tl["short_name"], tl["ns"],
                                               tl["launches"], tl["configs"]):
        per_launch = ns / launches if launches else 0.0
        hit, level, refused = _find_match(name, short, cfgs, per_launch, side, max_duration_ratio)
        acc.refused += len(refused)
        if not hit:
            unmatched.append((name, int(ns), ns / total_ns if total_ns else 0.0))
            continue
        matches.append(_weigh(name, int(ns), int(launches), hit, level, side, by_name, acc,
                              kernel_tl_ns, total_ns))
    return _result(roofline_result, acc, matches, unmatched, kernel_tl_ns, total_ns,
                   max_duration_ratio)


def _result(roofline_result: RooflineResult, acc: _Acc, matches: list[KernelMatch],
            unmatched: list[tuple[str, int, float]], kernel_tl_ns: dict[str, float],
            total_ns: int, max_ratio: float) -> RooflineJoinResult:
    """Shares of all timeline kernel time, Tensor Core shares, the confidence, capped lists."""
    matched_ns = float(sum(acc.level_ns.values()))
    tw = {v: 0.0 for v in TIME_WEIGHT_KEYS.values()}
    tw_matched = dict(tw)
    for cls, ns in acc.bound_ns.items():
        key = TIME_WEIGHT_KEYS[cls]
        tw[key] += ns / total_ns if total_ns else 0.0
        tw_matched[key] += ns / matched_ns if matched_ns else 0.0
    tw["unmatched"] = (total_ns - matched_ns) / total_ns if total_ns else 0.0
    matched_share = matched_ns / total_ns if total_ns else 0.0
    has_tc = roofline_result.tensor_evidence is not None and acc.tc_known_ns > 0
    confidence = _join_confidence(matched_share,
                                  acc.level_ns["family"] / matched_ns if matched_ns else 0.0,
                                  roofline_result.confidence)
    matches.sort(key=lambda m: -m.time_ns)
    unmatched.sort(key=lambda u: -u[1])
    used = set(kernel_tl_ns)
    notes: tuple[str, ...] = ()
    if acc.refused:
        notes = (f"{acc.refused} name/family pairing(s) refused: per-launch durations more than "
                 f"{max_ratio:g}× apart (a different problem size or another kernel of the family)",)
    return RooflineJoinResult(
        roofline=roofline_result, timeline_kernel_time_ns=total_ns,
        matched_time_ns=int(round(matched_ns)), matched_share=matched_share,
        time_weighted=tw, time_weighted_matched=tw_matched,
        kernel_timeline={n: (int(round(v)), v / total_ns if total_ns else 0.0)
                         for n, v in kernel_tl_ns.items()},
        matches=tuple(matches[:MAX_LISTED]), unmatched=tuple(unmatched[:MAX_LISTED]),
        unmatched_ncu=tuple(sorted({k.name for k in roofline_result.kernels} - used))[:MAX_LISTED],
        tensor_core_share_by_time=acc.tc_ns / total_ns if has_tc and total_ns else None,
        tensor_core_share_of_matched=acc.tc_ns / acc.tc_known_ns if has_tc else None,
        tensor_core_evidence=roofline_result.tensor_evidence if has_tc else None,
        match_levels={lvl: (v / matched_ns if matched_ns else 0.0) for lvl, v in acc.level_ns.items()},
        confidence=confidence, refused_pairings=acc.refused, join_notes=notes,
    )
