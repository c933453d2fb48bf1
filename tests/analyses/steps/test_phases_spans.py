"""Phases streamed: chunk GPU sums merged equal ``analyze_phases`` (and the outliers it
explains, and the process's data-quality items) on every sample trace and generated cases."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nsys_diag import synth
from nsys_diag.analyses.base import is_available
from nsys_diag.analyses.steps.phases_spans import explain_outliers, merge_phases, partial_phases
from nsys_diag.analyses.diagnosis.data_quality import merge_quality, partial_quality
from nsys_diag.analyses.diagnosis.data_quality import process_quality
from tests.analyses.engine.chunking import split_process
from tests.analyses.engine.fused_process import split_fused
from tests.analyses.engine.merged_equal import assert_same

SAMPLES = Path(__file__).resolve().parents[3] / "sample_traces"
TRACES = sorted(p.stem for p in SAMPLES.glob("*.sqlite"))
GENERATED = ("dataloader_workers", "grad_accumulation", "item_sync_stalls", "cuda_graphs",
             "exposed_allreduce", "host_io_stalls", "no_nvtx", "shuffled_rows")


def _merged(sp):
    parts = [partial_phases(c) for c in sp.chunks]
    return merge_phases(parts, base=sp.chunks[-1].phases)


def _check(sp):
    merged = _merged(sp)
    assert is_available(merged) == is_available(sp.phases)
    if not is_available(sp.phases):
        return
    assert_same(merged.to_json(), sp.phases.to_json())
    assert merged.unattributed_kernels == sp.phases.unattributed_kernels
    assert merged.thread_scope == sp.phases.thread_scope
    np.testing.assert_array_equal(merged.per_step_ns, sp.phases.per_step_ns)
    steps_m, steps_w = explain_outliers(sp.steps, merged), explain_outliers(sp.steps, sp.phases)
    assert steps_m.to_json() == steps_w.to_json()
    q_parts = [partial_quality(c) for c in sp.chunks]
    qm = merge_quality(q_parts, steps=steps_m, phases=merged, window=sp.window)
    qw = process_quality(steps=steps_w, phases=sp.phases, kernels=sp.frames["kernels"],
                         window=sp.window)
    assert [q.to_json() for q in qm] == [q.to_json() for q in qw]


@pytest.mark.parametrize("n", [2, 3, 7])
@pytest.mark.parametrize("name", TRACES)
def test_merged_phases_equal_the_whole_on_sample_traces(name, n):
    sp = split_process(str(SAMPLES / f"{name}.sqlite"), n)
    _check(sp)


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    d = tmp_path_factory.mktemp("phases_merge")
    out = {name: str(synth.write_preset(d / f"{name}.sqlite", name)) for name in GENERATED}
    out["many_steps"] = str(synth.write_preset(d / "many_steps.sqlite", "worked_example",
                                               steps=40))
    return out


@pytest.mark.parametrize("n", [2, 3, 7])
@pytest.mark.parametrize("name", [*GENERATED, "many_steps"])
def test_merged_phases_equal_the_whole_on_generated_cases(generated, name, n):
    _check(split_process(generated[name], n))


def _custom_split(path: str, cuts_at):
    """``split_process`` with chunk edges at ``cuts_at(window)`` (anywhere: idle gaps, outside
    the window, far apart) instead of the safe cuts."""
    from nsys_diag.analyses.engine.context import chunk_inputs
    from nsys_diag.analyses.engine.cuts import chunk_spans

    sp = split_process(path, 1)
    cuts = sorted(set(int(c) for c in cuts_at(sp.window)))
    sp.chunks = [chunk_inputs(i, sp.frames, a, b, window=sp.window, devices=sp.devices,
                              steps=sp.steps) for i, (a, b) in enumerate(chunk_spans(cuts))]
    return sp


@pytest.mark.parametrize("name", ["worked_example", "multi_gpu", "launch_bound", "inference"])
def test_any_edges_merge_exactly(name):
    """Edges anywhere — before the window (a first chunk with no kernel), in idle gaps, after
    the last kernel (a last chunk with nothing) — still merge to the whole: the GPU sums do not
    need the safe-cut rule."""
    def at(w):
        span = w.end_ns - w.start_ns
        return [w.start_ns - 10**9, *(w.start_ns + span * f for f in (0.13, 0.5, 0.51, 0.87)),
                w.end_ns + 10**12]
    sp = _custom_split(str(SAMPLES / f"{name}.sqlite"), at)
    assert len(sp.chunks[0].owned("kernels")) == 0 or len(sp.chunks[-1].owned("kernels")) == 0
    _check(sp)


def test_the_cases_cover_the_edge_crossings():
    """The split cases really hold a phase crossing an edge and kernels launched in one chunk
    and run in the next (else the tests above would prove little)."""
    sp = split_process(str(SAMPLES / "healthy_tc.sqlite"), 7)
    ph = sp.phases
    edges = np.array([c.lo_ns for c in sp.chunks[1:]])
    crossing = ((ph.inst_starts_ns[:, None] < edges) & (ph.inst_ends_ns[:, None] > edges)).any()
    launched_before = sum(int((c.owned("kernels")["launch_start_ns"].to_numpy() < c.lo_ns).sum())
                          for c in sp.chunks[1:])
    assert crossing and launched_before > 0


@pytest.mark.parametrize("n", [2, 3, 7])
def test_a_multi_gpu_process_merges_exactly(monkeypatch, n):
    sp = split_fused(monkeypatch, n)
    assert len(sp.devices) == 2 and len(sp.chunks) >= 2
    _check(sp)
