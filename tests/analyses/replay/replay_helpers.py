"""Shared helpers of the replay tests: generated cases written once per session, one process's
frames, and the replay of every process of a trace."""
from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd

from nsys_diag.analyses.replay.analysis import analyze_replay
from nsys_diag.analyses.steps.detection import detect_steps
from nsys_diag.loaders import load_trace
from nsys_diag.synth.replay_cases import REPLAY_CASES
from nsys_diag.synth.writer import write_nsys_sqlite

FRAMES = ("kernels", "memcpy", "memset", "sync", "api", "nvtx", "osrt")


def case_path(folder: Path, name: str, factory=None) -> Path:
    """A generated case (``REPLAY_CASES[name]`` unless ``factory``), written once in ``folder``."""
    path = folder / f"{name}.sqlite"
    if not path.exists():
        write_nsys_sqlite(path, (factory or REPLAY_CASES[name])())
    return path


def edited_copy(src: Path, dst: Path, *sql: str) -> Path:
    """A copy of ``src`` with ``sql`` statements applied (bad-data cases)."""
    dst.write_bytes(src.read_bytes())
    with sqlite3.connect(dst) as con:
        for statement in sql:
            con.execute(statement)
    return dst


def process_frames(bundle, gpid: int) -> dict[str, pd.DataFrame]:
    out = {}
    for name in FRAMES:
        df = getattr(bundle, name)
        out[name] = df.loc[df["global_pid"].to_numpy() == gpid].reset_index(drop=True)
    return out


def gpu_processes(bundle) -> list[int]:
    pids = set(bundle.kernels["global_pid"].tolist()) | set(bundle.memcpy["global_pid"].tolist())
    return sorted(int(p) for p in pids)


def replay_trace(path: Path, **kwargs) -> list:
    """The replay of every process with GPU work in ``path`` (steps from the step detector)."""
    bundle = load_trace(path)
    out = []
    for gpid in gpu_processes(bundle):
        f = process_frames(bundle, gpid)
        steps = detect_steps(f["nvtx"], f["kernels"])
        out.append(analyze_replay(f["kernels"], f["memcpy"], f["memset"], f["sync"], f["api"],
                                  f["nvtx"], steps=steps, osrt=f["osrt"], gpus=bundle.gpus,
                                  **kwargs))
    return out


def path_total_ms(result) -> float:
    """Sum of the critical-path rows, per step (ms)."""
    return float(np.sum([r.ms_per_step for r in result.critical_path]))


def path_ms(result, kind: str, name: str | None = None) -> float:
    return float(sum(r.ms_per_step for r in result.critical_path
                     if r.kind == kind and (name is None or r.name == name)))
