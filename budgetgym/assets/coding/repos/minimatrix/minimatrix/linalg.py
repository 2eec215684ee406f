"""Determinant, inverse and linear systems by Gaussian elimination over fractions."""

from fractions import Fraction

from minimatrix.ops import identity, shape


def _square(matrix):
    rows, columns = shape(matrix)
    if rows != columns:
        raise ValueError(f"matrix is {rows}x{columns}, not square")
    return rows


def trace(matrix):
    size = _square(matrix)
    return sum(matrix[i][i] for i in range(size))


def determinant(matrix):
    size = _square(matrix)
    work = [[Fraction(value) for value in row] for row in matrix]
    result = Fraction(1)
    for column in range(size):
        pivot = next((row for row in range(column, size) if work[row][column] != 0), None)
        if pivot is None:
            return 0
        if pivot != column:
            work[column], work[pivot] = work[pivot], work[column]
            result = -result
        result *= work[column][column]
        for row in range(column + 1, size):
            factor = work[row][column] / work[column][column]
            for k in range(column, size):
                work[row][k] -= factor * work[column][k]
    return result


def inverse(matrix):
    size = _square(matrix)
    work = [[Fraction(value) for value in row] + list(map(Fraction, unit)) for row, unit in zip(matrix, identity(size))]
    for column in range(size):
        pivot = next((row for row in range(column, size) if work[row][column] != 0), None)
        if pivot is None:
            raise ValueError("matrix is singular")
        work[column], work[pivot] = work[pivot], work[column]
        lead = work[column][column]
        work[column] = [value / lead for value in work[column]]
        for row in range(size):
            if row != column and work[row][column] != 0:
                factor = work[row][column]
                work[row] = [a - factor * b for a, b in zip(work[row], work[column])]
    return [row[size:] for row in work]


def solve(matrix, vector):
    """x with matrix @ x == vector."""
    size = _square(matrix)
    if len(vector) != size:
        raise ValueError("vector length does not match the matrix")
    inv = inverse(matrix)
    return [sum(inv[i][k] * vector[k] for k in range(size)) for i in range(size)]
