"""Forward/backward phases inferred from a PyTorch profiler trace's host operators
(analyses/steps/operator_phases.py)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

import handframes as hf
from handframes import US, TID_MAIN
from nsys_diag.analyses.steps.detection import analyze_steps
from nsys_diag.analyses.steps.operator_phases import (INFERRED_BACKWARD, INFERRED_FORWARD,
                                                      with_operator_phases)
from nsys_diag.analyses.steps.phases import analyze_phases, canonical_phase
from nsys_diag.app.analyze import analyze_path
from nsys_diag.model import contracts as C

AUTOGRAD_TID = TID_MAIN + 1
KINETO = Path(__file__).parents[2] / "loaders" / "kineto_traces"


def _steps_nvtx(extra=()):
    """Two 1 ms ProfilerSteps, each with a zero_grad range at its start (its own ops inside)
    and an optimizer range at its end."""
    rows = []
    for i, t in enumerate((0, 1000 * US)):
        rows += [dict(text=f"ProfilerStep#{i + 1}", start_ns=t, end_ns=t + 1000 * US),
                 dict(text="Optimizer.zero_grad#SGD.zero_grad", start_ns=t, end_ns=t + 50 * US),
                 dict(text="Optimizer.step#SGD.step", start_ns=t + 900 * US,
                      end_ns=t + 980 * US)]
    return hf.nvtx(rows + list(extra))


def _cpu_ops():
    """Per step: an op inside zero_grad, forward ops on the main thread from 100 to 400 µs,
    autograd engine ops on their own thread from 450 to 850 µs (one nested op), an op inside
    the optimizer range."""
    rows = []
    for t in (0, 1000 * US):
        rows += [dict(text="aten::zero_", start_ns=t + 10 * US, end_ns=t + 40 * US),
                 dict(text="aten::linear", start_ns=t + 100 * US, end_ns=t + 300 * US),
                 dict(text="aten::mse_loss", start_ns=t + 320 * US, end_ns=t + 400 * US),
                 dict(text="autograd::engine::evaluate_function: MseLossBackward0",
                      start_ns=t + 450 * US, end_ns=t + 600 * US, global_tid=AUTOGRAD_TID),
                 dict(text="aten::mse_loss_backward", start_ns=t + 460 * US,
                      end_ns=t + 590 * US, global_tid=AUTOGRAD_TID),
                 dict(text="autograd::engine::evaluate_function: AddmmBackward0",
                      start_ns=t + 700 * US, end_ns=t + 850 * US, global_tid=AUTOGRAD_TID),
                 dict(text="aten::_foreach_add_", start_ns=t + 910 * US, end_ns=t + 950 * US)]
    return hf.nvtx(rows).assign(domain="cpu_op")


def test_the_inferred_names_map_to_their_canonical_phases():
    assert canonical_phase(INFERRED_FORWARD) == "forward"
    assert canonical_phase(INFERRED_BACKWARD) == "backward"


def test_forward_and_backward_spans_per_step():
    nvtx = _steps_nvtx()
    steps = analyze_steps(nvtx, C.KERNELS.empty())
    out, steps2 = with_operator_phases(nvtx, _cpu_ops(), steps)
    added = out.loc[out["text"].astype(str).isin([INFERRED_FORWARD, INFERRED_BACKWARD])]
    got = sorted(zip(added["text"].astype(str), added["start_ns"] // US, added["end_ns"] // US))
    # forward: the main thread's ops outside zero_grad, up to the first autograd op;
    # backward: the autograd engine ops' span
    assert got == [(INFERRED_BACKWARD, 450, 850), (INFERRED_BACKWARD, 1450, 1850),
                   (INFERRED_FORWARD, 100, 400), (INFERRED_FORWARD, 1100, 1400)]
    assert (added["global_tid"] == TID_MAIN).all()
    # the step mask follows the rows: the same step ranges, in the new order
    assert list(out["text"].astype(str)[steps2.is_step_row]) == ["ProfilerStep#1", "ProfilerStep#2"]
    assert np.all(np.diff(out["start_ns"].to_numpy()) >= 0)


def test_the_phase_breakdown_reads_the_inferred_ranges():
    nvtx, steps = with_operator_phases(_steps_nvtx(), _cpu_ops(),
                                       analyze_steps(_steps_nvtx(), C.KERNELS.empty()))
    phases = analyze_phases(nvtx, steps, C.KERNELS.empty(), {})
    share: dict[str, float] = {}
    for r in phases.rows:
        share[r.canonical] = round(share.get(r.canonical, 0) + r.share, 3)
    assert share == {"optimizer": 0.13, "forward": 0.3, "backward": 0.4, "other": 0.17}


def test_a_forward_op_starting_after_backward_ends_stays_other():
    late = hf.nvtx([dict(text="aten::item", start_ns=870 * US, end_ns=890 * US)]).assign(
        domain="cpu_op")
    ops = C.NVTX.validate(pd.concat([_cpu_ops(), late], ignore_index=True))
    nvtx, _ = with_operator_phases(_steps_nvtx(), ops,
                                   analyze_steps(_steps_nvtx(), C.KERNELS.empty()))
    fwd = nvtx.loc[nvtx["text"].astype(str) == INFERRED_FORWARD]
    assert fwd["end_ns"].iloc[0] == 400 * US


def test_without_autograd_ops_the_forward_spans_the_step_thread_ops():
    ops = _cpu_ops()
    ops = ops.loc[~ops["text"].astype(str).str.startswith("autograd::")
                  & (ops["global_tid"] == TID_MAIN)]
    nvtx, _ = with_operator_phases(_steps_nvtx(), ops,
                                   analyze_steps(_steps_nvtx(), C.KERNELS.empty()))
    names = nvtx["text"].astype(str)
    assert not (names == INFERRED_BACKWARD).any()
    fwd = nvtx.loc[names == INFERRED_FORWARD]
    # outside zero_grad and the optimizer range: 100 µs to 400 µs
    assert list(zip(fwd["start_ns"] // US, fwd["end_ns"] // US)) == [(100, 400), (1100, 1400)]


def test_user_ranges_naming_a_pass_win():
    nvtx = _steps_nvtx([dict(text="my_forward", start_ns=100 * US, end_ns=400 * US)])
    steps = analyze_steps(nvtx, C.KERNELS.empty())
    out, steps2 = with_operator_phases(nvtx, _cpu_ops(), steps)
    assert out is nvtx and steps2 is steps


def test_no_host_operators_no_change():
    nvtx = _steps_nvtx()
    steps = analyze_steps(nvtx, C.KERNELS.empty())
    for ops in (None, C.NVTX.empty()):
        out, steps2 = with_operator_phases(nvtx, ops, steps)
        assert out is nvtx and steps2 is steps


def test_a_real_unlabelled_trace_gets_forward_and_backward():
    """HTA's MI250 test trace: ProfilerStep and Optimizer.step ranges only; its autograd engine
    ops run from 1.41 to 8.92 ms of the 9.29 ms step."""
    res = analyze_path(str(KINETO / "hta_mi250_rocm.json.gz"))
    rows = {r["canonical"]: r for r in res["phases"]}
    assert {"forward", "backward", "optimizer"} <= set(rows)
    assert rows["backward"]["name"] == INFERRED_BACKWARD
    assert 0.75 < rows["backward"]["share"] < 0.85
    assert 0.10 < rows["forward"]["share"] < 0.18
