"""Table and cell models for the HTML report: cells already formatted (templates do no
arithmetic), with the raw value the JS sorter uses. Every builder reads a normalized view
(``contract.normalize``)."""
from __future__ import annotations

import re

from nsys_diag.analyses.kernels.labels import distinct_labels
from nsys_diag.model.jsonsafe import finite
from nsys_diag.model.vocabulary import GAP_CAUSE_LABELS, VERDICT_TITLES
from nsys_diag.report.contract import normalize_as
from nsys_diag.report.formatting import (
    MISSING,
    fmt_bytes,
    fmt_count,
    fmt_device_memory,
    fmt_ms,
    fmt_ns,
    fmt_number,
    fmt_pct,
    fmt_rate,
    fmt_ratio,
    fmt_share,
)

CAUSES = GAP_CAUSE_LABELS
"""Gap causes with their labels, in report order (``model.vocabulary.GAP_CAUSE_LABELS``)."""
CAUSE_LABELS = dict(CAUSES)

_SLUG = re.compile(r"[^a-z0-9]+")


def slug(text) -> str:
    """CSS-class-safe token (a-z, 0-9, '-') for a category or phase name."""
    s = _SLUG.sub("-", str(text or "other").lower()).strip("-")
    return s[:40] or "other"


def _frac(x):
    """A fraction clamped to 0..1 for meters (None stays None)."""
    f = finite(x)
    return None if f is None else max(0.0, min(1.0, f))


def fmt_frac_or_rate(x) -> str:
    """GPU-metric values: fractions of peak (≤ 1) as percent, larger numbers as bytes/s."""
    f = finite(x)
    if f is None:
        return MISSING
    return fmt_pct(f) if f <= 1.0 else fmt_rate(f)


def segments(text) -> list[tuple[bool, str]]:
    """Split prose on backticks: [(is_code, text), …] so hints like "run `nsys profile …`" show
    their commands as code (the template escapes every part)."""
    parts = str(text if text is not None else "").split("`")
    if len(parts) % 2 == 0:  # unbalanced: keep the last backtick literal
        parts[-2:] = [parts[-2] + "`" + parts[-1]]
    return [(i % 2 == 1, p) for i, p in enumerate(parts) if p]


# ----------------------------------------------------------------------------------- tables


def cell(text, sort=None, title=None, cls=None, swatch=None, meter=None) -> dict:
    """One table cell: display ``text``; ``sort`` is the raw value the JS sorter uses; ``swatch`` a
    colour class shown as a small square before the text; ``meter`` a width in percent for an
    inline bar behind numbers."""
    return {"text": MISSING if text is None else str(text), "sort": "" if sort is None else sort,
            "title": title, "cls": cls, "swatch": swatch, "meter": meter}


def table(tid: str, columns: list[tuple[str, bool]], rows: list[list[dict]], *, total=None,
          caption=None, filterable=False, fold: tuple[int, ...] = ()) -> dict:
    """A table model for ``macros/tables.html``: ``columns`` are (label, numeric) pairs.

    ``fold``: indices of the columns that fold away when the table is narrower than its content
    (a card under ~1000 px): their values move into a line under the row's first text cell
    (``row_more``, label and value, missing values left out), so the identifying and the decisive
    columns keep their room and nothing scrolls sideways."""
    shown = len(rows)
    total = shown if total is None else max(int(total), shown)
    anchor = next((i for i, (_, num) in enumerate(columns) if not num), 0)
    folded = set(fold) - {anchor}
    cols = [{"label": lab, "num": num, "fold": i in folded} for i, (lab, num) in enumerate(columns)]
    more = [[{"label": cols[i]["label"], "text": c["text"]} for i, c in enumerate(row)
             if i in folded and c["text"] != MISSING] for row in rows]
    return {"id": tid, "columns": cols, "rows": rows, "row_more": more, "folds": bool(folded), "anchor": anchor,
            "shown": shown, "total": total, "caption": caption, "filterable": filterable}


def _yes_no(flag) -> str:
    return MISSING if flag is None else ("yes" if flag else "no")


def kernel_table(v: dict) -> dict:
    rows = []
    labels = distinct_labels([k["name"] for k in v["kernels"]], [k["short_name"] for k in v["kernels"]])
    for k, label in zip(v["kernels"], labels):
        name = k["name"] or k["short_name"] or MISSING
        short = label or k["short_name"] or name
        cat = k["category"] or "other"
        tc = k["tensor_core"]
        rows.append([
            cell(short, str(short).lower(), title=name if name != short else None, cls="name"),
            cell(cat, cat, swatch="cat-" + slug(cat), cls="nowrap"),
            cell(_yes_no(tc), {True: 1, False: 0}.get(tc, -1), cls="tc-" + _yes_no(tc).replace(MISSING, "na")),
            cell(fmt_count(k["count"]), finite(k["count"])),
            cell(fmt_ns(k["total_ns"]), finite(k["total_ns"])),
            cell(fmt_share(k["share"]), finite(k["share"])),
            cell(fmt_ns(k["mean_ns"]), finite(k["mean_ns"])),
            cell(fmt_ns(k["median_ns"]), finite(k["median_ns"])),
            cell(fmt_ns(k["max_ns"]), finite(k["max_ns"])),
        ])
    cols = [("Kernel", False), ("Category", False), ("Tensor Cores", False), ("Launches", True),
            ("Total", True), ("Share", True), ("Mean", True), ("Median", True), ("Max", True)]
    total = v["kernels_total"] if finite(v["kernels_total"]) is not None else len(rows)
    return table("tbl-kernels", cols, rows, total=total, filterable=True, fold=(1, 2, 6, 7, 8),
                 caption="Kernels by total GPU time (share of all kernel time).")


def nvtx_range_table(v: dict) -> dict | None:
    """GPU time per NVTX range (``nvtx_ranges``): None when the section is unavailable."""
    sec = v.get("nvtx_ranges") or {}
    if not sec.get("available") or not sec.get("ranges"):
        return None
    rows = []
    for r in sec["ranges"]:
        name = r["name"] or MISSING
        rows.append([
            cell(name, str(name).lower(), cls="name"),
            cell(r["domain"] or "default", str(r["domain"] or "").lower()),
            cell(fmt_count(r["count"]), finite(r["count"])),
            cell(fmt_ms(r["cpu_ms"]), finite(r["cpu_ms"])),
            cell(fmt_ms(r["gpu_ms"]), finite(r["gpu_ms"])),
            cell(fmt_ms(r["gpu_self_ms"]), finite(r["gpu_self_ms"])),
            cell(fmt_share(r["share"]), finite(r["share"]), cls="has-meter", meter=meter(r["share"])),
        ])
    cols = [("NVTX range", False), ("Domain", False), ("Ranges", True), ("CPU time", True),
            ("GPU time", True), ("GPU self", True), ("Share", True)]
    return table("tbl-nvtx-ranges", cols, rows, total=finite(sec.get("groups")) or len(rows),
                 fold=(1, 2, 3), caption="GPU time of the kernels launched inside each NVTX range "
                 "(nested ranges included; self: their own kernels only), share of all kernel time.")


def phase_table(v: dict) -> dict:
    rows = []
    for p in v["phases"]:
        canonical = p["canonical"] or "other"
        rows.append([
            cell(p["name"], str(p["name"] or "").lower(), cls="name", swatch="ph-" + slug(canonical)),
            cell(canonical, canonical),
            cell(fmt_ms(p["mean_ms"]), finite(p["mean_ms"])),
            cell(fmt_share(p["share"]), finite(p["share"]), cls="has-meter", meter=meter(p["share"])),
            cell(fmt_ms(p["gpu_busy_ms"]), finite(p["gpu_busy_ms"])),
            cell(fmt_share(p["gpu_busy_share"]), finite(p["gpu_busy_share"]), cls="has-meter",
                 meter=meter(p["gpu_busy_share"])),
            cell(fmt_ms(p["gpu_work_ms"]), finite(p["gpu_work_ms"])),
        ])
    cols = [("Phase", False), ("Canonical", False), ("Mean per step", True), ("Share of step", True),
            ("GPU busy in its span", True), ("GPU busy share", True), ("GPU work launched", True)]
    return table("tbl-phases", cols, rows, fold=(1, 4, 6),
                 caption="Mean time per step, exclusive (nested ranges counted once). "
                         "“GPU busy in its span”: kernel time inside the phase's wall-clock span; "
                         "“GPU work launched”: kernel time launched from it, which may run later.")


def meter(fraction) -> str | None:
    """Width in percent (string with one decimal) for an inline meter, or None."""
    f = _frac(fraction)
    return None if f is None else f"{f * 100:.1f}"


def step_list(indices, limit: int = 8) -> str:
    """Step indices in words, consecutive runs joined: [0] → "step 0", [3, 4] → "steps 3–4",
    [0, 1, 2, 7] → "steps 0–2, 7"; [] → "none". At most ``limit`` runs, then "… (+N more)"."""
    vals = sorted({int(i) for i in indices if finite(i) is not None})
    if not vals:
        return "none"
    runs: list[list[int]] = []
    for i in vals:
        if runs and i == runs[-1][1] + 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    parts = [f"{a}" if a == b else (f"{a}, {b}" if b == a + 1 and len(runs) > 1 else f"{a}–{b}") for a, b in runs]
    text = ", ".join(parts[:limit]) + (f" … (+{len(runs) - limit} more)" if len(runs) > limit else "")
    return ("step " if len(vals) == 1 else "steps ") + text


def gap_groups(top: list[dict]) -> list[dict]:
    """The longest gaps with identical rows merged: gaps of the same displayed length, cause, GPU,
    phase and CPU activity become one group (a training loop repeats the same stall every step).
    Each group is the first gap of its kind (input order kept) plus ``count`` and ``starts_ns``."""
    groups: dict[tuple, dict] = {}
    for g in top:
        key = (fmt_ms(g.get("duration_ms")), g.get("cause"), g.get("device_id"), g.get("phase"),
               g.get("cpu_activity"))
        if key in groups:
            groups[key]["count"] += 1
            groups[key]["starts_ns"].append(g.get("start_ns"))
        else:
            groups[key] = {**g, "count": 1, "starts_ns": [g.get("start_ns")]}
    return list(groups.values())


def gap_group_line(g: dict, cause_label: str | None = None) -> str:
    """One group in words: "×10 gaps of 444 ms in data_loading (waiting on input, GPU 0), CPU in
    cudaMemcpyAsync …" — a single gap reads "444 ms in data_loading …". Trace text is not escaped
    here: each renderer sanitises the line for its own medium."""
    n = int(g.get("count") or 1)
    head = f"×{n} gaps of {fmt_ms(g.get('duration_ms'))}" if n > 1 else fmt_ms(g.get("duration_ms"))
    cause = g.get("cause") or "other"
    where = f" in {g['phase']}" if g.get("phase") else ""
    gpu = f", GPU {g['device_id']}" if g.get("device_id") is not None else ""
    cpu = str(g.get("cpu_activity") or "")
    cpu_text = f", CPU {cpu}" if cpu.startswith("in ") else (f", CPU: {cpu}" if cpu else "")
    return f"{head}{where} ({(cause_label or CAUSE_LABELS.get(cause, cause)).lower()}{gpu}){cpu_text}"


def gap_table(v: dict) -> dict:
    w0 = finite(v["window"]["start_ns"])

    def rel_ms(ns):
        return None if finite(ns) is None or w0 is None else (finite(ns) - w0) / 1e6

    rows = []
    for g in gap_groups(v["gaps"]["top"]):
        starts = sorted(r for r in (rel_ms(ns) for ns in g["starts_ns"]) if r is not None)
        first = starts[0] if starts else None
        cause = g["cause"] or "other"
        n = g["count"]
        title = ("starts " + ", ".join(fmt_ms(r) for r in starts)) if n > 1 else None
        rows.append([
            cell(fmt_ms(first) + (f" (+{n - 1})" if n > 1 else ""), first, title=title),
            cell(fmt_ms(g["duration_ms"]), finite(g["duration_ms"])),
            cell(f"×{n}" if n > 1 else "1", n),
            cell(MISSING if g["device_id"] is None else g["device_id"], finite(g["device_id"])),
            cell(CAUSE_LABELS.get(cause, cause), cause, swatch="cause-" + slug(cause), cls="nowrap"),
            cell(g["phase"], str(g["phase"] or "").lower(), cls="name"),
            cell(g["cpu_activity"], str(g["cpu_activity"] or "").lower(), cls="name"),
        ])
    cols = [("Start", True), ("Length", True), ("Gaps", True), ("GPU", True), ("Cause", False),
            ("Phase", False), ("What the CPU was doing", False)]
    return table("tbl-gaps", cols, rows, total=v["gaps"]["count"] if rows else None, fold=(2, 3, 5),
                 caption="Longest GPU idle intervals, identical ones grouped (start: the first, from the start of "
                         "the analysed window; hover for every start).")


def step_outlier_table(v: dict) -> dict:
    rows = [[cell(o["index"], finite(o["index"])), cell(fmt_ms(o["duration_ms"]), finite(o["duration_ms"])),
             cell(fmt_ratio(o["ratio_to_median"]), finite(o["ratio_to_median"])), cell(o["reason"], None, cls="name")]
            for o in v["steps"]["outliers"]]
    return table("tbl-outliers", [("Step", True), ("Duration", True), ("× median", True), ("Why", False)], rows,
                 caption="Outlier steps, listed rather than silently averaged away.")


def transfer_table(v: dict) -> dict:
    rows = []
    for kind, t in v["transfers"]["by_kind"].items():
        if not isinstance(t, dict) or not finite(t.get("count")):
            continue
        t = normalize_as(t, "transfer_kind")
        got, exp = finite(t["gb_per_s"]), finite(t["expected_gb_per_s"])
        of_peak = None if got is None or not exp else got / exp
        rows.append([
            cell(kind, kind, cls="name"),
            cell(fmt_count(t["count"]), finite(t["count"])),
            cell(fmt_bytes(t["bytes"]), finite(t["bytes"])),
            cell(fmt_ms(t["time_ms"]), finite(t["time_ms"])),
            cell(fmt_rate(None if got is None else got * 1e9), got),
            cell(fmt_rate(None if exp is None else exp * 1e9), exp),
            cell(fmt_share(of_peak), of_peak),
        ])
    cols = [("Kind", False), ("Copies", True), ("Bytes", True), ("Time", True), ("Achieved", True),
            ("Expected link peak", True), ("Of peak", True)]
    return table("tbl-transfers", cols, rows, fold=(1, 5))


def device_table(v: dict) -> dict:
    rows = [[cell(d["device_id"], finite(d["device_id"])), cell(d["name"], str(d["name"] or ""), cls="name"),
             cell(fmt_pct(d["utilization"]), finite(d["utilization"]), cls="has-meter", meter=meter(d["utilization"])),
             cell(fmt_ms(d["compute_busy_ms"]), finite(d["compute_busy_ms"])),
             cell(fmt_ms(d["copy_busy_ms"]), finite(d["copy_busy_ms"])),
             cell(fmt_ms(d["idle_ms"]), finite(d["idle_ms"]))]
            for d in v["gpu"]["per_device"]]
    cols = [("GPU", True), ("Name", False), ("Compute busy", True), ("Kernels", True), ("Copies", True),
            ("Idle", True)]
    return table("tbl-devices", cols, rows, fold=(4, 5))


def metrics_phase_table(v: dict) -> dict:
    rows = [[cell(p["phase"], str(p["phase"] or "").lower(), cls="name"),
             cell(fmt_frac_or_rate(p["sm_active"]), finite(p["sm_active"])),
             cell(fmt_frac_or_rate(p["tensor_active"]), finite(p["tensor_active"])),
             cell(fmt_frac_or_rate(p["dram_bandwidth"]), finite(p["dram_bandwidth"])),
             cell(fmt_frac_or_rate(p["pcie_rx"]), finite(p["pcie_rx"])),
             cell(fmt_frac_or_rate(p["pcie_tx"]), finite(p["pcie_tx"]))]
            for p in v["gpu_metrics"]["per_phase"]]
    cols = [("Phase", False), ("SM active", True), ("Tensor active", True), ("DRAM bandwidth", True),
            ("PCIe RX", True), ("PCIe TX", True)]
    return table("tbl-metrics-phase", cols, rows, fold=(4, 5), caption="GPU metrics (sampled counters) per phase.")


def comm_table(v: dict) -> dict:
    rows = [[cell(d["device_id"], finite(d["device_id"])), cell(fmt_ms(d["comm_ms"]), finite(d["comm_ms"])),
             cell(fmt_ms(d["hidden_ms"]), finite(d["hidden_ms"])),
             cell(fmt_ms(d["exposed_ms"]), finite(d["exposed_ms"]))]
            for d in v["communication"]["per_device"]]
    return table("tbl-comm", [("GPU", True), ("Communication", True), ("Hidden behind compute", True),
                              ("Exposed", True)], rows)


def memory_table(v: dict) -> dict:
    # the peak in the device size's binary units: one unit per row (torch.cuda reports GiB too)
    rows = [[cell(d["device_id"], finite(d["device_id"])),
             cell(fmt_device_memory(d["peak_bytes"]), finite(d["peak_bytes"])),
             cell(fmt_device_memory(d["device_bytes"]), finite(d["device_bytes"])),
             cell(fmt_share(d["peak_share"]), finite(d["peak_share"]), cls="has-meter", meter=meter(d["peak_share"]))]
            for d in v["memory"]["per_device"]]
    return table("tbl-memory", [("GPU", True), ("Peak allocated", True), ("Device memory", True),
                                ("Peak share", True)], rows)


def process_table(v: dict) -> dict:
    rows = [[cell(p["pid"], finite(p["pid"])), cell(p["name"], str(p["name"] or ""), cls="name"),
             cell(fmt_ms(p["steps_mean_ms"]), finite(p["steps_mean_ms"])),
             cell(VERDICT_TITLES.get(p["verdict_code"], p["verdict_code"]), p["verdict_code"])]
            for p in v["processes"]]
    scope = v.get("scope")
    scope = scope if isinstance(scope, dict) else {}
    which = "slowest" if scope.get("headline_by") == "step_time" else "busiest (the most GPU time)"
    return table("tbl-processes", [("PID", True), ("Process", False), ("Mean step", True), ("Verdict", False)],
                 rows, caption=f"Per process (rank); the headline comes from the {which}.")


LOADER_STATES = {"saturated": "saturated: the workers cannot keep up",
                 "busy": "busy, with some slack", "idle": "mostly idle: the main process is the bottleneck"}


def loader_block(v: dict) -> dict | None:
    """The DataLoader workers of the view's process (``loader``): one line and a per-worker
    table; None when the section is unavailable."""
    ld = v.get("loader") or {}
    if not ld.get("available") or not ld.get("per_worker"):
        return None
    state = str(ld.get("state") or "")
    line = (f"{fmt_count(ld.get('workers'))} workers, busy {fmt_share(ld.get('busy_share'))} of the "
            f"analysed window on average ({LOADER_STATES.get(state, state)}; measured from "
            f"{ld.get('basis') or MISSING}).")
    rows = [[cell(w.get("pid"), finite(w.get("pid"))),
             cell(w.get("tid"), finite(w.get("tid"))),
             cell(w.get("name"), str(w.get("name") or ""), cls="name"),
             cell(fmt_share(w.get("busy_share")), finite(w.get("busy_share")), cls="has-meter",
                  meter=meter(w.get("busy_share"))),
             cell(w.get("basis"), str(w.get("basis") or "")),
             cell(w.get("evidence"), str(w.get("evidence") or ""))]
            for w in ld["per_worker"] if isinstance(w, dict)]
    return {"line": line, "table": table(
        "tbl-loader", [("PID", True), ("TID", True), ("Worker", False), ("Busy", True),
                       ("Measured from", False), ("Why a worker", False)], rows,
        total=ld.get("workers"), fold=(1, 4, 5), caption="DataLoader workers of this process and how busy each is.")}


def roofline_table(v: dict) -> dict:
    rows = []
    for k in v["roofline"]["kernels"]:
        name = k["name"] or k["short_name"] or MISSING
        short = k["short_name"] or name
        bound = k["bound"] or "unknown"
        rows.append([
            cell(short, str(short).lower(), title=name if name != short else None, cls="name"),
            cell(fmt_ns(k.get("time_ns")), finite(k.get("time_ns"))),
            cell(fmt_share(k["time_share"]), finite(k["time_share"])),
            cell(fmt_number(k["arithmetic_intensity"]), finite(k["arithmetic_intensity"])),
            cell(fmt_rate(k["achieved_flops_per_s"], "FLOP"), finite(k["achieved_flops_per_s"])),
            cell(fmt_rate(k.get("achieved_dram_bytes_per_s")), finite(k.get("achieved_dram_bytes_per_s"))),
            cell(fmt_number(k["sm_pct"]) + ("%" if finite(k["sm_pct"]) is not None else ""), finite(k["sm_pct"])),
            cell(fmt_number(k["mem_pct"]) + ("%" if finite(k["mem_pct"]) is not None else ""), finite(k["mem_pct"])),
            cell(bound, bound, swatch="bound-" + slug(bound), cls="nowrap"),
            cell(k["precision"], k["precision"]),
        ])
    cols = [("Kernel", False), ("Time", True), ("Time share", True), ("FLOP/byte", True),
            ("Achieved FLOP/s", True), ("DRAM bytes/s", True), ("SM SOL %", True),
            ("Memory SOL %", True), ("Bound", False), ("Precision", False)]
    total = v["roofline"]["kernels_total"]
    return table("tbl-roofline", cols, rows, total=total if finite(total) is not None else None,
                 fold=(1, 4, 5, 6, 7, 9),
                 caption="Per kernel, from Nsight Compute: arithmetic intensity against DRAM bytes and the "
                         "speed-of-light bound (ncu's rule: ≥ 80% of a unit's peak is its bound; "
                         "everything < 60% is latency-bound).")


def gpu_table(v: dict) -> dict:
    rows = [[cell(g["id"], finite(g["id"])), cell(g["name"], str(g["name"] or ""), cls="name"),
             cell(g["compute_capability"], str(g["compute_capability"] or "")),
             cell(fmt_count(g["sm_count"]), finite(g["sm_count"])),
             cell(fmt_device_memory(g["memory_bytes"]), finite(g["memory_bytes"])),
             cell(fmt_rate(g["memory_bandwidth_bytes_per_s"]), finite(g["memory_bandwidth_bytes_per_s"]))]
            for g in v["trace"]["gpus"]]
    return table("tbl-gpus", [("Id", True), ("GPU", False), ("CC", False), ("SMs", True), ("Memory", True),
                              ("Memory bandwidth", True)], rows, fold=(2, 3))


def tables_table(v: dict) -> dict:
    items = sorted(v["trace"]["tables"].items(), key=lambda kv: (str(kv[0]).lower(), str(kv[0])))
    rows = [[cell(name, str(name).lower(), cls="name"), cell(fmt_count(n), finite(n))] for name, n in items]
    return table("tbl-tables", [("Table", False), ("Rows", True)], rows)

