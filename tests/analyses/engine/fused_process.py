"""A multi-GPU *process* for the chunk tests: the two ranks of ``multi_gpu.sqlite`` fused into
rank 0's process (its NVTX only; both devices' GPU work and launches), loaded through
``split_process`` by patching its loader."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from nsys_diag.loaders import load_trace
from tests.analyses.engine import chunking

SAMPLES = Path(__file__).resolve().parents[3] / "sample_traces"


def fused_bundle(path: str | Path = SAMPLES / "multi_gpu.sqlite"):
    b = load_trace(str(path), kernel_detail=False)
    gpids = sorted(int(g) for g in np.unique(b.kernels["global_pid"].to_numpy()))
    first, pid0 = gpids[0], int(b.kernels["pid"].to_numpy()[b.kernels["global_pid"].to_numpy()
                                                            == gpids[0]][0])
    fused = {}
    for name in ("kernels", "memcpy", "memset", "sync", "api"):
        f = getattr(b, name).copy()
        if len(f):
            f["global_pid"] = first
            if "pid" in f:
                f["pid"] = pid0
        fused[name] = f
    nv = b.nvtx
    fused["nvtx"] = nv.loc[nv["global_pid"].to_numpy() == first].reset_index(drop=True)
    return dataclasses.replace(b, **fused)


def split_fused(monkeypatch, n_chunks: int) -> chunking.Split:
    bundle = fused_bundle()
    monkeypatch.setattr(chunking, "load_trace", lambda *a, **k: bundle)
    return chunking.split_process("fused", n_chunks)
