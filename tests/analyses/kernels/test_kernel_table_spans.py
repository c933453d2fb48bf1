"""The kernel table merged from chunks equals the in-memory one."""
from __future__ import annotations

import numpy as np

import pytest

from nsys_diag.analyses.kernels.table import empty_kernels_part, merge_kernels, partial_kernels
from nsys_diag.model.thresholds import Thresholds
from tests.analyses.engine.cases import (CHUNKS, GENERATED, SAMPLE_NAMES, SAMPLES,
                                          assert_json_equal, cases_dir, generated_path,
                                          multi_gpu_split,
                                          split_process, whole)
from tests.analyses.engine.chunking import split_frames

TH = Thresholds()


def _check(sp, max_rows: int = 200):
    w = whole(sp, TH, max_rows=max_rows)
    parts = [partial_kernels(c) for c in sp.chunks]
    merged = merge_kernels(parts, th=TH, max_rows=max_rows)
    assert_json_equal(w.kernels.to_json(), merged.to_json())
    assert merged.table.equals(w.kernels.table)
    assert merged.device_ids == w.kernels.device_ids
    assert sum(p.kernels for p in parts) == len(w.k_win)
    assert all(p.nbytes in (4 * p.kernels, 8 * p.kernels) for p in parts)
    assert all(int(p.counts.sum()) == p.kernels and (p.counts > 0).all() for p in parts)
    return parts


@pytest.mark.parametrize("n", CHUNKS)
@pytest.mark.parametrize("name", SAMPLE_NAMES)
def test_samples(name, n):
    _check(split_process(str(SAMPLES / f"{name}.sqlite"), n))


@pytest.mark.parametrize("n", CHUNKS)
@pytest.mark.parametrize("name", sorted(GENERATED))
def test_generated(name, n, tmp_path_factory):
    d = cases_dir(tmp_path_factory)
    _check(split_process(str(generated_path(d, name)), n))


@pytest.mark.parametrize("n", CHUNKS)
def test_multi_gpu_process(n, tmp_path_factory):
    d = cases_dir(tmp_path_factory)
    sp = multi_gpu_split(generated_path(d, "allreduce_fine_metrics"), n)
    _check(sp, max_rows=3)


def test_a_kernel_crossing_an_edge_counts_once_with_its_full_duration():
    sp = split_process(str(SAMPLES / "worked_example.sqlite"), 5)
    k = sp.frames["kernels"]
    crossing = [c for c in sp.chunks[1:] if ((k["start_ns"] < c.lo_ns) & (k["end_ns"] > c.lo_ns)).any()]
    assert crossing  # cuts are inside kernels of every device
    parts = _check(sp)
    assert parts[0].kernels and all(p.kernels for p in parts)


def test_chunks_without_kernels_and_an_empty_process():
    sp = split_process(str(SAMPLES / "worked_example.sqlite"), 3)
    empty = empty_kernels_part()
    w = whole(sp, TH)
    parts = [empty, *[partial_kernels(c) for c in sp.chunks], empty]
    assert_json_equal(w.kernels.to_json(), merge_kernels(parts, th=TH).to_json())
    nothing = merge_kernels([empty], th=TH)
    assert nothing.kernel_count == 0 and nothing.table.empty and not nothing.available


@pytest.mark.parametrize("small_ns", [0, 1, 10_000, 2**32, 2**40])
def test_small_kernel_limits_beyond_the_compact_durations(small_ns):
    th = Thresholds(small_kernel_ns=small_ns)
    sp = split_process(str(SAMPLES / "worked_example.sqlite"), 4)
    w = whole(sp, th)
    merged = merge_kernels([partial_kernels(c) for c in sp.chunks], th=th)
    assert_json_equal(w.kernels.to_json(), merged.to_json())
    assert merged.small_count == w.kernels.small_count


def test_a_kernel_over_four_seconds_widens_only_its_chunk():
    sp = split_process(str(SAMPLES / "worked_example.sqlite"), 1)
    k = sp.frames["kernels"].copy()
    k.loc[k.index[len(k) // 2], "end_ns"] += 5 * 10**9  # one kernel of > 4.29 s
    sp = split_frames(sp.bundle, {**sp.frames, "kernels": k}, 4)
    parts = _check(sp)
    assert {p.dur_ns.dtype for p in parts if p.kernels} == {np.dtype(np.uint32), np.dtype(np.int64)}
