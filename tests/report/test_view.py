"""The view-model: exact docs/JSON.md shape, JSON Schema validity, determinism, privacy."""
from __future__ import annotations

import json
import math

import jsonschema
import pytest

import handframes as hf
from conftest import shared_trace
from handframes import MS
from nsys_diag.analyses.suite import run_suite
from nsys_diag.model.bundle import TraceBundle, TraceMeta
from nsys_diag.model.options import AnalyzeOptions
from nsys_diag.report.json_out import load_schema, schema_path, to_json
from nsys_diag.report.view import build_view, jsonable

GEN = "2026-11-30T00:00:00Z"
WORKED = [("data_loading", 420 * MS), ("forward", 180 * MS), ("backward", 150 * MS),
          ("optimizer_step", 30 * MS), ("logging", 20 * MS)]
VALIDATOR = jsonschema.Draft202012Validator(load_schema())


def _worked_bundle(**kw) -> TraceBundle:
    nv = hf.steps_and_phases(6, WORKED)
    kr = []
    for i in range(6):
        f = 10 * MS + i * 800 * MS + 420 * MS
        kr += [dict(start_ns=f + j * 10 * MS, end_ns=f + j * 10 * MS + 8 * MS, launch_start_ns=f + j * 10 * MS,
                    name="sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64")
               for j in range(33)]
    b = hf.bundle(nvtx=hf.nvtx(nv), kernels=hf.kernels(kr), gpus=hf.gpus(1), **kw)
    b.meta.environment["HF_TOKEN"] = "hf_SECRET_VALUE"
    b.meta.host["hostname"] = "secret-host"
    b.meta.command_line = "python train.py --token hf_SECRET_VALUE"
    return b


def _view(bundle, **opts):
    options = AnalyzeOptions(**opts)
    return build_view(bundle.meta, run_suite(bundle, options), generated_at=GEN, options=options)


def _assert_valid(view):
    errors = sorted(VALIDATOR.iter_errors(view), key=lambda e: list(e.path))
    assert not errors, [(list(e.path), e.message[:200]) for e in errors[:5]]


def test_schema_file_is_a_valid_draft_2020_12_schema_shipped_in_the_package():
    schema = json.loads(schema_path().read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$schema"].endswith("2020-12/schema")
    assert "nsys_diag" in schema_path().parts


def test_worked_view_has_every_documented_section_and_validates():
    v = _view(_worked_bundle())
    _assert_valid(v)
    for key in ("schema_version", "tool", "generated_at", "trace", "window", "steps", "phases", "gpu",
                "gaps", "timeline", "kernels", "kernels_total", "tensor_cores", "transfers",
                "gpu_metrics", "throughput", "communication", "memory", "roofline", "processes",
                "verdict", "data_quality", "thresholds", "capture_hints"):
        assert key in v, key
    assert v["schema_version"] == 1 and v["generated_at"] == GEN
    assert v["window"]["source"] == "steps" and v["window"]["duration_ms"] == pytest.approx(4000.0)
    assert [p["name"] for p in v["phases"]][-1] == "other"
    assert sum(p["share"] for p in v["phases"]) == pytest.approx(1.0)
    assert v["gpu"]["available"] and 0 <= v["gpu"]["utilization"] <= 1
    assert v["verdict"]["code"] == "input_bound"
    assert v["steps"]["count"] == 6 and v["steps"]["warmup"] == [0]
    assert v["kernels"][0]["count"] == 5 * 33 and v["kernels_total"] == 1
    assert v["thresholds"]["min_gap_ns"] == 1000
    assert v["gpu_metrics"]["available"] is False and v["gpu_metrics"]["hint"]


def test_timeline_strips_are_binned_and_bounded():
    v = _view(_worked_bundle())
    tl = v["timeline"]
    assert tl["available"] and tl["bin_ns"] >= 1
    strips = tl["strips"]
    assert strips[0]["label"] == "representative"
    for s in strips:
        assert all(len(d["busy"]) <= 200 for d in s["devices"])
        assert all(0.0 <= x <= 1.0 for d in s["devices"] for x in d["busy"])
        assert [p["name"] for p in s["phases"]] == [n for n, _ in WORKED]
        # busy fraction: 33 × 8 ms of kernels in an 800 ms step
        busy = s["devices"][0]["busy"]
        assert sum(busy) * tl["bin_ns"] / MS == pytest.approx(264.0, rel=0.01)


def test_json_is_deterministic_sorted_and_rejects_nan():
    b = _worked_bundle()
    a = to_json(_view(b))
    assert a == to_json(_view(b))
    assert json.loads(a) == json.loads(to_json(json.loads(a)))
    keys = list(json.loads(a).keys())
    assert keys == sorted(keys)
    with pytest.raises(ValueError):
        to_json({"x": float("nan")})


def test_jsonable_converts_numpy_and_non_finite():
    np = pytest.importorskip("numpy")
    out = jsonable({"a": np.int64(3), "b": np.float32(0.5), "c": float("inf"), "d": (1, 2),
                    "e": np.array([1.0, np.nan]), "f": np.bool_(True)})
    assert out == {"a": 3, "b": 0.5, "c": None, "d": [1, 2], "e": [1.0, None], "f": True}
    assert isinstance(out["a"], int) and isinstance(out["f"], bool)


def test_privacy_path_host_and_environment():
    v = _view(_worked_bundle())
    text = to_json(v)
    assert v["trace"]["path"] == "hand.sqlite"
    assert "secret-host" not in text and "hf_SECRET_VALUE" not in text and "/tmp/" not in text
    v = _view(_worked_bundle(), include_host_info=True)
    text = to_json(v)
    assert v["trace"]["path"] == "/tmp/hand.sqlite" and v["trace"]["host"]["hostname"] == "secret-host"
    assert "HF_TOKEN" not in text  # the environment is never rendered
    _assert_valid(v)


def test_hostile_names_survive_as_data():
    evil = "</script><b>x</b>\x1b[31m"
    rows = hf.steps_and_phases(4, [(evil, 10 * MS), ("forward", 10 * MS)])
    b = hf.bundle(nvtx=hf.nvtx(rows), kernels=hf.kernels([dict(start_ns=15 * MS, end_ns=19 * MS,
                                                                launch_start_ns=15 * MS, name=evil)]))
    v = _view(b)
    _assert_valid(v)
    assert v["phases"][0]["name"] == evil
    assert json.loads(to_json(v))["phases"][0]["name"] == evil


def test_empty_bundle_view_is_valid_and_says_why():
    b = TraceBundle(meta=TraceMeta(path="/x/empty.sqlite", format="nsys-sqlite"))
    v = _view(b)
    _assert_valid(v)
    assert v["verdict"]["code"] == "insufficient_data"
    assert v["steps"]["available"] is False and v["steps"]["reason"]
    assert v["gpu"]["available"] is False and v["gaps"]["available"] is False
    assert v["phases"] == [] and v["phases_status"]["available"] is False
    assert v["capture_hints"]
    assert v["scope"]["pid"] is None


def test_processes_table():
    b = hf.two_process_bundle()
    v = _view(b)
    _assert_valid(v)
    assert [p["pid"] for p in v["processes"]] == [100, 101]
    assert [p["is_headline"] for p in v["processes"]] == [False, True]
    assert v["scope"] == {"pid": 101, "name": "rank1", "devices": [1], "process_count": 2,
                          "headline_rule": v["scope"]["headline_rule"], "headline_by": "step_time"}
    assert [g["id"] for g in v["trace"]["gpus"]] == [0, 1]


# ------------------------------------------------------------------------------ generated + real
synth = pytest.importorskip("nsys_diag.synth")


@pytest.mark.parametrize("name", ["worked_example", "multi_gpu", "no_cuda", "inference"])
def test_preset_views_validate(tmp_path, name):
    from nsys_diag.app.analyze import analyze_path

    path = synth.write_preset(tmp_path / f"{name}.sqlite", name)
    v = analyze_path(str(path), generated_at=GEN)
    _assert_valid(v)
    assert v["verdict"]["code"] == synth.expected(name)["verdict"]
    for x in _walk(v):
        assert not (isinstance(x, float) and not math.isfinite(x))


def _walk(obj):
    if isinstance(obj, dict):
        for v in obj.values():
            yield from _walk(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _walk(v)
    else:
        yield obj


@pytest.mark.realtrace
@pytest.mark.parametrize("name", ["fastvideo_train_2xh100_2026.2", "nvfuser_matmul_h200_2024.6",
                                  "saxpy_mpi_a100_2022.2", "mordred_rtx6000_2021",
                                  "centerformer_nvtx_only_2022.4", "dynamicvit_no_cuda_tables"])
def test_real_trace_views_validate(name):
    from nsys_diag.app.analyze import analyze_path

    v = analyze_path(str(shared_trace(f"nsys/{name}.sqlite")), generated_at=GEN)
    _assert_valid(v)
    to_json(v)  # no NaN anywhere


def test_an_export_without_nvtx_warns_once_that_steps_cannot_be_found(tmp_path):
    import json

    from click.testing import CliRunner

    from nsys_diag.cli import main
    from nsys_diag.synth import programs

    """'no NVTX ranges' and 'no steps found: no NVTX ranges' say the same: the view keeps the
    first (the confidence counts it once either way)."""
    db = programs.write_case("host_writes", tmp_path / "h.sqlite")
    js = tmp_path / "h.json"
    res = CliRunner().invoke(main, ["analyze", str(db), "--no-html", "--json", str(js)])
    assert res.exit_code == 0, res.output
    codes = [q["code"] for q in json.loads(js.read_text())["data_quality"]]
    assert "no_nvtx" in codes and "no_steps" not in codes
