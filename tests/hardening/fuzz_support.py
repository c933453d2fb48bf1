"""Support for the in-suite fuzz tests: seed corpus fixture, example budget, case counter.

(Not a conftest.py: a second ``conftest`` module would shadow ``tests/conftest.py`` for the
``from conftest import shared_trace`` imports of other test modules.)
"""
from __future__ import annotations

import os
import sys
from collections import Counter
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/ (for fuzz.fuzzlib)

from fuzz.fuzzlib import build_seeds  # noqa: E402

FUZZ_STATS: Counter = Counter()
"""(family, outcome) -> cases, printed once at the end of the run."""

FUZZ_SCALE = float(os.environ.get("NSYS_DIAG_FUZZ_SCALE", "1"))
"""Multiplies every in-suite ``max_examples`` (NSYS_DIAG_FUZZ_SCALE=10 for a deeper local run)."""


def examples(n: int) -> int:
    return max(1, int(round(n * FUZZ_SCALE)))


class _Summary:
    """A plugin registered on first use: prints the fuzz totals in the terminal summary."""

    def pytest_terminal_summary(self, terminalreporter):
        if not FUZZ_STATS:
            return
        total = sum(FUZZ_STATS.values())
        errors = sum(v for (_, k), v in FUZZ_STATS.items() if k == "typed_error")
        reports = sum(v for (_, k), v in FUZZ_STATS.items() if k == "report")
        fams = sorted({f for f, _ in FUZZ_STATS})
        detail = ", ".join(f"{f} {sum(v for (g, _), v in FUZZ_STATS.items() if g == f)}"
                           for f in fams)
        terminalreporter.write_line(
            f"fuzz: {total} cases, {errors} typed errors, {reports} reports ({detail})")


def record_fuzz(config, family: str, kind: str) -> None:
    if not config.pluginmanager.has_plugin("nsys-diag-fuzz-summary"):
        config.pluginmanager.register(_Summary(), "nsys-diag-fuzz-summary")
    FUZZ_STATS[(family, kind)] += 1


@pytest.fixture(scope="session")
def fuzz_seeds(tmp_path_factory):
    """Seed inputs: synth exports, synth ncu CSVs, copies of ../shared/traces when present."""
    return build_seeds(tmp_path_factory.mktemp("fuzz_seeds"))
