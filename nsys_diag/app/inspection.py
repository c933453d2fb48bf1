"""``nsys-diag inspect``: describe an export (format, version, tables, GPUs, NVTX, what can be
analysed) as terminal text and, on request, JSON."""
from __future__ import annotations

from typing import Callable

from nsys_diag.app.outputs import emit


def inspect_command(trace: str, *, json_out: str | None = None, include_host_info: bool = False,
                    echo: Callable[[str], None] = print) -> None:
    """``echo`` the description of ``trace``, then write its JSON to ``json_out`` (a path, or
    ``-`` for stdout: the caller then sends ``echo`` to stderr)."""
    from nsys_diag.loaders import load_trace
    from nsys_diag.report.inventory_render import build_inspect_view, inspect_to_json, render_inspect_text

    view = build_inspect_view(load_trace(trace), include_host_info=include_host_info)
    echo(render_inspect_text(view))
    emit(inspect_to_json(view), json_out, parents=False, what="the JSON")
