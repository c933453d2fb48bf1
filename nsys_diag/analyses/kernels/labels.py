"""Kernel labels for people: a readable name per kernel, and labels that tell apart the template
instantiations sharing one name (``elementwise_kernel · MulFunctor · bf16``).

Pure string work on the (capped) rows of a kernel table — no pandas, so the report can import it
without delaying the start of the loaders (perf, bench).
"""
from __future__ import annotations

import re

UNINFORMATIVE_SHORT_NAMES = frozenset({"kernel", "kernel2", "device_kernel", "cutlass_kernel"})
"""Short names that say nothing (generic CUTLASS/nvFuser entry points): the demangled name is
shown instead."""


def display_name(name: str, short_name: str = "", max_len: int = 80) -> str:
    """A readable label: the short name when informative, else the demangled name, truncated."""
    if short_name and short_name.lower() not in UNINFORMATIVE_SHORT_NAMES:
        text = short_name
    else:
        text = name or short_name
    return text if len(text) <= max_len else text[: max_len - 1] + "…"


def without_parameters(name: str, max_len: int = 80) -> str:
    """A demangled kernel name without its parameter list and return type, for a sentence:
    ``void sptrsv_level_kernel<double>(const int *, …)`` → ``sptrsv_level_kernel<double>`` (the
    trailing ``( … )`` group, matched from the end, so ``(anonymous namespace)`` and template
    arguments stay); cut to ``max_len`` characters with ``…`` when still longer."""
    text = str(name or "").strip()
    if text.endswith(")"):
        depth = 0
        for i in range(len(text) - 1, -1, -1):  # one name: bounded by its length
            depth += {")": 1, "(": -1}.get(text[i], 0)
            if depth == 0:
                text = text[:i].rstrip() or text
                break
    if text.startswith("void "):
        text = text[5:]
    return text if len(text) <= max_len else text[: max_len - 1] + "…"


_CAST = re.compile(r"\((?:unsigned\s+)?(?:int|long|bool|char|short|float)\)\s*(?=-?\d)")
_ANON = re.compile(r"(?:<unnamed>|\(anonymous namespace\))::")
_IDENT = re.compile(r"(?:[A-Za-z_]\w*::)*([A-Za-z_]\w*)")
_DTYPE = re.compile(r"\b(c10::BFloat16|BFloat16|__nv_bfloat16|c10::Half|__half|float|double|int64_t|int8_t|"
                    r"uint8_t|c10::complex<float>|c10::complex<double>)\b")
_DTYPE_SHORT = {"c10::BFloat16": "bf16", "BFloat16": "bf16", "__nv_bfloat16": "bf16", "c10::Half": "fp16",
                "__half": "fp16", "float": "fp32", "double": "fp64", "c10::complex<float>": "complex64",
                "c10::complex<double>": "complex128"}
_INT_ARG = re.compile(r"\((?:unsigned\s+)?int\)\s*(-?\d+)")
_NOT_A_VARIANT = frozenset({
    "void", "int", "unsigned", "long", "char", "short", "bool", "float", "double", "const", "lambda", "instance",
    "operator", "gpu_kernel_impl", "gpu_kernel_impl_nocast", "BinaryFunctor", "UnaryFunctor", "BUnaryFunctor",
    "TensorIteratorBase", "TrivialOffsetCalculator", "OffsetCalculator", "LoadWithCast", "StoreWithCast",
    "LoadWithoutCast", "StoreWithoutCast", "array", "Array", "unnamed", "anonymous", "OpaqueType", "ReduceOp",
    "func_wrapper_t", "BFloat16", "Half", "complex", "int64_t", "int32_t", "uint32_t", "uint64_t", "int8_t",
    "uint8_t", "size_t", "CatArrInputTensorMetadata", "TensorSizeStride", "PackedTensorAccessor", "std",
})
_VARIANT_SUFFIX = re.compile(r"(?:CUDAKernelImpl|KernelImpl|_kernel_cuda|_kernel_impl|_kernel)$")


def variant_features(name: str, short_name: str = "") -> tuple[str, str, str]:
    """What sets one instantiation of a kernel template apart, from its demangled name:
    (functor or op — the first identifier in the template arguments that is not plumbing, e.g.
    ``MulFunctor``, ``direct_copy``, ``MeanOps`` —, element type ``bf16``/``fp32``/…, the leading
    integer template arguments ``<128, 4>``); "" where the name has none."""
    text = str(name or "")
    at = text.find(short_name) if short_name else -1
    rest = text[at + len(short_name):] if at >= 0 and short_name else text
    plain = _CAST.sub("", _ANON.sub("", rest))
    functor = ""
    for m in _IDENT.finditer(plain):
        tok = m.group(1)
        if tok not in _NOT_A_VARIANT and not re.fullmatch(r"T\d+", tok) and tok != short_name:
            functor = _VARIANT_SUFFIX.sub("", tok) or tok
            break
    d = _DTYPE.search(plain)
    dtype = _DTYPE_SHORT.get(d.group(1), d.group(1)) if d else ""
    ints = _INT_ARG.findall(rest)[:2]
    return functor, dtype, (f"<{', '.join(ints)}>" if ints else "")


def distinct_labels(names, short_names) -> list[str]:
    """One label per kernel row: its display name, and for rows that share it, the fewest variant
    features (``variant_features``; features equal across the group are skipped) that tell them
    apart — ``elementwise_kernel · MulFunctor · bf16`` — numbered ``#k`` when even those agree.
    Works on the (capped) rows of a kernel table, not on every launch."""
    base = [display_name(str(n or ""), str(s or "")) for n, s in zip(names, short_names)]
    groups: dict[str, list[int]] = {}
    for i, b in enumerate(base):
        groups.setdefault(b, []).append(i)
    out = list(base)
    for label, rows in groups.items():
        if len(rows) < 2:
            continue
        feats = [variant_features(str(names[i] or ""), str(short_names[i] or "")) for i in rows]
        useful = [k for k in range(3) if len({f[k] for f in feats}) > 1]
        chosen: list[int] = []
        for k in useful:
            chosen.append(k)
            if len({tuple(f[j] for j in chosen) for f in feats}) == len(rows):
                break
        seen: dict[str, int] = {}
        for i, f in zip(rows, feats):
            parts = [f[j] for j in chosen if f[j]]
            text = label + (" · " + " · ".join(parts) if parts else "")
            seen[text] = seen.get(text, 0) + 1
            out[i] = text
        dupes = {t for t, c in seen.items() if c > 1}
        counters: dict[str, int] = {}
        for i in rows:
            if out[i] in dupes:
                counters[out[i]] = counters.get(out[i], 0) + 1
                out[i] = f"{out[i]} #{counters[out[i]]}"
    return out
