"""Reading a PyTorch profiler (Kineto) Chrome-trace JSON: detection, bounded whole read and
parse, and the JSON value conversions (``ints``, ``floats``, ``triples``); the events are grouped
into columns by ``loaders/kineto_events.py``, a large trace is read in pieces by
``loaders/kineto_stream.py``, and ``loaders/kineto.py`` maps them onto the frames.

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
"""
from __future__ import annotations

import gzip
import json
import re
import zlib
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

_TRAILING_INT = re.compile(r"(-?\d+)\s*$")


def parse_json(data: bytes | bytearray) -> Any:
    """``data`` parsed with orjson when installed (``nsys-diag[kineto]``, in the dev extra), else
    with ``json``. orjson is stricter (no ``NaN``/``Infinity`` literals, no numbers beyond a
    double): what it refuses is read again by ``json``, so both give the same answer."""
    try:
        import orjson  # optional (pip install nsys-diag[kineto])
    except ImportError:
        return json.loads(data)
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:  # json reads NaN, Infinity; a truly bad file fails again
        return json.loads(data)


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
    return document_from_text(p, raw)


def document_from_text(p: Path, raw: bytes) -> dict:
    """The parsed trace object of the (gunzipped) text ``raw`` of ``p``, or an ``InputError``:
    truncated or invalid JSON, or JSON without a ``traceEvents`` list."""
    try:
        doc = parse_json(raw)
    except (ValueError, UnicodeDecodeError) as exc:  # json/orjson decode errors are ValueErrors
        why = "truncated" if raw.rstrip()[-1:] not in (b"}", b"]") else "invalid"
        raise InputError(p, f"{why} JSON ({str(exc).splitlines()[0][:200]})",
                         "the trace was cut or damaged: record it again and let the profiler "
                         "finish writing it") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        raise UnrecognizedFormatError(p, "JSON without a traceEvents list (not a PyTorch "
                                         "profiler trace)", HINT_KINETO_CAPTURE)
    return doc


def _fast_floats(values: list | np.ndarray) -> np.ndarray | None:
    """float64 of ``values`` when every one is a number or None (NaN), else None (perf: numpy's
    conversion of a list is ≈ 10× pandas' ``to_numeric`` of an object column)."""
    try:
        return np.array(values, dtype=np.float64)
    except (TypeError, ValueError):
        return None


def ints(values: list | np.ndarray) -> np.ndarray:
    """int64 of JSON values: numbers as they are, strings by their trailing integer
    (``"stream 7"`` → 7, as the legacy schema writes thread ids), anything else -1; an int64
    array (a column already read) as it is."""
    if isinstance(values, np.ndarray) and values.dtype == np.int64:
        return values
    fast = _fast_floats(values)
    if fast is not None and fast.ndim == 1:
        bad = ~np.isfinite(fast) | (np.abs(fast) > 2**62)
        if bad.any():
            fast[bad] = -1
        return fast.astype(np.int64)
    by_text: dict[str, int] = {}  # perf: string ids repeat ("stream 7"), parsed once each
    return np.array([(by_text[v] if v in by_text else by_text.setdefault(v, _one_int(v)))
                     if type(v) is str else _one_int(v) for v in values],  # bounded: per event
                    dtype=np.int64)


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


__all__ = ["looks_like_kineto", "read_document", "ints", "floats", "triples", "KINETO_SUFFIXES",
           "MAX_KINETO_BYTES", "parse_json", "document_from_text"]
