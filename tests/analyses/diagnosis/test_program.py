"""What ran (analyses/diagnosis/program.py): framework precedence, libraries, techniques in use."""
from __future__ import annotations

import pytest
from conftest import SAMPLE_TRACES, shared_trace

from nsys_diag.analyses.diagnosis.program import (FRAMEWORKS, bundle_signals, detect_program,
                                                 program_signals)
from nsys_diag.loaders import load_trace


def program(kernels: dict[str, int], **names):
    return detect_program(program_signals(kernels, **names))


@pytest.mark.parametrize("kernels, framework", [
    ({"__omp_offloading_10302_2a1b_main_l42": 300, "__omp_offloading_10302_2a1b_foo_l7": 52},
     "openmp_offload"),
    ({"main_25_gpu": 800, "jacobi_88_gpu__red": 100}, "openacc"),
    ({"fan1(float*, float*, int, int)": 10, "fan2(float*, float*, float*, int, int, int)": 990},
     "cuda"),
    ({"fusion_12": 500, "loop_add_fusion": 200, "wrapped_transpose": 10}, "jax"),
    ({"void tensorflow::functor::ColumnReduceKernel<float>": 100}, "tensorflow"),
    ({"__myl_MulAddRelu": 100, "trt_volta_scudnn_128x64": 50}, "tensorrt"),
    ({"void std::__stdpar_for_each_kernel<lambda>": 42}, "stdpar"),
])
def test_framework_from_kernel_names(kernels, framework):
    assert program(kernels).framework == framework


def test_pytorch_wins_over_the_cublas_and_cutlass_it_calls():
    r = program({"void at::native::vectorized_elementwise_kernel<4>": 100,
                 "nvjet_tst_192x192_64x4": 600, "void cutlass::Kernel2<cutlass_80_tensorop>": 300})
    assert r.framework == "pytorch" and r.framework_share == 1.0
    assert r.libraries[:2] == ("cublas", "cutlass")


def test_library_kernels_alone_are_a_cuda_program():
    """A CUTLASS benchmark: no framework marks, so the library kernels count for plain CUDA."""
    r = program({"void cutlass::Kernel<cutlass::gemm::kernel::GemmUniversal<>>": 162})
    assert r.framework == "cuda" and r.libraries == ("cutlass",)


def test_most_kernel_time_decides_between_two_frameworks():
    r = program({"__omp_offloading_1_main_l1": 100, "saxpy(float*, float*)": 900})
    assert r.framework == "cuda" and r.framework_share == pytest.approx(0.9)


def test_pytorch_nvtx_ranges_claim_the_library_kernels():
    r = program({"ampere_sgemm_128x64_nn": 500}, nvtx_texts=["aten::mm", "ProfilerStep#3"])
    assert r.framework == "pytorch"
    assert any(e.signal == "nvtx_ranges" for e in r.evidence)


def test_mpi_and_nccl_are_libraries_not_frameworks():
    r = program({"saxpy(double *, double *, double *, double, int)": 88},
                nvtx_domains=["MPI"], thread_names=["MPI Rank 0"])
    assert r.framework == "cuda" and "mpi" in r.libraries
    r = program({"ncclDevKernel_SendRecv": 10, "void at::native::elementwise_kernel": 90},
                nvtx_domains=["NCCL"])
    assert r.framework == "pytorch" and "nccl" in r.libraries


def test_techniques_in_use():
    r = program({"flash_fwd_kernel<Flash_fwd_kernel_traits>": 51, "at::native::copy": 49},
                api_names=["cudaGraphLaunch", "cudaLaunchKernel"])
    assert r.techniques == ("flash_attention", "cuda_graphs")
    assert r.flash_attention_share == pytest.approx(0.51)
    assert "flash_attention" not in program({"flash_fwd_kernel": 5, "at::native::x": 95}).techniques


def test_nothing_ran_is_unknown():
    r = program({})
    assert r.framework == "unknown" and r.framework_share is None and r.libraries == ()
    assert set(FRAMEWORKS) >= {r.framework}


def test_sample_and_real_traces():
    assert detect_program(bundle_signals(load_trace(SAMPLE_TRACES / "worked_example.sqlite"))
                          ).framework == "pytorch"
    fv = detect_program(bundle_signals(load_trace(
        shared_trace("nsys/fastvideo_train_2xh100_2026.2.sqlite"))))
    assert fv.framework == "pytorch" and "flash_attention" in fv.techniques
    assert fv.flash_attention_share > 0.4
    saxpy = detect_program(bundle_signals(load_trace(shared_trace("nsys/saxpy_mpi_a100_2022.2.sqlite"))))
    assert saxpy.framework == "cuda" and "mpi" in saxpy.libraries
