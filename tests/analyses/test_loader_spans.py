"""DataLoader workers streamed: chunk activity merged equals ``analyze_loader_workers`` on every
basis (NVTX, CPU samples with an exact median period, OS-runtime calls), with edges through
ranges, calls and sample runs, and on real and generated traces."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from nsys_diag import synth
from nsys_diag.analyses.base import is_available
from nsys_diag.analyses.timeline.busy import Window
from nsys_diag.analyses.engine.cuts import chunk_frames, chunk_spans
from nsys_diag.analyses.loader_spans import merge_loader, partial_loader
from nsys_diag.analyses.loader_workers import analyze_loader_workers
from nsys_diag.model import contracts as C
from nsys_diag.model.thresholds import Thresholds
from tests.analyses.engine.chunking import split_process
from tests.analyses.engine.merged_equal import assert_same
from tests.analyses.test_loader_workers import MS, bundle, frame, gid, nvtx_rows
from tests.synth.test_issue15_presets import _add_loader_workers, _add_worker_processes

SAMPLES = Path(__file__).resolve().parents[2] / "sample_traces"
TRACES = sorted(p.stem for p in SAMPLES.glob("*.sqlite"))
HOST = ("kernels", "memcpy", "memset", "nvtx", "osrt", "cpu_samples")


def _nvtx_overlapping(nv, lo, hi):
    s, e = nv["start_ns"].to_numpy(np.int64), nv["end_ns"].to_numpy(np.int64)
    return nv.loc[(e > lo) & (s < hi)]


def _merged(b, window, cuts, *, whole_frames: bool = False, shuffle: bool = False):
    frames = {n: getattr(b, n) for n in HOST}
    parts = []
    for lo, hi in chunk_spans(cuts):
        if whole_frames:
            cf = frames
        else:
            cf = chunk_frames(frames, lo, hi)
            cf["nvtx"] = _nvtx_overlapping(frames["nvtx"], lo, hi)
        parts.append(partial_loader(cf, lo, hi, window=window, threads=b.threads))
    if shuffle:
        parts = parts[::-1]
    return merge_loader(parts, window=window, processes=b.processes, threads=b.threads,
                        th=Thresholds())


def _assert_equal(b, window, cuts):
    whole = analyze_loader_workers(b, window, Thresholds())
    for kw in ({}, {"whole_frames": True}, {"shuffle": True}):
        merged = _merged(b, window, cuts, **kw)
        assert is_available(merged) == is_available(whole)
        if is_available(whole):
            assert_same(merged.to_json(), whole.to_json())
            assert merged.verdict_fact() == whole.verdict_fact()
        else:
            assert (merged.reason, merged.hint) == (whole.reason, whole.hint)
    return whole


def _rich_bundle():
    """Workers on every basis: NVTX ranges crossing edges, jittered CPU samples on two threads
    (an even number of intervals: the median is a mean of two), OS-runtime calls on two
    threads, a worker thread of the trainer, a launcher, a path-named process."""
    rng = np.random.default_rng(5)
    nv = nvtx_rows(201, [(0, 40 * MS), (30 * MS, 60 * MS), (90 * MS, 200 * MS)])
    nv += nvtx_rows(100, [(0, 20 * MS), (45 * MS, 70 * MS)], tid=7)  # trainer's worker thread
    nv += nvtx_rows(100, [(0, 90 * MS)], tid=8)
    nv += nvtx_rows(300, [(0, 10 * MS)])  # torchrun
    nv += nvtx_rows(205, [(-50 * MS, -10 * MS)], text="DataLoader.fetch")  # before the window
    ts = np.cumsum(rng.integers(900_000, 1_100_000, 151)) - 20 * MS
    cs = [{"ts_ns": int(t), "global_tid": gid(202, 1), "global_pid": gid(202), "pid": 202,
           "tid": 1, "top_frame": "decode", "state": "running" if i % 3 else "sleeping"}
          for i, t in enumerate(ts)]
    cs += [{"ts_ns": int(t), "global_tid": gid(202, 2), "global_pid": gid(202), "pid": 202,
            "tid": 2, "top_frame": "x", "state": "running"} for t in ts[::7]]
    os_ = [{"start_ns": s, "end_ns": e, "global_tid": gid(203, t), "global_pid": gid(203),
            "pid": 203, "tid": t, "name": n}
           for s, e, n, t in ((0, 33 * MS, "poll", 203), (33 * MS, 52 * MS, "read", 203),
                              (52 * MS, 95 * MS, "pthread_cond_wait", 203),
                              (40 * MS, 99 * MS, "poll", 203), (-5 * MS, 3 * MS, "epoll_wait", 204),
                              (3 * MS, 4 * MS, "read", 204))]
    procs = frame(C.PROCESSES, [{"global_pid": gid(300), "pid": 300, "name": "/usr/bin/torchrun"},
                                {"global_pid": gid(205), "pid": 205, "name": "/venv/bin/python"},
                                {"global_pid": gid(100), "pid": 100, "name": "python"}])
    threads = frame(C.THREADS, [{"global_tid": gid(100, 7), "pid": 100, "tid": 7,
                                 "name": "pt_data_worker_0"},
                                {"global_tid": gid(100, 8), "pid": 100, "tid": 8, "name": "main"}])
    return bundle(nvtx=frame(C.NVTX, nv), cpu_samples=frame(C.CPU_SAMPLES, cs),
                  osrt=frame(C.OSRT, os_), processes=procs, threads=threads)


@pytest.mark.parametrize("cuts", [[], [35 * MS], [13 * MS, 50 * MS, 77 * MS],
                                  [-30 * MS, 5 * MS, 40 * MS + 1, 60 * MS, 99 * MS, 150 * MS],
                                  list(range(-20 * MS, 130 * MS, 3 * MS + 17))])
def test_every_basis_merges_exactly(cuts):
    b = _rich_bundle()
    whole = _assert_equal(b, Window(0, 100 * MS, "steps"), cuts)
    assert {w.basis for w in whole.workers} == {"nvtx", "cpu_samples", "osrt"}
    assert len(whole.workers) == 5  # 201, 202, 203, 205 and the trainer's thread 7


def test_no_gpu_process_and_no_window_stay_unavailable():
    b = _rich_bundle()
    _assert_equal(b, Window(0, 0, "steps"), [10 * MS])
    no_gpu = dataclasses.replace(b, kernels=b.kernels.iloc[:0])
    _assert_equal(no_gpu, Window(0, 100 * MS, "steps"), [10 * MS, 60 * MS])


def _headline_cuts(path: str, n: int):
    sp = split_process(path, n)
    return sp.bundle, sp.window, [c.lo_ns for c in sp.chunks[1:]]


@pytest.mark.parametrize("n", [2, 3, 7])
@pytest.mark.parametrize("name", TRACES)
def test_sample_traces(name, n):
    _assert_equal(*_headline_cuts(str(SAMPLES / f"{name}.sqlite"), n))


@pytest.fixture(scope="module")
def worker_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("loader_merge")
    a = synth.write_preset(d / "workers.sqlite", "dataloader_workers")
    _add_worker_processes(a)
    b = synth.write_preset(d / "sliced.sqlite", "dataloader_workers")
    _add_loader_workers(b, 3, 0.6)
    c = synth.write_preset(d / "host_io.sqlite", "host_io_stalls")
    return [str(a), str(b), str(c)]


@pytest.mark.parametrize("n", [2, 3, 7])
@pytest.mark.parametrize("which", [0, 1, 2])
def test_generated_worker_files(worker_files, which, n):
    b, w, cuts = _headline_cuts(worker_files[which], n)
    whole = _assert_equal(b, w, cuts)
    if which < 2:
        assert is_available(whole) and len(whole.workers) >= 2
