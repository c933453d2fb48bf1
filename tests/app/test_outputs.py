"""Writing outputs: files, stdout for '-', unwritable destinations."""
from __future__ import annotations

import pytest

from nsys_diag.app import outputs
from nsys_diag.model.errors import UsageError


def test_emit_to_stdout_ends_with_a_newline(capsys, tmp_path):
    outputs.emit("abc", "-")
    outputs.emit("def\n", "-")
    outputs.emit("ignored", None)
    assert capsys.readouterr().out == "abc\ndef\n"
    outputs.emit("x", str(tmp_path / "sub" / "f.txt"))
    assert (tmp_path / "sub" / "f.txt").read_text() == "x"
    with pytest.raises(UsageError, match="cannot write the output"):
        outputs.emit("x", str(tmp_path / "missing" / "f.txt"), parents=False)


def test_write_file_turns_os_errors_into_usage_errors(tmp_path):
    with pytest.raises(UsageError, match="cannot write the JSON"):
        outputs.write_file(str(tmp_path / "no" / "dir.json"), "{}", "the JSON")


def test_dumps_has_no_nan_and_keeps_order():
    assert outputs.dumps({"b": float("inf"), "a": (1, 2)}) == (
        '{\n  "b": null,\n  "a": [\n    1,\n    2\n  ]\n}\n')
    assert outputs.dumps({"k": 1}, indent=None) == '{"k": 1}\n'


def test_html_report_falls_back_to_the_current_directory(tmp_path, monkeypatch):
    monkeypatch.setattr(outputs, "dir_writable", lambda d: False)
    monkeypatch.chdir(tmp_path)
    lines: list[str] = []
    outputs.write_html_report("<html></html>", "/somewhere/run.sqlite", None, lines)
    assert "not writable" in lines[0] and (tmp_path / "run.nsys-diag.html").is_file()
