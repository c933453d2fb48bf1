"""Kernel-name catalogue: a category and Tensor Core evidence for each *unique* kernel name.

Everything here is a **name heuristic** (it says so in every evidence string); hardware counters
(nsys GPU metrics "Tensor Active", ncu tensor-pipe counters) win over it in ``tensor_cores.py``.
Callers classify unique names only (``kernels["name"].cat.categories`` or a per-name aggregate),
never rows.

Name text
---------
The text matched is the demangled name plus the short name. The short name alone is often
uninformative (CUTLASS kernels are ``Kernel``/``Kernel2``/``device_kernel`` whose tile, data type
and ``tensorop``/``simt`` path only appear in the template arguments), so the demangled name is
always used.

Categories (first matching rule wins, in this order)
----------------------------------------------------
``communication`` (NCCL/RCCL ``nccl*``, ``ncclDevKernel_*``, ``ncclKernel_*``, all-reduce /
all-gather / reduce-scatter / send-recv / all-to-all, NVSHMEM, DeepEP, userbuffers) ·
Triton-generated pointwise (``triton_poi_``) → ``elementwise``, reductions (``triton_red_``,
``triton_per_``) → ``reduction`` · ``attention`` (FlashAttention, fmha, paged/decode attention,
cuDNN SDPA, FlashInfer) · ``conv`` (cuDNN fprop/dgrad/wgrad/implicit GEMM, scudnn, winograd) ·
``reduction`` for cuBLAS split-K reduce and BLAS-1 dot kernels · ``gemm`` (cuBLAS/cuBLASLt
incl. ``nvjet``, ``xmma_gemm``, CUTLASS, ``*gemm*``/``gemv``, ``matmul``, Triton ``mm``
templates) · ``memory``
(memcpy/memset/copy/fill/concat/layout-transform kernels) · ``elementwise`` (PyTorch
``elementwise_kernel`` family, multi-tensor-apply optimizers) · ``reduction`` (reduce, softmax,
norms, scans, top-k, losses) · other elementwise words (activations, functors, axpy) · ``other``.

Tensor Core basis (per name)
----------------------------
``tc`` (the name shows a Tensor Core path), ``no_tc`` (the name shows a CUDA-core/SIMT path: the
false friends ``*_ffma``, ``*sgemm*``, ``volta_sgemm_*``, ``simt``, ``scudnn``, legacy
``cudnn::`` kernels, pre-Volta arch prefixes, FlashAttention helper kernels, decode attention),
``unknown`` (GEMM/conv/attention-like or generated code with no marker either way — e.g. a Triton
``mm`` template, nvFuser ``nvfuser_*``/``kernelN``, a bare ``<lambda>``, a generic CUTLASS
``Kernel``/``Kernel2`` without tile arguments, a plain ``gemm_kernel``; a plain user kernel named
``kernel`` is not: the digits are nvFuser's), ``n/a`` (not a matrix-multiply kernel and no
marker, or a matrix-vector kernel — ``gemv``/``gemvx``/``gemmSN``/``dot`` — that runs on CUDA
cores in every dtype, so it is not a missed Tensor Core GEMM). Rules are checked in order; the
first match decides.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd
from nsys_diag.analyses.kernels.labels import (  # noqa: F401 (re-exported)
    UNINFORMATIVE_SHORT_NAMES,
    display_name,
    distinct_labels,
    variant_features,
)

CATEGORIES = ("gemm", "conv", "attention", "elementwise", "reduction", "communication", "memory",
              "other")
"""Every category ``classify_category`` can return."""

MATMUL_CATEGORIES = ("gemm", "conv", "attention")
"""Categories whose work can run on Tensor Cores (GEMM, implicit-GEMM convolution, attention)."""

TC_BASES = ("tc", "no_tc", "unknown", "n/a")

"""Short names that say nothing (CUTLASS); display and matching use the demangled name."""

_I = re.IGNORECASE


@dataclass(frozen=True)
class _Rule:
    value: str  # category, or tensor-core basis
    label: str  # human evidence ("" for categories)
    pattern: re.Pattern


def _r(value: str, pattern: str, label: str = "", flags: int = _I) -> _Rule:
    return _Rule(value, label, re.compile(pattern, flags))


# ---- categories ----------------------------------------------------------------------------------
_CATEGORY_RULES: tuple[_Rule, ...] = (
    _r("communication",
       r"nccl|rccl|msccl|all_?reduce|all_?gather|reduce_?scatter|send_?recv|all_?to_?all|alltoall"
       r"|cross_device_reduce|nvshmem|deep_ep|userbuffers"),
    _r("elementwise", r"(?:^|[^a-z])triton_poi_"),
    _r("reduction", r"(?:^|[^a-z])triton_(?:red|per)_"),
    _r("attention",
       r"flash|fmha|attention|attn|sdpa|(?:^|[^a-z])mha(?:[^a-z]|$)|xformers|flashinfer"
       r"|BatchDecode|BatchPrefill|SingleDecode|SinglePrefill"),
    _r("conv",
       r"conv(?!ert|ers)|fprop|dgrad|wgrad|implicit_?gemm|implicit_convolve|winograd|scudnn"
       r"|[0-9]cudnn|direct_group|nchwkrsc|nhwckrsc"),
    _r("reduction", r"splitKreduce|split_?k_?reduce|(?:^|[^a-z])dot_kernel|nrm2_kernel|asum_kernel"),
    _r("gemm",
       r"gemm|gemv|matmul|nvjet|cublas|cutlass|xmma|wgmma|gmma|hmma|imma|tensorop|tensor_op"
       r"|(?:^|[^a-z])(?:b|add|baddb)?mm(?:[^a-z]|$)|(?:^|[^a-z])mma(?:[^a-z]|$)"),
    _r("memory",
       r"memcpy|memset|copy|fill_?kernel|FillFunctor|CatArray|cat_?array|nchwToNhwc|nhwcToNchw"
       r"|transpose"),
    _r("elementwise", r"elementwise_kernel|elementwise_grid_stride|multi_tensor_apply"),
    _r("reduction",
       r"reduce|reduction|softmax|norm(?!al)|argmax|argmin|topk|top_k|scan|cumsum|welford"
       r"|cross_entropy|nll_loss|bn_fw|bn_bw|sum_kernel|mean_kernel|moments"),
    _r("elementwise",
       r"elementwise|pointwise|functor|activation|gelu|relu|silu|swiglu|sigmoid|tanh|dropout"
       r"|adam|sgd|axpy|scal_kernel|rotary|rope_|unary|binary|_cast|cast_"),
)

# ---- Tensor Core evidence --------------------------------------------------------------------------
_NAME_HEURISTIC = "name heuristic"

_TC_RULES: tuple[_Rule, ...] = (
    # false friends first: FP32 CUDA-core (SIMT) kernels whose names look like Tensor Core GEMMs
    _r("no_tc", r"ffma", "xmma '_ffma' path = FP32 FFMA on CUDA cores (SIMT)"),
    _r("no_tc", r"simt|UniversalFMA", "CUTLASS SIMT path (CUDA cores)"),
    _r("no_tc", r"(?:^|[^A-Za-z0-9])[shcz]gemm",  # case-sensitive: not 'cublasGemm…Params'
       "sgemm/hgemm/cgemm/zgemm = CUDA-core GEMM (FP32/FP16 SIMT), not Tensor Cores", flags=0),
    _r("n/a", r"gemv|gemmSN|gemmk1|(?:^|[^a-z])dot_kernel",
       "matrix-vector/small-N BLAS kernel on CUDA cores (memory-bound: Tensor Cores do not apply)"),
    _r("no_tc", r"scudnn", "cuDNN 'scudnn' = FP32 convolution on CUDA cores"),
    _r("unknown", r"nvjet_sss(?!.*tf32)",
       "FP32 nvjet GEMM: Tensor Cores only with TF32/emulation, the name does not say"),
    # FlashAttention helpers run no MMA
    _r("no_tc", r"flash\w*?(?:combine|convert|dot_do_o|preprocess|postprocess|clear_)",
       "FlashAttention helper kernel (no MMA)"),
    _r("no_tc", r"fmha_cutlass[fb]_f32_.*sm(?:50|70|75)",
       "FP32 memory-efficient attention before Ampere (CUDA cores)"),
    # Tensor Core paths
    _r("tc", r"nvjet", "cuBLASLt nvjet JIT GEMM (Hopper/Blackwell Tensor Cores)"),
    _r("tc", r"flash_fwd|flash_bwd|flash::|flashattn|flash_attn|pytorch_flash",
       "FlashAttention-2/3 kernel (MMA)"),
    _r("tc", r"flashinfer.*prefill|BatchPrefill|SinglePrefill", "FlashInfer prefill (MMA)"),
    _r("tc", r"fmha", "fused MHA (CUTLASS/TensorRT fmha, MMA)"),
    _r("tc", r"tcgen05|utcmma|(?:^|[^a-z])umma", "Blackwell UMMA/tcgen05 Tensor Core path"),
    _r("tc", r"Umma|UMMA", "Blackwell UMMA/tcgen05 Tensor Core path", flags=0),
    _r("tc", r"wgmma|gmma", "Hopper (w)gmma Tensor Core path"),
    _r("tc", r"xmma", "cuBLAS/cuDNN xmma Tensor Core path"),
    _r("tc", r"hmma|imma|dmma|qmma|wmma", "HMMA/IMMA/DMMA/WMMA Tensor Core instructions"),
    _r("tc", r"tensor_?op", "tensorop (CUTLASS/cuBLAS Tensor Core path)"),
    _r("tc", r"(?<![0-9a-z])[hsicb](?:884|1688|16816|16832|8816|161616)(?![0-9])",
       "884/1688/16816 tensor MMA shape in a cuBLAS/cuDNN name"),
    _r("tc", r"SM(?:70|75|80|86|89|90|100|120)_\d+x\d+x\d+_", "CuTe SMxx MMA atom (Tensor Cores)",
       flags=0),
    _r("tc", r"(?:^|[^a-z])mma(?:[^a-z]|$)", "named for MMA (Tensor Cores)"),
    _r("tc", r"tf32", "TF32 math (Tensor Cores on Ampere+)"),
    _r("tc", r"e4m3|e5m2|fp8\w*(?:gemm|mm)|(?:gemm|mm)\w*fp8|nvfp4|mxfp",
       "FP8/FP4 GEMM (Tensor Cores only)"),
    # no marker: name families known to run on CUDA cores
    _r("no_tc", r"(?<![\w])cudnn::", "legacy cuDNN kernel (CUDA cores)"),
    _r("no_tc", r"(?:^|[^a-z])(?:maxwell|kepler|fermi|pascal)_",
       "pre-Volta architecture kernel (no Tensor Cores)"),
    _r("no_tc",
       r"paged_?attention|decode\w*attention|attention\w*decode|BatchDecode|SingleDecode"
       r"|decode_?attn",
       "decode attention kernel (CUDA cores; not named for MMA)"),
    # no marker and the name cannot decide
    _r("unknown", r"(?:^|[^a-z])dgemm",
       "FP64 GEMM: Tensor Cores only via DMMA on A100/H100, the name does not say"),
    _r("unknown", r"(?:^|[^a-z])(?:nvfuser_|triton_(?!poi_|red_|per_))",
       "generated kernel (Triton/nvFuser): the name does not say whether it uses Tensor Cores"),
    _r("unknown", r"^\s*(?:void\s+)?(?:[\w<>]+::)*(?:kernel\d+|<lambda>)\s*(?:[<(]|$)",
       "generated or generic kernel (nvFuser kernelN, CUTLASS KernelN, lambda): the name does "
       "not say whether it uses Tensor Cores"),
)


def _texts(names, short_names=None) -> pd.Series:
    """Matching text per name: demangled name plus the short name when it adds anything."""
    n = pd.Series(np.asarray(names, dtype=object)).fillna("").astype(str)
    if short_names is None:
        return n.reset_index(drop=True)
    s = pd.Series(np.asarray(short_names, dtype=object)).fillna("").astype(str)
    if len(s) != len(n):
        raise ValueError("names and short_names must have the same length")
    s = s.reset_index(drop=True)
    n = n.reset_index(drop=True)
    add = (s != "") & ~np.fromiter((b in a for a, b in zip(n, s)), bool, len(n))
    return n.where(~add, n + " " + s)


FEW_TEXTS = 64
"""Up to this many names, ``_first_match`` runs the compiled patterns in plain Python (perf,
bench: a pandas ``str.contains`` per rule costs ~0.3 ms even for a handful of names)."""


def _first_match(texts: pd.Series, rules: tuple[_Rule, ...], default: str
                 ) -> tuple[np.ndarray, np.ndarray]:
    """For each text the value and label of the first rule whose pattern matches (``search``)."""
    values = np.full(len(texts), default, dtype=object)
    labels = np.full(len(texts), "", dtype=object)
    if len(texts) <= FEW_TEXTS:
        for i, text in enumerate(texts.tolist()):  # a few unique names
            for rule in rules:
                if rule.pattern.search(text):
                    values[i], labels[i] = rule.value, rule.label
                    break
        return values, labels
    todo = np.ones(len(texts), dtype=bool)
    for rule in rules:
        if not todo.any():
            break
        hit = np.zeros(len(texts), dtype=bool)
        hit[todo] = texts[todo].str.contains(rule.pattern, regex=True).to_numpy(dtype=bool)
        values[hit] = rule.value
        labels[hit] = rule.label
        todo &= ~hit
    return values, labels


def classify_category(names, short_names=None) -> np.ndarray:
    """Category (one of ``CATEGORIES``) for each unique kernel name; object array, input order."""
    values, _ = _first_match(_texts(names, short_names), _CATEGORY_RULES, "other")
    return values


def tensor_core_evidence(names, short_names=None, categories=None) -> pd.DataFrame:
    """Per unique name: ``tensor_core`` (bool), ``tc_basis`` (``TC_BASES``), ``tc_evidence`` (str).

    ``categories`` (from ``classify_category``) is computed when not given; it turns "no marker"
    into ``unknown`` for GEMM/conv/attention kernels and ``n/a`` for the rest.
    """
    texts = _texts(names, short_names)
    if categories is None:
        categories = classify_category(names, short_names)
    basis, labels = _first_match(texts, _TC_RULES, "")
    cats = np.asarray(categories, dtype=object)
    unmatched = basis == ""
    matmul = np.isin(cats, MATMUL_CATEGORIES)
    basis[unmatched & matmul] = "unknown"
    labels[unmatched & matmul] = "GEMM/conv/attention kernel with no Tensor Core marker in its name"
    basis[unmatched & ~matmul] = "n/a"
    evidence = np.where(labels != "", labels + f" ({_NAME_HEURISTIC})", "")
    return pd.DataFrame({
        "tensor_core": basis == "tc",
        "tc_basis": basis.astype(object),
        "tc_evidence": evidence.astype(object),
    })


def tensor_core_from_name(names, short_names=None) -> tuple[np.ndarray, np.ndarray]:
    """``(flags, evidence)``: True where the name shows a Tensor Core path, and why (per name)."""
    ev = tensor_core_evidence(names, short_names)
    return ev["tensor_core"].to_numpy(dtype=bool), ev["tc_evidence"].to_numpy(dtype=object)


def catalogue(names, short_names=None) -> pd.DataFrame:
    """``category``, ``tensor_core``, ``tc_basis``, ``tc_evidence`` for each unique name (input order)."""
    cats = classify_category(names, short_names)
    ev = tensor_core_evidence(names, short_names, cats)
    ev.insert(0, "category", cats)
    return ev


