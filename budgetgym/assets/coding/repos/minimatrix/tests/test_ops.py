import pytest

from minimatrix import add, identity, multiply, scale, shape, transpose


def test_shape():
    assert shape([[1, 2, 3], [4, 5, 6]]) == (2, 3)
    assert shape([]) == (0, 0)


def test_shape_ragged():
    with pytest.raises(ValueError):
        shape([[1, 2], [3]])


def test_identity():
    assert identity(3) == [[1, 0, 0], [0, 1, 0], [0, 0, 1]]
    assert identity(1) == [[1]]


def test_add():
    assert add([[1, 2], [3, 4]], [[10, 20], [30, 40]]) == [[11, 22], [33, 44]]


def test_add_shape_mismatch():
    with pytest.raises(ValueError):
        add([[1, 2]], [[1], [2]])


def test_scale():
    assert scale([[1, -2], [0, 3]], 3) == [[3, -6], [0, 9]]


def test_transpose():
    assert transpose([[1, 2, 3], [4, 5, 6]]) == [[1, 4], [2, 5], [3, 6]]
    assert transpose([[7]]) == [[7]]


def test_multiply():
    assert multiply([[1, 2], [3, 4]], [[5, 6], [7, 8]]) == [[19, 22], [43, 50]]


def test_multiply_rectangular():
    assert multiply([[1, 2, 3]], [[1], [2], [3]]) == [[14]]
    assert multiply([[1], [2]], [[3, 4]]) == [[3, 4], [6, 8]]


def test_multiply_identity():
    matrix = [[2, 3], [5, 7]]
    assert multiply(matrix, identity(2)) == matrix
    assert multiply(identity(2), matrix) == matrix


def test_multiply_mismatch():
    with pytest.raises(ValueError):
        multiply([[1, 2]], [[1, 2]])
