"""What the benchmark reads: the columns ``nsys-diag analyze`` needs, per table (shared by the
floor and the naive baseline so both read exactly the same data).

The lists follow what the analyses consume (``nsys_diag/analyses/*``): kernels need their times,
device, stream, process, name ids and the correlation id that joins them to their launching API call;
API rows need times, thread, correlation id, name id and class (runtime/driver rows only);
NVTX needs ranges with text, thread, domain and payload; GPU metrics need timestamp, GPU,
metric and value. Columns absent from a given export are skipped (``PRAGMA table_info``).
Only this module and the children import it; it has no dependencies beyond the stdlib.
"""
from __future__ import annotations

import sqlite3

# table → (SQL expressions in SELECT order, WHERE clause). Expressions are plain column names
# except where a cast is needed for a typed Arrow column (GPU_METRICS.value is declared TEXT).
NEEDED: dict[str, tuple[tuple[str, ...], str]] = {
    "CUPTI_ACTIVITY_KIND_KERNEL": (  # streamId: the whole-run timeline's lane per stream
        ("start", "end", "deviceId", "streamId", "correlationId", "globalPid", "demangledName",
         "shortName"), ""),
    "CUPTI_ACTIVITY_KIND_RUNTIME": (  # eventClass: runtime vs driver names (suffix rules)
        ("start", "end", "globalTid", "correlationId", "nameId", "eventClass"),
        "eventClass IN (0, 1)"),
    "CUPTI_ACTIVITY_KIND_MEMCPY": (
        ("start", "end", "deviceId", "correlationId", "globalPid", "bytes", "copyKind",
         "srcKind", "dstKind"), ""),
    "CUPTI_ACTIVITY_KIND_MEMSET": (
        ("start", "end", "deviceId", "correlationId", "globalPid", "bytes"), ""),
    "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION": (
        ("start", "end", "deviceId", "correlationId", "globalPid", "syncType"), ""),
    "NVTX_EVENTS": (
        ("start", "end", "eventType", "text", "globalTid", "endGlobalTid", "textId", "domainId",
         "int64Value", "doubleValue"), "eventType IN (34, 39, 59, 60, 70, 71, 75)"),
    "GPU_METRICS": (("timestamp", "typeId", "metricId", "CAST(value AS REAL) AS value"), ""),
    "StringIds": (("id", "value"), ""),
}

DURATION_TABLES = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME",
                   "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
                   "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "NVTX_EVENTS")
"""Tables with start/end, scanned by the C-level reference (count + sum(end - start))."""


def ro_uri(path: str) -> str:
    from pathlib import Path
    from urllib.parse import quote

    return "file:" + quote(str(Path(path).resolve())) + "?mode=ro&immutable=1"


def _bare(expr: str) -> str:
    """Column name inside an expression such as ``CAST(value AS REAL)``."""
    return expr[5:].split(" ")[0] if expr.upper().startswith("CAST(") else expr


def queries(path: str) -> dict[str, str]:
    """table → SELECT of the needed columns that exist in this export (absent tables skipped)."""
    con = sqlite3.connect(ro_uri(path), uri=True)
    try:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        out = {}
        for table, (exprs, where) in NEEDED.items():
            if table not in tables:
                continue
            have = {r[1] for r in con.execute(f'PRAGMA table_info("{table}")')}
            sel = [e if e != _bare(e) else f'"{e}"' for e in exprs if _bare(e) in have]
            if not sel:
                continue
            if where and where.split(" ")[0] not in have:
                where = ""
            out[table] = f'SELECT {", ".join(sel)} FROM "{table}"' + (f" WHERE {where}" if where
                                                                      else "")
        return out
    finally:
        con.close()


def counts(path: str) -> dict[str, int]:
    """Row counts of the tables the benchmark reports (0 when absent)."""
    con = sqlite3.connect(ro_uri(path), uri=True)
    try:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        return {t: (con.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] if t in tables
                    else 0) for t in NEEDED}
    finally:
        con.close()
