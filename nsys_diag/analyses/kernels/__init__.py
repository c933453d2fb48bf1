"""Kernels: names, the catalogue, the per-name table, Tensor Cores and their counters."""
