"""What more GPUs would buy: a weak-scaling projection of this job to 2, 4 and 8 GPUs.

Model (data parallelism, the per-GPU batch fixed — weak scaling; every assumption is returned
with the numbers):

* one GPU's per-step time without exposed communication stays: data loading, host overhead and
  compute do not shrink when GPUs are added (``base_ms = step_ms − exposed communication today``);
* gradients are all-reduced once per step by a ring: each GPU sends and receives
  ``2·(N−1)/N × gradient bytes`` over its link, taking ``ring_ms(N) = 2·(N−1)/N × bytes ÷ link
  bandwidth`` (per direction; NCCL's "bus bandwidth" model);
* the all-reduce can hide behind the backward pass: ``exposed(N) = max(0, ring_ms(N) − overlap)``,
  ``overlap`` = the backward phase's GPU time per step (0 without phases: nothing is assumed to
  hide);
* ``step(N) = base_ms + exposed(N)``; ``samples_per_s = N × batch ÷ step(N)`` (None without a
  batch size); ``efficiency = step(1) ÷ step(N)`` (throughput per GPU relative to one GPU).

Gradient bytes come from ``--grad-bytes``; the link bandwidth from ``--link-gbps`` or the table
below (per direction, datasheet figures). Without gradient bytes nothing is projected: the reason
says what to pass. Rows of this formula carry ``basis: "formula"``.

When the process's steps hold collectives and the capture's rank count is known, the projection
comes from a data-parallel replay instead (``replay_scaling``, ``analyses/replay/scaling.py``):
the steps replayed with their measured collectives scaled by ``2·(N−1)/N`` from the capture's
ranks, exposed communication as measured (only the part the step does not hide adds);
``basis: "replay"``, ``allreduce_ms`` the scaled collective time, ``exposed_ms`` what of it the
step waits on.
"""
from __future__ import annotations

from nsys_diag.analyses.roofline.gpu_specs import lookup_gpu

SCALE_GPUS = (1, 2, 4, 8)
"""GPU counts projected (1 is today's per-GPU step, for reference)."""

LINK_GBPS_PER_DIRECTION = {
    # NVLink per GPU, per direction (half the bidirectional datasheet figure):
    "v100": (150.0, "NVLink 2 (V100 SXM2 datasheet: 300 GB/s bidirectional)"),
    "a100": (300.0, "NVLink 3 (A100 datasheet: 600 GB/s bidirectional)"),
    "h100": (450.0, "NVLink 4 (H100 SXM datasheet: 900 GB/s bidirectional)"),
    "h200": (450.0, "NVLink 4 (H200 datasheet: 900 GB/s bidirectional)"),
    "b200": (900.0, "NVLink 5 (B200 datasheet: 1.8 TB/s bidirectional)"),
}
"""Link bandwidth per GPU family (GB/s per direction, source). PCIe parts and unknown GPUs fall
back to ``PCIE_GEN4_X16_GBPS``."""

PCIE_GEN4_X16_GBPS = (32.0, "PCIe Gen4 x16 (32 GB/s per direction)")


def link_bandwidth(gpu_name: str | None, link_gbps: float | None) -> tuple[float, str]:
    """(GB/s per direction, where it comes from) for the all-reduce model."""
    if link_gbps:
        return float(link_gbps), "--link-gbps"
    spec = lookup_gpu(gpu_name)
    if spec is not None and "pcie" not in spec.key:
        for family, value in LINK_GBPS_PER_DIRECTION.items():
            if spec.key.startswith(family):
                return value
    return PCIE_GEN4_X16_GBPS


def analyze_scaling(*, step_ms: float | None, exposed_comm_ms: float | None,
                    backward_ms: float | None, batch_size: int | None, grad_bytes: float | None,
                    gpu_name: str | None, link_gbps: float | None = None) -> tuple[list[dict], str | None]:
    """``(scaling rows, reason when nothing could be projected)`` — see the module docstring.

    ``step_ms``: mean analysed step of one GPU; ``exposed_comm_ms``: communication not hidden
    behind compute per step today; ``backward_ms``: backward phase per step (None: unknown).
    """
    if not step_ms or step_ms <= 0:
        return [], "no analysed steps: the projection is per step"
    if not grad_bytes or grad_bytes <= 0:
        return [], "needs the gradient size: pass --grad-bytes N (parameters × bytes per gradient)"
    bw_gbps, bw_source = link_bandwidth(gpu_name, link_gbps)
    base = float(step_ms) - float(exposed_comm_ms or 0.0)
    overlap = float(backward_ms or 0.0)
    assumptions = [
        "weak scaling: data parallel, per-GPU batch fixed; data, overhead and compute per step stay",
        f"ring all-reduce of {grad_bytes / 2**20:.0f} MiB of gradients per step at "
        f"{bw_gbps:.0f} GB/s per direction ({bw_source})",
        (f"the all-reduce hides behind the backward pass ({overlap:.1f} ms per step)" if overlap
         else "nothing hides the all-reduce (no backward phase measured)"),
    ]
    rows = []
    step_1 = None
    for n in SCALE_GPUS:  # four GPU counts
        ring_ms = 2.0 * (n - 1) / n * float(grad_bytes) / (bw_gbps * 1e9) * 1e3
        step_n = base + max(0.0, ring_ms - overlap)
        step_1 = step_n if n == 1 else step_1
        rows.append({"gpus": n, "step_ms": step_n, "allreduce_ms": ring_ms,
                     "samples_per_s": (n * batch_size / (step_n / 1e3)) if batch_size else None,
                     "efficiency": (step_1 / step_n) if step_1 and step_n > 0 else None,
                     "assumptions": list(assumptions), "basis": "formula",
                     "exposed_ms": max(0.0, ring_ms - overlap)})
    return rows, None


def replay_scaling(projection, *, ranks: int, batch_size: int | None,
                   hidden_share: float | None) -> list[dict]:
    """Scaling rows from the replay's data-parallel projection (``ReplayResult.scaling``: rows
    with ``gpus``, ``step_ms``, ``exposed_ms``, ``collective_ms``, read duck-typed); ``ranks``:
    the capture's rank count; ``hidden_share``: the measured share of communication hidden
    behind compute (None: not measured). [] without a projection."""
    rows = sorted(projection, key=lambda r: r.gpus)
    if not rows:
        return []
    step_1 = rows[0].step_ms if rows[0].gpus == 1 else None
    hidden = (f"{hidden_share:.0%} of it hidden behind compute today" if hidden_share is not None
              else "its hidden share not measured")
    assumptions = [
        "weak scaling: data parallel, per-GPU batch fixed; data, overhead and compute per step stay",
        f"replay: the step's measured collectives scaled by 2(N-1)/N from the capture's {ranks} "
        "ranks (ring all-reduce)",
        f"exposed communication as measured ({hidden}): only what the step does not hide adds",
    ]
    return [{"gpus": int(r.gpus), "step_ms": float(r.step_ms),
             "allreduce_ms": float(r.collective_ms),
             "samples_per_s": (r.gpus * batch_size / (r.step_ms / 1e3))
             if batch_size and r.step_ms > 0 else None,
             "efficiency": (step_1 / r.step_ms) if step_1 and r.step_ms > 0 else None,
             "assumptions": list(assumptions), "basis": "replay",
             "exposed_ms": float(r.exposed_ms)} for r in rows]
