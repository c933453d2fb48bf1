"""The suite's task graph (``analyses/engine/taskgraph.py``): dependency order, not queue order."""
from __future__ import annotations

import random
import threading
import time

import pytest

from nsys_diag.analyses.engine.taskgraph import Task, TaskGraphError, run_tasks, topological_order


def _graph(log: list | None = None) -> list[Task]:
    def slow(v, delay=0.01):
        def fn(*args):
            time.sleep(delay)
            if log is not None:
                log.append(threading.current_thread().name)
            return v + sum(args)
        return fn
    return [
        Task("a", slow(1), pooled=True),
        Task("b", slow(10)),
        Task("c", slow(100), ("b",), pooled=True),
        Task("d", slow(1000), ("a", "c")),
        Task("e", slow(10000), ("d", "b"), pooled=True),
        Task("f", slow(5), ("e",)),
    ]


EXPECTED = {"a": 1, "b": 10, "c": 110, "d": 1111, "e": 11121, "f": 11126}


@pytest.mark.parametrize("parallel", [False, True])
def test_shuffled_submission_gives_the_same_results(parallel):
    for seed in range(8):
        tasks = _graph()
        random.Random(seed).shuffle(tasks)
        assert run_tasks(tasks, parallel=parallel) == EXPECTED


def test_threaded_runs_pooled_tasks_on_workers_and_equals_sequential():
    log: list[str] = []
    assert run_tasks(_graph(log), parallel=True) == run_tasks(_graph(), parallel=False)
    workers = [n for n in log if n.startswith("nsys-diag-analysis")]
    assert len(workers) == 3 and log.count(threading.current_thread().name) == 3


def test_one_worker_cannot_deadlock_on_a_pooled_chain():
    tasks = [Task(f"t{i}", (lambda *a, i=i: i + sum(a)), (f"t{i - 1}",) if i else (), pooled=True)
             for i in range(6)]
    assert run_tasks(list(reversed(tasks)), parallel=True, workers=1)["t5"] == 15


def test_topological_order_keeps_the_given_order_among_ready_tasks():
    names = [t.name for t in topological_order(_graph())]
    assert names == ["a", "b", "c", "d", "e", "f"]
    names = [t.name for t in topological_order(list(reversed(_graph())))]
    assert names.index("b") < names.index("c") < names.index("d") < names.index("e")


@pytest.mark.parametrize("bad", [
    [Task("a", int, ("b",)), Task("b", int, ("a",))],
    [Task("a", int, ("zz",))],
    [Task("a", int), Task("a", int)],
])
def test_bad_graphs_are_refused(bad):
    with pytest.raises(TaskGraphError):
        run_tasks(bad, parallel=False)


@pytest.mark.parametrize("parallel", [False, True])
@pytest.mark.parametrize("pooled", [False, True])
def test_a_failure_is_raised_and_its_dependents_do_not_run(parallel, pooled):
    ran = []

    def boom():
        raise KeyError("boom")

    tasks = [Task("x", boom, pooled=pooled), Task("y", lambda x: ran.append(x), ("x",)),
             Task("z", lambda x: ran.append(x), ("x",), pooled=True)]
    with pytest.raises(KeyError, match="boom"):
        run_tasks(tasks, parallel=parallel)
    assert ran == []
