"""Generator of Nsight Compute CSVs with known answers (both layouts, every formatting quirk).

Importable, no pytest. Each :class:`SynthKernel` states per-launch instruction counts, bytes,
duration and SOL percentages, so the expected FLOPs / bytes / AI / bound are known exactly.
Knobs (all documented in NCU_CSV.md §1–§4, §9):

* ``layout``: ``"details"`` (long; ``header="old"`` = 2022/23 12-column header with ``Kernel
  Time``, ``"new"`` = Block/Grid/Device/CC columns) or ``"raw"`` (wide + units row);
* ``decimal_comma``: European locale (``1.234,56``); ``grouping``: thousands separators (details
  pages always group; raw pages do not, unless asked);
* ``auto_units``: ncu ``--print-units auto`` (``usecond``/``msecond``, ``Kbyte``/``Mbyte``/``Gbyte``,
  ``Kinst``/``Minst``, ``cycle/nsecond``) — values rounded to 2 decimals like ncu prints them;
* ``junk``: application output + ``==PROF==``/``==WARNING==`` lines around the table;
* ``drop_metrics`` / ``na_metrics``: leave metrics out / print them as ``n/a``;
* ``rules`` (+ ``ragged``): rule rows with empty metric cells, metric rows ending in a bare comma;
* ``use_labels``: Speed-of-Light/occupancy values under their display labels (``Duration``,
  ``Compute (SM) Throughput`` …) instead of raw metric names;
* ``gpu_name`` / ``device_attrs``: ``device__attribute_*`` metrics (display name, SMs, clocks);
* ``peak_metrics``: ``.peak_sustained`` metrics and memory clocks;
* ``error_only``: no CSV at all, just ncu's ``==PROF==``/``==ERROR==`` lines.
"""
from __future__ import annotations

import argparse
import csv
import io
from dataclasses import dataclass, field
from pathlib import Path

ERROR_ONLY_TEXT = (
    "==PROF== Connected to process 252579 (/usr/bin/python3.12)\n"
    "==PROF== Disconnected from process 252579\n"
    "==ERROR== The application returned an error code (1).\n"
)

_SASS = "sm__sass_thread_inst_executed_op_{}_pred_on.sum"
OPS = ("dadd", "dmul", "dfma", "fadd", "fmul", "ffma", "hadd", "hmul", "hfma")


@dataclass(frozen=True)
class SynthKernel:
    """One kernel, launched ``launches`` times with identical per-launch metrics."""

    name: str
    launches: int = 1
    duration_ns: float = 10_000.0
    counts: dict[str, float] = field(default_factory=dict)  # SASS op -> thread instructions
    dram_bytes: float = 0.0
    l2_bytes: float = 0.0
    l1_bytes: float = 0.0
    sm_pct: float = 10.0
    mem_pct: float = 10.0
    waves: float = 4.0
    occupancy: float = 50.0
    sm_clock_hz: float = 1.41e9
    tensor_pipe_inst: float | None = 0.0  # sm__inst_executed_pipe_tensor.sum
    tensor_pipe_pct: float | None = None  # sm__pipe_tensor_cycles_active…pct
    tensor_ops_fp16: float | None = None  # sm__ops_path_tensor_src_fp16_dst_fp32.sum
    block: tuple[int, int, int] = (256, 1, 1)
    grid: tuple[int, int, int] = (1024, 1, 1)
    extra_metrics: dict[str, tuple[float, str]] = field(default_factory=dict)
    """More metrics of this kernel: raw name -> (value, kind), kind as in the units table
    (``"%"``, ``"ns"``, ``"inst"``, ``""`` …) — e.g. a tensor-pipe utilisation."""

    # ---- known answers (per launch) ----------------------------------------------------
    def c(self, op: str) -> float:
        return float(self.counts.get(op, 0.0))

    @property
    def flops_fp64(self) -> float:
        return self.c("dadd") + self.c("dmul") + 2 * self.c("dfma")

    @property
    def flops_fp32(self) -> float:
        return self.c("fadd") + self.c("fmul") + 2 * self.c("ffma")

    @property
    def flops_fp16(self) -> float:
        return 2 * self.c("hadd") + 2 * self.c("hmul") + 4 * self.c("hfma")

    @property
    def cycles(self) -> float:
        return self.duration_ns * 1e-9 * self.sm_clock_hz


def demo_kernels() -> list[SynthKernel]:
    """Five kernels, one per bound class, with round numbers (used by tests and samples)."""
    return [
        # compute-bound FP32 GEMM: 1e9 FLOP, 1e7 B DRAM, 100 µs -> 10 TFLOP/s, AI 100
        SynthKernel("void gemm_kernel<float, 128>(const float *, const float *, float *, int)",
                    launches=2, duration_ns=100_000, counts={"ffma": 4.5e8, "fadd": 1e8},
                    dram_bytes=1e7, l2_bytes=4e7, l1_bytes=2e8, sm_pct=85.0, mem_pct=40.0,
                    waves=8.0, occupancy=45.0),
        # memory-bound elementwise add: 1e6 FLOP, 1.2e7 B, 10 µs -> 1.2 TB/s, AI 1/12
        SynthKernel("void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>"
                    "(int, at::native::AddFunctor<float>)", launches=3, duration_ns=10_000,
                    counts={"fadd": 1e6}, dram_bytes=1.2e7, l2_bytes=1.2e7, l1_bytes=1.2e7,
                    sm_pct=20.0, mem_pct=90.0, waves=16.0, occupancy=80.0),
        # under-occupied: tiny grid, both SOL < 60, waves < 1
        SynthKernel("tiny_kernel", launches=1, duration_ns=4_000, counts={"fadd": 1000},
                    dram_bytes=4096, l2_bytes=8192, l1_bytes=8192, sm_pct=2.0, mem_pct=3.0,
                    waves=0.1, occupancy=10.0, grid=(4, 1, 1)),
        # latency-bound: both < 60, enough waves
        SynthKernel("void reduce_kernel<512>(float *, int)", launches=1, duration_ns=20_000,
                    counts={"fadd": 5e6, "ffma": 1e6}, dram_bytes=4e6, l2_bytes=8e6,
                    l1_bytes=8e6, sm_pct=30.0, mem_pct=40.0, waves=3.0, occupancy=30.0),
        # tensor-core GEMM (cuBLAS xmma): compute-bound by SOL, tensor ops 2e9
        SynthKernel("sm80_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x32_stage4_warpsize2x2x1"
                    "_tensor16x8x16_kernel", launches=1, duration_ns=50_000,
                    counts={"ffma": 1e5}, dram_bytes=2e7, l2_bytes=6e7, l1_bytes=1e8,
                    sm_pct=72.0, mem_pct=30.0, waves=2.0, occupancy=25.0,
                    tensor_pipe_inst=2e9 / 4096, tensor_pipe_pct=55.0, tensor_ops_fp16=2e9),
    ]


# ---------------------------------------------------------------------------------- formatting
def _fmt_number(v: float, *, decimal_comma: bool, grouping: bool, decimals: int | None = None) -> str:
    if decimals is None:
        decimals = 0 if float(v).is_integer() else 2
    s = f"{v:,.{decimals}f}" if grouping else f"{v:.{decimals}f}"
    if decimal_comma:
        s = s.replace(",", "\x00").replace(".", ",").replace("\x00", ".")
    return s


_AUTO = {
    "byte": (("Gbyte", 1e9), ("Mbyte", 1e6), ("Kbyte", 1e3), ("byte", 1.0)),
    "inst": (("Ginst", 1e9), ("Minst", 1e6), ("Kinst", 1e3), ("inst", 1.0)),
    "ns": (("second", 1e9), ("msecond", 1e6), ("usecond", 1e3), ("nsecond", 1.0)),
    "cycle/s": (("cycle/nsecond", 1e9),),
}


def _with_unit(value: float, kind: str, *, auto: bool, layout: str) -> tuple[str, float, bool]:
    """(unit string, value in that unit, rounded to 2 decimals?) for a base-unit value."""
    if auto and kind in _AUTO:
        for unit, f in _AUTO[kind]:
            if abs(value) >= f or f == _AUTO[kind][-1][1]:
                scaled = value / f
                return unit, scaled, f != 1.0
    base = {"ns": "nsecond" if layout == "details" else "ns", "cycle/s": "cycle/second"}
    return base.get(kind, kind), value, False


_LABELS = {  # raw name -> (section, label) for use_labels
    "gpu__time_duration.sum": ("GPU Speed Of Light Throughput", "Duration"),
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": ("GPU Speed Of Light Throughput",
                                                         "Compute (SM) Throughput"),
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": (
        "GPU Speed Of Light Throughput", "Memory Throughput"),
    "sm__warps_active.avg.pct_of_peak_sustained_active": ("Occupancy", "Achieved Occupancy"),
    "launch__waves_per_multiprocessor": ("Launch Statistics", "Waves Per SM"),
}


def _metrics_for(k: SynthKernel, *, gpu_name: str | None, device_attrs: dict | None,
                 peak_metrics: dict | None) -> list[tuple[str, float | str, str]]:
    """(raw metric name, base value or string, kind) for one launch of ``k``."""
    rows: list[tuple[str, float | str, str]] = [
        ("gpu__time_duration.sum", k.duration_ns, "ns"),
        ("sm__cycles_elapsed.avg", k.cycles, "cycle"),
        ("sm__cycles_elapsed.avg.per_second", k.sm_clock_hz, "cycle/s"),
        *((_SASS.format(op), k.c(op), "inst") for op in OPS),
        ("dram__bytes.sum", k.dram_bytes, "byte"),
        ("lts__t_bytes.sum", k.l2_bytes, "byte"),
        ("l1tex__t_bytes.sum", k.l1_bytes, "byte"),
        ("sm__throughput.avg.pct_of_peak_sustained_elapsed", k.sm_pct, "%"),
        ("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", k.mem_pct, "%"),
        ("launch__waves_per_multiprocessor", k.waves, ""),
        ("sm__warps_active.avg.pct_of_peak_sustained_active", k.occupancy, "%"),
        ("launch__grid_size", float(k.grid[0] * k.grid[1] * k.grid[2]), ""),
        ("launch__block_size", float(k.block[0] * k.block[1] * k.block[2]), ""),
    ]
    if k.tensor_pipe_inst is not None:
        rows.append(("sm__inst_executed_pipe_tensor.sum", k.tensor_pipe_inst, "inst"))
    if k.tensor_pipe_pct is not None:
        rows.append(("sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
                     k.tensor_pipe_pct, "%"))
    if k.tensor_ops_fp16 is not None:
        rows.append(("sm__ops_path_tensor_src_fp16_dst_fp32.sum", k.tensor_ops_fp16, ""))
    rows += [(name, float(value), kind) for name, (value, kind) in k.extra_metrics.items()]
    if gpu_name:
        rows.append(("device__attribute_display_name", gpu_name, "str"))
    for name, value in (device_attrs or {}).items():
        rows.append((name, float(value), ""))
    for name, (value, unit) in (peak_metrics or {}).items():
        rows.append((name, float(value), unit))
    return rows


def metric_names(k: SynthKernel) -> list[str]:
    """The raw metric names a launch of ``k`` prints (no device attributes or peak metrics) —
    e.g. to keep only a ``--metrics`` list by dropping the rest."""
    return [name for name, _, _ in _metrics_for(k, gpu_name=None, device_attrs=None,
                                                 peak_metrics=None)]


@dataclass(frozen=True)
class _Opts:
    """The quirks of one CSV (see :func:`ncu_csv_text`)."""

    layout: str
    header: str
    decimal_comma: bool
    grouping: bool
    auto_units: bool
    use_labels: bool
    rules: bool
    ragged: bool
    junk: bool = False
    drop: frozenset = frozenset()
    na: frozenset = frozenset()
    device: int = 0
    cc: str = "8.0"
    metrics_kw: dict = field(default_factory=dict)  # gpu_name, device_attrs, peak_metrics


def _cell(value: float | str, kind: str, o: _Opts) -> tuple[str, str]:
    """(unit cell, value cell) as ncu would print them."""
    if kind == "str":
        return "", str(value)
    unit, v, rounded = _with_unit(float(value), kind, auto=o.auto_units, layout=o.layout)
    decimals = 2 if rounded else None
    return unit, _fmt_number(v, decimal_comma=o.decimal_comma, grouping=o.grouping,
                             decimals=decimals)


def _identity(k: SynthKernel, launch_id: int, o: _Opts, device: int, cc: str) -> list[str]:
    base = [str(launch_id), "4242", "python3.12", "127.0.0.1", k.name]
    if o.header == "old":
        return base + ["2023-May-09 15:13:00", "1", "7"]
    return base + ["1", "7", f"({k.block[0]}, {k.block[1]}, {k.block[2]})",
                   f"({k.grid[0]}, {k.grid[1]}, {k.grid[2]})", str(device), cc]


def _identity_header(o: _Opts) -> list[str]:
    base = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name"]
    if o.header == "old":
        return base + ["Kernel Time", "Context", "Stream"]
    return base + ["Context", "Stream", "Block Size", "Grid Size", "Device", "CC"]


def _csv_line(fields: list[str]) -> str:
    buf = io.StringIO()
    csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\n").writerow(fields)
    return buf.getvalue()


def ncu_csv_text(kernels: list[SynthKernel], *, layout: str = "details", header: str = "new",
                 decimal_comma: bool = False, grouping: bool | None = None,
                 auto_units: bool = False, junk: bool = False, drop_metrics=(), na_metrics=(),
                 error_only: bool = False, gpu_name: str | None = None,
                 device_attrs: dict | None = None, peak_metrics: dict | None = None,
                 rules: bool = False, ragged: bool = False, use_labels: bool = False,
                 device: int = 0, cc: str = "8.0") -> str:
    """The CSV text ncu would print for ``kernels`` with the given quirks."""
    if error_only:
        return ERROR_ONLY_TEXT
    if layout not in ("details", "raw"):
        raise ValueError(layout)
    o = _Opts(layout, header, decimal_comma,
              (layout == "details") if grouping is None else grouping,
              auto_units, use_labels, rules, ragged, junk, frozenset(drop_metrics),
              frozenset(na_metrics), device, cc,
              {"gpu_name": gpu_name, "device_attrs": device_attrs, "peak_metrics": peak_metrics})
    lines: list[str] = []
    if junk:
        lines += ["step 0 loss 2.3025 (application output)",
                  "==PROF== Connected to process 4242 (/usr/bin/python3.12)",
                  "==WARNING== Found outstanding GPU clock reset, trying to revert...Success.",
                  '==PROF== Profiling "gemm_kernel" - 0: 0%....50%....100% - 38 passes',
                  "==PROF== Disconnected from process 4242"]
    launches = [k for k in kernels for _ in range(k.launches)]
    lines += _details_lines(launches, o) if layout == "details" else _raw_lines(launches, o)
    if junk:
        lines.append("==PROF== Report: done")
    return "\n".join(lines) + "\n"


def _details_lines(launches: list[SynthKernel], o: _Opts) -> list[str]:
    """The details page: one row per (launch, metric), optional rule rows and rule columns."""
    rules, header = o.rules, o.header
    hdr = _identity_header(o) + ["Section Name", "Metric Name", "Metric Unit", "Metric Value"]
    rule_cols = ["Rule Name", "Rule Type", "Rule Description"]
    if rules and header == "new":
        rule_cols += ["Estimated Speedup Type", "Estimated Speedup"]
    if rules:
        hdr += rule_cols
    lines = [_csv_line(hdr).rstrip("\n")]
    for launch_id, k in enumerate(launches):
        ident = _identity(k, launch_id, o, o.device, o.cc)
        for name, value, kind in _metrics_for(k, **o.metrics_kw):
            if name in o.drop:
                continue
            section, label = "Command line profiler metrics", name
            if o.use_labels and name in _LABELS:
                section, label = _LABELS[name]
            unit, cell = _cell(value, kind, o)
            if name in o.na:
                cell = "n/a"
            row = ident + [section, label, unit, cell]
            if rules and not o.ragged:
                row += [""] * len(rule_cols)
            line = _csv_line(row).rstrip("\n")
            lines.append(line + ("," if rules and o.ragged else ""))
        if rules:
            desc = (f"The grid for this launch is configured to execute only {k.grid[0]} "
                    "blocks, which is less than the GPU's 108 multiprocessors.")
            rr = ident + ["LaunchStats", "", "", "", "LaunchConfiguration", "WRN", desc]
            if header == "new":
                rr += ["global", "12.5"]
            lines.append(_csv_line(rr).rstrip("\n"))
        if o.junk and launch_id == 0:
            lines.append("step 1 loss 1.9 (application output inside the table)")
    return lines


def _raw_lines(launches: list[SynthKernel], o: _Opts) -> list[str]:
    """The raw page: one column per metric, a units row, one row per launch."""
    per_launch = [(k, {n: (v, kind) for n, v, kind in _metrics_for(k, **o.metrics_kw)
                       if n not in o.drop}) for k in launches]
    names = sorted({n for _, ms in per_launch for n in ms})
    # one unit per column (the raw page has a single units row): chosen from the first
    # launch that has the metric, then every launch is printed in that unit
    col_unit: dict[str, tuple[str, float, bool]] = {}
    for _, ms in per_launch:
        for n, (v, kind) in ms.items():
            if n not in col_unit and kind != "str":
                unit, scaled, rounded = _with_unit(float(v), kind, auto=o.auto_units,
                                                   layout=o.layout)
                col_unit[n] = (unit, float(v) / scaled if scaled else 1.0, rounded)
    lines = [_csv_line(_identity_header(o) + names).rstrip("\n"),
             _csv_line([""] * len(_identity_header(o)) +
                       [col_unit.get(n, ("", 1.0, False))[0] for n in names]).rstrip("\n")]
    for launch_id, (k, ms) in enumerate(per_launch):
        cells = []
        for n in names:
            if n not in ms:
                cells.append("")
            elif n in o.na:
                cells.append("n/a")
            elif ms[n][1] == "str":
                cells.append(str(ms[n][0]))
            else:
                _, f, rounded = col_unit[n]
                cells.append(_fmt_number(float(ms[n][0]) / f, decimal_comma=o.decimal_comma,
                                         grouping=o.grouping, decimals=2 if rounded else None))
        lines.append(_csv_line(_identity(k, launch_id, o, o.device, o.cc) + cells).rstrip("\n"))
    return lines


def write_ncu_csv(path: str | Path, kernels: list[SynthKernel] | None = None, **kw) -> Path:
    """Write :func:`ncu_csv_text` to ``path`` (UTF-8, LF); returns the path."""
    p = Path(path)
    p.write_text(ncu_csv_text(kernels if kernels is not None else demo_kernels(), **kw),
                 encoding="utf-8", newline="\n")
    return p


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m nsys_diag.synth.ncu",
                                 description="Write demo ncu CSVs (both layouts) to a folder.")
    ap.add_argument("outdir")
    args = ap.parse_args(argv)
    out = Path(args.outdir)
    out.mkdir(parents=True, exist_ok=True)
    write_ncu_csv(out / "ncu_demo_details.csv", layout="details", junk=True,
                  gpu_name="NVIDIA A100-SXM4-40GB")
    write_ncu_csv(out / "ncu_demo_raw.csv", layout="raw", gpu_name="NVIDIA A100-SXM4-40GB")
    (out / "ncu_error_only.csv").write_text(ERROR_ONLY_TEXT, encoding="utf-8")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
