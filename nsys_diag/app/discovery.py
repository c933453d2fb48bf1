"""Finding the traces under ``batch``/``compare`` roots.

Discovery is recursive and deterministic: natural sort of the path relative to its root
(``rank2`` before ``rank10``). Traces: nsys ``.sqlite`` exports, ncu ``.csv`` (CSV files that are
not ncu output are ignored, and listed as such), PyTorch profiler ``.json`` / ``.json.gz``
traces (likewise: JSON that is not a Kineto trace is ignored), ``.nsys-rep``/``.qdrep`` (exported with ``nsys``
later, into the cache; ignored when an exported ``.sqlite`` of the same name sits beside it).
Hidden files and directories, and the batch's own output directory, are skipped.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

from nsys_diag.model.errors import InputError
from nsys_diag.model.safe_files import open_regular, read_head

SQLITE_SUFFIXES = (".sqlite", ".sqlite3")
NCU_SUFFIXES = (".csv",)
REP_SUFFIXES = (".nsys-rep", ".qdrep")
KINETO_SUFFIXES = (".json", ".json.gz")
TRACE_SUFFIXES = SQLITE_SUFFIXES + NCU_SUFFIXES + REP_SUFFIXES + KINETO_SUFFIXES


@dataclass
class TraceInput:
    """One trace found under a root. ``label`` is the natural-sortable relative path."""

    path: Path
    label: str
    kind: str  # "sqlite" | "ncu" | "nsys-rep" | "kineto"


@dataclass
class Discovery:
    traces: list[TraceInput] = field(default_factory=list)
    ignored: list[dict] = field(default_factory=list)  # {label, reason}
    roots: list[str] = field(default_factory=list)


def natural_key(text: str):
    """Sort key: digit runs compare as numbers (``analyses.ranks.natural_key``)."""
    from nsys_diag.analyses.job.ranks import natural_key as key  # perf: pandas only when sorting

    return key(text)


def _root_names(roots: Sequence[Path]) -> list[str]:
    names: list[str] = []
    seen: dict[str, int] = {}
    for r in roots:
        base = r.name or r.resolve().name or "root"
        n = seen.get(base, 0) + 1
        seen[base] = n
        names.append(base if n == 1 else f"{base}~{n}")
    return names


def _looks_like_ncu(path: Path) -> bool:
    try:
        head = read_head(path, 8192)  # never blocks on a FIFO named *.csv
    except InputError:
        return True  # let the loader report why it cannot be read
    from nsys_diag.loaders.ncu_csv import looks_like_ncu_csv

    return looks_like_ncu_csv(head)


OWN_TRACE_MARKS = (b'"generator": "nsys-diag', b'"generator":"nsys-diag')
"""The end of a Chrome trace ``analyze --trace-out`` wrote (``otherData``): an output, not a trace."""


def _looks_like_kineto(path: Path) -> bool:
    """A PyTorch profiler trace by its first bytes, and not one of our own ``--trace-out``
    timelines (their ``otherData`` closes the file: its last 8 KiB are read)."""
    try:
        head = read_head(path, 4096)
    except InputError:
        return True  # let the loader report why it cannot be read
    from nsys_diag.loaders.sniff import looks_like_kineto

    if not looks_like_kineto(head):
        return False
    try:
        with open_regular(path) as fh:
            fh.seek(max(0, fh.seek(0, 2) - 8192))
            tail = fh.read(8192)
    except (OSError, InputError):
        return True
    return not any(m in tail for m in OWN_TRACE_MARKS)


def classify(path: Path) -> str | None:
    """The trace kind its name says (``sqlite``, ``ncu``, ``nsys-rep``, ``kineto`` for
    ``*.json`` / ``*.json.gz``), or None."""
    low = path.name.lower()
    if low.endswith(SQLITE_SUFFIXES):
        return "sqlite"
    if low.endswith(NCU_SUFFIXES):
        return "ncu"
    if low.endswith(REP_SUFFIXES):
        return "nsys-rep"
    if low.endswith(KINETO_SUFFIXES):
        return "kineto"
    return None


def _walk(root: Path, exclude: set[Path]) -> Iterable[Path]:
    """Files under ``root``; hidden entries and ``exclude``d directories (our OUTDIR) skipped."""
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")
                       and (not exclude or (Path(dirpath) / d).resolve() not in exclude)]
        for f in filenames:
            if not f.startswith("."):
                yield Path(dirpath) / f


def _candidates(root: Path, name: str, multi: bool, excl: set[Path]) -> list[tuple[Path, str]]:
    """(file, label) of every file under one root (the root itself when it is a file)."""
    if root.is_file():
        return [(root, root.name)]
    out = []
    for f in _walk(root, excl):
        rel = f.relative_to(root).as_posix()
        out.append((f, f"{name}/{rel}" if multi else rel))
    return out


def discover(roots: Sequence[str | Path], *, exclude: Sequence[Path] = ()) -> Discovery:
    """Find traces under ``roots`` (directories, recursively, or single files).

    Raises ``InputError`` for a root that does not exist. Order: natural sort of labels.
    """
    paths = [Path(r) for r in roots]
    for p in paths:
        if not p.exists():
            raise InputError(p, "no such file or directory",
                             "check the path: a directory of traces or a trace file (.sqlite, .nsys-rep, ncu .csv)")
    excl = {e.resolve() for e in exclude if e.exists()}
    names = _root_names(paths)
    out = Discovery(roots=names)
    for root, name in zip(paths, names):
        candidates = _candidates(root, name, len(paths) > 1, excl)
        exported = {str(f.with_suffix("")).lower() for f, _ in candidates
                    if f.name.lower().endswith(SQLITE_SUFFIXES)}
        for f, label in candidates:
            kind = classify(f)
            if kind is None:
                if root.is_file():
                    out.traces.append(TraceInput(f, label, "sqlite"))  # the loader sniffs content
                continue
            if kind == "ncu" and not root.is_file() and not _looks_like_ncu(f):
                out.ignored.append({"label": label, "reason": "CSV file that is not ncu output"})
                continue
            if kind == "kineto" and not root.is_file() and not _looks_like_kineto(f):
                out.ignored.append({"label": label,
                                    "reason": "JSON file that is not a PyTorch profiler trace"})
                continue
            if kind == "nsys-rep" and str(f.with_suffix("")).lower() in exported:
                out.ignored.append({"label": label,
                                    "reason": "its exported .sqlite beside it is analysed"})
                continue
            out.traces.append(TraceInput(f, label, kind))
    out.traces.sort(key=lambda t: natural_key(t.label))
    out.ignored.sort(key=lambda d: natural_key(d["label"]))
    return out
