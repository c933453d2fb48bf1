"""Generator support for the issue-15 evidence: OS runtime calls, CPU samples, unified-memory
migrations, initialisation / allocation API calls — written per schema variant and read back."""
from __future__ import annotations

import sqlite3
from dataclasses import replace

import pytest

from nsys_diag.loaders.nsys_sqlite import load_nsys_sqlite
from nsys_diag.synth.presets import preset
from nsys_diag.synth.scenarios import (MS, US, ApiCallSpec, CpuSamplingSpec, HostCallSpec, MiB,
                                       MemcpySpec)
from nsys_diag.synth.timeline import build_timeline
from nsys_diag.synth.writer import write_nsys_sqlite


def _scenario():
    sc = preset("worked_example")
    ph = list(sc.phases)
    first = ph[0]
    ph[0] = replace(first, host_calls=(HostCallSpec("read", 2 * MS, count=2, thread="loader"),),
                    api_calls=(ApiCallSpec("cudaMalloc", 300 * US),),
                    memcpys=first.memcpys + (MemcpySpec("uvm_h2d", 2 * MiB, 200 * US,
                                                        api="cudaMemPrefetchAsync",
                                                        migration_cause=1),))
    return replace(sc, phases=tuple(ph), preamble_ns=60 * MS,
                   init_calls=(("cuLibraryLoadData", 5 * MS), ("cublasCreate_v2", 3 * MS)),
                   cpu_sampling=CpuSamplingSpec(threads=("main", "loader"),
                                                frames={first.name: "DataLoader.__next__"})), first


@pytest.mark.parametrize("schema", ["2021", "2022.2", "2024.6", "2026.2"])
def test_new_events_round_trip(tmp_path, schema):
    sc, first = _scenario()
    tl = build_timeline(sc)
    b = load_nsys_sqlite(write_nsys_sqlite(tmp_path / "t.sqlite", sc, schema))
    # OS runtime: 2 reads per occurrence of the first phase, on the loader thread
    assert len(b.osrt) == 2 * sc.steps
    assert set(b.osrt["name"].astype(str)) == {"read"}
    assert set((b.osrt["end_ns"] - b.osrt["start_ns"]).tolist()) == {2 * MS}
    assert b.osrt["tid"].nunique() == 1 and int(b.osrt["tid"].iloc[0]) != int(b.osrt["pid"].iloc[0])
    # CPU samples: one per period per sampled thread; OS runtime frame inside the reads
    s = b.cpu_samples
    assert len(s) == tl.samples["ts"].size and s["tid"].nunique() == 2
    in_read = s[s["top_frame"].astype(str) == "read"]
    assert len(in_read) > 0 and set(in_read["state"].astype(str)) == {"osruntime"}
    assert (s["top_frame"].astype(str) == "DataLoader.__next__").sum() > 0
    assert set(s["state"].astype(str)) == {"running", "osruntime"}
    # unified memory: its own copy kind, managed on both sides
    uvm = b.memcpy[b.memcpy["copy_kind"].astype(str) == "uvm_h2d"]
    assert len(uvm) == sc.steps
    assert set(uvm["src_kind"].astype(str)) == {"managed"} == set(uvm["dst_kind"].astype(str))
    names = set(b.api["name"].astype(str))
    assert {"cuLibraryLoadData", "cublasCreate_v2", "cudaMalloc", "cudaMemPrefetchAsync"} <= names


def test_layouts_follow_the_real_files(tmp_path):
    sc, _ = _scenario()
    con = sqlite3.connect(write_nsys_sqlite(tmp_path / "a.sqlite", sc, "2021"))
    assert "correlationId" in [r[1] for r in con.execute("PRAGMA table_info(OSRT_API)")]
    con.close()
    con = sqlite3.connect(write_nsys_sqlite(tmp_path / "b.sqlite", sc, "2022.2"))
    assert "symbolName" in [r[1] for r in con.execute("PRAGMA table_info(SAMPLING_CALLCHAINS)")]
    assert con.execute("SELECT count(*) FROM sqlite_master WHERE name = "
                       "'ENUM_SAMPLING_THREAD_STATE'").fetchone()[0] == 0
    assert con.execute("SELECT DISTINCT migrationCause FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE "
                       "copyKind = 11").fetchall() == [(1,)]
    con.close()
    con = sqlite3.connect(write_nsys_sqlite(tmp_path / "c.sqlite", sc, "2024.6"))
    assert "argumentsId" not in [r[1] for r in con.execute("PRAGMA table_info(OSRT_API)")]
    assert con.execute("SELECT label FROM ENUM_SAMPLING_THREAD_STATE WHERE id = 8").fetchone() == \
        ("OS runtime",)
    depth = con.execute("SELECT max(stackDepth) FROM SAMPLING_CALLCHAINS").fetchone()[0]
    assert depth == len(CpuSamplingSpec().stack)
    con.close()


def test_defaults_write_no_host_tables(tmp_path):
    con = sqlite3.connect(write_nsys_sqlite(tmp_path / "d.sqlite", preset("worked_example")))
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master")}
    con.close()
    assert not tables & {"OSRT_API", "COMPOSITE_EVENTS", "SAMPLING_CALLCHAINS",
                         "ENUM_SAMPLING_THREAD_STATE"}
