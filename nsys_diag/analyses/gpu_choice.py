"""Which GPU an analysis describes: ``--gpu NAME`` applied to a bundle, and the ncu CSV's GPU
checked against the nsys trace's.

* ``--gpu`` names the GPU when the input does not (a ``gpu_named`` info item) and overrides it with
  a ``gpu_overridden`` warning when it names another model; the GPUS frame and the ncu launches
  then carry the chosen name and the table's SM count, compute capability and DRAM bandwidth, so
  every analysis (transfers, memory, the roofline's peaks) sees the same GPU.
* Without ``--gpu``, an ncu CSV joined to a trace of another GPU model is a ``ncu_gpu_mismatch``
  warning; the roofline then takes its peaks from the CSV's GPU (``analyses/roofline.py``).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from nsys_diag.analyses.gpu_specs import GpuSpec, lookup_gpu, resolve_gpu_option
from nsys_diag.model import contracts as C
from nsys_diag.model.bundle import LoadWarning, TraceBundle
from nsys_diag.model.text import clean_text

GPU_HINT = "name the GPU with `--gpu NAME` (as nvidia-smi prints it, or A100/H100/H200/B200)"


def _names(s: pd.Series) -> list[str]:
    return sorted({str(x) for x in s.astype(str) if str(x)})


def _same_model(a: str, b: str) -> bool:
    sa, sb = lookup_gpu(a), lookup_gpu(b)
    if sa is not None and sb is not None:
        return sa.key == sb.key
    return a.strip().lower().removeprefix("nvidia ") == b.strip().lower().removeprefix("nvidia ")


def _csv_attr(bundle: TraceBundle, metric: str) -> int | None:
    m = bundle.ncu_metrics
    v = m.loc[m["metric"].astype(str) == metric, "value"].dropna() if len(m) else pd.Series(dtype=float)
    return int(round(float(v.mode().iloc[0]))) if len(v) else None


def _attr_mismatch(bundle: TraceBundle) -> str | None:
    """'compute capability 8.0 / 108 SMs' when the CSV's device attributes contradict the trace's."""
    cc = (_csv_attr(bundle, "device__attribute_compute_capability_major"),
          _csv_attr(bundle, "device__attribute_compute_capability_minor"))
    sms = _csv_attr(bundle, "device__attribute_multiprocessor_count")
    g = bundle.gpus.iloc[0]
    bad_cc = cc[0] is not None and int(g["cc_major"]) >= 0 and (
        cc[0] != int(g["cc_major"]) or (cc[1] is not None and cc[1] != int(g["cc_minor"])))
    bad_sm = sms is not None and int(g["sm_count"]) > 0 and sms != int(g["sm_count"])
    if not (bad_cc or bad_sm):
        return None
    parts = [f"compute capability {cc[0]}.{cc[1] if cc[1] is not None else '?'}"] if cc[0] is not None else []
    parts += [f"{sms} SMs"] if sms is not None else []
    return " / ".join(parts)


def gpu_mismatch(bundle: TraceBundle) -> LoadWarning | None:
    """A warning when the ncu CSV names (or describes) another GPU model than the nsys trace, or
    names none so that the trace's GPU is assumed for the peaks; None otherwise."""
    if not bundle.has_ncu or bundle.meta.format == "ncu-csv" or not len(bundle.gpus):
        return None
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
    if not csv:
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


def choose_gpu(bundle: TraceBundle, gpu: str | None) -> TraceBundle:
    """The bundle the analyses see: ``--gpu`` applied, else a CSV/trace GPU mismatch flagged."""
    if gpu:
        return apply_gpu_option(bundle, gpu)
    w = gpu_mismatch(bundle)
    return replace(bundle, warnings=[*bundle.warnings, w]) if w else bundle
