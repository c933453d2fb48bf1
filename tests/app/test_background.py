"""Background imports: errors are kept and raised where the foreground needs the module."""
from __future__ import annotations

import sys

import pytest

from nsys_diag.app.background import import_in_background


def _write_module(tmp_path, monkeypatch, name: str, body: str) -> None:
    (tmp_path / f"{name}.py").write_text(body)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, name, raising=False)


def test_a_module_that_imports_is_returned(tmp_path, monkeypatch):
    _write_module(tmp_path, monkeypatch, "bg_ok_mod", "VALUE = 42\n")
    imports = import_in_background("bg_ok_mod")
    assert imports.module("bg_ok_mod").VALUE == 42
    assert imports.errors() == {}


def test_a_failed_background_import_is_raised_in_the_foreground(tmp_path, monkeypatch):
    _write_module(tmp_path, monkeypatch, "bg_bad_mod", "raise RuntimeError('broken at import')\n")
    _write_module(tmp_path, monkeypatch, "bg_after_mod", "VALUE = 1\n")
    imports = import_in_background("bg_bad_mod", "bg_after_mod")
    with pytest.raises(RuntimeError, match="broken at import"):
        imports.module("bg_bad_mod")
    assert set(imports.errors()) == {"bg_bad_mod"}
    # the thread stopped at the failure; a later module is imported by the foreground itself
    assert imports.module("bg_after_mod").VALUE == 1


def test_analyze_bundle_raises_the_background_error(tmp_path, monkeypatch):
    from nsys_diag.app import analyze

    _write_module(tmp_path, monkeypatch, "bg_suite_mod", "raise ImportError('no suite here')\n")
    monkeypatch.setattr(analyze, "SUITE_MODULE", "bg_suite_mod")
    imports = import_in_background("bg_suite_mod")
    with pytest.raises(ImportError, match="no suite here"):
        analyze.analyze_bundle(object(), None, None, "2026-01-01T00:00:00Z", imports)
