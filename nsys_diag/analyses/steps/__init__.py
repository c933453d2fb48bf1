"""Training steps: NVTX and detected steps, repeats, phases and per-step phase times."""
