"""Elementwise and broadcasting arithmetic, comparison and logic.

Semantics, exact and shared by the interpreter and the C backend:

* Integer arithmetic wraps (two's complement), as NumPy does.
* ``divide`` and ``mod`` on integers truncate toward zero (C semantics);
  ``floor_divide`` and ``floor_mod`` round toward negative infinity.
  An integer division or modulo by zero gives 0 (never a trap);
  ``INT_MIN / -1`` wraps to ``INT_MIN``.
* Floating-point math follows IEEE 754 in the tensor's own precision.
  Transcendental functions (``exp``, ``log``, ``sqrt``, ``erf``, ...)
  applied to an integer tensor are computed in float64 and converted back
  by truncation toward zero, saturating at the type's limits (NaN -> 0).
* ``round`` rounds half to even (as ONNX and ``nearbyint``).
* Comparison operators give ``bool``; logical operators treat nonzero as
  true and give the input dtype (``bool`` for bool inputs).
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

from ..types import Type
from .common import (DType, PatternKind, RelationError, TensorType, as_array, broadcast_rel,
                     compare_rel, defop, float_to_int, identity_rel, np, out_tensor_type,
                     tensor_arg)
from ..dtype import np_kind

FAMILY = "elemwise"
EW = PatternKind.ELEMWISE
BC = PatternKind.BROADCAST


# ------------------------------------------------------------ integer division

def _zero_guarded(op: Callable[[np.ndarray, np.ndarray], np.ndarray],
                  a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``op(a, b)`` for integer division-like ``op``, broadcast, where a
    zero divisor gives 0 instead of a trap (``op`` only ever sees nonzero
    divisors) and overflow wraps; the result has ``a``'s dtype."""
    a, b = np.broadcast_arrays(a, b)
    zero = b == 0
    safe_b = np.where(zero, 1, b).astype(b.dtype)
    with np.errstate(all="ignore"):
        r = op(a, safe_b)
    return np.where(zero, 0, r).astype(a.dtype)


def _trunc_quotient(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a / b`` rounded toward zero, ``b`` nonzero: the floor quotient,
    plus one where the division was inexact and the signs differ."""
    q = np.floor_divide(a, b)
    r = a - q * b
    fix = (r != 0) & ((a < 0) != (b < 0))
    return q + fix.astype(q.dtype)


def _trunc_remainder(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a - trunc(a / b) * b``, ``b`` nonzero: the sign of ``a``."""
    return a - _trunc_quotient(a, b).astype(a.dtype) * b


def trunc_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C-style integer division, with x/0 = 0 and wrap-around on overflow."""
    return _zero_guarded(_trunc_quotient, a, b)


def trunc_mod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C-style integer remainder (sign of ``a``), with x%0 = 0."""
    return _zero_guarded(_trunc_remainder, a, b)


def floor_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integer division rounding toward negative infinity, with x/0 = 0."""
    return _zero_guarded(np.floor_divide, a, b)


def floor_mod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integer remainder with the sign of ``b``, with x%0 = 0."""
    return _zero_guarded(np.remainder, a, b)


def _is_int(x: np.ndarray) -> bool:
    return np_kind(x.dtype) in "iub"


def _binary(float_fn: Callable, int_fn: Callable | None = None) -> Callable:
    def compute(args: Sequence[np.ndarray], attrs: object, out: Type) -> np.ndarray:
        a, b = args
        fn = int_fn if (int_fn is not None and _is_int(a)) else float_fn
        with np.errstate(all="ignore"):
            return as_array(fn(a, b), out_tensor_type(out).dtype)
    return compute


def _int_power(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integer power by squaring with wrap-around; negative exponents give
    0 except for bases 1 and -1."""
    a, b = np.broadcast_arrays(a, b)
    result = np.ones_like(a)
    base = a.copy()
    # unsigned exponents stay unsigned: 2**63 and above are not negative
    exp = b.astype(np.uint64 if np_kind(b.dtype) == "u" else np.int64)
    neg = exp < 0
    e = np.where(neg, 0, exp).astype(exp.dtype)
    with np.errstate(all="ignore"):
        while np.any(e > 0):
            odd = (e & 1) == 1
            result = np.where(odd, result * base, result).astype(a.dtype)
            base = (base * base).astype(a.dtype)
            e = e >> 1
    if np.any(neg):
        special = np.where(a == 1, 1, np.where(a == -1, np.where(exp % 2 == 0, 1, -1), 0))
        result = np.where(neg, special, result).astype(a.dtype)
    return result


_BINARY = [
    ("add", np.add, None, "element-wise a + b with broadcasting"),
    ("subtract", np.subtract, None, "element-wise a - b with broadcasting"),
    ("multiply", np.multiply, None, "element-wise a * b with broadcasting"),
    ("divide", np.divide, trunc_divide, "element-wise a / b (integers truncate)"),
    ("floor_divide", np.floor_divide, floor_divide, "element-wise floor(a / b)"),
    ("mod", np.fmod, trunc_mod, "element-wise remainder with the sign of a (C fmod)"),
    ("floor_mod", np.mod, floor_mod, "element-wise remainder with the sign of b"),
    ("power", np.power, _int_power, "element-wise a ** b"),
    ("maximum", np.maximum, None, "element-wise max(a, b)"),
    ("minimum", np.minimum, None, "element-wise min(a, b)"),
]

#: arithmetic whose meaning on truth values NumPy and C disagree on (or that
#: NumPy refuses): bool operands are a type error, as in NumPy.  add and
#: multiply on bool are logical or / and, which both agree on.
_NOT_ON_BOOL = {"subtract", "divide", "floor_divide", "mod", "floor_mod", "power"}


def _arithmetic_rel(name: str) -> Callable[[Sequence[Type], object], object]:
    def rel(args: Sequence[Type], attrs: object) -> object:
        for a in args:
            if isinstance(a, TensorType) and a.dtype is DType.BOOL:
                raise RelationError(f"{name} is not defined on bool tensors "
                                    "(cast them to an integer type first)")
        return broadcast_rel(args, attrs)
    return rel


for _name, _f, _i, _doc in _BINARY:
    defop(_name, arity=2, rel=_arithmetic_rel(_name) if _name in _NOT_ON_BOOL else broadcast_rel,
          pattern=BC, compute=_binary(_f, _i), doc=_doc, family=FAMILY)


_COMPARE = [
    ("equal", np.equal, "a == b"),
    ("not_equal", np.not_equal, "a != b"),
    ("less", np.less, "a < b"),
    ("less_equal", np.less_equal, "a <= b"),
    ("greater", np.greater, "a > b"),
    ("greater_equal", np.greater_equal, "a >= b"),
]

for _name, _f, _doc in _COMPARE:
    defop(_name, arity=2, rel=compare_rel, pattern=BC, compute=_binary(_f),
          doc=f"element-wise {_doc}, giving bool", family=FAMILY)


def _logical(fn: Callable) -> Callable:
    def compute(args: Sequence[np.ndarray], attrs: object, out: Type) -> np.ndarray:
        return as_array(fn(*args), out_tensor_type(out).dtype)
    return compute


for _name, _f, _doc in [("logical_and", np.logical_and, "a and b"),
                        ("logical_or", np.logical_or, "a or b"),
                        ("logical_xor", np.logical_xor, "a xor b")]:
    defop(_name, arity=2, rel=broadcast_rel, pattern=BC, compute=_logical(_f),
          doc=f"element-wise logical {_doc}", family=FAMILY)

defop("logical_not", arity=1, rel=identity_rel, pattern=EW, compute=_logical(np.logical_not),
      doc="element-wise logical not", family=FAMILY)


# -------------------------------------------------------------------- unary

def _float_math(fn: Callable) -> Callable:
    def compute(args: Sequence[np.ndarray], attrs: object, out: Type) -> np.ndarray:
        (x,) = args
        with np.errstate(all="ignore"):
            if _is_int(x):
                return float_to_int(fn(x.astype(np.float64)), x.dtype)
            return as_array(fn(x), x.dtype)
    return compute


def _same_type(fn: Callable) -> Callable:
    def compute(args: Sequence[np.ndarray], attrs: object, out: Type) -> np.ndarray:
        with np.errstate(all="ignore"):
            return as_array(fn(args[0]), args[0].dtype)
    return compute


_erf = np.vectorize(math.erf, otypes=[np.float64])


def _erf_fn(x: np.ndarray) -> np.ndarray:
    return _erf(x.astype(np.float64)).astype(x.dtype) if x.size else x.copy()


def _sigmoid(x: np.ndarray) -> np.ndarray:
    one = x.dtype.type(1)
    return one / (one + np.exp(-x))


def _rsqrt(x: np.ndarray) -> np.ndarray:
    return x.dtype.type(1) / np.sqrt(x)


def _sign(x: np.ndarray) -> np.ndarray:
    return np.sign(x) if x.dtype != np.bool_ else x.copy()   # sign(True) = True


_FLOAT_UNARY = [
    ("exp", np.exp, "e ** x"),
    ("log", np.log, "natural logarithm"),
    ("log2", np.log2, "base-2 logarithm"),
    ("log10", np.log10, "base-10 logarithm"),
    ("sqrt", np.sqrt, "square root"),
    ("rsqrt", _rsqrt, "1 / sqrt(x)"),
    ("sigmoid", _sigmoid, "1 / (1 + exp(-x))"),
    ("tanh", np.tanh, "hyperbolic tangent"),
    ("erf", _erf_fn, "Gauss error function"),
    ("sin", np.sin, "sine"),
    ("cos", np.cos, "cosine"),
    ("tan", np.tan, "tangent"),
    ("asin", np.arcsin, "arc sine"),
    ("acos", np.arccos, "arc cosine"),
    ("atan", np.arctan, "arc tangent"),
    ("sinh", np.sinh, "hyperbolic sine"),
    ("cosh", np.cosh, "hyperbolic cosine"),
    ("floor", np.floor, "round toward negative infinity"),
    ("ceil", np.ceil, "round toward positive infinity"),
    ("trunc", np.trunc, "round toward zero"),
    ("round", np.round, "round half to even"),
]

for _name, _f, _doc in _FLOAT_UNARY:
    defop(_name, arity=1, rel=identity_rel, pattern=EW, compute=_float_math(_f),
          doc=f"element-wise {_doc}", family=FAMILY)


def _negative(x: np.ndarray) -> np.ndarray:
    return np.negative(x) if x.dtype != np.bool_ else x.copy()


def _abs(x: np.ndarray) -> np.ndarray:
    return np.abs(x) if x.dtype != np.bool_ else x.copy()


for _name, _f, _doc in [("negative", _negative, "-x (integers wrap)"),
                        ("abs", _abs, "|x| (integers wrap: abs(INT_MIN) = INT_MIN)"),
                        ("sign", _sign, "-1, 0 or 1"),
                        ("copy", np.copy, "a copy of x")]:
    defop(_name, arity=1, rel=identity_rel, pattern=EW, compute=_same_type(_f),
          doc=f"element-wise {_doc}", family=FAMILY)


def _isfinite_rel(args: Sequence[Type], attrs: object) -> Type | None:
    t = tensor_arg(args, 0)
    if t is None:
        return None
    return TensorType(t.shape, DType.BOOL)


for _name, _f in [("isnan", np.isnan), ("isinf", np.isinf), ("isfinite", np.isfinite)]:
    defop(_name, arity=1, rel=_isfinite_rel, pattern=EW,
          compute=(lambda fn: lambda args, attrs, out: as_array(fn(args[0]), DType.BOOL))(_f),
          doc=f"element-wise {_name}, giving bool", family=FAMILY)

__all__ = ["trunc_divide", "trunc_mod", "floor_divide", "floor_mod", "RelationError"]
