""".nsys-rep / .qdrep conversion through a fake `nsys` on PATH (nsys_rep.py)."""
from __future__ import annotations

import hashlib
import json
import os
import sys
import textwrap
from pathlib import Path

import pytest

from nsys_diag.loaders import load_trace
from nsys_diag.loaders import nsys_rep
from nsys_diag.loaders.nsys_rep import export_to_sqlite
from nsys_diag.model.errors import InputError
from tiny_nsys import write_tiny_nsys

FAKE = textwrap.dedent('''\
    #!{python}
    import json, os, shutil, sys
    args = sys.argv[1:]
    with open(os.environ["FAKE_NSYS_LOG"], "a") as log:
        log.write(json.dumps(args) + "\\n")
    if os.environ.get("FAKE_NSYS_FAIL"):
        print("ERROR: report file is damaged", file=sys.stderr)
        open(args[args.index("--output") + 1], "wb").write(b"partial")
        sys.exit(1)
    assert args[:3] == ["export", "--type", "sqlite"], args
    shutil.copyfile(os.environ["FAKE_NSYS_TEMPLATE"], args[args.index("--output") + 1])
''')


def sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


@pytest.fixture
def fake_nsys(tmp_path, monkeypatch):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    exe = bindir / "nsys"
    exe.write_text(FAKE.format(python=sys.executable))
    exe.chmod(0o755)
    log = tmp_path / "nsys.log"
    monkeypatch.setenv("PATH", str(bindir))
    monkeypatch.setenv("FAKE_NSYS_LOG", str(log))
    monkeypatch.setenv("FAKE_NSYS_TEMPLATE", str(write_tiny_nsys(tmp_path / "template.sqlite")))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))

    def calls():
        return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return calls


def make_report(directory: Path, name="run.nsys-rep") -> Path:
    directory.mkdir(exist_ok=True)
    rep = directory / name
    rep.write_bytes(b"\x00fake nsys report\xff")
    return rep


def test_without_nsys_the_hint_is_the_export_command(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no nsys there
    rep = make_report(tmp_path / "d")
    before = sha(rep)
    with pytest.raises(InputError) as e:
        load_trace(rep)
    assert e.value.hint == "nsys export --type sqlite --output run.sqlite run.nsys-rep"
    assert "not on PATH" in e.value.reason and e.value.exit_code == 3
    assert sha(rep) == before and sorted(os.listdir(rep.parent)) == ["run.nsys-rep"]


def test_converts_beside_the_report_then_reuses(tmp_path, fake_nsys):
    rep = make_report(tmp_path / "d")
    before = sha(rep), rep.stat().st_mtime_ns
    b = load_trace(rep)
    assert len(b.kernels) == 3 and b.meta.extra["converted_from"] == str(rep)
    out = rep.with_name("run.sqlite")
    assert out.exists()
    (call,) = fake_nsys()
    assert call[:4] + call[5:] == ["export", "--type", "sqlite", "--output", str(rep.resolve())]
    partial = Path(call[4])  # exported under a temporary name beside it, then renamed
    assert partial.parent == out.parent and partial.name.startswith(".run.") and not partial.exists()
    assert (sha(rep), rep.stat().st_mtime_ns) == before
    assert export_to_sqlite(rep) == out.resolve()
    assert len(fake_nsys()) == 1  # reused, not exported again


def test_qdrep_is_converted_too(tmp_path, fake_nsys):
    rep = make_report(tmp_path / "d", "old.qdrep")
    assert len(load_trace(rep).kernels) == 3
    assert (rep.parent / "old.sqlite").exists()


def test_never_overwrites_an_existing_older_file(tmp_path, fake_nsys):
    d = tmp_path / "d"
    d.mkdir()
    mine = d / "run.sqlite"
    mine.write_bytes(b"user's own file")
    os.utime(mine, (1, 1))
    rep = make_report(d)
    out = export_to_sqlite(rep)
    assert mine.read_bytes() == b"user's own file"
    assert out.parent == tmp_path / "cache" / "nsys-diag" / "exports"


def test_unwritable_directory_goes_to_the_cache(tmp_path, fake_nsys, monkeypatch):
    rep = make_report(tmp_path / "ro")
    real_access = os.access
    monkeypatch.setattr(nsys_rep.os, "access", lambda path, mode, **kw:
                        False if Path(path) == rep.parent.resolve() else real_access(path, mode, **kw))
    out = export_to_sqlite(rep)
    assert out.parent == tmp_path / "cache" / "nsys-diag" / "exports" and out.exists()
    assert sorted(os.listdir(rep.parent)) == ["run.nsys-rep"]


def test_failed_export_is_an_input_error_without_leftovers(tmp_path, fake_nsys, monkeypatch):
    monkeypatch.setenv("FAKE_NSYS_FAIL", "1")
    rep = make_report(tmp_path / "d")
    with pytest.raises(InputError, match="nsys export. failed .exit 1: ERROR: report file is damaged"):
        load_trace(rep)
    assert sorted(os.listdir(rep.parent)) == ["run.nsys-rep"]
