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
from nsys_diag.analyses.base import Unavailable
from nsys_diag.analyses.kernels.catalog import classify_category
from nsys_diag.model.thresholds import Thresholds
from nsys_diag.model.vocabulary import NSYS_TRACE_CUDA_NVTX


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
                           "single-GPU run, or multi-GPU collectives were not traced "
                           f"(`{NSYS_TRACE_CUDA_NVTX}` records NCCL kernels)")
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
