"""The package version, in one place: the build reads it (pyproject ``[tool.hatch.version]
path``), ``nsys_diag`` re-exports it as ``nsys_diag.__version__``, and modules inside the package
import it from here (never from the package root, which sits above every layer)."""

__version__ = "0.1.0"
