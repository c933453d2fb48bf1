#!/usr/bin/env python3
"""Time-bounded fuzzing of every loader, end to end (``make fuzz``; not part of ``make test``).

    python tests/fuzz/run_fuzz.py --seconds 300 [--timeout 60] [--seed 0] [--no-real]
                                  [--families sql,sqlite_bytes,csv_bytes] [--save-dir DIR]

Same mutators and oracle as the in-suite fuzz tests (``tests/fuzz/fuzzlib.py``), but random
(seeded) and for as long as asked. Each case runs in its own child process (forked from a
pre-loaded fork server) with a per-case timeout and an address-space limit, so a hang, a
segfault, a MemoryError or a traceback is caught as a failure instead of stopping the run.

Each distinct failure (exception type + innermost frame, "hang", "signal N") is saved once,
gzip-compressed, with a JSON sidecar (case, mutation, traceback) under
``tests/regressions/inputs/``; ``tests/regressions/test_saved_inputs.py`` replays every saved
input in ``make test`` until the bug is fixed (then the input stays as a regression test).

Exit code: 0 when every case ended as a report or a typed error, 1 otherwise.
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import random
import shutil
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

from fuzz import fuzzlib as F  # noqa: E402

FAMILIES = ("sql", "sqlite_bytes", "csv_bytes")
PRELOAD = ["fuzz.fuzzlib", "nsys_diag.loaders", "nsys_diag.loaders.nsys_sqlite",
           "nsys_diag.loaders.ncu_csv", "nsys_diag.app.analyze", "nsys_diag.analyses.suite",
           "nsys_diag.report.view", "nsys_diag.report.html_report", "nsys_diag.report.markdown",
           "nsys_diag.report.text", "nsys_diag.report.inventory_render", "pandas", "numpy", "pyarrow"]


# ------------------------------------------------------------------------------- the child
def _limit_memory(limit: int | None) -> None:
    if not limit:
        return
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (ImportError, ValueError, OSError):
        pass


def child(trace: str, ncu: str | None, conn, mem_limit: int | None, inject: str | None) -> None:
    """Run one case; send ('ok', kind, detail) or ('fail', signature, message, traceback)."""
    _limit_memory(mem_limit)
    try:
        if inject == "crash":
            raise RuntimeError("injected crash (self-test)")
        if inject == "hang":
            time.sleep(3600)
        out = F.run_case(Path(trace), ncu=Path(ncu) if ncu else None, differential=True)
        conn.send(("ok", out.kind, out.detail[:300]))
    except BaseException as exc:  # everything that is not a report or a typed error
        tb = traceback.extract_tb(exc.__traceback__)
        frame = next((f for f in reversed(tb) if "/nsys_diag/" in f.filename), tb[-1] if tb else None)
        where = f"{Path(frame.filename).name}:{frame.lineno}" if frame else "?"
        conn.send(("fail", f"{type(exc).__name__} @ {where}", f"{type(exc).__name__}: {exc}"[:2000],
                   traceback.format_exc()[-8000:]))
    finally:
        conn.close()


def _noop() -> None:
    """Started once before the first case: the fork server's preload is not counted as case time."""


# ------------------------------------------------------------------------------ the driver
def random_case(rng: random.Random, seeds: dict[str, Path], families: tuple[str, ...]) -> F.Case:
    family = rng.choice(families)
    sqlite_seeds = sorted(k for k, p in seeds.items() if F.is_sqlite(p))
    csv_seeds = sorted(k for k, p in seeds.items() if not F.is_sqlite(p))
    k = rng.choice((1, 1, 1, 2, 3))
    if family == "sql":
        return F.Case(rng.choice(sqlite_seeds), family,
                      [(rng.choice(sorted(F.CORRUPTIONS)), rng.randrange(2**32)) for _ in range(k)])
    if family == "sqlite_bytes":
        return F.Case(rng.choice(sqlite_seeds), family,
                      [(rng.choice(F.SQLITE_BYTE_OPS), rng.randrange(2**32))
                       for _ in range(min(k, 2))])
    return F.Case(rng.choice(csv_seeds), "csv_bytes",
                  [(rng.choice(F.CSV_BYTE_OPS), rng.randrange(2**32)) for _ in range(k)],
                  with_ncu=rng.random() < 0.3)


def run_one(ctx, case_dir: Path, trace: Path, ncu: Path | None, timeout: float,
            mem_limit: int | None, inject: str | None) -> tuple:
    parent_conn, child_conn = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=child, args=(str(trace), str(ncu) if ncu else None, child_conn,
                                           mem_limit, inject), daemon=True)
    proc.start()
    child_conn.close()
    result = None
    if parent_conn.poll(timeout):
        try:
            result = parent_conn.recv()
        except EOFError:
            result = None
    proc.join(5 if result is not None else 0)
    if proc.is_alive():
        proc.kill()
        proc.join()
        if result is None:
            return ("fail", "hang", f"no result after {timeout:g} s (killed)", "")
    parent_conn.close()
    if result is None:
        code = proc.exitcode
        sig = f"signal {-code}" if code is not None and code < 0 else f"exit code {code}"
        return ("fail", sig, f"the child died ({sig}) without a result", "")
    return result


def parse_size(text: str) -> int:
    mult = {"K": 2**10, "M": 2**20, "G": 2**30}
    t = text.strip().upper().rstrip("B").rstrip("I")
    return int(float(t[:-1]) * mult[t[-1]]) if t and t[-1] in mult else int(t)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=300, help="total fuzzing time")
    ap.add_argument("--timeout", type=float, default=60, help="per-case limit (a hang fails)")
    ap.add_argument("--seed", type=int, default=None, help="RNG seed (default: time-based)")
    ap.add_argument("--families", default=",".join(FAMILIES))
    ap.add_argument("--no-real", action="store_true", help="skip ../shared/traces seeds")
    ap.add_argument("--save-dir", default=str(F.REGRESSION_DIR))
    ap.add_argument("--mem-limit", default="8G", help="address-space limit per case (0: none)")
    ap.add_argument("--max-cases", type=int, default=0, help="stop after this many cases")
    ap.add_argument("--inject", choices=("crash", "hang"), help=argparse.SUPPRESS)  # self-test
    args = ap.parse_args(argv)

    families = tuple(f for f in args.families.split(",") if f)
    bad = set(families) - set(FAMILIES)
    if bad:
        ap.error(f"unknown families {sorted(bad)}; choose from {FAMILIES}")
    seed = args.seed if args.seed is not None else int(time.time())
    rng = random.Random(seed)
    mem_limit = parse_size(args.mem_limit) or None
    save_dir = Path(args.save_dir)
    deadline = time.monotonic() + args.seconds

    methods = mp.get_all_start_methods()
    ctx = mp.get_context("forkserver" if "forkserver" in methods else "spawn")
    if "forkserver" in methods:
        ctx.set_forkserver_preload(PRELOAD)
    warm = ctx.Process(target=_noop)
    warm.start()
    warm.join()

    work = Path(tempfile.mkdtemp(prefix="nsys-diag-fuzz-"))
    stats: Counter = Counter()
    failures: dict[str, dict] = {}
    started = time.monotonic()
    try:
        seeds = F.build_seeds(work / "seeds", real=not args.no_real)
        if not any(F.is_sqlite(p) for p in seeds.values()) and "csv_bytes" not in families:
            print("fuzz: no seeds", file=sys.stderr)
            return 1
        print(f"fuzz: seed {seed}, {len(seeds)} seed files, families {','.join(families)}, "
              f"{args.seconds:g} s, per-case timeout {args.timeout:g} s", flush=True)
        i = 0
        while time.monotonic() < deadline and (not args.max_cases or i < args.max_cases):
            case = random_case(rng, seeds, families)
            case_dir = work / f"case{i}"
            i += 1
            try:
                trace, ncu, desc = F.make_input(case, seeds, case_dir)
            except Exception as exc:  # noqa: BLE001 - a mutator problem, not a tool bug
                stats["mutator_error"] += 1
                print(f"  mutator error on {case.label()}: {type(exc).__name__}: {exc}",
                      file=sys.stderr)
                shutil.rmtree(case_dir, ignore_errors=True)
                continue
            res = run_one(ctx, case_dir, trace, ncu, args.timeout, mem_limit, args.inject)
            if res[0] == "ok":
                stats[res[1]] += 1
            else:
                stats["failure"] += 1
                _, signature, message, tb = res
                if signature not in failures:
                    info = {"kind": signature.split(" ")[0].lower(), "signature": signature,
                            "message": message, "traceback": tb, "case": case.label(),
                            "mutations": desc, "fuzz_seed": seed, "timeout_s": args.timeout}
                    saved = F.save_regression(trace, ncu, info, save_dir)
                    failures[signature] = {"case": case.label(), "saved": str(saved),
                                           "message": message, "count": 0}
                    print(f"  FAILURE {signature}: {message[:200]}\n    case {case.label()} "
                          f"({'; '.join(desc)[:200]})\n    saved {saved}", flush=True)
                failures[signature]["count"] += 1
            shutil.rmtree(case_dir, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    total = stats["report"] + stats["typed_error"] + stats["failure"]
    print(f"fuzz: {total} cases, {stats['typed_error']} typed errors, {stats['report']} reports, "
          f"{stats['failure']} failures ({len(failures)} distinct) in "
          f"{time.monotonic() - started:.0f} s (seed {seed})")
    for sig, f in failures.items():
        print(f"  {f['count']}× {sig} — {f['saved']}")
    if stats["mutator_error"]:
        print(f"  ({stats['mutator_error']} mutator errors, see stderr)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
