"""Format detection by content (sniff.py)."""
from __future__ import annotations

import pytest

from nsys_diag.loaders.sniff import Format, sniff_format
from nsys_diag.model.errors import InputError, UnrecognizedFormatError
from tiny_nsys import write_plain_sqlite, write_tiny_nsys


def test_sqlite_by_magic_whatever_the_name(tmp_path):
    p = write_tiny_nsys(tmp_path / "renamed.nsys-rep")  # a SQLite named like a report is SQLite
    assert sniff_format(p) is Format.NSYS_SQLITE
    assert sniff_format(write_plain_sqlite(tmp_path / "x.db")) is Format.NSYS_SQLITE


@pytest.mark.parametrize("name", ["r.nsys-rep", "R.QDREP"])
def test_reports_by_extension(tmp_path, name):
    p = tmp_path / name
    p.write_bytes(b"\x00\x01not sqlite")
    assert sniff_format(p) is Format.NSYS_REP


def test_ncu_csv(tmp_path):
    p = tmp_path / "m.csv"
    p.write_text('"ID","Process ID","Process Name","Host Name","Kernel Name"\n')
    assert sniff_format(p) is Format.NCU_CSV


@pytest.mark.parametrize("content,reason", [
    (b"", "empty file"),
    (b"\x89PNG\r\n\x1a\n garbage", "not an nsys SQLite export nor an ncu CSV"),
])
def test_unrecognized(tmp_path, content, reason):
    p = tmp_path / "x.bin"
    p.write_bytes(content)
    with pytest.raises(UnrecognizedFormatError) as e:
        sniff_format(p)
    assert e.value.reason == reason and e.value.hint and e.value.exit_code == 3


def test_garbage_named_sqlite(tmp_path):
    p = tmp_path / "x.sqlite"
    p.write_bytes(b"hello world" * 10)
    with pytest.raises(UnrecognizedFormatError, match="not a SQLite database"):
        sniff_format(p)


def test_qdstrm_says_how_to_convert(tmp_path):
    p = tmp_path / "x.qdstrm"
    p.write_bytes(b"stream")
    with pytest.raises(UnrecognizedFormatError, match="QdstrmImporter"):
        sniff_format(p)


def test_missing_and_directory(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        sniff_format(tmp_path / "nope.sqlite")
    with pytest.raises(InputError, match="is a directory") as e:
        sniff_format(tmp_path)
    assert "batch" in e.value.hint
