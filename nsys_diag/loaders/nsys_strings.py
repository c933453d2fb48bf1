"""StringIds resolution, categorical building and GlobalId decoding (NSYS_SQLITE.md §1.4, §1.5).

Strings are resolved **once per distinct id**: callers factorize the id column, look up only the
distinct ids, and build a ``pandas.Categorical`` from codes — never a per-row lookup.

A name longer than :data:`MAX_NAME_CHARS` is cut to that length with a trailing ``…`` (``cap_name``)
as it is read: no real kernel, API or NVTX name comes near it, and a crafted export of a few
million-character names would otherwise cost gigabytes and minutes in every later step. The
loader reports how many distinct names were cut (``long_names`` warning).
"""
from __future__ import annotations

import re
import threading
from typing import Sequence

import numpy as np
import pandas as pd

from nsys_diag.loaders.nsys_db import Col, NsysDb

_SQL_CHUNK = 900  # stays under SQLite's oldest host-parameter limit (999)
_FULL_READ_AT = 20_000  # this many distinct ids or more: read the whole StringIds table instead

MAX_NAME_CHARS = 4096
"""Characters kept of one name (StringIds value, inline NVTX text)."""

ELLIPSIS = "\u2026"


def cap_name(text: str) -> str:
    """``text``, or its first ``MAX_NAME_CHARS`` characters and ``…`` when it is longer."""
    return text if len(text) <= MAX_NAME_CHARS else text[:MAX_NAME_CHARS] + ELLIPSIS


def cap_names(labels: list[str]) -> tuple[list[str], int]:
    """(``labels`` each through ``cap_name``, how many were cut)."""
    cut = sum(1 for t in labels if len(t) > MAX_NAME_CHARS)
    return ([cap_name(t) for t in labels] if cut else labels), cut


RUNTIME_SUFFIX = re.compile(r"_v[0-9]{4,5}$")
"""CUDA *runtime* API version suffix (``cudaLaunchKernel_v7000``, ``…ExC_v11060``); driver names
keep their ``_v2`` (``cuMemAlloc_v2``), so this is applied to runtime rows only."""

_PID_MASK = np.int64(0xFFFFFF)
_GLOBAL_PID_MASK = np.int64(-16777216)  # 0xFFFFFFFFFF000000 as int64: keep hw|vm|pid, zero tid


def is_constant_view(a: np.ndarray) -> bool:
    """``a`` is a ``constant_view``: one value repeated through a stride-0 view (2+ rows)."""
    return a.ndim == 1 and a.size > 1 and a.strides[0] == 0


def constant_view(a: np.ndarray) -> np.ndarray:
    """``a`` itself, or — when every value is the same — a read-only stride-0 view of that one
    value (perf, bench: one GPU and one process make device / process columns constant; each
    saves a 2M-row array and its page faults). Readers never write into loader arrays."""
    a = np.asarray(a)
    if a.ndim != 1 or a.size < 2 or is_constant_view(a) or a[0] != a[-1] or not (a == a[0]).all():
        return a
    return np.broadcast_to(a[:1], a.shape)


def distinct_ints(a) -> np.ndarray:
    """The distinct values of an int64 column (``pd.unique``, first-appearance order); one value,
    without a pass over the rows, for a ``constant_view`` column (perf)."""
    a = np.asarray(a, dtype=np.int64)
    if is_constant_view(a):
        return a[:1].copy()
    return np.asarray(pd.unique(a), dtype=np.int64)


def decode_global_tid(gtid: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """GlobalId → (global_pid, pid, tid). Layout ``<hw:8><vm:8><pid:24><tid:24>`` (§1.5).

    Missing ids (the -1 sentinel) stay -1 in all three outputs. A constant input (one thread)
    gives constant (stride-0) outputs without computing 2M-row arrays.
    """
    g = np.asarray(gtid, dtype=np.int64)
    if is_constant_view(g):
        one = decode_global_tid(g[:1])
        return tuple(np.broadcast_to(x, g.shape) for x in one)  # type: ignore[return-value]
    if g.ndim == 1 and g.size > 1 and int(g.min()) >= 0:
        # perf (bench): one process (the usual case) → its global pid and pid are stride-0
        # views; only the thread ids are a new array (two 2M-row temporaries fewer)
        high = g >> 24
        if int(high.min()) == int(high.max()):
            one_gpid, one_pid, _ = decode_global_tid(g[:1])
            return (np.broadcast_to(one_gpid, g.shape), np.broadcast_to(one_pid, g.shape),
                    g & _PID_MASK)
        del high
    missing = g < 0
    gpid = g & _GLOBAL_PID_MASK
    pid = g >> 24
    pid &= _PID_MASK  # in place (perf: one temporary less per 2M rows)
    tid = g & _PID_MASK
    if missing.any():
        gpid = np.where(missing, -1, gpid)
        pid = np.where(missing, -1, pid)
        tid = np.where(missing, -1, tid)
    return gpid, pid, tid


def pid_of_global_pid(gpid: np.ndarray) -> np.ndarray:
    g = np.asarray(gpid, dtype=np.int64)
    if is_constant_view(g):  # constant: stays a view
        return np.broadcast_to(pid_of_global_pid(g[:1]), g.shape)
    return np.where(g < 0, -1, (g >> 24) & _PID_MASK)


def categorical(codes: np.ndarray, labels: Sequence[str], missing: str = "") -> pd.Categorical:
    """Categorical from integer ``codes`` into ``labels``; code -1 means ``missing``.

    Duplicate labels (e.g. two ids that are equal after suffix stripping) are merged.
    """
    codes = np.asarray(codes, dtype=np.int64)
    labels = list(labels)
    has_missing = bool(len(codes)) and int(codes.min()) < 0
    if has_missing:
        labels.append(missing)
        codes = np.where(codes < 0, len(labels) - 1, codes)
    if not labels:  # then there are no codes either
        return pd.Categorical.from_codes(np.zeros(0, dtype=np.int64), categories=pd.Index([""][:0]))
    remap, cats = pd.factorize(pd.Index(labels), use_na_sentinel=False)
    if len(cats) != len(labels):  # duplicate labels merged: re-point the codes
        codes = np.asarray(remap, dtype=np.int64)[codes]
    elif len(codes) and int(codes.max()) >= len(labels):
        raise ValueError("categorical codes out of range")
    # perf (bench): codes are in range (checked above), so pandas need not re-validate 2M rows
    return pd.Categorical.from_codes(codes, categories=pd.Index(cats), validate=False)


class StringTable:
    """Lazy, cached view of ``StringIds``: each id is fetched at most once per load."""

    def __init__(self, db: NsysDb):
        self.db = db
        self._lock = threading.Lock()  # tables are read concurrently (loaders/parallel_reads.py)
        self.present = db.has("StringIds")
        self._cache: dict[int, str | None] = {}
        self._full = False
        self.unresolved = 0  # distinct ids that are not in StringIds (sparse rewritten files)
        self.truncated = 0  # distinct names cut to MAX_NAME_CHARS (``cap_name``)

    def count_cut(self, n: int) -> None:
        """``n`` more names were cut to ``MAX_NAME_CHARS`` (inline text read elsewhere)."""
        with self._lock:
            self.truncated += n

    def lookup(self, ids: Sequence[int]) -> list[str | None]:
        """Strings for distinct ``ids`` (None where the id is absent)."""
        with self._lock:
            return self._lookup(ids)

    def _lookup(self, ids: Sequence[int]) -> list[str | None]:
        want = [int(i) for i in ids if int(i) not in self._cache]
        if want and self.present and not self._full:
            if len(want) >= _FULL_READ_AT:
                data = self.db.read("StringIds", [Col("id", "int"), Col("value", "text")])
                values, cut = cap_names(data.text("value").to_object().tolist())
                self.truncated += cut
                self._cache.update(zip(data.ints("id").tolist(), values))
                self._full = True
            else:
                for i in range(0, len(want), _SQL_CHUNK):
                    chunk = want[i:i + _SQL_CHUNK]
                    marks = ",".join("?" * len(chunk))
                    rows = self.db.rows(  # one character more than kept: tells a long name
                        f'SELECT id, substr(CAST(value AS TEXT), 1, {MAX_NAME_CHARS + 1}) '
                        f'FROM "{self.db.table("StringIds")}" WHERE id IN ({marks})',
                        chunk)
                    values, cut = cap_names([r[1] if r[1] is not None else "" for r in rows])
                    self.truncated += cut
                    self._cache.update(zip((int(r[0]) for r in rows), values))
        out = []
        for i in ids:
            key = int(i)
            if key not in self._cache:
                self._cache[key] = None
                if key >= 0:
                    self.unresolved += 1
            out.append(self._cache[key])
        return out

    def categorical(self, ids: np.ndarray, *, missing: str = "",
                    transform=None) -> pd.Categorical:
        """Categorical of the strings behind an id column (-1 → ``missing``).

        ``transform(str) -> str`` is applied once per distinct string (e.g. suffix stripping).
        Ids absent from StringIds become ``<string #ID>``.
        """
        codes, uniques = pd.factorize(np.asarray(ids, dtype=np.int64), use_na_sentinel=False)
        uniques = np.asarray(uniques, dtype=np.int64)
        values = self.lookup(uniques.tolist())
        labels = []
        for uid, val in zip(uniques.tolist(), values):
            if uid < 0:
                labels.append(missing)
                continue
            text = val if val is not None else f"<string #{uid}>"
            labels.append(transform(text) if transform else text)
        return categorical(np.asarray(codes, dtype=np.int64), labels, missing)


def strip_runtime_suffix(name: str) -> str:
    return RUNTIME_SUFFIX.sub("", name)
