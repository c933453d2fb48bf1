"""The report contract: every JSON section of the analysis view, in one place.

``build_view`` (report/view.py) produces the view; ``normalize``, ``clean_view``/caps
(report/clean.py) and every renderer (HTML, Markdown, terminal, JSON) read what this module
declares:

* ``SPEC`` — each top-level key of the view → its spec object, in the spec language of
  model/schema_types.py: the analyses' sections declared beside their code (``Declaration.spec``,
  collected from the registry), the report's own in report/contract_sections.py, in the order of
  ``SECTION_ORDER``: every key once, with its JSON type and default;
  a ``Section`` marks an optional section, with the ``reason``/``hint`` of its unavailable form
  ``{available: false, reason, hint}``;
* ``unavailable(reason, hint)`` — that form, built in one place;
* ``LIST_CAPS`` — which lists the report caps, and by which ``Limits`` field;
* ``ALIASES`` — the extra names the JSON keeps for compatibility (keys are only ever added): each
  alias → its canonical key. Analyses emit canonical names only; ``apply_aliases`` adds the rest.
* ``SECTIONS`` — the report's sections in page order.

``json_schema()`` generates ``nsys_diag/schemas/analysis.schema.json`` from ``SPEC``.
``python -m nsys_diag.report.contract`` prints the generated key reference of docs/JSON.md;
``--write`` regenerates every generated file (``GENERATED``: that reference, the analysis, batch
index, compare and inspect schemas) once all of them generate; tests/report/test_contract.py
proves the committed files equal the generated ones.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import nsys_diag.analyses.suite  # noqa: F401 - importing the suite registers every declared section
from nsys_diag.analyses.engine.declaration import section_specs
from nsys_diag.analyses.kernels.names import kernel_base_name
from nsys_diag.model.vocabulary import VERDICT_CODES
from nsys_diag.report.json_out import schema_path
from nsys_diag.report.command_schemas import (COMPARE, INSPECT, SCHEMAS_DIR, compare_schema,
                                              inspect_schema, schema_json_text)
from nsys_diag.report.contract_sections import (PROCESS_ROW, PROCESS_ROW_CARRIED,
                                                PROCESS_ROW_OPTIONAL, ROW_SPECS, SECTION_ORDER)
from nsys_diag.model.schema_types import List, Node, Obj, Section

__all__ = ["ALIASES", "ANALYSIS", "LIST_CAPS", "PROCESS_KEYS", "SCHEMA_VERSION", "SECTIONS", "SPEC",
           "Section", "apply_aliases", "json_schema", "normalize", "normalize_as", "unavailable"]

SCHEMA_VERSION = 1
"""``schema_version`` of the analysis JSON."""


def assemble_spec(order: dict[str, Node | None], declared: dict[str, Node]) -> dict[str, Node]:
    """Every top-level key of ``order`` → its spec: the report's own, or the one its analysis
    declares (``declared``, by section). Raises on a section with no spec or two, and on a
    declared section the order does not place."""
    spec: dict[str, Node] = {}
    for key, own in order.items():
        node = declared.get(key) if own is None else own
        if node is None:
            raise ValueError(f"section {key!r} has no spec: declare it beside its analysis")
        if own is not None and key in declared:
            raise ValueError(f"section {key!r} is specified twice (report and declaration)")
        spec[key] = node
    unplaced = sorted(set(declared) - set(order))
    if unplaced:
        raise ValueError(f"declared sections missing from SECTION_ORDER: {unplaced}")
    return spec


SPEC: dict[str, Node] = assemble_spec(SECTION_ORDER, section_specs(walk=False))
"""Every top-level key of the analysis JSON → its spec (report/contract_sections.py and the
analyses' declarations)."""

PROCESS_KEYS = tuple(k for k, v in SPEC.items() if v.per_process)
"""The sections that describe one process: the top level holds the headline process's; with two
or more analysed processes every ``processes[]`` row holds its own as well."""

for _key in PROCESS_KEYS:  # one $defs entry each: the top level and every processes[] row refer to it
    SPEC[_key].ref = _key

SPEC["processes"] = List(Obj(
    {**PROCESS_ROW, **{k: SPEC[k] for k in PROCESS_KEYS}},
    carried=PROCESS_ROW_CARRIED,
    optional=PROCESS_ROW_OPTIONAL + tuple(k for k in PROCESS_KEYS if k in ("phases_status",))))

ANALYSIS = Obj(SPEC, optional=("phases_status",))
"""The analysis JSON as one object spec."""

PROCESS_ROW_KEYS = tuple(PROCESS_ROW)
"""The summary keys of a ``processes[]`` row (the per-process sections, ``PROCESS_KEYS``, follow)."""


def unavailable(reason: str, hint: str = "") -> dict:
    """The unavailable form of any section: ``{available: false, reason, hint}``."""
    return {"available": False, "reason": reason, "hint": hint}


def normalize(view: dict) -> dict:
    """``view`` with every key of ``SPEC`` the renderers read present (``None``/empty defaults),
    each optional section carrying ``available``/``reason``/``hint``. Templates run under
    ``StrictUndefined``; a view from an older or partial analysis still renders. Idempotent."""
    return ANALYSIS.norm(view if isinstance(view, dict) else {})


def normalize_as(value: Any, key: str) -> Any:
    """One sub-structure normalized against a named row spec (``"transfer_kind"``)."""
    return ROW_SPECS[key].norm(value)


# ------------------------------------------------------------------------------------- caps

LIST_CAPS: tuple[tuple[str, str | None, str], ...] = (
    ("kernels", None, "max_rows"),
    ("steps", "per_step", "max_steps"),
    ("steps", "outliers", "max_list"),
    ("steps", "warmup", "max_list"),
    ("steps", "incomplete", "max_list"),
    ("gaps", "top", "max_gaps"),
    ("gaps", "histogram", "max_bins"),
    ("tensor_cores", "*", "max_list"),  # non_tc_gemm_kernels, tc_kernels, evidence_list…
    ("roofline", "*", "max_rows"),  # kernels, matches, unmatched…: all top-N lists
    ("gpu_metrics", "per_device", "max_list"),
    ("loader", "per_worker", "max_list"),
    ("gpu_metrics", "per_phase", "max_list"),
    ("trace", "gpus", "max_list"),
    ("trace", "processes", "max_list"),
    ("phases", None, "max_list"),
    ("processes", None, "max_list"),
    ("data_quality", None, "max_list"),
    ("capture_hints", None, "max_list"),
    ("kernel_categories", None, "max_list"),
    ("verdict", "evidence", "max_list"),
    ("verdict", "recommendations", "max_list"),
    ("verdict", "secondary", "max_list"),
    ("verdict", "advice", "max_list"),
    ("findings", None, "max_list"),
    ("communication", "per_device", "max_list"),
    ("memory", "per_device", "max_list"),
)
"""(section, list key or ``None`` for a top-level list or ``"*"`` for every list in the section,
``Limits`` field). ``trace.tables`` (``max_tables``) and ``timeline.strips`` (4 strips, 16 devices,
``max_list`` phases, ``max_bins`` bins) are capped by report/clean.py's own rules."""

# ----------------------------------------------------------------------------------- aliases

ALIASES: dict[str, dict[str, str]] = {
    "roofline": {"device": "gpu"},
    "roofline.kernels[]": {
        "arithmetic_intensity": "ai_dram",
        "achieved_flops_per_s": "achieved_flop_per_s",
        "sm_pct": "sol_compute_pct",
        "mem_pct": "sol_memory_pct",
        "precision": "dominant_precision",
        "time_share": "timeline_share",  # joined to a timeline (analyses/roofline/ncu_join.py) only
    },
}
"""Alias → canonical key, per place in the view (``x[]``: every row of list ``x``). The JSON keeps
these names (keys are only ever added); they always hold the canonical key's value.

Two derived report keys sit beside them in ``roofline.kernels[]`` (``apply_aliases``): ``short_name``
(the kernel's base name) and ``time_share`` (``time_ns`` / the roofline's ``total_time_ns``; the
alias of ``timeline_share`` when the ncu data is joined to the timeline).
The Tensor Core share keeps one name per output: ``tensor_cores.share_of_kernel_time`` in the
analysis JSON, ``tensor_core_share`` in a batch index row (analyses/job/batch_summary.py) — the same
number; ``roofline.tensor_core_share_by_time`` and per-kernel ``tensor_core_share`` are ncu's own
measures, not aliases."""


ALIAS_PLACES: dict[str, str] = {"roofline.device": "source"}
"""Alias → the key it follows in the section's key order (else it is appended). Outputs that do
not sort their keys (a batch run's per-trace JSON) have always shown ``device`` right after
``source``; key order is part of those bytes."""


def _add_aliases(row: dict, table: dict[str, str], where: str = "") -> None:
    for alias, canonical in table.items():
        if canonical not in row:
            continue
        anchor = ALIAS_PLACES.get(f"{where}.{alias}")
        if anchor in row and alias not in row:
            items = list(row.items())
            at = list(row).index(anchor) + 1
            row.clear()
            row.update(items[:at] + [(alias, dict(items)[canonical])] + items[at:])
        else:
            row[alias] = row[canonical]


def apply_aliases(section: str, data: Any) -> Any:
    """``data`` (one section's JSON) with the aliases of ``ALIASES`` and the derived report keys
    added, in place; returns it."""
    if not isinstance(data, dict) or data.get("available") is False:
        return data
    _add_aliases(data, ALIASES.get(section, {}), section)
    rows_key = section + ".kernels[]"
    if rows_key in ALIASES and isinstance(data.get("kernels"), list):
        total = data.get("total_time_ns")
        for row in data["kernels"]:
            row["short_name"] = kernel_base_name(row["name"]) or row["name"]
            row["time_share"] = row["time_ns"] / total if total else None
            _add_aliases(row, ALIASES[rows_key])
    return data


# ---------------------------------------------------------------------------------- sections

SECTIONS = (
    ("verdict", "Verdict"),
    ("phases", "Step breakdown"),
    ("steps", "Steps"),
    ("metrics", "Core metrics"),
    ("gaps", "GPU idle"),
    ("timeline", "Timeline"),
    ("replay", "Waits on"),
    ("kernels", "Kernels"),
    ("roofline", "Roofline"),
    ("transfers", "Transfers"),
    ("capture", "Capture"),
    ("data-quality", "Data quality"),
)
"""Every section of the report, in page order; ids are ``sec-<key>``."""

VERDICT_TONES = {"compute_bound": "good", "insufficient_data": "neutral"}  # else "warn"

# ------------------------------------------------------------------- generated key reference

DOC_BEGIN = "<!-- key reference: generated by `python -m nsys_diag.report.contract --write` -->"
DOC_END = "<!-- end of generated key reference -->"


def _cell(text: str) -> str:
    """``text`` safe in a Markdown table cell."""
    return text.replace("|", "\\|")


def key_reference() -> str:
    """The key reference of docs/JSON.md, generated from ``SPEC``, ``ALIASES`` and the inspect
    and compare specs."""
    out = [DOC_BEGIN, "", "## Key reference", "",
           "Every key of the analysis JSON, nested (the schema allows no other). The renderers "
           "default the keys they read to `null`/empty when absent; optional sections carry "
           "`available` and, when unavailable, `reason` and `hint`.", "",
           "| Key | Keys inside | When unavailable: reason · hint |", "|---|---|---|"]
    for key, spec in SPEC.items():
        inner = spec.keys_text().replace("|", "\\|")
        if key == "processes":
            inner = ("[{" + ", ".join(PROCESS_ROW_KEYS) + ", and with two or more processes each "
                     "one's own " + ", ".join(k for k in PROCESS_KEYS if k in SPEC) + "}]")
        na = (f"{spec.reason} · {spec.hint}".replace("|", "\\|").rstrip(" ·")
              if isinstance(spec, Section) else "")
        out.append(f"| `{key}` | {inner} | {na} |")
    out += ["", "Aliases (same value as the canonical key, kept because keys are never dropped):", "",
            "| Where | Alias | Canonical key |", "|---|---|---|"]
    for where, table in ALIASES.items():
        out += [f"| `{where}` | `{alias}` | `{canonical}` |" for alias, canonical in table.items()]
    for title, spec, schema in (("inspect --json", INSPECT, "inspect.schema.json"),
                                ("compare --json", COMPARE, "compare.schema.json")):
        out += ["", f"## `{title}` keys", "",
                f"`nsys_diag/schemas/{schema}`, generated from `nsys_diag/report/command_schemas.py`"
                " with the files above; every object is closed, every map typed.", "",
                "| Key | Keys inside |", "|---|---|"]
        out += [f"| `{key}` | {_cell(node.keys_text())} |" for key, node in spec.keys().items()]
    return "\n".join(out + ["", DOC_END]) + "\n"


def docs_with_reference(text: str) -> str:
    """docs/JSON.md's ``text`` with its generated block replaced (appended when missing)."""
    if DOC_BEGIN in text and DOC_END in text:
        head, rest = text.split(DOC_BEGIN, 1)
        tail = rest.split(DOC_END, 1)[1].lstrip("\n")
        return head + key_reference() + tail
    return text.rstrip("\n") + "\n\n" + key_reference()

# ------------------------------------------------------------------------ generated JSON Schema


def json_schema() -> dict:
    """The JSON Schema of ``analyze --json`` (draft 2020-12), generated from ``SPEC``."""
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": "https://nsys-diag.invalid/schemas/analysis.schema.json",
            "title": f"nsys-diag analysis (schema_version {SCHEMA_VERSION})",
            "description": "Output of `nsys-diag analyze --json`; see docs/JSON.md. Keys are only "
                           "ever added, never renamed. Units: *_ns integer ns, *_ms float ms, shares "
                           "fractions 0..1. Generated by `python -m nsys_diag.report.contract --write`.",
            "$defs": {"verdict_code": {"enum": list(VERDICT_CODES)},
                      **{key: SPEC[key].definition() for key in PROCESS_KEYS}},
            **ANALYSIS.schema()}


def schema_text() -> str:
    """The committed text of ``nsys_diag/schemas/analysis.schema.json``."""
    return schema_json_text(json_schema())


def generated_files(docs: Path) -> dict[Path, str]:
    """Every generated file → its generated text: the key reference block of ``docs``
    (docs/JSON.md) and the analysis, batch index, compare and inspect schemas. Raises when one of
    them does not generate (nothing is written here)."""
    from nsys_diag.report import batch_schema

    return {docs: docs_with_reference(docs.read_text(encoding="utf-8")),
            schema_path(): schema_text(),
            batch_schema.schema_file(): batch_schema.schema_text(),
            SCHEMAS_DIR / "compare.schema.json": schema_json_text(compare_schema()),
            SCHEMAS_DIR / "inspect.schema.json": schema_json_text(inspect_schema())}


def write_generated(docs: Path) -> list[Path]:
    """Regenerate every generated file: all are built in memory first, so a spec that does not
    generate leaves the tree as it was; then the ones that changed are written. Returns those."""
    texts = generated_files(docs)
    changed = [p for p, text in texts.items()
               if not p.is_file() or p.read_text(encoding="utf-8") != text]
    for path in changed:
        path.write_text(texts[path], encoding="utf-8")
    return changed


def main(argv: list[str] | None = None) -> int:
    """Print the key reference; ``--write [PATH]`` regenerates docs/JSON.md (or PATH) and every
    generated schema, only once all of them generate."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m nsys_diag.report.contract")
    ap.add_argument("--write", nargs="?", const="docs/JSON.md", default=None)
    args = ap.parse_args(argv)
    if args.write is None:
        print(key_reference(), end="")
        return 0
    for path in write_generated(Path(args.write)):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
