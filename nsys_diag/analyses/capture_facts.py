"""What the whole capture holds beside the analysed window: the facts the abstain rule and the
``insufficient_data`` verdict read (issue 26) — the process's kernel time and GPU busy share over
the capture from the file's launch-shape sample, the kernels a ``--window`` or step selection
left out when it holds none, what the capture lacks in words, and kernel launches traced without
kernel activity. Pure functions of the bundle (and the analysed window's results)."""
from __future__ import annotations

import numpy as np

from nsys_diag.analyses.diagnosis import data_quality as dq
from nsys_diag.analyses.timeline.busy import Window


def blind_launches(bundle) -> int | None:
    """Kernel launch calls traced without any kernel activity row (None: not that case)."""
    launches = bundle.meta.extra.get("launch_calls_without_kernels")
    return int(launches) if launches and dq.no_gpu_work_hint(bundle) else None


def outside_window(bundle, gpid: int | None, has_kernels: bool, window: Window
                    ) -> tuple[int, float] | None:
    """(kernels, kernel ms) of the capture that lie outside an analysed window holding none —
    a ``--window`` or step selection that missed the GPU work (None: not that case)."""
    if has_kernels or window.source not in ("user", "steps"):
        return None
    shapes = process_shapes(bundle, gpid)
    if shapes is None:
        return None
    n = int(round(float(shapes["weight"].to_numpy(np.float64).sum())))
    kernel_ns = float((shapes["duration_ns"].to_numpy(np.float64)
                       * shapes["weight"].to_numpy(np.float64)).sum())
    return (n, kernel_ns / 1e6) if n else None


def process_shapes(bundle, gpid: int | None):
    """The file's launch-shape sample rows of process ``gpid`` (all for -1; None without a
    sample or a process)."""
    shapes = getattr(bundle, "launch_shapes", None)
    if shapes is None or not len(shapes) or gpid is None:
        return None
    return shapes if gpid == -1 else shapes.loc[shapes["global_pid"].to_numpy() == gpid]


def capture_missing(bundle, has_kernels: bool, outside: tuple[int, float] | None = None
             ) -> tuple[str, ...]:
    """What the capture lacks for a diagnosis, in words (``insufficient_data`` headlines);
    ``outside``: the capture's kernels outside an analysed window that holds none."""
    if outside is not None:  # the selection, not the capture, holds nothing
        return (f"no CUDA kernel ran in the analysed window (the capture's {outside[0]:,} "
                f"kernels, {outside[1]:,.1f} ms of kernel time, lie outside it)",)
    missing = []
    blind = dq.no_gpu_work_hint(bundle)
    launches = bundle.meta.extra.get("launch_calls_without_kernels")
    if blind and launches:
        missing.append(f"kernel activity was not recorded although {int(launches):,} kernel "
                       "launch calls were traced")
    elif blind:
        missing.append("CUDA was initialised but nothing was launched on the GPU")
    elif not bundle.has_cuda:
        missing.append("the export holds no CUDA kernels or copies")
    elif not has_kernels:
        missing.append("no CUDA kernel ran in the analysed window")
    if not bundle.has_nvtx:
        missing.append("no NVTX ranges (steps and phases cannot be found)")
    return tuple(missing)


def capture_work(bundle, gpid: int | None, util, window: Window) -> dict:
    """The abstain rule's facts on the whole capture (issue 26): the process's kernel time from
    the file's launch-shape sample (each row × the launches it stands for) and the GPU's busy
    share (kernel time over the capture, or the analysed window's busy share — kernels and
    copies — when larger: a long capture whose steps keep the GPU busy is not blind). {}
    without a sample (an ncu CSV, an export without launch configuration): the window's kernel
    count and time decide."""
    shapes = process_shapes(bundle, gpid)
    if shapes is None:
        return {}
    kernel_ns = float((shapes["duration_ns"].to_numpy(np.float64)
                       * shapes["weight"].to_numpy(np.float64)).sum())
    capture_ns = bundle.meta.capture_end_ns - bundle.meta.capture_start_ns
    window_busy = (util.utilization + util.copy_only_share) if util.per_device else 0.0
    capture_busy = kernel_ns / capture_ns if capture_ns > 0 else 0.0
    return {"capture_kernel_ms": kernel_ns / 1e6,
            "capture_kernel_count": int(round(float(shapes["weight"].to_numpy(np.float64).sum()))),
            "capture_busy_share": min(max(capture_busy, window_busy), 1.0)}
