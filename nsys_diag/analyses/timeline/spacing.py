"""The spacing of a sampled series (GPU metrics, Tensor Active) kept per chunk and merged: the
median sample period of the whole series from each chunk's first and last timestamps and its
distinct positive spacings (ns) with their counts — exact, whatever the chunks."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Spacing:
    """Sorted timestamps of one sample series in one chunk: first, last, and the distinct
    positive spacings (ns) with their counts."""

    first: int
    last: int
    values: np.ndarray
    counts: np.ndarray


def spacing_of(ts: np.ndarray) -> Spacing | None:
    if not ts.size:
        return None
    t = np.sort(ts)
    d = np.diff(t)
    values, counts = np.unique(d[d > 0], return_counts=True)
    return Spacing(int(t[0]), int(t[-1]), values.astype(np.int64), counts.astype(np.int64))


def median_spacing(series: list[Spacing | None]) -> int | None:
    """``int(np.median(positive diffs))`` of the series' timestamps all together (chunks in time
    order); None without any positive spacing."""
    vals, cnts, prev = [], [], None
    for s in series:  # one per chunk
        if s is None:
            continue
        if prev is not None and s.first > prev:
            vals.append(np.array([s.first - prev], np.int64))
            cnts.append(np.ones(1, np.int64))
        vals.append(s.values)
        cnts.append(s.counts)
        prev = s.last
    if not vals:
        return None
    v, c = np.concatenate(vals), np.concatenate(cnts)
    n = int(c.sum())
    if n == 0:
        return None
    order = np.argsort(v, kind="stable")
    v, cum = v[order], np.cumsum(c[order])
    hi = int(v[np.searchsorted(cum, n // 2 + 1)])  # the (n//2)-th value, 0-based
    if n % 2:
        return hi
    lo = int(v[np.searchsorted(cum, n // 2)])  # the (n//2 - 1)-th value
    return int((float(lo) + float(hi)) / 2)
