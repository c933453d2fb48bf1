"""GPU memory: peak allocated bytes per device vs device memory (``--cuda-memory-usage=true``).

Per device (all processes together — they share the device memory), events sorted by time (stable:
ties keep export order) give a running sum of +bytes (alloc) and −bytes (free); ``other`` events
count 0. Frees of memory allocated before the capture make the running sum negative: the deepest
dip is the **least** memory that was already allocated (``preexisting_bytes``), and
``peak_bytes`` = max(running sum) + preexisting_bytes (a lower bound of the true peak).

What is counted is what the CUDA driver handed out (cudaMalloc & co.) — for PyTorch, the caching
allocator's *reserved* memory, not live tensors.

Advice (TB plugin precedent, thresholds in ``Thresholds``): peak share < ``memory_headroom_frac`` →
"headroom"; > ``memory_near_full_frac`` → "near full".

A peak above :data:`IMPLAUSIBLE_PEAK_SHARE` × the device's memory cannot have been allocated (even
oversubscribed managed memory stays far below it): the event sizes or the device size are bad
data. Such a device gets no share in ``max_peak_share`` and no advice; the data-quality item
``implausible_memory_peak`` (``diagnosis/data_quality.py``) says so.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from nsys_diag.model.jsonsafe import fnum, ratio
from nsys_diag.analyses.base import Unavailable
from nsys_diag.analyses.engine.declaration import Declaration, declare
from nsys_diag.model.thresholds import Thresholds
from nsys_diag.model.vocabulary import HINT_MEMORY_USAGE
from nsys_diag.model.schema_types import Enum, List, Obj, Section

CAPTURE_HINT = HINT_MEMORY_USAGE
IMPLAUSIBLE_PEAK_SHARE = 4.0
"""A peak above this share of the device's memory (400 %) is bad data, not a measurement."""
HEADROOM_ADVICE = ("headroom: peak GPU memory is {pct} of the device — raise the batch size (or "
                   "use gradient accumulation to keep the optimisation batch) to use the GPU better")
NEAR_FULL_ADVICE = ("near full: peak GPU memory is {pct} of the device — gradient/activation "
                    "checkpointing, mixed precision (bf16/fp16) or a smaller micro-batch "
                    "with gradient accumulation")


@dataclass(frozen=True)
class DeviceMemory:
    """One device. Bytes in bytes; ``peak_ts_ns`` integer ns; ``device_bytes`` -1 when unknown."""

    device_id: int
    peak_bytes: int
    peak_ts_ns: int
    preexisting_bytes: int
    device_bytes: int
    alloc_count: int
    free_count: int

    @property
    def peak_share(self) -> float | None:
        return ratio(self.peak_bytes, self.device_bytes) if self.device_bytes > 0 else None

    @property
    def plausible(self) -> bool:
        """False when the peak is beyond ``IMPLAUSIBLE_PEAK_SHARE`` of the device (bad data)."""
        share = self.peak_share
        return share is None or share <= IMPLAUSIBLE_PEAK_SHARE

    def to_json(self) -> dict:
        return {
            "device_id": int(self.device_id), "peak_bytes": int(self.peak_bytes),
            "device_bytes": int(self.device_bytes) if self.device_bytes > 0 else None,
            "peak_share": fnum(self.peak_share), "peak_ts_ns": int(self.peak_ts_ns),
            "preexisting_bytes": int(self.preexisting_bytes),
            "alloc_count": int(self.alloc_count), "free_count": int(self.free_count),
        }


@dataclass(frozen=True)
class MemoryResult:
    """Peak GPU memory per device with advice.

    ``advice_code``: "headroom" | "near_full" | "ok" | "unknown" (device size unknown), taken from
    the device with the highest peak share; ``advice`` the sentence ('' for ok/unknown).
    """

    per_device: tuple[DeviceMemory, ...]
    advice_code: str
    advice: str

    available = True

    @property
    def max_peak_share(self) -> float | None:
        """The highest plausible peak share (implausible devices are bad data, left out)."""
        shares = [d.peak_share for d in self.per_device if d.peak_share is not None and d.plausible]
        return max(shares) if shares else None

    @property
    def implausible(self) -> tuple[DeviceMemory, ...]:
        """Devices whose peak exceeds ``IMPLAUSIBLE_PEAK_SHARE`` of their memory."""
        return tuple(d for d in self.per_device if not d.plausible)

    def to_json(self) -> dict:
        return {
            "available": True,
            "per_device": [d.to_json() for d in self.per_device],
            "max_peak_share": fnum(self.max_peak_share),
            "advice": self.advice,
            "advice_code": self.advice_code,
        }


def analyze_memory(gpu_memory: pd.DataFrame, gpus: pd.DataFrame | None, *, th: Thresholds
                   ) -> MemoryResult | Unavailable:
    """Peak allocated memory per device and batch-size advice (see module docstring)."""
    if gpu_memory is None or gpu_memory.empty:
        return Unavailable("no GPU memory allocation events in the capture", CAPTURE_HINT)
    op = gpu_memory["op"].astype(str).to_numpy()
    sign = np.where(op == "alloc", 1, np.where(op == "free", -1, 0)).astype(np.int64)
    frame = pd.DataFrame({
        "ts": gpu_memory["ts_ns"].to_numpy(dtype=np.int64),
        "dev": gpu_memory["device_id"].to_numpy(dtype=np.int64),
        "delta": sign * gpu_memory["bytes"].to_numpy(dtype=np.int64),
        "alloc": op == "alloc",
        "free": op == "free",
    }).sort_values(["dev", "ts"], kind="stable")
    frame["live"] = frame.groupby("dev", sort=False)["delta"].cumsum()
    totals = {}
    if gpus is not None and not gpus.empty:
        totals = dict(zip(gpus["device_id"].astype(int), gpus["total_memory_bytes"].astype(int)))

    per_device = []
    for d, g in frame.groupby("dev", sort=True):  # a handful of devices
        live = g["live"].to_numpy()
        pre = int(max(0, -live.min()))
        i = int(np.argmax(live))
        per_device.append(DeviceMemory(
            device_id=int(d),
            peak_bytes=int(live[i]) + pre,
            peak_ts_ns=int(g["ts"].to_numpy()[i]),
            preexisting_bytes=pre,
            device_bytes=int(totals.get(int(d), -1)),
            alloc_count=int(g["alloc"].sum()),
            free_count=int(g["free"].sum()),
        ))
    result = MemoryResult(tuple(per_device), "unknown", "")
    share = result.max_peak_share
    if share is None:
        return result
    pct = f"{100 * share:.0f}%"
    if share < th.memory_headroom_frac:
        return MemoryResult(tuple(per_device), "headroom", HEADROOM_ADVICE.format(pct=pct))
    if share > th.memory_near_full_frac:
        return MemoryResult(tuple(per_device), "near_full", NEAR_FULL_ADVICE.format(pct=pct))
    return MemoryResult(tuple(per_device), "ok", "")


# -------------------------------------------------------------------------------- declaration
MEMORY_SPEC = Section(Obj({
    "per_device": List(Obj({"device_id": "int", "peak_bytes": "int", "device_bytes": "int?",
                            "peak_share": "share?"},
                           carried={"peak_ts_ns": "int", "alloc_count": "int", "free_count": "int",
                                    "preexisting_bytes": "int"})),
    "advice": "str?"},
    carried={"advice_code": Enum("headroom", "near_full", "ok", "unknown"),
             "max_peak_share": "share?"}),
    "GPU memory usage was not captured.", HINT_MEMORY_USAGE,
    null=True, per_process=True)
"""The ``memory`` section of the analysis JSON (model/schema_types.py)."""

MEMORY = declare(Declaration("memory", section="memory", spec=MEMORY_SPEC, rank=9,
                             whole=lambda p: analyze_memory(p.memory, p.bundle.gpus, th=p.th)))
"""GPU memory peaks (the ``memory`` section; streamed from the skeleton's memory events)."""
