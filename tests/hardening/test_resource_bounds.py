"""Pathological but valid inputs finish in time proportional to their size; `--max-memory` refuses
clearly instead of being killed.

No timing assertions (speed is `make bench`'s business): each case runs the whole pipeline under a
60 s alarm that fails the test instead of hanging. The sizes are chosen so that a quadratic step
(a per-pair loop over 100k ranges or kernels: 10^10 operations) would take far longer than that,
while the linear pipeline needs a few seconds.
"""
from __future__ import annotations

import signal
import sqlite3
from contextlib import contextmanager
from pathlib import Path

import pytest
from click.testing import CliRunner

from fuzz import fuzzlib as F
from nsys_diag import synth
from nsys_diag.cli import main

GUARD_S = 60
N = 100_000


@contextmanager
def alarm_guard(seconds: int = GUARD_S):
    """Fail (not hang) when the block runs longer than ``seconds`` (main thread, POSIX)."""
    def on_alarm(signum, frame):
        raise TimeoutError(f"still running after {seconds} s: a super-linear blow-up?")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    return synth.write_preset(tmp_path_factory.mktemp("res") / "base.sqlite", "worked_example",
                              steps=3)


def _copy(base: Path, tmp_path: Path) -> tuple[Path, sqlite3.Connection]:
    p = tmp_path / "t.sqlite"
    p.write_bytes(base.read_bytes())
    con = sqlite3.connect(p)
    con.execute("PRAGMA journal_mode=OFF")
    return p, con


def _step(con) -> tuple[int, int, int]:
    """(start, end, globalTid) of the second step range."""
    s, e, g = con.execute("SELECT start, \"end\", globalTid FROM NVTX_EVENTS WHERE text LIKE "
                          "'train_step_%' ORDER BY start LIMIT 1 OFFSET 1").fetchone()
    return int(s), int(e), int(g)


def _run(p: Path) -> F.Outcome:
    with alarm_guard():
        out = F.run_case(p)
    assert out.kind == "report", out
    return out


def _cte(n: int) -> str:
    return f"WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < {n - 1}) "


def test_100k_deep_nvtx_nesting(base, tmp_path):
    p, con = _copy(base, tmp_path)
    s, e, g = _step(con)
    d = (e - s) // (2 * N + 4)
    con.execute(_cte(N) + "INSERT INTO NVTX_EVENTS (start, \"end\", eventType, text, globalTid) "
                f"SELECT {s + d} + i * {d}, {e - d} - i * {d}, 59, 'deep', {g} FROM c")
    con.commit()
    con.close()
    _run(p)


def test_100k_overlapping_ranges(base, tmp_path):
    """Start/end ranges that all overlap without nesting (each ends after the next starts)."""
    p, con = _copy(base, tmp_path)
    s, e, g = _step(con)
    d = (e - s) // (2 * N + 4)
    con.execute(_cte(N) + "INSERT INTO NVTX_EVENTS (start, \"end\", eventType, text, globalTid) "
                f"SELECT {s + d} + i * {d}, {s + d} + i * {d} + {N // 2} * {d}, 60, "
                f"'overlap' || (i % 3), {g} FROM c")
    con.commit()
    con.close()
    _run(p)


def test_unbalanced_nvtx_at_scale(base, tmp_path):
    """100k ranges that never end, half of them ending on another thread."""
    p, con = _copy(base, tmp_path)
    s, e, g = _step(con)
    con.execute(_cte(N) + "INSERT INTO NVTX_EVENTS (start, \"end\", eventType, text, globalTid, "
                f"endGlobalTid) SELECT {s} + i, CASE WHEN i % 2 = 0 THEN NULL ELSE {e} END, 60, "
                f"'open', {g}, {g} + 1 + (i % 2) FROM c")
    con.commit()
    con.close()
    out = _run(p)
    assert "unterminated_nvtx" in out.codes


def _clone_kernels(con, n: int, start: int, step_ns: int, stream_expr: str,
                   with_launch: bool) -> None:
    """Insert ``n`` kernels (copies of the first kernel row) at ``start + i·step_ns``; with
    ``with_launch`` each gets its own runtime launch row (unique correlation ids)."""
    cols = [r[1] for r in con.execute("PRAGMA table_info(CUPTI_ACTIVITY_KIND_KERNEL)")]
    base_corr = 10**9
    expr = {"start": f"{start} + i * {step_ns}", "end": f"{start} + i * {step_ns} + {step_ns // 2}",
            "streamId": stream_expr, "correlationId": f"{base_corr} + i"}
    sel = ", ".join(expr.get(c, f't."{c}"') for c in cols)
    names = ", ".join(f'"{c}"' for c in cols)
    con.execute(_cte(n) + f"INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL ({names}) SELECT {sel} FROM c, "
                "(SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL LIMIT 1) t")
    if with_launch:
        rcols = [r[1] for r in con.execute("PRAGMA table_info(CUPTI_ACTIVITY_KIND_RUNTIME)")]
        rexpr = {"start": f"{start} + i * {step_ns} - 3000",
                 "end": f"{start} + i * {step_ns} - 1000", "correlationId": f"{base_corr} + i"}
        rsel = ", ".join(rexpr.get(c, f't."{c}"') for c in rcols)
        rnames = ", ".join(f'"{c}"' for c in rcols)
        con.execute(_cte(n) + f"INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME ({rnames}) SELECT {rsel} "
                    "FROM c, (SELECT * FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE nameId IN (SELECT "
                    "id FROM StringIds WHERE value LIKE 'cudaLaunchKernel%') LIMIT 1) t")


def test_step_with_100k_kernels(base, tmp_path):
    """One step holds 100k extra kernels, each with its launch call (phase attribution)."""
    p, con = _copy(base, tmp_path)
    s, e, _ = _step(con)
    _clone_kernels(con, N, s + 1000, max(2, (e - s - 2000) // N), "t.streamId", True)
    con.commit()
    con.close()
    out = _run(p)
    assert "invalid_rows" not in out.codes


def test_kernels_on_thousands_of_streams(base, tmp_path):
    p, con = _copy(base, tmp_path)
    s, e, _ = _step(con)
    _clone_kernels(con, 20_000, s + 1000, max(2, (e - s - 2000) // 20_000), "1000 + i", True)
    con.commit()
    n = con.execute("SELECT count(DISTINCT streamId) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
    con.close()
    assert n > 20_000
    _run(p)


# ------------------------------------------------------------------------------ --max-memory
def test_max_memory_refuses_with_estimate_and_limit(base, tmp_path):
    res = CliRunner().invoke(main, ["analyze", str(base), "--no-html", "--max-memory", "1M"])
    assert res.exit_code == 3, res.output
    line = [ln for ln in res.output.splitlines() if ln.startswith("nsys-diag: error:")]
    assert len(line) == 1 and "Traceback" not in res.output
    assert "needs about" in line[0] and "--max-memory 1 MiB" in line[0], line[0]
    assert "SQLite file" in line[0]  # says what the estimate is made of


def test_max_memory_counts_the_ncu_csv_too(base, tmp_path):
    from nsys_diag.synth import ncu as synth_ncu

    csv = synth_ncu.write_ncu_csv(tmp_path / "k.csv", layout="raw")
    res = CliRunner().invoke(main, ["analyze", str(base), "--ncu", str(csv), "--no-html",
                                    "--max-memory", "1M"])
    assert res.exit_code == 3 and "CSV cells" in res.output, res.output


def test_max_memory_large_enough_runs(base, tmp_path):
    res = CliRunner().invoke(main, ["analyze", str(base), "--no-html", "--max-memory", "64G",
                                    "--json", str(tmp_path / "a.json")])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "a.json").stat().st_size > 0


def test_memory_estimate_covers_measured_peaks():
    """The constants hold the bench measurements they are documented with (loaders/memory_estimate.py)."""
    from nsys_diag.loaders import memory_estimate as me

    # measured: 841 MiB peak RSS for the 277 MB / 2M-kernel export, 312 MiB for 69 MB
    for size, peak in ((277_045_248, 841 * 2**20), (69_484_544, 312 * 2**20)):
        assert me.BASE_MEMORY_BYTES + size * me.LOAD_MEMORY_FACTOR >= peak


# ------------------------------------------------------------------------------ long names
def test_million_character_names_are_cut_at_load(base, tmp_path):
    """Names of 10^6 characters (a 28 MB export took 2.18 GB and a minute) are cut to
    ``MAX_NAME_CHARS`` as they are read, with a ``long_names`` warning saying how many."""
    import json

    from nsys_diag.loaders.nsys_strings import MAX_NAME_CHARS

    p, con = _copy(base, tmp_path)
    ids = [r[0] for r in con.execute("SELECT DISTINCT shortName FROM CUPTI_ACTIVITY_KIND_KERNEL")]
    con.executemany("UPDATE StringIds SET value = ? || id WHERE id = ?",
                    [("k" * 1_000_000, i) for i in ids[:3]])
    con.execute("UPDATE NVTX_EVENTS SET text = ? || rowid WHERE rowid = "
                "(SELECT min(rowid) FROM NVTX_EVENTS WHERE text IS NOT NULL)",
                ("n" * 1_000_000,))
    con.commit()
    con.close()
    out = _run(p)
    assert "long_names" in out.codes, out.codes
    for chunk_rows in (None, "100"):
        js = tmp_path / f"a{chunk_rows}.json"
        args = ["analyze", str(p), "--no-html", "--json", str(js)]
        res = CliRunner().invoke(main, args + (["--chunk-rows", chunk_rows] if chunk_rows else []))
        assert res.exit_code == 0, res.output
        view = json.loads(js.read_text())
        warning = next(q for q in view["data_quality"] if q["code"] == "long_names")
        assert warning["count"] >= 3 and f"{MAX_NAME_CHARS:,} characters" in warning["message"]
        assert js.stat().st_size < 3 * 1_000_000  # no full name in the report
    res = CliRunner().invoke(main, ["inspect", str(p)])
    assert res.exit_code == 0 and "k" * (MAX_NAME_CHARS + 2) not in res.output
