"""Batch/compare discovery: natural order, kinds, ignored files, several roots."""
from __future__ import annotations

import pytest

from nsys_diag.app import discovery
from nsys_diag.model.errors import InputError


def test_discovery_natural_order_kinds_and_ignored(tmp_path):
    root = tmp_path / "runs"
    for name in ("rank10.sqlite", "rank2.sqlite", "rank1.sqlite", "sub/rank3.sqlite",
                 "report.nsys-rep", "report.sqlite", "alone.nsys-rep", "notes.csv", "readme.txt",
                 ".hidden/rank0.sqlite", "ncu.csv"):
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"x")
    (root / "notes.csv").write_text("a,b\n1,2\n")
    (root / "ncu.csv").write_text('"ID","Process ID","Process Name","Host Name","Kernel Name"\n')
    found = discovery.discover([root])
    assert [t.label for t in found.traces] == [
        "alone.nsys-rep", "ncu.csv", "rank1.sqlite", "rank2.sqlite", "rank10.sqlite",
        "report.sqlite", "sub/rank3.sqlite"]
    kinds = {t.label: t.kind for t in found.traces}
    assert kinds["ncu.csv"] == "ncu" and kinds["alone.nsys-rep"] == "nsys-rep"
    ignored = {d["label"]: d["reason"] for d in found.ignored}
    assert "notes.csv" in ignored and "report.nsys-rep" in ignored  # exported .sqlite beside it
    with pytest.raises(InputError):
        discovery.discover([tmp_path / "missing"])


def test_discovery_several_roots_are_prefixed(tmp_path):
    for d in ("a/x", "b/x"):
        (tmp_path / d).mkdir(parents=True)
        (tmp_path / d / "t.sqlite").write_bytes(b"x")
    found = discovery.discover([tmp_path / "a" / "x", tmp_path / "b" / "x"])
    assert [t.label for t in found.traces] == ["x/t.sqlite", "x~2/t.sqlite"]
