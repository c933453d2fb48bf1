"""Loader vs model throughput: can the data phase feed the rest of the step?

With a batch size (``--batch-size N``, else the step ranges' NVTX payload when every step carries
the same positive number), per mean analysed step:

* ``loader_samples_per_s`` = batch / mean data-phase time — what the loader delivers while the
  step waits for it;
* ``model_samples_per_s`` = batch / (mean step − data time) — what the rest of the step consumes;
* ``step_samples_per_s`` = batch / mean step — what the job achieves now;
* ``bottleneck`` = ``loader`` when the loader is slower than the model, else ``model``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nsys_diag.analyses.base import Unavailable, is_available


@dataclass(frozen=True)
class ThroughputResult:
    batch_size: float
    source: str  # "--batch-size" | "nvtx_payload"
    step_ms: float
    data_ms: float
    loader_samples_per_s: float | None
    model_samples_per_s: float | None
    step_samples_per_s: float
    bottleneck: str

    available = True

    def to_json(self) -> dict:
        return {"available": True, "batch_size": self.batch_size, "source": self.source,
                "step_ms": self.step_ms, "data_ms": self.data_ms,
                "loader_samples_per_s": self.loader_samples_per_s,
                "model_samples_per_s": self.model_samples_per_s,
                "step_samples_per_s": self.step_samples_per_s, "bottleneck": self.bottleneck}


def _payload_batch(steps) -> float | None:
    if steps.payloads.size != steps.count:
        return None
    p = np.asarray(steps.payloads, np.float64)[steps.analysed_mask]
    if p.size == 0 or not np.all(np.isfinite(p)) or np.any(p <= 0) or np.ptp(p) != 0:
        return None
    return float(p[0])


def analyze_throughput(steps, phases, *, batch_size: int | None = None) -> ThroughputResult | Unavailable:
    """``steps``/``phases``: StepsResult/PhasesResult or Unavailable."""
    if not is_available(steps) or steps.mean_ms is None:
        return Unavailable("throughput needs steps", "mark steps with NVTX ranges")
    source = "--batch-size"
    batch = float(batch_size) if batch_size else None
    if batch is None:
        batch = _payload_batch(steps)
        source = "nvtx_payload"
    if batch is None:
        return Unavailable("no batch size", "pass --batch-size N (samples per step), or put the "
                           "batch size in the step range's NVTX payload")
    step_ms = float(steps.mean_ms)
    data_ms = phases.canonical_ms("data") if is_available(phases) else 0.0
    rest_ms = step_ms - data_ms
    loader = batch / (data_ms / 1e3) if data_ms > 0 else None
    model = batch / (rest_ms / 1e3) if rest_ms > 0 else None
    bottleneck = "loader" if (loader is not None and (model is None or loader < model)) else "model"
    return ThroughputResult(batch, source, step_ms, data_ms, loader, model,
                            batch / (step_ms / 1e3) if step_ms > 0 else 0.0, bottleneck)
