"""Elementwise operations, products and shapes."""


def shape(matrix):
    """(rows, columns); every row must have the same length."""
    rows = len(matrix)
    columns = len(matrix[0]) if rows else 0
    for row in matrix:
        if len(row) != columns:
            raise ValueError("ragged matrix")
    return rows, columns


def identity(size):
    return [[1 if i == j else 0 for j in range(size)] for i in range(size)]


def add(left, right):
    if shape(left) != shape(right):
        raise ValueError(f"shapes {shape(left)} and {shape(right)} differ")
    return [[a + b for a, b in zip(row_l, row_r)] for row_l, row_r in zip(left, right)]


def scale(matrix, factor):
    return [[value * factor for value in row] for row in matrix]


def transpose(matrix):
    rows, columns = shape(matrix)
    return [[matrix[i][j] for i in range(rows)] for j in range(columns)]


def multiply(left, right):
    rows, inner = shape(left)
    inner_right, columns = shape(right)
    if inner != inner_right:
        raise ValueError(f"cannot multiply {rows}x{inner} by {inner_right}x{columns}")
    return [[sum(left[i][k] * right[k][j] for k in range(inner)) for j in range(columns)] for i in range(rows)]
