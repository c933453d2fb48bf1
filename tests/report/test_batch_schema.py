"""The batch index JSON Schema (report/batch_schema.py → nsys_diag/schemas/batch_index.schema.json).
Every index the tests build is validated by the autouse fixture in tests/conftest.py."""
from __future__ import annotations

import json

import jsonschema
import pytest

import batch_traces as bt
from nsys_diag.app import batch
from nsys_diag.report.batch_schema import json_schema, schema_file, schema_text


def test_committed_schema_is_the_generated_one():
    assert schema_file().read_text(encoding="utf-8") == schema_text()
    jsonschema.Draft202012Validator.check_schema(json_schema())


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    d = tmp_path_factory.mktemp("schema")
    bt.rank_set(d / "job", where="host_forward", steps=3)
    code = batch.batch_command([str(d / "job")], outdir=str(d / "out"), echo=lambda _: None,
                               generated_at="2026-01-01T00:00:00Z", jobs=1)
    assert code == 0
    return json.loads((d / "out" / "index.json").read_text(encoding="utf-8"))


def test_a_job_index_validates_and_the_schema_can_fail(index):
    v = jsonschema.Draft202012Validator(json_schema())
    assert not list(v.iter_errors(index))
    assert index["job"]["cause"]["kind"] == "host"
    bad = json.loads(json.dumps(index))
    bad["job"]["verdict"] = "slow"
    bad["traces"][0]["gpu_busy"] = 1.5
    del bad["counts"]["ok"]
    assert len(list(v.iter_errors(bad))) == 3
