""""More GPUs?" from a data-parallel replay: each representative step replayed again with its
collectives scaled for N ranks (``SCALE_GPUS``), the step's other work as captured.

Model (data parallelism, the per-GPU batch fixed — weak scaling): N ranks each run the analysed
step; a ring all-reduce moves ``2·(N−1)/N ×`` the gradient bytes per rank, so a collective that
took ``t`` with the ``ranks`` ranks of the capture takes ``t × ring(N) / ring(ranks)``
(``ring(n) = 2·(n−1)/n``: 0 for one GPU, where nothing is all-reduced). The replay keeps the
edges as captured — the host still waits where it waited, compute still overlaps the
collectives where it did — so only the part of the scaled collectives that the step's own
structure does not hide adds to the step: exposed communication as measured, never assumed
hidden. ``exposed_ms`` = the step at N − the step with no collective (ring(1) = 0).

Per replayed step: ``{N: replayed step (ns)}`` plus the collectives' summed duration (ns);
``analysis._replay_steps`` combines the steps by step kind as it does the what-ifs.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from nsys_diag.analyses.replay.engine import replay_window
from nsys_diag.analyses.replay.model import COMMUNICATION
from nsys_diag.analyses.replay.whatif import StepWindow, after_end

SCALE_GPUS = (1, 2, 4, 8)
"""GPU counts projected (as ``job/scaling.SCALE_GPUS``)."""


def ring(n: int) -> float:
    """Bytes a ring all-reduce moves per rank, as a multiple of the reduced size: 2·(n−1)/n."""
    return 2.0 * (n - 1) / n if n >= 1 else 0.0


@dataclass(frozen=True)
class ScaledStep:
    """One data-parallel projection: ``gpus`` ranks, the mean step (ms), its exposed
    communication (ms) and the collectives' time per step (ms), all per analysed step."""

    gpus: int
    step_ms: float
    exposed_ms: float
    collective_ms: float


def collective_ns(w: StepWindow) -> int:
    """Summed duration (ns) of the step's collectives (NCCL kernels launched in it)."""
    m = w.model
    comm = (m.o_kind == COMMUNICATION) & (m.o_launch >= 0)
    return int(m.o_dur[comm].sum())


def scaled_steps(w: StepWindow, ranks: int) -> dict[int, int]:
    """Replayed step duration (ns) per GPU count of ``SCALE_GPUS`` with the step's collectives
    scaled from the capture's ``ranks`` (≥ 2) to that count; {} without collectives."""
    m = w.model
    comm = (m.o_kind == COMMUNICATION) & (m.o_launch >= 0)
    if ranks < 2 or not comm.any():
        return {}
    out: dict[int, int] = {}
    for n in SCALE_GPUS:  # four GPU counts
        if n == ranks:
            out[n] = after_end(w, w.base) - m.start_ns
            continue
        dur = m.o_dur.copy()
        dur[comm] = np.round(dur[comm] * (ring(n) / ring(ranks))).astype(np.int64)
        out[n] = after_end(w, replay_window(replace(m, o_dur=dur))) - m.start_ns
    return out


def combine(base_ns: list[int], scaled: list[dict[int, int]], coll_ns: list[int],
            weights: list[int], mean_step_ns: float, ranks: int) -> tuple[ScaledStep, ...]:
    """The projections over the replayed steps, each step's change counted for the analysed steps
    it stands for (``weights``): step(N) = mean analysed step + weighted change of the replayed
    step; () when no weighted step has collectives."""
    use = [i for i, (s, wt) in enumerate(zip(scaled, weights)) if s and wt > 0]
    if not use:
        return ()
    wts = np.asarray([weights[i] for i in use], np.float64)

    def mean(values) -> float:
        return float(np.dot(np.asarray(values, np.float64), wts) / wts.sum())

    rows = {n: mean([scaled[i][n] - base_ns[i] for i in use]) for n in SCALE_GPUS}
    coll = mean([coll_ns[i] for i in use])
    return tuple(ScaledStep(n, (mean_step_ns + rows[n]) / 1e6,
                            max(rows[n] - rows[1], 0.0) / 1e6,
                            coll * ring(n) / ring(ranks) / 1e6) for n in SCALE_GPUS)


__all__ = ["SCALE_GPUS", "ScaledStep", "collective_ns", "combine", "ring", "scaled_steps"]
