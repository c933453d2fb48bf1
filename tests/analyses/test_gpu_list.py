"""``trace.gpus``: each GPU says whether the input names it (``name_known``); a GPU the input does
not name gets the ``GPU <id>`` placeholder, which batch never counts as a GPU model."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from nsys_diag.analyses.job.batch_summary import _gpu_models
from nsys_diag.api import analyze
from nsys_diag.model.vocabulary import gpu_placeholder

SAMPLES = Path(__file__).resolve().parents[2] / "sample_traces"


def test_a_named_gpu_is_known_and_keeps_its_name():
    gpus = json.loads(analyze(str(SAMPLES / "multi_gpu.sqlite")).to_json())["trace"]["gpus"]
    assert len(gpus) == 2
    assert all(g["name_known"] and g["name"] != gpu_placeholder(g["id"]) for g in gpus)


@pytest.mark.parametrize("known,models", [(False, []), (True, ["GPU 0"])])
def test_batch_counts_only_named_gpus_as_models(known, models):
    trace = {"gpus": [{"id": 0, "name": gpu_placeholder(0), "name_known": known}]}
    assert _gpu_models(trace) == models


def test_a_device_seen_only_in_gpu_work_gets_the_placeholder_and_is_not_known(tmp_path):
    import shutil
    import sqlite3

    path = tmp_path / "no_gpu_rows.sqlite"
    shutil.copy(SAMPLES / "healthy_tc.sqlite", path)
    con = sqlite3.connect(path)
    tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table' "
                                        "AND name LIKE 'TARGET_INFO%GPU%'")]
    assert tables
    for t in tables:
        con.execute(f'DELETE FROM "{t}"')
    con.commit()
    con.close()
    gpus = json.loads(analyze(str(path)).to_json())["trace"]["gpus"]
    assert [(g["name"], g["name_known"]) for g in gpus] == [(gpu_placeholder(gpus[0]["id"]), False)]
