"""Where the Jinja templates are.

The repo keeps them at the top level (``templates/``); the wheel ships them as
``nsys_diag/templates`` (hatch ``force-include`` in pyproject.toml). An installed wheel therefore
finds them inside the package; an editable checkout finds them at the repository root.
"""
from __future__ import annotations

from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent.parent  # .../nsys_diag


def templates_dir() -> Path:
    """The directory holding ``base.html``: packaged copy first, else the checkout's ``templates/``.

    Raises ``FileNotFoundError`` (a packaging bug, not a user error) when neither exists.
    """
    candidates = (_PACKAGE_DIR / "templates", _PACKAGE_DIR.parent / "templates")
    for candidate in candidates:
        if (candidate / "base.html").is_file():
            return candidate
    raise FileNotFoundError(
        "nsys-diag templates not found (looked in: "
        + ", ".join(str(c) for c in candidates)
        + "); the installation is incomplete"
    )
