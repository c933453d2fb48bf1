"""Property-based fuzzing of every loader, end to end (load → inspect → analyse → HTML/MD/JSON/text).

Each case is a mutated *copy* of a seed (``fuzz_support.fuzz_seeds``): byte-level damage to SQLite
pages and CSV text, or row-level corruption through SQL. The oracle (``fuzz.fuzzlib.run_case``)
accepts a report whose numbers are plausible or a typed one-line ``NsysDiagError``; any other
exception, a NaN in the JSON, a share above 100 %, a negative duration or a modified input fails.

Budget: ≈ 60 s on two cores in total (``max_examples`` below; scale with NSYS_DIAG_FUZZ_SCALE).
Reproducible: ``derandomize=True`` and no example database. ``make fuzz`` runs the same mutators
for minutes in child processes and saves crashing inputs under tests/regressions/inputs/.
"""
from __future__ import annotations

import random
import sqlite3
import tempfile
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from fuzz import fuzzlib as F
from fuzz_support import examples, fuzz_seeds, record_fuzz  # noqa: F401 (fixture)

SQLITE_SEEDS = [n for n, _, _ in F.SYNTH_SEEDS] + ["real_" + Path(n).stem for n in F.REAL_SQLITE]
CSV_SEEDS = ["synth_ncu_details", "synth_ncu_raw"] + ["real_" + Path(n).stem for n in F.REAL_CSV]
U32 = st.integers(0, 2**32 - 1)


def _settings(n: int):
    return settings(max_examples=examples(n), deadline=None, derandomize=True, database=None,
                    suppress_health_check=list(HealthCheck), print_blob=True)


def _run(case: F.Case, seeds, config, stats: Counter, family: str) -> F.Outcome:
    with tempfile.TemporaryDirectory(prefix="nsys-diag-fuzz-") as d:
        trace, ncu, desc = F.make_input(case, seeds, Path(d))
        try:
            out = F.run_case(trace, ncu=ncu, differential=family == "sql")
        except BaseException as exc:  # name the case (seed, mutation) in the failure
            if hasattr(exc, "add_note"):  # Python >= 3.11
                exc.add_note(f"fuzz case {case.label()}: {desc}")
            raise
    stats[out.kind] += 1
    record_fuzz(config, family, out.kind)
    return out


def _summary(record_property, stats: Counter, family: str) -> None:
    record_property(f"fuzz_{family}_cases", sum(stats.values()))
    record_property(f"fuzz_{family}_typed_errors", stats["typed_error"])
    record_property(f"fuzz_{family}_reports", stats["report"])


# ---------------------------------------------------------------------------- byte level
@pytest.mark.slow  # runs in make test (≈ 10–40 s)
def test_sqlite_byte_mutations(fuzz_seeds, request, record_property):
    """Flips (header, b-tree page headers, anywhere), truncations (page boundary, mid-page,
    with a consistent header), zeroed/copied pages, header fields, trailing garbage."""
    stats: Counter = Counter()

    @_settings(100)
    @given(seed=st.sampled_from(SQLITE_SEEDS),
           ops=st.lists(st.tuples(st.sampled_from(F.SQLITE_BYTE_OPS), U32), min_size=1,
                        max_size=2))
    def case(seed, ops):
        assume(seed in fuzz_seeds)
        _run(F.Case(seed, "sqlite_bytes", ops), fuzz_seeds, request.config, stats, "sqlite_bytes")

    case()
    _summary(record_property, stats, "sqlite_bytes")
    # both endings are exercised (the oracle sees reports *and* typed errors)
    assert stats["typed_error"] >= 10 and stats["report"] >= 10, stats


@pytest.mark.slow  # runs in make test (≈ 10–40 s)
def test_csv_byte_mutations(fuzz_seeds, request, record_property):
    """ncu CSVs (both layouts, junk lines, rules): flips, truncation, dropped/duplicated/swapped
    lines, junk fields (inf, 1e400, quotes, ANSI, HTML), non-UTF-8, 1 MB fields, BOM + CRLF,
    other delimiters, NUL bytes; alone and attached to an nsys trace with --ncu."""
    stats: Counter = Counter()

    @_settings(80)
    @given(seed=st.sampled_from(CSV_SEEDS),
           ops=st.lists(st.tuples(st.sampled_from(F.CSV_BYTE_OPS), U32), min_size=1, max_size=3),
           with_ncu=st.booleans())
    def case(seed, ops, with_ncu):
        assume(seed in fuzz_seeds)
        _run(F.Case(seed, "csv_bytes", ops, with_ncu=with_ncu), fuzz_seeds, request.config,
             stats, "csv_bytes")

    case()
    _summary(record_property, stats, "csv_bytes")
    assert stats["typed_error"] >= 5 and stats["report"] >= 20, stats


# ----------------------------------------------------------------------------- row level
@pytest.mark.slow  # runs in make test (≈ 10–40 s)
def test_sql_row_corruption(fuzz_seeds, request, record_property):
    """1–3 random SQL corruptions (see ``fuzzlib.CORRUPTIONS``) on a copy of a seed; SQLite
    inputs are also re-read with the plain sqlite3 reader, which must agree with ADBC."""
    stats: Counter = Counter()

    @_settings(80)
    @given(seed=st.sampled_from(SQLITE_SEEDS),
           plan=st.lists(st.tuples(st.sampled_from(sorted(F.CORRUPTIONS)), U32), min_size=1,
                         max_size=3))
    def case(seed, plan):
        assume(seed in fuzz_seeds)
        _run(F.Case(seed, "sql", plan), fuzz_seeds, request.config, stats, "sql")

    case()
    _summary(record_property, stats, "sql")
    assert stats["report"] >= 20, stats


@pytest.mark.parametrize("corruption", sorted(F.CORRUPTIONS))
def test_every_corruption_on_a_generated_trace(fuzz_seeds, request, corruption):
    """Each corruption at least once, whatever hypothesis drew (deterministic seed)."""
    stats: Counter = Counter()
    out = _run(F.Case("synth_worked_2024.6", "sql", [(corruption, 7)]), fuzz_seeds,
               request.config, stats, "sql")
    assert out.kind in ("report", "typed_error")


@pytest.mark.parametrize("where", ["page_boundary", "mid_page", "consistent_header"])
@pytest.mark.parametrize("fraction", [0.1, 0.5, 0.9])
def test_truncated_exports_are_typed_errors(fuzz_seeds, request, where, fraction):
    """A cut export is a typed error, never a traceback or a silently partial report."""
    src = fuzz_seeds["synth_multi_gpu_2026.2"]
    data = src.read_bytes()
    ps = F.sqlite_page_size(data)
    pages = len(data) // ps
    keep = max(1, int(pages * fraction))
    cut = {"page_boundary": keep * ps, "mid_page": keep * ps + ps // 3,
           "consistent_header": keep * ps}[where]
    out_bytes = bytearray(data[:cut])
    if where == "consistent_header":
        out_bytes[28:32] = keep.to_bytes(4, "big")
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "cut.sqlite"
        p.write_bytes(bytes(out_bytes))
        out = F.run_case(p)
    record_fuzz(request.config, "truncation", out.kind)
    if where != "consistent_header":
        assert out.kind == "typed_error" and "truncated" in out.detail, out
    else:  # only SQLite itself can notice (missing pages): a typed error, never a crash
        assert out.kind == "typed_error", out


# ----------------------------------------------- corruption that must be *reported*, not hidden
def _corrupted(fuzz_seeds, tmp_path, sql: str, seed: str = "synth_worked_2024.6") -> F.Outcome:
    p = tmp_path / "c.sqlite"
    p.write_bytes(fuzz_seeds[seed].read_bytes())
    con = sqlite3.connect(p)
    con.executescript(sql)
    con.commit()
    con.close()
    return F.run_case(p, differential=True)


@pytest.mark.parametrize("sql", [
    'UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET "end" = start - 1000 WHERE rowid % 5 = 0',
    'UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET "end" = start + 4611686018427387904 WHERE rowid = 3',
    "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = start + 100000000000000000, "
    '"end" = "end" + 100000000000000000 WHERE rowid % 9 = 1',
    'UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET "end" = start - 5 WHERE rowid % 4 = 0',
    'UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET "end" = 0',
    # (exports declare start NOT NULL; CREATE TABLE AS drops the constraint)
    "CREATE TABLE n2 AS SELECT * FROM NVTX_EVENTS; DROP TABLE NVTX_EVENTS; "
    "ALTER TABLE n2 RENAME TO NVTX_EVENTS; "
    "UPDATE NVTX_EVENTS SET start = NULL WHERE eventType IN (59, 60) AND rowid % 3 = 0",
    'UPDATE NVTX_EVENTS SET "end" = start - 7 WHERE eventType IN (59, 60) AND rowid % 4 = 0',
    "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = 'abc' WHERE rowid % 5 = 0",
    "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET start = 1.5e300 WHERE rowid % 6 = 0",
    "UPDATE NVTX_EVENTS SET \"end\" = x'00ff' WHERE eventType IN (59, 60) AND rowid % 4 = 1",
], ids=["kernel_end_before_start", "kernel_absurd_duration", "kernel_far_future",
        "api_end_before_start", "memcpy_zero_end", "nvtx_null_start", "nvtx_end_before_start",
        "kernel_text_start", "api_real_start", "nvtx_blob_end"])
def test_impossible_rows_are_dropped_with_a_warning(fuzz_seeds, tmp_path, sql):
    out = _corrupted(fuzz_seeds, tmp_path, sql)
    assert out.kind == "report", out
    assert "invalid_rows" in out.codes, out.codes


def test_corrupt_capture_duration_is_not_trusted(fuzz_seeds, tmp_path):
    out = _corrupted(fuzz_seeds, tmp_path, "UPDATE ANALYSIS_DETAILS SET duration = 1")
    assert out.kind == "report" and "capture_span_mismatch" in out.codes, out
    assert "invalid_rows" not in out.codes  # the events are fine: nothing dropped


def test_ranges_that_never_end_are_reported(fuzz_seeds, tmp_path):
    out = _corrupted(fuzz_seeds, tmp_path,
                     'UPDATE NVTX_EVENTS SET "end" = NULL WHERE eventType IN (59, 60) '
                     "AND rowid % 6 = 0")
    assert out.kind == "report" and "unterminated_nvtx" in out.codes, out


def test_gpu_work_without_launch_calls_is_reported(fuzz_seeds, tmp_path):
    out = _corrupted(fuzz_seeds, tmp_path, "DELETE FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE rowid % 3 = 0")
    assert out.kind == "report" and "unmatched_launches" in out.codes, out


def test_missing_strings_are_reported(fuzz_seeds, tmp_path):
    out = _corrupted(fuzz_seeds, tmp_path, "DELETE FROM StringIds WHERE rowid % 2 = 0")
    assert out.kind == "report" and "unresolved_strings" in out.codes, out


def test_reader_fallback_on_non_utf8_and_mixed_types(fuzz_seeds, tmp_path):
    """Non-UTF-8 bytes and text in integer columns: both readers agree (differential)."""
    p = tmp_path / "m.sqlite"
    p.write_bytes(fuzz_seeds["synth_launch_2022.2"].read_bytes())
    con = sqlite3.connect(p)
    con.execute("UPDATE StringIds SET value = CAST(? AS TEXT) WHERE rowid % 3 = 0",
                (b"\xff\xfe bad \xc3\x28",))
    con.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET streamId = 'abc' WHERE rowid % 7 = 0")
    con.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET deviceId = 1.5e300 WHERE rowid % 11 = 0")
    con.commit()
    con.close()
    out = F.run_case(p, differential=True)
    assert out.kind in ("report", "typed_error")


def test_hypothesis_settings_are_reproducible():
    """The in-suite fuzz is derandomised: the same cases run on every machine."""
    rng_a, rng_b = random.Random(5), random.Random(5)
    a = F.mutate_sqlite_bytes(b"SQLite format 3\x00" + bytes(8192), "flip_random", rng_a)
    b = F.mutate_sqlite_bytes(b"SQLite format 3\x00" + bytes(8192), "flip_random", rng_b)
    assert a == b
