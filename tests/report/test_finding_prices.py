"""What a finding says its fix saves agrees with the replay beside it: a what-if that found nothing
to change prices nothing, a saving over a step-less window says "of the window", and a cause
no what-if removes shows the what-if that bounds it (``report/view.with_savings``,
``report/evidence.finding_saving``, ``analyses/diagnosis/pricing.UPPER_BOUND``)."""
from __future__ import annotations

import json

import pytest

from nsys_diag.analyses.diagnosis.pricing import UPPER_BOUND
from nsys_diag.app.analyze import analyze_path
from nsys_diag.app.options import build_options
from nsys_diag.report.evidence import finding_saving
from nsys_diag.synth import programs
from tests.conftest import shared_trace


def _doc(path) -> dict:
    return json.loads(json.dumps(analyze_path(str(path), build_options(memory_budget="none"),
                                              generated_at="t"), default=str))


@pytest.fixture(scope="module")
def docs(tmp_path_factory):
    root = tmp_path_factory.mktemp("prices")
    return {name: _doc(programs.write_case(name, root / f"{name}.sqlite"))
            for name in ("openacc", "host_writes", "mpi_saxpy")}


def _finding(doc: dict, cause: str) -> dict:
    return next(f for f in doc["findings"] if f["cause"] == cause)


def _what_if(doc: dict, wid: str) -> dict:
    return next(w for w in doc["replay"]["what_if"] if w["id"] == wid)


def test_the_host_code_after_a_sync_shows_the_deferred_sync_as_its_upper_bound(docs):
    """OpenACC: the host's own code after each wait idles the GPU 58% of the window; no what-if
    removes it, but deferring the waits (no_host_sync) saves 286 ms of the window in the replay
    table — the finding says both, and the verdict still decides by the measured cost."""
    doc = docs["openacc"]
    f, w = _finding(doc, "host_cpu"), _what_if(doc, UPPER_BOUND["host_cpu"])
    assert f["fired"] and f["saves_ms_per_step"] is None and w["saves_ms_per_step"] > 0
    assert f["saves_upper_bound_ms"] == pytest.approx(w["saves_ms_per_step"])
    assert f["saves_upper_bound_what_if"] == "no_host_sync" and f["saves_basis"] == "window"
    text = finding_saving(f)
    assert text.startswith("not priced: no what-if of the replay removes the host's own code")
    assert "at most" in text and "of the window" in text and "no_host_sync" in text
    assert doc["verdict"]["code"] == "overhead_bound"
    unpriced = next(e for e in doc["verdict"]["evidence"] if e["metric"] == "replay.unpriced")
    assert "removes the host's own code" in unpriced["value"]


def test_a_saving_over_a_window_without_steps_is_not_called_per_step(docs):
    """host_writes has no steps: the replay prices the window, and the finding says so."""
    f = _finding(docs["host_writes"], "host_io")
    assert f["saves_basis"] == "window" and f["saves_ms_per_step"] > 0
    text = finding_saving(f)
    assert "of the window" in text and "/step" not in text
    assert f"({100 * f['saves_share']:.1f}%)" in text


class _Replay:
    """A replay result as ``with_savings`` reads it: available, its what-if rows."""

    available = True

    def __init__(self, rows: list[dict]):
        self.rows = rows

    def to_json(self) -> dict:
        return {"what_if": self.rows, "fidelity": {"basis": "steps"}}


def _row(wid: str, cause: str, saves: float, changed: bool) -> dict:
    return {"id": wid, "finding": cause, "change": f"{wid} change", "saves_ms_per_step": saves,
            "saves_range_ms": [saves, saves], "saves_share": saves / 100, "step_ms_after": 100 -
            saves, "changed": changed}


def test_a_what_if_with_nothing_to_change_prices_nothing():
    """A fired cause whose only what-if had nothing of it to change in the trace is not priced
    ('not priced: nothing … to change', never 'saves 0 ms')."""
    from nsys_diag.report.view import with_savings
    f = {"cause": "communication", "fired": True}
    (out,) = with_savings([dict(f)], _Replay([_row("hidden_communication", "communication", 0.0,
                                                   False)]))
    assert out["saves_ms_per_step"] is None and "nothing in this trace" in out["saves_reason"]
    assert finding_saving(out).startswith("not priced:")
    (out,) = with_savings([dict(f)], _Replay([
        _row("hidden_communication", "communication", 0.0, False),
        _row("instant_host_communication", "communication", 30.0, True)]))
    assert out["saves_ms_per_step"] == 30.0 and out["saves_basis"] == "step"


def test_mpi_calls_the_host_blocks_in_are_priced_and_decide(docs):
    """MPI saxpy: MPI_Send/Recv hold the host 37.8% of the window; no GPU collective exists to
    overlap, so the host-communication what-if prices the finding, and the verdict follows its
    saving (larger than the pinned copies')."""
    doc = docs["mpi_saxpy"]
    f, w = _finding(doc, "communication"), _what_if(doc, "instant_host_communication")
    assert _what_if(doc, "hidden_communication")["changed"] is False and w["changed"]
    assert f["saves_ms_per_step"] == pytest.approx(w["saves_ms_per_step"])
    assert w["saves_ms_per_step"] > _what_if(doc, "async_pinned_copies")["saves_ms_per_step"]
    assert doc["verdict"]["code"] == "communication_bound"
    priced = _finding(doc, "transfer")  # a what-if that changed copies keeps its price
    assert priced["saves_ms_per_step"] == pytest.approx(_what_if(doc, "async_pinned_copies")
                                                        ["saves_ms_per_step"])


def test_a_named_cause_of_about_the_same_cost_decides_over_unexplained_idle_time():
    """The MPI saxpy export: the host's code after cudaMemcpy (27.2%) and time no evidence
    explains (27.3%) both fired, neither priced: the named cause is the verdict."""
    path = shared_trace("nsys/saxpy_mpi_a100_2022.2.sqlite")
    doc = _doc(path)
    shares = {f["cause"]: f["share_of_window"] for f in doc["findings"] if f["fired"]}
    assert shares["other"] >= shares["host_cpu"] > 0.8 * shares["other"]
    assert doc["verdict"]["finding"] == "host_cpu"
