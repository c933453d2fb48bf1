"""A Kineto trace's events, grouped by category into columns, one batch of parsed events at a time
(``EventCollector``): the loader (``loaders/kineto.py``) maps the groups onto the frames.

The batches are the parsed ``traceEvents`` of a trace read at once (slices of its list) or those
of a trace read in pieces (``loaders/kineto_stream.py``): each batch is reduced to columns as it
arrives — names (one string object per distinct name), times, pids, tids, and of the ``args``
only the keys the loader reads for that kind of event (``KIND_ARGS``), as int64 — so only the
columns outlive a batch, never the event dicts (memory: a few dozen bytes per event instead of
the ≈ 1 KB of a parsed event). The columns do not depend on how the events were batched.

Times: ``ts`` minus the trace's first ``ts`` (exact: floats within a factor of two of each other
subtract without rounding), then × 1000 and rounded — integer ns relative to the trace start,
without the 256 ns spacing of float64 ns since the epoch (the µs values themselves carry the
≈ 0.25 µs rounding of float µs since the epoch, which stays).
"""
from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Iterable

import numpy as np
import pandas as pd

from nsys_diag.loaders.kineto_json import floats, ints, triples

CATEGORY_KIND = {
    "kernel": "kernel", "gpu_memcpy": "memcpy", "memcpy": "memcpy", "gpu_memset": "memset",
    "memset": "memset", "cuda_runtime": "runtime", "runtime": "runtime",
    "cuda_driver": "driver", "cuda_sync": "sync", "user_annotation": "annotation",
    "gpu_user_annotation": "gpu_annotation", "cpu_op": "cpu_op", "operator": "cpu_op",
    "python_function": "python",
}
"""Kineto category (lower case; the legacy schema capitalises) → what the loader makes of it."""

_GPU_ARGS = ("correlation", "device", "stream", "context")
KIND_ARGS: dict[str, tuple[str, ...]] = {
    "kernel": (*_GPU_ARGS, "registers per thread", "shared memory", "graph node id"),
    "memcpy": (*_GPU_ARGS, "bytes"),
    "memset": (*_GPU_ARGS, "bytes"),
    "sync": (*_GPU_ARGS, "wait_on_cuda_event_record_corr_id", "wait_on_cuda_event_id",
             "wait_on_stream"),
    "runtime": ("correlation",),
    "driver": ("correlation",),
}
"""The integer ``args`` keys kept per kind (``ints``: -1 where absent or not a number)."""
TRIPLE_ARGS: dict[str, tuple[str, ...]] = {"kernel": ("grid", "block")}
"""The ``[x, y, z]`` ``args`` keys kept per kind (``triples``: (n, 3), -1 rows where absent)."""

MIXED_CLOCK_US = 86_400e6
"""Events more than a day (in µs) from the trace's median time are on another clock (a trace
merged from relative and epoch timestamps): dropped, with a ``mixed_clocks`` warning."""

LEGACY_CATEGORIES = frozenset({"Kernel", "Memcpy", "Memset", "Runtime", "Operator"})
FLOW_PHASES = ("s", "f", "t")
_FLOW_CODE = {ph: i for i, ph in enumerate(FLOW_PHASES)}
WHOLE_BATCH_EVENTS = 200_000
"""Events reduced at a time when the trace was parsed whole (bounds the temporaries)."""
_NO_ARGS: dict = {}


@dataclass
class Group:
    """The complete (``ph: "X"``) events of one loader kind, as columns. ``ts``/``end``: integer
    ns relative to the trace origin; ``pid``/``tid``: ints (-1 when not numeric); ``args``: the
    kind's kept ``args`` keys (``KIND_ARGS``, ``TRIPLE_ARGS``), one int64 column each."""

    name: list[str]
    ts: np.ndarray
    end: np.ndarray
    pid: np.ndarray
    tid: np.ndarray
    args: dict[str, np.ndarray]

    def __len__(self) -> int:
        return len(self.name)

    def arg(self, key: str) -> np.ndarray:
        """The int64 column of one kept ``args`` key (a ``KeyError`` for a key not kept)."""
        return self.args[key]

    def take(self, mask: np.ndarray) -> Group:
        idx = np.flatnonzero(mask).tolist()
        return Group([self.name[i] for i in idx], self.ts[mask], self.end[mask], self.pid[mask],
                     self.tid[mask], {k: v[mask] for k, v in self.args.items()})


@dataclass
class Flows:
    """The flow (``s``/``f``/``t``) events as columns; ``ts`` in float µs as written."""

    ph: list[np.ndarray] = field(default_factory=list)  # int8: the index in FLOW_PHASES
    id: list[np.ndarray] = field(default_factory=list)
    pid: list[np.ndarray] = field(default_factory=list)
    tid: list[np.ndarray] = field(default_factory=list)
    ts: list[np.ndarray] = field(default_factory=list)

    def __len__(self) -> int:
        return sum(len(p) for p in self.ph)


@dataclass
class Events:
    """A whole trace, grouped: ``groups`` by loader kind (``CATEGORY_KIND`` values), the metadata
    events, the flow events (``flows()``: a frame), ``tables`` = events per category as written,
    and what was dropped."""

    groups: dict[str, Group]
    metadata: list[dict]
    flow_columns: Flows
    tables: dict[str, int]
    origin_us: float
    dropped: int = 0
    legacy: bool = False
    unknown: dict[str, int] = field(default_factory=dict)
    mixed_clock: int = 0  # events more than MIXED_CLOCK_US from the median time (dropped)

    @property
    def flow_count(self) -> int:
        return len(self.flow_columns)

    def flows(self) -> pd.DataFrame:
        """The flow events as a frame (ph, id, pid, tid, ts in ns like the groups): what links a
        launch to its GPU work when the events carry no ``correlation`` argument."""
        f = self.flow_columns
        cat = lambda parts: np.concatenate(parts) if parts else np.zeros(0, np.int64)  # noqa: E731
        ts = np.concatenate(f.ts) if f.ts else np.zeros(0)
        ok = np.isfinite(ts)
        return pd.DataFrame({
            "ph": np.array(FLOW_PHASES, dtype=object)[cat(f.ph)[ok]], "id": cat(f.id)[ok],
            "pid": cat(f.pid)[ok], "tid": cat(f.tid)[ok],
            "ts": np.rint((ts[ok] - self.origin_us) * 1000.0).astype(np.int64)})


@dataclass
class _Part:
    """One batch's events of one category, as columns (``ts``/``dur`` float µs as written)."""

    name: list[str]
    ts: np.ndarray
    dur: np.ndarray
    pid: np.ndarray
    tid: np.ndarray
    args: dict[str, np.ndarray]


class EventCollector:
    """The events of a trace, batch by batch (``add``), grouped at the end (``events``)."""

    def __init__(self) -> None:
        self._parts: dict[str, list[_Part]] = {}  # by category, in order of first appearance
        self._names: dict[str, str] = {}
        self._flow_cats: Counter[str] = Counter()
        self.metadata: list[dict] = []
        self.flows = Flows()

    def add(self, events: Iterable) -> None:
        """Reduce one batch of parsed events to columns (one pass over the batch)."""
        by_cat: dict[str, list[dict]] = defaultdict(list)
        flows: list[dict] = []
        for ev in events:  # bounded: one pass over one batch
            if not isinstance(ev, dict):
                continue
            ph = ev.get("ph")
            if ph == "X":
                by_cat[str(ev.get("cat", ""))].append(ev)
            elif ph == "M":
                self.metadata.append(ev)
            elif ph in FLOW_PHASES:
                flows.append(ev)
        for cat, evs in by_cat.items():
            self._parts.setdefault(cat, []).append(self._part(evs, CATEGORY_KIND.get(cat.lower())))
        if flows:
            self._add_flows(flows)

    def _shared(self, names: Iterable[str]) -> list[str]:
        """The names, one string object per distinct name (memory: names repeat)."""
        seen = self._names
        return [seen.setdefault(n, n) for n in names]

    def _part(self, evs: list[dict], kind: str | None) -> _Part:
        ts = floats([e.get("ts") for e in evs])
        if kind is None:  # an unknown category: counted, its times read (the clock check)
            return _Part([], ts, ts[:0], ts[:0].astype(np.int64), ts[:0].astype(np.int64), {})
        args = [a if isinstance(a := e.get("args"), dict) else _NO_ARGS for e in evs]
        kept = {k: ints([a.get(k) for a in args]) for k in KIND_ARGS.get(kind, ())}
        kept.update({k: triples([a.get(k) for a in args]) for k in TRIPLE_ARGS.get(kind, ())})
        return _Part(self._shared(str(e.get("name", "")) for e in evs), ts,
                     floats([e.get("dur", 0) for e in evs]), ints([e.get("pid") for e in evs]),
                     ints([e.get("tid") for e in evs]), kept)

    def _add_flows(self, flows: list[dict]) -> None:
        self._flow_cats.update(c if isinstance(c := f.get("cat", "flow"), str) else str(c)
                               for f in flows)
        fl = self.flows
        fl.ph.append(np.array([_FLOW_CODE[f["ph"]] for f in flows], np.int8))
        fl.id.append(ints([f.get("id") for f in flows]))
        fl.pid.append(ints([f.get("pid") for f in flows]))
        fl.tid.append(ints([f.get("tid") for f in flows]))
        fl.ts.append(floats([f.get("ts") for f in flows]))

    def events(self) -> Events:
        """The grouped trace: every category counted, the complete events of each known kind as
        one ``Group``; events without a finite ``ts`` or with a negative ``dur`` dropped and
        counted, and those of another clock (``MIXED_CLOCK_US``) dropped and counted apart."""
        parts = self._parts
        tables = {cat: sum(len(p.ts) for p in ps) for cat, ps in parts.items()}
        for cat, n in self._flow_cats.items():
            tables[cat] = tables.get(cat, 0) + n
        ts_all = {cat: np.concatenate([p.ts for p in ps]) for cat, ps in parts.items()}
        finite = np.concatenate([t[np.isfinite(t)] for t in ts_all.values()] or [np.zeros(0)])
        center = float(np.median(finite)) if finite.size else 0.0
        mixed = int((np.abs(finite - center) > MIXED_CLOCK_US).sum())
        if mixed:  # another clock's events (µs since the epoch among relative ones, or the reverse)
            ts_all = {c: np.where(np.abs(t - center) > MIXED_CLOCK_US, np.nan, t)
                      for c, t in ts_all.items()}
            finite = finite[np.abs(finite - center) <= MIXED_CLOCK_US]
        origin = float(finite.min()) if finite.size else 0.0
        by_kind: dict[str, list[str]] = defaultdict(list)
        unknown: dict[str, int] = {}
        for cat in parts:
            kind = CATEGORY_KIND.get(cat.lower())
            if kind is None:
                unknown[cat] = tables[cat]
            else:
                by_kind[kind].append(cat)
        groups, dropped = {}, 0
        for kind, cats in by_kind.items():
            groups[kind], d = _group([p for c in cats for p in parts[c]],
                                     np.concatenate([ts_all[c] for c in cats]), origin, kind)
            dropped += d
        dropped = max(0, dropped - mixed)  # the other clock's events are counted on their own
        return Events(groups, self.metadata, self.flows, tables, origin, dropped,
                      legacy=bool(LEGACY_CATEGORIES & set(parts)), unknown=unknown,
                      mixed_clock=mixed)


def _group(parts: list[_Part], ts_us: np.ndarray, origin: float, kind: str) -> tuple[Group, int]:
    """One kind's ``Group`` from its parts (in order), ``ts_us`` their times after the clock
    check; (group, events dropped)."""
    dur = np.concatenate([p.dur for p in parts])
    dur = np.where(np.isnan(dur), 0.0, dur)
    ok = np.isfinite(ts_us) & (dur >= 0) & np.isfinite(dur)
    start = np.rint((np.where(ok, ts_us, origin) - origin) * 1000.0).astype(np.int64)
    end = start + np.rint(np.where(ok, dur, 0.0) * 1000.0).astype(np.int64)
    keys = (*KIND_ARGS.get(kind, ()), *TRIPLE_ARGS.get(kind, ()))
    g = Group([n for p in parts for n in p.name], start, end,
              np.concatenate([p.pid for p in parts]), np.concatenate([p.tid for p in parts]),
              {k: np.concatenate([p.args[k] for p in parts]) for k in keys})
    if ok.all():
        return g, 0
    return g.take(ok), int((~ok).sum())


def group_events(doc: dict) -> Events:
    """``Events`` of a trace parsed whole: its ``traceEvents`` reduced in slices of
    ``WHOLE_BATCH_EVENTS``; ``doc["traceEvents"]`` is emptied as it is read."""
    events, doc["traceEvents"] = doc["traceEvents"], []
    return group_batches(events[i:i + WHOLE_BATCH_EVENTS]
                         for i in range(0, len(events), WHOLE_BATCH_EVENTS))


def group_batches(batches: Iterable[Iterable]) -> Events:
    """``Events`` of a trace whose ``traceEvents`` come in batches (in file order)."""
    c = EventCollector()
    for batch in batches:
        c.add(batch)
    return c.events()


__all__ = ["Group", "Events", "Flows", "EventCollector", "group_events", "group_batches",
           "CATEGORY_KIND", "KIND_ARGS", "TRIPLE_ARGS", "MIXED_CLOCK_US"]
