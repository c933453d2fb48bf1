"""Prefetching the big reads (``loaders/prefetch.py``): same bundle, queries taken once, no
pandas import before the reads start, and bad files still reported by the loader."""
from __future__ import annotations

import subprocess
import sys

import pandas as pd
import pytest

from nsys_diag import synth
from nsys_diag.app import analyze
from nsys_diag.loaders import load_trace, prefetch
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
    orig = prefetch.take_prefetched

    def spy(path, sql):
        out = orig(path, sql)
        if out is not None:
            taken.append(sql)
        return out

    monkeypatch.setattr(prefetch, "take_prefetched", spy)
    assert prefetch.start_prefetch(trace) == 4  # API, kernels, GPU metrics, table counts
    got = load_trace(trace, kernel_detail=False)
    assert len(taken) == 4 and not prefetch._PENDING
    assert prefetch.COUNTS_QUERY in taken
    assert got.meta.tables == plain.meta.tables
    for name in ("kernels", "api", "gpu_metrics", "nvtx"):
        pd.testing.assert_frame_equal(getattr(plain, name), getattr(got, name), obj=name)


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


def test_untaken_results_are_cleared_and_a_failed_prefetch_is_no_result(trace, tmp_path):
    assert prefetch.start_prefetch(trace) == 4
    prefetch.clear_prefetch(trace)
    assert not prefetch._PENDING
    assert prefetch.take_prefetched(trace, "SELECT 1") is None


def test_damaged_file_is_still_reported_by_the_loader(trace, tmp_path):
    bad = tmp_path / "bad.sqlite"
    data = bytearray(trace.read_bytes())
    data[4096:len(data) // 2] = b"\x00" * (len(data) // 2 - 4096)  # header intact, pages zeroed
    bad.write_bytes(bytes(data))
    prefetch.start_prefetch(bad)
    with pytest.raises(InputError):
        analyze.load_for_analysis(str(bad), AnalyzeOptions())
    assert not prefetch._PENDING
