"""Inputs are byte-identical (sha256, mtime, size) after every command, batch and compare
included, and no file appears beside them except the report `analyze` writes by default.

The inputs are writable copies (a read-only original would hide a write attempt): generated
exports in several schema variants, ncu CSVs, a damaged export and, when ../shared/traces is
present, copies of the real traces.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from fuzz.fuzzlib import SHARED_TRACES, fingerprint
from nsys_diag import synth
from nsys_diag.synth import ncu as synth_ncu
from nsys_diag.cli import main


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("untouched") / "in"
    (d / "base").mkdir(parents=True)
    (d / "cand").mkdir()
    synth.write_preset(d / "base" / "r0.sqlite", "worked_example", schema="2024.6", steps=3)
    synth.write_preset(d / "base" / "r1.sqlite", "worked_example", schema="2022.2", steps=3)
    synth.write_preset(d / "cand" / "r0.sqlite", "healthy_tc", schema="2026.2", steps=3)
    synth_ncu.write_ncu_csv(d / "cand" / "kernels.csv", layout="details", junk=True)
    damaged = (d / "base" / "r0.sqlite").read_bytes()
    (d / "cand" / "damaged.sqlite").write_bytes(damaged[: len(damaged) // 2])
    real = SHARED_TRACES / "nsys"
    if real.is_dir():
        (d / "real").mkdir()
        for name in ("nvfuser_matmul_h200_2024.6.sqlite", "saxpy_mpi_a100_2022.2.sqlite"):
            if (real / name).exists():
                shutil.copyfile(real / name, d / "real" / name)  # a writable copy
    return d


def _state(d: Path) -> dict[str, tuple]:
    return {str(p.relative_to(d)): fingerprint(p) for p in sorted(d.rglob("*")) if p.is_file()}


def _cli(*args, ok=(0,)):
    res = CliRunner().invoke(main, [str(a) for a in args])
    assert res.exit_code in ok, res.output
    return res


def test_every_command_leaves_inputs_byte_identical(inputs, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    out = tmp_path / "out"
    out.mkdir()
    before = _state(inputs)
    traces = sorted(p for p in inputs.rglob("*.sqlite"))
    for t in traces:
        _cli("inspect", t, "--json", out / "i.json", ok=(0, 3))
        _cli("analyze", t, "--json", out / "a.json", "--md", out / "a.md", "-o", out / "a.html",
             ok=(0, 3))
    r0 = inputs / "base" / "r0.sqlite"
    _cli("analyze", r0, "--ncu", inputs / "cand" / "kernels.csv", "--no-html")
    _cli("analyze", inputs / "cand" / "kernels.csv", "--no-html")
    _cli("analyze", r0)  # default: the report beside the trace (a new file, not a changed one)
    _cli("batch", inputs, "-o", out / "batch", "-j", "2", ok=(4,))  # the damaged file: exit 4
    _cli("batch", inputs, "-o", out / "batch2", "-j", "1", ok=(4,))  # now from the cache
    _cli("compare", inputs / "base", inputs / "cand" / "r0.sqlite", "-o", out / "c.html",
         "--json", out / "c.json", "--md", out / "c.md", ok=(0, 5))
    _cli("compare", r0, inputs / "base" / "r1.sqlite", "--json", out / "c2.json")
    after = _state(inputs)
    new = sorted(set(after) - set(before))
    assert new == ["base/r0.nsys-diag.html"], new  # no journal, -wal, -shm or cache files
    for name, fp in before.items():
        assert after[name] == fp, f"{name} changed"
    assert len(before) >= 5  # our own inputs; copies of ../shared/traces add more when present
