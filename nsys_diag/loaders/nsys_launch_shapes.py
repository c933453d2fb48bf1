"""Kernel launch shapes and per-SM limits of an nsys export (NSYS_SQLITE.md §2.1, §2.10).

``read_launch_shapes`` reads the launch configuration (grid, block, registers per thread,
shared memory per block) of a strided sample of the kernel table — every row when the table is
small, else about ``SAMPLE_ROWS`` rows looked up through the rowid b-tree, each standing for
``weight`` launches. Perf: the configuration columns cost ≈ 1 s when read for every row of a
2M-kernel export; the sample costs ≈ 20,000 b-tree seeks. ``read_sm_limits`` reads what one SM
can hold (``TARGET_INFO_GPU``'s ``maxWarpsPerSm × threadsPerWarp``, ``maxBlocksPerSm``,
``maxRegistersPerSm``, ``maxShmemPerSm``; the ``*PerMultiprocessor`` columns of the older
``TARGET_INFO_CUDA_GPU``). Missing values are -1.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from nsys_diag.loaders.nsys_db import NsysDb
from nsys_diag.model import contracts as C
from nsys_diag.loaders.nsys_specs import KERNEL_TABLE
from nsys_diag.loaders.nsys_strings import StringTable, strip_runtime_suffix

SAMPLE_ROWS = 20_000
"""About this many kernel rows describe the launch shapes (all rows of a smaller table)."""

SHAPE_SOURCE_COLUMNS = ("gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ",
                        "registersPerThread", "staticSharedMemory", "dynamicSharedMemory",
                        "graphNodeId", "clusterX", "clusterY", "clusterZ", "maxActiveClusters")
SHAPE_FRAME_COLUMNS = ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z",
                       "registers_per_thread", "smem_static_bytes", "smem_dynamic_bytes",
                       "graph_node_id", "cluster_x", "cluster_y", "cluster_z",
                       "max_active_clusters")

_EMPTY = {"name": pd.Series([], dtype="object"), "start_ns": np.zeros(0, np.int64),
          "duration_ns": np.zeros(0, np.int64), "device_id": np.zeros(0, np.int64),
          "global_pid": np.zeros(0, np.int64), "weight": np.zeros(0, np.float64),
          **{c: np.zeros(0, np.int64) for c in SHAPE_FRAME_COLUMNS}}


def empty_shapes() -> pd.DataFrame:
    """A launch-shape frame with no rows (``C.LAUNCH_SHAPES``)."""
    return C.LAUNCH_SHAPES.validate(pd.DataFrame(_EMPTY))


def _int_expr(col: str, cols: list[str]) -> str:
    if col not in cols:
        return "-1"
    return f'CASE WHEN typeof(t."{col}") = \'integer\' THEN t."{col}" ELSE -1 END'


def strided_rows(db: NsysDb, table: str, select_sql: str, sample_rows: int) -> tuple[list[tuple], float]:
    """(rows, launches each row stands for) of ``SELECT {select_sql}`` over table ``t``: every row
    when the table has at most ``sample_rows`` rowids, else the rows whose rowid is a multiple of
    ``max(rowid) // sample_rows``, looked up through the rowid b-tree (a ``rowid % stride`` scan
    when the rowids are far sparser than their range)."""
    actual = db.table(table)
    if actual is not None and db.without_rowid(table):  # no rowid to stride over: every row
        return db.rows(f'SELECT {select_sql} FROM "{actual}" AS t'), 1.0
    bounds = db.rowid_bounds(table) if actual else None
    if actual is None or bounds is None:
        return [], 1.0
    low, high = bounds
    if high - low + 1 <= sample_rows:
        return db.rows(f'SELECT {select_sql} FROM "{actual}" AS t'), 1.0
    stride = max(1, high // sample_rows)
    first = -(-low // stride) * stride
    if (high - first) // stride > 4 * sample_rows:  # negative or sparse rowids
        rows = db.rows(f'SELECT {select_sql} FROM "{actual}" AS t WHERE rowid % {stride} = 0')
    else:
        rows = db.rows(f'WITH RECURSIVE m(r) AS (SELECT {first} UNION ALL SELECT r + {stride} '
                       f'FROM m WHERE r + {stride} <= {high}) SELECT {select_sql} FROM m '
                       f'CROSS JOIN "{actual}" AS t ON t.rowid = m.r')
    # perf: nsys writes rowids densely, so the rowid span stands for the row count (a count(*)
    # walks the whole table: 0.1 s on 2M kernels)
    return rows, ((high - low + 1) / len(rows)) if rows else 1.0


def read_launch_shapes(db: NsysDb, strings: StringTable, sample_rows: int = SAMPLE_ROWS
                       ) -> pd.DataFrame:
    """The launch configuration of a sample of kernel launches (empty when the table or its
    grid/block columns are absent): name, start_ns, duration_ns, device_id, global_pid,
    ``SHAPE_FRAME_COLUMNS`` and ``weight`` (launches each sampled row stands for), in time order."""
    cols = db.columns(KERNEL_TABLE) if db.has(KERNEL_TABLE) else []
    if not {"start", "end", "gridX", "blockX"} <= set(cols):
        return empty_shapes()
    name_col = next((c for c in ("demangledName", "shortName") if c in cols), None)
    exprs = [_int_expr(c, cols) for c in ("start", "end", "deviceId", "globalPid",
                                          *SHAPE_SOURCE_COLUMNS)]
    exprs.append(_int_expr(name_col, cols) if name_col else "-1")
    exprs.append(_int_expr("shortName", cols))
    rows, weight = strided_rows(db, KERNEL_TABLE, ", ".join(exprs), sample_rows)
    if not rows:
        return empty_shapes()
    a = np.asarray(rows, dtype=np.int64).reshape(len(rows), len(exprs))
    ok = (a[:, 0] >= 0) & (a[:, 1] >= a[:, 0])
    a = a[ok]
    names = strings.categorical(np.where(a[:, -2] >= 0, a[:, -2], a[:, -1]), missing="<unnamed>")
    frame = {"name": np.asarray(names, dtype=object), "start_ns": a[:, 0],
             "duration_ns": a[:, 1] - a[:, 0], "device_id": a[:, 2], "global_pid": a[:, 3],
             "weight": np.full(len(a), weight, np.float64)}
    for i, c in enumerate(SHAPE_FRAME_COLUMNS):
        frame[c] = a[:, 4 + i]
    out = pd.DataFrame(frame).sort_values(  # time order: the same frame whatever the row order
        ["start_ns", "device_id", "duration_ns", "global_pid", "name"], kind="stable")
    return C.LAUNCH_SHAPES.validate(out, source=str(db.path))


_LIMIT_LAYOUTS = (
    ("TARGET_INFO_GPU", "id", "maxWarpsPerSm", "threadsPerWarp", "maxBlocksPerSm",
     "maxRegistersPerSm", "maxShmemPerSm"),
    ("TARGET_INFO_CUDA_GPU", "deviceId", "maxWarpsPerMultiprocessor", "numThreadsPerWarp",
     "maxBlocksPerMultiprocessor", "maxRegistersPerMultiprocessor",
     "maxSharedMemoryPerMultiprocessor"),
)


def read_sm_limits(db: NsysDb) -> pd.DataFrame:
    """One row per GPU: device_id, max_threads_per_sm, max_blocks_per_sm, registers_per_sm,
    smem_per_sm_bytes (-1 where the export does not say; empty without a GPU table)."""
    out: dict[int, tuple[int, int, int, int]] = {}
    for table, key, warps, warp_size, blocks, regs, smem in _LIMIT_LAYOUTS:
        cols = db.columns(table) if db.has(table) else []
        if key not in cols:
            continue
        sel = ", ".join(_int_expr(c, cols) for c in (key, warps, warp_size, blocks, regs, smem))
        for dev, w, ws, b, r, s in db.rows(f'SELECT {sel} FROM "{db.table(table)}" AS t'):
            if dev is None or dev < 0 or dev in out:
                continue
            threads = w * ws if w > 0 and ws > 0 else -1
            out[int(dev)] = (threads, b, r, s)
        if out:
            break
    return C.SM_LIMITS.validate(pd.DataFrame({
        "device_id": np.fromiter(out, np.int64, len(out)),
        "max_threads_per_sm": np.array([v[0] for v in out.values()], np.int64),
        "max_blocks_per_sm": np.array([v[1] for v in out.values()], np.int64),
        "registers_per_sm": np.array([v[2] for v in out.values()], np.int64),
        "smem_per_sm_bytes": np.array([v[3] for v in out.values()], np.int64)}),
        source=str(db.path))


API_TABLES = ("CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_DRIVER")
_LAUNCH_NAME_SQL = ("SELECT id FROM StringIds WHERE value LIKE 'cudaLaunch%' OR value LIKE "
                    "'cuLaunch%' OR value LIKE 'cudaGraphLaunch%' OR value LIKE 'cuGraphLaunch%'")


_GRAPH_LAUNCH_SQL = ("SELECT id, value FROM StringIds WHERE value LIKE 'cudaGraphLaunch%' OR "
                     "value LIKE 'cuGraphLaunch%'")


def graph_launch_apis(db: NsysDb) -> list[str]:
    """The CUDA graph launch APIs (``cudaGraphLaunch``, ``cuGraphLaunch``; runtime suffix
    dropped) called in the export, sorted. Perf: a look-up in StringIds (which holds the strings
    the export uses), then per graph-launch name one ``EXISTS`` probe of the API tables that
    stops at the first call — no scan at all when no graph launch name was ever written."""
    if not db.has("StringIds"):
        return []
    ids = {int(i): strip_runtime_suffix(str(v)) for i, v in db.rows(_GRAPH_LAUNCH_SQL)
           if i is not None}
    tables = [db.table(t) for t in API_TABLES if "nameId" in db.columns(t)]
    found = {name for i, name in ids.items()
             if any(db.rows(f'SELECT EXISTS(SELECT 1 FROM "{t}" WHERE nameId = ?)', (i,))[0][0]
                    for t in tables)}
    return sorted(found)


def launch_calls_without_kernels(db: NsysDb) -> int | None:
    """Kernel launch calls (``cudaLaunch*``, ``cuLaunch*``, graph launches) in the CUDA API
    tables of an export whose kernel table is absent or empty — launches whose kernel activity
    was not recorded; None when the export holds kernel rows (then nothing is scanned: this
    costs one API-table scan only when there are no kernels)."""
    if db.has(KERNEL_TABLE) and db.count(KERNEL_TABLE) > 0:
        return None
    if not db.has("StringIds"):
        return 0
    total = 0
    for table in API_TABLES:
        actual = db.table(table)
        if actual is None or "nameId" not in db.columns(table):
            continue
        total += int(db.rows(f'SELECT count(*) FROM "{actual}" WHERE nameId IN '
                             f'({_LAUNCH_NAME_SQL})')[0][0] or 0)
    return total
