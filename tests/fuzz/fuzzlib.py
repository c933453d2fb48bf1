"""Fuzzing toolkit shared by the in-suite fuzz tests (tests/hardening) and ``make fuzz``.

* **Seeds** — small nsys exports from :mod:`nsys_diag.synth` (several presets and schema
  variants), ncu CSVs from :mod:`nsys_diag.synth.ncu`, and *copies* of the real traces in
  ``../shared/traces`` (the originals are never opened for writing).
* **Mutators** — byte level on SQLite files (flips in the header and inside pages, truncation at
  page boundaries and mid-page, zeroed / copied pages, header fields), byte level on CSV files
  (flips, truncation, dropped / duplicated lines, junk fields, non-UTF-8, huge fields), and row
  level through SQL on a copy (NULLs, ``end < start``, zero and absurd durations, duplicate or
  missing correlation ids, far timestamps, negative ids, 1 MB and non-UTF-8 strings, deep and
  unbalanced NVTX, ranges ending on another thread, thousands of streams, dropped tables …).
* **The oracle** — :func:`run_case` runs what a user runs (load → inspect view → analysis view →
  HTML, Markdown, JSON, terminal) and accepts exactly two endings: a report (whose numbers pass
  :func:`check_view`) or a typed ``NsysDiagError`` whose message is one clean line. Anything else
  (another exception, a NaN in the JSON, a share above 100 %, a changed input file) propagates.

Every mutator is a pure function of its inputs and a ``random.Random`` seed, so a case is
reproducible from (seed file, mutator name, integer seed).
"""
from __future__ import annotations

import gzip
import hashlib
import math
import os
import random
import re
import shutil
import sqlite3
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parents[2]
SHARED_TRACES = REPO.parent / "shared" / "traces"

GENERATED_AT = "2026-01-01T00:00:00Z"

# ------------------------------------------------------------------------------------- seeds
SYNTH_SEEDS: tuple[tuple[str, str, str], ...] = (
    # (seed name, preset, schema variant)
    ("synth_worked_2024.6", "worked_example", "2024.6"),
    ("synth_multi_gpu_2026.2", "multi_gpu", "2026.2"),
    ("synth_launch_2022.2", "launch_bound", "2022.2"),
    ("synth_healthy_2021", "healthy_tc", "2021"),
    ("synth_inference_2020", "inference", "2020"),
)
REAL_SQLITE = ("centerformer_nvtx_only_2022.4.sqlite", "dynamicvit_no_cuda_tables.sqlite",
               "fastvideo_train_2xh100_2026.2.sqlite", "mordred_rtx6000_2021.sqlite",
               "nvfuser_matmul_h200_2024.6.sqlite", "saxpy_mpi_a100_2022.2.sqlite")
REAL_CSV = ("interp_a100_details.csv",)


def write_synth_seed(dest: Path, preset: str, schema: str, steps: int = 3) -> Path:
    from nsys_diag import synth

    return synth.write_preset(dest, preset, schema=schema, steps=steps)


def build_seeds(directory: Path, *, real: bool = True, synth_steps: int = 3) -> dict[str, Path]:
    """Write every seed into ``directory``; returns seed name -> path (real traces are copies)."""
    from nsys_diag.synth import ncu as synth_ncu

    directory.mkdir(parents=True, exist_ok=True)
    seeds: dict[str, Path] = {}
    for name, preset, schema in SYNTH_SEEDS:
        seeds[name] = write_synth_seed(directory / f"{name}.sqlite", preset, schema, synth_steps)
    seeds["synth_ncu_details"] = synth_ncu.write_ncu_csv(
        directory / "synth_ncu_details.csv", layout="details", junk=True, rules=True,
        gpu_name="NVIDIA A100-SXM4-40GB")
    seeds["synth_ncu_raw"] = synth_ncu.write_ncu_csv(
        directory / "synth_ncu_raw.csv", layout="raw", auto_units=True, decimal_comma=True,
        gpu_name="NVIDIA H100 80GB HBM3")
    if real:
        for rel in [f"nsys/{n}" for n in REAL_SQLITE] + [f"ncu/{n}" for n in REAL_CSV]:
            src = SHARED_TRACES / rel
            if src.exists():
                dst = directory / ("real_" + Path(rel).name)
                shutil.copyfile(src, dst)  # content only: the copy is ours, the original untouched
                seeds[dst.stem] = dst
    return seeds


def is_sqlite(path: Path) -> bool:
    with open(path, "rb") as fh:
        return fh.read(16) == b"SQLite format 3\x00"


# ------------------------------------------------------------------------- byte-level: SQLite
def sqlite_page_size(data: bytes) -> int:
    if len(data) < 100:
        return 4096
    ps = struct.unpack(">H", data[16:18])[0]
    ps = 65536 if ps == 1 else ps
    return ps if ps >= 512 and not ps & (ps - 1) else 4096


def _flip(buf: bytearray, offset: int, xor: int) -> None:
    if buf:
        buf[offset % len(buf)] ^= (xor % 255) + 1  # never a no-op


def mutate_sqlite_bytes(data: bytes, op: str, rng: random.Random) -> tuple[bytes, str]:
    """One byte-level mutation of a SQLite file; returns (new bytes, description)."""
    buf = bytearray(data)
    ps = sqlite_page_size(data)
    n_pages = max(1, len(data) // ps)
    if op == "flip_random":
        k = rng.choice((1, 2, 8, 64))
        for _ in range(k):
            _flip(buf, rng.randrange(len(buf)), rng.randrange(256))
        return bytes(buf), f"{k} random byte flips"
    if op == "flip_header":
        off = rng.randrange(100)
        _flip(buf, off, rng.randrange(256))
        return bytes(buf), f"flip header byte {off}"
    if op == "flip_in_page":
        page = rng.randrange(n_pages)
        k = rng.choice((1, 4, 32))
        for _ in range(k):
            _flip(buf, page * ps + rng.randrange(ps), rng.randrange(256))
        return bytes(buf), f"{k} flips in page {page + 1}"
    if op == "flip_page_header":  # b-tree page headers: cell counts, pointers, page types
        page = rng.randrange(n_pages)
        base = page * ps + (100 if page == 0 else 0)
        off = base + rng.randrange(12)
        _flip(buf, off, rng.randrange(256))
        return bytes(buf), f"flip b-tree header byte {off - page * ps} of page {page + 1}"
    if op == "truncate_page":
        keep = rng.randrange(1, n_pages) if n_pages > 1 else 1
        return bytes(buf[:keep * ps]), f"truncate to {keep} of {n_pages} pages"
    if op == "truncate_mid":
        cut = rng.randrange(1, max(2, len(buf)))
        return bytes(buf[:cut]), f"truncate mid-page at byte {cut}"
    if op == "truncate_consistent":  # also fix the header page count: only SQLite can notice
        keep = rng.randrange(1, n_pages) if n_pages > 1 else 1
        out = bytearray(buf[:keep * ps])
        if len(out) >= 100:
            out[28:32] = struct.pack(">I", keep)
        return bytes(out), f"truncate to {keep} pages with a consistent header"
    if op == "zero_page":
        page = rng.randrange(n_pages)
        buf[page * ps:(page + 1) * ps] = bytes(len(buf[page * ps:(page + 1) * ps]))
        return bytes(buf), f"zero page {page + 1}"
    if op == "copy_page":
        src, dst = rng.randrange(n_pages), rng.randrange(n_pages)
        chunk = bytes(buf[src * ps:(src + 1) * ps])
        buf[dst * ps:dst * ps + len(chunk)] = chunk
        return bytes(buf[:len(data)]), f"copy page {src + 1} over page {dst + 1}"
    if op == "header_field":
        field_off = rng.choice((16, 18, 19, 20, 21, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60, 92, 96))
        width = 1 if field_off in (18, 19, 20, 21) else 2 if field_off == 16 else 4
        value = rng.choice((0, 1, 2, 3, 255, 0xFFFF, 0xFFFFFFFF, rng.randrange(1 << 31)))
        value &= (1 << (8 * width)) - 1
        buf[field_off:field_off + width] = value.to_bytes(width, "big")
        return bytes(buf), f"header field @{field_off} = {value}"
    if op == "append_garbage":
        extra = bytes(rng.randrange(256) for _ in range(rng.choice((1, 100, ps))))
        return bytes(buf) + extra, f"append {len(extra)} garbage bytes"
    raise ValueError(op)


SQLITE_BYTE_OPS = ("flip_random", "flip_header", "flip_in_page", "flip_page_header",
                   "truncate_page", "truncate_mid", "truncate_consistent", "zero_page",
                   "copy_page", "header_field", "append_garbage")


# ---------------------------------------------------------------------------- byte-level: CSV
_JUNK_FIELDS = ("", "nan", "NaN", "inf", "-inf", "-1", "-0", "1e400", "-1e400", "0x1F", "n/a",
                "\"", "\"\"\"", "1,234,567.8", "1.234.567,8", "9" * 400, "abc", "∞", "１２３",
                "\x1b[31mred\x1b[0m", "</script><img src=x onerror=alert(1)>", "| pipe `tick`",
                "\u202eevil", "1e-400", "--", "1 234")


def mutate_csv_bytes(data: bytes, op: str, rng: random.Random) -> tuple[bytes, str]:
    """One mutation of CSV text bytes; returns (new bytes, description)."""
    lines = data.split(b"\n")
    nonempty = [i for i, ln in enumerate(lines) if ln.strip()] or [0]
    if op == "flip_random":
        buf = bytearray(data)
        k = rng.choice((1, 4, 32))
        for _ in range(k):
            _flip(buf, rng.randrange(len(buf)), rng.randrange(256))
        return bytes(buf), f"{k} byte flips"
    if op == "truncate":
        cut = rng.randrange(0, max(1, len(data)))
        return data[:cut], f"truncate at byte {cut}"
    if op == "drop_line":
        i = rng.choice(nonempty)
        return b"\n".join(lines[:i] + lines[i + 1:]), f"drop line {i + 1}"
    if op == "dup_line":
        i = rng.choice(nonempty)
        return b"\n".join(lines[:i + 1] + lines[i:]), f"duplicate line {i + 1}"
    if op == "swap_lines":
        i, j = rng.choice(nonempty), rng.choice(nonempty)
        lines[i], lines[j] = lines[j], lines[i]
        return b"\n".join(lines), f"swap lines {i + 1} and {j + 1}"
    if op == "junk_field":
        text = data.decode("utf-8", "replace")
        spans = [m.span() for m in re.finditer(r'"[^"\n]*"|[0-9][0-9.,eE+-]*', text)]
        if not spans:
            return data + b"\n\"", "append a lone quote"
        out = text
        k = rng.choice((1, 3, 20))
        for _ in range(k):
            spans = [m.span() for m in re.finditer(r'"[^"\n]*"|[0-9][0-9.,eE+-]*', out)] or [(0, 0)]
            a, b = rng.choice(spans)
            junk = rng.choice(_JUNK_FIELDS)
            quoted = out[a:a + 1] == '"'
            out = out[:a] + (f'"{junk}"' if quoted else junk) + out[b:]
        return out.encode("utf-8", "surrogatepass"), f"{k} junk fields"
    if op == "non_utf8":
        buf = bytearray(data)
        pos = rng.randrange(len(buf) + 1)
        return bytes(buf[:pos]) + b"\xff\xfe\xc3\x28\xa0\xa1" + bytes(buf[pos:]), \
            f"non-UTF-8 bytes at {pos}"
    if op == "huge_field":
        i = rng.choice(nonempty)
        lines[i] = lines[i] + b',"' + b"x" * (1 << 20) + b'"'
        return b"\n".join(lines), f"1 MB field on line {i + 1}"
    if op == "crlf_bom":
        return b"\xef\xbb\xbf" + data.replace(b"\n", b"\r\n"), "BOM + CRLF"
    if op == "delimiter":
        return data.replace(b'","', rng.choice((b'";"', b'"\t"', b'" , "'))), "other delimiter"
    if op == "header_only":
        head = [ln for ln in lines if ln.startswith(b'"')][:1]
        return b"\n".join(head) + b"\n", "header line only"
    if op == "nul_bytes":
        pos = rng.randrange(len(data) + 1)
        return data[:pos] + b"\x00" * rng.choice((1, 16)) + data[pos:], f"NUL bytes at {pos}"
    raise ValueError(op)


CSV_BYTE_OPS = ("flip_random", "truncate", "drop_line", "dup_line", "swap_lines", "junk_field",
                "non_utf8", "huge_field", "crlf_bom", "delimiter", "header_only", "nul_bytes")


# ----------------------------------------------------------------------------- row-level: SQL
KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
MEMCPY = "CUPTI_ACTIVITY_KIND_MEMCPY"
MEMSET = "CUPTI_ACTIVITY_KIND_MEMSET"
SYNC = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"
RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME"
NVTX = "NVTX_EVENTS"
EVENT_TABLES = (KERNEL, MEMCPY, MEMSET, SYNC, RUNTIME, NVTX)
META_TABLES = ("StringIds", "ThreadNames", "PROCESSES", "TARGET_INFO_GPU", "TARGET_INFO_CUDA_GPU",
               "ANALYSIS_DETAILS", "META_DATA_EXPORT", "EXPORT_META_DATA", "META_DATA_CAPTURE",
               "TARGET_INFO_SESSION_START_TIME", "TARGET_INFO_SYSTEM_ENV", "GPU_METRICS",
               "TARGET_INFO_GPU_METRICS", "CUDA_GPU_MEMORY_USAGE_EVENTS")
ID_COLUMNS = ("deviceId", "streamId", "contextId", "globalTid", "globalPid", "textId", "nameId",
              "domainId", "correlationId", "demangledName", "shortName", "endGlobalTid", "id",
              "pid", "eventType", "copyKind", "srcKind", "dstKind", "eventClass", "graphNodeId")

HOSTILE = "</script><img src=x onerror=alert(1)> | pipe `tick` \x1b[31mred\x1b[0m \r\u202eevil"


def _tables(conn: sqlite3.Connection) -> list[str]:
    return [r[0] for r in conn.execute(
        "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'")]


def _cols(conn: sqlite3.Connection, table: str) -> list[str]:
    return [r[1] for r in conn.execute(f'PRAGMA table_info("{table}")')]


def _present(conn, names) -> list[str]:
    have = set(_tables(conn))
    return [t for t in names if t in have]


def _sel(rng: random.Random) -> str:
    m = rng.choice((1, 2, 3, 7, 50))
    return f"rowid % {m} = {rng.randrange(m)}"


def _timed_tables(conn) -> list[str]:
    return [t for t in _present(conn, EVENT_TABLES) if {"start", "end"} <= set(_cols(conn, t))]


def _pick(rng, items, what):
    if not items:
        raise NotApplicable(what)
    return rng.choice(list(items))


class NotApplicable(Exception):
    """The seed lacks what a corruption needs (the runner then tries another one)."""


def c_nulls(conn, rng):
    t = _pick(rng, _present(conn, EVENT_TABLES + META_TABLES), "tables")
    c = _pick(rng, _cols(conn, t), "columns")
    conn.execute(f'UPDATE "{t}" SET "{c}" = NULL WHERE {_sel(rng)}')
    return f"NULL {t}.{c}"


def c_end_before_start(conn, rng):
    t = _pick(rng, _timed_tables(conn), "timed tables")
    conn.execute(f'UPDATE "{t}" SET "end" = start - (1 + (rowid * 7919) % 1000000) WHERE {_sel(rng)}')
    return f"end < start in {t}"


def c_zero_duration(conn, rng):
    t = _pick(rng, _timed_tables(conn), "timed tables")
    conn.execute(f'UPDATE "{t}" SET "end" = start WHERE {_sel(rng)}')
    return f"zero durations in {t}"


def c_absurd_duration(conn, rng):
    t = _pick(rng, _timed_tables(conn), "timed tables")
    big = rng.choice(("start + 4611686018427387904", "9223372036854775807", "start + 86400000000000"))
    conn.execute(f'UPDATE "{t}" SET "end" = {big} WHERE {_sel(rng)}')
    return f"absurd durations in {t} ({big})"


def c_dup_correlation(conn, rng):
    ts = [t for t in _present(conn, (KERNEL, MEMCPY, RUNTIME, SYNC)) if "correlationId" in _cols(conn, t)]
    t = _pick(rng, ts, "correlated tables")
    conn.execute(f'UPDATE "{t}" SET correlationId = (SELECT min(correlationId) FROM "{t}") '
                 f'WHERE {_sel(rng)}')
    return f"duplicate correlationIds in {t}"


def c_missing_correlation(conn, rng):
    if RUNTIME in _tables(conn) and rng.random() < 0.5:
        conn.execute(f'DELETE FROM "{RUNTIME}" WHERE {_sel(rng)}')
        return "runtime rows deleted (GPU work without its launch call)"
    ts = [t for t in _present(conn, (KERNEL, MEMCPY, MEMSET, SYNC)) if "correlationId" in _cols(conn, t)]
    t = _pick(rng, ts, "correlated tables")
    conn.execute(f'UPDATE "{t}" SET correlationId = correlationId + 1000000007 WHERE {_sel(rng)}')
    return f"dangling correlationIds in {t}"


def c_far_timestamps(conn, rng):
    t = _pick(rng, _timed_tables(conn), "timed tables")
    d = rng.choice((10**15, 10**17, -10**15, -10**17, 4 * 10**18))
    conn.execute(f'UPDATE "{t}" SET start = start + {d}, "end" = "end" + {d} WHERE {_sel(rng)}')
    return f"timestamps shifted by {d} in {t}"


def c_negative_ids(conn, rng):
    pairs = [(t, c) for t in _present(conn, EVENT_TABLES + META_TABLES) for c in _cols(conn, t)
             if c in ID_COLUMNS]
    t, c = _pick(rng, pairs, "id columns")
    v = rng.choice((-1, -2, -(1 << 40), -(1 << 62), -9223372036854775807))
    conn.execute(f'UPDATE "{t}" SET "{c}" = {v} WHERE {_sel(rng)}')
    return f"{t}.{c} = {v}"


def c_huge_string(conn, rng):
    size, rows = 1 << 20, rng.choice((1, 3, 8))  # a few rows: 1 MB each (not GBs of file)
    if "StringIds" in _tables(conn) and rng.random() < 0.7:
        conn.execute(f"UPDATE StringIds SET value = ? WHERE rowid IN (SELECT rowid FROM StringIds "
                     f"WHERE {_sel(rng)} LIMIT {rows})", ("K" * size + "_kernel",))
        return f"1 MB StringIds values ({rows} rows)"
    if NVTX in _tables(conn) and "text" in _cols(conn, NVTX):
        conn.execute(f'UPDATE "{NVTX}" SET text = ? WHERE rowid IN (SELECT rowid FROM "{NVTX}" '
                     f"WHERE {_sel(rng)} LIMIT {rows})", ("N" * size,))
        return f"1 MB inline NVTX text ({rows} rows)"
    raise NotApplicable("strings")


_BAD_UTF8 = b"\xff\xfe\xc3\x28 bad \xe2\x82 utf8 \xf0\x28\x8c\xbc"


def c_non_utf8(conn, rng):
    targets = [(t, c) for t, c in (("StringIds", "value"), (NVTX, "text"), ("PROCESSES", "name"),
                                   ("TARGET_INFO_GPU", "name"), ("META_DATA_EXPORT", "value"),
                                   ("EXPORT_META_DATA", "value"), ("TARGET_INFO_SYSTEM_ENV", "value"),
                                   ("META_DATA_CAPTURE", "value"))
               if t in _tables(conn) and c in _cols(conn, t)]
    t, c = _pick(rng, targets, "text columns")
    as_blob = rng.random() < 0.5
    conn.execute(f'UPDATE "{t}" SET "{c}" = {"?" if as_blob else "CAST(? AS TEXT)"} '
                 f'WHERE {_sel(rng)}', (_BAD_UTF8,))
    return f"non-UTF-8 {'blob' if as_blob else 'text'} in {t}.{c}"


def c_type_confusion(conn, rng):
    pairs = [(t, c) for t in _present(conn, EVENT_TABLES + META_TABLES) for c in _cols(conn, t)]
    t, c = _pick(rng, pairs, "columns")
    v = rng.choice(("'abc'", "x'00ff10'", "1.5e300", "-0.0", "9.9e18", "'12abc'", "''", "0.5",
                    "'∞'", "-1.5e300"))
    conn.execute(f'UPDATE "{t}" SET "{c}" = {v} WHERE {_sel(rng)}')
    return f"{t}.{c} = {v}"


def _nvtx_thread(conn) -> int:
    if NVTX in _tables(conn) and "globalTid" in _cols(conn, NVTX):
        row = conn.execute(f'SELECT globalTid FROM "{NVTX}" WHERE globalTid IS NOT NULL '
                           "GROUP BY globalTid ORDER BY count(*) DESC LIMIT 1").fetchone()
        if row and row[0] is not None:
            return int(row[0])
    return (23817 << 24) | 23817


def _capture_span(conn) -> tuple[int, int]:
    for t in _timed_tables(conn):
        row = conn.execute(f'SELECT min(start), max("end") FROM "{t}"').fetchone()
        if row and row[0] is not None and row[1] is not None:
            try:
                lo, hi = int(row[0]), int(row[1])
            except (TypeError, ValueError):
                continue
            if hi > lo:
                return lo, hi
    return 1_000_000_000, 2_000_000_000


def insert_nested_nvtx(conn, depth: int, *, text: str = "nest", event_type: int = 59,
                       gtid: int | None = None) -> None:
    """``depth`` properly nested push/pop ranges on one thread (fast: one recursive CTE)."""
    if NVTX not in _tables(conn):
        raise NotApplicable("NVTX_EVENTS")
    gtid = _nvtx_thread(conn) if gtid is None else gtid
    lo, hi = _capture_span(conn)
    step = max(1, (hi - lo) // (2 * depth + 2))
    cols = _cols(conn, NVTX)
    extra = ", endGlobalTid" if "endGlobalTid" in cols else ""
    extra_v = ", NULL" if extra else ""
    conn.execute(
        f"WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < {depth - 1}) "
        f'INSERT INTO "{NVTX}" (start, "end", eventType, text, globalTid{extra}) '
        f"SELECT {lo} + i * {step}, {hi} - i * {step}, {event_type}, '{text}' || (i % 7), "
        f"{gtid}{extra_v} FROM c")


def c_nvtx_deep(conn, rng):
    depth = rng.choice((200, 2_000, 20_000))
    insert_nested_nvtx(conn, depth, event_type=rng.choice((59, 60)))
    return f"{depth}-deep NVTX nesting"


def c_nvtx_unbalanced(conn, rng):
    if NVTX not in _tables(conn):
        raise NotApplicable("NVTX_EVENTS")
    kind = rng.choice(("never_end", "crossing", "end_is_start", "inverted"))
    if kind == "never_end":
        conn.execute(f'UPDATE "{NVTX}" SET "end" = NULL WHERE eventType IN (59, 60, 70, 71) '
                     f"AND {_sel(rng)}")
    elif kind == "crossing":  # ends moved past their parents' ends: no longer nested
        conn.execute(f'UPDATE "{NVTX}" SET "end" = "end" + (rowid * 104729) % 500000000 '
                     f"WHERE eventType IN (59, 60, 70, 71) AND {_sel(rng)}")
    elif kind == "end_is_start":
        conn.execute(f'UPDATE "{NVTX}" SET "end" = start WHERE {_sel(rng)}')
    else:
        conn.execute(f'UPDATE "{NVTX}" SET start = "end", "end" = start WHERE {_sel(rng)}')
    return f"unbalanced NVTX ({kind})"


def c_nvtx_other_thread(conn, rng):
    if NVTX not in _tables(conn) or "endGlobalTid" not in _cols(conn, NVTX):
        raise NotApplicable("endGlobalTid")
    conn.execute(f'UPDATE "{NVTX}" SET endGlobalTid = globalTid + 1 + (rowid % 5) '
                 f"WHERE eventType IN (59, 60, 70, 71) AND {_sel(rng)}")
    return "NVTX ranges ending on another thread"


def c_many_streams(conn, rng):
    ts = [t for t in _present(conn, (KERNEL, MEMCPY, MEMSET)) if "streamId" in _cols(conn, t)]
    t = _pick(rng, ts, "stream tables")
    conn.execute(f'UPDATE "{t}" SET streamId = 1000 + rowid')
    n = conn.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0]
    return f"{n} rows of {t} on {n} distinct streams"


def c_drop_table(conn, rng):
    t = _pick(rng, _tables(conn), "tables")
    conn.execute(f'DROP TABLE "{t}"')
    return f"dropped {t}"


def c_empty_table(conn, rng):
    t = _pick(rng, _tables(conn), "tables")
    conn.execute(f'DELETE FROM "{t}"')
    return f"emptied {t}"


def c_drop_column(conn, rng):
    pairs = [(t, c) for t in _present(conn, EVENT_TABLES + META_TABLES) for c in _cols(conn, t)]
    t, c = _pick(rng, pairs, "columns")
    try:
        conn.execute(f'ALTER TABLE "{t}" DROP COLUMN "{c}"')
    except sqlite3.OperationalError:  # last column / primary key / indexed: rebuild instead
        keep = [x for x in _cols(conn, t) if x != c]
        if not keep:
            raise NotApplicable("single-column table") from None
        sel = ", ".join(f'"{x}"' for x in keep)
        conn.execute(f'CREATE TABLE "_tmp_{t}" AS SELECT {sel} FROM "{t}"')
        conn.execute(f'DROP TABLE "{t}"')
        conn.execute(f'ALTER TABLE "_tmp_{t}" RENAME TO "{t}"')
    return f"dropped column {t}.{c}"


def c_dup_rows(conn, rng):
    t = _pick(rng, _present(conn, EVENT_TABLES + ("StringIds", "ThreadNames", "PROCESSES",
                                                  "TARGET_INFO_GPU")), "tables")
    try:
        conn.execute(f'INSERT INTO "{t}" SELECT * FROM "{t}" WHERE {_sel(rng)}')
    except sqlite3.IntegrityError:  # a primary key (StringIds.id): duplicate the value instead
        raise NotApplicable("unique key") from None
    return f"duplicated rows of {t}"


def c_bad_meta(conn, rng):
    opts = []
    if "ANALYSIS_DETAILS" in _tables(conn) and "duration" in _cols(conn, "ANALYSIS_DETAILS"):
        opts += ["UPDATE ANALYSIS_DETAILS SET duration = 0", "UPDATE ANALYSIS_DETAILS SET duration = -5",
                 "UPDATE ANALYSIS_DETAILS SET duration = 9223372036854775807",
                 "UPDATE ANALYSIS_DETAILS SET duration = 1"]
    for t in _present(conn, ("META_DATA_EXPORT", "EXPORT_META_DATA")):
        opts += [f"UPDATE {t} SET value = '99.1.0' WHERE name LIKE '%SCHEMA_VERSION%'",
                 f"UPDATE {t} SET value = 'abc' WHERE name LIKE '%VERSION%'",
                 f"UPDATE {t} SET value = NULL"]
    if "TARGET_INFO_SESSION_START_TIME" in _tables(conn):
        opts += ["UPDATE TARGET_INFO_SESSION_START_TIME SET utcEpochNs = -1",
                 "UPDATE TARGET_INFO_SESSION_START_TIME SET utcEpochNs = 'soon'",
                 "UPDATE TARGET_INFO_SESSION_START_TIME SET utcEpochNs = 9223372036854775807"]
    for t in _present(conn, ("TARGET_INFO_GPU", "TARGET_INFO_CUDA_GPU")):
        for c in _cols(conn, t):
            if c in ("smCount", "clockRate", "memoryBandwidth", "totalMemory", "computeMajor",
                     "id", "l2CacheSize"):
                opts += [f'UPDATE {t} SET "{c}" = 0', f'UPDATE {t} SET "{c}" = -7',
                         f'UPDATE {t} SET "{c}" = 9223372036854775807']
    sql = _pick(rng, opts, "metadata")
    conn.execute(sql)
    return sql


def c_event_type(conn, rng):
    if NVTX not in _tables(conn):
        raise NotApplicable("NVTX_EVENTS")
    v = rng.choice((0, 34, 39, 59, 60, 70, 71, 75, 9999, -1, "NULL"))
    conn.execute(f'UPDATE "{NVTX}" SET eventType = {v} WHERE {_sel(rng)}')
    return f"NVTX eventType = {v}"


def c_hostile_names(conn, rng):
    targets = [(t, c) for t, c in (("StringIds", "value"), (NVTX, "text"), ("PROCESSES", "name"),
                                   ("TARGET_INFO_GPU", "name")) if t in _tables(conn)
               and c in _cols(conn, t)]
    t, c = _pick(rng, targets, "text columns")
    conn.execute(f'UPDATE "{t}" SET "{c}" = ? || "{c}" WHERE {_sel(rng)}', (HOSTILE,))
    return f"hostile text in {t}.{c}"


CORRUPTIONS: dict[str, Callable[[sqlite3.Connection, random.Random], str]] = {
    "nulls": c_nulls, "end_before_start": c_end_before_start, "zero_duration": c_zero_duration,
    "absurd_duration": c_absurd_duration, "dup_correlation": c_dup_correlation,
    "missing_correlation": c_missing_correlation, "far_timestamps": c_far_timestamps,
    "negative_ids": c_negative_ids, "huge_string": c_huge_string, "non_utf8": c_non_utf8,
    "type_confusion": c_type_confusion, "nvtx_deep": c_nvtx_deep,
    "nvtx_unbalanced": c_nvtx_unbalanced, "nvtx_other_thread": c_nvtx_other_thread,
    "many_streams": c_many_streams, "drop_table": c_drop_table, "empty_table": c_empty_table,
    "drop_column": c_drop_column, "dup_rows": c_dup_rows, "bad_meta": c_bad_meta,
    "event_type": c_event_type, "hostile_names": c_hostile_names,
}


def corrupt_sqlite(path: Path, plan: list[tuple[str, int]]) -> list[str]:
    """Apply SQL corruptions (name, seed) to the SQLite file ``path`` in place (a copy!)."""
    done = []
    conn = sqlite3.connect(str(path), isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=OFF")
        conn.execute("BEGIN")
        for name, seed in plan:
            rng = random.Random(seed)
            try:
                done.append(CORRUPTIONS[name](conn, rng))
            except (NotApplicable, sqlite3.IntegrityError) as exc:  # NOT NULL / UNIQUE columns
                done.append(f"{name}: n/a ({exc})")
        conn.execute("COMMIT")
    finally:
        conn.close()
    return done


# ----------------------------------------------------------------------------------- oracle
@dataclass
class Outcome:
    kind: str  # "report" | "typed_error"
    detail: str = ""
    warnings: int = 0
    codes: list[str] = field(default_factory=list)


class OracleFailure(AssertionError):
    """The tool ended a case in a way the promise excludes (not an exception it raised)."""


def fingerprint(path: Path) -> tuple[str, int, int]:
    st = os.stat(path)
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest(), st.st_mtime_ns, st.st_size


_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f\u202a-\u202e\u2066-\u2069]")
_SHARE_KEYS = re.compile(r"(^|_)(share|utilization|fraction)$")
_NONNEG_KEYS = re.compile(r"(^|_)(duration|mean|median|p90|p50|max|min|total|busy|window|"
                          r"gpu_work|compute_busy|copy_busy|idle|count|launches|calls)(_ms|_ns)?$")
_SIGNED_HINT = ("delta", "diff", "change", "skew", "offset", "start", "end", "utc", "ts_",
                "z_score", "zscore", "ci_", "slope")


def check_view(view, where: str = "view") -> None:
    """Numbers a report presents must be plausible: finite, shares in [0, 1], durations ≥ 0."""

    def walk(obj, path: str) -> None:
        if isinstance(obj, dict):
            for k, v in obj.items():
                walk(v, f"{path}.{k}")
                key = str(k).lower()
                if isinstance(v, bool) or not isinstance(v, (int, float)):
                    continue
                if isinstance(v, float) and not math.isfinite(v):
                    raise OracleFailure(f"{path}.{k} = {v} (not finite)")
                if any(h in key for h in _SIGNED_HINT):
                    continue
                if _SHARE_KEYS.search(key) and not (-1e-9 <= v <= 1 + 1e-6):
                    raise OracleFailure(f"{path}.{k} = {v}: a share outside [0, 1]")
                if _NONNEG_KEYS.search(key) and v < 0:
                    raise OracleFailure(f"{path}.{k} = {v}: a negative duration/count")
        elif isinstance(obj, list):
            for i, v in enumerate(obj):
                walk(v, f"{path}[{i}]")
        elif isinstance(obj, float) and not math.isfinite(obj):
            raise OracleFailure(f"{path} = {obj} (not finite)")

    walk(view, where)


_VALIDATOR = []


def check_schema(view) -> None:
    """The analysis JSON must validate against the shipped schema (when jsonschema is there)."""
    if not _VALIDATOR:
        try:
            import jsonschema

            from nsys_diag.report.json_out import load_schema

            _VALIDATOR.append(jsonschema.Draft202012Validator(load_schema()))
        except Exception:  # noqa: BLE001 - no jsonschema / no schema: skip this check
            _VALIDATOR.append(None)
    if _VALIDATOR[0] is None:
        return
    errors = list(_VALIDATOR[0].iter_errors(view))
    if errors:
        e = errors[0]
        raise OracleFailure(f"the analysis JSON breaks its schema at {list(e.path)}: "
                            f"{e.message[:300]} ({len(errors)} error(s))")


def check_error_line(exc) -> str:
    line = exc.one_line()
    if not isinstance(line, str) or not line.strip():
        raise OracleFailure(f"{type(exc).__name__} with an empty message")
    if _CONTROL.search(line):
        raise OracleFailure(f"error message holds control characters: {line[:300]!r}")
    if len(line) > 4000:
        raise OracleFailure(f"error message of {len(line)} characters")
    return line


def run_case(path: Path, *, ncu: Path | None = None, differential: bool = False) -> Outcome:
    """Run the user's pipeline on ``path``; return the outcome or raise (see module docstring).

    ``differential``: also load an SQLite input with the plain ``sqlite3`` reader and require the
    same frames and warnings as the Arrow (ADBC) reader gave.
    """
    from nsys_diag.loaders import load_trace
    from nsys_diag.model.errors import NsysDiagError
    from nsys_diag.model.options import AnalyzeOptions
    from nsys_diag.model.thresholds import Thresholds
    from nsys_diag.app.analyze import analyze_bundle
    from nsys_diag.report.inventory_render import build_inspect_view, inspect_to_json, render_inspect_text
    from nsys_diag.report.json_out import to_json
    from nsys_diag.report.markdown import render_markdown
    from nsys_diag.report.text import render_text

    inputs = [Path(path)] + ([Path(ncu)] if ncu else [])
    before = [fingerprint(p) for p in inputs]
    try:
        try:
            bundle = load_trace(path, ncu=ncu)
            iv = build_inspect_view(bundle)
            render_inspect_text(iv)
            inspect_to_json(iv)
            options = AnalyzeOptions(ncu_path=str(ncu) if ncu else None)
            view = analyze_bundle(bundle, options, Thresholds(), GENERATED_AT)
            to_json(view)  # allow_nan=False: a NaN is a failure here
            render_markdown(view)
            render_text(view)
            _render_html(view)
        except NsysDiagError as exc:
            return Outcome("typed_error", check_error_line(exc))
        check_view(view)
        check_schema(view)
        if differential and is_sqlite(Path(path)):
            compare_readers(Path(path), bundle, ncu)
        quality = view.get("data_quality") or []
        return Outcome("report", view.get("verdict", {}).get("code", ""), len(quality),
                       [q.get("code", "") for q in quality])
    finally:
        after = [fingerprint(p) for p in inputs]
        if after != before:
            raise OracleFailure(f"input modified: {inputs}")


def compare_readers(path: Path, bundle, ncu: Path | None = None) -> None:
    """The ``sqlite3`` fallback reader must give what the ADBC reader gave (when ADBC is used)."""
    import pandas as pd

    from nsys_diag.loaders import load_trace

    if bundle.meta.extra.get("reader") != "adbc":
        return
    old = os.environ.get("NSYS_DIAG_NO_ADBC")
    os.environ["NSYS_DIAG_NO_ADBC"] = "1"
    try:
        other = load_trace(path, ncu=ncu)
    finally:
        if old is None:
            os.environ.pop("NSYS_DIAG_NO_ADBC", None)
        else:
            os.environ["NSYS_DIAG_NO_ADBC"] = old
    for name in bundle.FRAMES:
        a, b = getattr(bundle, name), getattr(other, name)
        try:
            pd.testing.assert_frame_equal(a, b, check_categorical=False, check_dtype=True)
        except AssertionError as exc:
            raise OracleFailure(f"readers disagree on frame {name!r}: {str(exc)[:400]}") from None
    wa = [(w.code, w.count) for w in bundle.warnings]
    wb = [(w.code, w.count) for w in other.warnings]
    if wa != wb:
        raise OracleFailure(f"readers disagree on warnings: {wa} vs {wb}")


def _render_html(view) -> None:
    try:
        from nsys_diag.report.html_report import render_html
    except ModuleNotFoundError:  # a build without the HTML renderer
        return
    render_html(view)


# -------------------------------------------------------------------------------- one case
@dataclass
class Case:
    seed: str  # seed name
    family: str  # "sqlite_bytes" | "csv_bytes" | "sql"
    ops: list  # [(op or corruption name, int seed), ...]
    with_ncu: bool = False  # CSV mutant attached to a synth nsys trace with --ncu

    def label(self) -> str:
        ops = "+".join(f"{o}@{s}" for o, s in self.ops)
        return f"{self.seed}:{self.family}:{ops}" + (":ncu" if self.with_ncu else "")


def make_input(case: Case, seeds: dict[str, Path], workdir: Path) -> tuple[Path, Path | None, list[str]]:
    """Write the mutated input of ``case`` into ``workdir``; returns (trace, ncu, descriptions)."""
    src = seeds[case.seed]
    workdir.mkdir(parents=True, exist_ok=True)
    desc: list[str] = []
    if case.family == "sql":
        dst = workdir / f"mut_{src.stem}.sqlite"
        shutil.copyfile(src, dst)
        desc = corrupt_sqlite(dst, case.ops)
        return dst, None, desc
    data = src.read_bytes()
    for op, seed in case.ops:
        rng = random.Random(seed)
        if case.family == "sqlite_bytes":
            data, d = mutate_sqlite_bytes(data, op, rng)
        else:
            data, d = mutate_csv_bytes(data, op, rng)
        desc.append(d)
    dst = workdir / f"mut_{src.stem}{src.suffix}"
    dst.write_bytes(data)
    if case.with_ncu:
        host = workdir / "host_trace.sqlite"
        shutil.copyfile(seeds["synth_worked_2024.6"], host)
        return host, dst, desc
    return dst, None, desc


# -------------------------------------------------------------------------- saved inputs
REGRESSION_DIR = REPO / "tests" / "regressions" / "inputs"


def save_regression(trace: Path, ncu: Path | None, info: dict, directory: Path = REGRESSION_DIR
                    ) -> Path:
    """Store a failing input gzip-compressed (+ a JSON sidecar); returns the .json path."""
    import json

    directory.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256(trace.read_bytes()).hexdigest()[:12]
    stem = f"{info.get('kind', 'crash')}-{digest}"
    with gzip.open(directory / f"{stem}{trace.suffix}.gz", "wb") as fh:
        fh.write(trace.read_bytes())
    meta = dict(info, trace=f"{stem}{trace.suffix}.gz")
    if ncu is not None:
        with gzip.open(directory / f"{stem}.ncu.csv.gz", "wb") as fh:
            fh.write(ncu.read_bytes())
        meta["ncu"] = f"{stem}.ncu.csv.gz"
    out = directory / f"{stem}.json"
    out.write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return out
