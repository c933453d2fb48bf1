"""One timeline, two formats: every generated case whose timeline needs nothing a PyTorch profiler
trace lacks gives the same verdict, step count and phase shares (±1 pp) from its nsys export and
from its Kineto trace; the cases that need more are named by ``kineto_lacks``."""
from __future__ import annotations

import json

import pytest

from conftest import SAMPLE_TRACES
from nsys_diag import synth
from nsys_diag.app.analyze import analyze_path
from nsys_diag.synth import programs
from nsys_diag.synth.kineto_writer import KINETO_SCHEMAS, kineto_lacks, write_kineto_json
from nsys_diag.synth.program_cases import AFTER_WRITE
from nsys_diag.synth.samples import KINETO_SAMPLES
from nsys_diag.synth.timeline import build_timeline


def _scenarios():
    out = {name: synth.preset(name) for name in synth.PRESETS}
    out.update({name: programs.scenario(name) for name in programs.SCENARIOS
                if name not in AFTER_WRITE})
    return out


SCENARIOS = _scenarios()
PORTABLE = [n for n, sc in SCENARIOS.items() if not kineto_lacks(build_timeline(sc))]


def _summary(view: dict) -> tuple:
    steps = view.get("steps") or {}
    phases = view.get("phases") if isinstance(view.get("phases"), list) else []
    return (view["verdict"]["code"], steps.get("count"),
            {p["name"]: 100 * (p.get("share") or 0) for p in phases})


def test_enough_cases_are_portable():
    assert len(PORTABLE) >= 12, PORTABLE
    lacking = {n: kineto_lacks(build_timeline(sc)) for n, sc in SCENARIOS.items()
               if n not in PORTABLE}
    assert "GPU metrics" in lacking["memory_bound"]
    assert "OS-runtime calls" in lacking["host_io_stalls"]


@pytest.mark.parametrize("schema", KINETO_SCHEMAS)
@pytest.mark.parametrize("name", PORTABLE)
def test_same_diagnosis_in_both_formats(tmp_path, name, schema):
    sc = SCENARIOS[name]
    nsys = _summary(analyze_path(str(synth.write_nsys_sqlite(tmp_path / "t.sqlite", sc))))
    kineto = _summary(analyze_path(str(write_kineto_json(tmp_path / "t.pt.trace.json", sc,
                                                         schema))))
    assert kineto[:2] == nsys[:2]
    assert kineto[2].keys() == nsys[2].keys()
    for phase, share in nsys[2].items():
        assert abs(kineto[2][phase] - share) <= 1.0, (phase, kineto[2][phase], share)


@pytest.mark.parametrize("schema", KINETO_SCHEMAS)
def test_writer_schemas(tmp_path, schema):
    sc = synth.preset("tiny_two_kernels")
    doc = json.loads(write_kineto_json(tmp_path / "t.json", sc, schema=schema).read_text())
    cats = {e.get("cat") for e in doc["traceEvents"]}
    assert doc["deviceProperties"][0]["numSms"] > 0
    if schema == "legacy":
        assert {"Kernel", "Runtime", "async"} <= cats and "baseTimeNanoseconds" not in doc
        assert all(isinstance(e["ts"], int) for e in doc["traceEvents"] if "ts" in e)
    else:
        assert {"kernel", "cuda_runtime", "ac2g", "gpu_user_annotation"} <= cats
    gz = write_kineto_json(tmp_path / "t.json.gz", sc, schema=schema)
    assert gz.read_bytes()[:2] == b"\x1f\x8b"
    with pytest.raises(ValueError):
        write_kineto_json(tmp_path / "x.json", sc, schema="1.7")


@pytest.mark.parametrize("fname,name,schema,ov", KINETO_SAMPLES)
def test_committed_kineto_sample_equals_regeneration(tmp_path, fname, name, schema, ov):
    committed = SAMPLE_TRACES / fname
    assert committed.exists(), f"{committed} missing: run `make samples`"
    fresh = write_kineto_json(tmp_path / fname, synth.preset(name, **ov), schema)
    assert committed.read_bytes() == fresh.read_bytes(), "run `make samples`"
    assert committed.stat().st_size <= 512 * 1024 and f"`{fname}`" in (
        SAMPLE_TRACES / "README.md").read_text(encoding="utf-8")
    view = analyze_path(str(committed))
    assert view["verdict"]["code"] == synth.preset(name, **ov).expected_verdict
