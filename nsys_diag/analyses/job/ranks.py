"""Ranks of a multi-process job: who is who, how far apart they are, and who is late.

Rank identity, strongest evidence first (``RankId.strength``):

3. the file name: ``rank3``, ``node1_rank12``, ``world_rank_5``, ``node0_local_rank3``, ``r07``,
   ``proc-3`` (a parent directory named like that counts too);
2. the trace's launch environment (``RANK``, ``OMPI_COMM_WORLD_RANK``, ``PMIX_RANK``, ``PMI_RANK``,
   ``SLURM_PROCID`` …; the loader keeps it private in ``meta.environment``) — only the rank
   number ever leaves this module;
1. thread names written by MPI tools, e.g. ``MPI Rank 0``;
0. a bare trailing number: ``…_12.sqlite``, ``report.3.sqlite`` (``nsys -o report.%q{RANK}``).

Ordering is always *natural* (``rank2`` before ``rank10``), never lexicographic.

Cross-rank analysis (``analyze_ranks``): per-rank step time and phase shares, spread (max/median,
CV), stragglers by a robust (modified) z-score on per-rank median step time (Iglewicz & Hoaglin,
cut-off ``Thresholds.outlier_mad_k``) and, when step times are equalised by synchronous
collectives, on per-phase time; the phase where each straggler loses time; communication kernel
time per rank. Traces from different nodes have unrelated clocks: steps are aligned by step index,
and start skew uses each trace's own session start (UTC) — never raw timestamps across files.
Pure: no I/O.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Iterable, Mapping, Sequence, cast

import numpy as np

from nsys_diag.analyses.job.compare_stats import MAD_TO_SIGMA, MEANAD_TO_SIGMA

STRAGGLER_MIN_EXCESS = 0.05
"""A straggler must also be ≥ 5% slower than the median rank: with very regular ranks the MAD is
tiny and the z-score alone would flag sub-percent differences (same guard as
``Thresholds.outlier_factor`` for outlier steps, scaled to rank skew)."""

PHASE_STRAGGLER_MIN_SHARE = 0.05
"""A phase-level straggler's excess in that phase must be ≥ 5% of the median step time."""

RANK_ENV_VARS = ("RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID",
                 "MV2_COMM_WORLD_RANK", "MPI_RANKID", "JSM_NAMESPACE_RANK")
"""Global rank, most specific first (torchrun, Open MPI, PMIx, MPICH/Intel MPI, Slurm, …)."""
LOCAL_RANK_ENV_VARS = ("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID",
                       "MPI_LOCALRANKID", "MV2_COMM_WORLD_LOCAL_RANK", "JSM_NAMESPACE_LOCAL_RANK")
NODE_ENV_VARS = ("GROUP_RANK", "SLURM_NODEID")

TRACE_EXTENSIONS = (".nsys-rep", ".qdrep", ".sqlite", ".sqlite3", ".db", ".csv")

# ------------------------------------------------------------------------------- natural sort
_DIGITS = re.compile(r"(\d+)")


def natural_key(text: str) -> tuple:
    """Sort key that orders embedded numbers numerically: ``rank2`` < ``rank10``.

    Case-insensitive; ties are broken by the original string so the order is total.
    """
    parts = _DIGITS.split(str(text).lower())
    key = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in parts if p != "")
    return (key, str(text))


def natural_sorted(items: Iterable, key=None) -> list:
    """``sorted`` with ``natural_key`` applied to ``key(item)`` (default: ``str(item)``)."""
    k = key or str
    return sorted(items, key=lambda it: natural_key(k(it)))


# ------------------------------------------------------------------------------ rank identity
@dataclass(frozen=True)
class RankId:
    """What one trace says about its rank. ``rank`` is None when only a local rank is known."""

    rank: int | None
    local_rank: int | None = None
    node: int | None = None
    source: str = ""
    strength: int = 0


_SEP = r"(?:^|(?<=[^a-z0-9]))"  # start, or after a non-alphanumeric character
_LOCAL_RANK = re.compile(_SEP + r"(?:local[_\-.]?rank|lrank)[_\-.]?(\d{1,6})(?!\d)", re.I)
_RANK = re.compile(r"(?:^|(?<=[^a-z]))(?:world[_\-.]?)?rank[_\-.]?(\d{1,6})(?!\d)", re.I)
_NODE = re.compile(r"(?:^|(?<=[^a-z]))node[_\-.]?(\d{1,6})(?!\d)", re.I)
_SHORT_R = re.compile(_SEP + r"r(\d{1,6})(?![a-z0-9])", re.I)
_PROC = re.compile(_SEP + r"(?:proc(?:ess)?|worker)[_\-.]?(\d{1,6})(?!\d)", re.I)
_TRAILING = re.compile(r"(?:[_\-]|(?<![\d.])\.)(\d{1,6})$")
_THREAD_RANK = re.compile(r"\b(?:MPI\s+)?rank\s*[:#]?\s*(\d{1,6})\b", re.I)


def _stem(name: str) -> str:
    low = name.lower()
    for ext in TRACE_EXTENSIONS:
        if low.endswith(ext):
            return name[: -len(ext)]
    return name


def _parse_component(text: str) -> RankId | None:
    """Explicit rank patterns in one path component (strength 3), else None."""
    local = _LOCAL_RANK.search(text)
    rest = _LOCAL_RANK.sub(" ", text)
    rank = _RANK.search(rest)
    node = _NODE.search(rest)
    node_n = int(node.group(1)) if node else None
    if rank:
        return RankId(int(rank.group(1)), int(local.group(1)) if local else None, node_n,
                      "file name", 3)
    if local:
        return RankId(None, int(local.group(1)), node_n, "file name (local rank)", 3)
    for pat in (_SHORT_R, _PROC):
        m = pat.search(rest)
        if m:
            return RankId(int(m.group(1)), None, node_n, "file name", 3)
    return None


def parse_rank_name(path_or_name: str | PurePath) -> RankId | None:
    """Rank evidence in a path: the file name first, then its parent directories.

    Explicit patterns (``rank3``, ``local_rank3``, ``r07``, ``proc-3`` …) have strength 3; a bare
    trailing number of the file name (``train_12.sqlite``, ``report.3.sqlite``) strength 0.
    A version-like suffix (``…_2026.2.sqlite``) is not a rank.
    """
    p = PurePath(str(path_or_name))
    parts = list(p.parts)
    if not parts:
        return None
    stem = _stem(parts[-1])
    found = _parse_component(stem)
    if found is None:
        for parent in reversed(parts[:-1]):
            found = _parse_component(parent)
            if found is not None:
                break
    if found is not None:
        if found.node is None:  # node number may sit in a parent directory: node1/rank12.sqlite
            for parent in reversed(parts[:-1]):
                m = _NODE.search(parent)
                if m:
                    return RankId(found.rank, found.local_rank, int(m.group(1)), found.source,
                                  found.strength)
        return found
    m = _TRAILING.search(stem)
    if m:
        return RankId(int(m.group(1)), None, None, "file name (trailing number)", 0)
    return None


def rank_from_name(path_or_name: str | PurePath) -> int | None:
    """The rank a file name states (global rank, else local rank), or None."""
    rid = parse_rank_name(path_or_name)
    if rid is None:
        return None
    return rid.rank if rid.rank is not None else rid.local_rank


def _env_int(env: Mapping[str, str], names: Sequence[str]) -> int | None:
    for name in names:
        raw = env.get(name)
        if raw is None:
            continue
        raw = str(raw).strip()
        if raw.isdigit() and len(raw) <= 7:
            return int(raw)
    return None


def rank_from_environment(env: Mapping[str, str] | None) -> RankId | None:
    """Rank from launcher variables in the trace's environment (values other than the rank
    numbers are never read into the result)."""
    if not env:
        return None
    rank = _env_int(env, RANK_ENV_VARS)
    local = _env_int(env, LOCAL_RANK_ENV_VARS)
    node = _env_int(env, NODE_ENV_VARS)
    if rank is None and local is None:
        return None
    return RankId(rank, local, node, "launch environment", 2)


def rank_from_thread_names(names: Iterable[str] | None) -> RankId | None:
    """Rank from thread names such as ``MPI Rank 0`` (only when all such names agree)."""
    if not names:
        return None
    found = {int(m.group(1)) for n in names if n for m in [_THREAD_RANK.search(str(n))] if m}
    if len(found) == 1:
        return RankId(found.pop(), None, None, "thread name", 1)
    return None


@dataclass(frozen=True)
class RankAssignment:
    """Ranks for a set of traces (same order as the input); ``ranks`` is None when not found."""

    ranks: list[int] | None
    source: str
    note: str = ""


def _distinct(values: Sequence) -> bool:
    return all(v is not None for v in values) and len(set(values)) == len(values)


def assign_ranks(evidence: Sequence[Sequence[RankId | None]]) -> RankAssignment:
    """Choose one rank per trace from each trace's evidence (any order, None entries allowed).

    Tried in order: every trace's strongest evidence; one kind of evidence used uniformly
    (strength 3 → 0); (node, local rank) pairs (rank = position in that order). The result must
    give every trace a distinct rank, else ``ranks`` is None (no rank identity).
    """
    n = len(evidence)
    if n == 0:
        return RankAssignment(None, "", "no traces")
    cleaned = [[e for e in ev if e is not None] for ev in evidence]

    best = [max(ev, key=lambda e: (e.rank is not None, e.strength), default=None) for ev in cleaned]
    best_ranks = [b.rank if b is not None else None for b in best]
    if _distinct(best_ranks):
        sources = sorted({b.source for b in best if b is not None})
        return RankAssignment([int(cast(int, r)) for r in best_ranks], " + ".join(sources))

    for strength in (3, 2, 1, 0):
        level = [next((e for e in ev if e.strength == strength and e.rank is not None), None)
                 for ev in cleaned]
        ranks = [e.rank if e else None for e in level]
        if _distinct(ranks):
            return RankAssignment([int(cast(int, r)) for r in ranks], cast(RankId, level[0]).source)

    for strength in (3, 2):
        level = [next((e for e in ev if e.strength == strength and e.local_rank is not None), None)
                 for ev in cleaned]
        pairs = [(e.node if e.node is not None else -1, e.local_rank) if e else None for e in level]
        if _distinct(pairs):
            order = sorted(range(n), key=lambda i: cast(tuple[int, int], pairs[i]))
            positions = [0] * n
            for pos, i in enumerate(order):
                positions[i] = pos
            return RankAssignment(positions, cast(RankId, level[0]).source + " (node, local rank)",
                                  "rank = position in (node, local rank) order")
    return RankAssignment(None, "", "no distinct rank per trace found (names, environment, "
                          "thread names)")


# ------------------------------------------------------------------------------ cross-rank
@dataclass
class RankInput:
    """One rank's numbers (taken from its analysis). Times are ms except ``*_ns``."""

    rank: int
    label: str
    step_ms: np.ndarray
    """Durations of the analysed steps, ms."""
    step_index: np.ndarray | None = None
    """Step index of each entry in ``step_ms`` (aligns ranks); default 0..n-1."""
    step_start_ns: np.ndarray | None = None
    """Step starts on the trace's own session timeline, ns."""
    session_start_utc_ns: int | None = None
    """UTC epoch of the trace's session start (clock of *its* node), ns."""
    phase_ms: Mapping[str, float] = field(default_factory=dict)
    """Canonical phase → mean ms per step."""
    comm_ms: float | None = None
    """Communication (NCCL) kernel time per step, ms (GPU time; may overlap compute)."""
    phase_gpu_ms: Mapping[str, float] = field(default_factory=dict)
    """Canonical phase → GPU work per step, ms: durations of the kernels launched in the phase
    (``phases[].gpu_work_ms``); empty without GPU activity."""
    gaps_ms: Mapping[str, float] = field(default_factory=dict)
    """GPU idle time per step by cause, ms (``gaps.by_cause`` ÷ steps)."""
    step_phase_ms: Mapping[str, np.ndarray] = field(default_factory=dict)
    """Canonical phase → ms in each entry of ``step_ms`` (the job replay, ``job_replay.py``);
    empty when the summary has no per-step phases."""


def robust_z(values: np.ndarray) -> np.ndarray:
    """Modified z-scores (x - median) / (1.4826·MAD), 1.2533·meanAD when MAD is 0; 0 if constant."""
    v = np.asarray(values, dtype=float)
    if v.size == 0:
        return v
    med = np.median(v)
    dev = np.abs(v - med)
    mad = np.median(dev)
    scale = MAD_TO_SIGMA * mad if mad > 0 else MEANAD_TO_SIGMA * dev.mean()
    if scale == 0:
        return np.zeros_like(v)
    return (v - med) / scale


def _f(x) -> float | None:
    return None if x is None or not math.isfinite(float(x)) else float(x)


def _aligned_matrix(inputs: Sequence[RankInput]) -> tuple[np.ndarray, np.ndarray]:
    """Common step indices and a (ranks × steps) matrix of durations aligned by index."""
    idx_sets = []
    for r in inputs:
        idx = r.step_index if r.step_index is not None else np.arange(len(r.step_ms))
        idx_sets.append(np.asarray(idx, dtype=np.int64))
    common = idx_sets[0]
    for s in idx_sets[1:]:
        common = np.intersect1d(common, s)
    mat = np.full((len(inputs), common.size), np.nan)
    for i, (r, idx) in enumerate(zip(inputs, idx_sets)):  # a loop over ranks
        order = np.argsort(idx, kind="stable")
        cols = order[np.searchsorted(idx[order], common)]
        mat[i] = np.asarray(r.step_ms, dtype=float)[cols]
    return common, mat


def _start_skew_ms(inputs: Sequence[RankInput], common: np.ndarray) -> np.ndarray | None:
    """Per rank, median over common steps of (its step start − earliest rank's start), ms.

    Uses each trace's session start (UTC) + its own session-relative step start. None when any
    rank lacks a session start or step starts.
    """
    if common.size == 0 or any(r.session_start_utc_ns is None or r.step_start_ns is None
                               for r in inputs):
        return None
    starts = np.empty((len(inputs), common.size), dtype=np.int64)  # exact: UTC ns needs int64
    for i, r in enumerate(inputs):
        idx = r.step_index if r.step_index is not None else np.arange(len(r.step_ms))
        idx = np.asarray(idx, dtype=np.int64)
        order = np.argsort(idx, kind="stable")
        cols = order[np.searchsorted(idx[order], common)]
        abs_ns = int(cast(int, r.session_start_utc_ns)) + np.asarray(r.step_start_ns, dtype=np.int64)[cols]
        starts[i] = abs_ns
    skew = starts - starts.min(axis=0, keepdims=True)
    return np.median(skew.astype(np.float64), axis=1) / 1e6


def _losing_phase(phases: list[str], phase_mat: np.ndarray, phase_center: np.ndarray,
                  i: int) -> tuple[str | None, float | None]:
    """(phase where rank ``i`` exceeds the median rank most, its excess ms), or (None, None)."""
    if not phases:
        return None, None
    excess = phase_mat[i] - phase_center
    j = int(np.argmax(excess))
    if not math.isfinite(excess[j]) or excess[j] <= 0:
        return None, None
    return phases[j], float(excess[j])


def _stragglers(ranks: list[RankInput], med_step: np.ndarray, z: np.ndarray, center: float,
                phases: list[str], phase_mat: np.ndarray, phase_center: np.ndarray,
                z_cutoff: float, min_excess: float) -> tuple[list[dict], set[int]]:
    """Straggler rows and the flagged rank positions: by median step time (robust z beyond
    ``z_cutoff`` and ``min_excess`` above the median), else by a non-communication phase
    (synchronous collectives equalise step times; the slow rank then shows in a phase)."""
    stragglers = []
    flagged = set()
    for i, r in enumerate(ranks):
        if z[i] > z_cutoff and med_step[i] > center * (1 + min_excess):
            phase, excess = _losing_phase(phases, phase_mat, phase_center, i)
            stragglers.append({"rank": r.rank, "label": r.label, "kind": "step_time",
                               "median_step_ms": float(med_step[i]), "z": float(z[i]),
                               "excess_pct": 100 * (med_step[i] / center - 1),
                               "phase": phase, "phase_excess_ms": excess})
            flagged.add(i)
    for j, p in enumerate(phases):
        if p == "communication":
            continue
        pz = robust_z(phase_mat[:, j])
        for i, r in enumerate(ranks):
            excess = phase_mat[i, j] - phase_center[j]
            if (i not in flagged and pz[i] > z_cutoff
                    and excess > PHASE_STRAGGLER_MIN_SHARE * center):
                stragglers.append({"rank": r.rank, "label": r.label, "kind": "phase",
                                   "median_step_ms": float(med_step[i]), "z": float(pz[i]),
                                   "excess_pct": 100 * excess / center if center else None,
                                   "phase": p, "phase_excess_ms": float(excess)})
                flagged.add(i)
    stragglers.sort(key=lambda s: -(s["phase_excess_ms"] or 0.0) if s["kind"] == "phase"
                    else -s["median_step_ms"])
    return stragglers, flagged


def _slowest_per_step(ranks: list[RankInput], common: np.ndarray, mat: np.ndarray) -> list[dict]:
    """The (up to 5) ranks most often slowest on a common step."""
    if not common.size:
        return []
    worst = np.nanargmax(np.where(np.isnan(mat), -np.inf, mat), axis=0)
    counts = np.bincount(worst, minlength=len(ranks))
    return [{"rank": ranks[i].rank, "label": ranks[i].label, "steps_slowest": int(counts[i])}
            for i in np.argsort(-counts, kind="stable") if counts[i] > 0][:5]


def _spread_of(step_ms: np.ndarray) -> dict[str, float]:
    """A rank's step-time distribution (ms): shortest, quartiles (linear interpolation, as
    ``numpy.quantile``) and longest step — the box of the index's ``rank-steps`` chart."""
    q1, q3 = np.quantile(step_ms, (0.25, 0.75))
    return {"min_step_ms": float(step_ms.min()), "p25_step_ms": float(q1),
            "p75_step_ms": float(q3), "max_step_ms": float(step_ms.max())}


def _rank_rows(ranks: list[RankInput], med_step: np.ndarray, mean_step: np.ndarray, z: np.ndarray,
               phases: list[str], phase_mat: np.ndarray, comm: np.ndarray,
               skew: np.ndarray | None, flagged: set[int]) -> list[dict]:
    rows = []
    for i, r in enumerate(ranks):
        total = float(phase_mat[i].sum()) if phases else 0.0
        rows.append({
            "rank": r.rank, "label": r.label,
            "steps": int(np.asarray(r.step_ms).size),
            "median_step_ms": float(med_step[i]), "mean_step_ms": float(mean_step[i]),
            **_spread_of(np.asarray(r.step_ms, dtype=float)),
            "z": float(z[i]),
            "phase_ms": {p: float(phase_mat[i, j]) for j, p in enumerate(phases)},
            "phase_shares": {p: (float(phase_mat[i, j]) / total if total > 0 else None)
                             for j, p in enumerate(phases)},
            "comm_ms": _f(comm[i]),
            "start_skew_ms": None if skew is None else float(skew[i]),
            "straggler": i in flagged,
            "phase_gpu_ms": {str(p): float(v) for p, v in r.phase_gpu_ms.items()},
            "gaps_ms": {str(c): float(v) for c, v in r.gaps_ms.items()},
        })
    return rows


def analyze_ranks(inputs: Sequence[RankInput], *, z_cutoff: float = 3.5,
                  min_excess: float = STRAGGLER_MIN_EXCESS) -> dict:
    """Cross-rank view (JSON-able dict). ``z_cutoff``: pass ``Thresholds.outlier_mad_k``.

    Keys: ``available``, ``count``, ``rows`` (per rank, natural rank order), ``spread``,
    ``stragglers``, ``alignment``, ``communication``.
    """
    ranks = sorted((r for r in inputs if np.asarray(r.step_ms).size), key=lambda r: r.rank)
    if len(ranks) < 2:
        return {"available": False, "reason": "fewer than two ranks with steps", "hint": ""}

    med_step = np.array([float(np.median(r.step_ms)) for r in ranks])
    mean_step = np.array([float(np.mean(r.step_ms)) for r in ranks])
    z = robust_z(med_step)
    center = float(np.median(med_step))
    phases = sorted({p for r in ranks for p in r.phase_ms})
    phase_mat = np.array([[float(r.phase_ms.get(p, 0.0)) for p in phases] for r in ranks])
    phase_center = np.median(phase_mat, axis=0) if phases else np.zeros(0)

    stragglers, flagged = _stragglers(ranks, med_step, z, center, phases, phase_mat, phase_center,
                                      z_cutoff, min_excess)
    comm = np.array([np.nan if r.comm_ms is None else float(r.comm_ms) for r in ranks])
    has_comm = bool(np.isfinite(comm).any())
    common, mat = _aligned_matrix(ranks)
    skew = _start_skew_ms(ranks, common)
    slowest_per_step = _slowest_per_step(ranks, common, mat)
    rows = _rank_rows(ranks, med_step, mean_step, z, phases, phase_mat, comm, skew, flagged)

    mean_all = float(np.mean(med_step))
    return {
        "available": True,
        "count": len(ranks),
        "rows": rows,
        "spread": {
            "median_ms": center, "min_ms": float(med_step.min()), "max_ms": float(med_step.max()),
            "max_over_median": float(med_step.max() / center) if center else None,
            "cv": float(np.std(med_step, ddof=1) / mean_all) if mean_all else None,
            "phase_median_ms": {p: float(phase_center[j]) for j, p in enumerate(phases)},
        },
        "stragglers": stragglers,
        "alignment": {
            "basis": "step index + session start (UTC)" if skew is not None else "step index",
            "common_steps": int(common.size),
            "max_start_skew_ms": None if skew is None else float(skew.max()),
            "slowest_per_step": slowest_per_step,
            "note": ("each trace's clock is its own node's: steps are matched by index; start "
                     "skew uses each trace's session start (UTC), so it is only as good as the "
                     "nodes' clock sync"),
        },
        "communication": {
            "available": has_comm,
            "median_ms": _f(np.nanmedian(comm)) if has_comm else None,
            "max_ms": _f(np.nanmax(comm)) if has_comm else None,
            "min_ms": _f(np.nanmin(comm)) if has_comm else None,
            "lowest_rank": ranks[int(np.nanargmin(comm))].rank if has_comm else None,
            "note": ("the rank that waits least in communication is often the one the others "
                     "wait for"),
        },
    }
