"""Tiny generated trace sets for the batch / compare / ranks tests (kept small: 2 CPU cores).

``tiny(...)`` is a ~120 ms training step (data 60 ms, forward 25, backward 30, optimizer 5) with
~10 kernels per step and ± ``jitter`` on every duration, so pairs with an injected regression and
pairs of pure noise (same scenario, other seed) have known answers.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

from nsys_diag.synth import (NCCL_STREAM, MS, US, KernelSpec, MemcpySpec, MiB, PhaseSpec, Scenario,
                             write_nsys_sqlite)

UTC0 = 1_767_225_600_000_000_000  # 2026-01-01T00:00:00Z


def tiny(seed: int = 1, *, data_ms: float = 60.0, forward_ms: float = 25.0, steps: int = 12,
         jitter: float = 0.03, comm_ms: float = 0.0, **kw) -> Scenario:
    """``comm_ms`` > 0 adds one NCCL all-reduce of that length per step (backward, NCCL stream)."""
    comm = (KernelSpec("nccl_allreduce", int(comm_ms * MS), 1, thread="autograd",
                       stream=NCCL_STREAM, at=0.5),) if comm_ms > 0 else ()
    return Scenario(
        name="tiny", steps=steps, warmup_extra_ns=30 * MS, warmup_phase="forward",
        jitter=jitter, seed=seed, **kw,
        phases=(
            PhaseSpec("data_loading", int(data_ms * MS), canonical="data",
                      memcpys=(MemcpySpec("H2D", 4 * MiB, 300 * US, at=1.0),)),
            PhaseSpec("forward", int(forward_ms * MS), canonical="forward",
                      kernels=(KernelSpec("nvjet", 3_000 * US, 3), KernelSpec("ew_gelu", 500 * US, 2))),
            PhaseSpec("backward", 30 * MS, canonical="backward",
                      kernels=(KernelSpec("gemm_bf16_sm90", 3_000 * US, 4, thread="autograd"),)
                      + comm),
            PhaseSpec("optimizer_step", 5 * MS, canonical="optimizer",
                      kernels=(KernelSpec("adam", 1_000 * US, 1),)),
        ))


def write(path: str | Path, scenario: Scenario) -> Path:
    return write_nsys_sqlite(path, scenario)


def sha256(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def tree_hashes(root: str | Path) -> dict[str, str]:
    """sha256 of every file under ``root`` (to prove inputs are never modified)."""
    root = Path(root)
    return {p.relative_to(root).as_posix(): sha256(p) for p in sorted(root.rglob("*")) if p.is_file()}
