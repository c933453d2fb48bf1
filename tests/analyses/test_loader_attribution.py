"""DataLoader workers of several ranks in one file (analyses/loader_workers.py: ``worker_owner``,
``analyze_loader_workers(owner=…)``): each worker counts for the GPU process it feeds, and each
GPU process reports its own workers in its ``processes[]`` row."""
from __future__ import annotations

import sqlite3

import pytest

from nsys_diag.analyses.loader_workers import worker_owner

synth = pytest.importorskip("nsys_diag.synth")

G = 1 << 24
HOST_B = 1 << 56


def test_worker_thread_belongs_to_its_process():
    assert worker_owner(100 * G, 7, "pt_data_worker_0", [100 * G, 200 * G], {}) == (100 * G, "thread")


def test_forked_worker_goes_to_the_gpu_process_just_below_its_pid():
    gpu = [100 * G, 200 * G]
    assert worker_owner(103 * G, None, "", gpu, {}) == (100 * G, "nearest_pid")
    assert worker_owner(205 * G, None, "", gpu, {}) == (200 * G, "nearest_pid")
    assert worker_owner(50 * G, None, "", gpu, {}) == (100 * G, "nearest_pid")  # none below


def test_same_name_and_same_host_win_over_a_closer_pid():
    gpu = [100 * G, 150 * G, HOST_B + 160 * G]
    names = {100 * G: "python", 150 * G: "trainer", HOST_B + 160 * G: "python"}
    assert worker_owner(170 * G, None, "python", gpu, names)[0] == 100 * G
    assert worker_owner(HOST_B + 170 * G, None, "", gpu, names)[0] == HOST_B + 160 * G


def test_a_named_parent_decides():
    assert worker_owner(203 * G, None, "", [100 * G, 200 * G], {}, {203: 100}) == (100 * G, "parent")


def _add_rank_workers(path, covers: dict[int, float], n: int = 2, slices: int = 100) -> list[int]:
    """Worker processes (pid = GPU pid + 1..n, no GPU work) for the k-th GPU process of the
    file, whose NVTX ranges cover ``covers[k]`` of every slice of the trace."""
    con = sqlite3.connect(path)
    gpids = [g for (g,) in con.execute(
        "SELECT DISTINCT globalPid FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY globalPid")]
    lo, hi, etype, dom = con.execute("SELECT MIN(start), MAX(end), MIN(eventType), MIN(domainId) "
                                     "FROM NVTX_EVENTS").fetchone()
    width = (hi - lo) // slices
    for k, cover in covers.items():
        for w in range(1, n + 1):
            gtid = gpids[k] + (w << 24) + 1
            con.executemany("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, "
                            "domainId) VALUES (?, ?, ?, ?, ?, ?)",
                            [(lo + i * width, lo + i * width + int(cover * width), etype,
                              "worker_fetch", gtid, dom) for i in range(slices)])
    con.commit()
    con.close()
    return [(g >> 24) & 0xFFFFFF for g in gpids]


@pytest.fixture(scope="module")
def two_rank_view(tmp_path_factory):
    from nsys_diag.app.analyze import analyze_path

    path = synth.write_preset(tmp_path_factory.mktemp("ranks") / "two.sqlite", "multi_gpu")
    pids = _add_rank_workers(path, {0: 0.95, 1: 0.10})
    return pids, analyze_path(str(path), generated_at="2026-01-01T00:00:00Z")


def test_each_rank_reports_its_own_workers(two_rank_view):
    pids, v = two_rank_view
    rows = {r["pid"]: r for r in v["processes"]}
    assert set(rows) == set(pids)
    busy = {pid: rows[pid]["loader"]["busy_share"] for pid in pids}
    assert busy[pids[0]] == pytest.approx(0.95, abs=0.03)
    assert busy[pids[1]] == pytest.approx(0.10, abs=0.03)
    for pid in pids:
        ld = rows[pid]["loader"]
        assert ld["workers"] == 2 and ld["state"] == ("saturated" if pid == pids[0] else "idle")
        assert {w["parent_pid"] for w in ld["per_worker"]} == {pid}
        assert {w["attributed_by"] for w in ld["per_worker"]} == {"nearest_pid"}
        assert {w["pid"] for w in ld["per_worker"]} == {pid + 1, pid + 2}


def test_top_level_loader_is_the_headline_process(two_rank_view):
    _, v = two_rank_view
    head = next(r for r in v["processes"] if r["is_headline"])
    assert v["loader"] == head["loader"] and v["scope"]["pid"] == head["pid"]
    # the same verdict; its JSON pointers differ only by where each copy sits in the document
    # (``/scaling/…`` at the top, ``/processes/<i>/scaling/…`` in the process's row)
    i = v["processes"].index(head)
    assert _paths_rooted(v["verdict"], f"/processes/{i}") == head["verdict"]


def _paths_rooted(node, root: str):
    """``node`` with every ``path`` JSON pointer moved below ``root``."""
    if isinstance(node, dict):
        return {k: (root + x if k == "path" and isinstance(x, str) and not x.startswith(root)
                    else _paths_rooted(x, root)) for k, x in node.items()}
    if isinstance(node, list):
        return [_paths_rooted(x, root) for x in node]
    return node
