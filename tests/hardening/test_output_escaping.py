"""Every string from a trace is escaped in HTML (tables and the embedded JSON blob), Markdown
(pipes, backticks, HTML, newlines) and terminal output (ANSI sequences, control and bidi
characters) — for analyze, inspect, batch and compare.

The hostile trace is a generated export whose kernel names, NVTX range texts, thread names,
process name and GPU name were rewritten with SQL on a copy.
"""
from __future__ import annotations

import json
import re
import sqlite3
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner

from nsys_diag import synth
from nsys_diag.cli import main

XSS = "</script><img src=x onerror=alert(1)>"
HOSTILE = f"{XSS} | pipe `tick` \x1b[31mred\x1b[0m \r\x07\x08 \u202eevil <!-- ]]> *b* [l](x) @team"
BAD_TERMINAL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\u202a-\u202e\u2066-\u2069]")


def _hostile(path: Path, clean: Path) -> Path:
    path.write_bytes(clean.read_bytes())
    con = sqlite3.connect(path)
    kernel_ids = ("SELECT shortName FROM CUPTI_ACTIVITY_KIND_KERNEL UNION "
                  "SELECT demangledName FROM CUPTI_ACTIVITY_KIND_KERNEL")
    con.execute(f"UPDATE StringIds SET value = value || ? WHERE id IN ({kernel_ids})", (HOSTILE,))
    con.execute("UPDATE StringIds SET value = ? || value WHERE id IN "
                "(SELECT nameId FROM ThreadNames)", (HOSTILE,))
    # phase ranges (not the step ranges, so steps are still found) and the registered texts
    con.execute("UPDATE NVTX_EVENTS SET text = text || ? WHERE text IS NOT NULL AND text NOT "
                "LIKE 'train_step%'", (HOSTILE,))
    con.execute("UPDATE StringIds SET value = value || ? WHERE id IN (SELECT textId FROM "
                "NVTX_EVENTS WHERE textId IS NOT NULL) AND value NOT LIKE 'train_step%'",
                (HOSTILE,))
    con.execute("UPDATE PROCESSES SET name = ? || name", (HOSTILE,))
    con.execute("UPDATE TARGET_INFO_GPU SET name = name || ?", (HOSTILE,))
    con.commit()
    con.close()
    return path


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    d = tmp_path_factory.mktemp("esc")
    clean = synth.write_preset(d / "clean.sqlite", "worked_example", steps=4, nvtx_text="mixed")
    hostile = _hostile(d / "hostile.sqlite", clean)
    return clean, hostile


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, tuple[str, ...]]] = []
        self.blob = ""
        self._in_blob = False
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, tuple(sorted(a for a, _ in attrs))))
        self._in_blob = tag == "script" and ("id", "nsys-diag-data") in attrs

    def handle_endtag(self, tag):
        self._in_blob = False

    def handle_data(self, data):
        if self._in_blob:
            self.blob += data
        else:
            self.text.append(data)


def _parse(html: str) -> _Tags:
    p = _Tags()
    p.feed(html)
    p.close()
    return p


def _run(*args) -> str:
    res = CliRunner().invoke(main, [str(a) for a in args], env={"SOURCE_DATE_EPOCH": "0"})
    assert res.exit_code in (0, 4), res.output
    return res.output


def _outputs(trace: Path, out: Path) -> dict[str, str]:
    out.mkdir()
    term = _run("analyze", trace, "-o", out / "r.html", "--json", out / "r.json", "--md",
                out / "r.md")
    inspect_term = _run("inspect", trace, "--json", out / "i.json")
    return {"html": (out / "r.html").read_text(encoding="utf-8"),
            "md": (out / "r.md").read_text(encoding="utf-8"),
            "json": (out / "r.json").read_text(encoding="utf-8"),
            "term": term, "inspect_term": inspect_term,
            "inspect_json": (out / "i.json").read_text(encoding="utf-8")}


@pytest.fixture(scope="module")
def outputs(traces, tmp_path_factory):
    clean, hostile = traces
    d = tmp_path_factory.mktemp("esc_out")
    return _outputs(clean, d / "clean"), _outputs(hostile, d / "hostile")


def test_hostile_strings_reach_the_outputs(outputs):
    """Guard against a vacuous pass: the hostile text is really in the analysis."""
    _, h = outputs
    assert "onerror=alert(1)" in h["json"]
    assert "onerror=alert(1)" in h["inspect_json"]
    assert "onerror" in h["md"] and "</script><img" in h["term"]


def _check_html(html: str, baseline: str) -> None:
    assert "</script><img" not in html and "<img src=x" not in html
    assert "\x1b" not in html and "\u202e" not in html
    tags, base_tags = _parse(html), _parse(baseline)
    assert not [t for t in tags.tags if t[0] == "img"]
    assert not [t for t in tags.tags if any(a.startswith("on") for a in t[1])]
    # no element or attribute that the clean report does not have
    assert set(tags.tags) <= set(base_tags.tags), set(tags.tags) - set(base_tags.tags)
    n_scripts = sum(1 for t, _ in tags.tags if t == "script")
    assert n_scripts == sum(1 for t, _ in base_tags.tags if t == "script")
    return tags


def test_html_escapes_trace_strings(outputs):
    clean, h = outputs
    tags = _check_html(h["html"], clean["html"])
    # shown as text, not dropped, and the JSON blob still parses and holds the data
    assert XSS in "".join(tags.text)
    blob = json.loads(tags.blob)
    assert XSS in json.dumps(blob, ensure_ascii=False)


def _unescaped(line: str, ch: str) -> int:
    return len(re.findall(r"(?<!\\)" + re.escape(ch), line))


def _check_md(md: str, baseline: str) -> None:
    assert "<img" not in md and "</script" not in md and "<!--" not in md
    assert not BAD_TERMINAL.search(md), repr(BAD_TERMINAL.search(md))
    # no extra code spans or emphasis than the clean summary has
    assert _unescaped(md, "`") == _unescaped(baseline, "`")
    # table rows keep their column count (every pipe from a name is escaped)
    for table in (md, baseline):
        rows = [ln for ln in table.splitlines() if ln.startswith("|")]
        if rows:
            assert len({_unescaped(r, "|") for r in rows}) == 1, rows
    assert "@team" not in md  # no @mentions
    assert "[l](x)" not in md  # no links


def test_markdown_escapes_trace_strings(outputs):
    clean, h = outputs
    _check_md(h["md"], clean["md"])


@pytest.mark.parametrize("key", ["term", "inspect_term"])
def test_terminal_output_is_stripped(outputs, key):
    _, h = outputs
    m = BAD_TERMINAL.search(h[key])
    assert m is None, f"{key}: {m.group()!r} in {h[key][max(0, m.start() - 60):m.end() + 20]!r}"
    assert "[31m" not in h[key]


def test_json_outputs_are_valid_and_lossless(outputs):
    _, h = outputs
    for key in ("json", "inspect_json"):
        data = json.loads(h[key])
        assert isinstance(data, dict)


def test_batch_and_compare_outputs_escape_trace_strings(traces, tmp_path):
    clean, hostile = traces
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "hostile.sqlite").write_bytes(hostile.read_bytes())
    (runs / "clean.sqlite").write_bytes(clean.read_bytes())
    env_cache = tmp_path / "cache"
    res = CliRunner().invoke(main, ["batch", str(runs), "-o", str(tmp_path / "b"), "-j", "1",
                                    "--md", str(tmp_path / "b.md")],
                             env={"XDG_CACHE_HOME": str(env_cache), "SOURCE_DATE_EPOCH": "0"})
    assert res.exit_code == 0, res.output
    assert not BAD_TERMINAL.search(res.output)
    index = (tmp_path / "b" / "index.html").read_text(encoding="utf-8")
    assert "</script><img" not in index and "<img src=x" not in index
    assert not [t for t in _parse(index).tags if t[0] == "img" or any(a.startswith("on")
                                                                      for a in t[1])]
    for html in (tmp_path / "b").rglob("*.html"):
        text = html.read_text(encoding="utf-8")
        assert "</script><img" not in text and "\x1b" not in text, html
    md = (tmp_path / "b.md").read_text(encoding="utf-8")
    assert "<img" not in md and not BAD_TERMINAL.search(md)

    res = CliRunner().invoke(main, ["compare", str(clean), str(hostile), "-o",
                                    str(tmp_path / "c.html"), "--md", str(tmp_path / "c.md"),
                                    "--json", str(tmp_path / "c.json")],
                             env={"XDG_CACHE_HOME": str(env_cache), "SOURCE_DATE_EPOCH": "0"})
    assert res.exit_code == 0, res.output
    assert not BAD_TERMINAL.search(res.output)
    chtml = (tmp_path / "c.html").read_text(encoding="utf-8")
    assert "</script><img" not in chtml and "<img src=x" not in chtml
    assert not [t for t in _parse(chtml).tags if t[0] == "img" or any(a.startswith("on")
                                                                      for a in t[1])]
    cmd = (tmp_path / "c.md").read_text(encoding="utf-8")
    assert "<img" not in cmd and "</script" not in cmd and not BAD_TERMINAL.search(cmd)
    json.loads((tmp_path / "c.json").read_text(encoding="utf-8"))
