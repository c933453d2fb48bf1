"""Per-SM residency limits of each compute capability: how many threads, blocks, registers and
bytes of shared memory one streaming multiprocessor can hold at once.

Source: the CUDA C++ Programming Guide, "Technical Specifications per Compute Capability"
(maximum resident threads / blocks per SM, 32-bit registers per SM, shared memory per SM) and the
occupancy calculator's allocation granularities (registers are allocated per warp in units of
256; shared memory per block rounded up to 128 B on Volta and older, 1 KiB reserved per block from
Ampere on). An export's own ``TARGET_INFO_GPU`` values (``maxWarpsPerSm × threadsPerWarp``,
``maxBlocksPerSm``, ``maxRegistersPerSm``, ``maxShmemPerSm``) win over this table when present.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SmLimits:
    """What one SM can hold at once (``source``: where the numbers come from)."""

    max_threads: int
    max_blocks: int
    registers: int
    smem_bytes: int
    reserved_smem_per_block: int = 0
    source: str = "spec table"


_KIB = 1024
BY_COMPUTE_CAPABILITY: dict[tuple[int, int], SmLimits] = {
    (6, 0): SmLimits(2048, 32, 65536, 64 * _KIB),     # Pascal GP100 (P100)
    (6, 1): SmLimits(2048, 32, 65536, 96 * _KIB),     # Pascal GP10x (GTX 10xx, P4, P40)
    (6, 2): SmLimits(2048, 32, 65536, 64 * _KIB),     # Pascal (Jetson TX2)
    (7, 0): SmLimits(2048, 32, 65536, 96 * _KIB),     # Volta (V100)
    (7, 2): SmLimits(2048, 32, 65536, 96 * _KIB),     # Volta (Xavier)
    (7, 5): SmLimits(1024, 16, 65536, 64 * _KIB),     # Turing (T4, RTX 20xx, Quadro RTX)
    (8, 0): SmLimits(2048, 32, 65536, 164 * _KIB, _KIB),  # Ampere GA100 (A100, A30)
    (8, 6): SmLimits(1536, 16, 65536, 100 * _KIB, _KIB),  # Ampere GA10x (RTX 30xx, A10, A40)
    (8, 7): SmLimits(1536, 16, 65536, 164 * _KIB, _KIB),  # Ampere (Orin)
    (8, 9): SmLimits(1536, 24, 65536, 100 * _KIB, _KIB),  # Ada (L4, L40, RTX 40xx)
    (9, 0): SmLimits(2048, 32, 65536, 228 * _KIB, _KIB),  # Hopper (H100, H200)
    (10, 0): SmLimits(2048, 32, 65536, 228 * _KIB, _KIB),  # Blackwell (B200)
    (12, 0): SmLimits(1536, 32, 65536, 100 * _KIB, _KIB),  # Blackwell client (RTX 50xx)
}

REGISTER_UNIT = 256
"""Registers are allocated per warp in units of 256 (every architecture in the table)."""
WARP_SIZE = 32


def limits_for(cc_major: int, cc_minor: int) -> SmLimits | None:
    """The table's limits for a compute capability (the nearest lower minor of the same major
    when the exact one is not listed); None when unknown."""
    exact = BY_COMPUTE_CAPABILITY.get((cc_major, cc_minor))
    if exact is not None:
        return exact
    same = sorted(k for k in BY_COMPUTE_CAPABILITY if k[0] == cc_major and k[1] <= cc_minor)
    return BY_COMPUTE_CAPABILITY[same[-1]] if same else None


EXPORT_LIMITS_SOURCE = "export (TARGET_INFO_GPU)"
"""Where an nsys export's per-SM limits come from."""
TRACE_LIMITS_SOURCES = {"kineto": "trace (deviceProperties)"}
"""Where the per-SM limits of other inputs come from, by ``meta.format`` (a PyTorch profiler
trace: its ``deviceProperties``)."""
_LIMIT_NAMES = ("max threads", "max blocks", "registers", "shared memory")


def limits_source(trace_format: str) -> str:
    """The label of the per-SM limits an input of ``trace_format`` carries itself."""
    return TRACE_LIMITS_SOURCES.get(trace_format, EXPORT_LIMITS_SOURCE)


def from_export(max_threads: int, max_blocks: int, registers: int, smem_bytes: int,
                fallback: SmLimits | None, source: str = EXPORT_LIMITS_SOURCE) -> SmLimits | None:
    """Limits read from the export (each ≤ 0 when the export lacks it), completed from
    ``fallback`` (the table's row for the GPU's compute capability); None when neither knows
    the thread and block limits. ``source``: where the input's own values come from
    (``limits_source``); the label names the values the spec table completed."""
    def pick(value: int, default: int | None) -> int | None:
        return int(value) if value and value > 0 else default

    fb = fallback
    threads = pick(max_threads, fb.max_threads if fb else None)
    blocks = pick(max_blocks, fb.max_blocks if fb else None)
    if threads is None or blocks is None:
        return None
    regs = pick(registers, fb.registers if fb else 65536) or 65536
    smem = pick(smem_bytes, fb.smem_bytes if fb else 48 * _KIB) or 48 * _KIB
    given = [bool(v and v > 0) for v in (max_threads, max_blocks, registers, smem_bytes)]
    label = "spec table"
    if all(given):
        label = source
    elif any(given):
        missing = ", ".join(n for n, g in zip(_LIMIT_NAMES, given) if not g)
        label = f"{source}; {missing} per SM {'from the spec table' if fb else 'assumed'}"
    return SmLimits(threads, blocks, regs, smem, fb.reserved_smem_per_block if fb else 0, label)
