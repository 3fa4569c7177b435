"""Shared helpers of the nn/image operator tests: run an operator through
its relation and reference, sample data, compare with per-dtype tolerance."""

from __future__ import annotations

import numpy as np

from aot.ir.dtype import DType
from aot.ir.registry import OpDef, Solved, lookup
from aot.ir.types import TensorType, TupleType, Type

#: relative tolerance per float dtype.  The references accumulate in
#: float64 and round once, so float32/float64 agree to rounding of the last
#: bit; float16 keeps 11 significant bits.
RTOL = {"float16": 2e-3, "float32": 2e-6, "float64": 1e-12}
ATOL = {"float16": 2e-3, "float32": 2e-6, "float64": 1e-12}


def get(name: str) -> OpDef:
    op = lookup(name)
    assert op is not None, f"{name} is not registered"
    return op


def ttype(a: np.ndarray) -> TensorType:
    return TensorType(tuple(a.shape), DType.from_numpy(a.dtype))


def infer(name: str, types: list[Type], **attrs: object) -> Type:
    """The relation's output type (refinements of holes dropped)."""
    op = get(name)
    out = op.rel(types, op.attrs_type.from_raw(attrs))
    assert out is not None
    return out.out if isinstance(out, Solved) else out


def run(name: str, *args: np.ndarray, **attrs: object) -> object:
    """Type the call with the relation, evaluate the reference, and check
    the result has exactly the inferred type."""
    op = get(name)
    at = op.attrs_type.from_raw(attrs)
    out = op.rel([ttype(a) for a in args], at)
    assert out is not None
    assert not isinstance(out, Solved) or all(r is None for r in out.args)
    if isinstance(out, Solved):
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
    assert value.shape == t.shape, (value.shape, t.shape)


def sample(rng: np.random.Generator, shape: tuple[int, ...], dtype: str,
           lo: int = -100, hi: int = 100) -> np.ndarray:
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return rng.standard_normal(shape).astype(dt)
    info = np.iinfo(dt)
    return rng.integers(max(info.min, lo), min(info.max, hi), shape, endpoint=True).astype(dt)


def assert_close(actual: np.ndarray, expected: np.ndarray, dtype: str | None = None) -> None:
    """Exact for integers, per-dtype tolerance for floats."""
    dtype = dtype or actual.dtype.name
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if np.dtype(dtype).kind == "f":
        np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64),
                                   rtol=RTOL[dtype], atol=ATOL[dtype])
    else:
        np.testing.assert_array_equal(actual, expected)
