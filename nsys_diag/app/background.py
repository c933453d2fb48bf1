"""Importing heavy modules on a background thread, with their errors kept for the foreground.

perf (bench): the analyses' and the report's ~0.1 s of imports run while the loader's threads
read SQLite. A module that fails to import in the background is not forgotten: its exception is
kept, and ``BackgroundImports.module(name)`` — what the foreground calls when it needs the module
— raises it there (the original exception, with its traceback), instead of an unrelated error
later or nothing at all.
"""
from __future__ import annotations

import importlib
import sys
import threading
from types import ModuleType


class BackgroundImports:
    """Import ``modules`` in order on one daemon thread (``start``); ``module(name)`` waits for
    that import and returns the module, or raises the exception it failed with."""

    def __init__(self, *modules: str):
        self.modules = modules
        self._done = {name: threading.Event() for name in modules}
        self._errors: dict[str, BaseException] = {}
        self._thread = threading.Thread(target=self._run, name="nsys-diag-import", daemon=True)

    def start(self) -> BackgroundImports:
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            for name in self.modules:
                try:
                    importlib.import_module(name)
                except BaseException as exc:  # noqa: BLE001 - kept, raised in the foreground
                    self._errors[name] = exc
                    return  # the later modules usually need the one that failed
                finally:
                    self._done[name].set()
        finally:
            for event in self._done.values():
                event.set()  # the foreground never waits for an import that will not come

    def errors(self) -> dict[str, BaseException]:
        """Modules whose background import failed so far → their exceptions."""
        return dict(self._errors)

    def module(self, name: str) -> ModuleType:
        """The module ``name``, once the background thread has tried it. Raises the exception
        the background import failed with; a module not in the list, or one the thread never
        reached, is imported here."""
        event = self._done.get(name)
        if event is not None and self._thread.ident is not None:  # started: it sets every event
            event.wait()
        if name in self._errors:
            raise self._errors[name]
        mod = sys.modules.get(name)
        return mod if mod is not None else importlib.import_module(name)


def import_in_background(*modules: str) -> BackgroundImports:
    """Start importing ``modules`` on a daemon thread; see ``BackgroundImports``."""
    return BackgroundImports(*modules).start()
