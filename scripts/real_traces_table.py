"""The README's "Validated on real traces" table: ``analyze`` run on every real export in
``../shared/traces`` (nsys/*.sqlite, ncu/*.csv alone) and on the public PyTorch profiler traces
in ``tests/loaders/kineto_traces`` (licenses in its NOTICE).

    python scripts/real_traces_table.py            # print the Markdown table
    python scripts/real_traces_table.py --write    # replace the README block between the markers

Each row: the trace, what it is (one phrase from ../shared/traces/README.md's provenance, kept in
``WHAT`` below), the verdict, its confidence and the one-line why (the headline, cut to
``WHY_MAX_CHARS`` and escaped for a Markdown cell). A trace that cannot be analysed shows its
error line instead of a verdict. The ncu CSV is not joined to any nsys trace: none of them
profiles the same program. ``tests/test_real_traces_table.py`` regenerates the table and asserts
the README holds it, so the README stays true.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run from a checkout without installing

from nsys_diag.model.errors import NsysDiagError  # noqa: E402
from nsys_diag.model.text import markdown_cell, markdown_code_span  # noqa: E402

SHARED_TRACES = REPO.parent / "shared" / "traces"
KINETO_TRACES = REPO / "tests" / "loaders" / "kineto_traces"
README = REPO / "README.md"
BEGIN = "<!-- real-traces:begin -->"
END = "<!-- real-traces:end -->"
WHY_MAX_CHARS = 140
FIXED_TIME = "1970-01-01T00:00:00Z"  # the table must not depend on when it was made

WHAT = {
    "centerformer_nvtx_only_2022.4.sqlite": "EfficientCenterFormer, 304 iterations, NVTX only (no CUDA tables)",
    "dynamicvit_no_cuda_tables.sqlite": "a capture that recorded nothing (no CUDA, no NVTX)",
    "fastvideo_train_2xh100_2026.2.sqlite": "PyTorch training window, 2 processes × H100, flash-attention, NCCL",
    "mordred_rtx6000_2021.sqlite": "qdrep-era capture, Quadro RTX 6000, 12 kernels, 188 copies, no NVTX",
    "nvfuser_matmul_h200_2024.6.sqlite": "nvFuser matmul micro-benchmark, H200, 19 kernels",
    "saxpy_mpi_a100_2022.2.sqlite": "MPI+CUDA saxpy, A100, MPI NVTX ranges",
    "interp_a100_details.csv": "Nsight Compute details CSV (interpolation operator), A100",
    "hta_sampled_rank-0.json.gz": "torch.profiler trace, A100 training steps (HTA test data, MIT)",
    "hta_event_sync.json.gz": "torch.profiler trace, CUDA event syncs, A100 (HTA test data, MIT)",
    "hta_mi250_rocm.json.gz": "torch.profiler trace, ROCm 6.2 on MI250 (HTA test data, MIT)",
    "hta_cpu_only.json.gz": "torch.profiler trace, CPU-only profile (HTA test data, MIT)",
}
"""File name → what it is (from ../shared/traces/README.md); unknown files show "—"."""


def traces(root: Path = SHARED_TRACES, kineto: Path | None = KINETO_TRACES) -> list[Path]:
    """Every real export under ``root``: nsys SQLite files, then ncu CSVs, by name; then the
    PyTorch profiler traces under ``kineto`` (None: none)."""
    return (sorted((root / "nsys").glob("*.sqlite")) + sorted((root / "ncu").glob("*.csv"))
            + (sorted(kineto.glob("*.json.gz")) if kineto is not None else []))


def row(path: Path) -> str:
    """One table row for ``path``."""
    from nsys_diag.app.analyze import analyze_path

    what = WHAT.get(path.name, "—")
    name = f"`{markdown_code_span(f'{path.parent.name}/{path.name}', 80)}`"
    try:
        view = analyze_path(str(path), generated_at=FIXED_TIME)
    except NsysDiagError as exc:
        return (f"| {name} | {markdown_cell(what)} | — | — | "
                f"{markdown_cell(exc.one_line(), WHY_MAX_CHARS)} |")
    v = view["verdict"]
    return (f"| {name} | {markdown_cell(what)} | `{v['code']}` | "
            f"{markdown_cell(v.get('confidence') or '—')} | "
            f"{markdown_cell(v.get('headline') or '', WHY_MAX_CHARS)} |")


def table(root: Path = SHARED_TRACES, kineto: Path | None = KINETO_TRACES) -> str:
    """The Markdown table of every real trace under ``root`` and ``kineto`` (header included)."""
    lines = ["| trace | what it is | verdict | confidence | why (headline) |",
             "|---|---|---|---|---|"]
    lines += [row(p) for p in traces(root, kineto)]
    return "\n".join(lines) + "\n"


def replace_block(text: str, block: str) -> str:
    """``text`` with the part between ``BEGIN`` and ``END`` replaced by ``block``."""
    head, sep, rest = text.partition(BEGIN)
    if not sep or END not in rest:
        raise SystemExit(f"README.md lacks the {BEGIN} … {END} markers")
    return head + BEGIN + "\n" + block + END + rest.split(END, 1)[1]


def readme_block(text: str) -> str:
    """What the README holds between the markers (without them)."""
    return text.split(BEGIN, 1)[1].split(END, 1)[0].lstrip("\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write", action="store_true", help="replace the README block")
    ap.add_argument("--traces", type=Path, default=SHARED_TRACES, help="the real traces folder")
    a = ap.parse_args(argv)
    if not a.traces.is_dir():
        print(f"no traces folder at {a.traces}", file=sys.stderr)
        return 1
    block = table(a.traces)
    if a.write:
        README.write_text(replace_block(README.read_text(encoding="utf-8"), block),
                          encoding="utf-8")
    else:
        sys.stdout.write(block)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
