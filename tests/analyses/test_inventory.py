from __future__ import annotations

import dataclasses

import pytest

from nsys_diag.analyses.inventory import INSPECT_VERSION, Inventory, analyze_inventory
from nsys_diag.loaders import load_trace
from nsys_diag.report.inventory_render import build_inspect_view
from tiny_nsys import write_tiny_nsys


def test_inventory_is_a_frozen_result_whose_json_is_the_inspect_view(tmp_path):
    bundle = load_trace(write_tiny_nsys(tmp_path / "t.sqlite", with_metrics=True, with_memory=True))
    inv = analyze_inventory(bundle)
    assert isinstance(inv, Inventory)
    with pytest.raises(dataclasses.FrozenInstanceError):
        inv.path = "x"  # type: ignore[misc]
    j = inv.to_json()
    assert list(j)[:3] == ["inspect_version", "path", "format"] and j["inspect_version"] == INSPECT_VERSION
    assert "host" not in j and inv.host is None
    assert j == build_inspect_view(bundle)
    assert j["gpu_memory_events"] > 0 and j["gpu_metrics"]["samples"] > 0
    with_host = analyze_inventory(bundle, include_host_info=True).to_json()
    assert list(with_host)[-1] == "host" and "environment_variables" in with_host["host"]
