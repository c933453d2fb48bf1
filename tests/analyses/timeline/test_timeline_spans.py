"""The timeline streamed: chunk bins merged equal ``build_timeline`` (strips and window bins)."""
from __future__ import annotations

from pathlib import Path

import pytest

from nsys_diag import synth
from nsys_diag.analyses.steps.phases_spans import merge_phases, partial_phases
from nsys_diag.analyses.timeline.strips import merge_timeline, partial_timeline
from nsys_diag.analyses.suite import _kernel_table
from nsys_diag.analyses.timeline.strips import build_timeline
from nsys_diag.model.thresholds import Thresholds
from tests.analyses.engine.chunking import split_process
from tests.analyses.engine.fused_process import split_fused
from tests.analyses.engine.merged_equal import assert_same

SAMPLES = Path(__file__).resolve().parents[3] / "sample_traces"
TRACES = sorted(p.stem for p in SAMPLES.glob("*.sqlite"))
GENERATED = ("no_nvtx", "exposed_allreduce", "mpi_cuda", "dataloader_workers", "cuda_graphs")
NO_NVTX = ("exposed_allreduce", "multi_gpu", "mpi_cuda", "triton_gemm_tc")


def _whole(sp):
    k_win, kres = _kernel_table(sp.frames["kernels"], sp.window, Thresholds(), 200)
    table = kres.table
    return build_timeline(sp.steps, sp.phases, sp.busy, sp.window, kernels=k_win,
                          name_table=table), table


def _check(sp, *, with_table: bool = False):
    whole, table = _whole(sp)
    phases = merge_phases([partial_phases(c) for c in sp.chunks], base=sp.chunks[0].phases)
    parts = [partial_timeline(c, name_table=table if with_table else None) for c in sp.chunks]
    merged = merge_timeline(parts[::-1], steps=sp.steps, phases=phases, window=sp.window)
    if whole is None:
        assert merged is None
        return None
    assert_same(merged.to_json(), whole.to_json())
    return whole


@pytest.mark.parametrize("n", [2, 3, 7])
@pytest.mark.parametrize("name", TRACES)
def test_merged_timeline_equals_the_whole_on_sample_traces(name, n):
    _check(split_process(str(SAMPLES / f"{name}.sqlite"), n))


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    d = tmp_path_factory.mktemp("timeline_merge")
    out = {name: str(synth.write_preset(d / f"{name}.sqlite", name)) for name in GENERATED}
    for name in NO_NVTX:  # no steps: the window strip and the window bins
        out[f"{name}_no_nvtx"] = str(synth.write_preset(d / f"{name}_nn.sqlite", name, nvtx=False))
    return out


@pytest.mark.parametrize("n", [2, 3, 7])
@pytest.mark.parametrize("name", GENERATED)
def test_merged_timeline_equals_the_whole_on_generated_cases(generated, name, n):
    _check(split_process(generated[name], n))


@pytest.mark.parametrize("n", [2, 5, 7])
@pytest.mark.parametrize("name", NO_NVTX)
def test_window_bins_merge_without_steps(generated, name, n):
    """Without steps the window bins (busy, categories, Tensor Cores, exposed communication,
    top families) merge too — with the chunk's own name table and with the kernel table's."""
    sp = split_process(generated[f"{name}_no_nvtx"], n)
    whole = _check(sp)
    _check(sp, with_table=True)
    assert whole is not None and whole.window_bins is not None
    assert whole.window_bins["count"] > 0 and whole.window_bins["category_ns"]
    if name in ("exposed_allreduce", "multi_gpu"):
        assert any(whole.window_bins["exposed_comm_ns"])


@pytest.mark.parametrize("n", [2, 3, 7])
def test_a_multi_gpu_process_timeline_merges(monkeypatch, n):
    _check(split_fused(monkeypatch, n))
