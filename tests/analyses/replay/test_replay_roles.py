"""API roles by name (never by syncType): which calls wait for GPU work, and on what."""
from __future__ import annotations

import pandas as pd
import pytest

from nsys_diag.analyses.replay import roles as R


@pytest.mark.parametrize("name, role", [
    ("cudaStreamSynchronize", R.STREAM_SYNC), ("cuStreamSynchronize", R.STREAM_SYNC),
    ("cudaDeviceSynchronize", R.DEVICE_SYNC), ("cuCtxSynchronize", R.DEVICE_SYNC),
    ("cudaFree", R.DEVICE_SYNC), ("cuMemFree_v2", R.DEVICE_SYNC),  # implicit device syncs
    ("cudaFreeAsync", R.MEMORY), ("cudaMalloc", R.MEMORY),  # stream-ordered / no wait
    ("cudaEventSynchronize", R.EVENT_SYNC), ("cudaStreamWaitEvent", R.OTHER),
    ("cudaEventQuery", R.OTHER), ("cudaEventRecord", R.OTHER),
    ("cudaMemcpy", R.SYNC_COPY), ("cuMemcpyDtoH_v2", R.SYNC_COPY), ("cudaMemset", R.SYNC_COPY),
    ("cudaMemcpyAsync", R.LAUNCH), ("cuMemcpyAsync", R.LAUNCH), ("cuMemcpyHtoDAsync_v2", R.LAUNCH),
    ("cudaLaunchKernel", R.LAUNCH), ("cuLaunchKernelEx", R.LAUNCH), ("cudaGraphLaunch", R.LAUNCH),
])
def test_role_by_name(name, role):
    assert R.role_of(name) == role


def test_roles_per_row_from_categories():
    names = pd.Series(pd.Categorical(["cudaFree", "cudaLaunchKernel", None, "cudaFree"]))
    assert R.api_roles(names).tolist() == [R.DEVICE_SYNC, R.LAUNCH, R.OTHER, R.DEVICE_SYNC]


def test_cuda_free_waits_but_is_memory_management_on_the_path():
    assert R.is_blocking(R.role_of("cudaFree")) and R.is_memory_name("cudaFree")
    assert R.call_kind(R.STREAM_SYNC) == "blocking_wait"
    assert R.call_kind(R.MEMORY) == "memory_management"
    assert R.call_kind(R.LAUNCH) == "launch"
