"""The weak-scaling projection: the ring all-reduce model, checked by hand."""
from __future__ import annotations

import pytest

from nsys_diag.analyses.job.scaling import analyze_scaling, link_bandwidth


def test_ring_allreduce_model_by_hand():
    # 1 GB of gradients over 100 GB/s: ring time 2·(N−1)/N × 10 ms; 4 ms of it hides in backward
    rows, reason = analyze_scaling(step_ms=100.0, exposed_comm_ms=0.0, backward_ms=4.0,
                                   batch_size=8, grad_bytes=1e9, gpu_name=None, link_gbps=100.0)
    assert reason is None and [r["gpus"] for r in rows] == [1, 2, 4, 8]
    by = {r["gpus"]: r for r in rows}
    assert by[1]["step_ms"] == pytest.approx(100.0) and by[1]["efficiency"] == pytest.approx(1.0)
    assert by[2]["allreduce_ms"] == pytest.approx(10.0)
    assert by[2]["step_ms"] == pytest.approx(106.0)  # 10 ms ring − 4 ms hidden
    assert by[8]["step_ms"] == pytest.approx(100.0 + 17.5 - 4.0)
    assert by[8]["samples_per_s"] == pytest.approx(8 * 8 / 0.1135)
    assert by[4]["efficiency"] == pytest.approx(100.0 / 111.0)
    assert any("weak scaling" in a for a in by[2]["assumptions"])


def test_exposed_communication_today_is_replaced_by_the_model():
    rows, _ = analyze_scaling(step_ms=120.0, exposed_comm_ms=20.0, backward_ms=None,
                              batch_size=None, grad_bytes=1e9, gpu_name=None, link_gbps=100.0)
    assert rows[0]["step_ms"] == pytest.approx(100.0) and rows[1]["step_ms"] == pytest.approx(110.0)
    assert rows[1]["samples_per_s"] is None


def test_nothing_is_projected_without_gradient_bytes_or_steps():
    assert analyze_scaling(step_ms=100.0, exposed_comm_ms=0, backward_ms=0, batch_size=1,
                           grad_bytes=None, gpu_name=None)[1].startswith("needs the gradient size")
    assert analyze_scaling(step_ms=None, exposed_comm_ms=0, backward_ms=0, batch_size=1,
                           grad_bytes=1e9, gpu_name=None)[0] == []


def test_link_bandwidth_from_the_spec_table_or_the_option():
    assert link_bandwidth("NVIDIA H100 80GB HBM3", None)[0] == 450.0
    assert link_bandwidth("NVIDIA A100-SXM4-40GB", None)[0] == 300.0
    assert link_bandwidth("NVIDIA A100 80GB PCIe", None)[0] == 32.0
    assert link_bandwidth("NVIDIA H100 80GB HBM3", 25.0) == (25.0, "--link-gbps")


def test_replay_rows_keep_the_keys_and_quote_the_measured_overlap():
    from nsys_diag.analyses.job.scaling import replay_scaling
    from nsys_diag.analyses.replay.scaling import ScaledStep

    proj = (ScaledStep(2, 293.0, 148.0, 150.0), ScaledStep(1, 145.0, 0.0, 0.0),
            ScaledStep(4, 368.0, 223.0, 225.0))
    rows = replay_scaling(proj, ranks=2, batch_size=8, hidden_share=0.0)
    assert [r["gpus"] for r in rows] == [1, 2, 4]
    for r in rows:
        assert {"gpus", "step_ms", "allreduce_ms", "samples_per_s", "efficiency",
                "assumptions"} <= set(r) and r["basis"] == "replay"
    assert rows[2]["efficiency"] == pytest.approx(145.0 / 368.0)
    assert rows[2]["samples_per_s"] == pytest.approx(4 * 8 / 0.368)
    assert rows[1]["allreduce_ms"] == 150.0 and rows[1]["exposed_ms"] == 148.0
    assert any("0% of it hidden" in a and "exposed communication as measured" in a
               for a in rows[0]["assumptions"])
    assert replay_scaling((), ranks=2, batch_size=None, hidden_share=None) == []
