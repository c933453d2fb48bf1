"""Generated captures of programs that are not PyTorch training loops (issue 26's cases), each
with its known facts.

Every case is one call::

    from nsys_diag.synth import programs
    programs.write_case("openmp_offload", "omp.sqlite", schema="2024.6")   # -> Path
    programs.facts("openmp_offload")                                        # -> dict
    programs.CASES                                                          # names, in order

The nsys cases are :class:`~nsys_diag.synth.scenarios.Scenario` objects written by the
generator's writer (schema-faithful, every schema variant); three need a change the scenario
model does not express and get it after writing (:data:`AFTER_WRITE`): the kernel activity table
of a capture whose collection failed is dropped, and unified-memory migrations lose the API call
the generator attaches to every GPU op (real migration rows have correlationId 0). The ncu cases
are raw-page CSVs from :mod:`nsys_diag.synth.ncu`.

Kernel names, launch APIs, launch shapes, NVTX domains and thread / process names follow what
real exports of such programs hold (``docs/NSYS_SQLITE.md``; the MPI case mirrors the
shared ``saxpy_mpi_a100_2022.2`` export). :func:`facts` computes the counts and totals from the
built timeline (never typed in) and adds what ran (the framework as issue 26 defines it) and what
the tool should conclude (``expected``). Times in facts are ms (float), shares 0..1.
"""
from __future__ import annotations

import sqlite3
from pathlib import Path

from nsys_diag.synth.ncu import metric_names, write_ncu_csv
from nsys_diag.synth.program_cases import (AFTER_WRITE, NCU_CASES, NCU_METRICS,
                                           PYTORCH_ONLY_WORDS, SCENARIOS, TENSOR_PIPE_METRIC,
                                           ncu_kernels)
from nsys_diag.synth.program_facts import EXPECTED, facts, launch_fill
from nsys_diag.synth.scenarios import Scenario
from nsys_diag.synth.writer import write_nsys_sqlite

__all__ = ["CASES", "SCENARIOS", "NCU_CASES", "NCU_METRICS", "TENSOR_PIPE_METRIC",
           "PYTORCH_ONLY_WORDS", "EXPECTED", "scenario", "write_case", "facts", "ncu_kernels",
           "launch_fill"]

# ---------------------------------------------------------------------------------------------
# public API
# ---------------------------------------------------------------------------------------------

CASES: tuple[str, ...] = tuple(SCENARIOS) + tuple(NCU_CASES)
"""Every case name, nsys cases first."""


def scenario(name: str) -> Scenario:
    """The scenario of an nsys case (``KeyError`` for an ncu case or an unknown name)."""
    return SCENARIOS[name]()


def write_case(name: str, path: str | Path, schema: str = "2024.6") -> Path:
    """Write case ``name`` to ``path``: an nsys SQLite export of schema variant ``schema``
    (see :data:`nsys_diag.synth.SCHEMAS`) or, for an ncu case, the raw-page CSV (``schema``
    ignored). Overwrites ``path``; returns it."""
    if name in NCU_CASES:
        kernels = ncu_kernels(name)
        every = {m for k in kernels for m in metric_names(k)}
        return write_ncu_csv(path, kernels, layout="raw", drop_metrics=every - set(NCU_METRICS))
    if name not in SCENARIOS:
        raise KeyError(f"unknown case {name!r}; choose one of {', '.join(CASES)}")
    out = write_nsys_sqlite(path, scenario(name), schema)
    fix = AFTER_WRITE.get(name)
    if fix is not None:
        con = sqlite3.connect(str(out))
        try:
            with con:
                fix(con)
        finally:
            con.close()
    return out

