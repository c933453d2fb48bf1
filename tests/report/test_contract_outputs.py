"""Every real output validates against its closed, generated schema (nsys_diag/schemas/): the
analysis JSON, the inspect JSON, a compare JSON and a batch index of every sample trace and every
real trace in ../shared/traces (skipped cleanly when absent); and a key the contract does not
declare fails validation, in every section."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from conftest import SAMPLE_TRACES, SHARED_TRACES
from nsys_diag.cli import main
from nsys_diag.report import batch_schema, contract
from nsys_diag.report.command_schemas import compare_schema, inspect_schema

NCU = SHARED_TRACES / "ncu" / "interp_a100_details.csv"
MORDRED = SHARED_TRACES / "nsys" / "mordred_rtx6000_2021.sqlite"


def _traces() -> list[Path]:
    found = sorted(SAMPLE_TRACES.glob("*.sqlite"))
    if SHARED_TRACES.is_dir():
        found += sorted(p for p in SHARED_TRACES.rglob("*") if p.suffix in (".sqlite", ".csv"))
    return found


def _errors(schema: dict, doc) -> list:
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(doc), key=lambda e: list(e.path))
    return [(list(e.path), e.message[:200]) for e in errors[:5]]


@pytest.fixture(autouse=True)
def _quiet_env(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1764460800")


def _cli_json(tmp_path: Path, *args: str) -> dict:
    out = tmp_path / "out.json"
    res = CliRunner().invoke(main, [*args, "--json", str(out)])
    assert out.is_file(), res.output
    return json.loads(out.read_text(encoding="utf-8"))


@pytest.mark.parametrize("trace", _traces(), ids=lambda p: p.stem)
def test_every_trace_analysis_and_inspect_validate(trace, tmp_path):
    view = _cli_json(tmp_path, "analyze", str(trace), "--no-html", "--batch-size", "8",
                     "--model-flops-per-step", "1e12")
    assert not _errors(contract.json_schema(), view)
    assert not _errors(inspect_schema(), _cli_json(tmp_path, "inspect", str(trace)))
    assert not _errors(inspect_schema(), _cli_json(tmp_path, "inspect", str(trace),
                                                   "--include-host-info"))


def test_streamed_windowed_host_info_and_joined_analyses_validate(tmp_path):
    trace = SAMPLE_TRACES / "multi_gpu.sqlite"
    runs = [["--chunk-rows", "300", "--memory-mode", "stream"], ["--include-host-info"],
            ["--window", "0:1000000000000"]]
    if NCU.is_file():
        runs.append(["--ncu", str(NCU)])
    for extra in runs:
        view = _cli_json(tmp_path, "analyze", str(trace), "--no-html", *extra)
        assert not _errors(contract.json_schema(), view), extra


@pytest.mark.parametrize("pair", [
    ("healthy_tc.sqlite", "simt_gemm.sqlite", ()),
    ("worked_example.sqlite", "overhead_bound.sqlite", ("--fail-on-regression", "5")),
    ("no_cuda.sqlite", "inference.sqlite", ()),
    (".", ".", ()),  # two directories of runs
], ids=["pair", "gate", "no-cuda", "directories"])
def test_compare_json_validates(pair, tmp_path):
    base, cand, extra = pair
    doc = _cli_json(tmp_path, "compare", str(SAMPLE_TRACES / base), str(SAMPLE_TRACES / cand),
                    *extra)
    assert not _errors(compare_schema(), doc)


def test_a_compare_of_windows_without_steps_validates(tmp_path):
    if not MORDRED.is_file():
        pytest.skip("../shared/traces not present")
    doc = _cli_json(tmp_path, "compare", str(MORDRED), str(MORDRED))
    assert doc["window_rates"]["metrics"]
    assert not _errors(compare_schema(), doc)


@pytest.mark.parametrize("root", [SAMPLE_TRACES, SHARED_TRACES], ids=["samples", "shared"])
def test_batch_index_validates(root, tmp_path):
    if not root.is_dir():
        pytest.skip("../shared/traces not present")
    index = _cli_json(tmp_path, "batch", str(root), "-o", str(tmp_path / "b"), "--no-cache")
    assert index["traces"]
    assert not _errors(batch_schema.json_schema(), index)


# ------------------------------------------------------------------------- closed sections


def _places(doc, where=()):
    """Every object of ``doc`` with named keys: (path, object); maps are skipped."""
    if isinstance(doc, dict):
        yield where, doc
        for key, value in doc.items():
            yield from _places(value, (*where, key))
    elif isinstance(doc, list):
        for i, value in enumerate(doc[:2]):
            yield from _places(value, (*where, i))


_MAPS = {"tables", "thresholds", "phases", "host", "by_cause_share", "category_ns", "kernel_ns",
         "flops_by_precision", "bound_shares", "flop_per_s", "ridge_point", "provenance_by_peak",
         "time_weighted", "time_weighted_ncu", "time_weighted_matched", "match_levels", "other",
         "frames", "memcpy_by_kind", "phase_shares", "phase_ms", "phase_gpu_ms", "gaps_ms",
         "phase_median_ms", "assigned"}


def _assert_closed(schema: dict, doc: dict) -> int:
    """Adding an unknown key to any object of ``doc`` (not a typed map) fails validation."""
    validator = jsonschema.Draft202012Validator(schema)
    assert validator.is_valid(doc)
    tried = 0
    for where, obj in list(_places(doc)):
        if where and (where[-1] in _MAPS or (where[-1] == "by_cause" and "per_device" in where)):
            continue
        bad = copy.deepcopy(doc)
        target = bad
        for step in where:
            target = target[step]
        target["undeclared_key"] = 1
        assert not validator.is_valid(bad), where
        tried += 1
    return tried


def test_an_undeclared_key_in_any_section_fails_validation(tmp_path):
    view = _cli_json(tmp_path, "analyze", str(SAMPLE_TRACES / "multi_gpu.sqlite"), "--no-html",
                     "--batch-size", "8", "--model-flops-per-step", "1e12")
    assert len(view["processes"]) >= 2  # every per-process section is tried in a row too
    sections = {k for k, v in view.items() if isinstance(v, (dict, list))}
    assert {"steps", "gaps", "verdict", "transfers", "timeline"} <= sections
    assert _assert_closed(contract.json_schema(), view) > 100


def test_an_undeclared_key_fails_the_inspect_compare_and_batch_schemas(tmp_path):
    trace = SAMPLE_TRACES / "multi_gpu.sqlite"
    assert _assert_closed(inspect_schema(), _cli_json(tmp_path, "inspect", str(trace))) > 5
    doc = _cli_json(tmp_path, "compare", str(trace), str(SAMPLE_TRACES / "healthy_tc.sqlite"))
    assert _assert_closed(compare_schema(), doc) > 5
    index = _cli_json(tmp_path, "batch", str(SAMPLE_TRACES), "-o", str(tmp_path / "b"),
                      "--no-cache")
    assert _assert_closed(batch_schema.json_schema(), index) > 5
