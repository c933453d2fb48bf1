"""Prefetching the big reads (``loaders/prefetch.py``): same bundle, queries taken once, no
pandas import before the reads start, and bad files still reported by the loader."""
from __future__ import annotations

import logging
import subprocess
import sys

import pandas as pd
import pytest

from nsys_diag import synth
from nsys_diag.app import analyze
from nsys_diag.loaders import load_trace, prefetch, prefetch_store
from nsys_diag.loaders.nsys_db import NsysDb
from nsys_diag.loaders.read_plan import ReadPlan
from nsys_diag.model.errors import InputError
from nsys_diag.model.options import AnalyzeOptions

pytest.importorskip("adbc_driver_sqlite")


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    sc = synth.preset("healthy_tc", steps=6, gpu_metrics=synth.GpuMetricsSpec(period_ns=5_000_000))
    return synth.write_nsys_sqlite(tmp_path_factory.mktemp("pf") / "t.sqlite", sc)


def test_prefetched_load_equals_plain_load_and_takes_every_query(trace, monkeypatch):
    plain = load_trace(trace, kernel_detail=False)
    taken = []
    orig = prefetch_store.take

    def spy(path, key):
        out = orig(path, key)
        if out is not None:
            taken.append(key)
        return out

    monkeypatch.setattr(prefetch_store, "take", spy)
    prefetch_store.reset_stats()
    assert prefetch.start_prefetch(trace) == 4  # API, kernels, GPU metrics, table counts
    got = load_trace(trace, kernel_detail=False)
    assert len(taken) == 4 and not prefetch._PENDING
    assert prefetch.COUNTS_QUERY in taken
    assert prefetch_store.stats() == prefetch_store.PrefetchStats(started=4, hits=4)
    assert got.meta.tables == plain.meta.tables
    for name in ("kernels", "api", "gpu_metrics", "nvtx"):
        pd.testing.assert_frame_equal(getattr(plain, name), getattr(got, name), obj=name)


def test_every_prefetched_plan_is_a_plan_the_loader_reads(trace, monkeypatch):
    """The reader and the prefetch describe the same reads: each plan the prefetch would start
    is one ``NsysDb.read`` issues on an ``analyze`` load (same value, hence same SQL)."""
    read: list[ReadPlan] = []
    orig = NsysDb._read_adbc

    def spy(self, sql, ncols, int_fill=None, float_plain=frozenset(), plan=None):
        if plan is not None:
            read.append(plan)
            assert sql == plan.render().first_sql
        return orig(self, sql, ncols, int_fill, float_plain, plan)

    monkeypatch.setattr(NsysDb, "_read_adbc", spy)
    load_trace(trace, kernel_detail=False)
    with NsysDb(trace) as db:
        plans = prefetch.analyze_plans(db)
    assert len(plans) == 3 and {p.table for p in plans} == {
        "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_KERNEL", "GPU_METRICS"}
    assert set(plans) <= set(read)


def test_a_drifted_plan_is_an_observable_miss(trace, caplog):
    """A reader asking for another plan of a prefetched table misses, and says so; the unused
    prefetch is counted when it is dropped."""
    with NsysDb(trace) as db:
        plan = prefetch.analyze_plans(db)[0]
    drifted = ReadPlan(plan.table, plan.cols[:-1], plan.where)
    prefetch_store.reset_stats()
    assert prefetch.start_prefetch(trace) == 4
    with caplog.at_level(logging.DEBUG, logger="nsys_diag.prefetch"):
        assert prefetch.take_prefetched(trace, drifted) is None
        assert prefetch.take_prefetched(trace, ReadPlan("OTHER_TABLE", ())) is None  # no drift
        prefetch.clear_prefetch(trace)
    assert prefetch_store.stats() == prefetch_store.PrefetchStats(started=4, misses=1, unclaimed=4)
    assert any("prefetch miss" in r.message for r in caplog.records)
    assert sum("never taken" in r.message for r in caplog.records) == 4


def test_pipeline_prefetches_and_leaves_nothing_behind(trace):
    bundle = analyze.load_for_analysis(str(trace), AnalyzeOptions())
    assert len(bundle.kernels) and not prefetch._PENDING


def test_disabled_by_env(trace, monkeypatch):
    monkeypatch.setenv(prefetch.PREFETCH_ENV, "1")
    assert prefetch.start_prefetch(trace) == 0
    monkeypatch.delenv(prefetch.PREFETCH_ENV)
    monkeypatch.setenv("NSYS_DIAG_NO_ADBC", "1")
    assert prefetch.start_prefetch(trace) == 0


def test_starts_without_importing_pandas(trace):
    code = ("import sys; from nsys_diag.loaders import prefetch; "
            f"n = prefetch.start_prefetch({str(trace)!r}); "
            "print(n, 'pandas' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == ["4", "False"], out.stderr


def test_the_cli_starts_the_prefetch_before_pandas_is_imported(trace, tmp_path):
    """``nsys-diag analyze`` itself (the click command, its terminal printer and the report
    imports) must not import pandas before the big reads have started."""
    code = ("import sys; from nsys_diag.loaders import prefetch; orig = prefetch.start_prefetch\n"
            "def spy(*a, **k):\n"
            "    print('pandas-at-prefetch', 'pandas' in sys.modules); return orig(*a, **k)\n"
            "prefetch.start_prefetch = spy\n"
            "from nsys_diag.cli import main\n"
            f"main(['analyze', {str(trace)!r}, '--json', {str(tmp_path / 'o.json')!r}, '--no-html'])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "pandas-at-prefetch False" in out.stdout, out.stdout + out.stderr
    assert (tmp_path / "o.json").stat().st_size > 0


def test_untaken_results_are_cleared_and_a_failed_prefetch_is_no_result(trace, tmp_path):
    assert prefetch.start_prefetch(trace) == 4
    prefetch.clear_prefetch(trace)
    assert not prefetch._PENDING
    assert prefetch.take_prefetched(trace, ReadPlan("CUPTI_ACTIVITY_KIND_KERNEL", ())) is None


def test_damaged_file_is_still_reported_by_the_loader(trace, tmp_path):
    bad = tmp_path / "bad.sqlite"
    data = bytearray(trace.read_bytes())
    data[4096:len(data) // 2] = b"\x00" * (len(data) // 2 - 4096)  # header intact, pages zeroed
    bad.write_bytes(bytes(data))
    prefetch.start_prefetch(bad)
    with pytest.raises(InputError):
        analyze.load_for_analysis(str(bad), AnalyzeOptions())
    assert not prefetch._PENDING
