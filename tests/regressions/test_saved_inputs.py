"""Replay every input saved by the fuzzers (``make fuzz`` → tests/regressions/inputs/).

Each saved input once crashed, hung or produced an implausible report; it must now end as a
report (plausible numbers, inputs untouched) or a typed one-line error, within the time limit
recorded with it. An input stays here after its bug is fixed, as a regression test.
"""
from __future__ import annotations

import gzip
import json
import signal
from pathlib import Path

import pytest

from fuzz import fuzzlib as F

INPUTS = Path(__file__).resolve().parent / "inputs"
SIDECARS = sorted(INPUTS.glob("*.json"))


def _unpack(name: str, dest: Path) -> Path:
    out = dest / name[: -len(".gz")]
    out.write_bytes(gzip.decompress((INPUTS / name).read_bytes()))
    return out


@pytest.mark.parametrize("sidecar", SIDECARS, ids=[p.stem for p in SIDECARS])
def test_saved_input_ends_as_report_or_typed_error(sidecar, tmp_path):
    info = json.loads(sidecar.read_text(encoding="utf-8"))
    trace = _unpack(info["trace"], tmp_path)
    ncu = _unpack(info["ncu"], tmp_path) if info.get("ncu") else None
    limit = int(max(30, info.get("timeout_s", 60)))

    def on_alarm(signum, frame):
        raise TimeoutError(f"{sidecar.name}: still running after {limit} s (was: {info['signature']})")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(limit)
    try:
        out = F.run_case(trace, ncu=ncu, differential=True)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    assert out.kind in ("report", "typed_error")
    if info.get("expect"):  # what the fix promises for this input (set when it was fixed)
        assert out.kind == info["expect"]["kind"], out
        for code in info["expect"].get("codes", []):
            assert code in out.codes, out.codes


def test_saved_inputs_are_complete():
    """Every sidecar names files that exist (a half-saved crash would silently not run)."""
    for sidecar in SIDECARS:
        info = json.loads(sidecar.read_text(encoding="utf-8"))
        assert (INPUTS / info["trace"]).exists(), sidecar.name
        if info.get("ncu"):
            assert (INPUTS / info["ncu"]).exists(), sidecar.name
