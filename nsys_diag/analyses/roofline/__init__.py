"""Roofline: ncu metrics, results, the ncu ↔ timeline join, GPU specs and choice."""
