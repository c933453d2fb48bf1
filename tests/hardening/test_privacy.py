"""Privacy: exports carry the capture's environment, command line, host and user names and paths.

Environment values never reach any output (HTML, JSON, Markdown, terminal, inspect text/JSON,
batch index and reports, the batch cache, compare outputs) — not even with
``--include-host-info``. Host name, user paths and the command line appear only with
``--include-host-info`` (analyze, inspect); batch and compare have no such option and are private.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from nsys_diag import synth
from nsys_diag.cli import main

SECRETS = ("hf_FAKE_SECRET_123", "FAKEAWS987")
HOST = "secret-host-42"
USER_PATH = "/home/alice"
TRACE_DIR = "alice_private_dir"
SCHEMAS = ("2022.2", "2024.6", "2026.2")  # env in TARGET_INFO_SYSTEM_ENV / META_DATA_CAPTURE


@pytest.fixture(scope="module")
def traces(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("priv") / TRACE_DIR
    d.mkdir()
    out = {}
    for schema in SCHEMAS:
        out[schema] = synth.write_preset(
            d / f"run_{schema}.sqlite", "worked_example", schema=schema, steps=3,
            env={"HF_TOKEN": SECRETS[0], "AWS_SECRET_ACCESS_KEY": SECRETS[1], "RANK": "0"},
            hostname=HOST, process_name=f"{USER_PATH}/venv/bin/python",
            command=(f"{USER_PATH}/venv/bin/python", f"{USER_PATH}/proj/train.py", "--data",
                     f"{USER_PATH}/data"))
    return out


def test_the_exports_really_hold_the_private_data(traces):
    for p in traces.values():
        raw = p.read_bytes()
        assert SECRETS[0].encode() in raw and SECRETS[1].encode() in raw
        assert HOST.encode() in raw and USER_PATH.encode() in raw


def _cli(args, env=None) -> str:
    res = CliRunner().invoke(main, [str(a) for a in args], env=env or {})
    assert res.exit_code == 0, res.output
    return res.output


def _files(d: Path) -> dict[str, str]:
    return {str(p.relative_to(d)): p.read_text(encoding="utf-8", errors="replace")
            for p in sorted(d.rglob("*")) if p.is_file()}


def _analyze_and_inspect(trace: Path, out: Path, host_info: bool) -> dict[str, str]:
    out.mkdir()
    flag = ["--include-host-info"] if host_info else []
    texts = {"analyze terminal": _cli(["analyze", trace, "-o", out / "r.html", "--json",
                                       out / "r.json", "--md", out / "r.md", *flag]),
             "inspect terminal": _cli(["inspect", trace, "--json", out / "i.json", *flag])}
    texts.update(_files(out))
    return {k: v.replace(str(out), "<OUT>") for k, v in texts.items()}  # our own output paths


@pytest.mark.parametrize("schema", SCHEMAS)
def test_default_outputs_hold_no_private_data(traces, tmp_path, schema):
    outputs = _analyze_and_inspect(traces[schema], tmp_path / "o", host_info=False)
    assert {"r.html", "r.json", "r.md", "i.json"} <= set(outputs)
    for name, text in outputs.items():
        for needle in SECRETS + (HOST, USER_PATH, TRACE_DIR):
            assert needle not in text, f"{needle!r} leaked into {name}"


@pytest.mark.parametrize("schema", SCHEMAS)
def test_host_info_only_on_request_and_never_the_environment(traces, tmp_path, schema):
    outputs = _analyze_and_inspect(traces[schema], tmp_path / "o", host_info=True)
    for name, text in outputs.items():
        for secret in SECRETS:
            assert secret not in text, f"environment value leaked into {name}"
    # what the user asked for is there
    assert HOST in outputs["r.json"] and HOST in outputs["i.json"]
    assert USER_PATH in outputs["r.json"] and USER_PATH in outputs["i.json"]
    assert HOST in outputs["r.html"] and HOST in outputs["inspect terminal"]
    assert TRACE_DIR in outputs["r.json"]  # the full path of the trace


def test_batch_and_compare_are_private(traces, tmp_path):
    cache = tmp_path / "cache"
    env = {"XDG_CACHE_HOME": str(cache)}
    root = traces["2024.6"].parent
    out = tmp_path / "out"
    texts = {"batch terminal": _cli(["batch", str(root), "-o", out / "b", "-j", "1", "--json",
                                     out / "b.json", "--md", out / "b.md"], env),
             "compare terminal": _cli(["compare", traces["2022.2"], traces["2026.2"], "-o",
                                       out / "c.html", "--json", out / "c.json", "--md",
                                       out / "c.md"], env)}
    texts.update(_files(out))
    assert (out / "b" / "index.html").exists() and (out / "c.json").exists()
    cached = _files(cache)
    assert cached, "the batch cache was not written where XDG_CACHE_HOME points"
    texts.update({f"cache/{k}": v for k, v in cached.items()})
    for name, text in texts.items():
        text = text.replace(str(out), "<OUT>")
        for needle in SECRETS + (HOST, USER_PATH):
            assert needle not in text, f"{needle!r} leaked into {name}"
