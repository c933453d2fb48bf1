"""`nsys-diag inspect`: renders the inventory of an export (analyses/inventory.py).

``build_inspect_view(bundle)`` → the JSON-able inventory dict; ``render_inspect_text`` and
``inspect_to_json`` render it. Every string that came from the trace goes through the one
sanitizer (``model.text``) before reaching a terminal.
"""
from __future__ import annotations

import json

from nsys_diag.analyses.inventory import TOP_TABLES, analyze_inventory
from nsys_diag.model.vocabulary import KINETO_FORMAT, KINETO_LABEL
from nsys_diag.model.bundle import TraceBundle
from nsys_diag.model.jsonsafe import escape_invisible
from nsys_diag.model.text import clean_text, terminal_line
from nsys_diag.report.formatting import fmt_bytes, fmt_count, fmt_device_memory, fmt_ns, fmt_rate


def build_inspect_view(bundle: TraceBundle, include_host_info: bool = False) -> dict:
    """The inspect description of ``bundle`` as a JSON-able dict."""
    return analyze_inventory(bundle, include_host_info).to_json()



# ------------------------------------------------------------------------------------ render
def inspect_to_json(view: dict) -> str:
    return escape_invisible(json.dumps(view, indent=2, ensure_ascii=False, allow_nan=False)) + "\n"


def _s(text, max_len: int = 120) -> str:
    # terminal text: also no CR/LF (a trace string must not rewrite or add lines)
    return terminal_line(clean_text("" if text is None else str(text), max_len))


def _gpu_line(g: dict) -> str:
    bits = []
    if g["sm_count"]:
        bits.append(f"{g['sm_count']} SMs")
    if g["memory_bytes"]:
        bits.append(fmt_device_memory(g["memory_bytes"]))
    if g["memory_bandwidth_bytes_per_s"]:
        bits.append(fmt_rate(g["memory_bandwidth_bytes_per_s"]))
    if g["clock_hz"]:
        bits.append(f"{g['clock_hz'] / 1e9:.2f} GHz")
    if g["compute_capability"]:
        bits.append(f"cc {g['compute_capability']}")
    name = _s(g["name"]) if g["name"] else "unknown GPU (no GPU table in the export)"
    props = f" ({', '.join(bits)})" if bits else ""
    return f"{g['id']}: {name}{props} — {fmt_count(g['kernels'])} kernels"


def _trace_lines(view: dict) -> list[str]:
    """The trace: path, format and version, time span, GPUs."""
    L: list[str] = []
    add = L.append
    version = ("nsys " + _s(view["nsys_version"]) if view["nsys_version"] else "nsys version unknown")
    if view["schema_version"]:
        version += f" · schema {_s(view['schema_version'])}"
    add(f"{_s(view['path'], 300)}")
    if view["format"] == KINETO_FORMAT:
        add(f"  format      {KINETO_LABEL} · schema {_s(view['schema_version'] or 'unknown')}")
    else:
        add(f"  format      nsys SQLite export · {version}" if view["format"] == "nsys-sqlite"
            else f"  format      {_s(view['format'])}")
    if view.get("version_note"):
        add(f"              {_s(view['version_note'], 200)}")
    t = view["time"]
    span = f"capture {fmt_ns(t['capture_span_ns'])}" if t["capture_span_ns"] > 0 else \
        "capture span unknown (no events, no ANALYSIS_DETAILS)"
    if t["first_event_ns"] is not None:
        span += (f" · events {fmt_ns(t['first_event_ns'])} → {fmt_ns(t['last_event_ns'])} "
                 f"({fmt_ns(t['event_span_ns'])})")
    if t["session_start_utc"]:
        span += f" · started {t['session_start_utc'][:19]}Z"
    add(f"  time        {span}")
    if t.get("derived_window_ns"):
        add(f"              cut to window {_s(t['derived_window_ns'])} ns by a post-processing tool")
    if view["gpus"]:
        for i, g in enumerate(view["gpus"]):
            add(f"  {'GPUs' if i == 0 else '':<12}{_gpu_line(g)}")
    else:
        add("  GPUs        none described")
    return L


def _activity_lines(view: dict) -> list[str]:
    """Processes, named threads and CUDA activity (counts)."""
    L: list[str] = []
    add = L.append
    if view["processes"]:
        for i, p in enumerate(view["processes"][:20]):
            name = _s(p["name"]) if p["name"] else "?"
            add(f"  {'processes' if i == 0 else '':<12}{name} (pid {p['pid']}): "
                f"{fmt_count(p['kernels'])} kernels · {fmt_count(p['api_calls'])} CUDA API calls · "
                f"{fmt_count(p['nvtx_ranges'])} NVTX ranges · {p['named_threads']} named threads")
        if len(view["processes"]) > 20:
            add(f"              … {len(view['processes']) - 20} more")
    else:
        add("  processes   none own events")
    add(f"  threads     {fmt_count(view['named_threads'])} named")
    c = view["cuda"]
    if c["kernels"] + c["memcpy"] + c["memset"]:
        line = (f"{fmt_count(c['kernels'])} kernels ({fmt_count(c['distinct_kernel_names'])} names) · "
                f"{fmt_count(c['memcpy'])} memcpy ({fmt_bytes(c['memcpy_bytes'])}) · "
                f"{fmt_count(c['memset'])} memset · {fmt_count(c['sync'])} sync · "
                f"{fmt_count(c['api_calls'])} API calls")
        add(f"  CUDA        {line}")
        if c["launch_matched_share"] is not None:
            add(f"              {c['launch_matched_share']:.1%} of GPU work matched to its "
                "launching API call")
    else:
        add("  CUDA        no CUDA GPU activity recorded")
    return L


def _events_lines(view: dict) -> list[str]:
    """NVTX, ncu and GPU-metrics counts, the largest tables, the host."""
    L: list[str] = []
    add = L.append
    nv = view["nvtx"]
    if nv["ranges"] or nv["marks"]:
        doms = ", ".join(f"{_s(d['name']) or '(default)'} {fmt_count(d['ranges'])}"
                         for d in nv["domains"][:10])
        add(f"  NVTX        {fmt_count(nv['ranges'])} ranges · {fmt_count(nv['marks'])} marks"
            + (f" · {fmt_count(nv['unterminated'])} unterminated" if nv["unterminated"] else ""))
        add(f"  domains     {doms}")
        for i, r in enumerate(nv["top_ranges"][:10]):
            dom = f"{_s(r['domain'], 30)}:" if r["domain"] else ""
            add(f"  {'top ranges' if i == 0 else '':<12}{dom}{_s(r['name'], 80)} — "
                f"{fmt_count(r['count'])}× · {fmt_ns(r['total_ns'])} total")
    else:
        add("  NVTX        no NVTX ranges")
    ncu = view["ncu"]
    if ncu["launches"]:
        add(f"  ncu         {fmt_count(ncu['launches'])} profiled launches · "
            f"{fmt_count(ncu['kernel_names'])} kernels · {fmt_count(ncu['metrics'])} metrics")
    gm = view["gpu_metrics"]
    if gm["samples"]:
        add(f"  GPU metrics {fmt_count(gm['samples'])} samples · {len(gm['metrics'])} metrics")
    non_empty = {k: v for k, v in view["tables"].items() if v and not k.startswith("ENUM_")}
    shown = sorted(non_empty.items(), key=lambda kv: -kv[1])[:TOP_TABLES]
    n_enum = sum(1 for k in view["tables"] if k.startswith("ENUM_"))
    add(f"  tables      {view['tables_total']} ({view['tables_empty']} empty"
        + (f", {n_enum} ENUM_*" if n_enum else "") + ")")
    for name, rows in shown:
        add(f"              {_s(name, 60):<44}{fmt_count(rows):>12}")
    if len(non_empty) > len(shown):
        add(f"              … {len(non_empty) - len(shown)} more non-empty tables (see --json)")
    if "host" in view:
        h = view["host"]
        add("  host        " + " · ".join(_s(x) for x in (h["hostname"], h["cpu"], h["os"]) if x))
        if h["command_line"]:
            add(f"  command     {_s(h['command_line'], 300)}")
        add(f"  environment {h['environment_variables']} variables captured (values not shown)")
    return L


def _support_lines(view: dict) -> list[str]:
    """What the export supports, warnings, and what to capture."""
    L: list[str] = []
    add = L.append
    add("")
    add("What this export supports")
    marks = {"yes": "[yes]", "partial": "[~]  ", "no": "[no] "}
    for a in view["analyses"]:
        line = f"  {marks[a['status']]} {a['name'].replace('_', ' '):<20} {_s(a['reason'], 200)}"
        add(line)
        if a["hint"] and a["status"] != "yes":
            add(f"        → {_s(a['hint'], 300)}")
    if view["warnings"]:
        add("")
        add("Warnings")
        for w in view["warnings"]:
            add(f"  - {_s(w['message'], 400)}")
            if w["hint"]:
                add(f"      hint: {_s(w['hint'], 300)}")
    if view["capture_hints"]:
        add("")
        add("To capture what is missing")
        for h in view["capture_hints"]:
            add(f"  {_s(h, 400)}")
    return L


def render_inspect_text(view: dict) -> str:
    """Plain-text description for the terminal (all trace strings cleaned)."""
    lines = _trace_lines(view) + _activity_lines(view) + _events_lines(view) + _support_lines(view)
    return "\n".join(lines) + "\n"
