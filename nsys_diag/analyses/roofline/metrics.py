"""Roofline metric access: the ncu metrics a roofline reads, by name and unit, per launch
(see ``analyses/roofline/analysis.py`` for the formulas; NCU_CSV.md §6–§7)."""
from __future__ import annotations


import numpy as np
import pandas as pd



# ---------------------------------------------------------------------------------- metric access
def _key(metric: pd.Series, unit: pd.Series) -> pd.Series:
    """Raw metric names as they are; display labels (no '__') qualified by unit: 'Duration [s]'."""
    is_label = ~metric.str.contains("__", regex=False)
    return metric.where(~is_label, metric + " [" + unit + "]")


def wide_metrics(ncu_metrics: pd.DataFrame, launch_ids: pd.Index) -> pd.DataFrame:
    """launch_id × metric-key float table (only the metrics the roofline can use)."""
    if ncu_metrics is None or ncu_metrics.empty:
        return pd.DataFrame(index=launch_ids)
    m = ncu_metrics
    metric = m["metric"] if isinstance(m["metric"].dtype, pd.CategoricalDtype) \
        else m["metric"].astype("category")
    cats = pd.Index(metric.cat.categories.astype(str))
    useful = cats[cats.str.startswith(("sm__", "smsp__", "gpu__", "gpc__", "dram__", "lts__",
                                       "l1tex__", "launch__", "device__"))
                  | ~cats.str.contains("__", regex=False)]
    sub = m[metric.isin(useful)]
    if sub.empty:
        return pd.DataFrame(index=launch_ids)
    keys = _key(sub["metric"].astype(str), sub["unit"].astype(str))
    sub = pd.DataFrame({"launch_id": sub["launch_id"].to_numpy(), "key": keys.to_numpy(),
                        "value": sub["value"].to_numpy(dtype=np.float64)})
    sub = sub.drop_duplicates(["launch_id", "key"], keep="first")
    w = sub.pivot(index="launch_id", columns="key", values="value")
    return w.reindex(launch_ids)


class MetricTable:
    """Coalescing accessor over the wide table (``wide_metrics``): ``get(*names)`` is the first
    present value per launch among ``names`` (NaN where none is)."""

    def __init__(self, w: pd.DataFrame):
        self.w = w
        self.nan = pd.Series(np.nan, index=w.index, dtype=np.float64)

    def has(self, name: str) -> bool:
        return name in self.w.columns and bool(self.w[name].notna().any())

    def get(self, *names: str) -> pd.Series:
        out = self.nan
        for n in names:
            if n in self.w.columns:
                out = out.fillna(self.w[n].astype(np.float64))
        return out

    def first_present(self, *names: str) -> str | None:
        return next((n for n in names if self.has(n)), None)


SM_CLOCK = ("sm__cycles_elapsed.avg.per_second", "gpc__cycles_elapsed.avg.per_second",
            "smsp__cycles_elapsed.avg.per_second", "SM Frequency [cycle/s]")
"""The SM clock (cycle/s), first present wins."""
CYCLE_PAIRS = (("sm__cycles_elapsed.avg", "sm__cycles_elapsed.avg.per_second"),
               ("smsp__cycles_elapsed.avg", "smsp__cycles_elapsed.avg.per_second"),
               ("gpc__cycles_elapsed.max", "gpc__cycles_elapsed.avg.per_second"),
               ("Elapsed Cycles [cycle]", "SM Frequency [cycle/s]"))
"""(cycles, clock) pairs whose ratio is a launch's duration in s when ncu gave none."""
SM_PCT = ("sm__throughput.avg.pct_of_peak_sustained_elapsed", "Compute (SM) Throughput [%]",
          "SM Throughput [%]", "SOL SM [%]", "SM [%]")
"""SM throughput, % of peak (raw name, then the display labels of ncu versions)."""
MEM_PCT = ("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
           "Memory Throughput [%]", "SOL Memory [%]", "Memory [%]")
"""Memory throughput, % of peak."""
WAVES = ("launch__waves_per_multiprocessor", "Waves Per SM []")
"""Waves per SM of a launch."""
OCCUPANCY = ("sm__warps_active.avg.pct_of_peak_sustained_active", "Achieved Occupancy [%]")
"""Achieved occupancy, %."""
TENSOR_PCT_STEMS = (
    "sm__pipe_tensor_cycles_active", "sm__pipe_tensor_cycles_active_v2",
    "sm__pipe_tensor_op_hmma_cycles_active", "sm__pipe_tensor_op_hmma_cycles_active_v2",
    "sm__pipe_tensor_op_imma_cycles_active", "sm__pipe_tensor_op_imma_cycles_active_v2",
    "sm__pipe_tensor_op_dmma_cycles_active", "sm__pipe_tensor_op_gmma_cycles_active",
    "sm__pipe_tensor_subpipe_hmma_cycles_active", "sm__pipe_tensor_subpipe_imma_cycles_active",
    "sm__pipe_tensor_subpipe_dmma_cycles_active", "sm__pipe_tc_cycles_active",
    "sm__inst_executed_pipe_tensor_op_hmma", "sm__inst_executed_pipe_tensor_op_hmma_v2",
    "sm__inst_executed_pipe_tensor_op_gmma", "sm__inst_executed_pipe_tensor_subpipe_hmma",
    "sm__inst_executed_pipe_tc",
)
"""Stems of the Tensor Core pipe-utilisation metrics (% of peak), by GPU generation."""
MMA_INST = ("sm__inst_executed_pipe_tensor_op_hmma.sum", "sm__inst_executed_pipe_tensor_op_hmma_v2.sum",
            "sm__inst_executed_pipe_tensor_op_imma.sum", "sm__inst_executed_pipe_tensor_op_imma_v2.sum",
            "sm__inst_executed_pipe_tensor_op_dmma.sum", "sm__inst_executed_pipe_tensor_op_gmma.sum",
            "sm__inst_executed_pipe_tensor_subpipe_hmma.sum",
            "sm__inst_executed_pipe_tensor_subpipe_imma.sum",
            "sm__inst_executed_pipe_tensor_subpipe_dmma.sum", "sm__inst_executed_pipe_tc.sum")
"""Tensor Core MMA instruction counters, one per pipe/precision family (summed: pure MMA)."""
TENSOR_AGG_INST = "sm__inst_executed_pipe_tensor.sum"
"""All Tensor-pipe instructions (one aggregate count)."""

FLOP_WEIGHTS = {  # precision -> ((op, weight), ...): ncu's roofline weights (NCU_CSV.md §6.2, §7)
    "fp64": (("dadd", 1.0), ("dmul", 1.0), ("dfma", 2.0)),
    "fp32": (("fadd", 1.0), ("fmul", 1.0), ("ffma", 2.0)),
    "fp16": (("hadd", 2.0), ("hmul", 2.0), ("hfma", 4.0)),
}
PEAK_FMA = {"fp64": ("dfma", 2.0), "fp32": ("ffma", 2.0), "fp16": ("hfma", 4.0)}
"""precision → (the FMA op whose peak rate is the precision's peak, FLOP per instruction)."""


def sass_count(m: MetricTable, op: str, t: pd.Series, smsp_clock: pd.Series) -> pd.Series:
    """Total thread instructions of one SASS op (sm__/smsp__ totals, per-second × ``t`` in s, or
    per-cycle × ``smsp_clock`` in cycle/s × ``t``)."""
    stem = f"sass_thread_inst_executed_op_{op}_pred_on"
    total = m.get(f"sm__{stem}.sum", f"smsp__{stem}.sum")
    total = total.fillna(m.get(f"sm__{stem}.sum.per_second", f"smsp__{stem}.sum.per_second") * t)
    per_cycle = m.get(f"smsp__{stem}.sum.per_cycle_elapsed", f"sm__{stem}.sum.per_cycle_elapsed")
    return total.fillna(per_cycle * smsp_clock * t)


def level_bytes(m: MetricTable, level: str, t: pd.Series) -> pd.Series:
    """Bytes moved per launch at memory ``level`` (``dram``, ``l2``, else L1): the byte total,
    else its rate × ``t`` (duration in s), else active cycles × the bytes each moves."""
    if level == "dram":
        out = m.get("dram__bytes.sum")
        out = out.fillna(m.get("dram__bytes_read.sum") + m.get("dram__bytes_write.sum"))
        out = out.fillna(m.get("dram__bytes.sum.per_second", "Memory Throughput [byte/s]") * t)
        return out
    if level == "l2":
        out = m.get("lts__t_bytes.sum")
        out = out.fillna(m.get("lts__t_bytes.sum.per_second") * t)
        return out.fillna(32.0 * m.get("lts__lts2xbar_cycles_active.sum"))
    out = m.get("l1tex__t_bytes.sum")
    out = out.fillna(m.get("l1tex__t_bytes.sum.per_second") * t)
    return out.fillna(128.0 * m.get("l1tex__lsu_writeback_active_mem_lgds.sum",
                                    "l1tex__lsu_writeback_active_mem_lg.sum",
                                    "l1tex__lsu_writeback_active.sum"))


def _tensor_precision(stem: str) -> str:
    """'src_fp16_dst_fp32_sparsity_off' → 'tensor_fp16' (classified by the source type)."""
    src = stem.split("src_", 1)[1] if "src_" in stem else stem
    src = src.split("_dst", 1)[0].split("_sparsity", 1)[0]
    for token, key in (("fp64", "tensor_fp64"), ("tf32", "tensor_tf32"), ("fp8", "tensor_fp8"),
                       ("fp4", "tensor_fp8"), ("fp6", "tensor_fp8"), ("int", "tensor_int8"),
                       ("bf16", "tensor_fp16"), ("fp16", "tensor_fp16")):
        if token in src:
            return key
    return "tensor_other"


def tensor_op_counts(m: MetricTable, t: pd.Series, clock: pd.Series
                     ) -> tuple[dict[str, pd.Series], dict[str, pd.Series]]:
    """Tensor OP counts and peaks (OP/s) by precision from ``sm__ops_path_tensor_*`` (``t``:
    per-launch duration in s, ``clock``: SM clock in cycle/s)."""
    cols = [c for c in m.w.columns if c.startswith("sm__ops_path_tensor_")]
    stems = sorted({c[len("sm__ops_path_tensor_"):].split(".", 1)[0] for c in cols})
    aggregate = [s for s in stems if s.startswith("src_")]
    stems = aggregate or [s for s in stems if s.startswith("op_")]  # never both: no double count
    ops: dict[str, pd.Series] = {}
    peaks: dict[str, pd.Series] = {}
    for stem in stems:
        base = f"sm__ops_path_tensor_{stem}.sum"
        v = m.get(base).fillna(m.get(f"{base}.per_second") * t)
        v = v.fillna(m.get(f"{base}.per_cycle_elapsed") * clock * t)
        key = _tensor_precision(stem)
        if v.notna().any():
            ops[key] = ops[key].add(v, fill_value=0) if key in ops else v
        pk = m.get(f"{base}.peak_sustained") * clock
        if pk.notna().any():
            peaks[key] = peaks[key].add(pk, fill_value=0) if key in peaks else pk
    return ops, peaks


