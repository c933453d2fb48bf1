"""Zone maps (``loaders/zone_map.py``): a window read limited to its rowid range returns exactly
the rows of the plain scan, whatever the table's row order and value types — and, for a table in
time order, reads only a narrow band of rowids."""
from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from nsys_diag.loaders import zone_map as Z
from nsys_diag.loaders.nsys_db import NsysDb
from nsys_diag.loaders.nsys_specs import GPU_METRICS_TABLE, KERNEL_TABLE, RUNTIME_TABLE
from nsys_diag.loaders.read_window import ReadWindow


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch):
    monkeypatch.setattr(Z, "BLOCK_ROWS", 16)
    monkeypatch.setattr(Z, "MIN_ZONED_ROWS", 32)


def _write(path, rows, table=KERNEL_TABLE, cols=("start", "end", "correlationId")):
    con = sqlite3.connect(path)
    con.execute(f'CREATE TABLE IF NOT EXISTS "{table}" ({", ".join(f"{c!r} INTEGER" for c in cols)})')
    con.executemany(f'INSERT INTO "{table}" VALUES ({", ".join("?" * len(cols))})', rows)
    con.commit()
    con.close()


def _timed_rows(n: int, order: str, seed: int = 0) -> list[tuple]:
    rng = np.random.default_rng(seed)
    start = np.cumsum(rng.integers(1, 50, n))
    end = start + rng.integers(0, 400, n)  # long rows overlap many later ones
    corr = np.arange(1, n + 1)
    rows = [(int(s), int(e), int(c)) for s, e, c in zip(start, end, corr)]
    if order == "shuffled":
        rng.shuffle(rows)
    elif order == "two_runs":  # e.g. two processes written one after the other
        rows = rows[::2] + rows[1::2]
    return rows


def _ids(db: NsysDb, table: str, where: str) -> list[int]:
    return [r[0] for r in db.rows(f'SELECT rowid FROM "{table}" WHERE {where} ORDER BY rowid')]


def _windows(rows, k=40, seed=1):
    rng = np.random.default_rng(seed)
    lo = min(r[0] for r in rows if isinstance(r[0], int))
    hi = max(r[1] for r in rows if isinstance(r[1], int))
    for _ in range(k):
        a, b = sorted(int(v) for v in rng.integers(lo - 100, hi + 100, 2))
        yield a, b + 1


@pytest.mark.parametrize("order", ["time", "shuffled", "two_runs"])
def test_overlap_and_api_reads_equal_plain_scans(tmp_path, order):
    path = tmp_path / "t.sqlite"
    rows = _timed_rows(700, order)
    _write(path, rows)
    _write(path, rows, table=RUNTIME_TABLE)
    with NsysDb(path) as db:
        zones = Z.build_zone_map(db)
        assert KERNEL_TABLE in zones.tables and RUNTIME_TABLE in zones.tables
        for a, b in _windows(rows):
            plain = ReadWindow(a, b)
            zoned = ReadWindow(a, b, zones=zones)
            assert _ids(db, KERNEL_TABLE, zoned.overlap(table=KERNEL_TABLE)) == \
                _ids(db, KERNEL_TABLE, plain.overlap())
            for min_corr in (None, 1, 350, 10_000):
                plain = ReadWindow(a, b, min_corr)
                zoned = ReadWindow(a, b, min_corr, zones=zones)
                assert _ids(db, RUNTIME_TABLE, zoned.api(True)) == \
                    _ids(db, RUNTIME_TABLE, plain.api(True))


def test_instant_reads_equal_plain_scans(tmp_path):
    path = tmp_path / "t.sqlite"
    ts = np.sort(np.random.default_rng(3).integers(0, 10_000, 500))
    _write(path, [(int(t), 1) for t in ts], table=GPU_METRICS_TABLE, cols=("timestamp", "typeId"))
    with NsysDb(path) as db:
        zones = Z.build_zone_map(db)
        assert GPU_METRICS_TABLE in zones.tables
        for a, b in [(0, 1), (100, 2000), (5000, 5001), (9999, 20_000), (-5, 0), (20_000, 30_000)]:
            got = _ids(db, GPU_METRICS_TABLE,
                       ReadWindow(a, b, zones=zones).instant('"timestamp"', GPU_METRICS_TABLE))
            assert got == _ids(db, GPU_METRICS_TABLE, ReadWindow(a, b).instant('"timestamp"'))


def _mapped(tmp_path, order: str, n: int = 2000):
    """(rows, zone map) of a kernel table of ``n`` rows in ``order``."""
    path = tmp_path / "t.sqlite"
    rows = _timed_rows(n, order)
    _write(path, rows)
    with NsysDb(path) as db:
        return rows, Z.build_zone_map(db)


def test_time_ordered_table_reads_a_narrow_band(tmp_path):
    rows, zones = _mapped(tmp_path, "time")
    mid = rows[1000][0]
    clause = zones.overlap(KERNEL_TABLE, mid, mid + 500)
    assert clause.startswith('"rowid" BETWEEN')
    lo, hi = (int(v) for v in clause.split("BETWEEN")[1].split("AND"))
    assert hi - lo < 200  # a few blocks of 16 around the window, of 2000 rows


def test_shuffled_table_falls_back_to_the_whole_table(tmp_path):
    rows, zones = _mapped(tmp_path, "shuffled")
    mid = sorted(rows)[1000][0]
    assert zones.overlap(KERNEL_TABLE, mid, mid + 500) == ""


def test_values_that_are_not_numbers_keep_their_block(tmp_path):
    """A text end passes ``"end" > x`` in SQLite (text sorts after numbers): its block is read."""
    path = tmp_path / "t.sqlite"
    rows = _timed_rows(300, "time")
    rows[40] = (rows[40][0], "later", rows[40][2])
    rows[200] = (None, None, None)
    rows[250] = (float(rows[250][0]) + 0.5, float(rows[250][1]) + 0.5, rows[250][2])
    _write(path, rows)
    with NsysDb(path) as db:
        zones = Z.build_zone_map(db)
        for a, b in list(_windows([r for r in rows if isinstance(r[1], int)])) + [(10**12, 10**13)]:
            assert _ids(db, KERNEL_TABLE, ReadWindow(a, b, zones=zones).overlap(table=KERNEL_TABLE)) \
                == _ids(db, KERNEL_TABLE, ReadWindow(a, b).overlap())
        assert 41 in _ids(db, KERNEL_TABLE, ReadWindow(10**12, 10**13, zones=zones)
                          .overlap(table=KERNEL_TABLE))


def test_small_or_absent_tables_get_no_zone_map(tmp_path):
    path = tmp_path / "t.sqlite"
    _write(path, _timed_rows(20, "time"))
    with NsysDb(path) as db:
        zones = Z.build_zone_map(db)
        assert zones.tables == {}
        assert zones.overlap(KERNEL_TABLE, 0, 10) == ""
        assert ReadWindow(0, 10, zones=zones).overlap(table=KERNEL_TABLE) == \
            ReadWindow(0, 10).overlap()


def test_a_map_knows_its_file(tmp_path):
    """A worker given a map of another version of the file at the same path reads plainly."""
    import os

    rows, zones = _mapped(tmp_path, "time")
    path = tmp_path / "t.sqlite"
    assert zones.matches(path)
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert not zones.matches(path)
    assert not zones.matches(tmp_path / "missing.sqlite")


def _odd_rows(n: int = 600) -> list[tuple]:
    """Time-ordered rows with values a block bound must not trust: text, NULL, REAL, negative or
    text correlation ids."""
    rows = _timed_rows(n, "time", seed=5)
    rows[40] = (rows[40][0], "later", rows[40][2])
    rows[100] = (None, rows[100][1], 3)
    rows[200] = (float(rows[200][0]) + 0.5, float(rows[200][1]) + 0.5, 2)
    rows[300] = (rows[300][0], rows[300][1], -7)
    rows[301] = (rows[301][0], rows[301][1], "x")
    rows[400] = (rows[400][0], rows[400][1], None)
    rows[450] = (rows[450][0], rows[450][1], 1)  # a small id late in the table
    rows[500] = (rows[500][0], rows[500][1], 0.5)  # REAL: not an id for the scan
    rows[520] = (rows[520][0], None, 4)
    rows[530] = (rows[530][0], rows[530][1], b"\x01")
    return rows


@pytest.mark.parametrize("order", ["time", "shuffled", "two_runs", "odd", "odd_not_null"])
def test_launch_minimum_from_blocks_equals_the_plain_scan(tmp_path, order):
    from nsys_diag.loaders.read_window import with_launches

    path = tmp_path / "t.sqlite"
    rows = _odd_rows() if order.startswith("odd") else _timed_rows(700, order)
    if order == "odd_not_null":  # as nsys declares its times: NOT NULL, yet text/REAL allowed
        rows = [(0 if s is None else s, 0 if e is None else e, c) for s, e, c in rows]
        con = sqlite3.connect(path)
        con.execute(f'CREATE TABLE "{KERNEL_TABLE}" (start INTEGER NOT NULL, end INTEGER NOT NULL, '
                    '"correlationId" INTEGER)')
        con.close()
    _write(path, rows)
    with NsysDb(path) as db:
        zones = Z.build_zone_map(db)
        assert zones.tables[KERNEL_TABLE].launches is not None
        ints = [r for r in rows if isinstance(r[0], int) and isinstance(r[1], int)]
        for a, b in list(_windows(ints, k=60)) + [(10**12, 10**13), (-10, 0)]:
            assert with_launches(db, a, b, zones).min_correlation == \
                with_launches(db, a, b).min_correlation, (a, b)


def test_launch_minimum_scans_only_the_edge_blocks(tmp_path, monkeypatch):
    from nsys_diag.loaders.read_window import with_launches

    rows, zones = _mapped(tmp_path, "time")
    seen = []
    with NsysDb(tmp_path / "t.sqlite") as db:
        orig = db.rows
        monkeypatch.setattr(db, "rows", lambda sql, p=(): seen.append(sql) or orig(sql, p))
        a, b = rows[200][0], rows[1800][0]
        assert with_launches(db, a, b, zones).min_correlation == with_launches(db, a, b).min_correlation
    zoned = [s for s in seen[:len(seen) // 2] if "min(\"correlationId\")" in s]
    spans = [int(s.split("BETWEEN")[1].split("AND")[1]) - int(s.split("BETWEEN")[1].split("AND")[0])
             for s in zoned]
    assert zoned and max(spans) < 200  # a few blocks of 16 at each edge, not 1,600 rows
