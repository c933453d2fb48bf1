"""The Python API (``nsys_diag.analyze`` / ``nsys_diag.compare``, docs/api.md): the CLI's
options and outputs, the frames, the typed errors, a cheap ``import nsys_diag``."""
from __future__ import annotations

import html
import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import nsys_diag
from nsys_diag.cli import main
from nsys_diag.model.errors import EXIT_USAGE, InputError, UsageError
from nsys_diag.model.thresholds import Thresholds
from nsys_diag.model.vocabulary import GAP_CAUSES

synth = pytest.importorskip("nsys_diag.synth")
CAUSE_COLUMNS = [f"{c}_ns" for c in GAP_CAUSES]


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    d = tmp_path_factory.mktemp("api")
    return {n: synth.write_preset(d / f"{n}.sqlite", n)
            for n in ("worked_example", "healthy_tc", "multi_gpu")}


@pytest.fixture(scope="module")
def worked(traces):
    return nsys_diag.analyze(traces["worked_example"])


def test_import_and_help_stay_free_of_pandas():
    code = ("import sys, nsys_diag\n"
            "from nsys_diag.cli import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "assert callable(nsys_diag.__getattr__)\n"
            "print('pandas' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "False"


def test_the_package_exposes_the_api_lazily():
    from nsys_diag import api

    assert nsys_diag.analyze is api.analyze and nsys_diag.compare is api.compare
    assert nsys_diag.Analysis is api.Analysis and nsys_diag.Comparison is api.Comparison
    with pytest.raises(AttributeError):
        nsys_diag.no_such_name  # noqa: B018


def test_verdict_matches_the_preset_and_the_json(worked):
    v = worked.verdict
    assert v.code == synth.expected("worked_example")["verdict"] == "input_bound"
    assert v.confidence in ("high", "medium", "low") and v.headline.startswith("Input-bound")
    assert v.advice and all("text" in a for a in v.advice)
    assert any(f["code"] == "input_bound" for f in v.findings)
    assert json.loads(worked.to_json())["verdict"]["code"] == v.code
    assert "input_bound" in repr(worked)


def test_to_json_is_what_the_cli_writes(traces, tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "0")
    out = tmp_path / "a.json"
    res = CliRunner().invoke(main, ["analyze", str(traces["worked_example"]), "--json", str(out),
                                    "--no-html"], env={"SOURCE_DATE_EPOCH": "0"})
    assert res.exit_code == 0, res.output
    assert nsys_diag.analyze(traces["worked_example"]).to_json() == out.read_text()


def test_steps_and_phases_frames(worked):
    steps = worked.steps
    assert list(steps.columns[:6]) == ["index", "start_ns", "end_ns", "duration_ns", "kind",
                                       "kernel_count"]
    assert (steps["duration_ns"] == steps["end_ns"] - steps["start_ns"]).all()
    assert str(steps["start_ns"].dtype) == "int64"
    analysed = steps[steps["kind"].isin(["normal", "outlier"])]
    assert len(analysed) == json.loads(worked.to_json())["steps"]["analysed_count"] == 10
    assert analysed["duration_ns"].median() == 800_000_000
    assert steps.loc[0, "kind"] == "warmup"
    phases = worked.phases.set_index("name")
    assert phases.loc["data_loading", "share"] == pytest.approx(0.525, abs=1e-6)
    assert phases.loc["data_loading", "canonical"] == "data"
    assert (phases["pid"] == worked.headline_pid).all()


def test_kernels_frame_holds_every_name(worked):
    k = worked.kernels
    view = json.loads(worked.to_json())
    assert len(k) == view["kernels_total"] == 8
    assert set(k["name"]) >= {r["name"] for r in view["kernels"]}
    assert k["total_ns"].sum() > 0 and k["share"].sum() == pytest.approx(1.0)


def test_gaps_frame_one_row_per_interval(worked):
    g = worked.gaps
    view = json.loads(worked.to_json())
    assert list(g.columns[:5]) == ["start_ns", "end_ns", "duration_ns", "device_id", "cause"]
    assert CAUSE_COLUMNS == [c for c in g.columns if c in CAUSE_COLUMNS]
    assert len(g) == view["gaps"]["count"] == 1201
    assert g["duration_ns"].sum() / 1e6 == pytest.approx(view["gaps"]["total_ms"])
    assert (g[CAUSE_COLUMNS].sum(axis=1) == g["duration_ns"]).all()  # every ns has one cause
    assert (g["start_ns"].diff().dropna() >= 0).all()
    # the cause column is the largest cause of each gap; by cause, the totals of the JSON
    largest = g[CAUSE_COLUMNS].to_numpy().argmax(axis=1)
    assert list(g["cause"].astype(str)) == [GAP_CAUSES[i] for i in largest]
    for c in GAP_CAUSES:
        assert g[f"{c}_ns"].sum() / 1e6 == pytest.approx(view["gaps"]["by_cause"][c], abs=1e-6)
    longest = g.sort_values("duration_ns", ascending=False, kind="stable").iloc[0]
    top = view["gaps"]["top"][0]
    assert (int(longest["start_ns"]), str(longest["cause"])) == (top["start_ns"], top["cause"])


def test_gaps_of_two_gpus_and_processes(traces):
    a = nsys_diag.analyze(traces["multi_gpu"])
    g = a.gaps
    assert g["device_id"].nunique() >= 2 and (g[CAUSE_COLUMNS].sum(axis=1) == g["duration_ns"]).all()
    pids = {int(p["pid"]) for p in json.loads(a.to_json())["processes"]}
    assert len(pids) == 2 and set(a.steps["pid"]) == set(g["pid"]) == pids
    assert a.headline_pid in pids


def test_markdown_html_and_jupyter(worked, tmp_path):
    md = worked.to_markdown()
    assert md.startswith("### nsys-diag: Input bound") and len(md.splitlines()) < 80
    out = tmp_path / "r.html"
    doc = worked.to_html(out)
    assert out.read_text() == doc and doc.lstrip().lower().startswith("<!doctype html")
    snippet = worked._repr_html_()
    # a compact summary that sizes to its content; the full report folded in a <details>
    summary = snippet.split("<details>", 1)[0]
    assert "input_bound" in summary and worked.verdict.headline.split(":")[0] in summary
    assert "<iframe" not in summary and "height" not in summary
    assert snippet.count("<iframe") == 1 and "<details>" in snippet
    assert html.unescape(snippet.split('srcdoc="', 1)[1].split('"></iframe>', 1)[0]) == doc


def test_options_take_the_cli_forms_and_python_values(traces):
    t = traces["worked_example"]
    by_text = nsys_diag.analyze(t, steps="2:5", window="0:1000s", memory_budget="4G")
    by_value = nsys_diag.analyze(t, steps=(2, 5), window=(0, 10**12), memory_budget=4 * 2**30)
    for a in (by_text, by_value):
        assert json.loads(a.to_json())["steps"]["analysed_count"] == 4
    assert by_text.phases.equals(by_value.phases)
    open_end = nsys_diag.analyze(t, steps=(5, None))
    assert json.loads(open_end.to_json())["steps"]["analysed_count"] == 6


def test_phase_map_and_thresholds_as_dicts_files_or_objects(traces, tmp_path):
    t = traces["worked_example"]
    mapped = nsys_diag.analyze(t, phase_map={"overhead": ["data_loading"]})
    assert mapped.phases.set_index("name").loc["data_loading", "canonical"] == "overhead"
    f = tmp_path / "pm.toml"
    f.write_text('overhead = ["data_loading"]\n')
    assert nsys_diag.analyze(t, phase_map=f).phases.equals(mapped.phases)
    th = tmp_path / "th.toml"
    th.write_text("input_bound_verdict_share = 0.9\n")
    for value in (th, str(th), {"input_bound_verdict_share": 0.9},
                  Thresholds().with_overrides(input_bound_verdict_share=0.9)):
        a = nsys_diag.analyze(t, thresholds=value)
        assert json.loads(a.to_json())["thresholds"]["input_bound_verdict_share"] == 0.9
        assert a.verdict.confidence == "low"  # 52% input wait is now below the rule's bar


@pytest.mark.parametrize("kw, msg", [
    ({"window": (5, 1)}, "END must be after START"),
    ({"window": "nonsense"}, "--window"),
    ({"steps": (3, 1)}, "LAST must be"),
    ({"steps": "x"}, "--steps"),
    ({"phase_map": {"nope": ["x"]}}, "unknown phase"),
    ({"thresholds": {"no_such_threshold": 1}}, "thresholds"),
    ({"memory_budget": "lots"}, "--memory-budget"),
    ({"batch_size": 0}, "batch_size"),
    ({"gpu": "Z9000"}, "--gpu"),
])
def test_bad_options_are_usage_errors(traces, kw, msg):
    with pytest.raises(UsageError, match=msg) as err:
        nsys_diag.analyze(traces["worked_example"], **kw)
    assert err.value.exit_code == EXIT_USAGE


def test_unreadable_inputs_are_input_errors(tmp_path):
    with pytest.raises(InputError) as err:
        nsys_diag.analyze(tmp_path / "missing.sqlite")
    assert err.value.exit_code == 3
    with pytest.raises(InputError, match="directory"):
        nsys_diag.analyze(tmp_path)


def test_compare_is_what_the_cli_writes(traces, tmp_path):
    out = tmp_path / "c.json"
    base, cand = traces["worked_example"], traces["healthy_tc"]
    res = CliRunner().invoke(main, ["compare", str(base), str(cand), "--json", str(out)],
                             env={"SOURCE_DATE_EPOCH": "0"})
    assert res.exit_code == 0, res.output
    c = nsys_diag.compare(base, cand)
    assert json.loads(c.to_json()) == json.loads(out.read_text()) | {
        "generated_at": json.loads(c.to_json())["generated_at"]}
    assert c.step_time["baseline"] == pytest.approx(800.0) and c.step_time["candidate"] < 800
    assert c.gate["requested_pct"] is None and not c.regressed and c.exit_code == 0
    assert "step" in c.to_markdown().lower()
    assert c.to_html(tmp_path / "c.html").lstrip().lower().startswith("<!doctype html")
    view = c._repr_html_()
    assert "nsys-diag compare" in view.split("<details>", 1)[0] and view.count("<iframe") == 1


def test_compare_gate_regression(traces):
    c = nsys_diag.compare(traces["healthy_tc"], traces["worked_example"], fail_on_regression=5)
    assert c.gate["evaluated"] and c.regressed and c.exit_code == 5
    with pytest.raises(UsageError):
        nsys_diag.compare(traces["healthy_tc"], traces["worked_example"], fail_on_regression=-1)


def test_gpu_names_the_gpu_as_the_cli_does():
    from nsys_diag import analyze

    sample = Path(__file__).resolve().parents[1] / "sample_traces" / "worked_example.sqlite"
    a = analyze(sample, gpu="A100")
    codes = {q["code"] for q in json.loads(a.to_json())["data_quality"]}
    assert "gpu_overridden" in codes  # the trace names an H100: overriding it is said


def test_the_readme_api_example_runs_on_a_shipped_trace(tmp_path, monkeypatch):
    """The README's Python API block, as written, from a checkout (issue 28 item 5)."""
    import re

    repo = Path(__file__).resolve().parents[1]
    readme = (repo / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Python API"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    (tmp_path / "sample_traces").symlink_to(repo / "sample_traces")
    monkeypatch.chdir(tmp_path)
    scope: dict = {}
    exec(compile(code, "README.md", "exec"), scope)  # noqa: S102 - our own README
    assert scope["a"].view["window"]["source"] == "user"
    assert (tmp_path / "report.html").read_text(encoding="utf-8").lstrip().lower().startswith("<!doctype html")


def test_reports_are_written_atomically_and_never_through_a_planted_symlink(worked, tmp_path):
    """``to_html(path)`` renames a finished file into place: a symlink planted at the target is
    replaced (its target untouched), and a place that cannot be written is a ``UsageError``
    leaving no temporary file behind."""
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    out = tmp_path / "r.html"
    out.symlink_to(victim)
    doc = worked.to_html(out)
    assert victim.read_text() == "keep me"
    assert not out.is_symlink() and out.read_text() == doc
    not_a_dir = tmp_path / "plain-file"
    not_a_dir.write_text("x")
    with pytest.raises(UsageError, match="cannot write"):
        worked.to_html(not_a_dir / "r.html")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plain-file", "r.html", "victim.txt"]
