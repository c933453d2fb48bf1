"""The program cases of issue 26 (nsys_diag/synth/programs.py): each writes with one call, loads
without error, and its rows match its known facts; the brief's numbers hold; the CLI analyses
each without a traceback."""
from __future__ import annotations

import json
import re
import sqlite3

import numpy as np
import pytest
from click.testing import CliRunner

from nsys_diag.cli import main
from nsys_diag.loaders import load_trace
from nsys_diag.model.vocabulary import VERDICT_CODES
from nsys_diag.synth import programs
from nsys_diag.synth.program_facts import launch_fill
from nsys_diag.synth.schema import gpu_model

NSYS = tuple(programs.SCENARIOS)
NCU = tuple(programs.NCU_CASES)
FRAMEWORKS = ("pytorch", "jax", "tensorflow", "tensorrt", "openmp_offload", "openacc", "stdpar",
              "cuda", "unknown")


def _path(d, name):
    return d / (f"{name}.csv" if name in NCU else f"{name}.sqlite")


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    d = tmp_path_factory.mktemp("programs")
    return {n: programs.write_case(n, _path(d, n)) for n in programs.CASES}


@pytest.fixture(scope="module")
def loaded(written):
    return {n: load_trace(p) for n, p in written.items()}


def _ms(df) -> float:
    return float((df["end_ns"] - df["start_ns"]).sum()) / 1e6


def test_every_case_has_facts_with_a_framework_and_a_conclusion():
    assert set(programs.CASES) == set(NSYS) | set(NCU) and len(programs.CASES) == 11
    for n in programs.CASES:
        f = programs.facts(n)
        assert f["case"] == n and f["framework"] in FRAMEWORKS
        assert f["framework"] in f["framework_any_of"] and set(f["framework_any_of"]) <= set(FRAMEWORKS)
        exp = f["expected"]
        assert exp["verdict"] is None or exp["verdict"] in VERDICT_CODES + ("latency_bound",)
        assert exp["verdict"] not in exp["not_verdict"]
        if f["framework"] != "pytorch":
            assert ".item()" in exp["forbidden_advice_words"]


def test_unknown_case_is_a_key_error(tmp_path):
    with pytest.raises(KeyError):
        programs.write_case("no_such_case", tmp_path / "x.sqlite")
    with pytest.raises(KeyError):
        programs.facts("no_such_case")


@pytest.mark.parametrize("name", NSYS)
def test_nsys_rows_match_facts(name, loaded):
    b, f = loaded[name], programs.facts(name)
    k = f["kernels"]
    assert len(b.kernels) == k["count"]
    assert _ms(b.kernels) == pytest.approx(k["total_ms"], abs=1e-6)
    if k["count"]:
        by = b.kernels.groupby("name")
        assert set(by.groups) == set(k["by_name"])
        for kname, row in k["by_name"].items():
            g = by.get_group(kname)
            assert len(g) == row["count"]
            assert int((g.grid_x * g.grid_y * g.grid_z).iloc[0]) == row["blocks"]
            assert int((g.block_x * g.block_y * g.block_z).iloc[0]) == row["threads_per_block"]
            assert int(g.registers_per_thread.iloc[0]) == row["registers"]
    c = f["copies"]
    assert len(b.memcpy) == c["count"]
    assert _ms(b.memcpy) == pytest.approx(c["total_ms"], abs=1e-6)
    pageable = b.memcpy[(b.memcpy.src_kind.astype(str) == "pageable")
                        | (b.memcpy.dst_kind.astype(str) == "pageable")]
    assert _ms(pageable) == pytest.approx(c["pageable_ms"], abs=1e-6)
    api = b.api.name.value_counts().to_dict()
    assert api == f["api_calls"]
    for fn, row in f["osrt"].items():
        calls = b.osrt[b.osrt.name == fn]
        assert len(calls) == row["count"] and _ms(calls) == pytest.approx(row["total_ms"])
    assert f["main_thread"] in set(b.threads.name)
    assert "pt_autograd_0" not in set(b.threads.name)  # none of these programs is PyTorch
    assert len(b.gpus) == f["gpus"] and set(b.gpus.name) == {f["gpu_name"]}
    assert int(b.gpus.sm_count.iloc[0]) == f["sm_count"]
    assert set(b.nvtx.domain.unique()) - {""} == set(f["nvtx_domains"])


@pytest.mark.parametrize("name", NCU)
def test_ncu_rows_match_facts(name, loaded):
    b, f = loaded[name], programs.facts(name)
    assert len(b.ncu_launches) == f["kernels"]["count"]
    assert b.ncu_launches.kernel_name.value_counts().to_dict() == \
        {n: r["count"] for n, r in f["kernels"]["by_name"].items()}
    metrics = set(b.ncu_metrics.metric)
    assert metrics == set(f["metrics"]) == {f["tensor_pipe_metric"], "gpu__time_duration.sum",
                                            "sm__throughput.avg.pct_of_peak_sustained_elapsed"}
    tc = b.ncu_metrics[b.ncu_metrics.metric == f["tensor_pipe_metric"]]
    assert sorted(tc.value.astype(float).unique()) == sorted(
        {r["tensor_pipe_pct"] for r in f["kernels"]["by_name"].values()})
    assert not any("sass_thread_inst" in m or m.startswith(("dram__bytes", "lts__t_bytes"))
                   for m in metrics)
    dur = b.ncu_metrics[b.ncu_metrics.metric == "gpu__time_duration.sum"]
    assert set(dur.unit) == {"s"}  # the loader normalises ncu's nsecond to seconds
    assert dur.value.astype(float).sum() * 1e3 == pytest.approx(f["kernels"]["total_ms"])


def test_openmp_offload(loaded):
    b, f = loaded["openmp_offload"], programs.facts("openmp_offload")
    assert f["kernels"]["count"] == 22 and f["kernels"]["total_ms"] == pytest.approx(352, abs=0.01)
    assert b.kernels.name.str.fullmatch(r"__omp_offloading_[0-9a-f]+_[0-9a-f]+_\w+_l\d+").all()
    assert set(b.kernels.launch_api) == {"cuLaunchKernel"}
    assert len(b.gpus) == 2 and set(b.gpus.name) == {"Tesla V100-SXM2-32GB"}
    assert b.nvtx.empty and (b.api.api_class == b.api.api_class.iloc[0]).all()  # driver only
    # each kernel is waited for by the next cuStreamSynchronize of its thread
    syncs = b.api[b.api.name == "cuStreamSynchronize"].sort_values("start_ns")
    for _, k in b.kernels.iterrows():
        nxt = syncs[syncs.start_ns > k.launch_start_ns].iloc[0]
        assert nxt.end_ns >= k.end_ns
    assert f["api_calls"]["cuMemFree_v2"] == 22 and f["copies"]["by_kind"]["D2H"]["count"] == 22
    # the longest GPU-idle stretch is serial host code of 1.8 s with no CUDA call in it
    gpu = np.sort(np.concatenate([b.kernels.end_ns, b.memcpy.end_ns]))
    starts = np.sort(np.concatenate([b.kernels.start_ns, b.memcpy.start_ns]))
    gap = starts[1:] - gpu[:-1]
    i = int(np.argmax(gap))
    assert 1_790e6 < gap[i] < 1_810e6
    inside = b.api[(b.api.start_ns > gpu[i] + 2e6) & (b.api.end_ns < starts[i + 1] - 1e6)]
    assert inside.empty


def test_openacc(loaded):
    b = loaded["openacc"]
    names = set(b.kernels.name)
    assert {"main_86_gpu", "main_86_gpu__red", "main_98_gpu"} == names
    assert set(b.kernels.launch_api) == {"cuLaunchKernel"}
    assert {"cuStreamSynchronize", "cuMemcpyDtoHAsync_v2"} <= set(b.api.name)
    assert programs.facts("openacc")["kernel_busy_share"] < 0.5  # the host idles the GPU


def test_cuda_tiny_blocks(loaded, written):
    b, f = loaded["cuda_tiny_blocks"], programs.facts("cuda_tiny_blocks")
    fan2 = f["kernels"]["by_name"]["Fan2(float*, float*, float*, int, int, int)"]
    assert fan2["share"] == pytest.approx(0.995, abs=0.001)
    assert fan2["blocks"] == 1 << 20 and fan2["threads_per_block"] == 16 and fan2["underfilled"]
    assert set(b.kernels.short_name) == {"Fan1", "Fan2"}
    assert set(b.kernels.launch_api) == {"cudaLaunchKernel"}
    assert f["api_calls"]["cudaDeviceSynchronize"] == f["kernels"]["count"] // 2 + 1
    con = sqlite3.connect(written["cuda_tiny_blocks"])
    row = con.execute("SELECT smCount, maxWarpsPerSm, maxBlocksPerSm, computeMajor, computeMinor,"
                      " maxRegistersPerSm, maxShmemPerSm FROM TARGET_INFO_GPU").fetchone()
    con.close()
    assert row == (82, 48, 16, 8, 6, 65536, 102_400)
    assert f["kernels"]["underfilled_share"] == 1.0


def test_sparse_solver_t4(loaded):
    b, f = loaded["sparse_solver_t4"], programs.facts("sparse_solver_t4")
    small = b.kernels[(b.kernels.grid_x * b.kernels.grid_y <= 40) & (b.kernels.block_x <= 32)]
    assert _ms(small) / _ms(b.kernels) == pytest.approx(0.69, abs=0.01)
    assert f["kernel_busy_share"] == pytest.approx(0.71, abs=0.015)
    assert f["kernels"]["underfilled_share"] == pytest.approx(0.69, abs=0.01)
    assert set(b.gpus.name) == {"Tesla T4"} and int(b.gpus.sm_count.iloc[0]) == 40
    # cudaMallocAsync lies in the host time after each sync
    syncs = b.api[b.api.name == "cudaStreamSynchronize"].end_ns.to_numpy()
    mallocs = b.api[b.api.name == "cudaMallocAsync"].start_ns.to_numpy()
    assert len(mallocs) == len(syncs) == 1500 and (mallocs > syncs).all()


def test_cutlass_pageable(loaded):
    b, f = loaded["cutlass_pageable"], programs.facts("cutlass_pageable")
    assert len(b.kernels) == 6 and _ms(b.kernels) == pytest.approx(162)
    assert b.kernels.name.str.startswith("void cutlass::Kernel<cutlass::gemm::kernel::"
                                         "GemmUniversal<").all()
    assert f["copies"]["pageable_ms"] == pytest.approx(361) == f["copies"]["total_ms"]
    assert b.nvtx.empty


def test_host_writes(loaded, written):
    b, f = loaded["host_writes"], programs.facts("host_writes")
    writes = b.osrt[b.osrt.name == "pwrite64"]
    assert len(writes) == 869 and _ms(writes) == pytest.approx(70, abs=0.1)
    assert (writes.end_ns - writes.start_ns).between(79_000, 81_000).all()
    launcher = set(b.kernels.launch_global_tid)
    assert set(writes.global_tid) == launcher  # the thread that launches the GPU work
    polls = b.osrt[b.osrt.name == "poll"]
    assert len(polls) == 11 and not set(polls.global_tid) & launcher
    assert set(b.threads[b.threads.global_tid.isin(polls.global_tid)].name) == {"cuda-EvtHandlr"}
    assert len(b.kernels) == 22 and _ms(b.kernels) == pytest.approx(42, abs=0.01)
    uvm = f["copies"]["by_kind"]
    assert uvm["uvm_h2d"]["count"] + uvm["uvm_d2h"]["count"] == 5511
    con = sqlite3.connect(written["host_writes"])
    kinds = dict(con.execute("SELECT copyKind, count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY "
                             "GROUP BY 1").fetchall())
    corr = con.execute("SELECT max(correlationId) FROM CUPTI_ACTIVITY_KIND_MEMCPY").fetchone()
    con.close()
    assert kinds == {11: 3674, 12: 1837} and corr == (0,)  # migrations have no API call
    # every write happens while the GPU is idle
    ends, starts = b.kernels.end_ns.max(), b.kernels.start_ns
    busy = [(s, e) for s, e in zip(b.kernels.start_ns, b.kernels.end_ns)]
    assert not any(s < w_e and w_s < e for w_s, w_e in zip(writes.start_ns, writes.end_ns)
                   for s, e in busy) and ends > starts.min()


def test_launches_no_kernel_rows(loaded, written):
    b, f = loaded["launches_no_kernel_rows"], programs.facts("launches_no_kernel_rows")
    assert (b.api.name == "cudaLaunchKernel").sum() == 12_870 == f["kernels"]["launch_calls"]
    assert b.kernels.empty and f["kernels"]["count"] == 0
    con = sqlite3.connect(written["launches_no_kernel_rows"])
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    con.close()
    assert "CUPTI_ACTIVITY_KIND_KERNEL" not in tables and "CUPTI_ACTIVITY_KIND_RUNTIME" in tables


def test_cuda_init_no_launch(loaded):
    b = loaded["cuda_init_no_launch"]
    assert b.kernels.empty and b.memcpy.empty and b.memset.empty
    assert {"cuInit", "cudaGetDeviceCount", "cudaMalloc", "cudaFree"} <= set(b.api.name)
    assert not b.api.name.str.contains("Launch|Memcpy|Memset|Synchronize").any()


def test_mpi_saxpy(loaded):
    b, f = loaded["mpi_saxpy"], programs.facts("mpi_saxpy")
    assert len(b.kernels) == 5 and _ms(b.kernels) == pytest.approx(88.6)
    assert set(b.kernels.name) == {"saxpy(double *, double *, double *, double, int)"}
    mpi = b.nvtx[b.nvtx.domain == "MPI"]
    assert {"MPI_Init", "MPI_Send", "MPI_Recv", "MPI_Finalize"} == set(mpi.text)
    assert set(b.nvtx[b.nvtx.domain == ""].text) == {"saxpy"}
    assert "MPI Rank 0" in set(b.threads.name) and f["libraries"] == ["mpi"]
    assert f["copies"]["pageable_ms"] == f["copies"]["total_ms"] > 250


@pytest.mark.parametrize("schema", ["2021", "2026.2"])
@pytest.mark.parametrize("name", ["openmp_offload", "mpi_saxpy", "host_writes"])
def test_other_schema_variants_load(name, schema, tmp_path):
    b = load_trace(programs.write_case(name, tmp_path / f"{name}.sqlite", schema=schema))
    f = programs.facts(name)
    assert len(b.kernels) == f["kernels"]["count"]
    assert _ms(b.kernels) == pytest.approx(f["kernels"]["total_ms"], abs=1e-6)


def test_launch_fill_follows_the_issue_definition():
    from nsys_diag.synth.kernels import KernelInfo

    big = KernelInfo("k", "k", grid=(4096, 1, 1), block=(256, 1, 1), registers=32)
    assert launch_fill(big, gpu_model("T4")) == (1.0, False, "warps")
    tiny = KernelInfo("k", "k", grid=(40, 1, 1), block=(32, 1, 1), registers=32)
    fill, under, by = launch_fill(tiny, gpu_model("T4"))
    assert fill == pytest.approx(40 * 32 / (40 * 32 * 32)) and under and by == "grid"
    fan2 = KernelInfo("k", "k", grid=(1024, 1024, 1), block=(4, 4, 1), registers=20)
    fill, under, by = launch_fill(fan2, gpu_model("RTX3090"))
    assert fill == pytest.approx(16 * 16 / 1536) and under and by == "blocks"
    gemm = KernelInfo("k", "k", grid=(64, 64, 1), block=(128, 1, 1), registers=230)
    fill, under, by = launch_fill(gemm, gpu_model("A100"))  # 2 blocks/SM by registers
    assert fill == pytest.approx(2 * 128 / 2048) and not under and by == "registers"


@pytest.mark.parametrize("name", programs.CASES)
def test_cli_analyze_json_runs(name, written):
    result = CliRunner().invoke(main, ["analyze", str(written[name]), "--json", "-", "--no-html"],
                                env={"SOURCE_DATE_EPOCH": "0"})
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    doc = json.loads(result.stdout[result.stdout.index("{"):])
    verdict = doc.get("verdict") or {}
    code = verdict.get("code") if isinstance(verdict, dict) else verdict
    assert code is None or re.fullmatch(r"[a-z_]+", str(code))
