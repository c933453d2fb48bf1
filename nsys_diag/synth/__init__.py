"""nsys-diag's own trace generator: schema-faithful nsys SQLite exports with known answers.

Entry points::

    python -m nsys_diag.synth --write-samples sample_traces        # what `make samples` runs
    python -m nsys_diag.synth PRESET OUT.sqlite [--schema V] [--steps N] [--scale K] [--seed S]
                                               [--env NAME=VALUE ...] [--expected]
    python -m nsys_diag.synth --list
    python -m nsys_diag.synth.ncu OUTDIR                           # demo ncu CSVs

Python API (stable; other modules and tests build on it)::

    from nsys_diag import synth
    sc = synth.preset("worked_example", steps=20)           # a Scenario (dataclass)
    synth.write_nsys_sqlite(path, sc, schema="2024.6")      # -> Path
    synth.write_preset(path, "launch_bound", schema="2026.2", env={"HF_TOKEN": "hf_FAKE"})
    synth.expected("worked_example")                        # the known answers (dict)
    synth.PRESETS, synth.SCHEMAS                             # names

Modules, lowest first (each imports only those above it, numpy and the standard library):

* :mod:`~nsys_diag.synth.schema` — the per-version table layouts (schema variants), GPU models;
* :mod:`~nsys_diag.synth.kernels` — the kernel catalog;
* :mod:`~nsys_diag.synth.scenarios` — the scenario model (dataclasses, units, :func:`scaled`);
* :mod:`~nsys_diag.synth.presets` — the presets with known answers;
* :mod:`~nsys_diag.synth.replay_cases` — scenarios for the causal replay (not presets);
* :mod:`~nsys_diag.synth.events`, :mod:`~nsys_diag.synth.process`,
  :mod:`~nsys_diag.synth.timeline` — the timing model (integer ns, vectorised);
* :mod:`~nsys_diag.synth.writer` — a timeline onto the tables of one schema variant;
* :mod:`~nsys_diag.synth.answers` — :func:`expected`, the known answers;
* :mod:`~nsys_diag.synth.samples` — the committed ``sample_traces/`` and their README block;
* :mod:`~nsys_diag.synth.cli` — the command line; :mod:`~nsys_diag.synth.ncu` — Nsight Compute
  CSVs (independent of the rest).
* :mod:`~nsys_diag.synth.programs` (cases in :mod:`~nsys_diag.synth.program_cases`, known facts
  in :mod:`~nsys_diag.synth.program_facts`) — captures of
  programs that are not PyTorch (OpenMP offload, OpenACC, CUDA-C, CUTLASS, stdpar, MPI, capture
  failures, ncu raw pages): ``programs.write_case(name, path, schema=...)``, ``programs.facts(name)``.
"""
from __future__ import annotations

from nsys_diag.synth.answers import expected
from nsys_diag.synth.cli import main
from nsys_diag.synth.events import SYNC_KINDS
from nsys_diag.synth.kernels import KERNEL_CATALOG, KernelInfo, kernel_info
from nsys_diag.synth.presets import PRESETS, preset
from nsys_diag.synth.samples import README_BEGIN, README_END, SAMPLES, samples_readme_block, write_samples
from nsys_diag.synth.scenarios import (
    COMPUTE_STREAM, MS, NCCL_STREAM, US, GiB, GpuMemorySpec, GpuMetricsSpec, KernelSpec, MemcpySpec,
    MemsetSpec, MiB, PeriodicSpec, PhaseSpec, RangeSpec, Scenario, SyncSpec, scaled)
from nsys_diag.synth.schema import (
    ALL_SCHEMAS, ENUM_ROWS, GPU_CATALOG, GPU_METRIC_NAMES, KERNEL_LAYOUTS, SCHEMAS, VM_GLOBAL_ID,
    SchemaVariant, gpu_model, variant)
from nsys_diag.synth.timeline import Timeline, build_timeline, covered_before, union_intervals
from nsys_diag.synth.writer import write_nsys_sqlite, write_preset

__all__ = [
    "Scenario", "PhaseSpec", "KernelSpec", "MemcpySpec", "MemsetSpec", "SyncSpec", "RangeSpec",
    "PeriodicSpec", "GpuMetricsSpec", "GpuMemorySpec", "KernelInfo", "KERNEL_CATALOG",
    "kernel_info", "PRESETS", "SCHEMAS", "ALL_SCHEMAS", "KERNEL_LAYOUTS", "GPU_CATALOG",
    "GPU_METRIC_NAMES", "SAMPLES", "preset", "scaled", "write_nsys_sqlite", "write_preset",
    "write_samples", "expected", "build_timeline", "main", "MS", "US", "MiB", "GiB",
    "COMPUTE_STREAM", "NCCL_STREAM",
    # also importable (as from the single-module generator): layouts, timeline, README markers
    "ENUM_ROWS", "VM_GLOBAL_ID", "SchemaVariant", "gpu_model", "variant", "SYNC_KINDS", "Timeline",
    "covered_before", "union_intervals", "README_BEGIN", "README_END", "samples_readme_block",
]
