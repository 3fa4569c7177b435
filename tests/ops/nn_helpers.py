"""Shared helpers of the nn/image operator tests: run an operator through
its relation and reference, sample data, compare with per-dtype tolerance.
The operator plumbing is :mod:`op_helpers`'s; here shapes are checked
exactly (no ``?`` in a result type)."""

from __future__ import annotations

import numpy as np

import op_helpers
from aot.ir.dtype import DType
from aot.ir.types import TensorType, Type
from op_helpers import get

__all__ = ["RTOL", "ATOL", "T", "get", "infer", "run", "sample", "assert_close"]

#: relative tolerance per float dtype.  The references accumulate in
#: float64 and round once, so float32/float64 agree to rounding of the last
#: bit; float16 keeps 11 significant bits.
RTOL = {"float16": 2e-3, "float32": 2e-6, "float64": 1e-12}
ATOL = {"float16": 2e-3, "float32": 2e-6, "float64": 1e-12}


def T(shape: tuple, dtype: str | DType = "float32") -> TensorType:  # noqa: N802
    """A tensor type from a shape and a dtype (its name or the DType)."""
    return TensorType(tuple(shape), dtype if isinstance(dtype, DType) else DType(dtype))


def infer(name: str, types: list[Type], **attrs: object) -> Type:
    """The relation's output type (refinements of holes dropped); the
    relation must answer."""
    out = op_helpers.infer(name, types, **attrs)
    assert out is not None
    return out


def run(name: str, *args: np.ndarray, **attrs: object) -> object:
    """Type the call with the relation, evaluate the reference, and check
    the result has exactly the inferred type."""
    return op_helpers.run_checked(name, args, attrs, dynamic_dims=False)


def sample(rng: np.random.Generator, shape: tuple[int, ...], dtype: str,
           lo: int = -100, hi: int = 100) -> np.ndarray:
    return op_helpers.sample(rng, shape, dtype, lo, hi)


def assert_close(actual: np.ndarray, expected: np.ndarray, dtype: str | None = None) -> None:
    """Exact for integers, per-dtype tolerance for floats."""
    dtype = dtype or actual.dtype.name
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if np.dtype(dtype).kind == "f":
        np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64),
                                   rtol=RTOL[dtype], atol=ATOL[dtype])
    else:
        np.testing.assert_array_equal(actual, expected)
