"""Claims carry their numbers (issue 26, item 6), on every sample, generated and shared trace:
each evidence row's ``path`` resolves to its value in the same document, every number a
finding's headline states is one of its quantities, and the claims that cross sections agree
with the sections they cross."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from nsys_diag.analyses.diagnosis.verdict import LARGER_BATCH
from nsys_diag.app.analyze import analyze_path
from nsys_diag.report.page import _pageable_note
from nsys_diag.report.quantities import METRIC_PATHS, resolve, same_value
from nsys_diag.synth import programs
from tests.conftest import SHARED_TRACES

REPO = Path(__file__).resolve().parents[2]


def _inputs(tmp: Path) -> list[Path]:
    out = sorted((REPO / "sample_traces").glob("*.sqlite"))
    for name in programs.CASES:
        ext = ".csv" if name in programs.NCU_CASES else ".sqlite"
        out.append(programs.write_case(name, tmp / f"{name}{ext}"))
    out += sorted((SHARED_TRACES / "nsys").glob("*.sqlite")) + sorted(
        (SHARED_TRACES / "ncu").glob("*.csv"))
    return out


@pytest.fixture(scope="module")
def views(tmp_path_factory) -> dict[str, dict]:
    tmp = tmp_path_factory.mktemp("claims")
    return {p.name: json.loads(json.dumps(analyze_path(str(p), generated_at="t"), default=str))
            for p in _inputs(tmp)}


def _nodes(doc: dict):
    yield "", doc
    for i, p in enumerate(doc.get("processes") or []):
        yield f"/processes/{i}", p


def _findings(node: dict) -> list[dict]:
    return list(node.get("findings") or []) + [node["verdict"]]


def _advice(node: dict) -> list[str]:
    v = node["verdict"]
    return list(v["recommendations"]) + [a["text"] for a in v["advice"]] + [
        a["text"] for f in node.get("findings") or [] for a in f.get("advice") or []]


def test_every_path_resolves_to_its_value_in_the_same_document(views):
    seen = 0
    for name, doc in views.items():
        for _, node in _nodes(doc):
            for f in _findings(node):
                for row in f["evidence"]:
                    if row["metric"] in METRIC_PATHS:
                        assert row.get("unit") == METRIC_PATHS[row["metric"]][1], (name, row)
                    if "path" in row:
                        seen += 1
                        assert same_value(resolve(doc, row["path"]), row["value"]), (name, row)
    assert seen > 100  # the rows that state shares and counts carry their paths


def test_every_gap_share_and_utilization_row_has_a_path(views):
    for name, doc in views.items():
        for _, node in _nodes(doc):
            for f in _findings(node):
                for row in f["evidence"]:
                    if re.fullmatch(r"gaps\.\w+_share|gpu\.utilization|gpu\.copy_only_share", row["metric"]):
                        assert "path" in row, (name, row)


_NUMBER = re.compile(r"(?<![\w.])(\d[\d,]*(?:\.\d+)?)\s*(%|ms|µs|s\b)?")


def _stated(row: dict) -> set[str]:
    """The ways a quantity can be written in a headline: its value as a percentage (shares) or
    as ms / a count, at the precisions the texts use."""
    v, unit = row.get("value"), row.get("unit")
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return set(re.findall(r"\d[\d,]*(?:\.\d+)?", str(v or "")))
    out = set()
    if unit == "share":
        for d in (0, 1):
            out.add(f"{100 * v:.{d}f}")
    elif unit == "ns":
        for d in (0, 1, 2, 3):
            out.add(f"{v / 1e6:.{d}f}")
    else:
        out |= {f"{v:,.0f}", f"{v:.0f}", f"{v:.1f}"}
    return out


def test_every_percentage_in_a_finding_headline_is_one_of_its_quantities(views):
    """A finding's headline states shares of its own evidence rows (its detail text, quoted from
    ``gaps.by_cause_detail``, is one of its rows too)."""
    for name, doc in views.items():
        for f in [f for _, node in _nodes(doc) for f in _findings(node)]:
            stated = set().union(*(_stated(r) for r in f["evidence"])) if f["evidence"] else set()
            if f.get("share_of_window") is not None:
                stated |= _stated({"value": f["share_of_window"], "unit": "share"})
            for number, unit in _NUMBER.findall(f.get("headline") or ""):
                if unit == "%":
                    assert number in stated, (name, f["code"], number, f["headline"])


# ----------------------------------------------------------------------- cross-section claims
def test_linear_scaling_is_claimed_only_beside_hidden_communication(views):
    for name, doc in views.items():
        for _, node in _nodes(doc):
            texts = [node["verdict"]["scale_advice"]] + _advice(node)
            if any("linearly while" in t or "roughly linearly" in t for t in texts):
                comm = node.get("communication") or {}
                assert comm.get("available") and (comm.get("overlap_share") or 0) > 0, name


def test_pinned_memory_advice_needs_a_megabyte_of_pageable_copies(views):
    for name, doc in views.items():
        for _, node in _nodes(doc):
            pin = [t for t in _advice(node) if re.search(r"pinned|pin_memory|cudaMallocHost", t)]
            if pin:
                assert node["transfers"]["pageable_bytes"] >= 1 << 20, (name, pin)


def test_a_few_bytes_of_pageable_copies_are_not_told_to_pin():
    view = {"transfers": {"pageable_count": 10, "pageable_bytes": 40},
            "thresholds": {"pageable_copy_min_bytes": 1 << 20}, "program": {"framework": "cuda"}}
    note = _pageable_note(view)
    assert not note["pageable_worth_pinning"] and "pin it" not in note["pageable_text"]
    view["transfers"]["pageable_bytes"] = 250 << 20
    note = _pageable_note(view)
    assert note["pageable_worth_pinning"] and "cudaMallocHost" in note["pageable_text"]
    assert "pin_memory" not in note["pageable_text"]


def test_an_input_bound_verdict_never_advises_a_larger_batch(views):
    for name, doc in views.items():
        for _, node in _nodes(doc):
            if node["verdict"]["code"] == "input_bound":
                assert not [t for t in _advice(node) if LARGER_BATCH.search(t)], name


def test_one_memory_tip_per_report(views):
    for name, doc in views.items():
        tips = {t for t in _advice(doc) if "GPU memory headroom" in t or "memory nearly full" in t}
        assert len(tips) <= 1, (name, tips)


def test_a_step_selection_says_how_much_of_the_capture_it_covers(views):
    sx = views.get("saxpy_mpi_a100_2022.2.sqlite")
    if sx is None:
        pytest.skip("../shared/traces not present")
    cover = sx["window"]["coverage"]
    assert (cover["kernels"], cover["capture_kernels"]) == (3, 5)
    assert cover["kernel_ms"] == pytest.approx(53.2, abs=0.05)
    assert cover["capture_kernel_ms"] == pytest.approx(88.6, abs=0.05)
    assert "2 kernels (35.4 ms) are left out" in cover["text"]
    for name, doc in views.items():
        w = doc["window"]
        if "coverage" in w and w["coverage"]["capture_kernels"] > w["coverage"]["kernels"]:
            assert "left out" in w["coverage"]["text"], name


def test_no_high_confidence_beside_a_warning_that_lowers_it(views):
    for name, doc in views.items():
        if any(q.get("severity") == "warning" for q in doc["data_quality"]):
            assert doc["verdict"]["confidence"] != "high", name
