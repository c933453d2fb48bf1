"""Benchmark child: the floor — read the columns ``analyze`` needs out of SQLite into Arrow.

    python bench/floor.py TRACE {adbc|connectorx|adbc-threads|connectorx-threads|count}

* ``adbc``: ``adbc_driver_sqlite.dbapi`` → ``cursor.fetch_arrow_table()`` (SQLite → Arrow in C).
* ``connectorx``: ``connectorx.read_sql(..., return_type="arrow")``, one query per table, no
  partitioning.
* ``…-threads``: the same reads, one thread (and connection) per table, as many threads at a time
  as ``nsys-diag`` uses (usable CPUs, at most 4) — the floor for a reader that reads tables
  concurrently, as ``analyze`` does.
* ``count``: reference C-level scan through ``sqlite3``: ``SELECT count(*), sum(end - start)``
  of each table with times — the cost of touching every row without building anything.

All tables stay in memory until the end (an analysis needs them all at once), so the child's
peak RSS is the memory floor too. Prints one JSON line: rows, Arrow bytes, in-process seconds.
"""
from __future__ import annotations

import json
import sqlite3
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from needed_columns import DURATION_TABLES, queries, ro_uri  # noqa: E402

from nsys_diag.loaders.parallel_reads import read_threads as analyze_threads  # noqa: E402  same count


def _adbc_fetch(conn, sql: str):
    """One query through an ADBC DB-API connection → ``pyarrow.Table``."""
    cur = conn.cursor()
    try:
        # one big batch per table (the driver's default is 1024 rows per batch)
        cur.adbc_statement.set_options(**{"adbc.sqlite.query.batch_rows": str(1 << 22)})
        cur.execute(sql)
        return cur.fetch_arrow_table()
    finally:
        cur.close()


def read_adbc(path: str, qs: dict[str, str]) -> dict:
    import adbc_driver_sqlite.dbapi as dbapi  # imported by main() before the clock starts

    conn = dbapi.connect(ro_uri(path), autocommit=True)
    try:
        return {table: _adbc_fetch(conn, sql) for table, sql in qs.items()}
    finally:
        conn.close()


def read_connectorx(path: str, qs: dict[str, str]) -> dict:
    read = connectorx_one(path)
    return {table: read(sql) for table, sql in qs.items()}


def read_threads(read_one, qs: dict[str, str]) -> dict:
    """``read_one(sql)`` for every table, concurrently (GIL released inside the readers)."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=analyze_threads()) as pool:
        futures = {t: pool.submit(read_one, sql) for t, sql in qs.items()}
    return {t: f.result() for t, f in futures.items()}


def adbc_one(path: str):
    """``read(sql)`` on a connection of its own (one per thread)."""
    import adbc_driver_sqlite.dbapi as dbapi

    def read(sql: str):
        conn = dbapi.connect(ro_uri(path), autocommit=True)
        try:
            return _adbc_fetch(conn, sql)
        finally:
            conn.close()
    return read


def connectorx_one(path: str):
    import connectorx as cx

    uri = "sqlite://" + str(Path(path).resolve())
    return lambda sql: cx.read_sql(uri, sql, return_type="arrow")


def scan_count(path: str) -> dict:
    con = sqlite3.connect(ro_uri(path), uri=True)
    have = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    out = {}
    for t in DURATION_TABLES:
        if t in have:
            out[t] = con.execute(f'SELECT count(*), sum("end" - start) FROM "{t}"').fetchone()
    con.close()
    return out


def main() -> int:
    path, reader = sys.argv[1], sys.argv[2]
    if reader.startswith("adbc"):  # the in-process time is the read alone, not the import
        import adbc_driver_sqlite.dbapi  # noqa: F401
        import pyarrow  # noqa: F401
    elif reader.startswith("connectorx"):
        import connectorx  # noqa: F401
        import pyarrow  # noqa: F401
    t0 = time.perf_counter()
    if reader == "count":
        res = scan_count(path)
        rows, nbytes = sum(int(v[0]) for v in res.values()), 0
    else:
        qs = queries(path)
        if reader == "adbc-threads":
            tables = read_threads(adbc_one(path), qs)
        elif reader == "connectorx-threads":
            tables = read_threads(connectorx_one(path), qs)
        else:
            tables = read_adbc(path, qs) if reader == "adbc" else read_connectorx(path, qs)
        rows = sum(t.num_rows for t in tables.values())
        nbytes = sum(t.nbytes for t in tables.values())
    dt = time.perf_counter() - t0
    print(json.dumps({"reader": reader, "rows": rows, "arrow_bytes": nbytes, "read_s": dt}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
