"""docs/thresholds.md holds exactly the threshold reference scripts/thresholds_doc.py generates
from nsys_diag/model/thresholds.py: every field, its default and its reasoning."""
from __future__ import annotations

import importlib.util
from dataclasses import fields

import pytest

from conftest import REPO
from nsys_diag.model.thresholds import Thresholds

_spec = importlib.util.spec_from_file_location("thresholds_doc",
                                               REPO / "scripts" / "thresholds_doc.py")
td = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(td)  # type: ignore[union-attr]


def test_doc_block_equals_the_regenerated_reference():
    text = (REPO / "docs" / "thresholds.md").read_text(encoding="utf-8")
    assert td.doc_block(text) == td.reference(), \
        "docs/thresholds.md is stale: run `python scripts/thresholds_doc.py --write`"


def test_every_field_has_a_row_with_its_default_and_a_reason():
    rows = td.fields()
    assert [name for _, name, _, _ in rows] == [f.name for f in fields(Thresholds)]
    defaults = Thresholds().to_dict()
    for group, name, default, doc in rows:
        assert group and doc.strip(), name
        assert eval(default) == defaults[name], name  # noqa: S307 - our own source literal


def test_cells_stay_one_line_and_pipes_are_escaped():
    src = ('from dataclasses import dataclass\n@dataclass(frozen=True)\nclass Thresholds:\n'
           '    # ---- a group ----\n    x: int = 1 << 20\n    """a | b\n    c."""\n'
           '    y: float = 0.5\n')
    block = td.reference(src)
    assert "### a group" in block
    assert "| `x` | `1 << 20` | a \\| b c. |" in block
    assert "| `y` | `0.5` |  |" in block
    with pytest.raises(SystemExit):
        td.doc_block("no markers")
