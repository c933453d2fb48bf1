"""The command line's raw option values → ``AnalyzeOptions`` / ``Thresholds``.

Option formats
--------------
* ``--window START:END`` — session-timeline nanoseconds, or with a unit: ``12.5s``, ``300ms``,
  ``40us``/``40µs``, ``100ns``; an empty side means the capture's start/end (``60s:``).
* ``--steps FIRST:LAST`` — 0-based inclusive step indices; ``5:`` = from step 5 on, ``:9``.
* ``--max-memory SIZE`` — ``4G``, ``512M``, ``2GiB``, bytes without a unit. The peak memory of an
  analysis is estimated before anything is loaded (``loaders/memory_estimate.py``); a larger
  estimate is refused (exit 3, ``app/memory_policy.py``) with the estimate and the limit.
* ``--memory-budget SIZE|none`` — default 4 GiB. An nsys export whose estimated analysis needs
  more is read over the middle window of its timeline holding the share of kernel and API rows
  that fits (``memory_read_fraction``); ``none``/``0`` analyses the whole export whatever it
  needs. ``--max-memory`` is then checked against what will be read.
* ``--phase-map FILE`` / ``--thresholds FILE`` — TOML, see docs/usage.md and docs/thresholds.md.

Every bad value is a ``UsageError`` (exit 2) naming the option.
"""
from __future__ import annotations

import re

from nsys_diag.app.option_checks import checked_chunk_rows, checked_time_ns, read_option_file
from nsys_diag.loaders.memory_estimate import BASE_MEMORY_BYTES, format_bytes
from nsys_diag.model.errors import UsageError
from nsys_diag.model.options import DEFAULT_MEMORY_BUDGET_BYTES, AnalyzeOptions
from nsys_diag.model.thresholds import Thresholds

_TIME_RE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[+-]?\d+)?)\s*(ns|us|µs|ms|s)?\s*$", re.IGNORECASE)
_UNIT_NS = {None: 1, "ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000}
_SIZE_RE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*([kmgt]?)(i?b?)\s*$", re.IGNORECASE)


def parse_time(text: str) -> int:
    """``"12.5s"`` → 12_500_000_000 ns; a bare number is nanoseconds."""
    m = _TIME_RE.match(text or "")
    if not m:
        raise UsageError(f"--window: cannot read time {text!r} (use ns, or e.g. 12.5s / 300ms)")
    unit = m.group(2).lower() if m.group(2) else None
    unit = "µs" if unit == "µs" else unit
    return checked_time_ns(float(m.group(1)) * _UNIT_NS[unit], text)


def parse_window(text: str | None) -> tuple[int, int] | None:
    """``START:END`` → (start_ns, end_ns); an empty side is open (0 / a very large end)."""
    if text is None:
        return None
    if ":" not in text:
        raise UsageError(f"--window {text!r}: expected START:END (ns, or seconds with 's')")
    a, b = text.split(":", 1)
    start = parse_time(a) if a.strip() else 0
    end = parse_time(b) if b.strip() else 2**62
    if end <= start:
        raise UsageError(f"--window {text!r}: END must be after START")
    return start, end


def parse_steps(text: str | None) -> tuple[int, int] | None:
    """``FIRST:LAST`` (0-based, inclusive) → (first, last); ``last`` -1 means "to the end"."""
    if text is None:
        return None
    m = re.match(r"^\s*(\d*)\s*:\s*(\d*)\s*$", text)
    if not m or (not m.group(1) and not m.group(2)):
        raise UsageError(f"--steps {text!r}: expected FIRST:LAST step indices (e.g. 5:20)")
    first = int(m.group(1)) if m.group(1) else 0
    last = int(m.group(2)) if m.group(2) else -1
    if last != -1 and last < first:
        raise UsageError(f"--steps {text!r}: LAST must be ≥ FIRST")
    return first, last


def parse_size(text: str | None, what: str = "--max-memory") -> int | None:
    """``4G`` / ``512M`` / ``2GiB`` / ``1000000`` → bytes (binary multiples: 1G = 2**30)."""
    if text is None:
        return None
    m = _SIZE_RE.match(text)
    if not m:
        raise UsageError(f"{what} {text!r}: expected a size such as 4G or 512M")
    mult = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}[m.group(2).lower()]
    return int(float(m.group(1)) * mult)


def parse_budget(text: str | None) -> int | None:
    """``--memory-budget``: a size, or ``none``/``off``/``0`` (no budget); unset: the default."""
    if text is None:
        return DEFAULT_MEMORY_BUDGET_BYTES
    if text.strip().lower() in ("none", "off", "unlimited", "0"):
        return None
    size = parse_size(text, "--memory-budget")
    if size is not None and size < BASE_MEMORY_BYTES:
        raise UsageError(f"--memory-budget {text!r}: below the {format_bytes(BASE_MEMORY_BYTES)} "
                         "the tool itself needs; use a larger size, or `none`")
    return size


def read_toml(path: str, what: str) -> dict:
    """The TOML file ``path`` as a dict; unreadable or invalid: ``UsageError`` naming ``what``."""
    try:
        import tomllib  # type: ignore[import-not-found]
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    try:
        return tomllib.loads(read_option_file(path, what))  # capped, regular files only
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{what} {path}: not valid TOML ({exc})") from None


def load_phase_map(path: str | None):
    """``--phase-map FILE`` → the parsed phase map (``analyses.phases.parse_phase_map``)."""
    if path is None:
        return None
    from nsys_diag.analyses.steps.phases import parse_phase_map  # perf: pandas stays out of --help

    return parse_phase_map(read_toml(path, "--phase-map"))


def load_thresholds(path: str | None) -> Thresholds:
    """``--thresholds FILE`` → the default ``Thresholds`` with the file's overrides."""
    if path is None:
        return Thresholds()
    data = read_toml(path, "--thresholds")
    try:
        return Thresholds().with_overrides(**data)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"--thresholds {path}: {exc}") from None


def build_options(*, batch_size=None, phase_map=None, step_range=None, device=None, window=None,
                  steps_sel=None, ncu_path=None, include_host_info=False, max_rows=200,
                  max_memory=None, memory_budget=None, model_flops_per_sample=None,
                  model_flops_per_step=None, grad_bytes=None, link_gbps=None, gpu=None,
                  memory_mode=None, chunk_rows=None, scheduler=None, use_dask=False,
                  **_ignored) -> AnalyzeOptions:
    """AnalyzeOptions from the CLI's raw values (see the module docstring for formats); an unknown
    ``--gpu`` name is a ``UsageError`` listing the known ones."""
    if gpu is not None:
        from nsys_diag.analyses.roofline.gpu_specs import resolve_gpu_option  # no pandas: stays light

        resolve_gpu_option(gpu)
    return AnalyzeOptions(memory_budget_bytes=parse_budget(memory_budget),
        step_range=step_range, phase_map=load_phase_map(phase_map), batch_size=batch_size,
        device=device, window_ns=parse_window(window), steps=parse_steps(steps_sel),
        ncu_path=ncu_path, include_host_info=bool(include_host_info), max_rows=int(max_rows),
        max_memory_bytes=parse_size(max_memory), model_flops_per_sample=model_flops_per_sample,
        model_flops_per_step=model_flops_per_step, grad_bytes=grad_bytes, link_gbps=link_gbps,
        gpu=gpu, memory_mode=parse_memory_mode(memory_mode), chunk_rows=checked_chunk_rows(chunk_rows),
        scheduler=scheduler or ("local" if use_dask else None))


MEMORY_MODES = ("stream", "middle")
"""``--memory-mode`` values (``model/options.AnalyzeOptions.memory_mode``)."""


def parse_memory_mode(text: str | None) -> str:
    """``--memory-mode``: ``stream`` (default) or ``middle``; anything else is a usage error."""
    if text is None:
        return "stream"
    mode = text.strip().lower()
    if mode not in MEMORY_MODES:
        raise UsageError(f"--memory-mode {text!r}: expected one of {', '.join(MEMORY_MODES)}")
    return mode
