"""README "Validated on real traces" holds exactly what scripts/real_traces_table.py generates
from ../shared/traces today (skips without ../shared)."""
from __future__ import annotations

import importlib.util

import pytest

from conftest import REPO, SHARED_TRACES

_spec = importlib.util.spec_from_file_location("real_traces_table",
                                               REPO / "scripts" / "real_traces_table.py")
rtt = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rtt)  # type: ignore[union-attr]


def test_readme_block_equals_the_regenerated_table():
    if not (SHARED_TRACES / "nsys").is_dir():
        pytest.skip("../shared/traces not present")
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert rtt.readme_block(readme) == rtt.table(SHARED_TRACES), \
        "README is stale: run `python scripts/real_traces_table.py --write`"


def test_every_real_trace_has_a_row_and_a_description():
    if not (SHARED_TRACES / "nsys").is_dir():
        pytest.skip("../shared/traces not present")
    paths = rtt.traces(SHARED_TRACES)
    assert paths and all(p.name in rtt.WHAT for p in paths)
    block = rtt.table(SHARED_TRACES)
    assert len(block.strip().split("\n")) == 2 + len(paths)


def test_replace_block_keeps_the_rest_and_cells_are_escaped(tmp_path):
    text = f"intro\n{rtt.BEGIN}\nold\n{rtt.END}\noutro\n"
    assert rtt.replace_block(text, "new\n") == f"intro\n{rtt.BEGIN}\nnew\n{rtt.END}\noutro\n"
    with pytest.raises(SystemExit):
        rtt.replace_block("no markers", "x")
    bad = tmp_path / "nsys"
    bad.mkdir()
    (bad / "a|b.sqlite").write_bytes(b"not a database at all")
    line = rtt.table(tmp_path, kineto=None).strip().split("\n")[-1]
    assert line.count("|") == 6 and "a|b" not in line and "cannot read" in line
