"""Lowering of the elementwise and broadcasting operators
(``aot/ir/ops/elemwise.py``): one scalar expression per element, with the
family's exact semantics (kernel IR already wraps integers, guards integer
division by zero and propagates NaN through min/max).

Float math on integer tensors is computed in float64 and converted back
with the language's saturating conversion, as the interpreter does;
``erf`` on float32 is computed as float64 ``erf`` rounded to float32
because the interpreter does exactly that.  Integer ``power`` is square and
multiply unrolled over the exponent's bits (a fixed expression, no loop),
with the interpreter's rule for negative exponents.
"""

from __future__ import annotations

from typing import Callable, Sequence

from ....ir.dtype import DType
from ....ir.types import Type
from ...kernel import ir as K
from ..registry import LowerContext, index_lowering, out_tensor
from .common import broadcast, elementwise, tensor

B = K.BinaryOperator


def _bool_or_arith(arith: Callable, on_bool: Callable | None) -> Callable:
    def fn(a: K.Expr, b: K.Expr) -> K.Expr:
        if a.dtype is DType.BOOL and on_bool is not None:
            return on_bool(a, b)
        return arith(a, b)
    return fn


def _int_power(a: K.Expr, e: K.Expr) -> K.Expr:
    """Square and multiply over the exponent's bits, written without
    selects on values (``factor = 1 + bit * (base - 1)`` is ``base`` or
    ``1``, exact in wrapping arithmetic) so that common subexpressions can
    be hoisted and the printed C stays linear in the number of bits."""
    t = a.dtype
    one, zero = K.Const(1, t), K.Const(0, t)
    result: K.Expr = one
    base: K.Expr = a
    for k in range(e.dtype.bits):
        bit = K.cast(t, K.bit_and(K.shr(e, k) if k else e, K.Const(1, e.dtype)))
        result = K.mul(result, K.add(one, K.mul(bit, K.sub(base, one))))
        if k + 1 < e.dtype.bits:
            base = K.mul(base, base)
    if not e.dtype.is_signed:
        return result
    negative = K.cast(t, K.lt(e, K.Const(0, e.dtype)))
    even = K.eq(K.bit_and(e, K.Const(1, e.dtype)), K.Const(0, e.dtype))
    if t.is_signed:
        minus_one = K.select(even, one, K.Const(-1, t))
        special = K.select(K.eq(a, one), one, K.select(K.eq(a, K.Const(-1, t)), minus_one, zero))
    else:
        special = K.select(K.eq(a, one), one, zero)
    return K.add(result, K.mul(negative, K.sub(special, result)))


def _power(a: K.Expr, b: K.Expr) -> K.Expr:
    if a.dtype.is_float:
        return K.math_call("pow", a, b)
    return _int_power(a, b)


_ARITH: dict[str, Callable[[K.Expr, K.Expr], K.Expr]] = {
    "add": _bool_or_arith(K.add, K.logical_or),
    "subtract": K.sub,
    "multiply": _bool_or_arith(K.mul, K.logical_and),
    "divide": K.div,
    "floor_divide": K.floordiv,
    "mod": K.mod,
    "floor_mod": K.floormod,
    "power": _power,
    "maximum": _bool_or_arith(K.maximum, K.logical_or),
    "minimum": _bool_or_arith(K.minimum, K.logical_and),
    "equal": K.eq, "not_equal": K.ne, "less": K.lt, "less_equal": K.le,
    "greater": K.gt, "greater_equal": K.ge,
}


def _binary_lowering(name: str) -> None:
    fn = _ARITH[name]

    @index_lowering(name)
    def lower(ctx: LowerContext, args: Sequence, attrs: object, out_type: Type):
        return broadcast(args, out_type, fn)


for _name in _ARITH:
    _binary_lowering(_name)


def _truth(x: K.Expr) -> K.Expr:
    return x if x.dtype is DType.BOOL else K.ne(x, K.Const(0, x.dtype))


_LOGICAL = {"logical_and": K.logical_and, "logical_or": K.logical_or, "logical_xor": K.ne}


def _logical_lowering(name: str) -> None:
    fn = _LOGICAL[name]

    @index_lowering(name)
    def lower(ctx: LowerContext, args: Sequence, attrs: object, out_type: Type):
        dtype = out_tensor(out_type).dtype
        return broadcast(args, out_type, lambda a, b: K.cast(dtype, fn(_truth(a), _truth(b))))


for _name in _LOGICAL:
    _logical_lowering(_name)


@index_lowering("logical_not")
def _logical_not(ctx: LowerContext, args: Sequence, attrs: object, out_type: Type):
    dtype = out_tensor(out_type).dtype
    return elementwise(args[0], dtype, lambda x: K.cast(dtype, K.logical_not(_truth(x))))


def _sigmoid(x: K.Expr) -> K.Expr:
    one = K.Const(1, x.dtype)
    return K.div(one, K.add(one, K.math_call("exp", K.neg(x))))


def _rsqrt(x: K.Expr) -> K.Expr:
    return K.div(K.Const(1, x.dtype), K.math_call("sqrt", x))


def _erf(x: K.Expr) -> K.Expr:
    if x.dtype is DType.FLOAT64:
        return K.math_call("erf", x)
    return K.cast(x.dtype, K.math_call("erf", K.cast(DType.FLOAT64, x)))


def _math(fn: str) -> Callable[[K.Expr], K.Expr]:
    return lambda x: K.math_call(fn, x)


def _round(x: K.Expr) -> K.Expr:
    """Half to even: float32 through the runtime's ``aot_round_even_f32``
    (the magic-number addition; ``nearbyintf`` is a library call on a
    Cortex-M4F, 50 instructions an element), other types ``nearbyint``."""
    if x.dtype is DType.FLOAT32:
        return K.call("aot_round_even_f32", [x], DType.FLOAT32)
    return K.math_call("nearbyint", x)


_FLOAT_UNARY: dict[str, Callable[[K.Expr], K.Expr]] = {
    "exp": _math("exp"), "log": _math("log"), "log2": _math("log2"), "log10": _math("log10"),
    "sqrt": _math("sqrt"), "rsqrt": _rsqrt, "sigmoid": _sigmoid, "tanh": _math("tanh"),
    "erf": _erf, "sin": _math("sin"), "cos": _math("cos"), "tan": _math("tan"),
    "asin": _math("asin"), "acos": _math("acos"), "atan": _math("atan"),
    "sinh": _math("sinh"), "cosh": _math("cosh"), "floor": _math("floor"),
    "ceil": _math("ceil"), "trunc": _math("trunc"), "round": _round,
}


def _float_unary_lowering(name: str) -> None:
    fn = _FLOAT_UNARY[name]

    @index_lowering(name)
    def lower(ctx: LowerContext, args: Sequence, attrs: object, out_type: Type):
        dtype = out_tensor(out_type).dtype
        if dtype.is_float:
            return elementwise(args[0], dtype, fn)
        return elementwise(args[0], dtype,
                           lambda x: K.cast(dtype, fn(K.cast(DType.FLOAT64, x))))


for _name in _FLOAT_UNARY:
    _float_unary_lowering(_name)


def _negative(x: K.Expr) -> K.Expr:
    return x if x.dtype is DType.BOOL else K.neg(x)


def _abs(x: K.Expr) -> K.Expr:
    if x.dtype is DType.BOOL or x.dtype.is_unsigned:
        return x
    if x.dtype.is_float:
        return K.math_call("fabs", x)
    return K.select(K.lt(x, K.Const(0, x.dtype)), K.neg(x), x)


def _sign(x: K.Expr) -> K.Expr:
    t = x.dtype
    if t is DType.BOOL:
        return x
    zero = K.Const(0, t)
    rest = K.select(K.ne(x, x), x, zero) if t.is_float else zero   # NaN stays, -0.0 -> 0.0
    if t.is_unsigned:
        return K.select(K.gt(x, zero), K.Const(1, t), zero)
    return K.select(K.gt(x, zero), K.Const(1, t), K.select(K.lt(x, zero), K.Const(-1, t), rest))


_SAME_TYPE = {"negative": _negative, "abs": _abs, "sign": _sign, "copy": lambda x: x}


def _same_type_lowering(name: str) -> None:
    fn = _SAME_TYPE[name]

    @index_lowering(name)
    def lower(ctx: LowerContext, args: Sequence, attrs: object, out_type: Type):
        return elementwise(args[0], tensor(args[0]).dtype, fn)


for _name in _SAME_TYPE:
    _same_type_lowering(_name)


def _isnan(x: K.Expr) -> K.Expr:
    return K.ne(x, x) if x.dtype.is_float else K.Const(False, DType.BOOL)


def _isinf(x: K.Expr) -> K.Expr:
    if not x.dtype.is_float:
        return K.Const(False, DType.BOOL)
    return K.eq(K.math_call("fabs", x), K.Const(float("inf"), x.dtype))


def _isfinite(x: K.Expr) -> K.Expr:
    if not x.dtype.is_float:
        return K.Const(True, DType.BOOL)
    return K.lt(K.math_call("fabs", x), K.Const(float("inf"), x.dtype))


_PREDICATES = {"isnan": _isnan, "isinf": _isinf, "isfinite": _isfinite}


def _predicate_lowering(name: str) -> None:
    fn = _PREDICATES[name]

    @index_lowering(name)
    def lower(ctx: LowerContext, args: Sequence, attrs: object, out_type: Type):
        return elementwise(args[0], DType.BOOL, fn)


for _name in _PREDICATES:
    _predicate_lowering(_name)
