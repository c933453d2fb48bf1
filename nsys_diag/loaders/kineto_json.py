"""Reading a PyTorch profiler (Kineto) Chrome-trace JSON: detection, bounded read, parse, and
the events grouped by category into columns (``loaders/kineto.py`` maps them onto the frames).

What torch.profiler writes (``prof.export_chrome_trace`` or ``tensorboard_trace_handler``,
``*.json``, ``*.pt.trace.json``, optionally gzip-compressed): one object with ``traceEvents``
(``ph: "X"`` complete events with ``cat``, ``name``, ``pid``, ``tid``, ``ts`` and ``dur`` in
float µs, ``args``; ``ph: "M"`` thread/process names; ``ph: "s"/"f"`` flows), and beside it
``schemaVersion``, ``deviceProperties``, ``distributedInfo``, ``baseTimeNanoseconds``.
Categories of the current schema: ``kernel``, ``gpu_memcpy``, ``gpu_memset``, ``cuda_runtime``,
``cuda_driver``, ``cuda_sync``, ``cpu_op``, ``user_annotation``, ``gpu_user_annotation``,
``python_function``, flows ``ac2g``; the PyTorch 1.8–1.9 schema spells them ``Kernel``,
``Memcpy``, ``Memset``, ``Runtime``, ``Operator`` and its flows ``async``.

Detection is by content: the first bytes (gunzipped when they carry the gzip magic) open a JSON
object that names one of the Kineto top-level keys. Parsing uses ``orjson`` when installed
(``pip install nsys-diag[kineto]``) and the standard ``json`` module otherwise.
Times: ``ts`` minus the trace's first ``ts`` (exact: floats within a factor of two of each other
subtract without rounding), then × 1000 and rounded — integer ns relative to the trace start,
without the 256 ns spacing of float64 ns since the epoch (the µs values themselves carry the
≈ 0.25 µs rounding of float µs since the epoch, which stays).
"""
from __future__ import annotations

import gzip
import json
import re
import zlib
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from nsys_diag.loaders.sniff import GZIP_MAGIC, KINETO_SUFFIXES, looks_like_kineto
from nsys_diag.model.errors import InputError, UnrecognizedFormatError
from nsys_diag.model.safe_files import open_regular
from nsys_diag.model.vocabulary import HINT_KINETO_CAPTURE

MAX_KINETO_BYTES = 4 << 30
"""The most (decompressed) bytes read from one trace; a larger one is refused with this cap."""

CATEGORY_KIND = {
    "kernel": "kernel", "gpu_memcpy": "memcpy", "memcpy": "memcpy", "gpu_memset": "memset",
    "memset": "memset", "cuda_runtime": "runtime", "runtime": "runtime",
    "cuda_driver": "driver", "cuda_sync": "sync", "user_annotation": "annotation",
    "gpu_user_annotation": "gpu_annotation", "cpu_op": "cpu_op", "operator": "cpu_op",
    "python_function": "python",
}
"""Kineto category (lower case; the legacy schema capitalises) → what the loader makes of it."""

MIXED_CLOCK_US = 86_400e6
"""Events more than a day (in µs) from the trace's median time are on another clock (a trace
merged from relative and epoch timestamps): dropped, with a ``mixed_clocks`` warning."""

LEGACY_CATEGORIES = frozenset({"Kernel", "Memcpy", "Memset", "Runtime", "Operator"})
FLOW_PHASES = ("s", "f", "t")
_TRAILING_INT = re.compile(r"(-?\d+)\s*$")


def _parse(data: bytes) -> Any:
    try:
        import orjson  # optional (pip install nsys-diag[kineto])
    except ImportError:
        return json.loads(data)
    return orjson.loads(data)


def read_document(path: str | Path) -> dict:
    """The parsed trace object, or an ``InputError`` (exit 3): unreadable, over the size cap,
    a damaged gzip stream, truncated or invalid JSON, or JSON without a ``traceEvents`` list."""
    p = Path(path)
    with open_regular(p) as fh:
        raw = fh.read(MAX_KINETO_BYTES + 1)
    if raw.startswith(GZIP_MAGIC):
        try:
            d = zlib.decompressobj(16 + zlib.MAX_WBITS)
            raw = d.decompress(raw, MAX_KINETO_BYTES + 1)
            if not d.eof and len(raw) <= MAX_KINETO_BYTES:
                raise InputError(p, "truncated gzip stream (the trace was cut while written)",
                                 "copy the whole .json.gz again")
        except (zlib.error, gzip.BadGzipFile) as exc:
            raise InputError(p, f"damaged gzip stream ({exc})", "copy the trace again") from None
    if len(raw) > MAX_KINETO_BYTES:
        raise InputError(p, f"trace larger than {MAX_KINETO_BYTES >> 30} GiB",
                         "profile fewer steps (schedule active=N) so the trace is smaller")
    try:
        doc = _parse(raw)
    except (ValueError, UnicodeDecodeError) as exc:  # json/orjson decode errors are ValueErrors
        why = "truncated" if raw.rstrip()[-1:] not in (b"}", b"]") else "invalid"
        raise InputError(p, f"{why} JSON ({str(exc).splitlines()[0][:200]})",
                         "the trace was cut or damaged: record it again and let the profiler "
                         "finish writing it") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        raise UnrecognizedFormatError(p, "JSON without a traceEvents list (not a PyTorch "
                                         "profiler trace)", HINT_KINETO_CAPTURE)
    return doc


@dataclass
class Group:
    """The complete (``ph: "X"``) events of one loader kind, as columns. ``ts``/``end``: integer
    ns relative to the trace origin; ``pid``/``tid``: ints (-1 when not numeric); ``cat``: the
    category as written; ``args``: the events' ``args`` dicts (``{}`` when absent)."""

    name: list[str]
    cat: list[str]
    ts: np.ndarray
    end: np.ndarray
    pid: np.ndarray
    tid: np.ndarray
    args: list[dict]

    def __len__(self) -> int:
        return len(self.name)

    def arg(self, *keys: str) -> list:
        """The first of ``keys`` present in each event's args (None when none is)."""
        if len(keys) == 1:
            k = keys[0]
            return [a.get(k) for a in self.args]
        return [next((a[k] for k in keys if k in a), None) for a in self.args]

    def take(self, mask: np.ndarray) -> Group:
        idx = np.flatnonzero(mask).tolist()
        return Group([self.name[i] for i in idx], [self.cat[i] for i in idx], self.ts[mask],
                     self.end[mask], self.pid[mask], self.tid[mask], [self.args[i] for i in idx])


@dataclass
class Events:
    """A whole trace, grouped: ``groups`` by loader kind (``CATEGORY_KIND`` values), the metadata
    and flow events, ``tables`` = events per category as written, and what was dropped."""

    groups: dict[str, Group]
    metadata: list[dict]
    flow_events: list[dict]  # the ``s``/``f``/``t`` events as written (``flows()``: a frame)
    tables: dict[str, int]
    origin_us: float
    dropped: int = 0
    legacy: bool = False
    unknown: dict[str, int] = field(default_factory=dict)
    mixed_clock: int = 0  # events more than MIXED_CLOCK_US from the median time (dropped)

    def flows(self) -> pd.DataFrame:
        """The flow events as a frame (ph, id, pid, tid, ts in ns like the groups): what links a
        launch to its GPU work when the events carry no ``correlation`` argument."""
        flows = self.flow_events
        ts = floats([f.get("ts") for f in flows])
        ok = np.isfinite(ts)
        return pd.DataFrame({
            "ph": np.asarray([str(f.get("ph")) for f in flows], dtype=object)[ok],
            "id": ints([f.get("id") for f in flows])[ok],
            "pid": ints([f.get("pid") for f in flows])[ok],
            "tid": ints([f.get("tid") for f in flows])[ok],
            "ts": np.rint((ts[ok] - self.origin_us) * 1000.0).astype(np.int64)})


def _fast_floats(values: list) -> np.ndarray | None:
    """float64 of ``values`` when every one is a number or None (NaN), else None (perf: numpy's
    conversion of a list is ≈ 10× pandas' ``to_numeric`` of an object column)."""
    try:
        return np.array(values, dtype=np.float64)
    except (TypeError, ValueError):
        return None


def ints(values: list) -> np.ndarray:
    """int64 of JSON values: numbers as they are, strings by their trailing integer
    (``"stream 7"`` → 7, as the legacy schema writes thread ids), anything else -1."""
    fast = _fast_floats(values)
    if fast is not None and fast.ndim == 1:
        bad = ~np.isfinite(fast) | (np.abs(fast) > 2**62)
        if bad.any():
            fast[bad] = -1
        return fast.astype(np.int64)
    return np.array([_one_int(v) for v in values], dtype=np.int64)  # bounded: one per event


def _one_int(v) -> int:
    if isinstance(v, bool):
        return -1
    if isinstance(v, int):
        return v if abs(v) <= 2**62 else -1
    if isinstance(v, float):
        return int(v) if np.isfinite(v) and abs(v) <= 2**62 else -1
    if isinstance(v, str):
        m = _TRAILING_INT.search(v)
        return int(m.group(1)) if m and len(m.group(1)) < 19 else -1
    return -1


def floats(values: list) -> np.ndarray:
    """float64 of JSON values (NaN where not a number)."""
    fast = _fast_floats(values)
    if fast is not None and fast.ndim == 1:
        return fast
    return pd.to_numeric(pd.Series(values, dtype=object), errors="coerce").astype(
        np.float64).to_numpy()


def group_events(doc: dict) -> Events:
    """Split ``traceEvents`` by phase and category (one pass over the events), count every
    category, and turn the complete events into :class:`Group` columns; events without a
    finite ``ts`` or with a negative ``dur`` are dropped and counted. ``doc["traceEvents"]`` is
    emptied as it is read (memory: only the columns and the events' ``args`` stay alive)."""
    by_cat: dict[str, list[dict]] = defaultdict(list)
    metadata: list[dict] = []
    flows: list[dict] = []
    for ev in doc["traceEvents"]:  # bounded: one pass over the parsed events
        if not isinstance(ev, dict):
            continue
        ph = ev.get("ph")
        if ph == "X":
            by_cat[str(ev.get("cat", ""))].append(ev)
        elif ph == "M":
            metadata.append(ev)
        elif ph in FLOW_PHASES:
            flows.append(ev)
    doc["traceEvents"] = []
    tables = {cat: len(evs) for cat, evs in by_cat.items()}
    flow_cats: dict[str, int] = defaultdict(int)
    for f in flows:
        flow_cats[str(f.get("cat", "flow"))] += 1
    for cat, n in flow_cats.items():
        tables[cat] = tables.get(cat, 0) + n
    ts_all = [floats([e.get("ts") for e in evs]) for evs in by_cat.values()]
    finite = np.concatenate([t[np.isfinite(t)] for t in ts_all] or [np.zeros(0)])
    center = float(np.median(finite)) if finite.size else 0.0
    mixed = int((np.abs(finite - center) > MIXED_CLOCK_US).sum())
    if mixed:  # another clock's events (µs since the epoch among relative ones, or the reverse)
        ts_all = [np.where(np.abs(t - center) > MIXED_CLOCK_US, np.nan, t) for t in ts_all]
        finite = finite[np.abs(finite - center) <= MIXED_CLOCK_US]
    origin = float(finite.min()) if finite.size else 0.0
    grouped: dict[str, list[tuple[list[dict], np.ndarray]]] = defaultdict(list)
    unknown: dict[str, int] = {}
    for (cat, evs), ts in zip(by_cat.items(), ts_all):
        kind = CATEGORY_KIND.get(cat.lower())
        if kind is None:
            unknown[cat] = len(evs)
            continue
        grouped[kind].append((evs, ts))
    groups, dropped = {}, 0
    legacy = bool(LEGACY_CATEGORIES & set(by_cat))
    by_cat.clear()
    for kind in list(grouped):
        parts = grouped.pop(kind)  # each kind's event dicts freed once its columns are built
        g, d = _group([e for evs, _ in parts for e in evs], np.concatenate([t for _, t in parts]),
                      origin)
        del parts
        groups[kind], dropped = g, dropped + d
    dropped = max(0, dropped - mixed)  # the other clock's events are counted on their own
    return Events(groups, metadata, flows, tables, origin, dropped,
                  legacy=legacy, unknown=unknown,
                  mixed_clock=mixed)


def _group(evs: list[dict], ts_us: np.ndarray, origin: float) -> tuple[Group, int]:
    dur = floats([e.get("dur", 0) for e in evs])
    dur = np.where(np.isnan(dur), 0.0, dur)
    ok = np.isfinite(ts_us) & (dur >= 0) & np.isfinite(dur)
    start = np.rint((np.where(ok, ts_us, origin) - origin) * 1000.0).astype(np.int64)
    end = start + np.rint(np.where(ok, dur, 0.0) * 1000.0).astype(np.int64)
    args = [a if isinstance(a := e.get("args"), dict) else {} for e in evs]
    g = Group([str(e.get("name", "")) for e in evs], [str(e.get("cat", "")) for e in evs],
              start, end, ints([e.get("pid") for e in evs]), ints([e.get("tid") for e in evs]),
              args)
    if ok.all():
        return g, 0
    return g.take(ok), int((~ok).sum())


def triples(values: list) -> np.ndarray:
    """(n, 3) int64 of ``[x, y, z]`` arguments (grid, block); -1 rows where absent or bad."""
    try:
        fast = np.array(values, dtype=np.int64)
        if fast.shape == (len(values), 3):
            return fast
    except (TypeError, ValueError, OverflowError):
        pass
    out = np.full((len(values), 3), -1, np.int64)
    for i, v in enumerate(values):  # bounded: one launch configuration per kernel event
        if isinstance(v, (list, tuple)) and len(v) == 3 and all(
                isinstance(x, (int, float)) and not isinstance(x, bool) for x in v):
            out[i] = [int(x) for x in v]
    return out


__all__ = ["looks_like_kineto", "read_document", "group_events", "Events", "Group", "ints",
           "floats", "triples", "KINETO_SUFFIXES", "MAX_KINETO_BYTES", "CATEGORY_KIND"]
