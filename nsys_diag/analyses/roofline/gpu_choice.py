"""Which GPU an analysis describes: ``--gpu NAME`` applied to a bundle, and the ncu CSV's GPU
checked against the nsys trace's.

* ``--gpu`` names the GPU when the input does not (a ``gpu_named`` info item) and overrides it with
  a ``gpu_overridden`` warning when it names another model; the GPUS frame and the ncu launches
  then carry the chosen name and the table's SM count, compute capability and DRAM bandwidth, so
  every analysis (transfers, memory, the roofline's peaks) sees the same GPU.
* Without ``--gpu``, an ncu CSV joined to a trace of another GPU model is a ``ncu_gpu_mismatch``
  warning; the roofline then takes its peaks from the CSV's GPU (``analyses/roofline/analysis.py``).
* ``roofline_gpu`` says which GPU sets the roofline's peaks and where it came from
  (``PEAKS_SOURCES``, the roofline's ``peaks_source``): ``--gpu``; the GPU the CSV names; the
  CSV's own ``device__attribute_*`` values when it names none (SM count, compute capability, SM
  clock, memory clock × bus width), named after the trace's GPU only when those agree with it;
  the trace's GPU when the CSV neither names nor describes one; else none (no roofs).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from nsys_diag.analyses.roofline.gpu_specs import GpuSpec, lookup_gpu, resolve_gpu_option
from nsys_diag.model import contracts as C
from nsys_diag.model.bundle import LoadWarning, TraceBundle
from nsys_diag.model.text import clean_text

GPU_HINT = "name the GPU with `--gpu NAME` (as nvidia-smi prints it, or A100/H100/H200/B200)"

PEAKS_SOURCES = {
    "ncu_peak_metrics": "the CSV's .peak_sustained metrics × measured clocks",
    "gpu_option": "the GPU named by --gpu",
    "csv_gpu": "the GPU the ncu CSV names",
    "csv_device_attributes": "the ncu CSV's device attributes (it names no GPU)",
    "trace_gpu": "the nsys trace's GPU (the CSV neither names nor describes one)",
    "none": "no peaks (GPU unknown)",
}
"""``roofline.peaks_source`` values and how the reports word them."""
BANDWIDTH_TOLERANCE = 0.15
"""The CSV's DRAM bandwidth (memory clock × bus width) and the trace's differ beyond this
fraction → another GPU variant (A100 40GB 1.56 TB/s vs 80GB 2.04 TB/s)."""


def _names(s: pd.Series) -> list[str]:
    return sorted({str(x) for x in s.astype(str) if str(x)})


def _same_model(a: str, b: str) -> bool:
    sa, sb = lookup_gpu(a), lookup_gpu(b)
    if sa is not None and sb is not None:
        return sa.key == sb.key
    return a.strip().lower().removeprefix("nvidia ") == b.strip().lower().removeprefix("nvidia ")


def informative(gpus: pd.DataFrame) -> bool:
    """Whether a GPUS frame names or describes any GPU (not just the device ids of a trace
    without a GPU table)."""
    return bool(len(gpus)) and bool(((gpus["name"].astype(str) != "") | (gpus["sm_count"] > 0)
                                     | (gpus["cc_major"] >= 0)).any())


def _described(gpus: pd.DataFrame) -> pd.DataFrame:
    """The rows that carry device attributes (SM count or compute capability)."""
    return gpus[(gpus["sm_count"] > 0) | (gpus["cc_major"] >= 0)] if len(gpus) else gpus


def describe_attrs(row) -> str:
    """'CC 8.0, 108 SMs, SM clock 1.41 GHz, DRAM 2.04 TB/s' of a GPUS row (what it has)."""
    parts = []
    if int(row["cc_major"]) >= 0:
        parts.append(f"CC {int(row['cc_major'])}.{max(int(row['cc_minor']), 0)}")
    if int(row["sm_count"]) > 0:
        parts.append(f"{int(row['sm_count'])} SMs")
    if int(row["clock_hz"]) > 0:
        parts.append(f"SM clock {int(row['clock_hz']) / 1e9:.2f} GHz")
    bw = float(row["memory_bandwidth_bytes_per_s"])
    if np.isfinite(bw) and bw > 0:
        parts.append(f"DRAM {bw / 1e12:.2f} TB/s")
    return ", ".join(parts)


def _attr_mismatch(bundle: TraceBundle) -> str | None:
    """'CC 8.0, 108 SMs, …' when the CSV's device attributes contradict the trace's GPU
    (compute capability, SM count, or DRAM bandwidth beyond ``BANDWIDTH_TOLERANCE``)."""
    own = _described(bundle.ncu_gpus)
    if not len(own) or not len(bundle.gpus):
        return None
    a, g = own.iloc[0], bundle.gpus.iloc[0]
    bad_cc = int(a["cc_major"]) >= 0 and int(g["cc_major"]) >= 0 and (
        int(a["cc_major"]) != int(g["cc_major"])
        or (int(a["cc_minor"]) >= 0 and int(g["cc_minor"]) >= 0
            and int(a["cc_minor"]) != int(g["cc_minor"])))
    bad_sm = int(a["sm_count"]) > 0 and int(g["sm_count"]) > 0 and int(a["sm_count"]) != int(g["sm_count"])
    bw_a, bw_g = float(a["memory_bandwidth_bytes_per_s"]), float(g["memory_bandwidth_bytes_per_s"])
    bad_bw = (np.isfinite(bw_a) and np.isfinite(bw_g) and bw_a > 0 and bw_g > 0
              and abs(bw_a - bw_g) > BANDWIDTH_TOLERANCE * bw_g)
    return describe_attrs(a) if bad_cc or bad_sm or bad_bw else None


def gpu_mismatch(bundle: TraceBundle) -> LoadWarning | None:
    """A warning when the ncu CSV names (or describes) another GPU model than the nsys trace, or
    names none so that the trace's GPU is assumed for the peaks; None otherwise."""
    if not bundle.has_ncu or bundle.meta.format == "ncu-csv" or not informative(bundle.gpus):
        return None  # no trace GPU to compare with (the roofline says where its peaks came from)
    csv = _names(bundle.ncu_launches["gpu_name"]) if "gpu_name" in bundle.ncu_launches else []
    trace = _names(bundle.gpus["name"])
    trace_txt = clean_text(", ".join(trace) or "an unnamed GPU", 120)
    n = int(len(bundle.ncu_launches))
    other = (clean_text(", ".join(csv), 120) if csv and trace
             and not any(_same_model(c, t) for c in csv for t in trace) else None)
    if other is None and not csv:
        other = _attr_mismatch(bundle)
    if other:
        return LoadWarning(
            "ncu_gpu_mismatch", f"the ncu CSV was captured on another GPU ({other}) than the trace "
            f"({trace_txt}): the roofline's peaks are the CSV's GPU, and its kernels are weighted by "
            "time measured on another GPU", n,
            "profile both on the same GPU model, or treat the joined shares as a rough guide")
    if not csv and not len(_described(bundle.ncu_gpus)):
        return LoadWarning(
            "ncu_gpu_assumed", f"the ncu CSV does not name its GPU: the trace's ({trace_txt}) is "
            "assumed for the roofline's peaks", n,
            "if the CSV came from another GPU, " + GPU_HINT + "; capture with "
            "`--metrics device__attribute_display_name` to record it")
    return None


def _device_ids(bundle: TraceBundle) -> list[int]:
    ids: set[int] = set()
    for frame in (bundle.kernels, bundle.ncu_launches, bundle.gpus):
        if "device_id" in frame and len(frame):
            ids |= {int(x) for x in np.unique(frame["device_id"].to_numpy(dtype=np.int64)) if x >= 0}
    return sorted(ids) or [0]


def _gpus_frame(bundle: TraceBundle, spec: GpuSpec, name: str) -> pd.DataFrame:
    """One GPUS row per device seen, described by the table's entry for ``spec``."""
    old = bundle.gpus.set_index("device_id") if len(bundle.gpus) else None
    rows = []
    for dev in _device_ids(bundle):
        row = old.loc[dev] if old is not None and dev in old.index else None
        keep = row is not None and _same_model(str(row["name"]), name)
        base: pd.Series = row if keep and row is not None else pd.Series(dtype=object)
        rows.append({
            "device_id": dev, "name": name,
            "chip_name": str(base["chip_name"]) if keep else "",
            "sm_count": spec.sm_count, "clock_hz": int(base["clock_hz"]) if keep else C.MISSING,
            # NaN unless the capture's own row is kept: the table's bandwidth is then named
            "memory_bandwidth_bytes_per_s": (float(base["memory_bandwidth_bytes_per_s"]) if keep
                                             else np.nan),
            "total_memory_bytes": int(base["total_memory_bytes"]) if keep else C.MISSING,
            "cc_major": spec.cc[0], "cc_minor": spec.cc[1],
            "bus_location": str(base["bus_location"]) if keep else "",
        })
    return C.GPUS.validate(pd.DataFrame(rows))


def apply_gpu_option(bundle: TraceBundle, gpu: str | None) -> TraceBundle:
    """The bundle with ``--gpu`` applied (see the module doc); unchanged when ``gpu`` is None."""
    if not gpu:
        return bundle
    spec, name, note = resolve_gpu_option(gpu)
    seen = sorted(set(_names(bundle.gpus["name"]) if len(bundle.gpus) else [])
                  | set(_names(bundle.ncu_launches["gpu_name"]) if "gpu_name" in bundle.ncu_launches
                        else []))
    other = [n for n in seen if not _same_model(n, name)]
    warnings = [w for w in bundle.warnings if w.code != "ncu_gpu_mismatch"]
    if other:
        warnings.append(LoadWarning(
            "gpu_overridden", f"--gpu {clean_text(gpu, 60)} overrides the GPU the input names "
            f"({clean_text(', '.join(other), 120)}): peaks and bandwidths are {spec.display}'s", 0,
            "drop --gpu to use the GPU the capture recorded"))
    elif (attrs := _contradicted_attrs(bundle, spec)) is not None:
        warnings.append(LoadWarning(
            "gpu_overridden", f"--gpu {clean_text(gpu, 60)} overrides the ncu CSV's device "
            f"attributes ({attrs}): peaks and bandwidths are {spec.display}'s", 0,
            "drop --gpu to take the peaks from the CSV's device attributes"))
    elif not seen:
        warnings.append(LoadWarning("gpu_named", f"GPU named by --gpu: {spec.display} (the input "
                                    "does not name its GPU)", 0, ""))
    if note:
        warnings.append(LoadWarning("gpu_named", note, 0, ""))
    launches = bundle.ncu_launches
    if len(launches):
        launches = launches.assign(gpu_name=name)
    return replace(bundle, gpus=_gpus_frame(bundle, spec, name), ncu_launches=launches,
                   warnings=warnings)


def _contradicted_attrs(bundle: TraceBundle, spec: GpuSpec) -> str | None:
    """The CSV's device attributes when they contradict ``spec`` (SM count or compute
    capability), else None."""
    own = _described(bundle.ncu_gpus)
    if not len(own):
        return None
    a = own.iloc[0]
    bad_sm = int(a["sm_count"]) > 0 and int(a["sm_count"]) != spec.sm_count
    bad_cc = int(a["cc_major"]) >= 0 and (int(a["cc_major"]), max(int(a["cc_minor"]), 0)) != tuple(spec.cc)
    return describe_attrs(a) if bad_sm or bad_cc else None


def peaks_source(provenance_by_peak: dict[str, str], given: str | None, launches: pd.DataFrame,
                 gpu_row) -> str:
    """The roofline's ``peaks_source``: ``none`` without peaks, ``ncu_peak_metrics`` when every
    peak is the CSV's own ``.peak_sustained`` metric, else ``given`` (``roofline_gpu``'s) or, for
    direct callers, what the inputs show (a CSV-named GPU, a named GPUS row, bare attributes)."""
    kinds = set(provenance_by_peak.values())
    if not kinds:
        return "none"
    if all(k.startswith("ncu") for k in kinds):
        return "ncu_peak_metrics"
    if given:
        return given
    if "gpu_name" in launches and (launches["gpu_name"].astype(str) != "").any():
        return "csv_gpu"
    if gpu_row is not None:
        return "trace_gpu" if str(gpu_row["name"]) else "csv_device_attributes"
    return "none"


@dataclass(frozen=True)
class RooflineGpu:
    """The GPU the roofline's peaks come from: a GPUS frame for ``analyze_roofline``, where it
    came from (a ``PEAKS_SOURCES`` key) and the note the roofline states ('' when none)."""

    gpus: pd.DataFrame
    source: str
    note: str = ""


def roofline_gpu(bundle: TraceBundle, gpu: str | None) -> RooflineGpu:
    """Which GPU sets the roofline's peaks (after ``choose_gpu``; see the module doc)."""
    own = bundle.ncu_gpus if informative(bundle.ncu_gpus) else C.GPUS.empty()
    trace = (bundle.gpus if bundle.meta.format != "ncu-csv" and informative(bundle.gpus)
             else C.GPUS.empty())
    if gpu:
        return RooflineGpu(bundle.gpus, "gpu_option")
    if "gpu_name" in bundle.ncu_launches and _names(bundle.ncu_launches["gpu_name"]):
        # the CSV's own device attributes, else the trace's row (dropped when another model)
        return RooflineGpu(own if len(_described(own)) or not len(trace) else trace, "csv_gpu")
    described = _described(own)
    if len(described):
        attrs = describe_attrs(described.iloc[0])
        trace_names = _names(trace["name"]) if len(trace) else []
        if trace_names and _attr_mismatch(bundle) is None:
            return RooflineGpu(
                described.assign(name=trace_names[0]), "csv_device_attributes",
                f"the ncu CSV names no GPU: peaks from its device attributes ({attrs}), which agree "
                f"with the trace's {clean_text(trace_names[0], 80)} (its built-in rates are used)")
        return RooflineGpu(described, "csv_device_attributes",
                           f"the ncu CSV names no GPU: peaks from its device attributes ({attrs})")
    if len(trace):
        name = clean_text(", ".join(_names(trace["name"])) or "an unnamed GPU", 120)
        return RooflineGpu(trace, "trace_gpu", f"the ncu CSV neither names nor describes its GPU: "
                           f"the trace's GPU ({name}) sets the peaks")
    return RooflineGpu(C.GPUS.empty(), "none")


def choose_gpu(bundle: TraceBundle, gpu: str | None) -> TraceBundle:
    """The bundle the analyses see: ``--gpu`` applied, else a CSV/trace GPU mismatch flagged."""
    if gpu:
        return apply_gpu_option(bundle, gpu)
    w = gpu_mismatch(bundle)
    return replace(bundle, warnings=[*bundle.warnings, w]) if w else bundle
