"""The `nsys-diag` command line: a thin click layer.

Only this module imports click. Heavy modules (pandas, pyarrow, jinja2) are imported inside the
command bodies so `nsys-diag --help` stays fast. Each command: parse → library call → render.
Typed errors (``NsysDiagError``) become one line on stderr and their exit code; anything else is a
bug (exit 1, traceback only with ``--debug``).
"""
from __future__ import annotations

import atexit
import os
import sys

import click

from nsys_diag._version import __version__
from nsys_diag.model.errors import EXIT_INTERNAL, NsysDiagError


class _Group(click.Group):
    """Maps library errors to messages + exit codes in one place."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except NsysDiagError as exc:
            if ctx.obj and ctx.obj.get("debug"):
                raise
            click.echo(f"nsys-diag: error: {exc.one_line()}", err=True)
            ctx.exit(exc.exit_code)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except BrokenPipeError:  # `nsys-diag analyze … | head`: the reader left; stop quietly, exit 0
            _quiet_stdout()
            ctx.exit(0)
        except KeyboardInterrupt:
            click.echo("nsys-diag: interrupted", err=True)
            ctx.exit(130)
        except Exception as exc:  # a bug: say so, briefly
            if ctx.obj and ctx.obj.get("debug"):
                raise
            click.echo(
                f"nsys-diag: internal error: {type(exc).__name__}: {exc}\n"
                "This is a bug in nsys-diag; rerun with --debug for the traceback and report it.",
                err=True,
            )
            ctx.exit(EXIT_INTERNAL)


def _quiet_stdout() -> None:
    """Point stdout at /dev/null once its reader has gone, so nothing else fails writing to it
    (the interpreter's last flush included)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def terminal_width(stream) -> int | None:
    """Columns to wrap terminal output at: ``COLUMNS`` when set to a number, else the width of the
    terminal ``stream`` writes to; None (whole lines) when it is not a terminal."""
    cols = os.environ.get("COLUMNS", "").strip()
    if cols.isdigit() and int(cols) > 0:
        return max(int(cols), 20)
    try:
        if stream.isatty():
            return max(os.get_terminal_size(stream.fileno()).columns, 20)
    except (AttributeError, OSError, ValueError):
        pass
    return None


def _echo(err: bool = False):
    """A line printer for terminal text: each line wrapped to the terminal (never cut). The
    report module is imported at the first line (perf, bench: it imports pandas, which
    ``analyze`` imports only once its big reads have started)."""
    width = terminal_width(sys.stderr if err else sys.stdout)

    def echo(text: str) -> None:
        from nsys_diag.report.text import fit_line

        for line in str(text).split("\n"):
            for part in fit_line(line, width):
                click.echo(part, err=err)
    return echo


def _prepare_outputs(*dests: str | None) -> None:
    """Before any analysis: create the parent directories of the output files named (``-`` is
    stdout) and check that each can be written, so a bad ``-o nodir/x.html`` fails at once
    (exit 2) instead of after the whole analysis."""
    from pathlib import Path

    from nsys_diag.model.errors import UsageError

    for dest in dests:
        if not dest or dest == "-":
            continue
        path = Path(dest)
        if path.is_dir():
            raise UsageError(f"cannot write {dest}: it is a directory (hint: name a file, e.g. "
                             f"{path / 'report.html'})")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"cannot create the directory {path.parent} for {dest}: "
                             f"{exc.strerror or exc} (hint: choose a writable location)") from None
        if not os.access(path.parent, os.W_OK | os.X_OK) or (path.exists() and not os.access(path, os.W_OK)):
            raise UsageError(f"cannot write {dest}: permission denied (hint: choose a writable location)")


def _check_input_files(ncu_path: str | None, phase_map: str | None, thresholds_path: str | None) -> None:
    """Before any analysis: the side files named by options exist, else the error with its hint
    (``--ncu``: exit 3 as for any unreadable input; ``--phase-map``/``--thresholds``: exit 2)."""
    from pathlib import Path

    from nsys_diag.model.errors import InputError, UsageError
    from nsys_diag.model.vocabulary import HINT_NCU_CSV

    if ncu_path and not Path(ncu_path).is_file():
        raise InputError(ncu_path, "no such file" if not Path(ncu_path).exists()
                         else "not a regular file", f"--ncu takes an Nsight Compute CSV: {HINT_NCU_CSV}")
    for option, path, what in (("--phase-map", phase_map, "a TOML file mapping phases to NVTX name "
                                "patterns, see docs/usage.md"),
                               ("--thresholds", thresholds_path, "a TOML file of threshold overrides, "
                                "see docs/thresholds.md")):
        if path and not Path(path).is_file():
            why = "not a regular file" if Path(path).exists() else "no such file"
            raise UsageError(f"{option} {path}: {why} (hint: {what})")


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="nsys-diag")
@click.option("--debug", is_flag=True, help="Show tracebacks for errors.")
@click.pass_context
def main(ctx: click.Context, debug: bool) -> None:
    """Tell why a GPU job runs the way it does, from Nsight Systems / Nsight Compute exports.

    \b
    Exit codes: 0 ok · 1 internal error · 2 usage · 3 unreadable input ·
                4 batch skipped inputs · 5 compare found a regression · 6 nsys not installed ·
                7 compare gate not evaluable (no steps, no interval, or incomparable pair)
    """
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug


# ------------------------------------------------------------------------------------ inspect
@main.command()
@click.argument("trace")
@click.option("--json", "json_out", metavar="FILE|-", help="Write the description as JSON.")
@click.option("--include-host-info", is_flag=True, help="Show host, user, paths and command line.")
def inspect(trace: str, json_out: str | None, include_host_info: bool) -> None:
    """Describe an export: format, version, tables, GPUs, NVTX, what can be analysed."""
    from nsys_diag.app.inspection import inspect_command

    _prepare_outputs(json_out)
    inspect_command(trace, json_out=json_out, include_host_info=include_host_info,
                    echo=_echo(err=json_out == "-"))


# ------------------------------------------------------------------------------------ analyze
def _analyze_options(f):
    opts = [
        click.option("--json", "json_out", metavar="FILE|-", help="Write the analysis JSON."),
        click.option("--md", "md_out", metavar="FILE|-", help="Write a Markdown summary (PR comment)."),
        click.option("-o", "--output", "html_out", metavar="REPORT.html",
                     help="HTML report path (default: <trace>.nsys-diag.html beside the trace; none "
                          "when --json - or --md - send machine output to stdout)."),
        click.option("--no-html", is_flag=True, help="Do not write the HTML report."),
        click.option("--trace-out", "trace_out", metavar="OUT.json",
                     help="Write the analysed window as a Chrome-trace / Perfetto JSON file (GPU "
                          "streams, idle gaps with their causes, steps, NVTX phases); not for "
                          "streamed exports."),
        click.option("--ncu", "ncu_path", metavar="CSV", help="Nsight Compute CSV to join (roofline)."),
        click.option("--gpu", metavar="NAME",
                     help="The GPU the input ran on, as nvidia-smi prints it or A100/H100/H200/B200: "
                          "names it when the input does not, overrides it (with a warning) when it does."),
        click.option("--batch-size", type=click.IntRange(min=1), help="Samples per step."),
        click.option("--model-flops-per-sample", type=click.FloatRange(min=0, min_open=True),
                     metavar="N", help="Model FLOPs per sample (forward+backward): MFU."),
        click.option("--model-flops-per-step", type=click.FloatRange(min=0, min_open=True),
                     metavar="N", help="Model FLOPs per step: MFU (wins over per-sample)."),
        click.option("--grad-bytes", type=click.FloatRange(min=0, min_open=True), metavar="N",
                     help="Gradient bytes all-reduced per step: project 2/4/8 GPUs."),
        click.option("--link-gbps", type=click.FloatRange(min=0, min_open=True), metavar="GB/S",
                     help="GPU link bandwidth per direction for the projection (default: spec)."),
        click.option("--phase-map", type=click.Path(dir_okay=False), metavar="FILE",
                     help="TOML mapping canonical phases to NVTX name patterns."),
        click.option("--step-range", metavar="NAME", help="NVTX range name that marks one step."),
        click.option("--device", type=int, help="Only this CUDA device id."),
        click.option("--window", metavar="START:END",
                     help="Analysed window on the session timeline: START:END, each a number "
                          "with ns, us, ms or s (a bare number is ns); a side may be left empty."),
        click.option("--steps", "steps_sel", metavar="FIRST:LAST",
                     help="Steps to analyse: 0-based indices, both ends included (5:20; an empty "
                          "side is open)."),
        click.option("--thresholds", "thresholds_path", type=click.Path(dir_okay=False),
                     metavar="FILE", help="TOML overriding thresholds (docs/thresholds.md)."),
        click.option("--include-host-info", is_flag=True,
                     help="Include host, user, paths and command line in outputs."),
        click.option("--max-rows", type=click.IntRange(min=1), default=200, show_default=True,
                     help="Rows in the kernel tables."),
        click.option("--max-memory", metavar="SIZE", help="Refuse inputs needing more (e.g. 4G)."),
        click.option("--memory-budget", metavar="SIZE|none",
                     help="Memory an export's analysis may use (default 4G; 'none': no limit); a "
                          "larger export is streamed chunk by chunk (see --memory-mode)."),
        click.option("--memory-mode", type=click.Choice(["stream", "middle"]), default=None,
                     help="Over the budget: 'stream' the whole export in chunks (default) or "
                          "analyse only the 'middle' window that fits."),
        click.option("--chunk-rows", type=click.IntRange(min=1), metavar="N", default=None,
                     help="Advanced: stream in chunks of about N kernel + API rows."),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


@main.command()
@click.argument("trace")
@_analyze_options
@click.option("--scheduler", metavar="ADDRESS",
              help="Stream the export's chunks to this Dask scheduler (tcp://host:8786).")
@click.option("--dask", "use_dask", is_flag=True,
              help="Stream the export's chunks on a local Dask cluster.")
def analyze(trace: str, **kw) -> None:
    """Diagnose one trace: verdict, step/phase breakdown, GPU gaps, Tensor Cores, transfers."""
    from nsys_diag.app.analyze import analyze_command

    _prepare_outputs(kw.get("json_out"), kw.get("md_out"), kw.get("html_out"), kw.get("trace_out"))
    _check_input_files(kw.get("ncu_path"), kw.get("phase_map"), kw.get("thresholds_path"))
    echo = _echo(err=kw.get("json_out") == "-" or kw.get("md_out") == "-")
    for line in analyze_command(trace, **kw):
        echo(line)


# -------------------------------------------------------------------------------------- batch
@main.command()
@click.argument("dirs", nargs=-1, required=True)
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None,
              help="Parallel processes (default: CPU count).")
@click.option("--scheduler", metavar="ADDRESS", help="Dask scheduler, e.g. tcp://host:8786.")
@click.option("--dask", "use_dask", is_flag=True, help="Run on a local Dask cluster.")
@click.option("-o", "--output", "outdir", metavar="OUTDIR", default="nsys-diag-batch",
              show_default=True, help="Where reports and the index go.")
@click.option("--no-cache", is_flag=True, help="Re-analyse every trace.")
@click.option("--json", "json_out", metavar="FILE|-", help="Also write the index JSON here.")
@click.option("--md", "md_out", metavar="FILE|-", help="Also write the index Markdown here.")
def batch(dirs, jobs, scheduler, use_dask, outdir, no_cache, json_out, md_out) -> None:
    """Analyse every trace under DIRS; one report each plus an index. Exit 4 if any was skipped."""
    from nsys_diag.app.batch import batch_command

    _prepare_outputs(json_out, md_out)
    code = batch_command(list(dirs), jobs=jobs, scheduler=scheduler, use_dask=use_dask,
                         outdir=outdir, use_cache=not no_cache, json_out=json_out, md_out=md_out,
                         echo=_echo(err=True))
    sys.exit(code)


# ------------------------------------------------------------------------------------ compare
@main.command()
@click.argument("baseline")
@click.argument("candidate")
@click.option("--fail-on-regression", type=click.FloatRange(min=0), metavar="PCT",
              help="Exit 5 when the candidate is slower by more than PCT % with confidence; "
                   "7 when that cannot be evaluated.")
@click.option("-o", "--output", "html_out", metavar="OUT.html", help="HTML comparison report.")
@click.option("--json", "json_out", metavar="FILE|-", help="Write the comparison JSON.")
@click.option("--md", "md_out", metavar="FILE|-", help="Write a Markdown comparison.")
@click.option("--seed", type=int, default=0, show_default=True, help="Bootstrap seed.")
@click.option("--no-cache", is_flag=True, help="Re-analyse every trace.")
@click.option("--allow-unevaluable", is_flag=True,
              help="Exit 0 (not 7) when --fail-on-regression cannot be evaluated (the note stays).")
def compare(baseline, candidate, fail_on_regression, html_out, json_out, md_out, seed,
            no_cache, allow_unevaluable) -> None:
    """Compare BASELINE and CANDIDATE (each a trace or a directory of runs).

    \b
    Exit codes: 0 ok · 3 unreadable input · 5 slower than --fail-on-regression PCT with
    confidence · 7 the gate cannot be evaluated (no steps on a side, no confidence interval,
    or an incomparable pair; --allow-unevaluable makes it 0).
    """
    from nsys_diag.app.compare import compare_command

    _prepare_outputs(html_out, json_out, md_out)
    code = compare_command(baseline, candidate, fail_on_regression=fail_on_regression,
                           html_out=html_out, json_out=json_out, md_out=md_out, seed=seed,
                           use_cache=not no_cache, allow_unevaluable=allow_unevaluable,
                           echo=_echo(err=json_out == "-" or md_out == "-"),
                           err=_echo(err=True))
    sys.exit(code)


# ------------------------------------------------------------------------------------ profile
@main.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("-o", "--output", "output", default="nsys-diag-profile", show_default=True,
              help="Report base name (without extension).")
@click.option("--gpu-metrics", "gpu_metrics", metavar="DEVICES",
              help="Sample GPU metrics on these devices (e.g. 'all' or '0').")
@click.option("--capture-range", type=click.Choice(["none", "cudaProfilerApi", "nvtx"]),
              default="none", show_default=True, help="Capture only part of the run.")
@click.option("--nvtx-capture", metavar="RANGE@DOMAIN", help="Range that starts capture (nvtx).")
@click.option("--delay", type=float, help="Seconds to wait before capturing.")
@click.option("--duration", type=float, help="Seconds to capture.")
@click.option("--cuda-memory-usage", is_flag=True, help="Track GPU memory allocations.")
@click.option("--dry-run", is_flag=True, help="Print the commands, run nothing.")
@click.option("--no-analyze", is_flag=True, help="Only capture and export.")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def profile(command, **kw) -> None:
    """Capture the right nsys trace of COMMAND, export SQLite, then analyze it.

    Usage: nsys-diag profile [OPTIONS] -- python train.py --epochs 1
    """
    from nsys_diag.app.profiling import profile_command

    code = profile_command(list(command), echo=click.echo, **kw)
    sys.exit(code)


# ------------------------------------------------------------------------------ entry point
_exit_code: int | None = None
"""Set by ``run`` once ``main`` has finished: the process's exit code for ``_fast_exit``."""


def _fast_exit() -> None:
    """The last exit handler of a ``run`` process (registered when this module is imported, so
    ``atexit`` runs it after every handler registered later — thread pools, temporary files, a
    caller's own): shut logging down, flush stdout/stderr, then end the process at once with
    ``os._exit`` instead of tearing the interpreter down object by object (perf, bench: freeing
    millions of analysed rows one array at a time took ~0.1 s on the 2M-kernel trace; the
    operating system reclaims the memory in one go). Does nothing outside ``run`` (tests call
    ``main`` through click's runner, which never ends the process)."""
    if _exit_code is None:
        return
    if "logging" in sys.modules:  # its own exit handler may have been registered before ours
        sys.modules["logging"].shutdown()
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except (BrokenPipeError, ValueError):  # `nsys-diag … | head`: the reader left; or closed
        pass
    os._exit(_exit_code)


atexit.register(_fast_exit)


def run() -> None:
    """The ``nsys-diag`` console script (and ``python -m nsys_diag``): ``main`` as a process.

    Exit codes are ``main``'s. The process then ends the ordinary way (``SystemExit``: threads
    joined, exit handlers run in reverse order of registration), and the last handler,
    ``_fast_exit``, skips the interpreter's object-by-object teardown.
    """
    global _exit_code
    try:
        main()  # standalone mode: always ends with SystemExit
        code: object = 0
    except SystemExit as exc:
        code = exc.code
    if code is None:
        code = 0
    elif not isinstance(code, int):  # sys.exit("message"): print it, exit 1 (as Python does)
        print(code, file=sys.stderr)
        code = 1
    _exit_code = code
    raise SystemExit(code)


if __name__ == "__main__":  # pragma: no cover
    run()
