"""The one vocabulary of nsys-diag: canonical phases, idle-gap causes, verdict codes, capture hints.

Every module that names a phase, a gap cause, a verdict or tells the user how to capture what is
missing takes the word from here; nothing else defines them. Orders matter: tuples are listed in
the order outputs show them.
"""
from __future__ import annotations

from dataclasses import dataclass

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
@dataclass(frozen=True)
class GapCause:
    """One cause of GPU idle time and every word that follows from it (the one table; the maps
    elsewhere — ``findings.CAUSE_CODE``, ``job_verdict.HOST_CAUSE_VERDICT``, ``verdict``'s
    mechanism phrases, the report's labels, the JSON's key order — are read from it).

    ``label``: the report's name for it; ``report_order``: its place in the report's list (the
    table itself is in precedence order); ``finding_code``: the verdict code its finding argues
    for; ``straggler_verdict``: the verdict of a straggler whose excess host time is this cause
    (``finding_code`` except start-up, which is no reason to call a rank with steps
    ``insufficient_data``); ``mechanism``: what the GPU waits for, as the scaling advice words it;
    ``advice_key``: its entry in ``analyses/diagnosis/advice.ADVICE``."""

    name: str
    label: str
    report_order: int
    finding_code: str
    straggler_verdict: str
    mechanism: str
    advice_key: str


GAP_CAUSE_TABLE = (
    GapCause("startup", "Start-up", 0, "insufficient_data", "overhead_bound",
             "start-up before the first kernel", "startup"),
    GapCause("input", "Waiting on input", 1, "input_bound", "input_bound",
             "its input (data loading)", "input"),
    GapCause("overhead", "Overhead phase", 9, "overhead_bound", "overhead_bound",
             "overhead phases", "overhead"),
    GapCause("communication", "Communication (host)", 4, "communication_bound",
             "communication_bound", "host-side communication", "communication"),
    GapCause("transfer", "Memory transfers", 2, "input_bound", "input_bound",
             "host↔device copies", "transfer"),
    GapCause("unified_memory", "Unified memory", 3, "input_bound", "input_bound",
             "unified-memory migrations", "unified_memory"),
    GapCause("sync", "Host synchronization", 5, "overhead_bound", "overhead_bound",
             "host synchronisation", "sync"),
    GapCause("memory_management", "Memory management", 6, "overhead_bound", "overhead_bound",
             "host memory allocation", "memory_management"),
    GapCause("host_io", "Host I/O", 7, "overhead_bound", "overhead_bound",
             "blocking host I/O", "host_io"),
    GapCause("launch", "Launch overhead", 8, "launch_bound", "launch_bound", "kernel launches",
             "launch"),
    GapCause("other", "Other", 10, "overhead_bound", "overhead_bound",
             "host work no evidence names", "other"),
)
"""Every gap cause, in precedence order (defined in ``analyses/gaps/causes.py``'s module docstring):
a gap's time goes to the first cause whose evidence covers it; ``other`` is the residual."""

GAP_CAUSES = tuple(c.name for c in GAP_CAUSE_TABLE)
"""The gap causes' names in precedence order (the order of ``gaps.by_cause`` in the JSON)."""

GAP_CAUSE_LABELS = tuple((c.name, c.label)
                         for c in sorted(GAP_CAUSE_TABLE, key=lambda c: c.report_order))
"""Gap causes with their report labels, in the order the report lists them."""

GAP_CAUSE_BY_NAME = {c.name: c for c in GAP_CAUSE_TABLE}
"""Each gap cause's row of ``GAP_CAUSE_TABLE`` by its name."""

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
