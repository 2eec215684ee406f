import pytest

from graphkit import Graph, components, dijkstra, has_cycle, shortest_path, topological_sort


def grid():
    graph = Graph()
    for a, b in [(1, 2), (2, 3), (3, 6), (1, 4), (4, 5), (5, 6), (7, 8)]:
        graph.add_edge(a, b)
    return graph


def test_shortest_path():
    assert shortest_path(grid(), 1, 6) == [1, 2, 3, 6]
    assert shortest_path(grid(), 4, 3) == [4, 1, 2, 3]


def test_shortest_path_same_node():
    assert shortest_path(grid(), 5, 5) == [5]


def test_shortest_path_unreachable():
    assert shortest_path(grid(), 1, 8) is None


def test_shortest_path_neighbour():
    assert shortest_path(grid(), 1, 2) == [1, 2]


def test_dijkstra():
    graph = Graph()
    graph.add_edge("a", "b", 4)
    graph.add_edge("a", "c", 1)
    graph.add_edge("c", "b", 2)
    graph.add_edge("b", "d", 5)
    graph.add_node("e")
    assert dijkstra(graph, "a") == {"a": 0, "b": 3, "c": 1, "d": 8}


def test_dijkstra_zero_weight():
    graph = Graph(directed=True)
    graph.add_edge(1, 2, 0)
    graph.add_edge(2, 3, 2)
    assert dijkstra(graph, 1) == {1: 0, 2: 0, 3: 2}


def test_topological_sort():
    graph = Graph(directed=True)
    for a, b in [("shirt", "tie"), ("tie", "jacket"), ("trousers", "shoes"), ("trousers", "belt"), ("belt", "jacket")]:
        graph.add_edge(a, b)
    assert topological_sort(graph) == ["shirt", "tie", "trousers", "belt", "jacket", "shoes"]


def test_topological_sort_cycle():
    graph = Graph(directed=True)
    graph.add_edge(1, 2)
    graph.add_edge(2, 1)
    with pytest.raises(ValueError):
        topological_sort(graph)


def test_topological_sort_undirected():
    with pytest.raises(ValueError):
        topological_sort(Graph())


def test_has_cycle_directed():
    graph = Graph(directed=True)
    graph.add_edge(1, 2)
    graph.add_edge(2, 3)
    assert not has_cycle(graph)
    graph.add_edge(3, 1)
    assert has_cycle(graph)


def test_has_cycle_undirected():
    graph = Graph()
    graph.add_edge(1, 2)
    graph.add_edge(2, 3)
    assert not has_cycle(graph)
    graph.add_edge(3, 1)
    assert has_cycle(graph)


def test_components():
    graph = grid()
    graph.add_node(9)
    assert components(graph) == [[1, 2, 3, 4, 5, 6], [7, 8], [9]]
