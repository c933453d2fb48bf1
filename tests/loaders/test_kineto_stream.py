"""A Kineto trace read in pieces (``loaders/kineto_stream.py``) gives what the whole read gives:
the same events in the same order, the same trace object, the same analysis, and the same typed
errors for cut or damaged text — whatever the piece size, strings with brackets, quotes and
backslashes included."""
from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest

from nsys_diag.loaders import kineto_stream
from nsys_diag.loaders.kineto_events import EventCollector
from nsys_diag.loaders.kineto_json import read_document
from nsys_diag.loaders.kineto_stream import read_events
from nsys_diag.model.errors import InputError

REAL = Path(__file__).parent / "kineto_traces"
SAMPLE = Path(__file__).resolve().parents[2] / "sample_traces" / "healthy_tc.pt.trace.json.gz"
NASTY_NAMES = ('void k<{1, 2}>(float*) [with T = "x"]', 'a"}],{[', "ends with a backslash \\",
               '\\"quoted\\"', "two \\\\", "[[[", "}}}", "naïve — ünïcode ∑", "")


def _pieces(path: Path, piece: int) -> tuple[dict, list, int]:
    batches: list = []
    doc = read_events(path, batches.append, whole_bytes=0, piece_bytes=piece)
    return doc, [e for b in batches for e in b], len(batches)


def _whole(path: Path) -> tuple[dict, list]:
    doc = read_document(path)
    return doc, doc.pop("traceEvents")


def _nasty_trace() -> dict:
    events = [{"ph": "X", "cat": "kernel", "name": n, "pid": 0, "tid": 7, "ts": 10.5 + i,
               "dur": 0.25, "args": {"correlation": i, "grid": [1, 2, 3], "note": n,
                                     "nested": {"a": [n, {"b": n}]}}}
              for i, n in enumerate(NASTY_NAMES * 3)]
    events.append({"ph": "M", "name": "thread_name", "pid": 0, "tid": 7, "args": {"name": "}"}})
    return {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "traceEvents [ ]"}],
            "note": '"traceEvents": [ inside a string',
            "traceEvents": events, "distributedInfo": {"rank": 3, "world_size": 4},
            "traceName": "after the events"}


@pytest.mark.parametrize("trace", sorted(REAL.glob("*.json.gz")) + [SAMPLE], ids=lambda p: p.name)
def test_real_traces_read_in_pieces_equal_the_whole_read(trace):
    want_doc, want = _whole(trace)
    doc, got, n = _pieces(trace, 1024)
    assert got == want
    assert doc.pop("traceEvents") == [] and doc == want_doc
    assert n > 1


@pytest.mark.parametrize("piece", [1, 2, 7, 64, 1000])
@pytest.mark.parametrize("compressed", [False, True])
@pytest.mark.parametrize("fast_tries", [0, 2])
def test_strings_with_brackets_quotes_and_backslashes_never_cut_an_event(
        tmp_path, monkeypatch, piece, compressed, fast_tries):
    """Cut by the scan of each piece (``FAST_TRIES`` 0) and by the parse of candidate cuts."""
    monkeypatch.setattr(kineto_stream, "FAST_TRIES", fast_tries)
    text = json.dumps(_nasty_trace(), indent=1, ensure_ascii=False).encode()
    path = tmp_path / ("t.json.gz" if compressed else "t.json")
    path.write_bytes(gzip.compress(text) if compressed else text)
    doc, got, n = _pieces(path, piece)
    want = json.loads(text)
    assert got == want.pop("traceEvents")
    assert doc.pop("traceEvents") == [] and doc == want
    assert n > 1


def test_the_grouped_events_do_not_depend_on_the_batches(tmp_path):
    path = tmp_path / "t.json"
    path.write_text(json.dumps(_nasty_trace()))
    whole, pieces = EventCollector(), EventCollector()
    read_events(path, whole.add)
    read_events(path, pieces.add, whole_bytes=0, piece_bytes=50)
    a, b = whole.events(), pieces.events()
    assert a.tables == b.tables and a.origin_us == b.origin_us
    ga, gb = a.groups["kernel"], b.groups["kernel"]
    assert ga.name == gb.name and (ga.ts == gb.ts).all() and (ga.end == gb.end).all()
    assert all((ga.args[k] == gb.args[k]).all() for k in ga.args)
    assert a.metadata == b.metadata


def test_an_analysis_in_pieces_is_byte_identical(tmp_path):
    """The whole ``analyze --json`` of a real trace, read at once and in 4 KiB pieces."""
    env = dict(os.environ, SOURCE_DATE_EPOCH="0")
    code = ("import sys\nfrom nsys_diag.loaders import kineto_stream as ks\n"
            "if sys.argv[2] == 'pieces':\n    ks.WHOLE_TEXT_BYTES, ks.PIECE_BYTES = 0, 4096\n"
            "from nsys_diag.cli import main\nsys.argv = ['nsys-diag', 'analyze', sys.argv[1], "
            "'--json', '-', '--no-html']\nmain()\n")
    trace = str(REAL / "hta_sampled_rank-0.json.gz")
    out = [subprocess.run([sys.executable, "-c", code, trace, how], env=env, capture_output=True,
                          check=True).stdout for how in ("whole", "pieces")]
    assert len(out[0]) > 10_000 and out[0] == out[1]


@pytest.mark.parametrize("cut", [0.3, 0.7, 0.999])
def test_a_cut_trace_is_a_typed_error(tmp_path, cut):
    text = json.dumps(_nasty_trace()).encode()
    path = tmp_path / "cut.json"
    path.write_bytes(text[:int(len(text) * cut)])
    with pytest.raises(InputError, match="truncated JSON"):
        _pieces(path, 100)


def test_a_cut_gzip_stream_is_a_typed_error(tmp_path):
    raw = gzip.compress(json.dumps(_nasty_trace()).encode())
    path = tmp_path / "cut.json.gz"
    path.write_bytes(raw[:len(raw) // 2])
    with pytest.raises(InputError, match="truncated gzip stream|truncated JSON"):
        _pieces(path, 100)


def test_invalid_json_inside_the_events_is_a_typed_error(tmp_path):
    text = json.dumps(_nasty_trace()).replace('"dur": 0.25', '"dur": 0.25.1', 1)
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(InputError, match="invalid JSON"):
        _pieces(path, 100)


def test_pieces_hold_a_fraction_of_the_parsed_events(tmp_path, monkeypatch):
    """Memory: with 64 KiB pieces the Python heap's peak while the events are reduced is a
    small part of the whole parse's (which holds every event dict at once)."""
    events = [{"ph": "X", "cat": "cpu_op", "name": f"aten::op{i % 50}", "pid": 1, "tid": 2,
               "ts": 1.0 + i, "dur": 0.5, "args": {"Input Dims": [[8, 16], [16]],
                                                   "External id": i}} for i in range(40_000)]
    path = tmp_path / "big.json"
    path.write_text(json.dumps({"traceEvents": events}))
    del events

    def peak(**kw) -> int:
        c = EventCollector()
        tracemalloc.start()
        read_events(path, c.add, **kw)
        c.events()
        out = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return out

    whole, pieces = peak(), peak(whole_bytes=0, piece_bytes=64 << 10)
    assert pieces < whole / 3


def test_a_trace_over_the_whole_read_size_is_read_in_pieces(tmp_path, monkeypatch):
    path = tmp_path / "t.json"
    path.write_text(json.dumps(_nasty_trace()))
    monkeypatch.setattr(kineto_stream, "WHOLE_TEXT_BYTES", 100)
    monkeypatch.setattr(kineto_stream, "PIECE_BYTES", 200)
    batches: list = []
    read_events(path, batches.append)
    assert len(batches) > 1


def test_a_trace_whose_events_key_comes_late_is_parsed_at_once(tmp_path, monkeypatch):
    monkeypatch.setattr(kineto_stream, "MAX_PREFIX_BYTES", 64)
    doc = {"otherData": {"note": "x" * 500},
           "traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1.0, "dur": 2.0,
                            "pid": 0, "tid": 7}]}
    path = tmp_path / "late.json"
    path.write_text(json.dumps(doc))
    batches: list = []
    got = read_events(path, batches.append, whole_bytes=32)
    assert [e for b in batches for e in b] == doc["traceEvents"]
    assert got == {**read_document(path), "traceEvents": []}
    (tmp_path / "none.json").write_text(json.dumps({"otherData": {"note": "x" * 500}}))
    with pytest.raises(InputError, match="traceEvents"):
        read_events(tmp_path / "none.json", batches.append, whole_bytes=32)
