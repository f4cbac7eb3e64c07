"""The objective-climb rule (xcviz.records.climbs) on hand-made sequences: what counts as a climb,
what is a wobble, and how a run's flag reads; and real runs that climb."""
import math

import pytest

from xcviz.records.climbs import CLIMB_RISES, CLIMB_RTOL, Climb, climb_mask, climb_text, climbs


def test_three_rises_in_a_row_are_a_climb_and_two_are_not():
    assert CLIMB_RISES == 3 and CLIMB_RTOL == 1e-3
    assert climbs([1.0, 0.9, 0.95, 1.0, 1.05, 0.7]) == [Climb(1, 4, 0.9, 1.05)]
    assert climbs([1.0, 0.9, 0.95, 1.0, 0.8, 0.85, 0.9]) == []  # two rises, a fall, two rises
    assert climbs([3.0, 2.0, 1.0, 0.5]) == []  # falling
    assert climbs([1.0, 1.1, 1.2]) == []  # too short to hold three rises


def test_rises_within_the_tolerance_are_wobble_not_climb():
    tiny = [1.0, 1.0005, 1.0009, 1.0013, 1.0017]  # each rise below 0.1% of the value before
    assert climbs(tiny) == []
    assert climbs(tiny, rtol=1e-4) == [Climb(0, 4, 1.0, 1.0017)]
    negative = [-2.0, -1.9, -1.8, -1.7]  # relative to the magnitude: rises of negative objectives count
    assert climbs(negative) == [Climb(0, 3, -2.0, -1.7)]


def test_a_non_finite_value_ends_a_climb_and_every_climb_is_found():
    assert climbs([1.0, 1.1, math.nan, 1.3, 1.4, 1.5]) == []  # 1 rise, NaN, 2 rises
    values = [0.82, 0.85, 0.9, 0.95, 0.5, 0.4, 0.6, 0.7, 0.8, 1.03]
    found = climbs(values)
    assert found == [Climb(0, 3, 0.82, 0.95), Climb(5, 9, 0.4, 1.03)]
    assert climb_mask(len(values), found).tolist() == [True] * 4 + [False] + [True] * 5
    assert climbs(values, rises=4) == [Climb(5, 9, 0.4, 1.03)]


def test_the_flag_names_the_steepest_climb():
    assert climb_text([]) == ""
    assert climb_text([[0, 3, 0.82, 0.95], [5, 9, 0.4, 1.03]]) == "climbs 0.4→1.03 (+1 more)"
    assert climb_text(climbs([0.82, 0.9, 0.97, 1.03])) == "climbs 0.82→1.03"


def test_a_real_memoir_run_climbs_from_zero_and_its_summary_says_so():
    """MEMOIR l2 at its defaults on Bibtex: the sample objective starts at 1 (W = 0, every hinge 1)
    and its first steps overshoot (about 3.5 by the fourth record, 1.23 after 5 epochs), a climb
    the model's info, the summary and the runs table's flag all carry; without records, none."""
    import xcviz
    from xcviz.data import load
    from xcviz.records.sinks import MemorySink
    from xcviz.runs.summary import model_summary

    train, _ = load("bibtex")
    records = MemorySink()
    model = xcviz.train(train, solver="memoir", epochs=1, threads=2, recorder=records)
    objective = records.iterations["objective"].to_numpy()
    found = model.info["objective_climbs"]
    assert found == [list(c) for c in climbs(objective)] and found[0][:3] == [0, found[0][1], 1.0]
    assert found[0][1] >= CLIMB_RISES and found[0][3] > 2.0
    assert model_summary(model, train.n)["objective_climbs"] == found
    assert climb_text(found).startswith("climbs 1→")
    assert "objective_climbs" not in xcviz.train(train, solver="memoir", epochs=1, threads=2).info


@pytest.mark.slow
def test_ldgs_decomp_on_delicious_at_the_defaults_is_flagged():
    """The issue's case, measured: decomp's sample objective falls to about 0.826, then climbs back
    to about 0.852 (two flagged climbs, P@1 58.43); the exact gradient's falls to the end and is not
    flagged. One thread: the model and records are bit for bit those of two (results never depend
    on the thread count), and two-thread kernels beside the suite's other worker on 2 cores waited
    on a busy core at every parallel loop (96 s in CI, 15 s alone)."""
    import xcviz
    from xcviz.data import load
    from xcviz.records.sinks import MemorySink

    train, _ = load("delicious")
    decomp = xcviz.train(train, solver="ldgs", threads=1, recorder=MemorySink())
    assert len(decomp.info["objective_climbs"]) >= 1
    assert all(0.82 < first < last < 0.86 for _, _, first, last in decomp.info["objective_climbs"])
    exact = xcviz.train(train, solver="ldgs", gradient="exact", threads=1, recorder=MemorySink())
    assert exact.info["objective_climbs"] == []
