"""Gap causes on the real exports of ../shared/traces (skipped when absent): MPI ranges are
communication, JIT compilation and the wait for the first kernel are start-up, not "other"."""
from __future__ import annotations

import functools

import pytest

from conftest import shared_trace
from nsys_diag.analyses.suite import run_suite

pytestmark = pytest.mark.realtrace


@functools.lru_cache(maxsize=None)
def _gaps(name: str):
    from nsys_diag.loaders import load_trace

    return run_suite(load_trace(shared_trace(f"nsys/{name}.sqlite"))).headline.gaps


def test_saxpy_mpi_ranges_inside_the_long_gaps_are_communication():
    g = _gaps("saxpy_mpi_a100_2022.2")
    ms = {c: v / 1e6 for c, v in g.by_cause_ns.items()}
    assert ms["communication"] > 100  # MPI_Recv/MPI_Send ranges, unattributed before
    assert ms["other"] < 0.35 * g.total_ns / 1e6  # all of the idle time was "other" before
    assert "MPI domain" in g.by_cause_detail["communication"]
    long = [t for t in g.top if t.duration_ns > 200e6]
    assert len(long) == 3
    for t in long:  # each holds an MPI_Recv range
        comm = [e for e in t.evidence if e["cause"] == "communication"]
        assert comm and comm[0]["detail"] == "MPI_Recv (NVTX, MPI domain)" and comm[0]["ms"] > 30
        assert {e["cause"] for e in t.evidence} >= {"communication", "transfer", "host_cpu"}
    # the host verifies results after the blocking D2H copy: its own time after the copy
    assert "after cudaMemcpy returned" in g.by_cause_detail["host_cpu"]


def test_nvfuser_compilation_gap_is_startup():
    g = _gaps("nvfuser_matmul_h200_2024.6")
    lead = g.top[0]
    assert lead.duration_ns == pytest.approx(397e6, rel=0.01)
    assert lead.cause == "startup"
    assert lead.evidence[0]["detail"] == "KernelExecutor::compileFusion (NVTX)"
    assert lead.evidence[0]["ms"] > 0.95 * lead.duration_ns / 1e6
    assert "cuLibraryLoadData" in str([e["detail"] for t in g.top for e in t.evidence])


def test_mordred_wait_before_the_first_kernel_is_startup():
    g = _gaps("mordred_rtx6000_2021")
    # its H2D copies go to transfer, its 25 read() calls before the first kernel to host_io (as
    # the replay prices them: 1.24 s), the rest of the wait is start-up
    assert g.by_cause_ns["startup"] / 1e9 == pytest.approx(4.70, abs=0.05)
    assert g.by_cause_ns["host_io"] / 1e9 == pytest.approx(1.24, abs=0.02)
    assert g.top[0].cause == "startup"
    assert g.first_kernel_ns is not None and g.first_kernel_ns > 6e9
    assert g.by_cause_detail["startup"].startswith("before the process's first kernel")


def test_nvfuser_compile_gap_names_the_compiler_range_the_host_was_in():
    """The 397 ms start-up gap is spent in NVRTC inside compileFusion, in no CUDA call: "CPU
    was" names the innermost range covering most of it, not a launch covering <1%."""
    lead = _gaps("nvfuser_matmul_h200_2024.6").top[0]
    assert lead.cpu_activity.startswith("in executor_utils::Nvrtc::CompileProgram (NVTX) for 89%")
