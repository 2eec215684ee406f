import pytest

from graphkit import Graph


def test_undirected_edges_both_ways():
    graph = Graph()
    graph.add_edge("a", "b", 3)
    assert graph.neighbours("a") == ["b"]
    assert graph.neighbours("b") == ["a"]
    assert graph.weight("b", "a") == 3


def test_directed_edges_one_way():
    graph = Graph(directed=True)
    graph.add_edge("a", "b")
    assert graph.neighbours("a") == ["b"]
    assert graph.neighbours("b") == []


def test_default_weight():
    graph = Graph()
    graph.add_edge(1, 2)
    assert graph.weight(1, 2) == 1


def test_negative_weight_rejected():
    with pytest.raises(ValueError):
        Graph().add_edge(1, 2, -1)


def test_nodes_sorted_and_isolated():
    graph = Graph()
    graph.add_node("z")
    graph.add_edge("b", "a")
    assert graph.nodes() == ["a", "b", "z"]


def test_unknown_node():
    with pytest.raises(KeyError):
        Graph().neighbours("x")


def test_edge_count():
    graph = Graph()
    graph.add_edge(1, 2)
    graph.add_edge(2, 3)
    assert graph.edge_count() == 2
    directed = Graph(directed=True)
    directed.add_edge(1, 2)
    directed.add_edge(2, 1)
    assert directed.edge_count() == 2


def test_degree():
    graph = Graph()
    graph.add_edge(1, 2)
    graph.add_edge(1, 3)
    assert graph.degree(1) == 2
    assert graph.degree(3) == 1
