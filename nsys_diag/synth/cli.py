"""Command line of the trace generator (``python -m nsys_diag.synth``; argparse, no click).

    python -m nsys_diag.synth --write-samples sample_traces        # what `make samples` runs
    python -m nsys_diag.synth PRESET OUT.sqlite [--schema V] [--steps N] [--scale K] [--seed S]
                                               [--shuffle SEED]
                                               [--env NAME=VALUE ...] [--expected]
    python -m nsys_diag.synth --list

Exit 0 on success, 2 on a usage error (argparse), 1 for a malformed ``--env``.
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from typing import Any

from nsys_diag.synth.answers import expected
from nsys_diag.synth.presets import PRESETS, preset
from nsys_diag.synth.samples import write_samples
from nsys_diag.synth.schema import ALL_SCHEMAS
from nsys_diag.synth.writer import write_nsys_sqlite


def _parse_env(items: list[str]) -> dict[str, str]:
    env = {}
    for it in items:
        k, sep, val = it.partition("=")
        if not sep:
            raise SystemExit(f"--env expects NAME=VALUE, got {it!r}")
        env[k] = val
    return env


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m nsys_diag.synth",
                                 description="Write synthetic nsys SQLite exports with known answers.")
    ap.add_argument("preset", nargs="?", help=f"one of: {', '.join(PRESETS)}")
    ap.add_argument("out", nargs="?", help="output .sqlite path")
    ap.add_argument("--schema", default="2024.6", choices=ALL_SCHEMAS)
    ap.add_argument("--steps", type=int, help="number of steps (step 0 is the warm-up)")
    ap.add_argument("--scale", type=float, default=1.0,
                    help="multiply kernel counts by K (durations / K: same shares, more rows)")
    ap.add_argument("--seed", type=int)
    ap.add_argument("--shuffle", type=int, metavar="SEED",
                    help="write every event table in this seed's random row order (nsys >= 2025.6 "
                         "no longer promises timestamp order)")
    ap.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                    help="add an environment variable to the capture (repeatable)")
    ap.add_argument("--expected", action="store_true", help="print the expected answers (JSON)")
    ap.add_argument("--write-samples", metavar="DIR", help="regenerate the sample_traces/ files")
    ap.add_argument("--list", action="store_true", help="list presets and schema variants")
    a = ap.parse_args(argv)
    if a.list:
        for name in PRESETS:
            sc = preset(name)
            print(f"{name:16s} {sc.expected_verdict:32s} {sc.description}")
        print("schemas:", ", ".join(ALL_SCHEMAS))
        return 0
    if a.write_samples:
        for p in write_samples(a.write_samples):
            print(f"wrote {p} ({p.stat().st_size // 1024} KiB)")
        return 0
    if not a.preset or not a.out:
        ap.error("give PRESET OUT.sqlite, or --write-samples DIR, or --list")
    if a.preset not in PRESETS:
        ap.error(f"unknown preset {a.preset!r}; choose one of {', '.join(PRESETS)}")
    ov: dict[str, Any] = {"scale": a.scale}
    if a.steps is not None:
        ov["steps"] = a.steps
    if a.seed is not None:
        ov["seed"] = a.seed
    if a.shuffle is not None:
        ov["shuffle_seed"] = a.shuffle
    sc = preset(a.preset, **ov)
    if a.env:
        sc = replace(sc, env={**sc.env, **_parse_env(a.env)})
    path = write_nsys_sqlite(a.out, sc, a.schema)
    print(f"wrote {path} ({path.stat().st_size // 1024} KiB, schema {a.schema})", file=sys.stderr)
    if a.expected:
        print(json.dumps(expected(sc), indent=2))
    return 0

