"""The one vocabulary (``model/vocabulary.py``): the words the analyses and loaders now take from
it read exactly as the copies they replaced (outputs are byte-identical)."""
from __future__ import annotations

from nsys_diag.analyses import gpu_metrics, memory
from nsys_diag.analyses.diagnosis import data_quality
from nsys_diag.analyses.job import batch_summary
from nsys_diag.analyses.steps import phases
from nsys_diag.loaders import nsys_sqlite
from nsys_diag.model import vocabulary as V


def test_phases_causes_and_codes():
    assert V.CANONICAL_PHASES == ("data", "forward", "backward", "optimizer", "overhead",
                                  "communication", "other")
    assert V.ANNOTATED_PHASES == V.CANONICAL_PHASES[:-1]
    assert set(V.PHASE_DISPLAY_ORDER) == set(V.CANONICAL_PHASES)
    assert [c for c, _ in V.GAP_CAUSE_LABELS] != list(V.GAP_CAUSES)  # display vs precedence
    assert {c for c, _ in V.GAP_CAUSE_LABELS} == set(V.GAP_CAUSES)
    assert set(V.VERDICT_TITLES) == set(V.VERDICT_CODES)
    assert phases.CANONICAL_PHASES is V.CANONICAL_PHASES


def test_capture_hints_read_as_before():
    assert data_quality.CAPTURE_BASE == (
        "nsys profile -t cuda,nvtx,osrt --cuda-graph-trace=node -o report python train.py")
    assert nsys_sqlite.CAPTURE_FLAGS == "nsys profile -t cuda,nvtx,osrt"
    assert memory.CAPTURE_HINT == "capture allocations with `nsys profile --cuda-memory-usage=true`"
    assert gpu_metrics.CAPTURE_HINT == (
        "capture GPU metrics with `nsys profile --gpu-metrics-devices=all` "
        "(`--gpu-metrics-device=all` on nsys before 2023.x)")
    assert V.NSYS_TRACE_CUDA_NVTX == "nsys profile -t cuda,nvtx"
    assert V.NSYS_CAPTURE_COMMAND.startswith(V.NSYS_TRACE_FLAGS + " ")


def test_batch_phase_order_is_the_display_order():
    names = ["other", "overhead", "communication", "data", "zeta", "backward"]
    assert sorted(names, key=batch_summary.phase_sort_key) == [
        "data", "backward", "communication", "overhead", "other", "zeta"]
