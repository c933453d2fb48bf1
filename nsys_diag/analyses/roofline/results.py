"""Roofline results: peaks, per-kernel rows and the section's JSON (see ``analyses/roofline/analysis.py``)."""
from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from nsys_diag.analyses.roofline.gpu_choice import PEAKS_SOURCES
from nsys_diag.model.jsonsafe import fnum
from nsys_diag.model.schema_types import Enum, List, Map, Obj, Section
from nsys_diag.model.vocabulary import EXAMPLE_PYTHON_RUN, NCU_CAPTURE_COMMAND


BOUND_CLASSES = ("memory", "compute", "latency", "under_occupied", "balanced", "unknown")
"""Per-launch bound labels; ``time_weighted`` keys are ``<class>_bound`` for the first three."""

TIME_WEIGHT_KEYS = {"memory": "memory_bound", "compute": "compute_bound",
                    "latency": "latency_bound", "under_occupied": "under_occupied",
                    "balanced": "balanced", "unknown": "unknown"}

ROOFLINE_METRICS = (
    "gpu__time_duration.sum",
    "sm__cycles_elapsed.avg", "sm__cycles_elapsed.avg.per_second",
    *(f"sm__sass_thread_inst_executed_op_{op}_pred_on.sum"
      for op in ("dadd", "dmul", "dfma", "fadd", "fmul", "ffma", "hadd", "hmul", "hfma")),
    "dram__bytes.sum", "lts__t_bytes.sum", "l1tex__t_bytes.sum",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "launch__waves_per_multiprocessor",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "sm__inst_executed_pipe_tensor.sum",
    "device__attribute_display_name",
)
"""The exact ``--metrics`` list that gives a full roofline (used in every capture hint)."""

CAPTURE_COMMAND = NCU_CAPTURE_COMMAND


def capture_hint(missing: list[str] | tuple[str, ...] = ()) -> str:
    """The ncu command that captures what the roofline needs."""
    return (f"capture with `{CAPTURE_COMMAND}` (or the exact list: `ncu --csv --page raw "
            f"--print-units base --metrics {','.join(ROOFLINE_METRICS)} "
            f"{EXAMPLE_PYTHON_RUN} > kernels.csv`)")


# ---------------------------------------------------------------------------------- results
@dataclass(frozen=True)
class Peaks:
    """Roofline ceilings. ``flop_per_s`` by precision (see ``gpu_specs.PRECISIONS``)."""

    flop_per_s: dict[str, float | None]
    dram_bytes_per_s: float | None
    l2_bytes_per_s: float | None
    l1_bytes_per_s: float | None
    provenance: str
    provenance_by_peak: dict[str, str]
    sm_clock_hz: float | None

    def ridge_point(self) -> dict[str, float | None]:
        """FLOP/byte where each compute roof meets the DRAM roof."""
        bw = self.dram_bytes_per_s
        return {k: (v / bw if v and bw else None) for k, v in self.flop_per_s.items()}

    def to_json(self) -> dict:
        return {
            "flop_per_s": {k: fnum(v) for k, v in self.flop_per_s.items()},
            "dram_bytes_per_s": fnum(self.dram_bytes_per_s),
            "l2_bytes_per_s": fnum(self.l2_bytes_per_s),
            "l1_bytes_per_s": fnum(self.l1_bytes_per_s),
            "provenance": self.provenance,
            "provenance_by_peak": dict(self.provenance_by_peak),
            "sm_clock_hz": fnum(self.sm_clock_hz),
            "ridge_point": {k: fnum(v) for k, v in self.ridge_point().items()},
        }


@dataclass(frozen=True)
class KernelRoofline:
    """One kernel name (all its profiled launches)."""

    name: str
    normalized_name: str
    launches: int
    time_ns: int
    flops: float | None  # CUDA-core FLOPs + tensor ops
    flops_by_precision: dict[str, float | None]
    dram_bytes: float | None
    l2_bytes: float | None
    l1_bytes: float | None
    ai_dram: float | None
    ai_l2: float | None
    ai_l1: float | None
    achieved_flop_per_s: float | None
    achieved_dram_bytes_per_s: float | None
    achieved_l2_bytes_per_s: float | None
    achieved_l1_bytes_per_s: float | None
    dominant_precision: str | None
    pct_of_peak_flop: float | None
    pct_of_peak_dram: float | None
    bound: str
    bound_shares: dict[str, float]
    bound_source: str | None
    tensor_core_share: float | None
    tensor_pipe_pct: float | None
    tensor_mma_inst: float | None
    achieved_occupancy: float | None
    sol_compute_pct: float | None
    sol_memory_pct: float | None
    waves_per_sm: float | None

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "normalized_name": self.normalized_name,
            "launches": int(self.launches),
            "time_ns": int(self.time_ns),
            "flops": fnum(self.flops),
            "flops_by_precision": {k: fnum(v) for k, v in self.flops_by_precision.items()},
            "dram_bytes": fnum(self.dram_bytes),
            "l2_bytes": fnum(self.l2_bytes),
            "l1_bytes": fnum(self.l1_bytes),
            "ai_dram": fnum(self.ai_dram),
            "ai_l2": fnum(self.ai_l2),
            "ai_l1": fnum(self.ai_l1),
            "achieved_flop_per_s": fnum(self.achieved_flop_per_s),
            "achieved_dram_bytes_per_s": fnum(self.achieved_dram_bytes_per_s),
            "achieved_l2_bytes_per_s": fnum(self.achieved_l2_bytes_per_s),
            "achieved_l1_bytes_per_s": fnum(self.achieved_l1_bytes_per_s),
            "dominant_precision": self.dominant_precision,
            "pct_of_peak_flop": fnum(self.pct_of_peak_flop),
            "pct_of_peak_dram": fnum(self.pct_of_peak_dram),
            "bound": self.bound,
            "bound_shares": {k: fnum(v) for k, v in self.bound_shares.items()},
            "bound_source": self.bound_source,
            "tensor_core_share": fnum(self.tensor_core_share),
            "tensor_pipe_pct": fnum(self.tensor_pipe_pct),
            "tensor_mma_inst": fnum(self.tensor_mma_inst),
            "achieved_occupancy": fnum(self.achieved_occupancy),
            "sol_compute_pct": fnum(self.sol_compute_pct),
            "sol_memory_pct": fnum(self.sol_memory_pct),
            "waves_per_sm": fnum(self.waves_per_sm),
        }


@dataclass(frozen=True)
class RooflineResult:
    """Roofline of an ncu capture (ncu durations as the time weights)."""

    gpu: str | None
    peaks: Peaks
    kernels: tuple[KernelRoofline, ...]
    time_weighted: dict[str, float]
    total_time_ns: int
    launch_count: int
    duration_source: str
    bound_source: str | None
    tensor_evidence: str | None
    tensor_core_share_by_time: float | None
    roofline_complete: bool
    missing_metrics: tuple[str, ...]
    hint: str
    notes: tuple[str, ...]
    above_peak: tuple[str, ...]
    confidence: str
    launch_table: pd.DataFrame = field(repr=False, compare=False, default_factory=pd.DataFrame)
    peaks_source: str = "none"
    """Where the peaks came from: a ``gpu_choice.PEAKS_SOURCES`` key."""

    available = True

    def to_json(self) -> dict:
        kernels = [k.to_json() for k in self.kernels]
        return {  # canonical names only: the report's aliases come from report/contract.py
            "available": True,
            "source": "ncu",
            "memory_level": "DRAM",
            "clock_source": self.peaks.provenance,
            "roofs": _roofs(self.peaks, self.kernels),
            "kernels_total": len(self.kernels),
            "gpu": self.gpu,
            "peaks": self.peaks.to_json(),
            "peaks_source": self.peaks_source,
            "matches": [],  # ncu alone: no timeline pairing (the join fills it)
            "kernels": kernels,
            "time_weighted": {k: fnum(v) for k, v in self.time_weighted.items()},
            "time_basis": "ncu",
            "total_time_ns": int(self.total_time_ns),
            "launch_count": int(self.launch_count),
            "kernel_count": len(self.kernels),
            "duration_source": self.duration_source,
            "bound_source": self.bound_source,
            "tensor_evidence": self.tensor_evidence,
            "tensor_core_share_by_time": fnum(self.tensor_core_share_by_time),
            "roofline_complete": self.roofline_complete,
            "missing_metrics": list(self.missing_metrics),
            "hint": self.hint,
            "notes": list(self.notes),
            "above_peak": list(self.above_peak),
            "confidence": self.confidence,
        }


_ROOF_LABELS = {"fp64": "FP64", "fp32": "FP32", "fp16": "FP16", "tensor_fp16": "Tensor FP16/BF16",
                "tensor_tf32": "Tensor TF32", "tensor_fp8": "Tensor FP8", "tensor_int8": "Tensor INT8",
                "tensor_fp64": "Tensor FP64"}


def _roofs(peaks: Peaks, kernels) -> list[dict]:
    """Roofs to draw: FP32 always, other precisions only when some kernel does that work."""
    used = {"fp32"}
    for k in kernels:
        used |= {p for p, v in k.flops_by_precision.items() if v}
        if k.tensor_core_share:
            used.add("tensor_fp16")
    roofs = [{"name": _ROOF_LABELS.get(p, p), "kind": "compute", "value": fnum(v), "precision": p}
             for p, v in peaks.flop_per_s.items() if p in used and fnum(v)]
    for name, v in (("DRAM", peaks.dram_bytes_per_s), ("L2", peaks.l2_bytes_per_s),
                    ("L1", peaks.l1_bytes_per_s)):
        if fnum(v):
            roofs.append({"name": name, "kind": "memory", "value": fnum(v)})
    return roofs


_BY_PRECISION = Map("num?")
_ROOFLINE_KERNEL = Obj({
    "name": "str", "short_name": "str", "launches": "int", "time_share": "share?",
    "arithmetic_intensity": "num?", "achieved_flops_per_s": "num?", "sm_pct": "num?",
    "mem_pct": "num?", "bound": "str", "precision": "str?"},
    carried={"normalized_name": "str", "time_ns": "int", "flops": "num?",
             "flops_by_precision": _BY_PRECISION, "dram_bytes": "num?", "l2_bytes": "num?",
             "l1_bytes": "num?", "ai_dram": "num?", "ai_l2": "num?", "ai_l1": "num?",
             "achieved_flop_per_s": "num?", "achieved_dram_bytes_per_s": "num?",
             "achieved_l2_bytes_per_s": "num?", "achieved_l1_bytes_per_s": "num?",
             "dominant_precision": "str?", "pct_of_peak_flop": "num?", "pct_of_peak_dram": "num?",
             "bound_shares": Map("num?"), "bound_source": "str?", "tensor_core_share": "share?",
             "tensor_pipe_pct": "num?", "tensor_mma_inst": "num?", "achieved_occupancy": "num?",
             "sol_compute_pct": "num?", "sol_memory_pct": "num?", "waves_per_sm": "num?",
             "timeline_time_ns": "int?", "timeline_share": "share?"},
    optional=("timeline_time_ns", "timeline_share"))
_BOUND_SHARES = Map("num?", doc="share of time per bound class")
ROOFLINE_SPEC = Section(Obj({
    "source": "str", "device": "str?", "clock_source": "str", "memory_level": "str",
    "roofs": List(Obj({"name": "str", "kind": "str", "value": "num"},
                      carried={"precision": "str"}, optional=("precision",))),
    "kernels": List(_ROOFLINE_KERNEL), "kernels_total": "int", "notes": List("str"),
    "peaks_source": Enum(*PEAKS_SOURCES),
    "matches": List(Obj({"timeline_name": "str", "ncu_names": List("str"),
                         "level": Enum("signature", "base", "family"), "duration_ratio": "num?",
                         "launches": "int", "ncu_launches": "int",
                         "launch_config": Enum("same", "different", "unknown"),
                         "timeline_launch_config": "str?"}))},
    carried={
        "gpu": "str?",
        "peaks": Obj({"flop_per_s": _BY_PRECISION, "dram_bytes_per_s": "num?",
                      "l2_bytes_per_s": "num?", "l1_bytes_per_s": "num?", "provenance": "str",
                      "provenance_by_peak": Map("str"), "sm_clock_hz": "num?",
                      "ridge_point": _BY_PRECISION}),
        "time_weighted": _BOUND_SHARES, "time_basis": "str", "total_time_ns": "int",
        "launch_count": "int", "kernel_count": "int", "duration_source": "str",
        "bound_source": "str?", "tensor_evidence": "str?", "tensor_core_share_by_time": "share?",
        "roofline_complete": "bool", "missing_metrics": List("str"), "above_peak": List("str"),
        "confidence": "str",
        # joined to a timeline (analyses/roofline/ncu_join.py) only
        "time_weighted_ncu": _BOUND_SHARES, "time_weighted_matched": _BOUND_SHARES,
        "timeline_kernel_time_ns": "int", "matched_time_ns": "int", "matched_share": "share?",
        "match_levels": Map("num?"),
        "unmatched": List(Obj({"name": "str", "time_ns": "int", "share": "share?"})),
        "unmatched_ncu": List("str"), "tensor_core_share_of_matched": "share?",
        "tensor_core_evidence": "str?", "refused_pairings": "int"},
    optional=("time_weighted_ncu", "time_weighted_matched", "timeline_kernel_time_ns",
              "matched_time_ns", "matched_share", "match_levels", "unmatched", "unmatched_ncu",
              "tensor_core_share_of_matched", "tensor_core_evidence", "refused_pairings")),
    "No Nsight Compute data was given.",
    f"{NCU_CAPTURE_COMMAND}, then: nsys-diag analyze TRACE --ncu kernels.csv", null=True,
    per_process=True)
"""The ``roofline`` section of the analysis JSON (model/schema_types.py; declared with the
roofline in analyses/process.py)."""
