"""Graphs as adjacency maps."""

from graphkit.graph import Graph
from graphkit.paths import dijkstra, shortest_path
from graphkit.order import components, has_cycle, topological_sort

__all__ = ["Graph", "components", "dijkstra", "has_cycle", "shortest_path", "topological_sort"]
