"""``engine/assemble``: the summary bundle's sample rows over every chunk."""
from __future__ import annotations

import pandas as pd

from nsys_diag.analyses.engine.assemble import _samples


def _kernels(devices, names):
    return pd.DataFrame({"device_id": devices, "name": pd.Categorical(names)})


def test_a_device_first_seen_in_a_later_chunk_is_kept():
    first = _kernels([0], ["gemm"])
    later = _kernels([0, 1], ["relu", "conv"])
    out = _samples([{"samples": {"kernels": first}}, {"samples": {"kernels": later}}])
    k = out["kernels"]
    assert k["device_id"].tolist() == [0, 1]  # device 0 from the first chunk, then device 1
    assert k["name"].tolist() == ["gemm", "conv"]
    assert isinstance(k["name"].dtype, pd.CategoricalDtype)


def test_frames_without_a_key_keep_the_first_chunks_row():
    a, b = _kernels([0], ["x"]), _kernels([3], ["y"])
    out = _samples([{"samples": {}}, {"samples": {"api": a}}, {"samples": {"api": b}}])
    assert out["api"]["device_id"].tolist() == [0]


def test_empty_chunks_give_no_rows():
    assert _samples([{"samples": {"kernels": _kernels([], [])}}, {}]) == {}
