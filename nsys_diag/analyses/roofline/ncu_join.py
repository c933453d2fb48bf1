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

Launch configurations: the timeline is grouped per (name, launch config) where the kernels carry
their grid/block (``analyze --ncu`` loads them), the config being ``"<blocks>x<threads>"`` (total
blocks × threads per block, the form ncu's ``launch__grid_size``/``launch__block_size`` and
``Grid Size``/``Block Size`` reduce to). A ``signature`` match needs the same config where both
sides know theirs; the exact name under another config drops to the ``base`` fallback, with its
duration check. Each match records ``launch_config``: ``same`` | ``different`` | ``unknown``
(not compared: a side lacks it); a ``same`` match is weighted with the ncu launches of that config
only (their bound classes, Tensor Core share and per-launch duration).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from nsys_diag.model.jsonsafe import fnum
from nsys_diag.analyses.base import Unavailable
from nsys_diag.analyses.kernels.names import (kernel_base_name, kernel_signature_key,
                                             normalize_kernel_name)
from nsys_diag.analyses.roofline.analysis import BOUND_CLASSES, RooflineResult, TIME_WEIGHT_KEYS
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
    launch_config: str = "unknown"
    """``same`` | ``different`` | ``unknown`` (not compared: a side lacks its launch config)."""
    timeline_launch_config: str = ""
    """This row's timeline launch config ``"<blocks>x<threads>"``; '' when not loaded."""

    def to_json(self) -> dict:
        return {"timeline_name": self.timeline_name, "ncu_names": list(self.ncu_names),
                "level": self.level, "time_ns": int(self.time_ns), "share": fnum(self.share),
                "bound": self.bound, "tensor_core_share": fnum(self.tensor_core_share),
                "launches": int(self.launches), "ncu_launches": int(self.ncu_launches),
                "duration_ratio": fnum(self.duration_ratio), "launch_config": self.launch_config,
                "timeline_launch_config": self.timeline_launch_config or None}


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


def timeline_launch_configs(kernels: pd.DataFrame) -> np.ndarray:
    """Per kernel row, ``<blocks> * 2**32 + <threads>`` (total blocks, threads per block) as
    int64; 0 where the grid/block is unknown (not loaded: -1, or not recorded). Vectorised."""
    cols = ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z")
    n = len(kernels)
    if not set(cols) <= set(kernels.columns):
        return np.zeros(n, dtype=np.int64)
    dims = [kernels[c].to_numpy(dtype=np.int64) for c in cols]
    blocks, threads = dims[0] * dims[1] * dims[2], dims[3] * dims[4] * dims[5]
    known = np.logical_and.reduce([d > 0 for d in dims]) & (threads < (1 << 31))
    return np.where(known, blocks * (1 << 32) + threads, 0)


def _config_text(code: int) -> str:
    """``"<blocks>x<threads>"`` of a ``timeline_launch_configs`` code; '' for 0 (unknown)."""
    return f"{code >> 32}x{code & 0xFFFFFFFF}" if code > 0 else ""


def _timeline_by_name(kernels: pd.DataFrame) -> pd.DataFrame:
    """Per unique (name, short_name, launch config): total timeline ns, launches and the config
    text (``"<blocks>x<threads>"``, '' when unknown) — groupbys, no row loop."""
    dur = (kernels["end_ns"].to_numpy(dtype=np.int64) - kernels["start_ns"].to_numpy(dtype=np.int64))
    short = kernels["short_name"] if "short_name" in kernels else pd.Series("", index=kernels.index)
    df = pd.DataFrame({"name": kernels["name"].astype(str).to_numpy(),
                       "short_name": short.astype(str).to_numpy(), "ns": np.clip(dur, 0, None),
                       "code": timeline_launch_configs(kernels)})
    g = df.groupby(["name", "short_name", "code"], sort=False, as_index=False).agg(
        ns=("ns", "sum"), launches=("ns", "size"))
    g["cfg"] = [_config_text(int(c)) for c in g["code"]]  # one per unique (name, config)
    return g


def _config_key(grid: pd.Series, block: pd.Series) -> pd.Series:
    """``"<blocks>x<threads>"`` from ncu's launch-config text (``(256, 1, 1)`` or the scalar
    ``launch__grid_size``, thousands separators allowed): the products of the printed dimensions;
    '' when unknown."""
    def total(s: pd.Series) -> pd.Series:
        s = s.astype(str).str.replace(r"(?<=\d)[,.](?=\d{3}\b)", "", regex=True).reset_index(drop=True)
        dims = s.str.extractall(r"(\d+(?:\.\d*)?)")[0].astype(np.float64).round()
        prod = dims.groupby(level=0).prod().astype(np.int64)
        return prod.reindex(range(len(s))).fillna(0).astype(np.int64).astype(str)  # 0: unknown

    g, b = total(grid), total(block)
    return (g + "x" + b).where((g != "") & (b != "") & (g != "0") & (b != "0"), "")


@dataclass(frozen=True)
class _Stats:
    """ncu launches of one kernel name (or of one of its launch configs)."""

    ns: float
    launches: int
    bound_shares: dict[str, float]
    tensor_core_share: float | None


@dataclass(frozen=True)
class _NcuSide:
    """The ncu kernels, indexed by each key level, with per-name and per-(name, config) stats."""

    index: dict[str, dict[str, list[str]]]
    by_name: dict[str, _Stats]
    by_config: dict[tuple[str, str], _Stats]

    def configs(self, name: str) -> set[str]:
        return {c for n, c in self.by_config if n == name}

    def stats(self, name: str, cfg: str, launch_config: str) -> _Stats:
        """The launches of ``cfg`` when the configs matched, else all of ``name``'s."""
        return self.by_config.get((name, cfg), self.by_name[name]) if launch_config == "same" \
            else self.by_name[name]


def _config_stats(lt: pd.DataFrame) -> dict[tuple[str, str], _Stats]:
    """Per (ncu kernel name, launch config) of the launch table: ns, launches, bound shares by
    time, Tensor Core share by time (groupbys over the launches)."""
    if not len(lt) or not {"grid_size", "block_size"} <= set(lt.columns):
        return {}
    t = lt["t_s"].to_numpy(dtype=np.float64) * 1e9
    tc = lt["tc"].to_numpy(dtype=np.float64) if "tc" in lt else np.full(len(lt), np.nan)
    df = pd.DataFrame({"name": lt["kernel_name"].astype(str).to_numpy(),
                       "cfg": _config_key(lt["grid_size"], lt["block_size"]).to_numpy(),
                       "bound": lt["bound"].astype(str).to_numpy(), "t": t,
                       "tc_t": np.where(np.isnan(tc), 0.0, tc * t), "tc_w": np.where(np.isnan(tc), 0.0, t)})
    df = df[df["cfg"] != ""]
    if df.empty:
        return {}
    keys = ["name", "cfg"]
    tot = df.groupby(keys, sort=False).agg(t=("t", "sum"), n=("t", "size"), tc_t=("tc_t", "sum"),
                                           tc_w=("tc_w", "sum"))
    by_bound = df.groupby([*keys, "bound"], sort=False)["t"].sum()
    shares: dict[tuple[str, str], dict[str, float]] = {}
    for (n, c, b), v in by_bound.items():  # one per (name, config, bound class)
        total = float(tot.loc[(n, c), "t"])
        shares.setdefault((n, c), {})[b] = float(v) / total if total > 0 else 0.0
    return {(str(n), str(c)): _Stats(ns=float(r.t), launches=int(r.n),
                                     bound_shares=shares.get((n, c), {}),
                                     tensor_core_share=(r.tc_t / r.tc_w) if r.tc_w > 0 else None)
            for (n, c), r in tot.iterrows()}


def _ncu_side(roofline: RooflineResult) -> _NcuSide:
    index: dict[str, dict[str, list[str]]] = {lvl: {} for lvl in MATCH_LEVELS}
    for k in roofline.kernels:  # a few dozen unique names
        for lvl in MATCH_LEVELS:
            index[lvl].setdefault(_KEYERS[lvl](k.name), []).append(k.name)
    by_name = {k.name: _Stats(ns=float(k.time_ns), launches=int(k.launches),
                              bound_shares=dict(k.bound_shares or {}),
                              tensor_core_share=k.tensor_core_share) for k in roofline.kernels}
    return _NcuSide(index=index, by_name=by_name, by_config=_config_stats(roofline.launch_table))


def _ratio(stats: list[_Stats], tl_per_launch_ns: float) -> float | None:
    """ncu per-launch duration of ``stats`` (all their launches) ÷ the timeline's per-launch one."""
    launches = sum(s.launches for s in stats)
    if not launches or tl_per_launch_ns <= 0:
        return None
    return sum(s.ns for s in stats) / launches / tl_per_launch_ns


def _compare_config(cfg: str, hit: list[str], side: _NcuSide) -> str:
    """``same`` when some matched ncu kernel ran with ``cfg``; ``unknown`` when ``cfg`` or a
    matched kernel's configs are unknown; else ``different``."""
    if not cfg:
        return "unknown"
    configs = [side.configs(n) for n in hit]
    if any(cfg in c for c in configs):
        return "same"
    return "unknown" if any(not c for c in configs) else "different"


@dataclass(frozen=True)
class _Hit:
    names: list[str]
    level: str
    launch_config: str


def _find_match(name: str, short: str, cfg: str, tl_per_launch_ns: float,
                side: _NcuSide, max_ratio: float) -> tuple[_Hit | None, set[str]]:
    """(the ncu kernels a timeline (name, config) matches, the ncu kernels refused for duration).

    ``signature`` (the exact name) first, kept only where both sides' launch configs are known
    and agree (or a side lacks them); then ``base`` and ``family`` as labelled fallbacks, each ncu
    candidate kept only within ``max_ratio``× per-launch duration."""
    refused: set[str] = set()
    for lvl in MATCH_LEVELS:
        for candidate in (name, short):
            key = _KEYERS[lvl](candidate) if candidate else ""
            hit = side.index[lvl].get(key) if key else None
            if not hit:
                continue
            if lvl == "signature":
                same = [n for n in hit if cfg and cfg in side.configs(n)]
                hit = same or [n for n in hit if not cfg or not side.configs(n)]
            else:
                ok = [n for n in hit if (r := _ratio([side.by_name[n]], tl_per_launch_ns)) is not None
                      and 1.0 / max_ratio <= r <= max_ratio]
                refused |= set(hit) - set(ok)
                hit = ok
            if hit:
                return _Hit(hit, lvl, _compare_config(cfg, hit, side)), refused - set(hit)
    return None, refused


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


@dataclass(frozen=True)
class _Group:
    """One timeline (name, launch config) group."""

    name: str
    cfg: str
    ns: int
    launches: int


def _weigh(g: _Group, hit: _Hit, side: _NcuSide, acc: _Acc, kernel_tl_ns: dict[str, float],
           total_ns: int) -> KernelMatch:
    """Split one timeline group's time among its ncu kernels (by ncu time) into bound classes."""
    stats = [side.stats(n, g.cfg, hit.launch_config) for n in hit.names]
    weights = np.array([max(s.ns, 1.0) for s in stats], dtype=np.float64)
    weights /= weights.sum()
    acc.level_ns[hit.level] += g.ns
    tc_parts = []
    bound_here: dict[str, float] = {}
    for n, s, w in zip(hit.names, stats, weights):
        kernel_tl_ns[n] = kernel_tl_ns.get(n, 0.0) + g.ns * w
        for cls, share in (s.bound_shares or {"unknown": 1.0}).items():
            acc.bound_ns[cls] += g.ns * w * share
            bound_here[cls] = bound_here.get(cls, 0.0) + w * share
        if s.tensor_core_share is not None:
            acc.tc_ns += g.ns * w * s.tensor_core_share
            acc.tc_known_ns += g.ns * w
            tc_parts.append(w * s.tensor_core_share)
    return KernelMatch(
        timeline_name=g.name, ncu_names=tuple(hit.names), level=hit.level, time_ns=int(g.ns),
        share=g.ns / total_ns if total_ns else 0.0,
        bound=max(bound_here, key=lambda c: bound_here[c]) if bound_here else "unknown",
        tensor_core_share=float(sum(tc_parts)) if tc_parts else None,
        launches=int(g.launches), ncu_launches=sum(s.launches for s in stats),
        duration_ratio=_ratio(stats, g.ns / g.launches if g.launches else 0.0),
        launch_config=hit.launch_config, timeline_launch_config=g.cfg)


def timeline_from_name_table(table: pd.DataFrame) -> pd.DataFrame:
    """The per-name timeline groups of ``join_roofline_to_timeline`` from a kernel name table
    (``KernelsResult.table``: a streamed export's, whose kernels are not kept): launch configs
    unknown."""
    return pd.DataFrame({"name": table["name"].astype(str).to_numpy(),
                         "short_name": table["short_name"].astype(str).to_numpy(),
                         "code": np.zeros(len(table), np.int64),
                         "ns": np.clip(table["total_ns"].to_numpy(np.int64), 0, None),
                         "launches": table["count"].to_numpy(np.int64),
                         "cfg": [""] * len(table)})


def join_roofline_to_timeline(roofline_result: RooflineResult | Unavailable,
                              kernels_frame: pd.DataFrame | None, *,
                              max_duration_ratio: float = DEFAULT_THRESHOLDS.ncu_join_max_duration_ratio,
                              timeline: pd.DataFrame | None = None
                              ) -> RooflineJoinResult | Unavailable:
    """Weight the ncu bound classes by nsys timeline kernel time (see module doc).
    ``timeline``: the per-name groups already made (``timeline_from_name_table``) instead of
    ``kernels_frame``."""
    if not isinstance(roofline_result, RooflineResult):
        return roofline_result
    if timeline is None and (kernels_frame is None or len(kernels_frame) == 0) or \
            timeline is not None and not len(timeline):
        return Unavailable("no timeline kernels to weight the ncu roofline with",
                           f"capture the nsys trace with CUDA tracing (`{NSYS_TRACE_CUDA_NVTX}`)")
    tl = timeline if timeline is not None else _timeline_by_name(kernels_frame)
    total_ns = int(tl["ns"].sum())
    side = _ncu_side(roofline_result)
    acc = _Acc(bound_ns={c: 0.0 for c in BOUND_CLASSES}, level_ns={lvl: 0.0 for lvl in MATCH_LEVELS})
    matches: list[KernelMatch] = []
    unmatched: dict[str, int] = {}
    kernel_tl_ns: dict[str, float] = {}
    # loop over unique timeline (name, config) groups (bounded by distinct kernels, not launches)
    for name, short, ns, launches, cfg in zip(tl["name"], tl["short_name"], tl["ns"],
                                              tl["launches"], tl["cfg"]):
        g = _Group(name=str(name), cfg=str(cfg), ns=int(ns), launches=int(launches))
        per_launch = g.ns / g.launches if g.launches else 0.0
        hit, refused = _find_match(g.name, short, g.cfg, per_launch, side, max_duration_ratio)
        acc.refused += len(refused)
        if hit is None:
            unmatched[g.name] = unmatched.get(g.name, 0) + g.ns
            continue
        matches.append(_weigh(g, hit, side, acc, kernel_tl_ns, total_ns))
    return _result(roofline_result, acc, matches,
                   [(n, t, t / total_ns if total_ns else 0.0) for n, t in unmatched.items()],
                   kernel_tl_ns, total_ns, max_duration_ratio)


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
