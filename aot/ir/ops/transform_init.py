"""Operator family: transform (value-creating part).

cast, cast_like, clip, full, zeros, ones, full_like, zeros_like,
ones_like, arange.  Registered when :mod:`transform` is imported.

Conversion semantics (``cast``, and everywhere a value changes dtype here:
fill values, one_hot's on/off values, arange's result):

* float -> integer truncates toward zero and saturates at the integer
  type's limits; NaN gives 0 (as :mod:`elemwise` does for math on
  integers).  The saturation is exact at the int64/uint64 limits.
* integer -> narrower integer wraps (two's complement), as C and NumPy.
* anything -> bool is ``x != 0`` (so NaN -> true).
* integer -> float and float -> narrower float round to nearest
  (overflow gives +-inf), as IEEE 754.

``clip(x, a_min, a_max)`` is ``min(max(x, a_min), a_max)``; NaN passes
through.  On integer tensors the bounds are first converted to the
tensor's dtype by the rule above (truncation toward zero, saturating),
as Relay converts them with ``make_const``.  ``a_min > a_max`` is
rejected.

``full(fill_value)`` takes the fill value as a scalar tensor argument (as
Relay); ``dtype`` defaults to the fill value's dtype.  ``zeros`` and
``ones`` default to float32.

``arange(start, stop, step)`` takes three scalar arguments, as Relay.  A
type relation sees only types, not values, so -- exactly as Relay does --
the values are duplicated in optional attributes ``start``/``stop``/
``step``: when all three are given the output shape is static,
``(max(0, ceil((stop - start) / step)),)``; otherwise it is ``(?,)`` and
only the interpreter knows the length.  The arguments must be scalars of
``dtype``; the reference checks at run time that they agree with the
attributes.  Element ``i`` is ``start + step * i`` computed in ``dtype``
(integers wrap).  Unlike Relay, an empty range is allowed (Relay rejects
it) -- a strict extension.
"""

from __future__ import annotations

import math
from typing import ClassVar, Sequence

from ..attrs import attrs_class
from ..registry import Solved
from ..types import IncompleteType, TypeVar
from .common import (ANY, Attrs, DType, PatternKind, RelationError, TensorType, Type,
                     as_array, defop, float_to_int, identity_rel, np, out_tensor_type,
                     tensor_arg, tensor_args)
from .shape_util import require_scalar
from .transform_broadcast import InitOpAttrs
from ..dtype import np_kind

FAMILY = "transform"
EW = PatternKind.ELEMWISE


def _is_hole(t: Type) -> bool:
    return isinstance(t, (IncompleteType, TypeVar))


# ===================================================================== cast

def cast_array(x: np.ndarray, dtype: DType | np.dtype) -> np.ndarray:
    """``x`` converted to ``dtype`` with the module's conversion rules."""
    target = dtype.np if isinstance(dtype, DType) else np.dtype(dtype)
    x = np.asarray(x)
    if target == np.bool_:
        return np.asarray(x != 0)
    to, src = DType.from_numpy(target), DType.from_numpy(x.dtype)
    if to.is_int and src.is_float:
        return float_to_int(x, target)
    if src.packed:      # ml_dtypes converts 4-bit integers to few types: widen first
        x, src = x.astype(np.int8 if src is DType.INT4 else np.uint8), DType.INT8
    if to.packed and src.is_int:    # wraps to 4 bits
        low = x.astype(np.int64) & 15
        return ((low ^ 8) - 8 if to is DType.INT4 else low).astype(target)
    with np.errstate(all="ignore"):
        if to.is_narrow_float and to is not DType.FLOAT16 and src is not DType.FLOAT32:
            # bfloat16 and float8 round from float32, as the C does: an
            # integer or a double converts to float32 first
            x = x.astype(np.float32)
        return x.astype(target)


@attrs_class
class CastAttrs(Attrs):
    type_key: ClassVar[str] = "CastAttrs"
    dtype: DType = DType.FLOAT32


def _cast_rel(args: Sequence[Type], attrs: CastAttrs) -> Type | None:
    t = tensor_arg(args, 0)
    if t is None:
        return None
    return TensorType(t.shape, attrs.dtype)


def _cast(args: Sequence[np.ndarray], attrs: CastAttrs, out: Type) -> np.ndarray:
    return as_array(cast_array(args[0], attrs.dtype), attrs.dtype)


defop("cast", arity=1, rel=_cast_rel, pattern=EW, compute=_cast,
      doc="convert to dtype (float->int truncates and saturates, NaN -> 0)", attrs=CastAttrs,
      family=FAMILY)


def _cast_like_rel(args: Sequence[Type], attrs: Attrs) -> Type | None:
    ts = tensor_args(args)
    if ts is None:
        return None
    return TensorType(ts[0].shape, ts[1].dtype)


def _cast_like(args: Sequence[np.ndarray], attrs: Attrs, out: Type) -> np.ndarray:
    dtype = out_tensor_type(out).dtype
    return as_array(cast_array(args[0], dtype), dtype)


defop("cast_like", arity=2, rel=_cast_like_rel, pattern=EW, compute=_cast_like,
      doc="convert the first tensor to the second tensor's dtype", family=FAMILY)


# ===================================================================== clip

@attrs_class
class ClipAttrs(Attrs):
    type_key: ClassVar[str] = "ClipAttrs"
    a_min: float = -math.inf
    a_max: float = math.inf

    def __post_init__(self) -> None:
        if math.isnan(self.a_min) or math.isnan(self.a_max):
            raise ValueError("clip bounds must not be NaN")
        if self.a_min > self.a_max:
            raise ValueError(f"clip needs a_min <= a_max, got a_min={self.a_min}, "
                             f"a_max={self.a_max}")


def _clip_rel(args: Sequence[Type], attrs: ClipAttrs) -> Type | None:
    t = tensor_arg(args, 0)
    if t is None:
        return None
    if t.dtype.is_bool:
        raise RelationError(f"cannot clip a bool tensor ({t})")
    return t


def _clip(args: Sequence[np.ndarray], attrs: ClipAttrs, out: Type) -> np.ndarray:
    (x,) = args
    lo = cast_array(np.array(attrs.a_min), x.dtype)
    hi = cast_array(np.array(attrs.a_max), x.dtype)
    with np.errstate(invalid="ignore"):
        return as_array(np.minimum(np.maximum(x, lo), hi), x.dtype)


defop("clip", arity=1, rel=_clip_rel, pattern=EW, compute=_clip,
      doc="element-wise min(max(x, a_min), a_max)", attrs=ClipAttrs, family=FAMILY)


# ============================================================ initialisers

def _init_shape(attrs: InitOpAttrs) -> tuple[int, ...]:
    if attrs.shape is None:
        raise RelationError("needs a `shape` attribute")
    return attrs.shape


def _full_rel(args: Sequence[Type], attrs: InitOpAttrs) -> Type | Solved | None:
    shape = _init_shape(attrs)
    if _is_hole(args[0]):
        if attrs.dtype is None:
            return None
        return Solved(TensorType(shape, attrs.dtype), (TensorType((), attrs.dtype),))
    fill = tensor_arg(args, 0, "fill value")
    assert fill is not None
    require_scalar(fill, "the fill value")
    return TensorType(shape, attrs.dtype or fill.dtype)


def _full(args: Sequence[np.ndarray], attrs: InitOpAttrs, out: Type) -> np.ndarray:
    dtype = out_tensor_type(out).dtype
    value = cast_array(np.asarray(args[0]), dtype)
    return np.full(_init_shape(attrs), value, dtype=dtype.np)


defop("full", arity=1, rel=_full_rel, pattern=EW, compute=_full,
      doc="a tensor of the shape attribute filled with a scalar argument", attrs=InitOpAttrs,
      family=FAMILY)


def _const_rel(args: Sequence[Type], attrs: InitOpAttrs) -> Type | None:
    return TensorType(_init_shape(attrs), attrs.dtype or DType.FLOAT32)


def _constant(value: int) -> object:
    def compute(args: Sequence[np.ndarray], attrs: InitOpAttrs, out: Type) -> np.ndarray:
        t = out_tensor_type(out)
        return np.full(_init_shape(attrs), value, dtype=t.dtype.np)
    return compute


defop("zeros", arity=0, rel=_const_rel, pattern=EW, compute=_constant(0),
      doc="a tensor of zeros (shape, dtype attributes)", attrs=InitOpAttrs, family=FAMILY)
defop("ones", arity=0, rel=_const_rel, pattern=EW, compute=_constant(1),
      doc="a tensor of ones (shape, dtype attributes)", attrs=InitOpAttrs, family=FAMILY)


def _full_like_rel(args: Sequence[Type], attrs: Attrs) -> Type | None:
    ts = tensor_args(args)
    if ts is None:
        return None
    require_scalar(ts[1], "the fill value")
    return ts[0]


def _full_like(args: Sequence[np.ndarray], attrs: Attrs, out: Type) -> np.ndarray:
    x, fill = args
    return np.full(x.shape, cast_array(np.asarray(fill), x.dtype), dtype=x.dtype)


defop("full_like", arity=2, rel=_full_like_rel, pattern=EW, compute=_full_like,
      doc="a tensor like the first argument filled with a scalar argument", family=FAMILY)


def _like(value: int) -> object:
    def compute(args: Sequence[np.ndarray], attrs: Attrs, out: Type) -> np.ndarray:
        return np.full(args[0].shape, value, dtype=args[0].dtype)
    return compute


defop("zeros_like", arity=1, rel=identity_rel, pattern=EW, compute=_like(0),
      doc="zeros of the argument's type", family=FAMILY)
defop("ones_like", arity=1, rel=identity_rel, pattern=EW, compute=_like(1),
      doc="ones of the argument's type", family=FAMILY)


# =================================================================== arange

@attrs_class
class ArangeAttrs(Attrs):
    type_key: ClassVar[str] = "ArangeAttrs"
    start: float | None = None
    stop: float | None = None
    step: float | None = None
    dtype: DType = DType.FLOAT32

    def __post_init__(self) -> None:
        if self.step == 0:
            raise ValueError("arange step must not be 0")
        if self.dtype.is_bool:
            raise ValueError("arange cannot produce bool")


def arange_length(start: float, stop: float, step: float) -> int:
    return max(0, math.ceil((stop - start) / step))


_ARANGE_ARGS = ("start", "stop", "step")


def _arange_rel(args: Sequence[Type], attrs: ArangeAttrs) -> Type | Solved | None:
    scalar = TensorType((), attrs.dtype)
    refined: list[Type | None] = []
    for i, name in enumerate(_ARANGE_ARGS):
        if _is_hole(args[i]):
            refined.append(scalar)
            continue
        t = tensor_arg(args, i, f"`{name}` argument")
        assert t is not None
        if t != scalar:
            raise RelationError(f"the `{name}` argument must be {scalar} (dtype={attrs.dtype}), "
                                f"got {t}")
        refined.append(None)
    if attrs.start is not None and attrs.stop is not None and attrs.step is not None:
        out = TensorType((arange_length(attrs.start, attrs.stop, attrs.step),), attrs.dtype)
    else:
        out = TensorType((ANY,), attrs.dtype)
    if any(r is not None for r in refined):
        return Solved(out, tuple(refined))
    return out


def _arange(args: Sequence[np.ndarray], attrs: ArangeAttrs, out: Type) -> np.ndarray:
    dtype = attrs.dtype.np
    start, stop, step = (np.asarray(a).astype(dtype) for a in args)
    for name, given, value in zip(_ARANGE_ARGS, (attrs.start, attrs.stop, attrs.step),
                                  (start, stop, step)):
        if given is not None and float(value) != float(cast_array(np.array(given), dtype)):
            raise ValueError(f"arange: the `{name}` argument {value} differs from the "
                             f"attribute {name}={given}")
    if float(step) == 0:
        raise ValueError("arange: step is 0")
    n = arange_length(float(start), float(stop), float(step))
    if np_kind(dtype) == "f":
        with np.errstate(all="ignore"):
            values = start + step * np.arange(n).astype(dtype)
    else:
        # exact in 64 bits, then wrapped to the dtype: the same as wrapping
        # arithmetic in the dtype itself
        wide = np.uint64 if np_kind(dtype) == "u" else np.int64
        with np.errstate(all="ignore"):
            values = (start.astype(wide) + step.astype(wide) * np.arange(n, dtype=wide))
    return as_array(values, dtype)


defop("arange", arity=3, rel=_arange_rel, pattern=PatternKind.OPAQUE, compute=_arange,
      doc="start + step * i for i < ceil((stop - start) / step) (scalar arguments)",
      attrs=ArangeAttrs, family=FAMILY)

__all__ = ["CastAttrs", "ClipAttrs", "ArangeAttrs", "cast_array", "float_to_int",
           "arange_length"]
