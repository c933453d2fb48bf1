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
         jitter: float = 0.03, comm_ms: float = 0.0, gemm_us: int = 3_000, **kw) -> Scenario:
    """``gemm_us``: each of the 3 forward GEMMs (``nvjet``). ``comm_ms`` > 0 adds one NCCL all-reduce of that length per step (backward, NCCL stream)."""
    comm = (KernelSpec("nccl_allreduce", int(comm_ms * MS), 1, thread="autograd",
                       stream=NCCL_STREAM, at=0.5),) if comm_ms > 0 else ()
    return Scenario(
        name="tiny", steps=steps, warmup_extra_ns=30 * MS, warmup_phase="forward",
        jitter=jitter, seed=seed, **kw,
        phases=(
            PhaseSpec("data_loading", int(data_ms * MS), canonical="data",
                      memcpys=(MemcpySpec("H2D", 4 * MiB, 300 * US, at=1.0),)),
            PhaseSpec("forward", int(forward_ms * MS), canonical="forward",
                      kernels=(KernelSpec("nvjet", gemm_us * US, 3), KernelSpec("ew_gelu", 500 * US, 2))),
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


HOSTS = ("gpu-a", "gpu-a", "gpu-b", "gpu-b")


def rank_set(root: str | Path, *, straggler: int = 2, where: str = "data", excess_ms: float = 50.0,
             ranks: int = 4, steps: int = 5) -> Path:
    """One data-parallel job as per-rank traces whose rank lives only in the launch environment:
    file names carry host and pid (``gpu-b.40117.sqlite``). Ranks are compute-heavy (data 10 ms);
    the straggler loses ``excess_ms`` per step in ``where`` (``data``; ``forward`` where the
    extra time is GEMM kernels; ``host_forward``: a longer forward with the same kernels, the GPU
    idle while the host works) and, like a
    real straggler, waits least in the all-reduce (the others wait for it there)."""
    root = Path(root)
    for r in range(ranks):
        slow = r == straggler
        data = 10.0 + (excess_ms if slow and where == "data" else 0.0)
        fwd = 25.0 + (excess_ms if slow and where in ("forward", "host_forward") else 0.0)
        sc = tiny(200 + r, steps=steps, jitter=0.01, data_ms=data, forward_ms=fwd,
                  gemm_us=3_000 + (int(excess_ms * 1000 / 3) if slow and where == "forward" else 0),
                  comm_ms=2.0 if slow else 8.0, rank=r, world_size=ranks,
                  utc_start_ns=UTC0 + r * 1_000)
        write(root / f"{HOSTS[r % len(HOSTS)]}.{40100 + 17 * r}.sqlite", sc)
    return root
