"""Operations on collections of intervals."""

from intervals.interval import Interval


def merge(intervals):
    """Merge overlapping or touching intervals; the result is sorted by start."""
    ordered = sorted(intervals, key=lambda item: (item.start, item.end))
    merged = []
    for current in ordered:
        if merged and current.start <= merged[-1].end:
            last = merged[-1]
            merged[-1] = Interval(last.start, max(last.end, current.end))
        else:
            merged.append(current)
    return merged


def total_length(intervals):
    """Length covered by the union of the intervals (overlaps counted once)."""
    return sum(item.length for item in merge(intervals))


def gaps(intervals, within=None):
    """The uncovered stretches between the merged intervals, optionally clipped to `within`."""
    merged = merge(intervals)
    result = []
    for left, right in zip(merged, merged[1:]):
        result.append(Interval(left.end, right.start))
    if within is not None:
        if merged and within.start < merged[0].start:
            result.insert(0, Interval(within.start, merged[0].start))
        if merged and merged[-1].end < within.end:
            result.append(Interval(merged[-1].end, within.end))
        if not merged:
            result = [within]
        result = [gap.intersection(within) for gap in result if gap.overlaps(within)]
    return result


def coverage(intervals, within):
    """Share of `within` covered by the intervals, between 0 and 1."""
    if within.length == 0:
        return 1.0 if any(item.contains(within.start) for item in intervals) else 0.0
    clipped = [item.intersection(within) for item in intervals if item.overlaps(within)]
    return total_length(clipped) / within.length
