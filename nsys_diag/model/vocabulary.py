"""The one vocabulary of nsys-diag: canonical phases, idle-gap causes, verdict codes, capture hints.

Every module that names a phase, a gap cause, a verdict or tells the user how to capture what is
missing takes the word from here; nothing else defines them. Orders matter: tuples are listed in
the order outputs show them.
"""
from __future__ import annotations

# ----------------------------------------------------------------------------------- phases
CANONICAL_PHASES = ("data", "forward", "backward", "optimizer", "overhead", "communication", "other")
"""Canonical phases a step's NVTX ranges map to (``analyses/steps/phases.py``); ``other`` catches the
rest. This is also the order of ``--phase-map`` keys in messages."""

ANNOTATED_PHASES = CANONICAL_PHASES[:-1]
"""The phases a user marks by name with ``nsys_diag.annotate`` (``other`` is never marked)."""

PHASE_DISPLAY_ORDER = ("data", "forward", "backward", "optimizer", "communication", "overhead",
                       "other")
"""Order of per-phase columns in batch and compare outputs (a step's life: input, compute,
communication, then bookkeeping)."""

# ------------------------------------------------------------------------------- gap causes
GAP_CAUSES = ("startup", "input", "overhead", "communication", "transfer", "unified_memory", "sync",
              "memory_management", "host_io", "launch", "other")
"""Causes of GPU idle time, in precedence order (defined once, in ``analyses/gaps/causes.py``'s module
docstring): a gap's time goes to the first cause whose evidence covers it; ``other`` is the
residual."""

GAP_CAUSE_LABELS = (
    ("startup", "Start-up"),
    ("input", "Waiting on input"),
    ("transfer", "Memory transfers"),
    ("unified_memory", "Unified memory"),
    ("communication", "Communication (host)"),
    ("sync", "Host synchronization"),
    ("memory_management", "Memory management"),
    ("host_io", "Host I/O"),
    ("launch", "Launch overhead"),
    ("overhead", "Overhead phase"),
    ("other", "Other"),
)
"""Gap causes with their report labels, in the order the report lists them."""

# ---------------------------------------------------------------------------- verdict codes
VERDICT_CODES = ("compute_bound", "compute_bound_no_tensor_cores", "input_bound", "memory_bound",
                 "overhead_bound", "launch_bound", "communication_bound", "insufficient_data")
"""The verdicts ``analyze`` can give (``verdict.code`` in the JSON)."""

VERDICT_TITLES = {
    "compute_bound": "Compute bound",
    "compute_bound_no_tensor_cores": "Compute bound — Tensor Cores unused",
    "input_bound": "Input bound",
    "memory_bound": "Memory bound",
    "overhead_bound": "Overhead bound",
    "launch_bound": "Launch bound",
    "communication_bound": "Communication bound",
    "insufficient_data": "Insufficient data",
}

# ---------------------------------------------------------------------------- capture hints
NSYS_TRACE_FLAGS = "nsys profile -t cuda,nvtx,osrt"
"""The tracing flags every capture hint starts from."""

NSYS_CAPTURE_COMMAND = f"{NSYS_TRACE_FLAGS} --cuda-graph-trace=node -o report python train.py"
"""A complete capture command line for a PyTorch training script."""

HINT_CAPTURE_CUDA = "capture CUDA with `nsys profile -t cuda`"
HINT_CAPTURE_CUDA_ACTIVITY = "capture CUDA activity with `nsys profile -t cuda`"
HINT_CAPTURE_CUDA_NVTX = "capture CUDA activity with `nsys profile -t cuda,nvtx`"
HINT_GPU_METRICS = ("nsys profile --gpu-metrics-devices=all … "
                    "(nsys ≥ 2023.x; older: --gpu-metrics-device=all)")
HINT_MEMORY_USAGE = "capture allocations with `nsys profile --cuda-memory-usage=true`"
HINT_GPU_METRICS_CAPTURE = ("capture GPU metrics with `nsys profile --gpu-metrics-devices=all` "
                            "(`--gpu-metrics-device=all` on nsys before 2023.x)")
"""The GPU-metrics capture hint as an analysis's "unavailable" form states it."""
NSYS_TRACE_CUDA_NVTX = "nsys profile -t cuda,nvtx"
"""The short CUDA + NVTX tracing flags quoted inside longer hints."""
