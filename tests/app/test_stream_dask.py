"""``analyze --dask`` / ``--scheduler``: a streamed export's chunks analysed on Dask workers give
the local (and the in-memory) answers."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("dask.distributed")

from nsys_diag.cli import main  # noqa: E402
from tests.app.test_stream import assert_same  # noqa: E402

SAMPLES = Path(__file__).resolve().parents[2] / "sample_traces"


def _run(tmp_path, trace: Path, *extra: str) -> dict:
    out = tmp_path / f"{trace.stem}-{abs(hash(extra))}.json"
    with pytest.raises(SystemExit) as exc:
        main(["analyze", str(trace), "--no-html", "--json", str(out), *extra])
    assert exc.value.code in (0, None)
    doc = json.loads(out.read_text())
    doc.pop("generated_at")
    return doc


def _no_chunks(doc: dict) -> dict:
    doc = dict(doc)
    doc["trace"] = {k: v for k, v in doc["trace"].items() if k != "chunks"}
    return doc


@pytest.mark.parametrize("name", ["worked_example", "multi_gpu"])
def test_dask_local_cluster_equals_local_stream_and_in_memory(tmp_path, name):
    trace = SAMPLES / f"{name}.sqlite"
    whole = _run(tmp_path, trace, "--memory-budget", "none")
    local = _run(tmp_path, trace, "--chunk-rows", "500")
    dask = _run(tmp_path, trace, "--chunk-rows", "500", "--dask")
    assert dask["trace"]["chunks"]["count"] >= 3
    assert_same(_no_chunks(local), _no_chunks(dask))
    assert_same(whole, _no_chunks(dask))


def test_scheduler_address(tmp_path):
    from dask.distributed import LocalCluster

    trace = SAMPLES / "launch_bound.sqlite"
    whole = _run(tmp_path, trace, "--memory-budget", "none")
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                      dashboard_address=None) as cluster:
        doc = _run(tmp_path, trace, "--chunk-rows", "800", "--scheduler", cluster.scheduler_address)
    assert_same(whole, _no_chunks(doc))
