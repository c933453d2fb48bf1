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
