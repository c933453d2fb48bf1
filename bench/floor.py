"""Benchmark child: the floor — read the columns ``analyze`` needs out of SQLite into Arrow.

    python bench/floor.py TRACE {adbc|connectorx|count}

* ``adbc``: ``adbc_driver_sqlite.dbapi`` → ``cursor.fetch_arrow_table()`` (SQLite → Arrow in C).
* ``connectorx``: ``connectorx.read_sql(..., return_type="arrow")``, one query per table, no
  partitioning (single-threaded, like the other rows).
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


def read_adbc(path: str, qs: dict[str, str]) -> dict:
    import adbc_driver_sqlite.dbapi as dbapi  # imported by main() before the clock starts

    conn = dbapi.connect(ro_uri(path), autocommit=True)
    tables = {}
    try:
        for table, sql in qs.items():
            cur = conn.cursor()
            # one big batch per table (the driver's default is 1024 rows per batch)
            cur.adbc_statement.set_options(**{"adbc.sqlite.query.batch_rows": str(1 << 22)})
            cur.execute(sql)
            tables[table] = cur.fetch_arrow_table()
            cur.close()
    finally:
        conn.close()
    return tables


def read_connectorx(path: str, qs: dict[str, str]) -> dict:
    import connectorx as cx

    uri = "sqlite://" + str(Path(path).resolve())
    return {table: cx.read_sql(uri, sql, return_type="arrow") for table, sql in qs.items()}


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
    if reader == "adbc":  # the in-process time is the read alone, not the library import
        import adbc_driver_sqlite.dbapi  # noqa: F401
        import pyarrow  # noqa: F401
    elif reader == "connectorx":
        import connectorx  # noqa: F401
        import pyarrow  # noqa: F401
    t0 = time.perf_counter()
    if reader == "count":
        res = scan_count(path)
        rows, nbytes = sum(int(v[0]) for v in res.values()), 0
    else:
        qs = queries(path)
        tables = read_adbc(path, qs) if reader == "adbc" else read_connectorx(path, qs)
        rows = sum(t.num_rows for t in tables.values())
        nbytes = sum(t.nbytes for t in tables.values())
    dt = time.perf_counter() - t0
    print(json.dumps({"reader": reader, "rows": rows, "arrow_bytes": nbytes, "read_s": dt}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
