"""The threshold reference of docs/thresholds.md, generated from ``nsys_diag/model/thresholds.py``.

    python scripts/thresholds_doc.py            # print the reference
    python scripts/thresholds_doc.py --write    # replace the block in docs/thresholds.md

The block sits between ``<!-- thresholds:begin -->`` and ``<!-- thresholds:end -->``: one table
per ``# ---- group ----`` comment of the ``Thresholds`` dataclass, a row per field (its name, its
default as written in the source, and its docstring, the reasoning behind the number).
``tests/test_thresholds_doc.py`` asserts the doc holds what this generates.
"""
from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "nsys_diag" / "model" / "thresholds.py"
DOC = ROOT / "docs" / "thresholds.md"
BEGIN, END = "<!-- thresholds:begin -->", "<!-- thresholds:end -->"
_GROUP = re.compile(r"^\s*# -+ (.+?) -+\s*$")


def _cell(text: str) -> str:
    """One Markdown table cell: a single line, pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def fields(source: str | None = None) -> list[tuple[str, str, str, str]]:
    """(group, name, default, docstring) of every field of ``Thresholds``, in source order."""
    source = source if source is not None else SOURCE.read_text(encoding="utf-8")
    lines = source.splitlines()
    cls = next(n for n in ast.parse(source).body
               if isinstance(n, ast.ClassDef) and n.name == "Thresholds")
    out, group, body = [], "", cls.body
    for i, node in enumerate(body):
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            continue
        for line in lines[(body[i - 1].end_lineno if i else cls.lineno):node.lineno - 1]:
            m = _GROUP.match(line)
            group = m.group(1) if m else group
        nxt = body[i + 1] if i + 1 < len(body) else None
        doc = (nxt.value.value if isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant)
               and isinstance(nxt.value.value, str) else "")
        default = ast.get_source_segment(source, node.value) if node.value else ""
        out.append((group, node.target.id, default or "", doc))
    return out


def reference(source: str | None = None) -> str:
    """The Markdown block: a table per group."""
    parts: list[str] = []
    group = None
    for g, name, default, doc in fields(source):
        if g != group:
            group = g
            parts += ["", f"### {g}", "", "| threshold | default | what it means, and why this number |",
                      "|---|---|---|"]
        parts.append(f"| `{name}` | `{_cell(default)}` | {_cell(doc)} |")
    return "\n".join(parts).lstrip("\n") + "\n"


def doc_block(text: str) -> str:
    """What the doc holds between the markers (without them)."""
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{DOC.name} lacks the {BEGIN} … {END} markers")
    return text.split(BEGIN, 1)[1].split(END, 1)[0].lstrip("\n")


def main(argv: list[str]) -> int:
    block = reference()
    if "--write" not in argv:
        sys.stdout.write(block)
        return 0
    text = DOC.read_text(encoding="utf-8")
    doc_block(text)  # markers present
    head, rest = text.split(BEGIN, 1)
    DOC.write_text(head + BEGIN + "\n" + block + END + rest.split(END, 1)[1], encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
