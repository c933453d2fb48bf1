"""Option values → ``AnalyzeOptions`` / ``Thresholds``: the one builder the command line and the
Python API share (``build_options``; each value in its command-line text form or the Python value
it stands for).

Option formats
--------------
* ``--window START:END`` — session-timeline nanoseconds, or with a unit: ``12.5s``, ``300ms``,
  ``40us``/``40µs``, ``100ns``; an empty side means the capture's start/end (``60s:``).
* ``--steps FIRST:LAST`` — 0-based inclusive step indices; ``5:`` = from step 5 on, ``:9``
  (``AnalyzeOptions.steps`` = ``(first, last)``, ``last`` None: to the end).
* ``--max-memory SIZE`` — ``4G``, ``512M``, ``2GiB``, bytes without a unit. The peak memory of an
  analysis is estimated before anything is loaded (``loaders/memory_estimate.py``); a larger
  estimate is refused (exit 3, ``app/memory_policy.py``) with the estimate and the limit.
* ``--memory-budget SIZE|none`` — default 4 GiB. An nsys export whose estimated analysis needs
  more is read over the middle window of its timeline holding the share of kernel and API rows
  that fits (``app/memory_policy.plan_memory``); ``none``/``0`` analyses the whole export whatever it
  needs. ``--max-memory`` is then checked against what will be read.
* ``--phase-map FILE`` / ``--thresholds FILE`` — TOML, see docs/usage.md and docs/thresholds.md.

Every bad value is a ``UsageError`` (exit 2) naming the option; an unknown keyword a ``TypeError``.
"""
from __future__ import annotations

import os
import re
from typing import Mapping, Sequence

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


def parse_window(value) -> tuple[int, int] | None:
    """``START:END`` (the CLI's form) or ``(start_ns, end_ns)`` (the Python API's; ``None`` ends
    are open) → (start_ns, end_ns); an empty side is open (0 / a very large end)."""
    if value is None:
        return None
    if not isinstance(value, str):
        return _window_tuple(value)
    text = value
    if ":" not in text:
        raise UsageError(f"--window {text!r}: expected START:END (ns, or seconds with 's')")
    a, b = text.split(":", 1)
    start = parse_time(a) if a.strip() else 0
    end = parse_time(b) if b.strip() else 2**62
    if end <= start:
        raise UsageError(f"--window {text!r}: END must be after START")
    return start, end


def _window_tuple(value) -> tuple[int, int]:
    if not isinstance(value, Sequence) or len(value) != 2:
        raise UsageError(f"window={value!r}: expected 'START:END' or a (start_ns, end_ns) tuple")
    start, end = (0 if value[0] is None else value[0]), (2**62 if value[1] is None else value[1])
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in (start, end)):
        raise UsageError(f"window={value!r}: the tuple's ends are integer nanoseconds")
    if end <= start:
        raise UsageError(f"window={value!r}: END must be after START")
    return int(start), int(end)


def parse_steps(value) -> tuple[int, int | None] | None:
    """``--steps``: ``FIRST:LAST`` (the CLI's form, 0-based, inclusive; ``5:`` from step 5 on,
    ``:9`` up to step 9) or ``(first, last)`` (the Python API's) → (first, last); ``last`` None
    means "to the end" — the one sentinel every reader of ``AnalyzeOptions.steps`` knows."""
    if value is None:
        return None
    if not isinstance(value, str):
        return _steps_tuple(value)
    text = value
    m = re.match(r"^\s*(\d*)\s*:\s*(\d*)\s*$", text)
    if not m or (not m.group(1) and not m.group(2)):
        raise UsageError(f"--steps {text!r}: expected FIRST:LAST step indices (e.g. 5:20)")
    first = int(m.group(1)) if m.group(1) else 0
    last = int(m.group(2)) if m.group(2) else None
    if last is not None and last < first:
        raise UsageError(f"--steps {text!r}: LAST must be ≥ FIRST")
    return first, last


def _steps_tuple(value) -> tuple[int, int | None]:
    if not isinstance(value, Sequence) or len(value) != 2:
        raise UsageError(f"steps={value!r}: expected 'FIRST:LAST' or a (first, last) tuple")
    first = 0 if value[0] is None else value[0]
    last = value[1]
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in (first, last)
               if x is not None) or first < 0 or (last is not None and last < 0):
        raise UsageError(f"steps={value!r}: step indices are integers ≥ 0")
    if last is not None and last < first:
        raise UsageError(f"steps={value!r}: LAST must be ≥ FIRST")
    return int(first), None if last is None else int(last)


def parse_size(text: str | None, what: str = "--max-memory") -> int | None:
    """``4G`` / ``512M`` / ``2GiB`` / ``1000000`` → bytes (binary multiples: 1G = 2**30)."""
    if text is None:
        return None
    m = _SIZE_RE.match(text)
    if not m:
        raise UsageError(f"{what} {text!r}: expected a size such as 4G or 512M")
    mult = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}[m.group(2).lower()]
    return int(float(m.group(1)) * mult)


def parse_budget(value) -> int | None:
    """``--memory-budget``: a size (``4G``; bytes as an int from the Python API), or
    ``none``/``off``/``0`` (no budget); unset (None): the default."""
    if value is None:
        return DEFAULT_MEMORY_BUDGET_BYTES
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        value = str(value)
    if not isinstance(value, str):
        raise UsageError(f"memory_budget={value!r}: expected a size such as '4G', bytes, or 'none'")
    text = value
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


def load_phase_map(value):
    """``--phase-map FILE`` (a TOML path) or the dict such a file holds → the parsed phase map
    (``analyses/steps/phase_names.parse_phase_map``)."""
    if value is None:
        return None
    from nsys_diag.analyses.steps.phases import parse_phase_map  # perf: pandas stays out of --help

    if isinstance(value, Mapping):
        return parse_phase_map(dict(value))
    if isinstance(value, (str, os.PathLike)):
        return parse_phase_map(read_toml(os.fspath(value), "--phase-map"))
    raise UsageError(f"phase_map={value!r}: expected a TOML file path or a dict")


def load_thresholds(value) -> Thresholds:
    """``--thresholds FILE`` (a TOML path), a dict of overrides, or a ``Thresholds`` → the default
    ``Thresholds`` with those overrides."""
    if value is None:
        return Thresholds()
    if isinstance(value, Thresholds):
        return value
    if isinstance(value, Mapping):
        data, where = dict(value), "thresholds:"
    elif isinstance(value, (str, os.PathLike)):
        data, where = read_toml(os.fspath(value), "--thresholds"), f"--thresholds {os.fspath(value)}:"
    else:
        raise UsageError(f"thresholds={value!r}: expected a TOML file path, a dict or a Thresholds")
    try:
        return Thresholds().with_overrides(**data)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"{where} {exc}") from None


def _check_counts(batch_size, device) -> None:
    """``--batch-size`` an integer ≥ 1, ``--device`` an integer (the CLI's click types check
    them too; the Python API passes any value)."""
    if batch_size is not None and (not isinstance(batch_size, int) or isinstance(batch_size, bool)
                                   or batch_size < 1):
        raise UsageError(f"batch_size={batch_size!r}: expected an integer ≥ 1")
    if device is not None and (not isinstance(device, int) or isinstance(device, bool)):
        raise UsageError(f"device={device!r}: expected a CUDA device id (int)")


def build_options(*, batch_size=None, phase_map=None, step_range=None, device=None, window=None,
                  steps_sel=None, ncu_path=None, include_host_info=False, max_rows=200,
                  max_memory=None, memory_budget=None, model_flops_per_sample=None,
                  model_flops_per_step=None, grad_bytes=None, link_gbps=None, gpu=None,
                  memory_mode=None, chunk_rows=None, scheduler=None,
                  use_dask=False) -> AnalyzeOptions:
    """``AnalyzeOptions`` from the option values of the command line or the Python API — the one
    builder both use (each value in the CLI's text form or the Python value it stands for; see the
    module docstring for formats). An unknown keyword is a ``TypeError``; a bad value a
    ``UsageError``; an unknown ``--gpu`` name a ``UsageError`` listing the known ones."""
    _check_counts(batch_size, device)
    if gpu is not None:
        from nsys_diag.analyses.roofline.gpu_specs import resolve_gpu_option  # no pandas: stays light

        resolve_gpu_option(str(gpu))
    return AnalyzeOptions(memory_budget_bytes=parse_budget(memory_budget),
        step_range=step_range, phase_map=load_phase_map(phase_map), batch_size=batch_size,
        device=device, window_ns=parse_window(window), steps=parse_steps(steps_sel),
        ncu_path=os.fspath(ncu_path) if ncu_path is not None else None,
        include_host_info=bool(include_host_info), max_rows=int(max_rows),
        max_memory_bytes=parse_size(max_memory), model_flops_per_sample=model_flops_per_sample,
        model_flops_per_step=model_flops_per_step, grad_bytes=grad_bytes, link_gbps=link_gbps,
        gpu=None if gpu is None else str(gpu), memory_mode=parse_memory_mode(memory_mode),
        chunk_rows=checked_chunk_rows(chunk_rows), scheduler=scheduler or ("local" if use_dask else None))


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
