"""The per-trace work of ``batch``/``compare``: analyse one trace, never raise.

``analyze_trace_job`` runs in worker processes (local or Dask) and returns a picklable dict.
``export_nsys_rep`` converts a ``.nsys-rep`` with ``nsys export`` into the cache (never beside
the input); it runs on this machine before the job is scheduled. Without a cache (``--no-cache``)
the export goes to a private per-user directory (``private_export_dir``: created 0700, and reused
only when it is a real directory owned by this user that nobody else can write to; otherwise a
fresh ``mkdtemp``), and a reused export must be a regular file owned by this user that starts
with the SQLite header: a file planted at a predictable path is never trusted.
"""
from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

from nsys_diag.app.analyze import analyze_bundle, load_and_import
from nsys_diag.model.errors import InputError, NsysDiagError
from nsys_diag.model.jsonsafe import jsonable
from nsys_diag.model.options import AnalyzeOptions
from nsys_diag.model.text import terminal_line
from nsys_diag.model.thresholds import DEFAULT_THRESHOLDS, Thresholds
from nsys_diag.model.vocabulary import NSYS_EXPORT_SQLITE

NSYS_HINT = ("install Nsight Systems (`nsys` on PATH) or export it yourself: "
             f"`{NSYS_EXPORT_SQLITE} FILE.nsys-rep`")
NSYS_EXPORT_TIMEOUT_S = 3600
MESSAGE_CHARS = 300
"""Longest quoted text (file names, tool messages) in a reason or warning."""


def _rank_evidence(bundle) -> list[dict]:
    """Rank numbers found inside a trace (environment, thread names) — numbers only."""
    from nsys_diag.analyses.job.ranks import rank_from_environment, rank_from_thread_names

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


def run_analysis(path: str, th: Thresholds, generated_at: str) -> tuple[dict, list[dict]]:
    """Analyse one trace → (view, rank evidence), loading it once, as ``analyze`` does (bounded
    memory: the default memory budget)."""
    options = AnalyzeOptions()
    bundle, imports = load_and_import(path, options)
    evidence = _rank_evidence(bundle)
    view = analyze_bundle(bundle, options, th, generated_at, imports)
    del bundle
    return view, evidence


def share_read_threads(workers: int) -> None:
    """Worker-process initializer: the usable CPUs are shared by ``workers`` processes, so each
    reads its tables with that share of threads (``loaders/parallel_reads.py``), at least one."""
    from nsys_diag.loaders.parallel_reads import READ_THREADS_ENV, read_threads

    if READ_THREADS_ENV not in os.environ:
        os.environ[READ_THREADS_ENV] = str(max(1, read_threads() // max(1, workers)))


def analyze_trace_job(path: str, generated_at: str, thresholds: dict | None = None) -> dict:
    """Analyse one trace; never raises. Runs in worker processes (local or Dask).

    Returns ``{"ok": True, "view", "summary"}`` or ``{"ok": False, "reason", "hint"}``.
    """
    from nsys_diag.analyses.job.batch_summary import summarize_view

    th = Thresholds(**thresholds) if thresholds else DEFAULT_THRESHOLDS
    try:
        view, evidence = run_analysis(path, th, generated_at)
        summary = summarize_view(view, rank_evidence=evidence)
        return {"ok": True, "view": jsonable(view), "summary": jsonable(summary)}
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


def _private(st: os.stat_result, directory: bool) -> bool:
    """Whether ``st`` (an ``lstat``: a symlink is neither) is a directory/regular file of this
    user that no one else can write to."""
    kind_ok = stat.S_ISDIR(st.st_mode) if directory else stat.S_ISREG(st.st_mode)
    return kind_ok and st.st_uid == os.getuid() and not st.st_mode & 0o022


def private_export_dir() -> Path:
    """``$TMPDIR/nsys-diag-<uid>`` created with mode 0700, or, when that path exists and is not
    a private directory of this user (a planted symlink, another owner, loose permissions), a
    fresh ``mkdtemp`` directory (0700)."""
    base = Path(tempfile.gettempdir()) / f"nsys-diag-{os.getuid()}"
    try:
        base.mkdir(mode=0o700)
    except FileExistsError:
        pass
    except OSError:
        return Path(tempfile.mkdtemp(prefix="nsys-diag-"))
    try:
        if _private(base.lstat(), directory=True):
            return base
    except OSError:
        pass
    return Path(tempfile.mkdtemp(prefix="nsys-diag-"))


def _reusable_export(out: Path) -> bool:
    """Whether an export already at ``out`` can be trusted: a regular file (not a symlink) of
    this user, not writable by others, starting with the SQLite header."""
    from nsys_diag.loaders.sniff import is_sqlite_file

    try:
        st = out.lstat()
    except OSError:
        return False
    return _private(st, directory=False) and is_sqlite_file(out)


def export_nsys_rep(path: Path, content_sha: str, cache_dir: Path | None) -> Path:
    """Export a .nsys-rep to SQLite inside ``cache_dir`` (``private_export_dir()`` without a
    cache; never beside the input); a trusted export of the same content is reused."""
    nsys = shutil.which("nsys")
    if nsys is None:
        raise InputError(path, "a .nsys-rep needs `nsys` to convert it, and nsys is not on PATH",
                         NSYS_HINT)
    out_dir = (cache_dir or private_export_dir()) / "exports"
    out_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    if not _private(out_dir.lstat(), directory=True):
        out_dir = Path(tempfile.mkdtemp(prefix="exports-", dir=out_dir.parent))
    out = out_dir / f"{content_sha}.sqlite"
    if _reusable_export(out):
        return out
    tmp = out_dir / f"{content_sha}.partial.sqlite"
    try:
        proc = subprocess.run([nsys, "export", "--type", "sqlite", "--force-overwrite", "true",
                               "--output", str(tmp), str(path)], capture_output=True, text=True,
                              timeout=NSYS_EXPORT_TIMEOUT_S, check=False)
        if proc.returncode != 0 or not tmp.exists():
            msg = (proc.stderr or proc.stdout or "").strip().splitlines()[-1:] or ["no output"]
            raise InputError(path, f"`nsys export` failed: {terminal_line(msg[0], MESSAGE_CHARS)}")
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)  # nothing partial is left behind
    return out
