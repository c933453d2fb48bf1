"""``batch`` and ``compare``: many traces, in parallel, cached; before/after with statistics.

Orchestration only (no click): discovery → per-trace analysis (local processes, or Dask) with a
content-hash cache → per-trace reports + an index (batch), or a statistical comparison (compare).

* Discovery is recursive and deterministic: natural sort of the path relative to its root
  (``rank2`` before ``rank10``). Traces: nsys ``.sqlite`` exports, ncu ``.csv`` (CSV files that
  are not ncu output are ignored, and listed as such), ``.nsys-rep``/``.qdrep`` (exported with
  ``nsys`` when it is on PATH, into the cache — never beside the input; ignored when an exported
  ``.sqlite`` of the same name sits beside it).
* A trace that cannot be analysed is *skipped* with its reason; the batch goes on and exits 4.
* Cache: ``$XDG_CACHE_HOME/nsys-diag/batch`` (default ``~/.cache/nsys-diag/batch``), one gzip JSON
  per input keyed by sha256(content) + tool version + thresholds, holding the trace summary and
  its analysis view, so a re-run over a grown directory analyses only the new files.
* ``--scheduler ADDRESS`` / ``--dask``: the same per-trace function on Dask distributed (optional
  extra ``nsys-diag[dask]``). Hashing, caching and writing reports stay on this machine; the
  workers need the inputs at the same paths (shared filesystem).
"""
from __future__ import annotations

import gzip
import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterable, Sequence

from nsys_diag import __version__
from nsys_diag.model.errors import (
    EXIT_OK,
    EXIT_PARTIAL_BATCH,
    EXIT_REGRESSION,
    InputError,
    NsysDiagError,
    UsageError,
)
from nsys_diag.model.options import AnalyzeOptions
from nsys_diag.model.thresholds import DEFAULT_THRESHOLDS, Thresholds

INDEX_SCHEMA_VERSION = 1
COMPARE_SCHEMA_VERSION = 1
CACHE_FORMAT = 1
"""Bump when the cached summary/view layout changes (old entries are then simply missed)."""

SQLITE_SUFFIXES = (".sqlite", ".sqlite3")
NCU_SUFFIXES = (".csv",)
REP_SUFFIXES = (".nsys-rep", ".qdrep")
DASK_HINT = "pip install 'nsys-diag[dask]'"
NSYS_HINT = ("install Nsight Systems (`nsys` on PATH) or export it yourself: "
             "`nsys export --type sqlite FILE.nsys-rep`")

Echo = Callable[[str], None]


# ------------------------------------------------------------------------------------ helpers
def generated_at_now() -> str:
    """UTC timestamp for outputs; ``SOURCE_DATE_EPOCH`` makes it reproducible."""
    sde = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    if sde.isdigit():
        ts = datetime.fromtimestamp(int(sde), tz=timezone.utc)
    else:
        ts = datetime.now(timezone.utc).replace(microsecond=0)
    return ts.strftime("%Y-%m-%dT%H:%M:%SZ")


def term_safe(text: object, limit: int = 300) -> str:
    """A string safe to print on a terminal: control characters (ANSI escapes…) replaced."""
    s = "".join(ch if ch.isprintable() else "?" for ch in str(text))
    return s if len(s) <= limit else s[: limit - 1] + "…"


def _natural_key(text: str):
    from nsys_diag.analyses.ranks import natural_key

    return natural_key(text)


def json_safe(obj):
    """Deep copy with NaN/inf → None (the JSON outputs never contain NaN)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    if hasattr(obj, "item") and callable(obj.item) and getattr(obj, "ndim", 1) == 0:
        return json_safe(obj.item())  # numpy scalar
    return obj


def dumps(obj, indent: int | None = 2) -> str:
    return json.dumps(json_safe(obj), indent=indent, ensure_ascii=False, allow_nan=False,
                      sort_keys=False) + "\n"


# ---------------------------------------------------------------------------------- discovery
@dataclass
class TraceInput:
    """One trace found under a root. ``label`` is the natural-sortable relative path."""

    path: Path
    label: str
    kind: str  # "sqlite" | "ncu" | "nsys-rep"


@dataclass
class Discovery:
    traces: list[TraceInput] = field(default_factory=list)
    ignored: list[dict] = field(default_factory=list)  # {label, reason}
    roots: list[str] = field(default_factory=list)


def _root_names(roots: Sequence[Path]) -> list[str]:
    names, seen = [], {}
    for r in roots:
        base = r.name or r.resolve().name or "root"
        n = seen.get(base, 0) + 1
        seen[base] = n
        names.append(base if n == 1 else f"{base}~{n}")
    return names


def _looks_like_ncu(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            head = fh.read(8192)
    except OSError:
        return True  # let the loader report why it cannot be read
    from nsys_diag.loaders.ncu_csv import looks_like_ncu_csv

    return looks_like_ncu_csv(head)


def _classify(path: Path) -> str | None:
    low = path.name.lower()
    if low.endswith(SQLITE_SUFFIXES):
        return "sqlite"
    if low.endswith(NCU_SUFFIXES):
        return "ncu"
    if low.endswith(REP_SUFFIXES):
        return "nsys-rep"
    return None


def _walk(root: Path, exclude: set[Path]) -> Iterable[Path]:
    """Files under ``root``; hidden entries and ``exclude``d directories (our OUTDIR) skipped."""
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")
                       and (not exclude or (Path(dirpath) / d).resolve() not in exclude)]
        for f in filenames:
            if not f.startswith("."):
                yield Path(dirpath) / f


def discover(roots: Sequence[str | Path], *, exclude: Sequence[Path] = ()) -> Discovery:
    """Find traces under ``roots`` (directories, recursively, or single files).

    Raises ``InputError`` for a root that does not exist. Order: natural sort of labels.
    """
    paths = [Path(r) for r in roots]
    for p in paths:
        if not p.exists():
            raise InputError(p, "no such file or directory")
    excl = {e.resolve() for e in exclude if e.exists()}
    names = _root_names(paths)
    multi = len(paths) > 1
    out = Discovery(roots=names)
    for root, name in zip(paths, names):
        if root.is_file():
            candidates = [(root, root.name)]
        else:
            candidates = []
            for f in _walk(root, excl):
                rel = f.relative_to(root).as_posix()
                candidates.append((f, f"{name}/{rel}" if multi else rel))
        exported = {str(f.with_suffix("")).lower() for f, _ in candidates
                    if f.name.lower().endswith(SQLITE_SUFFIXES)}
        for f, label in candidates:
            kind = _classify(f)
            if kind is None:
                if root.is_file():
                    out.traces.append(TraceInput(f, label, "sqlite"))  # the loader sniffs content
                continue
            if kind == "ncu" and not root.is_file() and not _looks_like_ncu(f):
                out.ignored.append({"label": label, "reason": "CSV file that is not ncu output"})
                continue
            if kind == "nsys-rep" and str(f.with_suffix("")).lower() in exported:
                out.ignored.append({"label": label,
                                    "reason": "its exported .sqlite beside it is analysed"})
                continue
            out.traces.append(TraceInput(f, label, kind))
    out.traces.sort(key=lambda t: _natural_key(t.label))
    out.ignored.sort(key=lambda d: _natural_key(d["label"]))
    return out


# -------------------------------------------------------------------------------------- cache
def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/nsys-diag/batch`` (default ``~/.cache/nsys-diag/batch``)."""
    base = os.environ.get("XDG_CACHE_HOME", "").strip()
    root = Path(base) if base else Path.home() / ".cache"
    return root / "nsys-diag" / "batch"


def file_sha256(path: str | Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while True:
            block = fh.read(chunk)
            if not block:
                break
            h.update(block)
    return h.hexdigest()


def cache_key(content_sha: str, th: Thresholds, options: AnalyzeOptions | None = None) -> str:
    """sha256 of content hash + tool version + thresholds (+ analysis options + cache format)."""
    opts = options or AnalyzeOptions()
    material = {"content": content_sha, "tool": __version__, "cache_format": CACHE_FORMAT,
                "thresholds": th.to_dict(), "options": repr(opts)}
    return hashlib.sha256(json.dumps(material, sort_keys=True, default=str).encode()).hexdigest()


class Cache:
    """Gzip JSON entries ``<dir>/<key[:2]>/<key>.json.gz``; every failure is a miss, never fatal."""

    def __init__(self, directory: Path | None, echo: Echo | None = None):
        self.dir = directory
        self._echo = echo
        self._warned = False

    def _path(self, key: str) -> Path:
        assert self.dir is not None
        return self.dir / key[:2] / f"{key}.json.gz"

    def get(self, key: str) -> dict | None:
        if self.dir is None:
            return None
        p = self._path(key)
        try:
            with gzip.open(p, "rt", encoding="utf-8") as fh:
                entry = json.load(fh)
        except (OSError, ValueError, EOFError):
            return None
        if not isinstance(entry, dict) or entry.get("key") != key or "summary" not in entry:
            return None
        return entry

    def put(self, key: str, entry: dict) -> None:
        if self.dir is None:
            return
        p = self._path(key)
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=p.parent, suffix=".tmp")
            with os.fdopen(fd, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
                gz.write(dumps({"key": key, **entry}, indent=None).encode("utf-8"))
            os.replace(tmp, p)
        except OSError as exc:
            if not self._warned and self._echo:
                self._echo(f"nsys-diag: warning: cache not written ({term_safe(exc)}); "
                           "continuing without it")
            self._warned = True


# ------------------------------------------------------------------------------ per-trace job
def _rank_evidence(bundle) -> list[dict]:
    """Rank numbers found inside a trace (environment, thread names) — numbers only."""
    from nsys_diag.analyses.ranks import rank_from_environment, rank_from_thread_names

    found = []
    env = rank_from_environment(getattr(bundle.meta, "environment", None) or {})
    if env is not None:
        found.append(env)
    try:
        names = bundle.threads["name"].astype(str).unique().tolist() if len(bundle.threads) else []
    except (KeyError, AttributeError):
        names = []
    th = rank_from_thread_names(names)
    if th is not None:
        found.append(th)
    return [{"rank": r.rank, "local_rank": r.local_rank, "node": r.node, "source": r.source,
             "strength": r.strength} for r in found]


def _run_analysis(path: str, th: Thresholds, generated_at: str) -> tuple[dict, list[dict]]:
    """Analyse one trace → (view, rank evidence). Loads the trace once when the pipeline allows."""
    from nsys_diag import pipeline

    options = AnalyzeOptions()
    analyze_bundle = getattr(pipeline, "analyze_bundle", None)
    if analyze_bundle is not None:
        bundle = pipeline.load_for_analysis(path, options)  # as analyze: bounded memory
        evidence = _rank_evidence(bundle)
        view = analyze_bundle(bundle, options, th, generated_at)
        del bundle
        return view, evidence
    return pipeline.analyze_path(path, options, th, generated_at), []


def _share_read_threads(workers: int) -> None:
    """Worker-process initializer: the usable CPUs are shared by ``workers`` processes, so each
    reads its tables with that share of threads (``loaders/concurrent.py``), at least one."""
    from nsys_diag.loaders.concurrent import READ_THREADS_ENV, read_threads

    if READ_THREADS_ENV not in os.environ:
        os.environ[READ_THREADS_ENV] = str(max(1, read_threads() // max(1, workers)))


def analyze_trace_job(path: str, generated_at: str, thresholds: dict | None = None) -> dict:
    """Analyse one trace; never raises. Runs in worker processes (local or Dask).

    Returns ``{"ok": True, "view", "summary"}`` or ``{"ok": False, "reason", "hint"}``.
    """
    from nsys_diag.analyses.batch_summary import summarize_view

    th = Thresholds(**thresholds) if thresholds else DEFAULT_THRESHOLDS
    try:
        view, evidence = _run_analysis(path, th, generated_at)
        summary = summarize_view(view, rank_evidence=evidence)
        return {"ok": True, "view": json_safe(view), "summary": json_safe(summary)}
    except InputError as exc:
        return {"ok": False, "reason": exc.reason, "hint": exc.hint or ""}
    except NsysDiagError as exc:
        return {"ok": False, "reason": exc.one_line(), "hint": ""}
    except MemoryError:
        return {"ok": False, "reason": "out of memory while analysing",
                "hint": "analyse it alone with `nsys-diag analyze --steps` / `--window`"}
    except Exception as exc:  # noqa: BLE001 - a bug must not abort the batch: report it
        return {"ok": False, "reason": f"internal error ({type(exc).__name__}: {exc})",
                "hint": "this is a bug in nsys-diag; run `nsys-diag --debug analyze FILE` "
                        "for the traceback and report it"}


def _export_nsys_rep(path: Path, content_sha: str, cache: Cache) -> Path:
    """Export a .nsys-rep to SQLite inside the cache (never beside the input)."""
    nsys = shutil.which("nsys")
    if nsys is None:
        raise InputError(path, "a .nsys-rep needs `nsys` to convert it, and nsys is not on PATH",
                         NSYS_HINT)
    out_dir = (cache.dir or Path(tempfile.gettempdir()) / "nsys-diag") / "exports"
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / f"{content_sha}.sqlite"
    if out.exists():
        return out
    tmp = out_dir / f"{content_sha}.partial.sqlite"
    proc = subprocess.run([nsys, "export", "--type", "sqlite", "--force-overwrite", "true",
                           "--output", str(tmp), str(path)], capture_output=True, text=True,
                          timeout=3600, check=False)
    if proc.returncode != 0 or not tmp.exists():
        msg = (proc.stderr or proc.stdout or "").strip().splitlines()[-1:] or ["no output"]
        raise InputError(path, f"`nsys export` failed: {term_safe(msg[0])}")
    os.replace(tmp, out)
    return out


# ------------------------------------------------------------------------------------ progress
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


# ------------------------------------------------------------------------------------ executor
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


def _dask_client(scheduler: str | None, jobs: int):
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise UsageError("--scheduler/--dask need Dask distributed, which is not installed: "
                         f"{DASK_HINT}") from None
    if scheduler:
        try:
            return Client(scheduler, timeout="20s"), None
        except (OSError, TimeoutError) as exc:
            raise UsageError(f"cannot reach the Dask scheduler {term_safe(scheduler)}: "
                             f"{term_safe(exc)}") from None
    cluster = LocalCluster(n_workers=jobs, threads_per_worker=1, processes=True,
                           dashboard_address=None)
    return Client(cluster), cluster


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

    # 1. content hashes (threads: hashlib releases the GIL on large blocks)
    def hash_one(t: TraceInput) -> str | Exception:
        try:
            return file_sha256(t.path)
        except OSError as exc:
            return exc

    with ThreadPoolExecutor(max_workers=min(4, max(1, len(traces)))) as pool:
        hashes = list(pool.map(hash_one, traces))

    # 2. cache hits, unreadable files, .nsys-rep exports
    todo: list[tuple[int, str, str]] = []  # (index, path to analyse, cache key)
    th_dict = th.to_dict()
    for i, (t, h) in enumerate(zip(traces, hashes)):
        if isinstance(h, Exception):
            finish(i, TraceResult(t, False, reason=f"cannot read ({term_safe(h)})"))
            continue
        key = cache_key(h, th)
        entry = cache.get(key) if use_cache else None
        if entry is not None:
            view = entry.get("view")
            if isinstance(view, dict) and isinstance(view.get("trace"), dict):
                view["trace"]["path"] = t.path.name  # same content, maybe another name
            finish(i, TraceResult(t, True, summary=entry["summary"], view=view, cached=True,
                                  sha256=h))
            continue
        path = t.path
        if t.kind == "nsys-rep":
            try:
                path = _export_nsys_rep(t.path, h, cache)
            except InputError as exc:
                finish(i, TraceResult(t, False, reason=exc.reason, hint=exc.hint or "", sha256=h))
                continue
            except (OSError, subprocess.SubprocessError) as exc:
                finish(i, TraceResult(t, False, reason=f"`nsys export` failed: {term_safe(exc)}",
                                      sha256=h))
                continue
        todo.append((i, str(path), key))

    def accept(i: int, key: str, out: dict) -> None:
        t = traces[i]
        if out.get("ok"):
            view = out["view"]
            if t.kind == "nsys-rep" and isinstance(view.get("trace"), dict):
                view["trace"]["path"] = t.path.name  # not the exported copy in the cache
            cache.put(key, {"summary": out["summary"], "view": view, "label": t.label})
            finish(i, TraceResult(t, True, summary=out["summary"], view=view,
                                  sha256=hashes[i]))  # type: ignore[arg-type]
        else:
            finish(i, TraceResult(t, False, reason=out.get("reason", "failed"),
                                  hint=out.get("hint", ""), sha256=hashes[i]))  # type: ignore[arg-type]

    # 3. analysis
    try:
        if todo and (scheduler or use_dask):
            client, cluster = _dask_client(scheduler, jobs)
            try:
                from dask.distributed import as_completed as dask_completed

                futures = {}
                for i, path, key in todo:
                    fut = client.submit(analyze_trace_job, path, generated_at, th_dict, pure=False)
                    futures[fut] = (i, key)
                for fut in dask_completed(list(futures)):
                    i, key = futures[fut]
                    try:
                        out = fut.result()
                    except Exception as exc:  # noqa: BLE001 - worker died / lost
                        out = {"ok": False, "reason": f"Dask worker failed ({term_safe(exc)})"}
                    accept(i, key, out)
            finally:
                client.close()
                if cluster is not None:
                    cluster.close()
        elif todo and (jobs == 1 or len(todo) == 1):
            for i, path, key in todo:
                accept(i, key, analyze_trace_job(path, generated_at, th_dict))
        elif todo:
            workers = min(jobs, len(todo))
            with ProcessPoolExecutor(max_workers=workers, initializer=_share_read_threads,
                                     initargs=(workers,)) as pool:
                futs = {pool.submit(analyze_trace_job, path, generated_at, th_dict): (i, key)
                        for i, path, key in todo}
                for fut in as_completed(futs):
                    i, key = futs[fut]
                    try:
                        out = fut.result()
                    except Exception as exc:  # noqa: BLE001 - e.g. a worker killed (OOM)
                        out = {"ok": False, "reason": f"worker process failed ({term_safe(exc)})",
                               "hint": "analyse it alone with `nsys-diag analyze`"}
                    accept(i, key, out)
    finally:
        progress.close()
    return [results[i] for i in range(len(traces))]


# --------------------------------------------------------------------------------------- batch
def _report_paths(labels: Sequence[str]) -> dict[str, str]:
    """Label → relative report base path (``dir/stem.nsys-diag``), unique, inside OUTDIR."""
    out, used = {}, set()
    for label in labels:
        parts = [p for p in Path(label).parts if p not in ("..", ".", "/", "")]
        parent = "/".join(parts[:-1])
        name = parts[-1] if parts else "trace"
        stem = name
        for suf in SQLITE_SUFFIXES + NCU_SUFFIXES + REP_SUFFIXES:
            if name.lower().endswith(suf):
                stem = name[: -len(suf)]
                break
        base = f"{parent}/{stem}" if parent else stem
        if base.lower() in used:
            base = f"{parent}/{name}" if parent else name
        n = 2
        while base.lower() in used:
            base = f"{parent}/{name}~{n}" if parent else f"{name}~{n}"
            n += 1
        used.add(base.lower())
        out[label] = base + ".nsys-diag"
    return out


def _write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _emit(text: str, dest: str | None) -> None:
    if dest is None:
        return
    if dest == "-":
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        sys.stdout.flush()
    else:
        _write_text(Path(dest), text)


def _index_row(res: TraceResult, report_base: str | None, rank: int | None) -> dict:
    s = res.summary or {}
    steps = s.get("steps") or {}
    return {
        "label": res.trace.label,
        "kind": res.trace.kind,
        "format": s.get("format"),
        "verdict": s.get("verdict"),
        "headline": s.get("headline"),
        "confidence": s.get("confidence"),
        "steps": steps.get("analysed_count"),
        "step_median_ms": steps.get("median_ms"),
        "phase_shares": {c: v.get("share") for c, v in (s.get("phases") or {}).items()},
        "gpu_busy": s.get("gpu_busy"),
        "tensor_core_share": s.get("tensor_core_share"),
        "comm_ms_per_step": s.get("comm_ms_per_step"),
        "processes": len(s.get("processes") or []),
        "report_html": f"{report_base}.html" if report_base else None,
        "report_json": f"{report_base}.json" if report_base else None,
        "cached": res.cached,
        "sha256": res.sha256[:16],
        "rank": rank,
    }


def build_ranks_section(ok: Sequence[TraceResult], th: Thresholds) -> dict | None:
    """Cross-rank section when ≥ 2 traces carry distinct rank identities."""
    from nsys_diag.analyses.batch_summary import rank_inputs
    from nsys_diag.analyses.ranks import RankId, analyze_ranks, assign_ranks, parse_rank_name

    if len(ok) < 2:
        return None
    evidence = []
    for r in ok:
        ev: list = [parse_rank_name(r.trace.label)]
        for e in (r.summary or {}).get("rank_evidence") or []:
            ev.append(RankId(e.get("rank"), e.get("local_rank"), e.get("node"),
                             str(e.get("source", "")), int(e.get("strength", 0))))
        evidence.append(ev)
    assignment = assign_ranks(evidence)
    if assignment.ranks is None:
        return None
    with_steps = [(r, k) for r, k in zip(ok, assignment.ranks)
                  if (r.summary or {}).get("per_step", {}).get("duration_ms")]
    inputs = rank_inputs([r.summary for r, _ in with_steps], [k for _, k in with_steps],
                         [r.trace.label for r, _ in with_steps])
    result = analyze_ranks(inputs, z_cutoff=th.outlier_mad_k)
    result["source"] = assignment.source
    result["note"] = assignment.note
    result["assigned"] = {r.trace.label: k for r, k in zip(ok, assignment.ranks)}
    return result


def batch_command(dirs: Sequence[str], *, jobs: int | None = None, scheduler: str | None = None,
                  use_dask: bool = False, outdir: str = "nsys-diag-batch", use_cache: bool = True,
                  json_out: str | None = None, md_out: str | None = None,
                  echo: Echo = print, th: Thresholds | None = None,
                  generated_at: str | None = None) -> int:
    """Analyse every trace under ``dirs``; per-trace reports + index in ``outdir``.

    Returns the exit code: 0, or 4 when some inputs were skipped.
    """
    from nsys_diag.report.batch_render import (
        render_index_html,
        render_index_markdown,
        render_trace_html,
    )

    th = th or DEFAULT_THRESHOLDS
    generated_at = generated_at or generated_at_now()
    out = Path(outdir)
    found = discover(dirs, exclude=[out])
    if not found.traces:
        raise InputError(", ".join(str(d) for d in dirs), "no traces found",
                         "batch looks for nsys .sqlite exports, ncu .csv files and .nsys-rep "
                         "reports (recursively)")
    out.mkdir(parents=True, exist_ok=True)
    report_paths = _report_paths([t.label for t in found.traces])
    render_problems: list[str] = []

    def write_reports(res: TraceResult) -> None:
        if not res.ok or res.view is None:
            return
        base = out / report_paths[res.trace.label]
        try:
            _write_text(base.with_name(base.name + ".json"), dumps(res.view))
            _write_text(base.with_name(base.name + ".html"), render_trace_html(res.view))
        except Exception as exc:  # noqa: BLE001 - one broken report must not stop the batch
            render_problems.append(f"{term_safe(res.trace.label)}: report not written "
                                   f"({type(exc).__name__}: {term_safe(exc)})")

    results = run_traces(found.traces, th=th, generated_at=generated_at, jobs=jobs,
                         scheduler=scheduler, use_dask=use_dask, use_cache=use_cache, echo=echo,
                         on_result=write_reports)
    ok = [r for r in results if r.ok]
    skipped = [r for r in results if not r.ok]
    ranks = build_ranks_section(ok, th)
    assigned = (ranks or {}).get("assigned", {})
    rows = [_index_row(r, report_paths[r.trace.label], assigned.get(r.trace.label)) for r in ok]
    phase_cols = []  # phases with time in at least one trace
    for row in rows:
        for c, share in row["phase_shares"].items():
            if c not in phase_cols and share:
                phase_cols.append(c)
    from nsys_diag.analyses.batch_summary import phase_sort_key

    phase_cols.sort(key=phase_sort_key)
    index = {
        "schema_version": INDEX_SCHEMA_VERSION,
        "kind": "batch_index",
        "tool": {"name": "nsys-diag", "version": __version__},
        "generated_at": generated_at,
        "roots": found.roots,
        "counts": {"found": len(found.traces), "analysed": len(ok) - sum(r.cached for r in ok),
                   "from_cache": sum(r.cached for r in ok), "ok": len(ok),
                   "skipped": len(skipped), "ignored": len(found.ignored)},
        "phase_columns": phase_cols,
        "traces": rows,
        "skipped": [{"label": r.trace.label, "reason": r.reason, "hint": r.hint} for r in skipped],
        "ignored": found.ignored,
        "ranks": ranks,
        "problems": render_problems,
        "exit_code": EXIT_PARTIAL_BATCH if skipped else EXIT_OK,
    }
    index = json_safe(index)
    _write_text(out / "index.json", dumps(index))
    md = render_index_markdown(index)
    _write_text(out / "index.md", md)
    try:
        _write_text(out / "index.html", render_index_html(index))
    except Exception as exc:  # noqa: BLE001
        render_problems.append(f"index.html not written ({type(exc).__name__}: {term_safe(exc)})")
    _emit(dumps(index), json_out)
    _emit(md, md_out)

    c = index["counts"]
    echo(f"nsys-diag batch: {c['ok']} of {c['found']} traces analysed "
         f"({c['from_cache']} from cache), {c['skipped']} skipped"
         + (f", {c['ignored']} ignored" if c["ignored"] else "")
         + f" → {term_safe(out / 'index.html')}")
    for r in skipped:
        echo(f"  skipped {term_safe(r.trace.label)}: {term_safe(r.reason)}"
             + (f" (hint: {term_safe(r.hint)})" if r.hint else ""))
    for p in render_problems:
        echo(f"  warning: {p}")
    if ranks and ranks.get("available"):
        for s in ranks.get("stragglers", []):
            echo(f"  straggler: rank {s['rank']} ({term_safe(s['label'])}), "
                 f"loses time in {s['phase'] or '?'}")
    return index["exit_code"]


# ------------------------------------------------------------------------------------- compare
def _side(path: str, role: str) -> tuple[list[TraceInput], list[dict]]:
    p = Path(path)
    if not p.exists():
        raise InputError(p, "no such file or directory")
    if p.is_file():
        return [TraceInput(p, p.name, _classify(p) or "sqlite")], []
    found = discover([p])
    if not found.traces:
        raise InputError(p, f"no traces found in the {role} directory",
                         "compare takes a trace or a directory of traces (runs) per side")
    return found.traces, found.ignored


def compare_command(baseline: str, candidate: str, *, fail_on_regression: float | None = None,
                    html_out: str | None = None, json_out: str | None = None,
                    md_out: str | None = None, seed: int = 0, echo: Echo = print,
                    th: Thresholds | None = None, generated_at: str | None = None,
                    jobs: int | None = None, use_cache: bool = True) -> int:
    """Compare BASELINE and CANDIDATE (each a trace or a directory of runs).

    Returns 0, or 5 (``EXIT_REGRESSION``) when ``fail_on_regression`` is set and the candidate's
    step time is slower by more than that many percent with confidence.
    """
    from nsys_diag.analyses.batch_summary import compare_runs
    from nsys_diag.report.batch_render import (
        render_compare_html,
        render_compare_markdown,
        render_compare_text,
    )

    th = th or DEFAULT_THRESHOLDS
    generated_at = generated_at or generated_at_now()
    base_traces, base_ignored = _side(baseline, "baseline")
    cand_traces, cand_ignored = _side(candidate, "candidate")
    all_traces = base_traces + cand_traces
    results = run_traces(all_traces, th=th, generated_at=generated_at,
                         jobs=jobs or min(os.cpu_count() or 1, len(all_traces)),
                         use_cache=use_cache, echo=echo, progress_label="compare")
    base_res, cand_res = results[: len(base_traces)], results[len(base_traces):]
    skipped = []
    for role, path, side in (("baseline", baseline, base_res), ("candidate", candidate, cand_res)):
        bad = [r for r in side if not r.ok]
        for r in bad:
            skipped.append({"side": role, "label": r.trace.label, "reason": r.reason,
                            "hint": r.hint})
        if len(bad) == len(side):
            first = bad[0]
            raise InputError(first.trace.path if len(side) == 1 else path,
                             first.reason if len(side) == 1 else
                             f"no usable trace in the {role} (first: {first.trace.label}: "
                             f"{first.reason})", first.hint or None)
    b_ok = [r for r in base_res if r.ok]
    c_ok = [r for r in cand_res if r.ok]
    result = compare_runs([r.summary for r in b_ok], [r.summary for r in c_ok], seed=seed,
                          fail_pct=fail_on_regression)

    def describe(path: str, side: list[TraceResult], ignored: list[dict]) -> dict:
        p = Path(path)
        steps = sum(len(r.summary["per_step"]["duration_ms"]) for r in side)
        return {"path": p.name or str(p), "kind": "directory" if p.is_dir() else "trace",
                "runs": len(side), "steps": steps,
                "traces": [r.trace.label for r in side],
                "verdicts": [r.summary.get("verdict") for r in side],
                "ignored": ignored}

    exit_code = EXIT_REGRESSION if result["regression"] else EXIT_OK
    doc = {
        "schema_version": COMPARE_SCHEMA_VERSION,
        "kind": "compare",
        "tool": {"name": "nsys-diag", "version": __version__},
        "generated_at": generated_at,
        "baseline": describe(baseline, b_ok, base_ignored),
        "candidate": describe(candidate, c_ok, cand_ignored),
        **result,
        "skipped": skipped,
        "exit_code": exit_code,
    }
    doc = json_safe(doc)
    for line in render_compare_text(doc):
        echo(line)
    if html_out:
        _write_text(Path(html_out), render_compare_html(doc))
    _emit(dumps(doc), json_out)
    _emit(render_compare_markdown(doc), md_out)
    return exit_code
