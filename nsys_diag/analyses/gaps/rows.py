"""The vocabulary and containers of the idle-gap evidence: the name patterns each cause tests (the
CUDA/HIP call families from ``model/api_names.py``, the NVTX, communication and OS-call names here;
``name_mask``: once per *category*, never per row; ``ApiNames``: every API pattern in one pass)
and ``EvidenceRows`` — labelled intervals (ns) with their merged cover, what a cause's precedence
step uses. ``analyses/gaps/evidence.py`` builds each cause's rows from these.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from nsys_diag.analyses.timeline import intervals as iv
from nsys_diag.analyses.steps.detection import normalize_name
from nsys_diag.model.api_names import (ENQUEUE_API_RE, INIT_API_RE, KERNEL_LAUNCH_API_RE,
                                      LAUNCH_API_RE, MEM_API_RE, SYNC_API_RE)

# ------------------------------------------------------------------------------------ names
NON_BLOCKING_SYNC_RE = re.compile(r"Query|WaitEvent|WaitValue")
"""CUPTI synchronization records of calls that never block the host (``cudaEventQuery``,
``cudaStreamQuery``, ``cudaStreamWaitEvent`` — a wait the GPU does): not ``sync`` evidence."""
INIT_RANGE_RE = re.compile(
    r"(?:^(?:cublasCreate\w*|cublasLt\w*Create|cudnnCreate\w*|cusparseCreate\w*|ncclCommInit\w*"
    r"|MPI_Init\w*)$)|nvrtc|nvjitlink|compilefusion|compileprogram", re.IGNORECASE)
"""NVTX ranges of one-off initialisation: handle creation traced by library NVTX, MPI_Init, and
runtime (JIT) compilation (NVRTC, nvJitLink, nvFuser's ``KernelExecutor::compileFusion``)."""
COMM_DOMAINS = frozenset({"mpi", "nccl"})
"""NVTX domains whose every range is host-side communication (nsys ``-t mpi``, NCCL's NVTX)."""
COMM_NAME_RE = re.compile(
    r"^(?:MPI_\w+|nccl\w*|c10d::\w*|torch\.distributed\w*|FSDP::\w*)"
    r"|all_?reduce|all_?gather|reduce_?scatter|broadcast|barrier", re.IGNORECASE)
"""NVTX/API names of collectives and point-to-point communication. ``aten::*`` names never match
(``aten::broadcast_tensors`` is a local op), see ``comm_name_mask``."""
HOST_IO_RE = re.compile(
    r"^(?:read|write|readv|writev|preadv?\w*|pwritev?\w*|fread|fwrite|open\w*|fopen\w*|close"
    r"|fclose|recv\w*|send\w*|accept4?|connect|fsync|fdatasync|sync_file_range|msync)$")
"""OS-runtime file and network calls: the read/write/pread/pwrite/open/close/fsync/send/recv
families. Not poll/select/epoll, sleeps or futex waits: a thread that waits on purpose is no cost
of the data path (the replay's ``host_io`` kind uses the same pattern)."""


ARROW_MIN_CATEGORIES = 2_000
"""From this many distinct names, patterns run in Arrow (RE2) instead of one Python regex per
name (perf: NVTX texts with ``op_id`` suffixes reach a million distinct values)."""


def name_mask(names: pd.Series, rx: re.Pattern, *, exclude: re.Pattern | None = None) -> np.ndarray:
    """Rows whose name matches ``rx`` (``search``: the patterns carry their own anchors) and not
    ``exclude``: one regex test per category, then one take over the codes."""
    cat = names if isinstance(names.dtype, pd.CategoricalDtype) else names.astype("category")
    cats = cat.cat.categories
    hit = _search(cats, rx)
    if exclude is not None:
        hit &= ~_search(cats, exclude)
    # one entry per category plus a trailing False that code -1 (missing name) picks
    return np.append(hit, False)[cat.cat.codes.to_numpy()]


def _search(cats: pd.Index, rx: re.Pattern) -> np.ndarray:
    """Per category: ``rx.search`` finds a match."""
    if len(cats) >= ARROW_MIN_CATEGORIES:
        import pyarrow as pa
        import pyarrow.compute as pc

        try:
            hits = pc.match_substring_regex(pa.array(cats.astype(str), type=pa.string()), rx.pattern,
                                            ignore_case=bool(rx.flags & re.IGNORECASE))
            return np.asarray(hits.to_numpy(zero_copy_only=False), dtype=bool)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):  # a pattern RE2 cannot run
            pass
    return np.fromiter((rx.search(str(c)) is not None for c in cats), bool, len(cats))


API_PATTERNS = {"sync": SYNC_API_RE, "launch": LAUNCH_API_RE, "enqueue": ENQUEUE_API_RE,
                "init": INIT_API_RE, "comm": COMM_NAME_RE, "mem": MEM_API_RE,
                "kernel_launch": KERNEL_LAUNCH_API_RE}
"""The name patterns API rows are classified by."""


class ApiNames:
    """Which of ``API_PATTERNS`` each CUDA API row matches: every pattern tested once per
    category, one take over the codes for all of them (perf, bench: 2M API rows), then one bit
    test per mask."""

    def __init__(self, api: pd.DataFrame):
        self._bits = np.zeros(len(api), np.uint8)
        if not len(api):
            return
        col = api["name"]
        cat = col if isinstance(col.dtype, pd.CategoricalDtype) else col.astype("category")
        table = np.zeros(len(cat.cat.categories) + 1, np.uint8)  # last: code -1, no name
        for i, rx in enumerate(API_PATTERNS.values()):  # six patterns
            table[:-1] |= _search(cat.cat.categories, rx).astype(np.uint8) << i
        self._bits = table[cat.cat.codes.to_numpy()]

    def mask(self, key: str) -> np.ndarray:
        """Rows matching ``API_PATTERNS[key]``."""
        bit = np.uint8(1 << list(API_PATTERNS).index(key))
        return (self._bits & bit) != 0


ATEN_RE = re.compile(r"^aten::")
EMPTY = np.zeros(0, np.int64)


# ------------------------------------------------------------------------------ labelled rows
@dataclass(frozen=True)
class EvidenceRows:
    """Rows of evidence (ns, sorted by start) with a label each (``label`` indexes ``labels``),
    and their union ``cover`` (merged, sorted, disjoint) — what a cause's precedence step uses."""

    starts: np.ndarray
    ends: np.ndarray
    label: np.ndarray
    labels: tuple[str, ...]
    cover: tuple[np.ndarray, np.ndarray] = field(default=(EMPTY, EMPTY))

    @staticmethod
    def build(starts, ends, label, labels, cover=None) -> "EvidenceRows":
        """Rows from arrays in any order; non-empty rows only; ``cover`` when already merged."""
        s, e = np.asarray(starts, np.int64), np.asarray(ends, np.int64)
        lab = np.asarray(label, np.int64)
        keep = e > s
        if not keep.all():
            s, e, lab = s[keep], e[keep], lab[keep]
        if not iv.is_sorted(s):
            order = np.argsort(s, kind="stable")
            s, e, lab = s[order], e[order], lab[order]
        return EvidenceRows(s, e, lab, tuple(labels),
                            cover if cover is not None else iv.merge_intervals(s, e))

    @staticmethod
    def none() -> "EvidenceRows":
        return EvidenceRows(EMPTY, EMPTY, EMPTY, ())

    @staticmethod
    def concat(*parts: "EvidenceRows") -> "EvidenceRows":
        parts = tuple(p for p in parts if p.starts.size)
        if not parts:
            return EvidenceRows.none()
        if len(parts) == 1:
            return parts[0]
        offsets = np.cumsum([0] + [len(p.labels) for p in parts[:-1]])
        return EvidenceRows.build(np.concatenate([p.starts for p in parts]),
                                  np.concatenate([p.ends for p in parts]),
                                  np.concatenate([p.label + o for p, o in zip(parts, offsets)]),
                                  sum((p.labels for p in parts), ()))

    def with_cover(self, cover: tuple[np.ndarray, np.ndarray]) -> "EvidenceRows":
        """The same rows with an already merged ``cover`` of them (perf: no re-merge)."""
        return EvidenceRows(self.starts, self.ends, self.label, self.labels, cover)

    def without(self, other: "EvidenceRows") -> "EvidenceRows":
        """These rows less those with the same (start, end) as a row of ``other`` (a phase that
        is the very NVTX range ``other`` already names)."""
        if not len(self) or not len(other):
            return self
        mine = pd.MultiIndex.from_arrays([self.starts, self.ends])
        dup = mine.isin(pd.MultiIndex.from_arrays([other.starts, other.ends]))
        if not dup.any():
            return self
        return EvidenceRows.build(self.starts[~dup], self.ends[~dup], self.label[~dup], self.labels)

    def __len__(self) -> int:
        return int(self.starts.size)

    def best(self, gs: int, ge: int) -> tuple[str, int] | None:
        """(label, overlap ns) of the row overlapping ``[gs, ge)`` the most; None when none does."""
        a, ov = self.overlaps(gs, ge)
        if ov.size == 0 or ov.max() <= 0:
            return None
        j = int(np.argmax(ov))
        return self.labels[int(self.label[a + j])], int(ov[j])

    def overlaps(self, gs: int, ge: int) -> tuple[int, np.ndarray]:
        """(a, ov): the overlap (ns, ≤ 0 for none) with ``[gs, ge)`` of rows ``a, a+1, …`` — only
        the rows that can overlap it (rows sorted by start, cut by the longest row)."""
        if not self.starts.size:
            return 0, EMPTY
        a = int(np.searchsorted(self.starts, gs - self.longest_ns(), side="left"))
        b = int(np.searchsorted(self.starts, ge, side="left"))
        return a, np.minimum(self.ends[a:b], ge) - np.maximum(self.starts[a:b], gs)

    def longest_ns(self) -> int:
        """The longest row (ns; 0 when empty), computed once."""
        cache = self.__dict__.setdefault("_cache", {})  # frozen: no attribute assignment
        if "longest" not in cache:
            cache["longest"] = int((self.ends - self.starts).max()) if self.starts.size else 0
        return cache["longest"]

    def weights(self, ps: np.ndarray, pe: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per label: (ns of the merged pieces ``ps``/``pe`` its rows cover, rows that cover
        any). Rows of one label that overlap each other count their common time twice (an
        upper bound; used to name the strongest evidence, capped by the caller)."""
        n = len(self.labels)
        if not self.starts.size or not ps.size:
            return np.zeros(n, np.int64), np.zeros(n, np.int64)
        cov = iv.covered_length_per_window_merged(ps, pe, self.starts, self.ends)
        return (np.bincount(self.label, weights=cov, minlength=n).astype(np.int64),
                np.bincount(self.label, weights=cov > 0, minlength=n).astype(np.int64))


def labelled(frame: pd.DataFrame, mask: np.ndarray, column: str, fmt: str, *,
             end: np.ndarray | None = None, start: np.ndarray | None = None) -> EvidenceRows:
    """Rows of ``frame`` selected by ``mask``, labelled ``fmt.format(value of column)`` (NVTX
    ``, op_id = N`` suffixes stripped), formatted once per distinct value the rows use."""
    if not len(frame) or not mask.any():
        return EvidenceRows.none()
    col = frame[column]
    cat = col if isinstance(col.dtype, pd.CategoricalDtype) else col.astype("category")
    codes = cat.cat.codes.to_numpy()[mask].astype(np.int64)  # perf: only the kept rows widened
    used, codes = np.unique(codes, return_inverse=True)
    cats = cat.cat.categories
    labels = tuple(fmt.format(normalize_name(cats[c]) if c >= 0 else "?") for c in used)
    s = frame["start_ns"].to_numpy(np.int64)[mask] if start is None else start
    e = frame["end_ns"].to_numpy(np.int64)[mask] if end is None else end
    return EvidenceRows.build(s, e, codes, labels)


def fixed(starts, ends, text: str) -> EvidenceRows:
    """Rows that all carry one label."""
    s = np.asarray(starts, np.int64)
    return EvidenceRows.build(s, ends, np.zeros(s.size, np.int64), (text,))
