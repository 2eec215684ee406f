"""A closed interval [start, end] of numbers."""


class Interval:
    __slots__ = ("start", "end")

    def __init__(self, start, end):
        if start > end:
            raise ValueError(f"start {start} is after end {end}")
        self.start = start
        self.end = end

    def __repr__(self):
        return f"Interval({self.start!r}, {self.end!r})"

    def __eq__(self, other):
        if not isinstance(other, Interval):
            return NotImplemented
        return self.start == other.start and self.end == other.end

    def __hash__(self):
        return hash((self.start, self.end))

    @property
    def length(self):
        return self.end - self.start

    def contains(self, value):
        """True when value lies in the interval, both ends included."""
        return self.start <= value <= self.end

    def overlaps(self, other):
        """True when the two intervals share at least one point."""
        return self.start <= other.end and other.start <= self.end

    def intersection(self, other):
        """The shared part of two intervals, or None when they do not overlap."""
        if not self.overlaps(other):
            return None
        return Interval(max(self.start, other.start), min(self.end, other.end))

    def union(self, other):
        """The smallest interval covering both; they must overlap or touch."""
        if not self.overlaps(other):
            raise ValueError(f"{self!r} and {other!r} are disjoint")
        return Interval(min(self.start, other.start), max(self.end, other.end))

    def shift(self, offset):
        return Interval(self.start + offset, self.end + offset)

    def expand(self, margin=1):
        """Widen both ends by margin (a negative margin shrinks, down to a single point)."""
        start, end = self.start - margin, self.end + margin
        if start > end:
            middle = (self.start + self.end) / 2
            return Interval(middle, middle)
        return Interval(start, end)
