"""`nsys-diag profile`: the exact nsys command lines, and the runner against a fake `nsys`.

The fake ``nsys`` (a Python script put first on PATH) appends its argv to a JSON-lines log; for
``profile`` it runs the program and writes a dummy ``.nsys-rep``, for ``export`` a generated
nsys-shaped SQLite, for ``profile --help`` a help line with the GPU-metrics flag spelling.
"""
from __future__ import annotations

import json
import os
import shlex
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from nsys_diag.app import profiling as profile_app
from nsys_diag.app.profiling import build_profile_commands, profile_command
from nsys_diag.cli import main
from nsys_diag.model.errors import EXIT_NSYS_MISSING, UsageError

PY = sys.executable
OK_APP = [PY, "-c", "pass"]

FAKE_NSYS = textwrap.dedent('''\
    #!{python}
    import json, os, sqlite3, subprocess, sys
    args = sys.argv[1:]
    with open(os.environ["FAKE_NSYS_LOG"], "a") as log:
        log.write(json.dumps(args) + "\\n")
    if args[:2] == ["profile", "--help"]:
        old = os.environ.get("FAKE_NSYS_OLD")
        print("  --gpu-metrics-device=<ids>" if old else "  --gpu-metrics-devices=<ids>")
        sys.exit(0)
    if args[0] == "profile":
        opts, i = {{}}, 1
        while i < len(args) and args[i].startswith("-"):
            key, _, value = args[i].partition("=")
            opts[key] = value
            i += 1
        rc = subprocess.call(args[i:])
        if not os.environ.get("FAKE_NSYS_NO_REPORT"):
            ext = os.environ.get("FAKE_NSYS_EXT", ".nsys-rep")
            with open(opts["--output"] + ext, "wb") as fh:
                fh.write(b"fake nsys report")
        sys.exit(rc)
    if args[0] == "export":
        out, report = args[args.index("--output") + 1], args[-1]
        assert open(report, "rb").read() == b"fake nsys report", report
        rc = int(os.environ.get("FAKE_NSYS_EXPORT_RC", "0"))
        if rc:
            sys.exit(rc)
        try:
            from nsys_diag.synth import write_preset
        except ImportError:
            write_preset = None
        if write_preset is not None:
            write_preset(out, "worked_example")
        else:  # a tiny nsys-shaped export
            con = sqlite3.connect(out)
            con.executescript(
                "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);"
                "INSERT INTO StringIds VALUES (1, 'gemm_kernel');"
                "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER,"
                " deviceId INTEGER, streamId INTEGER, correlationId INTEGER,"
                " globalPid INTEGER, shortName INTEGER);"
                "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (1000, 2000, 0, 7, 1, 1, 1);")
            con.commit()
            con.close()
        sys.exit(0)
    sys.exit(99)
''')


@pytest.fixture
def fake_nsys(tmp_path, monkeypatch):
    """Put a fake `nsys` first on PATH; returns a reader of the recorded calls."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    exe = bindir / "nsys"
    exe.write_text(FAKE_NSYS.format(python=PY))
    exe.chmod(0o755)
    log = tmp_path / "nsys-calls.jsonl"
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("FAKE_NSYS_LOG", str(log))
    monkeypatch.chdir(tmp_path)

    def calls():
        if not log.exists():
            return []
        return [json.loads(line) for line in log.read_text().splitlines()]

    calls.bindir = bindir
    return calls


@pytest.fixture
def no_nsys(tmp_path, monkeypatch):
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.chdir(tmp_path)


def invoke(*args):
    return CliRunner().invoke(main, ["profile", *args], catch_exceptions=False)


# --------------------------------------------------------------------------- pure builder
def test_default_commands():
    prof, export, analyze = build_profile_commands(["python", "train.py", "--epochs", "1"],
                                                   output="run1")
    assert prof == ["nsys", "profile", "--trace=cuda,nvtx,osrt", "--cuda-graph-trace=node",
                    "--sample=none", "--cpuctxsw=none", "--output=run1",
                    "--force-overwrite=true", "python", "train.py", "--epochs", "1"]
    assert export == ["nsys", "export", "--type", "sqlite", "--force-overwrite=true",
                      "--output", "run1.sqlite", "run1.nsys-rep"]
    assert analyze == ["nsys-diag", "analyze", "run1.sqlite"]


def test_every_option():
    prof, _, _ = build_profile_commands(
        ["./a.out"], output="out/r.nsys-rep", gpu_metrics="all", cuda_memory_usage=True,
        capture_range="cudaProfilerApi", delay=5, duration=30.0)
    assert prof == ["nsys", "profile", "--trace=cuda,nvtx,osrt", "--cuda-graph-trace=node",
                    "--sample=none", "--cpuctxsw=none", "--gpu-metrics-devices=all",
                    "--gpu-metrics-frequency=1000", "--cuda-memory-usage=true",
                    "--capture-range=cudaProfilerApi", "--capture-range-end=stop",
                    "--delay=5", "--duration=30", "--output=out/r", "--force-overwrite=true",
                    "./a.out"]


def test_nvtx_capture_range_and_register_only_env():
    prof, _, _ = build_profile_commands(["x"], capture_range="nvtx",
                                        nvtx_capture="train_step_10@nsys-diag")
    i = prof.index("--capture-range=nvtx")
    assert prof[i:i + 4] == ["--capture-range=nvtx", "--nvtx-capture=train_step_10@nsys-diag",
                             "--capture-range-end=stop",
                             "--env-var=NSYS_NVTX_PROFILER_REGISTER_ONLY=0"]
    # --nvtx-capture alone implies the nvtx capture range
    assert build_profile_commands(["x"], nvtx_capture="r@d") == \
        build_profile_commands(["x"], capture_range="nvtx", nvtx_capture="r@d")


def test_old_gpu_metrics_flag_sampling_and_no_analyze():
    cmds = build_profile_commands(["x"], gpu_metrics="0", gpu_metrics_flag="--gpu-metrics-device",
                                  cpu_sampling=True, no_analyze=True)
    assert len(cmds) == 2
    assert "--gpu-metrics-device=0" in cmds[0] and "--sample=none" not in cmds[0]


def test_fractional_seconds_round_outward():
    prof, _, _ = build_profile_commands(["x"], delay=2.7, duration=0.2)
    assert "--delay=2" in prof and "--duration=1" in prof


@pytest.mark.parametrize("kw, msg", [
    (dict(capture_range="nvtx"), "needs --nvtx-capture"),
    (dict(capture_range="cudaProfilerApi", nvtx_capture="a@b"), "only applies"),
    (dict(delay=-1), "non-negative"),
    (dict(duration=0), "at least 1 second"),
])
def test_contradictory_options_are_usage_errors(kw, msg):
    with pytest.raises(UsageError, match=msg):
        build_profile_commands(["x"], **kw)


def test_empty_command_is_a_usage_error():
    with pytest.raises(UsageError):
        build_profile_commands([])


# -------------------------------------------------------------------------------- dry run
def test_dry_run_prints_the_exact_commands_and_runs_nothing(fake_nsys):
    res = invoke("--dry-run", "-o", "my run", "--gpu-metrics", "0", "--",
                 "python", "train.py", "--lr", "1e-3")
    assert res.exit_code == 0
    expected = build_profile_commands(["python", "train.py", "--lr", "1e-3"], output="my run",
                                      gpu_metrics="0")
    assert res.output.splitlines() == [shlex.join(c) for c in expected]
    assert "'my run.sqlite'" in res.output  # shell-quoted
    assert all(call[:2] == ["profile", "--help"] for call in fake_nsys())  # only the flag probe


def test_dry_run_works_without_nsys(no_nsys):
    res = invoke("--dry-run", "--", "python", "t.py")
    assert res.exit_code == 0
    assert res.output.splitlines()[0].startswith("nsys profile --trace=cuda,nvtx,osrt")


def test_nvtx_capture_without_domain_gets_a_note(no_nsys):
    res = invoke("--dry-run", "--nvtx-capture", "train_step_3", "--", "python", "t.py")
    assert res.exit_code == 0
    assert "train_step_3@nsys-diag" in res.output


# --------------------------------------------------------------------------- nsys missing
def test_missing_nsys_prints_the_commands_and_exits_6(no_nsys):
    res = invoke("-o", "r", "--", "python", "train.py")
    assert res.exit_code == EXIT_NSYS_MISSING == 6
    assert "not on PATH" in res.output
    for cmd in build_profile_commands(["python", "train.py"], output="r"):
        assert shlex.join(cmd) in res.output


def test_missing_nsys_exit_code_through_the_console_script(tmp_path):
    script = Path(PY).parent / "nsys-diag"
    if not script.exists():
        pytest.skip("console script not installed next to this interpreter")
    env = dict(os.environ, PATH=str(tmp_path))
    proc = subprocess.run([str(script), "profile", "--", "python", "t.py"], env=env,
                          capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert proc.returncode == 6
    assert "nsys profile --trace=cuda,nvtx,osrt" in proc.stdout


# ------------------------------------------------------------------------------ real runs
def test_profile_export_and_recorded_arguments(fake_nsys, tmp_path):
    res = invoke("-o", "runs/r1", "--cuda-memory-usage", "--no-analyze", "--", *OK_APP)
    assert res.exit_code == 0, res.output
    calls = fake_nsys()
    assert calls == [
        ["profile", "--trace=cuda,nvtx,osrt", "--cuda-graph-trace=node", "--sample=none",
         "--cpuctxsw=none", "--cuda-memory-usage=true", "--output=runs/r1",
         "--force-overwrite=true", *OK_APP],
        ["export", "--type", "sqlite", "--force-overwrite=true", "--output", "runs/r1.sqlite",
         "runs/r1.nsys-rep"],
    ]
    sqlite = tmp_path / "runs" / "r1.sqlite"
    con = sqlite3.connect(f"file:{sqlite}?mode=ro", uri=True)
    assert con.execute("SELECT count(*) FROM sqlite_master WHERE name='StringIds'").fetchone()[0] == 1
    con.close()
    assert "nsys-diag analyze runs/r1.sqlite" in res.output


def test_gpu_metrics_flag_follows_the_installed_nsys(fake_nsys, monkeypatch):
    monkeypatch.setenv("FAKE_NSYS_OLD", "1")
    res = invoke("--gpu-metrics", "all", "--no-analyze", "--", *OK_APP)
    assert res.exit_code == 0, res.output
    probe, prof, _export = fake_nsys()
    assert probe == ["profile", "--help"]
    assert "--gpu-metrics-device=all" in prof and "--gpu-metrics-frequency=1000" in prof


def test_failing_program_code_is_propagated_and_report_still_exported(fake_nsys):
    res = invoke("-o", "bad", "--no-analyze", "--", PY, "-c", "import sys; sys.exit(3)")
    assert res.exit_code == 3
    assert "exited with code 3" in res.output
    assert [c[0] for c in fake_nsys()] == ["profile", "export"]
    assert Path("bad.sqlite").is_file()


def test_failing_program_without_report(fake_nsys, monkeypatch):
    monkeypatch.setenv("FAKE_NSYS_NO_REPORT", "1")
    res = invoke("--no-analyze", "--", PY, "-c", "import sys; sys.exit(4)")
    assert res.exit_code == 4
    assert "no report was written" in res.output
    assert [c[0] for c in fake_nsys()] == ["profile"]


def test_successful_program_without_report_is_exit_3(fake_nsys, monkeypatch):
    monkeypatch.setenv("FAKE_NSYS_NO_REPORT", "1")
    res = invoke("--capture-range", "cudaProfilerApi", "--", *OK_APP)
    assert res.exit_code == 3
    assert "cudaProfilerStart()" in res.output


def test_export_failure_returns_nsys_code(fake_nsys, monkeypatch):
    monkeypatch.setenv("FAKE_NSYS_EXPORT_RC", "2")
    res = invoke("--no-analyze", "--", *OK_APP)
    assert res.exit_code == 2
    assert "failed (exit code 2)" in res.output


def test_old_qdrep_report_is_exported(fake_nsys, monkeypatch):
    monkeypatch.setenv("FAKE_NSYS_EXT", ".qdrep")
    res = invoke("-o", "old", "--no-analyze", "--", *OK_APP)
    assert res.exit_code == 0, res.output
    assert fake_nsys()[-1][-1] == "old.qdrep"


def test_analyze_runs_on_the_export_with_default_options(fake_nsys, monkeypatch):
    seen = []

    def analyze_command(trace, **kw):
        seen.append((trace, kw))
        return ["verdict: fake"]

    monkeypatch.setattr(profile_app, "analyze_command", analyze_command)
    res = invoke("-o", "r2", "--", *OK_APP)
    assert res.exit_code == 0, res.output
    assert "verdict: fake" in res.output
    (trace, kw), = seen
    assert trace == "r2.sqlite"
    assert kw["html_out"] is None and kw["no_html"] is False and kw["max_rows"] == 200


def test_end_to_end_with_the_real_pipeline(fake_nsys, tmp_path):
    pytest.importorskip("nsys_diag.synth")
    res = CliRunner().invoke(main, ["profile", "-o", "e2e", "--", *OK_APP])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "e2e.sqlite").is_file()
    assert (tmp_path / "e2e.nsys-diag.html").is_file()


def test_profile_command_library_call_collects_echo(fake_nsys):
    lines = []
    rc = profile_command(OK_APP, output="lib", no_analyze=True, echo=lines.append)
    assert rc == 0
    assert lines[0] == "nsys-diag: " + shlex.join(build_profile_commands(OK_APP, output="lib")[0])


def test_usage_error_through_the_cli_is_exit_2(no_nsys):
    res = CliRunner().invoke(main, ["profile", "--capture-range", "nvtx", "--", "python", "t.py"])
    assert res.exit_code == 2
    assert "--nvtx-capture" in res.output


def test_rounding_note_is_printed_before_the_commands(no_nsys):
    res = invoke("--dry-run", "--delay", "2.5", "--", "python", "t.py")
    assert res.exit_code == 0
    first, second = res.output.splitlines()[:2]
    assert first == "nsys-diag: nsys takes whole seconds: --delay 2.5 → 2"
    assert "--delay=2" in second
