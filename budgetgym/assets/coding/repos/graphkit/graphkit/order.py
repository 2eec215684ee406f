"""Orderings and structure."""


def topological_sort(graph):
    """Nodes of a directed acyclic graph, each before its successors; ties in sorted order."""
    if not graph.directed:
        raise ValueError("topological order needs a directed graph")
    indegree = {node: 0 for node in graph.nodes()}
    for node in graph.nodes():
        for target in graph.neighbours(node):
            indegree[target] += 1
    ready = sorted(node for node, degree in indegree.items() if degree == 0)
    order = []
    while ready:
        node = ready.pop(0)
        order.append(node)
        for target in graph.neighbours(node):
            indegree[target] -= 1
            if indegree[target] == 0:
                ready.append(target)
                ready.sort()
    if len(order) != len(indegree):
        raise ValueError("the graph has a cycle")
    return order


def has_cycle(graph):
    if graph.directed:
        try:
            topological_sort(graph)
        except ValueError:
            return True
        return False
    seen = set()
    for root in graph.nodes():
        if root in seen:
            continue
        stack = [(root, None)]
        while stack:
            node, parent = stack.pop()
            if node in seen:
                return True
            seen.add(node)
            for neighbour in graph.neighbours(node):
                if neighbour != parent:
                    stack.append((neighbour, node))
    return False


def components(graph):
    """Connected components of an undirected graph, each a sorted list, ordered by smallest node."""
    seen = set()
    result = []
    for root in graph.nodes():
        if root in seen:
            continue
        component = []
        stack = [root]
        seen.add(root)
        while stack:
            node = stack.pop()
            component.append(node)
            for neighbour in graph.neighbours(node):
                if neighbour not in seen:
                    seen.add(neighbour)
                    stack.append(neighbour)
        result.append(sorted(component))
    return result
