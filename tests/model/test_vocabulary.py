"""The one vocabulary (``model/vocabulary.py``): the words the analyses and loaders now take from
it read exactly as the copies they replaced (outputs are byte-identical)."""
from __future__ import annotations

import ast
import re
from pathlib import Path

from nsys_diag.analyses import gpu_metrics, memory
from nsys_diag.analyses.diagnosis import data_quality
from nsys_diag.analyses.job import batch_summary
from nsys_diag.analyses.steps import phases
from nsys_diag.loaders import nsys_sqlite
from nsys_diag.model import vocabulary as V


def test_phases_causes_and_codes():
    assert V.CANONICAL_PHASES == ("data", "forward", "backward", "optimizer", "overhead",
                                  "communication", "other")
    assert V.ANNOTATED_PHASES == V.CANONICAL_PHASES[:-1]
    assert set(V.PHASE_DISPLAY_ORDER) == set(V.CANONICAL_PHASES)
    assert [c for c, _ in V.GAP_CAUSE_LABELS] != list(V.GAP_CAUSES)  # display vs precedence
    assert {c for c, _ in V.GAP_CAUSE_LABELS} == set(V.GAP_CAUSES)
    assert set(V.VERDICT_TITLES) == set(V.VERDICT_CODES)
    assert phases.CANONICAL_PHASES is V.CANONICAL_PHASES


def test_capture_hints_are_the_vocabulary_entries():
    assert data_quality.CAPTURE_BASE == V.NSYS_CAPTURE_COMMAND == (
        "nsys profile -t cuda,nvtx,osrt --cuda-graph-trace=node -o report python train.py")
    assert nsys_sqlite.CAPTURE_FLAGS == V.NSYS_TRACE_FLAGS == "nsys profile -t cuda,nvtx,osrt"
    assert memory.CAPTURE_HINT == V.HINT_MEMORY_USAGE
    assert gpu_metrics.CAPTURE_HINT == V.HINT_GPU_METRICS == (
        "capture GPU metrics with `nsys profile --gpu-metrics-devices=all` "
        "(`--gpu-metrics-device=all` on nsys before 2023.3)")
    assert V.NSYS_CAPTURE_COMMAND.startswith(V.NSYS_TRACE_FLAGS + " ")


def _hint_literals(path: Path) -> list[str]:
    """The string literals of one module (docstrings excluded) that spell a capture flag."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr)
                  and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str)}
    return [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)
            and isinstance(n.value, str) and id(n) not in docstrings and HINT_WORDS.search(n.value)]


HINT_WORDS = re.compile(r"-t (cuda|nvtx|osrt)|--gpu-metrics-device|--cuda-memory-usage|ncu --set|"
                        r"nsys export --type|2023\.")
COMMAND_BUILDERS = {"app/profiling.py", "cli.py"}
"""Modules that spell flags to run nsys or to declare options, not in a hint."""
DESCRIPTIONS = ("model/contracts.py", "synth/")
"""Frame and scenario descriptions that say how their rows were captured (no advice)."""
PENDING: set[str] = set()
"""Modules whose hints have not moved to the vocabulary yet (none)."""


def test_no_capture_hint_is_spelled_outside_the_vocabulary():
    root = Path(V.__file__).resolve().parent.parent
    found = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel in {"model/vocabulary.py"} | COMMAND_BUILDERS | PENDING or rel.startswith(DESCRIPTIONS):
            continue
        if hits := _hint_literals(path):
            found[rel] = hits
    assert found == {}


def test_one_spelling_of_each_capture_flag():
    hints = {k: v for k, v in vars(V).items() if k.startswith(("HINT_", "NSYS_", "NCU_"))
             and isinstance(v, str)}
    for name, text in hints.items():
        for flag in re.findall(r"-t [a-z,]+", text):
            assert f"nsys profile {flag}" in text, (name, text)  # never a bare "-t cuda"
    cutoffs = {m for text in hints.values() for m in re.findall(r"20\d\d\.\w", text)}
    assert cutoffs == {"2023.3"}


def test_batch_phase_order_is_the_display_order():
    names = ["other", "overhead", "communication", "data", "zeta", "backward"]
    assert sorted(names, key=batch_summary.phase_sort_key) == [
        "data", "backward", "communication", "overhead", "other", "zeta"]


def test_gap_cause_table_is_complete_and_every_map_reads_it():
    """One row per gap cause with every field set; the maps elsewhere are derived from it."""
    from nsys_diag.analyses.diagnosis import advice, findings, scale_advice
    from nsys_diag.analyses.job import job_verdict

    table = V.GAP_CAUSE_TABLE
    assert len({c.name for c in table}) == len(table) == len(V.GAP_CAUSES)
    assert sorted(c.report_order for c in table) == list(range(len(table)))
    assert V.GAP_CAUSES[-1] == "other"  # the residual comes last in precedence
    for c in table:
        assert all(getattr(c, f) for f in ("label", "mechanism", "advice_key")), c
        assert c.finding_code in V.VERDICT_CODES and c.straggler_verdict in V.VERDICT_CODES, c
        # a straggler's host time reads as its finding does (start-up is no reason for
        # insufficient_data on a rank that has steps)
        assert c.straggler_verdict == c.finding_code or c.finding_code == "insufficient_data", c
        assert findings.CAUSE_CODE[c.name] == c.finding_code
        assert job_verdict.HOST_CAUSE_VERDICT[c.name] == c.straggler_verdict
        assert scale_advice._MECHANISM[c.name] == c.mechanism
        assert advice.ADVICE[c.advice_key], c
    assert dict(V.GAP_CAUSE_LABELS) == {c.name: c.label for c in table}


def test_host_io_and_unified_memory_read_the_same_everywhere():
    """The harmonised mapping: host I/O is overhead, unified-memory migration is input."""
    from nsys_diag.analyses.diagnosis import findings
    from nsys_diag.analyses.job import job_verdict

    for cause, code in (("host_io", "overhead_bound"), ("unified_memory", "input_bound")):
        assert findings.CAUSE_CODE[cause] == code
        rows = [{"rank": r, "phase_gpu_ms": {"forward": 10.0},
                 "gaps_ms": {cause: 40.0 if r == 2 else 1.0, "sync": 1.0}} for r in range(3)]
        straggler = {"rank": 2, "phase": "forward", "phase_excess_ms": 30.0}
        got = job_verdict.job_cause({"rows": rows}, straggler)
        assert got is not None and got["kind"] == "host" and got["gap_cause"] == cause
        assert got["verdict"] == code
