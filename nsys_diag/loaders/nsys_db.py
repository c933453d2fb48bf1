"""Read-only access to an nsys SQLite export: discovery (tables, columns, counts) and fast reads.

* The file is opened with a ``file:…?mode=ro&immutable=1`` URI, so SQLite never writes, never
  creates a journal and never takes a lock; the input stays byte-identical. Because an immutable
  connection would not see a writer's uncommitted state, the open first looks beside the file
  (``check_not_being_written``: two ``stat`` calls and a 32-byte read, O(1)): a hot rollback
  journal or a non-empty write-ahead log means the export is still being written (or its writer
  stopped mid-way), an ``InputError`` with that hint instead of a silently wrong answer.
* Reads select only the columns asked for. Every selected expression is made NULL-free and
  type-stable in SQL (``ifnull(CAST(x AS INTEGER), fill)``, a separate ``x IS NULL`` flag where
  NULL matters), so the result maps straight to numpy arrays.
* The fast path uses ``adbc-driver-sqlite`` (SQLite → Arrow in C) when it is installed; the
  fallback is the standard ``sqlite3`` module with ``numpy.fromiter``. Both return the same arrays.
* Text is read as bytes and decoded once per *distinct* value with ``errors="replace"`` (real
  exports hold non-UTF-8 bytes, NSYS_SQLITE.md §1.1).
* Any SQLite error (corrupt / truncated / not a database) becomes an ``InputError`` (exit 3).
"""
from __future__ import annotations

import os
import sqlite3
import struct
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence, Union, cast
from urllib.parse import quote

import numpy as np
import numpy.typing as npt

from nsys_diag.loaders import prefetch_store
from nsys_diag.loaders.read_plan import Col, ReadPlan, SelectPlan, and_where, select_plan
from nsys_diag.model.errors import InputError
from nsys_diag.model.vocabulary import HINT_REEXPORT
from nsys_diag.model.safe_files import open_regular, read_head

__all__ = ["Col", "Columns", "NsysDb", "ReadPlan", "SelectPlan", "Text", "and_where",
           "check_sqlite_header", "read_arrow", "ro_uri", "select_plan"]

_ADBC_BATCH_ROWS = 1 << 22
"""Rows per Arrow batch for the ADBC reader (also the window it infers types from; our SQL is
type-stable anyway)."""

_MAX_READ_SPANS = 1_000
"""A batched read (``NsysDb.read(batch_rows=…)``) makes at most this many rowid-range queries."""

_TEXT_COMBINE_LIMIT = 1 << 30
"""Text columns at least this large (bytes) are combined with 64-bit offsets (see _read_adbc)."""

_DB_ERRORS = (sqlite3.Error, UnicodeError)
"""What a damaged file raises from sqlite3 (UnicodeError: undecodable text in sqlite's own error
message, e.g. a corrupt schema)."""

_CORRUPT_HINT = f"the file is damaged or incomplete (e.g. a partial copy); {HINT_REEXPORT}"


@dataclass(frozen=True)
class Text:
    """A text column as codes into ``labels`` (distinct values, decoded once each)."""

    codes: np.ndarray  # int64, index into labels
    labels: list[str]

    def to_object(self) -> np.ndarray:
        return np.asarray(self.labels, dtype=object)[self.codes] if len(self.labels) else \
            np.full(len(self.codes), "", dtype=object)


ColumnValues = Union[npt.NDArray[np.int64], npt.NDArray[np.float64], npt.NDArray[np.bool_], Text]
"""What one column of a read holds, by its ``Col.kind``: ``int`` → int64 array, ``float`` →
float64 array (NULL → NaN), ``isnull`` → bool array, ``text`` → :class:`Text`."""


class Columns(dict[str, ColumnValues]):
    """The result of :meth:`NsysDb.read`: column name → values, one entry per ``Col`` read, all of
    the same length (rows in rowid order).

    A plain dict (the arrays are the reader's own, never copied) with typed accessors — ``ints``,
    ``floats``, ``flags``, ``text`` — that say what the caller expects and check it once per
    column (``TypeError`` when the column was read as another kind), so a loader's arithmetic on
    the arrays is type-checked."""

    def ints(self, name: str) -> npt.NDArray[np.int64]:
        """An ``int`` column (int64; NULL → the column's ``fill``)."""
        values = self[name]
        if isinstance(values, np.ndarray) and values.dtype == np.int64:
            return cast("npt.NDArray[np.int64]", values)
        raise TypeError(f"column {name!r} is not an int64 column ({_kind_of(values)})")

    def floats(self, name: str) -> npt.NDArray[np.float64]:
        """A ``float`` column (float64; NULL → NaN)."""
        values = self[name]
        if isinstance(values, np.ndarray) and values.dtype == np.float64:
            return cast("npt.NDArray[np.float64]", values)
        raise TypeError(f"column {name!r} is not a float64 column ({_kind_of(values)})")

    def flags(self, name: str) -> npt.NDArray[np.bool_]:
        """An ``isnull`` column (bool: the expression is NULL)."""
        values = self[name]
        if isinstance(values, np.ndarray) and values.dtype == np.bool_:
            return cast("npt.NDArray[np.bool_]", values)
        raise TypeError(f"column {name!r} is not a bool column ({_kind_of(values)})")

    def text(self, name: str) -> Text:
        """A ``text`` column (codes into distinct decoded labels; NULL → ``''``)."""
        values = self[name]
        if isinstance(values, Text):
            return values
        raise TypeError(f"column {name!r} is not a text column ({_kind_of(values)})")

    def filtered(self, keep: npt.NDArray[np.bool_]) -> "Columns":
        """The rows where ``keep`` is True, of every column (text keeps its labels)."""
        return Columns({name: Text(v.codes[keep], v.labels) if isinstance(v, Text) else v[keep]
                        for name, v in self.items()})


def _kind_of(values: ColumnValues) -> str:
    return "text" if isinstance(values, Text) else f"dtype {values.dtype}"


def _decode(b: object) -> str:
    if isinstance(b, (bytes, bytearray, memoryview)):
        return bytes(b).decode("utf-8", "replace")
    return "" if b is None else str(b)


def ro_uri(path: str | Path) -> str:
    """``file:`` URI opening ``path`` read-only and immutable (no locks, no journal, no writes)."""
    return "file:" + quote(str(Path(path).resolve())) + "?mode=ro&immutable=1"


STILL_WRITTEN_HINT = ("wait for its writer (`nsys export`) to finish and run again; if the writer "
                      "stopped before finishing, export the report again")


def _nonzero_head(path: Path, n: int) -> bool:
    """Whether ``path`` exists as a regular file whose first ``n`` bytes are not all zero."""
    try:
        return any(read_head(path, n))
    except InputError:
        return False


def check_not_being_written(path: Path, head: bytes) -> None:
    """``InputError`` when a writer's state sits beside the export (SQLite file format §2):

    * a hot rollback journal ``<file>-journal`` (non-empty, header not zeroed): a write
      transaction is under way or was interrupted, the file alone is inconsistent;
    * a WAL-mode file (header bytes 18/19 = 2) with a non-empty ``<file>-wal``: committed pages
      not yet copied into the file (an immutable read would miss them).
    """
    journal = path.with_name(path.name + "-journal")
    if _nonzero_head(journal, 28):
        raise InputError(path, f"a rollback journal ({journal.name}) lies beside it: the export "
                         "is still being written", STILL_WRITTEN_HINT)
    wal = path.with_name(path.name + "-wal")
    if head[18:20] == b"\x02\x02" and _nonzero_head(wal, 32):
        raise InputError(path, f"its write-ahead log ({wal.name}) holds pages not yet in the "
                         "file: the export is still being written",
                         STILL_WRITTEN_HINT + "; a finished WAL export can be folded in with "
                         "`sqlite3 FILE 'PRAGMA wal_checkpoint(TRUNCATE)'`")


def check_sqlite_header(path: Path) -> None:
    """Cheap truncation check from the 100-byte SQLite header (no full scan), then
    ``check_not_being_written``. Only a regular file is opened (``open_regular``: never blocks).

    When the header's page count is valid (change counter == version-valid-for, SQLite file
    format §1.3.7), the file must be at least ``page_size × page_count`` bytes long.
    """
    with open_regular(path) as fh:  # InputError: unreadable, FIFO, device
        head = fh.read(100)
        size = os.fstat(fh.fileno()).st_size
    if len(head) < 100:
        raise InputError(path, f"truncated SQLite file ({size} bytes, shorter than its header)",
                         _CORRUPT_HINT)
    page_size = struct.unpack(">H", head[16:18])[0]
    page_size = 65536 if page_size == 1 else page_size
    change_counter, n_pages = struct.unpack(">II", head[24:32])
    valid_for = struct.unpack(">I", head[92:96])[0]
    if page_size < 512 or page_size & (page_size - 1):
        raise InputError(path, "corrupt SQLite header (invalid page size)", _CORRUPT_HINT)
    if n_pages and change_counter == valid_for and size < page_size * n_pages:
        raise InputError(path, f"truncated SQLite file: {size} bytes on disk, the header says "
                         f"{page_size * n_pages}", _CORRUPT_HINT)
    check_not_being_written(path, head)


def _adbc_installed() -> bool:
    """Whether the ADBC SQLite driver can be used, without importing it (``loaders/prefetch.py``
    runs before pandas is imported; a broken install fails in ``read_arrow`` → sqlite3)."""
    if os.environ.get("NSYS_DIAG_NO_ADBC"):
        return False
    import importlib.util

    try:
        return importlib.util.find_spec("adbc_driver_sqlite") is not None
    except (ImportError, ValueError):
        return False


def read_arrow(uri: str, sql: str, batch_rows: int = _ADBC_BATCH_ROWS):
    """One query → ``pyarrow.Table`` through the low-level ADBC API on a connection of its own
    (thread-safe; no pandas import, unlike ADBC's DB-API module). Shared by ``NsysDb`` and
    ``loaders/prefetch.py``."""
    import adbc_driver_manager as dm
    import adbc_driver_sqlite
    import pyarrow as pa

    database = adbc_driver_sqlite.connect(uri)
    try:
        conn = dm.AdbcConnection(database)
        try:
            stmt = dm.AdbcStatement(conn)
            try:
                stmt.set_options(**{"adbc.sqlite.query.batch_rows": str(batch_rows)})
                stmt.set_sql_query(sql)
                stream, _ = stmt.execute_query()
                return pa.RecordBatchReader._import_from_c(stream.address).read_all()
            finally:
                stmt.close()
        finally:
            conn.close()
    finally:
        database.close()


class NsysDb:
    """A read-only handle on one export. Use as a context manager or call :meth:`close`."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        check_sqlite_header(self.path)
        self.uri = ro_uri(self.path)
        try:
            self.conn = sqlite3.connect(self.uri, uri=True, check_same_thread=False)
        except _DB_ERRORS as exc:
            raise self.error(exc) from None
        self.conn.text_factory = _decode
        self._lock = threading.Lock()  # the shared sqlite3 connection serves one query at a time
        self._adbc_failed = not _adbc_installed()
        self.reader = "sqlite3" if self._adbc_failed else "adbc"
        rows = self.rows("SELECT name FROM sqlite_master WHERE type = 'table'")
        self.tables: dict[str, str] = {r[0]: r[0] for r in rows}
        self._lower = {name.lower(): name for name in self.tables}
        self._columns: dict[str, list[str]] = {}

    # ------------------------------------------------------------------ lifecycle / errors
    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> "NsysDb":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def error(self, exc: BaseException) -> InputError:
        msg = str(exc) or type(exc).__name__
        if isinstance(exc, UnicodeError):
            msg = "malformed database schema (undecodable text)"
        if "not a database" in msg or "malformed" in msg or "corrupt" in msg.lower():
            return InputError(self.path, f"corrupt or truncated SQLite database (sqlite: {msg})",
                              _CORRUPT_HINT)
        return InputError(self.path, f"SQLite error: {msg}", _CORRUPT_HINT)

    # ------------------------------------------------------------------ discovery
    def table(self, name: str) -> str | None:
        """Actual name of table ``name`` (case-insensitive), or None when absent."""
        return self.tables.get(name) or self._lower.get(name.lower())

    def has(self, name: str) -> bool:
        return self.table(name) is not None

    def columns(self, name: str) -> list[str]:
        """Column names of a table in declaration order ([] when the table is absent)."""
        actual = self.table(name)
        if actual is None:
            return []
        if actual not in self._columns:
            self._columns[actual] = [r[1] for r in self.rows(f"PRAGMA table_info(\"{actual}\")")]
        return self._columns[actual]

    def count(self, name: str) -> int:
        actual = self.table(name)
        if actual is None:
            return 0
        return int(self.rows(f'SELECT count(*) FROM "{actual}"')[0][0])

    def counts(self) -> dict[str, int]:
        """Row count of every table (``count(*)`` walks the b-tree without decoding rows)."""
        return {name: self.count(name) for name in sorted(self.tables)}

    def without_rowid(self, name: str) -> bool:
        """Whether table ``name`` is a ``WITHOUT ROWID`` table (it has no ``rowid`` to range
        over: ``rowid_bounds`` and zone maps cannot serve it); False when it is absent."""
        actual = self.table(name)
        if actual is None:
            return False
        found = self.rows("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?",
                          (actual,))
        sql = found[0][0] if found else None
        return isinstance(sql, str) and " ".join(sql.upper().split()).rstrip("; ").endswith(
            "WITHOUT ROWID")

    def rowid_bounds(self, name: str) -> tuple[int, int] | None:
        """(smallest, largest) rowid of table ``name``; None when it is absent or empty. Two
        queries: SQLite answers a lone ``min``/``max`` of the rowid from the b-tree's ends, but
        scans the whole table for the pair."""
        actual = self.table(name)
        if actual is None:
            return None
        lo = self.rows(f'SELECT min(rowid) FROM "{actual}"')[0][0]
        if lo is None:
            return None
        return int(lo), int(self.rows(f'SELECT max(rowid) FROM "{actual}"')[0][0])

    def common_values(self, name: str, columns: Sequence[str], samples: int = 17
                      ) -> dict[str, int]:
        """The value of each integer column of ``columns`` on which ``samples`` rows spread
        evenly over the rowids of table ``name`` (the first and the last included) all agree;
        a column whose rows differ or hold NULL or non-integers is left out ({} for an empty or
        ``WITHOUT ROWID`` table). A few b-tree lookups: a cheap hint, not a proof
        (``holds_all_rows`` checks the read)."""
        if not columns or self.without_rowid(name):
            return {}
        bounds = self.rowid_bounds(name)
        if bounds is None:
            return {}
        lo, hi = bounds
        ids = sorted({lo + (hi - lo) * i // (samples - 1) for i in range(samples)})
        got = self.rows(f'SELECT {", ".join(chr(34) + c + chr(34) for c in columns)} FROM '
                        f'"{self.table(name)}" WHERE rowid IN ({", ".join(map(str, ids))})')
        if not got:
            return {}
        return {c: got[0][i] for i, c in enumerate(columns)
                if type(got[0][i]) is int and all(r[i] == got[0][i] for r in got)}

    def holds_all_rows(self, name: str, n: int) -> bool:
        """Whether ``n`` rows read from table ``name`` are all its rows: ``n`` equals the rowid
        span (no scan) or, for sparse rowids, ``count(*)``."""
        bounds = self.rowid_bounds(name) if not self.without_rowid(name) else None
        if bounds is not None and bounds[1] - bounds[0] + 1 == n:
            return True
        return self.count(name) == n

    def rows(self, sql: str, params: Sequence = ()) -> list[tuple]:
        """Small queries through sqlite3 (lenient text)."""
        try:
            with self._lock:
                return self.conn.execute(sql, params).fetchall()
        except _DB_ERRORS as exc:
            raise self.error(exc) from None

    # ------------------------------------------------------------------ bulk reads
    def read(self, table: str, cols: Sequence[Col], where: str = "",
             batch_rows: int | None = None) -> Columns:
        """Read ``cols`` of ``table`` (optionally filtered) into numpy arrays / :class:`Text`
        (:class:`Columns`; read them with its typed accessors).

        Row order is the table's rowid order (what SQLite returns for a plain scan).
        ``batch_rows``: read a table of more rowids than that in rowid ranges of that many and
        join the arrays — the same result with one batch's SQLite/Arrow copy in memory at a time
        instead of the whole table's (``_read_batched``).
        """
        actual = self.table(table)
        if actual is None:
            raise KeyError(table)
        if batch_rows:
            spans = self._rowid_spans(actual, int(batch_rows))
            if len(spans) > 1:
                return self._read_batched(table, cols, where, spans)
        plan = ReadPlan.of(actual, cols, where)
        sel = plan.render()
        raw = None
        if not self._adbc_failed:
            # perf (bench): plain integer and float columns are first read without
            # ifnull(CAST(...)) (floats: without the extra IS NULL column) — ~25% less SQLite work
            # on the 2M-kernel trace; NULLs are filled on the Arrow side, and a column that does
            # not come back with a numeric type sends the read to the type-stable SQL.
            if sel.fast_sql:
                raw = self._read_adbc(sel.fast_sql, sel.fast_ncols, int_fill=sel.int_fill,
                                      float_plain=sel.float_plain, plan=plan)
                if raw is not None and sel.float_plain:
                    raw = _float_pairs(raw, sel.float_plain)
            if raw is None and not self._adbc_failed:
                raw = self._read_adbc(sel.sql, sel.ncols, plan=None if sel.fast_sql else plan)
        if raw is None:
            raw = self._read_sqlite3(sel.sql, cols)
        out = Columns()
        i = 0
        for c in cols:
            if c.kind == "float":
                vals = np.asarray(raw[i], dtype=np.float64)
                null = raw[i + 1]  # None: NaN already marks NULL (uncast fast read)
                if null is not None and np.asarray(null).any():  # perf: no copy without NULLs
                    vals = vals.copy()
                    vals[np.asarray(null).astype(bool)] = np.nan
                out[c.name] = vals
                i += 2
                continue
            v = raw[i]
            if c.kind == "int":
                out[c.name] = np.asarray(v, dtype=np.int64)
            elif c.kind == "isnull":
                out[c.name] = np.asarray(v).astype(bool)
            else:
                out[c.name] = v if isinstance(v, Text) else _text_from_objects(v)
            i += 1
        return out

    def _rowid_spans(self, actual: str, batch_rows: int) -> list[tuple[int, int]]:
        """Consecutive rowid ranges of ``batch_rows`` rowids covering the table
        (``rowid_bounds``) — at most ``_MAX_READ_SPANS`` of them, wider for
        sparse rowids (a crafted rowid near 2**63 must not make billions of queries)."""
        bounds = self.rowid_bounds(actual)
        if bounds is None or bounds[1] - bounds[0] < batch_rows:
            return [(0, 0)]
        lo, hi = bounds
        width = max(batch_rows, -(-(hi - lo + 1) // _MAX_READ_SPANS))
        return [(a, min(a + width - 1, hi)) for a in range(lo, hi + 1, width)]

    def _read_batched(self, table: str, cols: Sequence[Col], where: str,
                      spans: list[tuple[int, int]]) -> Columns:
        """``read`` of each rowid span, the arrays joined column by column (text codes mapped
        onto one label list in first-appearance order, as one read gives them)."""
        parts: dict[str, list[ColumnValues]] = {c.name: [] for c in cols}
        for a, b in spans:
            got = self.read(table, cols, and_where(where, f'"rowid" BETWEEN {a} AND {b}'))
            for name, values in got.items():
                parts[name].append(values)
            del got
        out = Columns()
        for c in cols:
            vals = parts.pop(c.name)
            texts = [v for v in vals if isinstance(v, Text)]
            out[c.name] = _join_text(texts) if texts else \
                np.concatenate([v for v in vals if isinstance(v, np.ndarray)])
        return out

    def _read_adbc(self, sql: str, ncols: int, int_fill: dict[int, int] | None = None,
                   float_plain: frozenset[int] = frozenset(),
                   plan: ReadPlan | None = None) -> list | None:
        """Arrow path; returns per-expression arrays, or None to fall back to sqlite3.

        ``sql`` is ``plan``'s first SQL when ``plan`` is given: its result is then taken from the
        prefetch (``prefetch_store``, keyed by the plan) when it was read in the background.

        ``int_fill`` (expression index → NULL fill) marks plain integer columns read without a
        cast, ``float_plain`` plain float columns (→ float64, NULL → NaN): None is returned
        (without disabling ADBC) when one of them does not come back numeric.
        """
        try:
            table = None if plan is None else prefetch_store.take(self.path, plan)
            if table is None:
                table = read_arrow(self.uri, sql)
        except Exception:
            if int_fill or float_plain:  # the uncast attempt failed: the type-stable SQL tries
                return None
            # Anything unexpected (driver quirk, odd value types): the sqlite3 path decides, and
            # raises the proper InputError if the file itself is bad.
            self._adbc_failed = True
            self.reader = "sqlite3"
            return None
        return self._arrow_columns(table, ncols, int_fill, float_plain)

    def _arrow_columns(self, table, ncols: int, int_fill: dict[int, int] | None,
                       float_plain: frozenset[int]) -> list | None:
        """Per-expression numpy arrays / :class:`Text` of an Arrow result (see ``_read_adbc``)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        out: list = []
        for j in range(ncols):
            col = table.column(j)
            if j in float_plain:  # uncast float column (see read)
                if pa.types.is_null(col.type):
                    out.append(np.full(len(col), np.nan))
                    continue
                if not (pa.types.is_integer(col.type) or pa.types.is_floating(col.type)):
                    return None
                out.append(np.asarray(col.to_numpy(zero_copy_only=False), dtype=np.float64)
                           if col.null_count == 0 else
                           np.asarray(pc.cast(col, pa.float64()).to_numpy(zero_copy_only=False),
                                      dtype=np.float64))
                continue
            if int_fill and j in int_fill:  # uncast integer column (see read)
                if pa.types.is_null(col.type):  # all NULL (or zero rows)
                    out.append(np.full(len(col), int_fill[j], dtype=np.int64))
                    continue
                if not pa.types.is_integer(col.type):
                    return None
                if col.null_count:
                    col = pc.fill_null(col, int_fill[j])
                out.append(np.asarray(col.to_numpy(), dtype=np.int64))
                continue
            if pa.types.is_binary(col.type) or pa.types.is_large_binary(col.type) or \
                    pa.types.is_string(col.type):
                try:
                    if col.num_chunks > 1 and col.nbytes >= _TEXT_COMBINE_LIMIT:
                        # hardening: > 2 GiB of text in int32-offset chunks overflows
                        # combine_chunks (a segfault seen at 10 GiB): use 64-bit offsets
                        col = col.cast(pa.large_binary() if not pa.types.is_string(col.type)
                                       else pa.large_string())
                    arr = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
                    enc = pc.dictionary_encode(arr)
                except (pa.ArrowException, MemoryError):
                    # > 2 GiB of distinct text (ArrowCapacityError): the sqlite3 path copes
                    self._adbc_failed = True
                    self.reader = "sqlite3"
                    return None
                labels = [_decode(b) for b in enc.dictionary.to_pylist()]
                out.append(Text(np.asarray(enc.indices.to_numpy(zero_copy_only=False),
                                           dtype=np.int64), labels))
            elif pa.types.is_null(col.type):  # zero rows
                out.append(np.zeros(len(col), dtype=np.int64))
            else:
                out.append(col.to_numpy())
        return out

    def _read_sqlite3(self, sql: str, cols: Sequence[Col]) -> list:
        dtype = []
        for j, c in enumerate(cols):
            if c.kind == "float":
                dtype += [(f"c{j}", "f8"), (f"n{j}", "i8")]
            elif c.kind == "text":
                dtype.append((f"c{j}", "O"))
            else:
                dtype.append((f"c{j}", "i8"))
        try:
            with self._lock:
                arr = np.fromiter(self.conn.execute(sql), dtype=np.dtype(dtype), count=-1)
        except _DB_ERRORS as exc:
            raise self.error(exc) from None
        return [arr[name] for name in arr.dtype.names or ()]


def _float_pairs(raw: list, float_plain: frozenset[int]) -> list:
    """Fast-read arrays back in the type-stable layout: each plain float becomes (values, None),
    None saying NaN already marks NULL (SQLite stores no NaN; ``_arrow_columns`` maps NULL to
    NaN)."""
    out: list = []
    for j, arr in enumerate(raw):
        if j in float_plain:
            out += [arr, None]
        else:
            out.append(arr)
    return out


def _join_text(parts: list[Text]) -> Text:
    """One :class:`Text` of consecutive reads: labels in first-appearance order over the parts
    (one read's labels, except that distinct byte strings decoding to the same text — invalid
    UTF-8 replaced by U+FFFD — share one label here; the decoded values are the same)."""
    index: dict[str, int] = {}
    codes = []
    for t in parts:
        remap = np.fromiter((index.setdefault(label, len(index)) for label in t.labels),
                            dtype=np.int64, count=len(t.labels))
        codes.append(remap[t.codes] if len(t.codes) else np.zeros(0, np.int64))
    return Text(np.concatenate(codes) if codes else np.zeros(0, np.int64), list(index))


def _text_from_objects(values: np.ndarray) -> Text:
    """Factorize an object array of bytes/str and decode each distinct value once."""
    import pandas as pd  # lazy: this module stays pandas-free for loaders/prefetch.py

    codes, uniques = pd.factorize(np.asarray(values, dtype=object), use_na_sentinel=False)
    return Text(np.asarray(codes, dtype=np.int64), [_decode(u) for u in uniques])
