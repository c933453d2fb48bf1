"""Whole exports in bounded memory: read an nsys export chunk by chunk, analyse each chunk, merge.

When the estimated in-memory analysis does not fit ``--memory-budget`` (or ``--chunk-rows N``
asks for it), ``analyze`` runs here instead of reading everything (``--memory-mode stream``, the
default; ``middle`` keeps the older shortcut of analysing only the middle window that fits).

How (``docs/streaming.md``):

1. **Skeleton**: the whole NVTX list, processes, threads, GPUs and memory events
   (``load_trace(skeleton=True)``) — steps and phases are global values.
2. **Plan**: chunk targets every ``chunk_rows`` kernel + CUDA API rows, placed from a strided
   sample of the rows' start times (``app/stream_plan.ChunkPlan``); under a budget the chunks
   left are made smaller when one costs more memory per row than estimated (``BudgetGuard``).
3. **Pass**: for each target, read ``[lo, target]`` through the window push-down
   (``load_trace(time_window=…)``; a zone map, ``loaders/zone_map.py``, turns each chunk's
   whole-table scans into rowid-range reads), cut the chunk at the latest time every device
   computes (``analyses/engine/cuts.safe_cut``: no idle gap spans a cut), analyse each process's
   rows of ``[lo, cut)`` into small partials (each declared analysis's ``partial``,
   ``analyses/engine/declaration.py``), record the facts the global values need
   (``analyses/engine/globals.ProcessFacts``), drop the rows; the next chunk starts at the cut.
4. **Settle**: the exact steps, window and devices from the facts; when they differ from what the
   pass assumed, the pass runs once more with them.
5. **Merge** the partials into the per-process results the in-memory analysis gives
   (``analyses/engine/assemble.py``), then the verdicts.

Memory: one chunk's rows at a time plus the skeleton, the partials (per kernel name, per step, per
phase, top gaps) and 4 bytes per kernel (its duration, grouped by name: exact per-name medians;
8 while the merge gathers them; 16 are reserved, ``RETAINED_BYTES_PER_KERNEL``) —
``trace.chunks`` reports the chunk count and the largest chunk's rows.
"""
from __future__ import annotations

from nsys_diag.app.stream_plan import BudgetGuard, ChunkPlan
from nsys_diag.model.options import AnalyzeOptions
from nsys_diag.model.thresholds import Thresholds

DASK_MIN_CHUNKS = 4
"""With ``--dask``/``--scheduler`` an export that fits the budget is still cut into this many
chunks (the work to spread); a larger one into the budget's chunks."""
MIN_CHUNK_ROWS = 10_000
"""Fewer rows per chunk than this are never planned (per-chunk overhead: one SQLite pass each)."""
STREAM_BASE_BYTES = 200 * 2**20
"""What a streamed analysis holds besides its chunk and ``held_bytes`` (the per-kernel state and
the skeleton's NVTX, counted apart): interpreter and libraries, the rest of the skeleton and the
partials (measured ≈ 200–250 MB on 2M–8M-kernel exports, per-kernel state included — so this
errs on the safe side)."""
RETAINED_BYTES_PER_KERNEL = 16
"""What a streamed analysis is allowed per kernel of the export across its chunks, taken off the
budget's room for a chunk: it keeps each kernel's duration grouped by name (4 bytes: exact
per-name medians, ``kernels/table.py:KernelsPart``) and as much again while the merge gathers
each name's durations — 8 at the peak; the other 8 are margin (and keep the chunk plans of
earlier releases)."""
SKELETON_BYTES_PER_NVTX_ROW = 100
"""The skeleton's NVTX frame per NVTX row, held through every chunk (measured 69 B/row on a
3M-range ``emit_nvtx``-like export, plus its categorical labels)."""
CHUNK_MEMORY_SHARE = 0.85
"""Share of the budget left after ``STREAM_BASE_BYTES`` and ``held_bytes`` that one chunk's rows
may take (the rest: the estimate's error, measured up to +10% on a chunk; the budget guard,
``app/stream_plan.py``, corrects larger errors)."""


def stream_chunk_rows(path: str, options: AnalyzeOptions, by_budget: int | None = None
                      ) -> int | None:
    """Rows (kernel + CUDA API) per chunk for ``path`` under ``options``; None: read it whole.

    ``--chunk-rows N`` wins. Otherwise ``by_budget``: the rows the memory budget allows when the
    export does not fit it (``app/memory_policy.plan_memory`` decides; ``budget_chunk_rows``)."""
    if options.window_ns is not None:
        return None  # --window reads only that span (loaders/read_window.py)
    if options.chunk_rows:
        return int(options.chunk_rows)
    if options.scheduler:  # --dask/--scheduler: the chunks go to the workers whatever the size
        rows = _event_rows(path)
        spread = max(MIN_CHUNK_ROWS, -(-rows // DASK_MIN_CHUNKS)) if rows > 0 else None
        return min(r for r in (by_budget, spread) if r is not None) \
            if by_budget or spread else None
    return by_budget


def budget_chunk_rows(path: str, estimate_bytes: int, budget: int) -> int | None:
    """Rows per chunk that keep a streamed analysis within ``budget`` bytes: the budget's room
    (``CHUNK_MEMORY_SHARE`` of what is left after ``STREAM_BASE_BYTES`` and ``held_bytes``) over
    the estimated bytes per row (the whole-file estimate ÷ its kernel + API rows); None: no rows."""
    rows = _event_rows(path)
    if rows <= 0:
        return None
    per_row = estimate_bytes / rows
    room = max(budget - STREAM_BASE_BYTES - held_bytes(path), 0) * CHUNK_MEMORY_SHARE
    return max(MIN_CHUNK_ROWS, int(room / per_row))


def held_bytes(path: str) -> int:
    """Bytes a streamed analysis of ``path`` holds through all its chunks besides
    ``STREAM_BASE_BYTES``: the per-kernel state (``retained_bytes``) and the skeleton's NVTX list
    (``SKELETON_BYTES_PER_NVTX_ROW``; NVTX is read whole, docs/streaming.md)."""
    from nsys_diag.loaders.nsys_nvtx import NVTX_TABLE

    return retained_bytes(path) + SKELETON_BYTES_PER_NVTX_ROW * _max_rowid(path, (NVTX_TABLE,))


def retained_bytes(path: str) -> int:
    """What a streamed pass keeps across chunks by its end: ``RETAINED_BYTES_PER_KERNEL`` per
    kernel of the export."""
    from nsys_diag.loaders.nsys_specs import KERNEL_TABLE

    return RETAINED_BYTES_PER_KERNEL * _max_rowid(path, (KERNEL_TABLE,))


def chunk_share(path: str, chunk_rows: int) -> float:
    """The share (0–1) of the export's kernel + API rows one chunk holds."""
    rows = _event_rows(path)
    return min(1.0, chunk_rows / rows) if rows > 0 else 1.0


def rowid_less_tables(path: str) -> list[str]:
    """The event tables the stream reads by rowid ranges that are ``WITHOUT ROWID`` tables
    (crafted or rewritten exports): such an export is read in memory instead (``analyze``)."""
    from nsys_diag.loaders.nsys_db import NsysDb
    from nsys_diag.loaders.nsys_nvtx import NVTX_TABLE
    from nsys_diag.loaders.read_window import GPU_OP_TABLES, SAMPLE_TABLES

    with NsysDb(path) as db:
        return [t for t in dict.fromkeys((*GPU_OP_TABLES, *SAMPLE_TABLES, NVTX_TABLE))
                if db.without_rowid(t)]


def _event_rows(path: str) -> int:
    """Kernel + CUDA API rows of an nsys export (``max(rowid)``: no scan)."""
    from nsys_diag.loaders.read_window import SAMPLE_TABLES

    return _max_rowid(path, SAMPLE_TABLES)


def _max_rowid(path: str, tables) -> int:
    """The sum of ``max(rowid)`` — about the row count, read from the b-tree's end — of the
    ``tables`` of an nsys export that are present."""
    from nsys_diag.loaders.nsys_db import NsysDb

    with NsysDb(path) as db:
        return sum(max(b[1], 0) for b in map(db.rowid_bounds, tables) if b is not None)


def chunk_plan(path: str, chunk_rows: int) -> ChunkPlan:
    """The :class:`ChunkPlan` of ``path`` for chunks of about ``chunk_rows`` rows."""
    from nsys_diag.loaders.nsys_db import NsysDb
    from nsys_diag.loaders.read_window import sample_event_starts

    with NsysDb(path) as db:
        starts = sample_event_starts(db)
    return ChunkPlan(starts, _event_rows(path), int(chunk_rows))


def zone_map(path: str):
    """The export's zone map (``loaders/zone_map.py``): each chunk then reads the rowid range
    that can hold its rows instead of scanning every large table (about one scan to build)."""
    from nsys_diag.loaders.nsys_db import NsysDb
    from nsys_diag.loaders.zone_map import build_zone_map

    with NsysDb(path) as db:
        return build_zone_map(db)


def census_span(path: str) -> tuple[int, int] | None:
    """(first start, last end) of the export's kernels, memcpys and memsets (one C-level scan per
    table) — what a first pass assumes as a step-less process's GPU span."""
    from nsys_diag.loaders.nsys_db import NsysDb
    from nsys_diag.loaders.nsys_specs import KERNEL_TABLE, MEMCPY_TABLE, MEMSET_TABLE

    lo, hi = None, None
    with NsysDb(path) as db:
        for table in (KERNEL_TABLE, MEMCPY_TABLE, MEMSET_TABLE):
            actual = db.table(table)
            if actual is None or not {"start", "end"} <= set(db.columns(table)):
                continue
            # numbers only: SQLite orders a BLOB/TEXT cell above every number (hardening)
            row = db.rows(f'SELECT min("start"), max("end") FROM "{actual}" '
                          'WHERE typeof("start") IN (\'integer\', \'real\') '
                          'AND typeof("end") IN (\'integer\', \'real\') AND "end" >= "start"')
            if row and row[0][0] is not None:
                lo = int(row[0][0]) if lo is None else min(lo, int(row[0][0]))
                hi = int(row[0][1]) if hi is None else max(hi, int(row[0][1]))
    return None if lo is None or hi is None else (lo, hi)


def check_device(path: str, device: int) -> None:
    """``--device N`` without GPU work on N while other devices have some: the usage error the
    in-memory run gives (``selection.select_device``), from the export's distinct devices."""
    from nsys_diag.analyses.selection import usage_error as _fail
    from nsys_diag.loaders.nsys_db import NsysDb
    from nsys_diag.loaders.nsys_specs import KERNEL_TABLE, MEMCPY_TABLE, MEMSET_TABLE

    present: set[int] = set()
    with NsysDb(path) as db:
        for table in (KERNEL_TABLE, MEMCPY_TABLE, MEMSET_TABLE):
            actual = db.table(table)
            if actual is not None and "deviceId" in db.columns(table):
                present |= {int(r[0]) for r in db.rows(f'SELECT DISTINCT "deviceId" FROM "{actual}"')
                            if r[0] is not None}
    if present and device not in present:
        raise _fail(f"--device {device}: no GPU activity on that device "
                    f"(devices with activity: {', '.join(map(str, sorted(present)))})")


def analyze_streamed(path: str, options: AnalyzeOptions, th: Thresholds, chunk_rows: int):
    """``(AnalysisSuite, TraceMeta)`` of ``path`` analysed chunk by chunk (module docstring);
    on Dask workers with ``options.scheduler``. The processes' replays are attached
    (``app/replay.attach_replays``, each span read as a chunk is)."""
    import functools

    from nsys_diag.analyses.engine.driver import run_pass, run_stream, with_skeleton_nvtx
    from nsys_diag.loaders import Format, load_trace
    from nsys_diag.loaders.nsys_cuda import unmatched_warning
    from nsys_diag.loaders.parallel_reads import read_threads

    plan = chunk_plan(path, chunk_rows)
    # a budget (not --chunk-rows) is watched on the sequential pass: the chunks left are made
    # smaller when one took more memory per row than estimated (app/stream_plan.py)
    ahead = read_threads() >= 2  # read-ahead needs a second core (one: NSYS_DIAG_READ_THREADS=1)
    guard = BudgetGuard(plan, options.memory_budget_bytes, retained_bytes(path), read_ahead=ahead) \
        if options.memory_budget_bytes and not options.chunk_rows and not options.scheduler \
        else None
    targets = guard.first_targets() if guard is not None else plan.targets()
    skeleton, zones = _skeleton_and_zones(path, options, bool(targets))
    if options.scheduler:
        from nsys_diag.app.stream_dask import dask_runner

        runner = dask_runner(path, skeleton, targets, options, th, zones)
    else:
        def read(lo: int, hi: int):
            # the file was sniffed once, when the memory plan chose the stream (not per chunk)
            return with_skeleton_nvtx(load_trace(path, kernel_detail=False, time_window=(lo, hi),
                                                 chunk=True, zones=zones, nvtx=False,
                                                 known_threads=skeleton.threads,
                                                 format=Format.NSYS_SQLITE),
                                      skeleton, lo, hi)

        def runner(assume, only, keep_launches):
            if guard is not None:
                # the declarations imported first: the base then holds them, and the first
                # chunk's measured cost is its rows' alone
                from nsys_diag.analyses.engine.declaration import load_declarations

                load_declarations()
                guard.begin()
            return run_pass(skeleton, read, guard.planned if guard is not None else targets,
                            assume, options, th, only, keep_launches, replan=guard,
                            read_ahead=ahead)
    # the GPU span is asked only when a step-less process needs it (a scan of three tables);
    # on Dask the assumption travels to the workers, so it is computed first
    census = census_span(path) if options.scheduler else \
        functools.lru_cache(maxsize=1)(lambda: census_span(path))
    done = run_stream(skeleton, runner, options, th, census_span=census, chunk_rows=chunk_rows,
                      unmatched_warning=unmatched_warning)
    if done is not None:
        from nsys_diag.app.replay import attach_replays, export_rows

        suite, meta = done
        # the spans read as the chunks were: the zone map and the skeleton's NVTX (perf)
        attach_replays(path, suite, fmt=meta.format, export_rows=export_rows(meta.tables),
                       skeleton=skeleton, zones=zones)
    return done


def _skeleton_and_zones(path: str, options: AnalyzeOptions, chunked: bool):
    """The skeleton (checked against ``--step-range``/``--device``) and, when there is more than
    one chunk (``chunked``), the zone map, built on a thread while the skeleton is read (one
    chunk: its scan is no dearer than the map)."""
    from concurrent.futures import ThreadPoolExecutor

    from nsys_diag.analyses.selection import check_step_range
    from nsys_diag.loaders import Format, load_trace

    with ThreadPoolExecutor(1) as pool:
        mapping = pool.submit(zone_map, path) if chunked else None
        skeleton = load_trace(path, ncu=options.ncu_path, kernel_detail=False, skeleton=True,
                              format=Format.NSYS_SQLITE)
        check_step_range(skeleton, options)
        if options.device is not None:
            check_device(path, options.device)
        return skeleton, (mapping.result() if mapping is not None else None)
