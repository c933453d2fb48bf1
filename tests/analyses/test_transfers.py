"""Transfers: per-kind bandwidth vs the link, pageable and synchronous copies."""
from __future__ import annotations

import json

import pytest

from kernel_frames import MS, gpus, memcpy, memset
from nsys_diag.analyses.transfers import analyze_transfers, link_for_gpu
from nsys_diag.model.contracts import GPUS, MEMCPY, MEMSET
from nsys_diag.model.thresholds import Thresholds

TH = Thresholds()
GB = 1_000_000_000


def _copies():
    return memcpy([
        # two concurrent 1 GB H2D copies on two streams, 40 ms each, overlapping by 20 ms
        dict(start_ns=0, end_ns=40 * MS, bytes=GB, stream_id=7),
        dict(start_ns=20 * MS, end_ns=60 * MS, bytes=GB, stream_id=8),
        # a synchronous pageable D2H (cudaMemcpy) folded from 4 copies
        dict(start_ns=100 * MS, end_ns=110 * MS, bytes=100_000_000, copy_kind="D2H",
             src_kind="device", dst_kind="pageable", launch_api="cudaMemcpy", copy_count=4),
        # an async H2D from pageable memory (becomes synchronous)
        dict(start_ns=120 * MS, end_ns=121 * MS, bytes=1_000_000, src_kind="pageable",
             launch_api="cudaMemcpyAsync"),
        # device-to-device and peer copies
        dict(start_ns=200 * MS, end_ns=201 * MS, bytes=500_000_000, copy_kind="D2D",
             src_kind="device", dst_kind="device"),
        dict(start_ns=300 * MS, end_ns=302 * MS, bytes=400_000_000, copy_kind="P2P",
             src_kind="device", dst_kind="device", launch_api="cudaMemcpyPeerAsync"),
        # unmatched launch (no API row in the export): neither sync nor async
        dict(start_ns=400 * MS, end_ns=401 * MS, bytes=1000, launch_api=""),
    ])


def test_known_answers_a100_sxm():
    g = gpus(["NVIDIA A100-SXM4-40GB"], cc_major=8, bandwidth=1.5552e12)
    ms = memset([dict(start_ns=500 * MS, end_ns=500 * MS + 2000, bytes=4096),
                 dict(start_ns=501 * MS, end_ns=501 * MS + 1000, bytes=8192, launch_api="cudaMemset")])
    r = analyze_transfers(_copies(), ms, g, th=TH)
    assert r.available
    h2d = r.by_kind["H2D"]
    assert (h2d.rows, h2d.count, h2d.bytes) == (4, 4, 2 * GB + 1_000_000 + 1000)
    assert h2d.time_ns == 82 * MS and h2d.busy_ns == 62 * MS
    assert h2d.gb_per_s == pytest.approx(h2d.bytes / (82 * MS))
    assert h2d.gb_per_s_busy == pytest.approx(h2d.bytes / (62 * MS))
    assert h2d.expected_gb_per_s == pytest.approx(25.0) and "Gen4" in h2d.link
    d2h = r.by_kind["D2H"]
    assert d2h.count == 4 and d2h.rows == 1 and d2h.gb_per_s == pytest.approx(10.0)
    assert r.by_kind["D2D"].expected_gb_per_s == pytest.approx(1555.2 / 2)
    assert r.by_kind["D2D"].gb_per_s == pytest.approx(500.0)
    p2p = r.by_kind["P2P"]
    assert p2p.link == "NVLink" and p2p.expected_gb_per_s == pytest.approx(300.0)
    assert p2p.gb_per_s == pytest.approx(200.0)
    assert r.pageable_count == 5 and r.pageable_bytes == 101_000_000
    assert r.pageable_async_count == 1
    assert r.sync_copies == 4  # the folded cudaMemcpy row counts its 4 copies
    assert r.sync_memsets == 1 and r.memset_count == 2 and r.memset_bytes == 12288
    assert r.memset_time_ns == 3000
    j = r.to_json()
    json.dumps(j, allow_nan=False)
    assert set(j["by_kind"]) == {"H2D", "D2H", "D2D", "P2P"}
    assert j["by_kind"]["H2D"]["time_ms"] == pytest.approx(82.0)
    assert any("A100" in a for a in j["assumptions"])


@pytest.mark.parametrize("name,cc,host,peer_link,peer", [
    ("NVIDIA H100 80GB HBM3", 9, 50.0, "NVLink", 450.0),
    ("NVIDIA H100 PCIe", 9, 50.0, "PCIe Gen5 x16", 50.0),
    ("NVIDIA H200", 9, 50.0, "NVLink", 450.0),
    ("NVIDIA H200 NVL", 9, 50.0, "PCIe Gen5 x16", 50.0),
    ("NVIDIA A100 80GB PCIe", 8, 25.0, "PCIe Gen4 x16", 25.0),
    ("Tesla V100-SXM2-32GB", 7, 12.5, "NVLink", 150.0),
    ("Quadro RTX 6000", 7, 12.5, "PCIe Gen3 x16", 12.5),
    ("NVIDIA B200", 10, 50.0, "NVLink", 900.0),
    ("NVIDIA GH200 480GB", 9, 450.0, "NVLink (gen for cc 9)", 450.0),
    ("NVIDIA L4", -1, 25.0, "PCIe Gen4 x16", 25.0),  # no compute capability: name decides
])
def test_link_table(name, cc, host, peer_link, peer):
    spec = link_for_gpu(name, cc)
    assert spec.host_gb_per_s == pytest.approx(host)
    assert spec.peer_link == peer_link and spec.peer_gb_per_s == pytest.approx(peer)
    assert spec.assumption


def test_unknown_gpu_has_no_expectation():
    r = analyze_transfers(_copies(), MEMSET.empty(), GPUS.empty(), th=TH)
    assert r.by_kind["H2D"].expected_gb_per_s is None and r.by_kind["D2D"].expected_gb_per_s is None
    assert any("no GPU table" in a for a in r.assumptions)
    j = r.to_json()
    json.dumps(j, allow_nan=False)
    assert j["by_kind"]["H2D"]["efficiency"] is None
    unknown = link_for_gpu("", -1)
    assert unknown.host_gb_per_s is None


def test_window_and_memset_only():
    r = analyze_transfers(_copies(), MEMSET.empty(), None, th=TH, window=(190 * MS, 250 * MS))
    assert r.by_kind["D2D"].count == 1 and r.by_kind["H2D"].count == 0
    r2 = analyze_transfers(MEMCPY.empty(), memset([dict(start_ns=0, end_ns=10)]), None, th=TH)
    assert r2.available and r2.memset_count == 1 and r2.by_kind["H2D"].count == 0


def test_empty_inputs():
    r = analyze_transfers(MEMCPY.empty(), MEMSET.empty(), GPUS.empty(), th=TH)
    assert not r.available
    j = r.to_json()
    json.dumps(j, allow_nan=False)
    assert j["available"] is False and j["reason"] and j["hint"]


def test_real_fastvideo(shared):
    from nsys_diag.loaders import load_trace

    b = load_trace(shared("nsys/fastvideo_train_2xh100_2026.2.sqlite"))
    r = analyze_transfers(b.memcpy, b.memset, b.gpus, th=TH)
    j = r.to_json()
    json.dumps(j, allow_nan=False)
    kinds = b.memcpy["copy_kind"].astype(str)
    for kind in ("H2D", "D2H", "D2D"):
        rows = b.memcpy[kinds == kind]
        assert r.by_kind[kind].bytes == int(rows["bytes"].sum())
        assert r.by_kind[kind].rows == len(rows)
    pageable = ((b.memcpy["src_kind"].astype(str) == "pageable")
                | (b.memcpy["dst_kind"].astype(str) == "pageable"))
    assert r.pageable_count == int(b.memcpy.loc[pageable, "copy_count"].clip(lower=1).sum())
    assert r.memset_count == len(b.memset)


def test_pageable_time_counts_only_the_part_of_a_copy_inside_the_window():
    """A pageable copy that crosses the window's edge is counted (copies, bytes, its whole
    duration in the per-kind rate) but adds only its part inside to ``pageable_time`` — the
    time the window-share claim divides by the window, as the GPU's copy time is clipped."""
    copies = memcpy([dict(start_ns=0, end_ns=20 * MS, src_kind="pageable", bytes=GB),
                     dict(start_ns=30 * MS, end_ns=40 * MS, src_kind="pageable", bytes=GB)])
    r = analyze_transfers(copies, memset([]), None, th=TH, window=(10 * MS, 100 * MS))
    assert r.pageable_count == 2 and r.pageable_bytes == 2 * GB
    assert r.pageable_time_ns == 10 * MS + 10 * MS
    assert r.by_kind["H2D"].time_ns == 30 * MS  # whole copies: the rate stays per copy
    assert analyze_transfers(copies, memset([]), None, th=TH).pageable_time_ns == 30 * MS
