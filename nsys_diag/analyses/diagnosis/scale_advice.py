""""More GPUs?": the scale advice of a verdict, from its code, its cause and the process's
communication and ``scaling[]`` rows (the data-parallel replay's projection, or the
weak-scaling formula's). ``x`` is the ``VerdictInputs``, read by field name, so this module
imports no verdict code. Shares are fractions 0..1, times milliseconds per step.

The claims it makes follow the numbers beside them: "close to linearly while communication
stays hidden" only with a measured hidden share > 0; with none hidden, that each rank added
lengthens the step; without communication kernels, that the capture does not measure it.
"""
from __future__ import annotations

from typing import Any

from nsys_diag.analyses.diagnosis.findings import ms_text as _ms
from nsys_diag.analyses.diagnosis.findings import pct as _pct
from nsys_diag.model.vocabulary import GAP_CAUSE_TABLE

__all__ = ["scale_advice"]


_MECHANISM = {c.name: c.mechanism for c in GAP_CAUSE_TABLE}
"""What the GPU waits for, per gap cause, as the scaling advice words it (``GapCause.mechanism``)."""


def _grid_exceeds_the_gpu(x: Any) -> bool:
    """The top under-filled kernel launches more blocks than the GPU holds at once (SMs × its
    blocks per SM): a GPU with more SMs would run more of them at a time."""
    top: tuple = tuple(getattr(x, "fill_top", None) or ())
    return len(top) >= 6 and top[4] > 0 and top[1] > top[3] * top[4]


def scale_advice(code: str, cause: str, share: float | None, x: Any) -> str:
    s = _pct(share)
    mech = _MECHANISM.get(cause, "the host")
    if code == "insufficient_data":
        return ("Unknown: the capture holds too little steady-state GPU work to judge; re-capture "
                "a steady-state window before deciding on more or bigger GPUs.")
    if code == "input_bound":
        return (f"More or bigger GPUs will not help: each GPU idles {s} of the window waiting for "
                f"{mech}, and N GPUs would wait N times as expensively. Fix that first.")
    if code == "overhead_bound":
        return (f"More GPUs will not help: the time lost to {mech} ({s} of the window) does not "
                "shrink with more GPUs, and a faster GPU only idles longer. Remove it first.")
    if code == "launch_bound":
        fewer = ("fusion, more work per graph node: CUDA graphs are already in use"
                 if "cuda_graphs" in (getattr(x, "techniques", ()) or ()) else
                 "CUDA graphs, fusion")
        return ("A bigger GPU will make this worse (kernels finish sooner, the CPU still launches at "
                f"the same rate; launch gaps are {s} of the window); more GPUs do not help per-GPU "
                f"efficiency. Reduce launches first ({fewer}).")
    if code == "communication_bound":
        return (f"Each GPU added is used less well: communication already costs {s} "
                f"{'of the step' if cause == 'exposed_communication' else 'of the window'} and "
                "grows with the number of ranks. Improve overlap or communicate less first; a "
                "faster interconnect helps." + _projection(x))
    if code == "memory_bound":
        return ("A GPU with more memory bandwidth (compare the datasheets' TB/s) speeds this up; "
                "more GPUs help throughput (data parallel) but each stays memory-bound. Fusion "
                "and lower precision are cheaper first steps.")
    if code == "latency_bound":
        if not _grid_exceeds_the_gpu(x):
            return ("A bigger GPU will not help: its launches already leave most SMs idle (more "
                    "SMs idle more); give each launch more blocks and threads first. More GPUs "
                    "help only by splitting independent work.")
        return ("A bigger GPU runs more of these blocks at once, but each SM stays mostly empty "
                "(its blocks are too small to fill it): enlarge the blocks first, which is "
                "cheaper than more SMs. More GPUs help only by splitting independent work.")
    if code == "no_dominant_cause":
        return ("Unknown: no single cause dominates this run; measure the kernels (Nsight Compute, "
                "GPU metrics) before deciding on more or bigger GPUs.")
    if code == "compute_bound_no_tensor_cores":
        return ("Do not buy GPUs yet: the math runs on CUDA cores; enabling Tensor Cores "
                "(mixed precision/TF32) is typically a several-fold speed-up on the same hardware.")
    return _compute_scale_advice(x)


def _compute_scale_advice(x: Any) -> str:
    """The GPU is the bottleneck: the data-parallel replay's projection when there is one;
    "close to linearly while communication stays hidden" only when the capture measured
    communication hidden behind compute (``comm_hidden_share`` > 0)."""
    exposed = f" (exposed communication now {_pct(x.comm_exposed_share)})" \
        if x.comm_exposed_share is not None else ""
    if any(r[4] == "replay" for r in x.scaling):
        return ("Yes: the GPU is the bottleneck, so a faster GPU or more GPUs (data parallel) "
                f"will help as far as communication allows{exposed}." + _projection(x))
    if x.comm_hidden_share is not None and x.comm_hidden_share > 0:
        return ("Yes: the GPU is the bottleneck, so a faster GPU or more GPUs (data parallel) will "
                "help, close to linearly while communication stays hidden (now "
                f"{_pct(x.comm_hidden_share)} of it hidden behind compute){exposed}."
                + _projection(x))
    if x.comm_hidden_share is not None and (x.comm_exposed_share or 0) > 0:
        return ("Yes: the GPU is the bottleneck, so a faster GPU or more GPUs (data parallel) "
                f"will help, but none of the communication is hidden today{exposed}: each rank "
                "added lengthens every step by its share of the collectives." + _projection(x))
    return ("A faster GPU will help: the GPU is the bottleneck. More GPUs (data parallel) help as "
            "far as their communication can be hidden behind compute, which this capture (no "
            "communication kernels) does not measure." + _projection(x))


def _projection(x: Any) -> str:
    """The ``scaling[]`` projection in words (" The data-parallel replay, exposed communication
    as measured: 2 GPUs 293 ms/step (98% efficiency, 148 ms exposed) · …"); "" without rows."""
    if not x.scaling:
        return ""
    parts = [f"{gpus} GPUs {_ms(step)} ms/step ({_pct(eff)} efficiency"
             + (f", {_ms(exposed)} ms exposed communication)" if exposed is not None else ")")
             for gpus, step, eff, exposed, _ in x.scaling]  # three GPU counts
    head = ("The data-parallel replay (the step's collectives scaled for N ranks, exposed "
            "communication as measured) projects " if x.scaling[0][4] == "replay" else
            "The weak-scaling formula (ring all-reduce of --grad-bytes) projects ")
    return " " + head + "; ".join(parts) + "."
