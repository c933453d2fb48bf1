"""The causal model of one process: host threads as sequences of CUDA API calls (the CPU time
between two calls is a CPU segment), GPU work per stream in stream order, and the edges between
them (docs/analyses.md, "Causal replay").

Built in two steps, vectorised: :func:`process_timeline` once per process (every call and GPU
operation, sorted, with roles, labels and streams), then :func:`window_model` per replayed window
(a step or a slice): the local arrays and edges the engine replays.

Edges of a window
-----------------
* thread order — a call starts after the thread's previous call ended plus the captured CPU
  segment between them; a thread's first call in the window starts at its captured time;
* launch → work — a GPU operation starts no earlier than its launching call (correlation id);
* stream order — an operation starts after the previous one on its stream ended;
* blocking call → work (``roles.py``): a stream sync waits for the last operation launched before
  it on its stream (the SYNCHRONIZATION row names the stream); a device sync (``cudaFree`` and
  ``cuMemFree`` included) for the last one of every stream; a synchronous copy for its own
  operation (where the capture shows the call outlasting it: a copy from pageable memory returns
  once its data is staged); an event sync for the operation that ended last inside the call (inferred: the
  export does not say where the event was recorded);
* launch throttling — a launch waits for the operation 1,024 launches earlier on its stream
  (the queue is full beyond 1,024 outstanding operations);
* cross-stream waits — inferred: an operation that starts more than ``EXPLAINED_DELAY_NS`` after
  its launch and its stream predecessor, within that tolerance after an operation on another
  stream of the process ended, waits for that one (``cudaStreamWaitEvent``/NCCL stream joins);
  counted as ``inferred_edges``.

Work queued before the window (its launching call is earlier or unknown) keeps its captured
start (pinned). Every remaining start delay of an operation is kept as captured (launch latency,
inter-kernel gaps); one longer than ``EXPLAINED_DELAY_NS`` is *unexplained* and reported.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from nsys_diag.analyses.replay.threads import anchors, joins
from nsys_diag.analyses.kernels.catalog import classify_category
from nsys_diag.analyses.replay import roles as R

EXPLAINED_DELAY_NS = 20_000
"""A start delay up to 20 µs is launch latency or an inter-kernel gap; longer ones no edge
explains are reported as unexplained (issue 25)."""
QUEUE_DEPTH = 1_024
"""Outstanding operations per stream beyond which a launch call blocks."""
NO_TIME = -(1 << 62)
"""'No such predecessor' in time arrays (never added to anything near overflow)."""

UVM_PREFIX = "uvm_"
"""Copy kinds of unified-memory migrations (``uvm_h2d``, ``uvm_d2h``, ``uvm_d2d``)."""

HOST_NONE, HOST_PINNED, HOST_PAGEABLE = 0, 1, 2
"""Host memory a copy reads or writes (``o_host``)."""
OP_KINDS = ("gpu_compute", "transfer", "communication")
"""Critical-path kind of a GPU operation, by code."""
GPU_COMPUTE, TRANSFER, COMMUNICATION = range(3)

_COLLECTIVES = (("allreduce", "all_reduce"), ("allgather", "all_gather"),
                ("reducescatter", "reduce_scatter"), ("alltoall", "all_to_all"),
                ("sendrecv", "send_recv"), ("broadcast", "broadcast"), ("reduce", "reduce"),
                ("send", "send"), ("recv", "recv"))


def collective_name(kernel_name: str) -> str:
    """The collective an NCCL-like kernel runs (``all_reduce`` …), else ``collective``."""
    low = kernel_name.lower().replace("_", "")
    for key, label in _COLLECTIVES:
        if key in low:
            return label
    return "collective"


@dataclass(frozen=True)
class ProcessTimeline:
    """Every CUDA call and GPU operation of one process, sorted, with what the model needs.

    Host calls are sorted by (thread, start); ``h_*`` arrays. GPU operations by (stream, start);
    ``o_*`` arrays. ``o_call``: index of the launching call (-1 unknown). ``h_stream``: the stream
    a stream sync waits on (-1). Times in ns."""

    h_start: np.ndarray
    h_end: np.ndarray
    h_thread: np.ndarray
    h_role: np.ndarray
    h_name: np.ndarray
    h_stream: np.ndarray
    names: tuple[str, ...]
    threads: np.ndarray  # global_tid per thread code
    o_start: np.ndarray
    o_end: np.ndarray
    o_stream: np.ndarray
    o_kind: np.ndarray
    o_label: np.ndarray
    o_call: np.ndarray
    labels: tuple[str, ...]
    n_streams: int
    o_bytes: np.ndarray
    o_host: np.ndarray  # host memory of a copy: HOST_NONE | HOST_PINNED | HOST_PAGEABLE
    w_call: np.ndarray  # cudaStreamWaitEvent calls joined to their event record (explicit)
    w_stream: np.ndarray  # the waiting stream
    w_rec_call: np.ndarray  # the cudaEventRecord call
    w_rec_stream: np.ndarray  # the stream the event was recorded on
    o_kname: np.ndarray | None = None  # kernel name code into ``kernel_names`` (-1: no kernel)
    kernel_names: tuple[str, ...] = ()


@dataclass(frozen=True)
class WindowModel:
    """One replayed window: local arrays (host calls ``h_*``, operations ``o_*``) and edges.

    ``h_pred``/``o_pred``: previous call on the thread / operation on the stream (-1).
    ``o_launch``: local launching call (-1: pinned). ``o_xs``: inferred cross-stream predecessor.
    ``o_delay``: the captured start delay kept in the replay. ``t_call``/``t_op``: blocking
    call → awaited operation pairs (``t_call`` sorted). ``h_gap``: the CPU segment before a call
    (from its thread predecessor's end, else its anchor's, else the window start); ``h_anchor``:
    for another thread's first call, the step thread's last call that ended before it (-1);
    ``h_own``: a call's own time after the work it awaited (its duration when it awaited none);
    ``o_dur``: operation durations; ``o_bytes``: bytes of copies and memsets (0 for kernels);
    ``o_host``: the host memory of a copy (``HOST_*``). ``h_join``/``h_jgap``: a step-thread
    call that resumed after another thread's burst (``threads.joins``): its start is also
    ``end(h_join) + h_jgap``, and its ``h_gap`` is only the CPU segment before that burst began.
    What-ifs change these arrays and replay again."""

    start_ns: int
    end_ns: int
    h_idx: np.ndarray
    h_start: np.ndarray
    h_end: np.ndarray
    h_thread: np.ndarray
    h_pred: np.ndarray
    h_role: np.ndarray
    h_name: np.ndarray
    o_idx: np.ndarray
    o_start: np.ndarray
    o_end: np.ndarray
    o_pred: np.ndarray
    o_launch: np.ndarray
    o_xs: np.ndarray
    o_delay: np.ndarray
    o_kind: np.ndarray
    o_label: np.ndarray
    t_call: np.ndarray
    t_op: np.ndarray
    inferred_edges: int
    h_gap: np.ndarray
    h_own: np.ndarray
    h_anchor: np.ndarray
    h_join: np.ndarray
    """Per call: the other thread's call whose end it waited for (``threads.joins``; -1: none)."""
    h_jgap: np.ndarray
    """Per joined call: its captured start after that call's end (ns; 0 elsewhere)."""
    h_fork: np.ndarray
    """Per joined call: the captured start of the burst it waited for, where its ``h_gap`` ends
    (its own start elsewhere)."""
    o_dur: np.ndarray
    o_bytes: np.ndarray
    o_host: np.ndarray
    explicit_edges: int = 0

    @property
    def n_ops(self) -> int:
        return int(self.h_idx.size + self.o_idx.size)

    def gap_spans(self) -> tuple[np.ndarray, np.ndarray]:
        """Captured (starts, ends) in ns of each call's CPU segment ``h_gap``: it ends at the
        call's start, or for a joined call where the burst it waited for began."""
        return self.h_fork - self.h_gap, self.h_fork

    def join_spans(self) -> tuple[np.ndarray, np.ndarray]:
        """Captured (starts, ends) in ns of each joined call's CPU segment ``h_jgap`` (after the
        call it waited for; empty elsewhere)."""
        return self.h_start - self.h_jgap, self.h_start

    @property
    def unexplained(self) -> np.ndarray:
        return self.o_delay > EXPLAINED_DELAY_NS


# ------------------------------------------------------------------------------ process timeline
def _labels_of(kernels: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """(kind code, label code, labels) per kernel row: the kernel class (catalog), NCCL-like
    kernels as collectives."""
    names = kernels["name"].astype("category")
    cats = list(names.cat.categories)
    classes = classify_category([str(c) for c in cats]) if cats else np.zeros(0, object)
    labels: list[str] = []
    kind_of, label_of = [], []
    for c, cls in zip(cats, np.asarray(classes, dtype=object).tolist()):
        comm = cls == "communication"
        lab = collective_name(str(c)) if comm else str(cls)
        if lab not in labels:
            labels.append(lab)
        kind_of.append(COMMUNICATION if comm else GPU_COMPUTE)
        label_of.append(labels.index(lab))
    codes = names.cat.codes.to_numpy()
    kind = np.append(np.array(kind_of, np.int8), GPU_COMPUTE)[codes]
    if "other" not in labels:
        labels.append("other")
    label = np.append(np.array(label_of, np.int64), labels.index("other"))[codes]
    return kind, label, labels


def _name_codes(kernels: pd.DataFrame) -> np.ndarray:
    """Kernel name code per kernel row (into ``_kernel_names``)."""
    return kernels["name"].astype("category").cat.codes.to_numpy().astype(np.int64)


def _kernel_names(kernels: pd.DataFrame) -> tuple[str, ...]:
    return tuple(str(c) for c in kernels["name"].astype("category").cat.categories)


def _ops_frame(kernels, memcpy, memset, graphs) -> tuple[pd.DataFrame, list[str]]:
    """All GPU operations of the process in one frame: start, end, device, context, stream,
    correlation, kind, label (code into the returned labels), pageable (synchronous copy)."""
    cols = ["start_ns", "end_ns", "device_id", "context_id", "stream_id", "correlation_id"]
    kind, label, labels = _labels_of(kernels)
    parts = [kernels[cols].assign(kind=kind, label=label, pageable=False, bytes=0,
                                  host=HOST_NONE, kname=_name_codes(kernels))]
    if graphs is not None and len(graphs):
        labels.append("cuda_graph")
        g = graphs[cols].assign(kind=GPU_COMPUTE, label=len(labels) - 1, pageable=False,
                                bytes=0, host=HOST_NONE)
        if len(parts[0]):  # node-level kernels of a traced graph launch: the graph row covers them
            inside = parts[0]["correlation_id"].isin(set(g["correlation_id"].tolist()))
            parts[0] = parts[0].loc[~inside.to_numpy()]
        parts.append(g)
    if len(memcpy):
        ck = memcpy["copy_kind"].astype(str)
        for k in pd.unique(ck):
            if k not in labels:
                labels.append(k)
        # an async copy *to* pageable memory returns when the data is there; one from pageable
        # memory returns once the data is staged (the DMA may run later)
        pageable = (memcpy["dst_kind"].astype(str) == "pageable").to_numpy()
        src, dst = memcpy["src_kind"].astype(str), memcpy["dst_kind"].astype(str)
        host = np.where((src == "pageable") | (dst == "pageable"), HOST_PAGEABLE,
                        np.where((src == "pinned") | (dst == "pinned"), HOST_PINNED, HOST_NONE))
        parts.append(memcpy[cols].assign(kind=TRANSFER, label=ck.map(labels.index).to_numpy(),
                                         pageable=pageable, bytes=memcpy["bytes"].to_numpy(),
                                         host=host))
    if len(memset):
        labels.append("memset")
        parts.append(memset[cols].assign(kind=GPU_COMPUTE, label=len(labels) - 1,
                                         pageable=False, bytes=memset["bytes"].to_numpy(),
                                         host=HOST_NONE))
    ops = pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0].reset_index(drop=True)
    return ops, labels


def with_kernel_streams(kernels: pd.DataFrame, streams: pd.DataFrame | None) -> pd.DataFrame:
    """``kernels`` with context and stream ids from ``streams`` (``contracts.KERNEL_STREAMS``,
    read for the replayed windows) where they hold -1 — ``analyze`` reads the kernels' stream
    ids but not their context ids (``loaders/nsys_specs.KERNEL_DETAIL_COLUMNS``), and a stream
    is (device, context, stream): without the join a kernel and a copy of one stream would be
    two; joined on (process, correlation id, start, device). Kernels still without a stream are
    dropped (outside every window)."""
    if streams is None or not len(kernels) or ((kernels["stream_id"].to_numpy() >= 0).all()
                                                and (kernels["context_id"].to_numpy() >= 0).all()):
        return kernels
    key = ["global_pid", "correlation_id", "start_ns", "device_id"]
    got = streams.drop_duplicates(key).set_index(key)
    idx = got.index.get_indexer(pd.MultiIndex.from_frame(kernels[key]))
    found = idx >= 0
    out = kernels.loc[found].copy()
    for col in ("context_id", "stream_id"):
        out[col] = got[col].to_numpy(np.int64)[idx[found]]
    return out.reset_index(drop=True)


def _event_waits(a: pd.DataFrame, call_of, uniq, sync_events, cuda_events
                 ) -> tuple[np.ndarray, ...]:
    """(wait call, waiting stream, record call, record stream) per cudaStreamWaitEvent whose
    event record is in CUPTI_ACTIVITY_KIND_CUDA_EVENT: the latest record of that event before
    the wait. Empty arrays without both frames."""
    empty = tuple(np.zeros(0, np.int64) for _ in range(4))
    if sync_events is None or cuda_events is None or not len(sync_events) or \
            not len(cuda_events) or not len(uniq):
        return empty
    streams = pd.Index(uniq)

    def stream_code(f: pd.DataFrame, ctx: pd.Series) -> np.ndarray:
        key = pd.MultiIndex.from_arrays([f["device_id"].to_numpy(np.int64),
                                         ctx.to_numpy(np.int64), f["stream_id"].to_numpy(np.int64)])
        return streams.get_indexer(key)

    rec_call = call_of(cuda_events["correlation_id"].to_numpy(np.int64))
    rec_stream = stream_code(cuda_events, cuda_events["context_id"])
    waits = sync_events.loc[sync_events["event_id"].to_numpy() >= 0]
    w_call = call_of(waits["correlation_id"].to_numpy(np.int64))
    starts = a["start_ns"].to_numpy(np.int64)
    by_stream = {int(sid): code for code, (dev, ctx, sid) in enumerate(uniq)}
    out: list[list[int]] = [[], [], [], []]
    rec_start = np.where(rec_call >= 0, starts[np.maximum(rec_call, 0)], 1 << 62)
    events = cuda_events["event_id"].to_numpy(np.int64)
    for c, sid, ev in zip(w_call.tolist(), waits["stream_id"].tolist(),
                          waits["event_id"].tolist()):
        if c < 0 or int(sid) not in by_stream:
            continue
        ok = (events == ev) & (rec_stream >= 0) & (rec_start < starts[c])
        if not ok.any():
            continue
        j = np.flatnonzero(ok)[np.argmax(rec_start[ok])]
        for lst, v in zip(out, (c, by_stream[int(sid)], int(rec_call[j]), int(rec_stream[j]))):
            lst.append(v)
    return tuple(np.array(x, np.int64) for x in out)


def process_timeline(kernels: pd.DataFrame, memcpy: pd.DataFrame, memset: pd.DataFrame,
                     sync: pd.DataFrame, api: pd.DataFrame,
                     graphs: pd.DataFrame | None = None, sync_events: pd.DataFrame | None = None,
                     cuda_events: pd.DataFrame | None = None) -> ProcessTimeline:
    """The sorted calls and operations of one process (frames already restricted to it);
    ``graphs``, ``sync_events``, ``cuda_events``: the replay-only frames (``contracts``)."""
    ops, labels = _ops_frame(kernels, memcpy, memset, graphs)
    stream_key = ops[["device_id", "context_id", "stream_id"]].to_numpy(np.int64)
    codes, uniq = pd.factorize(pd.MultiIndex.from_arrays(stream_key.T) if len(ops) else
                               pd.Index([]))
    o_stream = np.asarray(codes, np.int64)
    order = np.lexsort((ops["start_ns"].to_numpy(), o_stream))
    ops = ops.iloc[order].reset_index(drop=True)
    o_stream = o_stream[order]

    a = api.sort_values(["global_tid", "start_ns"], kind="stable").reset_index(drop=True)
    t_codes, threads = pd.factorize(a["global_tid"].to_numpy(np.int64))
    t_codes = np.asarray(t_codes, np.int64)
    name_cat = a["name"].astype("category")
    role = R.api_roles(name_cat)
    corr_index = pd.Index(a["correlation_id"].to_numpy(np.int64))
    first = ~corr_index.duplicated()
    lookup = pd.Index(corr_index[first])
    rows = np.flatnonzero(first)
    outer, keep = _outer_calls(a["start_ns"].to_numpy(np.int64), a["end_ns"].to_numpy(np.int64),
                               t_codes)

    def call_of(corr: np.ndarray) -> np.ndarray:  # API row (its outer call) of correlation ids
        pos = lookup.get_indexer(corr)
        out = np.where(pos >= 0, outer[rows[np.maximum(pos, 0)]], -1)
        return np.where(corr >= 0, out, -1)

    o_call = call_of(ops["correlation_id"].to_numpy(np.int64))
    paged = o_call[ops["pageable"].to_numpy(bool) & (o_call >= 0)]
    np.maximum.at(role, outer, role.copy())  # a nested call's role (a sync …) is its outer's
    role[paged[role[paged] == R.LAUNCH]] = R.SYNC_COPY  # pageable async copies block the host
    h_stream = np.full(len(a), -1, np.int64)
    if len(sync) and len(ops):
        s_call = call_of(sync["correlation_id"].to_numpy(np.int64))
        key = pd.MultiIndex.from_arrays(sync[["device_id", "context_id", "stream_id"]]
                                        .to_numpy(np.int64).T)
        s_stream = pd.Index(uniq).get_indexer(key) if len(uniq) else np.full(len(sync), -1)
        ok = (s_call >= 0) & (s_stream >= 0)
        h_stream[s_call[ok]] = s_stream[ok]
    waits = _event_waits(a, call_of, uniq, sync_events, cuda_events)
    new_of = np.cumsum(keep) - 1  # kept rows renumbered
    o_call = np.where(o_call >= 0, new_of[np.maximum(o_call, 0)], -1)
    w_call, w_stream, w_rec_call, w_rec_stream = waits
    w_call, w_rec_call = new_of[w_call], new_of[w_rec_call]
    a, role, h_stream, t_codes = a.loc[keep], role[keep], h_stream[keep], t_codes[keep]
    name_cat = name_cat[keep]
    names = tuple(str(c) for c in name_cat.cat.categories)
    n_codes = name_cat.cat.codes.to_numpy().astype(np.int64)
    return ProcessTimeline(
        h_start=a["start_ns"].to_numpy(np.int64), h_end=a["end_ns"].to_numpy(np.int64),
        h_thread=np.asarray(t_codes, np.int64), h_role=role, h_name=n_codes, h_stream=h_stream,
        names=names, threads=np.asarray(threads, np.int64),
        o_start=ops["start_ns"].to_numpy(np.int64), o_end=ops["end_ns"].to_numpy(np.int64),
        o_stream=o_stream, o_kind=ops["kind"].to_numpy(np.int8),
        o_label=ops["label"].to_numpy(np.int64), o_call=o_call, labels=tuple(labels),
        n_streams=int(len(uniq)), o_bytes=ops["bytes"].to_numpy(np.int64),
        o_host=ops["host"].to_numpy(np.int8), w_call=w_call,
        w_stream=w_stream, w_rec_call=w_rec_call, w_rec_stream=w_rec_stream,
        o_kname=ops["kname"].fillna(-1).to_numpy(np.int64), kernel_names=_kernel_names(kernels))


def _outer_calls(start: np.ndarray, end: np.ndarray, thread: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
    """(outer call per row, rows kept): a call that lies inside an earlier call of its thread (a
    runtime call wrapping a driver call) is merged into that outer call. Rows sorted by
    (thread, start)."""
    n = start.size
    nested = np.zeros(n, bool)
    for t in np.unique(thread).tolist():
        pos = np.flatnonzero(thread == t)
        if pos.size > 1:
            prior = np.maximum.accumulate(end[pos])[:-1]
            nested[pos[1:]] = end[pos[1:]] <= prior
    outer = np.maximum.accumulate(np.where(nested, -1, np.arange(n)))
    return outer.astype(np.int64), ~nested


# ---------------------------------------------------------------------------------- window
def _chain_pred(group: np.ndarray) -> np.ndarray:
    """Previous element of the same group in an array sorted by group (-1 for the first)."""
    pred = np.arange(group.size, dtype=np.int64) - 1
    if group.size:
        pred[0] = -1
        pred[1:][group[1:] != group[:-1]] = -1
    return pred


def _submission_order(o_stream: np.ndarray, launch_t: np.ndarray) -> np.ndarray:
    """Launch times made monotone in stream order (a running maximum per stream): a stream runs
    its work in the order it was submitted, so an operation whose launch is unknown (pinned) or
    whose row is out of place was submitted no earlier than the one before it. Blocking calls
    pick the work they wait for by these times, which keeps the edges acyclic."""
    out = launch_t.copy()
    for s in np.unique(o_stream).tolist():
        pos = np.flatnonzero(o_stream == s)
        out[pos] = np.maximum.accumulate(launch_t[pos])
    return out


def _last_launched_before(o_stream, launch_t, stream: int, when: np.ndarray) -> np.ndarray:
    """Per time in ``when``: the local operation of ``stream`` latest in stream order among those
    launched before it (-1 none)."""
    pos = np.flatnonzero(o_stream == stream)
    out = np.full(when.size, -1, np.int64)
    if not pos.size or not when.size:
        return out
    by_t = np.argsort(launch_t[pos], kind="stable")
    best = np.maximum.accumulate(pos[by_t])
    j = np.searchsorted(launch_t[pos][by_t], when, side="left") - 1
    out[j >= 0] = best[j[j >= 0]]
    return out


def _sync_targets(pt: ProcessTimeline, h_idx, h_start, h_end, h_role, o_idx, o_stream,
                  o_launch_t, o_end, o_local_call) -> tuple[np.ndarray, np.ndarray]:
    """(call, awaited op) pairs of the window's blocking calls and throttled launches."""
    calls, tops = [], []
    streams = np.unique(o_stream)
    for s in streams.tolist():
        dev = np.flatnonzero(h_role == R.DEVICE_SYNC)
        st = np.flatnonzero((h_role == R.STREAM_SYNC) & (pt.h_stream[h_idx] == s))
        for sel in (dev, st):
            tgt = _last_launched_before(o_stream, o_launch_t, s, h_start[sel])
            calls.append(sel[tgt >= 0])
            tops.append(tgt[tgt >= 0])
    copy_ops = np.flatnonzero(o_local_call >= 0)
    copy_ops = copy_ops[h_role[o_local_call[copy_ops]] == R.SYNC_COPY]
    # a synchronous copy from pageable memory returns once its data is staged: it waits for its
    # operation only where the capture shows it did
    copy_ops = copy_ops[h_end[o_local_call[copy_ops]] >= o_end[copy_ops] - EXPLAINED_DELAY_NS]
    calls.append(o_local_call[copy_ops])
    tops.append(copy_ops)
    for c in np.flatnonzero(h_role == R.EVENT_SYNC).tolist():  # inferred record point
        inside = np.flatnonzero((o_launch_t < h_start[c]) & (o_end > h_start[c])
                                & (o_end <= h_end[c] + EXPLAINED_DELAY_NS))
        if inside.size:
            calls.append(np.array([c]))
            tops.append(inside[np.argmax(o_end[inside])][None])
    for s in streams.tolist():  # launch throttling beyond QUEUE_DEPTH outstanding operations
        pos = np.flatnonzero(o_stream == s)
        if pos.size > QUEUE_DEPTH:
            late = pos[QUEUE_DEPTH:]
            ok = o_local_call[late] >= 0
            calls.append(o_local_call[late][ok])
            tops.append(pos[:-QUEUE_DEPTH][ok])
    c = np.concatenate(calls) if calls else np.zeros(0, np.int64)
    t = np.concatenate(tops) if tops else np.zeros(0, np.int64)
    order = np.argsort(c, kind="stable")
    return c[order].astype(np.int64), t[order].astype(np.int64)


def _cross_stream(o_stream, o_start, o_end, ready) -> np.ndarray:
    """Inferred cross-stream predecessor per operation (-1): see the module docstring."""
    xs = np.full(o_start.size, -1, np.int64)
    late = np.flatnonzero(o_start - ready > EXPLAINED_DELAY_NS)
    if not late.size:
        return xs
    by_end = np.argsort(o_end, kind="stable")
    ends = o_end[by_end]
    j = np.searchsorted(ends, o_start[late], side="right") - 1
    for back in range(3):  # the latest end on another stream (a few candidates back)
        jj = j - back
        ok = jj >= 0
        cand = np.where(ok, by_end[np.maximum(jj, 0)], -1)
        hit = ok & (xs[late] < 0) & (o_stream[np.maximum(cand, 0)] != o_stream[late]) & \
            (o_start[late] - o_end[np.maximum(cand, 0)] <= EXPLAINED_DELAY_NS)
        xs[late[hit]] = cand[hit]
    return xs


FAULT_STREAM = -2
"""The stream blocking calls see page-fault migrations on: none waits for them."""
NEVER_SUBMITTED = 1 << 62
"""The submission time of a page-fault migration: after every blocking call."""


def unlaunched_migrations(pt: ProcessTimeline, o_idx: np.ndarray) -> np.ndarray:
    """Per local operation: a unified-memory migration with no launching call in the export
    (real migration rows have correlationId 0: the driver moves pages on a fault raised by the
    running code). ``window_model`` replays such a *fault* with the host's progress — as if the
    launching thread's last call before it (``_fault_anchors``) had launched it, by its captured
    delay, behind no other operation — and no blocking call waits for it, nor does it count
    towards the launch queue (it is no submitted work; the work after it on its stream still
    follows it)."""
    uvm = [i for i, lab in enumerate(pt.labels) if lab.startswith(UVM_PREFIX)]
    if not uvm:
        return np.zeros(o_idx.size, bool)
    return (pt.o_kind[o_idx] == TRANSFER) & np.isin(pt.o_label[o_idx], uvm) \
        & (pt.o_call[o_idx] < 0)


def _fault_anchors(h_start: np.ndarray, h_thread: np.ndarray, thread: int,
                   when: np.ndarray) -> np.ndarray:
    """Per time in ``when``: the last local call of ``thread`` (the step's thread; else the
    thread with the most calls) that started at or before it (-1: none)."""
    if not when.size or not h_start.size:
        return np.full(when.size, -1, np.int64)
    if thread < 0 or not (h_thread == thread).any():
        codes, counts = np.unique(h_thread, return_counts=True)
        thread = int(codes[np.argmax(counts)])
    mine = np.flatnonzero(h_thread == thread)
    mine = mine[np.argsort(h_start[mine], kind="stable")]
    j = np.searchsorted(h_start[mine], when, side="right") - 1
    return np.where(j >= 0, mine[np.maximum(j, 0)], -1).astype(np.int64)


def window_model(pt: ProcessTimeline, start_ns: int, end_ns: int,
                 step_thread: int = -1, bursts: bool = False,
                 waits: tuple[np.ndarray, np.ndarray] | None = None) -> WindowModel:
    """The replay inputs of ``[start_ns, end_ns)``: calls starting in it, operations launched by
    them or running in it (the others pinned); ``step_thread``: the thread code the other
    threads' first calls are anchored on; ``bursts``: each burst of their calls too
    (``threads.anchors``; an anchored call has no thread predecessor); ``waits``: the step thread's
    spans (ns) in which it blocks on the other threads (``threads.joins``)."""
    h_idx = np.flatnonzero((pt.h_start >= start_ns) & (pt.h_start < end_ns))
    local_of = np.full(pt.h_start.size + 1, -1, np.int64)
    local_of[h_idx] = np.arange(h_idx.size)
    call_local = local_of[pt.o_call]  # o_call -1 → last entry (-1)
    o_idx = np.flatnonzero((call_local >= 0) | ((pt.o_start < end_ns) & (pt.o_end > start_ns)))
    h_start, h_end = pt.h_start[h_idx], pt.h_end[h_idx]
    h_thread, h_role = pt.h_thread[h_idx], pt.h_role[h_idx]
    o_start, o_end, o_stream = pt.o_start[o_idx], pt.o_end[o_idx], pt.o_stream[o_idx]
    o_launch = call_local[o_idx]
    queued_call = o_launch.copy()  # what the host queued (faults: none)
    faults = (o_launch < 0) & unlaunched_migrations(pt, o_idx)
    by_call = _fault_anchors(h_start, h_thread, step_thread, o_start[faults])
    faults[np.flatnonzero(faults)[by_call < 0]] = False  # before the thread's first call: pinned
    o_launch[faults] = by_call[by_call >= 0]
    o_pred = _chain_pred(o_stream)
    o_pred[faults] = -1  # a fault queues behind nothing (the work after it still follows it)
    launch_t = np.where(o_launch >= 0, h_start[np.maximum(o_launch, 0)], NO_TIME)
    # launched before the window (or unknown): launch time = before everything in the window;
    # a fault's migration is no stream's submitted work (after everything: never awaited)
    pinned = o_launch < 0
    sync_stream = np.where(faults, FAULT_STREAM, o_stream)
    launch_t_or = _submission_order(sync_stream, np.where(
        faults, NEVER_SUBMITTED, np.where(pinned, np.minimum(o_start, start_ns) - 1, launch_t)))
    pred_end = np.where(o_pred >= 0, o_end[np.maximum(o_pred, 0)], NO_TIME)
    ready = np.maximum(launch_t, pred_end)
    xs = _cross_stream(o_stream, o_start, o_end, np.where(pinned, o_start, ready))
    xs[faults] = -1
    explicit = _explicit_waits(pt, local_of, h_start, sync_stream, launch_t_or)
    inferred = int(((xs >= 0) & ~pinned).sum() - (xs[explicit[0]] >= 0).sum())
    xs[explicit[0]] = explicit[1]
    xs[pinned] = -1
    ready = np.maximum(ready, np.where(xs >= 0, o_end[np.maximum(xs, 0)], NO_TIME))
    delay = np.where(pinned, 0, np.maximum(o_start - ready, 0))
    t_call, t_op = _sync_targets(pt, h_idx, h_start, h_end, h_role, o_idx, sync_stream,
                                 launch_t_or, o_end, queued_call)
    h_pred = _chain_pred(h_thread)
    anchor = anchors(h_start, h_end, h_thread, h_pred, step_thread, bursts)
    h_pred = np.where(anchor >= 0, -1, h_pred)
    before = np.where(h_pred >= 0, h_end[np.maximum(h_pred, 0)],
                      np.where(anchor >= 0, h_end[np.maximum(anchor, 0)], start_ns))
    awaited = np.full(h_start.size, NO_TIME, np.int64)
    np.maximum.at(awaited, t_call, o_end[t_op])
    own = h_end - np.clip(awaited, h_start, h_end)
    gap = np.maximum(h_start - before, 0)
    join, fork = joins(h_start, h_end, h_thread, h_role, anchor, step_thread, waits)
    joined = join >= 0
    jgap = np.where(joined, h_start - h_end[np.maximum(join, 0)], 0)
    gap = np.where(joined, np.maximum(fork - before, 0), gap)
    return WindowModel(
        h_gap=gap, h_own=own, h_anchor=anchor, h_join=join, h_jgap=jgap,
        h_fork=np.where(joined, fork, h_start),
        o_dur=o_end - o_start, o_bytes=pt.o_bytes[o_idx], o_host=pt.o_host[o_idx],
        start_ns=int(start_ns), end_ns=int(end_ns), h_idx=h_idx, h_start=h_start, h_end=h_end,
        h_thread=h_thread, h_pred=h_pred, h_role=h_role,
        h_name=pt.h_name[h_idx], o_idx=o_idx, o_start=o_start, o_end=o_end, o_pred=o_pred,
        o_launch=o_launch, o_xs=xs, o_delay=delay.astype(np.int64), o_kind=pt.o_kind[o_idx],
        o_label=pt.o_label[o_idx], t_call=t_call, t_op=t_op, inferred_edges=max(inferred, 0),
        explicit_edges=int(explicit[0].size))


def _explicit_waits(pt: ProcessTimeline, local_of, h_start, o_stream, launch_t
                    ) -> tuple[np.ndarray, np.ndarray]:
    """(waiting op, awaited op), local: per joined cudaStreamWaitEvent in the window, the first
    operation launched after it on the waiting stream waits for the last one launched before
    the event record on the recording stream."""
    w_local = local_of[pt.w_call] if pt.w_call.size else pt.w_call
    r_local = local_of[pt.w_rec_call] if pt.w_rec_call.size else pt.w_rec_call
    ok = (w_local >= 0) & (r_local >= 0)
    waiting, awaited = [], []
    for w, ws, r, rs in zip(w_local[ok].tolist(), pt.w_stream[ok].tolist(), r_local[ok].tolist(),
                            pt.w_rec_stream[ok].tolist()):
        pos = np.flatnonzero((o_stream == ws) & (launch_t > h_start[w]))
        src = _last_launched_before(o_stream, launch_t, rs, np.array([h_start[r]]))[0]
        if pos.size and src >= 0:
            waiting.append(int(pos[np.argmin(launch_t[pos])]))
            awaited.append(int(src))
    return np.array(waiting, np.int64), np.array(awaited, np.int64)
