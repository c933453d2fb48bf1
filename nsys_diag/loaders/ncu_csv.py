"""Nsight Compute CSV loader: ``ncu --csv`` stdout or ``ncu --import R.ncu-rep --csv``.

Both layouts (NCU_CSV.md §2–§4):

* ``details`` — long: one row per launch × section × metric, columns ``Section Name``,
  ``Metric Name``, ``Metric Unit``, ``Metric Value`` (+ optional rule columns; rule rows have an
  empty ``Metric Name`` and are kept apart);
* ``raw`` — wide: one row per launch, one column per metric, a units row right after the header.

Robustness rules: lines before the header (application output, ``==PROF==``/``==WARNING==``) and
non-record lines after it are skipped; columns are found by header *name*; short (ragged) rows
are padded; the decimal mark is decided **once per file** from unambiguous values (§4: reading
English ``"7,488"`` as 7.488 makes a kernel 1000× too fast); ``n/a`` → NaN; auto-scaled units
(``usecond``, ``Kbyte``, ``cycle/nsecond``, ``Ghz`` …) are converted to base units (s, byte,
byte/s, cycle, cycle/s, inst …) with an explicit table. Output: a ``TraceBundle`` with
``format="ncu-csv"`` whose ``ncu_launches``/``ncu_metrics`` (and, when the CSV says, ``gpus``)
are filled; the nsys frames stay empty. A file with no CSV table (only ``==ERROR==`` lines) is an
``InputError`` quoting ncu's own message. Only a regular file is read (a FIFO or device is an
``InputError``), at most ``MAX_NCU_CSV_BYTES``, with at most ``MAX_NCU_COLUMNS`` header columns:
beyond either cap the file is refused with a clear error instead of a blow-up.
"""
from __future__ import annotations

import csv
import io
from dataclasses import replace
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from nsys_diag.model import contracts as C
from nsys_diag.model.bundle import LoadWarning, TraceBundle, TraceMeta
from nsys_diag.model.errors import InputError
from nsys_diag.model.vocabulary import HINT_NCU_CSV
from nsys_diag.model.safe_files import SQLITE_MAGIC, read_capped, read_head

CAPTURE_HINT = HINT_NCU_CSV

MAX_NCU_CSV_BYTES = 4 * 2**30
"""Largest ncu CSV read (bytes): ~10^7 launches × metrics on the raw page; a larger file is refused
before it is read (the whole text is held in memory while parsing)."""

MAX_NCU_COLUMNS = 10_000
"""Most header columns accepted: ``--set full --page raw`` has under 2,000 metrics per launch; a
header of 100k columns (a damaged or hostile file) would cost minutes and gigabytes."""

# Identity columns (never metrics). NVTX columns are recognised by their ':'-joined headers.
IDENTITY_COLUMNS = (
    "ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Kernel Time", "Context",
    "Stream", "Block Size", "Grid Size", "Device", "CC", "Section Name", "Metric Name",
    "Metric Unit", "Metric Value", "Rule Name", "Rule Type", "Rule Description",
    "Estimated Speedup Type", "Estimated Speedup", "Function Name", "Demangled Name",
)
_NA_STRINGS = ("", "n/a", "N/A", "na", "NA", "nan", "NaN", "-", "--")

# Metrics whose unit cell is empty but whose unit is known (NCU_CSV.md §3).
IMPLICIT_UNITS = {
    "device__attribute_clock_rate": "khz",
    "device__attribute_memory_clock_rate": "khz",
    "device__attribute_global_memory_bus_width": "bit",
    "device__attribute_l2_cache_size": "byte",
    "device__attribute_total_memory": "byte",
    "gpu__time_duration.sum": "nsecond",
}

# String-valued metrics we lift into the launches / gpus frames.
_STRING_METRICS = ("device__attribute_display_name", "launch__grid_size", "launch__block_size",
                   "Grid Size", "Block Size")


# ------------------------------------------------------------------------------- sniffing
def _decode(raw: bytes) -> str:
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        return raw.decode("utf-16", errors="replace")
    text = raw.decode("utf-8", errors="replace")
    return text[1:] if text.startswith("\ufeff") else text


def _is_header_line(line: str) -> bool:
    s = line.strip()
    if s.startswith('"ID","'):
        return True
    return s.startswith("ID,") and "Kernel Name" in s


def looks_like_ncu_csv(head: bytes) -> bool:
    """True when the first bytes look like ``ncu --csv`` output.

    Accepts the CSV header (``"ID","Process ID",…``) or ncu's own ``==PROF==``/``==ERROR==``/
    ``==WARNING==`` lines, so that an error-only capture is routed to this loader and reported
    with ncu's message instead of "unrecognised format".
    """
    text = _decode(head)
    for line in text.splitlines():
        s = line.strip()
        if _is_header_line(s) or s.startswith(("==PROF==", "==ERROR==", "==WARNING==")):
            return True
    return False


# ------------------------------------------------------------------------------- units
_TIME = {"second": 1.0, "msecond": 1e-3, "usecond": 1e-6, "nsecond": 1e-9, "psecond": 1e-12,
         "s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9, "ps": 1e-12, "sec": 1.0}
_PREFIX = {"": 1.0, "K": 1e3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
# Bases that take SI prefixes (1000-based, NCU_CSV.md §1). Other words (SM, pass, block, warp,
# thread, cluster, register …) pass through unchanged and are never split into prefix + unit.
_PREFIXABLE = {"byte": "byte", "inst": "inst", "cycle": "cycle", "flop": "flop", "sector": "sector",
               "request": "request", "wavefront": "wavefront", "bit": "bit", "op": "op",
               "warp": "warp", "thread": "thread", "transaction": "transaction"}
_HZ = {"hz": 1.0, "khz": 1e3, "mhz": 1e6, "ghz": 1e9, "thz": 1e12}


def _split_prefixed(word: str) -> tuple[str, float] | None:
    if word in _PREFIXABLE:
        return _PREFIXABLE[word], 1.0
    if len(word) > 1 and word[0] in _PREFIX and word[1:] in _PREFIXABLE:
        return _PREFIXABLE[word[1:]], _PREFIX[word[0]]
    if word.endswith("s") and word[:-1] in _PREFIXABLE:  # "bytes"
        return _PREFIXABLE[word[:-1]], 1.0
    return None


@lru_cache(maxsize=512)
def normalize_unit(unit: str) -> tuple[str, float]:
    """``(base_unit, factor)`` such that ``value * factor`` is in ``base_unit``.

    ``nsecond``/``ns``/``usecond``/``msecond`` → ``s``; ``Kbyte``/``Mbyte``/``Gbyte`` → ``byte``;
    ``Gbyte/second`` → ``byte/s``; ``cycle/nsecond``/``Ghz`` → ``cycle/s``; ``Kinst`` → ``inst``;
    ``%`` stays ``%``. Unknown units pass through with factor 1.
    """
    u = (unit or "").strip()
    if not u:
        return "", 1.0
    if u == "%":
        return "%", 1.0
    low = u.lower()
    if low in _HZ:
        return "cycle/s", _HZ[low]
    if u in _TIME:
        return "s", _TIME[u]
    if "/" in u:
        num, _, den = u.partition("/")
        num_p = _split_prefixed(num)
        if den in _TIME:
            if num_p is not None:
                base, f = num_p
                return f"{base}/s", f / _TIME[den]
            if num in _TIME:  # e.g. "nsecond/second" (ratio)
                return "", _TIME[num] / _TIME[den]
            return u, 1.0
        if num_p is not None and den:
            base, f = num_p
            return f"{base}/{den}", f
        return u, 1.0
    p = _split_prefixed(u)
    if p is not None:
        return p
    return u, 1.0


# ------------------------------------------------------------------------------- numbers
_DOT_DECIMAL_RES = (
    r"^[-+]?\d{1,3}(?:,\d{3})+\.\d+$",  # 1,234.56
    r"^[-+]?\d+\.(?:\d{1,2}|\d{4,})$",  # 62.50 / 0.12345 (European grouping has exactly 3)
    r"^[-+]?\d{1,3}(?:,\d{3}){2,}$",  # 1,009,150 (two grouping commas)
    r"^[-+]?0\.\d+$",  # 0.123
)
_COMMA_DECIMAL_RES = (
    r"^[-+]?\d{1,3}(?:\.\d{3})+,\d+$",
    r"^[-+]?\d+,(?:\d{1,2}|\d{4,})$",
    r"^[-+]?\d{1,3}(?:\.\d{3}){2,}$",
    r"^[-+]?0,\d+$",
)
_AMBIGUOUS_RE = r"^[-+]?\d{1,3}[.,]\d{3}$"
_SPACES_RE = r"[\s\u00a0\u202f']"


def decide_decimal_mark(values: pd.Series) -> tuple[str, bool]:
    """Return ``(mark, ambiguous)`` for a file's value cells, decided once per file (§4).

    Counts values that can only be read one way (both marks present, or a mark followed by
    other than exactly three digits, or repeated grouping). Defaults to '.' when there is no
    such evidence; ``ambiguous`` is True when the choice mattered for some value but had no
    evidence (e.g. every value looks like ``7,488``).
    """
    s = pd.Series(pd.unique(values[values.str.len() > 0].to_numpy()), dtype="string")
    if s.empty:
        return ".", False
    s = s.str.replace(_SPACES_RE, "", regex=True)
    dot = sum(int(s.str.match(rx).sum()) for rx in _DOT_DECIMAL_RES)
    comma = sum(int(s.str.match(rx).sum()) for rx in _COMMA_DECIMAL_RES)
    if comma > dot:
        return ",", False
    ambiguous = dot == 0 and comma == 0 and bool(s.str.match(_AMBIGUOUS_RE).any())
    return ".", ambiguous


def parse_numbers(values: pd.Series, decimal: str) -> pd.Series:
    """Vectorised: locale-formatted strings → float64 (NaN for n/a, empty and text)."""
    s = values.astype("string").str.strip()
    s = s.str.replace(_SPACES_RE, "", regex=True)
    if decimal == ",":
        s = s.str.replace(".", "", regex=False).str.replace(",", ".", regex=False)
    else:
        s = s.str.replace(",", "", regex=False)
    s = s.mask(s.isin(_NA_STRINGS))
    out = pd.to_numeric(s, errors="coerce").astype(np.float64)
    return out.where(np.isfinite(out))  # hardening: 'inf' / '1e400' are not measurements


def _plausible_int(v: pd.Series) -> pd.Series:
    """Numeric series with non-finite and out-of-int64-range values as NaN (before an int cast;
    hardening: a damaged CSV can hold '1e400' or '9e30' where an id is expected)."""
    v = pd.to_numeric(v, errors="coerce").astype(np.float64)
    return v.where(np.isfinite(v) & (v.abs() < 2.0**62))


# ------------------------------------------------------------------------------- reading
def _read_lines(p: Path) -> list[str]:
    if read_head(p, len(SQLITE_MAGIC)) == SQLITE_MAGIC:  # before reading it all (--ncu X.sqlite)
        raise InputError(p, "is a SQLite database (an nsys export?), not an ncu CSV",
                         "pass the nsys export as the trace and the ncu CSV with --ncu; "
                         + CAPTURE_HINT)
    raw = read_capped(p, MAX_NCU_CSV_BYTES, "an ncu CSV")  # InputError: unreadable, FIFO, too big
    return _decode(raw).splitlines()


def _ncu_messages(lines: list[str], tag: str) -> list[str]:
    return [ln.strip()[len(tag):].strip() for ln in lines if ln.strip().startswith(tag)]


def _table_rows(p: Path, lines: list[str]) -> tuple[list[str], list[str], dict]:
    """Find the header, keep record lines, parse with a real CSV reader. Pads ragged rows."""
    header_idx = next((i for i, ln in enumerate(lines) if _is_header_line(ln)), None)
    if header_idx is None:
        errors = _ncu_messages(lines, "==ERROR==")
        if errors:
            raise InputError(p, "ncu output without a CSV table; ncu said: " + " | ".join(errors),
                             "fix the failing ncu run, then capture again; " + CAPTURE_HINT)
        raise InputError(p, "no Nsight Compute CSV table in this file (no header row starting "
                            "with \"ID\",)", CAPTURE_HINT)
    header_line = lines[header_idx].strip()
    quoted = header_line.startswith('"')
    body: list[str] = []
    skipped_after = 0
    broken = 0
    for ln in lines[header_idx + 1:]:
        s = ln.strip()
        keep = s.startswith('"') if quoted else (s[:1].isdigit() or s[:1] in ',"')
        if keep and quoted and s.count('"') % 2:  # an unbalanced quote: a cut or damaged record
            broken += 1
            keep = False
        if keep:
            body.append(s)
        elif s:
            skipped_after += 1
    noise_before = sum(1 for ln in lines[:header_idx] if ln.strip())
    try:
        header = [h.strip() for h in next(csv.reader([header_line]))]
    except csv.Error as exc:
        raise InputError(p, f"malformed ncu CSV header ({exc})", CAPTURE_HINT) from None
    if len(header) > MAX_NCU_COLUMNS:
        raise InputError(p, f"ncu CSV header of {len(header):,} columns, more than the "
                         f"{MAX_NCU_COLUMNS:,} a real ncu capture has (damaged file?)", CAPTURE_HINT)
    info = {"noise_lines": noise_before + skipped_after, "header": header, "records": len(body),
            "broken": broken}
    return header, body, info


def _frame(header: list[str], body: list[str]) -> pd.DataFrame:
    """Records → all-string frame with the header's columns (C parser; short rows padded,
    over-long rows dropped and counted by the caller)."""
    names = _dedupe_columns(header)
    if not body:
        return pd.DataFrame({c: pd.Series([], dtype=object) for c in names})
    df = pd.read_csv(io.StringIO("\n".join(body)), header=None, names=names, dtype=str,
                     keep_default_na=False, na_filter=False, engine="c", on_bad_lines="skip",
                     quotechar='"', skipinitialspace=False)
    return df.fillna("").astype(str)


def _dedupe_columns(header: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for h in header:
        k = seen.get(h, 0)
        out.append(h if k == 0 else f"{h}#{k}")
        seen[h] = k + 1
    return out


def _is_nvtx_column(name: str) -> bool:
    return ":" in name and ("Range" in name or "Domain" in name)


def _long_from_details(df: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Details page → (metric rows long frame, rule rows)."""
    name = df["Metric Name"].str.strip()
    is_rule = name == ""
    rules = df[is_rule]
    m = df[~is_rule]
    long = pd.DataFrame({
        "ID": m["ID"].to_numpy(),
        "metric": name[~is_rule].to_numpy(),
        "section": (m["Section Name"] if "Section Name" in m else pd.Series("", index=m.index)).to_numpy(),
        "unit_raw": (m["Metric Unit"] if "Metric Unit" in m else pd.Series("", index=m.index)).to_numpy(),
        "value_raw": m["Metric Value"].to_numpy(),
    })
    return long, rules


def _long_from_raw(df: pd.DataFrame) -> pd.DataFrame:
    """Raw page → long frame; the units row (identity cells empty) supplies the units."""
    metric_cols = [c for c in df.columns if c not in IDENTITY_COLUMNS and not _is_nvtx_column(c)]
    units = {c: "" for c in metric_cols}
    if len(df) and df["ID"].iloc[0].strip() == "":
        units = {c: df[c].iloc[0] for c in metric_cols}
        df = df.iloc[1:]
    df = df[df["ID"].str.strip() != ""]
    if not metric_cols or df.empty:
        return pd.DataFrame({"ID": [], "metric": [], "section": [], "unit_raw": [], "value_raw": []})
    wide = df[["ID"] + metric_cols]
    long = wide.melt(id_vars="ID", var_name="metric", value_name="value_raw")
    long["section"] = ""
    long["unit_raw"] = long["metric"].map(units).fillna("")
    return long[["ID", "metric", "section", "unit_raw", "value_raw"]]


def _normalise_units(long: pd.DataFrame) -> tuple[pd.Series, pd.Series]:
    """Vectorised unit normalisation: one table lookup per unique unit string."""
    unit_raw = long["unit_raw"].astype(str).str.strip()
    implicit = long["metric"].map(IMPLICIT_UNITS)
    unit_raw = unit_raw.mask((unit_raw == "") & implicit.notna(), implicit)
    uniq = pd.unique(unit_raw)
    table = {u: normalize_unit(u) for u in uniq}  # a handful of unit strings per file
    base = unit_raw.map({u: t[0] for u, t in table.items()})
    factor = unit_raw.map({u: t[1] for u, t in table.items()}).astype(np.float64)
    return base, factor


def _int_or_missing(s: pd.Series) -> pd.Series:
    v = _plausible_int(s.astype(str).str.replace(",", "", regex=False).str.strip())
    return v.fillna(C.MISSING).astype(np.int64)


def _parse(p: Path, lines: list[str]) -> tuple[pd.DataFrame, dict, list[LoadWarning]]:
    """(the CSV as a frame, ``_table_rows`` info, warnings about skipped records)."""
    header, rows, info = _table_rows(p, lines)
    if "ID" not in header or "Kernel Name" not in header:
        raise InputError(p, "CSV header lacks the ncu 'ID' / 'Kernel Name' columns", CAPTURE_HINT)
    try:
        df = _frame(header, rows)
    except (pd.errors.ParserError, csv.Error, ValueError) as exc:
        raise InputError(p, f"malformed ncu CSV ({str(exc).strip()[:200]})",
                         CAPTURE_HINT) from None
    if len(df) < info["records"]:
        n_bad = info["records"] - len(df)
        warnings = [LoadWarning("ncu_bad_rows", f"{n_bad} ncu CSV records with more fields "
                                "than the header were skipped", n_bad)]
    else:
        warnings = []
    if info["broken"]:
        warnings.append(LoadWarning("ncu_bad_rows", f"{info['broken']} ncu CSV records with an "
                                    "unbalanced quote (cut or damaged lines) were skipped",
                                    info["broken"]))
    return df, info, warnings


def _identified(p: Path, df: pd.DataFrame, warnings: list[LoadWarning]) -> pd.DataFrame:
    """Rows with a numeric launch ID (``launch_id``); an input error when none is left."""
    ident = df[df["ID"].str.strip() != ""]
    ids = _plausible_int(ident["ID"].str.replace(",", "", regex=False).str.strip())
    bad_ids = int(ids.isna().sum())
    if bad_ids:
        warnings.append(LoadWarning("ncu_bad_rows", f"{bad_ids} ncu CSV rows without a numeric ID "
                                    "were skipped", bad_ids))
    ident = ident[ids.notna()].assign(launch_id=ids[ids.notna()].astype(np.int64))
    if ident.empty:
        raise InputError(p, "the ncu CSV has a header but no profiled kernel rows",
                         "check that ncu profiled at least one kernel (filters such as -k / "
                         "--launch-skip may exclude every launch); " + CAPTURE_HINT)
    return ident


def _metric_values(long: pd.DataFrame, warnings: list[LoadWarning]
                   ) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    """(long rows with ``launch_id``, metrics frame in base units — first of repeated (launch,
    metric) kept —, decimal mark)."""
    long = long[long["ID"].astype(str).str.strip() != ""]
    long_ids = _plausible_int(long["ID"].astype(str).str.replace(",", "", regex=False))
    long = long[long_ids.notna()].assign(launch_id=long_ids[long_ids.notna()].astype(np.int64))
    value_raw = long["value_raw"].astype(str).str.strip()
    decimal, ambiguous = decide_decimal_mark(value_raw)
    if ambiguous:
        warnings.append(LoadWarning(
            "ncu_decimal_mark_assumed", "no value in the ncu CSV shows which decimal mark it uses; "
            "assumed '.' (English locale)", 0,
            "run ncu with an English/C locale (LC_ALL=C) or --print-units base"))
    numbers = parse_numbers(value_raw, decimal)
    base_unit, factor = _normalise_units(long)
    value = numbers * factor.to_numpy()
    na_cells = int(value_raw.str.lower().isin(["n/a", "na"]).sum())
    if na_cells:
        warnings.append(LoadWarning("ncu_na_values", f"{na_cells} ncu metric values were 'n/a' "
                                    "(metric not available for that launch)", na_cells))
    metrics = pd.DataFrame({
        "launch_id": long["launch_id"].to_numpy(),
        "metric": long["metric"].astype(str).to_numpy(),
        "section": long["section"].astype(str).to_numpy(),
        "unit": base_unit.astype(str).to_numpy(),
        "value": value.to_numpy(),
    })
    dup = metrics.duplicated(["launch_id", "metric"], keep="first")
    if dup.any():
        n_dup = int(dup.sum())
        warnings.append(LoadWarning("ncu_duplicate_metrics", f"{n_dup} repeated (launch, metric) "
                                    "rows in the ncu CSV; the first value was kept", n_dup))
        metrics = metrics[~dup]
    return long, metrics, decimal


def _rule_list(rules: pd.DataFrame) -> list[dict]:
    """ncu rule results of the details layout (at most 500)."""
    if not len(rules):
        return []
    rule_cols = {"Section Name": "section", "Rule Name": "rule", "Rule Type": "type",
                 "Rule Description": "description"}
    rr = rules[[c for c in rule_cols if c in rules.columns]].rename(columns=rule_cols)
    rr.insert(0, "launch_id", _plausible_int(rules["ID"]).fillna(-1).astype(np.int64))
    return rr.head(500).to_dict("records")


def _output_warnings(lines: list[str], info: dict, warnings: list[LoadWarning]) -> None:
    """Skipped non-CSV lines and ncu's own ==WARNING== / ==ERROR== messages."""
    if info["noise_lines"]:
        warnings.append(LoadWarning("ncu_noise_lines", f"{info['noise_lines']} non-CSV lines "
                                    "(application output, ==PROF== messages) were skipped",
                                    info["noise_lines"]))
    for msg in _ncu_messages(lines, "==WARNING=="):
        warnings.append(LoadWarning("ncu_warning", f"ncu warned: {msg}", 1))
    errors = _ncu_messages(lines, "==ERROR==")
    if errors:
        warnings.append(LoadWarning("ncu_error", "ncu reported: " + " | ".join(errors), len(errors)))


def load_ncu_csv(path: str | Path) -> TraceBundle:
    """Read an ncu CSV (either layout) into a TraceBundle (``meta.format == "ncu-csv"``)."""
    p = Path(path)
    lines = _read_lines(p)
    df, info, warnings = _parse(p, lines)
    layout = "details" if {"Metric Name", "Metric Value"} <= set(df.columns) else "raw"
    if layout == "details":
        long, rules = _long_from_details(df)
    else:
        long = _long_from_raw(df)
        rules = df.iloc[0:0]
    ident = _identified(p, df, warnings)
    long, metrics, decimal = _metric_values(long, warnings)

    # ---- string metrics (GPU name, grid/block) ------------------------------------------
    str_rows = long[long["metric"].isin(_STRING_METRICS)]
    str_wide = (str_rows.drop_duplicates(["launch_id", "metric"])
                .pivot(index="launch_id", columns="metric", values="value_raw")
                if not str_rows.empty else pd.DataFrame())
    launches = _launches_frame(ident, str_wide)
    gpus = _gpus_frame(ident, launches, metrics)
    rule_list = _rule_list(rules)
    _output_warnings(lines, info, warnings)

    meta = TraceMeta(
        path=str(p), format="ncu-csv",
        tables={"ncu_launches": int(len(launches)), "ncu_metrics": int(len(metrics))},
        extra={"ncu_layout": layout, "decimal_mark": decimal, "noise_lines": info["noise_lines"],
               "ncu_header": info["header"], "ncu_rules": rule_list},
    )
    gpus = C.GPUS.validate(gpus, source=str(p))
    return TraceBundle(
        meta=meta,
        gpus=gpus, ncu_gpus=gpus,
        ncu_launches=C.NCU_LAUNCHES.validate(launches, source=str(p)),
        ncu_metrics=C.NCU_METRICS.validate(metrics.reset_index(drop=True), source=str(p)),
        warnings=warnings,
    )


def _col(df: pd.DataFrame, name: str) -> pd.Series:
    return df[name] if name in df.columns else pd.Series("", index=df.index, dtype=object)


def _launches_frame(ident: pd.DataFrame, str_wide: pd.DataFrame) -> pd.DataFrame:
    first = ident.drop_duplicates("launch_id", keep="first").set_index("launch_id")
    device_raw = _col(first, "Device").astype(str).str.strip()
    device_num = _plausible_int(device_raw)
    gpu_name = device_raw.where(device_num.isna() & (device_raw != ""), "")

    def _from_metrics(*names: str) -> pd.Series:
        out = pd.Series("", index=first.index, dtype=object)
        for n in names:
            if n in str_wide.columns:
                v = str_wide[n].reindex(first.index).fillna("").astype(str).str.strip()
                out = out.where(out != "", v)
        return out

    display = _from_metrics("device__attribute_display_name")
    gpu_name = display.where(display != "", gpu_name)
    grid = _col(first, "Grid Size").astype(str).str.strip()
    grid = grid.where(grid != "", _from_metrics("launch__grid_size", "Grid Size"))
    block = _col(first, "Block Size").astype(str).str.strip()
    block = block.where(block != "", _from_metrics("launch__block_size", "Block Size"))
    return pd.DataFrame({
        "launch_id": first.index.to_numpy(),
        "kernel_name": _col(first, "Kernel Name").astype(str).to_numpy(),
        "device_id": device_num.fillna(C.MISSING).astype(np.int64).to_numpy(),
        "pid": _int_or_missing(_col(first, "Process ID")).to_numpy(),
        "stream_id": _int_or_missing(_col(first, "Stream")).to_numpy(),
        "grid_size": grid.to_numpy(),
        "block_size": block.to_numpy(),
        "gpu_name": gpu_name.astype(str).to_numpy(),
    })


def _gpus_frame(ident: pd.DataFrame, launches: pd.DataFrame, metrics: pd.DataFrame) -> pd.DataFrame:
    """One GPUS row per device the CSV describes (name, CC, SMs, clock, bandwidth); may be empty."""
    first = ident.drop_duplicates("launch_id", keep="first").set_index("launch_id")
    cc = _col(first, "CC").astype(str).str.strip().reindex(launches["launch_id"]).fillna("")
    attrs = ("device__attribute_multiprocessor_count", "launch__sm_count",
             "device__attribute_clock_rate", "device__attribute_memory_clock_rate",
             "device__attribute_global_memory_bus_width", "device__attribute_total_memory",
             "device__attribute_compute_capability_major", "device__attribute_compute_capability_minor")
    sub = metrics[metrics["metric"].isin(attrs)]
    wide = (sub.pivot_table(index="launch_id", columns="metric", values="value", aggfunc="first")
            if not sub.empty else pd.DataFrame(index=pd.Index([], name="launch_id")))
    wide = wide.reindex(launches["launch_id"])

    def attr(name: str) -> np.ndarray:
        if name in wide.columns:
            return wide[name].to_numpy(dtype=np.float64)
        return np.full(len(launches), np.nan)

    cc_split = cc.str.extract(r"^(\d+)\.(\d+)$")
    cc_major = pd.to_numeric(cc_split[0], errors="coerce").to_numpy(dtype=np.float64)
    cc_minor = pd.to_numeric(cc_split[1], errors="coerce").to_numpy(dtype=np.float64)
    cc_major = np.where(np.isnan(cc_major), attr("device__attribute_compute_capability_major"), cc_major)
    cc_minor = np.where(np.isnan(cc_minor), attr("device__attribute_compute_capability_minor"), cc_minor)
    sm = attr("device__attribute_multiprocessor_count")
    sm = np.where(np.isnan(sm), attr("launch__sm_count"), sm)
    mem_clock = attr("device__attribute_memory_clock_rate")  # cycle/s after normalisation
    bus_bits = attr("device__attribute_global_memory_bus_width")
    bandwidth = 2.0 * mem_clock * bus_bits / 8.0  # DDR: 2 transfers per clock (NCU_CSV.md §6.5)
    per_launch = pd.DataFrame({
        "device_id": launches["device_id"].to_numpy(),
        "name": launches["gpu_name"].to_numpy(),
        "chip_name": "",
        "sm_count": sm,
        "clock_hz": attr("device__attribute_clock_rate"),
        "memory_bandwidth_bytes_per_s": bandwidth,
        "total_memory_bytes": attr("device__attribute_total_memory"),
        "cc_major": cc_major,
        "cc_minor": cc_minor,
        "bus_location": "",
    })
    has_attrs = per_launch[["sm_count", "cc_major", "clock_hz"]].notna().any(axis=1)
    informative = (per_launch["name"] != "") | has_attrs
    per_launch = per_launch[informative]
    if per_launch.empty:
        return C.GPUS.empty()
    g = per_launch.groupby("device_id", sort=True).first().reset_index()
    for c in ("sm_count", "clock_hz", "total_memory_bytes", "cc_major", "cc_minor"):
        g[c] = _plausible_int(g[c]).fillna(C.MISSING).round().astype(np.int64)
    return g


def attach_ncu(bundle: TraceBundle, ncu_path: str | Path) -> TraceBundle:
    """Return a copy of an nsys ``bundle`` with the ncu frames of ``ncu_path`` added.

    nsys's GPUS frame wins; ncu's is used only when the nsys export had none (it is kept as
    ``ncu_gpus``: the roofline's peaks come from the CSV's GPU, ``analyses/roofline/gpu_choice.py``). ncu
    load warnings are carried over (prefixed ``ncu:``). Raises ``InputError`` like
    ``load_ncu_csv``.
    """
    nb = load_ncu_csv(ncu_path)
    warnings = list(bundle.warnings) + [
        replace(w, message=f"ncu: {w.message}") for w in nb.warnings
    ]
    extra = dict(bundle.meta.extra)
    extra["ncu"] = {"path": str(ncu_path), **{k: v for k, v in nb.meta.extra.items()}}
    meta = replace(bundle.meta, extra=extra)
    gpus = bundle.gpus if len(bundle.gpus) else nb.gpus
    return replace(bundle, meta=meta, ncu_launches=nb.ncu_launches, ncu_metrics=nb.ncu_metrics,
                   gpus=gpus, ncu_gpus=nb.ncu_gpus, warnings=warnings)
