"""GPU metrics merged from chunks equal the in-memory results; sampling periods are exact."""
from __future__ import annotations

import numpy as np
import pytest

from nsys_diag.analyses.base import is_available
from nsys_diag.analyses.gpu_metrics import merge_gpu_metrics, partial_gpu_metrics
from nsys_diag.analyses.timeline.spacing import median_spacing, spacing_of
from tests.analyses.engine.cases import (CHUNKS, GENERATED, SAMPLE_NAMES, SAMPLES,
                                          assert_json_equal, cases_dir, generated_path,
                                          multi_gpu_split,
                                          split_process, whole)


def _check(sp):
    w = whole(sp)
    parts = [partial_gpu_metrics(c) for c in sp.chunks]
    merged = merge_gpu_metrics(parts, window=(sp.window.start_ns, sp.window.end_ns))
    assert is_available(merged) == is_available(w.gpu_metrics)
    assert_json_equal(w.gpu_metrics.to_json(), merged.to_json())
    return w, merged


@pytest.mark.parametrize("n", CHUNKS)
@pytest.mark.parametrize("name", SAMPLE_NAMES)
def test_samples(name, n):
    _check(split_process(str(SAMPLES / f"{name}.sqlite"), n))


@pytest.mark.parametrize("n", CHUNKS)
@pytest.mark.parametrize("name", sorted(GENERATED))
def test_generated(name, n, tmp_path_factory):
    _check(split_process(str(generated_path(cases_dir(tmp_path_factory), name)), n))


@pytest.mark.parametrize("n", CHUNKS)
def test_multi_gpu_process(n, tmp_path_factory):
    sp = multi_gpu_split(generated_path(cases_dir(tmp_path_factory), "allreduce_fine_metrics"), n)
    w, merged = _check(sp)
    assert len(merged.per_device) == 2 and merged.per_phase


@pytest.mark.parametrize("seed", range(5))
def test_median_spacing_is_the_median_of_every_positive_spacing(seed):
    rng = np.random.default_rng(seed)
    ts = np.sort(rng.integers(0, 10_000, 200 + seed))
    ts[5] = ts[4]  # a duplicate timestamp: no spacing
    cuts = np.sort(rng.choice(np.arange(1, ts.size), 4, replace=False))
    series = [spacing_of(p) for p in np.split(ts, cuts)]
    d = np.diff(ts)
    assert median_spacing(series) == int(np.median(d[d > 0]))
    assert median_spacing([None, spacing_of(ts[:1])]) is None
