import pytest

from intervals import Interval


def test_rejects_reversed_bounds():
    with pytest.raises(ValueError):
        Interval(3, 1)


def test_single_point_is_allowed():
    assert Interval(2, 2).length == 0


def test_length():
    assert Interval(1.5, 4).length == 2.5


def test_contains_includes_both_ends():
    interval = Interval(1, 5)
    assert interval.contains(1)
    assert interval.contains(5)
    assert interval.contains(3)
    assert not interval.contains(0.99)
    assert not interval.contains(5.01)


def test_overlaps_when_touching():
    assert Interval(1, 3).overlaps(Interval(3, 6))
    assert Interval(3, 6).overlaps(Interval(1, 3))


def test_no_overlap_when_apart():
    assert not Interval(1, 2).overlaps(Interval(2.5, 4))
    assert not Interval(2.5, 4).overlaps(Interval(1, 2))


def test_intersection():
    assert Interval(1, 5).intersection(Interval(3, 8)) == Interval(3, 5)
    assert Interval(3, 8).intersection(Interval(1, 5)) == Interval(3, 5)
    assert Interval(1, 2).intersection(Interval(4, 5)) is None


def test_intersection_of_nested():
    assert Interval(0, 10).intersection(Interval(2, 3)) == Interval(2, 3)


def test_union():
    assert Interval(1, 4).union(Interval(2, 9)) == Interval(1, 9)
    with pytest.raises(ValueError):
        Interval(1, 2).union(Interval(5, 6))


def test_shift():
    assert Interval(1, 2).shift(3) == Interval(4, 5)
    assert Interval(1, 2).shift(-1) == Interval(0, 1)


def test_expand_default_margin():
    assert Interval(2, 4).expand() == Interval(1, 5)


def test_expand_negative_collapses_to_middle():
    assert Interval(2, 4).expand(-0.5) == Interval(2.5, 3.5)
    assert Interval(2, 4).expand(-3) == Interval(3, 3)


def test_equality_and_hash():
    assert Interval(1, 2) == Interval(1, 2)
    assert Interval(1, 2) != Interval(1, 3)
    assert len({Interval(1, 2), Interval(1, 2)}) == 1
