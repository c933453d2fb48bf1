"""The causal replay of every analysed process (``analyses/replay``), run after the analysis —
the same way for an in-memory and a streamed run, so both give the same ``replay`` section.

``attach_replays(path, suite, bundle=None)`` sets ``ProcessAnalysis.replay`` of each process:
a ``ReplayResult`` or ``Unavailable(reason, hint)`` (never an exception).

Which rows the replay sees (``replay_spans``, ``span_frames``): for each representative step
(``analyses/replay.representative_steps``) ``[start, end)`` extended to the end of the GPU work
launched in it, at most one step's length past its end (``start + 2 × duration``); without steps
the analysed window. A span keeps the GPU operations and CUDA calls, NVTX ranges and OS-runtime
calls that overlap it, plus the calls that launched its GPU operations — rows a windowed read
(``loaders/read_window.py``) of ``[start, limit)`` always holds. The in-memory run takes them
from its bundle, the streamed run reads each span (its chunks are gone); both then put the
spans' rows in one canonical order (sorted, duplicates dropped, categories rebuilt), so the
replay's input — and its result — is the same. The replay-only columns (kernel streams, graph
launches, event ids: ``loaders/nsys_replay.py``) are read for the spans in both runs.

``NSYS_DIAG_NO_REPLAY=1`` skips all of it (``available: false`` with that reason).
"""
from __future__ import annotations

import dataclasses
import os

import numpy as np
import pandas as pd

from nsys_diag.analyses.arrays import process_rows
from nsys_diag.analyses.base import Unavailable
from nsys_diag.analyses.replay import NO_REPLAY_ENV, analyze_replay, representative_steps
from nsys_diag.analyses.steps.detection import StepsResult

FRAMES = ("kernels", "memcpy", "memset", "sync", "api", "nvtx", "osrt")
OP_FRAMES = ("kernels", "memcpy", "memset", "sync")
Span = tuple[int, int, int]
"""(start_ns, end_ns, limit_ns): a replayed step (or window) and how far past its end the GPU
work launched in it is followed."""


def replay_spans(p) -> list[Span]:
    """The spans of one ``ProcessAnalysis`` (module docstring)."""
    steps = p.steps
    if isinstance(steps, StepsResult) and steps.count:
        out = []
        for i, _ in representative_steps(steps):
            a, b = int(steps.starts_ns[i]), int(steps.ends_ns[i])
            out.append((a, b, b + max(b - a, 0)))
        return out
    a, b = int(p.window.start_ns), int(p.window.end_ns)
    return [(a, b, b)] if b > a else []


def _overlap(df: pd.DataFrame, a: int, e: int) -> np.ndarray:
    return (df["end_ns"].to_numpy(np.int64) > a) & (df["start_ns"].to_numpy(np.int64) < e)


def span_frames(f: dict[str, pd.DataFrame], span: Span) -> tuple[dict[str, pd.DataFrame], int]:
    """The rows of one span (module docstring) and the span's extended end (ns)."""
    a, b, lim = span
    end = b
    for name in OP_FRAMES:
        df = f[name]
        if len(df) and "launch_start_ns" in df:
            ls = df["launch_start_ns"].to_numpy(np.int64)
            inside = (ls >= a) & (ls < b) & (df["start_ns"].to_numpy(np.int64) < lim)
            if inside.any():
                end = max(end, int(df["end_ns"].to_numpy(np.int64)[inside].max()))
    end = min(end, lim)
    out: dict[str, pd.DataFrame] = {}
    corr = []
    for name in OP_FRAMES:
        df = f[name]
        out[name] = df.loc[_overlap(df, a, end)]
        corr.append(out[name]["correlation_id"].to_numpy(np.int64))
    api = f["api"]
    launches = np.concatenate(corr) if corr else np.zeros(0, np.int64)
    keep = _overlap(api, a, end) | np.isin(api["correlation_id"].to_numpy(np.int64),
                                           launches[launches >= 0])
    out["api"] = api.loc[keep]
    nvtx = f["nvtx"]
    out["nvtx"] = nvtx.loc[(nvtx["start_ns"].to_numpy(np.int64) < end)
                           & ((nvtx["end_ns"].to_numpy(np.int64) > a)
                              | ~nvtx["closed"].to_numpy(bool))]
    osrt = f.get("osrt")
    out["osrt"] = osrt.loc[_overlap(osrt, a, end)] if osrt is not None else None
    return out, end


def canonical(parts: list[pd.DataFrame]) -> pd.DataFrame:
    """The spans' rows of one frame in one order: concatenated, categories rebuilt from the
    values, duplicates dropped, sorted by every column."""
    df = pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0].reset_index(drop=True)
    for col in df.columns:
        if isinstance(df[col].dtype, pd.CategoricalDtype) or df[col].dtype == object:
            df[col] = df[col].astype(str).astype("category")
    df = df.drop_duplicates()
    if len(df):
        df = df.sort_values(list(df.columns), kind="mergesort")
    return df.reset_index(drop=True)


def _frames_of(bundle, gpid: int) -> dict[str, pd.DataFrame]:
    out = {name: process_rows(getattr(bundle, name), gpid) for name in FRAMES[:-1]}
    osrt = getattr(bundle, "osrt", None)
    out["osrt"] = process_rows(osrt, gpid) if osrt is not None else None
    return out


def _read_span(path: str, span: Span):
    from nsys_diag.loaders import load_trace
    from nsys_diag.loaders.load_request import LoadRequest

    return load_trace(path, LoadRequest(kernel_detail=False, time_window=(span[0], span[2])))


def _step_rows(steps: StepsResult, nvtx: pd.DataFrame) -> StepsResult:
    """``steps`` with ``is_step_row`` for ``nvtx`` (the spans' NVTX rows)."""
    mask = ((nvtx["global_tid"].to_numpy(np.int64) == steps.global_tid)
            & np.isin(nvtx["start_ns"].to_numpy(np.int64), steps.starts_ns)
            & np.isin(nvtx["end_ns"].to_numpy(np.int64), steps.ends_ns))
    return dataclasses.replace(steps, is_step_row=mask)


def replay_process(path: str, p, bundle=None, gpus: pd.DataFrame | None = None):
    """The replay of one ``ProcessAnalysis`` (``bundle``: the in-memory run's; None: read the
    spans from ``path``)."""
    from nsys_diag.loaders.nsys_replay import read_replay_columns

    spans = replay_spans(p)
    if not spans:
        return Unavailable("nothing to replay: no steps and no analysed window")
    parts: dict[str, list[pd.DataFrame]] = {name: [] for name in FRAMES}
    windows = []
    whole = _frames_of(bundle, p.global_pid) if bundle is not None else None
    for span in spans:
        src = whole if whole is not None else _frames_of(_read_span(path, span), p.global_pid)
        got, end = span_frames(src, span)
        windows.append((span[0], end))
        for name in FRAMES:
            if got[name] is not None:
                parts[name].append(got[name])
    f = {name: canonical(v) if v else None for name, v in parts.items()}
    steps = p.steps
    if isinstance(steps, StepsResult) and steps.count:
        steps = _step_rows(steps, f["nvtx"])
    extra = read_replay_columns(path, windows, api=f["api"], kernel_streams=True)
    return analyze_replay(f["kernels"], f["memcpy"], f["memset"], f["sync"], f["api"], f["nvtx"],
                          steps=steps, window=(int(p.window.start_ns), int(p.window.end_ns)),
                          osrt=f["osrt"], graphs=extra.graphs, sync_events=extra.sync_events,
                          cuda_events=extra.cuda_events, kernel_streams=extra.kernel_streams,
                          gpus=gpus)


def gpu_frame(gpus: list[dict]) -> pd.DataFrame:
    """The GPU table the replay reads (``device_id``, ``name``, ``cc_major``) from the suite's
    ``trace.gpus`` rows — the same in both runs."""
    return pd.DataFrame({
        "device_id": [int(g["id"]) for g in gpus], "name": [str(g["name"]) for g in gpus],
        "cc_major": [int(str(g["compute_capability"]).split(".")[0])
                     if g.get("compute_capability") else -1 for g in gpus]})


def attach_replays(path: str, suite, bundle=None, *, fmt: str = "nsys-sqlite") -> None:
    """Set ``replay`` on every process of ``suite`` (module docstring; ``fmt``: the input's
    format). Bad or partial data, or an export the replay cannot read, gives ``Unavailable``
    with the reason."""
    off = os.environ.get(NO_REPLAY_ENV, "") not in ("", "0")
    gpus = gpu_frame(list(suite.gpus))
    for p in suite.processes:
        if off:
            p.replay = Unavailable(f"the replay is turned off ({NO_REPLAY_ENV}=1)")
            continue
        if fmt != "nsys-sqlite":
            p.replay = Unavailable("the input has no timeline to replay (an Nsight Compute CSV)",
                                   "pass the Nsight Systems export (.sqlite)")
            continue
        try:
            p.replay = replay_process(path, p, bundle, gpus)
        except Exception as exc:  # noqa: BLE001 — bad data must never crash the report
            p.replay = Unavailable(f"the replay could not run on this export "
                                   f"({type(exc).__name__}: {exc})")


__all__ = ["attach_replays", "replay_process", "replay_spans", "span_frames", "canonical"]
