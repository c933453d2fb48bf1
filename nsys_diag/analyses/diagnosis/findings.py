"""Findings: every cost the analyses measure, with its evidence and the advice it earns.

A ``Finding`` argues for one verdict code (``code``) from one idle cause or GPU-side condition
(``cause``). ``build_findings(inputs, th)`` returns one finding per cause that has something to
measure — fired or not — so the report can show what was checked and stayed under its threshold.
The verdict (``analyses/diagnosis/verdict.py``) is the finding whose fix the replay prices
highest (``analyses/diagnosis/pricing.py``), or without the replay the fired one with the
largest cost.

Causes, their cost and their rule (costs are fractions of the analysed window, per GPU; the gap
causes and their precedence are defined in ``analyses/gaps/causes.py``):

* ``input`` / ``transfer`` / ``unified_memory`` → ``input_bound``: idle while the step thread is
  in a data phase / while a copy runs / while unified memory migrates; fires at
  ``input_bound_verdict_share``.
* ``sync`` / ``memory_management`` / ``host_io`` / ``host_cpu`` / ``overhead`` →
  ``overhead_bound``: idle while the host waits for the GPU's queued work / allocates / blocks in
  file or network I/O / runs its own code after a synchronisation (named by its phase) / runs an
  overhead phase; fires at ``overhead_share``. ``other`` (idle nothing names) → ``overhead_bound`` at
  ``unattributed_idle_share``.
* ``launch`` → ``launch_bound``: short launch gaps ≥ ``overhead_share`` *and* ≥
  ``launch_bound_small_kernel_frac`` of kernels shorter than ``small_kernel_ns``.
* ``communication`` (host in MPI/NCCL/torch.distributed) and ``exposed_communication``
  (communication kernels with no compute beside them, share of step time) →
  ``communication_bound`` at ``communication_share``.
* ``startup`` → ``insufficient_data`` when ≥ ``startup_dominated_share`` of the window.
* ``memory_bound`` (GPU-metrics DRAM bandwidth or the ncu roofline), ``no_tensor_cores`` (GEMM/conv
  off the Tensor Cores) — GPU-side; their cost is the share of the window spent in those kernels.

Severity: ``critical`` when the rule's value is ≥ 2 × its threshold, ``warning`` when it fired,
``info`` otherwise. Advice comes from ``analyses/diagnosis/advice.py`` (which also holds
``build_findings``, the list of every finding): each text is written once, with the
condition that earns it.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable

from nsys_diag.model.thresholds import Thresholds
from nsys_diag.model.vocabulary import GAP_CAUSE_TABLE

CAUSE_CODE = {
    **{c.name: c.finding_code for c in GAP_CAUSE_TABLE},
    "exposed_communication": "communication_bound", "too_little_work": "insufficient_data",
    "memory_bound": "memory_bound", "no_tensor_cores": "compute_bound_no_tensor_cores",
    "compute": "compute_bound", "latency": "latency_bound",
    "no_dominant_cause": "no_dominant_cause",
}
"""The verdict code each cause argues for (design: findings → one of the eight codes): a gap
cause's from ``model.vocabulary.GAP_CAUSE_TABLE``, then the causes that are not idle gaps."""

GPU_SIDE_CAUSES = ("memory_bound", "no_tensor_cores", "latency", "compute")
MEMORY_BOUND_ROOFLINE_SHARE = 0.5
"""ncu roofline: ≥ 50% of kernel time in memory-bound kernels → memory bound (majority)."""


@dataclass(frozen=True)
class Evidence:
    """One measured fact. ``role`` "rule": a condition of a rule, ``fired`` tells whether it held;
    "context": shown beside the rule, compared with nothing (``comparison`` "info")."""

    metric: str
    value: float | str | None
    threshold: float | None
    comparison: str  # ">=", "<", ... or "info"
    source: str  # "timeline", "nvtx", "gpu_metrics", "ncu", "kernel names", "capture"
    fired: bool | None = None
    role: str = ""

    def __post_init__(self) -> None:
        if not self.role:
            is_rule = self.comparison not in ("info", "", None) and self.threshold is not None
            object.__setattr__(self, "role", "rule" if is_rule else "context")
        if self.fired is None and self.role == "rule":
            object.__setattr__(self, "fired", compare(self.value, self.comparison, self.threshold))

    def to_json(self) -> dict:
        return {"metric": self.metric, "value": self.value, "threshold": self.threshold,
                "comparison": self.comparison, "source": self.source, "fired": self.fired,
                "role": self.role}


def compare(value: Any, comparison: str, threshold: float | None) -> bool | None:
    """``value <comparison> threshold`` (None when either side is not a number)."""
    if threshold is None or isinstance(value, (str, bool)) or value is None:
        return None
    ops: dict[str, Callable[[float, float], bool]] = {
        ">=": lambda a, b: a >= b, ">": lambda a, b: a > b, "<": lambda a, b: a < b,
        "<=": lambda a, b: a <= b, "==": lambda a, b: a == b}
    op = ops.get(comparison)
    return None if op is None else bool(op(float(value), float(threshold)))


def rule(metric: str, value, threshold, comparison: str, source: str) -> Evidence:
    return Evidence(metric, value, threshold, comparison, source, role="rule")


def context(metric: str, value, source: str) -> Evidence:
    return Evidence(metric, value, None, "info", source, role="context")


@dataclass(frozen=True)
class Advice:
    text: str
    because: tuple[str, ...] = ()

    def to_json(self) -> dict:
        return {"text": self.text, "because": list(self.because)}


@dataclass(frozen=True)
class Finding:
    """One measured cost. ``share_of_window`` is the cost (fraction of the analysed window; for
    ``exposed_communication`` of step time); ``threshold`` the main rule's threshold."""

    code: str
    cause: str
    severity: str  # info | warning | critical
    fired: bool
    share_of_window: float | None
    per_step_ms: float | None
    threshold: float | None
    evidence: tuple[Evidence, ...] = ()
    advice: tuple[Advice, ...] = ()
    headline: str = ""
    detail: str = field(default="", compare=False)  # mechanism text (gaps.by_cause_detail)

    @property
    def cost(self) -> float:
        return float(self.share_of_window or 0.0)

    def to_json(self) -> dict:
        return {"code": self.code, "cause": self.cause, "severity": self.severity,
                "fired": self.fired, "share_of_window": self.share_of_window,
                "per_step_ms": self.per_step_ms, "threshold": self.threshold,
                "evidence": [e.to_json() for e in self.evidence],
                "advice": [a.to_json() for a in self.advice], "headline": self.headline}


def pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.0f}%"


def ms_text(v: float) -> str:
    """Milliseconds in words: no decimals from 100 ms, one from 1 ms, two below."""
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.1f}" if abs(v) >= 1 else f"{v:.2f}"


def severity(fired: bool, value: float | None, threshold: float | None) -> str:
    """critical ≥ 2 × threshold, warning when fired, else info."""
    if not fired:
        return "info"
    if value is not None and threshold and value >= 2 * threshold:
        return "critical"
    return "warning"


def make(x, cause: str, cost: float | None, evidence: list[Evidence], threshold: float | None,
         main: float | None, headline: str, detail: str = "") -> Finding:
    """A finding whose ``fired`` is the AND of its rule rows (at least one rule row)."""
    rules = [e for e in evidence if e.role == "rule"]
    fired = bool(rules) and all(e.fired for e in rules)
    step = x.step_ms
    per_step = cost * step if cost is not None and step else None
    return Finding(code=CAUSE_CODE[cause], cause=cause, severity=severity(fired, main, threshold),
                   fired=fired, share_of_window=cost, per_step_ms=per_step, threshold=threshold,
                   evidence=tuple(evidence), headline=headline, detail=detail)


def promote(f: Finding, ev: Evidence) -> Finding:
    """``f`` fired by another rule (``ev``, e.g. "the GPU mostly idles and this is its largest
    cause"): the row is added and the finding becomes a warning."""
    return replace(f, fired=True, severity="warning", evidence=f.evidence + (ev,))


# ------------------------------------------------------------------------- idle-cause rules
def _detail(x, cause: str) -> str:
    return str((getattr(x, "gap_detail", None) or {}).get(cause, "") or "")


def _via(detail: str) -> str:
    return f" ({detail})" if detail else ""


def _share(x, cause: str) -> float:
    return float((x.gap_share or {}).get(cause, 0.0) or 0.0)


WHOLE_IDLE_GAP = 0.05
"""A cause's headline states the GPU's whole idle share too when the cause leaves more than this
share of the window idle for other causes (so "idles 27% … while the host works" never sits
beside "GPU utilization 7%" unexplained)."""


def _idle_share(x) -> float:
    """The GPU's whole idle share of the window: the sum of every cause's share."""
    return sum(float(v or 0.0) for v in (x.gap_share or {}).values())


WHOLE_IDLE_MIN_CAUSE = 0.005
"""Below this share of the window a cause's headline does not state the whole idle share (a
cause of about 0% has no part of it to name)."""


def _whole_idle(x, s: float) -> float | None:
    """The GPU's whole idle share when a cause of share ``s`` (at least
    ``WHOLE_IDLE_MIN_CAUSE``) leaves more than ``WHOLE_IDLE_GAP`` of the window to other
    causes (None: the cause is about all of it, or about none)."""
    idle = _idle_share(x)
    return idle if s >= WHOLE_IDLE_MIN_CAUSE and idle - s > WHOLE_IDLE_GAP else None


def _spans(s: float, idle: float | None) -> str:
    """'27% of the window' for a cause of share ``s``; '27% of the window (93% idle in all)'
    with the whole idle share (read after "idles", "waits")."""
    return f"{pct(s)} of the window" if idle is None else \
        f"{pct(s)} of the window ({pct(idle)} idle in all)"


def _idle(x, th: Thresholds, cause: str, threshold: float, headline: str,
          extra: list[Evidence] | None = None) -> Finding:
    s, d = _share(x, cause), _detail(x, cause)
    ev = [rule(f"gaps.{cause}_share", s, threshold, ">=", "timeline")] + list(extra or [])
    if d:
        ev.append(context(f"gaps.{cause}_evidence", d, "timeline"))
    idle = _whole_idle(x, s) if "{idles}" in headline or "{spans}" in headline else None
    if idle is not None:  # the headline states it: its row
        ev.append(context("gaps.idle_share", idle, "timeline"))
    spans = _spans(s, idle)
    text = headline.format(share=pct(s), via=_via(d), detail=d, spans=spans, idles="idles " + spans)
    return make(x, cause, s, ev, threshold, s, text, detail=d)


def input_finding(x, th: Thresholds) -> Finding:
    extra = []
    if "data" in (x.phase_share or {}):
        extra.append(rule("phases.data_share", x.phase_share["data"], th.input_bound_data_share, ">",
                          "nvtx"))
    loader = getattr(x, "loader", None)
    if loader and loader.get("workers"):  # which side of the loader is short (issue 19)
        extra.append(Evidence("loader.busy_share", loader["busy_share"],
                              th.loader_saturated_busy_share, ">=", loader.get("basis") or "nvtx",
                              role="context"))
    f = _idle(x, th, "input", th.input_bound_verdict_share,
              "Input-bound: the GPU waits {spans} while the step thread is in its "
              "data-loading phase", extra)
    return replace(f, headline=f.headline + _loader_words(loader, th)) if loader else f


def loader_state(x, th: Thresholds) -> str | None:
    """``saturated`` / ``idle`` / ``busy`` for the file's DataLoader workers; None without any."""
    loader = getattr(x, "loader", None)
    if not loader or not loader.get("workers"):
        return None
    b = float(loader["busy_share"])
    return ("saturated" if b >= th.loader_saturated_busy_share
            else "idle" if b < th.loader_idle_busy_share else "busy")


def _loader_words(loader: dict, th: Thresholds) -> str:
    n, b = int(loader.get("workers") or 0), float(loader.get("busy_share") or 0.0)
    if not n:
        return ""
    who = f"{n} DataLoader worker{'s' if n != 1 else ''}"
    if b >= th.loader_saturated_busy_share:
        return f"; the {who} are saturated (busy {pct(b)} of the window)"
    if b < th.loader_idle_busy_share:
        return (f"; the {who} idle (busy {pct(b)} of the window): the main process is the "
                "bottleneck")
    return f"; the {who} are busy {pct(b)} of the window"


def transfer_finding(x, th: Thresholds) -> Finding:
    extra = []
    if x.pageable_bytes_per_step is not None:
        extra.append(context("transfers.pageable_bytes_per_step", x.pageable_bytes_per_step, "timeline"))
    elif x.pageable_bytes_per_s is not None:
        extra.append(context("transfers.pageable_bytes_per_s", x.pageable_bytes_per_s, "timeline"))
    if getattr(x, "pageable_window_share", None) is not None:
        extra.append(context("transfers.pageable_window_share", x.pageable_window_share,
                             "timeline"))
    return _idle(x, th, "transfer", th.input_bound_verdict_share,
                 "Input-bound: the SMs idle {spans} while host↔device copies run{via} "
                 "(copy engines busy is not utilization)",
                 extra)


def unified_memory_finding(x, th: Thresholds) -> Finding:
    return _idle(x, th, "unified_memory", th.input_bound_verdict_share,
                 "Input-bound: the SMs idle {spans} while unified memory migrates "
                 "between host and device{via}")


def sync_finding(x, th: Thresholds) -> Finding:
    return _idle(x, th, "sync", th.overhead_share,
                 "Overhead-bound: the host waits for the GPU{via} while a GPU {idles}")


def memory_management_finding(x, th: Thresholds) -> Finding:
    return _idle(x, th, "memory_management", th.overhead_share,
                 "Overhead-bound: the GPU {idles} while the host allocates or frees memory{via}")


def host_io_finding(x, th: Thresholds) -> Finding:
    return _idle(x, th, "host_io", th.overhead_share,
                 "Overhead-bound: the GPU {idles} while the host blocks in file or network "
                 "I/O{via}")


def host_cpu_finding(x, th: Thresholds) -> Finding:
    return _idle(x, th, "host_cpu", th.overhead_share,
                 "Host-bound: after each synchronisation the GPU has drained and {idles} while "
                 "the host runs its own code{via}")


def overhead_finding(x, th: Thresholds) -> Finding:
    names = overhead_phase_names(x)
    extra = [context("phases.overhead_names", ", ".join(names), "nvtx")] if names else []
    what = ", ".join(names[:3]) if names else "logging/checkpoint/eval"
    return _idle(x, th, "overhead", th.overhead_share,
                 "Overhead-bound: the GPU {idles} during the overhead phases "
                 + what.replace("{", "{{").replace("}", "}}"), extra)


def other_finding(x, th: Thresholds) -> Finding:
    return _idle(x, th, "other", th.unattributed_idle_share,
                 "Host-bound: the GPU {idles} while the host works outside CUDA calls and traced "
                 "OS calls{via}")


def launch_finding(x, th: Thresholds) -> Finding:
    small = rule("kernels.small_kernel_frac", x.small_kernel_frac, th.launch_bound_small_kernel_frac,
                 ">=", "timeline")
    idle = _idle_share(x)
    f = _idle(x, th, "launch", th.overhead_share,
              "Launch-bound: " + pct(x.small_kernel_frac) + " of kernels run < "
              f"{th.small_kernel_ns / 1000:g} µs and the GPU idles {{share}} of the window "
              f"waiting for kernel launches ({pct(idle)} idle in all)",
              [small, context("gaps.idle_share", idle, "timeline"),
               # the "< 10 µs" the headline states is this threshold (``/thresholds/…``)
               context("thresholds.small_kernel_ns", th.small_kernel_ns, "thresholds")])
    return f


def communication_finding(x, th: Thresholds) -> Finding:
    return _idle(x, th, "communication", th.communication_share,
                 "Communication-bound: the host waits in communication calls{via} while the GPU "
                 "{idles}")


def startup_finding(x, th: Thresholds) -> Finding:
    return _idle(x, th, "startup", th.startup_dominated_share,
                 "The capture is mostly start-up: the GPU {idles} before the "
                 "first kernel or during one-off initialisation{via}")


def exposed_communication_finding(x, th: Thresholds) -> Finding | None:
    if x.comm_exposed_share is None:
        return None
    c = float(x.comm_exposed_share)
    ev = [rule("communication.exposed_share", c, th.communication_share, ">", "timeline")]
    return make(x, "exposed_communication", c, ev, th.communication_share, c,
                f"Communication-bound: {pct(c)} of the step is communication not hidden behind "
                "compute")


def overhead_phase_names(x) -> list[str]:
    """Names of the phases mapped to canonical ``overhead`` (a few)."""
    return [n for n, canon in (getattr(x, "phase_names", ()) or ()) if canon == "overhead"][:6]


IDLE_RULES: tuple[Callable[[Any, Thresholds], Finding], ...] = (
    startup_finding, input_finding, overhead_finding, communication_finding, transfer_finding,
    unified_memory_finding, sync_finding, memory_management_finding, host_io_finding,
    host_cpu_finding, launch_finding, other_finding)
"""One rule per idle cause, in the gap precedence order."""


# --------------------------------------------------------------------------- GPU-side rules
def memory_bound_finding(x, th: Thresholds) -> Finding | None:
    """From counters only (GPU-metrics DRAM bandwidth, or the ncu roofline); the kernel-name
    heuristic is the verdict's low-confidence fallback, not a finding."""
    m = x.metrics or {}
    dram, tensor, u = m.get("dram_bandwidth"), m.get("tensor_active"), float(x.utilization)
    roof = x.roofline_memory_share
    head = "Memory-bound: {basis}; the kernels wait on memory, not math"
    if dram is not None:
        ev = [rule("gpu_metrics.dram_bandwidth_util", dram, th.memory_bound_dram_util, ">=", "gpu_metrics")]
        if tensor is not None:
            ev.append(rule("gpu_metrics.tensor_active", tensor, th.tensor_core_share_ok, "<", "gpu_metrics"))
        f = make(x, "memory_bound", u, ev, th.memory_bound_dram_util, dram,
                 head.format(basis=f"DRAM bandwidth at {pct(dram)} of peak"))
        if f.fired or roof is None:
            return f
    if roof is None:
        return None
    ev = [rule("roofline.memory_bound_share", roof, MEMORY_BOUND_ROOFLINE_SHARE, ">=", "ncu")]
    return make(x, "memory_bound", u * float(roof), ev, MEMORY_BOUND_ROOFLINE_SHARE, roof,
                head.format(basis=f"{pct(roof)} of kernel time in memory-bound kernels "
                                  "(Nsight Compute roofline)"))


def no_tensor_cores_finding(x, th: Thresholds) -> Finding | None:
    """GEMM/conv/attention time off the Tensor Cores (names, or counters when names cannot
    tell); with a Tensor Active level measured during GEMMs it must also be below
    ``Thresholds.tensor_active_engaged``."""
    share = x.non_tc_gemm_share
    if share is None:
        return None
    src = "gpu_metrics" if x.tc_engaged is not None else "kernel names"
    ev = [rule("tensor_cores.non_tc_gemm_share", share, th.non_tc_gemm_share_flag, ">=", src)]
    level = x.tensor_active_during_gemm
    engaged_th = getattr(th, "tensor_active_engaged", None)
    if level is not None and engaged_th is not None:
        ev.append(rule("tensor_cores.tensor_active_during_gemm", level, engaged_th, "<", "gpu_metrics"))
    elif level is not None:
        ev.append(context("tensor_cores.tensor_active_during_gemm", level, "gpu_metrics"))
    tensor = (x.metrics or {}).get("tensor_active")
    if tensor is not None:
        ev.append(context("gpu_metrics.tensor_active", tensor, "gpu_metrics"))
    how = (f"; Tensor pipes active {pct(level)} of cycles while GEMMs ran" if level is not None else "")
    return make(x, "no_tensor_cores", float(x.utilization) * float(share), ev,
                th.non_tc_gemm_share_flag, share,
                f"Compute-bound without Tensor Cores: {pct(share)} of kernel time is GEMM/conv on "
                f"CUDA cores{how}")


def latency_finding(x, th: Thresholds) -> Finding | None:
    """Launches that fill little of the GPU (``gpu_fill``) on a GPU busy in time: ≥
    ``latency_underfilled_share`` of kernel time under-filled and utilization ≥
    ``latency_busy_share``. Cost: the window share of under-filled kernel time."""
    under = getattr(x, "underfilled_share", None)
    if under is None:
        return None
    u = float(x.utilization)
    ev = [rule("gpu_fill.underfilled_share", under, th.latency_underfilled_share, ">=",
               "launch shapes"),
          rule("gpu.utilization", u, th.latency_busy_share, ">=", "timeline")]
    tiny, small = getattr(x, "tiny_block_share", None), getattr(x, "small_grid_share", None)
    if tiny:
        ev.append(context("gpu_fill.tiny_block_share", tiny, "launch shapes"))
    if small:
        ev.append(context("gpu_fill.small_grid_share", small, "launch shapes"))
    top = getattr(x, "fill_top", None) or ()
    shape = ""
    if top:
        name, blocks, threads, sms = top[:4]
        shape = (f"; e.g. {name}: {blocks:,} blocks of {threads} threads on {sms} SMs")
        ev += [context("gpu_fill.example_kernel", name, "launch shapes"),
               context("gpu_fill.example_blocks", blocks, "launch shapes"),
               context("gpu_fill.example_threads_per_block", threads, "launch shapes"),
               context("gpu_fill.sm_count", sms, "launch shapes")]
        if len(top) >= 6 and top[4] > 0:  # what one SM holds of it, and so the whole GPU
            per_sm, fill = int(top[4]), float(top[5])
            limit = (f"at most {per_sm} of its blocks resident per SM: "
                     if blocks > sms * per_sm else "")
            shape += f" ({limit}{pct(fill)} of the GPU's resident threads)"
            ev.append(context("gpu_fill.example_fill", fill, "launch shapes"))
            if limit:
                ev.append(context("gpu_fill.example_blocks_per_sm", per_sm, "launch shapes"))
    return make(x, "latency", u * float(under), ev, th.latency_underfilled_share, under,
                f"Latency-bound: the GPU is busy in time, but its launches fill little of its "
                f"SMs' thread slots — {pct(under)} of kernel time in under-filled "
                f"launches{shape}")


def compute_finding(x, th: Thresholds) -> Finding:
    """The GPU is busy computing: never a problem by itself (severity info); it decides the
    verdict only when nothing else fired."""
    u = float(x.utilization)
    ev = [rule("gpu.utilization", u, th.high_utilization, ">=", "timeline")]
    if x.tc_share_of_kernel_time is not None:
        ev.append(context("tensor_cores.share_of_kernel_time", x.tc_share_of_kernel_time,
                          "kernel names" if x.tc_engaged is None else "gpu_metrics"))
    sm = (x.metrics or {}).get("sm_active")
    if sm is not None:
        ev.append(context("gpu_metrics.sm_active", sm, "gpu_metrics"))
    # the communication shares the scale advice and the scale-out tip state
    if getattr(x, "comm_hidden_share", None) is not None:
        ev.append(context("communication.overlap_share", x.comm_hidden_share, "nccl"))
    if getattr(x, "comm_exposed_share", None) is not None:
        ev.append(context("communication.exposed_share", x.comm_exposed_share, "nccl"))
    tc = (f"; {pct(x.tc_share_of_kernel_time)} of kernel time on Tensor Cores"
          if x.tc_share_of_kernel_time is not None else "")
    f = make(x, "compute", u, ev, th.high_utilization, u,
             f"The GPU is busy computing (GPU utilization {pct(u)}){tc}")
    return replace(f, severity="info")


def _too_little_in_capture(x, th: Thresholds, capture_ms: float) -> Finding:
    """Abstain rule on the whole capture: less than ``min_kernel_time_ns_to_diagnose`` of kernel
    time, or the GPU busy < ``min_busy_share_to_diagnose`` of it (either fires it)."""
    busy = getattr(x, "capture_busy_share", None)
    ev = [rule("kernels.capture_time_ms", capture_ms, th.min_kernel_time_ns_to_diagnose / 1e6,
               "<", "timeline")]
    if busy is not None:
        ev.append(rule("gpu.busy_share", busy, th.min_busy_share_to_diagnose, "<", "timeline"))
    fired = any(e.fired for e in ev)
    return Finding(code="insufficient_data", cause="too_little_work",
                   severity="warning" if fired else "info", fired=fired, share_of_window=None,
                   per_step_ms=None, threshold=th.min_kernel_time_ns_to_diagnose / 1e6,
                   evidence=_either(ev),
                   headline=f"Not enough GPU work to diagnose: {capture_ms:.1f} ms of kernel "
                            f"time in the capture, the GPU busy {pct(busy)} (kernels and "
                            "copies)")


def _either(ev: list[Evidence]) -> tuple[Evidence, ...]:
    """Rows of a rule that any one of them fires: once one fired, the others are context (their
    values stand, no 'not met' beside a rule that holds)."""
    if not any(e.fired for e in ev):
        return tuple(ev)
    return tuple(e if e.fired else context(e.metric, e.value, e.source) for e in ev)


def too_little_work_finding(x, th: Thresholds) -> Finding | None:
    """Abstain rule: fewer than ``min_kernels_to_diagnose`` kernels or less than
    ``min_kernel_time_ns_to_diagnose`` of kernel time in the window (either fires it)."""
    capture_ms = getattr(x, "capture_kernel_ms", None)
    if capture_ms is not None:
        return _too_little_in_capture(x, th, float(capture_ms))
    if x.kernel_count is None and x.kernel_time_ms is None:
        return None
    ev = []
    if x.kernel_count is not None:
        ev.append(rule("kernels.count", x.kernel_count, th.min_kernels_to_diagnose, "<", "timeline"))
    if x.kernel_time_ms is not None:
        ev.append(rule("kernels.time_ms", x.kernel_time_ms, th.min_kernel_time_ns_to_diagnose / 1e6,
                       "<", "timeline"))
    fired = any(e.fired for e in ev)
    return Finding(code="insufficient_data", cause="too_little_work",
                   severity="warning" if fired else "info", fired=fired, share_of_window=None,
                   per_step_ms=None, threshold=float(th.min_kernels_to_diagnose), evidence=_either(ev),
                   headline="Not enough GPU work to diagnose: "
                            f"{x.kernel_count if x.kernel_count is not None else '?'} kernels, "
                            f"{(x.kernel_time_ms or 0.0):.1f} ms of kernel time in the window")
