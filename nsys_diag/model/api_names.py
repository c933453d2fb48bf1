"""The GPU runtime and driver calls, by family: one name pattern per family, for every reader
(the idle-gap evidence ``analyses/gaps/rows.py``, the replay's call roles
``analyses/replay/roles.py``, the transfers' synchronous copies, the program's graph launches).

Each pattern takes the three spellings a capture records:

* the CUDA runtime, ``cuda…`` (``cudaLaunchKernel``, ``cudaMemcpyAsync``, ``cudaStreamSynchronize``);
* the CUDA driver, ``cu…`` (``cuLaunchKernel``, ``cuMemcpyDtoH_v2``, ``cuCtxSynchronize``);
* HIP, ``hip…``, the ROCm runtime that a PyTorch profiler trace of an AMD GPU records in its
  ``cuda_runtime`` category (``hipLaunchKernel``, ``hipExtModuleLaunchKernel``,
  ``hipMemcpyWithStream`` — a blocking copy —, ``hipDeviceSynchronize``, ``hipMalloc``).

The patterns are anchored (``^…$``) and matched with ``search`` on the name as recorded (nsys's
runtime version suffixes ``_v7000`` are stripped by the loader; the driver's ``_v2`` stays and
is allowed where the driver family has it).
"""
from __future__ import annotations

import re

RUNTIME = r"(?:cuda|hip)"
"""The runtime prefix: CUDA runtime or HIP."""
DRIVER = r"(?:cu|hip)"
"""The driver prefix: CUDA driver or HIP (HIP has one API for both)."""
ANY = r"(?:cu(?:da)?|hip)"
"""Any of the three prefixes."""

_BLOCKING_COPY = (
    rf"{RUNTIME}Memcpy(?:2D|3D|ToSymbol|FromSymbol|Peer|ToArray|FromArray|WithStream)?"
    rf"|{RUNTIME}Memset(?:2D|3D)?|{DRIVER}Memcpy(?:HtoD|DtoH|DtoD|Peer|2D|3D)?(?:_v\d+)?"
    rf"|{DRIVER}MemsetD(?:8|16|32)(?:_v\d+)?")

BLOCKING_COPY_RE = re.compile(rf"^(?:{_BLOCKING_COPY})$")
"""Synchronous copies and memsets (no ``Async`` suffix; HIP's ``hipMemcpyWithStream`` too): the
host waits for its own GPU operation."""
SYNC_API_RE = re.compile(
    rf"^(?:{ANY}(?:Stream|Device|Event|Ctx|Thread)Synchronize|{_BLOCKING_COPY})$")
"""Blocking calls: the synchronizations and the synchronous copies."""
DEVICE_SYNC_RE = re.compile(
    rf"^(?:{RUNTIME}(?:Device|Thread)Synchronize|{DRIVER}CtxSynchronize\w*|{RUNTIME}Free"
    rf"|cudaFreeHost|hipHostFree|hipFreeHost|cuMemFree(?:_v\d+)?|cuMemFreeHost)$")
"""Calls that wait for all of the process's GPU work: the device/context syncs and the implicit
device syncs of the (non-stream-ordered) frees."""
STREAM_SYNC_RE = re.compile(rf"^{ANY}StreamSynchronize\w*$")
"""Calls that wait for one stream's work."""
EVENT_SYNC_RE = re.compile(rf"^{ANY}EventSynchronize\w*$")
"""Calls that wait for the work before an event record."""
LAUNCH_API_RE = re.compile(rf"^{ANY}(?:\w*Launch\w*|Memcpy\w*Async\w*|Memset\w*Async\w*)$")
"""Calls that enqueue GPU work and return: kernel and graph launches, asynchronous copies and
memsets."""
KERNEL_LAUNCH_API_RE = re.compile(rf"^{ANY}\w*Launch\w*$")
"""Calls that launch a kernel or a graph (no copies): a long one holds the GPU idle."""
ENQUEUE_API_RE = re.compile(LAUNCH_API_RE.pattern + "|" + BLOCKING_COPY_RE.pattern)
"""Calls that put work on the GPU, asynchronous or not."""
MEM_API_RE = re.compile(
    rf"^(?:{RUNTIME}Malloc\w*|{RUNTIME}Free\w*|cudaHostAlloc|hipHostMalloc|hipHostFree"
    rf"|hipExtMallocWithFlags|{RUNTIME}HostRegister|{RUNTIME}HostUnregister|{RUNTIME}MemPool\w*"
    rf"|cuMemAlloc\w*|cuMemFree\w*|cuMemHostAlloc\w*|cuMemHostRegister\w*|cuMemHostUnregister"
    rf"|{DRIVER}MemCreate|{DRIVER}MemMap\w*|{DRIVER}MemUnmap|{DRIVER}MemRelease"
    rf"|{DRIVER}MemAddressReserve|{DRIVER}MemAddressFree|{DRIVER}MemSetAccess|cuMemPool\w*)$")
"""Host-side memory management: device, host (pinned/registered), managed and pool allocation,
virtual memory mapping."""
INIT_API_RE = re.compile(
    rf"^(?:{DRIVER}ModuleLoad\w*|cuLibraryLoad\w*|cuLink\w*|{DRIVER}CtxCreate\w*"
    rf"|{DRIVER}DevicePrimaryCtxRetain|{DRIVER}Init|{RUNTIME}SetDevice|cublasCreate\w*"
    rf"|cublasLt\w*Create|cudnnCreate\w*|cusparseCreate\w*|hipblas\w*Create\w*"
    rf"|rocblas_create_handle|miopenCreate\w*|ncclCommInit\w*|nvrtc\w*|hiprtc\w*|nvJitLink\w*)$")
"""One-off initialisation: module/library loading and JIT linking, context creation, library
handle creation (cuBLAS, cuDNN, cuSPARSE, hipBLAS, rocBLAS, MIOpen), NCCL/RCCL communicator
set-up, runtime compilation (NVRTC, hipRTC)."""
GRAPH_LAUNCH_APIS = ("cudaGraphLaunch", "cuGraphLaunch", "hipGraphLaunch")
"""Graph launches (name prefixes)."""
BLOCKING_COPY_LAUNCH_RE = re.compile(rf"^{ANY}Memcpy(?!.*Async)", re.IGNORECASE)
"""A copy's launching call that blocks the host (by the copy's ``launch_api``)."""
BLOCKING_MEMSET_LAUNCH_RE = re.compile(rf"^{ANY}Memset(?!.*Async)", re.IGNORECASE)
"""A memset's launching call that blocks the host."""
