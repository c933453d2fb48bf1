"""``NsysDb.read`` returns :class:`Columns`: one array (or ``Text``) per column read, with typed
accessors that check the kind once per column."""
import sqlite3

import numpy as np
import pytest

from nsys_diag.loaders.nsys_db import Col, Columns, NsysDb, Text


@pytest.fixture(params=["adbc", "sqlite3"])
def db(request, tmp_path, monkeypatch):
    if request.param == "adbc":
        pytest.importorskip("adbc_driver_sqlite")
    else:
        monkeypatch.setenv("NSYS_DIAG_NO_ADBC", "1")
    path = tmp_path / "c.sqlite"
    con = sqlite3.connect(path)
    con.execute('CREATE TABLE t ("a" INTEGER, "f" REAL, "s" TEXT)')
    con.executemany("INSERT INTO t VALUES (?, ?, ?)",
                    [(1, 0.5, "x"), (None, None, None), (3, 2.0, "y"), (4, 1.0, "x")])
    con.commit()
    con.close()
    with NsysDb(path) as handle:
        assert handle.reader == request.param
        yield handle


COLS = [Col("a", "int", fill=-7), Col("f", "float"), Col("s", "text"),
        Col("a_null", "isnull", '"a"')]


def test_accessors_give_each_kind_its_dtype(db):
    d = db.read("t", COLS)
    assert isinstance(d, Columns) and isinstance(d, dict) and list(d) == ["a", "f", "s", "a_null"]
    assert d.ints("a").dtype == np.int64 and d.ints("a").tolist() == [1, -7, 3, 4]
    f = d.floats("f")
    assert f.dtype == np.float64 and np.isnan(f[1]) and f[[0, 2, 3]].tolist() == [0.5, 2.0, 1.0]
    assert isinstance(d.text("s"), Text) and d.text("s").to_object().tolist() == ["x", "", "y", "x"]
    assert d.flags("a_null").dtype == np.bool_ and d.flags("a_null").tolist() == [False, True, False, False]
    assert d.ints("a") is d["a"]  # the reader's own array, not a copy


@pytest.mark.parametrize("accessor, column", [("ints", "f"), ("floats", "a"), ("flags", "a"),
                                              ("text", "a"), ("ints", "s"), ("ints", "a_null")])
def test_an_accessor_of_another_kind_raises(db, accessor, column):
    d = db.read("t", COLS)
    with pytest.raises(TypeError, match=repr(column)):
        getattr(d, accessor)(column)


def test_filtered_keeps_the_rows_of_every_column(db):
    d = db.read("t", COLS)
    kept = d.filtered(d.ints("a") >= 3)
    assert isinstance(kept, Columns)
    assert kept.ints("a").tolist() == [3, 4] and kept.floats("f").tolist() == [2.0, 1.0]
    assert kept.text("s").to_object().tolist() == ["y", "x"]
    assert kept.text("s").labels == d.text("s").labels
    assert kept.flags("a_null").tolist() == [False, False]
    assert d.ints("a").tolist() == [1, -7, 3, 4]  # the original is untouched


def test_without_rowid_tells_tables_that_have_no_rowid(tmp_path):
    p = tmp_path / "t.sqlite"
    con = sqlite3.connect(p)
    con.execute("CREATE TABLE plain (a INTEGER, b TEXT)")
    con.execute("CREATE TABLE keyed (a INTEGER PRIMARY KEY, b TEXT) without   rowid ;")
    con.execute("CREATE TABLE named_rowid (without_rowid INTEGER)")
    con.commit()
    con.close()
    with NsysDb(p) as db:
        assert db.without_rowid("keyed")
        assert not db.without_rowid("plain") and not db.without_rowid("named_rowid")
        assert not db.without_rowid("absent")
