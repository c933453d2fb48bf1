"""``analyze --scheduler ADDRESS | --dask``: one giant export's chunks analysed on Dask workers.

The sequential pass (``analyses/engine/driver.run_pass``) finds each cut from the chunk it has
just read; here the chunks run at once, so the cuts come first: one task per target reads a thin
window before it (``CUT_WINDOW_SHARE`` of a chunk's span) and finds the latest safe cut there
(``cuts.safe_cut``; none: the target itself, counted as an inexact cut). Then one task per chunk
reads ``[cut_i, cut_i+1]`` and returns its partials and facts (``driver.analyse_chunk``); the
client merges them in order exactly as a sequential pass would. The workers need the export at
the same path (shared filesystem, as for ``batch``).
"""
from __future__ import annotations

from nsys_diag.analyses.engine.cuts import FIRST_LO, LAST_HI, safe_cut
from nsys_diag.analyses.engine.driver import analyse_chunk, read_span, spans_pass
from nsys_diag.model.options import AnalyzeOptions
from nsys_diag.model.thresholds import Thresholds

CUT_WINDOW_SHARE = 0.05
"""The thin window a cut task reads before its target, as a share of the span between targets."""


def _read(path: str, lo: int, hi: int, zones, skeleton=None):
    """The chunk ``[lo, hi)`` (``skeleton``: its NVTX taken from it, ``driver.with_skeleton_nvtx``;
    None: none — a cut needs only the kernels)."""
    from nsys_diag.analyses.engine.driver import with_skeleton_nvtx
    from nsys_diag.loaders import Format, load_trace

    if zones is not None and not zones.matches(path):  # not the client's file: plain reads
        zones = None
    bundle = load_trace(path, kernel_detail=False, time_window=(lo, hi), chunk=True, zones=zones,
                        nvtx=False, known_threads=None if skeleton is None else skeleton.threads,
                        format=Format.NSYS_SQLITE)  # sniffed once, by the client
    return bundle if skeleton is None else with_skeleton_nvtx(bundle, skeleton, lo, hi)


def find_cut(path: str, lo: int, target: int, zones=None) -> tuple[int, bool]:
    """(cut, exact) for ``target`` from the rows of ``[lo, target]`` (a Dask task; ``zones``: the
    export's zone map, ``loaders/zone_map.py``)."""
    from nsys_diag.analyses.timeline.busy import device_ids

    bundle = _read(path, lo, target + 1, zones)
    devices = tuple(sorted(device_ids(bundle.kernels)))
    cut = safe_cut(bundle.kernels, devices, lo, target)
    return (int(target), cut is None) if cut is None else (cut.at_ns, cut.exact)


def chunk_task(path: str, skeleton, lo: int, hi: int, index: int, assumed, assume,
               options: AnalyzeOptions, th: Thresholds, only, keep_launches: bool = False,
               zones=None):
    """One chunk's ``ChunkResult`` (a Dask task)."""
    bundle = _read(path, *read_span(lo, None if hi == LAST_HI else hi), zones, skeleton)
    return analyse_chunk(skeleton, bundle, lo, hi, index, assumed, assume, options, th, only,
                         keep_launches)


def dask_runner(path: str, skeleton, targets: list[int], options: AnalyzeOptions,
                th: Thresholds, zones=None):
    """A pass runner (``driver.PassRunner``) on the Dask scheduler of ``options.scheduler``
    (``local``: a local cluster); ``zones``: the export's zone map, sent with every task."""
    from nsys_diag.app.dask_cluster import dask_client

    state: dict = {}

    def runner(assume, only, keep_launches):
        client, cluster = dask_client(None if options.scheduler == "local" else options.scheduler,
                                      2)
        try:
            if "spans" not in state:
                state["spans"], state["inexact"] = _cuts(client, path, targets, zones)
            spans = state["spans"]
            # the first chunk decides the assumed globals the others are analysed against
            first = client.submit(chunk_task, path, skeleton, *spans[0], 0, {}, assume, options,
                                  th, only, keep_launches, zones, pure=False).result()
            futures = [client.submit(chunk_task, path, skeleton, lo, hi, i, first.assumed, assume,
                                     options, th, only, keep_launches, zones, pure=False)
                       for i, (lo, hi) in enumerate(spans) if i]
            sp = spans_pass(skeleton, [first, *client.gather(futures)], spans)
            sp.inexact_cuts = state["inexact"]
            return sp
        finally:
            client.close()
            if cluster is not None:
                cluster.close()
    return runner


def _cuts(client, path: str, targets: list[int], zones=None
          ) -> tuple[list[tuple[int, int]], int]:
    """The chunk spans from the cut tasks, and how many cuts were inexact."""
    prev = None
    futures = []
    for t in targets:
        width = int((t - prev) * CUT_WINDOW_SHARE) if prev is not None else 0
        lo = t - max(width, 1) if prev is not None else FIRST_LO
        futures.append(client.submit(find_cut, path, lo, int(t), zones, pure=False))
        prev = t
    cuts, inexact, last = [], 0, FIRST_LO
    for at, exact in client.gather(futures):
        if at > last:
            cuts.append(at)
            inexact += 0 if exact else 1
            last = at
    edges = [FIRST_LO, *cuts, LAST_HI]
    return list(zip(edges[:-1], edges[1:])), inexact
