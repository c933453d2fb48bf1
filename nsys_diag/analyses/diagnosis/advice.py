"""Advice, written once per cause, each text with the condition in the trace that earns it.

``ADVICE[cause]`` lists ``Rule(text, because, when)``: ``text`` may quote ``{detail}`` (the gap
evidence, ``gaps.by_cause_detail``), ``{names}`` (overhead phase names) or ``{kernels}`` (GEMMs
off the Tensor Cores); ``because`` names the metrics that earn it; ``when(x, th)`` is the gate.
Gates (issue 15): no checkpoint advice without a phase naming a checkpoint/save or a periodic slow
step; no logging advice without a phase naming logging/eval or a host-sync finding; no pinned-memory
advice under ``Thresholds.pageable_copy_min_bytes`` of pageable copies per step (per second
without steps) unless they run ≥ ``pageable_copy_min_window_share`` of the window; no "add
NVTX phases" when phases exist. Only fired findings carry advice. The numbers a wording states
that are general guidance, not measurements, are its ``Rule.constants``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any, Callable

from nsys_diag.model.thresholds import Thresholds
from nsys_diag.model.vocabulary import (EXAMPLE_NATIVE_RUN, commands_for,
                                        KINETO_ADVICE_LATE_START, KINETO_ADVICE_NAME_HOST,
                                        KINETO_ADVICE_SAMPLE_HOST, KINETO_ADVICE_SKIP_FIRST,
                                        KINETO_ADVICE_STEADY_STATE, KINETO_FORMAT, NCU_PROFILE,
                                        NSYS_TRACE_FLAGS)

from nsys_diag.analyses.diagnosis.findings import (
    IDLE_RULES,
    Advice,
    Finding,
    pct,
    compute_finding,
    latency_finding,
    exposed_communication_finding,
    loader_state,
    memory_bound_finding,
    no_tensor_cores_finding,
    overhead_phase_names,
    too_little_work_finding,
)

CHECKPOINT_RE = re.compile(r"checkpoint|ckpt|save|snapshot", re.IGNORECASE)
LOGGING_RE = re.compile(r"log|eval|valid|metric|print|report|wandb|tensorboard", re.IGNORECASE)


def _nothing_hidden(x: Any) -> bool:
    """Communication measured and none of it hidden behind compute."""
    hidden = getattr(x, "comm_hidden_share", None)
    return hidden is not None and hidden <= 0 and (getattr(x, "comm_exposed_share", 0) or 0) > 0


@dataclass(frozen=True)
class Rule:
    """One piece of advice: ``text`` is the PyTorch wording; ``variants`` maps an advice flavour
    (``FLAVOURS``) to its own wording (``neutral``: every flavour without its own)."""

    text: str
    because: tuple[str, ...]
    when: Callable[[Any, Thresholds], bool] = lambda x, th: True
    variants: tuple[tuple[str, str], ...] = ()
    constants: tuple[str, ...] = ()
    """The numbers the wording states that are general guidance, not measurements of the trace
    ("multiples of 8", "128–256 threads"): documented here, and the only numbers of a text that
    need no quantity of its finding (report/quantities.py, tests/report/test_quantities.py)."""


FLAVOURS = ("pytorch", "kineto", "cuda", "openmp_offload", "openacc", "neutral")
"""How advice is worded, by ``program.framework``: PyTorch's own, CUDA-C/C++ (streams, events,
pinned buffers, CUDA graphs), OpenMP offload (``nowait``/``depend``, target data regions),
OpenACC (``async``/``wait``, data regions); every other framework reads the neutral wording.
``kineto``: PyTorch's wording on a PyTorch profiler trace, with capture advice in torch.profiler
terms (a rule without a ``kineto`` wording reads the PyTorch one)."""
PYTORCH_ONLY_WORDS = (".item()", "DataLoader", "torch.", "autocast", "AMP", "pin_memory",
                      "num_workers", "FSDP", "DDP ", "apex", "collate_fn", "gradient",
                      "loader worker", "batch size", "optimizer", "epoch", "KV-cache")
"""Words that mean nothing outside PyTorch (or ML training): a rule without a wording for the
program's flavour whose text holds one of them is not offered to a non-PyTorch program."""


def advice_flavour(framework: str | None, trace_format: str | None = None) -> str:
    """The flavour of ``program.framework`` (None, not detected: ``pytorch``, as before);
    ``kineto`` for any PyTorch profiler trace (``trace_format``), whatever ran."""
    if trace_format == KINETO_FORMAT:
        return "kineto"
    if framework is None or framework == "pytorch":
        return "pytorch"
    if framework in NATIVE_FLAVOURS:
        return framework
    return "neutral"


NATIVE_FLAVOURS = ("cuda", "openmp_offload", "openacc")
"""Flavours of compiled programs that have advice of their own (``vocabulary.NATIVE_FRAMEWORKS``
adds ``stdpar``, which reads the neutral advice): their example command lines run
``EXAMPLE_NATIVE_RUN``, not a Python script."""


def worded(rule: Rule, flavour: str) -> str | None:
    """The rule's text for ``flavour`` (None: the rule does not fit the program); a compiled
    program's example command lines (``ncu … python train.py``) run ``./app`` instead."""
    if flavour == "pytorch":
        return rule.text
    variants = dict(rule.variants)
    if flavour == "kineto":
        return variants.get("kineto", rule.text)
    text = variants.get(flavour, variants.get("neutral"))
    if text is None and any(w in rule.text for w in PYTORCH_ONLY_WORDS):
        return None
    text = rule.text if text is None else text
    return commands_for(text, EXAMPLE_NATIVE_RUN) if flavour in NATIVE_FLAVOURS else text


READ_CALL_RE = re.compile(r"^(?:p?readv?\w*|fread|recv\w*)$")
WRITE_CALL_RE = re.compile(r"^(?:p?writev?\w*|fwrite|send\w*|fsync|fdatasync|sync_file_range"
                           r"|msync)$")
"""The host-I/O calls (``gaps/rows.HOST_IO_RE``) that read, and those that write."""

IO_FIXES = {"read": "read ahead (fewer, larger reads, or the next input prefetched while the GPU "
                    "works)",
            "write": "asynchronous or batched writes (fewer, larger calls)",
            "both": "read ahead (fewer, larger reads) and write asynchronously or in batches "
                    "(fewer, larger calls)",
            "other": "fewer, larger calls"}
"""The host-I/O fix for the calls measured (``io_kind``)."""


def io_kind(x) -> str:
    """``read``, ``write``, ``both`` or ``other`` (open/close, connect…): what the host-I/O
    calls of the gap evidence (``gaps.by_cause_detail.host_io``, "pwrite64() 798 calls, 62 ms")
    do."""
    names = re.findall(r"(\w+)\(\)", str((getattr(x, "gap_detail", None) or {}).get("host_io") or ""))
    reads = any(READ_CALL_RE.match(n) for n in names)
    writes = any(WRITE_CALL_RE.match(n) for n in names)
    return "both" if reads and writes else "read" if reads else "write" if writes else "other"


def _io_is(kind: str) -> Callable[[Any, Thresholds], bool]:
    """The gate of the host-I/O advice for ``kind`` of calls (``io_kind``)."""
    return lambda x, th: io_kind(x) == kind


def _in_use(x, technique: str) -> bool:
    return technique in (getattr(x, "techniques", ()) or ())


def _no_graphs(x, th: Thresholds) -> bool:
    return not _in_use(x, "cuda_graphs")


def _no_workers_seen(x, th: Thresholds) -> bool:
    """Worker advice ("num_workers>0") only when no DataLoader worker was seen."""
    return getattr(x, "loader", None) is None


def _phase_matches(x, rx: re.Pattern) -> bool:
    return any(rx.search(n) for n in overhead_phase_names(x))


def _periodic_slow_step(x, th: Thresholds) -> bool:
    return bool(getattr(x, "periodic_slow_step", None))


def _checkpoint_earned(x, th: Thresholds) -> bool:
    return _phase_matches(x, CHECKPOINT_RE) or _periodic_slow_step(x, th)


def _logging_earned(x, th: Thresholds) -> bool:
    sync_fired = float((x.gap_share or {}).get("sync", 0.0) or 0.0) >= th.overhead_share
    return _phase_matches(x, LOGGING_RE) or sync_fired


def pageable_earned(x, th: Thresholds) -> bool:
    """Pageable copies move ≥ ``pageable_copy_min_bytes`` per step (per second without steps)
    or run ≥ ``pageable_copy_min_window_share`` of the analysed window."""
    per = x.pageable_bytes_per_step if x.pageable_bytes_per_step is not None else x.pageable_bytes_per_s
    share = getattr(x, "pageable_window_share", None)
    return ((per is not None and per >= th.pageable_copy_min_bytes)
            or (share is not None and share >= th.pageable_copy_min_window_share))


def _comm_hidden(x, th: Thresholds) -> bool:
    """"Scales linearly while communication stays overlapped" needs communication measured
    hidden behind compute (``communication.overlap_share`` > 0)."""
    return (getattr(x, "comm_hidden_share", None) or 0.0) > 0


def _no_phases(x, th: Thresholds) -> bool:
    return not x.phase_share


def _phases_no_frames(x, th: Thresholds) -> bool:
    return bool(x.phase_share) and not (x.gap_detail or {}).get("other")


def _has_frames(x, th: Thresholds) -> bool:
    """CPU samples named the host frames of the unattributed idle time (gaps/gap_detail.py)."""
    return "sampled frame" in ((x.gap_detail or {}).get("other") or "")


def _inference(x, th: Thresholds) -> bool:
    return not x.has_backward and bool(x.phase_share)


def _has_non_tc_kernels(x, th: Thresholds) -> bool:
    return bool(x.non_tc_gemm_kernels)


def _loader_saturated(x, th: Thresholds) -> bool:
    return loader_state(x, th) == "saturated"


def _loader_idle(x, th: Thresholds) -> bool:
    return loader_state(x, th) == "idle"


def _not_loader_idle(x, th: Thresholds) -> bool:
    """Worker-side advice (more workers, caching) is not earned when the workers idle."""
    return loader_state(x, th) != "idle"


CAPTURE_RANGE = (
    Rule("Capture a steady-state window: call torch.cuda.profiler.start()/stop() (cudaProfilerStart/"
         "Stop) around a few training steps and run nsys profile --capture-range=cudaProfilerApi.",
         ("kernels.count",),
         variants=(("neutral", "Capture a steady-state window: call cudaProfilerStart()/"
                               "cudaProfilerStop() around a few iterations of the main loop and "
                               "run nsys profile --capture-range=cudaProfilerApi."),
                   ("kineto", KINETO_ADVICE_STEADY_STATE))),
    Rule("Or mark the steps with an NVTX range and capture only it: nsys profile "
         "--capture-range=nvtx --nvtx-capture=RANGE (e.g. train_step).", ("kernels.count",),
         variants=(("kineto", KINETO_ADVICE_SKIP_FIRST),
                   *((fw, "Or mark each iteration of the main loop with an NVTX range "
                           "(nvtxRangePushA/nvtxRangePop) and capture only it: nsys profile "
                           "--capture-range=nvtx --nvtx-capture=RANGE (e.g. iteration).")
                     for fw in NATIVE_FLAVOURS),
                   ("neutral", "Or mark each iteration of the main loop with an NVTX range and "
                               "capture only it: nsys profile --capture-range=nvtx "
                               "--nvtx-capture=RANGE (e.g. iteration)."))),
    Rule("Or skip the start-up with nsys profile --delay=SECONDS --duration=SECONDS.",
         ("kernels.count",), variants=(("kineto", KINETO_ADVICE_LATE_START),)),
)

PINNED = Rule("Use pinned host memory and asynchronous copies: DataLoader(pin_memory=True) and "
              ".to(device, non_blocking=True) (cudaMallocHost + cudaMemcpyAsync outside PyTorch).",
              ("transfers.pageable_bytes_per_step", "transfers.pageable_window_share"),
              pageable_earned,
              variants=(
                  ("cuda", "Copy from pinned host buffers (cudaMallocHost, or cudaHostRegister on "
                           "existing ones, once, outside the loop) with cudaMemcpyAsync on a "
                           "non-default stream, so copies run at full bandwidth and overlap "
                           "kernels."),
                  ("openmp_offload", "Keep arrays on the device across kernels with target data "
                                     "regions (map once, target update only what changes) and "
                                     "pin the host buffers the remaining copies use."),
                  ("openacc", "Keep arrays on the device across kernels with data regions "
                              "(copyin once, update only what changes) and pinned host memory "
                              "for the remaining copies (e.g. -gpu=pinned)."),
                  ("neutral", "Copy from pinned (page-locked) host memory with asynchronous "
                              "copies, so copies run at full bandwidth and overlap kernels.")))

ADVICE: dict[str, tuple[Rule, ...]] = {
    "input": (
        Rule("The DataLoader workers are saturated (busy {loader_busy} of the window): add workers "
             "(num_workers, if CPU cores are free), make decoding and augmentation cheaper, or "
             "cache decoded samples so each batch costs the workers less.",
             ("loader.busy_share", "gaps.input_share"), _loader_saturated),
        Rule("The DataLoader workers idle (busy {loader_busy} of the window) while the step waits: "
             "the main process is the bottleneck — make collate_fn cheaper, pin batches in the "
             "loader (pin_memory=True) instead of in the step, and copy with non_blocking=True; "
             "more workers will not help.", ("loader.busy_share", "gaps.input_share"),
             _loader_idle),
        Rule("Overlap data loading with compute: DataLoader(num_workers>0, prefetch_factor>=2, "
             "persistent_workers=True) so the next batch is ready when the step ends.",
             ("gaps.input_share",), lambda x, th: _not_loader_idle(x, th) and _no_workers_seen(x, th),
             variants=(("neutral", "Overlap reading and preparing the next input with the GPU's "
                                   "work (a background thread or process, double buffering)."),)),
        PINNED,
        Rule("Cache or pre-process the dataset (decoded tensors, WebDataset/shards, DALI) so each "
             "step does less CPU decoding and I/O.", ("gaps.input_share", "phases.data_share"),
             _not_loader_idle,
             variants=(("neutral", "Cache or pre-process the input (convert it once into the "
                                   "form the loop reads) so each iteration does less CPU work "
                                   "and I/O."),)),
    ),
    "transfer": (
        PINNED,
        Rule("Keep data resident on the GPU: copy constant inputs once, and avoid host↔device "
             "round trips (.cpu()/.numpy()/.to()) inside the loop.", ("gaps.transfer_share",),
             variants=(("openmp_offload", "Keep data resident on the GPU: one target data region "
                                          "around the loop, target update only what the host "
                                          "needs."),
                       ("openacc", "Keep data resident on the GPU: one data region around the "
                                   "loop, update host/device only what changes."),
                       ("neutral", "Keep data resident on the GPU: copy constant inputs once, "
                                   "and avoid host↔device round trips inside the loop."))),
        Rule("Overlap the remaining copies with compute: cudaMemcpyAsync on a non-default stream "
             "from pinned memory (or a prefetching loader).", ("gaps.transfer_share",),
             # the pinned-copy advice already says so for the CUDA-C wording
             when=lambda x, th: not (pageable_earned(x, th)
                                     and advice_flavour(getattr(x, "framework", None)) == "cuda"),
             variants=(("neutral", "Overlap the remaining copies with compute: cudaMemcpyAsync "
                                   "on a non-default stream from pinned memory."),)),
    ),
    "unified_memory": (
        Rule("Prefetch managed memory before the kernels touch it (cudaMemPrefetchAsync to the "
             "device) and set cudaMemAdvise hints, so pages do not migrate on demand.",
             ("gaps.unified_memory_share",)),
        Rule("Allocate hot arrays in device memory (cudaMalloc, or disable managed memory for "
             "stdpar/OpenACC data that stays on the GPU) and copy explicitly.",
             ("gaps.unified_memory_share",)),
    ),
    "sync": (
        Rule("Remove the host synchronisations{detail_via} from the loop: avoid .item()/.cpu()/"
             "print of GPU tensors per layer or step — accumulate on the GPU and read once every N "
             "steps.", ("gaps.sync_share",),
             variants=(
                 ("cuda", "Remove the host synchronisations{detail_via} from the loop: queue "
                          "work on streams and wait on CUDA events only where the host needs a "
                          "result."),
                 ("openmp_offload", "Remove the host synchronisations{detail_via} from the loop: "
                                    "launch the target regions with nowait and order them with "
                                    "depend clauses; wait (taskwait) only where the host needs "
                                    "a result."),
                 ("openacc", "Remove the host synchronisations{detail_via} from the loop: launch "
                             "the compute regions async(n) and wait only where the host needs a "
                             "result."),
                 ("neutral", "Remove the host synchronisations{detail_via} from the loop: let "
                             "the GPU work queue up and wait only where the host needs a "
                             "result."))),
        Rule("Remove stray torch.cuda.synchronize()/cudaDeviceSynchronize/cudaStreamSynchronize "
             "calls; where an order is needed use CUDA events or stream waits instead.",
             ("gaps.sync_share",),
             variants=(("cuda", "Remove stray cudaDeviceSynchronize/cudaStreamSynchronize calls; "
                                "where an order is needed use CUDA events or "
                                "cudaStreamWaitEvent instead."),)),
        Rule("Log and evaluate less often: each logged GPU value forces a host synchronisation.",
             ("gaps.sync_share", "phases.overhead_names"), _logging_earned),
    ),
    "overhead": (
        Rule("Shorten the overhead phases{names_via} or run them every N steps instead of every step.",
             ("gaps.overhead_share", "phases.overhead_names")),
        Rule("Make checkpointing asynchronous (torch.distributed.checkpoint.async_save or a "
             "background thread) and save less often.",
             ("phases.overhead_names", "steps.outliers"), _checkpoint_earned,
             variants=(("neutral", "Write checkpoints and snapshots asynchronously (from a "
                                   "background thread) and less often."),)),
        Rule("Log and evaluate less often; avoid .item()/.cpu()/print of GPU tensors every step — "
             "each one forces a host synchronisation.", ("phases.overhead_names",), _logging_earned,
             variants=(("neutral", "Log and evaluate less often: each value read back from the "
                                   "GPU forces a host synchronisation."),)),
    ),
    "memory_management": (
        Rule("Register the host buffers once, outside the loop{detail_via}: cudaHostRegister "
             "(and cudaHostUnregister) pin and unpin pages on every call — keep them registered, "
             "or allocate them pinned once with cudaMallocHost.",
             ("gaps.memory_management_evidence",), when=lambda x, th: _registers_host(x)),
        Rule("Allocate once and reuse{detail_via}: keep buffers across steps, use the caching "
             "allocator or stream-ordered pools (cudaMallocAsync with a release threshold), and do "
             "not call torch.cuda.empty_cache() in the loop.", ("gaps.memory_management_share",),
             variants=(("neutral", "Allocate once and reuse{detail_via}: keep device buffers "
                                   "across iterations, or use stream-ordered pools "
                                   "(cudaMallocAsync with a release threshold)."),),
             when=lambda x, th: not _registers_host(x, only=True)),
    ),
    "host_io": tuple(
        Rule("Move the blocking host I/O{detail_via} off the thread that launches kernels: a "
             f"background thread or DataLoader workers, {fix}.", ("gaps.host_io_share",),
             _io_is(kind),
             variants=(("neutral", "Move the blocking host I/O{detail_via} off the thread that "
                                   f"launches kernels: a background thread, {fix}."),))
        for kind, fix in IO_FIXES.items()),
    "host_cpu": (
        Rule("Keep the GPU fed while the host computes{detail_via}: queue the next GPU work before "
             "the host-side code runs (defer the .item()/.cpu() read until after the next launch), "
             "move that code to the GPU or to a background thread, or "
             "compile the loop (torch.compile) so less Python runs between kernels.",
             ("gaps.host_cpu_share", "gaps.host_cpu_evidence"),
             variants=(
                 ("cuda", "Keep the GPU fed while the host computes{detail_via}: launch the next "
                          "kernels (asynchronous, on a stream) before the host-side code and wait "
                          "on a CUDA event only where the host needs the result, or move that "
                          "code into a kernel or onto another host thread."),
                 ("openmp_offload", "Keep the GPU fed while the host computes{detail_via}: "
                                    "offload the serial host loop as well (target teams "
                                    "distribute parallel for), or launch the next target region "
                                    "with nowait before it and order the two with depend "
                                    "clauses."),
                 ("openacc", "Keep the GPU fed while the host computes{detail_via}: put the "
                             "serial host loop in a parallel/kernels region too, or launch the "
                             "next compute region async(n) before it and wait only where the "
                             "host needs a result."),
                 ("neutral", "Keep the GPU fed while the host computes{detail_via}: queue the "
                             "next GPU work before the host-side code runs, or move that code "
                             "onto the GPU or another host thread."))),
    ),
    "other": (
        Rule("Name the host work between kernels: wrap the loop's parts in NVTX ranges "
             "(nsys_diag.annotate or torch.cuda.nvtx.range) and re-capture with "
             f"{NSYS_TRACE_FLAGS} --sample=process-tree.", ("gaps.other_share", "phases"),
             _no_phases,
             variants=(("neutral", "Name the host work between kernels: wrap the loop's parts "
                                   "in NVTX ranges (nvtxRangePushA/nvtxRangePop) and re-capture "
                                   f"with {NSYS_TRACE_FLAGS} --sample=process-tree."),
                       ("kineto", KINETO_ADVICE_NAME_HOST))),
        Rule("See what the host does between kernels: re-capture with CPU sampling and OS "
             f"runtime tracing ({NSYS_TRACE_FLAGS} --sample=process-tree "
             "--cpuctxsw=process-tree).", ("gaps.other_share",), _phases_no_frames,
             variants=(("kineto", KINETO_ADVICE_SAMPLE_HOST),)),
        Rule("CPU samples name the host work in the idle time ({detail}): move that work off "
             "the launch thread or overlap it with the GPU.", ("gaps.other_share", "gaps.other_evidence"), _has_frames),
        Rule("Start from the longest idle gaps (GPU idle table): the host code running at their "
             "start times is what keeps the GPU waiting.", ("gaps.other_share",)),
    ),
    "launch": (
        Rule("Capture the step in CUDA graphs (torch.compile(mode='reduce-overhead') or "
             "torch.cuda.graphs) to remove per-kernel launch cost.",
             ("gaps.launch_share", "kernels.small_kernel_frac"), _no_graphs,
             variants=(("cuda", "Capture the loop body in a CUDA graph (stream capture, then "
                                "cudaGraphLaunch) to remove per-kernel launch cost."),
                       ("neutral", "Launch fewer, larger kernels (merge loops into one kernel, "
                                   "or capture repeated launch sequences in a CUDA graph)."))),
        Rule("Fuse small kernels: torch.compile, fused/foreach optimizers (Adam(fused=True)), fused "
             "layers (e.g. apex/TE fused LayerNorm).", ("kernels.small_kernel_frac",)),
        Rule("Give each kernel more work: a larger batch (if memory allows) or fewer, larger "
             "tensors.", ("kernels.small_kernel_frac",),
             variants=(("neutral", "Give each kernel more work: fewer, larger launches (merge "
                                   "loops, process more elements per launch)."),)),
    ),
    "communication": (
        Rule("The host blocks in communication{detail_via}: overlap it with compute (non-blocking "
             "MPI_Isend/MPI_Irecv or NCCL on its own stream, then compute the interior while "
             "halos/gradients move).", ("gaps.communication_share",),
             variants=(("neutral", "The host blocks in communication{detail_via}: overlap it "
                                   "with compute (non-blocking MPI_Isend/MPI_Irecv or NCCL on "
                                   "its own stream, then compute the interior while the halos "
                                   "move)."),)),
        Rule("Communicate less often or less: larger messages, gradient accumulation, fewer "
             "barriers, CUDA-aware MPI to avoid host staging.", ("gaps.communication_share",),
             variants=(("neutral", "Communicate less often or less: fewer, larger messages "
                                   "(aggregate the small ones), fewer barriers, CUDA-aware MPI "
                                   "to avoid host staging."),)),
    ),
    "exposed_communication": (
        Rule("Overlap communication with backward: DDP bucket_cap_mb / gradient_as_bucket_view, "
             "FSDP backward_prefetch, and start all-reduces per bucket rather than at the end.",
             ("communication.exposed_share",),
             variants=(("neutral", "Overlap communication with compute: start each exchange as "
                                   "soon as its data is ready (non-blocking, on its own stream) "
                                   "rather than all at the end of the iteration."),)),
        Rule("Communicate less often or less: gradient accumulation, a larger per-GPU batch, "
             "gradient compression (PowerSGD) or bf16 gradients.", ("communication.exposed_share",),
             variants=(("neutral", "Communicate less often or less: fewer, larger messages, and "
                                   "fewer bytes per exchange (16-bit or compressed data where "
                                   "the precision allows)."),)),
        Rule("Check the interconnect: NVLink/NVSwitch vs PCIe, and NCCL topology settings.",
             ("communication.exposed_share",)),
    ),
    "startup": CAPTURE_RANGE,
    "too_little_work": CAPTURE_RANGE,
    "memory_bound": (
        Rule("Fuse chains of elementwise/normalization kernels (torch.compile) to cut DRAM round "
             "trips.", ("gpu_metrics.dram_bandwidth_util", "roofline.memory_bound_share",
                        "kernels.elementwise_share"),
             variants=(("neutral", "Fuse chains of memory-bound kernels (one pass over the data "
                                   "instead of several) to cut DRAM round trips."),)),
        Rule("Quantize weights (int8/fp8/int4) — inference without a backward pass is dominated by "
             "weight and KV-cache traffic.", ("phases",), _inference),
        Rule("Keep activations in bf16/fp16 (autocast) to halve the bytes moved.",
             ("gpu_metrics.dram_bandwidth_util",),
             variants=(("neutral", "Keep the data in 16-bit types (bf16/fp16) where the "
                                   "precision allows, to halve the bytes moved."),)),
        Rule(f"Profile the top kernels with {NCU_PROFILE} to confirm their place on the "
             "roofline.", ("kernels.elementwise_share",),
             lambda x, th: x.roofline_memory_share is None),
    ),
    "no_tensor_cores": (
        Rule("Enable mixed precision: torch.autocast(device_type='cuda', dtype=torch.bfloat16) "
             "(or fp16 with GradScaler).", ("tensor_cores.non_tc_gemm_share",),
             variants=(("neutral", "Give the GEMM library FP16/BF16 inputs where the precision "
                                   "allows (cublasGemmEx / cuBLASLt with 16-bit A and B)."),)),
        Rule("Allow TF32 for FP32 matmuls/convs: torch.set_float32_matmul_precision('high') and "
             "torch.backends.cudnn.allow_tf32 = True.", ("tensor_cores.non_tc_gemm_share",),
             variants=(("neutral", "Allow TF32 for FP32 GEMMs: the cuBLAS math mode "
                                   "(CUBLAS_TF32_TENSOR_OP_MATH) or the compute type "
                                   "CUBLAS_COMPUTE_32F_FAST_TF32."),)),
        Rule("Align GEMM/conv dimensions (batch, hidden, channels) to multiples of 8 for fp16/bf16 "
             "(16 for int8/fp8) so cuBLAS/cuDNN can pick Tensor Core kernels.",
             ("tensor_cores.non_tc_gemm_share",), constants=("8", "16"),
             variants=(("neutral", "Align GEMM/conv dimensions (M, N, K) to multiples of 8 for "
                                   "fp16/bf16 (16 for int8/fp8) so cuBLAS/cuDNN can pick Tensor "
                                   "Core kernels."),)),
        Rule("Kernels to check first (GEMM/conv without Tensor Cores): {kernels}.",
             ("tensor_cores.non_tc_gemm_kernels",), _has_non_tc_kernels),
    ),
    "latency": (
        Rule("Use larger blocks: 128–256 threads per block. Blocks of fewer than 64 threads fill "
             "little of an SM however many of them there are (each SM holds only so many blocks "
             "at once), so the warps that would hide memory latency are missing.",
             ("gpu_fill.tiny_block_share",), constants=("128", "256", "64"),
             when=lambda x, th: bool(getattr(x, "tiny_block_share", None))),
        Rule("Launch more blocks: at least as many as the GPU has SMs (several per SM), so no SM "
             "sits idle while a launch runs.", ("gpu_fill.small_grid_share",),
             when=lambda x, th: bool(getattr(x, "small_grid_share", None))),
        Rule("Batch or merge the small launches (process several rows, systems or levels per "
             "launch), or run independent ones concurrently on separate streams.",
             ("gpu_fill.small_grid_share",),
             when=lambda x, th: bool(getattr(x, "small_grid_share", None))),
        Rule("Give each launch more parallel work: at least as many blocks as the GPU has SMs "
             "(several per SM) and 128–256 threads per block, so every SM holds enough warps to "
             "hide memory latency.", ("gpu_fill.underfilled_share",),
             constants=("128", "256"),
             when=lambda x, th: not getattr(x, "tiny_block_share", None)
             and not getattr(x, "small_grid_share", None)),
        Rule("Check the achieved occupancy of the top under-filled kernels with "
             f"{NCU_PROFILE}: its launch statistics and occupancy sections.",
             ("gpu_fill.underfilled_share",)),
    ),
    "no_dominant_cause": (
        Rule(f"No single cause dominates: profile the top kernels with {NCU_PROFILE} and "
             "capture GPU metrics (see the capture hints) to see what bounds them.",
             ("gpu.utilization",)),
    ),
    "compute": (
        Rule(f"The GPU is the bottleneck: profile the top kernels with {NCU_PROFILE} and use "
             "fused/optimized kernels (FlashAttention, fused optimizers, torch.compile).",
             ("gpu.utilization",),
             variants=(("neutral", "The GPU is the bottleneck: profile the top kernels with "
                                   f"{NCU_PROFILE} and use tuned library kernels "
                                   "(cuBLAS, cuDNN, CUTLASS) where they fit."),)),
        Rule("Scale out: more GPUs (data parallel) help roughly linearly while communication stays "
             "overlapped (it is now: {comm_hidden} of it hidden behind compute).",
             ("gpu.utilization", "communication.overlap_share"), _comm_hidden),
        Rule("Before scaling out, overlap the communication with compute: none of it is hidden "
             "today, so every rank added lengthens each step by its collectives.",
             ("gpu.utilization",), when=lambda x, th: _nothing_hidden(x)),
    ),
}
"""Advice per cause, in the order it is offered."""


def _registers_host(x, only: bool = False) -> bool:
    """The memory-management evidence names host registration (``cudaHostRegister`` /
    ``cudaHostUnregister``) — ``only``: and no other memory call."""
    detail = str((getattr(x, "gap_detail", None) or {}).get("memory_management", ""))
    calls = re.findall(r"\b(cu\w+)", detail)
    host = [c for c in calls if "HostRegister" in c or "HostUnregister" in c]
    return bool(host) and (not only or len(host) == len(calls))


def advice_for(f: Finding, x, th: Thresholds) -> tuple[Advice, ...]:
    """The advice ``f`` earns on ``x`` (every gate checked), texts filled in."""
    detail = f.detail
    fill = {"detail": detail or "the host code", "detail_via": f" ({detail})" if detail else "",
            "names_via": "".join(" " + n for n in [", ".join(overhead_phase_names(x)[:3])] if n),
            "kernels": ", ".join(str(n) for n, _ in (x.non_tc_gemm_kernels or ())[:3]),
            "loader_busy": pct((getattr(x, "loader", None) or {}).get("busy_share")),
            "comm_hidden": pct(getattr(x, "comm_hidden_share", None))}
    flavour = advice_flavour(getattr(x, "framework", None), getattr(x, "trace_format", None))
    out = []
    for r in ADVICE.get(f.cause, ()):
        text = worded(r, flavour) if r.when(x, th) else None
        if text is None:
            continue
        if _in_use(x, "flash_attention"):  # no advice for a technique already in use
            text = text.replace("FlashAttention, ", "")
        out.append(Advice(text.format(**fill), r.because))
    return tuple(out)


def rule_constants(text: str) -> set[str]:
    """The documented constants (``Rule.constants``) of the advice rule one of whose wordings
    ``text`` is (its ``{…}`` fields filled with anything); empty for any other text."""
    out: set[str] = set()
    for rules in ADVICE.values():  # a few dozen rules
        for r in rules:
            if not r.constants:
                continue
            for wording in (r.text, *(w for _, w in r.variants)):
                parts = re.split(r"\{\w+\}", wording)
                if re.fullmatch(".*?".join(re.escape(p) for p in parts), text, re.DOTALL):
                    out |= set(r.constants)
    return out


def with_advice(f: Finding, x, th: Thresholds, *, force: bool = False) -> Finding:
    """``f`` with its earned advice when it fired (or ``force``: the verdict's own finding)."""
    if not (f.fired or force):
        return replace(f, advice=())
    return replace(f, advice=advice_for(f, x, th))


# ---------------------------------------------------------------------------------- all
def build_findings(x, th: Thresholds) -> list[Finding]:
    """Every finding with something to measure, advice attached (advice only for fired ones —
    the verdict adds its own finding's advice when a fallback chose it): fired first, largest
    cost first, then the rest by cost."""
    out: list[Finding] = [r(x, th) for r in IDLE_RULES]
    for extra in (exposed_communication_finding(x, th), memory_bound_finding(x, th),
                  no_tensor_cores_finding(x, th), latency_finding(x, th),
                  too_little_work_finding(x, th)):
        if extra is not None:
            out.append(extra)
    out.append(compute_finding(x, th))
    out = [with_advice(f, x, th) for f in out]
    return sort_findings(out)


def sort_findings(fs: list[Finding]) -> list[Finding]:
    return sorted(fs, key=lambda f: (not f.fired, -f.cost))
