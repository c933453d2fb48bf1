"""ncu CSV loader: the real A100 details export, generated CSVs in both layouts and every quirk."""
from __future__ import annotations

import csv
import io
import math

import numpy as np
import pandas as pd
import pytest

from nsys_diag.loaders import Format, load_trace, sniff_format
from nsys_diag.loaders.ncu_csv import (attach_ncu, decide_decimal_mark, load_ncu_csv,
                                       looks_like_ncu_csv, normalize_unit, parse_numbers)
from nsys_diag.model import contracts as C
from nsys_diag.model.bundle import TraceBundle, TraceMeta
from nsys_diag.model.errors import EXIT_BAD_INPUT, InputError
from nsys_diag.synth.ncu import ERROR_ONLY_TEXT, SynthKernel, demo_kernels, ncu_csv_text, write_ncu_csv

REAL = "ncu/interp_a100_details.csv"


def _metric(bundle: TraceBundle, launch_id: int, name: str) -> float:
    m = bundle.ncu_metrics
    row = m[(m["launch_id"] == launch_id) & (m["metric"] == name)]
    assert len(row) == 1, (launch_id, name, len(row))
    return float(row["value"].iloc[0])


# --------------------------------------------------------------------------- the real A100 file
def test_real_a100_details_file_values_and_units(shared):
    b = load_trace(shared(REAL))
    assert b.meta.format == "ncu-csv"
    assert b.meta.extra["ncu_layout"] == "details"
    assert b.meta.extra["decimal_mark"] == "."
    assert b.meta.extra["noise_lines"] == 5  # "2 2 2" + four ==PROF== lines before the header
    assert b.ncu_launches["launch_id"].tolist() == [0, 1]
    assert b.ncu_launches["kernel_name"].astype(str).iloc[0] == "ampere_sgemm_32x32_sliced1x4_tn"
    assert b.ncu_launches["pid"].tolist() == [91941, 91941]
    assert b.ncu_launches["stream_id"].tolist() == [7, 7]
    assert len(b.ncu_metrics) == 42  # 21 metrics × 2 launches, no duplicates
    # "7,488" with unit nsecond is 7,488 ns (grouping, not a decimal comma) → seconds
    assert _metric(b, 0, "gpu__time_duration.sum") == pytest.approx(7.488e-6, rel=1e-12)
    assert _metric(b, 1, "gpu__time_duration.sum") == pytest.approx(4.224e-6, rel=1e-12)
    assert _metric(b, 0, "sm__cycles_elapsed.avg.per_second") == pytest.approx(1_009_150_443.18)
    assert _metric(b, 0, "sm__cycles_elapsed.avg") == pytest.approx(7556.52)
    assert _metric(b, 0, "lts__t_bytes.sum") == 233_856
    assert _metric(b, 0, "sm__sass_thread_inst_executed_op_ffma_pred_on.sum") == 65_536
    units = dict(zip(b.ncu_metrics["metric"].astype(str), b.ncu_metrics["unit"].astype(str)))
    assert units["gpu__time_duration.sum"] == "s"
    assert units["sm__cycles_elapsed.avg.per_second"] == "cycle/s"
    assert units["dram__bytes.sum"] == "byte"
    assert units["sm__throughput.avg.pct_of_peak_sustained_elapsed"] == "%"
    assert len(b.kernels) == 0 and len(b.gpus) == 0  # no device name in this old export
    assert [w.code for w in b.warnings] == ["ncu_noise_lines"]
    # the frames honour their contracts
    C.NCU_LAUNCHES.validate(b.ncu_launches)
    C.NCU_METRICS.validate(b.ncu_metrics)


def test_real_file_sniffed_as_ncu(shared):
    assert sniff_format(shared(REAL)) is Format.NCU_CSV


# --------------------------------------------------------------------------- sniffing
@pytest.mark.parametrize("head,expected", [
    (b'"ID","Process ID","Process Name","Host Name","Kernel Name"', True),
    (b"app says hi\n==PROF== Connected to process 1\n", True),
    (ERROR_ONLY_TEXT.encode(), True),
    (b"ID,Process ID,Process Name,Host Name,Kernel Name,Context\n0,1,p,h,k,1\n", True),
    ('"ID","Kernel Name"\n'.encode("utf-16"), True),
    (b"\xef\xbb\xbf\"ID\",\"Process ID\",\"Kernel Name\"", True),
    (b"name,value\na,1\n", False),
    (b"SQLite format 3\x00", False),
    (b"just some text\n", False),
])
def test_looks_like_ncu_csv(head, expected):
    assert looks_like_ncu_csv(head) is expected


# --------------------------------------------------------------------------- bad input
def test_error_only_output_is_an_input_error_quoting_ncu(tmp_path):
    p = write_ncu_csv(tmp_path / "err.csv", error_only=True)
    assert sniff_format(p) is Format.NCU_CSV
    with pytest.raises(InputError) as ei:
        load_trace(p)
    assert ei.value.exit_code == EXIT_BAD_INPUT == 3
    assert "The application returned an error code (1)." in str(ei.value)
    assert "ncu" in (ei.value.hint or "")


def test_prof_lines_without_table_is_an_input_error(tmp_path):
    p = tmp_path / "noise.csv"
    p.write_text("==PROF== Connected to process 1 (/usr/bin/python3)\n"
                 "==PROF== Disconnected from process 1\n", encoding="utf-8")
    with pytest.raises(InputError, match="no Nsight Compute CSV table"):
        load_trace(p)


def test_header_without_rows_is_an_input_error(tmp_path):
    text = ncu_csv_text(demo_kernels(), layout="details").splitlines()[0] + "\n"
    p = tmp_path / "empty.csv"
    p.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match="no profiled kernel rows"):
        load_ncu_csv(p)


def test_missing_file_is_an_input_error(tmp_path):
    with pytest.raises(InputError):
        load_ncu_csv(tmp_path / "absent.csv")


def test_cli_error_only_exit_code_3(tmp_path):
    from click.testing import CliRunner

    from nsys_diag.cli import main

    p = write_ncu_csv(tmp_path / "err.csv", error_only=True)
    res = CliRunner().invoke(main, ["analyze", str(p), "--no-html"])
    assert res.exit_code == 3
    assert "The application returned an error code (1)." in res.output


# --------------------------------------------------------------------------- units and numbers
@pytest.mark.parametrize("unit,base,factor", [
    ("nsecond", "s", 1e-9), ("ns", "s", 1e-9), ("usecond", "s", 1e-6), ("us", "s", 1e-6),
    ("msecond", "s", 1e-3), ("second", "s", 1.0),
    ("byte", "byte", 1.0), ("Kbyte", "byte", 1e3), ("Mbyte", "byte", 1e6), ("Gbyte", "byte", 1e9),
    ("Tbyte", "byte", 1e12),
    ("byte/second", "byte/s", 1.0), ("Gbyte/second", "byte/s", 1e9), ("Mbyte/usecond", "byte/s", 1e12),
    ("cycle", "cycle", 1.0), ("cycle/second", "cycle/s", 1.0), ("cycle/nsecond", "cycle/s", 1e9),
    ("cycle/usecond", "cycle/s", 1e6), ("Ghz", "cycle/s", 1e9), ("Mhz", "cycle/s", 1e6),
    ("hz", "cycle/s", 1.0), ("inst", "inst", 1.0), ("Kinst", "inst", 1e3), ("Minst", "inst", 1e6),
    ("%", "%", 1.0), ("", "", 1.0),
    # unit-like words pass through untouched (never split into prefix + unit)
    ("SM", "SM", 1.0), ("pass", "pass", 1.0), ("block", "block", 1.0), ("cluster", "cluster", 1.0),
    ("register/thread", "register/thread", 1.0), ("byte/block", "byte/block", 1.0),
    ("Kbyte/block", "byte/block", 1e3), ("inst/cycle", "inst/cycle", 1.0),
    ("warp", "warp", 1.0), ("thread", "thread", 1.0),
])
def test_normalize_unit(unit, base, factor):
    b, f = normalize_unit(unit)
    assert b == base
    assert f == pytest.approx(factor, rel=1e-12)


@pytest.mark.parametrize("values,mark,ambiguous", [
    (["1,009,150,443.18", "7,488", "0"], ".", False),
    (["62.50", "7,488"], ".", False),
    (["1.234,56", "7.488"], ",", False),
    (["62,50", "0,25", "12"], ",", False),
    (["1.009.150.443"], ",", False),
    (["7,488", "1,536", "0"], ".", True),  # no evidence: English assumed and flagged
    (["7488", "12"], ".", False),  # nothing the mark could change
    (["NVIDIA B200", ""], ".", False),
])
def test_decimal_mark_is_decided_once_per_file(values, mark, ambiguous):
    assert decide_decimal_mark(pd.Series(values, dtype="string")) == (mark, ambiguous)


def test_parse_numbers_locales_and_placeholders():
    s = pd.Series(["1,234.56", "7,488", "n/a", "", "cudaFuncCachePreferNone", "0.00", "-3"])
    got = parse_numbers(s, ".").tolist()
    assert got[:2] == [1234.56, 7488.0]
    assert all(math.isnan(x) for x in got[2:5])
    assert got[5:] == [0.0, -3.0]
    eu = parse_numbers(pd.Series(["1.234,56", "7.488", "0,25", "1 234,5", "n/a"]), ",").tolist()
    assert eu[:4] == [1234.56, 7488.0, 0.25, 1234.5] and math.isnan(eu[4])


# --------------------------------------------------------------------------- generated CSVs
def _expected_per_launch() -> dict[str, dict[str, float]]:
    """Known answers from the generator's kernels, in base units."""
    out = {}
    for k in demo_kernels():
        out[k.name] = {
            "gpu__time_duration.sum": k.duration_ns * 1e-9,
            "dram__bytes.sum": k.dram_bytes,
            "lts__t_bytes.sum": k.l2_bytes,
            "sm__sass_thread_inst_executed_op_ffma_pred_on.sum": k.c("ffma"),
            "sm__sass_thread_inst_executed_op_fadd_pred_on.sum": k.c("fadd"),
            "sm__cycles_elapsed.avg.per_second": k.sm_clock_hz,
            "sm__throughput.avg.pct_of_peak_sustained_elapsed": k.sm_pct,
        }
    return out


VARIANTS = {
    "details-new": dict(layout="details"),
    "details-old-header": dict(layout="details", header="old"),
    "details-rules-ragged-junk": dict(layout="details", header="old", rules=True, ragged=True,
                                      junk=True),
    "details-new-rules": dict(layout="details", rules=True),
    "details-decimal-comma": dict(layout="details", decimal_comma=True, junk=True),
    "raw": dict(layout="raw"),
    "raw-grouped-decimal-comma": dict(layout="raw", decimal_comma=True, grouping=True, junk=True),
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_generated_layouts_give_exact_values(tmp_path, variant):
    b = load_trace(write_ncu_csv(tmp_path / f"{variant}.csv", **VARIANTS[variant]))
    assert b.meta.extra["ncu_layout"] == VARIANTS[variant]["layout"]
    assert b.meta.extra["decimal_mark"] == ("," if VARIANTS[variant].get("decimal_comma") else ".")
    launches = b.ncu_launches
    assert launches["launch_id"].tolist() == list(range(8))  # 2 + 3 + 1 + 1 + 1 launches
    expected = _expected_per_launch()
    for lid, name in zip(launches["launch_id"], launches["kernel_name"].astype(str)):
        for metric, value in expected[name].items():
            assert _metric(b, int(lid), metric) == pytest.approx(value, rel=1e-12), (variant, metric)


@pytest.mark.parametrize("layout", ["details", "raw"])
def test_auto_scaled_units_are_normalised(tmp_path, layout):
    b = load_trace(write_ncu_csv(tmp_path / "auto.csv", layout=layout, auto_units=True,
                                 decimal_comma=(layout == "details")))
    units = set(b.ncu_metrics["unit"].astype(str))
    assert {"s", "byte", "inst", "cycle/s", "%"} <= units
    assert not units & {"usecond", "Mbyte", "Kbyte", "Minst", "cycle/nsecond"}
    gemm = b.ncu_launches.loc[b.ncu_launches["kernel_name"].astype(str).str.startswith("void gemm"),
                              "launch_id"].iloc[0]
    # ncu prints auto-scaled values with 2 decimals: 100.00 usecond, 10.00 Mbyte, 450.00 Minst
    assert _metric(b, gemm, "gpu__time_duration.sum") == pytest.approx(100e-6, rel=1e-6)
    assert _metric(b, gemm, "dram__bytes.sum") == pytest.approx(1e7, rel=1e-6)
    assert _metric(b, gemm, "sm__sass_thread_inst_executed_op_ffma_pred_on.sum") == pytest.approx(4.5e8)
    assert _metric(b, gemm, "sm__cycles_elapsed.avg.per_second") == pytest.approx(1.41e9)


def test_junk_lines_inside_and_around_the_table_are_skipped(tmp_path):
    b = load_trace(write_ncu_csv(tmp_path / "junk.csv", layout="details", junk=True))
    assert b.meta.extra["noise_lines"] == 7  # 5 before, 1 inside, 1 after
    codes = [w.code for w in b.warnings]
    assert "ncu_noise_lines" in codes
    warn = [w for w in b.warnings if w.code == "ncu_warning"]
    assert warn and "outstanding GPU clock reset" in warn[0].message
    assert len(b.ncu_launches) == 8


def test_rule_rows_are_kept_apart_from_metrics(tmp_path):
    b = load_trace(write_ncu_csv(tmp_path / "rules.csv", layout="details", header="old",
                                 rules=True, ragged=True))
    rules = b.meta.extra["ncu_rules"]
    assert len(rules) == 8 and {r["rule"] for r in rules} == {"LaunchConfiguration"}
    assert "108 multiprocessors" in rules[0]["description"]
    assert "" not in set(b.ncu_metrics["metric"].astype(str))


def test_na_values_become_nan_with_a_warning(tmp_path):
    b = load_trace(write_ncu_csv(tmp_path / "na.csv", layout="raw", na_metrics=["dram__bytes.sum"]))
    m = b.ncu_metrics
    assert m.loc[m["metric"] == "dram__bytes.sum", "value"].isna().all()
    assert any(w.code == "ncu_na_values" and w.count == 8 for w in b.warnings)


def test_columns_are_found_by_name_not_position(tmp_path):
    text = ncu_csv_text(demo_kernels(), layout="details", header="new")
    rows = list(csv.reader(io.StringIO(text)))
    order = list(reversed(range(len(rows[0]))))  # every column moved
    buf = io.StringIO()
    csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(
        [[r[i] for i in order] for r in rows])
    # the header must still start with "ID" for ncu-style detection; put ID first again
    lines = buf.getvalue().splitlines()
    shuffled = [list(csv.reader([ln]))[0] for ln in lines]
    id_pos = shuffled[0].index("ID")
    fixed = [[r[id_pos]] + r[:id_pos] + r[id_pos + 1:] for r in shuffled]
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(fixed)
    p = tmp_path / "shuffled.csv"
    p.write_text(out.getvalue(), encoding="utf-8")
    b = load_trace(p)
    ref = load_trace(write_ncu_csv(tmp_path / "ref.csv", layout="details"))
    cols = ["launch_id", "metric", "unit", "value"]
    key = ["launch_id", "metric"]
    got = b.ncu_metrics[cols].astype({"metric": str, "unit": str}).sort_values(key).reset_index(drop=True)
    exp = ref.ncu_metrics[cols].astype({"metric": str, "unit": str}).sort_values(key).reset_index(drop=True)
    pd.testing.assert_frame_equal(got, exp)


def test_raw_page_device_attributes_fill_gpus(tmp_path):
    attrs = {"device__attribute_multiprocessor_count": 148,
             "device__attribute_clock_rate": 1_965_000,  # kHz, no unit printed
             "device__attribute_memory_clock_rate": 3_996_000,  # kHz
             "device__attribute_global_memory_bus_width": 7680}  # bits
    b = load_trace(write_ncu_csv(tmp_path / "b200.csv", layout="raw", gpu_name="NVIDIA B200",
                                 device_attrs=attrs, cc="10.0"))
    assert set(b.ncu_launches["gpu_name"].astype(str)) == {"NVIDIA B200"}
    assert b.ncu_launches["grid_size"].iloc[0] == "(1024, 1, 1)"
    g = b.gpus.iloc[0]
    assert g["name"] == "NVIDIA B200" and g["device_id"] == 0
    assert (g["cc_major"], g["cc_minor"], g["sm_count"]) == (10, 0, 148)
    assert g["clock_hz"] == 1_965_000_000
    # 2 transfers × 3.996 GHz × 960 bytes = 7.67 TB/s (NCU_CSV.md §6.5)
    assert g["memory_bandwidth_bytes_per_s"] == pytest.approx(2 * 3.996e9 * 960)


def test_old_details_grid_and_block_come_from_label_rows(tmp_path):
    b = load_trace(write_ncu_csv(tmp_path / "old.csv", layout="details", header="old"))
    assert b.ncu_launches["grid_size"].iloc[0] == "1,024"  # as printed (launch__grid_size)
    assert b.ncu_launches["block_size"].iloc[0] == "256"
    assert (b.ncu_launches["device_id"] == -1).all()


def test_utf16_output_is_read(tmp_path):
    text = ncu_csv_text(demo_kernels()[:1], layout="raw")
    p = tmp_path / "ps.csv"
    p.write_bytes(text.encode("utf-16"))  # PowerShell `>` redirection writes UTF-16
    b = load_trace(p)
    assert len(b.ncu_launches) == 2


def test_duplicate_metric_rows_keep_the_first(tmp_path):
    text = ncu_csv_text([SynthKernel("k", counts={"fadd": 10})], layout="details")
    lines = text.splitlines()
    dup = next(ln for ln in lines if "dram__bytes.sum" in ln).replace('"0"\n', "")
    p = tmp_path / "dup.csv"
    p.write_text("\n".join(lines + [dup.replace(',"0"', ',"999"')]) + "\n", encoding="utf-8")
    b = load_trace(p)
    assert _metric(b, 0, "dram__bytes.sum") == 0.0
    assert any(w.code == "ncu_duplicate_metrics" for w in b.warnings)


# --------------------------------------------------------------------------- attach to nsys
def test_attach_ncu_adds_frames_and_keeps_nsys_gpus(tmp_path):
    p = write_ncu_csv(tmp_path / "k.csv", layout="raw", gpu_name="NVIDIA H100 80GB HBM3", junk=True)
    nsys_gpus = C.GPUS.validate(pd.DataFrame([dict(
        device_id=0, name="NVIDIA H100 80GB HBM3", chip_name="GH100", sm_count=132,
        clock_hz=1_980_000_000, memory_bandwidth_bytes_per_s=3.35e12, total_memory_bytes=80 << 30,
        cc_major=9, cc_minor=0, bus_location="0000:01:00.0")]))
    base = TraceBundle(meta=TraceMeta(path="r.sqlite", format="nsys-sqlite"), gpus=nsys_gpus)
    out = attach_ncu(base, p)
    assert out is not base and len(base.ncu_launches) == 0  # input not mutated
    assert out.meta.format == "nsys-sqlite"
    assert len(out.ncu_launches) == 8 and len(out.ncu_metrics) > 0
    assert out.gpus.iloc[0]["bus_location"] == "0000:01:00.0"
    assert out.meta.extra["ncu"]["ncu_layout"] == "raw"
    assert any(w.message.startswith("ncu: ") for w in out.warnings)


def test_attach_ncu_error_only_raises(tmp_path):
    p = write_ncu_csv(tmp_path / "err.csv", error_only=True)
    base = TraceBundle(meta=TraceMeta(path="r.sqlite", format="nsys-sqlite"))
    with pytest.raises(InputError, match="error code"):
        attach_ncu(base, p)


def test_values_are_float64_and_ids_int64(tmp_path):
    b = load_trace(write_ncu_csv(tmp_path / "d.csv"))
    assert b.ncu_metrics["value"].dtype == np.float64
    assert b.ncu_launches["launch_id"].dtype == np.int64
