"""Concurrent table reads (``loaders/parallel_reads.py``) change nothing but the wall time."""
from __future__ import annotations

import threading

import pandas as pd
import pytest

from nsys_diag import synth
from nsys_diag.loaders import load_trace
from nsys_diag.loaders.parallel_reads import READ_THREADS_ENV, After, read_threads, run_concurrently

FRAMES = ("kernels", "memcpy", "memset", "sync", "api", "nvtx", "nvtx_marks", "threads",
          "processes", "gpus", "gpu_metrics")


def test_results_in_job_order_and_threads_used(monkeypatch):
    monkeypatch.setenv(READ_THREADS_ENV, "3")
    names = {}

    def job(k):
        def run():
            names[k] = threading.current_thread().name
            return k * 10
        return run

    out = run_concurrently({str(k): job(k) for k in range(5)})
    assert list(out.items()) == [(str(k), k * 10) for k in range(5)]
    assert all(n.startswith("nsys-diag-read") for n in names.values())


def test_one_thread_runs_inline(monkeypatch):
    monkeypatch.setenv(READ_THREADS_ENV, "1")
    assert read_threads() == 1
    seen = run_concurrently({"a": lambda: threading.current_thread().name})
    assert seen["a"] == threading.current_thread().name


def test_first_error_in_job_order_after_all_finished(monkeypatch):
    monkeypatch.setenv(READ_THREADS_ENV, "2")
    done = []

    def fail(msg):
        def run():
            raise ValueError(msg)
        return run

    def slow_ok():
        threading.Event().wait(0.05)
        done.append(True)

    with pytest.raises(ValueError, match="first"):
        run_concurrently({"ok": slow_ok, "a": fail("first"), "b": fail("second")})
    assert done == [True]


@pytest.mark.parametrize("raw,want", [("2", 2), ("0", None), ("x", None), ("", None)])
def test_thread_count_from_env(monkeypatch, raw, want):
    monkeypatch.setenv(READ_THREADS_ENV, raw)
    n = read_threads()
    assert n == want if want is not None else 1 <= n <= 4


@pytest.mark.parametrize("preset", ["healthy_tc", "multi_gpu"])
def test_concurrent_load_equals_sequential_load(tmp_path, monkeypatch, preset):
    sc = synth.preset(preset, steps=6, gpu_metrics=synth.GpuMetricsSpec(period_ns=5_000_000))
    path = synth.write_nsys_sqlite(tmp_path / "t.sqlite", sc)
    monkeypatch.setenv(READ_THREADS_ENV, "1")
    seq = load_trace(path)
    monkeypatch.setenv(READ_THREADS_ENV, "4")
    par = load_trace(path)
    for name in FRAMES:
        pd.testing.assert_frame_equal(getattr(seq, name), getattr(par, name), obj=name)
    assert [(w.code, w.count) for w in seq.warnings] == [(w.code, w.count) for w in par.warnings]
    assert seq.meta == par.meta


@pytest.mark.parametrize("threads", ["1", "2", "4"])
def test_dependent_jobs_get_their_inputs(monkeypatch, threads):
    monkeypatch.setenv(READ_THREADS_ENV, threads)

    def slow(v):
        def run():
            threading.Event().wait(0.02)
            return v
        return run

    out = run_concurrently({"a": slow(2), "b": slow(3), "ab": After(("a", "b"), lambda a, b: a * b),
                            "c": slow(5), "abc": After(("ab", "c"), lambda ab, c: ab + c)})
    assert out == {"a": 2, "b": 3, "ab": 6, "c": 5, "abc": 11}


def test_dependent_job_of_a_failed_job_fails_the_same_way(monkeypatch):
    monkeypatch.setenv(READ_THREADS_ENV, "2")

    def boom():
        raise KeyError("x")

    with pytest.raises(KeyError):
        run_concurrently({"a": boom, "b": After(("a",), lambda a: a)})


def test_dependencies_must_come_first():
    with pytest.raises(ValueError, match="later or unknown"):
        run_concurrently({"b": After(("a",), lambda a: a), "a": lambda: 1})
