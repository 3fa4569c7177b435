"""Helpers of the transform / reduce / algorithm operator tests: run an
operator through its relation and NumPy reference, check the result has
exactly the inferred type, and assert rejections.  The operator plumbing
is :mod:`op_helpers`'s; here a ``?`` in a result type matches any extent."""

from __future__ import annotations

import re

import numpy as np
import pytest

import op_helpers
from aot.ir.attrs import AttrError
from aot.ir.dtype import DType
from aot.ir.registry import RelationError
from aot.ir.types import TensorType, Type
from op_helpers import get, infer, run_checked, solve, typeof

__all__ = ["FLOATS", "INTS", "ALL_DTYPES", "RTOL", "get", "typeof", "infer", "solve", "run",
           "rejects", "bad_attrs", "tt", "arange", "sample", "escape"]

FLOATS = ["float16", "float32", "float64"]
INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
ALL_DTYPES = FLOATS + INTS + ["bool"]
#: tolerance per float dtype for references that compute in a different
#: precision or order than the operator (which rounds a float64 result once)
RTOL = {"float16": 2e-3, "float32": 2e-5, "float64": 1e-12}


def run(name: str, *args: object, **attrs: object) -> object:
    """Type the call with the relation, evaluate the reference, and check
    that the result has exactly the inferred type (a ``?`` dimension
    matches any extent)."""
    return run_checked(name, args, attrs, dynamic_dims=True)


def rejects(name: str, types: list[Type], match: str, **attrs: object) -> str:
    """The relation rejects ``types`` with a message matching ``match``."""
    op = get(name)
    at = op.attrs_type.from_raw(attrs)
    with pytest.raises(RelationError, match=match) as info:
        op.rel(types, at)
    return str(info.value)


def bad_attrs(name: str, match: str, **attrs: object) -> None:
    op = get(name)
    with pytest.raises(AttrError, match=match):
        op.attrs_type.from_raw(attrs)


def tt(shape: tuple, dtype: str = "float32") -> TensorType:
    return TensorType(tuple(shape), DType(dtype))


def arange(shape: tuple, dtype: str = "float32") -> np.ndarray:
    """0, 1, 2, ... in row-major order, reshaped to ``shape``."""
    return np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape).astype(dtype)


def sample(rng: np.random.Generator, shape: tuple, dtype: str, lo: int = -50,
           hi: int = 50) -> np.ndarray:
    return op_helpers.sample(rng, shape, dtype, lo, hi)


def escape(text: str) -> str:
    return re.escape(text)
