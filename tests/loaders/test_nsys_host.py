"""OS runtime calls and CPU samples (``loaders/nsys_host.py``): layouts, windows, absent tables,
file order, and the real exports that hold them."""
from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from conftest import shared_trace
from nsys_diag.loaders.nsys_db import NsysDb
from nsys_diag.loaders.nsys_host import read_cpu_samples, read_osrt
from nsys_diag.loaders.nsys_sqlite import load_nsys_sqlite
from nsys_diag.loaders.nsys_strings import StringTable
from nsys_diag.loaders.read_window import ReadWindow
from nsys_diag.model import contracts as C
from tiny_nsys import GTID, PID, TID, write_tiny_nsys

STRINGS = {900: "read", 901: "pthread_cond_wait", 902: "poll", 903: "main", 904: "memcpy",
           905: "OS runtime libraries profiling started"}


def _add_strings(con: sqlite3.Connection) -> None:
    con.executemany("INSERT INTO StringIds VALUES (?, ?)", list(STRINGS.items()))


def _with_osrt(path, layout: str = "3.16") -> None:
    """OSRT_API in one of three real layouts: 3.16 (argumentsId), 2.9 (none), 2021 (+correlationId)."""
    con = sqlite3.connect(path)
    _add_strings(con)
    if layout == "2021":
        con.execute("CREATE TABLE OSRT_API (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass "
                    "INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT "
                    "NULL, returnValue INTEGER NOT NULL, nestingLevel INTEGER, callchainId INTEGER)")
        row = lambda s, e, c, n: (s, e, c, GTID, 7, n, 0, 0, 0)  # noqa: E731
    else:
        extra = ", argumentsId INTEGER" if layout == "3.16" else ""
        con.execute("CREATE TABLE OSRT_API (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass "
                    "INTEGER NOT NULL, globalTid INTEGER, nameId INTEGER NOT NULL, returnValue "
                    f"INTEGER NOT NULL, nestingLevel INTEGER, callchainId INTEGER{extra})")
        row = (lambda s, e, c, n: (s, e, c, GTID, n, 0, 0, 0, 0)) if extra else \
            (lambda s, e, c, n: (s, e, c, GTID, n, 0, 0, 0))  # noqa: E731
    rows = [row(5_000_000, 7_000_000, 27, 902),  # poll, out of time order on purpose
            row(1_000_000, 3_500_000, 27, 900), row(2_000_000, 2_000_000, 31, 905),
            row(3_600_000, 3_900_000, 27, 901)]
    marks = ",".join("?" * len(rows[0]))
    con.executemany(f"INSERT INTO OSRT_API VALUES ({marks})", rows)
    con.commit()
    con.close()


def _with_samples(path, *, enum: bool, symbol_name: bool = False) -> None:
    con = sqlite3.connect(path)
    _add_strings(con)
    con.execute("CREATE TABLE COMPOSITE_EVENTS (id INTEGER NOT NULL PRIMARY KEY, start INTEGER NOT "
                "NULL, cpu INTEGER, threadState INTEGER, globalTid INTEGER, cpuCycles INTEGER NOT "
                "NULL)")
    extra = ", symbolName TEXT" if symbol_name else ""
    con.execute("CREATE TABLE SAMPLING_CALLCHAINS (id INTEGER NOT NULL, symbol INTEGER NOT NULL, "
                "module INTEGER NOT NULL, kernelMode INTEGER, thumbCode INTEGER, unresolved "
                "INTEGER, specialEntry INTEGER, originalIP INTEGER, unwindMethod INTEGER, "
                f"stackDepth INTEGER NOT NULL{extra}, PRIMARY KEY (id, stackDepth))")
    # ids 3, 1, 2 (rows not in time order); sample 4 has no callchain; 5 points at a missing string
    con.executemany("INSERT INTO COMPOSITE_EVENTS VALUES (?, ?, ?, ?, ?, ?)", [
        (3, 4_000_000, 0, 7, GTID, 1), (1, 1_000_000, 0, 1, GTID, 1),
        (2, 2_500_000, 0, 1, GTID, 1), (4, 6_000_000, 0, None, GTID, 1),
        (5, 6_500_000, 0, 1, GTID, 1)])
    chain = [(2, 904, 0, 1), (2, 903, 0, 0), (1, 903, 0, 0), (3, 901, 0, 0), (5, 12345, 0, 0),
             (3, 903, 0, 1)]
    for cid, sym, mod, depth in chain:
        vals = (cid, sym, mod, 0, 0, 0, 0, 0, 0, depth) + ((None,) if symbol_name else ())
        con.execute(f"INSERT INTO SAMPLING_CALLCHAINS VALUES ({','.join('?' * len(vals))})", vals)
    if enum:
        con.execute("CREATE TABLE ENUM_SAMPLING_THREAD_STATE (id INTEGER PRIMARY KEY, name TEXT, "
                    "label TEXT)")
        con.executemany("INSERT INTO ENUM_SAMPLING_THREAD_STATE VALUES (?, ?, ?)",
                        [(1, "Running", "Running"), (7, "Waiting", "Waiting")])
    con.commit()
    con.close()


@pytest.mark.parametrize("layout", ["3.16", "2.9", "2021"])
def test_osrt_layouts(tmp_path, layout):
    p = write_tiny_nsys(tmp_path / "t.sqlite")
    _with_osrt(p, layout)
    b = load_nsys_sqlite(p)
    o = b.osrt.sort_values("start_ns").reset_index(drop=True)
    assert list(o.columns) == C.OSRT.names
    assert o["name"].astype(str).tolist() == ["read", "pthread_cond_wait", "poll"]  # marker gone
    assert o["start_ns"].tolist() == [1_000_000, 3_600_000, 5_000_000]
    assert o["end_ns"].tolist() == [3_500_000, 3_900_000, 7_000_000]
    assert set(o["pid"]) == {PID} and set(o["tid"]) == {TID}
    assert set(o["global_tid"]) == {GTID} and set(o["global_pid"]) == {GTID & ~0xFFFFFF}


def test_osrt_window_keeps_overlapping_calls(tmp_path):
    p = write_tiny_nsys(tmp_path / "t.sqlite")
    _with_osrt(p)
    with NsysDb(p) as db:
        o = read_osrt(db, StringTable(db), ReadWindow(3_000_000, 4_000_000))
    assert sorted(o["name"].astype(str)) == ["pthread_cond_wait", "read"]


@pytest.mark.parametrize("enum,symbol_name", [(True, False), (False, True)])
def test_cpu_samples(tmp_path, enum, symbol_name):
    p = write_tiny_nsys(tmp_path / "t.sqlite")
    _with_samples(p, enum=enum, symbol_name=symbol_name)
    s = load_nsys_sqlite(p).cpu_samples
    assert list(s.columns) == C.CPU_SAMPLES.names
    s = s.sort_values("ts_ns").reset_index(drop=True)
    assert s["ts_ns"].tolist() == [1_000_000, 2_500_000, 4_000_000, 6_000_000, 6_500_000]
    # depth-0 symbol; none without a callchain; '' for an id missing from StringIds
    assert s["top_frame"].astype(str).tolist() == ["main", "main", "pthread_cond_wait", "", ""]
    assert s["state"].astype(str).tolist() == ["running", "running", "waiting", "", "running"]
    assert set(s["pid"]) == {PID} and set(s["tid"]) == {TID}


def test_cpu_samples_window(tmp_path):
    p = write_tiny_nsys(tmp_path / "t.sqlite")
    _with_samples(p, enum=True)
    with NsysDb(p) as db:
        s = read_cpu_samples(db, StringTable(db), ReadWindow(2_000_000, 5_000_000))
    assert sorted(s["ts_ns"].tolist()) == [2_500_000, 4_000_000]
    assert sorted(s["top_frame"].astype(str)) == ["main", "pthread_cond_wait"]


def test_absent_tables_give_empty_frames_and_no_warning(tmp_path):
    b = load_nsys_sqlite(write_tiny_nsys(tmp_path / "t.sqlite"))
    assert b.osrt.empty and list(b.osrt.columns) == C.OSRT.names
    assert b.cpu_samples.empty and list(b.cpu_samples.columns) == C.CPU_SAMPLES.names
    assert not [w for w in b.warnings if "osrt" in w.code or "sample" in w.code]


def test_odd_layouts_are_absent_safe(tmp_path):
    p = write_tiny_nsys(tmp_path / "t.sqlite")
    con = sqlite3.connect(p)
    con.execute("CREATE TABLE OSRT_API (start INTEGER, globalTid INTEGER)")  # no end / nameId
    con.execute("CREATE TABLE COMPOSITE_EVENTS (id INTEGER, start INTEGER)")  # no callchains
    con.execute("INSERT INTO COMPOSITE_EVENTS VALUES (1, 100), (2, NULL)")
    con.commit()
    con.close()
    b = load_nsys_sqlite(p)
    assert b.osrt.empty
    assert b.cpu_samples["ts_ns"].tolist() == [100]
    assert b.cpu_samples["top_frame"].astype(str).tolist() == [""]
    assert b.cpu_samples["global_tid"].tolist() == [-1]


# ------------------------------------------------------------------------------- real exports
@pytest.mark.realtrace
def test_real_saxpy_cpu_samples():
    path = shared_trace("nsys/saxpy_mpi_a100_2022.2.sqlite")
    b = load_nsys_sqlite(path)
    con = sqlite3.connect(path)
    n = con.execute("SELECT count(*) FROM COMPOSITE_EVENTS").fetchone()[0]
    top = con.execute("SELECT s.value, count(*) FROM SAMPLING_CALLCHAINS c JOIN StringIds s ON "
                      "s.id = c.symbol WHERE c.stackDepth = 0 GROUP BY 1 ORDER BY 2 DESC "
                      "LIMIT 3").fetchall()
    con.close()
    assert len(b.cpu_samples) == n == 5451
    counts = b.cpu_samples["top_frame"].astype(str).value_counts()
    assert [(k, int(counts[k])) for k, _ in top] == top  # main 2980, std::abs(double) 492, …
    assert top[0] == ("main", 2980)
    assert set(b.cpu_samples["state"].astype(str)) == {"running"}  # threadState 1, no enum table
    assert b.osrt.empty  # the table exists but holds no rows


@pytest.mark.realtrace
def test_real_mordred_osrt():
    path = shared_trace("nsys/mordred_rtx6000_2021.sqlite")  # 2021.2.1 layout: + correlationId
    b = load_nsys_sqlite(path)
    con = sqlite3.connect(path)
    n = con.execute("SELECT count(*) FROM OSRT_API WHERE eventClass = 27").fetchone()[0]
    con.close()
    assert len(b.osrt) == n == 12489
    dur = (b.osrt["end_ns"] - b.osrt["start_ns"]).groupby(b.osrt["name"], observed=True).sum()
    assert dur.sort_values(ascending=False).index[:2].tolist() == ["sem_timedwait", "poll"]
    assert int(np.asarray(b.osrt["pid"]).min()) > 0
    assert b.cpu_samples.empty
