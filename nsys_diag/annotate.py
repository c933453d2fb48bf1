"""NVTX phase annotations for training loops, in the ``nsys-diag`` NVTX domain.

Two minutes of instrumentation make ``nsys-diag analyze`` exact instead of heuristic::

    from nsys_diag.annotate import phase, steps

    for batch in steps(loader):              # train_step_0, train_step_1, … with a `data`
        with phase("forward"):               # phase around each fetch (next() on the loader)
            loss = model(batch)
        with phase("backward"):
            loss.backward()
        with phase("optimizer"):
            opt.step(); opt.zero_grad()
        if i % 100 == 0:
            with phase("overhead"):          # logging, checkpoints, evaluation
                log(loss)

Every range lives in ONE NVTX domain, :data:`DOMAIN` = ``"nsys-diag"``. Canonical phase names
(:data:`CANONICAL_PHASES`) map to the analyzer's phases by exact name, with no configuration:

    ``data`` → data · ``forward`` → forward · ``backward`` → backward · ``optimizer`` → optimizer ·
    ``overhead`` → overhead (logging, checkpointing, evaluation) · ``communication`` → communication

Any other name is allowed; the analyzer maps it with its name patterns (override them with
``nsys-diag analyze --phase-map FILE``), and time it cannot map is reported as ``other``.
Steps are ranges named ``train_step_<N>`` (N counts from 0 across the whole process).

Range kinds — why start/end, and where push/pop:

* NVTX push/pop ("thread ranges", ``NVTX_EVENTS.eventType`` 59) are a per-thread stack: the pop
  must happen on the pushing thread, and tools that attribute GPU work to a push/pop range
  (``nsys`` ``nvtx_gpu_proj_*``/``nvtx_kern_sum``, ``ncu --nvtx-include``) only look at work
  launched *from that thread*. PyTorch runs ``loss.backward()`` on its autograd worker thread, so
  the backward kernels are launched from a thread other than the one that opened the range
  (NVIDIA/NVTX#101, pytorch/pytorch#70030).
* NVTX start/end ("process ranges", eventType 60) are process-wide, may overlap, and may be
  ended on any thread (``endGlobalTid`` records it). :func:`phase` and the step ranges use them:
  a phase covers work done for it on every thread of the process, and a step can be ended by
  whichever thread finishes it — e.g. when a ``for … in steps(…)`` loop is left with ``break``,
  the step is closed when the generator is finalised, possibly by the garbage collector on
  another thread.
* The data fetch inside :func:`steps` / :func:`mark_iter` is a push/pop range: it opens and
  closes inside one ``next()`` call, on one thread, strictly nested — the case push/pop is made
  for, and the one nsys shows as a nested bar on the thread's row.

Cost: NVTX calls are no-ops unless a tool (nsys, ncu) injected its library at process start.
When none did, ``nvtx`` hands out a dummy domain and this module switches every helper to a
shared do-nothing object (``phase()`` returns it; a decorator returns the function unchanged;
:func:`steps`/:func:`mark_iter` return the plain iterator). With a profiler attached, each range
costs two calls into NVTX with pre-built, cached event attributes (no per-call dict building).
Set ``NSYS_DIAG_DISABLE=1`` to turn everything into no-ops even under a profiler (nvtx's own
``NVTX_DISABLE`` is honoured too). Both switches are read once, at the first use.

Works without a GPU, CUDA or PyTorch: ``nvtx`` is a pure host-side library, and nothing here
imports torch (a ``torch.utils.data.DataLoader`` is just an iterable).
"""
from __future__ import annotations

import functools
import inspect
import itertools
import os
from typing import Any, Callable, Iterable, Iterator, Literal, TypeVar
from nsys_diag.model.vocabulary import ANNOTATED_PHASES

__all__ = [
    "DOMAIN",
    "CANONICAL_PHASES",
    "STEP_PREFIX",
    "phase",
    "step",
    "steps",
    "mark_iter",
    "enabled",
    "reset_step_counter",
]

DOMAIN = "nsys-diag"
"""The NVTX domain of every range this module emits."""

CANONICAL_PHASES = ANNOTATED_PHASES
"""Phase names the analyzer maps to its canonical phases by exact name (no configuration)."""

STEP_PREFIX = "train_step_"
"""Step ranges are named ``train_step_<N>``."""

DISABLE_ENV = "NSYS_DIAG_DISABLE"

# ARGB colours for the nsys timeline (cosmetic; stored in NVTX_EVENTS.color).
_PHASE_COLORS = {
    "data": 0xFFE8A33D,
    "forward": 0xFF4C9BE8,
    "backward": 0xFF7B61D1,
    "optimizer": 0xFF3DB58A,
    "overhead": 0xFF9AA0A6,
    "communication": 0xFFE8613D,
}
_OTHER_COLOR = 0xFFB0B7BF
_STEP_COLOR = 0xFF5F6368

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])

_UNRESOLVED = object()
_domain_obj: Any = _UNRESOLVED  # nvtx Domain, or None when disabled / no tool attached
_attrs_cache: dict[str, Any] = {}  # phase name -> nvtx EventAttributes (built once per name)
_step_counter = itertools.count()


# ------------------------------------------------------------------------------- the domain
def _env_disabled() -> bool:
    return os.environ.get(DISABLE_ENV, "").strip().lower() not in ("", "0", "false", "no", "off")


def _load_domain() -> Any:
    """The nvtx Domain for :data:`DOMAIN`, or None when nothing would be recorded."""
    if _env_disabled():
        return None
    try:
        import nvtx
    except ImportError:  # nvtx is a dependency, but annotations must never break a training run
        return None
    if not nvtx.enabled():  # NVTX_DISABLE set
        return None
    get_domain, domain_cls = getattr(nvtx, "get_domain", None), getattr(nvtx, "Domain", None)
    if get_domain is None or domain_cls is None:  # nvtx < 0.2.11
        return None
    domain = get_domain(DOMAIN)
    # Without an injected tool, nvtx returns its DummyDomain, which is not an nvtx.Domain.
    if not isinstance(domain, domain_cls):
        return None
    if not hasattr(domain, "start_range"):  # nvtx 0.2.11: no Domain.start_range/end_range
        import warnings

        warnings.warn("nsys_diag.annotate needs nvtx >= 0.2.12; NVTX annotations are off",
                      RuntimeWarning, stacklevel=3)
        return None
    return domain


def _domain() -> Any:
    global _domain_obj
    if _domain_obj is _UNRESOLVED:
        _domain_obj = _load_domain()
    return _domain_obj


def _phase_attrs(domain: Any, name: str) -> Any:
    attrs = _attrs_cache.get(name)
    if attrs is None:
        attrs = domain.get_event_attributes(message=name, color=_PHASE_COLORS.get(name, _OTHER_COLOR))
        _attrs_cache[name] = attrs
    return attrs


def _step_attrs(domain: Any, number: int) -> Any:
    # Not cached here: every step has its own name (nvtx keeps the registered string).
    return domain.get_event_attributes(message=f"{STEP_PREFIX}{number}", color=_STEP_COLOR)


def enabled() -> bool:
    """True when ranges are being recorded (a profiler is attached and nothing disabled us)."""
    return _domain() is not None


def reset_step_counter(start: int = 0) -> None:
    """Restart step numbering (the next step is ``train_step_<start>``)."""
    global _step_counter
    _step_counter = itertools.count(start)


def _reset_for_tests() -> None:
    """Forget the resolved domain, cached attributes and step numbering."""
    global _domain_obj
    _domain_obj = _UNRESOLVED
    _attrs_cache.clear()
    reset_step_counter()


# ------------------------------------------------------------------------------ range objects
class _NullRange:
    """Shared do-nothing stand-in used when nothing is recorded."""

    __slots__ = ()

    def __enter__(self) -> "_NullRange":
        return self

    def __exit__(self, *exc: object) -> Literal[False]:
        return False

    def __call__(self, func: F) -> F:
        return func

    def end(self) -> None:
        pass


_NULL = _NullRange()


class _Range:
    """A start/end (process) range: context manager, decorator, or explicit ``end()``."""

    __slots__ = ("_domain", "_attrs", "_rid")

    def __init__(self, domain: Any, attrs: Any):
        self._domain = domain
        self._attrs = attrs
        self._rid = None

    def __enter__(self) -> "_Range":
        self._rid = self._domain.start_range(self._attrs)
        return self

    def __exit__(self, *exc: object) -> Literal[False]:
        self.end()
        return False

    def end(self) -> None:
        """End the range; safe from any thread, and only the first call counts."""
        rid, self._rid = self._rid, None
        if rid is not None:
            self._domain.end_range(rid)

    def __call__(self, func: F) -> F:
        return _wrap(func, self._domain, lambda: self._attrs)


def _wrap(func: F, domain: Any, attrs_for_call: Callable[[], Any]) -> F:
    """Decorate ``func`` so each call is one start/end range (range id kept per call)."""
    start, end = domain.start_range, domain.end_range

    if inspect.iscoroutinefunction(func):
        @functools.wraps(func)
        async def async_inner(*args: Any, **kwargs: Any) -> Any:
            rid = start(attrs_for_call())
            try:
                return await func(*args, **kwargs)
            finally:
                end(rid)

        return async_inner  # type: ignore[return-value]

    @functools.wraps(func)
    def inner(*args: Any, **kwargs: Any) -> Any:
        rid = start(attrs_for_call())
        try:
            return func(*args, **kwargs)
        finally:
            end(rid)

    return inner  # type: ignore[return-value]


# ----------------------------------------------------------------------------------- public
def phase(name: str) -> Any:
    """A phase range named ``name``: ``with phase("forward"): …`` or ``@phase("forward")``.

    A start/end range in the ``nsys-diag`` domain (see the module docstring for why), so the
    backward kernels PyTorch launches from its autograd thread still fall inside ``backward``.
    Create it where you use it — one ``with`` per object; as a decorator every call is its own
    range (safe under recursion, threads and ``async def``).
    """
    if not isinstance(name, str):
        raise TypeError("phase() takes the phase name, e.g. @phase('forward'), not a function")
    domain = _domain()
    if domain is None:
        return _NULL
    return _Range(domain, _phase_attrs(domain, name))


class _StepRange(_Range):
    """``train_step_<N>``; with no fixed number, N is drawn on ``__enter__`` or per decorated call."""

    __slots__ = ("_number",)

    def __init__(self, domain: Any, number: int | None):
        super().__init__(domain, None)
        self._number = number

    def __enter__(self) -> "_StepRange":
        number = next(_step_counter) if self._number is None else self._number
        self._attrs = _step_attrs(self._domain, number)
        self._rid = self._domain.start_range(self._attrs)
        return self

    def __call__(self, func: F) -> F:
        domain, number = self._domain, self._number
        if number is None:
            return _wrap(func, domain, lambda: _step_attrs(domain, next(_step_counter)))
        attrs = _step_attrs(domain, number)
        return _wrap(func, domain, lambda: attrs)


def step(number: int | None = None) -> Any:
    """One training step, ``train_step_<N>``: ``with step(): …`` or ``@step()`` on the step function.

    ``number=None`` takes the next number of the process-wide step counter (shared with
    :func:`steps`) when the ``with`` block is entered — or, as a decorator, at every call.
    Start/end range, like :func:`phase`.
    """
    domain = _domain()
    if domain is None:
        return _NULL
    return _StepRange(domain, number)


def steps(iterable: Iterable[T], *, data: str = "data") -> Iterator[T]:
    """Iterate ``iterable`` marking each item as one step: ``for batch in steps(loader): …``.

    Each step is a start/end range ``train_step_<N>`` (numbers from the process-wide counter,
    so a second epoch continues where the first stopped); inside it, the fetch of the item —
    the ``next()`` call on the underlying iterator, where a DataLoader waits for its workers —
    is a push/pop range named ``data`` (or ``data=…``). The step ends when the loop asks for the
    next item, leaves with ``break`` (when the generator is closed), or raises.

    When ``iterable`` has a ``len()`` (lists, map-style DataLoaders) the final, exhausting
    ``next()`` is marked as ``data`` outside any step; without one it shows as a last, short
    step holding only that fetch, which the analyzer reports as incomplete.
    """
    domain = _domain()
    if domain is None:
        return iter(iterable)
    try:
        expected: int | None = len(iterable)  # type: ignore[arg-type]
    except (TypeError, NotImplementedError):  # no (usable) len(): e.g. an IterableDataset
        expected = None
    return _traced_steps(domain, iter(iterable), _phase_attrs(domain, data), expected)


def _traced_steps(domain: Any, it: Iterator[T], data_attrs: Any, expected: int | None) -> Iterator[T]:
    start, end = domain.start_range, domain.end_range
    push, pop = domain.push_range, domain.pop_range
    remaining = expected
    while True:
        if remaining is not None and remaining <= 0:
            # len() said we are done: the exhausting fetch is data outside any step.
            item = _fetch_in_range(it, push, pop, data_attrs)
            if item is _EXHAUSTED:
                return
            remaining = None  # len() was wrong; keep stepping, this step without its fetch
            rid = start(_step_attrs(domain, next(_step_counter)))
        else:
            rid = start(_step_attrs(domain, next(_step_counter)))
            try:
                item = _fetch_in_range(it, push, pop, data_attrs)
            except BaseException:  # the fetch's range is closed: close the step too
                end(rid)
                raise
            if item is _EXHAUSTED:
                end(rid)
                return
            if remaining is not None:
                remaining -= 1
        try:
            yield item
        finally:
            end(rid)


def mark_iter(iterable: Iterable[T], name: str = "data") -> Iterator[T]:
    """Iterate ``iterable`` marking every ``next()`` as a push/pop range ``name`` (default ``data``).

    For loaders outside :func:`steps`, e.g. ``for x in mark_iter(val_loader, "overhead")``.
    Returns the plain iterator when nothing is recorded.
    """
    domain = _domain()
    if domain is None:
        return iter(iterable)
    return _traced_iter(domain, iter(iterable), _phase_attrs(domain, name))


def _traced_iter(domain: Any, it: Iterator[T], attrs: Any) -> Iterator[T]:
    push, pop = domain.push_range, domain.pop_range
    while True:
        item = _fetch_in_range(it, push, pop, attrs)
        if item is _EXHAUSTED:
            return
        yield item


_EXHAUSTED: Any = object()
"""What ``_fetch_in_range`` returns when the iterator is done."""


def _fetch_in_range(it: Iterator[T], push: Callable, pop: Callable, attrs: Any) -> Any:
    """``next(it)`` inside a push/pop range (popped whatever happens); ``_EXHAUSTED`` at the
    end. The one place that times a fetch, for ``steps`` and ``mark_iter``."""
    push(attrs)
    try:
        return next(it)
    except StopIteration:
        return _EXHAUSTED
    finally:
        pop()
