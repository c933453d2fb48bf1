"""Damaged or odd exports: the loader (and inspect) either succeed or raise a typed input error.

Deterministic, small mutation runs (seeded); `make fuzz` does the long version.
"""
from __future__ import annotations

import random
import shutil
import sqlite3

import pytest

from nsys_diag.loaders import load_trace
from nsys_diag.model.errors import NsysDiagError
from nsys_diag.report.inventory_render import build_inspect_view, inspect_to_json, render_inspect_text
from tiny_nsys import write_tiny_nsys

ODD_VALUES = [None, "abc", b"\xff\x00\x9c", 2**63 - 1, -2**63, -1, 0, 3.5, "", 4294967295, 10**18]


def _load_and_render(path):
    try:
        view = build_inspect_view(load_trace(path))
    except NsysDiagError as exc:
        assert exc.exit_code == 3
        return "error"
    render_inspect_text(view)
    inspect_to_json(view)
    return "ok"


@pytest.mark.parametrize("gpu_layout", ["full", "cuda_gpu_mib", "cuda_gpu_bytes"])
def test_odd_cell_values_never_crash(tmp_path, gpu_layout):
    base = write_tiny_nsys(tmp_path / "base.sqlite", gpu_layout=gpu_layout, with_metrics=True,
                           with_memory=True, bad_utf8=True)
    rng = random.Random(1234)
    outcomes = []
    for _ in range(15):
        path = tmp_path / "m.sqlite"
        shutil.copyfile(base, path)
        con = sqlite3.connect(path)
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for _ in range(rng.randint(1, 6)):
            t = rng.choice(tables)
            col = rng.choice([r[1] for r in con.execute(f"PRAGMA table_info('{t}')")])
            try:
                con.execute(f'UPDATE "{t}" SET "{col}" = ? WHERE rowid % ? = 0',
                            (rng.choice(ODD_VALUES), rng.randint(1, 3)))
            except sqlite3.IntegrityError:
                pass
        if rng.random() < 0.2:
            con.execute(f'DROP TABLE "{rng.choice(tables)}"')
        con.commit()
        con.close()
        outcomes.append(_load_and_render(path))
    assert "ok" in outcomes


def test_flipped_bytes_never_crash(tmp_path):
    data = write_tiny_nsys(tmp_path / "base.sqlite", with_metrics=True, bad_utf8=True).read_bytes()
    rng = random.Random(99)
    outcomes = []
    for _ in range(30):
        buf = bytearray(data)
        for _ in range(rng.randint(1, 30)):
            buf[rng.randrange(100, len(buf))] = rng.randrange(256)
        path = tmp_path / "f.sqlite"
        path.write_bytes(bytes(buf))
        outcomes.append(_load_and_render(path))
    assert {"ok", "error"} <= set(outcomes)
