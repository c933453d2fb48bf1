"""Rank identity (names, environment, thread names), natural order, stragglers, alignment."""
from __future__ import annotations

import numpy as np
import pytest

from nsys_diag.analyses.job.ranks import (
    RankId,
    RankInput,
    analyze_ranks,
    assign_ranks,
    natural_sorted,
    parse_rank_name,
    rank_from_environment,
    rank_from_name,
    rank_from_thread_names,
    robust_z,
)


@pytest.mark.parametrize("name, rank", [
    ("rank3.sqlite", 3),
    ("node1_rank12.sqlite", 12),
    ("trace-rank-07.nsys-rep", 7),
    ("world_rank_5.sqlite", 5),
    ("RANK10.sqlite", 10),
    ("job_12.sqlite", 12),
    ("report.3.sqlite", 3),
    ("r07.sqlite", 7),
    ("train_r7.sqlite", 7),
    ("proc-3.sqlite", 3),
    ("worker_4.sqlite", 4),
    ("local_rank5.sqlite", 5),
    ("node1/rank12/profile.sqlite", 12),
    ("runs/rank4/report.sqlite", 4),
    ("fastvideo_train_2xh100_2026.2.sqlite", None),  # version-like suffix, not a rank
    ("report1.sqlite", None),  # nsys's default counter, no separator
    ("myrank3.sqlite", None),
    ("baseline.sqlite", None),
])
def test_rank_from_name(name, rank):
    assert rank_from_name(name) == rank


def test_parse_rank_name_node_and_strength():
    rid = parse_rank_name("node2_local_rank3.sqlite")
    assert (rid.rank, rid.local_rank, rid.node, rid.strength) == (None, 3, 2, 3)
    assert parse_rank_name("node1/rank12.sqlite").node == 1
    assert parse_rank_name("job_12.sqlite").strength == 0
    assert parse_rank_name("rank3.sqlite").strength == 3


def test_natural_sort_never_lexicographic():
    names = ["rank10.sqlite", "rank2.sqlite", "rank1.sqlite", "Rank3.sqlite", "rank11.sqlite"]
    assert natural_sorted(names) == ["rank1.sqlite", "rank2.sqlite", "Rank3.sqlite",
                                     "rank10.sqlite", "rank11.sqlite"]
    assert natural_sorted(["b/x2", "a/x10", "a/x9"]) == ["a/x9", "a/x10", "b/x2"]


def test_rank_from_environment_reads_only_rank_numbers():
    env = {"OMPI_COMM_WORLD_RANK": "7", "OMPI_COMM_WORLD_LOCAL_RANK": "3", "SECRET": "hunter2",
           "Hostname": "node-a"}
    rid = rank_from_environment(env)
    assert (rid.rank, rid.local_rank, rid.strength) == (7, 3, 2)
    assert "hunter2" not in repr(rid) and "node-a" not in repr(rid)
    assert rank_from_environment({"RANK": "2", "SLURM_PROCID": "9"}).rank == 2  # torchrun first
    assert rank_from_environment({"SLURM_PROCID": "4"}).rank == 4
    assert rank_from_environment({"PMI_RANK": "1"}).rank == 1
    assert rank_from_environment({"RANK": "not-a-number"}) is None
    assert rank_from_environment({}) is None and rank_from_environment(None) is None


def test_rank_from_thread_names():
    assert rank_from_thread_names(["python", "MPI Rank 3", "MPI Rank 3 helper"]).rank == 3
    assert rank_from_thread_names(["MPI Rank 1", "MPI Rank 2"]) is None  # ambiguous
    assert rank_from_thread_names(["pt_autograd_0"]) is None


def test_assign_ranks_prefers_distinct_evidence_and_falls_back():
    # names give distinct ranks
    a = assign_ranks([[parse_rank_name(f"rank{i}.sqlite")] for i in (2, 0, 1)])
    assert a.ranks == [2, 0, 1] and "file name" in a.source
    # names say nothing useful, environment does
    env = [[None, RankId(i, source="launch environment", strength=2)] for i in (1, 0)]
    assert assign_ranks(env).ranks == [1, 0]
    # duplicate names (same trailing number) but distinct env → environment wins
    dup = [[RankId(5, source="file name (trailing number)", strength=0),
            RankId(i, source="launch environment", strength=2)] for i in (0, 1)]
    assert assign_ranks(dup).ranks == [0, 1]
    # node + local rank only → position in (node, local) order
    nl = [[parse_rank_name(n)] for n in ("node1_local_rank0.sqlite", "node0_local_rank1.sqlite",
                                         "node0_local_rank0.sqlite", "node1_local_rank1.sqlite")]
    got = assign_ranks(nl)
    assert got.ranks == [2, 1, 0, 3] and "local rank" in got.source
    # nothing distinct → no identity
    none = assign_ranks([[None], [RankId(1, strength=0)], [RankId(1, strength=0)]])
    assert none.ranks is None and none.note


def test_robust_z():
    z = robust_z(np.array([10.0] * 15 + [12.0]))
    assert z[-1] > 3.5 and np.all(z[:-1] == 0)
    assert np.all(robust_z(np.array([5.0, 5.0])) == 0)


def _rank(rank, step_ms, phases, comm=None, utc=None, starts=None, idx=None):
    return RankInput(rank=rank, label=f"rank{rank}.sqlite", step_ms=np.asarray(step_ms, float),
                     step_index=idx, step_start_ns=starts, session_start_utc_ns=utc,
                     phase_ms=phases, comm_ms=comm)


def test_sixteen_ranks_one_straggler_in_data_phase():
    rng = np.random.default_rng(0)
    inputs = []
    for r in range(16):
        data = 40.0 + (60.0 if r == 11 else 0.0)
        steps = 300 + data - 40 + rng.normal(0, 2, 8)
        inputs.append(_rank(r, steps, {"data": data + rng.normal(0, 0.3), "forward": 120.0,
                                       "backward": 130.0, "optimizer": 10.0},
                            comm=20.0 - (15.0 if r == 11 else 0.0)))
    res = analyze_ranks(list(reversed(inputs)), z_cutoff=3.5)
    assert res["available"] and res["count"] == 16
    assert [row["rank"] for row in res["rows"]] == list(range(16))
    assert [s["rank"] for s in res["stragglers"]] == [11]
    s = res["stragglers"][0]
    assert s["kind"] == "step_time" and s["phase"] == "data"
    assert s["phase_excess_ms"] == pytest.approx(60.0, abs=1.5)
    assert res["spread"]["max_over_median"] > 1.15
    assert res["communication"]["lowest_rank"] == 11
    assert res["rows"][11]["straggler"] and not res["rows"][0]["straggler"]
    shares = res["rows"][0]["phase_shares"]
    assert sum(shares.values()) == pytest.approx(1.0)


def test_no_straggler_among_equal_ranks():
    rng = np.random.default_rng(1)
    inputs = [_rank(r, 300 + rng.normal(0, 3, 10), {"data": 40 + rng.normal(0, 0.5),
                                                     "forward": 120.0}) for r in range(8)]
    assert analyze_ranks(inputs)["stragglers"] == []


def test_synchronised_step_times_straggler_found_by_phase():
    # collectives equalise step time; rank 5's forward is slow, others wait in communication
    inputs = []
    for r in range(8):
        fwd = 150.0 if r == 5 else 100.0
        inputs.append(_rank(r, np.full(6, 300.0), {"forward": fwd, "communication": 250.0 - fwd,
                                                   "other": 50.0}))
    res = analyze_ranks(inputs)
    assert [(s["rank"], s["kind"], s["phase"]) for s in res["stragglers"]] == [(5, "phase", "forward")]


def test_alignment_uses_session_start_utc_and_step_index():
    base_utc = 1_700_000_000_000_000_000
    # rank 1's clock/timeline offsets differ wildly, but UTC + session time line up; it starts
    # each step 2 ms later than rank 0. It also misses step 0.
    r0 = _rank(0, [100.0, 101, 99], {"forward": 50.0}, utc=base_utc,
               starts=np.array([10_000_000, 110_000_000, 211_000_000]), idx=np.array([0, 1, 2]))
    r1 = _rank(1, [100.0, 100], {"forward": 50.0}, utc=base_utc - 5_000_000_000,
               starts=np.array([5_112_000_000, 5_213_000_000]), idx=np.array([1, 2]))
    res = analyze_ranks([r0, r1])
    al = res["alignment"]
    assert al["common_steps"] == 2 and "UTC" in al["basis"]
    assert res["rows"][1]["start_skew_ms"] == pytest.approx(2.0)
    assert res["rows"][0]["start_skew_ms"] == pytest.approx(0.0)
    # without a session start the skew is not computed (raw timestamps are never compared)
    r1b = _rank(1, [100.0, 100], {"forward": 50.0}, utc=None,
                starts=np.array([5_112_000_000, 5_213_000_000]), idx=np.array([1, 2]))
    res2 = analyze_ranks([r0, r1b])
    assert res2["alignment"]["basis"] == "step index" and res2["rows"][1]["start_skew_ms"] is None


def test_fewer_than_two_ranks_unavailable():
    assert analyze_ranks([_rank(0, [1.0], {})])["available"] is False
    assert analyze_ranks([])["available"] is False
