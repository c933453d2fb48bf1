"""The ``--max-memory`` policy: refuse an input whose estimated analysis needs more memory.

The estimate itself is ``nsys_diag.loaders.memory_estimate`` (file facts only); this module
decides what to do with it.
"""
from __future__ import annotations

from nsys_diag.loaders.memory_estimate import BASE_MEMORY_BYTES, estimate_memory, format_bytes
from nsys_diag.model.errors import ResourceLimitError


def check_memory(path: str, limit: int | None, ncu_path: str | None = None,
                 fraction: float | None = None) -> None:
    """Refuse (``ResourceLimitError``, exit 3) when the estimate of what will be read exceeds
    ``limit`` bytes (``fraction``: the share of the export's rows a memory window reads)."""
    if limit is None:
        return
    parts = [e for e in (estimate_memory(path), estimate_memory(ncu_path) if ncu_path else None)
             if e is not None]
    if not parts:
        return  # the loader reports unreadable paths with its own message
    if fraction is not None:
        parts[0] = (int(parts[0][0] * fraction), f"{fraction:.0%} of {parts[0][1]}")
    need = BASE_MEMORY_BYTES + sum(n for n, _ in parts)
    if need > limit:
        how = " + ".join(["base " + format_bytes(BASE_MEMORY_BYTES)] + [h for _, h in parts])
        raise ResourceLimitError(
            path, f"the analysis needs about {format_bytes(need)} of memory ({how}), more than "
            f"--max-memory {format_bytes(limit)}",
            "raise --max-memory, analyse a window that fits with --memory-budget SIZE (or "
            "--window), or export a shorter capture (nsys export --filter-time / capture fewer "
            "steps with --capture-range)")
