"""A recording stand-in for an NVTX domain, for tests of ``nsys_diag.annotate``.

Without a profiler attached, ``nvtx.get_domain`` hands out a do-nothing dummy, so nothing would be
observable. ``install(monkeypatch)`` makes ``nvtx.get_domain`` return a ``SpyDomain`` — a real
``nvtx.Domain`` subclass that forwards every call to the real nvtx C API (a no-op without a
tool, but it type-checks our arguments against the real library) and records
``(op, text, domain)`` with the calling thread. Push/pop are checked per thread like NVTX does.
"""
from __future__ import annotations

import itertools
import threading

import nvtx

try:  # the real C-level handle, so super() calls go through nvtx's Cython code
    from nvtx._lib.lib import DomainHandle
except ImportError:  # pragma: no cover - layout of a future nvtx
    DomainHandle = None


class SpyDomain(nvtx.Domain):
    def __new__(cls, name, log):
        obj = object.__new__(cls)
        obj.handle = DomainHandle(name) if DomainHandle is not None else None
        return obj

    def __init__(self, name, log):
        if self.handle is not None:
            super().__init__(name)
        self.name = name
        self.log = log  # list of (op, text, domain)
        self.threads = []  # thread ident per log entry
        self.attr_requests = []  # messages passed to get_event_attributes
        self._ids = itertools.count(1)
        self._open = {}  # our range id -> (text, real range id)
        self._stacks = {}  # thread ident -> [text, ...]
        self._lock = threading.Lock()

    def _record(self, op, text):
        with self._lock:
            self.log.append((op, text, self.name))
            self.threads.append(threading.get_ident())

    def get_event_attributes(self, message=None, color=None, category=None, payload=None):
        self.attr_requests.append(message)
        if self.handle is not None:
            return super().get_event_attributes(message=message, color=color)
        return _Attrs(message)

    def push_range(self, attributes=None, **kw):
        text = _text(attributes)
        self._stacks.setdefault(threading.get_ident(), []).append(text)
        if self.handle is not None:
            super().push_range(attributes)
        self._record("push", text)

    def pop_range(self):
        stack = self._stacks.get(threading.get_ident()) or [None]
        text = stack.pop()  # None: a pop with nothing pushed on this thread
        if self.handle is not None:
            super().pop_range()
        self._record("pop", text)

    def start_range(self, attributes=None, **kw):
        text = _text(attributes)
        real = super().start_range(attributes) if self.handle is not None else 0
        rid = next(self._ids)
        self._open[rid] = (text, real)
        self._record("start", text)
        return rid

    def end_range(self, range_id):
        text, real = self._open.pop(range_id, (None, 0))  # None: unknown or twice-ended id
        if self.handle is not None:
            super().end_range(real)
        self._record("end", text)


class _Attrs:
    def __init__(self, message):
        self.message = message


def _text(attributes):
    msg = attributes.message
    return getattr(msg, "string", msg)


class Recording:
    """What the spies saw: ``calls`` [(op, text, domain)], ``spies`` {domain name: SpyDomain}."""

    def __init__(self):
        self.calls = []
        self.spies = {}

    def threads(self, domain="nsys-diag"):
        return self.spies[domain].threads


def install(monkeypatch):
    """Route ``nvtx.get_domain`` to spies and reset annotate's cached domain; returns a Recording."""
    from nsys_diag import annotate

    rec = Recording()

    def get_domain(name=None):
        if name not in rec.spies:
            rec.spies[name] = SpyDomain(name, rec.calls)
        return rec.spies[name]

    monkeypatch.setattr(nvtx, "get_domain", get_domain)
    monkeypatch.delenv("NSYS_DIAG_DISABLE", raising=False)
    annotate._reset_for_tests()
    return rec
