"""Low-level row writing for the trace generator: string interning into ``StringIds``, column
values, chunked ``executemany`` inserts with the optional shuffled row order of event tables."""
from __future__ import annotations

import datetime as _dt
import itertools
import sqlite3
from typing import Any

import numpy as np

from nsys_diag.synth.schema import SchemaVariant

_CHUNK = 100_000  # rows per executemany batch (bounds memory of the Python row tuples)

class Strings:
    """StringIds interning in first-use order; ids start after the variant's fixed strings."""

    def __init__(self, v: SchemaVariant) -> None:
        self.values: list[str] = list(v.string0)
        self.ids: dict[str, int] = {s: i for i, s in enumerate(self.values)}

    def id(self, s: str) -> int:
        i = self.ids.get(s)
        if i is None:
            i = self.ids[s] = len(self.values)
            self.values.append(s)
        return i

    def ids_of(self, values: list[str]) -> np.ndarray:
        return np.array([self.id(s) for s in values], np.int64)


def column_values(value: Any, lo: int, hi: int):
    if isinstance(value, np.ndarray):
        return value[lo:hi].tolist()
    if isinstance(value, list):
        return value[lo:hi]
    return itertools.repeat(value, hi - lo)


def insert_rows(con: sqlite3.Connection, v: SchemaVariant, table: str, data: dict[str, Any],
            n: int) -> None:
    """CREATE ``table`` in ``v``'s layout and insert ``n`` rows. ``data`` maps column names to
    numpy arrays / lists (one value per row) or scalars (repeated); columns of the layout that
    are absent from ``data`` are NULL, keys the layout lacks are ignored (older versions)."""
    cols = v.table_columns(table)
    con.execute(v.ddl(table))
    if n == 0:
        return
    sql = f"INSERT INTO {table} VALUES ({', '.join('?' * len(cols))})"
    vals = [data.get(c) for c in cols]
    for lo in range(0, n, _CHUNK):
        hi = min(n, lo + _CHUNK)
        con.executemany(sql, zip(*[column_values(x, lo, hi) for x in vals]))


def nullable(values: np.ndarray, present: np.ndarray) -> np.ndarray:
    """Object array with None where ``present`` is False (NULL in SQLite)."""
    out = values.astype(object)
    out[~present] = None
    return out


def iso_seconds(ns: int) -> str:
    return _dt.datetime.fromtimestamp(ns // 1_000_000_000, _dt.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%S")
