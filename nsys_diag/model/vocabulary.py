"""The one vocabulary of nsys-diag: canonical phases, idle-gap causes, verdict codes, capture hints.

Every module that names a phase, a gap cause, a verdict or tells the user how to capture what is
missing takes the word from here; nothing else defines them. Orders matter: tuples are listed in
the order outputs show them.
"""
from __future__ import annotations

from dataclasses import dataclass

# ----------------------------------------------------------------------------------- phases
CANONICAL_PHASES = ("data", "forward", "backward", "optimizer", "overhead", "communication", "other")
"""Canonical phases a step's NVTX ranges map to (``analyses/steps/phases.py``); ``other`` catches the
rest. This is also the order of ``--phase-map`` keys in messages."""

ANNOTATED_PHASES = CANONICAL_PHASES[:-1]
"""The phases a user marks by name with ``nsys_diag.annotate`` (``other`` is never marked)."""

PHASE_DISPLAY_ORDER = ("data", "forward", "backward", "optimizer", "communication", "overhead",
                       "other")
"""Order of per-phase columns in batch and compare outputs (a step's life: input, compute,
communication, then bookkeeping)."""

EXPLAIN_OTHER = {"phases": "other (not covered by phases)",
                 "kernels": "other (remaining kernels, and time outside kernels)"}
"""The name of each compare ``explain[]`` group's remainder row (``kind`` "other": the step-time
delta its listed rows leave), as the JSON, the terminal, Markdown and HTML call it."""

# ------------------------------------------------------------------------------- gap causes
@dataclass(frozen=True)
class GapCause:
    """One cause of GPU idle time and every word that follows from it (the one table; the maps
    elsewhere — ``findings.CAUSE_CODE``, ``job_verdict.HOST_CAUSE_VERDICT``, ``verdict``'s
    mechanism phrases, the report's labels, the JSON's key order — are read from it).

    ``label``: the report's name for it; ``report_order``: its place in the report's list (the
    table itself is in precedence order); ``finding_code``: the verdict code its finding argues
    for; ``straggler_verdict``: the verdict of a straggler whose excess host time is this cause
    (``finding_code`` except start-up, which is no reason to call a rank with steps
    ``insufficient_data``); ``mechanism``: what the GPU waits for, as the scaling advice words it;
    ``advice_key``: its entry in ``analyses/diagnosis/advice.ADVICE``."""

    name: str
    label: str
    report_order: int
    finding_code: str
    straggler_verdict: str
    mechanism: str
    advice_key: str


GAP_CAUSE_TABLE = (
    GapCause("startup", "Start-up", 0, "insufficient_data", "overhead_bound",
             "start-up before the first kernel", "startup"),
    GapCause("input", "Waiting on input", 1, "input_bound", "input_bound",
             "its input (data loading)", "input"),
    GapCause("overhead", "Overhead phase", 10, "overhead_bound", "overhead_bound",
             "overhead phases", "overhead"),
    GapCause("communication", "Communication (host)", 4, "communication_bound",
             "communication_bound", "host-side communication", "communication"),
    GapCause("transfer", "Memory transfers", 2, "input_bound", "input_bound",
             "host↔device copies", "transfer"),
    GapCause("unified_memory", "Unified memory", 3, "input_bound", "input_bound",
             "unified-memory migrations", "unified_memory"),
    GapCause("sync", "Host synchronization", 5, "overhead_bound", "overhead_bound",
             "host synchronisation", "sync"),
    GapCause("memory_management", "Memory management", 6, "overhead_bound", "overhead_bound",
             "host memory allocation", "memory_management"),
    GapCause("host_io", "Host I/O", 7, "overhead_bound", "overhead_bound",
             "blocking host I/O", "host_io"),
    GapCause("host_cpu", "Host code after a sync", 9, "overhead_bound", "overhead_bound",
             "the host's own code after each synchronisation", "host_cpu"),
    GapCause("launch", "Launch overhead", 8, "launch_bound", "launch_bound", "kernel launches",
             "launch"),
    GapCause("other", "Other", 11, "overhead_bound", "overhead_bound",
             "host work no evidence names", "other"),
)
"""Every gap cause, in precedence order (defined in ``analyses/gaps/causes.py``'s module docstring):
a gap's time goes to the first cause whose evidence covers it; ``other`` is the residual."""

GAP_CAUSES = tuple(c.name for c in GAP_CAUSE_TABLE)
"""The gap causes' names in precedence order (the order of ``gaps.by_cause`` in the JSON)."""

GAP_CAUSE_LABELS = tuple((c.name, c.label)
                         for c in sorted(GAP_CAUSE_TABLE, key=lambda c: c.report_order))
"""Gap causes with their report labels, in the order the report lists them."""

GAP_CAUSE_BY_NAME = {c.name: c for c in GAP_CAUSE_TABLE}
"""Each gap cause's row of ``GAP_CAUSE_TABLE`` by its name."""


def gpu_placeholder(device_id: int) -> str:
    """The name a GPU gets when the input does not name it (``trace.gpus[].name``; its
    ``name_known`` is false): ``GPU <id>``."""
    return f"GPU {int(device_id)}"


def gpu_named(gpu: dict) -> bool:
    """Whether a ``trace.gpus[]`` row carries a real name: non-empty and not the placeholder
    (``name_known`` false; a row without the key, from an older JSON, counts as named)."""
    return bool(gpu.get("name")) and bool(gpu.get("name_known", True))


# ---------------------------------------------------------------------------- verdict codes
VERDICT_CODES = ("compute_bound", "compute_bound_no_tensor_cores", "input_bound", "memory_bound",
                 "overhead_bound", "launch_bound", "communication_bound", "insufficient_data",
                 "latency_bound", "no_dominant_cause")
"""The verdicts ``analyze`` can give (``verdict.code`` in the JSON). ``latency_bound`` (issue
26): the GPU is busy in time, but its launches fill little of its SMs. ``no_dominant_cause``:
no rule fired — neither an idle cause, nor a GPU-side one, nor the compute-bound rule (the GPU
busy ≥ ``high_utilization``); there is no default verdict."""

VERDICT_TITLES = {
    "compute_bound": "Compute bound",
    "compute_bound_no_tensor_cores": "Compute bound — Tensor Cores unused",
    "input_bound": "Input bound",
    "memory_bound": "Memory bound",
    "overhead_bound": "Overhead bound",
    "launch_bound": "Launch bound",
    "communication_bound": "Communication bound",
    "insufficient_data": "Insufficient data",
    "latency_bound": "Latency bound",
    "no_dominant_cause": "No dominant cause",
}

# ---------------------------------------------------------------------------- capture hints
# Every "capture X with Y" a warning, an unavailable section, ``inspect`` or the verdict prints:
# one named entry per hint, one spelling each (flags quoted in backticks, lower case; a renderer
# capitalises where it needs to).
NSYS_TRACE_FLAGS = "nsys profile -t cuda,nvtx,osrt"
"""The tracing flags every capture hint starts from."""

NSYS_TRACE_CUDA = "nsys profile -t cuda"
"""The CUDA tracing flag, the one spelling of "-t cuda" in every hint."""

NSYS_TRACE_CUDA_NVTX = "nsys profile -t cuda,nvtx"
"""The short CUDA + NVTX tracing flags quoted inside longer hints."""

EXAMPLE_PYTHON_RUN = "python train.py"
"""The program every example command line profiles (a PyTorch training script)."""

EXAMPLE_NATIVE_RUN = "./app"
"""The same place in an example command line for a compiled program (CUDA C/C++, OpenMP offload,
OpenACC): advice to such a program names it instead of ``EXAMPLE_PYTHON_RUN``."""

EXAMPLE_ANY_RUN = "<application> [arguments]"
"""The same place for a program that is neither PyTorch nor compiled, or not known (Nsight's own
documentation writes it so)."""

NSYS_CAPTURE_COMMAND = f"{NSYS_TRACE_FLAGS} --cuda-graph-trace=node -o report {EXAMPLE_PYTHON_RUN}"
"""A complete capture command line for a PyTorch training script."""

NSYS_EXPORT_SQLITE = "nsys export --type sqlite"
"""The export that turns a ``.nsys-rep`` into the SQLite file nsys-diag reads."""

NSYS_EXPORT_COMMAND = f"{NSYS_EXPORT_SQLITE} --output report.sqlite report.nsys-rep"
"""The whole export command line."""

HINT_REEXPORT = f"re-export the report from the original .nsys-rep with `{NSYS_EXPORT_COMMAND}`"
"""A damaged, edited or cut export (missing rows, tables or a mismatching capture span)."""

NSYS_FLAG_GPU_METRICS = "--gpu-metrics-devices=all"
"""The GPU-metrics sampling flag (nsys 2023.3 and later)."""

NSYS_GPU_METRICS_OLDER = "`--gpu-metrics-device=all` on nsys before 2023.3"
"""The GPU-metrics flag's older spelling and the version it changed in (the one cut-off)."""

NSYS_FLAG_MEMORY_USAGE = "--cuda-memory-usage=true"
"""The allocation-tracking flag."""

HINT_CAPTURE_CUDA = f"capture CUDA activity with `{NSYS_TRACE_CUDA}`"
"""No GPU activity (kernels, copies) to analyse."""

HINT_REPLAY = (f"export the whole capture with `{NSYS_TRACE_CUDA_NVTX}` (CUDA API and GPU "
               "activity with correlation ids)")
"""The causal replay lacks what links the host's calls to the GPU work they launched."""

NSYS_FLAG_GRAPH_NODE_TRACE = "--cuda-graph-trace=node"
"""The flag that traces each kernel of a CUDA-graph launch (not the graph as one operation)."""

HINT_REPLAY_GRAPH_NODES = (f"capture with `{NSYS_TRACE_CUDA_NVTX} {NSYS_FLAG_GRAPH_NODE_TRACE}`: "
                           "the replay saw CUDA-graph launches as whole graphs and cannot price "
                           "the kernels inside them")
"""The replayed steps hold whole-graph executions (``CUPTI_ACTIVITY_KIND_GRAPH_TRACE`` rows)."""

NSYS_FLAG_CUDA_EVENT_TRACE = "--cuda-event-trace=true"
"""The flag that records CUDA event completions (``CUPTI_ACTIVITY_KIND_CUDA_EVENT`` rows)."""

HINT_REPLAY_CUDA_EVENTS = (f"capture CUDA event records (`{NSYS_FLAG_CUDA_EVENT_TRACE}` on nsys "
                           "versions that have it): the export holds no CUDA event rows, so the "
                           "replay inferred the cross-stream waits from the times")
"""The replay inferred cross-stream waits because the export's CUDA event table is empty."""

HINT_KERNEL_ACTIVITY_MISSING = ("kernel activity was not recorded (CUPTI buffer/collection "
                                "failure?): the export holds {launches:,} kernel launch calls "
                                "but no kernel rows; re-capture the same way with a shorter "
                                "capture range or more frequent CUPTI buffer flushes "
                                "(`--cuda-flush-interval=MS`), and check the nsys diagnostics "
                                "for dropped records")
"""CUDA launches traced, kernel activity missing (format with ``launches``): CUDA *was* traced,
so "trace CUDA with -t cuda" would be wrong."""

HINT_CUDA_NO_LAUNCH = ("CUDA was initialised but nothing was launched on the GPU (no kernel, "
                       "copy or memset; a CPU build, or a capture range that misses the GPU "
                       "work): check that the program runs on the GPU, then capture the part "
                       "that does")
"""CUDA API calls traced, no GPU work: CUDA was traced, nothing ran."""

HINT_CAPTURE_CUDA_NVTX = f"capture CUDA activity with `{NSYS_TRACE_CUDA_NVTX}`"
"""No kernels to classify (Tensor Cores), NVTX wanted beside them."""

HINT_CAPTURE_CUDA_COMMAND = f"Capture CUDA activity: {NSYS_CAPTURE_COMMAND}"
"""An unavailable report section that needs the GPU timeline: the whole capture command."""

HINT_CAPTURE_TRACE = f"capture CUDA with `{NSYS_TRACE_FLAGS} -o report <your command>`"
"""An export without CUDA tables: the tracing flags with an output name."""

WIDEN_WINDOW_HINT = ("Analyse a window that holds the GPU work: widen --window or --steps, or "
                     "leave them out to analyse the whole capture (no re-capture needed)")
"""A ``--window`` / step selection that holds none of the capture's kernels."""

HINT_CAPTURE_LAUNCHES = (f"capture with `{NSYS_TRACE_CUDA}` and export the .nsys-rep with "
                         f"`{NSYS_EXPORT_SQLITE}`")
"""GPU work that cannot be joined to its launching API calls."""

HINT_ADD_NVTX = ("add NVTX ranges around steps and phases (e.g. nsys_diag.annotate, "
                 "torch.cuda.nvtx.range_push/range_pop or nvtx.annotate) and capture with "
                 f"`{NSYS_TRACE_CUDA_NVTX}`")
"""No NVTX ranges, so neither steps nor phases can be named."""

HINT_ADD_NVTX_NEUTRAL = ("add NVTX ranges around the main loop's iterations and phases "
                         "(nvtxRangePushA/nvtxRangePop, or your language's NVTX binding) and "
                         f"capture with `{NSYS_TRACE_CUDA_NVTX}`")
"""``HINT_ADD_NVTX`` for a program that is not PyTorch (issue 26: advice worded for the program)."""

HINT_ADD_PHASES = ("wrap data loading, forward, backward and optimizer in NVTX ranges "
                   "(nsys_diag.annotate.phase)")
"""Steps without phase ranges inside them: the whole step is 'other'."""

HINT_MARK_STEPS = ("mark each training step with an NVTX range (e.g. nsys_diag.annotate.step(), "
                   "torch.profiler's ProfilerStep#N, or nvtx.annotate('train_step')), or pass "
                   "`--step-range NAME`")
"""NVTX ranges, but none that reads as a training step."""

HINT_CAPTURE_STEPS = f"capture with `{NSYS_TRACE_CUDA_NVTX}` and {HINT_MARK_STEPS}"
"""No NVTX ranges at all, so no steps: the capture flags, then how to mark the steps."""

HINT_GPU_METRICS = (f"capture GPU metrics with `nsys profile {NSYS_FLAG_GPU_METRICS}` "
                    f"({NSYS_GPU_METRICS_OLDER})")
"""No GPU metrics sampled (SM, Tensor Core, DRAM activity)."""

HINT_MEMORY_USAGE = f"capture allocations with `nsys profile {NSYS_FLAG_MEMORY_USAGE}`"
"""No allocation events (peak GPU memory)."""

HINT_CAPTURE_NCCL = ("single-GPU run, or multi-GPU collectives were not traced "
                     f"(`{NSYS_TRACE_CUDA_NVTX}` records NCCL kernels)")
"""No communication (NCCL) kernels in the capture."""

HINT_CAPTURE_WORKERS = ("capture the workers too: nsys profile traces child processes by default; "
                        "annotate their fetches with NVTX or add `--sample=process-tree`")
"""No DataLoader worker in the export."""

NCU_CAPTURE_COMMAND = (f"ncu --set roofline --csv --page raw --print-units base {EXAMPLE_PYTHON_RUN} > "
                       "kernels.csv")
"""The Nsight Compute command line that records what the roofline needs."""

NCU_PROFILE = (f"Nsight Compute (`{NCU_CAPTURE_COMMAND}`, then `nsys-diag analyze TRACE --ncu "
               "kernels.csv`)")
"""How every advice text names the Nsight Compute step: the one command, then the join."""

HINT_NCU_CSV = (f"re-run ncu with CSV output, e.g. `{NCU_CAPTURE_COMMAND}` (or `ncu --import "
                "R.ncu-rep --csv --page raw --print-units base > kernels.csv`)")
"""A CSV that is not the Nsight Compute raw page."""

HINT_NCU = f"profile kernels with Nsight Compute (`{NCU_CAPTURE_COMMAND}`) and pass `--ncu kernels.csv`"
"""No Nsight Compute metrics attached (``inspect``'s roofline row)."""

HINT_FILL_NO_SHAPE = ("re-export with a current nsys (the kernel table's gridX/blockX columns "
                      "hold the launch configuration)")
"""``gpu_fill``: kernel rows without their launch configuration (an old export's kernel table)."""

FILL_NO_KERNELS = ("the capture holds no kernel rows, so there is no kernel launch whose SM fill "
                   "could be judged")
"""``gpu_fill``'s reason on a capture without kernels; no hint of its own (the capture hints say
why no kernel was recorded: a launch configuration was not what was missing)."""

FILL_NCU_ONLY = ("an Nsight Compute CSV read alone holds no launch-shape sample of the capture "
                 "(the SM fill is judged from an nsys export's kernel table)")
"""``gpu_fill``'s reason on an ncu CSV analysed without an nsys export."""

HINT_FILL_NCU = ("for the launch configuration and occupancy of the profiled kernels, collect "
                 "ncu's launch statistics and occupancy sections (`ncu --section LaunchStats "
                 "--section Occupancy --csv --page raw --print-units base <your command> > "
                 f"kernels.csv`); for the SM fill of every launch, capture the run with "
                 f"`{NSYS_TRACE_CUDA}` and analyse that export (`--ncu kernels.csv` joins this CSV)")
"""``gpu_fill`` on an ncu CSV alone: where the launch configuration comes from."""

CRITICAL_PATH_KIND_LABELS = {
    "gpu_compute": "GPU compute", "transfer": "copies", "communication": "communication",
    "host_cpu": "host CPU", "blocking_wait": "blocking waits", "launch": "launches",
    "memory_management": "memory management", "host_io": "host I/O",
    "unexplained": "unexplained delay",
}
"""The replay's critical-path kinds (``replay.critical_path[].kind``) in words, for the reports
and the ``no_dominant_cause`` headline (unknown kinds show as they are)."""
CRITICAL_PATH_WAIT_KINDS = ("blocking_wait", "host_cpu", "launch", "memory_management",
                            "host_io", "transfer")
"""The critical-path kinds that are waits — the GPU's compute is not what the step waits on
there (``replay.critical_path_segments[]``, the whole-run timeline's "critical path waits")."""

# ------------------------------------------------------------------ Nsight Compute CSV alone
NCU_CSV_FORMAT = "ncu-csv"
"""``trace.format`` of an Nsight Compute CSV analysed alone (kernels, no timeline)."""

NCU_CSV_LABEL = "Nsight Compute CSV"
"""How reports name that format (the terminal header, the Markdown footer)."""

# ------------------------------------------------------------- PyTorch profiler (Kineto) traces
KINETO_FORMAT = "kineto"
"""``trace.format`` of a PyTorch profiler (Kineto) Chrome-trace JSON."""

KINETO_LABEL = "PyTorch profiler (Kineto) trace"
"""How reports name the format (the header, ``inspect``'s format line, the footer)."""

KINETO_CAPTURE = ("torch.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], "
                  "schedule=torch.profiler.schedule(wait=1, warmup=1, active=5), "
                  "on_trace_ready=torch.profiler.tensorboard_trace_handler('traces'), "
                  "record_shapes=True, with_stack=True) with prof.step() after every iteration")
"""A torch.profiler capture that holds what the analyses read (steps, kernels, launches)."""

KINETO_NOT_IN_FORMAT = ("GPU metrics (SM, Tensor Core and DRAM activity), OS-runtime calls and "
                        "CPU samples are not in this format (a PyTorch profiler trace)")
"""What a Kineto trace cannot hold: said once per trace as an info item."""

NEEDS_NSYS_CAPTURE = "needs an Nsight Systems capture"
"""How a hint on a Kineto trace says that what it asks for is beyond torch.profiler's format (the
one spelling: a Kineto run's advice quotes nsys flags only beside it)."""

HINT_KINETO_NOT_IN_FORMAT = (f"each {NEEDS_NSYS_CAPTURE}: capture the same run with "
                             f"`{NSYS_TRACE_FLAGS} {NSYS_FLAG_GPU_METRICS} --sample=process-tree "
                             f"-o report {EXAMPLE_PYTHON_RUN}` to add them")
"""The nsys capture that adds what a Kineto trace lacks."""

HINT_KINETO_CAPTURE = (f"record a PyTorch profiler trace with CUDA activity: `{KINETO_CAPTURE}`, "
                       "or an Nsight Systems capture")
"""A JSON that is not a usable Kineto trace (no events, no GPU activity)."""

HINT_KINETO_CUDA = ("record CUDA activity: `torch.profiler.profile(activities=[ProfilerActivity.CPU, "
                    "ProfilerActivity.CUDA])`, with the profiled steps covering GPU work")
"""A Kineto trace without GPU kernels or copies."""

HINT_KINETO_STEPS = ("mark the steps: call `prof.step()` after every iteration (ProfilerStep#N "
                     "ranges) and wrap phases in `torch.profiler.record_function('forward')`")
"""A Kineto trace without step ranges."""

HINT_KINETO_COMMAND = f"Record CUDA activity: {KINETO_CAPTURE}"
"""``HINT_CAPTURE_CUDA_COMMAND`` on a Kineto trace."""

HINT_KINETO_PHASES = ("wrap data loading, forward, backward and optimizer in "
                      "`torch.profiler.record_function('forward')` ranges inside each step")
"""``HINT_ADD_NVTX`` on a Kineto trace: record_function ranges are its phases."""

HINT_KINETO_REPLAY = ("record CPU and CUDA activity together (`torch.profiler.profile(activities="
                      "[ProfilerActivity.CPU, ProfilerActivity.CUDA])`): the runtime calls and "
                      "the GPU work they launched, linked by correlation ids")
"""``HINT_REPLAY`` on a Kineto trace."""

HINT_KINETO_CUDA_EVENTS = ("record CUDA synchronisation events (`torch.profiler.profile(..., "
                           "experimental_config=torch._C._profiler._ExperimentalConfig("
                           "enable_cuda_sync_events=True))` on PyTorch versions that have it): "
                           "the trace holds no cuda_sync events, so the replay inferred the "
                           "cross-stream waits from the times")
"""``HINT_REPLAY_CUDA_EVENTS`` on a Kineto trace."""

HINT_KINETO_GRAPH_NODES = (f"kernel-level tracing of CUDA graphs {NEEDS_NSYS_CAPTURE}: "
                           f"`{NSYS_TRACE_CUDA_NVTX} {NSYS_FLAG_GRAPH_NODE_TRACE}` (the replay saw "
                           "CUDA-graph launches as whole graphs)")
"""``HINT_REPLAY_GRAPH_NODES`` on a Kineto trace."""

HINT_KINETO_NCCL = ("single-GPU run, or multi-GPU collectives were not traced "
                    "(ProfilerActivity.CUDA records NCCL kernels; one trace file per rank)")
"""``HINT_CAPTURE_NCCL`` on a Kineto trace."""

HINT_KINETO_GPU_METRICS = (f"GPU metrics are not in this format; sampling them {NEEDS_NSYS_CAPTURE}: "
                           f"`nsys profile {NSYS_FLAG_GPU_METRICS}` ({NSYS_GPU_METRICS_OLDER})")
"""``HINT_GPU_METRICS`` on a Kineto trace."""

HINT_KINETO_MEMORY_USAGE = (f"GPU memory usage as nsys-diag reads it {NEEDS_NSYS_CAPTURE}: "
                            f"`nsys profile {NSYS_FLAG_MEMORY_USAGE}`")
"""``HINT_MEMORY_USAGE`` on a Kineto trace."""

HINT_KINETO_WORKERS = (f"DataLoader worker processes are not in a PyTorch profiler trace; tracing "
                       f"them {NEEDS_NSYS_CAPTURE} (nsys profile traces child processes by default)")
"""``HINT_CAPTURE_WORKERS`` on a Kineto trace."""

HINT_KINETO_GPU = ("name the GPU with `--gpu NAME` (the trace holds no deviceProperties; recent "
                   "PyTorch versions write them)")
"""``HINT_REEXPORT`` on a Kineto trace: there is no export to redo, only the GPU to name."""

KINETO_HINTS = {
    HINT_CAPTURE_CUDA: HINT_KINETO_CUDA, HINT_CAPTURE_CUDA_NVTX: HINT_KINETO_CUDA,
    HINT_CAPTURE_TRACE: HINT_KINETO_CUDA, HINT_CAPTURE_LAUNCHES: HINT_KINETO_REPLAY,
    HINT_CAPTURE_CUDA_COMMAND: HINT_KINETO_COMMAND, HINT_CAPTURE_STEPS: HINT_KINETO_STEPS,
    HINT_ADD_NVTX: HINT_KINETO_PHASES, HINT_ADD_PHASES: HINT_KINETO_PHASES, HINT_REPLAY: HINT_KINETO_REPLAY,
    HINT_REPLAY_CUDA_EVENTS: HINT_KINETO_CUDA_EVENTS, HINT_REPLAY_GRAPH_NODES: HINT_KINETO_GRAPH_NODES,
    HINT_CAPTURE_NCCL: HINT_KINETO_NCCL, HINT_GPU_METRICS: HINT_KINETO_GPU_METRICS,
    HINT_MEMORY_USAGE: HINT_KINETO_MEMORY_USAGE, HINT_CAPTURE_WORKERS: HINT_KINETO_WORKERS,
    HINT_REEXPORT: HINT_KINETO_GPU,
}
"""Each nsys capture hint -> its wording on a PyTorch profiler trace (``trace.format`` "kineto"):
how to record it with torch.profiler, or that it needs an Nsight Systems capture."""


NATIVE_FRAMEWORKS = ("cuda", "openmp_offload", "openacc", "stdpar")
"""``program.framework`` values of compiled programs (CUDA C/C++, OpenMP offload, OpenACC, C++/
Fortran standard parallelism): their example command lines run ``EXAMPLE_NATIVE_RUN``."""

NATIVE_MARK_STEPS = ("mark each iteration of the main loop with an NVTX range "
                     "(`nvtxRangePushA(\"step\")` … `nvtxRangePop()` from NVTX's C API, or your "
                     "language's NVTX binding), or pass `--step-range NAME`")
"""``HINT_MARK_STEPS`` for a compiled program: the C API, no Python."""

NEUTRAL_MARK_STEPS = ("mark each iteration of the main loop with an NVTX range "
                      "(`nvtx.annotate('step')` in Python, `nvtxRangePushA`/`nvtxRangePop` in "
                      "C/C++), or pass `--step-range NAME`")
"""``HINT_MARK_STEPS`` for a program that is not (or not known to be) PyTorch."""

NATIVE_ADD_PHASES = ("wrap the loop's phases (input, compute, data exchange, output) in NVTX "
                     "ranges (`nvtxRangePushA`/`nvtxRangePop`) inside each step range")
"""``HINT_ADD_PHASES`` for a program that is not PyTorch."""

NO_LOADER_WORKERS = "no DataLoader worker processes or threads in the export"
"""Why the loader-workers section is empty (a PyTorch program; others read ``PROGRAM_HINTS``)."""

NO_LOADER_WORKERS_OF_PROCESS = "no DataLoader worker of this process in the export"
"""Why it is empty for one process of several."""

NATIVE_CAPTURE_WORKERS = ("capture the child processes too (nsys profile traces them by default) "
                          "and mark their work with NVTX ranges")
"""``HINT_CAPTURE_WORKERS`` for a program that is not PyTorch (no DataLoader)."""


HINT_MEMORY_HEADROOM = f"{NSYS_FLAG_MEMORY_USAGE}  (peak GPU memory: batch-size headroom advice)"
"""The capture hint for GPU memory usage (a PyTorch program: the batch-size advice it earns)."""

SYNC_COPIES_NOTE = ("synchronous copies blocked the CPU thread (e.g. `.item()`, `.cpu()`, "
                    "`cudaMemcpy`)")
"""The transfers note on synchronous copies (the HTML report), after their count."""

NON_TC_CHECK = ("Check the dtype (AMP / bf16 / TF32) and that matrix dimensions are multiples of "
                "8 (16 for int8).")
"""The HTML report's callout on GEMM/conv kernels that missed the Tensor Cores."""

NON_TC_ADVICE = ("GEMM/conv kernels ran on CUDA cores: check dtype (FP32 → AMP bf16/fp16 or "
                 "TF32), autocast coverage and shape alignment (multiples of 8/16)")
"""``tensor_cores.advice`` when GEMM/conv kernels ran on CUDA cores."""

_GEMM_TYPES = ("the input types the GEMM library gets (FP16/BF16, or TF32 for FP32 data: the "
               "cuBLAS math mode / compute type)")
NOT_PYTORCH_NOTES = {
    HINT_MEMORY_HEADROOM: f"{NSYS_FLAG_MEMORY_USAGE}  (peak GPU memory: how much of the "
                          "device memory the run leaves free)",
    NON_TC_CHECK: f"Check {_GEMM_TYPES} and that matrix dimensions are multiples of 8 (16 for "
                  "int8).",
    NON_TC_ADVICE: f"GEMM/conv kernels ran on CUDA cores: check {_GEMM_TYPES} and shape "
                   "alignment (multiples of 8/16)",
    SYNC_COPIES_NOTE: "synchronous copies blocked the CPU thread (e.g. `cudaMemcpy`)",
}
"""The report notes worded for PyTorch above, for any other program: no AMP, autocast, batch
size or PyTorch calls."""

FRAMEWORK_HINTS = {
    "openmp_offload": {SYNC_COPIES_NOTE: "synchronous copies blocked the CPU thread (e.g. "
                                         "`target update` or `map` without `nowait`)"},
    "openacc": {SYNC_COPIES_NOTE: "synchronous copies blocked the CPU thread (e.g. `update` "
                                  "or `copy` without `async`)"},
}
"""Hints and notes with a wording of their own for one framework (``program.framework``),
before its ``PROGRAM_HINTS`` wording."""


def _reworded(commands_run: str, mark_steps: str) -> dict[str, str]:
    """The PyTorch-worded hints that read otherwise for another program: the steps marked with
    ``mark_steps``, example command lines running ``commands_run``."""
    out = {HINT_MARK_STEPS: mark_steps,
           HINT_CAPTURE_STEPS: f"capture with `{NSYS_TRACE_CUDA_NVTX}` and {mark_steps}",
           HINT_ADD_NVTX: HINT_ADD_NVTX_NEUTRAL, HINT_ADD_PHASES: NATIVE_ADD_PHASES,
           HINT_CAPTURE_WORKERS: NATIVE_CAPTURE_WORKERS,
           NO_LOADER_WORKERS: "no data-loading worker processes or threads in the export",
           NO_LOADER_WORKERS_OF_PROCESS: "no data-loading worker of this process in the export",
           **NOT_PYTORCH_NOTES}
    for hint in (HINT_CAPTURE_CUDA_COMMAND, HINT_NCU, HINT_NCU_CSV):
        out[hint] = commands_for(hint, commands_run)
    return out


def commands_for(text: str, run: str) -> str:
    """``text`` with its example command lines (the nsys and ncu capture commands, which profile
    ``EXAMPLE_PYTHON_RUN``) running ``run`` instead; only those command shapes are touched, so
    user text that happens to hold the words is left alone."""
    for shape in ("-o report {}", "{} > kernels.csv"):
        text = text.replace(shape.format(EXAMPLE_PYTHON_RUN), shape.format(run))
    return text


PROGRAM_HINTS = {"native": _reworded(EXAMPLE_NATIVE_RUN, NATIVE_MARK_STEPS),
                 "neutral": _reworded(EXAMPLE_ANY_RUN, NEUTRAL_MARK_STEPS)}
"""Each PyTorch-worded capture hint -> its wording for a compiled program (``native``) or for one
that is neither PyTorch nor compiled, or not known (``neutral``: JAX, TensorFlow, TensorRT,
``unknown``)."""


def hint_wording(trace_format: str | None, framework: str | None) -> str:
    """Which wording the capture hints take: ``kineto`` on a PyTorch profiler trace, ``pytorch``
    for PyTorch (or when no program was detected, as before), ``native`` for the compiled
    frameworks of ``NATIVE_FRAMEWORKS``, ``neutral`` for the rest."""
    if trace_format == KINETO_FORMAT:
        return "kineto"
    if framework is None or framework == "pytorch":
        return "pytorch"
    return "native" if framework in NATIVE_FRAMEWORKS else "neutral"


def hint_for(hint: str, trace_format: str | None, framework: str | None = None) -> str:
    """``hint`` worded for the input format and the program that ran (``hint_wording``): a Kineto
    trace reads ``KINETO_HINTS``, another program ``FRAMEWORK_HINTS``, then ``PROGRAM_HINTS``;
    wherever the example command lines are quoted, a compiled program's run
    ``EXAMPLE_NATIVE_RUN``, another's ``EXAMPLE_ANY_RUN``."""
    wording = hint_wording(trace_format, framework)
    if wording == "kineto":
        return KINETO_HINTS.get(hint, hint)
    if wording == "pytorch":
        return hint
    worded = (FRAMEWORK_HINTS.get(str(framework), {}).get(hint)
              or PROGRAM_HINTS[wording].get(hint, hint))
    return commands_for(worded, EXAMPLE_NATIVE_RUN if wording == "native" else EXAMPLE_ANY_RUN)


KINETO_ADVICE_STEADY_STATE = ("Profile a steady-state window: torch.profiler.profile(schedule="
                              "torch.profiler.schedule(wait=1, warmup=1, active=5)) with prof.step() "
                              "after every iteration leaves the first iterations out and records "
                              "only the active steps.")
"""The capture-range advice on a Kineto trace."""

KINETO_ADVICE_SKIP_FIRST = ("Or skip the start-up entirely: torch.profiler.schedule(skip_first=N, "
                            "wait=1, warmup=1, active=5), N the iterations the start-up takes.")
"""The ``--capture-range=nvtx`` advice on a Kineto trace."""

KINETO_ADVICE_LATE_START = ("Or enter the torch.profiler.profile context only around the training "
                            "loop, after the model is built and compiled.")
"""The ``--delay``/``--duration`` advice on a Kineto trace."""

KINETO_ADVICE_NAME_HOST = ("Name the host work between kernels: wrap the loop's parts in "
                           "torch.profiler.record_function('NAME') ranges and record with "
                           "with_stack=True; sampling the code between them on the CPU "
                           f"{NEEDS_NSYS_CAPTURE}: {NSYS_TRACE_FLAGS} --sample=process-tree.")
"""The "name the host work" advice on a Kineto trace."""

KINETO_ADVICE_SAMPLE_HOST = ("See what the host does between kernels: record with with_stack=True "
                             "(the Python stack of each CPU op); sampling the CPU and tracing OS "
                             f"runtime calls {NEEDS_NSYS_CAPTURE}: {NSYS_TRACE_FLAGS} --sample=process-tree "
                             "--cpuctxsw=process-tree.")
"""The "sample the host" advice on a Kineto trace."""
