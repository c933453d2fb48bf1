"""Scenarios for the causal replay (issue 25): loops whose causal structure is known by
construction, so the replay's fidelity, its critical path and (later) its what-ifs can be checked
against numbers that follow from the design.

Not registered in ``PRESETS`` (the sample traces and the verdict tests stay as they are); write one
with ``write_nsys_sqlite(path, REPLAY_CASES[name]())``. Durations are integer ns.

* ``item_per_layer`` — a forward pass calling ``.item()`` after every layer: the layer's kernels
  (2 ms) are queued at once, a 4-byte device-to-host copy follows them, ``cudaStreamSynchronize``
  waits for the queue to drain, then 3 ms of Python run with the GPU idle;
* ``allreduce_after_backward`` — two ranks; a 150 ms all-reduce on the NCCL stream starts after
  a 90 ms backward and the host waits for it (nothing overlaps it);
* ``microsecond_syncs`` — syncs after the queue has drained: each waits microseconds;
* ``input_bound_loop`` — the worked example's shape: 420 ms of data loading on the host, then an
  input copy and 192 ms of kernels hidden behind the host phases;
* ``sgemm_no_tensor_cores`` — an A100 loop of FP32 SIMT GEMMs (``ampere_sgemm``: 20 × 2 ms per
  step) and 10 ms of elementwise kernels, queued at once; the host waits for them to drain;
* ``managed_memory_faults`` — page-fault migrations of managed memory (``uvm_h2d``: 50 × 400 µs
  per step) on the compute stream ahead of 30 ms of GEMMs; the host waits for the queue, then
  reads results back, faulting pages to the host (``uvm_d2h``: 20 × 500 µs while it runs);
* ``allreduce_hidden_in_backward`` — two ranks; a 30 ms all-reduce on the NCCL stream runs
  beside the 90 ms backward (launched at its start), the host waits for both at the step end;
* ``checkpoint_every_fourth`` — a fast majority and a few slow steps: 70 ms steps with 10 ms of
  logging, and every fourth step also saves a 200 ms checkpoint (host only, GPU idle): nine
  normal steps and three outliers among the twelve analysed;
* ``module_load_at_launch`` — queued GEMM steps; every fourth step a recompiled Triton kernel's
  first ``cuLaunchKernel`` takes 8 ms (its module loaded inside the call, CUDA lazy loading)
  while the GPU has drained: the gap walk calls that time ``launch``, named by the call;
* ``backward_on_autograd_thread`` — PyTorch's backward shape: ``loss.backward()`` on the step's
  thread returns when the autograd engine's thread has launched the whole backward — here 400
  small kernels (5 µs) whose launch calls take 40 µs each, back to back (16 ms), with the GPU
  nearly idle. The step thread waits for that thread; the export does not record the wait.
"""
from __future__ import annotations

from nsys_diag.synth.scenarios import (MS, NCCL_STREAM, US, KernelSpec, MemcpySpec, MiB,
                                       PeriodicSpec, PhaseSpec, Scenario, SyncSpec)

ITEM_LAYERS = 8
ITEM_LAYER_GPU_NS = 2 * MS
"""GPU work per layer that each ``.item()`` waits for (4 kernels of 500 µs)."""
ITEM_PYTHON_NS = 3 * MS
ALLREDUCE_NS = 150 * MS
BACKWARD_NS = 90 * MS


def item_per_layer() -> Scenario:
    layers = tuple(PhaseSpec(
        f"layer_{i}", ITEM_LAYER_GPU_NS + ITEM_PYTHON_NS + 200 * US, canonical="forward",
        kernels=(KernelSpec("gemm_bf16_sm90", ITEM_LAYER_GPU_NS // 4, 4, at=0.0),),
        memcpys=(MemcpySpec("D2H", 4, 2 * US, host="pageable", at=0.01),),
        syncs=(SyncSpec("cudaStreamSynchronize", at=0.02),)) for i in range(ITEM_LAYERS))
    return Scenario(
        name="item_per_layer",
        description="`.item()` after every forward layer: the sync waits for the layer's queued "
                    "2 ms of kernels and a 4-byte copy, then 3 ms of Python with the GPU idle.",
        expected_verdict="overhead_bound", steps=6, warmup_extra_ns=10 * MS,
        warmup_phase="data", gpu="H100",
        phases=(PhaseSpec("data", 2 * MS, canonical="data",
                          memcpys=(MemcpySpec("H2D", 4 * MiB, 200 * US, at=1.0),)),
                *layers,
                PhaseSpec("backward", 40 * MS, canonical="backward", kernels=(
                    KernelSpec("gemm_bf16_sm90", 2 * MS, 16, thread="autograd"),)),
                PhaseSpec("optimizer", 5 * MS, canonical="optimizer",
                          kernels=(KernelSpec("adam", 1 * MS, 4),))))


def allreduce_after_backward() -> Scenario:
    return Scenario(
        name="allreduce_after_backward",
        description="Two ranks: a 150 ms gradient all-reduce after a 90 ms backward; the host "
                    "waits for it, nothing overlaps it.",
        expected_verdict="communication_bound", steps=5, warmup_extra_ns=20 * MS,
        warmup_phase="forward", gpu="H100", n_devices=2, world_size=2,
        env={"WORLD_SIZE": "2"},
        phases=(PhaseSpec("data", 2 * MS, canonical="data",
                          memcpys=(MemcpySpec("H2D", 4 * MiB, 200 * US, at=1.0),)),
                PhaseSpec("forward", 40 * MS, canonical="forward", kernels=(
                    KernelSpec("nvjet", 1_500 * US, 24, at=0.0),)),
                PhaseSpec("backward", BACKWARD_NS + 2 * MS, canonical="backward", kernels=(
                    KernelSpec("gemm_bf16_sm90", BACKWARD_NS // 45, 45, thread="autograd",
                               at=0.0),)),
                PhaseSpec("allreduce", ALLREDUCE_NS + 3 * MS, canonical="communication",
                          kernels=(KernelSpec("nccl_allreduce", ALLREDUCE_NS, 1,
                                              stream=NCCL_STREAM, nvtx="ncclAllReduce",
                                              nvtx_domain="NCCL", at=0.0),),
                          syncs=(SyncSpec("cudaStreamSynchronize", stream=NCCL_STREAM,
                                          at=0.01),)),
                PhaseSpec("optimizer", 6 * MS, canonical="optimizer",
                          kernels=(KernelSpec("adam", 1 * MS, 5, at=0.0),))))


def microsecond_syncs() -> Scenario:
    return Scenario(
        name="microsecond_syncs",
        description="Syncs issued after the GPU queue has drained: each returns within "
                    "microseconds; the step is GPU compute and host work.",
        expected_verdict="compute_bound", steps=6, warmup_extra_ns=10 * MS,
        warmup_phase="forward", gpu="H100",
        phases=(PhaseSpec("forward", 30 * MS, canonical="forward", kernels=(
                    KernelSpec("nvjet", 1 * MS, 25, at=0.0),)),
                PhaseSpec("backward", 50 * MS, canonical="backward", kernels=(
                    KernelSpec("gemm_bf16_sm90", 1 * MS, 45, at=0.0),)),
                PhaseSpec("metrics", 4 * MS, canonical="overhead",
                          syncs=(SyncSpec("cudaStreamSynchronize", count=10, at=None),)),
                PhaseSpec("optimizer", 4 * MS, canonical="optimizer",
                          kernels=(KernelSpec("adam", 500 * US, 4, at=0.0),))))


def input_bound_loop() -> Scenario:
    return Scenario(
        name="input_bound_loop",
        description="The worked example's shape: 420 ms of data loading, then an input copy "
                    "and 192 ms of kernels hidden behind the host's phases (800 ms step).",
        expected_verdict="input_bound", steps=5, warmup_extra_ns=50 * MS,
        warmup_phase="forward", gpu="H100",
        phases=(PhaseSpec("data_loading", 420 * MS, canonical="data",
                          memcpys=(MemcpySpec("H2D", 64 * MiB, 2_800 * US, at=1.0),)),
                PhaseSpec("forward", 180 * MS, canonical="forward", kernels=(
                    KernelSpec("gemm_bf16_sm90", 3 * MS, 12), KernelSpec("nvjet", 2 * MS, 8),
                    KernelSpec("flash_fwd", 2 * MS, 8), KernelSpec("layer_norm", 375 * US, 16),
                    KernelSpec("ew_gelu", 750 * US, 8))),
                PhaseSpec("backward", 150 * MS, canonical="backward", kernels=(
                    KernelSpec("gemm_bf16_sm90", 2 * MS, 24, thread="autograd"),
                    KernelSpec("nvjet", 1_500 * US, 16, thread="autograd"),
                    KernelSpec("flash_bwd", 2_500 * US, 8, thread="autograd"),
                    KernelSpec("ew_add", 500 * US, 16, thread="autograd"))),
                PhaseSpec("optimizer_step", 30 * MS, canonical="optimizer",
                          kernels=(KernelSpec("adam", 1 * MS, 12),)),
                PhaseSpec("logging", 20 * MS, canonical="overhead",
                          memcpys=(MemcpySpec("D2H", 4, 2 * US, host="pageable", at=0.5),),
                          syncs=(SyncSpec("cudaStreamSynchronize", at=0.5),))))


SGEMM_COUNT = 20
SGEMM_NS = 2 * MS
"""``sgemm_no_tensor_cores``: FP32 SIMT GEMM launches per step and their duration."""
UVM_COUNT = 50
UVM_NS = 400 * US
"""``managed_memory_faults``: migrations per step and their duration."""
UVM_HOST_COUNT = 20
UVM_HOST_NS = 500 * US
"""``managed_memory_faults``: the host's page faults per step when it reads results back
(migrations to the host) and their duration."""


def sgemm_no_tensor_cores() -> Scenario:
    return Scenario(
        name="sgemm_no_tensor_cores",
        description="FP32 SIMT GEMMs on an A100 (no Tensor Cores): 40 ms of ampere_sgemm and "
                    "10 ms of elementwise kernels per step, queued at once; the host waits.",
        expected_verdict="compute_bound_no_tensor_cores", steps=5, warmup_extra_ns=10 * MS,
        warmup_phase="forward", gpu="A100",
        phases=(PhaseSpec("forward", 2 * MS, canonical="forward", kernels=(
                    KernelSpec("sgemm_ampere", SGEMM_NS, SGEMM_COUNT, at=0.0),
                    KernelSpec("ew_gelu", 1 * MS, 10, at=0.0))),
                PhaseSpec("wait", 55 * MS, canonical="other",
                          syncs=(SyncSpec("cudaStreamSynchronize", at=0.0),))))


def managed_memory_faults() -> Scenario:
    return Scenario(
        name="managed_memory_faults",
        description="Unified memory: 20 ms of page-fault migrations (uvm_h2d) per step on the "
                    "compute stream ahead of 30 ms of GEMMs; the host waits for the queue.",
        expected_verdict="input_bound", steps=5, warmup_extra_ns=10 * MS,
        warmup_phase="forward", gpu="H100",
        phases=(PhaseSpec("touch_managed", 1 * MS, canonical="other", memcpys=(
                    MemcpySpec("uvm_h2d", 2 * MiB, UVM_NS, count=UVM_COUNT, at=0.0),)),
                PhaseSpec("forward", 2 * MS, canonical="forward", kernels=(
                    KernelSpec("gemm_bf16_sm90", 2 * MS, 15, at=0.0),)),
                PhaseSpec("wait", 60 * MS, canonical="other",
                          syncs=(SyncSpec("cudaStreamSynchronize", at=0.0),)),
                PhaseSpec("read_back", 20 * MS, canonical="other", memcpys=(
                    MemcpySpec("uvm_d2h", 64 * 1024, UVM_HOST_NS, count=UVM_HOST_COUNT,
                               at=0.0),))))


HIDDEN_ALLREDUCE_NS = 30 * MS


def allreduce_hidden_in_backward() -> Scenario:
    return Scenario(
        name="allreduce_hidden_in_backward",
        description="Two ranks: a 30 ms gradient all-reduce runs beside the 90 ms backward "
                    "(DDP-style overlap); the step waits for both at its end.",
        expected_verdict="compute_bound", steps=5, warmup_extra_ns=20 * MS,
        warmup_phase="forward", gpu="H100", n_devices=2, world_size=2,
        env={"WORLD_SIZE": "2"},
        phases=(PhaseSpec("forward", 40 * MS, canonical="forward", kernels=(
                    KernelSpec("nvjet", 1_500 * US, 24, at=0.0),)),
                PhaseSpec("backward", BACKWARD_NS + 2 * MS, canonical="backward", kernels=(
                    KernelSpec("gemm_bf16_sm90", BACKWARD_NS // 45, 45, at=0.0),
                    KernelSpec("nccl_allreduce", HIDDEN_ALLREDUCE_NS, 1, stream=NCCL_STREAM,
                               nvtx="ncclAllReduce", nvtx_domain="NCCL", at=0.0)),
                          syncs=(SyncSpec("cudaDeviceSynchronize", at=1.0),)),
                PhaseSpec("optimizer", 6 * MS, canonical="optimizer",
                          kernels=(KernelSpec("adam", 1 * MS, 5, at=0.0),))))


LOG_NS = 10 * MS
CHECKPOINT_NS = 200 * MS
CHECKPOINT_EVERY = 4
FAST_STEP_NS = 70 * MS
"""``checkpoint_every_fourth``: the step without its checkpoint (data 2, forward 20, backward 30,
optimizer 8, logging 10 ms)."""


def _queued_step() -> tuple[PhaseSpec, ...]:
    """A 60 ms step whose phases queue their GEMMs at once: data 2, forward 20 (18 × 1 ms),
    backward 30 (28 × 1 ms), optimizer 8 ms (6 × 1 ms)."""
    return (PhaseSpec("data", 2 * MS, canonical="data"),
            PhaseSpec("forward", 20 * MS, canonical="forward", kernels=(
                KernelSpec("gemm_bf16_sm90", 1 * MS, 18, at=0.0),)),
            PhaseSpec("backward", 30 * MS, canonical="backward", kernels=(
                KernelSpec("gemm_bf16_sm90", 1 * MS, 28, at=0.0),)),
            PhaseSpec("optimizer", 8 * MS, canonical="optimizer",
                      kernels=(KernelSpec("adam", 1 * MS, 6, at=0.0),)))


def checkpoint_every_fourth() -> Scenario:
    return Scenario(
        name="checkpoint_every_fourth",
        description="70 ms steps logging 10 ms each; every fourth step also saves a 200 ms "
                    "checkpoint on the host while the GPU idles.",
        expected_verdict="overhead_bound", steps=13, warmup_extra_ns=20 * MS,
        warmup_phase="forward", gpu="H100",
        phases=(*_queued_step(), PhaseSpec("log_metrics", LOG_NS, canonical="overhead")),
        periodic=(PeriodicSpec(every=CHECKPOINT_EVERY, phase=PhaseSpec(
            "save_checkpoint", CHECKPOINT_NS, canonical="overhead")),))


MODULE_LOAD_NS = 8 * MS
"""How long the first launch of a recompiled kernel holds the host (the module loaded inside it)."""
RECOMPILE_EVERY = 4


def module_load_at_launch() -> Scenario:
    return Scenario(
        name="module_load_at_launch",
        description="60 ms steps of queued GEMMs; every fourth step a new shape recompiles a "
                    "Triton kernel and CUDA lazy loading loads its module inside the first "
                    "cuLaunchKernel (8 ms) while the GPU has drained.",
        expected_verdict="compute_bound", steps=12, warmup_extra_ns=20 * MS,
        warmup_phase="forward", gpu="H100",
        phases=_queued_step(),
        periodic=(PeriodicSpec(every=RECOMPILE_EVERY, phase=PhaseSpec(
            "recompiled_forward", MODULE_LOAD_NS + 2 * MS, canonical="forward", kernels=(
                KernelSpec("triton_fused", 500 * US, 1, api="cuLaunchKernel",
                           launch_ns=MODULE_LOAD_NS, at=0.0),))),))


AUTOGRAD_LAUNCHES = 400
AUTOGRAD_LAUNCH_NS = 40 * US


def backward_on_autograd_thread() -> Scenario:
    launches_ns = AUTOGRAD_LAUNCHES * AUTOGRAD_LAUNCH_NS
    return Scenario(
        name="backward_on_autograd_thread",
        description="The backward's 400 small kernels are launched by the autograd thread, 40 µs "
                    "per launch call: the step thread waits in loss.backward() for 16 ms of "
                    "launches while the GPU idles.",
        expected_verdict="launch_bound", steps=6, warmup_extra_ns=10 * MS,
        warmup_phase="forward", gpu="H100",
        phases=(PhaseSpec("forward", 6 * MS, canonical="forward",
                          kernels=(KernelSpec("gemm_bf16_sm90", 1 * MS, 4, at=0.0),)),
                PhaseSpec("backward", launches_ns + 500 * US, canonical="backward", kernels=(
                    KernelSpec("ew_add", 5 * US, AUTOGRAD_LAUNCHES, thread="autograd",
                               launch_ns=AUTOGRAD_LAUNCH_NS, at=0.0),)),
                PhaseSpec("optimizer", 2 * MS, canonical="optimizer",
                          kernels=(KernelSpec("adam", 200 * US, 4),))))


REPLAY_CASES = {"item_per_layer": item_per_layer,
                "backward_on_autograd_thread": backward_on_autograd_thread,
                "module_load_at_launch": module_load_at_launch,
                "allreduce_after_backward": allreduce_after_backward,
                "microsecond_syncs": microsecond_syncs, "input_bound_loop": input_bound_loop,
                "sgemm_no_tensor_cores": sgemm_no_tensor_cores,
                "managed_memory_faults": managed_memory_faults,
                "checkpoint_every_fourth": checkpoint_every_fourth,
                "allreduce_hidden_in_backward": allreduce_hidden_in_backward}
"""Replay scenario name → factory (see the module docstring)."""
