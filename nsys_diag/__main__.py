"""`python -m nsys_diag` == the `nsys-diag` console script."""
from nsys_diag.cli import main

if __name__ == "__main__":  # pragma: no cover
    main()
