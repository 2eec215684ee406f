"""A graph with optional edge weights."""


class Graph:
    def __init__(self, directed=False):
        self.directed = directed
        self._edges = {}

    def add_node(self, node):
        self._edges.setdefault(node, {})

    def add_edge(self, source, target, weight=1):
        if weight < 0:
            raise ValueError("weights must be non-negative")
        self.add_node(source)
        self.add_node(target)
        self._edges[source][target] = weight
        if not self.directed:
            self._edges[target][source] = weight

    def nodes(self):
        return sorted(self._edges)

    def neighbours(self, node):
        """Successors of node, sorted."""
        if node not in self._edges:
            raise KeyError(f"unknown node {node!r}")
        return sorted(self._edges[node])

    def weight(self, source, target):
        return self._edges[source][target]

    def edge_count(self):
        total = sum(len(targets) for targets in self._edges.values())
        return total if self.directed else total // 2

    def degree(self, node):
        return len(self.neighbours(node))
