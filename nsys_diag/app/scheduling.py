"""Running the per-trace job over many traces: cache first, then local processes or Dask.

* Content hashes are computed here (threads), cache hits and ``.nsys-rep`` exports handled here;
  only the traces left are scheduled. Only regular files are hashed (a FIFO or a symlink to a
  device is skipped with its reason, never read).
* A result is cached only when the file's identity (device, inode, size, mtime, ctime) after the
  analysis is the one it had when hashed; a file that changed in between is *skipped* ("changed
  while it was being analysed"), so no result is ever stored under another content's key.
* Local: one process per trace up to ``jobs`` (``ProcessPoolExecutor``; each worker reads its
  tables with its share of the CPUs), or in this process for one job / one trace.
* ``--scheduler ADDRESS`` / ``--dask``: the same job on Dask distributed (optional extra
  ``nsys-diag[dask]``). The workers need the inputs at the same paths (shared filesystem); they
  are sent absolute paths (a worker's working directory is not ours).
* A job that fails — even a worker process that dies — becomes a skipped result with its reason.
Results come back in the input order; ``on_result`` sees each as it arrives (cached ones first).
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Callable, Sequence

from nsys_diag.app.cache import Cache, Fingerprint, cache_dir, cache_key, fingerprint
from nsys_diag.app.dask_cluster import DASK_HINT, dask_client  # noqa: F401 (DASK_HINT: public)
from nsys_diag.app.discovery import TraceInput
from nsys_diag.app.trace_job import analyze_trace_job, export_nsys_rep, share_read_threads
from nsys_diag.model.errors import InputError
from nsys_diag.model.safe_files import FileIdentity
from nsys_diag.model.text import terminal_line
from nsys_diag.model.thresholds import Thresholds

MESSAGE_CHARS = 300
HASH_THREADS = 4

Echo = Callable[[str], None]
Job = tuple[int, str, str]  # (index of the trace, path to analyse, cache key)


def _safe(text: object) -> str:
    return terminal_line(text, MESSAGE_CHARS)


class Progress:
    """A one-line progress bar on stderr when stderr is a terminal; silent otherwise."""

    def __init__(self, total: int, label: str, stream=None, enabled: bool | None = None):
        self.total = max(total, 0)
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        if enabled is None:
            enabled = bool(getattr(self.stream, "isatty", lambda: False)())
        self.enabled = enabled and self.total > 0
        self.done = 0
        self.cached = 0
        self.skipped = 0
        self._t0 = time.monotonic()

    def update(self, *, cached: bool = False, skipped: bool = False) -> None:
        self.done += 1
        self.cached += int(cached)
        self.skipped += int(skipped)
        if not self.enabled:
            return
        width = 28
        filled = int(width * self.done / self.total) if self.total else width
        bar = "#" * filled + "." * (width - filled)
        extra = []
        if self.cached:
            extra.append(f"{self.cached} cached")
        if self.skipped:
            extra.append(f"{self.skipped} skipped")
        tail = f" ({', '.join(extra)})" if extra else ""
        elapsed = time.monotonic() - self._t0
        self.stream.write(f"\r{self.label} [{bar}] {self.done}/{self.total}{tail} {elapsed:5.1f}s")
        self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\n")
            self.stream.flush()


@dataclass
class TraceResult:
    trace: TraceInput
    ok: bool
    summary: dict | None = None
    view: dict | None = None
    reason: str = ""
    hint: str = ""
    cached: bool = False
    sha256: str = ""


CHANGED_REASON = "changed while it was being analysed (result discarded, not cached)"
CHANGED_HINT = "run again once the file is complete and no longer written"


def _hash_all(traces: Sequence[TraceInput]) -> list[Fingerprint | Exception]:
    """Content fingerprint of every trace, or the InputError/OSError that stopped it (threads:
    hashlib releases the GIL on large blocks)."""
    def hash_one(t: TraceInput) -> Fingerprint | Exception:
        try:
            return fingerprint(t.path)
        except (OSError, InputError) as exc:
            return exc

    with ThreadPoolExecutor(max_workers=min(HASH_THREADS, max(1, len(traces)))) as pool:
        return list(pool.map(hash_one, traces))


def _resolve(i: int, t: TraceInput, fp: Fingerprint | Exception, th: Thresholds, cache: Cache,
             use_cache: bool) -> TraceResult | Job:
    """A trace's result without analysing it (unreadable, cached, export failed), or its job."""
    if isinstance(fp, InputError):
        return TraceResult(t, False, reason=fp.reason, hint=fp.hint or "")
    if isinstance(fp, Exception):
        return TraceResult(t, False, reason=f"cannot read ({_safe(fp)})")
    h = fp.sha256
    key = cache_key(h, th)
    entry = cache.get(key) if use_cache else None
    if entry is not None:
        view = entry.get("view")
        if isinstance(view, dict) and isinstance(view.get("trace"), dict):
            view["trace"]["path"] = t.path.name  # same content, maybe another name
        return TraceResult(t, True, summary=entry["summary"], view=view, cached=True, sha256=h)
    path = t.path
    if t.kind == "nsys-rep":
        try:
            path = export_nsys_rep(t.path, h, cache.dir)
        except InputError as exc:
            return TraceResult(t, False, reason=exc.reason, hint=exc.hint or "", sha256=h)
        except (OSError, subprocess.SubprocessError) as exc:
            return TraceResult(t, False, reason=f"`nsys export` failed: {_safe(exc)}", sha256=h)
    return (i, str(path), key)


def _run_dask(todo: list[Job], accept: Callable[[int, str, dict], None], generated_at: str,
              th_dict: dict, scheduler: str | None, jobs: int) -> None:
    client, cluster = dask_client(scheduler, jobs)
    try:
        from dask.distributed import as_completed as dask_completed

        futures = {}
        for i, path, key in todo:
            fut = client.submit(analyze_trace_job, os.path.abspath(path), generated_at, th_dict,
                                pure=False)
            futures[fut] = (i, key)
        for fut in dask_completed(list(futures)):
            i, key = futures[fut]
            try:
                out = fut.result()
            except Exception as exc:  # noqa: BLE001 - worker died / lost
                out = {"ok": False, "reason": f"Dask worker failed ({_safe(exc)})"}
            accept(i, key, out)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def _run_local(todo: list[Job], accept: Callable[[int, str, dict], None], generated_at: str,
               th_dict: dict, jobs: int) -> None:
    if jobs == 1 or len(todo) == 1:
        for i, path, key in todo:
            accept(i, key, analyze_trace_job(path, generated_at, th_dict))
        return
    workers = min(jobs, len(todo))
    with ProcessPoolExecutor(max_workers=workers, initializer=share_read_threads,
                             initargs=(workers,)) as pool:
        futs = {pool.submit(analyze_trace_job, path, generated_at, th_dict): (i, key)
                for i, path, key in todo}
        for fut in as_completed(futs):
            i, key = futs[fut]
            try:
                out = fut.result()
            except Exception as exc:  # noqa: BLE001 - e.g. a worker killed (OOM)
                out = {"ok": False, "reason": f"worker process failed ({_safe(exc)})",
                       "hint": "analyse it alone with `nsys-diag analyze`"}
            accept(i, key, out)


def run_traces(traces: Sequence[TraceInput], *, th: Thresholds, generated_at: str,
               jobs: int | None = None, scheduler: str | None = None, use_dask: bool = False,
               use_cache: bool = True, echo: Echo | None = None, progress_label: str = "batch",
               on_result: Callable[[TraceResult], None] | None = None) -> list[TraceResult]:
    """Analyse ``traces`` (cache first), in parallel; results in the input order.

    ``on_result`` is called in this process as each result arrives (cached ones first).
    """
    jobs = jobs or os.cpu_count() or 1
    cache = Cache(cache_dir() if use_cache else None, echo)
    results: dict[int, TraceResult] = {}
    progress = Progress(len(traces), progress_label)

    def finish(i: int, res: TraceResult) -> None:
        results[i] = res
        progress.update(cached=res.cached, skipped=not res.ok)
        if on_result is not None:
            on_result(res)

    hashes = _hash_all(traces)
    todo: list[Job] = []
    for i, (t, fp) in enumerate(zip(traces, hashes)):
        resolved = _resolve(i, t, fp, th, cache, use_cache)
        if isinstance(resolved, TraceResult):
            finish(i, resolved)
        else:
            todo.append(resolved)

    def accept(i: int, key: str, out: dict) -> None:
        t, fp = traces[i], hashes[i]
        assert isinstance(fp, Fingerprint)  # only hashed traces are scheduled
        sha = fp.sha256
        if out.get("ok") and FileIdentity.of(t.path) != fp.identity:
            out = {"ok": False, "reason": CHANGED_REASON, "hint": CHANGED_HINT}
        if not out.get("ok"):
            finish(i, TraceResult(t, False, reason=out.get("reason", "failed"),
                                  hint=out.get("hint", ""), sha256=sha))
            return
        view = out["view"]
        if t.kind == "nsys-rep" and isinstance(view.get("trace"), dict):
            view["trace"]["path"] = t.path.name  # not the exported copy in the cache
        cache.put(key, {"summary": out["summary"], "view": view, "label": t.label})
        finish(i, TraceResult(t, True, summary=out["summary"], view=view, sha256=sha))

    th_dict = th.to_dict()
    try:
        if todo and (scheduler or use_dask):
            _run_dask(todo, accept, generated_at, th_dict, scheduler, jobs)
        elif todo:
            _run_local(todo, accept, generated_at, th_dict, jobs)
    finally:
        progress.close()
    return [results[i] for i in range(len(traces))]
