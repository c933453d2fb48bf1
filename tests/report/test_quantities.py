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
from nsys_diag.report.quantities import METRIC_PATHS, attach_paths, resolve, same_value
from nsys_diag.synth import PRESETS, preset, programs, write_nsys_sqlite
from nsys_diag.synth.kineto_writer import write_kineto_json
from nsys_diag.synth.replay_cases import REPLAY_CASES
from tests.conftest import SHARED_TRACES

REPO = Path(__file__).resolve().parents[2]


KINETO_CASES = ("startup_dominated", "no_nvtx", "cuda_graphs", "cutlass_pageable",
                "dataloader_workers", "worked_example", "multi_gpu", "launch_bound")
"""Generated runs also written as PyTorch profiler traces (the Kineto wording of the texts)."""


def _inputs(tmp: Path) -> list[Path]:
    """Every sample: the shipped samples (nsys and Kineto), every synth preset and issue case,
    every program case (nsys, ncu), every replay case, Kineto renderings of a few generated runs,
    the Kineto test traces and the shared real exports."""
    out = sorted((REPO / "sample_traces").glob("*.sqlite")) + sorted(
        (REPO / "sample_traces").glob("*.json.gz"))
    for name in programs.CASES:
        ext = ".csv" if name in programs.NCU_CASES else ".sqlite"
        out.append(programs.write_case(name, tmp / f"{name}{ext}"))
    out += [write_nsys_sqlite(tmp / f"preset_{n}.sqlite", preset(n)) for n in PRESETS]
    out += [write_nsys_sqlite(tmp / f"replay_{n}.sqlite", f()) for n, f in REPLAY_CASES.items()]
    out += [write_kineto_json(tmp / f"kineto_{n}.pt.trace.json",
                              preset(n) if n in PRESETS else programs.scenario(n))
            for n in KINETO_CASES]
    out += sorted((REPO / "tests" / "loaders" / "kineto_traces").glob("*.json.gz"))
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


_NUMBER = re.compile(r"(?<![\w.\-=<>/])(\d[\d,]*(?:\.\d+)?)(?![\w.])")
"""A number a text states: not part of a word or identifier (``int8``, ``fp16``), of a code
fragment (``num_workers>0``, ``prefetch_factor>=2``) or of a longer number."""


def _stated(row: dict) -> set[str]:
    """The ways a quantity can be written in a text: a share as a percentage, ns as ms or µs,
    ms and counts at the precisions the texts use (grouped or not), a text's own numbers."""
    v, unit = row.get("value"), row.get("unit")
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return set(re.findall(r"\d[\d,]*(?:\.\d+)?", str(v or "")))
    out = set()
    if unit == "share":
        for d in (0, 1):
            out.add(f"{100 * v:.{d}f}")
    elif unit == "ns":
        for d in (0, 1, 2, 3):
            out |= {f"{v / 1e6:.{d}f}", f"{v / 1e3:.{d}f}", f"{v / 1e3:g}"}
    else:
        for d in (0, 1, 2):
            out |= {f"{v:,.{d}f}", f"{v:.{d}f}"}
    return out


def _quantities(rows: list[dict]) -> set[str]:
    return set().union(*(_stated(r) for r in rows)) if rows else set()


def _guidance(text: str) -> set[str]:
    """The documented constants of the advice rule whose wording ``text`` is (``Rule.constants``:
    general guidance such as "multiples of 8", no measurement of the trace)."""
    from nsys_diag.analyses.diagnosis.advice import rule_constants
    return rule_constants(text)


def _unearned(text: str, stated: set[str]) -> list[str]:
    allowed = stated | _guidance(text)
    return [n for n in _NUMBER.findall(text) if n not in allowed
            and n.rstrip(",") not in allowed]


def test_every_number_in_a_finding_headline_and_advice_is_one_of_its_quantities(views):
    """A finding's headline and advice state its own evidence rows (shares, ms, counts; its
    detail text, quoted from ``gaps.by_cause_detail``, is one of its rows too) or the documented
    constants of the advice rule."""
    checked = 0
    for name, doc in views.items():
        for _, node in _nodes(doc):
            for f in node.get("findings") or []:
                stated = _quantities(f["evidence"])
                if f.get("share_of_window") is not None:
                    stated |= _stated({"value": f["share_of_window"], "unit": "share"})
                for text in [f.get("headline") or ""] + [a["text"] for a in f.get("advice") or []]:
                    checked += 1
                    assert not _unearned(text, stated), (name, f["code"], _unearned(text, stated),
                                                         text)
    assert checked > 100


def test_every_number_in_the_verdict_texts_is_one_of_its_quantities(views):
    """The verdict's headline, recommendations, advice and scale advice state its evidence rows,
    the rows of the findings its advice is drawn from, and ``verdict.quantities`` (the scale
    advice's projection), each of which has a path into the same document."""
    for name, doc in views.items():
        for _, node in _nodes(doc):
            v = node["verdict"]
            rows = list(v["evidence"]) + [r for f in node.get("findings") or []
                                          for r in f["evidence"]]
            for q in v.get("quantities") or []:
                assert same_value(resolve(doc, q["path"]), q["value"]), (name, q)
            stated = _quantities(rows + list(v.get("quantities") or []))
            texts = [v["headline"], v["scale_advice"], *v["recommendations"],
                     *(a["text"] for a in v["advice"])]
            for text in texts:
                assert not _unearned(text, stated), (name, v["code"], _unearned(text, stated),
                                                     text)


def test_a_number_no_row_states_is_caught():
    rows = [{"metric": "gaps.launch_share", "value": 0.72, "unit": "share"}]
    assert _unearned("72% of the window in short gaps", _quantities(rows)) == []
    assert _unearned("73% of the window in short gaps; 19.8 ms mean step",
                     _quantities(rows)) == ["73", "19.8"]
    assert _unearned("DataLoader(num_workers>0, prefetch_factor>=2) on int8", set()) == []


def test_the_scale_projection_is_a_list_of_quantities_with_paths():
    node = {"scaling": [{"gpus": 1, "step_ms": 100.0, "efficiency": 1.0, "exposed_ms": 0.0},
                        {"gpus": 2, "step_ms": 120.0, "efficiency": 0.83, "exposed_ms": 20.0}],
            "verdict": {"scale_advice": "The weak-scaling formula projects 2 GPUs 120 ms/step "
                                        "(83% efficiency, 20.0 ms exposed communication).",
                        "evidence": []},
            "findings": []}
    q = attach_paths(node)["verdict"]["quantities"]
    assert [(r["name"], r["path"]) for r in q] == [
        ("scaling.gpus", "/scaling/1/gpus"), ("scaling.step_ms", "/scaling/1/step_ms"),
        ("scaling.efficiency", "/scaling/1/efficiency"),
        ("scaling.exposed_ms", "/scaling/1/exposed_ms")]
    assert not _unearned(node["verdict"]["scale_advice"], _quantities(q))
    node["verdict"]["scale_advice"] = "More GPUs will not help."
    node["verdict"].pop("quantities")
    assert "quantities" not in attach_paths(node)["verdict"]


# ----------------------------------------------------------------------- cross-section claims
def test_linear_scaling_is_claimed_only_beside_hidden_communication(views):
    for name, doc in views.items():
        for _, node in _nodes(doc):
            texts = [node["verdict"]["scale_advice"]] + _advice(node)
            if any("linearly while" in t or "roughly linearly" in t for t in texts):
                comm = node.get("communication") or {}
                assert comm.get("available") and (comm.get("overlap_share") or 0) > 0, name


def test_pinned_memory_advice_needs_a_megabyte_or_a_percent_of_the_window(views):
    """Pinned-memory advice only when the pageable copies move ≥ 1 MiB per step (per second
    without steps) or run ≥ 1% of the window — both stated in the transfers section."""
    seen = 0
    for name, doc in views.items():
        th = doc["thresholds"]
        for _, node in _nodes(doc):
            pin = [t for t in _advice(node) if re.search(r"pinned|pin_memory|cudaMallocHost", t)]
            if not pin:
                continue
            seen += 1
            t = node["transfers"]
            rate = t.get("pageable_bytes_per_step")
            rate = t.get("pageable_bytes_per_s") if rate is None else rate
            assert ((rate or 0) >= th["pageable_copy_min_bytes"]
                    or (t.get("pageable_window_share") or 0)
                    >= th["pageable_copy_min_window_share"]), (name, pin, t)
    assert seen  # the generated pageable-copy cases earn it


def test_pageable_copy_time_is_in_the_transfers_section(views):
    for name, doc in views.items():
        for _, node in _nodes(doc):
            t = node["transfers"]
            if not t.get("available"):
                continue
            assert t["pageable_time_ms"] >= 0 and (t["pageable_count"] > 0
                                                   or t["pageable_time_ms"] == 0), name
            share = t["pageable_window_share"]
            assert share is None or share == pytest.approx(
                min(t["pageable_time_ms"] / doc["window"]["duration_ms"], 1.0), rel=1e-6) \
                or node is not doc, name


def test_a_few_bytes_of_pageable_copies_are_not_told_to_pin():
    view = {"transfers": {"pageable_count": 10, "pageable_bytes": 40},
            "thresholds": {"pageable_copy_min_bytes": 1 << 20}, "program": {"framework": "cuda"}}
    note = _pageable_note(view)
    assert not note["pageable_worth_pinning"] and "pin it" not in note["pageable_text"]
    view["transfers"]["pageable_bytes"] = 250 << 20
    note = _pageable_note(view)
    assert note["pageable_worth_pinning"] and "cudaMallocHost" in note["pageable_text"]
    assert "pin_memory" not in note["pageable_text"]


def test_few_bytes_that_take_a_percent_of_the_window_are_told_to_pin():
    view = {"transfers": {"pageable_count": 5000, "pageable_bytes": 40_000,
                          "pageable_window_share": 0.03},
            "thresholds": {"pageable_copy_min_bytes": 1 << 20,
                           "pageable_copy_min_window_share": 0.01},
            "program": {"framework": "cuda"}}
    note = _pageable_note(view)
    assert note["pageable_worth_pinning"] and "3.0% of the window" in note["pageable_text"]
    view["transfers"]["pageable_window_share"] = 0.002
    note = _pageable_note(view)
    assert not note["pageable_worth_pinning"] and "under 1.05 MB and 1.0% of the window" in \
        note["pageable_text"]


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
