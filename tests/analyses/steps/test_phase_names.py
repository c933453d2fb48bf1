"""Canonical phase names (analyses/steps/phase_names.py)."""
from __future__ import annotations

from nsys_diag.analyses.steps.phase_names import canonical_phase


def test_user_patterns_come_first_then_the_defaults_case_insensitive():
    assert canonical_phase("Forward") == "forward"
    assert canonical_phase("loss.BACKWARD") == "backward"
    assert canonical_phase("no_such_phase_name") == "other"
    user = (("data", ("^forw",)),)
    assert canonical_phase("FORWARD", user) == "data"  # the user's pattern wins
    assert canonical_phase("loss.backward", user) == "backward"  # the defaults still apply


def test_a_map_of_lists_classifies_as_its_tuple_form():
    """A phase map whose parts are lists (unhashable: not cached) gives the same phases."""
    names = ["forward", "train_step_3", "save_checkpoint", "my_loader_next", "x"]
    as_tuple = (("data", ("my_loader",)), ("overhead", ("^x$",)))
    as_list = [["data", ["my_loader"]], ["overhead", ["^x$"]]]
    got = [canonical_phase(n, as_list) for n in names]
    assert got == [canonical_phase(n, as_tuple) for n in names]
    assert got[3] == "data" and got[4] == "overhead"
