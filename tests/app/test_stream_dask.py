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


def test_dask_chunks_read_through_the_clients_zone_map(tmp_path, monkeypatch):
    """The zone map is built once by the client and sent with every task (workers in other
    processes never see the client's settings): the answers stay the in-memory ones."""
    from nsys_diag.app import stream_dask
    from nsys_diag.loaders import zone_map as Z

    trace = SAMPLES / "multi_gpu.sqlite"
    whole = _run(tmp_path, trace, "--memory-budget", "none")
    monkeypatch.setattr(Z, "BLOCK_ROWS", 16)
    monkeypatch.setattr(Z, "MIN_ZONED_ROWS", 32)
    sent = []
    real_runner = stream_dask.dask_runner

    def spy(path, skeleton, targets, options, th, zones=None):
        sent.append(zones)
        return real_runner(path, skeleton, targets, options, th, zones)
    monkeypatch.setattr(stream_dask, "dask_runner", spy)
    dask = _run(tmp_path, trace, "--chunk-rows", "500", "--dask")
    assert sent and sent[0] is not None and sent[0].tables
    assert_same(whole, _no_chunks(dask))
