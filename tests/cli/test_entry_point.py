"""The console-script entry (``cli.run``, also ``python -m nsys_diag``) as a real process: exit
codes, complete output on stdout and through a closed pipe, exit handlers run before the fast
``os._exit`` of ``cli._fast_exit`` (the last exit handler)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SAMPLE = Path(__file__).resolve().parents[2] / "sample_traces" / "worked_example.sqlite"


def _run(*args: str, code: str | None = None, **kw) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-c", code] if code else [sys.executable, "-m", "nsys_diag"]
    return subprocess.run([*cmd, *args], capture_output=True, timeout=120, **kw)


@pytest.fixture(scope="module")
def sample() -> Path:
    if not SAMPLE.exists():
        pytest.skip("sample trace missing")
    return SAMPLE


def test_json_on_stdout_is_complete_and_exit_code_is_zero(sample):
    out = _run("analyze", str(sample), "--json", "-", "--no-html")
    assert out.returncode == 0, out.stderr
    view = json.loads(out.stdout)  # the whole document arrived before the process ended
    assert view["verdict"]["code"] == "input_bound"
    assert b"VERDICT" in out.stderr


def test_errors_keep_their_exit_codes():
    missing = _run("analyze", "/nonexistent/report.sqlite")
    assert missing.returncode == 3
    assert missing.stderr.decode().startswith("nsys-diag: error: ")
    assert _run("analyze").returncode == 2  # usage: missing argument
    assert _run("--version").returncode == 0


def test_exit_handlers_run_before_the_process_ends(sample, tmp_path):
    # as in the console script, nsys_diag.cli is imported first; handlers registered from then on
    # (thread pools, temporary files, a caller's own) run before its last handler ends the process
    code = ("import atexit, sys\n"
            "from nsys_diag.cli import run\n"
            "atexit.register(lambda: print('exit handler ran', file=sys.stderr))\n"
            "sys.argv = ['nsys-diag'] + sys.argv[1:]\n"
            "run()\n")
    out = _run("analyze", str(sample), "--json", str(tmp_path / "v.json"), "--no-html", code=code)
    assert out.returncode == 0, out.stderr
    assert b"exit handler ran" in out.stderr
    assert json.loads((tmp_path / "v.json").read_text())["verdict"]["code"] == "input_bound"


def test_a_reader_that_leaves_early_causes_no_traceback(sample):
    proc = subprocess.Popen([sys.executable, "-m", "nsys_diag", "analyze", str(sample), "--json",
                             "-", "--no-html"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.read(10)
    proc.stdout.close()  # like `| head -c 10`
    err = proc.stderr.read()
    proc.wait(timeout=120)
    assert b"Traceback" not in err


def test_the_fast_exit_is_the_last_handler_and_flushes(sample, tmp_path):
    code = ("import atexit, logging, sys\n"
            "from nsys_diag.cli import run\n"
            "logging.basicConfig(filename=sys.argv[-1], level=logging.INFO)\n"
            "logging.getLogger('x').info('logged before exit')\n"
            "sys.stdout.write('unflushed text')\n"
            "sys.argv = ['nsys-diag', '--version']\n"
            "run()\n")
    log = tmp_path / "log.txt"
    out = _run(str(log), code=code)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(b"unflushed text")
    assert "logged before exit" in log.read_text()
