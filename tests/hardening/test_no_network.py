"""No network, ever: the CLI runs with sockets disabled and opens none; reports load nothing.

Each command runs in a subprocess whose ``sitecustomize`` (first on PYTHONPATH) replaces
``socket.socket``'s constructor and ``connect``, ``getaddrinfo``, ``create_connection`` and
``socketpair`` with functions that log the attempt and raise. The log proves the guard was
active in every Python process (a "loaded" line per process) and that nothing tried a socket; a
control command that does try one is caught, so the guard itself is tested.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from nsys_diag import synth
from nsys_diag.synth import ncu as synth_ncu

SITECUSTOMIZE = '''
import os, socket
_LOG = os.environ["NSYS_DIAG_SOCKET_LOG"]

def _record(what):
    with open(_LOG, "a") as fh:
        fh.write(f"{os.getpid()} {what}\\n")

_record("loaded")

def _deny(name):
    def blocked(*args, **kwargs):
        _record(f"BLOCKED {name} {args[1:3]!r}")
        raise OSError(f"network disabled by the test ({name})")
    return blocked

_init = socket.socket.__init__
def _socket_init(self, family=-1, type=-1, proto=-1, fileno=None):
    if fileno is None:
        _record(f"BLOCKED socket family={family} type={type}")
        raise OSError("network disabled by the test (socket)")
    return _init(self, family, type, proto, fileno)

socket.socket.__init__ = _socket_init
socket.socket.connect = _deny("connect")
socket.socket.connect_ex = _deny("connect_ex")
socket.getaddrinfo = _deny("getaddrinfo")
socket.create_connection = _deny("create_connection")
socket.socketpair = _deny("socketpair")
'''

EXTERNAL = re.compile(r"https?://|//cdn|\burl\(|@import|\bfetch\(|XMLHttpRequest|WebSocket|"
                      r"sendBeacon|EventSource|<link\b(?![^>]*\bhref=\"data:)|<iframe\b|<object\b|"
                      r"<embed\b|\bsrc\s*=", re.IGNORECASE)
"""Anything that could load from outside the file (``<link href="data:,">`` — the empty favicon
that stops browsers from requesting /favicon.ico — is allowed)."""


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory):
    d = tmp_path_factory.mktemp("nonet")
    (d / "site").mkdir()
    (d / "site" / "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")
    runs = d / "runs"
    (runs / "a").mkdir(parents=True)
    (runs / "b").mkdir()
    synth.write_preset(runs / "a" / "rank0.sqlite", "worked_example", steps=3)
    synth.write_preset(runs / "a" / "rank1.sqlite", "worked_example", steps=3, seed=1)
    synth.write_preset(runs / "b" / "rank0.sqlite", "healthy_tc", steps=3)
    synth_ncu.write_ncu_csv(runs / "b" / "kernels.csv", layout="raw")
    env = dict(os.environ, PYTHONPATH=str(d / "site"), NSYS_DIAG_SOCKET_LOG=str(d / "socket.log"),
               XDG_CACHE_HOME=str(d / "cache"), SOURCE_DATE_EPOCH="0", NO_PROXY="*")
    env.pop("PYTHONSTARTUP", None)
    return d, runs, env


def _nsys_diag(env, *args, ok=(0,)):
    res = subprocess.run([sys.executable, "-m", "nsys_diag", *map(str, args)], env=env,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode in ok, (args, res.returncode, res.stderr[-2000:])
    return res


def _log(d: Path) -> list[str]:
    p = d / "socket.log"
    return p.read_text().splitlines() if p.exists() else []


def test_the_guard_blocks_and_logs_a_connection(sandbox):
    d, _, env = sandbox
    code = ("import urllib.request\n"
            "try:\n    urllib.request.urlopen('http://127.0.0.1:9/', timeout=1)\n"
            "except Exception as e:\n    print(type(e).__name__)\n")
    env = dict(env, NSYS_DIAG_SOCKET_LOG=str(d / "control.log"))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=60)
    log = (d / "control.log").read_text()
    assert "loaded" in log and "BLOCKED" in log, (log, out.stdout, out.stderr)


def test_cli_opens_no_socket(sandbox):
    d, runs, env = sandbox
    out = d / "out"
    out.mkdir()
    a0 = runs / "a" / "rank0.sqlite"
    _nsys_diag(env, "analyze", a0, "-o", out / "r.html", "--json", out / "r.json", "--md",
               out / "r.md", "--ncu", runs / "b" / "kernels.csv")
    _nsys_diag(env, "inspect", a0, "--json", out / "i.json")
    _nsys_diag(env, "batch", runs, "-o", out / "batch", "-j", "2", "--json", out / "b.json",
               "--md", out / "b.md")
    _nsys_diag(env, "compare", runs / "a", runs / "b" / "rank0.sqlite", "-o", out / "c.html",
               "--json", out / "c.json", "--md", out / "c.md", ok=(0, 5))
    log = _log(d)
    assert sum(1 for ln in log if ln.endswith(" loaded")) >= 4, log  # the guard ran everywhere
    blocked = [ln for ln in log if "BLOCKED" in ln]
    assert not blocked, blocked
    # and the outputs were produced
    for name in ("r.html", "r.json", "r.md", "i.json", "b.json", "b.md", "c.html", "c.json",
                 "c.md"):
        assert (out / name).stat().st_size > 0, name
    assert (out / "batch" / "index.html").exists()
    # static check: no HTML output can load anything from outside the file
    for html in sorted(out.rglob("*.html")):
        text = html.read_text(encoding="utf-8")
        found = EXTERNAL.findall(text)
        assert not found, f"{html.name}: {sorted(set(found))}"
