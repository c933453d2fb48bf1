"""nsys_diag.annotate: exact NVTX call sequences, recorded by a spy domain (tests/nvtx_spy.py)."""
from __future__ import annotations

import asyncio
import threading

import nvtx
import pytest

from nsys_diag import annotate
from nsys_diag.annotate import mark_iter, phase, reset_step_counter, step, steps
from nvtx_spy import install

D = "nsys-diag"


@pytest.fixture
def rec(monkeypatch):
    recording = install(monkeypatch)
    yield recording
    annotate._reset_for_tests()


@pytest.fixture(autouse=True)
def _fresh_state():
    annotate._reset_for_tests()
    yield
    annotate._reset_for_tests()


def seq(*items):
    """('start', 'forward') … → full (op, text, domain) tuples."""
    return [(op, text, D) for op, text in items]


class _Sized:
    """An iterable with len(), like a map-style DataLoader."""

    def __init__(self, items):
        self.items = list(items)

    def __len__(self):
        return len(self.items)

    def __iter__(self):
        return iter(self.items)


# ------------------------------------------------------------------------- nothing attached
def test_without_a_profiler_everything_is_a_no_op():
    assert not isinstance(nvtx.get_domain(D), nvtx.Domain)  # no tool injected here
    assert annotate.enabled() is False

    def f(x):
        return x + 1

    assert phase("forward")(f) is f
    assert step()(f) is f
    with phase("forward") as p, step():
        pass
    assert p is phase("backward")  # one shared null object, nothing allocated per call
    data = [1, 2, 3]
    assert type(steps(data)) is type(iter(data))  # the plain iterator, no per-step wrapper
    assert list(steps(data)) == data and list(mark_iter(data)) == data


def test_env_switch_disables_even_with_a_profiler(monkeypatch, rec):
    monkeypatch.setenv("NSYS_DIAG_DISABLE", "1")
    annotate._reset_for_tests()
    assert annotate.enabled() is False
    with phase("forward"):
        pass
    assert list(steps([1, 2])) == [1, 2]
    assert rec.calls == []


def test_env_switch_zero_keeps_recording(monkeypatch, rec):
    monkeypatch.setenv("NSYS_DIAG_DISABLE", "0")
    annotate._reset_for_tests()
    with phase("forward"):
        pass
    assert rec.calls == seq(("start", "forward"), ("end", "forward"))


# ----------------------------------------------------------------------------------- phase
def test_phase_context_manager_is_a_start_end_range_in_the_nsys_diag_domain(rec):
    assert annotate.enabled() is True
    with phase("forward"):
        with phase("attention"):
            pass
    assert rec.calls == seq(("start", "forward"), ("start", "attention"),
                            ("end", "attention"), ("end", "forward"))
    assert set(rec.spies) == {D}


def test_phase_decorator_one_range_per_call_and_keeps_the_function(rec):
    @phase("optimizer")
    def update(x, *, lr):
        """doc"""
        return x - lr

    assert update(1.0, lr=0.5) == 0.5
    assert update(2.0, lr=1.0) == 1.0
    assert update.__name__ == "update" and update.__doc__ == "doc"
    assert rec.calls == seq(("start", "optimizer"), ("end", "optimizer"),
                            ("start", "optimizer"), ("end", "optimizer"))


def test_recursive_decorated_function_nests_correctly(rec):
    @phase("forward")
    def depth(n):
        return 0 if n == 0 else 1 + depth(n - 1)

    assert depth(2) == 2
    assert rec.calls == seq(*[("start", "forward")] * 3, *[("end", "forward")] * 3)
    assert rec.spies[D]._open == {}  # every id ended exactly once


def test_async_function_range_spans_the_awaited_body(rec):
    @phase("communication")
    async def allreduce():
        rec.calls.append(("body", None, D))
        await asyncio.sleep(0)
        return 7

    assert asyncio.run(allreduce()) == 7
    assert rec.calls == seq(("start", "communication"), ("body", None), ("end", "communication"))


def test_exceptions_propagate_and_still_close_the_range(rec):
    with pytest.raises(ValueError, match="boom"):
        with phase("backward"):
            raise ValueError("boom")

    @phase("forward")
    def bad():
        raise KeyError("k")

    with pytest.raises(KeyError):
        bad()
    assert rec.calls == seq(("start", "backward"), ("end", "backward"),
                            ("start", "forward"), ("end", "forward"))


def test_event_attributes_are_built_once_per_phase_name(rec):
    for _ in range(5):
        with phase("forward"):
            pass
        with phase("backward"):
            pass
    assert rec.spies[D].attr_requests == ["forward", "backward"]


def test_phase_rejects_being_used_without_a_name(rec):
    with pytest.raises(TypeError, match="phase name"):
        phase(lambda: None)


def test_range_ended_on_another_thread(rec):
    """Start/end ranges may end on a different thread (e.g. a hook on the autograd thread)."""
    r = phase("backward").__enter__()
    t = threading.Thread(target=r.end)
    t.start()
    t.join()
    r.end()  # a second end is ignored
    assert rec.calls == seq(("start", "backward"), ("end", "backward"))
    starter, ender = rec.threads()
    assert starter == threading.get_ident() and ender != starter
    assert rec.spies[D]._open == {}


def test_work_on_another_thread_inside_a_phase(rec):
    """The PyTorch backward pattern: the range is opened/closed here, the work runs elsewhere."""
    with phase("backward"):
        t = threading.Thread(target=lambda: rec.calls.append(("worker", None, D)))
        t.start()
        t.join()
    assert rec.calls == seq(("start", "backward"), ("worker", None), ("end", "backward"))


# ------------------------------------------------------------------------------------ step
def test_step_numbers_and_explicit_number(rec):
    with step():
        with phase("forward"):
            pass
    with step(7):
        pass
    with step():
        pass
    assert rec.calls == seq(("start", "train_step_0"), ("start", "forward"), ("end", "forward"),
                            ("end", "train_step_0"), ("start", "train_step_7"),
                            ("end", "train_step_7"), ("start", "train_step_1"),
                            ("end", "train_step_1"))


def test_step_decorator_draws_a_number_per_call_not_at_decoration(rec):
    @step()
    def train_step(x):
        return x * 2

    assert rec.calls == []
    assert [train_step(1), train_step(2)] == [2, 4]
    assert rec.calls == seq(("start", "train_step_0"), ("end", "train_step_0"),
                            ("start", "train_step_1"), ("end", "train_step_1"))


# ----------------------------------------------------------------------------------- steps
def _loop(iterable, **kw):
    out = []
    for item in steps(iterable, **kw):
        with phase("forward"):
            out.append(item)
    return out


def test_steps_marks_each_step_with_its_data_fetch_inside(rec):
    assert _loop(_Sized("ab")) == ["a", "b"]
    assert rec.calls == seq(
        ("start", "train_step_0"), ("push", "data"), ("pop", "data"),
        ("start", "forward"), ("end", "forward"), ("end", "train_step_0"),
        ("start", "train_step_1"), ("push", "data"), ("pop", "data"),
        ("start", "forward"), ("end", "forward"), ("end", "train_step_1"),
        # len() is known: the exhausting next() is data outside any step
        ("push", "data"), ("pop", "data"),
    )


def test_steps_on_an_unsized_iterable_ends_with_a_short_last_step(rec):
    assert _loop(x for x in "a") == ["a"]
    assert rec.calls == seq(
        ("start", "train_step_0"), ("push", "data"), ("pop", "data"),
        ("start", "forward"), ("end", "forward"), ("end", "train_step_0"),
        ("start", "train_step_1"), ("push", "data"), ("pop", "data"), ("end", "train_step_1"),
    )


def test_steps_with_a_len_that_is_too_small_keeps_stepping(rec):
    class Liar(_Sized):
        def __len__(self):
            return 1

    assert list(steps(Liar("ab"))) == ["a", "b"]
    assert rec.calls == seq(
        ("start", "train_step_0"), ("push", "data"), ("pop", "data"), ("end", "train_step_0"),
        # past len(): the fetch came first, then its step; from here on, unsized behaviour
        ("push", "data"), ("pop", "data"), ("start", "train_step_1"), ("end", "train_step_1"),
        ("start", "train_step_2"), ("push", "data"), ("pop", "data"), ("end", "train_step_2"),
    )


def test_step_numbers_continue_across_epochs_and_can_be_reset(rec):
    for _epoch in range(2):
        for _ in steps([0]):
            pass
    reset_step_counter(10)
    for _ in steps([0]):
        pass
    started = [t for op, t, _ in rec.calls if op == "start"]
    assert started == ["train_step_0", "train_step_1", "train_step_10"]


def test_steps_custom_data_phase_name(rec):
    list(steps([1], data="io"))
    assert ("push", "io", D) in rec.calls and ("push", "data", D) not in rec.calls


def test_break_closes_the_open_step(rec):
    it = steps(_Sized([1, 2, 3]))
    for item in it:
        break
    it.close()  # what the garbage collector does when the loop's iterator goes away
    assert rec.calls == seq(("start", "train_step_0"), ("push", "data"), ("pop", "data"),
                            ("end", "train_step_0"))


def test_step_closed_by_another_thread(rec):
    it = steps([1, 2])
    next(it)
    t = threading.Thread(target=it.close)
    t.start()
    t.join()
    assert rec.calls[-1] == ("end", "train_step_0", D)
    assert rec.threads()[-1] != rec.threads()[0]
    assert rec.spies[D]._open == {}


def test_exception_in_the_loop_body_closes_the_step(rec):
    with pytest.raises(RuntimeError):
        for _ in steps([1, 2]):
            raise RuntimeError("nan loss")
    assert rec.calls == seq(("start", "train_step_0"), ("push", "data"), ("pop", "data"),
                            ("end", "train_step_0"))


def test_exception_in_the_data_fetch_closes_data_then_step(rec):
    def loader():
        yield 1
        raise OSError("worker died")

    with pytest.raises(OSError, match="worker died"):
        for _ in steps(loader()):
            pass
    assert rec.calls[-3:] == seq(("push", "data"), ("pop", "data"), ("end", "train_step_1"))
    assert rec.spies[D]._open == {}


# ------------------------------------------------------------------------------- mark_iter
def test_mark_iter_marks_every_next_call_with_push_pop(rec):
    assert list(mark_iter(iter([10, 20]))) == [10, 20]
    assert rec.calls == seq(("push", "data"), ("pop", "data"), ("push", "data"), ("pop", "data"),
                            ("push", "data"), ("pop", "data"))


def test_mark_iter_custom_name_and_error(rec):
    def broken():
        yield 1
        raise ValueError("bad sample")

    it = mark_iter(broken(), name="overhead")
    assert next(it) == 1
    with pytest.raises(ValueError):
        next(it)
    assert rec.calls == seq(("push", "overhead"), ("pop", "overhead"),
                            ("push", "overhead"), ("pop", "overhead"))


def test_push_pop_stays_on_one_thread_per_fetch(rec):
    """Fetches from a background prefetch thread push and pop on that thread."""
    items = []
    src = mark_iter(iter(range(3)))
    t = threading.Thread(target=lambda: items.extend(src))
    t.start()
    t.join()
    assert items == [0, 1, 2]
    pops = [text for op, text, _ in rec.calls if op == "pop"]
    assert pops == ["data"] * 4  # every pop matched a push of the same thread
    assert set(rec.threads()) == {t.ident}


# ----------------------------------------------------------- contract with the analyzer
def test_analyzer_maps_our_names_without_configuration():
    """The canonical names map to themselves and train_step_N is a step, with no --phase-map."""
    phases = pytest.importorskip("nsys_diag.analyses.steps.phases")
    steps_mod = pytest.importorskip("nsys_diag.analyses.steps.detection")
    assert {n: phases.canonical_phase(n) for n in annotate.CANONICAL_PHASES} == \
        {n: n for n in annotate.CANONICAL_PHASES}
    assert steps_mod.STEP_NAME_RE.match(f"{annotate.STEP_PREFIX}12")


def test_canonical_phases_are_the_vocabulary_s_annotated_phases():
    from nsys_diag.model import vocabulary

    assert annotate.CANONICAL_PHASES is vocabulary.ANNOTATED_PHASES
    assert annotate.CANONICAL_PHASES == ("data", "forward", "backward", "optimizer", "overhead",
                                         "communication")
