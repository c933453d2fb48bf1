"""Export metadata, threads and processes (NSYS_SQLITE.md §1.2, §1.3, §2.9–2.11).

* Versions: ``META_DATA_EXPORT`` (2024.5+) or ``EXPORT_META_DATA`` (2022.1–2023.2); pre-2022
  files have neither (an install path in StringIds can still date them).
* Capture span: ``[0, ANALYSIS_DETAILS.duration]`` (``startTime``/``stopTime`` are raw clock
  values, not on the event timeline); without that table the largest event end is used.
* Private data: the environment (``META_DATA_CAPTURE … ENVIRONMENT_VARIABLE`` rows), host facts
  (``TARGET_INFO_SYSTEM_ENV``) and the command line go to ``TraceMeta`` fields that reports show
  only with ``--include-host-info`` (environment values never).
"""
from __future__ import annotations

import re
import shlex

import numpy as np
import pandas as pd

from nsys_diag.loaders import prefetch_store
from nsys_diag.loaders.nsys_db import Col, NsysDb
from nsys_diag.loaders.nsys_strings import StringTable, decode_global_tid
from nsys_diag.model import contracts as C

HOST_KEYS = ("Hostname", "CpuCores", "CpuDescription", "CpuArchitecture", "OsDescription",
             "KernelVersion", "NvDriverVersion", "CudaDriverVersion", "HardwarePlatform")
"""TARGET_INFO_SYSTEM_ENV names kept in ``TraceMeta.host`` (the blob-like ones are skipped)."""

_INSTALL_PATH = re.compile(r"nsight[-_ ]systems[/-](20\d\d\.\d+(?:\.\d+)?)", re.IGNORECASE)


def read_export_metadata(db: NsysDb) -> dict[str, str]:
    for table in ("META_DATA_EXPORT", "EXPORT_META_DATA"):
        cols = db.columns(table)
        if {"name", "value"} <= set(cols):
            out: dict[str, str] = {}
            for name, value in db.rows(f'SELECT CAST(name AS TEXT), CAST(value AS TEXT) FROM "{db.table(table)}"'):
                if name is not None and name not in out:
                    out[str(name)] = "" if value is None else str(value)
            return out
    return {}


def version_hint(db: NsysDb) -> str:
    """nsys version of a pre-2022 export from an install path in StringIds ('' if none)."""
    if not db.has("StringIds"):
        return ""
    rows = db.rows(f'SELECT CAST(value AS TEXT) FROM "{db.table("StringIds")}" '
                   "WHERE value LIKE '%nsight%systems%20%' LIMIT 50")
    for (value,) in rows:
        m = _INSTALL_PATH.search(str(value or ""))
        if m:
            return m.group(1)
    return ""


def capture_duration(db: NsysDb) -> int | None:
    if "duration" in db.columns("ANALYSIS_DETAILS"):
        (v,) = db.rows(f'SELECT max(CAST(duration AS INTEGER)) FROM "{db.table("ANALYSIS_DETAILS")}"')[0]
        if v is not None and int(v) > 0:
            return int(v)
    return None


def session_start_utc(db: NsysDb) -> int | None:
    if "utcEpochNs" in db.columns("TARGET_INFO_SESSION_START_TIME"):
        rows = db.rows(f'SELECT CAST(utcEpochNs AS INTEGER) FROM '
                       f'"{db.table("TARGET_INFO_SESSION_START_TIME")}" '
                       "WHERE utcEpochNs IS NOT NULL LIMIT 1")
        if rows and rows[0][0] is not None:
            return int(rows[0][0])
    return None


def table_counts(db: NsysDb) -> dict[str, int]:
    """Row count of every table (``NsysDb.counts``; taken from ``loaders/prefetch.py`` when it
    already counted them in the background)."""
    counted = prefetch_store.take(db.path, prefetch_store.COUNTS_KEY)
    return counted if isinstance(counted, dict) else db.counts()


def host_info(db: NsysDb) -> dict[str, str]:
    if not {"name", "value"} <= set(db.columns("TARGET_INFO_SYSTEM_ENV")):
        return {}
    marks = ",".join("?" * len(HOST_KEYS))
    out: dict[str, str] = {}
    for name, value in db.rows(f'SELECT CAST(name AS TEXT), CAST(value AS TEXT) FROM '
                               f'"{db.table("TARGET_INFO_SYSTEM_ENV")}" '
                               f"WHERE name IN ({marks})", HOST_KEYS):
        if name not in out and value is not None:
            out[str(name)] = str(value)[:500]
    return out


_ENV_KEY = re.compile(r"(?:^|[;\x00\n])([A-Za-z_][A-Za-z0-9_.]*)=")


def parse_environment(blob: str) -> dict[str, str]:
    """``NAME=value`` pairs separated by ``;`` (2023+) or NUL (older), values may hold ``;``."""
    out: dict[str, str] = {}
    matches = list(_ENV_KEY.finditer(blob or ""))
    for m, nxt in zip(matches, matches[1:] + [None]):
        value = blob[m.end():nxt.start() if nxt else len(blob)]
        out.setdefault(m.group(1), value.rstrip("\x00\n"))
    return out


def device_environment(db: NsysDb) -> dict[str, str]:
    """The capture environment from TARGET_INFO_SYSTEM_ENV ``DeviceEnvironment`` (private)."""
    if not {"name", "value"} <= set(db.columns("TARGET_INFO_SYSTEM_ENV")):
        return {}
    rows = db.rows(f'SELECT CAST(value AS TEXT) FROM "{db.table("TARGET_INFO_SYSTEM_ENV")}" '
                   "WHERE name = 'DeviceEnvironment' LIMIT 1")
    return parse_environment(rows[0][0]) if rows and rows[0][0] else {}


def capture_info(db: NsysDb) -> tuple[dict[str, str], str, list[str]]:
    """(environment, command line, capture event types) from META_DATA_CAPTURE (2024.5+)."""
    if not {"name", "value"} <= set(db.columns("META_DATA_CAPTURE")):
        return {}, "", []
    env: dict[str, str] = {}
    commands: dict[str, list[tuple[int, str]]] = {}
    event_types: list[str] = []
    for name, value in db.rows(f'SELECT CAST(name AS TEXT), CAST(value AS TEXT) FROM '
                                  f'"{db.table("META_DATA_CAPTURE")}"'):
        name, value = str(name or ""), "" if value is None else str(value)
        if name.endswith("ENVIRONMENT_VARIABLE"):
            key, _, val = value.partition("=")
            if len(val) >= 2 and val[0] == val[-1] == '"':
                val = val[1:-1]
            env.setdefault(key, val)
        elif name == "CAPTURE_EVENT_TYPE":
            event_types.append(value)
        elif name.startswith("PROCESS_") and ":" in name:
            proc, _, field = name.partition(":")
            if field == "COMMAND":
                commands.setdefault(proc, []).append((-1, value))
            elif field.startswith("ARGUMENT_") and field[9:].isdigit():
                commands.setdefault(proc, []).append((int(field[9:]), value))
    lines = [" ".join(shlex.quote(v) for _, v in sorted(parts)) for _, parts in sorted(commands.items())]
    return env, " ; ".join(lines), event_types


# ---------------------------------------------------------------------------- threads/processes
def read_threads(db: NsysDb, strings: StringTable, nvtx_names: pd.DataFrame | None) -> pd.DataFrame:
    """Named threads: ThreadNames, plus NVTX thread names (eventType 39) for threads without one."""
    frames = []
    cols = db.columns("ThreadNames")
    if {"nameId", "globalTid"} <= set(cols):
        d = db.read("ThreadNames", [Col("globalTid", "int"), Col("nameId", "int")])
        names = np.asarray(strings.categorical(d.ints("nameId")), dtype=object)
        frames.append(pd.DataFrame({"global_tid": d.ints("globalTid"), "name": names}))
    if nvtx_names is not None and len(nvtx_names):
        frames.append(nvtx_names[["global_tid", "name"]])
    if not frames:
        return C.THREADS.empty()
    df = pd.concat(frames, ignore_index=True)
    df = df[(df["global_tid"] >= 0) & (df["name"].astype(str) != "")]
    df = df.drop_duplicates("global_tid", keep="first")
    _, pid, tid = decode_global_tid(df["global_tid"].to_numpy(np.int64))
    df = df.assign(pid=pid, tid=tid).sort_values("global_tid", kind="stable")
    return C.THREADS.validate(df, source=str(db.path))


def read_processes(db: NsysDb, owners: np.ndarray, threads: pd.DataFrame) -> pd.DataFrame:
    """Processes that own at least one event; names from PROCESSES, else the main thread's name."""
    # perf (bench): hash-unique first (millions of rows, a handful of processes), then sort
    gpids = np.sort(pd.unique(owners[owners >= 0])).astype(np.int64) if len(owners) \
        else np.zeros(0, np.int64)
    if not len(gpids):
        return C.PROCESSES.empty()
    pids = (gpids >> 24) & 0xFFFFFF
    by_gpid: dict[int, str] = {}
    by_pid: dict[int, str] = {}
    cols = db.columns("PROCESSES")
    if {"pid", "name"} <= set(cols):
        sel = ", ".join(f'CAST("{c}" AS INTEGER)' if c != "name" else f'CAST("{c}" AS TEXT)'
                        for c in ("globalPid", "pid", "name") if c in cols)
        wanted = set(pids.tolist())
        for row in db.rows(f'SELECT {sel} FROM "{db.table("PROCESSES")}"'):
            r = dict(zip([c for c in ("globalPid", "pid", "name") if c in cols], row))
            if r.get("pid") is None or int(r["pid"]) not in wanted or not r.get("name"):
                continue
            if r.get("globalPid") is not None:
                by_gpid.setdefault(int(r["globalPid"]), str(r["name"]))
            by_pid.setdefault(int(r["pid"]), str(r["name"]))
    main = threads[threads["pid"] == threads["tid"]] if len(threads) else threads
    main_names = dict(zip(main["pid"].tolist(), main["name"].astype(str).tolist())) if len(main) else {}
    names = [by_gpid.get(g) or by_pid.get(p) or main_names.get(p, "")
             for g, p in zip(gpids.tolist(), pids.tolist())]  # one per process: a handful
    df = pd.DataFrame({"global_pid": gpids, "pid": pids, "name": names})
    return C.PROCESSES.validate(df, source=str(db.path))
