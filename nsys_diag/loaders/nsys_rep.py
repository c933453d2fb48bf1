""".nsys-rep / .qdrep reports: convert to SQLite with ``nsys export`` when nsys is installed.

The report itself is never modified. The SQLite goes next to it (``report.nsys-rep`` →
``report.sqlite``) when that directory is writable and no such file exists yet, otherwise into
``~/.cache/nsys-diag/exports/`` under a name keyed by the report's path, size and mtime. An
existing export next to the report that is newer than the report is reused as is.
Without ``nsys`` on PATH the user gets the exact command to run (exit code 3). The export is
written under a temporary name beside its target and renamed once complete, so a killed export
never leaves a half-written file that a later run would reuse.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from nsys_diag.loaders.sniff import REP_SUFFIXES, is_sqlite_file
from nsys_diag.model.bundle import LoadWarning, TraceBundle
from nsys_diag.model.errors import InputError
from nsys_diag.model.vocabulary import NSYS_EXPORT_SQLITE


def _stem(rep: Path) -> str:
    name = rep.name
    for suffix in REP_SUFFIXES:
        if name.lower().endswith(suffix):
            return name[: -len(suffix)] or "report"
    return rep.stem or "report"


def export_command(rep: str | Path, output: str | Path | None = None) -> list[str]:
    """The ``nsys export`` argv that turns ``rep`` into a SQLite file."""
    rep = Path(rep)
    out = Path(output) if output is not None else rep.with_name(_stem(rep) + ".sqlite")
    return ["nsys", "export", "--type", "sqlite", "--output", str(out), str(rep)]


def export_hint(rep: str | Path) -> str:
    rep = Path(rep)
    return " ".join(export_command(rep.name, _stem(rep) + ".sqlite"))


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "nsys-diag" / "exports"


def _fresh(export: Path, rep: Path) -> bool:
    try:
        return is_sqlite_file(export) and export.stat().st_mtime >= rep.stat().st_mtime
    except OSError:
        return False


def target_path(rep: str | Path) -> tuple[Path, bool]:
    """Where the export goes and whether it already exists and can be reused."""
    rep = Path(rep).resolve()
    beside = rep.with_name(_stem(rep) + ".sqlite")
    if beside.exists():
        if _fresh(beside, rep):
            return beside, True
    elif os.access(rep.parent, os.W_OK):
        return beside, False
    st = rep.stat()
    key = hashlib.sha256(f"{rep}|{st.st_size}|{st.st_mtime_ns}".encode()).hexdigest()[:16]
    cached = cache_dir() / f"{_stem(rep)}-{key}.sqlite"
    return cached, is_sqlite_file(cached)


def export_to_sqlite(rep_path: str | Path) -> Path:
    """Convert a ``.nsys-rep``/``.qdrep`` to SQLite with the ``nsys`` on PATH; return its path.

    Raises ``InputError`` (exit 3) with the manual command when nsys is missing or fails.
    """
    rep = Path(rep_path)
    hint = export_hint(rep)
    if not rep.is_file():
        raise InputError(rep, "no such report file", hint)
    nsys = shutil.which("nsys")
    if nsys is None:
        raise InputError(rep, "is an Nsight Systems report, not a SQLite export, and `nsys` "
                         "is not on PATH to convert it", hint)
    target, reusable = target_path(rep)
    if reusable:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    # exported under a temporary name and renamed once complete: a killed export never leaves a
    # half-written file under the name that is reused later
    partial = target.with_name(f".{target.stem}.{os.getpid()}.partial.sqlite")
    cmd = [nsys] + export_command(rep.resolve(), partial)[1:]
    try:
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace",
                                  stdin=subprocess.DEVNULL)
        except OSError as exc:
            raise InputError(rep, f"could not run nsys ({exc.strerror or exc})", hint) from None
        if proc.returncode != 0 or not is_sqlite_file(partial):
            tail = (proc.stderr or proc.stdout or "").strip().splitlines()[-3:]
            raise InputError(rep, f"`nsys export` failed (exit {proc.returncode}"
                             + (f": {' | '.join(tail)}" if tail else "") + ")", hint)
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)  # our own partial output
    return target


def load_nsys_rep(path: str | Path) -> TraceBundle:
    """Convert the report (see :func:`export_to_sqlite`) and load the SQLite export."""
    from nsys_diag.loaders.nsys_sqlite import load_nsys_sqlite

    sqlite_path = export_to_sqlite(path)
    bundle = load_nsys_sqlite(sqlite_path)
    bundle.meta.extra["converted_from"] = str(path)
    bundle.warnings.append(LoadWarning(
        "converted_report", f"{Path(path).name} is a report file; read its SQLite export "
        f"{sqlite_path.name} (made with `{NSYS_EXPORT_SQLITE}`)", 0))
    return bundle
