"""Helpers of the transform / reduce / algorithm operator tests: run an
operator through its relation and NumPy reference, check the result has
exactly the inferred type, and assert rejections."""

from __future__ import annotations

import re

import numpy as np
import pytest

from aot.ir.attrs import AttrError
from aot.ir.dtype import DType
from aot.ir.registry import OpDef, RelationError, Solved, lookup
from aot.ir.types import ANY, TensorType, TupleType, Type

FLOATS = ["float16", "float32", "float64"]
INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
ALL_DTYPES = FLOATS + INTS + ["bool"]
#: tolerance per float dtype for references that compute in a different
#: precision or order than the operator (which rounds a float64 result once)
RTOL = {"float16": 2e-3, "float32": 2e-5, "float64": 1e-12}


def get(name: str) -> OpDef:
    op = lookup(name)
    assert op is not None, f"{name} is not registered"
    return op


def typeof(value: object) -> Type:
    if isinstance(value, tuple):
        return TupleType(tuple(typeof(v) for v in value))
    assert isinstance(value, np.ndarray), type(value)
    return TensorType(tuple(value.shape), DType.from_numpy(value.dtype))


def infer(name: str, types: list[Type], **attrs: object) -> Type | None:
    """The relation's output type (a Solved's refinements dropped)."""
    op = get(name)
    out = op.rel(types, op.attrs_type.from_raw(attrs))
    return out.out if isinstance(out, Solved) else out


def solve(name: str, types: list[Type], **attrs: object) -> object:
    """The relation's raw answer (a type, a Solved or None)."""
    op = get(name)
    return op.rel(types, op.attrs_type.from_raw(attrs))


def run(name: str, *args: object, **attrs: object) -> object:
    """Type the call with the relation, evaluate the reference, and check
    that the result has exactly the inferred type."""
    op = get(name)
    at = op.attrs_type.from_raw(attrs)
    out = op.rel([typeof(a) for a in args], at)
    assert out is not None
    if isinstance(out, Solved):
        assert all(r is None for r in out.args)
        out = out.out
    result = op.compute(list(args), at, out)
    check_type(result, out)
    return result


def check_type(value: object, t: Type) -> None:
    if isinstance(t, TupleType):
        assert isinstance(value, tuple) and len(value) == len(t.fields)
        for v, f in zip(value, t.fields):
            check_type(v, f)
        return
    assert isinstance(t, TensorType)
    assert isinstance(value, np.ndarray), type(value)
    assert value.dtype == t.dtype.np, (value.dtype, t.dtype)
    assert value.ndim == t.ndim, (value.shape, t.shape)
    for got, want in zip(value.shape, t.shape):
        assert want is ANY or got == want, (value.shape, t.shape)


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


def sample(rng: np.random.Generator, shape: tuple, dtype: str, lo: int = -50,
           hi: int = 50) -> np.ndarray:
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return rng.standard_normal(shape).astype(dt)
    if dt.kind == "b":
        return rng.integers(0, 2, shape).astype(dt)
    info = np.iinfo(dt)
    return rng.integers(max(lo, info.min), min(hi, info.max), shape,
                        endpoint=True).astype(dt)


def escape(text: str) -> str:
    return re.escape(text)
