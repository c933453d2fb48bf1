"""Per-kernel-name summary (the nsys ``cuda_gpu_kern_sum`` table, plus category and Tensor Cores).

Definitions
-----------
* Duration of a kernel = ``end_ns - start_ns`` (ns). With ``window=(start, end)`` only kernels
  overlapping ``[start, end)`` are kept, with their **full** durations (as nsys stats does with a
  time filter).
* ``share`` = the name's total duration / Σ durations of all kept kernels — a share of *kernel time*
  (nsys "Time(%)"), not of wall time; concurrent kernels may make Σ exceed the busy time.
* Category and Tensor Core flag come from ``kernel_catalog`` (name heuristic), classified once per
  unique name.
* Small kernels: duration < ``th.small_kernel_ns`` (nsys-ai's 10 µs rule): their fraction of all
  kernel launches and their share of kernel time.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from nsys_diag.analyses.timeline.arrays import take_rows, unique_ints
from nsys_diag.analyses.engine.declaration import Declaration, FinishContext, declare
from nsys_diag.model.jsonsafe import fnum, ratio
from nsys_diag.analyses.kernels.catalog import CATEGORIES, catalogue
from nsys_diag.model.thresholds import Thresholds
from nsys_diag.model.schema_types import List, Obj
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the span type only: the engine's context imports the analyses
    from nsys_diag.analyses.engine.context import ChunkInputs

UNNAMED = "(unnamed)"
"""Name used for kernels whose name is missing."""

NAME_TABLE_COLUMNS = ("name", "short_name", "count", "total_ns", "mean_ns", "median_ns", "min_ns",
                      "max_ns", "p10_ns", "p90_ns", "share", "category", "tensor_core", "tc_basis",
                      "tc_evidence")


def filter_window(frame: pd.DataFrame, window) -> pd.DataFrame:
    """Rows of a GPU-op frame overlapping ``[window[0], window[1])``; the frame itself if None."""
    if window is None or frame.empty:
        return frame
    lo, hi = int(window[0]), int(window[1])
    keep = (frame["start_ns"].to_numpy() < hi) & (frame["end_ns"].to_numpy() > lo)
    return frame.loc[keep]


def kernel_name_stats(kernels: pd.DataFrame) -> pd.DataFrame:
    """One row per kernel name (``NAME_TABLE_COLUMNS``), sorted by ``total_ns`` descending.

    Vectorised: one grouping on the name's category codes; the catalogue runs once per name.
    ``mean_ns``/``median_ns`` are rounded to integer ns; ``p10_ns``/``p90_ns`` are launch
    durations of the name (``quantiles_in_place``).
    """
    if kernels.empty:
        return empty_name_table()
    dur = kernels["end_ns"].to_numpy(dtype=np.int64) - kernels["start_ns"].to_numpy(dtype=np.int64)
    return _name_stats(kernels, dur)


def quantiles_in_place(x: np.ndarray) -> tuple[float, int, int]:
    """(median, p10, p90) of a non-empty int array that may be reordered (no copy; one partition).
    The median as pandas' groupby median computes it (the middle value, or the mean of the two
    middle values); p10 and p90 are durations that occur (nearest rank): the sorted values at
    ``floor(0.1·(n−1))`` and ``ceil(0.9·(n−1))``."""
    n = x.size
    lo = (n - 1) // 10  # floor(0.1·(n−1)) in integers; hi = ceil(0.9·(n−1))
    hi = n - 1 - lo
    a, b = (n // 2, n // 2) if n % 2 else (n // 2 - 1, n // 2)  # the middle one or two
    x.partition(sorted({lo, hi, a, b}))
    med = (float(x[a]) + float(x[b])) / 2
    return med, int(x[lo]), int(x[hi])


def group_stats(codes: np.ndarray, dur: np.ndarray) -> dict[str, np.ndarray]:
    """Per distinct code, in order of first appearance (pandas ``groupby(sort=False)``):
    ``code``, ``first_row``, ``count``, ``sum``, ``min``, ``max``, ``p10``, ``p90`` (int64) and
    ``median`` (float64, as pandas computes it: the middle value, or the mean of the two middle
    values); ``quantiles_in_place``.

    perf (bench): a stable (radix) argsort of the small-int codes gathers each name's durations
    once; ``reduceat`` and an in-place partition per name replace a pandas groupby with five
    aggregations on 2M rows.
    """
    order = np.argsort(codes, kind="stable")
    sc = codes[order]
    sd = dur[order]
    bounds = np.flatnonzero(sc[1:] != sc[:-1]) + 1
    first = np.concatenate(([0], bounds))
    stop = np.concatenate((bounds, [sc.size]))
    out = {"code": sc[first].astype(np.int64), "first_row": order[first].astype(np.int64),
           "count": (stop - first).astype(np.int64), "sum": np.add.reduceat(sd, first),
           "min": np.minimum.reduceat(sd, first), "max": np.maximum.reduceat(sd, first)}
    # last: the partition reorders sd within each name's slice
    q = np.array([quantiles_in_place(sd[a:b]) for a, b in  # one slice per name
                  zip(first.tolist(), stop.tolist())], np.float64).reshape(-1, 3)
    out.update(median=q[:, 0], p10=q[:, 1].astype(np.int64), p90=q[:, 2].astype(np.int64))
    appearance = np.argsort(out["first_row"], kind="stable")
    return {k: v[appearance] for k, v in out.items()}


def _name_stats(kernels: pd.DataFrame, dur: np.ndarray) -> pd.DataFrame:
    """``kernel_name_stats`` of a non-empty frame whose durations (ns) are already computed."""
    names = kernels["name"]
    if not isinstance(names.dtype, pd.CategoricalDtype):
        names = names.astype("category")
    shorts = kernels["short_name"]
    if not isinstance(shorts.dtype, pd.CategoricalDtype):
        shorts = shorts.astype("category")
    codes = names.cat.codes.to_numpy()
    g = group_stats(codes, dur)
    short_code = shorts.cat.codes.to_numpy()[g["first_row"]]

    code_arr = g["code"]
    cat_names = np.asarray(names.cat.categories, dtype=object)
    cat_shorts = np.asarray(shorts.cat.categories, dtype=object)
    name_vals = np.where(code_arr >= 0, cat_names[np.maximum(code_arr, 0)] if len(cat_names) else "",
                         UNNAMED).astype(object)
    short_vals = np.where(short_code >= 0,
                          cat_shorts[np.maximum(short_code, 0)] if len(cat_shorts) else "",
                          "").astype(object)
    return table_from_groups(g, name_vals, short_vals)


def table_from_groups(g: dict[str, np.ndarray], name_vals: np.ndarray, short_vals: np.ndarray
                      ) -> pd.DataFrame:
    """The name table (``NAME_TABLE_COLUMNS``, sorted by ``total_ns`` descending, then name) from
    ``group_stats`` output and each group's name and short name (object arrays). Shared by the
    in-memory table and the chunked merge (``kernels/table.py``)."""
    total = g["sum"]
    count = g["count"]
    grand = int(total.sum())
    cat = catalogue(name_vals, short_vals)
    out = pd.DataFrame({
        "name": name_vals,
        "short_name": short_vals,
        "count": count,
        "total_ns": total,
        "mean_ns": np.rint(total / np.maximum(count, 1)).astype(np.int64),
        "median_ns": np.rint(g["median"]).astype(np.int64),
        "min_ns": g["min"],
        "max_ns": g["max"],
        "p10_ns": g["p10"],
        "p90_ns": g["p90"],
        "share": total / grand if grand > 0 else np.zeros(len(total)),
        "category": cat["category"].to_numpy(),
        "tensor_core": cat["tensor_core"].to_numpy(dtype=bool),
        "tc_basis": cat["tc_basis"].to_numpy(),
        "tc_evidence": cat["tc_evidence"].to_numpy(),
    })
    return out.sort_values(["total_ns", "name"], ascending=[False, True],
                           kind="stable").reset_index(drop=True)


def empty_name_table() -> pd.DataFrame:
    ints = {c: np.array([], dtype=np.int64) for c in ("count", "total_ns", "mean_ns", "median_ns",
                                                      "min_ns", "max_ns", "p10_ns", "p90_ns")}
    return pd.DataFrame({
        "name": np.array([], dtype=object), "short_name": np.array([], dtype=object), **ints,
        "share": np.array([], dtype=float), "category": np.array([], dtype=object),
        "tensor_core": np.array([], dtype=bool), "tc_basis": np.array([], dtype=object),
        "tc_evidence": np.array([], dtype=object),
    })[list(NAME_TABLE_COLUMNS)]


NCU_EVIDENCE_COLUMNS = ("tensor_pipe_pct", "sm_throughput_pct")
"""Per-name columns only an ncu CSV read alone gives (``kernels/ncu_kernels.py``): its tensor-pipe
and SM-throughput readings, % of peak (duration-weighted over the launches)."""


@dataclass(frozen=True)
class KernelsResult:
    """Kernel summary. Times in integer ns; ``share`` fractions of total kernel time (0..1).

    ``table`` holds **every** name (``NAME_TABLE_COLUMNS``); ``to_json`` keeps the top ``max_rows``.
    ``categories`` has one row per category present: category, count, total_ns, share, tc_ns.
    """

    table: pd.DataFrame
    categories: pd.DataFrame
    kernel_count: int
    total_ns: int
    small_kernel_ns: int
    small_count: int
    small_total_ns: int
    max_rows: int = 200
    window: tuple[int, int] | None = None
    device_ids: tuple[int, ...] = field(default_factory=tuple)

    @property
    def available(self) -> bool:
        return self.kernel_count > 0

    @property
    def names_total(self) -> int:
        """Number of distinct kernel names."""
        return int(len(self.table))

    @property
    def small_fraction(self) -> float | None:
        """Fraction of kernel launches shorter than ``small_kernel_ns`` (None without kernels)."""
        return ratio(self.small_count, self.kernel_count)

    @property
    def small_time_share(self) -> float | None:
        """Share of kernel time spent in kernels shorter than ``small_kernel_ns``."""
        return ratio(self.small_total_ns, self.total_ns)

    def category_share(self, category: str) -> float:
        """Share of kernel time in one category (0 when absent)."""
        rows = self.categories[self.categories["category"] == category]
        return float(rows["share"].sum()) if len(rows) else 0.0

    def to_json(self) -> dict:
        top = self.table.head(self.max_rows).to_dict("records")  # ≤ max_rows names
        rows = [
            {
                "name": str(r["name"]), "short_name": str(r["short_name"]),
                "count": int(r["count"]), "total_ns": int(r["total_ns"]),
                "mean_ns": int(r["mean_ns"]), "median_ns": int(r["median_ns"]),
                "min_ns": int(r["min_ns"]), "max_ns": int(r["max_ns"]),
                "p10_ns": int(r["p10_ns"]), "p90_ns": int(r["p90_ns"]),
                "share": fnum(r["share"]), "category": str(r["category"]),
                "tensor_core": bool(r["tensor_core"]), "tc_basis": str(r["tc_basis"]),
                "tc_evidence": str(r["tc_evidence"]),
            }
            for r in top
        ]
        for key in NCU_EVIDENCE_COLUMNS:  # an ncu CSV read alone: each kernel's counters
            if key in self.table.columns:
                for row, r in zip(rows, top):
                    row[key] = fnum(r[key])
        cats = [
            {"category": str(r["category"]), "count": int(r["count"]),
             "total_ns": int(r["total_ns"]), "share": fnum(r["share"]),
             "tensor_core_ns": int(r["tc_ns"])}
            for r in self.categories.to_dict("records")
        ]
        return {
            "kernels": rows,
            "kernels_total": self.names_total,
            "kernel_categories": cats,
            "kernel_summary": {
                "count": int(self.kernel_count),
                "total_ns": int(self.total_ns),
                "names": self.names_total,
                "small_kernel_ns": int(self.small_kernel_ns),
                "small_count": int(self.small_count),
                "small_fraction": self.small_fraction,
                "small_time_share": self.small_time_share,
                "window": None if self.window is None else [int(self.window[0]),
                                                            int(self.window[1])],
            },
        }


def _category_table(table: pd.DataFrame) -> pd.DataFrame:
    if table.empty:
        return pd.DataFrame({"category": np.array([], dtype=object),
                             "count": np.array([], dtype=np.int64),
                             "total_ns": np.array([], dtype=np.int64),
                             "share": np.array([], dtype=float),
                             "tc_ns": np.array([], dtype=np.int64)})
    tc_ns = np.where(table["tensor_core"].to_numpy(), table["total_ns"].to_numpy(), 0)
    frame = table[["category", "count", "total_ns"]].assign(tc_ns=tc_ns)
    agg = frame.groupby("category", sort=False)[["count", "total_ns", "tc_ns"]].sum()
    grand = int(table["total_ns"].sum())
    agg["share"] = agg["total_ns"] / grand if grand > 0 else 0.0
    agg = agg.reset_index()
    order = {c: i for i, c in enumerate(CATEGORIES)}
    agg["_o"] = agg["category"].map(order).fillna(len(order))
    agg = agg.sort_values(["total_ns", "_o"], ascending=[False, True], kind="stable")
    return agg[["category", "count", "total_ns", "share", "tc_ns"]].reset_index(drop=True).astype(
        {"count": np.int64, "total_ns": np.int64, "tc_ns": np.int64, "share": float})


def analyze_kernels(kernels: pd.DataFrame, *, th: Thresholds, max_rows: int = 200,
                    window: tuple[int, int] | None = None) -> KernelsResult:
    """Summarise kernels (a ``KERNELS`` frame) per name; see the module docstring."""
    k = filter_window(kernels, window)
    dur = k["end_ns"].to_numpy(dtype=np.int64) - k["start_ns"].to_numpy(dtype=np.int64)
    table = _name_stats(k, dur) if len(k) else empty_name_table()
    devices = tuple(sorted(unique_ints(k["device_id"].to_numpy()))) if len(k) else ()
    return kernels_result(table, dur, devices, th=th, max_rows=max_rows, window=window)


def kernels_result(table: pd.DataFrame, dur: np.ndarray, devices: tuple[int, ...], *,
                   th: Thresholds, max_rows: int = 200,
                   window: tuple[int, int] | None = None) -> KernelsResult:
    """The ``KernelsResult`` of a name table and every kept kernel's duration (ns, int64):
    categories, counts and the small-kernel figures (shared with ``kernels/table.py``)."""
    small = dur < int(th.small_kernel_ns)
    return result_of_counts(table, (int(dur.size), int(dur.sum()), int(small.sum()),
                                    int(dur.sum(where=small))), devices, th=th,
                            max_rows=max_rows, window=window)


def result_of_counts(table: pd.DataFrame, counts: tuple[int, int, int, int],
                     devices: tuple[int, ...], *, th: Thresholds, max_rows: int = 200,
                     window: tuple[int, int] | None = None) -> KernelsResult:
    """The ``KernelsResult`` of a name table and ``counts``: (kernels, their total ns, kernels
    shorter than ``th.small_kernel_ns``, those kernels' total ns)."""
    n, total, small_n, small_total = counts
    return KernelsResult(
        table=table,
        categories=_category_table(table),
        kernel_count=int(n),
        total_ns=int(total),
        small_kernel_ns=int(th.small_kernel_ns),
        small_count=int(small_n),
        small_total_ns=int(small_total),
        max_rows=int(max_rows),
        window=None if window is None else (int(window[0]), int(window[1])),
        device_ids=devices,
    )


# ---------------------------------------------------------------------- streamed: partial per span, merge
# The kernel table (``analyze_kernels``) of a process from its chunks: ``partial_kernels`` per
# chunk, ``merge_kernels`` at the end — the same ``KernelsResult`` the in-memory suite computes
# (``suite._kernel_table``: the kernels **overlapping** the analysed window, full durations).
#
# Each kernel is counted once, by the chunk that owns it (start in ``[lo, hi)``, ``ChunkInputs.owned``)
# and only if it overlaps the process's window, as ``suite._in_window`` keeps it.
#
# Memory: exact per-name medians (``median_ns``) need every duration, so a part keeps its owned
# kernels' durations grouped by name (uint32 when every kernel of the chunk is shorter than
# 4.29 s, else int64: 4 bytes per kernel, ≈ 4 MB per million kernels) with a count per name —
# **the one O(kernels) state of streaming** (the steps' kernel counts, ``engine/globals.py``, are
# O(steps)). Everything else in a part is O(names). The chunk sorts its own durations by name
# (a radix sort of small codes); ``merge_kernels`` unifies the name lists (in chunk order, so a
# name's first appearance — and the short name it takes from its first row — is the in-memory
# one when rows are in time order, as nsys writes them), gathers each name's slices of every
# part into one array (4 more bytes per kernel: the merge holds 8 per kernel at its peak) and
# reduces each name's run as ``group_stats`` does (sum, min, max, in-place quantiles).
@dataclass(frozen=True)
class KernelsPart:
    """One chunk's owned window kernels: ``names`` (None for a missing name), ``shorts`` (the
    short name of each name's first row), ``first_rows`` (that row in the chunk) and ``counts``
    (kernels) per local code; ``dur_ns`` (uint32 when every duration fits, else int64) per
    kernel, grouped by local code (``counts[0]`` durations of code 0 first…); the devices."""

    names: tuple[str | None, ...]
    shorts: tuple[str, ...]
    first_rows: np.ndarray
    counts: np.ndarray
    dur_ns: np.ndarray
    devices: tuple[int, ...]

    @property
    def kernels(self) -> int:
        """Kernels the part holds."""
        return int(self.dur_ns.size)

    @property
    def nbytes(self) -> int:
        """Bytes held by the per-kernel array (4 per kernel; 8 when a kernel runs ≥ 4.29 s)."""
        return int(self.dur_ns.nbytes)


def empty_kernels_part() -> KernelsPart:
    """A part without kernels."""
    return KernelsPart((), (), np.zeros(0, np.int64), np.zeros(0, np.int64),
                       np.zeros(0, np.int64), ())


def window_kernels(ci: ChunkInputs, *, owned_only: bool) -> pd.DataFrame:
    """The chunk's kernels that overlap the process's window (``suite._in_window``): the owned
    ones (``owned_only``: each kernel once over all chunks) or every one the chunk sees."""
    k = ci.owned("kernels") if owned_only else ci.frames["kernels"]
    if not len(k):
        return k
    s = k["start_ns"].to_numpy(np.int64)
    e = k["end_ns"].to_numpy(np.int64)
    keep = (s < ci.window.end_ns) & (e > ci.window.start_ns)
    return k if keep.all() else k.loc[keep].reset_index(drop=True)


def _categorical(col: pd.Series) -> pd.Series:
    return col if isinstance(col.dtype, pd.CategoricalDtype) else col.astype("category")


U32_MAX = int(np.iinfo(np.uint32).max)
"""Durations up to this many ns (4.29 s) are kept as ``uint32`` (4 bytes per kernel)."""


def partial_kernels(ci: ChunkInputs) -> KernelsPart:
    """The chunk's share of the kernel table (see the comment above ``KernelsPart``)."""
    k = window_kernels(ci, owned_only=True)
    if not len(k):
        return empty_kernels_part()
    names = _categorical(k["name"])
    shorts = _categorical(k["short_name"])
    raw = names.cat.codes.to_numpy().astype(np.int64)
    # local codes: the categories present, plus one code for a missing name
    present, first, local = np.unique(raw, return_index=True, return_inverse=True)
    local = local.reshape(-1)
    cats = np.asarray(names.cat.categories, dtype=object)
    s_codes = shorts.cat.codes.to_numpy()[first]
    s_cats = np.asarray(shorts.cat.categories, dtype=object)
    name_list = tuple(None if c < 0 else str(cats[c]) for c in present.tolist())
    short_list = tuple("" if c < 0 else str(s_cats[c]) for c in s_codes.tolist())
    dur = k["end_ns"].to_numpy(np.int64) - k["start_ns"].to_numpy(np.int64)
    if dur.size and 0 <= int(dur.min()) and int(dur.max()) <= U32_MAX:
        dur = dur.astype(np.uint32)  # kept across chunks: 4 bytes when every kernel < 4.29 s
    # perf: a radix sort (16-bit keys) groups the durations by name in O(kernels)
    key = local.astype(np.uint16) if present.size <= 1 << 16 else local
    dur = dur[np.argsort(key, kind="stable")]
    counts = np.bincount(local, minlength=present.size).astype(np.int64)
    devices = tuple(sorted(unique_ints(k["device_id"].to_numpy())))
    return KernelsPart(name_list, short_list, first.astype(np.int64), counts, dur, devices)


def _unify(parts: list[KernelsPart]):
    """(global names, their short names, each global code's (first part, first row), and per
    slice of a part — one per local code, parts in order — its global code): a name's global
    code and short name come from the first part holding it."""
    index: dict[str | None, int] = {}
    shorts: list[str] = []
    firsts: list[tuple[int, int]] = []
    seg_codes = []
    for pi, p in enumerate(parts):  # one per chunk
        remap = np.empty(len(p.names), np.int64)
        for i, (n, s) in enumerate(zip(p.names, p.shorts)):  # O(names) per chunk
            if n not in index:
                index[n] = len(index)
                shorts.append(s)
                firsts.append((pi, int(p.first_rows[i])))
            remap[i] = index[n]
        seg_codes.append(remap)
    return tuple(index), tuple(shorts), firsts, np.concatenate(seg_codes)


def _small_mask(dur: np.ndarray, limit: int) -> np.ndarray:
    """``dur < limit`` without widening a uint32 array (nor overflowing on ``limit``)."""
    if dur.dtype == np.uint32 and not 0 < limit <= U32_MAX:
        return np.full(dur.size, limit > U32_MAX)
    return dur < (np.uint32(limit) if dur.dtype == np.uint32 else limit)


def _slice_stats(x: np.ndarray) -> tuple[int, int, int, float, int, int]:
    """(sum, min, max, median, p10, p90) of one name's durations (reordered in place; sum in
    int64)."""
    return (int(x.sum(dtype=np.int64)), int(x.min()), int(x.max())) + quantiles_in_place(x)


def merged_groups(parts: list[KernelsPart]):
    """(global names, short names, ``group_stats``-like output in order of first appearance,
    every duration grouped by name) of non-empty parts (see the comment above ``KernelsPart``)."""
    names, shorts, firsts, seg_code = _unify(parts)
    seg_len = np.concatenate([p.counts for p in parts])
    seg_part = np.repeat(np.arange(len(parts)), [p.counts.size for p in parts])
    seg_at = np.concatenate([np.cumsum(p.counts) - p.counts for p in parts])
    order = np.argsort(seg_code, kind="stable").tolist()  # per name, its slices in part order
    dur = np.concatenate([parts[seg_part[i]].dur_ns[seg_at[i]:seg_at[i] + seg_len[i]]
                          for i in order])  # one slice per (part, name): O(names × chunks)
    count = np.bincount(seg_code, weights=seg_len, minlength=len(names)).astype(np.int64)
    stop = np.cumsum(count)
    first = stop - count
    # per name, on its slice in place: an int64 reduceat would first widen every duration
    stats = np.array([_slice_stats(dur[a:b]) for a, b in  # one slice per name
                      zip(first.tolist(), stop.tolist())], dtype=object).reshape(-1, 6)
    g = {"count": count, "sum": stats[:, 0].astype(np.int64), "min": stats[:, 1].astype(np.int64),
         "max": stats[:, 2].astype(np.int64), "median": stats[:, 3].astype(np.float64),
         "p10": stats[:, 4].astype(np.int64), "p90": stats[:, 5].astype(np.int64)}
    appearance = np.lexsort((np.array([r for _, r in firsts], np.int64),
                             np.array([p for p, _ in firsts], np.int64)))
    g = {k: v[appearance] for k, v in g.items()}
    g["code"] = appearance.astype(np.int64)
    return names, shorts, g, dur


def merge_kernels(parts: list[KernelsPart], *, th: Thresholds, max_rows: int = 200
                  ) -> KernelsResult:
    """The process's ``KernelsResult`` from its chunks' parts (in chunk order); ``max_rows`` is
    ``AnalyzeOptions.max_rows`` as the suite passes it."""
    kept = [p for p in parts if p.dur_ns.size]
    if not kept:
        return result_of_counts(empty_name_table(), (0, 0, 0, 0), (), th=th, max_rows=max_rows)
    devices = tuple(sorted({d for p in parts for d in p.devices}))
    names, shorts, g, dur = merged_groups(kept)
    name_arr = np.array([UNNAMED if n is None else n for n in names], dtype=object)
    short_arr = np.array(shorts, dtype=object)
    table = table_from_groups(g, name_arr[g["code"]], short_arr[g["code"]])
    small = _small_mask(dur, int(th.small_kernel_ns))
    counts = (int(dur.size), int(g["sum"].sum()), int(np.count_nonzero(small)),
              int(dur.sum(where=small, dtype=np.int64)))
    return result_of_counts(table, counts, devices, th=th, max_rows=max_rows)


# -------------------------------------------------------------------------------- declaration
def _finish_kernels(states, ctx: FinishContext) -> KernelsResult:
    return merge_kernels(list(states), th=ctx.th, max_rows=ctx.options.max_rows)


def in_window(df: pd.DataFrame, window) -> pd.DataFrame:
    """The rows of ``df`` overlapping ``window`` (start before its end, end after its start)."""
    s = df["start_ns"].to_numpy(np.int64)
    e = df["end_ns"].to_numpy(np.int64)
    keep = (s < window.end_ns) & (e > window.start_ns)
    return take_rows(df, keep)


def window_kernel_table(kernels: pd.DataFrame, window, th: Thresholds, max_rows: int):
    """(kernels overlapping the window, ``analyze_kernels`` of them): the in-memory task."""
    k_win = in_window(kernels, window) if len(kernels) else kernels
    return k_win, analyze_kernels(k_win, th=th, max_rows=max_rows)


KERNELS_SPEC = List(Obj({"name": "str", "short_name": "str", "count": "int", "total_ns": "int",
                    "mean_ns": "int", "median_ns": "int", "max_ns": "int", "p10_ns": "int?",
                    "p90_ns": "int?", "share": "share?", "category": "str", "tensor_core": "bool"},
                   carried={"min_ns": "int", "tc_basis": "str", "tc_evidence": "str",
                            "tensor_pipe_pct": "num?", "sm_throughput_pct": "num?"},
                   optional=("tensor_pipe_pct", "sm_throughput_pct")),
               per_process=True)
"""The ``kernels`` section of the analysis JSON (model/schema_types.py)."""

KERNEL_TABLE = declare(Declaration(
    "kernel_table", section="kernels", spec=KERNELS_SPEC,
    partial=lambda span, **_: partial_kernels(span),
    finish=_finish_kernels, pooled=True, rank=0,
    whole=lambda p: window_kernel_table(p.frames["kernels"], p.window, p.th, p.options.max_rows)))
"""The kernel table of the analysed window (the ``kernels`` section; in memory the window's
kernel rows come with it, which later tasks read)."""
