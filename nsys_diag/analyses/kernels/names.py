"""Kernel-name normalisation shared by the ncu join, compare and the Tensor Core analysis.

The same kernel is spelled differently by different tools and versions (NCU_CSV.md §4):
``void at::native::foo<(int)4, float>(int, float const*)`` (ncu ≤ 2023, old-style casts),
``void at::native::foo<4, float>(int, const float *)`` (nsys / newer ncu), a mangled
``_ZN2at6native3fooILi4EfEEviPKf`` (``--print-kernel-base mangled``) or just ``foo`` (nsys
``shortName``). Library kernels also encode their tile configuration in the name
(``ampere_sgemm_128x128_tn``, ``nvjet_tst_128x256_64x4_2x1_v_bz_coopB_TNT``) and Triton kernels
carry numeric / hash suffixes (``triton_poi_fused_add_0``).

Three keys, from most to least specific:

* :func:`kernel_signature_key` — the name without ``void``, parameter list, casts and spaces,
  template arguments kept (``at::native::foo<4,float>``);
* :func:`kernel_base_name` — the bare function name (``foo``), namespaces and template arguments
  dropped; generic wrappers such as ``cutlass::Kernel<X>`` / ``device_kernel<X>`` are named after
  ``X``;
* :func:`normalize_kernel_name` — the *family*: the base name with tile-variant suffixes and
  Triton numeric/hash suffixes removed (``ampere_sgemm``, ``nvjet_tst``, ``triton_poi_fused_add``).

All functions are pure string functions; callers apply them once per **unique** name.
"""
from __future__ import annotations

import re

_ANON = ("(anonymous namespace)", "<unnamed>", "{anonymous}")
_ANON_TOKEN = "anonymous_namespace"

# Template wrappers whose own name says nothing: the kernel is named after the first argument.
_GENERIC_WRAPPERS = frozenset({"Kernel", "Kernel2", "device_kernel", "kernel", "KernelWrapper",
                               "cutlass_kernel", "global_kernel"})

# C-style casts printed by older demanglers inside template arguments: "(int)128", "(bool)0".
_CAST_RE = re.compile(r"\((?:(?:unsigned|signed|const|long|short)\s+)*[A-Za-z_][\w:]*\s*\)(?=[-\w])")
_WS_RE = re.compile(r"\s+")

# A token (between underscores) that starts a tile/launch-configuration suffix in library names:
# 128x128, 64x4, 2x1, tilesize128x128x32, warpsize2x2x1, stage4, sliced1x4, ldg8, align8,
# tensor16x8x16, splitk..., "5x" (cuDNN "__5x_cudnn" tail).
_TILE_TOKEN_RE = re.compile(
    r"^(?:\d+x\d+(?:x\d+)*|\d+x"
    r"|(?:tilesize|warpsize|warpgroupsize|stages?|sliced|ldg|align|alignc|tensor|splitk|split|"
    r"cta|ctas|cluster|warps?|mma|swizzle|wgmma)\d[\dx]*)$",
    re.IGNORECASE,
)
# Triton / Inductor suffixes: "_0", "_12", signature "_0d1d2d3de", long hex hashes.
_TRITON_SUFFIX_RE = re.compile(r"(?:_(?:\d+d)+\d*e*|_\d+)$")
_HEX_HASH_RE = re.compile(r"_(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{12,}$")


def _clean(name: object) -> str:
    s = "" if name is None else str(name)
    s = s.strip()
    if s.startswith("void "):
        s = s[5:].lstrip()
    for a in _ANON:
        s = s.replace(a, _ANON_TOKEN)
    return s


def _demangle_path(mangled: str) -> str | None:
    """Minimal Itanium demangling of the *name path* of ``_Z…`` symbols (no types/templates).

    ``_ZN2at6native3fooILi4EEvv`` → ``at::native::foo``; ``_Z6kernelPf`` → ``kernel``.
    Returns None when the symbol does not parse (callers then keep the raw string).
    """
    s = mangled
    if not s.startswith("_Z"):
        return None
    i = 2
    nested = i < len(s) and s[i] == "N"
    if nested:
        i += 1
        while i < len(s) and s[i] in "rVK":
            i += 1
    parts: list[str] = []
    while i < len(s):
        if s.startswith("St", i):  # std::
            parts.append("std")
            i += 2
            continue
        if not s[i].isdigit():
            break
        j = i
        while j < len(s) and s[j].isdigit():
            j += 1
        n = int(s[i:j])
        ident = s[j:j + n]
        if len(ident) < n:
            return None
        parts.append(_ANON_TOKEN if ident.startswith("_GLOBAL__N") else ident)
        i = j + n
        if not nested:
            break
        if i < len(s) and s[i] in "IE":  # template args or end of nested name
            break
    return "::".join(parts) if parts else None


def _skeleton(s: str) -> tuple[str, str]:
    """Split ``s`` into (text outside brackets, first top-level template argument list).

    Removes everything inside ``<>``, ``()`` and ``[]`` (nested), tolerating unbalanced
    brackets (truncated names). ``->`` and ``operator`` names are not special-cased (kernels
    never use them).
    """
    out: list[str] = []
    first_targs: list[str] = []
    depth = 0
    capture = None  # None: not yet; True: capturing the first <...>; False: done
    for ch in s:
        if ch in "<([":
            if depth == 0 and ch == "<" and capture is None:
                capture = True
            elif depth > 0 and capture is True:
                first_targs.append(ch)
            depth += 1
            continue
        if ch in ">)]":
            if depth > 0:
                depth -= 1
                if depth == 0 and capture is True:
                    capture = False
                elif capture is True:
                    first_targs.append(ch)
            continue
        if depth == 0:
            out.append(ch)
        elif capture is True:
            first_targs.append(ch)
    return "".join(out), "".join(first_targs)


def _split_top_level(s: str, sep: str = ",") -> list[str]:
    parts: list[str] = []
    depth = 0
    cur: list[str] = []
    for ch in s:
        if ch in "<([":
            depth += 1
        elif ch in ">)]":
            depth = max(depth - 1, 0)
        if ch == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return parts


def kernel_signature_key(name: object) -> str:
    """Name without ``void``, parameter list, C-style casts and whitespace (templates kept).

    >>> kernel_signature_key("void k<(int)128, float>(float const*, int)")
    'k<128,float>'
    """
    s = _clean(name)
    if s.startswith("_Z"):
        return _demangle_path(s) or s
    # drop a trailing top-level parameter list "(…)"
    if s.endswith(")"):
        depth = 0
        for idx in range(len(s) - 1, -1, -1):
            ch = s[idx]
            if ch in ")]>":
                depth += 1
            elif ch in "([<":
                depth -= 1
                if depth == 0:
                    if ch == "(" and idx > 0:
                        s = s[:idx]
                    break
    s = _CAST_RE.sub("", s)
    return _WS_RE.sub("", s)


def kernel_base_name(name: object) -> str:
    """Bare function name: no return type, namespaces, template arguments or parameters.

    Generic wrappers (``cutlass::Kernel<X>``, ``cutlass::device_kernel<X>``) are named after X.
    """
    s = _clean(name)
    if not s:
        return ""
    if s.startswith("_Z"):
        path = _demangle_path(s)
        return path.split("::")[-1] if path else s
    for _ in range(4):  # unwrap nested generic wrappers
        outside, targs = _skeleton(s)
        outside = outside.strip()
        base = outside.split("::")[-1].strip() if outside else ""
        base = base.split()[-1] if base.split() else base  # drop a stray return type
        if base in _GENERIC_WRAPPERS and targs.strip():
            first = _split_top_level(targs)[0].strip()
            if first:
                s = first
                continue
        return base or s
    return base or s


def normalize_kernel_name(name: object) -> str:
    """Kernel *family* key: base name minus tile-variant and Triton numeric/hash suffixes.

    ``ampere_sgemm_32x32_sliced1x4_tn`` → ``ampere_sgemm``;
    ``nvjet_tst_128x256_64x4_2x1_v_bz_coopB_TNT`` → ``nvjet_tst``;
    ``sm80_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x32_stage4_…`` →
    ``sm80_xmma_gemm_f16f16_f16f32_f32_tn_n``; ``triton_poi_fused_add_0`` →
    ``triton_poi_fused_add``; ``void at::native::foo<4>(int)`` → ``foo``.
    """
    base = kernel_base_name(name)
    if not base:
        return ""
    tokens = base.split("_")
    for i in range(1, len(tokens)):
        if tokens[i] and _TILE_TOKEN_RE.match(tokens[i]):
            cut = "_".join(tokens[:i]).rstrip("_")
            if cut:
                base = cut
            break
    base = _HEX_HASH_RE.sub("", base)
    if base.lower().startswith("triton"):
        prev = None
        while prev != base:
            prev = base
            stripped = _TRITON_SUFFIX_RE.sub("", base)
            base = stripped if stripped.strip("_") else base
    return base
