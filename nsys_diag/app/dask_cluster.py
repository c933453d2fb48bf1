"""The Dask client of ``--scheduler ADDRESS`` / ``--dask`` (``batch`` and a streamed ``analyze``):
a connection to the user's scheduler, or a local cluster of worker processes."""
from __future__ import annotations

from nsys_diag.model.errors import UsageError
from nsys_diag.model.text import terminal_line

DASK_HINT = "pip install 'nsys-diag[dask]'"
MESSAGE_CHARS = 300


def _safe(text: object) -> str:
    return terminal_line(text, MESSAGE_CHARS)


def dask_client(scheduler: str | None, jobs: int):
    """(client, local cluster or None): ``scheduler``'s, else a local cluster of ``jobs``."""
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise UsageError("--scheduler/--dask need Dask distributed, which is not installed: "
                         f"{DASK_HINT}") from None
    if scheduler:
        try:
            return Client(scheduler, timeout="20s"), None
        except (OSError, TimeoutError) as exc:
            raise UsageError(f"cannot reach the Dask scheduler {_safe(scheduler)}: "
                             f"{_safe(exc)}") from None
    cluster = LocalCluster(n_workers=jobs, threads_per_worker=1, processes=True,
                           dashboard_address=None)
    return Client(cluster), cluster
