"""The CUDA/HIP call families (``model/api_names.py``): the CUDA runtime, driver and HIP spellings
of one call fall in the same family, and calls that do not block are never blocking."""
from __future__ import annotations

import pytest

from nsys_diag.analyses.replay import roles as R
from nsys_diag.model import api_names as A

FAMILIES = {
    "blocking_copy": (A.BLOCKING_COPY_RE, ["cudaMemcpy", "cuMemcpyDtoH_v2", "cudaMemset", "cuMemsetD32",
                                           "hipMemcpy", "hipMemcpyWithStream", "hipMemcpyDtoH", "hipMemset"],
                      ["cudaMemcpyAsync", "hipMemcpyAsync", "hipMemsetAsync", "hipLaunchKernel"]),
    "sync": (A.SYNC_API_RE, ["cudaStreamSynchronize", "cuCtxSynchronize", "cudaDeviceSynchronize",
                             "hipDeviceSynchronize", "hipStreamSynchronize", "hipEventSynchronize",
                             "hipMemcpyWithStream"],
             ["cudaStreamWaitEvent", "hipStreamWaitEvent", "hipEventQuery", "hipMemcpyAsync"]),
    "launch": (A.LAUNCH_API_RE, ["cudaLaunchKernel", "cuLaunchKernelEx", "cudaGraphLaunch",
                                 "cudaMemcpyAsync", "hipLaunchKernel", "hipExtModuleLaunchKernel",
                                 "hipModuleLaunchKernel", "hipGraphLaunch", "hipMemcpyAsync",
                                 "hipMemsetAsync"],
               ["cudaMemcpy", "hipMemcpy", "hipMemcpyWithStream", "hipGetDevicePropertiesR0600"]),
    "kernel_launch": (A.KERNEL_LAUNCH_API_RE, ["cudaLaunchKernel", "hipLaunchKernel",
                                               "hipExtModuleLaunchKernel"],
                      ["cudaMemcpyAsync", "hipMemcpyAsync"]),
    "memory": (A.MEM_API_RE, ["cudaMalloc", "cudaFreeHost", "cuMemAlloc_v2", "cudaHostRegister",
                              "hipMalloc", "hipFree", "hipHostMalloc", "hipHostFree",
                              "hipMallocAsync", "hipMemPoolTrimTo", "hipMemCreate"],
               ["hipMemcpy", "hipLaunchKernel", "hipGetDevice"]),
    "init": (A.INIT_API_RE, ["cuInit", "cuModuleLoadData", "cudaSetDevice", "cublasCreate_v2",
                             "hipInit", "hipModuleLoadData", "hipSetDevice", "hipblasCreate",
                             "rocblas_create_handle", "miopenCreate", "hiprtcCompileProgram"],
             ["hipLaunchKernel", "hipMalloc"]),
}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_each_family_takes_the_cuda_and_the_hip_spellings(family):
    rx, members, others = FAMILIES[family]
    assert [n for n in members if not rx.search(n)] == []
    assert [n for n in others if rx.search(n)] == []


@pytest.mark.parametrize("cuda, hip", [
    ("cudaLaunchKernel", "hipLaunchKernel"), ("cudaDeviceSynchronize", "hipDeviceSynchronize"),
    ("cudaStreamSynchronize", "hipStreamSynchronize"), ("cudaEventSynchronize", "hipEventSynchronize"),
    ("cudaMemcpy", "hipMemcpyWithStream"), ("cudaMemcpyAsync", "hipMemcpyAsync"),
    ("cudaMalloc", "hipMalloc"), ("cudaFree", "hipFree"), ("cudaEventRecord", "hipEventRecord"),
])
def test_a_hip_call_has_the_replay_role_of_its_cuda_twin(cuda, hip):
    assert R.role_of(hip) == R.role_of(cuda)


def test_blocking_copy_launch_by_the_copy_launching_call():
    assert A.BLOCKING_COPY_LAUNCH_RE.search("hipMemcpyWithStream")
    assert A.BLOCKING_COPY_LAUNCH_RE.search("cudaMemcpy")
    assert not A.BLOCKING_COPY_LAUNCH_RE.search("hipMemcpyAsync")
    assert A.BLOCKING_MEMSET_LAUNCH_RE.search("hipMemset")
    assert not A.BLOCKING_MEMSET_LAUNCH_RE.search("cudaMemsetAsync")
