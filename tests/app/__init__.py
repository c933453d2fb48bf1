"""Tests of nsys_diag/app (a package so that basenames may repeat those of tests/cli)."""
