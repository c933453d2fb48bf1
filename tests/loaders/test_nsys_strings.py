"""Name capping at load (``loaders/nsys_strings.py``): a name beyond ``MAX_NAME_CHARS`` is cut."""
from __future__ import annotations

from nsys_diag.loaders.nsys_strings import ELLIPSIS, MAX_NAME_CHARS, cap_name, cap_names


def test_cap_name_keeps_normal_names_and_cuts_long_ones():
    assert cap_name("ampere_sgemm_128x64_nn") == "ampere_sgemm_128x64_nn"
    edge = "x" * MAX_NAME_CHARS
    assert cap_name(edge) is edge
    cut = cap_name("y" * (MAX_NAME_CHARS + 1))
    assert cut == "y" * MAX_NAME_CHARS + ELLIPSIS


def test_cap_names_counts_what_it_cut():
    labels = ["a", "b" * (3 * MAX_NAME_CHARS), "", "c" * (MAX_NAME_CHARS + 5)]
    capped, cut = cap_names(labels)
    assert cut == 2 and capped[0] == "a" and capped[2] == ""
    assert all(len(t) <= MAX_NAME_CHARS + 1 for t in capped)
    same, none = cap_names(["a", "b"])
    assert none == 0 and same == ["a", "b"]
