"""`nsys-diag compare`: known regression vs known noise, exit codes, JSON/Markdown/HTML outputs."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import batch_traces as bt
from nsys_diag.cli import main
from nsys_diag.model.errors import EXIT_BAD_INPUT, EXIT_NOT_EVALUABLE, EXIT_OK, EXIT_REGRESSION


@pytest.fixture(autouse=True)
def _cache_in_tmp(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1764460800")


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture
def pair(tmp_path):
    """baseline, candidate with the data phase +20% (≈ +10% step), and pure noise (other seed)."""
    d = tmp_path / "in"
    base = bt.write(d / "base.sqlite", bt.tiny(1))
    slow = bt.write(d / "slow.sqlite", bt.tiny(2, data_ms=72.0))
    noise = bt.write(d / "noise.sqlite", bt.tiny(3))
    return base, slow, noise


def test_injected_regression_is_significant_and_fails_the_gate(pair, tmp_path):
    base, slow, _ = pair
    before = bt.tree_hashes(base.parent)
    out_json = tmp_path / "cmp.json"
    r = run("compare", base, slow, "--fail-on-regression", 5, "--json", out_json,
            "--md", tmp_path / "cmp.md", "-o", tmp_path / "cmp.html")
    assert r.exit_code == EXIT_REGRESSION, r.output
    assert "REGRESSION" in r.output and "Traceback" not in r.output
    doc = json.loads(out_json.read_text())
    assert doc["schema_version"] == 1 and doc["regression"] is True
    assert doc["exit_code"] == EXIT_REGRESSION
    st = doc["step_time"]
    assert st["significant"] and st["change"] == "worse"
    assert 6 < st["delta_pct"] < 14 and st["ci_low_pct"] > 5
    for key in ("baseline", "candidate", "metrics", "explain", "verdict_change", "step_time"):
        assert key in doc
    m0 = doc["metrics"][0]
    assert {"name", "baseline", "candidate", "delta", "delta_pct", "ci_low", "ci_high",
            "significant"} <= set(m0)
    assert doc["explain"][0]["kind"] == "phase" and doc["explain"][0]["name"] == "data"
    assert doc["explain"][0]["share_of_delta"] > 0.7
    assert doc["verdict_change"] == {**doc["verdict_change"], "baseline": "input_bound",
                                     "candidate": "input_bound", "changed": False}
    assert doc["baseline"]["runs"] == 1 and doc["baseline"]["steps"] == 11
    assert doc["generated_at"] == "2025-11-30T00:00:00Z"
    md = (tmp_path / "cmp.md").read_text()
    assert len(md.splitlines()) < 60
    assert "data phase" in md and "REGRESSION" in md
    html = (tmp_path / "cmp.html").read_text()
    assert 'id="sec-metrics"' in html and 'id="sec-explain"' in html and "regression" in html
    assert "http://" not in html and "https://" not in html
    assert bt.tree_hashes(base.parent) == before


def test_same_regression_without_the_gate_exits_0(pair):
    base, slow, _ = pair
    r = run("compare", base, slow)
    assert r.exit_code == EXIT_OK, r.output
    assert "slower" in r.output


def test_gate_threshold_above_the_slowdown_passes(pair, tmp_path):
    base, slow, _ = pair
    r = run("compare", base, slow, "--fail-on-regression", 25, "--json", tmp_path / "c.json")
    assert r.exit_code == EXIT_OK, r.output
    doc = json.loads((tmp_path / "c.json").read_text())
    assert doc["regression"] is False and doc["step_time"]["significant"] is True
    assert "passed" in r.output


def test_noise_only_is_no_significant_change(pair, tmp_path):
    base, _, noise = pair
    r = run("compare", base, noise, "--fail-on-regression", 5, "--json", "-")
    assert r.exit_code == EXIT_OK, r.output
    doc = json.loads(r.stdout)
    assert doc["regression"] is False
    assert doc["step_time"]["significant"] is False
    assert doc["step_time"]["ci_low_pct"] < 0 < doc["step_time"]["ci_high_pct"]
    assert doc["summary"].startswith("no significant change")
    assert [m["name"] for m in doc["metrics"] if m["significant"]] == []
    assert "no significant change" in r.stderr


def test_faster_candidate_is_not_a_regression(pair, tmp_path):
    base, slow, _ = pair
    r = run("compare", slow, base, "--fail-on-regression", 0, "--json", tmp_path / "c.json")
    assert r.exit_code == EXIT_OK
    doc = json.loads((tmp_path / "c.json").read_text())
    assert doc["step_time"]["change"] == "better" and doc["regression"] is False


def test_directories_of_runs_use_runs_as_samples(tmp_path):
    b, c = tmp_path / "before", tmp_path / "after"
    for i in range(3):
        bt.write(b / f"run{i}.sqlite", bt.tiny(10 + i, steps=6))
        bt.write(c / f"run{i}.sqlite", bt.tiny(20 + i, steps=6, forward_ms=40.0))
    (c / "junk.sqlite").write_bytes(b"junk")
    r = run("compare", b, c, "--fail-on-regression", 5, "--json", tmp_path / "c.json",
            "--md", "-")
    assert r.exit_code == EXIT_REGRESSION, r.output
    doc = json.loads((tmp_path / "c.json").read_text())
    assert doc["baseline"]["runs"] == 3 and doc["candidate"]["runs"] == 3
    assert doc["baseline"]["kind"] == "directory"
    assert doc["step_time"]["method"] == "runs+steps"
    assert doc["explain"][0]["name"] == "forward"
    assert [s["label"] for s in doc["skipped"]] == ["junk.sqlite"]
    # phase / run-level metrics get intervals from the runs
    gpu = next(m for m in doc["metrics"] if m["name"] == "gpu_busy")
    assert gpu["method"] == "runs" and gpu["ci_low"] is not None
    assert r.stdout.startswith("### nsys-diag compare")
    assert len(r.stdout.splitlines()) < 60


def test_markdown_escapes_trace_strings(tmp_path):
    d = tmp_path / "in"
    base = bt.write(d / "a|<b>@everyone`x`.sqlite", bt.tiny(1, steps=5))
    cand = bt.write(d / "c.sqlite", bt.tiny(2, steps=5))
    r = run("compare", base, cand, "--md", "-")
    assert r.exit_code == EXIT_OK, r.output
    md = r.stdout
    assert "<b>" not in md and "@everyone" not in md and "a|" not in md
    assert "&lt;b&gt;" in md


def test_bad_inputs_exit_3(tmp_path, pair):
    base, _, _ = pair
    r = run("compare", base, tmp_path / "missing.sqlite")
    assert r.exit_code == EXIT_BAD_INPUT and "no such file" in r.output
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"junk junk junk")
    r = run("compare", junk, base)
    assert r.exit_code == EXIT_BAD_INPUT and "Traceback" not in r.output
    assert "junk.sqlite" in r.output
    empty = tmp_path / "emptydir"
    empty.mkdir()
    r = run("compare", base, empty)
    assert r.exit_code == EXIT_BAD_INPUT and "no traces found" in r.output


def test_deterministic_for_a_seed(pair, tmp_path):
    base, slow, _ = pair
    docs = []
    for i, seed in enumerate((7, 7, 8)):
        out = tmp_path / f"c{i}.json"
        run("compare", base, slow, "--seed", seed, "--json", out)
        docs.append(json.loads(out.read_text()))
    assert docs[0] == docs[1]
    assert docs[0]["settings"]["seed"] == 7 and docs[2]["settings"]["seed"] == 8


SAMPLES = __import__("pathlib").Path(__file__).resolve().parents[2] / "sample_traces"
SHARED_MORDRED = SAMPLES.parent.parent / "shared" / "traces" / "nsys" / "mordred_rtx6000_2021.sqlite"


def test_an_incomparable_pair_is_not_evaluable_exit_7_and_allow_unevaluable_exits_0(tmp_path):
    base, cand = SAMPLES / "healthy_tc.sqlite", SAMPLES / "simt_gemm.sqlite"
    r = run("compare", base, cand, "--fail-on-regression", 5, "--json", tmp_path / "c.json",
            "--md", tmp_path / "c.md", "-o", tmp_path / "c.html")
    assert r.exit_code == EXIT_NOT_EVALUABLE, r.output
    assert "not evaluable" in r.stderr and "passed" not in r.output
    doc = json.loads((tmp_path / "c.json").read_text())
    gate = doc["gate"]
    assert gate["requested_pct"] == 5 and gate["evaluated"] is False
    assert gate["exit_code"] == EXIT_NOT_EVALUABLE == doc["exit_code"]
    assert "not comparable" in gate["reason"]
    assert doc["comparability"]["score"] < 0.5 and doc["comparability"]["reasons"]
    assert "NOT EVALUABLE" in (tmp_path / "c.md").read_text()
    assert "comparability" in (tmp_path / "c.html").read_text()
    # explain: both signs, each group adds up (with its other row) to the mean step delta
    for group in ("phases", "kernels"):
        rows = [e for e in doc["explain"] if e["group"] == group]
        assert any(e["kind"] == "other" for e in rows) or group == "phases"
        assert sum(e["share_of_delta"] for e in rows) == pytest.approx(1.0)
    kernel_deltas = [e["delta"] for e in doc["explain"] if e["kind"] == "kernel"]
    assert min(kernel_deltas) < 0 < max(kernel_deltas)
    r = run("compare", base, cand, "--fail-on-regression", 5, "--allow-unevaluable",
            "--json", tmp_path / "d.json")
    assert r.exit_code == EXIT_OK, r.output
    assert "not evaluable" in r.stderr
    assert json.loads((tmp_path / "d.json").read_text())["gate"]["allow_unevaluable"] is True


@pytest.mark.skipif(not SHARED_MORDRED.exists(), reason="shared real traces not present")
def test_no_cuda_against_a_real_trace_without_steps_exits_7(tmp_path):
    r = run("compare", SAMPLES / "no_cuda.sqlite", SHARED_MORDRED, "--fail-on-regression", 5,
            "--json", tmp_path / "c.json")
    assert r.exit_code == EXIT_NOT_EVALUABLE, r.output
    doc = json.loads((tmp_path / "c.json").read_text())
    assert doc["gate"]["evaluated"] is False and "no steps" in doc["gate"]["reason"]


def test_two_windows_without_steps_compare_window_rates(tmp_path):
    if not SHARED_MORDRED.exists():
        pytest.skip("shared real traces not present")
    r = run("compare", SHARED_MORDRED, SHARED_MORDRED, "--fail-on-regression", 5,
            "--json", tmp_path / "c.json")
    assert r.exit_code == EXIT_NOT_EVALUABLE, r.output
    doc = json.loads((tmp_path / "c.json").read_text())
    wr = doc["window_rates"]
    assert wr["available"] and wr["bins"]["baseline"] >= 20
    assert any(m["name"] == "window.gpu_busy" for m in wr["metrics"])
    assert {m["method"] for m in wr["metrics"]} <= {"bins", "none"}  # samples are bins, not steps
    assert "step time was not available" in r.output
