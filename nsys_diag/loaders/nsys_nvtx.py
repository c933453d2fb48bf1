"""NVTX_EVENTS → NVTX (ranges), NVTX_MARKS, and NVTX thread names (NSYS_SQLITE.md §2.8).

* Ranges: eventType 59/70 (push/pop) and 60/71 (start/end); marks: 34; domain names: 75 rows
  per (process, domainId); thread names: 39. Filter by eventType, never by ``end IS NOT NULL``.
* text = StringIds[textId] when set, else the inline ``text`` (both happen, even in one file).
* Domain 0 (or NULL) is the default domain ``''``; a non-zero domain without a create row
  (time-cut exports) becomes ``domain#N`` — never the default domain.
* Times may be negative; a NULL range end means unterminated (end = capture end, closed=False).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from nsys_diag.loaders.nsys_db import Col, Columns, NsysDb, Text, and_where
from nsys_diag.loaders.read_window import ReadWindow
from nsys_diag.loaders.nsys_specs import NULL_TIME
from nsys_diag.loaders.nsys_strings import (StringTable, cap_names, categorical,
                                            decode_global_tid)
from nsys_diag.model import contracts as C
from nsys_diag.model.errors import SchemaError

NVTX_TABLE = "NVTX_EVENTS"
MARK = 34
THREAD_NAME = 39
PUSH_POP = (59, 70)
START_END = (60, 71)
DOMAIN_CREATE = 75
_WANTED = (MARK, THREAD_NAME, *PUSH_POP, *START_END, DOMAIN_CREATE)
READ_BATCH_ROWS = 500_000
"""The skeleton of a streamed export reads an NVTX table of more rowids than this in rowid ranges
of this many: an ``emit_nvtx`` capture holds millions of ranges, and one read held its SQLite →
Arrow copy beside the arrays (3M ranges: the skeleton's peak RSS 850 → 668 MB, 5.6 → 5.5 s).
The in-memory read is not batched: there the reads run at once and batching measured +200 MB
(1.61 → 1.81 GB on the same export)."""
_PAYLOAD_COLS = ("int64Value", "uint64Value", "int32Value", "uint32Value", "doubleValue",
                 "floatValue")


def _window_sql(window: ReadWindow, has_end: bool) -> str:
    """Rows of NVTX_EVENTS a read window keeps (see ``read_window``)."""
    lo, hi = int(window.start_ns), int(window.end_ns)
    ranges = ", ".join(map(str, PUSH_POP + START_END))
    alive = f'("end" IS NULL OR "end" > {lo})' if has_end else "1"
    mark_inside = window.instant('"start"')
    return (f'eventType IN ({THREAD_NAME}, {DOMAIN_CREATE}) '
            f'OR (eventType IN ({ranges}) AND "start" < {hi} AND {alive}) '
            f'OR (eventType = {MARK} AND {mark_inside})')


@dataclass
class NvtxResult:
    ranges: pd.DataFrame  # contract columns except that open ends still hold -1 (see finish)
    open_mask: np.ndarray  # ranges whose end was NULL
    marks: pd.DataFrame
    thread_names: pd.DataFrame  # global_tid, name (from eventType 39)
    max_ts: int | None  # largest NVTX timestamp (for the capture end when nothing else says)


def _nvtx_spec(cols: list[str]) -> list[Col]:
    """Columns of the NVTX read (absent optional columns read as NULL; payload: the first
    non-NULL of the payload columns present)."""
    payload = [f'"{c}"' for c in _PAYLOAD_COLS if c in cols]
    payload_expr = (f"coalesce({', '.join(payload)})" if len(payload) > 1 else payload[0]) \
        if payload else "NULL"
    return [
        Col("start", "int", fill=NULL_TIME, strict=True),  # NULL/text: dropped (sanity.py)
        Col("end", "int", "" if "end" in cols else "NULL", fill=0, strict=True),
        Col("end_null", "isnull", '"end"' if "end" in cols else "NULL"),
        Col("eventType", "int"),
        Col("text", "text", "" if "text" in cols else "NULL"),
        Col("globalTid", "int", "" if "globalTid" in cols else "NULL"),
        Col("endGlobalTid", "int", "" if "endGlobalTid" in cols else "NULL"),
        Col("textId", "int", "" if "textId" in cols else "NULL"),
        Col("domainId", "int", "" if "domainId" in cols else "NULL", fill=0),
        Col("payload", "float", payload_expr),
    ]


def _domain_names(d: Columns, gpid: np.ndarray, text_all: Text) -> dict[tuple[int, int], str]:
    """Domain names: create rows keyed by (process, domainId); resolved once per distinct pair."""
    is_dom = d.ints("eventType") == DOMAIN_CREATE
    domain_names: dict[tuple[int, int], str] = {}
    if is_dom.any():
        dom_idx = np.flatnonzero(is_dom)
        domain_id = d.ints("domainId")
        for i in dom_idx.tolist():  # one row per created domain: a handful
            domain_names[(int(gpid[i]), int(domain_id[i]))] = \
                text_all.labels[text_all.codes[i]] if text_all.codes[i] >= 0 else ""
    return domain_names


def _domain_categorical(gpids: np.ndarray, dom_ids: np.ndarray,
                        domain_names: dict[tuple[int, int], str]) -> pd.Categorical:
    """The domain of each row ('' for the default domain 0, ``domain#N`` when never named),
    labelled once per distinct (process, domain) pair."""
    if not len(gpids):
        return categorical(np.zeros(0, np.int64), [])
    pinv, procs = pd.factorize(gpids, use_na_sentinel=False)
    pinv = np.asarray(pinv, np.int64)
    codes, uniq = pd.factorize((pinv.astype(np.int64) << 32) | (dom_ids & 0xFFFFFFFF),
                               use_na_sentinel=False)
    labels = []
    for key in np.asarray(uniq, np.int64).tolist():  # distinct (process, domain) pairs
        g, dom = int(procs[key >> 32]), key & 0xFFFFFFFF
        if dom == 0:
            labels.append("")
        else:
            name = domain_names.get((int(g), int(dom)))
            labels.append(name if name else f"domain#{dom}")
    return categorical(np.asarray(codes, np.int64), labels)


def read_nvtx(db: NsysDb, strings: StringTable, window: ReadWindow | None = None,
              batch_rows: int | None = None) -> NvtxResult | None:
    """NVTX ranges, marks, thread and domain names; ``window``: only the ranges overlapping it
    and the marks inside it (names are kept whatever their time); ``batch_rows``: read in rowid
    ranges of that many (``NsysDb.read``; the skeleton of a streamed export, ``READ_BATCH_ROWS``)."""
    if not db.has(NVTX_TABLE):
        return None
    cols = db.columns(NVTX_TABLE)
    missing = [c for c in ("start", "eventType") if c not in cols]
    if missing:
        raise SchemaError(db.path, f"table {NVTX_TABLE} lacks column(s) {missing}",
                          "not a known nsys export layout; please report the nsys version")
    spec = _nvtx_spec(cols)
    d = db.read(NVTX_TABLE, spec, where=and_where(
        f"eventType IN ({', '.join(map(str, _WANTED))})",
        _window_sql(window, has_end="end" in cols) if window is not None else ""),
        batch_rows=batch_rows)
    etype, start, end, end_null = (d.ints("eventType"), d.ints("start"), d.ints("end"),
                                   d.flags("end_null"))
    gtid, payload, domain_id = d.ints("globalTid"), d.floats("payload"), d.ints("domainId")
    gpid, pid, tid = decode_global_tid(gtid)
    text_all = _resolve_text(d.text("text"), d.ints("textId"), strings)  # object-free: codes + labels

    domain_names = _domain_names(d, gpid, text_all)

    def domain_cat(rows: np.ndarray) -> pd.Categorical:
        return _domain_categorical(gpid[rows], domain_id[rows], domain_names)

    def text_cat(rows: np.ndarray) -> pd.Categorical:
        return categorical(text_all.codes[rows], text_all.labels)

    # ---- ranges
    is_pp = np.isin(etype, PUSH_POP)
    rows = np.flatnonzero(is_pp | np.isin(etype, START_END))
    end_gtid = d.ints("endGlobalTid")[rows]
    g = gtid[rows]
    open_mask = end_null[rows]
    ranges = pd.DataFrame(copy=False, data={
        "start_ns": start[rows],
        "end_ns": np.where(open_mask, -1, end[rows]),
        "closed": ~open_mask,
        "text": text_cat(rows),
        "domain": domain_cat(rows),
        "kind": pd.Categorical.from_codes(np.where(is_pp[rows], 0, 1),
                                          categories=["push_pop", "start_end"]),
        "global_tid": g,
        "end_global_tid": np.where(end_gtid < 0, g, end_gtid),
        "global_pid": gpid[rows], "pid": pid[rows], "tid": tid[rows],
        "payload": payload[rows],
    })

    # ---- marks
    mrows = np.flatnonzero(etype == MARK)
    marks = C.NVTX_MARKS.validate(pd.DataFrame(copy=False, data={
        "ts_ns": start[mrows], "text": text_cat(mrows), "domain": domain_cat(mrows),
        "global_tid": gtid[mrows], "pid": pid[mrows], "payload": payload[mrows],
    }), source=str(db.path))

    # ---- thread names (eventType 39)
    trows = np.flatnonzero(etype == THREAD_NAME)
    tn = pd.DataFrame({"global_tid": gtid[trows],
                       "name": np.asarray(text_cat(trows), dtype=object)})

    ends = end[~end_null]
    max_ts = None
    if len(etype):
        max_ts = int(max(start.max(), ends.max() if len(ends) else start.max()))
    return NvtxResult(ranges, open_mask, marks, tn, max_ts)


def finish_ranges(res: NvtxResult, capture_end_ns: int, source: str) -> pd.DataFrame:
    """Close unterminated ranges at the capture end and validate against the contract."""
    df = res.ranges
    if res.open_mask.any():
        end = df["end_ns"].to_numpy(np.int64).copy()
        end[res.open_mask] = np.maximum(df["start_ns"].to_numpy(np.int64)[res.open_mask],
                                        capture_end_ns)
        df = df.assign(end_ns=end)
    return C.NVTX.validate(df, source=source)


def _resolve_text(text: Text, text_id: np.ndarray, strings: StringTable) -> Text:
    """Coalesce StringIds[textId] and inline text into one code space (distinct values only);
    inline text longer than ``MAX_NAME_CHARS`` is cut as StringIds values are (``cap_name``)."""
    inline, cut = cap_names(list(text.labels))
    if cut:
        strings.count_cut(cut)
        text = Text(text.codes, inline)
    has_id = text_id >= 0
    if not has_id.any():
        return text
    inv, uniq_ids = pd.factorize(text_id[has_id], use_na_sentinel=False)
    inv, uniq_ids = np.asarray(inv, np.int64), np.asarray(uniq_ids, np.int64)
    resolved = strings.lookup(uniq_ids.tolist())
    base = len(text.labels)
    labels = list(text.labels) + [r if r is not None else "" for r in resolved]
    codes = text.codes.copy()
    id_codes = base + inv.astype(np.int64)
    # An unresolvable textId keeps the inline text when there is one.
    ok = np.asarray([r is not None for r in resolved], bool)[inv]
    sub = codes[has_id]
    sub = np.where(ok, id_codes, sub)
    codes[has_id] = sub
    return Text(codes, labels)
