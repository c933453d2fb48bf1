"""Read plans (``loaders/read_plan.py``): a read as a value, its SQL rendered in one place."""
from __future__ import annotations

from nsys_diag.loaders import nsys_db
from nsys_diag.loaders.read_plan import Col, ReadPlan, render, select_plan


def test_equal_plans_are_one_key_and_render_the_same_sql():
    a = ReadPlan.of("K", [Col("start", "int", fill=-5, strict=True), Col("v", "float")], "x > 1")
    b = ReadPlan("K", (Col("start", "int", fill=-5, strict=True), Col("v", "float")), "x > 1")
    assert a == b and hash(a) == hash(b) and {a: 1}[b] == 1
    assert render(a) == render(b) == select_plan("K", list(a.cols), "x > 1")
    assert ReadPlan("K", a.cols[:1], "x > 1") != a


def test_rendered_sql_type_stable_and_fast_forms():
    plan = ReadPlan.of("T", [Col("a", "int", fill=7), Col("f", "float"),
                             Col("n", "text"), Col("k", "int", expr='"a" * 2')])
    sel = plan.render()
    assert sel.sql == ('SELECT ifnull(CAST("a" AS INTEGER), 7), ifnull(CAST("f" AS REAL), 0.0), '
                       '("f" IS NULL), ifnull(CAST("n" AS BLOB), x\'\'), '
                       'ifnull(CAST("a" * 2 AS INTEGER), -1) FROM "T"')
    assert sel.ncols == 5
    assert sel.fast_sql == ('SELECT "a", "f", ifnull(CAST("n" AS BLOB), x\'\'), '
                            'ifnull(CAST("a" * 2 AS INTEGER), -1) FROM "T"')
    assert sel.fast_ncols == 4 and sel.int_fill == {0: 7} and sel.float_plain == frozenset({1})
    assert sel.first_sql == sel.fast_sql


def test_without_plain_columns_the_first_sql_is_the_type_stable_one():
    sel = ReadPlan.of("T", [Col("n", "text")], "a = 1").render()
    assert sel.fast_sql is None and sel.first_sql == sel.sql and \
        sel.sql.endswith(' FROM "T" WHERE a = 1')


def test_nsys_db_keeps_its_names():
    assert nsys_db.Col is Col and nsys_db.select_plan is select_plan


def test_batched_read_equals_one_read(tmp_path):
    """``NsysDb.read(batch_rows=N)`` reads rowid ranges and joins them: the same arrays and text
    (labels in first-appearance order) as one read, whatever the filter."""
    import sqlite3

    import numpy as np

    from nsys_diag.loaders.nsys_db import Col, NsysDb

    path = tmp_path / "t.sqlite"
    con = sqlite3.connect(path)
    con.execute('CREATE TABLE t ("a" INTEGER, "s" TEXT, "f" REAL)')
    rng = np.random.default_rng(5)
    rows = [(int(i), None if i % 7 == 0 else f"name{int(v)}", None if i % 5 == 0 else float(v))
            for i, v in enumerate(rng.integers(0, 30, 1000))]
    con.executemany("INSERT INTO t VALUES (?, ?, ?)", rows)
    con.execute("DELETE FROM t WHERE rowid BETWEEN 300 AND 420")  # a hole in the rowids
    con.commit()
    con.close()
    cols = [Col("a", "int"), Col("s", "text"), Col("f", "float")]
    with NsysDb(path) as db:
        for where in ("", '"a" % 3 = 0', '"a" > 5000'):
            one = db.read("t", cols, where)
            for batch in (1, 64, 999, 5000):
                got = db.read("t", cols, where, batch_rows=batch)
                assert np.array_equal(got["a"], one["a"])
                assert np.array_equal(got["f"], one["f"], equal_nan=True)
                assert got["s"].to_object().tolist() == one["s"].to_object().tolist()
                assert got["s"].labels == one["s"].labels


def test_batched_read_of_sparse_rowids_makes_few_queries(tmp_path):
    """Rowids far apart (a crafted file: 1 and 5e9, or near 2**63) are read in at most
    ``_MAX_READ_SPANS`` range queries, with the rows of one read."""
    import sqlite3

    import numpy as np

    from nsys_diag.loaders import nsys_db
    from nsys_diag.loaders.nsys_db import Col, NsysDb

    path = tmp_path / "sparse.sqlite"
    con = sqlite3.connect(path)
    con.execute('CREATE TABLE t ("a" INTEGER)')
    con.executemany("INSERT INTO t (rowid, a) VALUES (?, ?)",
                    [(1, 1), (5_000_000_000, 2), (2**63 - 2, 3)])
    con.commit()
    con.close()
    with NsysDb(path) as db:
        spans = db._rowid_spans("t", 500)
        assert 1 < len(spans) <= nsys_db._MAX_READ_SPANS
        assert spans[0][0] == 1 and spans[-1][1] == 2**63 - 2
        got = db.read("t", [Col("a", "int")], batch_rows=500)
        assert np.array_equal(got["a"], [1, 2, 3])
