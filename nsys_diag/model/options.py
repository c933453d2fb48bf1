"""User options that shape an analysis (CLI flags map 1:1 onto these fields)."""
from __future__ import annotations

from dataclasses import dataclass, field

DEFAULT_MEMORY_BUDGET_BYTES = 4 * 2**30
"""``--memory-budget`` default: an nsys export whose analysis would need more memory than this is
analysed over the middle window of its timeline that fits (``loaders/read_window.py``)."""


@dataclass(frozen=True)
class AnalyzeOptions:
    step_range: str | None = None
    """--step-range NAME: NVTX range text (exact or regex) that marks one training step."""
    phase_map: tuple[tuple[str, tuple[str, ...]], ...] | None = None
    """--phase-map FILE (TOML): canonical phase -> name patterns (regex, case-insensitive),
    tried before the built-in patterns."""
    batch_size: int | None = None
    """--batch-size N: samples per step, for loader-vs-model throughput."""
    device: int | None = None
    """--device N: restrict GPU analyses to one CUDA device id."""
    window_ns: tuple[int, int] | None = None
    """--window START:END, already converted to session-timeline ns."""
    steps: tuple[int, int | None] | None = None
    """--steps FIRST:LAST: step indices (0-based, inclusive) to analyse; LAST None: to the end
    (``app/options.parse_steps``, the one parser)."""
    ncu_path: str | None = None
    """--ncu CSV: Nsight Compute CSV joined to the timeline."""
    include_host_info: bool = False
    """--include-host-info: show host/user/path/command line in outputs (privacy: off)."""
    max_rows: int = 200
    """Top-N cap for per-kernel tables in reports (JSON keeps the same cap; 'showing N of M')."""
    max_memory_bytes: int | None = None
    """--max-memory SIZE: refuse (exit 3, clear message) when a trace would need more."""
    memory_budget_bytes: int | None = DEFAULT_MEMORY_BUDGET_BYTES
    """--memory-budget SIZE|none: analyse only the middle window of an nsys export's timeline
    that fits this much memory (None: always the whole export)."""
    model_flops_per_sample: float | None = None
    """--model-flops-per-sample N: model FLOPs per sample (forward + backward), for MFU."""
    model_flops_per_step: float | None = None
    """--model-flops-per-step N: model FLOPs per step, for MFU (wins over the per-sample count)."""
    grad_bytes: float | None = None
    """--grad-bytes N: gradient bytes all-reduced per step, for the scaling projection."""
    link_gbps: float | None = None
    """--link-gbps N: GPU-to-GPU link bandwidth per direction (GB/s) for the projection."""
    gpu: str | None = None
    """--gpu NAME: the GPU the input ran on (names it when the input does not, overrides it with a
    warning when it does; ``analyses/roofline/gpu_choice.py``). Checked by ``app/options.build_options``."""
    memory_mode: str = "stream"
    """--memory-mode stream|middle: what a budget the export does not fit does — ``stream``: read
    and analyse the whole export chunk by chunk (``app/stream.py``); ``middle``: analyse only the
    middle window of its timeline that fits (faster, a part of the capture)."""
    chunk_rows: int | None = None
    """--chunk-rows N (advanced): stream in chunks of about N kernel + CUDA API rows whatever the
    budget (tests force many chunks on small traces with it)."""
    scheduler: str | None = None
    """--scheduler ADDRESS / --dask (``local``): analyse the chunks of a streamed export on Dask
    workers (same rule as ``batch``: the workers must see the file at the same path)."""
    extra: dict = field(default_factory=dict)
