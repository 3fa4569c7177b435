"""Operator family: qnn -- Relay's quantized dialect, with TFLite's integer
semantics.

A quantized tensor ``q`` with scale ``s`` (float32 > 0) and zero point ``z``
(int32) stands for the reals ``s * (q - z)``.  Scales and zero points are
tensor arguments, as in Relay: scalars (per-tensor) or 1-D tensors with one
value per index of the ``axis`` attribute (per-channel); see
:mod:`aot.ir.ops.qnn_common` for the argument rules.  They are compile-time
constants in practice; the references read them as values.

Integer arithmetic is exact and defined for every input; the fixed-point
helpers and their rounding are specified in :mod:`aot.ir.quant`.  In short,
a real rescaling factor ``M`` (computed in double from the float32 scales,
exactly as the TFLite kernel computes it) becomes ``(multiplier, shift)``
by TFLite's ``QuantizeMultiplier`` (frexp, round half away from zero of the
Q0.31 mantissa, flush below 2**-31); it is then applied with either

* *double rounding* -- TFLite's reference ``MultiplyByQuantizedMultiplier``:
  gemmlowp's ``SaturatingRoundingDoublingHighMul`` (ties toward +infinity)
  followed by ``RoundingDivideByPOT`` (ties away from zero); or
* *single rounding* -- TVM's ``FixedPointMultiply``: one int64 product and
  one rounding shift, ``UPWARD`` (ties toward +infinity; identical to TFLite
  built with ``TFLITE_SINGLE_ROUNDING``) or ``TONEAREST`` (ties away from
  zero).

Common rules: intermediate int32 arithmetic wraps modulo 2**32 (TFLite
leaves overflow undefined; it only happens with zero points far outside the
8-bit range or absurd scales); the final result saturates (clamps) to the
output dtype's range; a scale that is not positive and finite, or a
rescaling factor of 2**30 or more, raises :class:`~aot.ir.quant.QuantizationError`.

Operators
---------
``qnn.quantize(data, output_scale, output_zero_point; axis, out_dtype)``
    TFLite's ``AffineQuantize`` = TVM's lowering: float32 ``data / scale``
    (IEEE division in float32), rounded half away from zero (C ``round``),
    plus the zero point, clamped to ``out_dtype``.  NaN gives the zero point
    (clamped), +-inf saturate.  ``out_dtype``: int8, uint8, int16, uint16,
    int32.
``qnn.dequantize(data, input_scale, input_zero_point; axis, out_dtype)``
    TVM's lowering: ``float32(int32(data) - zero_point) * scale`` in float32
    (the subtraction wraps in int32).  For inputs of at most 24 bits this is
    exactly TFLite's ``static_cast<float>(double(scale) * (q - z))``, since
    the double product of a float32 and a 24-bit integer is exact.  A float16
    result is the float32 value clamped to +-65504 and rounded to nearest
    even.
``qnn.requantize(data, input_scale, input_zero_point, output_scale,
output_zero_point; axis, rounding, compute_dtype, out_dtype)``
    ``M = double(input_scale) / double(output_scale)`` (per channel of
    ``axis`` when ``input_scale`` is a vector); ``data`` is truncated to int32
    (as TVM's cast), ``x = data - input_zero_point``, ``y = apply(x, M) +
    output_zero_point``, clamped to ``out_dtype`` (int8, uint8, int16, int32).
    ``rounding``: ``"TFLITE"`` is TFLite's reference ``Requantize`` (double
    rounding); ``"UPWARD"`` and ``"TONEAREST"`` are TVM's single rounding;
    ``"None"`` means Relay's default, ``"UPWARD"``; ``"TFLITE_INT64"`` is
    TFLite's 64-bit ``MultiplyByQuantizedMultiplier`` of its 16x8 kernels:
    ``data`` is *not* truncated, ``x = int64(data) - input_zero_point``,
    the multiplier is rounded to 15 bits and applied with one rounding
    (ties toward +infinity; :func:`aot.ir.quant.multiply_by_quantized_multiplier_int64`),
    the result wrapped to int32; factors must be below 2**7.  ``compute_dtype``
    ``"float32"``/``"float64"`` selects TVM's float lowering instead: in that
    precision ``t = (float(data) - float(izp)) * float(M) + float(ozp)``, then
    ``UPWARD`` is ``floor(t + 0.5)`` (the addition rounded in that precision,
    as TVM's ``Floor(t + 0.5)``) and ``TONEAREST`` is C ``round(t)``; the
    integer result saturates to int32, then to ``out_dtype``.  ``"None"`` and
    ``"int64"`` are the integer path; ``"TFLITE"`` needs it.
``qnn.add`` / ``qnn.subtract`` / ``qnn.mul`` ``(lhs, rhs, lhs_scale,
lhs_zero_point, rhs_scale, rhs_zero_point, output_scale, output_zero_point;
lhs_axis, rhs_axis)``
    TFLite's int8/uint8 reference ``ADD``, ``SUB`` and ``MUL`` kernels with NumPy
    broadcasting (TVM itself lowers ``qnn.add`` differently: requantize both
    inputs to the output parameters, then add; we follow TFLite).  ADD:
    ``left_shift = 20``; ``twice_max = 2 * max(ls, rs)``; input multipliers
    ``ls / twice_max`` and ``rs / twice_max`` and output multiplier
    ``twice_max / (2**20 * os)``, each by ``QuantizeMultiplierSmallerThanOneExp``
    (the output one must be below 1: ``max(ls, rs) < 2**19 * os``); per
    element ``a = (l - lzp) * 2**20``, ``b = (r - rzp) * 2**20``, each
    rescaled by ``RoundingDivideByPOT(SRDHM(., m), -shift)``, summed, the sum
    rescaled the same way, plus ``ozp``, clamped.  SUB is TFLite's
    reference ``SubElementwise``/``BroadcastSubSlow``: the same multipliers
    and the *difference* of the rescaled operands (not a sum with a negated
    multiplier, which would round ties differently).  int16 operands
    (TFLite's 16x8 ADD/SUB with general scales; TFLite requires zero points
    0, we do not) use ``left_shift = 15`` and need ``max(ls, rs) < 2**14 *
    os``; the rest is the same.  MUL: ``M = double(ls)
    * double(rs) / double(os)``; ``(l - lzp) * (r - rzp)`` rescaled by the
    double-rounding ``MultiplyByQuantizedMultiplier``, plus ``ozp``, clamped.
    Per-channel input scales (``lhs_axis``/``rhs_axis``, an extension; TFLite
    is per-tensor) give every element the multipliers of its own pair of
    scales.  Inputs: int8 or uint8 (add and subtract: also int16), same
    dtype; the output has it too.
``qnn.concatenate(data, input_scales, input_zero_points, output_scale,
output_zero_point; axis)``
    TVM's lowering: every input is requantized to the output parameters with
    the default rounding (``UPWARD``; an identity when its parameters equal
    the output's) and the results are concatenated.  Scales and zero points
    are tuples of scalars, one per input.
``fixed_point_multiply(x; multiplier, shift)``
    Relay's op: int32 ``x`` times ``multiplier * 2**(shift - 31)`` with TVM's
    single rounding ``UPWARD``, wrapped to int32.
``qnn.dense``, ``qnn.conv2d``
    the int32 (``out_dtype``) accumulator, zero points subtracted; in
    :mod:`aot.ir.ops.qnn_linear`.
``qnn.avg_pool2d``
    TFLite's int8 ``AveragePool``; in :mod:`aot.ir.ops.qnn_pool`.
``qnn.leaky_relu``
    TFLite's ``QuantizeLeakyRelu``; in :mod:`aot.ir.ops.qnn_activation`.
"""

from __future__ import annotations

import enum
from typing import ClassVar, Sequence

from ..attrs import attrs_class
from .. import quant
from ..quant import QuantizationError
from ..registry import Solved
from ..types import Dim, IncompleteType, Type, TypeVar
from .common import (ANY, Attrs, DType, PatternKind, RelationError, TensorType, TupleType,
                     as_array, broadcast_shapes, defop, np, ordinal, out_tensor_type, tensor_arg)
from .qnn_common import (SCALE, ZERO_POINT, Params, along_axis, map_unique, normalize_axis,
                         scales, with_params, zero_points)

FAMILY = "qnn"

_QUANTIZE_OUT = (DType.INT8, DType.UINT8, DType.INT16, DType.UINT16, DType.INT32)
_DEQUANTIZE_IN = (DType.INT8, DType.UINT8, DType.INT16, DType.UINT16, DType.INT32, DType.INT4,
                  DType.UINT4)
_REQUANTIZE_IN = (DType.INT8, DType.UINT8, DType.INT16, DType.INT32, DType.INT64)
_REQUANTIZE_OUT = (DType.INT8, DType.UINT8, DType.INT16, DType.INT32)
_BINARY_IN = (DType.INT8, DType.UINT8)
_ADD_IN = (DType.INT8, DType.UINT8, DType.INT16)
_CONCAT_IN = (DType.INT8, DType.UINT8, DType.INT16, DType.INT32)


def _names(dtypes: Sequence[DType]) -> str:
    return ", ".join(str(d) for d in dtypes)


def _check_dtype(value: DType, allowed: Sequence[DType], what: str) -> None:
    if value not in allowed:
        raise ValueError(f"{what} must be one of {_names(allowed)}, got {value}")


class Rounding(enum.Enum):
    NONE = "None"
    UPWARD = "UPWARD"
    TONEAREST = "TONEAREST"
    TFLITE = "TFLITE"
    TFLITE_INT64 = "TFLITE_INT64"


class ComputeDType(enum.Enum):
    NONE = "None"
    INT64 = "int64"
    FLOAT32 = "float32"
    FLOAT64 = "float64"


#: what ``rounding="None"`` means (Relay's ``RequantizeConfig`` default)
DEFAULT_ROUNDING = Rounding.UPWARD


# ------------------------------------------------------------------- attrs

@attrs_class
class QuantizeAttrs(Attrs):
    type_key: ClassVar[str] = "QuantizeAttrs"
    axis: int = -1
    out_dtype: DType = DType.INT8

    def __post_init__(self) -> None:
        _check_dtype(self.out_dtype, _QUANTIZE_OUT, "qnn.quantize out_dtype")


@attrs_class
class DequantizeAttrs(Attrs):
    type_key: ClassVar[str] = "DequantizeAttrs"
    axis: int = -1
    out_dtype: DType = DType.FLOAT32

    def __post_init__(self) -> None:
        _check_dtype(self.out_dtype, (DType.FLOAT16, DType.FLOAT32), "qnn.dequantize out_dtype")


@attrs_class
class RequantizeAttrs(Attrs):
    type_key: ClassVar[str] = "RequantizeAttrs"
    axis: int = -1
    rounding: Rounding = Rounding.NONE
    compute_dtype: ComputeDType = ComputeDType.NONE
    out_dtype: DType = DType.INT8

    def __post_init__(self) -> None:
        _check_dtype(self.out_dtype, _REQUANTIZE_OUT, "qnn.requantize out_dtype")
        if self.rounding in (Rounding.TFLITE, Rounding.TFLITE_INT64) and self.is_float:
            raise ValueError(f'rounding="{self.rounding.value}" is integer arithmetic; it needs '
                             'compute_dtype="int64" (or "None")')

    @property
    def is_float(self) -> bool:
        return self.compute_dtype in (ComputeDType.FLOAT32, ComputeDType.FLOAT64)

    @property
    def effective_rounding(self) -> Rounding:
        return DEFAULT_ROUNDING if self.rounding is Rounding.NONE else self.rounding


@attrs_class
class BroadcastAttrs(Attrs):
    """Relay's ``BroadcastAttrs`` of the qnn binary operators."""

    type_key: ClassVar[str] = "BroadcastAttrs"
    lhs_axis: int = -1
    rhs_axis: int = -1


@attrs_class
class QnnConcatenateAttrs(Attrs):
    type_key: ClassVar[str] = "ConcatenateAttrs"
    axis: int = 0


@attrs_class
class FixedPointMultiplyAttrs(Attrs):
    type_key: ClassVar[str] = "FixedPointMultiplyAttrs"
    multiplier: int = 1 << 30
    shift: int = 1

    def __post_init__(self) -> None:
        if not quant.INT32_MIN <= self.multiplier <= quant.INT32_MAX:
            raise ValueError(f"fixed_point_multiply multiplier {self.multiplier} is not an int32")
        if not -31 <= self.shift <= quant.MAX_SHIFT:
            raise ValueError(f"fixed_point_multiply shift {self.shift} is out of "
                             f"[-31, {quant.MAX_SHIFT}]")


# --------------------------------------------------------------- relations

def _data(args: Sequence[Type], i: int, what: str, allowed: Sequence[DType]) -> TensorType | None:
    t = tensor_arg(args, i, what)
    if t is not None and t.dtype not in allowed:
        raise RelationError(f"{what} must be {_names(allowed)}, got {t}")
    return t


def _axis_info(data: TensorType, axis: int, params: Params, idx: Sequence[int],
               attr: str = "axis") -> tuple[Dim, str]:
    """The extent of the quantized axis and a description for messages.
    An out-of-range axis is an error only when a parameter is per-channel
    (as in Relay: the axis does not matter for per-tensor parameters)."""
    rank = len(data.shape)
    try:
        norm = normalize_axis(axis, rank, attr)
    except RelationError:
        if any(params.is_per_channel(i) for i in idx):
            raise
        return 1, f"{attr}={axis} is out of range, so per-tensor"
    extent = data.shape[norm] if rank else 1
    return extent, f"{attr}={axis} of the data {data}"


def _unary_operands(args: Sequence[Type], allowed: Sequence[DType], axis: int,
                    scale_name: str, zp_name: str) -> tuple[TensorType, Params] | None:
    """The data (argument 0, one of ``allowed``) of quantize, dequantize or
    requantize and its scale (1) and zero point (2), per tensor or per
    channel of ``axis``; None while any of them is unknown."""
    data = _data(args, 0, "data", allowed)
    if data is None:
        return None
    if tensor_arg(args, 1, scale_name) is None or tensor_arg(args, 2, zp_name) is None:
        return None
    params = Params(args)
    extent, where = _axis_info(data, axis, params, (1, 2))
    params.per_axis(1, scale_name, SCALE, extent, where)
    params.per_axis(2, zp_name, ZERO_POINT, extent, where)
    return data, params


def _quantize_rel(args: Sequence[Type], attrs: QuantizeAttrs) -> Type | Solved | None:
    operands = _unary_operands(args, (DType.FLOAT32,), attrs.axis, "output_scale",
                               "output_zero_point")
    if operands is None:
        return None
    data, _ = operands
    return TensorType(data.shape, attrs.out_dtype)


def _dequantize_rel(args: Sequence[Type], attrs: DequantizeAttrs) -> Type | Solved | None:
    operands = _unary_operands(args, _DEQUANTIZE_IN, attrs.axis, "input_scale",
                               "input_zero_point")
    if operands is None:
        return None
    data, _ = operands
    return TensorType(data.shape, attrs.out_dtype)


def _requantize_rel(args: Sequence[Type], attrs: RequantizeAttrs) -> Type | Solved | None:
    operands = _unary_operands(args, _REQUANTIZE_IN, attrs.axis, "input_scale",
                               "input_zero_point")
    if operands is None:
        return None
    data, params = operands
    params.scalar(3, "output_scale", SCALE)
    params.scalar(4, "output_zero_point", ZERO_POINT)
    return with_params(TensorType(data.shape, attrs.out_dtype), params)


def _binary_rel(args: Sequence[Type], attrs: BroadcastAttrs,
                allowed: Sequence[DType] = _BINARY_IN) -> Type | Solved | None:
    lhs = _data(args, 0, "lhs", allowed)
    rhs = _data(args, 1, "rhs", allowed)
    if lhs is None or rhs is None:
        return None
    if lhs.dtype != rhs.dtype:
        raise RelationError(f"lhs and rhs must have the same dtype, got {lhs} and {rhs}")
    if any(tensor_arg(args, i) is None for i in (2, 3, 4, 5)):
        return None
    params = Params(args)
    extent, where = _axis_info(lhs, attrs.lhs_axis, params, (2, 3), "lhs_axis")
    params.per_axis(2, "lhs_scale", SCALE, extent, where)
    params.per_axis(3, "lhs_zero_point", ZERO_POINT, extent, where)
    extent, where = _axis_info(rhs, attrs.rhs_axis, params, (4, 5), "rhs_axis")
    params.per_axis(4, "rhs_scale", SCALE, extent, where)
    params.per_axis(5, "rhs_zero_point", ZERO_POINT, extent, where)
    params.scalar(6, "output_scale", SCALE)
    params.scalar(7, "output_zero_point", ZERO_POINT)
    shape = broadcast_shapes(lhs.shape, rhs.shape)
    return with_params(TensorType(shape, lhs.dtype), params)


def _add_rel(args: Sequence[Type], attrs: BroadcastAttrs) -> Type | Solved | None:
    return _binary_rel(args, attrs, _ADD_IN)


def _fixed_point_multiply_rel(args: Sequence[Type], attrs: FixedPointMultiplyAttrs) -> Type | None:
    return _data(args, 0, "data", (DType.INT32,))


# ------------------------------------------------------------- concatenate

def _tuple_fields(args: Sequence[Type], i: int, what: str) -> tuple[Type, ...] | None:
    t = args[i]
    if isinstance(t, TupleType):
        return t.fields
    if isinstance(t, (IncompleteType, TypeVar)):
        return None
    raise RelationError(f"{what} must be a tuple, got {t}")


def _concat_shape(tensors: Sequence[TensorType], axis: int) -> tuple[Dim, ...]:
    first = tensors[0]
    rank = len(first.shape)
    if rank == 0:
        raise RelationError("cannot concatenate scalars (rank-0 tensors)")
    norm = normalize_axis(axis, rank)
    out = list(first.shape)
    for k, t in enumerate(tensors[1:], 1):
        if len(t.shape) != rank:
            raise RelationError(f"the {ordinal(k)} input {t} has rank {len(t.shape)}, "
                                f"the first {first} has rank {rank}")
        if t.dtype != first.dtype:
            raise RelationError(f"the {ordinal(k)} input {t} has dtype {t.dtype}, "
                                f"the first has {first.dtype}")
        for d in range(rank):
            if d == norm:
                continue
            a, b = out[d], t.shape[d]
            if a is not ANY and b is not ANY and a != b:
                raise RelationError(f"dimension {d} of the {ordinal(k)} input {t} does not "
                                    f"match the first {first} (concatenating on axis {axis})")
            if a is ANY:
                out[d] = b
    along = [t.shape[norm] for t in tensors]
    out[norm] = ANY if any(a is ANY for a in along) else sum(along)  # type: ignore[arg-type]
    return tuple(out)


def _scalar_tuple(params: Params, i: int, what: str, dtype: DType, n: int) -> None:
    """Argument ``i`` must be a tuple of ``n`` ``dtype`` scalars; holes (the
    whole tuple or some fields) are given that type."""
    fields = _tuple_fields(params.args, i, what)
    if fields is None:
        params.refined[i] = TupleType(tuple(TensorType((), dtype) for _ in range(n)))
        return
    if len(fields) != n:
        raise RelationError(f"{what} has {len(fields)} elements for {n} input tensors")
    inner = Params(list(fields))
    for k in range(n):
        inner.scalar(k, f"{what}[{k}]", dtype)
    if inner.any_refined:
        params.refined[i] = TupleType(tuple(r if r is not None else f
                                            for r, f in zip(inner.refined, fields)))


def _concatenate_rel(args: Sequence[Type], attrs: QnnConcatenateAttrs) -> Type | Solved | None:
    fields = _tuple_fields(args, 0, "data")
    if fields is None:
        return None
    if not fields:
        raise RelationError("data must hold at least one tensor")
    tensors: list[TensorType] = []
    for k in range(len(fields)):
        t = tensor_arg(fields, k, f"{ordinal(k)} input")
        if t is None:
            return None
        if t.dtype not in _CONCAT_IN:
            raise RelationError(f"the inputs must be {_names(_CONCAT_IN)}, got {t}")
        tensors.append(t)
    params = Params(args)
    _scalar_tuple(params, 1, "input_scales", SCALE, len(tensors))
    _scalar_tuple(params, 2, "input_zero_points", ZERO_POINT, len(tensors))
    params.scalar(3, "output_scale", SCALE)
    params.scalar(4, "output_zero_point", ZERO_POINT)
    out = TensorType(_concat_shape(tensors, attrs.axis), tensors[0].dtype)
    return with_params(out, params)


# ---------------------------------------------------------------- computes

def _axis(attrs_axis: int, ndim: int) -> int:
    if ndim == 0:
        return 0
    return attrs_axis + ndim if attrs_axis < 0 else attrs_axis


def _quantize(args: Sequence[np.ndarray], attrs: QuantizeAttrs, out: Type) -> np.ndarray:
    data, scale, zp = args
    x = np.asarray(data, dtype=np.float32)
    axis = _axis(attrs.axis, x.ndim)
    s = along_axis(scales(scale, "output_scale").astype(np.float32), x.ndim, axis)
    z = along_axis(zero_points(zp), x.ndim, axis)
    with np.errstate(all="ignore"):
        rounded = quant.round_half_away_from_zero(x / s).astype(np.float64)
    lo, hi = quant.dtype_range(attrs.out_dtype.np)
    value = np.clip(rounded + z, lo, hi)
    value = np.where(np.isnan(value), np.clip(z, lo, hi), value)
    return as_array(value, attrs.out_dtype)


def _dequantize(args: Sequence[np.ndarray], attrs: DequantizeAttrs, out: Type) -> np.ndarray:
    data, scale, zp = args
    x = np.asarray(data)
    axis = _axis(attrs.axis, x.ndim)
    s = along_axis(scales(scale, "input_scale").astype(np.float32), x.ndim, axis)
    z = along_axis(zero_points(zp), x.ndim, axis)
    shifted = quant.wrap_int32(x.astype(np.int64) - z).astype(np.float32)
    value = shifted * s
    if attrs.out_dtype is DType.FLOAT16:
        limit = np.float32(np.finfo(np.float16).max)
        value = np.clip(value, -limit, limit)
    return as_array(value, attrs.out_dtype)


def _multipliers(reals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    def one(r: float) -> tuple[int, int]:
        qm = quant.quantize_multiplier(r)
        return qm.multiplier, qm.shift
    m, s = map_unique(one, 2, reals)
    return m, s


def rescale(x: np.ndarray, reals: np.ndarray, rounding: Rounding) -> np.ndarray:
    """Multiply int32 values by real factors (broadcasting) with the given
    rounding; int64 result holding int32 values."""
    m, s = _multipliers(reals)
    if rounding is Rounding.TFLITE:
        return quant.multiply_by_quantized_multiplier(x, m, s)
    to_nearest = rounding is Rounding.TONEAREST
    return quant.multiply_by_quantized_multiplier_single_rounding(x, m, s, to_nearest)


def _requantize_factors(in_scale: np.ndarray, out_scale: np.ndarray, ndim: int,
                        axis: int) -> np.ndarray:
    """The real factors ``input_scale / output_scale`` of a requantization
    (per channel of ``axis`` when ``input_scale`` is), shaped to broadcast
    against a rank-``ndim`` tensor."""
    return (along_axis(scales(in_scale, "input_scale"), ndim, axis)
            / scales(out_scale, "output_scale").reshape(()))


def requantize_values(data: np.ndarray, in_scale: np.ndarray, in_zp: np.ndarray,
                      out_scale: np.ndarray, out_zp: np.ndarray, axis: int,
                      rounding: Rounding, out_dtype: DType) -> np.ndarray:
    """The integer path of ``qnn.requantize`` (shared with concatenate)."""
    x = np.asarray(data)
    ax = _axis(axis, x.ndim)
    reals = _requantize_factors(in_scale, out_scale, x.ndim, ax)
    if rounding is Rounding.TFLITE_INT64:
        shifted = x.astype(np.int64) - along_axis(zero_points(in_zp), x.ndim, ax)
        m, s = _multipliers(reals)
        if np.any(s > quant.MAX_SHIFT_INT64):
            raise QuantizationError(
                f'rounding="TFLITE_INT64" needs rescaling factors below '
                f'{2 ** quant.MAX_SHIFT_INT64}, got {float(np.max(reals))!r}')
        scaled = quant.multiply_by_quantized_multiplier_int64(shifted, m, s)
    else:
        shifted = quant.wrap_int32(quant.wrap_int32(x.astype(np.int64))
                                   - along_axis(zero_points(in_zp), x.ndim, ax))
        scaled = rescale(shifted, reals, rounding)
    result = quant.wrap_int32(scaled + zero_points(out_zp).reshape(()))
    return quant.saturate(result, out_dtype.np)


def _requantize_float(args: Sequence[np.ndarray], attrs: RequantizeAttrs) -> np.ndarray:
    data, in_scale, in_zp, out_scale, out_zp = args
    ft = np.float32 if attrs.compute_dtype is ComputeDType.FLOAT32 else np.float64
    x = np.asarray(data)
    ax = _axis(attrs.axis, x.ndim)
    reals = _requantize_factors(in_scale, out_scale, x.ndim, ax)
    with np.errstate(all="ignore"):
        t = x.astype(ft) - along_axis(zero_points(in_zp), x.ndim, ax).astype(ft)
        t = t * reals.astype(ft)
        t = t + zero_points(out_zp).reshape(()).astype(ft)
        if attrs.effective_rounding is Rounding.UPWARD:
            t = np.floor(t + ft(0.5))
        else:
            t = quant.round_half_away_from_zero(np.asarray(t, dtype=ft))
    t = np.clip(np.asarray(t, dtype=np.float64), quant.INT32_MIN, quant.INT32_MAX)
    return quant.saturate(t.astype(np.int64), attrs.out_dtype.np)


def _requantize(args: Sequence[np.ndarray], attrs: RequantizeAttrs, out: Type) -> np.ndarray:
    if attrs.is_float:
        return _requantize_float(args, attrs)
    data, in_scale, in_zp, out_scale, out_zp = args
    return requantize_values(data, in_scale, in_zp, out_scale, out_zp, attrs.axis,
                             attrs.effective_rounding, attrs.out_dtype)


# --- add / mul

def add_left_shift(dtype: DType) -> int:
    """TFLite's headroom bits of ADD and SUB: 20 for 8-bit operands, 15 for
    int16 (its general-scale int16 path)."""
    return 15 if dtype is DType.INT16 else 20


def add_multipliers(lhs_scale: float, rhs_scale: float, out_scale: float,
                    op: str = "qnn.add", left_shift: int = 20) -> tuple[int, ...]:
    """TFLite's ``Prepare`` of int8 ADD (``PrepareGeneralSubOp`` of SUB
    computes the same three multipliers); int16 with ``left_shift=15``."""
    twice_max = 2.0 * max(lhs_scale, rhs_scale)
    lhs = quant.quantize_multiplier_smaller_than_one_exp(lhs_scale / twice_max)
    rhs = quant.quantize_multiplier_smaller_than_one_exp(rhs_scale / twice_max)
    real_out = twice_max / (float(1 << left_shift) * out_scale)
    if not real_out < 1.0:
        raise QuantizationError(
            f"{op}: the output scale {out_scale!r} is too small for the input scales "
            f"{lhs_scale!r} and {rhs_scale!r} (TFLite needs max(input scales) < "
            f"2**{left_shift - 1} * output scale)")
    output = quant.quantize_multiplier_smaller_than_one_exp(real_out)
    return (lhs.multiplier, lhs.shift, rhs.multiplier, rhs.shift,
            output.multiplier, output.shift)


def mul_multiplier(lhs_scale: float, rhs_scale: float, out_scale: float) -> tuple[int, ...]:
    qm = quant.quantize_multiplier(lhs_scale * rhs_scale / out_scale)
    return qm.multiplier, qm.shift


def _binary_operands(args: Sequence[np.ndarray], attrs: BroadcastAttrs, out: Type):
    lhs, rhs, ls, lz, rs, rz, os_, oz = args
    shape = out_tensor_type(out).shape
    lhs, rhs = np.asarray(lhs), np.asarray(rhs)
    lax, rax = _axis(attrs.lhs_axis, lhs.ndim), _axis(attrs.rhs_axis, rhs.ndim)

    def operand(x: np.ndarray, z: np.ndarray, ax: int) -> np.ndarray:
        shifted = quant.wrap_int32(x.astype(np.int64) - along_axis(zero_points(z), x.ndim, ax))
        return np.broadcast_to(shifted, shape)

    def scale(x: np.ndarray, s: np.ndarray, ax: int, what: str) -> np.ndarray:
        per = np.broadcast_to(along_axis(scales(s, what), x.ndim, ax), x.shape)
        return np.broadcast_to(per, shape)

    out_scale = np.broadcast_to(scales(os_, "output_scale").reshape(()), shape)
    return (operand(lhs, lz, lax), operand(rhs, rz, rax), scale(lhs, ls, lax, "lhs_scale"),
            scale(rhs, rs, rax, "rhs_scale"), out_scale, zero_points(oz).reshape(()))


def _add_or_subtract(args: Sequence[np.ndarray], attrs: BroadcastAttrs, out: Type,
                     op: str) -> np.ndarray:
    a, b, sa, sb, so, oz = _binary_operands(args, attrs, out)
    left = add_left_shift(out_tensor_type(out).dtype)
    ma, sha, mb, shb, mo, sho = map_unique(
        lambda x, y, z: add_multipliers(x, y, z, op, left), 6, sa, sb, so)
    a_scaled = quant.multiply_by_quantized_multiplier_smaller_than_one_exp(
        quant.wrap_int32(a << left), ma, sha)
    b_scaled = quant.multiply_by_quantized_multiplier_smaller_than_one_exp(
        quant.wrap_int32(b << left), mb, shb)
    raw = a_scaled - b_scaled if op == "qnn.subtract" else a_scaled + b_scaled
    raw_out = quant.multiply_by_quantized_multiplier_smaller_than_one_exp(
        quant.wrap_int32(raw), mo, sho)
    dtype = out_tensor_type(out).dtype
    return quant.saturate(quant.wrap_int32(raw_out + oz), dtype.np)


def _add(args: Sequence[np.ndarray], attrs: BroadcastAttrs, out: Type) -> np.ndarray:
    return _add_or_subtract(args, attrs, out, "qnn.add")


def _subtract(args: Sequence[np.ndarray], attrs: BroadcastAttrs, out: Type) -> np.ndarray:
    return _add_or_subtract(args, attrs, out, "qnn.subtract")


def _mul(args: Sequence[np.ndarray], attrs: BroadcastAttrs, out: Type) -> np.ndarray:
    a, b, sa, sb, so, oz = _binary_operands(args, attrs, out)
    m, s = map_unique(mul_multiplier, 2, sa, sb, so)
    product = quant.wrap_int32(a * b)
    scaled = quant.multiply_by_quantized_multiplier(product, m, s)
    dtype = out_tensor_type(out).dtype
    return quant.saturate(quant.wrap_int32(scaled + oz), dtype.np)


def _concatenate(args: Sequence[object], attrs: QnnConcatenateAttrs, out: Type) -> np.ndarray:
    data, in_scales, in_zps, out_scale, out_zp = args
    dtype = out_tensor_type(out).dtype
    parts = [requantize_values(np.asarray(x), np.asarray(s), np.asarray(z),
                               np.asarray(out_scale), np.asarray(out_zp), -1,
                               DEFAULT_ROUNDING, dtype)
             for x, s, z in zip(data, in_scales, in_zps)]  # type: ignore[call-overload]
    axis = _axis(attrs.axis, parts[0].ndim)
    return as_array(np.concatenate(parts, axis=axis), dtype)


def _fixed_point_multiply(args: Sequence[np.ndarray], attrs: FixedPointMultiplyAttrs,
                          out: Type) -> np.ndarray:
    result = quant.multiply_by_quantized_multiplier_single_rounding(
        np.asarray(args[0]), attrs.multiplier, attrs.shift)
    return as_array(result, DType.INT32)


# ---------------------------------------------------------------- registry

BC = PatternKind.BROADCAST

defop("qnn.quantize", arity=3, rel=_quantize_rel, pattern=BC, compute=_quantize,
      doc="float32 -> quantized: round(x / scale) + zero_point, saturated (TFLite AffineQuantize)",
      attrs=QuantizeAttrs, family=FAMILY)
defop("qnn.dequantize", arity=3, rel=_dequantize_rel, pattern=BC, compute=_dequantize,
      doc="quantized -> float: (q - zero_point) * scale in float32", attrs=DequantizeAttrs,
      family=FAMILY)
defop("qnn.requantize", arity=5, rel=_requantize_rel, pattern=BC, compute=_requantize,
      doc="rescale a quantized tensor to new scale/zero point with fixed-point arithmetic",
      attrs=RequantizeAttrs, family=FAMILY)
defop("qnn.add", arity=8, rel=_add_rel, pattern=BC, compute=_add,
      doc="quantized addition with broadcasting (TFLite int8 ADD reference)", attrs=BroadcastAttrs,
      family=FAMILY)
defop("qnn.subtract", arity=8, rel=_add_rel, pattern=BC, compute=_subtract,
      doc="quantized subtraction with broadcasting (TFLite int8 SUB reference)",
      attrs=BroadcastAttrs, family=FAMILY)
defop("qnn.mul", arity=8, rel=_binary_rel, pattern=BC, compute=_mul,
      doc="quantized multiplication with broadcasting (TFLite int8 MUL reference)",
      attrs=BroadcastAttrs, family=FAMILY)
defop("qnn.concatenate", arity=5, rel=_concatenate_rel, pattern=PatternKind.INJECTIVE,
      compute=_concatenate, doc="requantize each input to the output parameters, then concatenate",
      attrs=QnnConcatenateAttrs, family=FAMILY)
defop("fixed_point_multiply", arity=1, rel=_fixed_point_multiply_rel, pattern=PatternKind.ELEMWISE,
      compute=_fixed_point_multiply,
      doc="int32 x * multiplier * 2**(shift - 31), rounded half up (TVM q_multiply_shift)",
      attrs=FixedPointMultiplyAttrs, family=FAMILY)

from . import qnn_linear  # noqa: E402,F401  (registers qnn.dense and qnn.conv2d)
from . import qnn_pool  # noqa: E402,F401  (registers qnn.avg_pool2d)
from . import qnn_activation  # noqa: E402,F401  (registers qnn.leaky_relu)
from . import qnn_products  # noqa: E402,F401  (qnn.batch_matmul, qnn.conv2d_transpose)

__all__ = ["QuantizeAttrs", "DequantizeAttrs", "RequantizeAttrs", "BroadcastAttrs",
           "QnnConcatenateAttrs", "FixedPointMultiplyAttrs", "Rounding", "ComputeDType",
           "DEFAULT_ROUNDING", "requantize_values", "rescale", "RelationError"]
