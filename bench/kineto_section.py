"""``make bench``'s PyTorch-profiler row: ``nsys-diag analyze`` on a Kineto trace against Holistic
Trace Analysis loading the same trace (issue "Read PyTorch profiler traces too", item 3).

* The trace: the project's generator writes the ``healthy_tc`` timeline (``KINETO_STEPS`` steps)
  as a legacy-schema (PyTorch 1.8–1.9) Kineto JSON of ~35 MB, alone in its own folder (HTA reads
  a folder), cached in ``bench/out/traces`` under the generator's hash.
* HTA 0.5.0 in its own venv (``bench/.venv-hta``, created when missing), run as a child
  (``hta_child.py``): ``TraceAnalysis(trace_dir=DIR)``, cold (a new process each run), then
  its GPU kernel breakdown.
* Ours: ``nsys-diag analyze TRACE --json - --no-html`` (the whole command, cold).
* Checks: ours ≥ ``KINETO_SPEEDUP``× faster than HTA's load (min vs min), and the kernel totals
  per kernel name equal to HTA's breakdown (ours over the whole capture, ``--window 0:``, as HTA
  sums every kernel; HTA rounds each duration down to whole µs, so equal within a µs a launch).
"""
from __future__ import annotations

import subprocess
from pathlib import Path

from venvs import create_venv

HERE = Path(__file__).resolve().parent
HTA_VENV = HERE / ".venv-hta"
HTA_PINS = ("HolisticTraceAnalysis==0.5.0",)
HTA_TOOL = "HTA 0.5.0 TraceAnalysis load (cold)"
OURS_TOOL = "nsys-diag analyze (Kineto JSON)"
KINETO_STEPS = 300
"""``healthy_tc`` steps of the Kineto trace: 45,600 kernels, ~35 MB of legacy-schema JSON."""
KINETO_SPEEDUP = 5.0


def ensure_hta(log) -> tuple[str | None, str]:
    """(the HTA venv's python, or None; a note). Creates the venv when missing."""
    py = HTA_VENV / "bin" / "python"
    try:
        if not py.exists() or subprocess.run([str(py), "-c", "import hta"],
                                             capture_output=True).returncode:
            log(f"setup: creating {HTA_VENV.name} with {' '.join(HTA_PINS)}")
            failed = create_venv(HTA_VENV, HTA_PINS, "HTA")
            if failed:
                return None, failed
    except (OSError, subprocess.CalledProcessError) as exc:
        return None, f"HTA setup failed: {exc}"
    return str(py), "ok"


def make_kineto_trace(traces: Path, generator_hash: str, py: str, root: Path) -> Path:
    """The cached Kineto trace (written by a child: this process stays small)."""
    folder = traces / f"kineto-healthy_tc-s{KINETO_STEPS}-legacy-{generator_hash}"
    path = folder / "healthy_tc_legacy.json"
    if not path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        code = ("import sys\nfrom nsys_diag import synth\n"
                "from nsys_diag.synth.kineto_writer import write_kineto_json\n"
                f"write_kineto_json(sys.argv[1], synth.preset('healthy_tc', steps={KINETO_STEPS}),"
                " schema='legacy')\n")
        r = subprocess.run([py, "-c", code, str(path)], capture_output=True, text=True,
                           cwd=str(root))
        if r.returncode:
            raise SystemExit(f"Kineto trace generation failed:\n{r.stderr[-2000:]}")
    return path


def kernel_totals_match(ours_doc: dict, hta_doc: dict) -> tuple[bool, str]:
    """Ours' per-name kernel totals (ns, ``--window 0:``) against HTA's (µs, each duration
    rounded down to a µs): equal names and counts, totals within a µs a launch."""
    ours = {k["name"]: (int(k["count"]), int(k["total_ns"])) for k in ours_doc.get("kernels", [])}
    hta = {k["name"]: (int(k["count"]), float(k["sum_us"])) for k in hta_doc.get("kernels", [])}
    if set(ours) != set(hta):
        return False, f"names differ: {len(set(ours) ^ set(hta))} of {len(set(ours) | set(hta))}"
    worst = 0.0
    for name, (count, total_ns) in ours.items():
        h_count, h_us = hta[name]
        if count != h_count:
            return False, f"{name[:40]}: {count} launches, HTA {h_count}"
        worst = max(worst, abs(total_ns / 1e3 - h_us) / max(count, 1))
    return worst <= 1.0, (f"{len(ours)} names, counts equal, totals within {worst:.3f} µs a "
                          "launch of HTA's")


def kineto_targets(rows: list, check: tuple[bool, str] | None) -> list:
    """PASS/FAIL of the Kineto row's targets."""
    at = {r.tool: r for r in rows if r.ok}
    ours, hta = at.get(OURS_TOOL), at.get(HTA_TOOL)
    out = []
    if ours is not None and hta is not None:
        r = hta.tmin / ours.tmin
        out.append((f"{ours.trace}: analyze ≥ {KINETO_SPEEDUP:g}× faster than HTA 0.5.0 loading "
                    "the same trace, cold",
                    f"{r:.2f}× ({ours.tmin:.2f} s vs {hta.tmin:.2f} s)",
                    "PASS" if r >= KINETO_SPEEDUP else "FAIL"))
    if check is not None:
        out.append(("Kineto: kernel totals per name equal to HTA's kernel breakdown", check[1],
                    "PASS" if check[0] else "FAIL"))
    return out
