"""The objective-climb rule (xcviz.records.climbs) on hand-made sequences: what counts as a climb,
what is a wobble, and how a run's flag reads."""
import math

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
