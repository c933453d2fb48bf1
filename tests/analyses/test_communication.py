"""Communication kernels: hidden vs exposed per device."""
from __future__ import annotations

import json

import numpy as np
import pytest

from kernel_frames import MS, US, kernels
from nsys_diag.analyses.timeline import intervals as iv
from nsys_diag.analyses.base import Unavailable
from nsys_diag.analyses.communication import analyze_communication
from nsys_diag.model.contracts import KERNELS
from nsys_diag.model.thresholds import Thresholds

TH = Thresholds()
NCCL = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
GEMM = "nvjet_tst_128x128_64x4_1x2_h_bz_TNT"


def _frame():
    return kernels([
        dict(name=GEMM, start_ns=0, end_ns=10 * MS, device_id=0),
        dict(name=NCCL, start_ns=8 * MS, end_ns=14 * MS, device_id=0),     # 2 ms hidden, 4 exposed
        dict(name=NCCL, start_ns=0, end_ns=2 * MS, device_id=1),
        dict(name=NCCL, start_ns=1 * MS, end_ns=3 * MS, device_id=1, stream_id=9),  # union 3 ms
        dict(name=GEMM, start_ns=2500 * US, end_ns=5 * MS, device_id=1),    # hides 0.5 ms
        dict(name=GEMM, start_ns=0, end_ns=20 * MS, device_id=2),           # no comm on device 2
    ])


def test_known_answers():
    r = analyze_communication(_frame(), window=(0, 20 * MS), step_time_ns_total=10 * MS, th=TH)
    assert not isinstance(r, Unavailable)
    d = {x.device_id: x for x in r.per_device}
    assert set(d) == {0, 1}
    assert (d[0].comm_ns, d[0].hidden_ns, d[0].exposed_ns) == (6 * MS, 2 * MS, 4 * MS)
    assert (d[1].comm_ns, d[1].hidden_ns, d[1].exposed_ns) == (3 * MS, 500 * US, 2500 * US)
    assert d[1].comm_kernels == 2
    assert d[0].exposed_share == pytest.approx(4 / 20)
    assert r.exposed_share == pytest.approx(6.5 / 40)  # mean over the two devices
    assert r.exposed_share_of_step == pytest.approx(6.5 / 20)
    assert r.overlap_share == pytest.approx(2.5 / 9)
    j = r.to_json()
    json.dumps(j, allow_nan=False)
    assert j["per_device"][0]["exposed_ms"] == pytest.approx(4.0)
    assert j["exposed_share_of_step"] == pytest.approx(6.5 / 20)
    assert j["kernel_names"] == [NCCL]


def test_window_clips_intervals():
    r = analyze_communication(_frame(), window=(9 * MS, 12 * MS), th=TH)
    d = {x.device_id: x for x in r.per_device}
    assert set(d) == {0}
    assert (d[0].comm_ns, d[0].hidden_ns, d[0].exposed_ns) == (3 * MS, 1 * MS, 2 * MS)
    assert r.exposed_share == pytest.approx(2 / 3)
    assert r.exposed_share_of_step is None


def test_default_window_is_kernel_span():
    r = analyze_communication(_frame(), window=None, th=TH)
    assert r.window == (0, 20 * MS)


def test_unavailable_cases():
    no_comm = kernels([dict(name=GEMM, start_ns=0, end_ns=10)])
    for frame, window in ((KERNELS.empty(), None), (no_comm, None), (_frame(), (30 * MS, 40 * MS))):
        r = analyze_communication(frame, window=window, th=TH)
        assert isinstance(r, Unavailable)
        assert r.to_json()["available"] is False and r.reason


def test_communication_never_hides_communication():
    k = kernels([dict(name=NCCL, start_ns=0, end_ns=10, device_id=0),
                 dict(name="ncclDevKernel_SendRecv(x)", start_ns=0, end_ns=10, device_id=0,
                      stream_id=8)])
    r = analyze_communication(k, window=(0, 10), th=TH)
    assert r.per_device[0].exposed_ns == 10 and r.per_device[0].hidden_ns == 0


def test_real_fastvideo(shared):
    from nsys_diag.loaders import load_trace

    b = load_trace(shared("nsys/fastvideo_train_2xh100_2026.2.sqlite"))
    k = b.kernels
    r = analyze_communication(k, window=None, th=TH)
    assert not isinstance(r, Unavailable)
    json.dumps(r.to_json(), allow_nan=False)
    assert [x.device_id for x in r.per_device] == [0, 1]
    nccl = k["short_name"].astype(str).str.startswith("nccl").to_numpy()
    for x in r.per_device:
        on = (k["device_id"].to_numpy() == x.device_id) & nccl
        assert x.comm_ns == iv.total_length(k["start_ns"].to_numpy()[on], k["end_ns"].to_numpy()[on])
        assert x.hidden_ns + x.exposed_ns == x.comm_ns
        assert x.comm_kernels == int(on.sum())
    assert 0.0 <= r.exposed_share <= 1.0
    assert np.isfinite(r.overlap_share)
