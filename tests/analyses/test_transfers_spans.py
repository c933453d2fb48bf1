"""Transfers and communication merged from chunks equal the in-memory results."""
from __future__ import annotations

import pytest

from nsys_diag.analyses.base import is_available
from nsys_diag.analyses.communication import merge_communication, partial_communication
from nsys_diag.analyses.transfers import merge_transfers, partial_transfers
from tests.analyses.engine.cases import (CHUNKS, GENERATED, SAMPLE_NAMES, SAMPLES,
                                          assert_json_equal, cases_dir, generated_path,
                                          multi_gpu_split,
                                          split_process, whole)


def _check(sp):
    w = whole(sp)
    tr = merge_transfers([partial_transfers(c) for c in sp.chunks], gpus=sp.bundle.gpus)
    assert_json_equal(w.transfers.to_json(), tr.to_json())
    total = sp.steps.total_analysed_ns if is_available(sp.steps) else sp.window.duration_ns
    comm = merge_communication([partial_communication(c) for c in sp.chunks],
                               window=(sp.window.start_ns, sp.window.end_ns),
                               step_time_ns_total=total)
    assert is_available(comm) == is_available(w.communication)
    assert_json_equal(w.communication.to_json(), comm.to_json())
    return w


@pytest.mark.parametrize("n", CHUNKS)
@pytest.mark.parametrize("name", SAMPLE_NAMES)
def test_samples(name, n):
    _check(split_process(str(SAMPLES / f"{name}.sqlite"), n))


@pytest.mark.parametrize("n", CHUNKS)
@pytest.mark.parametrize("name", sorted(GENERATED))
def test_generated(name, n, tmp_path_factory):
    _check(split_process(str(generated_path(cases_dir(tmp_path_factory), name)), n))


@pytest.mark.parametrize("n", CHUNKS)
def test_multi_gpu_process_with_exposed_allreduce(n, tmp_path_factory):
    sp = multi_gpu_split(generated_path(cases_dir(tmp_path_factory), "allreduce_fine_metrics"), n)
    w = _check(sp)
    assert len(w.communication.per_device) == 2
    # the 45 ms all-reduce kernels run across chunk edges
    k = sp.frames["kernels"]
    nccl = k.loc[k["name"].astype(str).str.contains("nccl")]
    edges = [c.lo_ns for c in sp.chunks[1:]]
    assert any(((nccl["start_ns"] < e) & (nccl["end_ns"] > e)).any() for e in edges) or n == 2
