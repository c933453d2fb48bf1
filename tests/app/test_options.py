"""Raw CLI option values → AnalyzeOptions."""
from __future__ import annotations

import pytest

from nsys_diag.app import options
from nsys_diag.loaders.memory_estimate import BASE_MEMORY_BYTES
from nsys_diag.model.errors import UsageError
from nsys_diag.model.options import DEFAULT_MEMORY_BUDGET_BYTES


def test_times_windows_steps_and_sizes():
    assert options.parse_time("12.5s") == 12_500_000_000
    assert options.parse_time("40µs") == 40_000 and options.parse_time("100") == 100
    assert options.parse_window("1s:") == (1_000_000_000, 2**62)
    assert options.parse_steps("5:") == (5, None) and options.parse_steps(":9") == (0, 9)
    assert options.parse_size("2GiB") == 2 * 2**30 and options.parse_size("512M") == 512 * 2**20
    for bad in (lambda: options.parse_window("5"), lambda: options.parse_window("2s:1s"),
                lambda: options.parse_steps("9:5"), lambda: options.parse_size("lots")):
        with pytest.raises(UsageError):
            bad()


def test_memory_budget_default_none_and_minimum():
    assert options.parse_budget(None) == DEFAULT_MEMORY_BUDGET_BYTES
    assert options.parse_budget("none") is None and options.parse_budget("0") is None
    with pytest.raises(UsageError, match="below"):
        options.parse_budget(str(BASE_MEMORY_BYTES - 1))


def test_toml_files(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("not = [toml")
    with pytest.raises(UsageError, match="not valid TOML"):
        options.load_thresholds(str(bad))
    good = tmp_path / "th.toml"
    good.write_text("min_gap_ns = 2000\n")
    assert options.load_thresholds(str(good)).min_gap_ns == 2000
    opts = options.build_options(window="1s:2s", steps_sel="1:3", max_memory="4G")
    assert opts.window_ns == (1_000_000_000, 2_000_000_000) and opts.steps == (1, 3)
    assert opts.max_memory_bytes == 4 * 2**30


def test_one_builder_for_the_command_line_and_the_python_api(tmp_path):
    """The CLI's text forms and the API's Python values build the same options; ``--steps`` has
    one parser and one "to the end" sentinel (None)."""
    toml = tmp_path / "phases.toml"
    toml.write_text('data = ["loader.*"]\n')
    cli = options.build_options(window="1s:2s", steps_sel="5:", memory_budget="1G",
                                phase_map=str(toml), batch_size=8, device=0, gpu="H100")
    api = options.build_options(window=(10**9, 2 * 10**9), steps_sel=(5, None),
                                memory_budget=2**30, phase_map={"data": ["loader.*"]},
                                batch_size=8, device=0, gpu="H100")
    assert cli == api and cli.steps == (5, None)
    for bad in ({"steps_sel": (3, 1)}, {"steps_sel": (-1, 2)}, {"window": (5, 1)},
                {"batch_size": 0}, {"device": "0"}, {"memory_budget": 1.5},
                {"phase_map": 3}):
        with pytest.raises(UsageError):
            options.build_options(**bad)


def test_an_unknown_option_keyword_is_an_error():
    with pytest.raises(TypeError):
        options.build_options(step_rnage="train")  # misspelt: never silently ignored
    with pytest.raises(TypeError):
        options.build_options(ncu="x.csv")  # the API's name is mapped by the API, not here
