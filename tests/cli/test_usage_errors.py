"""Selection options that name nothing in the trace exit 2 with what is available (issue 15):
`--steps` past the detected steps, `--step-range` matching no range, `--device` without work,
`--window` outside the capture. None falls back silently to another window."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from conftest import SAMPLE_TRACES, shared_trace
from nsys_diag.cli import main

WORKED = SAMPLE_TRACES / "worked_example.sqlite"  # 11 steps, capture 0–10.757 s


def run(*args):
    return CliRunner().invoke(main, ["analyze", *map(str, args)], env={"SOURCE_DATE_EPOCH": "0"})


@pytest.mark.parametrize("args,msg", [
    (["--steps", "100:200"], "--steps 100:200 is outside the detected steps: the trace has steps 0–10"),
    (["--steps", "5:20"], "the trace has steps 0–10"),
    (["--steps", "11:"], "the trace has steps 0–10"),
    (["--step-range", "nonexist"], "--step-range 'nonexist' matches no NVTX range"),
    (["--device", "9"], "devices with activity: 0"),
    (["--window", "900s:1000s"], "is outside the capture: it spans 0.000 s – 10.757 s on the "
                                 "session timeline"),
])
def test_selection_naming_nothing_is_a_usage_error(args, msg):
    res = run(WORKED, "--no-html", *args)
    assert res.exit_code == 2, res.output
    assert msg in res.stderr and "Traceback" not in res.output


def test_step_range_error_lists_the_most_frequent_ranges():
    res = run(WORKED, "--no-html", "--step-range", "nonexist")
    listed = res.stderr.split("the most frequent ranges are: ", 1)[1]
    names = [x.rsplit(" (", 1)[0] for x in listed.strip().split(", ")]
    assert names[:5] == ["data_loading", "forward", "backward", "optimizer_step", "logging"]
    assert "train_step_<n>" in names and len(names) <= 10


@pytest.mark.parametrize("args", [["--steps", "3:5"], ["--steps", "10:10"], ["--steps", "2:"],
                                  ["--step-range", "train_step_.*"], ["--step-range", "forward"],
                                  ["--window", "5s:"], ["--device", "0"]])
def test_selections_inside_the_trace_still_analyse(args, tmp_path):
    out = tmp_path / "o.json"
    res = run(WORKED, "--no-html", "--json", out, *args)
    assert res.exit_code == 0, res.output
    assert json.loads(out.read_text())["verdict"]["code"]


def test_steps_and_window_selecting_no_step_is_a_usage_error():
    res = run(WORKED, "--no-html", "--steps", "0:0", "--window", "9s:10s")
    assert res.exit_code == 2 and "no selected step lies wholly inside the window" in res.stderr


def test_steps_on_a_trace_without_steps_says_none_were_detected():
    res = run(shared_trace("nsys/mordred_rtx6000_2021.sqlite"), "--no-html", "--steps", "1:2")
    assert res.exit_code == 2 and "no steps were detected" in res.stderr


def test_window_outside_a_capture_without_metadata_quotes_the_event_span():
    res = run(shared_trace("nsys/mordred_rtx6000_2021.sqlite"), "--no-html",
              "--window", "900s:1000s")
    assert res.exit_code == 2, res.output
    assert "it spans 0.000 s – 6.771 s" in res.stderr and "events from 0.068 s" in res.stderr
