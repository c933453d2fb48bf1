"""Nsight Compute CSV loader — placeholder until the ncu work lands (issue: Nsight Compute CSV)."""
from __future__ import annotations


def looks_like_ncu_csv(head: bytes) -> bool:
    """True when the first bytes look like `ncu --csv` output (replaced by the ncu work)."""
    return b'"Kernel Name"' in head or b"==PROF==" in head
