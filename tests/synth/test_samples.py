"""The committed sample_traces/ (nsys_diag.synth.samples): equal to a fresh regeneration row
by row, README block current, generation deterministic."""
from __future__ import annotations


import numpy as np
import pytest

from conftest import SAMPLE_TRACES
from nsys_diag import synth
from synth_sink import open_ro, query, table_sql


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory):
    """`python -m nsys_diag.synth --write-samples DIR` run in-process, once."""
    d = tmp_path_factory.mktemp("samples")
    assert synth.main(["--write-samples", str(d)]) == 0
    return d


@pytest.mark.parametrize("fname", [s[0] for s in synth.SAMPLES])
def test_committed_sample_equals_regeneration_row_by_row(regenerated, fname):
    committed = SAMPLE_TRACES / fname
    assert committed.exists(), f"{committed} missing: run `make samples`"
    # small enough to commit; launch_bound needs ≥ 10 ms of (tiny) kernel time to be diagnosed
    assert committed.stat().st_size <= 512 * 1024
    a, b = open_ro(committed), open_ro(regenerated / fname)
    ta, tb = table_sql(a), table_sql(b)
    assert ta == tb  # same tables, same DDL
    for table in ta:
        rows_a = a.execute(f"SELECT * FROM {table} ORDER BY rowid").fetchall()
        rows_b = b.execute(f"SELECT * FROM {table} ORDER BY rowid").fetchall()
        assert rows_a == rows_b, f"{fname}: table {table} differs; run `make samples`"


def test_sample_directory_has_every_sample_and_a_current_readme(regenerated):
    assert {s[0] for s in synth.SAMPLES} <= {p.name for p in SAMPLE_TRACES.glob("*.sqlite")}
    readme = (SAMPLE_TRACES / "README.md").read_text(encoding="utf-8")
    block = synth.samples_readme_block(readme)
    assert block.strip() and block == synth.samples_readme_block(
        (regenerated / "README.md").read_text(encoding="utf-8"))
    for fname, name, _schema, _ov in synth.SAMPLES:
        assert f"`{fname}`" in readme and f"`{synth.preset(name).expected_verdict}`" in readme


@pytest.mark.parametrize("fname", [s[0] for s in synth.SAMPLES])
def test_calls_of_one_thread_never_overlap_in_the_samples(fname):
    rows = query(open_ro(SAMPLE_TRACES / fname), """SELECT globalTid, start, end FROM
              CUPTI_ACTIVITY_KIND_RUNTIME WHERE eventClass IN (0, 1) ORDER BY globalTid, start""") \
        if "CUPTI_ACTIVITY_KIND_RUNTIME" in table_sql(open_ro(SAMPLE_TRACES / fname)) else []
    a = np.array(rows, dtype=np.int64).reshape(-1, 3)
    same = a[1:, 0] == a[:-1, 0]
    assert (a[1:, 1][same] >= a[:-1, 2][same]).all()
    assert (a[:, 2] > a[:, 1]).all()


def test_generation_is_deterministic_and_seed_sensitive(tmp_path):
    def rows(path):
        return query(open_ro(path), "SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY rowid")

    a = synth.write_preset(tmp_path / "a.sqlite", "healthy_tc", steps=3)
    b = synth.write_preset(tmp_path / "b.sqlite", "healthy_tc", steps=3)
    c = synth.write_preset(tmp_path / "c.sqlite", "healthy_tc", steps=3, seed=99)
    assert rows(a) == rows(b)
    assert rows(a) != rows(c)
