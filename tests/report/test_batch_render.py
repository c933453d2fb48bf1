"""The batch index's step time per rank (``id="rank-steps"``, issue 28 item 6)."""
from __future__ import annotations

from nsys_diag.report.batch_render import rank_steps_chart


def _ranks(medians, straggler=None):
    return {"available": True, "rows": [
        {"rank": i, "label": f"r{i}.sqlite", "steps": 5, "median_step_ms": m, "mean_step_ms": m * 1.02,
         "straggler": i == straggler} for i, m in enumerate(medians)]}


def test_one_dot_per_rank_at_its_median_on_an_axis_from_zero():
    m = rank_steps_chart(_ranks([70.0, 69.5, 120.0, 70.2], straggler=2))
    assert [r["label"] for r in m["rows"]] == ["rank 0", "rank 1", "rank 2", "rank 3"]
    xs = [r["x"] for r in m["rows"]]
    assert all(m["x0"] <= x <= m["x1"] for x in xs)
    assert xs[2] == max(xs) and xs[1] == min(xs)  # positions follow the medians
    assert m["ticks"][0]["label"] == "0 ms" and m["ticks"][0]["x"] == m["x0"]
    assert [r["cls"] for r in m["rows"]].count("pt-outlier") == 1 and m["rows"][2]["cls"] == "pt-outlier"
    assert all(r["mean_x"] > r["x"] for r in m["rows"])  # the mean tick (means 2% above the medians)
    assert m["rows"][2]["value"] == "120 ms" and "straggler" in m["rows"][2]["title"]


def test_no_chart_without_two_ranks_with_steps():
    assert rank_steps_chart(_ranks([70.0])) is None
    assert rank_steps_chart({"rows": [{"rank": 0, "median_step_ms": None}, {"rank": 1}]}) is None


def test_each_rank_is_a_box_of_its_steps_when_the_index_has_their_spread():
    import numpy as np

    from nsys_diag.analyses.job.ranks import RankInput, analyze_ranks

    steps = {0: [68.0, 70.0, 71.0, 72.0, 90.0], 1: [69.0, 70.0, 70.5, 71.0, 71.5]}
    res = analyze_ranks([RankInput(rank=r, label=f"r{r}.sqlite", step_ms=np.array(v))
                         for r, v in steps.items()])
    rows = res["rows"]
    r0 = rows[0]
    assert (r0["min_step_ms"], r0["p25_step_ms"], r0["median_step_ms"], r0["p75_step_ms"],
            r0["max_step_ms"]) == (68.0, 70.0, 71.0, 72.0, 90.0)
    m = rank_steps_chart({"available": True, "rows": rows})
    lo, q1, q3, hi = m["rows"][0]["box"]
    assert lo < q1 <= m["rows"][0]["x"] <= q3 < hi  # the median dot inside the box
    assert hi == max(x for r in m["rows"] for x in r["box"])  # the longest step sets the axis
    assert "68 ms to 90 ms (middle half 70 ms to 72 ms)" in m["rows"][0]["title"]
    assert _ranks([70.0, 71.0])["rows"][0].get("p25_step_ms") is None
    assert all(r["box"] is None for r in rank_steps_chart(_ranks([70.0, 71.0]))["rows"])
