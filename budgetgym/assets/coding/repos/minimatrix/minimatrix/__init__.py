"""Small dense matrices as lists of rows."""

from minimatrix.ops import add, identity, multiply, scale, shape, transpose
from minimatrix.linalg import determinant, inverse, solve, trace

__all__ = ["add", "determinant", "identity", "inverse", "multiply", "scale", "shape", "solve", "trace", "transpose"]
