"""The timeline's building blocks (nsys_diag.synth.events): code tables and interval helpers."""
from __future__ import annotations

import numpy as np

from nsys_diag.synth.events import Codes, Interning, concat_columns, covered_before, fifo_ends, union_intervals
from nsys_diag.synth.kernels import kernel_info


def test_codes_and_interning_hand_out_ids_in_first_use_order():
    c = Codes()
    assert [c.code("b"), c.code("a"), c.code("b")] == [0, 1, 0] and c.values == ["b", "a"]
    names = Interning()
    nvjet, adam = kernel_info("nvjet"), kernel_info("adam")
    assert [names.kernel(nvjet), names.kernel(adam), names.kernel(nvjet)] == [0, 1, 0]
    assert names.kernel_infos == [nvjet, adam]
    assert [names.domain("NCCL"), names.domain("X"), names.domain("NCCL")] == [1, 2, 1]


def test_fifo_ends_queue_behind_the_previous_op_with_the_gap():
    ready = np.array([0, 10, 100], np.int64)
    dur = np.array([50, 5, 5], np.int64)
    # op 1 is ready at 10 but waits for op 0 (ends 50) + gap 2; op 2 starts when ready
    assert fifo_ends(ready, dur, 2).tolist() == [50, 57, 105]


def test_union_and_covered_before():
    s, e = union_intervals(np.array([5, 0, 20]), np.array([12, 10, 30]))
    assert s.tolist() == [0, 20] and e.tolist() == [12, 30]
    assert covered_before(s, e, np.array([0, 6, 15, 25, 99])).tolist() == [0, 6, 12, 17, 22]


def test_concat_columns_fills_missing_keys_with_minus_one():
    out = concat_columns([{"a": np.array([1, 2])}, {"a": np.array([3]), "b": np.array([7])}], ("a", "b"))
    assert out["a"].tolist() == [1, 2, 3] and out["b"].tolist() == [-1, -1, 7]
    assert concat_columns([], ("x",))["x"].size == 0
