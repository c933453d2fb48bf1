"""``python -m nsys_diag.synth``: the generator's command line (see :mod:`nsys_diag.synth.cli`)."""
from nsys_diag.synth.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
