"""Closed numeric intervals and operations on collections of them."""

from intervals.interval import Interval
from intervals.sets import coverage, gaps, merge, total_length

__all__ = ["Interval", "coverage", "gaps", "merge", "total_length"]
