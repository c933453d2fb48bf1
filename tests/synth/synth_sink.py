"""Helpers shared by the generator's tests (tests/synth/): read-only SQLite access, and a
``kitchen_sink`` scenario using every feature, written in every schema variant."""
from __future__ import annotations

import sqlite3
from pathlib import Path

from nsys_diag import synth
from nsys_diag.synth import (
    MS, NCCL_STREAM, US, GpuMemorySpec, GpuMetricsSpec, KernelSpec, MemcpySpec, MemsetSpec, MiB,
    PhaseSpec, RangeSpec, Scenario, SyncSpec)

MASK_PID = -16_777_216  # 0xFFFFFFFFFF000000 as a signed 64-bit SQLite integer


def open_ro(path) -> sqlite3.Connection:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    con.text_factory = lambda b: b.decode("utf-8", "replace")
    return con


def table_sql(con) -> dict[str, str]:
    return dict(con.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'"))


def table_cols(con, table) -> list[str]:
    return [r[1] for r in con.execute(f"PRAGMA table_info({table})")]


def query(con, sql, *args):
    return con.execute(sql, args).fetchall()


def nsys_ranges(con, pattern=None):
    """NVTX push/pop + start/end ranges with resolved text: (start, end, text, globalTid, type)."""
    sql = """SELECT n.start, n.end, coalesce(s.value, n.text), n.globalTid, n.eventType
             FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId
             WHERE n.eventType IN (59, 60)"""
    rows = query(con, sql)
    return [r for r in rows if pattern is None or pattern(r[2])]


def kitchen_sink(**kw) -> Scenario:
    """A small scenario that uses every feature (two processes, all op kinds, metrics, memory)."""
    base = dict(
        name="kitchen_sink", steps=3, warmup_extra_ns=5 * MS, nvtx_text="mixed",
        gpu_metrics=GpuMetricsSpec(period_ns=5 * MS), gpu_memory=GpuMemorySpec(chunks=2),
        env={"HF_TOKEN": "hf_FAKE_SECRET_123"}, n_devices=2,
        phases=(
            PhaseSpec("data", 10 * MS, canonical="data", kind="start_end",
                      memcpys=(MemcpySpec("H2D", MiB, 100 * US, at=1.0),)),
            PhaseSpec("forward", 20 * MS, canonical="forward",
                      ranges=(RangeSpec("aten::linear", 3),),
                      kernels=(KernelSpec("nvjet", 2 * MS, 4), KernelSpec("ew_add", 500 * US, 4))),
            PhaseSpec("backward", 20 * MS, canonical="backward", kernels=(
                KernelSpec("gemm_bf16_sm90", 2 * MS, 4, thread="autograd"),
                KernelSpec("nccl_allreduce", 3 * MS, 1, thread="autograd", stream=NCCL_STREAM,
                           nvtx="ncclAllReduce", nvtx_domain="NCCL"))),
            PhaseSpec("optimizer", 5 * MS, canonical="optimizer",
                      kernels=(KernelSpec("adam", 1 * MS, 2),),
                      memsets=(MemsetSpec(MiB, 50 * US, at=0.0),)),
            PhaseSpec("logging", 5 * MS, canonical="overhead", marks=("logged",),
                      memcpys=(MemcpySpec("D2H", 4, 2 * US, host="pageable", at=0.5),),
                      syncs=(SyncSpec(at=0.5), SyncSpec("cudaEventSynchronize", at=0.8),
                             SyncSpec("cudaDeviceSynchronize", at=1.0)))))
    base.update(kw)
    return Scenario(**base)


def write_sink(directory: Path) -> dict[str, Path]:
    """kitchen_sink written in every schema variant: {schema: path}."""
    return {s: synth.write_nsys_sqlite(directory / f"sink_{s}.sqlite", kitchen_sink(), s)
            for s in synth.ALL_SCHEMAS}
