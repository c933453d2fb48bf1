"""Streaming (``--memory-mode stream``): the whole export analysed chunk by chunk gives the
in-memory answers — counts, per-step rows, verdict and evidence identical, sums to 1e-9."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from nsys_diag.app.analyze import analyze_path
from nsys_diag.app.options import build_options

SAMPLES = Path(__file__).resolve().parents[2] / "sample_traces"
TRACES = sorted(p.name for p in SAMPLES.glob("*.sqlite"))
IGNORED = {"generated_at"}
"""Keys that legitimately differ (the run's own time)."""


def _view(path: Path, **kw) -> dict:
    view = analyze_path(str(path), build_options(**kw), generated_at="t")
    return json.loads(json.dumps(view, default=str))


def assert_same(a, b, where="$"):
    """Equal JSON: ints/strings/lists identical, floats to relative 1e-9."""
    if isinstance(a, dict) and isinstance(b, dict):
        assert set(a) - IGNORED == set(b) - IGNORED, f"{where}: keys {set(a) ^ set(b)}"
        for k in a:
            if k not in IGNORED:
                assert_same(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list) and isinstance(b, list):
        assert len(a) == len(b), f"{where}: {len(a)} vs {len(b)} items"
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{where}[{i}]")
    elif isinstance(a, float) or isinstance(b, float):
        assert a is not None and b is not None, f"{where}: {a!r} vs {b!r}"
        assert math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12), f"{where}: {a!r} vs {b!r}"
    else:
        assert a == b, f"{where}: {a!r} vs {b!r}"


def _without_chunks(view: dict) -> dict:
    view = dict(view)
    view["trace"] = {k: v for k, v in view["trace"].items() if k != "chunks"}
    return view


@pytest.mark.parametrize("name", TRACES)
@pytest.mark.parametrize("chunk_rows", [400, 1500])
def test_streamed_equals_in_memory(name, chunk_rows):
    whole = _view(SAMPLES / name, memory_budget="none")
    streamed = _view(SAMPLES / name, chunk_rows=chunk_rows)
    assert streamed["trace"]["read_window"] is None
    chunks = streamed["trace"].get("chunks")
    assert chunks is not None and chunks["count"] >= 1
    assert_same(whole, _without_chunks(streamed))


@pytest.fixture
def small_zones(monkeypatch):
    """Zone maps with blocks of 16 rowids (the sample traces are far below the real block), and a
    record of the maps built."""
    from nsys_diag.loaders import zone_map as Z

    monkeypatch.setattr(Z, "BLOCK_ROWS", 16)
    monkeypatch.setattr(Z, "MIN_ZONED_ROWS", 32)
    built: list = []
    real = Z.build_zone_map

    def spy(db):
        built.append(real(db))
        return built[-1]
    monkeypatch.setattr(Z, "build_zone_map", spy)
    return built


@pytest.mark.parametrize("name", TRACES)
def test_streamed_with_zone_maps_equals_in_memory(name, small_zones):
    """Chunks read through rowid ranges (``loaders/zone_map.py``) give the in-memory answers."""
    whole = _view(SAMPLES / name, memory_budget="none")
    streamed = _view(SAMPLES / name, chunk_rows=400)
    if streamed["trace"]["chunks"]["count"] > 1:
        assert small_zones and small_zones[0].tables, "a zone map was built and used"
    assert_same(whole, _without_chunks(streamed))


def test_small_chunks_make_many_chunks():
    streamed = _view(SAMPLES / "worked_example.sqlite", chunk_rows=300)
    assert streamed["trace"]["chunks"]["count"] >= 5


SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "traces" / "nsys"
REAL = sorted(p.name for p in SHARED.glob("*.sqlite")) if SHARED.is_dir() else []


@pytest.mark.skipif(not REAL, reason="../shared/traces is not beside the checkout")
@pytest.mark.parametrize("name", REAL)
def test_streamed_real_traces_equal_in_memory(name):
    whole = _view(SHARED / name, memory_budget="none")
    streamed = _view(SHARED / name, chunk_rows=2000)
    assert streamed["trace"]["read_window"] is None
    assert_same(whole, _without_chunks(streamed))


@pytest.mark.skipif(not REAL, reason="../shared/traces is not beside the checkout")
@pytest.mark.parametrize("name", REAL)
def test_streamed_real_traces_with_zone_maps_equal_in_memory(name, small_zones):
    whole = _view(SHARED / name, memory_budget="none")
    assert_same(whole, _without_chunks(_view(SHARED / name, chunk_rows=2000)))


def _case_names():
    from nsys_diag.synth.cases import CASES

    return sorted(CASES)


@pytest.fixture(scope="module")
def case_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("stream_cases")


@pytest.mark.parametrize("name", _case_names())
def test_streamed_generated_cases_equal_in_memory(name, case_dir, monkeypatch):
    from nsys_diag.loaders import zone_map as Z
    from nsys_diag.synth.cases import CASES
    from nsys_diag.synth.writer import write_nsys_sqlite

    path = case_dir / f"{name}.sqlite"
    if not path.exists():
        case = CASES[name]
        scenario = case() if callable(case) else case
        write_nsys_sqlite(str(path), scenario)
    whole = _view(path, memory_budget="none")
    for rows in (1200, 300):  # 300: chunks read through zone maps of 16-rowid blocks
        if rows == 300:
            monkeypatch.setattr(Z, "BLOCK_ROWS", 16)
            monkeypatch.setattr(Z, "MIN_ZONED_ROWS", 32)
        streamed = _view(path, chunk_rows=rows)
        assert_same(whole, _without_chunks(streamed))


@pytest.mark.parametrize("name,kw", [
    ("worked_example.sqlite", {"steps_sel": "2:6"}),
    ("multi_gpu.sqlite", {"device": 1}),
    ("worked_example.sqlite", {"batch_size": 32, "model_flops_per_sample": 3e12}),
    ("healthy_tc.sqlite", {"step_range": "train_step.*"}),
    ("launch_bound.sqlite", {"phase_map": None, "max_rows": 3}),
])
def test_streamed_options_equal_in_memory(name, kw):
    whole = _view(SAMPLES / name, memory_budget="none", **kw)
    streamed = _view(SAMPLES / name, chunk_rows=500, **kw)
    assert_same(whole, _without_chunks(streamed))


@pytest.mark.parametrize("args", [["--device", "7"], ["--steps", "400:401"],
                                  ["--step-range", "no_such_range"]])
def test_streamed_usage_errors_match_in_memory(args, capsys):
    from nsys_diag.cli import main

    trace = str(SAMPLES / "worked_example.sqlite")
    codes = []
    for extra in ([], ["--chunk-rows", "400"]):
        with pytest.raises(SystemExit) as exc:
            main(["analyze", trace, "--no-html", "--json", "-", *args, *extra])
        codes.append((exc.value.code, capsys.readouterr().err.strip().splitlines()[-1]))
    assert codes[0] == codes[1] and codes[0][0] == 2


def test_budget_over_estimate_streams_whole_export(monkeypatch):
    """A budget the estimate does not fit streams (default mode) or reads the middle window
    (``--memory-mode middle``)."""
    from nsys_diag.loaders import memory_estimate

    path = SAMPLES / "worked_example.sqlite"
    huge = (20 * 2**30, "pretend: a 7 GiB export")  # the estimate of a file 1G does not fit
    monkeypatch.setattr(memory_estimate, "estimate_memory", lambda p: huge)
    budget = "1G"
    streamed = _view(path, memory_budget=budget)
    assert streamed["trace"]["read_window"] is None and streamed["trace"]["chunks"]["count"] >= 1
    assert_same(_view(path, memory_budget="none"), _without_chunks(streamed))
    middle = _view(path, memory_budget=budget, memory_mode="middle")
    assert middle["trace"]["read_window"]["reason"] == "memory_budget"
    assert "chunks" not in middle["trace"]


def test_steps_fall_back_to_launch_times_when_counts_do_not_answer(monkeypatch):
    """When the settled steps ask for kernel counts of intervals the pass did not count, a pass
    keeping every kernel's launch time settles them (same answers, one more pass)."""
    from nsys_diag.analyses.engine import driver

    monkeypatch.setattr(driver, "count_intervals", lambda steps: [])
    path = SAMPLES / "worked_example.sqlite"
    streamed = _view(path, chunk_rows=400)
    assert streamed["trace"]["chunks"]["passes"] >= 2
    assert_same(_view(path, memory_budget="none"), _without_chunks(streamed))


def test_kernel_counts_answer_only_what_was_counted():
    import numpy as np

    from nsys_diag.analyses.steps.repeat import KernelCounts, MissingCounts, kernels_per_step

    s, e = np.array([0, 10]), np.array([10, 20])
    kc = KernelCounts(5, {KernelCounts.key(s, e): np.array([2, 3])})
    assert kernels_per_step(kc, s, e).tolist() == [2, 3] and len(kc) == 5
    with pytest.raises(MissingCounts):
        kernels_per_step(kc, s, e + 1)


def test_chunk_room_leaves_out_what_every_chunk_holds(monkeypatch):
    """The budget's room for one chunk is what is left after the base, the per-kernel state kept
    across chunks and the skeleton's NVTX list: more kernels or more NVTX rows in the same
    budget give smaller chunks."""
    import sqlite3

    from nsys_diag.app import stream
    from nsys_diag.app.memory_policy import plan_memory
    from nsys_diag.loaders import memory_estimate
    from nsys_diag.model.options import AnalyzeOptions

    path = str(SAMPLES / "worked_example.sqlite")
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    kernels = con.execute("SELECT max(rowid) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
    nvtx = con.execute("SELECT max(rowid) FROM NVTX_EVENTS").fetchone()[0]
    con.close()
    assert stream.held_bytes(path) == (stream.RETAINED_BYTES_PER_KERNEL * kernels
                                       + stream.SKELETON_BYTES_PER_NVTX_ROW * nvtx)
    monkeypatch.setattr(memory_estimate, "estimate_memory", lambda p: (2 * 2**30, "pretend"))
    monkeypatch.setattr(stream, "MIN_CHUNK_ROWS", 1)
    opts = AnalyzeOptions(memory_budget_bytes=2**30)
    rows = plan_memory(path, opts).chunk_rows
    per_row = 2 * 2**30 / stream._event_rows(path)
    room = (2**30 - stream.STREAM_BASE_BYTES - stream.held_bytes(path)) * stream.CHUNK_MEMORY_SHARE
    assert rows == int(room / per_row) > 1
    monkeypatch.setattr(stream, "held_bytes", lambda p: 600 * 2**20)  # e.g. millions of ranges
    assert plan_memory(path, opts).chunk_rows < rows


def test_device_seen_only_in_a_later_chunk_keeps_its_gpu_row(tmp_path):
    """A GPU absent from the export's GPU table whose work starts late (in a later chunk) still
    gets its ``GPU n`` row: the summary's sample rows are the union over every chunk."""
    import shutil
    import sqlite3

    path = tmp_path / "late_gpu.sqlite"
    shutil.copy(SAMPLES / "multi_gpu.sqlite", path)
    con = sqlite3.connect(path)
    con.execute("DELETE FROM TARGET_INFO_GPU")
    mid = con.execute("SELECT (min(start) + max(start)) / 2 FROM CUPTI_ACTIVITY_KIND_KERNEL "
                      "WHERE deviceId = 1").fetchone()[0]
    for table in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
                  "CUPTI_ACTIVITY_KIND_MEMSET"):
        if con.execute("SELECT count(*) FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0]:
            con.execute(f"DELETE FROM {table} WHERE deviceId = 1 AND start < ?", (mid,))
    con.commit()
    con.close()
    whole = _view(path, memory_budget="none")
    streamed = _view(path, chunk_rows=400)
    assert streamed["trace"]["chunks"]["count"] >= 3
    assert [g["id"] for g in whole["trace"]["gpus"]] == [0, 1]
    assert_same(whole["trace"]["gpus"], streamed["trace"]["gpus"])
    # GPU 1 idles through the first half, so the cuts there are inexact: a gap may be split
    # (docs/streaming.md, Exactness) — every other answer is the in-memory one
    assert streamed["trace"]["chunks"]["inexact_cuts"] > 0
    for view in (whole, streamed):
        for p in view["processes"]:
            p.pop("gaps", None)
        view.pop("gaps", None)
    assert_same(whole["verdict"], streamed["verdict"])
    assert_same(whole["processes"], streamed["processes"])


def _pretend_estimate(monkeypatch, path: Path, budget: int, chunks: int) -> None:
    """A memory estimate just over ``budget``, so that chunks of about ``1/chunks`` of the
    export's rows are planned (the chunk and guard floors lowered to one row)."""
    from nsys_diag.app import stream, stream_plan
    from nsys_diag.loaders import memory_estimate

    rows = stream._event_rows(str(path))
    per_row = (budget - stream.STREAM_BASE_BYTES - stream.held_bytes(str(path))) \
        * stream.CHUNK_MEMORY_SHARE / (rows / chunks)
    monkeypatch.setattr(memory_estimate, "estimate_memory", lambda p: (int(per_row * rows), "pretend"))
    monkeypatch.setattr(stream, "MIN_CHUNK_ROWS", 1)
    monkeypatch.setattr(stream_plan, "MIN_GUARD_ROWS", 1)


def test_budget_guard_replans_finer_and_answers_stay(monkeypatch):
    """A chunk that costs more memory per row than estimated makes the guard cut the rest of the
    export finer (``app/stream_plan.py``); the answers are still the in-memory ones."""
    from nsys_diag.app import stream_plan

    path = SAMPLES / "worked_example.sqlite"
    whole = _view(path, memory_budget="none")
    budget = 2**30
    _pretend_estimate(monkeypatch, path, budget, chunks=3)
    planned = _view(path, memory_budget="1G")["trace"]["chunks"]["count"]
    base = stream_plan._rss_now()
    calls = []

    def costly_peak():  # each chunk seems to take about the whole budget
        calls.append(1)
        return base + len(calls) * budget
    monkeypatch.setattr(stream_plan, "_peak_rss", costly_peak)
    guarded = _view(path, memory_budget="1G")
    assert guarded["trace"]["chunks"]["count"] > planned >= 3
    assert_same(whole, _without_chunks(guarded))


def test_process_named_only_by_an_nvtx_thread_name_keeps_its_name(tmp_path):
    """A GPU process with no PROCESSES/ThreadNames row and no NVTX range, named only by an NVTX
    thread-name row of its main thread: chunks read no NVTX, yet name it as the in-memory run
    does (the skeleton's threads name the chunk's processes)."""
    import shutil
    import sqlite3

    path = tmp_path / "named_by_nvtx.sqlite"
    shutil.copy(SAMPLES / "worked_example.sqlite", path)
    con = sqlite3.connect(path)
    gtid = con.execute("SELECT globalTid FROM CUPTI_ACTIVITY_KIND_RUNTIME LIMIT 1").fetchone()[0]
    pid = (gtid >> 24) & 0xFFFFFF
    main = (gtid & ~0xFFFFFF) | pid  # the main thread: tid == pid
    con.execute("DELETE FROM PROCESSES WHERE pid = ?", (pid,))
    con.execute("DELETE FROM ThreadNames WHERE globalTid = ?", (main,))
    con.execute("DELETE FROM NVTX_EVENTS")
    con.execute("INSERT INTO NVTX_EVENTS(start, end, eventType, text, globalTid) "
                "VALUES (0, NULL, 39, 'trainer-main', ?)", (main,))
    con.commit()
    con.close()
    whole = _view(path, memory_budget="none")
    streamed = _view(path, chunk_rows=400)
    assert streamed["trace"]["chunks"]["count"] >= 3
    assert [p["name"] for p in whole["trace"]["processes"]] == ["trainer-main"]
    assert_same(whole, _without_chunks(streamed))


@pytest.mark.parametrize("ahead", [True, False, "one cpu"])
def test_read_ahead_reads_the_next_chunk_on_a_thread_with_the_same_answers(monkeypatch, ahead):
    """Under a budget the guard decides whether the next chunk is read while one is analysed
    (``driver.run_pass``); read ahead (on the chunk-read thread) or not, the answers are the
    in-memory ones. With one usable CPU (``NSYS_DIAG_READ_THREADS=1``) nothing is read ahead,
    whatever the guard says."""
    import threading

    from nsys_diag import loaders
    from nsys_diag.app import stream_plan

    path = SAMPLES / "worked_example.sqlite"
    whole = _view(path, memory_budget="none")
    _pretend_estimate(monkeypatch, path, 2**30, chunks=4)
    monkeypatch.setattr(stream_plan.BudgetGuard, "read_ahead", lambda self, rows: bool(ahead))
    monkeypatch.setenv("NSYS_DIAG_READ_THREADS", "1" if ahead == "one cpu" else "2")
    threads = []
    real_load = loaders.load_trace

    def load(*a, **kw):
        if kw.get("chunk"):
            threads.append(threading.current_thread().name)
        return real_load(*a, **kw)
    monkeypatch.setattr(loaders, "load_trace", load)
    streamed = _view(path, memory_budget="1G")
    assert streamed["trace"]["chunks"]["count"] == len(threads) >= 4
    on_thread = [t.startswith("chunk-read") for t in threads]
    assert on_thread == ([False] + [True] * (len(threads) - 1) if ahead is True
                         else [False] * len(threads))
    assert_same(whole, _without_chunks(streamed))


@pytest.mark.parametrize("name", ["worked_example.sqlite", "multi_gpu.sqlite"])
def test_replans_while_a_chunk_is_read_ahead_keep_the_answers(monkeypatch, name):
    """A cost per row that rises chunk after chunk makes the guard re-plan the chunks left finer
    while the next one is already read ahead (it keeps its target; the replan starts after it):
    the answers are still the in-memory ones."""
    from nsys_diag.app import stream_plan

    path = SAMPLES / name
    whole = _view(path, memory_budget="none")
    _pretend_estimate(monkeypatch, path, 2**30, chunks=4)
    monkeypatch.setenv("NSYS_DIAG_READ_THREADS", "2")
    seen = {"calls": 0, "replans_ahead": 0}
    real_call = stream_plan.BudgetGuard.__call__

    def rising_cost(self, index, rows, next_lo, pending, ahead_rows=0):
        seen["calls"] += 1
        at_once = max(2.0, self.plan.chunk_rows * 3.5 / 1.3 ** seen["calls"])
        cost = self.room() / at_once  # the room holds fewer rows after every chunk
        self.peak = self.base or 0
        monkeypatch.setattr(stream_plan, "_peak_rss",
                            lambda: int((self.base or 0) + cost * (rows + ahead_rows)))
        before = self.chunk_rows
        out = real_call(self, index, rows, next_lo, pending, ahead_rows)
        seen["replans_ahead"] += bool(ahead_rows and self.chunk_rows < before)
        return out
    monkeypatch.setattr(stream_plan.BudgetGuard, "__call__", rising_cost)
    streamed = _view(path, memory_budget="1G")
    assert seen["replans_ahead"] >= 1 and streamed["trace"]["chunks"]["count"] >= 4
    assert_same(whole, _without_chunks(streamed))


@pytest.mark.parametrize("name", ["overhead_bound.sqlite", "multi_gpu.sqlite"])
def test_chunks_without_nvtx_ranges_label_host_time_as_in_memory(name, tmp_path):
    """One NVTX range left, at the end of the export (no steps: the whole GPU span analysed):
    the chunks before it overlap no range, yet their host time is labelled "outside every NVTX
    range" as the in-memory run labels it — each chunk is analysed against the process's NVTX
    ranges from the skeleton (``engine.driver``), not only those overlapping it."""
    import shutil
    import sqlite3

    path = tmp_path / name
    shutil.copy(SAMPLES / name, path)
    con = sqlite3.connect(path)
    (keep,) = con.execute("SELECT rowid FROM NVTX_EVENTS WHERE end IS NOT NULL "
                          "ORDER BY start DESC LIMIT 1").fetchone()
    con.execute("DELETE FROM NVTX_EVENTS WHERE rowid != ?", (keep,))
    con.commit()
    con.close()
    whole = _view(path, memory_budget="none")
    assert "outside every NVTX range" in whole["gaps"]["by_cause_detail"]["host_cpu"]
    streamed = _view(path, chunk_rows=400)
    assert streamed["trace"]["chunks"]["count"] > 4
    assert_same(whole, _without_chunks(streamed))
