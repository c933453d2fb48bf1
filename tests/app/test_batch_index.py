"""The batch index: report paths, rows."""
from __future__ import annotations

from nsys_diag.app import batch_index


def test_report_paths_are_unique_and_stay_inside():
    paths = batch_index.report_paths(["a/t.sqlite", "a/t.csv", "../evil.sqlite", "t.sqlite"])
    assert paths["a/t.sqlite"] == "a/t.nsys-diag"
    assert paths["a/t.csv"] == "a/t.csv.nsys-diag"
    assert ".." not in paths["../evil.sqlite"]
    assert len(set(paths.values())) == 4
