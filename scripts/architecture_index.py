"""Regenerate the module index of docs/ARCHITECTURE.md from the modules' docstrings.

    python scripts/architecture_index.py          # print the index
    python scripts/architecture_index.py --write  # replace the block in docs/ARCHITECTURE.md

The block sits between ``<!-- module-index:begin -->`` and ``<!-- module-index:end -->``; each
line is a module of a layer and the first sentence of its docstring.
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "ARCHITECTURE.md"
BEGIN, END = "<!-- module-index:begin -->", "<!-- module-index:end -->"
LAYERS = ("model", "loaders", "analyses", "report", "app")


def _first_sentence(path: Path) -> str:
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    first = doc.split("\n\n")[0].replace("\n", " ")
    return first.split(". ")[0].rstrip(".") + "."


def index() -> str:
    lines = []
    for layer in LAYERS:
        lines += [f"### `{layer}/`", ""]
        for path in sorted((ROOT / "nsys_diag" / layer).glob("*.py")):
            if not path.name.startswith("_"):
                lines.append(f"- `{path.name}` — {_first_sentence(path)}")
        for pkg in sorted(p for p in (ROOT / "nsys_diag" / layer).iterdir()
                          if (p / "__init__.py").is_file()):  # subpackages, e.g. chunked/
            lines.append(f"- `{pkg.name}/` — {_first_sentence(pkg / '__init__.py')}")
            for path in sorted(pkg.glob("*.py")):
                if not path.name.startswith("_"):
                    lines.append(f"  - `{pkg.name}/{path.name}` — {_first_sentence(path)}")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    text = index()
    if "--write" not in argv:
        print(text)
        return 0
    doc = DOC.read_text(encoding="utf-8")
    head, rest = doc.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    DOC.write_text(f"{head}{BEGIN}\n{text}\n{END}{tail}", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
