from fractions import Fraction

import pytest

from minimatrix import determinant, identity, inverse, multiply, solve, trace


def test_trace():
    assert trace([[1, 2], [3, 4]]) == 5
    assert trace([[1, 2, 3], [4, 5, 6], [7, 8, 9]]) == 15


def test_trace_not_square():
    with pytest.raises(ValueError):
        trace([[1, 2, 3], [4, 5, 6]])


def test_determinant_2x2():
    assert determinant([[1, 2], [3, 4]]) == -2


def test_determinant_3x3():
    assert determinant([[2, 0, 1], [1, 3, 2], [1, 1, 2]]) == 6
    assert determinant([[6, 1, 1], [4, -2, 5], [2, 8, 7]]) == -306


def test_determinant_needs_row_swap():
    assert determinant([[0, 1], [1, 0]]) == -1
    assert determinant([[0, 2, 1], [1, 0, 0], [0, 0, 3]]) == -6


def test_determinant_singular():
    assert determinant([[1, 2], [2, 4]]) == 0


def test_determinant_identity():
    assert determinant(identity(4)) == 1


def test_inverse():
    matrix = [[4, 7], [2, 6]]
    assert inverse(matrix) == [[Fraction(3, 5), Fraction(-7, 10)], [Fraction(-1, 5), Fraction(2, 5)]]
    assert multiply(matrix, inverse(matrix)) == identity(2)


def test_inverse_with_swap():
    matrix = [[0, 1, 0], [1, 0, 0], [0, 0, 2]]
    assert multiply(matrix, inverse(matrix)) == identity(3)


def test_inverse_singular():
    with pytest.raises(ValueError):
        inverse([[1, 2], [2, 4]])


def test_solve():
    assert solve([[2, 1], [1, 3]], [3, 5]) == [Fraction(4, 5), Fraction(7, 5)]
    assert solve([[1, 0, 0], [0, 2, 0], [0, 0, 4]], [1, 1, 1]) == [1, Fraction(1, 2), Fraction(1, 4)]


def test_solve_length_mismatch():
    with pytest.raises(ValueError):
        solve([[1, 0], [0, 1]], [1, 2, 3])
