"""`python -m nsys_diag` == the `nsys-diag` console script."""
from nsys_diag.cli import run

if __name__ == "__main__":  # pragma: no cover
    run()
