"""Where each number a finding states lives in the analysis JSON: every evidence row of the
verdict and the findings gets its ``unit`` and, when the document holds the same value, its
``path`` — an RFC 6901 JSON pointer into the same document (``/gaps/by_cause_share/sync``; a
process's own rows point into ``/processes/<i>/…``).

A path is written only when it resolves to the row's value (floats equal to 1e-9 relative), so a
reader can always follow it; a row whose quantity the document does not hold (a phase share
summed over several phase rows, a text composed for the finding) keeps its unit and no path.
Units: ``share`` (fraction 0..1), ``count``, ``ns``, ``ms``, ``bytes_per_step``,
``bytes_per_s``, ``text``.
"""
from __future__ import annotations

import math
from typing import Any

from nsys_diag.analyses.kernels.labels import without_parameters
from nsys_diag.model.vocabulary import GAP_CAUSES

__all__ = ["METRIC_PATHS", "attach_paths", "resolve", "scale_quantities"]

_GAP_ROWS = {f"gaps.{c}_share": (f"/gaps/by_cause_share/{c}", "share") for c in GAP_CAUSES}
_GAP_ROWS.update({f"gaps.{c}_evidence": (f"/gaps/by_cause_detail/{c}", "text")
                  for c in GAP_CAUSES})

METRIC_PATHS: dict[str, tuple[str | None, str]] = {
    **_GAP_ROWS,
    "gpu.utilization": ("/gpu/utilization", "share"),
    "gpu.copy_only_share": ("/gpu/copy_only_share", "share"),
    "gpu.busy_share": ("/window/capture/busy_share", "share"),
    "gaps.idle_share": ("/gaps/idle_share", "share"),
    "tensor_cores.share_of_kernel_time": ("/tensor_cores/share_of_kernel_time", "share"),
    "tensor_cores.non_tc_gemm_share": ("/tensor_cores/non_tc_gemm_share", "share"),
    "tensor_cores.tensor_active_during_gemm": ("/tensor_cores/tensor_active_during_gemm",
                                               "share"),
    "gpu_fill.underfilled_share": ("/gpu_fill/underfilled_share", "share"),
    "gpu_fill.small_grid_share": ("/gpu_fill/small_grid_share", "share"),
    "gpu_fill.tiny_block_share": ("/gpu_fill/tiny_block_share", "share"),
    "kernels.small_kernel_frac": ("/kernel_summary/small_fraction", "share"),
    "kernels.count": ("/kernel_summary/count", "count"),
    "kernels_in_window": ("/kernel_summary/count", "count"),
    "kernels.total_ns": ("/kernel_summary/total_ns", "ns"),
    "kernels.time_ms": (None, "ms"),
    "kernels.elementwise_share": (None, "share"),
    "loader.busy_share": ("/loader/busy_share", "share"),
    "steps.outliers": (None, "count"),
    "kernels.capture_time_ms": ("/window/capture/kernel_ms", "ms"),
    "gpu_metrics.sm_active": ("/gpu_metrics/overall/sm_active", "share"),
    "gpu_metrics.tensor_active": ("/gpu_metrics/overall/tensor_active", "share"),
    "gpu_metrics.dram_bandwidth_util": ("/gpu_metrics/overall/dram_bandwidth", "share"),
    "communication.exposed_share": ("/communication/exposed_share_of_step", "share"),
    "roofline.memory_bound_share": ("/roofline/time_weighted/memory_bound", "share"),
    "roofline.compute_bound_share": ("/roofline/time_weighted/compute_bound", "share"),
    "memory.peak_share": ("/memory/max_peak_share", "share"),
    "transfers.pageable_bytes_per_step": ("/transfers/pageable_bytes_per_step", "bytes_per_step"),
    "transfers.pageable_bytes_per_s": ("/transfers/pageable_bytes_per_s", "bytes_per_s"),
    "transfers.pageable_window_share": ("/transfers/pageable_window_share", "share"),
    "phases.data_share": (None, "share"),
    "phases.overhead_names": (None, "text"),
    "replay.saves_share": (None, "share"),
    "replay.saves_ms_per_step": (None, "ms"),
    "replay.what_if": (None, "text"),
    "replay.unavailable_reason": (None, "text"),
    "replay.not_limiting": (None, "text"),
    "replay.waits_on": (None, "text"),
    "replay.top_savings": (None, "text"),
    "replay.change": (None, "text"),
    "replay.step_ms_after": (None, "ms"),
    "replay.step_ms": ("/steps/mean_ms", "ms"),
    "communication.overlap_share": ("/communication/overlap_share", "share"),
    "thresholds.small_kernel_ns": ("/thresholds/small_kernel_ns", "ns"),
    "gpu_fill.example_kernel": (None, "text"),
    "gpu_fill.example_blocks": (None, "count"),
    "gpu_fill.example_threads_per_block": (None, "count"),
    "gpu_fill.example_blocks_per_sm": (None, "count"),
    "gpu_fill.example_fill": (None, "share"),
    "gpu_fill.sm_count": ("/gpu_fill/sm_count", "count"),
    "capture.launch_calls_without_kernels": (None, "count"),
}
"""Evidence metric → (JSON pointer below the process's root, unit); None: not in the document."""

_FALLBACKS = {"communication.exposed_share": ("/communication/exposed_share",)}
"""Other places a metric's value may sit (the first that holds the row's value wins)."""


def _token(part: str) -> str:
    return part.replace("~1", "/").replace("~0", "~")


def resolve(doc: Any, pointer: str) -> Any:
    """The value at RFC 6901 ``pointer`` in ``doc`` (``KeyError`` when it does not resolve)."""
    node = doc
    for raw in pointer.split("/")[1:]:
        part = _token(raw)
        if isinstance(node, list):
            node = node[int(part)]
        elif isinstance(node, dict):
            node = node[part]
        else:
            raise KeyError(pointer)
    return node


def same_value(a: Any, b: Any) -> bool:
    """The evidence value and the document's value are the same quantity."""
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None:
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)
    return str(a) == str(b)


def _locate(root: dict, prefix: str, metric: str, value: Any) -> str | None:
    pointer, _ = METRIC_PATHS.get(metric, (None, ""))
    for candidate in ((pointer,) if pointer else ()) + _FALLBACKS.get(metric, ()):
        try:
            found = resolve(root, candidate)
        except (KeyError, IndexError, ValueError):
            continue
        if same_value(found, value):
            return prefix + candidate
    return None


_REPLAY_KEYS = {"replay.saves_share": "saves_share",
                "replay.saves_ms_per_step": "saves_ms_per_step", "replay.what_if": "id",
                "replay.change": "change", "replay.step_ms_after": "step_ms_after"}
"""A finding's replay price: the key of its what-if row (``/replay/what_if/<i>/…``)."""


def _replay_paths(node: dict, prefix: str, rows: list[dict]) -> None:
    """The replay rows of one finding point at the what-if they name (``replay.what_if``)."""
    what = next((r.get("value") for r in rows if r.get("metric") == "replay.what_if"), None)
    table = (node.get("replay") or {}).get("what_if") or []
    i = next((k for k, w in enumerate(table) if w.get("id") == what), None)
    if i is None:
        return
    for r in rows:
        key = _REPLAY_KEYS.get(str(r.get("metric")))
        if key is not None and same_value(table[i].get(key), r.get("value")):
            r["path"] = f"{prefix}/replay/what_if/{i}/{key}"


def _phase_path(node: dict, prefix: str, row: dict) -> str | None:
    """A ``phases.<canonical>_share`` row points at its phase's ``share`` in ``/phases/<i>``
    when one phase row of that canonical name holds the row's value (several rows of one
    canonical phase sum to the value, so no single key holds it: no path)."""
    m = str(row.get("metric"))
    if not (m.startswith("phases.") and m.endswith("_share")):
        return None
    canonical = m[len("phases."):-len("_share")]
    found = node.get("phases")
    phases: list = found if isinstance(found, list) else []
    hits = [i for i, p in enumerate(phases) if p.get("canonical") == canonical]
    if len(hits) == 1 and same_value(phases[hits[0]].get("share"), row.get("value")):
        return f"{prefix}/phases/{hits[0]}/share"
    return None


_EXAMPLE_KEYS = {"gpu_fill.example_kernel": "name", "gpu_fill.example_blocks": "blocks",
                 "gpu_fill.example_threads_per_block": "threads_per_block",
                 "gpu_fill.example_blocks_per_sm": "blocks_per_sm",
                 "gpu_fill.example_fill": "fill"}
"""The latency headline's example launch: the keys of its ``/gpu_fill/kernels/<i>`` row."""


def _example_paths(node: dict, prefix: str, rows: list[dict]) -> None:
    """The example-launch rows of the latency finding point at its ``gpu_fill.kernels`` row
    (found by the name as the headline quotes it: ``labels.without_parameters``)."""
    name = next((r.get("value") for r in rows if r.get("metric") == "gpu_fill.example_kernel"),
                None)
    table = (node.get("gpu_fill") or {}).get("kernels") or []
    i = next((k for k, w in enumerate(table)
              if without_parameters(str(w.get("name", ""))) == name), None)
    if name is None or i is None:
        return
    for r in rows:  # a name longer than the headline quotes keeps no path (not the same text)
        key = _EXAMPLE_KEYS.get(str(r.get("metric")))
        if key is not None and same_value(table[i].get(key), r.get("value")):
            r["path"] = f"{prefix}/gpu_fill/kernels/{i}/{key}"


def scale_quantities(node: dict, prefix: str) -> list[dict]:
    """The numbers the verdict's scale advice states beyond its evidence rows: the projection
    of ``scaling[]`` beyond one GPU (GPUs, ms per step, efficiency, exposed ms), each with its
    pointer (the advice quotes these rows: ``diagnosis/scale_advice.py``)."""
    out = []
    for i, r in enumerate(node.get("scaling") or []):
        if not isinstance(r, dict) or not isinstance(r.get("gpus"), int) or r["gpus"] <= 1:
            continue
        for key, unit in (("gpus", "count"), ("step_ms", "ms"), ("efficiency", "share"),
                          ("exposed_ms", "ms")):
            if isinstance(r.get(key), (int, float)) and not isinstance(r.get(key), bool):
                out.append({"name": f"scaling.{key}", "value": r[key], "unit": unit,
                            "path": f"{prefix}/scaling/{i}/{key}"})
    return out


def _rows(node: dict) -> list[dict]:
    rows = list((node.get("verdict") or {}).get("evidence") or [])
    for f in node.get("findings") or []:
        rows += list(f.get("evidence") or [])
    return rows


def attach_paths(view: dict) -> dict:
    """``view`` with ``unit`` (and ``path`` where it resolves) on every evidence row of the
    verdict and the findings, top level and per process (in place; returned)."""
    nodes = [("", view)] + [(f"/processes/{i}", p)
                            for i, p in enumerate(view.get("processes") or [])]
    for prefix, node in nodes:
        for f in [node.get("verdict") or {}] + list(node.get("findings") or []):
            _replay_paths(node, prefix, list(f.get("evidence") or []))
            _example_paths(node, prefix, list(f.get("evidence") or []))
        verdict = node.get("verdict")
        scale = scale_quantities(node, prefix)
        if isinstance(verdict, dict) and scale and "projects" in str(verdict.get("scale_advice")):
            verdict["quantities"] = scale
        for row in _rows(node):
            metric = str(row.get("metric"))
            if metric in METRIC_PATHS:
                row["unit"] = METRIC_PATHS[metric][1]
            path = None if metric in _REPLAY_KEYS or metric in _EXAMPLE_KEYS else (
                # the thresholds (documented constants) are the file's, at the top level
                _locate(view, "", metric, row.get("value")) if metric.startswith("thresholds.")
                else _locate(node, prefix, metric, row.get("value"))
                or _phase_path(node, prefix, row))
            if path is not None:
                row["path"] = path
    return view
