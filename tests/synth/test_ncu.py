"""The ncu CSV generator (nsys_diag.synth.ncu): both layouts carry the same launches."""
from __future__ import annotations

import csv
import io

from nsys_diag.synth.ncu import ERROR_ONLY_TEXT, demo_kernels, main, ncu_csv_text


def _rows(text: str) -> list[list[str]]:
    return [r for r in csv.reader(io.StringIO(text)) if r and not r[0].startswith(("==", "step"))]


def test_details_and_raw_layouts_list_every_launch_once():
    ks = demo_kernels()
    n = sum(k.launches for k in ks)
    raw = _rows(ncu_csv_text(ks, layout="raw"))
    assert raw[0][0] == "ID" and len(raw) == 2 + n  # header, units row, one row per launch
    details = _rows(ncu_csv_text(ks, layout="details", rules=True))
    assert details[0][-5:] == ["Rule Name", "Rule Type", "Rule Description", "Estimated Speedup Type",
                               "Estimated Speedup"]
    assert len({r[0] for r in details[1:]}) == n
    assert sum("LaunchConfiguration" in r for r in details) == n  # one rule row per launch


def test_junk_and_error_only_and_the_demo_command(tmp_path):
    text = ncu_csv_text(demo_kernels(), junk=True)
    assert text.splitlines()[0].startswith("step 0") and text.endswith("==PROF== Report: done\n")
    assert ncu_csv_text(demo_kernels(), error_only=True) == ERROR_ONLY_TEXT
    assert main([str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ncu_demo_details.csv", "ncu_demo_raw.csv",
                                                           "ncu_error_only.csv"]
