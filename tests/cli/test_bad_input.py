"""Every kind of broken input: exit code 3, one line with path + reason + hint, no traceback."""
from __future__ import annotations

import hashlib
import os
import random
import pathlib

import pytest
from click.testing import CliRunner

from conftest import shared_trace
from nsys_diag.cli import main
from tiny_nsys import write_plain_sqlite, write_tiny_nsys


def run(*args):
    result = CliRunner().invoke(main, list(args))
    return result, result.output  # click >= 8.2: stdout and stderr interleaved


def assert_bad_input(path, reason, hint=None):
    result, text = run("inspect", str(path))
    assert result.exit_code == 3, text
    assert isinstance(result.exception, SystemExit)
    assert "Traceback" not in text
    line = [ln for ln in text.splitlines() if ln.startswith("nsys-diag: error:")]
    assert len(line) == 1, text
    assert f"cannot read {path}" in line[0] and reason in line[0], line[0]
    if hint:
        assert "(hint: " in line[0] and hint in line[0], line[0]
    return line[0]


def test_garbage_bytes(tmp_path):
    p = tmp_path / "garbage.bin"
    # seeded, and not opening like JSON or gzip (a PyTorch profiler trace is sniffed by its
    # first bytes: unseeded bytes made this test fail now and then)
    data = random.Random(26).randbytes(64).replace(b"SQLite", b"x")
    assert data[:1] not in (b"{", b"[", b" ", b"\t", b"\r", b"\n", b"\x1f")
    p.write_bytes(data + b"\x00\xff" * 100)
    assert_bad_input(p, "not an nsys SQLite export nor an ncu CSV", "nsys export --type sqlite")


def test_garbage_named_sqlite(tmp_path):
    p = tmp_path / "report.sqlite"
    p.write_bytes(b"this is not a database\n" * 20)
    assert_bad_input(p, "not a SQLite database", "nsys export --type sqlite")


def test_empty_file(tmp_path):
    p = tmp_path / "empty.sqlite"
    p.write_bytes(b"")
    assert_bad_input(p, "empty file", "nsys export --type sqlite")


def test_truncated_sqlite(tmp_path):
    data = write_tiny_nsys(tmp_path / "full.sqlite").read_bytes()
    p = tmp_path / "truncated.sqlite"
    p.write_bytes(data[: len(data) // 3])
    assert_bad_input(p, "truncated SQLite file", "re-export")


def test_truncated_real_trace(tmp_path):
    data = shared_trace("nsys/fastvideo_train_2xh100_2026.2.sqlite").read_bytes()
    p = tmp_path / "cut.sqlite"
    p.write_bytes(data[:1_300_000])
    assert_bad_input(p, "truncated", "re-export")


def test_corrupt_sqlite_pages(tmp_path):
    data = write_tiny_nsys(tmp_path / "full.sqlite").read_bytes()
    p = tmp_path / "corrupt.sqlite"
    p.write_bytes(data[:100] + b"\xa5" * (len(data) - 100))
    assert_bad_input(p, "corrupt or truncated SQLite database (sqlite: ", "re-export")


def test_sqlite_that_is_not_an_nsys_export(tmp_path):
    p = write_plain_sqlite(tmp_path / "app.sqlite")
    line = assert_bad_input(p, "not an Nsight Systems export", "nsys export --type sqlite")
    assert "StringIds" in line and "users" in line  # names what is missing and what is there


@pytest.mark.parametrize("name", ["report.nsys-rep", "report.qdrep"])
def test_report_file_without_nsys(tmp_path, monkeypatch, name):
    monkeypatch.setenv("PATH", str(tmp_path))  # no nsys
    p = tmp_path / name
    p.write_bytes(b"\x00NSYS binary report")
    digest = hashlib.sha256(p.read_bytes()).hexdigest()
    assert_bad_input(p, "Nsight Systems report",
                     f"nsys export --type sqlite --output report.sqlite {name}")
    assert hashlib.sha256(p.read_bytes()).hexdigest() == digest


def test_unreadable_path(tmp_path, monkeypatch):
    p = write_tiny_nsys(tmp_path / "secret.sqlite")
    if os.geteuid() != 0:
        p.chmod(0)
    else:  # root reads anything: make the open itself fail the way a permission error does
        real_open = pathlib.Path.open

        def deny(self, *a, **kw):
            if self == p:
                raise PermissionError(13, "Permission denied", str(self))
            return real_open(self, *a, **kw)
        monkeypatch.setattr(pathlib.Path, "open", deny)
        real_os_open = os.open

        def deny_fd(path, *a, **kw):  # inputs are opened with os.open (regular files only)
            if pathlib.Path(path) == p:
                raise PermissionError(13, "Permission denied", str(path))
            return real_os_open(path, *a, **kw)
        monkeypatch.setattr(os, "open", deny_fd)
    try:
        assert_bad_input(p, "Permission denied", "permissions")
    finally:
        p.chmod(0o644)


def test_directory(tmp_path):
    assert_bad_input(tmp_path, "is a directory", "nsys-diag batch")


def test_missing_path(tmp_path):
    assert_bad_input(tmp_path / "nope.sqlite", "no such file")


def test_no_cuda_tables_is_not_an_error():
    p = shared_trace("nsys/dynamicvit_no_cuda_tables.sqlite")
    result, text = run("inspect", str(p))
    assert result.exit_code == 0, text
    assert "no CUDA GPU activity" in text and "-t cuda,nvtx,osrt" in text
