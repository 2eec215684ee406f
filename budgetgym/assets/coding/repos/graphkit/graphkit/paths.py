"""Shortest paths."""

import heapq
from collections import deque


def shortest_path(graph, start, goal):
    """Fewest-edges path from start to goal as a list of nodes, or None when unreachable."""
    if start == goal:
        return [start]
    previous = {start: None}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for neighbour in graph.neighbours(node):
            if neighbour in previous:
                continue
            previous[neighbour] = node
            if neighbour == goal:
                path = [goal]
                while previous[path[-1]] is not None:
                    path.append(previous[path[-1]])
                return path[::-1]
            queue.append(neighbour)
    return None


def dijkstra(graph, start):
    """Distances by total weight from start to every reachable node."""
    distances = {start: 0}
    heap = [(0, start)]
    done = set()
    while heap:
        distance, node = heapq.heappop(heap)
        if node in done:
            continue
        done.add(node)
        for neighbour in graph.neighbours(node):
            candidate = distance + graph.weight(node, neighbour)
            if candidate < distances.get(neighbour, float("inf")):
                distances[neighbour] = candidate
                heapq.heappush(heap, (candidate, neighbour))
    return distances
