"""Fail-safe file handling (issue 27): no hang on a FIFO or device, no stale or poisoned cache
result, no half-written output, no silent read of an export still being written.

Every case that could hang runs under an alarm that fails the test instead (main thread, POSIX).
"""
from __future__ import annotations

import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
from click.testing import CliRunner

import batch_traces as bt
from nsys_diag.app import batch, cache, outputs, scheduling, trace_job
from nsys_diag.cli import main
from nsys_diag.loaders import ncu_csv
from nsys_diag.model.errors import (EXIT_BAD_INPUT, EXIT_OK, EXIT_PARTIAL_BATCH, EXIT_USAGE,
                                    UsageError)

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX only")
GEN = "2026-12-01T00:00:00Z"
REPO = Path(__file__).resolve().parents[2]


@contextmanager
def no_hang(seconds: int = 60):
    def on_alarm(signum, frame):
        raise TimeoutError(f"still running after {seconds} s: blocked on a FIFO or device?")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@pytest.fixture(autouse=True)
def _cache_in_tmp(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))


@pytest.fixture(scope="module")
def trace(tmp_path_factory) -> Path:
    return bt.write(tmp_path_factory.mktemp("fs") / "run.sqlite", bt.tiny(1, steps=6))


def _cli(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _batch(dirs, out, **kw) -> tuple[int, dict]:
    kw.setdefault("jobs", 1)
    code = batch.batch_command([str(d) for d in dirs], outdir=str(out), echo=lambda s: None,
                               generated_at=GEN, **kw)
    return code, json.loads((Path(out) / "index.json").read_text(encoding="utf-8"))


# ------------------------------------------------------------------ 1. cache poisoning
def test_a_file_changed_between_hash_and_analysis_is_never_cached(tmp_path, monkeypatch):
    a = bt.write(tmp_path / "a.sqlite", bt.tiny(1, steps=6))
    b = bt.write(tmp_path / "b.sqlite", bt.tiny(2, steps=6, data_ms=1.0, forward_ms=80.0))
    a_bytes, b_bytes = a.read_bytes(), b.read_bytes()
    d = tmp_path / "runs"
    d.mkdir()
    target = d / "run.sqlite"
    target.write_bytes(a_bytes)
    code, clean = _batch([d], tmp_path / "clean", use_cache=False)
    assert code == EXIT_OK
    expected = clean["traces"][0]["verdict"]

    real_hash_all = scheduling._hash_all

    def hash_then_swap(traces):
        hashes = real_hash_all(traces)
        target.write_bytes(b_bytes)  # the file changes after hashing, before the analysis
        return hashes

    monkeypatch.setattr(scheduling, "_hash_all", hash_then_swap)
    code, raced = _batch([d], tmp_path / "raced")
    assert code == EXIT_PARTIAL_BATCH
    (skip,) = raced["skipped"]
    assert "changed while it was being analysed" in skip["reason"]
    monkeypatch.setattr(scheduling, "_hash_all", real_hash_all)

    target.write_bytes(a_bytes)  # restored: the same content as hashed in the raced run
    code, again = _batch([d], tmp_path / "again")
    assert code == EXIT_OK
    (row,) = again["traces"]
    assert not row["cached"] and row["verdict"] == expected
    code, third = _batch([d], tmp_path / "third")
    assert third["traces"][0]["cached"] and third["traces"][0]["verdict"] == expected


def test_fingerprint_refuses_a_file_that_changes_while_hashed(tmp_path, monkeypatch):
    p = tmp_path / "grow.sqlite"
    p.write_bytes(b"x" * 3_000_000)
    real_update = hashlib.sha256
    calls = []

    class Growing:
        def __init__(self):
            self._h = real_update()

        def update(self, block):
            if not calls:
                with open(p, "ab") as fh:
                    fh.write(b"more")
            calls.append(len(block))
            self._h.update(block)

        def hexdigest(self):
            return self._h.hexdigest()

    monkeypatch.setattr(cache.hashlib, "sha256", Growing)
    with pytest.raises(Exception, match="changed while it was being read"):
        cache.fingerprint(p)


def test_cache_write_failure_leaves_no_temp_file_and_stale_ones_are_removed(tmp_path,
                                                                            monkeypatch):
    c = cache.Cache(tmp_path / "c", echo=lambda s: None)
    key = "ab" + "0" * 62
    shard = tmp_path / "c" / "ab"
    shard.mkdir(parents=True)
    stale, fresh = shard / "tmpold.tmp", shard / "tmpnew.tmp"
    stale.write_bytes(b"killed writer")
    fresh.write_bytes(b"a running writer")
    old = time.time() - 2 * cache.STALE_TMP_S
    os.utime(stale, (old, old))

    def boom(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(cache.os, "replace", boom)
    c.put(key, {"summary": {}, "view": {}})
    assert sorted(p.name for p in shard.iterdir()) == ["tmpnew.tmp"]  # ours gone, stale gone
    monkeypatch.undo()
    c.put(key, {"summary": {"s": 1}, "view": {}})
    assert c.get(key)["summary"] == {"s": 1}
    entry = shard / f"{key}.json.gz"
    entry.write_bytes(entry.read_bytes()[:-6])  # half-written: gzip's CRC/length missing
    assert c.get(key) is None


# ------------------------------------------------------------------ 2. no hang
def test_fifo_and_device_inputs_are_input_errors_not_hangs(tmp_path, trace):
    fifo = tmp_path / "pipe.sqlite"
    os.mkfifo(fifo)
    zero = tmp_path / "zero.sqlite"
    zero.symlink_to("/dev/zero")
    with no_hang():
        for args in (["analyze", str(fifo), "--no-html"], ["inspect", str(fifo)],
                     ["analyze", str(zero), "--no-html"], ["inspect", str(zero)],
                     ["analyze", str(trace), "--no-html", "--ncu", str(fifo)],
                     ["analyze", str(trace), "--no-html", "--ncu", str(zero)]):
            res = _cli(*args)
            assert res.exit_code == EXIT_BAD_INPUT, (args, res.output)
            assert "not a regular file" in res.output, (args, res.output)


def test_option_files_are_capped_and_regular_only(tmp_path, trace):
    fifo = tmp_path / "th.toml"
    os.mkfifo(fifo)
    with no_hang():
        for opt, path in (("--thresholds", fifo), ("--phase-map", fifo),
                          ("--thresholds", Path("/dev/zero")), ("--phase-map", Path("/dev/zero"))):
            res = _cli("analyze", str(trace), "--no-html", opt, str(path))
            assert res.exit_code == EXIT_USAGE, (opt, path, res.output)
            assert "not a regular file" in res.output
    big = tmp_path / "big.toml"
    big.write_bytes(b"# padding\n" * 200_000)  # 2 MB of comments: over the 1 MiB cap
    res = _cli("analyze", str(trace), "--no-html", "--thresholds", str(big))
    assert res.exit_code == EXIT_USAGE and "limit" in res.output


def test_batch_skips_fifos_and_device_symlinks_with_their_reason(tmp_path, trace):
    d = tmp_path / "runs"
    d.mkdir()
    (d / "good.sqlite").write_bytes(trace.read_bytes())
    os.mkfifo(d / "pipe.sqlite")
    os.mkfifo(d / "pipe.csv")
    (d / "zero.sqlite").symlink_to("/dev/zero")
    with no_hang():
        code, index = _batch([d], tmp_path / "out")
    assert code == EXIT_PARTIAL_BATCH
    assert [r["label"] for r in index["traces"]] == ["good.sqlite"]
    reasons = {s["label"]: s["reason"] for s in index["skipped"]}
    assert set(reasons) == {"pipe.sqlite", "pipe.csv", "zero.sqlite"}
    assert "named pipe" in reasons["pipe.sqlite"] and "character device" in reasons["zero.sqlite"]


def test_ncu_csv_caps_columns_and_size(tmp_path, monkeypatch):
    wide = tmp_path / "wide.csv"
    header = ",".join(f'"m{i}"' for i in range(100_000))
    wide.write_text(f'"ID","Kernel Name",{header}\n"0","k",' + ",".join(["1"] * 100_000) + "\n")
    with no_hang(30):
        res = _cli("analyze", str(wide), "--no-html")
    assert res.exit_code == EXIT_BAD_INPUT and "columns" in res.output
    monkeypatch.setattr(ncu_csv, "MAX_NCU_CSV_BYTES", 100)
    small = tmp_path / "k.csv"
    small.write_text('"ID","Kernel Name","gpu__time_duration.sum"\n' + '"0","k","1"\n' * 20)
    res = _cli("analyze", str(small), "--no-html")
    assert res.exit_code == EXIT_BAD_INPUT and "limit" in res.output


# ------------------------------------------------------------------ 3. atomic outputs
def test_a_planted_symlink_at_the_output_is_replaced_not_followed(tmp_path, trace):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    local = tmp_path / "run.sqlite"
    local.write_bytes(trace.read_bytes())
    html = tmp_path / "run.nsys-diag.html"
    html.symlink_to(victim)
    js = tmp_path / "out.json"
    js.symlink_to(victim)
    res = _cli("analyze", str(local), "--json", str(js))
    assert res.exit_code == EXIT_OK, res.output
    assert victim.read_text() == "precious"
    assert not html.is_symlink() and html.read_text().lstrip().startswith("<!")
    assert not js.is_symlink() and json.loads(js.read_text())["verdict"]
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_a_failed_write_keeps_the_previous_file_and_leaves_nothing(tmp_path, monkeypatch):
    dest = tmp_path / "report.json"
    dest.write_text("previous good report")
    dest.chmod(0o640)

    def cut_off(*a, **k):
        raise OSError(27, "File too large")

    monkeypatch.setattr(outputs.os, "replace", cut_off)
    with pytest.raises(UsageError, match="cannot write the JSON"):
        outputs.write_file(str(dest), "{}" * 1000, "the JSON")
    assert dest.read_text() == "previous good report"
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]
    monkeypatch.undo()
    outputs.write_file(str(dest), "new", "the JSON")
    assert dest.read_text() == "new" and (dest.stat().st_mode & 0o777) == 0o640


def test_ulimit_f_leaves_the_previous_report_whole(tmp_path, trace):
    resource = pytest.importorskip("resource")
    out = tmp_path / "r.json"
    out.write_text("previous")

    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONDONTWRITEBYTECODE="1")
    proc = subprocess.run([sys.executable, "-m", "nsys_diag.cli", "analyze", str(trace),
                           "--no-html", "--json", str(out)], capture_output=True, text=True,
                          preexec_fn=limit, env=env, timeout=300, check=False)
    assert proc.returncode == EXIT_USAGE, proc.stderr
    assert "cannot write the JSON" in proc.stderr
    assert out.read_text() == "previous"
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]


def test_unwritable_outputs_are_usage_errors_everywhere(tmp_path, trace):
    blocker = tmp_path / "file"  # a file where a directory must be: never writable, even as root
    blocker.write_text("a file, not a directory")
    d = tmp_path / "runs"
    d.mkdir()
    (d / "run.sqlite").write_bytes(trace.read_bytes())
    cases = [["inspect", str(trace), "--json", str(blocker / "i.json")],
             ["batch", str(d), "-o", str(blocker / "out")],
             ["batch", str(d), "-o", str(tmp_path / "b"), "--json", str(blocker / "x.json")],
             ["compare", str(trace), str(trace), "--md", str(blocker / "c.md")],
             ["compare", str(trace), str(trace), "-o", str(blocker / "c.html")],
             ["compare", str(trace), str(trace), "--json", str(blocker / "c.json")]]
    for args in cases:
        res = _cli(*args)
        assert res.exit_code == EXIT_USAGE, (args, res.output)
        assert "cannot" in res.output and "This is a bug" not in res.output


# ------------------------------------------------------------------ 4. exports being written
def _writer_copy(trace: Path, tmp_path: Path) -> Path:
    p = tmp_path / "live.sqlite"
    p.write_bytes(trace.read_bytes())
    return p


def test_an_export_with_an_uncheckpointed_wal_is_an_input_error(tmp_path, trace):
    p = _writer_copy(trace, tmp_path)
    con = sqlite3.connect(p, isolation_level=None)
    try:
        con.execute("PRAGMA journal_mode=WAL")
        con.execute("PRAGMA wal_autocheckpoint=0")
        con.execute("DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE rowid % 2 = 0")
        before = _digest(p)
        res = _cli("analyze", str(p), "--no-html")
        assert res.exit_code == EXIT_BAD_INPUT, res.output
        assert "still being written" in res.output
        assert _digest(p) == before  # read-only: the file itself is untouched
    finally:
        con.close()
    assert _cli("analyze", str(p), "--no-html").exit_code == EXIT_OK  # checkpointed on close


def test_an_export_with_a_hot_journal_is_an_input_error(tmp_path, trace):
    p = _writer_copy(trace, tmp_path)
    con = sqlite3.connect(p, isolation_level=None)
    try:
        con.execute("PRAGMA cache_size=1")  # pages spill: the journal is written mid-transaction
        con.execute("BEGIN")
        con.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = start + 1")
        assert (tmp_path / "live.sqlite-journal").stat().st_size > 0
        res = _cli("inspect", str(p))
        assert res.exit_code == EXIT_BAD_INPUT, res.output
        assert "still being written" in res.output
    finally:
        con.execute("ROLLBACK")
        con.close()
    assert _cli("inspect", str(p)).exit_code == EXIT_OK


# ------------------------------------------------------------------ 5. private temp exports
def test_no_cache_exports_go_to_a_private_directory_and_planted_files_are_not_trusted(
        tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(trace_job.tempfile, "tempdir", None)
    d = trace_job.private_export_dir()
    assert d.is_dir() and (d.stat().st_mode & 0o777) == 0o700
    assert trace_job.private_export_dir() == d  # verified and reused
    d.chmod(0o777)  # loose permissions: not trusted, a fresh mkdtemp instead
    other = trace_job.private_export_dir()
    assert other != d and (other.stat().st_mode & 0o777) == 0o700
    d.chmod(0o700)
    planted = d / "exports" / "f00d.sqlite"
    planted.parent.mkdir(mode=0o700)
    planted.symlink_to(tmp_path / "attacker.sqlite")
    (tmp_path / "attacker.sqlite").write_bytes(b"SQLite format 3\x00" + b"\0" * 200)
    assert not trace_job._reusable_export(planted)
    monkeypatch.setattr(trace_job.shutil, "which", lambda name: None)
    with pytest.raises(Exception, match="nsys"):
        trace_job.export_nsys_rep(tmp_path / "x.nsys-rep", "f00d", None)


# ------------------------------------------------------------------ 6. option values
@pytest.mark.parametrize("args", [["--window", "1e400s:2e400s"], ["--window", "0:1e30s"],
                                  ["--chunk-rows", "1"]])
def test_unusable_option_values_are_usage_errors(trace, args):
    res = _cli("analyze", str(trace), "--no-html", *args)
    assert res.exit_code == EXIT_USAGE, res.output
    assert "This is a bug" not in res.output


# ------------------------------------------------------------------ 6. Dask workers
def test_dask_workers_get_absolute_paths(tmp_path, monkeypatch, trace):
    distributed = pytest.importorskip("dask.distributed", reason="dask[distributed] not installed")
    submitted: list[str] = []

    class Done:
        def __init__(self, value):
            self._value = value

        def result(self):
            return self._value

    class FakeClient:  # a worker whose working directory is not ours: only absolute paths work
        def submit(self, fn, path, *args, pure=True):
            submitted.append(path)
            return Done(fn(path, *args))

        def close(self):
            pass

    monkeypatch.setattr(scheduling, "dask_client", lambda scheduler, jobs: (FakeClient(), None))
    monkeypatch.setattr(distributed, "as_completed", lambda futures: futures)
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "a.sqlite").write_bytes(trace.read_bytes())
    monkeypatch.chdir(tmp_path)
    code, index = _batch(["runs"], "out", scheduler="tcp://scheduler:8786")
    assert code == EXIT_OK and index["traces"][0]["label"] == "a.sqlite"
    assert submitted == [str(tmp_path / "runs" / "a.sqlite")]


def test_ncu_option_refuses_a_sqlite_file_before_reading_it(tmp_path, trace, monkeypatch):
    def no_full_read(*a, **k):
        raise AssertionError("the whole file was read")

    monkeypatch.setattr(ncu_csv, "read_capped", no_full_read)
    res = _cli("analyze", str(trace), "--no-html", "--ncu", str(trace))
    assert res.exit_code == EXIT_BAD_INPUT and "not an ncu CSV" in res.output


def test_a_fifo_planted_as_a_cache_entry_is_a_miss(tmp_path):
    c = cache.Cache(tmp_path / "c")
    key = "cd" + "1" * 62
    (tmp_path / "c" / "cd").mkdir(parents=True)
    os.mkfifo(tmp_path / "c" / "cd" / f"{key}.json.gz")
    with no_hang(30):
        assert c.get(key) is None
