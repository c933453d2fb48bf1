"""``make bench``: how fast and how lean ``nsys-diag analyze`` is on large exports, side by side.

    .venv/bin/python bench/run_bench.py [--sizes 0.5,1,2] [--runs 3] [--skip-peer] [--quick]
                                        [--profile] [--timeout S] [--json PATH]

1. Generates (once; cached in ``bench/out/traces`` keyed by the parameters and the generator's
   source) training traces with the project's own generator: ``healthy_tc`` scaled so each step
   holds ~5,000 kernels, as many API calls, NVTX phases, copies, memsets, GPU metrics at 1 kHz;
   ``--sizes`` in millions of kernels (the step count grows with the size).
2. Times, interleaved run by run, each as a separate child process (wall time from spawn to exit;
   peak RSS from ``os.wait4``):
   * the floor: the columns analyze needs (``bench/needed_columns.py``) read into Arrow by the ADBC SQLite
     driver and by connectorx, each one table after another and with the tables read concurrently
     (as ``analyze`` reads them; the fastest of the four is the floor), and a C-level count/sum
     scan (reference);
   * a naive ``pandas.read_sql`` pipeline (``bench/naive.py``), at the largest size;
   * nsys-ai 0.3.0 (its own venv ``bench/.venv-nsysai``, private HOME) ``analyze --format json``
     with a cold cache (deleted before each run) and warm, at the largest size;
   * ``nsys-diag analyze TRACE --json - --no-html`` (ours) at every size, plus once more with the
     plain ``sqlite3`` reader (``NSYS_DIAG_NO_ADBC=1``) at the largest size;
   * ours with ``--memory-budget 512M`` at every size: bounded memory (the whole export streamed
     chunk by chunk once it would not fit) — its peak RSS must stay under the budget at every size;
   * streaming (issue "Whole exports in bounded memory"): ``launch_bound`` exports of 4, 8 and 16M
     kernels (``--stream-sizes``), ours with ``--memory-budget 1G`` at each (whole export, chunk
     by chunk) and unbounded (``--memory-budget none``) at 8M — peak ≤ 1.2 GB, time ≤ 1.5× the
     unbounded run, growth linear or better;
   * the PyTorch-profiler row (``kineto_section.py``): ours on a generated ~35 MB legacy-schema
     Kineto trace against Holistic Trace Analysis 0.5.0 loading it (its own venv
     ``bench/.venv-hta``), cold, and their kernel totals per name compared (``--skip-kineto``);
   * ``nsys-diag --help`` (min of 5), and which heavy modules it imports.
3. Prints the table, the ratios, the growth per doubling and PASS/FAIL against the targets of
   issue "Scale"; writes everything to ``bench/out/results.json``.

The script sets itself up: it pip-installs the bench-only packages (adbc-driver-sqlite,
connectorx, pyinstrument) into the running interpreter's environment when missing, and creates
the nsys-ai and HTA venvs when missing. Nothing here is part of ``make test``.
"""
from __future__ import annotations

import argparse
import functools
import hashlib
import importlib.util
import json
import math
import os
import platform
import random
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from kineto_section import (HTA_TOOL, KINETO_STEPS, OURS_TOOL, ensure_hta,  # noqa: E402
                            kernel_totals_match, kineto_targets, make_kineto_trace)
from venvs import create_venv  # noqa: E402
ROOT = HERE.parent
OUT = HERE / "out"
TRACES = OUT / "traces"
PEER_DIR = OUT / "peer"
PEER_HOME = OUT / "home"
PEER_VENV = HERE / ".venv-nsysai"
PY = sys.executable
OURS = str(Path(PY).parent / "nsys-diag")

PRESET = "healthy_tc"
SCALE = 33  # kernels per step: 152 × 33 = 5,016
METRICS_PERIOD_NS = 1_000_000  # GPU metrics at 1 kHz
SCHEMA = "2024.6"
PEER_PINS = ("nsys-ai==0.3.0", "duckdb==1.5.5", "duckdb-extension-sqlite-scanner==1.5.5")
DUCKDB_VERSION = "v1.5.5"
BENCH_PACKAGES = (("adbc_driver_sqlite", "adbc-driver-sqlite"), ("connectorx", "connectorx"),
                  ("pyinstrument", "pyinstrument"))

TARGET_SIZE_M = 2.0
TARGET_FLOOR_RATIO = 3.0
TARGET_PEER_SPEEDUP = 10.0
TARGET_RSS_BYTES = 1_500_000_000  # 1.5 GB
TARGET_HELP_S = 0.3
KINETO_SIZE_M = -1.0  # the Kineto trace's row key in the table (not a kernel-count size)
STREAM_PRESET = "launch_bound"
STREAM_SCALE = 5.56  # 1,200 kernels per step × 5.56 = 6,671: 8.0M kernels at 1,200 steps
STREAM_KPS = 6_671
STREAM_SIZES = "4,8,16"
STREAM_BUDGET = "1G"
STREAM_TARGET_M = 8.0
STREAM_RSS_BYTES = 1_200_000_000  # 1.2 GB
STREAM_TIME_RATIO = 1.5
BOUNDED_BUDGET = "512M"
BOUNDED_BUDGET_BYTES = 512 * 2**20
LINEAR_PER_DOUBLING = 2.2
HEAVY_MODULES = ("pandas", "pyarrow", "numpy", "jinja2")


def log(msg: str = "") -> None:
    print(msg, flush=True)


# ------------------------------------------------------------------------------------- setup
def ensure_bench_packages() -> dict[str, str]:
    """pip-install the bench-only packages into this interpreter's env when missing."""
    status = {}
    missing = [pkg for mod, pkg in BENCH_PACKAGES if importlib.util.find_spec(mod) is None]
    if missing:
        log(f"setup: installing {', '.join(missing)} into {sys.prefix}")
        r = subprocess.run([PY, "-m", "pip", "install", "-q", *missing], capture_output=True,
                           text=True)
        if r.returncode:
            log(f"setup: pip failed ({r.stderr.strip().splitlines()[-1:]}); continuing without")
        importlib.invalidate_caches()
    for mod, pkg in BENCH_PACKAGES:
        status[pkg] = "ok" if importlib.util.find_spec(mod) is not None else "missing"
    return status


def _duckdb_platform() -> str:
    m = platform.machine().lower()
    arch = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}.get(m, m)
    return f"{sys.platform.replace('darwin', 'osx')}_{arch}"


def ensure_peer() -> tuple[str | None, str]:
    """(path to the nsys-ai executable, or None; a note). Creates the venv + private HOME."""
    exe = PEER_VENV / "bin" / "nsys-ai"
    try:
        if not exe.exists():
            log(f"setup: creating {PEER_VENV.relative_to(ROOT)} with {' '.join(PEER_PINS)}")
            failed = create_venv(PEER_VENV, PEER_PINS, "nsys-ai")
            if failed:
                return None, failed
        ext = list((PEER_VENV / "lib").glob(
            f"python*/site-packages/duckdb_extension_sqlite_scanner/extensions/{DUCKDB_VERSION}/"
            "sqlite_scanner.duckdb_extension"))
        if not ext:
            return None, "sqlite_scanner extension binary not found in the nsys-ai venv"
        dest = PEER_HOME / ".duckdb" / "extensions" / DUCKDB_VERSION / _duckdb_platform()
        dest.mkdir(parents=True, exist_ok=True)
        target = dest / ext[0].name
        if not target.exists() or target.stat().st_size != ext[0].stat().st_size:
            shutil.copyfile(ext[0], target)
    except (OSError, subprocess.CalledProcessError) as exc:
        return None, f"nsys-ai setup failed: {exc}"
    return str(exe), "ok"


# --------------------------------------------------------------------------------- children
@dataclass
class RunResult:
    seconds: float
    cpu: float  # user + system CPU seconds of the child
    peak_rss: int  # bytes
    rc: int
    stdout: str
    stderr: str


def run_child(cmd: list[str], *, env: dict | None = None, cwd: str | None = None,
              timeout: float = 1800) -> RunResult:
    """Run ``cmd`` as its own process; wall time spawn→exit and its own peak RSS (wait4)."""
    OUT.mkdir(parents=True, exist_ok=True)
    out_p, err_p = OUT / "child.stdout", OUT / "child.stderr"
    with open(out_p, "wb") as fo, open(err_p, "wb") as fe:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=fo, stderr=fe, env=env, cwd=cwd,
                             start_new_session=True)
        killed = threading.Event()

        def kill():
            killed.set()
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except OSError:
                pass

        timer = threading.Timer(timeout, kill)
        timer.start()
        try:
            _, status, ru = os.wait4(p.pid, 0)
        finally:
            timer.cancel()
        dt = time.perf_counter() - t0
    p.returncode = rc = os.waitstatus_to_exitcode(status)
    if killed.is_set():
        rc = 124
    rss = ru.ru_maxrss * (1 if sys.platform == "darwin" else 1024)
    return RunResult(dt, ru.ru_utime + ru.ru_stime, rss, rc, out_p.read_text("utf-8", "replace"),
                     err_p.read_text("utf-8", "replace"))


# ---------------------------------------------------------------------------------- traces
def _generator_hash() -> str:
    h = hashlib.sha1()
    for p in sorted((ROOT / "nsys_diag" / "synth").glob("*.py")) + [HERE / "gen.py"]:
        h.update(p.read_bytes())
    return h.hexdigest()[:8]


@functools.lru_cache(maxsize=None)
def _kernels_per_step() -> int:
    """Asked of a child: this process stays small, because Linux counts a child's peak RSS from
    the parent's memory image at fork/exec, so a big parent would inflate small children."""
    code = (f"from nsys_diag import synth\nsc = synth.preset({PRESET!r}, scale={SCALE!r})\n"
            "print(sum(k.count for p in sc.phases for k in p.kernels))")
    r = subprocess.run([PY, "-c", code], capture_output=True, text=True, cwd=str(ROOT))
    if r.returncode:
        raise SystemExit(f"cannot read the preset from the generator:\n{r.stderr[-2000:]}")
    return int(r.stdout.strip())


@dataclass
class Trace:
    size_m: float
    path: str
    steps: int
    file_bytes: int
    counts: dict
    gen_seconds: float | None  # None: taken from the cache

    @property
    def kernels(self) -> int:
        return int(self.counts.get("CUPTI_ACTIVITY_KIND_KERNEL", 0))

    @property
    def label(self) -> str:
        return f"{self.kernels / 1e6:.2f}M k"


def make_trace(size_m: float, timeout: float, *, preset: str = PRESET, scale: float = SCALE,
               kernels_per_step: int | None = None) -> Trace:
    sys.path.insert(0, str(HERE))
    from needed_columns import counts

    kps = kernels_per_step or _kernels_per_step()
    steps = max(2, math.ceil(size_m * 1e6 / kps))
    stem = f"{preset}-s{steps}-x{scale:g}-m{METRICS_PERIOD_NS}-{SCHEMA}"
    path = TRACES / f"{stem}-{_generator_hash()}.sqlite"
    TRACES.mkdir(parents=True, exist_ok=True)
    for stale in TRACES.glob(f"{stem}-*.sqlite*"):  # same parameters, older generator
        if stale != path:
            stale.unlink()
    gen_s = None
    if not path.exists():
        log(f"generating {path.name} ({steps} steps × {kps:,} kernels) …")
        r = run_child([PY, str(HERE / "gen.py"), str(path), preset, str(steps), str(scale),
                       str(METRICS_PERIOD_NS), SCHEMA], cwd=str(ROOT), timeout=timeout)
        if r.rc:
            raise SystemExit(f"trace generation failed (rc {r.rc}):\n{r.stderr[-2000:]}")
        gen_s = r.seconds
    c = counts(str(path))
    return Trace(size_m, str(path), steps, path.stat().st_size, c, gen_s)


def warm_page_cache(path: str) -> None:
    """Read the file once so every tool starts with it in the OS page cache (fair and stable)."""
    with open(path, "rb") as fh:
        while fh.read(1 << 24):
            pass


# ----------------------------------------------------------------------------------- tools
@dataclass
class Row:
    tool: str
    size_m: float
    trace: str
    kernels: int
    seconds: list[float] = field(default_factory=list)
    rss: list[int] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    status: str = "ok"
    note: str = ""
    inproc_s: list[float] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status == "ok" and bool(self.seconds)

    @property
    def tmin(self) -> float | None:
        return min(self.seconds) if self.ok else None

    @property
    def tmed(self) -> float | None:
        return statistics.median(self.seconds) if self.ok else None

    @property
    def cpu_min(self) -> float | None:
        return min(self.cpu) if self.ok and self.cpu else None

    @property
    def peak(self) -> int | None:
        return max(self.rss) if self.ok else None


class Tool:
    """A way to run one timed child; ``check`` validates its output (False → failed row)."""

    def __init__(self, name, cmd, *, env=None, cwd=None, before=None, check=None,
                 inproc_key=None):
        self.name, self.cmd, self.env, self.cwd = name, cmd, env, cwd
        self.before, self.check, self.inproc_key = before, check, inproc_key


def _json_ok(text: str) -> tuple[bool, dict | None]:
    try:
        return True, json.loads(text)
    except ValueError:
        return False, None


def _peer_cache_paths(trace: Path) -> list[Path]:
    return [p for p in trace.parent.glob(trace.name + ".nsys-cache*")]


def _clear_peer_cache(trace: Path) -> None:
    for p in _peer_cache_paths(trace):
        shutil.rmtree(p) if p.is_dir() else p.unlink()


def tools_for(trace: Trace, largest: bool, args, readers: dict, peer_exe: str | None) -> list:
    t = trace.path
    tools = [Tool("floor: ADBC → Arrow", [PY, str(HERE / "floor.py"), t, "adbc"],
                  inproc_key="read_s")] if readers.get("adbc-driver-sqlite") == "ok" else []
    if readers.get("adbc-driver-sqlite") == "ok":
        tools.append(Tool("floor: ADBC → Arrow, concurrent", [PY, str(HERE / "floor.py"), t,
                                                              "adbc-threads"], inproc_key="read_s"))
    if readers.get("connectorx") == "ok":
        tools.append(Tool("floor: connectorx → Arrow", [PY, str(HERE / "floor.py"), t,
                                                        "connectorx"], inproc_key="read_s"))
        tools.append(Tool("floor: connectorx → Arrow, concurrent",
                          [PY, str(HERE / "floor.py"), t, "connectorx-threads"],
                          inproc_key="read_s"))
    tools.append(Tool("ref: sqlite3 count/sum scan", [PY, str(HERE / "floor.py"), t, "count"],
                      inproc_key="read_s"))
    if largest:
        tools.append(Tool("naive: pandas.read_sql", [PY, str(HERE / "naive.py"), t],
                          inproc_key="seconds"))
    if largest and not args.skip_peer and peer_exe:
        copy = PEER_DIR / Path(t).name
        env = {**os.environ, "HOME": str(PEER_HOME), "NO_COLOR": "1"}
        cmd = [peer_exe, "analyze", str(copy), "--format", "json"]
        tools.append(Tool("nsys-ai 0.3.0 cold", cmd, env=env, cwd=str(PEER_DIR),
                          before=lambda: _clear_peer_cache(copy)))
        tools.append(Tool("nsys-ai 0.3.0 warm", cmd, env=env, cwd=str(PEER_DIR)))
    tools.append(Tool("nsys-diag analyze", [OURS, "analyze", t, "--json", "-", "--no-html"]))
    tools.append(Tool(f"nsys-diag analyze --memory-budget {BOUNDED_BUDGET}",
                      [OURS, "analyze", t, "--json", "-", "--no-html", "--memory-budget",
                       BOUNDED_BUDGET]))
    if largest and not args.skip_fallback:
        tools.append(Tool("nsys-diag analyze (sqlite3 reader)",
                          [OURS, "analyze", t, "--json", "-", "--no-html"],
                          env={**os.environ, "NSYS_DIAG_NO_ADBC": "1"}))
    return tools


def prepare_peer_copy(trace: Trace) -> None:
    """nsys-ai writes ``<trace>.nsys-cache/`` beside its input: give it a copy of its own."""
    PEER_DIR.mkdir(parents=True, exist_ok=True)
    copy = PEER_DIR / Path(trace.path).name
    for old in PEER_DIR.iterdir():  # only the copy for this trace is kept
        if old != copy and not old.name.startswith(copy.name):
            shutil.rmtree(old) if old.is_dir() else old.unlink()
    if not copy.exists() or copy.stat().st_size != trace.file_bytes:
        _clear_peer_cache(copy)
        shutil.copyfile(trace.path, copy)


def measure(trace: Trace, tools: list[Tool], runs: int, timeout: float) -> list[Row]:
    rows = {tl.name: Row(tl.name, trace.size_m, trace.label, trace.kernels) for tl in tools}
    for i in range(runs):  # interleaved: a load spike hits every tool alike
        # A different (seeded, reproducible) order each run, so no tool always runs right after
        # the same one (whatever a neighbour leaves behind in caches and memory would otherwise
        # always hit the same tool; a rotation would not do: it keeps every predecessor).
        order = tools if i == 0 else random.Random(i).sample(tools, len(tools))
        for tl in order:
            row = rows[tl.name]
            if row.status != "ok":
                continue
            if tl.before:
                tl.before()
            r = run_child(tl.cmd, env=tl.env, cwd=tl.cwd, timeout=timeout)
            ok, doc = _json_ok(r.stdout) if r.rc == 0 else (False, None)
            if r.rc != 0 or not ok:
                row.status = "failed"
                why = "timed out" if r.rc == 124 else f"exit {r.rc}"
                tail = " | ".join((r.stderr.strip() or r.stdout.strip()).splitlines()[-3:])
                row.note = f"{why}: {tail[:300]}" if ok or r.rc else f"no JSON on stdout: {tail[:300]}"
                log(f"  {tl.name}: FAILED ({row.note})")
                continue
            row.seconds.append(r.seconds)
            row.rss.append(r.peak_rss)
            row.cpu.append(r.cpu)
            if tl.inproc_key and isinstance(doc, dict) and tl.inproc_key in doc:
                row.inproc_s.append(float(doc[tl.inproc_key]))
            if tl.name.startswith("nsys-ai") and isinstance(doc, dict):
                row.note = f"{len(doc.get('findings', []))} findings"
            elif tl.name.startswith("nsys-diag") and isinstance(doc, dict):
                v = doc.get("verdict") or {}
                row.note = f"verdict {v.get('code', '?')}" if isinstance(v, dict) else ""
                rw = (doc.get("trace") or {}).get("read_window")
                if isinstance(rw, dict) and rw.get("row_fraction") is not None:
                    row.note += f"; read {rw['row_fraction']:.0%} of the rows (window)"
                ch = (doc.get("trace") or {}).get("chunks")
                if rw is None and isinstance(ch, dict):
                    row.note += (f"; whole export in {ch.get('count')} chunks "
                                 f"(≤ {ch.get('max_rows'):,} rows, {ch.get('passes')} pass(es))")
            log(f"  run {i + 1}/{runs} {tl.name:40s} {r.seconds:8.2f} s  cpu {r.cpu:7.2f} s "
                f"{r.peak_rss / 1e6:8.0f} MB")
    for row in rows.values():
        if row.inproc_s and row.ok:
            extra = f"in-process {min(row.inproc_s):.2f} s"
            row.note = f"{row.note}; {extra}" if row.note else extra
    return list(rows.values())


def time_help(n: int = 5) -> dict:
    times = []
    for _ in range(n):
        r = run_child([OURS, "--help"], timeout=60)
        if r.rc != 0:
            return {"status": "failed", "note": r.stderr[-300:]}
        times.append(r.seconds)
    code = ("import sys\nfrom nsys_diag.cli import main\nsys.argv=['nsys-diag','--help']\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            f"print(','.join(m for m in {HEAVY_MODULES!r} if m in sys.modules), file=sys.stderr)")
    r = run_child([PY, "-c", code], timeout=60)
    heavy = [m for m in r.stderr.strip().splitlines()[-1].split(",") if m] if r.stderr.strip() \
        else []
    return {"status": "ok", "seconds": times, "min_s": min(times), "heavy_imports": heavy}


# -------------------------------------------------------------------------------- streaming
STREAM_TOOL = f"nsys-diag analyze --memory-budget {STREAM_BUDGET} (stream)"
UNBOUNDED_TOOL = "nsys-diag analyze --memory-budget none"


def run_stream_section(args, runs: int) -> tuple[list, list]:
    """The streaming rows: ours at ``STREAM_BUDGET`` on every stream size, unbounded at the
    target size (``STREAM_TARGET_M``)."""
    text = STREAM_SIZES if args.stream_sizes is None else args.stream_sizes
    if args.quick or not text.strip():
        return [], []
    rows, traces = [], []
    for size in sorted(float(x) for x in text.split(",")):
        tr = make_trace(size, args.timeout, preset=STREAM_PRESET, scale=STREAM_SCALE,
                        kernels_per_step=STREAM_KPS)
        traces.append(tr)
        log(f"\n== streaming {tr.label}: {Path(tr.path).name} ({tr.file_bytes / 1e6:.0f} MB, "
            f"API {tr.counts.get('CUPTI_ACTIVITY_KIND_RUNTIME', 0):,})")
        tools = [Tool(STREAM_TOOL, [OURS, "analyze", tr.path, "--json", "-", "--no-html",
                                    "--memory-budget", STREAM_BUDGET])]
        if size == STREAM_TARGET_M:
            tools.append(Tool(UNBOUNDED_TOOL, [OURS, "analyze", tr.path, "--json", "-",
                                               "--no-html", "--memory-budget", "none"]))
        warm_page_cache(tr.path)
        rows += measure(tr, tools, runs, args.timeout)
    return rows, traces


def run_kineto_section(args, runs: int) -> tuple[list, list, tuple[bool, str] | None]:
    """The Kineto rows (``kineto_section.py``): ours and HTA's load, interleaved, on the
    generated ~35 MB legacy-schema trace; and whether the kernel totals per name agree."""
    if args.quick or args.skip_kineto:
        return [], [], None
    hta_py, note = ensure_hta(log)
    path = make_kineto_trace(TRACES, _generator_hash(), PY, ROOT)
    size = path.stat().st_size
    tr = Trace(KINETO_SIZE_M, str(path), KINETO_STEPS, size, {}, None)
    tools = [Tool(OURS_TOOL, [OURS, "analyze", str(path), "--json", "-", "--no-html"])]
    if hta_py is not None:
        tools.append(Tool(HTA_TOOL, [hta_py, str(HERE / "hta_child.py"), str(path.parent)],
                          inproc_key="load_s"))
    log(f"\n== Kineto {path.name} ({size / 1e6:.0f} MB, {KINETO_STEPS} steps)"
        + ("" if hta_py else f" — HTA: {note}"))
    rows = measure(tr, tools, runs, args.timeout)
    for r in rows:
        r.trace = f"Kineto {size / 1e6:.0f} MB"
    check = None
    if hta_py is not None:
        ours = run_child([OURS, "analyze", str(path), "--json", "-", "--no-html", "--window", "0:"],
                         timeout=args.timeout)
        hta = run_child([hta_py, str(HERE / "hta_child.py"), str(path.parent)],
                        timeout=args.timeout)
        ok_o, doc_o = _json_ok(ours.stdout)
        ok_h, doc_h = _json_ok(hta.stdout)
        check = kernel_totals_match(doc_o, doc_h) if ok_o and ok_h else \
            (False, "no JSON from " + ("HTA" if ok_o else "ours"))
    return rows, [tr], check


def stream_targets(rows: list, traces: list) -> list:
    """PASS/FAIL of the streaming targets (issue "Whole exports in bounded memory")."""
    if not traces:
        return []

    def verdict(ok):
        return "PASS" if ok else "FAIL"
    out = []
    at = {(r.tool, r.size_m): r for r in rows if r.ok}
    s8, u8 = at.get((STREAM_TOOL, STREAM_TARGET_M)), at.get((UNBOUNDED_TOOL, STREAM_TARGET_M))
    if s8 is not None:
        whole = "whole export" in (s8.note or "")
        out.append((f"streaming {s8.trace} at --memory-budget {STREAM_BUDGET}: whole export "
                    "analysed, peak RSS ≤ 1.2 GB",
                    f"{s8.peak / 1e6:.0f} MB; {s8.note}",
                    verdict(whole and s8.peak <= STREAM_RSS_BYTES)))
    if s8 is not None and u8 is not None:
        r = s8.tmin / u8.tmin
        out.append((f"streaming time ≤ {STREAM_TIME_RATIO}× the unbounded run on {s8.trace}",
                    f"{r:.2f}× ({s8.tmin:.1f} s vs {u8.tmin:.1f} s; unbounded peak "
                    f"{u8.peak / 1e6:.0f} MB)", verdict(r <= STREAM_TIME_RATIO)))
    srows = sorted((r for r in rows if r.tool == STREAM_TOOL and r.ok), key=lambda r: r.kernels)
    growth = []
    for a, b in zip(srows, srows[1:]):
        d = math.log2(b.kernels / a.kernels) if b.kernels > a.kernels else 0
        if d:
            growth.append(((b.tmin / a.tmin) ** (1 / d), f"{a.trace} → {b.trace}"))
    if growth:
        worst = max(g for g, _ in growth)
        out.append(("streaming time grows linearly or better up to "
                    f"{srows[-1].trace} (≤ {LINEAR_PER_DOUBLING}× per doubling)",
                    ", ".join(f"{w}: ×{g:.2f}" for g, w in growth),
                    verdict(worst <= LINEAR_PER_DOUBLING)))
    return out


# -------------------------------------------------------------------------------- reporting
def machine_info() -> dict:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                mem = int(line.split()[1]) * 1024
    except OSError:
        pass
    from importlib import metadata

    pk = {}
    for name in ("nsys-diag", "numpy", "pandas", "pyarrow", "adbc-driver-sqlite", "connectorx"):
        try:
            pk[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pk[name] = None
    peer_py = PEER_VENV / "bin" / "python"
    if peer_py.exists():
        r = subprocess.run([str(peer_py), "-c", "from importlib import metadata as m\n"
                            "for n in ('nsys-ai','duckdb'):\n print(n, m.version(n))"],
                           capture_output=True, text=True)
        for line in r.stdout.splitlines():
            n, v = line.split()
            pk[f"{n} (peer venv)"] = v
    try:
        sqlite_v = __import__("sqlite3").sqlite_version
    except Exception:
        sqlite_v = None
    return {"cpu": cpu, "cores": os.cpu_count(),
            "cores_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
            else os.cpu_count(),
            "ram_bytes": mem, "python": platform.python_version(),
            "platform": platform.platform(), "sqlite": sqlite_v, "packages": pk,
            "loadavg_start": os.getloadavg() if hasattr(os, "getloadavg") else None}


def _fmt(v, spec=".2f", none="—"):
    return none if v is None else format(v, spec)


def print_table(rows: list[Row], traces: list[Trace]) -> None:
    log("")
    log(f"{'tool':40s} {'trace':>8s} {'file MB':>7s} {'min s':>7s} {'median s':>8s} "
        f"{'cpu s':>6s} {'peak RSS MB':>11s}  note")
    log("-" * 118)
    size_of = {t.size_m: t for t in traces}
    for r in sorted(rows, key=lambda r: (r.size_m, _tool_order(r.tool))):
        t = size_of[r.size_m]
        peak = _fmt(r.peak / 1e6 if r.peak else None, ".0f")
        status = "" if r.ok else r.status.upper() + ": "
        log(f"{r.tool:40s} {r.trace:>8s} {t.file_bytes / 1e6:7.0f} {_fmt(r.tmin):>7s} "
            f"{_fmt(r.tmed):>8s} {_fmt(r.cpu_min):>6s} {peak:>11s}  {status}{r.note}")


def _tool_order(name: str) -> int:
    order = ("ref:", "floor: ADBC → Arrow, concurrent", "floor: ADBC",
             "floor: connectorx → Arrow, concurrent", "floor: connectorx", "naive",
             "nsys-ai 0.3.0 cold", "nsys-ai 0.3.0 warm", "nsys-diag analyze (",
             "nsys-diag analyze --", "nsys-diag analyze")
    for i, prefix in enumerate(order):
        if name.startswith(prefix):
            return i
    return len(order)


def _ratio(a, b):
    return a / b if a is not None and b else None


def summarize(rows: list[Row], traces: list[Trace], help_res: dict, quick: bool) -> dict:
    largest = max(traces, key=lambda t: t.size_m)
    at = {r.tool: r for r in rows if r.size_m == largest.size_m}
    ours = at.get("nsys-diag analyze")
    floors = [r for n, r in at.items() if n.startswith("floor:") and r.ok]
    floor = min(floors, key=lambda r: r.tmin) if floors else None
    naive, cold, warm = (at.get("naive: pandas.read_sql"), at.get("nsys-ai 0.3.0 cold"),
                         at.get("nsys-ai 0.3.0 warm"))
    o_t = ours.tmin if ours and ours.ok else None
    ratios = {
        "ours_over_floor": _ratio(o_t, floor.tmin if floor else None),
        "floor_tool": floor.tool if floor else None,
        "ours_over_floor_inprocess": _ratio(o_t, min(floor.inproc_s) if floor and
                                            floor.inproc_s else None),
        "naive_over_ours": _ratio(naive.tmin if naive and naive.ok else None, o_t),
        "nsysai_cold_over_ours": _ratio(cold.tmin if cold and cold.ok else None, o_t),
        "nsysai_warm_over_ours": _ratio(warm.tmin if warm and warm.ok else None, o_t),
        "nsysai_cold_rss_over_ours": _ratio(cold.peak if cold and cold.ok else None,
                                            ours.peak if ours and ours.ok else None),
    }
    # growth per doubling of the kernel count (ours, by size)
    ours_rows = sorted((r for r in rows if r.tool == "nsys-diag analyze" and r.ok),
                       key=lambda r: r.kernels)
    bounded = sorted((r for r in rows if r.tool == f"nsys-diag analyze --memory-budget "
                      f"{BOUNDED_BUDGET}" and r.ok), key=lambda r: r.kernels)
    growth = []
    for a, b in zip(ours_rows, ours_rows[1:]):
        d = math.log2(b.kernels / a.kernels) if b.kernels > a.kernels else None
        if not d:
            continue
        growth.append({"from": a.trace, "to": b.trace,
                       "time_per_doubling": (b.tmin / a.tmin) ** (1 / d),
                       "rss_per_doubling": (b.peak / a.peak) ** (1 / d)})
    full = largest.kernels >= TARGET_SIZE_M * 1e6 and not quick
    where = f"on {largest.label}" + ("" if full else " — smoke run, not the 2M-kernel target")

    def verdict(ok):
        return None if ok is None else ("PASS" if ok else "FAIL")

    targets = []
    r = ratios["ours_over_floor"]
    targets.append(("analyze ≤ 3× the Arrow-read floor " + where,
                    f"{_fmt(r)}× ({floor.tool if floor else 'no floor'})",
                    verdict(None if r is None else r <= TARGET_FLOOR_RATIO)))
    sp, mr = ratios["nsysai_cold_over_ours"], ratios["nsysai_cold_rss_over_ours"]
    targets.append(("≥ 10× faster than nsys-ai cold, with less peak memory " + where,
                    f"{_fmt(sp, '.1f')}× faster, its peak RSS {_fmt(mr)}× ours",
                    verdict(None if sp is None or mr is None else
                            sp >= TARGET_PEER_SPEEDUP and mr > 1)))
    pk = ours.peak if ours and ours.ok else None
    targets.append(("peak RSS < 1.5 GB " + where, f"{_fmt(pk / 1e6 if pk else None, '.0f')} MB",
                    verdict(None if pk is None else pk < TARGET_RSS_BYTES)))
    if growth:
        worst_t = max(g["time_per_doubling"] for g in growth)
        worst_m = max(g["rss_per_doubling"] for g in growth)
        targets.append(("time and memory grow linearly or better (≤ 2.2× per doubling)",
                        f"time ≤ {worst_t:.2f}×, memory ≤ {worst_m:.2f}× per doubling",
                        verdict(worst_t <= LINEAR_PER_DOUBLING and
                                worst_m <= LINEAR_PER_DOUBLING)))
    if bounded:
        peaks = ", ".join(f"{r.trace} {r.peak / 1e6:.0f} MB" for r in bounded)
        targets.append((f"bounded memory: with --memory-budget {BOUNDED_BUDGET} peak RSS stays "
                        "under the budget at every size (larger exports streamed whole)",
                        peaks, verdict(all(r.peak <= BOUNDED_BUDGET_BYTES for r in bounded))))
    if help_res.get("status") == "ok":
        targets.append(("`nsys-diag --help` < 0.3 s, no pandas/pyarrow/numpy/jinja2 import",
                        f"{help_res['min_s']:.3f} s (min of {len(help_res['seconds'])}); heavy "
                        f"imports: {', '.join(help_res['heavy_imports']) or 'none'}",
                        verdict(help_res["min_s"] < TARGET_HELP_S and
                                not help_res["heavy_imports"])))
    else:
        targets.append(("`nsys-diag --help` < 0.3 s", help_res.get("note", "failed"), "FAIL"))
    return {"ratios": ratios, "growth": growth, "targets": targets,
            "evaluated_on": largest.label, "full_target_run": full}


def print_summary(s: dict, help_res: dict) -> None:
    r = s["ratios"]
    log("")
    log(f"ratios on {s['evaluated_on']} (min times):")
    log(f"  ours / floor ({r['floor_tool']}):            {_fmt(r['ours_over_floor'])}×"
        f"   (vs its in-process read time only: {_fmt(r['ours_over_floor_inprocess'])}×)")
    log(f"  naive pandas / ours:                     {_fmt(r['naive_over_ours'])}×")
    log(f"  nsys-ai cold / ours:                     {_fmt(r['nsysai_cold_over_ours'])}×"
        f"   (peak RSS: {_fmt(r['nsysai_cold_rss_over_ours'])}× ours)")
    log(f"  nsys-ai warm / ours:                     {_fmt(r['nsysai_warm_over_ours'])}×")
    if s["growth"]:
        log("growth of nsys-diag analyze per doubling of kernels (min time, peak RSS):")
        for g in s["growth"]:
            log(f"  {g['from']:>9s} → {g['to']:<9s} time ×{g['time_per_doubling']:.2f}  "
                f"memory ×{g['rss_per_doubling']:.2f}")
    if help_res.get("status") == "ok":
        log(f"nsys-diag --help: min {help_res['min_s']:.3f} s of {len(help_res['seconds'])}; "
            f"heavy imports: {', '.join(help_res['heavy_imports']) or 'none'}")
    log("")
    log("targets (issue 'Scale'):")
    for name, value, v in s["targets"]:
        log(f"  [{v or 'n/a':4s}] {name}: {value}")


def print_machine(m: dict, load_end) -> None:
    log("")
    ram = f"{m['ram_bytes'] / 2**30:.1f} GiB" if m["ram_bytes"] else "?"
    log(f"machine: {m['cpu']}, {m['cores']} cores ({m['cores_usable']} usable), {ram} RAM, "
        f"{m['platform']}")
    log(f"python {m['python']}, SQLite {m['sqlite']}; " +
        ", ".join(f"{k} {v}" for k, v in m["packages"].items() if v))
    if m.get("loadavg_start"):
        la = ", ".join(f"{x:.1f}" for x in m["loadavg_start"])
        le = ", ".join(f"{x:.1f}" for x in load_end) if load_end else "?"
        log(f"load average at start {la}; at end {le} (other work on the machine skews times)")


def run_profile(trace: Trace) -> str | None:
    """pyinstrument profile of ours on the largest trace → bench/out/profile.{txt,html}."""
    if importlib.util.find_spec("pyinstrument") is None:
        return None
    txt = OUT / "profile.txt"
    html = OUT / "profile.html"
    base = [PY, "-m", "pyinstrument", "-m", "nsys_diag", "analyze", trace.path, "--json",
            str(OUT / "profile.json"), "--no-html"]
    subprocess.run(base[:3] + ["-r", "text", "-o", str(txt)] + base[3:], capture_output=True,
                   cwd=str(ROOT))
    subprocess.run(base[:3] + ["-r", "html", "-o", str(html)] + base[3:], capture_output=True,
                   cwd=str(ROOT))
    return str(txt) if txt.exists() else None


# ------------------------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default=None,
                    help="trace sizes in millions of kernels, comma-separated (default 0.5,1,2)")
    ap.add_argument("--runs", type=int, default=None, help="runs per tool (default 3)")
    ap.add_argument("--skip-peer", action="store_true", help="do not run nsys-ai")
    ap.add_argument("--skip-fallback", action="store_true",
                    help="do not run ours with the sqlite3 reader")
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: one small trace (0.05M kernels), one run each")
    ap.add_argument("--profile", action="store_true",
                    help="also write a pyinstrument profile of ours on the largest trace")
    ap.add_argument("--stream-sizes", default=None,
                    help=f"streaming export sizes in millions of kernels (default {STREAM_SIZES}; "
                         "'' to skip)")
    ap.add_argument("--skip-kineto", action="store_true",
                    help="do not run the PyTorch-profiler (Kineto) row against HTA")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per child run")
    ap.add_argument("--json", default=None,
                    help="results JSON path (default bench/out/results.json; "
                         "results-quick.json with --quick)")
    args = ap.parse_args(argv)
    args.json = args.json or str(OUT / ("results-quick.json" if args.quick else "results.json"))
    sizes = [float(x) for x in (args.sizes or ("0.05" if args.quick else "0.5,1,2")).split(",")]
    runs = args.runs or (1 if args.quick else 3)
    if runs < 1:
        ap.error("--runs must be ≥ 1")
    OUT.mkdir(parents=True, exist_ok=True)

    readers = ensure_bench_packages()
    # Byte-compile ours once, as `pip install` does for a wheel (and as nsys-ai's venv is): with
    # PYTHONDONTWRITEBYTECODE set, an editable checkout would otherwise be recompiled every run.
    subprocess.run([PY, "-m", "compileall", "-q", str(ROOT / "nsys_diag")], capture_output=True)
    peer_exe, peer_note = (None, "skipped (--skip-peer)") if args.skip_peer else ensure_peer()
    if not args.skip_peer and peer_exe is None:
        log(f"nsys-ai: {peer_note}")
    machine = machine_info()

    traces = []
    for size in sorted(sizes):
        tr = make_trace(size, args.timeout)
        traces.append(tr)
        gen = f"generated in {tr.gen_seconds:.1f} s" if tr.gen_seconds is not None else "cached"
        c = tr.counts
        log(f"trace {tr.label}: {Path(tr.path).name} ({tr.file_bytes / 1e6:.0f} MB, "
            f"{tr.steps} steps, {gen}) — kernels {c['CUPTI_ACTIVITY_KIND_KERNEL']:,}, API "
            f"{c['CUPTI_ACTIVITY_KIND_RUNTIME']:,}, NVTX {c['NVTX_EVENTS']:,}, memcpy "
            f"{c['CUPTI_ACTIVITY_KIND_MEMCPY']:,}, memset {c['CUPTI_ACTIVITY_KIND_MEMSET']:,}, "
            f"GPU metrics {c['GPU_METRICS']:,}")

    rows: list[Row] = []
    largest = traces[-1]
    for tr in traces:
        is_largest = tr is largest
        if is_largest and peer_exe and not args.skip_peer:
            prepare_peer_copy(tr)
        tools = tools_for(tr, is_largest, args, readers, peer_exe)
        if not args.skip_peer and peer_exe is None and is_largest:
            for name in ("nsys-ai 0.3.0 cold", "nsys-ai 0.3.0 warm"):
                rows.append(Row(name, tr.size_m, tr.label, tr.kernels, status="failed",
                                note=peer_note))
        log(f"\n== {tr.label} ({runs} run(s) per tool, interleaved)")
        warm_page_cache(tr.path)
        rows += measure(tr, tools, runs, args.timeout)
    stream_rows, stream_traces = run_stream_section(args, runs)
    rows += stream_rows
    kineto_rows, kineto_traces, kineto_check = run_kineto_section(args, runs)
    rows += kineto_rows
    help_res = time_help()
    prof = run_profile(largest) if args.profile else None

    load_end = os.getloadavg() if hasattr(os, "getloadavg") else None
    print_table(rows, traces + stream_traces + kineto_traces)
    summary = summarize(rows, traces, help_res, args.quick)
    summary["targets"] += stream_targets(stream_rows, stream_traces)
    summary["targets"] += kineto_targets(kineto_rows, kineto_check)
    print_summary(summary, help_res)
    print_machine(machine, load_end)
    if prof:
        log(f"profile of ours: {prof} (and profile.html)")

    result = {
        "machine": {**machine, "loadavg_end": load_end},
        "config": {"preset": PRESET, "scale": SCALE, "metrics_period_ns": METRICS_PERIOD_NS,
                   "schema": SCHEMA, "runs": runs, "sizes_m": sizes, "quick": args.quick,
                   "peer": peer_note if peer_exe is None else "nsys-ai 0.3.0"},
        "traces": [asdict(t) for t in traces + stream_traces + kineto_traces],
        "rows": [{**asdict(r), "min_s": r.tmin, "median_s": r.tmed, "cpu_min_s": r.cpu_min,
                  "peak_rss_bytes": r.peak}
                 for r in rows],
        "help": help_res,
        **{k: v for k, v in summary.items()},
        "targets": [{"target": n, "value": v, "result": res} for n, v, res in summary["targets"]],
    }
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(result, indent=2, default=str) + "\n")
    log(f"results: {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
