"""Shared pieces of the operator lowerings."""

from __future__ import annotations

from typing import Callable, Sequence

from ....ir.dtype import DType
from ...kernel import ir as K
from ..registry import ArgValue, Index, TensorValue, broadcast_index, out_tensor

__all__ = ["tensor", "elementwise", "broadcast", "to_float", "from_float"]


def tensor(v: ArgValue) -> TensorValue:
    assert isinstance(v, TensorValue), "expected a tensor argument, got a tuple"
    return v


def elementwise(x: ArgValue, out_dtype: DType, fn: Callable[[K.Expr], K.Expr]) -> TensorValue:
    """``fn`` applied to every element of ``x``."""
    x = tensor(x)
    return TensorValue(x.shape, out_dtype, lambda idx: fn(x.read(idx)))


def broadcast(args: Sequence[ArgValue], out_type, fn: Callable[..., K.Expr]) -> TensorValue:
    """``fn`` applied to the operands broadcast to the result's shape."""
    t = out_tensor(out_type)
    shape = tuple(int(d) for d in t.shape)
    vals = [tensor(a) for a in args]

    def read(idx: Index) -> K.Expr:
        return fn(*(v.read(broadcast_index(idx, shape, v.shape)) for v in vals))
    return TensorValue(shape, t.dtype, read)


def to_float(x: K.Expr, dtype: DType = DType.FLOAT64) -> K.Expr:
    return K.cast(dtype, x)


def from_float(x: K.Expr, dtype: DType) -> K.Expr:
    """The language's float -> ``dtype`` conversion (truncate, saturate,
    NaN -> 0), which is kernel IR's Cast."""
    return K.cast(dtype, x)


def mac(acc: K.Expr, a: K.Expr, b: K.Expr) -> K.Expr:
    """``acc + a * b``: one ``fmaf`` (rounded once) for float32 when the
    tuning says the target multiplies-adds in one instruction
    (:mod:`.tuning`), else a multiply and an add."""
    from .tuning import current
    if acc.dtype is DType.FLOAT32 and current().fma:
        return K.math_call("fma", a, b, acc)
    return K.add(acc, K.mul(a, b))
