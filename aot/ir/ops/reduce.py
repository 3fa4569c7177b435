"""Operator family: reduce.

sum, mean, max, min, prod, all, any, logsumexp (ReduceAttrs); argmax,
argmin (ArgReduceAttrs, with ``select_last_index``); variance and std
(VarianceAttrs, with ``unbiased``).  Pattern: comm-reduce, as Relay.

Axes, as Relay's ``GetReduceAxes``: ``axis=None`` or ``axis=[]`` reduces
every dimension (``exclude`` then has no effect); otherwise each listed
axis may be negative, must be in range and listed once; ``exclude=True``
reduces the dimensions *not* listed (listing all of them reduces
nothing, giving the input unchanged).  ``keepdims=True`` keeps reduced
dimensions with extent 1.  A 0-d input reduces to itself.

Values (the NumPy reference defines them; the C backend must match):

* Integer ``sum``/``prod`` wrap at the dtype's width (two's complement),
  as a loop accumulating in the dtype would.  Integer ``mean`` is that
  wrapped sum divided by the element count, truncating toward zero (an
  empty reduction gives 0).  Bool tensors have no sum/prod/mean.
* Floating ``sum``/``prod``/``mean``/``variance``/``std``/``logsumexp``
  are computed in float64 and rounded once to the dtype (the C backend,
  accumulating in the dtype, agrees within the dtype's tolerance; Relay
  likewise accumulates float16 means in float32).  An empty ``mean`` is
  NaN.
* ``max``/``min`` propagate NaN; over an empty slice they give the
  identity (the dtype's lowest / highest value, -inf / +inf for floats).
* ``argmax``/``argmin`` return int32 indices (Relay's output dtype).  Over
  several axes the index is the row-major position within the reduced
  sub-block.  Ties give the first index, or the last with
  ``select_last_index=True``; NaN counts as the extreme value (NumPy's
  rule).  An empty slice gives 0.  The input must have rank >= 1.
* ``all``/``any`` treat nonzero as true and give the input's dtype (0 or
  1), as the logical operators of :mod:`elemwise` do.
* ``variance(data, mean)`` takes the mean as its second argument, exactly
  as Relay's ``variance`` op (Relay's ``std`` is a Python helper computing
  ``sqrt(variance(data, mean(data, keepdims=True)))``; our ``std`` op has
  variance's signature and is its square root).  ``mean`` has the rank of
  ``data`` and broadcasts to it.  The divisor is the element count, minus
  one when ``unbiased`` (so a single element gives inf/NaN).  Floats only.
* ``logsumexp`` is ``m + log(sum(exp(x - m)))`` with ``m`` the maximum
  (0 where the maximum is infinite), so it does not overflow.  Floats
  only.  Relay has it as a Python helper; it is registered here as a
  comm-reduce operator (a lowering needs two passes over the input).
"""

from __future__ import annotations

import math
from typing import Callable, ClassVar, Sequence

from ..attrs import attrs_class
from ..types import Dim
from .common import (Attrs, DType, PatternKind, RelationError, TensorType, Type, as_array,
                     defop, np, tensor_arg, tensor_args)
from .shape_util import fmt_shape, normalize_axes
from .transform_broadcast import wide_sum
from ..dtype import np_kind

FAMILY = "reduce"
REDUCE = PatternKind.COMM_REDUCE


# ==================================================================== attrs

@attrs_class
class ReduceAttrs(Attrs):
    type_key: ClassVar[str] = "ReduceAttrs"
    axis: tuple[int, ...] | None = None
    keepdims: bool = False
    exclude: bool = False


@attrs_class
class ArgReduceAttrs(Attrs):
    type_key: ClassVar[str] = "ArgReduceAttrs"
    axis: tuple[int, ...] | None = None
    keepdims: bool = False
    exclude: bool = False
    select_last_index: bool = False


@attrs_class
class VarianceAttrs(Attrs):
    type_key: ClassVar[str] = "VarianceAttrs"
    axis: tuple[int, ...] | None = None
    keepdims: bool = False
    exclude: bool = False
    unbiased: bool = False


AnyReduceAttrs = ReduceAttrs | ArgReduceAttrs | VarianceAttrs


def reduce_axes(ndim: int, attrs: AnyReduceAttrs) -> tuple[int, ...]:
    """The reduced dimensions, ascending."""
    if not attrs.axis:
        return tuple(range(ndim))
    listed = set(normalize_axes(attrs.axis, ndim))
    if attrs.exclude:
        return tuple(i for i in range(ndim) if i not in listed)
    return tuple(sorted(listed))


def reduce_shape(shape: Sequence[Dim], axes: Sequence[int], keepdims: bool) -> tuple[Dim, ...]:
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _count(x: np.ndarray, axes: Sequence[int]) -> int:
    return math.prod(x.shape[a] for a in axes)


# ================================================================ relations

def _reduce_rel_for(allow: Callable[[DType], bool], requirement: str,
                    out_dtype: DType | None = None, min_rank: int = 0):
    def rel(args: Sequence[Type], attrs: AnyReduceAttrs) -> Type | None:
        t = tensor_arg(args, 0)
        if t is None:
            return None
        if not allow(t.dtype):
            raise RelationError(f"{requirement}, got {t}")
        if t.ndim < min_rank:
            raise RelationError(f"needs a tensor of rank >= {min_rank}, got {t}")
        axes = reduce_axes(t.ndim, attrs)
        return TensorType(reduce_shape(t.shape, axes, attrs.keepdims), out_dtype or t.dtype)
    return rel


def _any_dtype(d: DType) -> bool:
    return True


def _numeric(d: DType) -> bool:
    return not d.is_bool


def _floating(d: DType) -> bool:
    return d.is_float


_numeric_rel = _reduce_rel_for(_numeric, "needs a numeric tensor (use `any`/`all` for bool)")
_any_rel = _reduce_rel_for(_any_dtype, "")
_float_rel = _reduce_rel_for(_floating, "needs a floating-point tensor")
_arg_rel = _reduce_rel_for(_any_dtype, "", DType.INT32, min_rank=1)


def _variance_rel(args: Sequence[Type], attrs: VarianceAttrs) -> Type | None:
    ts = tensor_args(args)
    if ts is None:
        return None
    data, mean = ts
    if not data.dtype.is_float:
        raise RelationError(f"needs a floating-point tensor, got {data}")
    if data.ndim == 0:
        raise RelationError("needs a tensor of rank >= 1, got a 0-d tensor")
    if mean.dtype != data.dtype:
        raise RelationError(f"the mean is {mean.dtype} but the data is {data.dtype}")
    if mean.ndim != data.ndim:
        raise RelationError(f"the mean {fmt_shape(mean.shape)} must have the rank of the data "
                            f"{fmt_shape(data.shape)} (compute it with keepdims=True)")
    for m, d in zip(mean.shape, data.shape):
        if isinstance(m, int) and isinstance(d, int) and m not in (1, d):
            raise RelationError(f"the mean {fmt_shape(mean.shape)} does not broadcast to the "
                                f"data {fmt_shape(data.shape)}")
    axes = reduce_axes(data.ndim, attrs)
    return TensorType(reduce_shape(data.shape, axes, attrs.keepdims), data.dtype)


# ================================================================== computes

def _reducer(fn: Callable[[np.ndarray, tuple[int, ...], bool], np.ndarray]):
    def compute(args: Sequence[np.ndarray], attrs: AnyReduceAttrs, out: Type) -> np.ndarray:
        x = args[0]
        axes = reduce_axes(x.ndim, attrs)
        assert isinstance(out, TensorType)
        with np.errstate(all="ignore"):
            return as_array(fn(x, axes, attrs.keepdims), out.dtype)
    return compute


def _sum(x: np.ndarray, axes: tuple[int, ...], keepdims: bool) -> np.ndarray:
    return wide_sum(x, axes, keepdims)


def _prod(x: np.ndarray, axes: tuple[int, ...], keepdims: bool) -> np.ndarray:
    if np_kind(x.dtype) == "f":
        return np.prod(x.astype(np.float64), axis=axes, keepdims=keepdims).astype(x.dtype)
    wide = np.uint64 if np_kind(x.dtype) == "u" else np.int64
    return np.asarray(np.prod(x, axis=axes, keepdims=keepdims, dtype=wide)).astype(x.dtype)


def trunc_div_count(total: np.ndarray, count: int) -> np.ndarray:
    """Integer ``total / count`` truncated toward zero (0 when count is 0)."""
    if count == 0:
        return np.zeros_like(total)
    if np_kind(total.dtype) == "u":
        # divide in uint64: count may not fit the element type (300 uint8s)
        return (total.astype(np.uint64) // np.uint64(count)).astype(total.dtype)
    wide = total.astype(np.int64)
    q = wide // count
    q = q + ((wide - q * count != 0) & (wide < 0))
    return q.astype(total.dtype)


def _mean(x: np.ndarray, axes: tuple[int, ...], keepdims: bool) -> np.ndarray:
    count = _count(x, axes)
    if np_kind(x.dtype) == "f":
        total = np.sum(x.astype(np.float64), axis=axes, keepdims=keepdims)
        return np.asarray(total / count if count else total * np.nan).astype(x.dtype)
    return trunc_div_count(np.asarray(wide_sum(x, axes, keepdims)), count)


def _identity_of(dtype: np.dtype, is_max: bool) -> object:
    if dtype == np.bool_:
        return not is_max
    if np_kind(dtype) == "f":
        lowest = DType.from_numpy(dtype).lowest
        return np.asarray(lowest if is_max else -lowest).astype(dtype)[()]
    d = DType.from_numpy(dtype)
    return np.asarray(d.min if is_max else d.max).astype(dtype)[()]


def _max(x: np.ndarray, axes: tuple[int, ...], keepdims: bool) -> np.ndarray:
    return np.max(x, axis=axes, keepdims=keepdims, initial=_identity_of(x.dtype, True))


def _min(x: np.ndarray, axes: tuple[int, ...], keepdims: bool) -> np.ndarray:
    return np.min(x, axis=axes, keepdims=keepdims, initial=_identity_of(x.dtype, False))


def _all(x: np.ndarray, axes: tuple[int, ...], keepdims: bool) -> np.ndarray:
    return np.all(x != 0, axis=axes, keepdims=keepdims)


def _any(x: np.ndarray, axes: tuple[int, ...], keepdims: bool) -> np.ndarray:
    return np.any(x != 0, axis=axes, keepdims=keepdims)


def _logsumexp(x: np.ndarray, axes: tuple[int, ...], keepdims: bool) -> np.ndarray:
    w = x.astype(np.float64)
    m = np.max(w, axis=axes, keepdims=True, initial=-np.inf)
    shift = np.where(np.isfinite(m), m, 0.0)
    r = np.log(np.sum(np.exp(w - shift), axis=axes, keepdims=True)) + shift
    if not keepdims:
        r = r.reshape(reduce_shape(x.shape, axes, False))
    return r


for _name, _fn, _rel, _doc in [
        ("sum", _sum, _numeric_rel, "sum over axes (integers wrap)"),
        ("prod", _prod, _numeric_rel, "product over axes (integers wrap)"),
        ("mean", _mean, _numeric_rel, "arithmetic mean over axes (integers truncate)"),
        ("max", _max, _any_rel, "maximum over axes (NaN propagates)"),
        ("min", _min, _any_rel, "minimum over axes (NaN propagates)"),
        ("all", _all, _any_rel, "logical and over axes (nonzero is true)"),
        ("any", _any, _any_rel, "logical or over axes (nonzero is true)"),
        ("logsumexp", _logsumexp, _float_rel, "log(sum(exp(x))) over axes, computed stably")]:
    defop(_name, arity=1, rel=_rel, pattern=REDUCE, compute=_reducer(_fn), doc=_doc,
          attrs=ReduceAttrs, family=FAMILY)


# ================================================================= arg-reduce

def arg_reduce(x: np.ndarray, axes: tuple[int, ...], keepdims: bool, last: bool,
               fn: Callable[..., np.ndarray]) -> np.ndarray:
    """Index of the extreme (``fn`` = np.argmax / np.argmin) within the
    row-major flattening of the reduced dimensions."""
    kept = [i for i in range(x.ndim) if i not in axes]
    moved = np.transpose(x, kept + list(axes))
    outer = moved.shape[:len(kept)]
    r = _count(x, axes)
    flat = moved.reshape(outer + (r,))
    if r == 0:
        idx = np.zeros(outer, dtype=np.int64)
    elif last:
        idx = r - 1 - fn(flat[..., ::-1], axis=-1)
    else:
        idx = fn(flat, axis=-1)
    return np.asarray(idx).reshape(reduce_shape(x.shape, axes, keepdims))


def _arg_compute(fn: Callable[..., np.ndarray]):
    def compute(args: Sequence[np.ndarray], attrs: ArgReduceAttrs, out: Type) -> np.ndarray:
        x = args[0]
        axes = reduce_axes(x.ndim, attrs)
        idx = arg_reduce(x, axes, attrs.keepdims, attrs.select_last_index, fn)
        return as_array(idx, DType.INT32)
    return compute


defop("argmax", arity=1, rel=_arg_rel, pattern=REDUCE, compute=_arg_compute(np.argmax),
      doc="int32 index of the maximum over axes (first, or last with select_last_index)",
      attrs=ArgReduceAttrs, family=FAMILY)
defop("argmin", arity=1, rel=_arg_rel, pattern=REDUCE, compute=_arg_compute(np.argmin),
      doc="int32 index of the minimum over axes (first, or last with select_last_index)",
      attrs=ArgReduceAttrs, family=FAMILY)


# =================================================================== variance

def variance(x: np.ndarray, mean: np.ndarray, axes: tuple[int, ...], keepdims: bool,
             unbiased: bool) -> np.ndarray:
    """Float64 variance of ``x`` about ``mean`` over ``axes``."""
    d = x.astype(np.float64) - mean.astype(np.float64)
    total = np.sum(d * d, axis=axes, keepdims=keepdims)
    divisor = _count(x, axes) - (1 if unbiased else 0)
    with np.errstate(all="ignore"):
        return np.asarray(total) / np.float64(divisor)


def _variance_compute(take_sqrt: bool):
    def compute(args: Sequence[np.ndarray], attrs: VarianceAttrs, out: Type) -> np.ndarray:
        x, mean = args
        axes = reduce_axes(x.ndim, attrs)
        v = variance(x, mean, axes, attrs.keepdims, attrs.unbiased)
        with np.errstate(all="ignore"):
            return as_array(np.sqrt(v) if take_sqrt else v, x.dtype)
    return compute


defop("variance", arity=2, rel=_variance_rel, pattern=REDUCE, compute=_variance_compute(False),
      doc="variance of data about a given mean over axes (unbiased divides by n - 1)",
      attrs=VarianceAttrs, family=FAMILY)
defop("std", arity=2, rel=_variance_rel, pattern=REDUCE, compute=_variance_compute(True),
      doc="standard deviation: sqrt(variance(data, mean))", attrs=VarianceAttrs, family=FAMILY)

__all__ = ["ReduceAttrs", "ArgReduceAttrs", "VarianceAttrs", "reduce_axes", "reduce_shape",
           "arg_reduce", "variance", "trunc_div_count"]
