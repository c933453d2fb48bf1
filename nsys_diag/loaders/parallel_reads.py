"""Run independent table reads at the same time.

SQLite → Arrow decoding (ADBC) and the numpy/pyarrow work after it release the GIL, so the big
tables of an export (kernels, runtime API, GPU metrics, NVTX) read in threads finish in about the
time of the largest one instead of the sum (bench: 2M-kernel trace, 2 cores, 2.1 s → 0.9 s of
reading). Each thread gets its own read-only connection (``NsysDb``).

A job may depend on others (``After``): the launch join of the kernels runs on a worker as soon
as kernels and API calls are read, while another worker still reads GPU metrics.

``NSYS_DIAG_READ_THREADS`` sets the number of threads (``1``: read one table after another,
in the calling thread). The default is the number of usable CPUs, at most 4.
"""
from __future__ import annotations

import os
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable

READ_THREADS_ENV = "NSYS_DIAG_READ_THREADS"


def read_threads() -> int:
    """Threads for concurrent reads (env override, else usable CPUs capped at 4)."""
    raw = os.environ.get(READ_THREADS_ENV, "").strip()
    if raw.isdigit() and int(raw) >= 1:
        return int(raw)
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(4, cpus))


@dataclass(frozen=True)
class After:
    """A job that needs the results of earlier jobs: ``fn(*results of deps)``.

    Its dependencies must come before it in the ``jobs`` dict: the pool starts jobs in order, so
    by the time a worker picks this one up its dependencies are running or done (no deadlock).
    """

    deps: tuple[str, ...]
    fn: Callable[..., object]


def run_concurrently(jobs: dict[str, Callable[[], object] | After]) -> dict[str, object]:
    """``{name: job()}``, jobs run in a thread pool (in order, inline, with one thread).

    An exception from a job is re-raised in the caller — the first one in ``jobs`` order — after
    every job has finished (no thread is left reading a file the caller is about to close). A
    job that depends on a failed one fails with the same exception.
    """
    _check_order(jobs)
    workers = min(read_threads(), len(jobs))
    if workers <= 1:
        done: dict[str, object] = {}
        for name, job in jobs.items():
            done[name] = job.fn(*(done[d] for d in job.deps)) if isinstance(job, After) \
                else job()
        return done
    futures: dict[str, Future] = {}
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="nsys-diag-read") as pool:
        for name, job in jobs.items():
            if isinstance(job, After):
                deps = [futures[d] for d in job.deps]
                futures[name] = pool.submit(_run_after, job, deps)
            else:
                futures[name] = pool.submit(job)
    # the with-block waited for all of them
    return {name: fut.result() for name, fut in futures.items()}


def _run_after(job: After, deps: list[Future]) -> object:
    """``job`` on the results of its dependencies (waiting for each)."""
    return job.fn(*(f.result() for f in deps))


def _check_order(jobs: dict) -> None:
    seen: set[str] = set()
    for name, job in jobs.items():
        if isinstance(job, After) and not set(job.deps) <= seen:
            raise ValueError(f"job {name!r} depends on a later or unknown job: {job.deps}")
        seen.add(name)
