"""Helpers shared by the operator test helpers (:mod:`nn_helpers` for the
nn/image tests, :mod:`shape_op_helpers` for the transform / reduce /
algorithm tests): look an operator up, ask its relation, run it through its
relation and NumPy reference checking the result against the inferred type,
and sample test data."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from aot.ir.dtype import DType
from aot.ir.registry import OpDef, Solved, lookup
from aot.ir.types import ANY, TensorType, TupleType, Type


def get(name: str) -> OpDef:
    op = lookup(name)
    assert op is not None, f"{name} is not registered"
    return op


def typeof(value: object) -> Type:
    """The type of a runtime value: a tensor or a (nested) tuple."""
    if isinstance(value, tuple):
        return TupleType(tuple(typeof(v) for v in value))
    assert isinstance(value, np.ndarray), type(value)
    return TensorType(tuple(value.shape), DType.from_numpy(value.dtype))


def solve(name: str, types: list[Type], **attrs: object) -> object:
    """The relation's raw answer (a type, a Solved or None)."""
    op = get(name)
    return op.rel(types, op.attrs_type.from_raw(attrs))


def infer(name: str, types: list[Type], **attrs: object) -> Type | None:
    """The relation's output type (a Solved's refinements dropped)."""
    out = solve(name, types, **attrs)
    return out.out if isinstance(out, Solved) else out  # type: ignore[return-value]


def check_type(value: object, t: Type, *, dynamic_dims: bool) -> None:
    """``value`` has type ``t``: the same tuple structure, dtypes and
    shapes; with ``dynamic_dims`` a ``?`` dimension of ``t`` matches any
    extent, without it every dimension must be equal."""
    if isinstance(t, TupleType):
        assert isinstance(value, tuple) and len(value) == len(t.fields)
        for v, f in zip(value, t.fields):
            check_type(v, f, dynamic_dims=dynamic_dims)
        return
    assert isinstance(t, TensorType)
    assert isinstance(value, np.ndarray), type(value)
    assert value.dtype == t.dtype.np, (value.dtype, t.dtype)
    if not dynamic_dims:
        assert value.shape == t.shape, (value.shape, t.shape)
        return
    assert value.ndim == t.ndim, (value.shape, t.shape)
    for got, want in zip(value.shape, t.shape):
        assert want is ANY or got == want, (value.shape, t.shape)


def run_checked(name: str, args: Sequence[object], attrs: dict[str, object], *,
                dynamic_dims: bool) -> object:
    """Type the call with the relation (which must not refine any
    argument), evaluate the reference, and check that the result has
    exactly the inferred type (see :func:`check_type`)."""
    op = get(name)
    at = op.attrs_type.from_raw(attrs)
    out = op.rel([typeof(a) for a in args], at)
    assert out is not None
    if isinstance(out, Solved):
        assert all(r is None for r in out.args)
        out = out.out
    result = op.compute(list(args), at, out)
    check_type(result, out, dynamic_dims=dynamic_dims)
    return result


def program(params: str, body: str) -> str:
    """A module in the text format whose ``@main(params)`` returns ``body``."""
    return f'#[version = "0.0.5"]\ndef @main({params}) {{\n  {body}\n}}\n'


def sample(rng: np.random.Generator, shape: tuple, dtype: str, lo: int, hi: int) -> np.ndarray:
    """Random data of ``dtype``: standard normal floats, random bools,
    integers uniform in ``[lo, hi]`` clipped to the dtype's range."""
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return rng.standard_normal(shape).astype(dt)
    if dt.kind == "b":
        return rng.integers(0, 2, shape).astype(dt)
    info = np.iinfo(dt)
    return rng.integers(max(lo, info.min), min(hi, info.max), shape,
                        endpoint=True).astype(dt)
