from intervals import Interval, coverage, gaps, merge, total_length


def test_merge_overlapping():
    assert merge([Interval(5, 8), Interval(1, 3), Interval(2, 4)]) == [Interval(1, 4), Interval(5, 8)]


def test_merge_touching():
    assert merge([Interval(1, 2), Interval(2, 3)]) == [Interval(1, 3)]


def test_merge_nested_keeps_outer_end():
    assert merge([Interval(1, 10), Interval(2, 3)]) == [Interval(1, 10)]


def test_merge_empty():
    assert merge([]) == []


def test_total_length_counts_overlap_once():
    assert total_length([Interval(0, 4), Interval(2, 6), Interval(10, 11)]) == 7


def test_gaps_between():
    assert gaps([Interval(0, 1), Interval(3, 4), Interval(6, 9)]) == [Interval(1, 3), Interval(4, 6)]


def test_gaps_within_adds_edges():
    assert gaps([Interval(2, 3)], within=Interval(0, 5)) == [Interval(0, 2), Interval(3, 5)]


def test_gaps_within_clips():
    assert gaps([Interval(0, 2), Interval(6, 8)], within=Interval(1, 4)) == [Interval(2, 4)]


def test_gaps_of_nothing_is_everything():
    assert gaps([], within=Interval(0, 5)) == [Interval(0, 5)]


def test_coverage():
    assert coverage([Interval(0, 5)], Interval(0, 10)) == 0.5
    assert coverage([Interval(-5, 20)], Interval(0, 10)) == 1.0
    assert coverage([], Interval(0, 10)) == 0.0


def test_coverage_of_point():
    assert coverage([Interval(0, 5)], Interval(3, 3)) == 1.0
    assert coverage([Interval(0, 5)], Interval(7, 7)) == 0.0
