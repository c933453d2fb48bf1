"""The engine's evaluation order and the what-ifs' re-runs: any dependency order gives the same
replay, an order that breaks an edge is never used, a cycle is still refused, and a what-if
that changes nothing is the base replay."""
from __future__ import annotations

from dataclasses import fields, replace
from pathlib import Path

import numpy as np
import pytest

from nsys_diag.analyses.replay import engine as E
from nsys_diag.analyses.replay import whatif as W
from nsys_diag.synth.replay_cases import REPLAY_CASES
from tests.analyses.replay.replay_helpers import case_path, replay_trace

SAMPLES = Path(__file__).resolve().parents[3] / "sample_traces"


@pytest.fixture(scope="module")
def windows(tmp_path_factory) -> list[W.StepWindow]:
    """The step windows (model + base replay) of every generated replay case and two samples."""
    folder = tmp_path_factory.mktemp("replay_engine")
    paths = [case_path(folder, name) for name in sorted(REPLAY_CASES)]
    paths += [SAMPLES / "worked_example.sqlite", SAMPLES / "launch_bound.sqlite"]
    got: list[W.StepWindow] = []
    real = W.price
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(W, "price", lambda w: (got.append(w), real(w))[1])
        for path in paths:
            replay_trace(path)
    assert len(got) >= len(paths)
    return got


def _same(a: E.Replayed, b: E.Replayed) -> bool:
    return all(np.array_equal(getattr(a, f.name), getattr(b, f.name))
               for f in fields(E.Replayed) if f.name != "order")


def test_kahns_order_and_the_captured_order_give_the_same_replay(windows):
    differ = 0
    for w in windows:
        m = w.model
        before, src, dst = E._edges(m)
        kahn = E._kahn(src, dst, m.n_ops)
        assert E._valid(kahn, src, dst, m.n_ops)
        differ += int(not np.array_equal(kahn, w.base.order))
        assert _same(E._evaluate(m, before, kahn), w.base)
    assert differ, "the orders compared are not all the same order"


def test_an_order_that_breaks_an_edge_is_not_used(windows):
    w = max(windows, key=lambda w: w.model.n_ops)
    backwards = w.base.order[::-1].copy()
    _, src, dst = E._edges(w.model)
    assert not E._valid(backwards, src, dst, w.model.n_ops)
    assert _same(E.replay_window(w.model, backwards), w.base)


def test_a_cycle_is_still_refused(windows):
    w = next(w for w in windows if (w.model.o_pred >= 0).any())
    m = w.model
    k = int(np.flatnonzero(m.o_pred >= 0)[0])
    xs = m.o_xs.copy()
    xs[m.o_pred[k]] = k  # the stream predecessor now also waits for its successor
    with pytest.raises(E.CyclicModel):
        E.replay_window(replace(m, o_xs=xs), w.base.order)


def test_a_what_if_that_changes_nothing_is_the_base_replay(windows):
    for w in windows:
        m = w.model
        assert W.rerun(w, h_gap=m.h_gap.copy(), t_call=m.t_call.copy()) is w.base
        if not m.h_gap.any():
            continue
        changed = W.rerun(w, h_gap=np.zeros_like(m.h_gap))
        assert changed is not w.base
        assert _same(changed, E.replay_window(replace(m, h_gap=np.zeros_like(m.h_gap))))


def test_removing_waits_keeps_the_base_order_valid(windows):
    w = next(w for w in windows if w.model.t_call.size)
    m = w.model
    fewer = replace(m, t_call=m.t_call[1:], t_op=m.t_op[1:])
    _, src, dst = E._edges(fewer)
    assert E._valid(w.base.order, src, dst, fewer.n_ops)
    assert _same(E.replay_window(fewer, w.base.order), E.replay_window(fewer))
