"""The step thread waiting for another host thread: PyTorch's ``loss.backward()`` returns when
the autograd engine's thread has launched the backward (``replay/threads.joins``), a wait the
export does not record. Checked on ``backward_on_autograd_thread`` (nsys_diag/synth/replay_cases.py),
whose structure is known by construction."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from nsys_diag.synth import replay_cases as rc
from nsys_diag.synth.scenarios import US, ApiCallSpec, KernelSpec
from tests.analyses.replay.replay_helpers import case_path, replay_trace

LAUNCH_MS = rc.AUTOGRAD_LAUNCHES * rc.AUTOGRAD_LAUNCH_NS / 1e6  # 16 ms of launch calls


@pytest.fixture(scope="module")
def cases(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("replay_threads")


def _ms(result, kind: str, phase: str) -> float:
    return sum(x.ms_per_step for x in result.critical_path if x.kind == kind and x.phase == phase)


def _renamed_backward() -> object:
    """The same loop with its backward range named so that no canonical phase is a wait."""
    s = rc.backward_on_autograd_thread()
    phases = tuple(dataclasses.replace(p, name="layer_stack", canonical="other")
                   if p.canonical == "backward" else p for p in s.phases)
    return dataclasses.replace(s, name="renamed_backward", phases=phases)


PIN_CALLS = 300  # 12 ms of cudaHostAlloc on the pin-memory thread


def _pin_memory_beside_backward() -> object:
    """The same loop with the backward launched by the step thread at the phase's end, and a
    pin-memory thread allocating pinned buffers (300 cudaHostAlloc calls of 40 µs, 12 ms, no
    GPU work) inside the backward range: the step thread does not wait for it."""
    s = rc.backward_on_autograd_thread()
    pin = ApiCallSpec("cudaHostAlloc", rc.AUTOGRAD_LAUNCH_NS, PIN_CALLS, thread="pin_memory",
                      at=0.0)
    phases = tuple(dataclasses.replace(
        p, kernels=(KernelSpec("ew_add", 5 * US, 10, at=0.99),), api_calls=(pin,))
        if p.canonical == "backward" else p for p in s.phases)
    return dataclasses.replace(s, name="pin_memory_beside_backward", phases=phases)


def test_the_path_follows_the_autograd_thread_through_the_backward(cases):
    (r,) = replay_trace(case_path(cases, "backward_on_autograd_thread"))
    assert r.fidelity()["error_pct"] == 0.0
    # the autograd thread's launch calls are on the path, in the backward phase ...
    assert _ms(r, "launch", "backward") == pytest.approx(LAUNCH_MS, rel=0.02)
    # ... and the step thread's time in backward is only what follows them (0.5 ms by design)
    assert _ms(r, "host_cpu", "backward") == pytest.approx(0.5, abs=0.05)
    # the forward's host time stays in forward
    assert _ms(r, "host_cpu", "forward") == pytest.approx(6.0, abs=0.1)


def test_faster_launches_on_the_autograd_thread_shorten_the_step(cases):
    (r,) = replay_trace(case_path(cases, "backward_on_autograd_thread"))
    graph = next(w for w in r.what_if if w.id == "no_launch_overhead")
    # a graph replay leaves a few µs of the 16 ms: the step thread resumes that much earlier
    assert graph.saves_ms_per_step > 0.9 * LAUNCH_MS


def test_without_a_backward_range_no_wait_is_inferred(cases):
    (r,) = replay_trace(case_path(cases, "renamed_backward", _renamed_backward))
    assert r.fidelity()["error_pct"] == 0.0
    assert _ms(r, "launch", "layer_stack") < 0.1
    assert _ms(r, "host_cpu", "layer_stack") == pytest.approx(LAUNCH_MS + 0.5, rel=0.05)
    graph = next(w for w in r.what_if if w.id == "no_launch_overhead")
    assert graph.saves_ms_per_step < 1.0  # the step thread's captured time holds the step


def test_a_thread_that_launches_no_gpu_work_is_not_waited_for(cases):
    (r,) = replay_trace(case_path(cases, "pin_memory_beside_backward",
                                  _pin_memory_beside_backward))
    assert r.fidelity()["error_pct"] == 0.0
    # the pin-memory thread's 12 ms of allocations are not what the step waits on ...
    assert _ms(r, "memory_management", "backward") < 0.1
    # ... the step thread's own CPU time in the backward is (16.5 ms less its 10 launches)
    assert _ms(r, "host_cpu", "backward") == pytest.approx(LAUNCH_MS + 0.5, rel=0.05)
    no_alloc = next(w for w in r.what_if if w.id == "no_alloc_in_loop")
    assert no_alloc.saves_ms_per_step < 0.1
