"""The typed spec language (model/schema_types.py): closed objects, typed maps, sections and
the defaults ``norm`` fills."""
from __future__ import annotations

import jsonschema
import pytest

from nsys_diag.model import schema_types as T


def test_a_spec_naming_an_optional_key_it_does_not_declare_fails():
    with pytest.raises(KeyError, match="nope"):
        T.Obj({"a": "int"}, optional=("nope",))


def test_an_object_is_closed_and_a_map_typed():
    obj = T.Obj({"a": "int", "b": "num?"}, carried={"c": "str"}, optional=("c",))
    check = jsonschema.Draft202012Validator(obj.schema())
    assert check.is_valid({"a": 1, "b": None}) and check.is_valid({"a": 1, "b": 2.5, "c": "x"})
    assert not check.is_valid({"a": 1, "b": 2.5, "d": 0})  # an undeclared key
    assert not check.is_valid({"a": 1})  # a required key missing
    m = jsonschema.Draft202012Validator(T.Map("int", names=("x", "y")).schema())
    assert m.is_valid({"x": 1}) and not m.is_valid({"x": 1.5}) and not m.is_valid({"z": 1})


def test_norm_fills_the_read_keys_and_leaves_the_carried_ones():
    obj = T.Obj({"a": T.Int(default=0), "rows": T.List("int")}, carried={"c": "str"})
    assert obj.norm({"c": "kept", "x": 1}) == {"a": 0, "rows": [], "c": "kept", "x": 1}
    assert obj.keys_text() == "a, rows[], c"


def test_a_section_has_an_unavailable_form_with_its_reason_and_hint():
    sec = T.Section(T.Obj({"n": "int"}), "Nothing here.", "capture more")
    assert sec.norm(None) == {"n": None, "available": False, "reason": "Nothing here.",
                              "hint": "capture more"}
    assert sec.norm({"available": True, "n": 3}) == {"available": True, "n": 3, "reason": None,
                                                     "hint": None}
    check = jsonschema.Draft202012Validator(sec.schema())
    assert check.is_valid({"available": False, "reason": "r"})
    assert check.is_valid({"available": True, "n": 1}) and not check.is_valid({"available": True})
