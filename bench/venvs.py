"""A peer tool's own virtualenv for the benchmark (nsys-ai, Holistic Trace Analysis): created
with the pinned packages when missing, so that its dependencies never meet ours."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def create_venv(venv: Path, pins: tuple[str, ...], what: str) -> str | None:
    """Create ``venv`` and pip-install ``pins`` into it; None when done, else why not (the last
    line pip printed). Raises ``OSError``/``CalledProcessError`` when the venv cannot be made."""
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True)
    r = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", *pins],
                       capture_output=True, text=True)
    if r.returncode:
        tail = (r.stderr.strip().splitlines() or ["?"])[-1]
        return f"pip install of {what} failed: {tail}"
    return None
