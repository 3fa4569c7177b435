"""Operator family: nn — activations, dense layers, normalisation, padding.

Convolutions live in :mod:`aot.ir.ops.nn_conv`, pooling in
:mod:`aot.ir.ops.nn_pool`, ``nn.upsampling`` next to ``image.resize2d`` in
:mod:`aot.ir.ops.image` (it is a resize).

Semantics (Relay's, with the choices Relay leaves open written down):

* ``nn.relu``/``nn.leaky_relu``/``nn.prelu``: ``x > 0 ? x : alpha * x``.  On
  integer tensors leaky_relu's ``alpha`` is first converted to the tensor's
  dtype (truncation toward zero), as TOPI does; the product wraps.
* ``nn.softmax``/``nn.log_softmax``/``nn.batch_norm``/``nn.layer_norm``
  accept floating-point tensors only; the reference computes in float64
  (max-subtracted softmax, population variance) and rounds once to the
  tensor's dtype.
* ``nn.dense``/``nn.matmul``/``nn.batch_matmul``: operands are two floats or
  two integers of any width and signedness (``uint8 x int8`` with
  ``out_dtype=int32``).  Integer products accumulate exactly (int64) and the
  result wraps to ``out_dtype``, which is what wrapping accumulation in
  ``out_dtype`` gives; floats accumulate in float64 and round once.
  ``out_dtype`` defaults to the first operand's dtype.
* ``nn.batch_norm`` is the inference form: it normalises with the given
  moving statistics and returns ``(out, moving_mean, moving_var)``.  It is
  defined as the per-channel affine map ``x * scale + shift`` with
  ``scale = gamma / sqrt(var + eps)`` and ``shift = beta - mean * scale``
  (computed in float64), the form SimplifyInference rewrites it to; it
  differs from ``(x - mean) / sqrt(var + eps) * gamma + beta`` only in
  rounding and where ``var + eps == 0``.
* ``nn.dropout`` is the identity at inference; it returns ``(out, mask)``
  with a mask of ones, as Relay types it.
* ``nn.pad`` takes the pad value as its second argument, a scalar of any
  dtype converted to the data's dtype.  Pad widths are non-negative;
  ``reflect`` mirrors without repeating the edge (NumPy's ``reflect``) and
  needs each width smaller than its dimension.

Pattern kinds follow Relay v0.18: relu/leaky_relu elemwise, prelu and
bias_add broadcast, batch_flatten and pad injective, softmax, log_softmax,
dense, matmul, batch_matmul and batch_norm out-elemwise-fusable,
layer_norm and dropout opaque.
"""

from __future__ import annotations

import enum
from typing import Any, ClassVar, Sequence

from ..attrs import attrs_class
from ..registry import RelResult, Solved
from ..types import Dim, Type
from .common import (ANY, Attrs, DType, PatternKind, RelationError, TensorType,
                     TupleType, as_array, defop, fmt_shape, identity_rel, np, out_tensor_type,
                     tensor_arg)
from .nn_util import (NNAttrs, accumulator, cast_result, check_out_dtype, check_product_dtypes,
                      compatible, mul_dim, require_float)
from .shape_util import normalize_axis
from ..dtype import np_kind

FAMILY = "nn"
EW = PatternKind.ELEMWISE
BC = PatternKind.BROADCAST
INJ = PatternKind.INJECTIVE
FUSABLE = PatternKind.OUT_ELEMWISE_FUSABLE
OPAQUE = PatternKind.OPAQUE


# ------------------------------------------------------------ activations

def _relu(args: Sequence[np.ndarray], attrs: Attrs, out: Type) -> np.ndarray:
    (x,) = args
    return as_array(np.maximum(x, x.dtype.type(0)), x.dtype)


defop("nn.relu", arity=1, rel=identity_rel, pattern=EW, compute=_relu,
      doc="max(x, 0), element-wise", family=FAMILY)


@attrs_class
class LeakyReluAttrs(Attrs):
    """``alpha`` defaults to 0.25 in Relay's C++ attrs (the text format) and
    to 0.01 in its Python API (the builder)."""

    type_key: ClassVar[str] = "LeakyReluAttrs"
    alpha: float = 0.25


def _leaky_relu(args: Sequence[np.ndarray], attrs: LeakyReluAttrs, out: Type) -> np.ndarray:
    (x,) = args
    if np_kind(x.dtype) in "iu":
        alpha = np.asarray(np.trunc(attrs.alpha)).astype(x.dtype)
    else:
        alpha = x.dtype.type(attrs.alpha)
    with np.errstate(all="ignore"):
        return as_array(np.where(x > 0, x, x * alpha), x.dtype)


defop("nn.leaky_relu", arity=1, rel=identity_rel, pattern=EW, compute=_leaky_relu,
      doc="x > 0 ? x : alpha * x", attrs=LeakyReluAttrs, family=FAMILY,
      api_defaults=LeakyReluAttrs(alpha=0.01))


@attrs_class
class PReluAttrs(Attrs):
    type_key: ClassVar[str] = "PReluAttrs"
    axis: int = 1


def channel_vector(data: TensorType, given: Type, axis: int, what: str) -> TensorType | None:
    """The ``(data.shape[axis],)`` vector type expected for a per-channel
    argument; None when ``given`` already is (or is compatible with) it, the
    expected type when ``given`` is a hole; an error otherwise."""
    want = TensorType((data.shape[axis],), data.dtype)
    t = tensor_arg([given], 0, what)
    if t is None:
        return want
    if t.ndim != 1 or not compatible(t.shape[0], data.shape[axis]):
        raise RelationError(f"{what} must have shape {fmt_shape(want.shape)} (the data's axis "
                            f"{axis} of {fmt_shape(data.shape)}), got {fmt_shape(t.shape)}")
    if t.dtype != data.dtype:
        raise RelationError(f"{what} has dtype {t.dtype} but the data is {data.dtype}")
    return None


def _channel_op_rel(args: Sequence[Type], axis: int, what: str) -> RelResult:
    """Relation of ``op(data, vector)`` with one vector entry per index of
    the data's ``axis`` (prelu's alpha, bias_add's bias): the data's type;
    a vector that is still a hole receives its type."""
    data = tensor_arg(args, 0, "data")
    if data is None:
        return None
    axis = normalize_axis(axis, data.ndim)
    vector = channel_vector(data, args[1], axis, what)
    return Solved(data, (None, vector)) if vector is not None else data


def channel_shape(ndim: int, axis: int, size: int) -> list[int]:
    """The shape that broadcasts a ``(size,)`` vector along ``axis`` of a
    rank-``ndim`` tensor."""
    shape = [1] * ndim
    shape[axis] = size
    return shape


def _prelu_rel(args: Sequence[Type], attrs: PReluAttrs) -> RelResult:
    return _channel_op_rel(args, attrs.axis, "alpha")


def _prelu(args: Sequence[np.ndarray], attrs: PReluAttrs, out: Type) -> np.ndarray:
    x, alpha = args
    axis = attrs.axis % x.ndim
    shape = channel_shape(x.ndim, axis, x.shape[axis])
    with np.errstate(all="ignore"):
        return as_array(np.where(x > 0, x, x * alpha.reshape(shape)), x.dtype)


defop("nn.prelu", arity=2, rel=_prelu_rel, pattern=BC, compute=_prelu,
      doc="x > 0 ? x : alpha[c] * x (alpha per channel)", attrs=PReluAttrs, family=FAMILY)


@attrs_class
class SoftmaxAttrs(Attrs):
    type_key: ClassVar[str] = "SoftmaxAttrs"
    axis: int = -1


def _softmax_rel(args: Sequence[Type], attrs: SoftmaxAttrs) -> RelResult:
    data = tensor_arg(args, 0, "data")
    if data is None:
        return None
    require_float(data)
    normalize_axis(attrs.axis, data.ndim)
    return data


def _softmax(args: Sequence[np.ndarray], attrs: SoftmaxAttrs, out: Type) -> np.ndarray:
    x = args[0].astype(np.float64)
    with np.errstate(all="ignore"):
        e = np.exp(x - np.max(x, axis=attrs.axis, keepdims=True))
        return as_array(e / np.sum(e, axis=attrs.axis, keepdims=True), args[0].dtype)


def _log_softmax(args: Sequence[np.ndarray], attrs: SoftmaxAttrs, out: Type) -> np.ndarray:
    x = args[0].astype(np.float64)
    with np.errstate(all="ignore"):
        shifted = x - np.max(x, axis=attrs.axis, keepdims=True)
        lse = np.log(np.sum(np.exp(shifted), axis=attrs.axis, keepdims=True))
        return as_array(shifted - lse, args[0].dtype)


defop("nn.softmax", arity=1, rel=_softmax_rel, pattern=FUSABLE, compute=_softmax,
      doc="exp(x) / sum(exp(x)) along axis", attrs=SoftmaxAttrs, family=FAMILY)
defop("nn.log_softmax", arity=1, rel=_softmax_rel, pattern=FUSABLE, compute=_log_softmax,
      doc="x - log(sum(exp(x))) along axis", attrs=SoftmaxAttrs, family=FAMILY)


# -------------------------------------------------------- dense / matmul

@attrs_class
class DenseAttrs(NNAttrs):
    type_key: ClassVar[str] = "DenseAttrs"
    units: int | None = None
    out_dtype: DType | None = None

    def __post_init__(self) -> None:
        if self.units is not None and self.units < 1:
            raise ValueError(f"units must be >= 1, got {self.units}")


@attrs_class
class MatmulAttrs(NNAttrs):
    type_key: ClassVar[str] = "MatmulAttrs"
    units: int | None = None
    out_dtype: DType | None = None
    transpose_a: bool = False
    transpose_b: bool = False

    def __post_init__(self) -> None:
        if self.units is not None and self.units < 1:
            raise ValueError(f"units must be >= 1, got {self.units}")


def _matmul_rel_impl(args: Sequence[Type], units: int | None, out_dtype: DType | None,
                     transpose_a: bool, transpose_b: bool) -> RelResult:
    """Relay's MatmulRel: ``a`` is N-d (its last axis, or second-to-last
    when transposed, is reduced), ``b`` is 2-d; ``units`` fixes ``b``."""
    a = tensor_arg(args, 0, "data")
    if a is None:
        return None
    if a.ndim == 0 or (transpose_a and a.ndim < 2):
        raise RelationError(f"data must have rank >= {2 if transpose_a else 1}, got {a}")
    reduce = a.shape[-2] if transpose_a else a.shape[-1]
    oshape = list(a.shape)
    if transpose_a:
        oshape[-2] = a.shape[-1]
    b = tensor_arg(args, 1, "weight")
    refined_b: TensorType | None = None
    if units is not None:
        wshape = (units, reduce) if transpose_b else (reduce, units)
        if b is None:
            refined_b = TensorType(wshape, a.dtype)
        elif b.ndim != 2 or not all(compatible(x, y) for x, y in zip(b.shape, wshape)):
            raise RelationError(f"weight must have shape {fmt_shape(wshape)} (units={units}, "
                                f"data {fmt_shape(a.shape)}), got {fmt_shape(b.shape)}")
        oshape[-1] = units
    else:
        if b is None:
            return None
        if b.ndim != 2:
            raise RelationError(f"weight must have rank 2, got {b}")
        b_reduce = b.shape[1] if transpose_b else b.shape[0]
        if not compatible(reduce, b_reduce):
            raise RelationError(f"the reduced dimension of data {fmt_shape(a.shape)} is {reduce} "
                                f"but the weight {fmt_shape(b.shape)} has {b_reduce}")
        oshape[-1] = b.shape[0] if transpose_b else b.shape[1]
    b_dtype = b.dtype if b is not None else a.dtype
    check_product_dtypes(a.dtype, b_dtype, "data", "weight")
    dtype = out_dtype or a.dtype
    check_out_dtype(dtype, a.dtype)
    out = TensorType(tuple(oshape), dtype)
    return Solved(out, (None, refined_b)) if refined_b is not None else out


def _dense_rel(args: Sequence[Type], attrs: DenseAttrs) -> RelResult:
    return _matmul_rel_impl(args, attrs.units, attrs.out_dtype, False, True)


def _matmul_rel(args: Sequence[Type], attrs: MatmulAttrs) -> RelResult:
    return _matmul_rel_impl(args, attrs.units, attrs.out_dtype, attrs.transpose_a,
                            attrs.transpose_b)


def _matmul_compute(a: np.ndarray, b: np.ndarray, out: Type) -> np.ndarray:
    t = out_tensor_type(out)
    acc = accumulator(t.dtype)
    return cast_result(np.matmul(a.astype(acc), b.astype(acc)), t.dtype)


def _dense(args: Sequence[np.ndarray], attrs: DenseAttrs, out: Type) -> np.ndarray:
    a, b = args
    return _matmul_compute(a, b.T, out)


def _matmul(args: Sequence[np.ndarray], attrs: MatmulAttrs, out: Type) -> np.ndarray:
    a, b = args
    if attrs.transpose_a:
        a = np.swapaxes(a, -1, -2)
    if attrs.transpose_b:
        b = b.T
    return _matmul_compute(a, b, out)


defop("nn.dense", arity=2, rel=_dense_rel, pattern=FUSABLE, compute=_dense,
      doc="data @ weight.T (weight is (units, in))", attrs=DenseAttrs, family=FAMILY,
      contraction=True)
defop("nn.matmul", arity=2, rel=_matmul_rel, pattern=FUSABLE, compute=_matmul,
      doc="a @ b, either operand transposed", attrs=MatmulAttrs, family=FAMILY, contraction=True)


@attrs_class
class BatchMatmulAttrs(NNAttrs):
    """Relay's C++ defaults: neither operand transposed (the Python API's
    ``relay.nn.batch_matmul`` defaults to ``transpose_b=True``: the
    builder's default)."""

    type_key: ClassVar[str] = "BatchMatmulAttrs"
    out_dtype: DType | None = None
    transpose_a: bool = False
    transpose_b: bool = False


def _batch_matmul_rel(args: Sequence[Type], attrs: BatchMatmulAttrs) -> RelResult:
    x = tensor_arg(args, 0, "first argument")
    y = tensor_arg(args, 1, "second argument")
    if x is None or y is None:
        return None
    if x.ndim != 3 or y.ndim != 3:
        raise RelationError(f"needs two rank-3 tensors, got {x} and {y}")
    xb, xi, xk = x.shape[0], *((x.shape[2], x.shape[1]) if attrs.transpose_a else x.shape[1:])
    yb, yk, yj = y.shape[0], *((y.shape[2], y.shape[1]) if attrs.transpose_b else y.shape[1:])
    if not (compatible(xb, yb) or xb == 1 or yb == 1):
        raise RelationError(f"batch dimensions {xb} and {yb} do not match "
                            f"({fmt_shape(x.shape)} vs {fmt_shape(y.shape)})")
    if not compatible(xk, yk):
        raise RelationError(f"reduced dimensions {xk} and {yk} do not match "
                            f"({fmt_shape(x.shape)} vs {fmt_shape(y.shape)}, "
                            f"transpose_a={attrs.transpose_a}, transpose_b={attrs.transpose_b})")
    check_product_dtypes(x.dtype, y.dtype, "the first argument", "the second")
    if xb is ANY or yb is ANY:
        batch = ANY
    else:
        batch = max(xb, yb)  # type: ignore[type-var]
    dtype = attrs.out_dtype or x.dtype
    check_out_dtype(dtype, x.dtype)
    return TensorType((batch, xi, yj), dtype)


def _batch_matmul(args: Sequence[np.ndarray], attrs: BatchMatmulAttrs, out: Type) -> np.ndarray:
    x, y = args
    if attrs.transpose_a:
        x = np.swapaxes(x, 1, 2)
    if attrs.transpose_b:
        y = np.swapaxes(y, 1, 2)
    return _matmul_compute(x, y, out)


defop("nn.batch_matmul", arity=2, rel=_batch_matmul_rel, pattern=FUSABLE, compute=_batch_matmul,
      doc="batched x @ y, either operand transposed (the builder: y.T by default), "
          "batch 1 broadcasts",
      attrs=BatchMatmulAttrs, family=FAMILY, contraction=True,
      api_defaults=BatchMatmulAttrs(transpose_b=True))


# ------------------------------------------------------------- bias_add

@attrs_class
class BiasAddAttrs(Attrs):
    type_key: ClassVar[str] = "BiasAddAttrs"
    axis: int = 1


def _bias_add_rel(args: Sequence[Type], attrs: BiasAddAttrs) -> RelResult:
    return _channel_op_rel(args, attrs.axis, "bias")


def _bias_add(args: Sequence[np.ndarray], attrs: BiasAddAttrs, out: Type) -> np.ndarray:
    x, b = args
    axis = attrs.axis % x.ndim
    shape = channel_shape(x.ndim, axis, x.shape[axis])
    with np.errstate(all="ignore"):
        return as_array(x + b.reshape(shape), x.dtype)


defop("nn.bias_add", arity=2, rel=_bias_add_rel, pattern=BC, compute=_bias_add,
      doc="data + bias along axis", attrs=BiasAddAttrs, family=FAMILY)


# --------------------------------------------------------- normalisation

@attrs_class
class BatchNormAttrs(Attrs):
    type_key: ClassVar[str] = "BatchNormAttrs"
    axis: int = 1
    epsilon: float = 1e-5
    center: bool = True
    scale: bool = True


_BN_ARGS = ("gamma", "beta", "moving_mean", "moving_var")


def _batch_norm_rel(args: Sequence[Type], attrs: BatchNormAttrs) -> RelResult:
    data = tensor_arg(args, 0, "data")
    if data is None:
        return None
    require_float(data)
    axis = normalize_axis(attrs.axis, data.ndim)
    refined = tuple(channel_vector(data, args[i + 1], axis, name)
                    for i, name in enumerate(_BN_ARGS))
    vec = TensorType((data.shape[axis],), data.dtype)
    out = TupleType((data, vec, vec))
    if any(r is not None for r in refined):
        return Solved(out, (None, *refined))
    return out


def scale_center(y: np.ndarray, gamma: np.ndarray, beta: np.ndarray, shape: list[int],
                  attrs: Any) -> np.ndarray:
    """The float64 ``y * gamma + beta`` that ends the normalisations
    (``attrs`` has their ``scale`` and ``center``: ``gamma`` only with
    ``scale``, ``beta`` only with ``center``), the per-channel vectors
    reshaped to ``shape``."""
    if attrs.scale:
        y = y * gamma.astype(np.float64).reshape(shape)
    if attrs.center:
        y = y + beta.astype(np.float64).reshape(shape)
    return y


def _batch_norm(args: Sequence[np.ndarray], attrs: BatchNormAttrs, out: Type) -> tuple:
    x, gamma, beta, mean, var = args
    axis = attrs.axis % x.ndim
    shape = channel_shape(x.ndim, axis, x.shape[axis])
    # inference batch norm is the per-channel affine map x * scale + shift
    # (exactly what SimplifyInference rewrites it to, so the rewrite keeps
    # the meaning even where var + eps == 0 makes the scale infinite)
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = 1.0 / np.sqrt(var.astype(np.float64) + attrs.epsilon)
        if attrs.scale:
            scale = scale * gamma.astype(np.float64)
        shift = -mean.astype(np.float64) * scale
        if attrs.center:
            shift = shift + beta.astype(np.float64)
        y = x.astype(np.float64) * scale.reshape(shape) + shift.reshape(shape)
    return (as_array(y, x.dtype), mean.copy(), var.copy())


defop("nn.batch_norm", arity=5, rel=_batch_norm_rel, pattern=FUSABLE, compute=_batch_norm,
      doc="x * scale + shift, scale = gamma / sqrt(var + eps), shift = beta - mean * scale; "
          "returns (out, mean, var)", attrs=BatchNormAttrs, family=FAMILY)


@attrs_class
class LayerNormAttrs(Attrs):
    type_key: ClassVar[str] = "LayerNormAttrs"
    axis: int = -1
    epsilon: float = 1e-5
    center: bool = True
    scale: bool = True


def _layer_norm_rel(args: Sequence[Type], attrs: LayerNormAttrs) -> RelResult:
    data = tensor_arg(args, 0, "data")
    if data is None:
        return None
    require_float(data)
    axis = normalize_axis(attrs.axis, data.ndim)
    refined = (channel_vector(data, args[1], axis, "gamma"),
               channel_vector(data, args[2], axis, "beta"))
    if any(r is not None for r in refined):
        return Solved(data, (None, *refined))
    return data


def _layer_norm(args: Sequence[np.ndarray], attrs: LayerNormAttrs, out: Type) -> np.ndarray:
    x, gamma, beta = args
    axis = attrs.axis % x.ndim
    shape = channel_shape(x.ndim, axis, x.shape[axis])
    xf = x.astype(np.float64)
    mean = np.mean(xf, axis=axis, keepdims=True)
    var = np.mean((xf - mean) ** 2, axis=axis, keepdims=True)
    y = (xf - mean) / np.sqrt(var + attrs.epsilon)
    y = scale_center(y, gamma, beta, shape, attrs)
    return as_array(y, x.dtype)


defop("nn.layer_norm", arity=3, rel=_layer_norm_rel, pattern=OPAQUE, compute=_layer_norm,
      doc="normalise along axis (population variance), then * gamma + beta", attrs=LayerNormAttrs,
      family=FAMILY)


@attrs_class
class DropoutAttrs(Attrs):
    type_key: ClassVar[str] = "DropoutAttrs"
    rate: float = 0.5

    def __post_init__(self) -> None:
        if not 0.0 <= self.rate < 1.0:
            raise ValueError(f"rate must be in [0, 1), got {self.rate}")


def _dropout_rel(args: Sequence[Type], attrs: DropoutAttrs) -> RelResult:
    data = tensor_arg(args, 0, "data")
    if data is None:
        return None
    return TupleType((data, data))


def _dropout(args: Sequence[np.ndarray], attrs: DropoutAttrs, out: Type) -> tuple:
    (x,) = args
    return (x.copy(), np.ones_like(x))


defop("nn.dropout", arity=1, rel=_dropout_rel, pattern=OPAQUE, compute=_dropout,
      doc="identity at inference; returns (data, mask of ones)", attrs=DropoutAttrs, family=FAMILY)


# ------------------------------------------------------------ reshaping

def _batch_flatten_rel(args: Sequence[Type], attrs: Attrs) -> RelResult:
    data = tensor_arg(args, 0, "data")
    if data is None:
        return None
    if data.ndim == 0:
        raise RelationError(f"needs a tensor of rank >= 1, got {data}")
    flat: Dim = 1
    for d in data.shape[1:]:
        flat = mul_dim(flat, d)
    return TensorType((data.shape[0], flat), data.dtype)


def _batch_flatten(args: Sequence[np.ndarray], attrs: Attrs, out: Type) -> np.ndarray:
    (x,) = args
    return x.reshape(x.shape[0], -1).copy()


defop("nn.batch_flatten", arity=1, rel=_batch_flatten_rel, pattern=INJ, compute=_batch_flatten,
      doc="reshape (d0, d1, ..., dk) to (d0, d1*...*dk)", attrs=Attrs, family=FAMILY)


# ------------------------------------------------------------------ pad

class PadMode(enum.Enum):
    CONSTANT = "constant"
    EDGE = "edge"
    REFLECT = "reflect"


@attrs_class
class PadAttrs(Attrs):
    type_key: ClassVar[str] = "PadAttrs"
    pad_width: tuple[tuple[int, ...], ...] = ()
    pad_mode: PadMode = PadMode.CONSTANT

    def __post_init__(self) -> None:
        for i, pair in enumerate(self.pad_width):
            if len(pair) != 2:
                raise ValueError(f"pad_width[{i}] must be a pair [before, after], got {list(pair)}")
            if pair[0] < 0 or pair[1] < 0:
                raise ValueError(f"pad_width[{i}] must be non-negative, got {list(pair)}")


def _pad_rel(args: Sequence[Type], attrs: PadAttrs) -> RelResult:
    data = tensor_arg(args, 0, "data")
    if data is None:
        return None
    if len(attrs.pad_width) != data.ndim:
        raise RelationError(f"pad_width has {len(attrs.pad_width)} pairs but the data has rank "
                            f"{data.ndim} ({data})")
    value = tensor_arg(args, 1, "pad value")
    refined_value: TensorType | None = None
    if value is None:
        refined_value = TensorType((), data.dtype)
    elif value.ndim != 0:
        raise RelationError(f"the pad value must be a scalar, got {value}")
    oshape = []
    for axis, (d, (before, after)) in enumerate(zip(data.shape, attrs.pad_width)):
        if attrs.pad_mode is PadMode.REFLECT and d is not ANY and (before >= d or after >= d):
            raise RelationError(f"reflect padding of axis {axis} by {[before, after]} needs "
                                f"widths smaller than the dimension {d}")
        if attrs.pad_mode is PadMode.EDGE and d == 0 and (before or after):
            raise RelationError(f"edge padding of the empty axis {axis} is undefined")
        oshape.append(ANY if d is ANY else d + before + after)
    out = TensorType(tuple(oshape), data.dtype)
    return Solved(out, (None, refined_value)) if refined_value is not None else out


def _scalar_as(value: np.ndarray, dtype: np.dtype) -> object:
    v = np.asarray(value)
    if dtype.kind in "iu" and np_kind(v.dtype) == "f":
        return cast_result(v.astype(np.float64), DType.from_numpy(dtype))
    return v.astype(dtype)


def _pad(args: Sequence[np.ndarray], attrs: PadAttrs, out: Type) -> np.ndarray:
    x, value = args
    widths = [tuple(p) for p in attrs.pad_width]
    if attrs.pad_mode is PadMode.CONSTANT:
        return np.pad(x, widths, mode="constant", constant_values=_scalar_as(value, x.dtype))
    return np.pad(x, widths, mode=attrs.pad_mode.value)


defop("nn.pad", arity=2, rel=_pad_rel, pattern=INJ, compute=_pad,
      doc="pad with a constant (second argument), the edge value or a reflection", attrs=PadAttrs,
      family=FAMILY)


__all__ = ["LeakyReluAttrs", "PReluAttrs", "SoftmaxAttrs", "DenseAttrs", "MatmulAttrs",
           "BatchMatmulAttrs", "BiasAddAttrs", "BatchNormAttrs", "LayerNormAttrs",
           "DropoutAttrs", "PadAttrs", "PadMode"]
