"""Communication kernels (NCCL & co.): how much of their time is hidden behind compute.

Per device, inside the window ``[start, end)`` (intervals clipped to it):

* ``comm_ns``   = |∪ communication kernels| (category ``communication`` from ``kernel_catalog``);
* ``hidden_ns`` = |∪ comm ∩ ∪ other kernels on the same device| (overlapped by compute);
* ``exposed_ns`` = comm − hidden: communication with no other kernel running (HTA's comm/comp
  overlap and the nsys ``nccl_gpu_overlap_trace`` "exposed" notion, on interval unions).

Multi-device shares are normalised per device (mean over devices), never summed over devices
against one wall-clock denominator (nsys-ai's 271.6% ratio trap): ``exposed_share`` = Σ exposed /
(devices × window); ``exposed_share_of_step`` = Σ exposed / (devices × ``step_time_ns_total``).
Memcpy/memset are not compute and do not hide communication.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from nsys_diag.analyses.timeline import intervals as iv
from nsys_diag.model.jsonsafe import fnum, ns_to_ms, ratio
from nsys_diag.analyses.base import Unavailable, is_available
from nsys_diag.analyses.engine.declaration import Declaration, FinishContext, declare
from nsys_diag.analyses.kernels.catalog import classify_category
from nsys_diag.model.thresholds import Thresholds
from nsys_diag.model.vocabulary import HINT_CAPTURE_NCCL
from typing import TYPE_CHECKING
from nsys_diag.analyses.kernels.table import window_kernels
from nsys_diag.model.schema_types import List, Obj, Section, Span

if TYPE_CHECKING:  # the span type only: the engine's context imports the analyses
    from nsys_diag.analyses.engine.context import ChunkInputs


@dataclass(frozen=True)
class DeviceComm:
    """One device: integer ns inside the window."""

    device_id: int
    comm_kernels: int
    comm_ns: int
    hidden_ns: int
    exposed_ns: int
    window_ns: int

    @property
    def exposed_share(self) -> float | None:
        return ratio(self.exposed_ns, self.window_ns)

    def to_json(self) -> dict:
        return {
            "device_id": int(self.device_id), "comm_kernels": int(self.comm_kernels),
            "comm_ms": ns_to_ms(self.comm_ns), "hidden_ms": ns_to_ms(self.hidden_ns),
            "exposed_ms": ns_to_ms(self.exposed_ns), "exposed_share": fnum(self.exposed_share),
            "overlap_share": fnum(ratio(self.hidden_ns, self.comm_ns)),
        }


@dataclass(frozen=True)
class CommunicationResult:
    """Communication vs compute overlap; ``per_device`` tuple of ``DeviceComm``."""

    per_device: tuple[DeviceComm, ...]
    window: tuple[int, int]
    step_time_ns_total: int | None = None
    kernel_names: tuple[str, ...] = ()

    available = True

    @property
    def comm_ns(self) -> int:
        return int(sum(d.comm_ns for d in self.per_device))

    @property
    def hidden_ns(self) -> int:
        return int(sum(d.hidden_ns for d in self.per_device))

    @property
    def exposed_ns(self) -> int:
        return int(sum(d.exposed_ns for d in self.per_device))

    @property
    def exposed_share(self) -> float | None:
        """Mean over devices of exposed / window."""
        n = len(self.per_device)
        return ratio(self.exposed_ns, n * (self.window[1] - self.window[0])) if n else None

    @property
    def exposed_share_of_step(self) -> float | None:
        """Mean over devices of exposed / total analysed step time (None without steps)."""
        if not self.step_time_ns_total or not self.per_device:
            return None
        return ratio(self.exposed_ns, len(self.per_device) * self.step_time_ns_total)

    @property
    def overlap_share(self) -> float | None:
        """Hidden / communication time."""
        return ratio(self.hidden_ns, self.comm_ns)

    def to_json(self) -> dict:
        return {
            "available": True,
            "per_device": [d.to_json() for d in self.per_device],
            "comm_ms": ns_to_ms(self.comm_ns),
            "hidden_ms": ns_to_ms(self.hidden_ns),
            "exposed_ms": ns_to_ms(self.exposed_ns),
            "exposed_share": fnum(self.exposed_share),
            "exposed_share_of_step": fnum(self.exposed_share_of_step),
            "overlap_share": fnum(self.overlap_share),
            "kernel_names": list(self.kernel_names),
            "window": [int(self.window[0]), int(self.window[1])],
        }


def comm_kernel_mask(kernels: pd.DataFrame) -> np.ndarray:
    """Row mask of communication kernels (names classified once per unique name)."""
    if kernels.empty:
        return np.zeros(0, dtype=bool)
    names = kernels["name"]
    if not isinstance(names.dtype, pd.CategoricalDtype):
        names = names.astype("category")
    cats = classify_category(list(names.cat.categories))
    is_comm = np.append(np.asarray(cats, dtype=object) == "communication", False)
    codes = names.cat.codes.to_numpy()
    return is_comm[np.where(codes >= 0, codes, len(is_comm) - 1)]


def analyze_communication(kernels: pd.DataFrame, *, window: tuple[int, int] | None,
                          step_time_ns_total: int | None = None, th: Thresholds
                          ) -> CommunicationResult | Unavailable:
    """Hidden vs exposed communication per device (see module docstring).

    ``window`` None means the span of all kernels. ``th`` is accepted for symmetry (the verdict
    compares ``exposed_share_of_step`` with ``th.communication_share``).
    """
    del th
    comm = comm_kernel_mask(kernels)
    if not comm.any():
        return Unavailable("no communication (NCCL) kernels in the capture",
                           HINT_CAPTURE_NCCL)
    s = kernels["start_ns"].to_numpy(dtype=np.int64)
    e = kernels["end_ns"].to_numpy(dtype=np.int64)
    if window is None:
        window = (int(s.min()), int(e.max()))
    lo, hi = int(window[0]), int(window[1])
    dev = kernels["device_id"].to_numpy(dtype=np.int64)
    in_win = (s < hi) & (e > lo)
    if not (comm & in_win).any():
        return Unavailable("no communication kernels inside the analysed window",
                           "widen the window (--window/--steps) to include the collectives")
    per_device = []
    for d in np.unique(dev[comm & in_win]):  # a handful of devices
        on = dev == d
        cs, ce = iv.clip(s[on & comm], e[on & comm], lo, hi)
        ks, ke = iv.clip(s[on & ~comm], e[on & ~comm], lo, hi)
        comm_ns = iv.total_length(cs, ce)
        hidden = iv.intersect_length(cs, ce, ks, ke)
        per_device.append(DeviceComm(int(d), int((on & comm & in_win).sum()), int(comm_ns),
                                     int(hidden), int(comm_ns - hidden), hi - lo))
    names = kernels["name"].to_numpy()[comm & in_win]
    return CommunicationResult(
        per_device=tuple(per_device),
        window=(lo, hi),
        step_time_ns_total=None if step_time_ns_total is None else int(step_time_ns_total),
        kernel_names=tuple(sorted({str(n) for n in pd.unique(names)}))[:20],
    )


# ---------------------------------------------------------------------- streamed: partial per span, merge
# Communication (``analyze_communication``) of a process from its chunks:
# ``partial_communication`` per chunk, ``merge_communication`` at the end — the same
# ``CommunicationResult`` as the in-memory suite (which runs it on the window's kernels).
#
# Per device, the union of communication kernels and its intersection with the union of the other
# kernels are measured inside the window; a chunk measures them inside ``chunk_window`` (the
# window ∩ ``[lo, hi)``) over every kernel it sees (they overlap ``[lo, hi]``), so the chunks'
# lengths add up exactly. Kernel counts use owned rows. A part is O(devices + communication
# kernel names).
@dataclass(frozen=True)
class CommPart:
    """Per device with communication kernels the chunk sees: (owned comm kernels, comm ns,
    hidden ns) inside the chunk's window share; the names of its owned comm kernels."""

    per_device: dict[int, tuple[int, int, int]]
    names: frozenset[str]


def partial_communication(ci: ChunkInputs) -> CommPart:
    """The chunk's communication sums (see the module docstring)."""
    seen = window_kernels(ci, owned_only=False)
    comm = comm_kernel_mask(seen)
    if not comm.any():
        return CommPart({}, frozenset())
    s = seen["start_ns"].to_numpy(np.int64)
    e = seen["end_ns"].to_numpy(np.int64)
    dev = seen["device_id"].to_numpy(np.int64)
    own = (s >= ci.lo_ns) & (s < ci.hi_ns)
    cw = ci.chunk_window
    lo, hi = int(cw.start_ns), int(cw.end_ns)
    per_device = {}
    for d in np.unique(dev[comm]):  # a handful of devices
        on = dev == d
        cs, ce = iv.clip(s[on & comm], e[on & comm], lo, hi)
        ks, ke = iv.clip(s[on & ~comm], e[on & ~comm], lo, hi)
        per_device[int(d)] = (int((on & comm & own).sum()), int(iv.total_length(cs, ce)),
                              int(iv.intersect_length(cs, ce, ks, ke)))
    names = frozenset(str(n) for n in seen["name"].to_numpy()[comm & own])
    return CommPart(per_device, names)


def merge_communication(parts: list[CommPart], *, window: tuple[int, int],
                        step_time_ns_total: int | None) -> CommunicationResult | Unavailable:
    """The process's ``CommunicationResult``; ``window``: the analysed window (ns);
    ``step_time_ns_total``: the steps' total analysed time (``StepsResult.total_analysed_ns``),
    or the window's length without steps — as the suite passes them."""
    devices = sorted({d for p in parts for d in p.per_device})
    if not devices:
        return Unavailable("no communication (NCCL) kernels in the capture",
                           HINT_CAPTURE_NCCL)
    lo, hi = int(window[0]), int(window[1])
    per_device = []
    for d in devices:  # a handful of devices
        sums = [p.per_device[d] for p in parts if d in p.per_device]
        n, comm_ns, hidden = (sum(x[i] for x in sums) for i in range(3))
        per_device.append(DeviceComm(int(d), n, comm_ns, hidden, comm_ns - hidden, hi - lo))
    names = set().union(*(p.names for p in parts))
    return CommunicationResult(
        per_device=tuple(per_device), window=(lo, hi),
        step_time_ns_total=None if step_time_ns_total is None else int(step_time_ns_total),
        kernel_names=tuple(sorted(names))[:20])


# -------------------------------------------------------------------------------- declaration
def _finish_communication(states, ctx: FinishContext) -> CommunicationResult | Unavailable:
    st, w = ctx.results["steps"], ctx.glob.window
    total = st.total_analysed_ns if is_available(st) else w.duration_ns
    return merge_communication(list(states), window=(w.start_ns, w.end_ns),
                               step_time_ns_total=total)


def _whole_communication(p, kt, steps) -> CommunicationResult | Unavailable:
    total = steps.total_analysed_ns if is_available(steps) else p.window.duration_ns
    return analyze_communication(kt[0], window=p.window_ns, step_time_ns_total=total, th=p.th)


COMMUNICATION_SPEC = Section(Obj({
    "per_device": List(Obj({"device_id": "int", "comm_ms": "num", "hidden_ms": "num",
                            "exposed_ms": "num"},
                           carried={"comm_kernels": "int", "exposed_share": "share?",
                                    "overlap_share": "share?"})),
    "exposed_share": "share?"},
    carried={"comm_ms": "num", "hidden_ms": "num", "exposed_ms": "num",
             "exposed_share_of_step": "num?", "overlap_share": "share?",
             "kernel_names": List("str"), "window": Span()}),
    "No communication kernels (single GPU or no NCCL).", "", null=True, per_process=True)
"""The ``communication`` section of the analysis JSON (model/schema_types.py)."""

COMMUNICATION = declare(Declaration(
    "communication", section="communication", spec=COMMUNICATION_SPEC, reads=("steps",),
    partial=lambda span, **_: partial_communication(span), finish=_finish_communication,
    rank=13, whole_reads=("kernel_table", "steps"), whole=_whole_communication))
"""Communication kernels and their exposed time (the ``communication`` section)."""
