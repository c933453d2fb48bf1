"""An analysis declared once, beside its code: ``Declaration`` (per process) and
``JobDeclaration`` (over many traces), and the registry the declarations fill themselves.

A per-process declaration names its result (the key later declarations read), what it reads
(earlier results, by name), and three functions:

- ``partial(span, *, glob, th, options) -> state`` — over one span of the process's timeline
  (``engine.context.ChunkInputs``: the span's rows, busy intervals and phases; ``glob``: the
  process's global values, ``engine.globals.ProcessGlobals``). None: the declaration has no
  per-span work (it finishes from earlier results only).
- ``merge(states) -> state`` — the states of the spans, in time order, into one. The default,
  ``keep_states``, keeps them as a tuple (most merges are exact sums or unions that the finish
  takes at once); the one-state merge returns its input's single state unchanged in that tuple.
- ``finish(state, ctx) -> result`` — the in-memory result (``ctx``: ``FinishContext``).

The in-memory run takes the same declarations: ``whole(proc, *results) -> result`` is its task
over the whole process (``proc``: ``WholeProcess``; ``results``: those named in ``whole_reads``),
``pooled`` lets it run on a worker thread, ``rank`` places it in the task list (perf: slow
pooled work and what unblocks it early; results never depend on it). A declaration with only a
``whole`` is an in-memory step (busy intervals, gap evidence); one with only a ``finish`` has no
in-memory task.

``spans(glob, lo_ns, hi_ns) -> bool`` (optional) selects the spans the partial runs on — e.g. the
few steps a later analysis replays, known from the step skeleton before any chunk is read;
unselected spans give no state. ``section`` names the JSON section the result fills, ``spec``
its JSON spec (``model/schema_types.py``: every key once, typed, closed), written beside the
declaration; ``report/contract.py`` assembles the closed contract from the registry
(``section_specs``) and the report's own sections.

Registration is automatic: ``declare(d)`` at import time of the declaring module;
``declarations()`` imports every module of ``nsys_diag.analyses`` once and returns the
per-process declarations in an order where each comes after what it reads.
"""
from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence, TypeVar

from nsys_diag.model.schema_types import Node


def keep_states(states: Sequence[Any]) -> tuple:
    """The default merge: the spans' states in order (a tuple; no copy of any state)."""
    return tuple(states)


@dataclass(frozen=True)
class FinishContext:
    """What a declaration's ``finish`` may read besides its merged state."""

    glob: Any
    """The process's global values (``engine.globals.ProcessGlobals``)."""
    bundle: Any
    """The trace bundle (streamed: the summary bundle, ``engine.assemble.summary_bundle``)."""
    options: Any
    th: Any
    roofline: Any
    """The file's ncu roofline (None without ncu data)."""
    results: Mapping[str, Any]
    """The results finished so far, by declaration name (those named in ``reads`` among them)."""


@dataclass(frozen=True)
class WholeProcess:
    """What an in-memory task (``Declaration.whole``) reads of its process."""

    bundle: Any
    frames: dict
    """The process's event frames (``suite.PROCESS_FRAMES``, and the optional ones it has)."""
    pid: int
    devices: tuple[int, ...]
    steps: Any
    """The detected (and selected) steps, before their outliers are explained."""
    window: Any
    """The analysed window (``timeline.busy.Window``)."""
    options: Any
    th: Any
    roofline: Any
    metrics: Any
    """The GPU-metric samples of the process's devices."""
    memory: Any
    """The GPU-memory events of the process."""

    @property
    def window_ns(self) -> tuple[int, int]:
        return self.window.start_ns, self.window.end_ns


@dataclass(frozen=True)
class Declaration:
    """One per-process analysis (module docstring)."""

    name: str
    finish: Callable[[Any, FinishContext], Any] | None = None
    partial: Callable[..., Any] | None = None
    merge: Callable[[Sequence[Any]], Any] = keep_states
    reads: tuple[str, ...] = ()
    section: str | None = None
    spec: Node | None = None
    """The JSON spec of ``section`` (None: the report declares it, or there is no section)."""
    spans: Callable[[Any, int, int], bool] | None = None
    whole: Callable[..., Any] | None = None
    whole_reads: tuple[str, ...] = ()
    pooled: bool = False
    rank: int = 100

    def wants(self, glob: Any, lo_ns: int, hi_ns: int) -> bool:
        """Whether the partial runs on the span ``[lo_ns, hi_ns)``."""
        return self.partial is not None and (self.spans is None or self.spans(glob, lo_ns, hi_ns))


@dataclass(frozen=True)
class JobDeclaration:
    """One analysis over many traces (batch summary, ranks, compare): ``run(traces, ctx)`` with
    ``traces`` the per-trace results it reads (``reads``: their names)."""

    name: str
    run: Callable[[Sequence[Any], Mapping[str, Any]], Any]
    reads: tuple[str, ...] = ()
    section: str | None = None
    spec: Node | None = None


_PROCESS: dict[str, Declaration] = {}
_JOB: dict[str, JobDeclaration] = {}
_LOADED: list[bool] = []
_ORDER: dict[str, Any] = {}
DECLARING_PACKAGE = "nsys_diag.analyses"
"""The package whose modules are imported to fill the registry."""


AnyDeclaration = TypeVar("AnyDeclaration", Declaration, JobDeclaration)


def declare(d: AnyDeclaration) -> AnyDeclaration:
    """Register ``d`` (a second declaration under the same name is an error)."""
    reg: dict = _JOB if isinstance(d, JobDeclaration) else _PROCESS
    if d.name in reg and reg[d.name] is not d:
        raise ValueError(f"analysis {d.name!r} is declared twice")
    reg[d.name] = d
    return d


def load_declarations() -> None:
    """Import every module of ``DECLARING_PACKAGE`` once (each declares its analyses)."""
    if _LOADED:
        return
    pkg = importlib.import_module(DECLARING_PACKAGE)
    for m in pkgutil.walk_packages(pkg.__path__, DECLARING_PACKAGE + "."):
        importlib.import_module(m.name)
    _LOADED.append(True)


def in_dependency_order(decls: Sequence[Declaration]) -> list[Declaration]:
    """``decls`` with each after every declaration it reads (otherwise in the given order)."""
    names = {d.name for d in decls}
    done: set[str] = set()
    out: list[Declaration] = []
    pending = list(decls)
    while pending:
        ready = [d for d in pending if all(r in done or r not in names for r in d.reads)]
        if not ready:
            raise ValueError("declarations read each other in a cycle: "
                             + ", ".join(d.name for d in pending))
        d = ready[0]
        out.append(d)
        done.add(d.name)
        pending.remove(d)
    return out


def declarations() -> list[Declaration]:
    """Every streamed declaration (one with a ``finish``), in dependency order (module
    docstring; perf: the order is computed once per registry state, the engine asks once per
    span and process)."""
    load_declarations()
    key = tuple(id(d) for d in _PROCESS.values())
    if _ORDER.get("key") != key:
        streamed = [d for d in _PROCESS.values() if d.finish is not None]
        _ORDER["key"], _ORDER["order"] = key, in_dependency_order(streamed)
    return list(_ORDER["order"])


def whole_declarations() -> list[Declaration]:
    """The declarations with an in-memory task, by ``rank`` — those of the modules imported so
    far (perf: no walk of the package): a module that declares an in-memory task is imported by
    ``analyses/suite.py``, so the in-memory run never depends on what else was imported."""
    return sorted((d for d in _PROCESS.values() if d.whole is not None), key=lambda d: d.rank)


def section_specs(*, walk: bool = True) -> dict[str, Node]:
    """The JSON spec of every declared section, by section name (a section declared with a spec
    by two declarations is an error). ``walk=False``: those of the modules imported so far
    (perf: importing the whole package costs ≈ 0.1 s of CPU that the report does not need once
    ``analyses/suite.py``, which imports every declaring module, is imported)."""
    if walk:
        load_declarations()
    out: dict[str, Node] = {}
    decls: list[Declaration | JobDeclaration] = [*_PROCESS.values(), *_JOB.values()]
    for d in decls:
        spec = d.spec
        if spec is None:
            continue
        if d.section is None or d.section in out:
            raise ValueError(f"analysis {d.name!r}: a spec needs its own section name")
        out[d.section] = spec
    return out


def job_declarations() -> list[JobDeclaration]:
    """Every job-level declaration, in registration order."""
    load_declarations()
    return list(_JOB.values())

