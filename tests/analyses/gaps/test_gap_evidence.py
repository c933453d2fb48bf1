"""Evidence builders of the gap causes: name classification (Python and Arrow paths agree), the
sync-follow cut, labelled rows."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from nsys_diag.analyses.gaps import evidence as E
from nsys_diag.analyses.gaps import rows as R


@pytest.mark.parametrize("rx", [R.COMM_NAME_RE, R.INIT_RANGE_RE, R.SYNC_API_RE, R.MEM_API_RE,
                                R.HOST_IO_RE, R.ENQUEUE_API_RE])
def test_arrow_and_python_name_classification_agree(rx, monkeypatch):
    names = ["MPI_Recv", "ncclAllReduce", "aten::broadcast_tensors", "all_gather_into_tensor",
             "KernelExecutor::compileFusion", "executor_utils::NVRTC", "cudaMalloc", "read",
             "cudaStreamSynchronize", "cudaMemcpyAsync", "cudaMemcpy", "poll", "forward",
             "FSDP::pre_forward", "cuLaunchKernelEx", "Barrier wait", ""]
    names += [f"op_{i}, op_id = {i}" for i in range(R.ARROW_MIN_CATEGORIES)]
    col = pd.Series(names, dtype="category")
    arrow = R.name_mask(col, rx, exclude=R.ATEN_RE)
    monkeypatch.setattr(R, "ARROW_MIN_CATEGORIES", 10 ** 9)
    python = R.name_mask(col, rx, exclude=R.ATEN_RE)
    assert arrow.tolist() == python.tolist()
    assert python[:17].any()


def test_classifications():
    col = pd.Series(["MPI_Recv", "ncclAllReduce", "aten::broadcast_tensors", "c10d::allreduce_",
                     "forward", "Barrier"], dtype="category")
    assert R.name_mask(col, R.COMM_NAME_RE, exclude=R.ATEN_RE).tolist() == \
        [True, True, False, True, False, True]
    api = pd.DataFrame({"name": pd.Series(["cudaLaunchKernel", "cudaMemcpy", "cudaMalloc",
                                           "cuLibraryLoadData", "cudaFuncGetAttributes"],
                                          dtype="category")})
    n = R.ApiNames(api)
    assert n.mask("launch").tolist() == [True, False, False, False, False]
    assert n.mask("enqueue").tolist() == [True, True, False, False, False]
    assert n.mask("sync").tolist() == [False, True, False, False, False]
    assert n.mask("mem").tolist() == [False, False, True, False, False]
    assert n.mask("init").tolist() == [False, False, False, True, False]


def test_cut_at_stops_each_interval_at_the_next_stop_after_its_start():
    rows = R.fixed([10, 50, 90], [40, 80, 95], "after x returned")
    cut = E.cut_at(rows, np.array([20, 50, 100], np.int64))
    assert cut.starts.tolist() == [10, 90] and cut.ends.tolist() == [20, 95]  # [50, 50) is empty


def test_labelled_rows_strip_op_ids_and_find_the_best_overlap():
    nv = pd.DataFrame({"start_ns": [0, 30], "end_ns": [20, 60],
                       "text": pd.Series(["FSDP::pre_forward, op_id = 7", "MPI_Send"],
                                         dtype="category")})
    rows = R.labelled(nv, np.array([True, True]), "text", "{} (NVTX)")
    assert set(rows.labels) == {"FSDP::pre_forward (NVTX)", "MPI_Send (NVTX)"}
    assert rows.best(10, 40) == ("FSDP::pre_forward (NVTX)", 10)
    assert rows.best(35, 100) == ("MPI_Send (NVTX)", 25)
    assert rows.best(200, 300) is None
    ns, n = rows.weights(np.array([0, 50], np.int64), np.array([5, 55], np.int64))
    got = dict(zip(rows.labels, ns.tolist()))
    assert got == {"FSDP::pre_forward (NVTX)": 5, "MPI_Send (NVTX)": 5}


def test_startup_before_the_first_kernel_leaves_out_the_programs_copies():
    import numpy as np

    from nsys_diag.analyses.gaps.evidence import BEFORE_FIRST_KERNEL, startup_without_own_work
    from nsys_diag.analyses.gaps.rows import EvidenceRows

    rows = EvidenceRows.build(np.array([0, 10]), np.array([100, 20]), np.array([0, 1]),
                              (BEFORE_FIRST_KERNEL, "cuInit"))
    out = startup_without_own_work(rows, (np.array([30, 60]), np.array([50, 200])))
    pieces = sorted((int(s), int(e), out.labels[int(c)])
                    for s, e, c in zip(out.starts, out.ends, out.label))
    assert pieces == [(0, 30, BEFORE_FIRST_KERNEL), (10, 20, "cuInit"),
                      (50, 60, BEFORE_FIRST_KERNEL)]
    assert startup_without_own_work(rows, (np.zeros(0, np.int64), np.zeros(0, np.int64))) is rows
