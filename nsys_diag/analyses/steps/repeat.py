"""Step helpers below ``steps``: NVTX name normalisation and vectorised regex, kernels per step,
and detecting steps from a repeating NVTX range when nothing is named a step.

A detected repeat is a loop iteration, never a layer (see ``repeat_steps``): layer, module and op
ranges (``LAYER_RANGE_RE``, ``FRAMEWORK_RANGE_RE``) never qualify, and a name nested in a larger
unmarked cycle (``nested_in_larger_cycle``) is skipped. All times are integer ns.
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

from nsys_diag.analyses.timeline import intervals as iv
from nsys_diag.analyses.steps.phase_names import canonical_phase
from nsys_diag.model.contracts import MISSING

FRAMEWORK_RANGE_RE = re.compile(
    r"^\s*(?:aten::|autograd::|c10d::|torch::|prim::|cudnn|cublas|nccl|cuda|cu[A-Z]|_|\[)")
"""Ranges emitted by frameworks per op (PyTorch emit_nvtx ``aten::…``, NCCL calls, private
autograd Functions ``_Foo``): never the head of a detected step cycle."""

LAYER_RANGE_RE = re.compile(
    r"::|^\s*nn\.|Backward|(?:Function|Func|Layer|Block|Module|Wrapper|Op)\s*$"
    r"|^\s*(?:Linear|Conv[123]d|ConvTranspose[123]d|LayerNorm|RMSNorm|GroupNorm|BatchNorm[123]d"
    r"|Embedding|Dropout|MultiheadAttention|Attention|MLP|GELU|ReLU|SiLU|Softmax|Sequential"
    r"|ModuleList|Identity)\s*$")
"""Ranges that are a layer, a module or an op, never a loop iteration (case-sensitive): any name
with ``::`` (``FSDP::pre_forward``, ``aten::mm``, ``flash_attn::…``), autograd Functions
(``FlashAttnFunc``, ``*Function``, ``*Backward*``), ``nn.Module``-style layer classes (``*Layer``,
``*Block``, ``*Module``, ``Linear``, ``LayerNorm`` …). Names ending in ``_forward`` are *not*
rejected: pipeline stages such as ``transformer_forward`` are real parts of an iteration, and the
cycle head is the longest-period, data-preferred name anyway."""

NESTED_GAP_FACTOR = 1.5
"""Repeat detection: a start-to-start gap over 1.5 × the median gap is a long gap (a candidate
whose long gaps recur at a fixed stride, holding much more GPU work, is nested in a larger cycle)."""
NESTED_WORK_FACTOR = 2.0
"""...when the long gaps launch ≥ 2 × the kernels of the median short gap: the rest of an
unmarked iteration (backward, optimizer) follows the last layer; a periodic slow step (a
checkpoint) adds little GPU work, so it stays a step."""

REPEAT_MIN_COUNT = 5
"""Repeat detection needs ≥ 5 occurrences (≥ 3 analysable steps after warm-up and the last)."""
REPEAT_MAX_SPREAD = 0.25
"""Repeat detection: start-to-start spacing MAD ≤ 25% of its median counts as regular."""

_OP_SUFFIX_RE = r",\s*(?:op_id|seq|sequence_number)\s*=\s*\d+"


def normalize_name(text: str) -> str:
    """Grouping name of an NVTX range: ``, op_id = N`` / ``, seq = N`` suffixes stripped."""
    return re.sub(_OP_SUFFIX_RE, "", str(text)).strip()


def regex_hits(strings, pattern: str, *, ignore_case: bool = True, full: bool = False) -> np.ndarray:
    """Boolean per string: ``pattern`` matches at the start (``full``: the whole string).

    Vectorised in Arrow (RE2) — NVTX tables can hold a million distinct texts (``op_id`` suffixes);
    falls back to Python ``re`` for patterns RE2 does not support.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    values = [str(x) for x in strings] if not isinstance(strings, pd.Index) else strings.astype(str)
    anchored = f"^(?:{pattern})" + ("$" if full else "")
    try:
        hits = pc.match_substring_regex(pa.array(values, type=pa.string()), anchored,
                                        ignore_case=ignore_case)
        return np.asarray(hits.to_numpy(zero_copy_only=False), dtype=bool)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        rx = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
        f = rx.fullmatch if full else rx.match
        return np.fromiter((f(v) is not None for v in values), bool, len(values))


def normalized_names(strings) -> pd.Index:
    """``normalize_name`` of many strings at once (Arrow regex replace)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    arr = pa.array([str(x) for x in strings], type=pa.string())
    out = pc.utf8_trim_whitespace(pc.replace_substring_regex(arr, _OP_SUFFIX_RE, ""))
    return pd.Index(out.to_pylist(), dtype=object)


def normalized_categories(cat: pd.Series) -> pd.Index:
    """``normalize_name`` of every category of a categorical column."""
    return normalized_names(cat.cat.categories)


def as_category(s: pd.Series) -> pd.Series:
    return s if isinstance(s.dtype, pd.CategoricalDtype) else s.astype("category")


def launch_or_start(kernels: pd.DataFrame) -> np.ndarray:
    """CPU-side time of each kernel's launch call; the GPU start where the call is missing."""
    ls = kernels["launch_start_ns"].to_numpy(np.int64)
    missing = ls == MISSING
    if not missing.any():  # perf (bench): the column itself, no 2M-row copy
        return ls
    return np.where(missing, kernels["start_ns"].to_numpy(np.int64), ls)


class MissingCounts(LookupError):
    """``KernelCounts`` was asked for intervals nobody counted."""


class KernelCounts:
    """Kernels launched inside given intervals, counted elsewhere — a streamed export counts its
    chunks' kernels per interval and adds them up (``analyses/chunked``) — read by
    ``kernels_per_step`` in place of a kernels frame. ``len()`` is the number of kernels."""

    def __init__(self, total: int, counts: dict[tuple, np.ndarray]):
        self.total = int(total)
        self.counts = counts

    @staticmethod
    def key(starts: np.ndarray, ends: np.ndarray) -> tuple:
        return (np.asarray(starts, np.int64).tobytes(), np.asarray(ends, np.int64).tobytes())

    def __len__(self) -> int:
        return self.total

    def count(self, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
        got = self.counts.get(self.key(starts, ends))
        if got is None:
            raise MissingCounts("kernel counts of these intervals were not collected")
        return got.copy()


def kernels_per_step(kernels, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Kernels launched (CPU side; start without a launch call) inside each step (``kernels``: a
    kernels frame, or ``KernelCounts``)."""
    if isinstance(kernels, KernelCounts):
        return kernels.count(starts, ends) if len(kernels) else np.zeros(starts.size, np.int64)
    if not len(kernels):
        return np.zeros(starts.size, np.int64)
    launch = launch_or_start(kernels)
    if iv.is_sorted(launch):  # perf (bench): sorted launches: two binary searches per step
        return (np.searchsorted(launch, ends, side="left")
                - np.searchsorted(launch, starts, side="left")).astype(np.int64)
    which = iv.containing_interval(launch, starts, ends)
    which += 1  # bin 0 takes the kernels outside every step
    return np.bincount(which, minlength=starts.size + 1)[1:].astype(np.int64)


def nested_in_larger_cycle(heads: np.ndarray, kernels: pd.DataFrame | None) -> bool:
    """The occurrences (sorted starts) are layers of an unmarked, larger cycle: their long gaps
    (> ``NESTED_GAP_FACTOR`` × median) recur at a fixed stride (≥ 2 of them) and launch ≥
    ``NESTED_WORK_FACTOR`` × the kernels of the median short gap."""
    gaps = np.diff(heads)
    if gaps.size < 3 or kernels is None or not len(kernels):
        return False
    long_ = np.flatnonzero(gaps > NESTED_GAP_FACTOR * np.median(gaps))
    if long_.size < 2 or np.unique(np.diff(long_)).size != 1:
        return False
    work = kernels_per_step(kernels, heads[:-1], heads[1:])
    short = np.delete(work, long_)
    return bool(short.size and np.median(work[long_]) >= NESTED_WORK_FACTOR * max(
        1.0, float(np.median(short))))


def repeat_steps(nvtx: pd.DataFrame, kernels: pd.DataFrame | None = None
                  ) -> tuple[np.ndarray, np.ndarray, int, str] | None:
    """Detect a repeating cycle of top-level NVTX ranges on one thread → (starts, ends, tid, head).

    Only top-level ranges of a thread are considered (a range nested in another on the same thread
    is part of something bigger). A name qualifies with ≥ ``REPEAT_MIN_COUNT`` non-overlapping
    occurrences whose start-to-start spacing is regular (MAD ≤ ``REPEAT_MAX_SPREAD`` × median, no
    spacing over 3 × median), and a name that is a layer, module or op (``LAYER_RANGE_RE``,
    ``FRAMEWORK_RANGE_RE``) never qualifies. The longest period wins (steps, not the layers
    inside them); among names at that period a data-loading name (the head of a training
    iteration) is preferred, then the name that occurs first; a name nested in a larger unmarked
    cycle (``nested_in_larger_cycle``) is skipped.
    """
    if len(nvtx) < REPEAT_MIN_COUNT:
        return None
    text = as_category(nvtx["text"])
    group_names = normalized_categories(text)
    uniq = pd.Index(pd.unique(group_names)).sort_values()
    codes = text.cat.codes.to_numpy()
    df = pd.DataFrame({
        "tid": nvtx["global_tid"].to_numpy(np.int64),
        "start": nvtx["start_ns"].to_numpy(np.int64),
        "end": nvtx["end_ns"].to_numpy(np.int64),
        "name": uniq.get_indexer(group_names)[codes],
    })
    framework = (regex_hits(uniq, FRAMEWORK_RANGE_RE.pattern, ignore_case=False)
                 | regex_hits(uniq, f".*?(?:{LAYER_RANGE_RE.pattern})", ignore_case=False))
    df = df[df["end"] > df["start"]]
    # top level per thread: sorted by (tid, start, longest first), not inside an earlier range
    df = df.assign(neg_end=-df["end"]).sort_values(["tid", "start", "neg_end"], kind="stable")
    prev_max = df.groupby("tid", sort=False)["end"].transform(lambda e: e.cummax().shift())
    df = df[~(df["end"] <= prev_max)]
    if len(df) < REPEAT_MIN_COUNT:
        return None
    df = df.sort_values(["tid", "name", "start"], kind="stable")
    keys = [df["tid"], df["name"]]
    g = df.groupby(keys, sort=False)
    df = df.assign(gap=g["start"].diff(), prev_end=g["end"].shift())
    stats = df.groupby(["tid", "name"], sort=False).agg(
        n=("start", "size"), first=("start", "min"), period=("gap", "median"), max_gap=("gap", "max"))
    stats["overlaps"] = (df["prev_end"] > df["start"]).groupby(keys, sort=False).sum()
    dev = (df["gap"] - df.groupby(keys, sort=False)["gap"].transform("median")).abs()
    stats["mad"] = dev.groupby(keys, sort=False).median()
    user_name = ~framework[stats.index.get_level_values(1).to_numpy()]
    ok = ((stats["n"] >= REPEAT_MIN_COUNT) & (stats["overlaps"] == 0) & (stats["period"] > 0)
          & (stats["mad"] <= REPEAT_MAX_SPREAD * stats["period"])
          & (stats["max_gap"] <= 3 * stats["period"]) & user_name)
    cand = stats[ok]
    if cand.empty:
        return None
    longest = cand["period"].max()
    cand = cand[cand["period"] >= 0.95 * longest].copy()
    cand["is_data"] = [canonical_phase(str(uniq[n])) == "data" for _, n in cand.index]
    cand = cand.sort_values(["is_data", "first"], ascending=[False, True], kind="stable")
    for tid, name_code in cand.index:  # a handful of candidates at the longest period
        heads = np.sort(df.loc[(df["tid"] == tid) & (df["name"] == name_code), "start"].to_numpy())
        if not nested_in_larger_cycle(heads, kernels):
            break
    else:
        return None
    on_thread = df[df["tid"] == tid]
    last_end = int(on_thread.loc[on_thread["start"] >= heads[-1], "end"].max())
    ends = np.append(heads[1:], max(last_end, int(heads[-1]) + 1)).astype(np.int64)
    return heads.astype(np.int64), ends, int(tid), str(uniq[name_code])
