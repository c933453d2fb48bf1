"""What ran: the program's framework, the libraries it used and the techniques already in use.

Advice must fit the program: ``.item()`` and ``pin_memory=True`` mean nothing to an OpenMP offload
code, and FlashAttention is no advice to a job already 51% ``flash_fwd_kernel``. This module reads
the capture's own evidence — kernel names (weighted by kernel time), NVTX domains and range names,
CUDA API names, process and thread names, and which tables the export holds — and names:

``framework`` — one of ``FRAMEWORKS``. **Precedence**: the framework that launched most of the
kernel time wins. Kernels whose names carry a framework's marks count for it (``at::native`` →
PyTorch, ``__omp_offloading_`` → OpenMP offload, ``*_NNN_gpu`` → NVHPC OpenACC, XLA fusions → JAX
or TensorFlow, ``myelin``/``trt_`` → TensorRT, ``stdpar``/``__pstl`` → NVHPC stdpar); library
kernels (cuBLAS, cuDNN, CUTLASS, NCCL, Thrust/CUB, …) count for the framework that calls them —
the one with the most marked kernel time, or the one NVTX names show (``aten::`` op ranges,
``ProfilerStep#N``) — and, without one, with plain user kernels for ``cuda``. With no kernel time
at all the non-kernel evidence decides (PyTorch NVTX names), else ``unknown``.

``libraries`` — MPI and NCCL (kernels, NVTX domains, ``MPI_*`` tables, ``MPI Rank`` thread
names), cuBLAS/cuDNN/CUTLASS/Thrust/Triton/nvFuser/FlashAttention by kernel names, host OpenMP by
its tables, in order of kernel time. ``techniques`` — what the program already does that advice
might otherwise suggest: FlashAttention (flash kernels' share of kernel time), CUDA graphs (graph
launches), Triton/torch.compile kernels.

Everything here is a **name heuristic** and says so in its evidence.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from nsys_diag.model.api_names import GRAPH_LAUNCH_APIS

FRAMEWORKS = ("pytorch", "jax", "tensorflow", "tensorrt", "openmp_offload", "openacc", "stdpar",
              "cuda", "unknown")
"""Every ``program.framework`` value, in the order ties are broken."""
ML_FRAMEWORKS = ("pytorch", "jax", "tensorflow", "tensorrt")
"""Frameworks whose users get Python-level advice (DataLoader, AMP, ``torch.compile`` …)."""

_I = re.IGNORECASE
FRAMEWORK_KERNEL_MARKS: tuple[tuple[str, re.Pattern], ...] = (
    ("openmp_offload", re.compile(r"__omp_offloading_", _I)),
    ("openacc", re.compile(r"(?:^|[^A-Za-z0-9])[A-Za-z_]\w*_\d+_gpu(?:__red\w*)?(?:\b|$)")),
    ("tensorrt", re.compile(r"myelin|__myl_|\btrt_|nvinfer|tensorrt", _I)),
    ("tensorflow", re.compile(r"tensorflow::|Eigen::internal::EigenMetaKernel")),
    ("jax", re.compile(r"^(?:\w+_)?fusion(?:_\d+)?(?:\.\d+)?$|^wrapped_\w+$|\bxla::")),
    ("pytorch", re.compile(r"\bat::native::|\bat::cuda::|\bc10::|\bat_cuda_detail::|"
                           r"^triton_(?:poi|red|per|tem)_|\bnvfuser_")),
    ("stdpar", re.compile(r"stdpar|__pstl|std::execution|nvhpc", _I)),
)
"""(framework, pattern on the kernel name): the first match decides a kernel's framework."""

LIBRARY_KERNEL_MARKS: tuple[tuple[str, re.Pattern], ...] = (
    ("nccl", re.compile(r"nccl", _I)),
    ("flash_attention", re.compile(r"flash_(?:fwd|bwd)|flash::|fmha", _I)),
    ("cudnn", re.compile(r"cudnn|scudnn|implicit_convolve|winograd", _I)),
    ("cutlass", re.compile(r"cutlass", _I)),
    ("cublas", re.compile(r"cublas|nvjet|xmma_gemm|\b(?:ampere|volta|turing|maxwell|sm\d+)_\w*gemm|"
                          r"gemv|[sdhc]gemm", _I)),
    ("triton", re.compile(r"^triton_", _I)),
    ("nvfuser", re.compile(r"\bnvfuser_", _I)),
    ("thrust_cub", re.compile(r"thrust::|\bcub::|DeviceRadixSort|DeviceReduce", _I)),
)
"""(library, pattern on the kernel name): every match counts (a kernel can name several)."""

_PYTORCH_NVTX = re.compile(r"^aten::|^ProfilerStep#\d+|^autograd::|torch\.|^DataLoader\b|"
                           r"^enumerate\(DataLoader\)")
_PYTORCH_THREAD = re.compile(r"^pt_(?:autograd|main_thread|data_worker)")
"""PyTorch's own thread names (its autograd engine's ``pt_autograd_N``, ``pt_main_thread``)."""
_MPI_THREAD = re.compile(r"^MPI Rank \d+", _I)


@dataclass(frozen=True)
class Evidence:
    """One observation behind the verdict on the program (``share``: of kernel time, or None)."""

    signal: str
    detail: str
    share: float | None = None

    def to_json(self) -> dict:
        return {"signal": self.signal, "detail": self.detail, "share": self.share}


@dataclass(frozen=True)
class ProgramResult:
    """``program``: framework, libraries, techniques in use, and the evidence for each."""

    framework: str
    framework_share: float | None
    libraries: tuple[str, ...]
    techniques: tuple[str, ...]
    flash_attention_share: float
    evidence: tuple[Evidence, ...]

    @property
    def is_ml_framework(self) -> bool:
        return self.framework in ML_FRAMEWORKS

    def to_json(self) -> dict:
        return {"framework": self.framework, "framework_share": self.framework_share,
                "libraries": list(self.libraries), "techniques": list(self.techniques),
                "flash_attention_share": self.flash_attention_share,
                "evidence": [e.to_json() for e in self.evidence], "basis": "name heuristic"}


@dataclass(frozen=True)
class ProgramSignals:
    """What ``detect_program`` reads: kernel time per kernel name (ns), and names seen in the
    capture. Built from a bundle by ``program_signals`` or, streamed, merged over chunks."""

    kernel_ns_by_name: Mapping[str, int]
    api_names: frozenset[str] = frozenset()
    nvtx_domains: frozenset[str] = frozenset()
    nvtx_texts: frozenset[str] = frozenset()
    thread_names: frozenset[str] = frozenset()
    tables: frozenset[str] = frozenset()
    graph_launches: bool = False  # kernels launched from CUDA graphs (graph node ids, graph trace)


def _kernel_framework(name: str) -> str | None:
    for framework, rx in FRAMEWORK_KERNEL_MARKS:
        if rx.search(name):
            return framework
    return None


def _kernel_libraries(name: str) -> list[str]:
    return [lib for lib, rx in LIBRARY_KERNEL_MARKS if rx.search(name)]


def _by_kernel_time(kernel_ns: Mapping[str, int]) -> tuple[dict[str, int], dict[str, int], int, int]:
    """(marked ns per framework, ns per library, unmarked library ns, plain user-kernel ns)."""
    marked: dict[str, int] = {}
    libs: dict[str, int] = {}
    lib_only = plain = 0
    for name, ns in kernel_ns.items():  # one entry per distinct kernel name
        fw = _kernel_framework(name)
        found = _kernel_libraries(name)
        for lib in found:
            libs[lib] = libs.get(lib, 0) + int(ns)
        if fw is not None:
            marked[fw] = marked.get(fw, 0) + int(ns)
        elif found:
            lib_only += int(ns)
        else:
            plain += int(ns)
    return marked, libs, lib_only, plain


def _host_libraries(s: ProgramSignals) -> list[tuple[str, str]]:
    """(library, evidence) seen outside the kernel names."""
    out = []
    if "NCCL" in s.nvtx_domains:
        out.append(("nccl", "NVTX domain 'NCCL'"))
    if "MPI" in s.nvtx_domains or any(t.startswith("MPI_") for t in s.tables) or \
            any(_MPI_THREAD.match(t) for t in s.thread_names):
        out.append(("mpi", "MPI calls (NVTX domain 'MPI', MPI_* tables or 'MPI Rank' threads)"))
    if any(t.startswith("OPENMP_") for t in s.tables):
        out.append(("openmp", "OpenMP host tables (OPENMP_*)"))
    return out


def detect_program(s: ProgramSignals) -> ProgramResult:
    """The program behind a capture (see the module docstring for the precedence)."""
    total = sum(int(v) for v in s.kernel_ns_by_name.values())
    marked, libs, lib_only, plain = _by_kernel_time(s.kernel_ns_by_name)
    evidence = [Evidence("kernel_names", f"{fw} kernel names", ns / total)
                for fw, ns in sorted(marked.items(), key=lambda kv: -kv[1]) if total]
    torch_nvtx = sorted(t for t in s.nvtx_texts if _PYTORCH_NVTX.search(t))[:3]
    if torch_nvtx:
        evidence.append(Evidence("nvtx_ranges", "PyTorch NVTX ranges (" + ", ".join(torch_nvtx) + ")"))
    torch_threads = sorted(t for t in s.thread_names if _PYTORCH_THREAD.match(t))[:3]
    if torch_threads:
        evidence.append(Evidence("thread_names", "PyTorch threads (" + ", ".join(torch_threads) + ")"))
        torch_nvtx = torch_nvtx or torch_threads
    caller = max(marked, key=lambda f: (marked[f], -FRAMEWORKS.index(f))) if marked else (
        "pytorch" if torch_nvtx else None)
    time_by = dict(marked)
    if caller is not None:
        time_by[caller] = time_by.get(caller, 0) + lib_only
        if lib_only and total:
            evidence.append(Evidence("library_kernels", f"library kernels called by {caller}",
                                     lib_only / total))
    else:
        plain += lib_only
    if plain:
        time_by["cuda"] = time_by.get("cuda", 0) + plain
        if total:
            evidence.append(Evidence("kernel_names", "CUDA kernels without a framework's marks",
                                     plain / total))
    if time_by and total:
        framework = max(time_by, key=lambda f: (time_by[f], -FRAMEWORKS.index(f)))
        share: float | None = time_by[framework] / total
    else:
        framework, share = (caller or "unknown"), None
    found = [(lib, ns) for lib, ns in sorted(libs.items(), key=lambda kv: -kv[1])]
    libraries = [lib for lib, _ in found]
    for lib, why in _host_libraries(s):
        if lib not in libraries:
            libraries.append(lib)
        evidence.append(Evidence("host", why))
    evidence += [Evidence("library_kernels", f"{lib} kernel names", ns / total)
                 for lib, ns in found if total]
    evidence += _graph_evidence(s)
    flash = libs.get("flash_attention", 0) / total if total else 0.0
    return ProgramResult(framework=framework, framework_share=share, libraries=tuple(libraries),
                         techniques=tuple(_techniques(s, libs, total)),
                         flash_attention_share=flash, evidence=tuple(evidence))


def _graph_apis(s: ProgramSignals) -> list[str]:
    return sorted(n for n in s.api_names if n.startswith(GRAPH_LAUNCH_APIS))


def _graph_evidence(s: ProgramSignals) -> list[Evidence]:
    """What shows CUDA graphs in use: the graph launch calls, kernels from graph nodes or a
    graph trace."""
    out = []
    apis = _graph_apis(s)
    if apis:
        out.append(Evidence("api_names", f"CUDA graph launches ({', '.join(apis)} calls)"))
    if s.graph_launches:
        out.append(Evidence("graph_launches", "kernels launched from CUDA graphs (graph node ids "
                                              "or a graph trace)"))
    return out


def _techniques(s: ProgramSignals, libs: Mapping[str, int], total: int) -> list[str]:
    """Techniques already in use (advice must not suggest them again)."""
    out = []
    if total and libs.get("flash_attention", 0) / total >= FLASH_IN_USE_SHARE:
        out.append("flash_attention")
    if s.graph_launches or _graph_apis(s):
        out.append("cuda_graphs")
    if libs.get("triton", 0):
        out.append("triton_kernels")
    return out


FLASH_IN_USE_SHARE = 0.10
"""FlashAttention counts as in use from this share of kernel time (issue: no FlashAttention advice
when flash kernels are ≥ 10% of kernel time)."""


def program_signals(kernel_ns_by_name: Mapping[str, int], *, api_names: Iterable[str] = (),
                    nvtx_domains: Iterable[str] = (), nvtx_texts: Iterable[str] = (),
                    thread_names: Iterable[str] = (), tables: Iterable[str] = ()) -> ProgramSignals:
    """``ProgramSignals`` from plain collections (distinct names; callers pass category levels,
    never per-row values)."""
    return ProgramSignals({str(k): int(v) for k, v in kernel_ns_by_name.items()},
                          frozenset(map(str, api_names)), frozenset(map(str, nvtx_domains)),
                          frozenset(map(str, nvtx_texts)), frozenset(map(str, thread_names)),
                          frozenset(map(str, tables)))


def _levels(frame, column: str) -> list[str]:
    """The distinct values of a categorical column that occur (categories never used are not
    evidence), or of a plain column."""
    if frame is None or not len(frame) or column not in frame:
        return []
    col = frame[column]
    if hasattr(col, "cat"):
        codes = np.unique(col.cat.codes.to_numpy())
        cats = col.cat.categories
        return [str(cats[c]) for c in codes.tolist() if c >= 0]
    return [str(v) for v in pd.unique(col)]


def kernel_ns_by_name(kernels) -> dict[str, int]:
    """Kernel time (ns) per kernel name of a ``KERNELS`` frame (one grouping, no per-row Python)."""
    if kernels is None or not len(kernels):
        return {}
    dur = kernels["end_ns"].to_numpy(np.int64) - kernels["start_ns"].to_numpy(np.int64)
    names = kernels["name"]
    if hasattr(names, "cat"):
        codes = names.cat.codes.to_numpy()
        sums = np.bincount(codes[codes >= 0], weights=dur[codes >= 0],
                           minlength=len(names.cat.categories))
        return {str(names.cat.categories[i]): int(v) for i, v in enumerate(sums.tolist()) if v > 0}
    grouped = pd.Series(dur).groupby(names.astype(str).to_numpy()).sum()
    return {str(k): int(v) for k, v in grouped.items() if v > 0}


def bundle_signals(bundle, kernels=None) -> ProgramSignals:
    """``ProgramSignals`` of a ``TraceBundle`` (``kernels``: the process's kernel rows, default
    the bundle's)."""
    k = bundle.kernels if kernels is None else kernels
    return program_signals(kernel_ns_by_name(k), api_names=_levels(bundle.api, "name"),
                           nvtx_domains=_levels(bundle.nvtx, "domain"),
                           nvtx_texts=_levels(bundle.nvtx, "text"),
                           thread_names=_levels(bundle.threads, "name"),
                           tables=[t for t, n in bundle.meta.tables.items() if n])


GRAPH_TRACE_TABLE = "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"


def sampled_kernel_ns_by_name(shapes) -> dict[str, int]:
    """Kernel time (ns) per kernel name estimated from the launch-shape sample
    (``contracts.LAUNCH_SHAPES``: each row's duration × the launches it stands for)."""
    if shapes is None or not len(shapes):
        return {}
    time = shapes["duration_ns"].to_numpy(np.float64) * shapes["weight"].to_numpy(np.float64)
    grouped = pd.Series(time).groupby(shapes["name"].astype(str).to_numpy()).sum()
    return {str(k): int(round(v)) for k, v in grouped.items() if v > 0}


def capture_api_names(bundle) -> list[str]:
    """The CUDA API names of a whole capture that ``detect_program`` reads (graph launches):
    an nsys export's ``meta.extra["graph_launch_apis"]`` (read once per file by the in-memory
    load and the streamed skeleton alike: a streamed summary holds one API row), else the
    names of the bundle's API rows (a Kineto trace, read whole)."""
    names = bundle.meta.extra.get("graph_launch_apis")
    return list(names) if names is not None else _levels(bundle.api, "name")


def capture_signals(bundle) -> ProgramSignals:
    """``ProgramSignals`` of a whole capture from what the in-memory load and the streamed
    skeleton both hold: the launch-shape sample (kernel time per name, graph launches), the
    graph launch APIs called (``capture_api_names``), NVTX domains and texts, thread names and
    table counts. An ncu CSV (no sample) uses its kernels."""
    shapes = getattr(bundle, "launch_shapes", None)
    if shapes is not None and len(shapes):
        kernel_ns = sampled_kernel_ns_by_name(shapes)
        graphs = bool((shapes["graph_node_id"].to_numpy(np.int64) > 0).any())
    else:
        kernel_ns = _ncu_kernel_ns(bundle) if bundle.meta.format == "ncu-csv" else {}
        graphs = False
    graphs = graphs or bool(bundle.meta.tables.get(GRAPH_TRACE_TABLE, 0))
    signals = program_signals(kernel_ns, api_names=capture_api_names(bundle),
                              nvtx_domains=_levels(bundle.nvtx, "domain"),
                              nvtx_texts=_levels(bundle.nvtx, "text"),
                              thread_names=_levels(bundle.threads, "name"),
                              tables=[t for t, n in bundle.meta.tables.items() if n])
    return ProgramSignals(signals.kernel_ns_by_name, signals.api_names, signals.nvtx_domains,
                          signals.nvtx_texts, signals.thread_names, signals.tables, graphs)


def _ncu_kernel_ns(bundle) -> dict[str, int]:
    """Kernel time (ns) per name of an ncu CSV read alone: its profiled launches' durations."""
    if not len(bundle.kernels) and len(getattr(bundle, "ncu_launches", ())):
        from nsys_diag.analyses.kernels.ncu_kernels import ncu_kernel_frame  # ncu data only

        return kernel_ns_by_name(ncu_kernel_frame(bundle.ncu_launches, bundle.ncu_metrics))
    return kernel_ns_by_name(bundle.kernels)


def analyze_program(bundle) -> ProgramResult:
    """``program`` of a capture (``capture_signals`` → ``detect_program``)."""
    return detect_program(capture_signals(bundle))
