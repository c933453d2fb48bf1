"""The Kineto JSON parse: orjson when installed (the dev extra), else ``json``; both give the same
document, and what orjson refuses (``NaN``/``Infinity`` literals, numbers beyond a double) is
still read; a cut file is a typed error either way."""
from __future__ import annotations

import json
import math
import sys

import pytest

from nsys_diag import synth
from nsys_diag.loaders.kineto_json import parse_json, read_document
from nsys_diag.model.errors import InputError
from nsys_diag.synth.kineto_writer import kineto_document
from nsys_diag.synth.timeline import build_timeline

ODD = (b'{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k\\u00e9", "ts": 1.5, '
       b'"dur": NaN, "args": {"big": 123456789012345678901234567890, "inf": Infinity}}]}')


def _documents():
    doc = kineto_document(build_timeline(synth.preset("healthy_tc")))
    return [json.dumps(doc).encode(), ODD]


@pytest.fixture(params=["orjson", "json"])
def parser(request, monkeypatch):
    if request.param == "orjson":
        pytest.importorskip("orjson")
    else:
        monkeypatch.setitem(sys.modules, "orjson", None)  # import orjson -> ImportError
    return request.param


def test_same_document_with_either_parser(parser):
    for data in _documents():
        got, want = parse_json(data), json.loads(data)
        assert json.dumps(got, sort_keys=True) == json.dumps(want, sort_keys=True)
    odd = parse_json(ODD)["traceEvents"][0]
    assert math.isnan(odd["dur"]) and odd["args"]["inf"] == math.inf
    assert odd["name"] == "k\u00e9"


def test_cut_json_is_a_typed_error_with_either_parser(parser, tmp_path):
    p = tmp_path / "cut.json"
    p.write_bytes(_documents()[0][:-40])
    with pytest.raises(InputError, match="truncated JSON"):
        read_document(p)


def test_repeated_string_ids_are_parsed_like_the_first():
    from nsys_diag.loaders.kineto_json import ints

    got = ints(["stream 7", 3, True, "stream 7", "x", 2.0, "stream 7", None, "stream 12"])
    assert got.tolist() == [7, 3, -1, 7, -1, 2, 7, -1, 12]
