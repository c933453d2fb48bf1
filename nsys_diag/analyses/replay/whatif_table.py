"""The what-if table of the replay: each what-if's id, its change in words and the finding cause
it prices (``WHAT_IFS``), its result (``WhatIf``), and how the replayed steps' durations under
them become one result each (``finish``, ``summarise``). The what-ifs themselves — how each one
changes a step's model — are in ``replay/whatif.py``, which re-exports these names."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

GRAPH_LAUNCH_NS = 2_000
"""``no_launch_overhead``: the host cost of one graph launch in a CUDA-graph replay (2 µs)."""
GRAPH_DISPATCH_NS = 20_000
"""``no_launch_overhead``: CPU time of at most this between two launch calls of a thread is the
dispatch of the next operation (eager PyTorch: ~5–20 µs an op), which a graph replay skips;
longer segments are host work the graph does not capture (the ``EXPLAINED_DELAY_NS`` order)."""
GRAPH_GPU_GAP_NS = 1_000
"""``no_launch_overhead``: the GPU gap between two kernels of a replayed graph (1 µs)."""
WHAT_IFS = {
    "no_host_sync": ("host syncs and small device-to-host reads deferred to the step end",
                     "sync"),
    "instant_input": ("the data phase and input waits take no time", "input"),
    "overlapped_input": ("the data phase overlaps the previous step's compute "
                         "(step = max(data, rest))", "input"),
    "no_launch_overhead": (f"launches as a CUDA-graph replay (one {GRAPH_LAUNCH_NS // 1000} µs "
                           f"launch per run of launches, the dispatch of up to "
                           f"{GRAPH_DISPATCH_NS // 1000} µs between them gone, "
                           f"{GRAPH_GPU_GAP_NS // 1000} µs between kernels)", "launch"),
    "hidden_communication": ("collectives overlap the backward compute of the same step "
                             "(DDP-style)", "communication"),
    "no_alloc_in_loop": ("no memory allocation or free inside the step", "memory_management"),
    "instant_host_io": ("host file and network calls (OS runtime) take no time", "host_io"),
    "instant_host_communication": ("the host's time in communication calls (MPI, NCCL NVTX "
                                   "ranges) takes no time", "communication"),
    "no_overhead_phases": ("the overhead phases' host time (logging, checkpoints) takes no time",
                           "overhead"),
    "async_pinned_copies": ("pageable or synchronous host copies become pinned and asynchronous",
                            "transfer"),
    "tensor_cores_on": ("GEMM/conv kernels without Tensor Cores run at the BF16 Tensor Core rate",
                        "no_tensor_cores"),
    "prefetched_managed_memory": ("unified-memory migrations take no time (data prefetched "
                                  "before use)", "unified_memory"),
}
"""id → (the change in words, the finding's cause it prices)."""


@dataclass(frozen=True)
class WhatIf:
    id: str
    change: str
    finding: str
    saves_ms_per_step: float
    saves_range_ms: tuple[float, float]
    saves_share: float
    step_ms_after: float
    changed: bool = True
    """The change applied to at least one replayed step (false: nothing of it was there —
    its zero saving then says nothing about its cause)."""

    def to_json(self) -> dict:
        return {"id": self.id, "change": self.change, "finding": self.finding,
                "saves_ms_per_step": self.saves_ms_per_step,
                "saves_range_ms": list(self.saves_range_ms), "saves_share": self.saves_share,
                "step_ms_after": self.step_ms_after, "changed": self.changed}


CHANGED = "changed:"
"""``price``/``finish`` key prefix: ``changed:<id>`` ≥ 1 when the what-if changed the model of
the step (or of one of its slices) — 0: it had nothing to change there (no collectives, no data
phase, a GPU outside the spec table …)."""


def finish(raw: dict[str, int]) -> dict[str, int]:
    """A step's what-if durations (ns) from its summed ``price`` values, in ``WHAT_IFS`` order,
    then their ``CHANGED`` counts."""
    out = {k: v for k, v in raw.items() if k != "data"}
    out["overlapped_input"] = max(raw["data"], raw["instant_input"])
    out[CHANGED + "overlapped_input"] = raw.get(CHANGED + "instant_input", 0)
    return {**{wid: out[wid] for wid in WHAT_IFS},
            **{CHANGED + wid: out.get(CHANGED + wid, 0) for wid in WHAT_IFS}}


def summarise(base_ns: list[int], after: list[dict[str, int]], weights: list[int] | None = None,
              mean_step_ns: float | None = None, changes: dict[str, str] | None = None
              ) -> tuple[WhatIf, ...]:
    """One ``WhatIf`` per id from the replayed steps' base and what-if durations (ns).

    ``weights``: how many analysed steps each replayed step stands for
    (``analysis.step_weights``); the saving is then the weighted mean of the steps' savings, its
    share and the step after it are taken against ``mean_step_ns`` (the mean analysed step, ns);
    the range spans the steps of weight > 0. Without weights: the plain mean over the steps and
    their mean replayed duration. ``changes``: a process's own words for a change
    (``TensorRule.change``) over ``WHAT_IFS``'."""
    if not base_ns:
        return ()
    base = np.asarray(base_ns, np.float64)
    wts = np.ones(base.size) if weights is None else np.asarray(weights, np.float64)
    if not wts.sum():
        return ()
    mean_step = float(mean_step_ns) if mean_step_ns is not None and weights is not None \
        else float(base.mean())
    used = wts > 0
    out = []
    for wid, (change, finding) in WHAT_IFS.items():
        saves = np.maximum(base - np.array([a[wid] for a in after], np.float64), 0.0) / 1e6
        lo, hi = float(saves[used].min()), float(saves[used].max())
        # the weighted mean of equal savings can land an ulp outside them: keep it in the range
        mean = min(max(float(np.dot(saves, wts) / wts.sum()), lo), hi, mean_step / 1e6)
        change = (changes or {}).get(wid, change)
        changed = any(a.get(CHANGED + wid, 0) for a, u in zip(after, used) if u)
        out.append(WhatIf(wid, change, finding, mean, (lo, hi),
                          mean / (mean_step / 1e6) if mean_step else 0.0,
                          float(mean_step / 1e6 - mean), bool(changed)))
    return tuple(out)
