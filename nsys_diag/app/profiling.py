"""`nsys-diag profile -- COMMAND…`: capture the trace our analyses need, export it, analyze it.

Three steps, each an exact command line (``--dry-run`` prints them, shell-quoted):

1. ``nsys profile`` with what the analyses read, and nothing that only adds overhead:

   * ``--trace=cuda,nvtx,osrt`` — kernels/copies/API calls (``CUPTI_*`` tables: busy time,
     gaps, launch attribution), NVTX ranges (steps and phases, see ``nsys_diag.annotate``), OS
     runtime calls (blocking reads/locks/sleeps of the loader, shown in a gap's context).
     cuBLAS/cuDNN API tracing is left out: kernels they launch are traced as kernels anyway,
     and no analysis reads their API tables.
   * ``--cuda-graph-trace=node`` — each kernel of a CUDA graph is its own row, so graph replays
     (torch.compile "reduce-overhead", CUDA-graphed decoders) are not one opaque block.
   * ``--sample=none --cpuctxsw=none`` — no CPU IP/backtrace sampling and no context-switch
     trace: the analyses read neither, and sampling adds per-thread overhead and report size.
     Library users can pass ``cpu_sampling=True`` to :func:`build_profile_commands` to keep
     nsys's default sampling for a by-hand look at CPU hot spots.
   * ``--gpu-metrics-devices=DEVICES --gpu-metrics-frequency=1000`` (``--gpu-metrics``) —
     hardware counters (SM active, Tensor active, DRAM, PCIe) sampled at 1 kHz: one sample per
     millisecond resolves step/phase-scale behaviour (steps last 10 ms-1 s) at a tenth of the
     default 10 kHz volume. Older nsys spell the flag ``--gpu-metrics-device``; with nsys on
     PATH we ask ``nsys profile --help`` which one it knows.
   * ``--cuda-memory-usage=true`` (``--cuda-memory-usage``) — allocation events, off by default
     because it slows allocation-heavy code.
   * capture range: ``--capture-range=cudaProfilerApi --capture-range-end=stop`` (capture
     between ``cudaProfilerStart()`` and ``cudaProfilerStop()``, e.g.
     ``torch.cuda.profiler.start()/stop()``; the program keeps running afterwards) or
     ``--capture-range=nvtx --nvtx-capture=RANGE@DOMAIN --capture-range-end=stop`` (capture
     while that NVTX range is open; ``train_step_10@nsys-diag`` for a step of
     ``nsys_diag.annotate``). nsys matches only *registered* NVTX strings unless the program
     runs with ``NSYS_NVTX_PROFILER_REGISTER_ONLY=0``; we pass that with ``--env-var`` so ranges
     pushed with plain strings (``torch.cuda.nvtx.range_push``) can start a capture too.
   * ``--delay``/``--duration`` in whole seconds, ``--output=OUTPUT --force-overwrite=true``.

2. ``nsys export --type sqlite --force-overwrite=true --output OUTPUT.sqlite OUTPUT.nsys-rep``.
3. ``nsys-diag analyze OUTPUT.sqlite`` (run in-process).

Exit codes: 0 ok; 6 when ``nsys`` is not on PATH (the commands are printed to run elsewhere);
the profiled program's non-zero exit code when it failed (export and analysis still run when a
report was written); 3 when no report was written although the program succeeded (e.g. the
capture range never opened); nsys's code when the export fails.
"""
from __future__ import annotations

import math
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Callable, Sequence

from nsys_diag.app.analyze import analyze_command
from nsys_diag.model.errors import EXIT_BAD_INPUT, EXIT_NSYS_MISSING, EXIT_OK, UsageError

TRACE_APIS = "cuda,nvtx,osrt"
GPU_METRICS_FREQUENCY_HZ = 1000
GPU_METRICS_FLAG = "--gpu-metrics-devices"
GPU_METRICS_FLAG_OLD = "--gpu-metrics-device"
NVTX_REGISTER_ONLY_ENV = "NSYS_NVTX_PROFILER_REGISTER_ONLY=0"
ANNOTATE_DOMAIN = "nsys-diag"  # = nsys_diag.annotate.DOMAIN (not imported: that pulls in nvtx)
CAPTURE_RANGES = ("none", "cudaProfilerApi", "nvtx")

# Defaults of every `nsys-diag analyze` option, as the CLI passes them to analyze_command.
ANALYZE_DEFAULTS = dict(
    json_out=None, md_out=None, html_out=None, no_html=False, ncu_path=None, batch_size=None,
    phase_map=None, step_range=None, device=None, window=None, steps_sel=None,
    thresholds_path=None, include_host_info=False, max_rows=200, max_memory=None,
    memory_budget=None,
)


def report_base(output: str) -> str:
    """``-o`` value without a report extension (nsys appends ``.nsys-rep`` itself)."""
    for ext in (".nsys-rep", ".qdrep", ".sqlite"):
        if output.endswith(ext):
            return output[: -len(ext)]
    return output


def _whole_seconds(value: float, flag: str, *, round_up: bool) -> tuple[int, str | None]:
    """nsys takes whole seconds; returns (seconds, note when rounded)."""
    if value is None or value < 0 or not math.isfinite(value):
        raise UsageError(f"{flag} must be a non-negative number of seconds, got {value}")
    whole = math.ceil(value) if round_up else math.floor(value)
    if flag == "--duration" and whole == 0:
        raise UsageError("--duration must be at least 1 second (nsys takes whole seconds)")
    note = None if whole == value else f"nsys takes whole seconds: {flag} {value:g} → {whole}"
    return int(whole), note


def build_profile_commands(
    command: Sequence[str],
    *,
    output: str = "nsys-diag-profile",
    gpu_metrics: str | None = None,
    capture_range: str = "none",
    nvtx_capture: str | None = None,
    delay: float | None = None,
    duration: float | None = None,
    cuda_memory_usage: bool = False,
    no_analyze: bool = False,
    cpu_sampling: bool = False,
    gpu_metrics_flag: str = GPU_METRICS_FLAG,
    gpu_metrics_frequency: int = GPU_METRICS_FREQUENCY_HZ,
    nsys: str = "nsys",
) -> list[list[str]]:
    """The commands to run, in order: nsys profile, nsys export, and (unless ``no_analyze``)
    ``nsys-diag analyze``. Pure: no I/O. Raises ``UsageError`` for contradictory options."""
    if not command:
        raise UsageError("give the command to profile after `--`, e.g. `-- python train.py`")
    if capture_range not in CAPTURE_RANGES:
        raise UsageError(f"--capture-range must be one of {', '.join(CAPTURE_RANGES)}")
    if nvtx_capture and capture_range == "none":
        capture_range = "nvtx"  # --nvtx-capture alone says what it wants
    if capture_range == "nvtx" and not nvtx_capture:
        raise UsageError("--capture-range nvtx needs --nvtx-capture RANGE@DOMAIN "
                         f"(e.g. train_step_10@{ANNOTATE_DOMAIN})")
    if nvtx_capture and capture_range != "nvtx":
        raise UsageError(f"--nvtx-capture only applies with --capture-range nvtx, not {capture_range}")

    base = report_base(output)
    cmd = [nsys, "profile", f"--trace={TRACE_APIS}", "--cuda-graph-trace=node"]
    if not cpu_sampling:
        cmd += ["--sample=none", "--cpuctxsw=none"]
    if gpu_metrics:
        cmd += [f"{gpu_metrics_flag}={gpu_metrics}", f"--gpu-metrics-frequency={gpu_metrics_frequency}"]
    if cuda_memory_usage:
        cmd.append("--cuda-memory-usage=true")
    if capture_range == "cudaProfilerApi":
        cmd += ["--capture-range=cudaProfilerApi", "--capture-range-end=stop"]
    elif capture_range == "nvtx":
        cmd += ["--capture-range=nvtx", f"--nvtx-capture={nvtx_capture}", "--capture-range-end=stop",
                f"--env-var={NVTX_REGISTER_ONLY_ENV}"]
    if delay is not None:
        cmd.append(f"--delay={_whole_seconds(delay, '--delay', round_up=False)[0]}")
    if duration is not None:
        cmd.append(f"--duration={_whole_seconds(duration, '--duration', round_up=True)[0]}")
    cmd += [f"--output={base}", "--force-overwrite=true", *command]

    export = [nsys, "export", "--type", "sqlite", "--force-overwrite=true",
              "--output", f"{base}.sqlite", f"{base}.nsys-rep"]
    commands = [cmd, export]
    if not no_analyze:
        commands.append(["nsys-diag", "analyze", f"{base}.sqlite"])
    return commands


def _notes(nvtx_capture: str | None, delay: float | None, duration: float | None) -> list[str]:
    notes: list[str | None] = []
    if nvtx_capture and "@" not in nvtx_capture:
        notes.append(f"note: --nvtx-capture {nvtx_capture!r} has no @DOMAIN, so it matches only the "
                     f"default NVTX domain; ranges from nsys_diag.annotate are in "
                     f"{ANNOTATE_DOMAIN!r} (use {nvtx_capture}@{ANNOTATE_DOMAIN}).")
    if delay is not None:
        notes.append(_whole_seconds(delay, "--delay", round_up=False)[1])
    if duration is not None:
        notes.append(_whole_seconds(duration, "--duration", round_up=True)[1])
    return [f"nsys-diag: {n}" for n in notes if n]


def detect_gpu_metrics_flag(nsys_path: str) -> str:
    """``--gpu-metrics-devices`` unless this nsys only knows the older ``--gpu-metrics-device``."""
    try:
        res = subprocess.run([nsys_path, "profile", "--help"], capture_output=True, text=True,
                             timeout=60, errors="replace")
    except (OSError, subprocess.SubprocessError):
        return GPU_METRICS_FLAG
    text = (res.stdout or "") + (res.stderr or "")
    if GPU_METRICS_FLAG in text or GPU_METRICS_FLAG_OLD not in text:
        return GPU_METRICS_FLAG
    return GPU_METRICS_FLAG_OLD


def _run(cmd: list[str], echo: Callable[[str], None]) -> int:
    """Run with inherited stdio. Ctrl-C goes to nsys too (same process group); we then wait for
    it to finish writing the report instead of killing it."""
    try:
        proc = subprocess.Popen(cmd)
    except OSError as exc:
        echo(f"nsys-diag: cannot run {cmd[0]}: {exc.strerror or exc}")
        return 127
    try:
        return proc.wait()
    except KeyboardInterrupt:
        echo("nsys-diag: interrupted; waiting for nsys to finish writing the report "
             "(Ctrl-C again to abort)")
        return proc.wait()


def _find_report(base: str) -> Path | None:
    for ext in (".nsys-rep", ".qdrep"):  # .qdrep: nsys before 2021.4
        p = Path(base + ext)
        if p.is_file():
            return p
    return None


def _export(report: Path, sqlite: Path, nsys_path: str, echo: Callable[[str], None]) -> int:
    """Export ``report`` to ``sqlite``; nonzero on failure (message echoed)."""
    cmd = [nsys_path, "export", "--type", "sqlite", "--force-overwrite=true",
           "--output", str(sqlite), str(report)]
    rc = _run(cmd, echo)
    if rc != 0 or not sqlite.is_file():
        echo(f"nsys-diag: `{shlex.join(cmd)}` failed (exit code {rc}); no SQLite export written")
        return rc or EXIT_BAD_INPUT
    return EXIT_OK


def _analyze(sqlite: Path, echo: Callable[[str], None]) -> None:
    for line in analyze_command(str(sqlite), **ANALYZE_DEFAULTS):
        echo(line)


def profile_command(
    command: Sequence[str],
    *,
    output: str = "nsys-diag-profile",
    gpu_metrics: str | None = None,
    capture_range: str = "none",
    nvtx_capture: str | None = None,
    delay: float | None = None,
    duration: float | None = None,
    cuda_memory_usage: bool = False,
    dry_run: bool = False,
    no_analyze: bool = False,
    echo: Callable[[str], None] = print,
) -> int:
    """Profile ``command`` with nsys, export SQLite, analyze; returns the process exit code."""
    nsys_path = shutil.which("nsys")
    flag = detect_gpu_metrics_flag(nsys_path) if (gpu_metrics and nsys_path) else GPU_METRICS_FLAG
    commands = build_profile_commands(
        list(command), output=output, gpu_metrics=gpu_metrics, capture_range=capture_range,
        nvtx_capture=nvtx_capture, delay=delay, duration=duration,
        cuda_memory_usage=cuda_memory_usage, no_analyze=no_analyze, gpu_metrics_flag=flag)
    for note in _notes(nvtx_capture, delay, duration):
        echo(note)

    if dry_run:
        for cmd in commands:
            echo(shlex.join(cmd))
        return EXIT_OK
    if nsys_path is None:
        echo("nsys-diag: `nsys` (the Nsight Systems CLI) is not on PATH. Install Nsight Systems, "
             "or run these commands on a machine that has it and copy the .sqlite back:")
        for cmd in commands:
            echo("  " + shlex.join(cmd))
        if gpu_metrics:
            echo(f"  (older nsys versions spell the GPU metrics flag {GPU_METRICS_FLAG_OLD})")
        return EXIT_NSYS_MISSING

    base = report_base(output)
    parent = Path(base).parent
    if str(parent) not in ("", "."):
        parent.mkdir(parents=True, exist_ok=True)
    # Run the nsys we found, so PATH changes in between cannot swap it.
    profile_cmd = [nsys_path, *commands[0][1:]]
    echo(f"nsys-diag: {shlex.join(commands[0])}")
    app_rc = _run(profile_cmd, echo)
    report = _find_report(base)
    if app_rc != 0:
        echo(f"nsys-diag: the profiled command exited with code {app_rc}"
             + ("; exporting the report it left" if report else "; no report was written"))
    if report is None:
        if app_rc == 0:
            echo(f"nsys-diag: nsys wrote no report ({base}.nsys-rep missing). With a capture range, "
                 "check that the program reached cudaProfilerStart() or the NVTX range.")
        return app_rc or EXIT_BAD_INPUT

    sqlite = Path(base + ".sqlite")
    echo(f"nsys-diag: exporting {report} → {sqlite}")
    rc = _export(report, sqlite, nsys_path, echo)
    if rc != EXIT_OK:
        return app_rc or rc
    if no_analyze:
        echo(f"nsys-diag: wrote {sqlite}; analyze it with: "
             f"{shlex.join(['nsys-diag', 'analyze', str(sqlite)])}")
    else:
        _analyze(sqlite, echo)
    return app_rc
