"""Layer rules (ARCHITECTURE.md): imports point down only; only cli.py imports click."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[2] / "nsys_diag"

# layer -> packages it must never import
_ABOVE_REPORT = ("nsys_diag.app", "nsys_diag.cli", "click")
FORBIDDEN = {
    "model": ("nsys_diag.loaders", "nsys_diag.analyses", "nsys_diag.report", *_ABOVE_REPORT,
              "jinja2"),
    "loaders": ("nsys_diag.analyses", "nsys_diag.report", *_ABOVE_REPORT, "jinja2"),
    "analyses": ("nsys_diag.loaders", "nsys_diag.report", *_ABOVE_REPORT, "jinja2"),
    "report": ("nsys_diag.loaders", *_ABOVE_REPORT),
    "app": ("nsys_diag.cli", "click"),
}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_layer_imports_point_down(layer):
    bad = []
    for f in sorted((PKG / layer).rglob("*.py")):
        for name in _imports(f):
            if any(name == p or name.startswith(p + ".") for p in FORBIDDEN[layer]):
                bad.append(f"{f.relative_to(PKG)} imports {name}")
    assert not bad, "\n".join(bad)


def test_only_cli_imports_click():
    users = [f.relative_to(PKG).as_posix() for f in sorted(PKG.rglob("*.py"))
             if any(n == "click" or n.startswith("click.") for n in _imports(f))]
    assert users == ["cli.py"]


def test_nothing_but_cli_and_api_imports_app():
    users = sorted(f.relative_to(PKG).as_posix() for f in PKG.rglob("*.py")
                   if not f.relative_to(PKG).as_posix().startswith("app/")
                   and any(n == "nsys_diag.app" or n.startswith("nsys_diag.app.")
                           for n in _imports(f)))
    assert users == ["api.py", "cli.py"]


def _imports_api(path: Path) -> bool:
    """Whether ``path`` imports ``nsys_diag.api`` (``import nsys_diag.api`` or
    ``from nsys_diag import api``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name == "nsys_diag.api" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (
                node.module == "nsys_diag.api"
                or (node.module == "nsys_diag" and any(a.name == "api" for a in node.names))):
            return True
    return False


def test_nothing_imports_the_api_but_the_package_lazily():
    users = sorted(f.relative_to(PKG).as_posix() for f in PKG.rglob("*.py") if _imports_api(f))
    assert users == ["__init__.py"]
    tree = ast.parse((PKG / "__init__.py").read_text(encoding="utf-8"))
    top_level = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert not any(isinstance(n, ast.ImportFrom) and n.module == "nsys_diag" for n in top_level)


def test_the_old_orchestration_modules_are_gone():
    assert not (PKG / "pipeline.py").exists() and not (PKG / "batch.py").exists()
    assert not (PKG / "profile.py").exists()


def _root_imports(path: Path) -> list[str]:
    """What ``path`` takes from the package root itself (``import nsys_diag``, or ``from
    nsys_diag import X`` where X is not a submodule, e.g. ``__version__``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name == "nsys_diag"]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module == "nsys_diag":
            found += [f"nsys_diag.{a.name}" for a in node.names
                      if not (PKG / a.name).is_dir() and not (PKG / f"{a.name}.py").is_file()]
    return found


def test_no_module_imports_the_package_root():
    """The root sits above every layer (it re-exports the API lazily): a module importing it,
    even for ``__version__`` (``nsys_diag/_version.py``), would be an arrow pointing up."""
    bad = [f"{f.relative_to(PKG)} imports {name}" for f in sorted(PKG.rglob("*.py"))
           if f != PKG / "__init__.py" for name in _root_imports(f)]
    assert not bad, "\n".join(bad)


def test_the_version_has_one_place():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+

    import nsys_diag
    from nsys_diag._version import __version__

    assert nsys_diag.__version__ == __version__
    pyproject = tomllib.loads((PKG.parent / "pyproject.toml").read_text(encoding="utf-8"))
    assert pyproject["tool"]["hatch"]["version"]["path"] == "nsys_diag/_version.py"
    assert '__version__ = "' not in (PKG / "__init__.py").read_text(encoding="utf-8")
