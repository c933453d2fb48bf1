"""Terminal roofline table: ncu-only and joined views, unavailable sections, escaping."""
from __future__ import annotations

import pandas as pd

from nsys_diag.analyses.roofline.ncu_join import join_roofline_to_timeline
from nsys_diag.analyses.roofline.analysis import analyze_roofline
from nsys_diag.loaders import load_trace
from nsys_diag.model import contracts as C
from nsys_diag.report.roofline_text import (fallback_pairings, render_roofline_table,
                                            roofline_rows)
from nsys_diag.synth.ncu import SynthKernel, write_ncu_csv


def _roofline(path):
    b = load_trace(path)
    return analyze_roofline(b.ncu_launches, b.ncu_metrics, b.gpus)


def _timeline(rows, grid=1024):
    """Back-to-back kernels launched like the synthetic ncu kernels (grid 1024, block 256)."""
    out, t = [], 0
    for name, dur in rows:
        out.append(dict(start_ns=t, end_ns=t + dur, device_id=0, context_id=1, stream_id=7,
                        correlation_id=-1, global_pid=1 << 24, pid=1, name=name, short_name=name,
                        grid_x=grid, grid_y=1, grid_z=1, block_x=256, block_y=1, block_z=1,
                        registers_per_thread=32, smem_static_bytes=0, smem_dynamic_bytes=0,
                        graph_node_id=-1, launch_global_tid=-1, launch_start_ns=-1,
                        launch_end_ns=-1, launch_api="cudaLaunchKernel"))
        t += dur
    return C.KERNELS.validate(pd.DataFrame(out))


def test_ncu_only_table(tmp_path):
    r = _roofline(write_ncu_csv(tmp_path / "k.csv", gpu_name="NVIDIA A100-SXM4-40GB"))
    text = render_roofline_table(r.to_json())
    lines = text.splitlines()
    assert lines[0] == "Roofline (Nsight Compute) — NVIDIA A100-SXM4-40GB"
    assert "FP32 19.5 TFLOP/s" in text and "DRAM 1.55 TB/s" in text
    assert "built-in table: A100 40GB SXM" in text
    assert "(of profiled ncu kernel time)" in text and "82% compute-bound" in text
    row = next(ln for ln in lines if "gemm_kernel" in ln)
    assert "200 µs" in row and "10 TFLOP/s" in row and "100 GB/s" in row and "compute" in row
    assert any("tiny_kernel" in ln and "under-occupied" in ln for ln in lines)


def test_joined_table(tmp_path):
    r = _roofline(write_ncu_csv(tmp_path / "k.csv", gpu_name="NVIDIA A100-SXM4-40GB"))
    gemm = "void gemm_kernel<float, 128>(float const*, float const*, float*, int)"
    add = ("void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float> >"
           "(int, at::native::AddFunctor<float>)")
    j = join_roofline_to_timeline(r, _timeline([(gemm, 600_000), (add, 300_000),
                                                ("mystery", 100_000)])).to_json()
    text = render_roofline_table(j)
    assert "60% compute-bound" in text and "30% memory-bound" in text and "10% not in ncu" in text
    assert "90% matched to ncu" in text
    assert "Not profiled by ncu: mystery" in text
    row = next(ln for ln in text.splitlines() if "tiny_kernel" in ln)
    assert "—" in row  # profiled by ncu but absent from the timeline: no timeline time


def test_fallback_pairings_are_labelled(tmp_path):
    """A pairing that is not the exact name is shown with its level, duration ratio and launches;
    exact-name matches are not repeated."""
    r = _roofline(write_ncu_csv(tmp_path / "k.csv", gpu_name="NVIDIA A100-SXM4-40GB"))
    gemm = "void gemm_kernel<float, 128>(float const*, float const*, float*, int)"
    xmma = ("sm80_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x32_stage3_warpsize4x2x1"
            "_tensor16x8x16_kernel")
    j = join_roofline_to_timeline(r, _timeline([(gemm, 100_000), (xmma, 25_000), (xmma, 25_000)]))
    js = j.to_json()
    (p,) = fallback_pairings(js)
    assert p["level"] == "family" and p["level_label"] == "family guess"
    assert p["ratio"] == "ncu per launch 2× the timeline's"
    assert p["launches"] == "2 timeline / 1 ncu launches"
    text = render_roofline_table(js)
    assert "Not exact pairings" in text
    line = next(ln for ln in text.splitlines() if "← ncu" in ln)
    assert "family guess" in line and "2×" in line and "50 µs" in line
    row = next(row for row in roofline_rows(js) if row["kernel"].startswith("void gemm_kernel"))
    assert row["bound"] == "compute" and row["time"] == "100 µs" and row["ai"] != "—"


def test_render_unavailable():
    text = render_roofline_table({"available": False, "reason": "roofline unavailable: need dram__bytes.sum",
                                  "hint": "capture with `ncu --set roofline`"})
    assert text.startswith("Roofline: unavailable — roofline unavailable: need dram__bytes.sum")
    assert "ncu --set roofline" in text
    assert render_roofline_table(None).startswith("Roofline: unavailable")


def test_render_escapes_control_characters(tmp_path):
    r = _roofline(write_ncu_csv(tmp_path / "k.csv", [SynthKernel("evil\x1b[31mred\x07kernel")]))
    text = render_roofline_table(r.to_json())
    assert "\x1b" not in text and "\x07" not in text and "evil" in text


LONG_SPACED = ("void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_bf16_256x128_32x3_nn_align8>"
               "(cutlass_80_tensorop_s1688gemm_bf16_256x128_32x3_nn_align8::Params, int, float)")
LONG_WORD = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_" * 2


def _long_named(tmp_path):
    path = write_ncu_csv(tmp_path / "k.csv", [SynthKernel(LONG_SPACED, duration_ns=50_000.0),
                                               SynthKernel(LONG_WORD, duration_ns=20_000.0)],
                         gpu_name="NVIDIA A100-SXM4-40GB")
    return path, _roofline(path).to_json()


def test_long_kernel_names_are_whole_in_the_last_column(tmp_path):
    """Issue 28 item 4: the table cut names at 44 characters; the name is now the last column,
    whole, after the aligned numeric columns."""
    _, rl = _long_named(tmp_path)
    lines = render_roofline_table(rl).splitlines()
    header = next(ln for ln in lines if "Launch" in ln)
    assert header.rstrip().endswith("Kernel")
    at = header.index("Kernel")
    rows = {name: next(ln for ln in lines if name in ln) for name in (LONG_SPACED, LONG_WORD)}
    for name, row in rows.items():
        assert row.endswith(name) and row.index(name) == at  # whole, aligned under its header
        assert "…" not in row
    assert len({r.index("µs") for r in rows.values()}) == 1  # the numeric columns stay aligned


def test_long_kernel_names_wrap_to_the_terminal_and_are_never_cut(tmp_path):
    from click.testing import CliRunner

    from nsys_diag.cli import main
    from nsys_diag.report.text import fit_line

    path, rl = _long_named(tmp_path)
    row = next(ln for ln in render_roofline_table(rl).splitlines() if LONG_SPACED in ln)
    parts = fit_line(row, 80)  # the CLI's wrap helper
    assert len(parts) > 1  # a word longer than the width keeps a line of its own, whole
    assert all(len(p) <= 80 or len(p.split()) == 1 for p in parts), parts
    assert " ".join(" ".join(parts).split()) == " ".join(row.split())  # same words, same order
    assert fit_line(row, None) == [row]  # not a terminal, no COLUMNS: the whole line

    def run(columns: str) -> str:
        r = CliRunner().invoke(main, ["analyze", str(path), "--no-html"],
                               env={"COLUMNS": columns, "SOURCE_DATE_EPOCH": "0"})
        assert r.exit_code == 0, r.output
        return r.output

    whole, narrow = run(""), run("80")
    assert any(ln.endswith(LONG_SPACED) for ln in whole.splitlines())  # one whole line
    assert any(ln.strip() == LONG_WORD for ln in narrow.splitlines())  # a long word: own line, whole
    assert all(len(ln) <= 80 or len(ln.split()) == 1 for ln in narrow.splitlines())
    assert " ".join(whole.split()) == " ".join(narrow.split())  # wrapped, nothing cut
