"""The typed spec language of the JSON contracts: the analyses' section specs (each beside its
declaration, analyses/engine/declaration.py), the report's own sections (report/contract_sections.py),
the batch index, compare and inspect schemas (report/batch_schema.py, report/command_schemas.py).

A spec is a tree of nodes; each key of an output is declared once, with its JSON type and its
default. From one tree come the JSON Schema (``schema()``), the defaults the renderers read
(``norm()``, used by ``contract.normalize``) and the key list of docs/JSON.md (``keys_text()``).

* leaves — ``Int``, ``Num``, ``Str``, ``Bool``, ``Share`` (a fraction 0..1, ``1.000001`` absorbs
  float rounding), ``Enum(*values)``, ``Const(value)``, ``Ref(name)`` (a ``$defs`` entry),
  ``Scalar`` (number, string or null); ``null=True`` allows ``null`` too. In a field table a
  shorthand string stands for a leaf: ``"int"``, ``"num"``, ``"str"``, ``"str+"`` (non-empty),
  ``"bool"``, ``"share"``, ``"scalar"``, a trailing ``?`` for nullable (``"num?"``);
* ``Obj(fields, carried=…, optional=…)`` — an object with named keys, closed
  (``additionalProperties: false``). ``fields`` are the keys ``normalize`` fills with their default
  when absent (the keys the renderers read), ``carried`` the keys the JSON also carries that
  ``normalize`` leaves alone (a node with ``read=False`` in ``fields`` is carried too, in its
  place); ``optional`` the keys an output may leave out (all others are required);
* ``Map(value)`` — an object of free names (thresholds, table names, phases) with typed values;
* ``List(item)`` — an array;
* ``Section(obj, reason, hint)`` — an optional section: its unavailable form
  ``{available: false, reason, hint}`` (``normalize`` fills ``reason``/``hint`` from here) or
  ``available: true`` with its keys; ``null=True`` lets the JSON give it as ``null`` as well.

``per_process=True`` on a top-level section marks the sections that describe one process (the
top level holds the headline process's; every ``processes[]`` row holds its own).
"""
from __future__ import annotations

import copy
from typing import Any

SHARE_MAX = 1.000001
"""Upper bound of a share: 1 plus float rounding."""

_JSON_TYPES = {"int": "integer", "num": "number", "str": "string", "bool": "boolean",
               "share": "number", "str+": "string"}


class Node:
    """One value of an output: its schema, its default (``norm``) and its docs text."""

    def __init__(self, *, null: bool = False, doc: str = "", per_process: bool = False,
                 default: Any = None, read: bool = True):
        self.null = null
        self.doc = doc
        self.per_process = per_process
        self.default = default
        self.read = read
        self.ref: str | None = None
        """Set: the schema names this node's ``$defs`` entry instead of repeating it."""

    def fragment(self) -> dict:
        """The JSON Schema of this node without ``null``/``description``."""
        raise NotImplementedError

    def schema(self) -> dict:
        """The JSON Schema of this node (a ``$ref`` when the node has a ``$defs`` entry)."""
        return {"$ref": f"#/$defs/{self.ref}"} if self.ref else self.definition()

    def definition(self) -> dict:
        """The JSON Schema of this node, in full."""
        node = self.fragment()
        if self.null:
            node = _nullable(node)
        if self.doc:
            node["description"] = self.doc
        return node

    def norm(self, value: Any) -> Any:
        """``value`` completed with this node's defaults (a leaf: its default when ``None``)."""
        return self.default if value is None else value

    def keys_text(self) -> str:
        """``a, b{c}, d[{e}]``: the keys inside this node, nested ('' for a leaf)."""
        return ""


def _nullable(node: dict) -> dict:
    """``node`` that also admits ``null``."""
    if "type" in node and "enum" not in node and "const" not in node:
        types = node["type"] if isinstance(node["type"], list) else [node["type"]]
        return dict(node, type=[*types, "null"] if "null" not in types else types)
    if "enum" in node:
        return dict(node, enum=[*node["enum"], None]) if None not in node["enum"] else node
    return {"oneOf": [{"type": "null"}, node]}


class Leaf(Node):
    """A JSON value described by a JSON Schema fragment."""

    def __init__(self, fragment: dict, **kw: Any):
        super().__init__(**kw)
        self._fragment = fragment

    def fragment(self) -> dict:
        return dict(self._fragment)


def Int(**kw: Any) -> Leaf:  # noqa: N802 - a type of the spec language
    return Leaf({"type": "integer"}, **kw)


def Num(**kw: Any) -> Leaf:  # noqa: N802
    return Leaf({"type": "number"}, **kw)


def Str(**kw: Any) -> Leaf:  # noqa: N802
    return Leaf({"type": "string"}, **kw)


def Bool(**kw: Any) -> Leaf:  # noqa: N802
    return Leaf({"type": "boolean"}, **kw)


def Share(**kw: Any) -> Leaf:  # noqa: N802
    """A fraction: a number in 0..1 (plus float rounding)."""
    return Leaf({"type": "number", "minimum": 0, "maximum": SHARE_MAX}, **kw)


def Scalar(**kw: Any) -> Leaf:  # noqa: N802
    """A number, a string or ``null`` (an evidence value)."""
    return Leaf({"type": ["number", "string", "null"]}, **kw)


def Enum(*values: Any, **kw: Any) -> Leaf:  # noqa: N802
    return Leaf({"enum": list(values)}, **kw)


def Const(value: Any, **kw: Any) -> Leaf:  # noqa: N802
    return Leaf({"const": value}, **kw)


def Ref(name: str, **kw: Any) -> Leaf:  # noqa: N802
    """A type defined once in the schema's ``$defs`` (``verdict_code``)."""
    return Leaf({"$ref": f"#/$defs/{name}"}, **kw)


def leaf(short: str) -> Leaf:
    """The leaf of a shorthand: ``"int"``, ``"num?"``, ``"share"``, ``"str+"``, ``"scalar"``…"""
    base, null = short.rstrip("?"), short.endswith("?")
    if base == "scalar":
        return Scalar()
    frag: dict[str, Any] = {"type": _JSON_TYPES[base]}
    if base == "share":
        frag.update(minimum=0, maximum=SHARE_MAX)
    if base == "str+":
        frag["minLength"] = 1
    return Leaf(frag, null=null)


def node_of(spec: Any) -> Node:
    """A node, or the leaf of a shorthand string."""
    return spec if isinstance(spec, Node) else leaf(spec)


class Obj(Node):
    """An object with named keys; closed (``additionalProperties: false``)."""

    def __init__(self, fields: dict[str, Any] | None = None, *, carried: dict[str, Any] | None = None,
                 optional: tuple[str, ...] = (), fill: bool = True, **kw: Any):
        super().__init__(**kw)
        self.fields = {k: node_of(v) for k, v in (fields or {}).items()}
        for key, value in (carried or {}).items():
            self.fields[key] = copy.copy(node_of(value))
            self.fields[key].read = False
        self.optional = frozenset(optional)
        self.fill = fill
        unknown = self.optional - set(self.fields)
        if unknown:
            raise KeyError(f"optional keys that are not declared: {sorted(unknown)}")

    def keys(self) -> dict[str, Node]:
        """Every declared key, in order (``read``: ``normalize`` fills it)."""
        return self.fields

    def fragment(self) -> dict:
        keys = self.keys()
        node: dict[str, Any] = {"type": "object"}
        if keys:
            node["properties"] = {k: v.schema() for k, v in keys.items()}
        required = [k for k in keys if k not in self.optional]
        if required:
            node["required"] = required
        node["additionalProperties"] = False
        return node

    def norm(self, value: Any) -> Any:
        """A copy with every key of ``fields`` completed (other keys kept as they are);
        ``None`` stays ``None`` for a nullable object, and ``fill=False`` passes the value
        through."""
        if not self.fill or (self.null and value is None):
            return value
        src = value if isinstance(value, dict) else {}
        out = dict(src)
        for key, sub in self.fields.items():
            if sub.read:
                out[key] = sub.norm(src.get(key))
        return out

    def keys_text(self) -> str:
        parts = []
        for key, sub in self.keys().items():
            inner = sub.keys_text()
            parts.append(f"{key}{{{inner}}}" if isinstance(sub, (Obj, Section)) and inner
                         else key + inner)
        return ", ".join(parts)


class Map(Node):
    """An object of free names → ``value`` (typed ``additionalProperties``)."""

    def __init__(self, value: Any, *, names: tuple[str, ...] = (), **kw: Any):
        super().__init__(**kw)
        self.value = node_of(value)
        self.names = names

    def fragment(self) -> dict:
        node: dict[str, Any] = {"type": "object", "additionalProperties": self.value.schema()}
        if self.names:
            node["propertyNames"] = {"enum": list(self.names)}
        return node

    def norm(self, value: Any) -> Any:
        if self.null and value is None:
            return None
        return dict(value) if isinstance(value, dict) else {}

    def keys_text(self) -> str:
        inner = self.value.keys_text()
        return f"{{name: {{{inner}}}}}" if inner else ""


class List(Node):
    """An array of ``item``."""

    def __init__(self, item: Any, *, min_items: int | None = None, max_items: int | None = None,
                 **kw: Any):
        super().__init__(**kw)
        self.item = node_of(item)
        self.min_items, self.max_items = min_items, max_items

    def fragment(self) -> dict:
        node: dict[str, Any] = {"type": "array", "items": self.item.schema()}
        if self.min_items is not None:
            node["minItems"] = self.min_items
        if self.max_items is not None:
            node["maxItems"] = self.max_items
        return node

    def norm(self, value: Any) -> Any:
        """A list (``[]`` when absent); rows of objects that are not objects are dropped."""
        if not isinstance(value, list):
            return []
        rows = isinstance(self.item, (Obj, Map))
        return [self.item.norm(v) for v in value if not (rows and not isinstance(v, dict))]

    def keys_text(self) -> str:
        inner = self.item.keys_text() if isinstance(self.item, (Obj, Map)) else ""
        return f"[{{{inner}}}]" if inner else "[]"


def Span(**kw: Any) -> List:  # noqa: N802
    """An interval ``[start_ns, end_ns]`` of integer ns, or ``null``."""
    return List("int", null=True, doc="[start_ns, end_ns]", **kw)


UNAVAILABLE = {"available": Const(False), "reason": Str(), "hint": Str()}


class Section(Node):
    """An optional section: ``None`` or ``available: false`` → its unavailable form, completed
    with ``reason`` and ``hint`` (what to capture) unless the output carries its own."""

    def __init__(self, spec: Obj, reason: str, hint: str = "", **kw: Any):
        super().__init__(**kw)
        self.spec = spec
        self.reason = reason
        self.hint = hint

    def fragment(self) -> dict:
        body = self.spec.fragment()
        props = body.get("properties", {})
        status = {"reason": Str(null=True).schema(), "hint": Str(null=True).schema()}
        available = dict(body, properties={"available": {"const": True}, **props, **status},
                         required=["available", *body.get("required", [])])
        missing = {"type": "object",  # the unavailable form may still carry the section's keys
                   "properties": {**{k: v.schema() for k, v in UNAVAILABLE.items()}, **props},
                   "required": ["available", "reason"], "additionalProperties": False}
        return {"oneOf": [missing, available]}

    def definition(self) -> dict:
        node = self.fragment()
        if self.null:
            node["oneOf"].insert(0, {"type": "null"})
        if self.doc:
            node["description"] = self.doc
        return node

    def norm(self, value: Any) -> dict:
        if not isinstance(value, dict) or value.get("available") is False:
            src = value if isinstance(value, dict) else {}
            out = self.spec.norm({})
            out.update({"available": False,
                        "reason": src.get("reason") or self.reason,
                        "hint": src.get("hint") if src.get("hint") is not None else self.hint})
            return out
        out = self.spec.norm(value)
        out["available"] = True
        out.setdefault("reason", None)
        out.setdefault("hint", None)
        return out

    def keys_text(self) -> str:
        return self.spec.keys_text()
