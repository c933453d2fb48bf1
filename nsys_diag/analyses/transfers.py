"""Memory transfers: H2D/D2H/D2D/P2P volume, time, achieved vs expected bandwidth, bad patterns.

Definitions (GB = 1e9 bytes, so GB/s = bytes/ns)
-----------------------------------------------
* ``count`` = Σ ``copy_count`` (batched-memcpy rows fold several copies); ``rows`` = memcpy rows.
* ``time_ms`` = Σ copy durations; ``busy_ms`` = union of the copy intervals (concurrent copies
  counted once, per device then summed).
* ``gb_per_s`` = bytes / Σ durations (per-copy rate, as nsys ``cuda_gpu_mem_*`` reports);
  ``gb_per_s_busy`` = bytes / busy time (aggregate rate while copies ran).
* ``expected_gb_per_s``: practical peak of the link the copy crosses — see ``link_for_gpu``.
* Pageable copies: source or destination is pageable host memory — the driver stages them through
  a pinned buffer and the call is synchronous for the host (nsys rule ``cuda_memcpy_async`` flags
  the async ones). ``sync_copies``: launched by a non-``Async`` memcpy API (``cudaMemcpy``,
  ``cudaMemcpy2D``, ``cuMemcpyHtoD`` …: nsys rule ``cuda_memcpy_sync``); ``sync_memsets`` likewise
  (``cuda_memset_sync``). Copies whose launching call is not in the export are not counted.
* ``pageable_time_ms`` = Σ durations of the pageable copies inside the analysed window (a copy
  that crosses the window's edge counts its part inside, as the GPU's copy time does; counts,
  bytes and the per-kind times keep whole copies, so the rates stay per copy);
  ``pageable_window_share`` = that time over the analysed window (capped at 1), and
  ``pageable_bytes_per_step`` (per analysed step) or ``pageable_bytes_per_s`` (without steps)
  — the rates the pinned-memory advice reads, set by the process ending
  (``process.with_pageable_rates``); null before.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from nsys_diag.analyses.timeline.arrays import exact_sum
from nsys_diag.analyses.timeline import intervals as iv
from nsys_diag.analyses.engine.declaration import Declaration, declare
from nsys_diag.analyses.engine.context import over_one_span
from nsys_diag.model.jsonsafe import fnum, ns_to_ms, ratio
from nsys_diag.analyses.kernels.table import filter_window
from nsys_diag.model.thresholds import Thresholds
from nsys_diag.model.api_names import BLOCKING_COPY_LAUNCH_RE, BLOCKING_MEMSET_LAUNCH_RE
from nsys_diag.model.vocabulary import HINT_CAPTURE_CUDA
from nsys_diag.model.schema_types import List, Obj, Section
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the span type only: the engine's context imports the analyses
    from nsys_diag.analyses.engine.context import ChunkInputs

KINDS = ("H2D", "D2H", "D2D", "P2P")
"""Copy kinds always reported (others, e.g. H2H, are added when present)."""

# ---- link peaks ----------------------------------------------------------------------------------
# PCIe x16 per direction, nominal: Gen3 15.75 GB/s, Gen4 31.5, Gen5 63, Gen6 121 (PCI-SIG: 8, 16,
# 32, 64 GT/s per lane, 128b/130b encoding for Gen3-5, FLIT for Gen6). NVIDIA datasheets quote the
# bidirectional figure: V100 PCIe "32 GB/s", A100 "PCIe Gen4: 64 GB/s", H100/H200 "PCIe Gen5:
# 128 GB/s", B300 "PCIe Gen6: 256 GB/s". Pinned cudaMemcpy reaches ≈ 80% of nominal in practice
# (bandwidthTest: ≈ 12-13 GB/s Gen3, ≈ 25 Gen4, ≈ 50 Gen5), which is what we expect.
_PCIE_PRACTICAL_GBPS = {3: 12.5, 4: 25.0, 5: 50.0, 6: 100.0}
_PCIE_NOMINAL_GBPS = {3: 15.75, 4: 31.5, 5: 63.0, 6: 121.0}
# NVLink per GPU per direction, nominal (datasheets, total bidirectional / 2): V100 SXM2 300 GB/s
# → 150; A100 SXM4 600 → 300; H100/H200 SXM5 900 → 450; B200/B300 NVLink5 1.8 TB/s → 900.
# Grace-Hopper/Blackwell superchips reach the CPU over NVLink-C2C (900 GB/s total → 450).
_NVLINK_GBPS = {7: 150.0, 8: 300.0, 9: 450.0, 10: 900.0}
_C2C_GBPS = 450.0


@dataclass(frozen=True)
class LinkSpec:
    """Expected host and peer links for one GPU model (practical GB/s; None when unknown)."""

    host_link: str
    host_gb_per_s: float | None
    peer_link: str
    peer_gb_per_s: float | None
    assumption: str


def _pcie_gen(name: str, cc_major: int) -> int | None:
    n = name.upper()
    if re.search(r"B300|GB300", n):
        return 6
    if cc_major in (9, 10, 12) or re.search(r"\bH(100|200|800|20)\b|\bB(100|200)\b|RTX 50", n):
        return 5
    if cc_major == 8 or re.search(r"\bA(100|800|10|30|40|16|2)\b|\bL(4|40S?)\b|RTX (30|40)|RTX A",
                                  n):
        return 4
    if cc_major in (6, 7) or re.search(r"V100|T4\b|P100|P40|P4\b|RTX 20|QUADRO RTX|TITAN", n):
        return 3
    return None


def _is_sxm(name: str) -> bool:
    n = name.upper()
    if "PCIE" in n or re.search(r"\bNVL\b", n):
        return False
    return bool("SXM" in n or re.search(r"H100.*HBM3|\bH200\b|\bH800\b|\bB(100|200|300)\b|GB(200|300)",
                                         n))


def link_for_gpu(name: str, cc_major: int = -1) -> LinkSpec:
    """Expected links from the GPU's marketing name and compute capability.

    Host: PCIe generation by GPU generation (Pascal/Volta/Turing Gen3, Ampere/Ada Gen4,
    Hopper/Blackwell Gen5, B300 Gen6) or NVLink-C2C on GH200/GB200. Peer: NVLink on SXM parts,
    else PCIe. Assumes an x16 slot at the GPU's generation (a Gen4 host caps a Gen5 GPU).
    """
    name = name or ""
    n = name.upper()
    if re.search(r"\bG[HB](200|300)\b", n):
        major = 9 if "GH" in n else 10
        return LinkSpec("NVLink-C2C", _C2C_GBPS, f"NVLink (gen for cc {major})",
                        _NVLINK_GBPS.get(major),
                        f"{name}: CPU↔GPU over NVLink-C2C ≈ {_C2C_GBPS:.0f} GB/s per direction")
    gen = _pcie_gen(n, cc_major)
    if gen is None:
        return LinkSpec("PCIe (unknown generation)", None, "unknown", None,
                        f"GPU model unknown ({name or 'no GPU table'}): no expected bandwidth; name the GPU with "
                        "`--gpu NAME`")
    host = f"PCIe Gen{gen} x16"
    major = cc_major if cc_major > 0 else {3: 7, 4: 8, 5: 9, 6: 10}[gen]
    if _is_sxm(name) and major in _NVLINK_GBPS:
        peer, peer_bw = "NVLink", _NVLINK_GBPS[major]
    else:
        peer, peer_bw = host, _PCIE_PRACTICAL_GBPS[gen]
    return LinkSpec(host, _PCIE_PRACTICAL_GBPS[gen], peer, peer_bw,
                    f"{name}: {host} ≈ {_PCIE_PRACTICAL_GBPS[gen]:.0f} GB/s per direction in "
                    f"practice ({_PCIE_NOMINAL_GBPS[gen]:.1f} nominal); peer copies over {peer}"
                    + (f" ≈ {peer_bw:.0f} GB/s nominal" if peer == "NVLink" else ""))


@dataclass(frozen=True)
class KindStats:
    """One copy kind. Bytes in bytes, times in ns, rates in GB/s (1e9 bytes/s)."""

    kind: str
    rows: int
    count: int
    bytes: int
    time_ns: int
    busy_ns: int
    expected_gb_per_s: float | None
    link: str

    @property
    def gb_per_s(self) -> float | None:
        return ratio(self.bytes, self.time_ns)

    @property
    def gb_per_s_busy(self) -> float | None:
        return ratio(self.bytes, self.busy_ns)

    @property
    def efficiency(self) -> float | None:
        """Achieved per-copy rate / expected rate."""
        return ratio(self.gb_per_s, self.expected_gb_per_s)

    def to_json(self) -> dict:
        return {
            "count": int(self.count), "rows": int(self.rows), "bytes": int(self.bytes),
            "time_ms": ns_to_ms(self.time_ns), "busy_ms": ns_to_ms(self.busy_ns),
            "gb_per_s": fnum(self.gb_per_s), "gb_per_s_busy": fnum(self.gb_per_s_busy),
            "expected_gb_per_s": fnum(self.expected_gb_per_s), "link": self.link,
            "efficiency": fnum(self.efficiency),
        }


@dataclass(frozen=True)
class TransfersResult:
    """Transfers summary; ``by_kind`` maps copy kind → ``KindStats``."""

    available: bool
    by_kind: dict = field(default_factory=dict)
    pageable_count: int = 0
    pageable_bytes: int = 0
    pageable_async_count: int = 0
    pageable_time_ns: int = 0
    pageable_bytes_per_step: float | None = None
    pageable_bytes_per_s: float | None = None
    pageable_window_share: float | None = None
    sync_copies: int = 0
    sync_memsets: int = 0
    memset_count: int = 0
    memset_bytes: int = 0
    memset_time_ns: int = 0
    assumptions: tuple[str, ...] = ()
    reason: str = ""
    hint: str = ""

    def to_json(self) -> dict:
        out = {
            "available": bool(self.available),
            "by_kind": {k: v.to_json() for k, v in self.by_kind.items()},
            "pageable_count": int(self.pageable_count),
            "pageable_bytes": int(self.pageable_bytes),
            "pageable_async_count": int(self.pageable_async_count),
            "pageable_time_ms": ns_to_ms(self.pageable_time_ns),
            "pageable_bytes_per_step": fnum(self.pageable_bytes_per_step),
            "pageable_bytes_per_s": fnum(self.pageable_bytes_per_s),
            "pageable_window_share": fnum(self.pageable_window_share),
            "sync_copies": int(self.sync_copies),
            "sync_memsets": int(self.sync_memsets),
            "memset": {"count": int(self.memset_count), "bytes": int(self.memset_bytes),
                       "time_ms": ns_to_ms(self.memset_time_ns)},
            "assumptions": list(self.assumptions),
        }
        if not self.available:
            out["reason"] = self.reason
            out["hint"] = self.hint
        return out




def _api_matches(api: pd.Series, pattern: re.Pattern) -> np.ndarray:
    """Row mask: the launching API name matches (classified once per unique API name)."""
    if api.empty:
        return np.zeros(0, dtype=bool)
    if not isinstance(api.dtype, pd.CategoricalDtype):
        api = api.astype("category")
    flags = np.array([bool(pattern.search(str(c))) for c in api.cat.categories] + [False])
    codes = api.cat.codes.to_numpy()
    return flags[np.where(codes >= 0, codes, len(flags) - 1)]


def _union_ns_per_device(frame: pd.DataFrame) -> int:
    total = 0
    dev = frame["device_id"].to_numpy()
    s = frame["start_ns"].to_numpy(dtype=np.int64)
    e = frame["end_ns"].to_numpy(dtype=np.int64)
    for d in np.unique(dev):  # a handful of devices
        total += iv.total_length(s[dev == d], e[dev == d])
    return int(total)


def gpu_links(gpus: pd.DataFrame | None) -> dict[int, LinkSpec]:
    if gpus is None or gpus.empty:
        return {}
    return {int(d): link_for_gpu(str(n), int(cc))
            for d, n, cc in zip(gpus["device_id"], gpus["name"].fillna(""), gpus["cc_major"])}


def _d2d_expected(gpus: pd.DataFrame | None, device_ids: np.ndarray) -> float | None:
    """A device-to-device copy reads and writes each byte: ceiling ≈ DRAM bandwidth / 2."""
    if gpus is None or gpus.empty:
        return None
    bw = gpus.set_index("device_id")["memory_bandwidth_bytes_per_s"]
    vals = [bw.get(int(d)) for d in device_ids]
    vals = [float(v) for v in vals if v is not None and np.isfinite(v) and v > 0]
    return min(vals) / 2 / 1e9 if vals else None


def report_kinds(kinds_present) -> list[str]:
    """The kinds reported, in order: ``KINDS`` always, then any other kind present, sorted."""
    return list(KINDS) + sorted(set(kinds_present) - set(KINDS))


def kind_expectation(kind: str, devs: np.ndarray, links: dict[int, LinkSpec],
                     gpus: pd.DataFrame | None) -> tuple[float | None, str]:
    """(expected GB/s, link name) of one copy kind run on devices ``devs`` (sorted ids)."""
    expected, link = None, ""
    if kind in ("H2D", "D2H", "P2P"):
        specs = [links[int(d)] for d in devs if int(d) in links]
        if specs:
            if kind == "P2P":
                vals = [s.peer_gb_per_s for s in specs if s.peer_gb_per_s is not None]
                link = specs[0].peer_link
            else:
                vals = [s.host_gb_per_s for s in specs if s.host_gb_per_s is not None]
                link = specs[0].host_link
            expected = min(vals) if vals else None
    elif kind == "D2D":
        expected, link = _d2d_expected(gpus, devs), "device memory"
    return expected, link


def link_assumptions(links: dict[int, LinkSpec]) -> tuple[str, ...]:
    """The assumptions behind the expected bandwidths, in words."""
    assumptions = sorted({s.assumption for s in links.values()})
    if not links:
        assumptions.append("no GPU table in the export: expected link bandwidths unknown")
    assumptions.append("D2D expected ≈ DRAM bandwidth / 2 (each byte is read and written)")
    return tuple(assumptions)


def analyze_transfers(memcpy: pd.DataFrame, memset: pd.DataFrame, gpus: pd.DataFrame | None, *,
                      th: Thresholds, window: tuple[int, int] | None = None) -> TransfersResult:
    """Per-kind transfer statistics (see module docstring). ``th`` is accepted for symmetry."""
    del th
    mc = filter_window(memcpy, window)
    ms = filter_window(memset, window)
    if mc.empty and ms.empty:
        return TransfersResult(available=False, reason="no memcpy or memset activity",
                               hint=HINT_CAPTURE_CUDA)
    links = gpu_links(gpus)
    by_kind: dict[str, KindStats] = {}
    kinds_present = [str(k) for k in pd.unique(mc["copy_kind"].astype(str))] if len(mc) else []
    kind_col = mc["copy_kind"].astype(str).to_numpy() if len(mc) else np.array([], dtype=object)
    for kind in report_kinds(kinds_present):  # a handful of kinds
        rows = mc.loc[kind_col == kind] if len(mc) else mc
        devs = np.unique(rows["device_id"].to_numpy()) if len(rows) else np.array([], np.int64)
        expected, link = kind_expectation(kind, devs, links, gpus)
        if len(rows) == 0 and kind in KINDS:
            by_kind[kind] = KindStats(kind, 0, 0, 0, 0, 0, expected, link)
            continue
        dur = rows["end_ns"].to_numpy(dtype=np.int64) - rows["start_ns"].to_numpy(dtype=np.int64)
        by_kind[kind] = KindStats(
            kind=kind,
            rows=int(len(rows)),
            count=int(np.maximum(rows["copy_count"].to_numpy(dtype=np.int64), 1).sum()),
            bytes=exact_sum(rows["bytes"].to_numpy(dtype=np.int64)),
            time_ns=exact_sum(dur),
            busy_ns=_union_ns_per_device(rows),
            expected_gb_per_s=expected,
            link=link,
        )
    assumptions = link_assumptions(links)

    return transfers_result(by_kind, assumptions, copy_flag_counts(mc, ms, window))


def transfers_result(by_kind: dict[str, KindStats], assumptions: tuple[str, ...],
                     flags: dict[str, int]) -> TransfersResult:
    """An available ``TransfersResult`` from its kinds, assumptions and ``copy_flag_counts``."""
    return TransfersResult(
        available=True, by_kind=by_kind, assumptions=assumptions,
        pageable_count=flags["pageable_count"], pageable_bytes=flags["pageable_bytes"],
        pageable_async_count=flags["pageable_async_count"],
        pageable_time_ns=flags["pageable_time_ns"], sync_copies=flags["sync_copies"],
        sync_memsets=flags["sync_memsets"], memset_count=flags["memset_count"],
        memset_bytes=flags["memset_bytes"], memset_time_ns=flags["memset_time_ns"])


def _inside(frame: pd.DataFrame, window: tuple[int, int] | None) -> np.ndarray:
    """Each row's duration inside ``window`` (ns; its whole duration when ``window`` is None)."""
    s, e = frame["start_ns"].to_numpy(np.int64), frame["end_ns"].to_numpy(np.int64)
    if window is not None:
        s, e = np.maximum(s, int(window[0])), np.minimum(e, int(window[1]))
    return np.maximum(e - s, 0)


def copy_flag_counts(mc: pd.DataFrame, ms: pd.DataFrame,
                     window: tuple[int, int] | None = None) -> dict[str, int]:
    """The pageable / synchronous copy and memset counts of memcpy rows ``mc`` and memset rows
    ``ms`` (``TransfersResult`` fields; sums over row subsets, so chunks add up); the pageable
    time is the part inside ``window`` (module docstring)."""
    pageable = np.zeros(len(mc), dtype=bool)
    sync = np.zeros(len(mc), dtype=bool)
    is_async = np.zeros(len(mc), dtype=bool)
    if len(mc):
        pageable = ((mc["src_kind"].astype(str).to_numpy() == "pageable")
                    | (mc["dst_kind"].astype(str).to_numpy() == "pageable"))
        sync = _api_matches(mc["launch_api"], BLOCKING_COPY_LAUNCH_RE)
        api_str = mc["launch_api"]
        is_async = _api_matches(api_str, re.compile(r"Async", re.IGNORECASE))
    counts = np.maximum(mc["copy_count"].to_numpy(dtype=np.int64), 1) if len(mc) else np.zeros(0)
    ms_dur = (ms["end_ns"].to_numpy(dtype=np.int64) - ms["start_ns"].to_numpy(dtype=np.int64)
              if len(ms) else np.zeros(0, np.int64))
    return dict(
        pageable_count=int(counts[pageable].sum()),
        pageable_bytes=exact_sum(mc["bytes"].to_numpy(dtype=np.int64)[pageable]) if len(mc) else 0,
        pageable_async_count=int(counts[pageable & is_async].sum()),
        pageable_time_ns=exact_sum(_inside(mc, window)[pageable]) if len(mc) else 0,
        sync_copies=int(counts[sync].sum()),
        sync_memsets=int(_api_matches(ms["launch_api"], BLOCKING_MEMSET_LAUNCH_RE).sum()) if len(ms) else 0,
        memset_count=int(len(ms)),
        memset_bytes=exact_sum(ms["bytes"].to_numpy(dtype=np.int64)) if len(ms) else 0,
        memset_time_ns=exact_sum(ms_dur),
    )


# ---------------------------------------------------------------------- streamed: partial per span, merge
# Transfers (``analyze_transfers``) of a process from its chunks: ``partial_transfers`` per
# chunk, ``merge_transfers`` at the end — the same ``TransfersResult`` as the in-memory suite.
#
# Copies and memsets are the rows overlapping the analysed window, with full durations, as in the
# suite. Counts, bytes, durations and the pageable/synchronous flags are sums over the rows a chunk
# owns (start in ``[lo, hi)``). The busy time of a kind is the union of its copy intervals per
# device: each chunk measures that union clipped to ``[lo, hi)`` over every copy it sees
# (they overlap ``[lo, hi]``), so the chunks' lengths add up to the whole union exactly. A part is
# O(copy kinds × devices).
@dataclass(frozen=True)
class KindSums:
    """One copy kind in one chunk: owned rows, copies, bytes, Σ durations (ns), the busy union
    clipped to the chunk (ns) and the devices of its owned rows."""

    rows: int
    count: int
    bytes: int
    time_ns: int
    busy_ns: int
    devices: tuple[int, ...]


@dataclass(frozen=True)
class TransfersPart:
    """One chunk's transfer sums: per copy kind, the flag counts and the owned row counts."""

    by_kind: dict[str, KindSums]
    flags: dict[str, int]
    memcpy_rows: int
    memset_rows: int


def _kind_col(frame: pd.DataFrame) -> np.ndarray:
    return frame["copy_kind"].astype(str).to_numpy() if len(frame) else np.array([], dtype=object)


def _clipped_union(seen: pd.DataFrame, lo: int, hi: int) -> int:
    """Σ over devices of |∪ intervals ∩ [lo, hi)| (ns)."""
    if not len(seen):
        return 0
    dev = seen["device_id"].to_numpy()
    s = seen["start_ns"].to_numpy(np.int64)
    e = seen["end_ns"].to_numpy(np.int64)
    total = 0
    for d in np.unique(dev):  # a handful of devices
        total += iv.total_length(*iv.clip(s[dev == d], e[dev == d], lo, hi))
    return int(total)


def partial_transfers(ci: ChunkInputs) -> TransfersPart:
    """The chunk's transfer sums (see the module docstring)."""
    wt = (ci.window.start_ns, ci.window.end_ns)
    mc = filter_window(ci.owned("memcpy"), wt)
    ms = filter_window(ci.owned("memset"), wt)
    seen = filter_window(ci.frames["memcpy"], wt)
    own_kind, seen_kind = _kind_col(mc), _kind_col(seen)
    by_kind = {}
    for kind in dict.fromkeys(own_kind.tolist() + seen_kind.tolist()):  # a handful of kinds
        rows = mc.loc[own_kind == kind] if len(mc) else mc
        dur = rows["end_ns"].to_numpy(np.int64) - rows["start_ns"].to_numpy(np.int64)
        by_kind[str(kind)] = KindSums(
            rows=int(len(rows)),
            count=int(np.maximum(rows["copy_count"].to_numpy(np.int64), 1).sum()),
            bytes=exact_sum(rows["bytes"].to_numpy(np.int64)),
            time_ns=exact_sum(dur),
            busy_ns=_clipped_union(seen.loc[seen_kind == kind], ci.lo_ns, ci.hi_ns),
            devices=tuple(sorted({int(d) for d in np.unique(rows["device_id"].to_numpy())})))
    return TransfersPart(by_kind, copy_flag_counts(mc, ms, wt), int(len(mc)), int(len(ms)))


def merge_transfers(parts: list[TransfersPart], *, gpus: pd.DataFrame | None
                    ) -> TransfersResult:
    """The process's ``TransfersResult``; ``gpus``: the bundle's GPU table (``bundle.gpus``)."""
    if not sum(p.memcpy_rows + p.memset_rows for p in parts):
        return TransfersResult(available=False, reason="no memcpy or memset activity",
                               hint=HINT_CAPTURE_CUDA)
    links = gpu_links(gpus)
    present = [k for p in parts for k, v in p.by_kind.items() if v.rows]
    by_kind: dict[str, KindStats] = {}
    for kind in report_kinds(present):  # a handful of kinds
        sums = [p.by_kind[kind] for p in parts if kind in p.by_kind]
        rows = sum(s.rows for s in sums)
        devs = np.array(sorted({d for s in sums for d in s.devices}), np.int64)
        expected, link = kind_expectation(kind, devs, links, gpus)
        if rows == 0 and kind in KINDS:
            by_kind[kind] = KindStats(kind, 0, 0, 0, 0, 0, expected, link)
            continue
        by_kind[kind] = KindStats(
            kind=kind, rows=rows, count=sum(s.count for s in sums),
            bytes=sum(s.bytes for s in sums), time_ns=sum(s.time_ns for s in sums),
            busy_ns=sum(s.busy_ns for s in sums), expected_gb_per_s=expected, link=link)
    flags = {k: sum(p.flags[k] for p in parts) for k in parts[0].flags}
    return transfers_result(by_kind, link_assumptions(links), flags)


# -------------------------------------------------------------------------------- declaration
TRANSFER_KIND = Obj({"count": "int", "bytes": "int", "time_ms": "num", "gb_per_s": "num?",
                     "expected_gb_per_s": "num?"},
                    carried={"busy_ms": "num", "gb_per_s_busy": "num?", "efficiency": "num?",
                             "link": "str", "rows": "int"})
"""One ``transfers.by_kind`` row (the renderers also normalize one alone: ``contract.normalize_as``)."""

_COPY_KINDS = ("H2D", "D2H", "D2D", "P2P")
TRANSFERS_SPEC = Section(Obj({
    "by_kind": Obj({kind: TRANSFER_KIND for kind in _COPY_KINDS}, optional=_COPY_KINDS),
    "pageable_count": "int", "pageable_bytes": "int", "sync_copies": "int"},
    carried={"pageable_async_count": "int", "sync_memsets": "int", "assumptions": List("str"),
             "pageable_time_ms": "num", "pageable_window_share": "share?",
             "pageable_bytes_per_step": "num?", "pageable_bytes_per_s": "num?",
             "memset": Obj({"count": "int", "bytes": "int", "time_ms": "num"})}),
    "No memory transfers in the analysed window.", HINT_CAPTURE_CUDA,
    per_process=True)
"""The ``transfers`` section of the analysis JSON (model/schema_types.py)."""

TRANSFERS: Declaration = declare(Declaration(
    "transfers", section="transfers", spec=TRANSFERS_SPEC,
    partial=lambda span, **_: partial_transfers(span),
    finish=lambda states, ctx: merge_transfers(list(states), gpus=ctx.bundle.gpus),
    rank=8, whole_reads=("busy", "phases"),
    whole=lambda p, busy, phases: over_one_span(TRANSFERS, p, busy, phases)))
"""Memory transfers (the ``transfers`` section): in memory the same partial → merge → finish
over one span (``engine.context.over_one_span``)."""
