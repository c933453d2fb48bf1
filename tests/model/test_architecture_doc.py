"""docs/ARCHITECTURE.md describes the code as it is: every module and function it names exists."""
from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "ARCHITECTURE.md"
PKG = ROOT / "nsys_diag"

_REF = re.compile(r"`((?:model|loaders|analyses|report|app)/(?:[a-z_]+/)*[a-z_]+\.py)(?::\s*([A-Za-z_]+))?`")
_BARE = re.compile(r"`((?:[a-z_]+/)?[a-z_]+\.py)`")


def _defined_names(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {n.name for n in ast.walk(tree)
            if isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))}


def test_every_named_module_and_function_exists():
    text = DOC.read_text(encoding="utf-8")
    refs = _REF.findall(text)
    assert len(refs) >= 20, "the metric table names where each number is computed"
    missing = []
    for module, func in refs:
        path = PKG / module
        if not path.is_file():
            missing.append(module)
        elif func and func not in _defined_names(path):
            missing.append(f"{module}: {func}")
    assert not missing, missing


def test_every_layer_module_is_mentioned():
    """A new module in a layer gets its line in the layer table (or the metric table)."""
    text = DOC.read_text(encoding="utf-8")
    named = {m for m, _ in _REF.findall(text)} | set(_BARE.findall(text))
    unmentioned = []
    for layer in ("model", "loaders", "analyses", "report", "app"):
        for path in sorted((PKG / layer).rglob("*.py")):
            if path.name.startswith("_"):
                continue
            rel = path.relative_to(PKG / layer).as_posix()  # a sub-package's module: "gaps/causes.py"
            if f"{layer}/{rel}" not in named and rel not in named:
                unmentioned.append(f"{layer}/{rel}")
    assert not unmentioned, unmentioned


def test_every_document_the_code_cites_ships_in_the_repository():
    """Docstrings cite documents (``NSYS_SQLITE.md §2.1``, ``docs/JSON.md``) that are in the
    checkout — docs/ or the top level — never ones outside it."""
    cited: set[str] = set()
    for path in PKG.rglob("*.py"):
        cited |= set(re.findall(r"\b([A-Z][A-Za-z_]*\.md)\b", path.read_text(encoding="utf-8")))
        assert "../shared" not in path.read_text(encoding="utf-8"), path
    missing = sorted(n for n in cited if not (ROOT / "docs" / n).is_file() and not (ROOT / n).is_file())
    assert not missing, missing
