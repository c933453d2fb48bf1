"""Analysis declarations: the registry the analysis modules fill, the dependency order, span
selection, and a declared analysis run through the engine's partial → merge → finish."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from nsys_diag.analyses.engine import declaration as D
from nsys_diag.analyses.engine.registry import finish_declared, span_states

STREAMED = ("kernel_table", "phases", "steps", "quality", "timeline", "utilization", "gaps",
            "transfers", "communication", "gpu_metrics", "roofline", "tensor_cores")


def test_importing_the_analyses_fills_the_registry_in_dependency_order():
    decls = D.declarations()
    names = [d.name for d in decls]
    assert set(STREAMED) <= set(names) and len(set(names)) == len(names)
    for i, d in enumerate(decls):  # every result is finished after what it reads
        assert all(names.index(r) < i for r in d.reads), d.name
    assert all(d.section for d in decls)


def test_a_name_is_declared_once(monkeypatch):
    monkeypatch.setattr(D, "_PROCESS", {})
    d = D.Declaration("x", finish=lambda s, c: s)
    assert D.declare(d) is d and D.declare(d) is d  # re-importing a module is no error
    with pytest.raises(ValueError, match="declared twice"):
        D.declare(D.Declaration("x", finish=lambda s, c: s))


def test_dependency_order_follows_reads_and_rejects_cycles():
    a = D.Declaration("a", finish=lambda s, c: s, reads=("b",))
    b = D.Declaration("b", finish=lambda s, c: s)
    assert [d.name for d in D.in_dependency_order([a, b])] == ["b", "a"]
    c = D.Declaration("b", finish=lambda s, c: s, reads=("a",))
    with pytest.raises(ValueError, match="cycle"):
        D.in_dependency_order([a, c])


def test_the_default_merge_keeps_each_state_unchanged():
    state = object()
    assert D.keep_states([state]) == (state,) and D.keep_states([state])[0] is state
    assert D.keep_states([]) == ()


def _span(index: int, lo: int, hi: int):
    return SimpleNamespace(index=index, lo_ns=lo, hi_ns=hi)


def test_a_new_declaration_runs_over_the_spans_it_selects(monkeypatch):
    """Declared beside its code, nothing else edited: the engine runs its partial on the spans
    it selects, merges them and finishes it after the result it reads."""
    monkeypatch.setattr(D, "_PROCESS", {})
    monkeypatch.setattr(D, "_LOADED", [True])
    D.declare(D.Declaration("total", partial=lambda span, **_: span.hi_ns - span.lo_ns,
                            finish=lambda states, ctx: sum(states)))
    D.declare(D.Declaration(
        "late_share", reads=("total",), partial=lambda span, **_: span.hi_ns - span.lo_ns,
        spans=lambda glob, lo, hi: lo >= glob.replay_from,  # only the spans it replays
        finish=lambda states, ctx: sum(states) / ctx.results["total"]))
    glob = SimpleNamespace(replay_from=20)
    spans = [_span(0, 0, 10), _span(1, 10, 20), _span(2, 20, 50)]
    parts = [span_states(s, glob=glob, th=None, options=None) for s in spans]
    assert [sorted(p) for p in parts] == [["total"], ["total"], ["late_share", "total"]]
    got = finish_declared(parts, glob=glob, bundle=None, options=None, th=None)
    assert got == {"total": 50, "late_share": 30 / 50}


def test_a_declared_spec_is_found_by_its_section(monkeypatch):
    from nsys_diag.model.schema_types import Obj

    monkeypatch.setattr(D, "_PROCESS", {})
    monkeypatch.setattr(D, "_JOB", {})
    monkeypatch.setattr(D, "_LOADED", [True])
    spec = Obj({"n": "int"})
    D.declare(D.Declaration("count", section="counts", spec=spec, finish=lambda s, c: s))
    D.declare(D.Declaration("helper", finish=lambda s, c: s))  # no section: no spec
    assert D.section_specs() == {"counts": spec}
    D.declare(D.Declaration("again", section="counts", spec=Obj(), finish=lambda s, c: s))
    with pytest.raises(ValueError, match="own section"):
        D.section_specs()


def test_job_declarations_register_beside_their_code(monkeypatch):
    monkeypatch.setattr(D, "_JOB", {})
    monkeypatch.setattr(D, "_LOADED", [True])
    j = D.declare(D.JobDeclaration("mean_step", reads=("steps",),
                                   run=lambda traces, ctx: sum(traces) / len(traces)))
    assert D.job_declarations() == [j]
    assert j.run([1.0, 3.0], {}) == 2.0


def test_the_suite_imports_every_module_that_declares_an_in_memory_task():
    """The in-memory run takes the declarations of the modules imported so far (no walk of the
    package): after importing the suite alone they are all there, so an in-memory run never
    depends on what else the process imported."""
    import subprocess
    import sys

    code = ("import nsys_diag.analyses.suite\n"
            "from nsys_diag.analyses.engine.declaration import load_declarations, "
            "whole_declarations\n"
            "first = [d.name for d in whole_declarations()]\n"
            "load_declarations()\n"
            "assert first == [d.name for d in whole_declarations()], first\n"
            "print(len(first))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert int(out.stdout) >= 14
