"""Shared cases for the merge tests: every sample trace and generated edge cases, each split into
2, 3 and 7 chunks, and the in-memory results the suite computes for the same process."""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from nsys_diag.analyses.base import is_available
from nsys_diag.analyses.timeline.busy import device_busy
from nsys_diag.analyses.communication import analyze_communication
from nsys_diag.analyses.gpu_metrics import analyze_gpu_metrics
from nsys_diag.analyses.suite import _kernel_table, _process_metrics
from nsys_diag.analyses.kernels.tensor_cores import analyze_tensor_cores
from nsys_diag.analyses.transfers import analyze_transfers
from nsys_diag.model.thresholds import Thresholds
from nsys_diag.synth.cases import _tc_levels
from nsys_diag.synth.presets import preset
from nsys_diag.synth.scenarios import MS, US, GpuMetricsSpec
from nsys_diag.synth.writer import write_nsys_sqlite
from tests.analyses.engine.chunking import Split, split_frames, split_process

SAMPLES = Path(__file__).resolve().parents[3] / "sample_traces"
SAMPLE_NAMES = sorted(p.stem for p in SAMPLES.glob("*.sqlite"))
CHUNKS = (2, 3, 7)

_FINE = GpuMetricsSpec(period_ns=100 * US, levels={"*": _tc_levels(55.0)})
GENERATED = {
    # long kernels (≥ 2 sampling periods) resolved one by one; a 45 ms NCCL kernel crossing edges
    "allreduce_fine_metrics": lambda: replace(preset("exposed_allreduce"), gpu_metrics=_FINE),
    "triton_no_tc": lambda: preset("triton_gemm_no_tc"),
    "triton_tc_fine": lambda: replace(preset("triton_gemm_tc"), gpu_metrics=_FINE),
    "pageable_h2d": lambda: preset("pageable_h2d"),
    "dataloader_workers": lambda: preset("dataloader_workers"),
    "shuffled_rows": lambda: preset("shuffled_rows"),
    "many_steps": lambda: preset("worked_example", steps=60),
    "memory_bound_fine": lambda: replace(preset("memory_bound"), gpu_metrics=replace(
        preset("memory_bound").gpu_metrics, period_ns=150 * US)),
}


def cases_dir(factory) -> Path:
    """The one folder (per test session) the generated cases are written to, shared by the
    merge tests (``tmp_path_factory``)."""
    d = factory.getbasetemp() / "chunked_cases"
    d.mkdir(exist_ok=True)
    return d


def generated_path(tmp_dir: Path, name: str) -> Path:
    path = tmp_dir / f"{name}.sqlite"
    if not path.exists():
        write_nsys_sqlite(path, GENERATED[name]())
    return path


def multi_gpu_split(path: Path, n_chunks: int) -> Split:
    """One "process" driving two GPUs: both processes of a two-rank file as one (kernels,
    copies, API calls of both; the first rank's NVTX)."""
    a, b = split_process(str(path), 1, process=0), split_process(str(path), 1, process=1)
    f = {}
    for name, fa in a.frames.items():
        fb = b.frames.get(name)
        if name in ("nvtx", "gpu_metrics") or fb is None:
            f[name] = fa
            continue
        both = pd.concat([fa, fb], ignore_index=True)
        for col in ("name", "short_name", "launch_api", "copy_kind", "src_kind", "dst_kind"):
            if col in both and isinstance(fa[col].dtype, pd.CategoricalDtype):
                both[col] = both[col].astype("category")
        key = "start_ns" if "start_ns" in both else both.columns[0]
        f[name] = both.sort_values(key, kind="stable").reset_index(drop=True)
    sp = split_frames(a.bundle, f, n_chunks)
    assert len(sp.devices) == 2
    return sp


@dataclass
class Whole:
    """The in-memory results of one process, computed as ``suite._process_tasks`` does."""

    k_win: pd.DataFrame
    kernels: object
    tensor_cores: object
    gpu_metrics: object
    transfers: object
    communication: object
    metrics: pd.DataFrame


def whole(sp: Split, th: Thresholds | None = None, *, max_rows: int = 200) -> Whole:
    th = th or Thresholds()
    f, window = sp.frames, sp.window
    wt = (window.start_ns, window.end_ns)
    k_win, kres = _kernel_table(f["kernels"], window, th, max_rows)
    metrics = _process_metrics(sp.bundle, sp.devices)
    busy = device_busy(f["kernels"], f["memcpy"], f["memset"], window, list(sp.devices))
    tc = analyze_tensor_cores(k_win, metrics, th=th, name_table=kres.table, busy=busy,
                              busy_window=wt)
    ph = sp.phases
    gm = analyze_gpu_metrics(metrics, ph.phase_windows() if is_available(ph) else None, th=th,
                             window=wt)
    tr = analyze_transfers(f["memcpy"], f["memset"], sp.bundle.gpus, th=th, window=wt)
    total = sp.steps.total_analysed_ns if is_available(sp.steps) else window.duration_ns
    comm = analyze_communication(k_win, window=wt, step_time_ns_total=total, th=th)
    return Whole(k_win, kres, tc, gm, tr, comm, metrics)


def assert_json_equal(a, b, path: str = "") -> None:
    """Equal JSON values: ints, strings, bools and list order identical; floats to 1e-9."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and list(a) == list(b), f"{path}: keys {list(a)} != {list(b)}"
        for k in a:
            assert_json_equal(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, (list, tuple)):
        assert isinstance(b, (list, tuple)) and len(a) == len(b), f"{path}: {a!r} != {b!r}"
        for i, (x, y) in enumerate(zip(a, b)):
            assert_json_equal(x, y, f"{path}[{i}]")
    elif isinstance(a, float) and not isinstance(b, bool) and isinstance(b, (int, float)):
        assert np.isclose(a, b, rtol=1e-9, atol=0.0) or a == b, f"{path}: {a!r} != {b!r}"
    else:
        assert type(a) is type(b) and a == b, f"{path}: {a!r} != {b!r}"


__all__ = ["CHUNKS", "GENERATED", "MS", "SAMPLES", "SAMPLE_NAMES", "Whole", "assert_json_equal",
           "cases_dir", "generated_path", "multi_gpu_split", "split_process", "whole"]
