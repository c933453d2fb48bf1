"""The generator's scale and command line (nsys_diag.synth.cli, python -m nsys_diag.synth)."""
from __future__ import annotations

import json

import pytest

from nsys_diag import synth
from synth_sink import open_ro, query


# ============================================================================ scale + CLI
def test_scale_smoke_fifty_thousand_kernels(tmp_path):
    path = synth.write_preset(tmp_path / "big.sqlite", "worked_example", scale=35)
    con = open_ro(path)
    n = query(con, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")[0][0]
    assert n == 11 * 128 * 35 == synth.expected("worked_example", scale=35)["kernels"]["total"]
    assert query(con, """SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k LEFT JOIN
                      CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId
                      WHERE r.start IS NULL""") == [(0,)]


def test_cli_writes_one_preset_and_prints_its_answers(tmp_path, capsys):
    out = tmp_path / "lb.sqlite"
    assert synth.main(["launch_bound", str(out), "--schema", "2022.2", "--steps", "3",
                       "--env", "HF_TOKEN=hf_FAKE", "--expected"]) == 0
    e = json.loads(capsys.readouterr().out)
    assert e["verdict"] == "launch_bound" and e["steps"]["count"] == 3
    con = open_ro(out)
    assert query(con, "SELECT value FROM EXPORT_META_DATA WHERE name = 'EXPORT_SCHEMA_VERSION'") == [("2.9.1",)]
    assert "HF_TOKEN=hf_FAKE" in query(con, "SELECT value FROM TARGET_INFO_SYSTEM_ENV "
                                         "WHERE name = 'DeviceEnvironment'")[0][0]
    assert synth.main(["--list"]) == 0
    assert "worked_example" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        synth.main(["not_a_preset", str(tmp_path / "x.sqlite")])


def test_package_keeps_the_public_names_and_runs_as_a_module(tmp_path):
    import subprocess
    import sys

    for name in synth.__all__:
        assert getattr(synth, name) is not None
    r = subprocess.run([sys.executable, "-m", "nsys_diag.synth", "--list"], capture_output=True,
                       text=True, check=True)
    assert r.stdout.splitlines()[0].startswith("worked_example") and "schemas: 2020" in r.stdout
