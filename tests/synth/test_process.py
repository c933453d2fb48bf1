"""The timing model (nsys_diag.synth.process / timeline / events): FIFO streams, launch latency,
phases tiling steps, launch threads, host syncs — on written files and on the builder's seams."""
from __future__ import annotations


import numpy as np
import pytest

from nsys_diag import synth
from nsys_diag.synth import (
    MS, US, KernelSpec, PhaseSpec, Scenario, SyncSpec)
from synth_sink import MASK_PID, nsys_ranges, open_ro, query, write_sink


@pytest.fixture(scope="module")
def sink(tmp_path_factory):
    """kitchen_sink written in every schema variant: {schema: path}."""
    return write_sink(tmp_path_factory.mktemp("sink"))


def test_streams_run_fifo_and_launch_latency_is_realistic(sink):
    con = open_ro(sink["2024.6"])
    rows = query(con, """SELECT k.globalPid, k.streamId, k.start, k.end, k.start - r.start
                      FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN CUPTI_ACTIVITY_KIND_RUNTIME r
                        ON r.correlationId = k.correlationId AND k.globalPid = (r.globalTid & ?)
                      ORDER BY 1, 2, 3""", MASK_PID)
    a = np.array(rows, dtype=np.int64)
    same = (a[1:, 0] == a[:-1, 0]) & (a[1:, 1] == a[:-1, 1])
    assert (a[1:, 2][same] >= a[:-1, 3][same]).all()  # no overlap on one stream
    assert (a[:, 3] > a[:, 2]).all()
    assert (a[:, 4] >= 5 * US).all()  # GPU start >= call start + latency
    assert ((a[:, 2] % 1000) != 0).any()  # not all on a µs grid


def test_steps_and_phases_tile_exactly_in_the_worked_example(tmp_path):
    con = open_ro(synth.write_preset(tmp_path / "w.sqlite", "worked_example"))
    steps = sorted(r for r in nsys_ranges(con) if r[2].startswith("train_step_"))
    assert [r[2] for r in steps] == [f"train_step_{i}" for i in range(11)]
    assert steps[0][0] > 1_000_000_000  # real exports never start at 0
    assert steps[0][1] - steps[0][0] > 800 * MS  # warm-up
    for s in steps[1:]:
        assert s[1] - s[0] == 800 * MS
    want = [("data_loading", 420), ("forward", 180), ("backward", 150), ("optimizer_step", 30),
            ("logging", 20)]
    phases = sorted(r for r in nsys_ranges(con) if not r[2].startswith("train_step_"))
    for s in steps[1:]:
        inside = [p for p in phases if s[0] <= p[0] and p[1] <= s[1]]
        assert [(p[2], (p[1] - p[0]) // MS) for p in inside] == want
        assert inside[0][0] == s[0] and inside[-1][1] == s[1]
        assert all(a[1] == b[0] for a, b in zip(inside, inside[1:]))  # contiguous
    # mixed text: step names inline, phase names registered (textId)
    assert query(con, "SELECT count(*) FROM NVTX_EVENTS WHERE text LIKE 'train_step_%'")[0][0] == 11
    assert query(con, "SELECT count(*) FROM NVTX_EVENTS WHERE textId IS NOT NULL")[0][0] == 55
    assert query(con, "SELECT count(*) FROM NVTX_EVENTS WHERE text IS NOT NULL AND textId IS NOT NULL") == [(0,)]


def test_backward_kernels_are_launched_from_the_autograd_thread_inside_backward(tmp_path):
    con = open_ro(synth.write_preset(tmp_path / "w.sqlite", "worked_example", steps=3))
    main = query(con, """SELECT t.globalTid FROM ThreadNames t JOIN StringIds s ON s.id = t.nameId
                      WHERE s.value = 'python3' AND (t.globalTid & 16777215) =
                      ((t.globalTid >> 24) & 16777215)""")[0][0]
    autograd = query(con, """SELECT t.globalTid FROM ThreadNames t JOIN StringIds s ON s.id = t.nameId
                          WHERE s.value = 'pt_autograd_0'""")[0][0]
    backward = [r for r in nsys_ranges(con) if r[2] == "backward"]
    assert backward and all(r[3] == main for r in backward)  # the main thread holds the range
    launches = query(con, """SELECT r.start, r.end FROM CUPTI_ACTIVITY_KIND_RUNTIME r
                          JOIN CUPTI_ACTIVITY_KIND_KERNEL k ON k.correlationId = r.correlationId
                          WHERE r.globalTid = ?""", autograd)
    assert len(launches) == 3 * 64
    for s, e in launches:
        assert any(b[0] <= s and e <= b[1] for b in backward)
    # forward/optimizer launches come from the main thread, inside their ranges
    n_main = query(con, """SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN
                        CUPTI_ACTIVITY_KIND_KERNEL k ON k.correlationId = r.correlationId
                        WHERE r.globalTid = ?""", main)[0][0]
    assert n_main == 3 * (52 + 12)


def test_a_host_sync_waits_for_the_queued_gpu_work(tmp_path):
    sc = Scenario(name="wait", steps=2, phases=(PhaseSpec("step", 50 * MS, kernels=(
        KernelSpec("nvjet", 20 * MS, 1, at=0.0),), syncs=(SyncSpec(at=0.1),)),))
    con = open_ro(synth.write_nsys_sqlite(tmp_path / "s.sqlite", sc))
    k_end = [r[0] for r in query(con, "SELECT end FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY start")]
    s_end = [r[0] for r in query(con, """SELECT r.end FROM CUPTI_ACTIVITY_KIND_RUNTIME r
                                      JOIN StringIds s ON s.id = r.nameId
                                      WHERE s.value = 'cudaStreamSynchronize_v3020' ORDER BY r.start""")]
    for k, s in zip(k_end, s_end):
        assert k < s < k + 10 * US


# ============================================================================ builder seams
def test_phase_template_spreads_packs_and_groups_launches():
    from nsys_diag.synth.process import phase_template

    spread = phase_template(PhaseSpec("p", MS, kernels=[KernelSpec("ew_add", 10 * US, 4)]))
    assert spread.n == 4 and spread.a.tolist() == [0.0, 0.25, 0.5, 0.75] and (spread.b == 0).all()
    packed = phase_template(PhaseSpec("p", MS, launch_gap_ns=2 * US,
                                      kernels=[KernelSpec("ew_add", 10 * US, 3, launch_ns=5 * US)]))
    assert packed.b.tolist() == [0, 7 * US, 14 * US] and (packed.spread == 0).all()
    at_end = phase_template(PhaseSpec("p", MS, kernels=[KernelSpec("ew_add", 10 * US, 2, at=1.0)]))
    assert (at_end.a == 1.0).all() and at_end.b.tolist() == [-2 * 7 * US, -7 * US]  # end at phase end


def test_builder_layout_tiles_steps_with_warmup_and_periodic_phases():
    from nsys_diag.synth.events import Interning
    from nsys_diag.synth.process import ProcessBuilder
    from nsys_diag.synth.timeline import _process_info

    sc = Scenario(steps=4, warmup_extra_ns=3 * MS, step_gap_ns=1 * MS,
                  phases=[PhaseSpec("a", 2 * MS), PhaseSpec("b", 5 * MS)],
                  periodic=[synth.PeriodicSpec(PhaseSpec("ckpt", 7 * MS), every=2)])
    parts = {k: [] for k in ("api", "kernels", "memcpy", "memset", "sync", "nvtx", "memory",
                             "steps", "phase_occ")}
    b = ProcessBuilder(sc, _process_info(sc, 0), parts, Interning())
    lay = b._layout()
    assert lay.dur.tolist() == [[5 * MS, 5 * MS, 0], [2 * MS, 5 * MS, 7 * MS], [2 * MS, 5 * MS, 0],
                                [2 * MS, 5 * MS, 7 * MS]]
    assert (lay.step_end - lay.step_start).tolist() == [10 * MS, 14 * MS, 7 * MS, 14 * MS]
    assert (lay.step_start[1:] - lay.step_end[:-1]).tolist() == [1 * MS] * 3  # step_gap_ns
    assert lay.step_start[0] == sc.session_offset_ns + sc.preamble_ns
    assert parts["steps"][0]["step"].tolist() == [0, 1, 2, 3]
