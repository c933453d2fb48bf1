"""Prove that what a user sees is byte-identical to a base commit.

Usage::

    python scripts/check_unchanged.py BASE_COMMIT [--keep DIR] [--traces-only PATTERN]

For every trace (``*.sqlite``, ``*.csv``) in ``sample_traces/`` and ``../shared/traces/`` it runs,
once with the code of BASE_COMMIT (a temporary ``git worktree``) and once with the working tree:

* ``analyze --json`` (fixed ``SOURCE_DATE_EPOCH``), ``--md``, the terminal summary and the HTML
  (``-o`` into a scratch folder, never beside the input);
* ``inspect --json`` and its terminal text;

then a ``batch`` over ``sample_traces/`` (and ``../shared/traces/``) (``--no-cache``, empty ``XDG_CACHE_HOME``) and a
``compare --json/--md`` of a few pairs. Both runs write to the same scratch paths, so any path
embedded in an output is the same on both sides. Exit 0 when every output is byte-identical,
1 with the differing files listed otherwise. Needs the project's virtualenv (``make venv``).
"""
from __future__ import annotations

import argparse
import filecmp
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED_TRACES = REPO.parent / "shared" / "traces"
COMPARE_PAIRS = (
    ("sample_traces/healthy_tc.sqlite", "sample_traces/simt_gemm.sqlite"),
    ("sample_traces/worked_example.sqlite", "sample_traces/overhead_bound.sqlite"),
    ("sample_traces/no_cuda.sqlite", "sample_traces/inference.sqlite"),
)


def _traces() -> list[Path]:
    found = sorted(p for p in (REPO / "sample_traces").iterdir() if p.suffix in (".sqlite", ".csv"))
    if SHARED_TRACES.is_dir():
        found += sorted(p for p in SHARED_TRACES.rglob("*") if p.suffix in (".sqlite", ".csv"))
    return found


def _run(code_dir: Path, args: list[str], out: Path, name: str, env: dict) -> None:
    """Run ``nsys-diag ARGS`` with the package from ``code_dir``; keep stdout, stderr, exit code."""
    cmd = [sys.executable, "-c", "import sys; sys.argv[0]='nsys-diag'; "
           "from nsys_diag.cli import main; main()", *args]
    run_env = dict(env, PYTHONPATH=str(code_dir))
    proc = subprocess.run(cmd, cwd=out, env=run_env, capture_output=True, timeout=600)
    (out / f"{name}.stdout").write_bytes(proc.stdout)
    (out / f"{name}.stderr").write_bytes(proc.stderr)
    (out / f"{name}.rc").write_text(str(proc.returncode))


def _produce(code_dir: Path, out: Path, traces: list[Path]) -> None:
    out.mkdir(parents=True)
    cache = out / "xdg-cache"
    cache.mkdir()
    env = dict(os.environ, SOURCE_DATE_EPOCH="1700000000", XDG_CACHE_HOME=str(cache),
               COLUMNS="120", NO_COLOR="1")
    env.pop("PYTHONPATH", None)
    for i, trace in enumerate(traces):
        tag = f"{i:02d}-{trace.stem}"
        _run(code_dir, ["analyze", str(trace), "--json", f"{tag}.json", "--md", f"{tag}.md",
                        "-o", f"{tag}.html"], out, f"{tag}.analyze", env)
        _run(code_dir, ["analyze", str(trace), "--json", "-", "--no-html"], out,
             f"{tag}.analyze-json-stdout", env)
        _run(code_dir, ["inspect", str(trace), "--json", f"{tag}.inspect.json"], out,
             f"{tag}.inspect", env)
    _run(code_dir, ["batch", str(REPO / "sample_traces"), "--no-cache", "-j", "2",
                    "-o", "batch", "--json", "batch-index.json", "--md", "batch-index.md"],
         out, "batch", env)
    if SHARED_TRACES.is_dir():
        _run(code_dir, ["batch", str(SHARED_TRACES), "--no-cache", "-j", "2", "-o", "batch-shared",
                        "--json", "batch-shared.json"], out, "batch-shared", env)
    for i, (a, b) in enumerate(COMPARE_PAIRS):
        _run(code_dir, ["compare", str(REPO / a), str(REPO / b), "--json", f"compare{i}.json",
                        "--md", f"compare{i}.md", "-o", f"compare{i}.html"], out, f"compare{i}", env)
    shutil.rmtree(cache)


def _differences(a: Path, b: Path) -> list[str]:
    diffs: list[str] = []
    cmp = filecmp.dircmp(a, b)
    diffs += [f"only in base: {x}" for x in cmp.left_only]
    diffs += [f"only in head: {x}" for x in cmp.right_only]
    diffs += [f"differs: {x}" for x in cmp.diff_files]
    for sub in cmp.common_dirs:
        diffs += [f"{sub}/{d}" for d in _differences(a / sub, b / sub)]
    return diffs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("base", help="the commit whose outputs the working tree must reproduce")
    parser.add_argument("--keep", help="keep both output trees in this folder")
    parser.add_argument("--traces-only", default="", help="only traces whose name contains this")
    args = parser.parse_args()
    traces = [t for t in _traces() if args.traces_only in t.name]
    scratch = Path(args.keep or tempfile.mkdtemp(prefix="nsys-diag-unchanged-"))
    worktree = scratch / "base-code"
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "-f", str(worktree),
                    args.base], check=True, capture_output=True)
    try:
        for label, code in (("base", worktree), ("head", REPO)):
            _produce(code, scratch / "run", traces)
            shutil.move(str(scratch / "run"), str(scratch / label))
    finally:
        subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(worktree)],
                       capture_output=True)
    diffs = _differences(scratch / "base", scratch / "head")
    print(f"{len(traces)} traces, base {args.base}: "
          + ("all outputs byte-identical" if not diffs else f"{len(diffs)} outputs differ"))
    for line in diffs:
        print("  " + line)
    if not args.keep:
        shutil.rmtree(scratch, ignore_errors=True)
    else:
        print(f"outputs kept in {scratch}/base and {scratch}/head")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
