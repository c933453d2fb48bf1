"""The report contract (report/contract.py): docs and schema agree with it; aliases; defaults."""
from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from nsys_diag.report import contract
from nsys_diag.report.clean import DEFAULT_LIMITS, Limits, clean_view
from nsys_diag.report.json_out import load_schema, schema_path

ROOT = Path(__file__).resolve().parents[2]


def test_committed_docs_key_reference_equals_the_generated_one():
    text = (ROOT / "docs" / "JSON.md").read_text(encoding="utf-8")
    assert contract.docs_with_reference(text) == text
    assert contract.key_reference() in text


def open_objects(node, where="#") -> list[str]:
    """The places in a JSON Schema of objects that allow keys they do not name."""
    out: list[str] = []
    if isinstance(node, list):
        for i, n in enumerate(node):
            out += open_objects(n, f"{where}/{i}")
    elif isinstance(node, dict):
        types = node.get("type")
        is_object = types == "object" or (isinstance(types, list) and "object" in types)
        if (is_object or "properties" in node) and "additionalProperties" not in node:
            out.append(where)
        for key, sub in node.items():
            if isinstance(sub, (dict, list)) and key not in ("enum", "const", "required"):
                out += open_objects(sub, f"{where}/{key}")
    return out


def test_every_object_of_the_analysis_schema_is_closed_or_a_typed_map():
    assert open_objects(contract.json_schema()) == []
    maps = [contract.json_schema()["properties"]["thresholds"],
            contract.json_schema()["properties"]["trace"]["properties"]["tables"]]
    assert all(isinstance(m["additionalProperties"], dict) for m in maps)


def test_every_contract_key_is_in_the_json_schema():
    schema = load_schema()
    assert list(schema["properties"]) == list(contract.SPEC)
    steps = schema["$defs"]["steps"]["oneOf"][1]["properties"]
    assert "boundary" in steps and "per_step" in steps


def test_the_contract_takes_each_declared_section_from_its_declaration():
    """A section declared beside its analysis (``Declaration.spec``) is the contract's spec of
    that key, the very object; the report declares the rest, in ``SECTION_ORDER``'s order."""
    from nsys_diag.analyses.engine.declaration import section_specs
    from nsys_diag.report.contract_sections import DECLARED, SECTION_ORDER

    declared = section_specs()
    assert list(contract.SPEC) == list(SECTION_ORDER)
    for key, own in SECTION_ORDER.items():
        if own is DECLARED:
            assert contract.SPEC[key] is declared[key], key
        elif key != "processes":
            assert contract.SPEC[key] is own and key not in declared, key


def test_the_suite_registers_every_declared_section_the_contract_needs():
    """The contract takes the sections declared by the modules the suite imports (no walk of the
    package); importing every module of the analyses declares no other section."""
    import subprocess
    import sys

    code = ("from nsys_diag.report import contract\n"
            "from nsys_diag.analyses.engine.declaration import section_specs\n"
            "before = section_specs(walk=False)\n"
            "after = section_specs()\n"
            "assert before == after, sorted(set(after) - set(before))\n"
            "print(len(after))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert int(out.stdout) >= 15


def test_assembling_rejects_a_section_without_a_spec_with_two_or_unplaced():
    from nsys_diag.model.schema_types import Int

    a, b = Int(), Int()
    assert contract.assemble_spec({"x": None, "y": a}, {"x": b}) == {"x": b, "y": a}
    with pytest.raises(ValueError, match="no spec"):
        contract.assemble_spec({"x": None}, {})
    with pytest.raises(ValueError, match="twice"):
        contract.assemble_spec({"x": a}, {"x": b})
    with pytest.raises(ValueError, match="missing from SECTION_ORDER"):
        contract.assemble_spec({"x": a}, {"z": b})


def test_committed_schema_equals_the_generated_one():
    assert schema_path().read_text(encoding="utf-8") == contract.schema_text()
    assert load_schema() == contract.json_schema()


def test_every_committed_generated_file_equals_the_generated_one():
    texts = contract.generated_files(ROOT / "docs" / "JSON.md")
    names = {p.name for p in texts}
    assert {"JSON.md", "analysis.schema.json", "batch_index.schema.json", "compare.schema.json",
            "inspect.schema.json"} <= names
    stale = [p.name for p, text in texts.items()
             if not p.is_file() or p.read_text(encoding="utf-8") != text]
    assert not stale, f"run `python -m nsys_diag.report.contract --write`: {stale}"
    for path in texts:
        if path.suffix == ".json":
            schema = json.loads(path.read_text(encoding="utf-8"))
            jsonschema.Draft202012Validator.check_schema(schema)
            assert open_objects(schema) == [], path.name  # every object closed or a typed map


def test_write_changes_nothing_unless_every_generated_file_generates(tmp_path, monkeypatch):
    docs = tmp_path / "JSON.md"
    docs.write_text("# JSON\n", encoding="utf-8")
    before = {p: p.read_bytes() for p in contract.generated_files(docs) if p != docs}

    def broken():
        raise KeyError("a spec that does not generate")

    monkeypatch.setattr(contract, "inspect_schema", broken)  # generated after the docs
    with pytest.raises(KeyError):
        contract.main(["--write", str(docs)])
    assert docs.read_text(encoding="utf-8") == "# JSON\n"
    assert {p: p.read_bytes() for p in before} == before
    monkeypatch.undo()
    assert contract.write_generated(docs) == [docs]  # the committed schemas are up to date
    assert contract.key_reference() in docs.read_text(encoding="utf-8")


def test_schema_checks_types_ranges_and_section_forms():
    schema = load_schema()

    def ok(key, value):
        """Whether ``value`` is a valid top-level ``key`` of the analysis JSON."""
        return jsonschema.Draft202012Validator(dict(schema["properties"][key], **{"$defs": schema["$defs"]})
                                               ).is_valid(value)

    row = {"device_id": 0, "peak_bytes": 10, "device_bytes": 20, "peak_share": 0.5, "peak_ts_ns": 5,
           "preexisting_bytes": 0, "alloc_count": 1, "free_count": 0}

    def memory(*rows, **extra):
        return {"available": True, "per_device": list(rows), "advice": None, "advice_code": "ok",
                "max_peak_share": 0.5, **extra}

    assert ok("memory", memory(row))
    assert not ok("memory", memory(dict(row, peak_share=1.5)))
    assert not ok("memory", memory(dict(row, peak_bytes="10")))
    assert not ok("memory", memory(row, new_key=1))  # closed: an undeclared key fails
    assert not ok("memory", memory(dict(row, new_key=1)))
    assert ok("memory", None) and ok("memory", contract.unavailable("why"))
    assert not ok("gpu", None)  # only the sections declared null=True may be null
    assert not ok("tensor_cores", {"available": True})  # an available section has all its keys
    assert not ok("verdict", dict.fromkeys(("code", "headline"), "nope"))


def test_unavailable_sections_take_the_contract_reason_and_hint():
    v = contract.normalize({"roofline": None, "memory": {"available": False, "reason": "r"}})
    assert v["roofline"]["available"] is False
    assert v["roofline"]["reason"] == contract.SPEC["roofline"].reason
    assert v["memory"]["reason"] == "r" and v["memory"]["hint"] == contract.SPEC["memory"].hint
    assert v["steps"]["per_step"] == [] and v["verdict"]["code"] == "insufficient_data"
    assert contract.unavailable("why", "how") == {"available": False, "reason": "why", "hint": "how"}


def test_apply_aliases_copies_canonical_values_and_derives_report_keys():
    data = {"available": True, "gpu": "H100", "total_time_ns": 400,
            "kernels": [{"name": "void gemm<float>(int)", "time_ns": 100, "ai_dram": 2.5,
                         "achieved_flop_per_s": 1e12, "sol_compute_pct": 80.0,
                         "sol_memory_pct": 10.0, "dominant_precision": "fp16"}]}
    out = contract.apply_aliases("roofline", data)
    k = out["kernels"][0]
    assert out["device"] == "H100"
    assert (k["arithmetic_intensity"], k["achieved_flops_per_s"], k["sm_pct"], k["mem_pct"],
            k["precision"]) == (2.5, 1e12, 80.0, 10.0, "fp16")
    assert k["time_share"] == 0.25 and k["short_name"] == "gemm"
    joined = contract.apply_aliases("roofline", {"available": True, "gpu": None, "total_time_ns": 400,
                                                 "kernels": [{"name": "k", "time_ns": 100,
                                                              "timeline_share": 0.9}]})
    assert joined["kernels"][0]["time_share"] == 0.9
    na = {"available": False, "reason": "x", "hint": ""}
    assert contract.apply_aliases("roofline", dict(na)) == na


def test_list_caps_come_from_the_contract():
    view = {"kernels": [{}] * 500, "gaps": {"top": [{}] * 500, "histogram": [{}] * 900},
            "verdict": {"evidence": [{}] * 300}, "roofline": {"kernels": [{}] * 300, "notes": [""] * 300}}
    small = Limits(max_rows=7, max_gaps=5, max_list=3, max_bins=4)
    out = clean_view(view, small)
    assert len(out["kernels"]) == 7 and len(out["gaps"]["top"]) == 5
    assert len(out["gaps"]["histogram"]) == 4 and len(out["verdict"]["evidence"]) == 3
    assert len(out["roofline"]["kernels"]) == 7 and len(out["roofline"]["notes"]) == 7
    assert len(view["kernels"]) == 500  # input untouched
    assert len(clean_view(view, DEFAULT_LIMITS)["kernels"]) == DEFAULT_LIMITS.max_rows


def test_a_section_alias_keeps_its_place_in_key_order():
    data = {"available": True, "source": "ncu", "memory_level": "DRAM", "gpu": "A100", "kernels": []}
    out = contract.apply_aliases("roofline", data)
    assert list(out) == ["available", "source", "device", "memory_level", "gpu", "kernels"]
    assert out["device"] == "A100"
