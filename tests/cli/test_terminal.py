"""The CLI as a Unix tool (issue 28 item 4): terminal text wrapped to ``COLUMNS`` or the tty,
never cut; whole lines when neither; a closed stdout ends quietly with exit 0; output paths
prepared before the analysis; every missing-path error with its hint; help texts as the parsers
behave."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from nsys_diag.app.options import parse_steps, parse_time
from nsys_diag.cli import main

synth = pytest.importorskip("nsys_diag.synth")
REPO = Path(__file__).resolve().parents[2]
OVERRIDE = "overrides the GPU the input names"


@pytest.fixture(scope="module")
def trace(tmp_path_factory) -> Path:
    return synth.write_preset(tmp_path_factory.mktemp("term") / "worked.sqlite", "worked_example")


def _analyze(trace, *extra, env=None):
    return CliRunner().invoke(main, ["analyze", str(trace), "--no-html", "--gpu", "A100", *extra],
                              env={"SOURCE_DATE_EPOCH": "0", **(env or {})})


def _warning_text(lines: list[str]) -> str:
    """The `! --gpu A100 overrides …` warning with its continuation lines joined."""
    start = next(i for i, ln in enumerate(lines) if OVERRIDE in ln)
    out = [lines[start].strip()]
    for ln in lines[start + 1:]:
        if not ln.startswith("    ") or ln.strip().startswith("!"):
            break
        out.append(ln.strip())
    return " ".join(out)


def test_columns_wraps_every_line_and_cuts_nothing(trace):
    whole = _analyze(trace, env={"COLUMNS": ""})
    narrow = _analyze(trace, env={"COLUMNS": "60"})
    assert whole.exit_code == 0 and narrow.exit_code == 0, narrow.output
    wide_lines, narrow_lines = whole.output.splitlines(), narrow.output.splitlines()
    assert max(map(len, wide_lines)) > 60  # there is something to wrap
    assert all(len(ln) <= 60 for ln in narrow_lines), [ln for ln in narrow_lines if len(ln) > 60]
    # the same words in the same order: wrapped, never cut
    assert " ".join(whole.output.split()) == " ".join(narrow.output.split())
    assert _warning_text(narrow_lines) == _warning_text(wide_lines)


def test_not_a_tty_without_columns_prints_whole_lines(trace, tmp_path):
    r = _analyze(trace, "--json", str(tmp_path / "v.json"), env={"COLUMNS": ""})
    (warning,) = [ln for ln in r.output.splitlines() if OVERRIDE in ln]
    view = json.loads((tmp_path / "v.json").read_text())
    (message,) = [q["message"] for q in view["data_quality"] if OVERRIDE in q["message"]]
    assert warning == f"  ! {message}" and len(warning) > 100


def test_a_closed_stdout_ends_quietly_with_exit_0(trace):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("COLUMNS", None)
    p = subprocess.Popen([sys.executable, "-m", "nsys_diag", "analyze", str(trace), "--no-html"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=REPO)
    p.stdout.close()  # the reader is gone before the first line is written (`| head -0`)
    _, err = p.communicate(timeout=300)
    assert p.returncode == 0, err.decode()
    assert err.decode().strip() == ""


def test_output_directories_are_created_before_the_analysis(trace, tmp_path):
    out = tmp_path / "new" / "deeper"
    r = CliRunner().invoke(main, ["analyze", str(trace), "-o", str(out / "r.html"),
                                  "--json", str(out / "r.json"), "--md", str(out / "r.md")])
    assert r.exit_code == 0, r.output
    assert {p.name for p in out.iterdir()} == {"r.html", "r.json", "r.md"}


def test_a_bad_output_path_fails_first(tmp_path):
    blocker = tmp_path / "file.txt"
    blocker.write_text("x")
    # the trace does not exist either: the output path is checked before the input is read
    r = CliRunner().invoke(main, ["analyze", str(tmp_path / "missing.sqlite"), "-o", str(blocker / "x.html")])
    assert r.exit_code == 2, r.output
    assert str(blocker) in r.output and "hint:" in r.output
    r = CliRunner().invoke(main, ["compare", str(tmp_path / "a"), str(tmp_path / "b"),
                                  "--json", str(blocker / "c.json")])
    assert r.exit_code == 2 and "hint:" in r.output


@pytest.mark.parametrize("cmd", [["analyze", "{p}"], ["inspect", "{p}"], ["batch", "{p}", "-o", "{o}"],
                                 ["compare", "{p}", "{p}"]])
def test_every_missing_path_error_carries_a_hint(tmp_path, cmd):
    args = [a.format(p=tmp_path / "nope", o=tmp_path / "out") for a in cmd]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 3, r.output
    assert "no such file" in r.output and "(hint: " in r.output


def test_help_texts_say_what_the_parsers_accept():
    text = " ".join(CliRunner().invoke(main, ["analyze", "--help"], env={"COLUMNS": "200"}).output.split())
    window = text[text.index("--window"):text.index("--steps")]
    for unit in ("ns", "us", "ms", "s"):
        assert parse_time(f"2{unit}") > 0  # the parser takes it …
        assert f" {unit}" in window.replace(",", " ")  # … and the help says so
    assert parse_steps("0:2") == (0, 2)
    steps = text[text.index("--steps"):text.index("--thresholds")]
    assert "0-based" in steps and "included" in steps


@pytest.mark.parametrize("option, code", [("--ncu", 3), ("--phase-map", 2), ("--thresholds", 2)])
def test_a_missing_side_file_fails_first_with_its_hint(trace, tmp_path, option, code):
    r = CliRunner().invoke(main, ["analyze", str(trace), "--no-html", option, str(tmp_path / "nope")])
    assert r.exit_code == code, r.output
    assert str(tmp_path / "nope") in r.output and "hint: " in r.output
