#!/usr/bin/env bash
# make dist-check: build the wheel, prove the templates ship, install it in a fresh venv, run it.
#
#   1. build the wheel into build/dist (python -m build --wheel; isolated build env)
#   2. check the wheel holds nsys_diag/templates/base.html and every file of templates/
#   3. fresh venv build/dist-venv, pip install the wheel (dependencies come from PyPI)
#   4. from outside the checkout: `nsys-diag --version`, the installed package finds its
#      templates, and `nsys-diag analyze sample_traces/worked_example.sqlite -o build/dist/report.html`
#
# Env: PYTHON (interpreter for the fresh venv, default python3), DIST_CHECK_NO_ISOLATION=1 (build
# with the project venv's hatchling instead of an isolated env, for offline machines),
# DIST_CHECK_SAMPLE=PATH (trace to analyze instead of sample_traces/worked_example.sqlite).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
BUILD_PY="$ROOT/.venv/bin/python"
VENV_PY="${PYTHON:-python3}"
DIST="$ROOT/build/dist"
VENV="$ROOT/build/dist-venv"
SAMPLE="${DIST_CHECK_SAMPLE:-$ROOT/sample_traces/worked_example.sqlite}"

step() { printf '\n== dist-check: %s\n' "$*"; }
fail() { printf '\ndist-check: FAILED: %s\n' "$*" >&2; exit 1; }

[ -x "$BUILD_PY" ] || fail "$BUILD_PY missing (run make venv)"

step "building the wheel"
rm -rf "$DIST" "$VENV"
mkdir -p "$DIST"
build_args=(--wheel --outdir "$DIST")
[ "${DIST_CHECK_NO_ISOLATION:-0}" = 1 ] && build_args+=(--no-isolation)
"$BUILD_PY" -m build "${build_args[@]}" "$ROOT" >"$DIST/build.log" 2>&1 \
    || { tail -n 30 "$DIST/build.log" >&2; fail "wheel build failed (log: build/dist/build.log)"; }
shopt -s nullglob
wheels=("$DIST"/nsys_diag-*.whl)
shopt -u nullglob
[ "${#wheels[@]}" -eq 1 ] || fail "expected one wheel in build/dist, found ${#wheels[@]}"
WHEEL="${wheels[0]}"
echo "wheel: ${WHEEL#"$ROOT"/}"

step "checking the wheel ships the templates"
"$BUILD_PY" - "$WHEEL" "$ROOT/templates" <<'PY' || fail "templates missing from the wheel"
import sys, zipfile
from pathlib import Path

wheel, tpl_root = sys.argv[1], Path(sys.argv[2])
names = set(zipfile.ZipFile(wheel).namelist())
wanted = sorted("nsys_diag/templates/" + p.relative_to(tpl_root).as_posix()
                for p in tpl_root.rglob("*") if p.is_file())
missing = [n for n in ["nsys_diag/templates/base.html"] + wanted if n not in names]
if missing:
    print("missing from the wheel:", *missing, sep="\n  ", file=sys.stderr)
    sys.exit(1)
print(f"{len(wanted)} template file(s) in the wheel, base.html included")
PY

step "installing the wheel into a fresh venv ($VENV_PY)"
"$VENV_PY" -m venv "$VENV" || fail "cannot create $VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip >"$DIST/pip.log" 2>&1 || true
"$VENV/bin/python" -m pip install -q "$WHEEL" >>"$DIST/pip.log" 2>&1 \
    || { tail -n 30 "$DIST/pip.log" >&2; fail "pip install of the wheel failed (log: build/dist/pip.log)"; }

# Run from outside the checkout so `import nsys_diag` cannot pick up the source tree.
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"

step "nsys-diag --version"
want_version="$("$BUILD_PY" -c "import re,sys; print(re.search(r'__version__ = \"([^\"]+)\"', open(sys.argv[1]).read()).group(1))" "$ROOT/nsys_diag/_version.py")"
got="$("$VENV/bin/nsys-diag" --version)" || fail "installed nsys-diag --version failed"
echo "$got"
case "$got" in *"$want_version"*) ;; *) fail "version '$got' does not contain $want_version";; esac

step "the installed package finds its templates"
"$VENV/bin/python" - "$VENV" <<'PY' || fail "installed package does not find its templates"
import sys
from pathlib import Path

import nsys_diag

venv = Path(sys.argv[1]).resolve()
pkg = Path(nsys_diag.__file__).resolve().parent
if venv not in pkg.parents:
    sys.exit(f"imported nsys_diag from {pkg}, not from the fresh venv")
try:
    from nsys_diag.report.templates_path import templates_dir
except ImportError:
    tdir = pkg / "templates"  # resolver not written yet: check the packaged files directly
    how = "package directory (templates_path module absent)"
else:
    tdir = templates_dir().resolve()
    how = "templates_dir()"
if not (tdir / "base.html").is_file():
    sys.exit(f"no base.html in {tdir}")
if pkg not in tdir.parents:
    sys.exit(f"templates found at {tdir}, outside the installed package {pkg}")
print(f"templates via {how}: {tdir}")
PY

if [ -f "$SAMPLE" ]; then
    step "nsys-diag analyze ${SAMPLE#"$ROOT"/} -o build/dist/report.html"
    "$VENV/bin/nsys-diag" analyze "$SAMPLE" -o "$DIST/report.html" \
        || fail "analyze with the installed wheel failed"
    [ -s "$DIST/report.html" ] || fail "build/dist/report.html was not written"
    grep -qi "<html" "$DIST/report.html" || fail "build/dist/report.html is not HTML"
    echo "report: build/dist/report.html ($(wc -c <"$DIST/report.html") bytes)"
else
    shopt -s nullglob
    samples=("$ROOT"/sample_traces/*.sqlite)
    shopt -u nullglob
    [ "${#samples[@]}" -gt 0 ] || fail "no sample trace in sample_traces/ to run (make samples)"
    step "NOTE: $SAMPLE absent; nsys-diag inspect ${samples[0]#"$ROOT"/} instead"
    "$VENV/bin/nsys-diag" inspect "${samples[0]}" || fail "inspect with the installed wheel failed"
fi

printf '\ndist-check: OK (%s)\n' "${WHEEL#"$ROOT"/}"
