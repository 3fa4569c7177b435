"""qnn.softmax: softmax of a quantized tensor in integer arithmetic (part
of the qnn family, see :mod:`aot.ir.ops.qnn`).

``qnn.softmax(data, input_scale, input_zero_point, output_scale,
output_zero_point; axis, beta)`` -- Relay's operator (its ``SoftmaxAttrs``
``axis``) plus TFLite's ``beta`` (default 1): ``softmax(beta * x)`` along
``axis``.  Data int8, uint8 or int16; the result has its dtype; the four
parameters are scalars.  The input zero point cancels (only differences
to the row's maximum matter).

Design note
===========

The arithmetic is TFLite's *reference* kernels, which LiteRT's reference
resolver (``BUILTIN_REF``) runs: ``Register_SOFTMAX_REF`` prepares with
``kReference`` and evaluates int8/uint8 with ``reference_ops::Softmax`` and
int16 with ``reference_ops::SoftmaxInt16`` (``tflite/kernels/activations.cc``,
``kernels/internal/reference/softmax.h``).

**int8 / uint8** (gemmlowp fixed point, :mod:`aot.ir.gemmlowp`).  Prepare
(``PreprocessSoftmaxScaling``, double precision): ``M = min(beta * s_in *
2**26, 2**31 - 1)`` as ``(multiplier, left_shift)`` by
``QuantizeMultiplierGreaterThanOne`` (``M > 1``; TFLite aborts otherwise,
we raise :class:`~aot.ir.quant.QuantizationError`), and ``diff_min =
-floor(31 * 2**26 / 2**left_shift)`` (``CalculateInputRadius``).  Per row,
``d = q - max``; elements with ``d < diff_min`` count as 0; the others
give ``e = exp_on_negative_values(SRDHM(d << left_shift, multiplier))``
(the difference in Q5.26, the exp in Q0.31).  ``sum`` accumulates
``RoundingDivideByPOT(e, 12)`` (Q12.19, wrapping).  ``GetReciprocal``:
``h = clz(sum)``, ``nbou = 12 - h``, ``r = one_over_one_plus_x((sum << h)
- 2**31)`` (Q0.31, ``1/sum`` times ``2**nbou``).  ``p = SRDHM(r, e)`` is
the probability times ``2**(31 + nbou)``, non-negative.  TFLite divides it
by ``2**(nbou + 31 - k)`` (``RoundingDivideByPOT``, ties away from zero)
for its output scale ``2**-k`` (1/256) and adds ``numeric_limits<T>::min()``
(its zero point).  For any output scale ``s_out`` we multiply ``p`` by the
Q0.31 multiplier ``(m, sh)`` of ``2**-31 / s_out`` and round once: ``p * m
/ 2**(31 + nbou - sh)`` rounded half up (:func:`round_shift_up`, int64),
plus the output zero point, saturated.  For ``s_out = 2**-k``, ``m =
2**30`` and ``sh = k - 30``, which is TFLite's division exactly (half up
and half away from zero agree on non-negative values); for other scales
it is one rounding of ``p / s_out`` (plus the multiplier's 2**-31
relative error) -- no double rounding.  Elements with ``d < diff_min``
give the zero point (TFLite: the dtype's minimum, the same with its
parameters).

**int16** (TFLite's 16x8 mode, two 513-entry int16 tables with linear
interpolation, ``LUTLookup``).  Prepare: ``exp`` on ``[-10, 0]`` and ``1 / (1
+ x)`` on ``[0, 1]`` tabulated by ``LUTPopulateInt16<double>`` (each entry
the rounded sample corrected by half the interpolation error at the
midpoint: :func:`int16_lut`), and ``M = float32(s_in * beta) / (10 /
65535)`` -- the product in float32 as LiteRT writes it -- by
``QuantizeMultiplier``.  Per row: ``x = MultiplyByQuantizedMultiplier(q -
max, M) + 32767`` saturated to int16, ``e = LUT_exp(x)`` (Q0.15), ``sum``
the int32 sum; ``h = clz(sum)``; ``s = ((sum << (h - 1)) + 2**13) >> 14``;
``r = LUT_recip(sat16(s - 98304))``; output ``(e * r + 2**(30 - h)) >> (31
- h)`` clamped to ``[0, 32767]`` (Q0.15).  TFLite requires output scale
2**-15 and zero point 0; other parameters rescale that Q0.15 value by
``MultiplyByQuantizedMultiplier(2**-15 / s_out)`` plus the zero point
(the identity for TFLite's parameters).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from ..attrs import attrs_class
from typing import Callable, ClassVar, Sequence

from .. import gemmlowp, quant
from ..registry import Solved
from ..types import Type
from .common import (Attrs, DType, PatternKind, RelationError, TensorType, as_array, defop, np,
                     tensor_arg)
from .qnn_common import io_scalar_params, scales, with_params, zero_points
from .shape_util import normalize_axis

FAMILY = "qnn"

_DATA = (DType.INT8, DType.UINT8, DType.INT16)
#: TFLite's kScaledDiffIntegerBits and kAccumulationIntegerBits
DIFF_INTEGER_BITS = 5
ACCUM_INTEGER_BITS = 12
LUT_SIZE = 513
#: longest row whose sum of exponentials fits the accumulator: 4095 ones in
#: Q12.19 (int8/uint8), 65536 values below 2**15 in int32 (int16)
MAX_ROW = {DType.INT8: 4095, DType.UINT8: 4095, DType.INT16: 65536}


@attrs_class
class QnnSoftmaxAttrs(Attrs):
    """``axis`` as Relay's ``SoftmaxAttrs``; ``beta`` TFLite's
    ``SoftmaxOptions.beta`` (float32 in the model)."""

    type_key: ClassVar[str] = "QnnSoftmaxAttrs"
    axis: int = -1
    beta: float = 1.0


# ----------------------------------------------------------- prepare time

@dataclass(frozen=True, slots=True)
class Int8Params:
    """``PreprocessSoftmaxScaling`` and ``CalculateInputRadius``."""

    multiplier: int
    left_shift: int
    diff_min: int


def int8_params(input_scale: float, beta: float) -> Int8Params:
    s, b = float(np.float32(input_scale)), float(np.float32(beta))
    real = min(b * s * float(1 << (31 - DIFF_INTEGER_BITS)), float((1 << 31) - 1))
    if not real > 1.0:
        raise quant.QuantizationError(
            f"beta * input_scale = {b * s!r} is too small for TFLite's softmax (it must "
            f"exceed 2**-{31 - DIFF_INTEGER_BITS})")
    qm = quant.quantize_multiplier(real)
    radius = math.floor(float((1 << DIFF_INTEGER_BITS) - 1)
                        * float(1 << (31 - DIFF_INTEGER_BITS)) / float(1 << qm.shift))
    return Int8Params(qm.multiplier, qm.shift, -radius)


def int16_multiplier(input_scale: float, beta: float) -> quant.QuantizedMultiplier:
    """LiteRT's ``input->params.scale * params->beta / (10.0 / 65535.0)``:
    a float32 product, divided in double."""
    with np.errstate(all="ignore"):
        product = float(np.float32(np.float32(input_scale) * np.float32(beta)))
    return quant.quantize_multiplier(product / (10.0 / 65535.0))


def _round(x: float) -> float:
    """``TfLiteRound`` (``std::round``: half away from zero) of a double."""
    r = math.trunc(x)
    if abs(x - r) >= 0.5:
        r += 1 if x > 0 else -1
    return float(r)


def int16_lut(fn_name: str) -> np.ndarray:
    """``LUTPopulateInt16<double>`` of ``exp`` on ``[-10, 0]`` (``"exp"``)
    or ``1 / (1 + x)`` on ``[0, 1]`` (``"recip"``), as SoftmaxPrepare
    calls it: input scale ``10 / 65535`` (zero point 32767) or ``1 /
    65535`` (zero point -32768), output scale ``2 / 65535``, zero point 0."""
    return _int16_lut(fn_name).copy()


def _one_over_one_plus(v: float) -> float:
    return 1.0 / (1.0 + v)


@functools.cache
def _int16_lut(fn_name: str) -> np.ndarray:
    rng = 65535
    fn: Callable[[float], float]
    if fn_name == "exp":
        in_scale, in_zp, fn = 10.0 / rng, 32767, math.exp
    else:
        in_scale, in_zp, fn = 1.0 / rng, -32768, _one_over_one_plus
    out_scale = 2.0 / rng
    input_min = in_scale * float(-32768 - in_zp)
    input_max = in_scale * float(32767 - in_zp)
    output_min = out_scale * float(-32768)
    output_max = out_scale * float(32767)
    steps = 512
    step = (input_max - input_min) / steps
    half_step = step / 2
    inv = 65536.0 / (output_max - output_min)
    lut = np.zeros(LUT_SIZE, np.int64)
    for i in range(steps):
        val = fn(input_min + i * step)
        val_mid = fn(input_min + i * step + half_step)
        val_next = fn(input_min + (i + 1) * step)
        sample = _round(val * inv)
        interp = _round((val_next * inv + _round(val * inv)) / 2)
        mid = _round(val_mid * inv)
        bias = _round((interp - mid) / 2)
        lut[i] = int(min(max(sample - bias, -32768.0), 32767.0))
    lut[steps] = int(min(max(_round(fn(input_max) * inv), -32768.0), 32767.0))
    lut.setflags(write=False)
    return lut


def lut_lookup(value: np.ndarray, lut: np.ndarray) -> np.ndarray:
    """TFLite's int16 ``LUTLookup``: entry ``256 + (v >> 7)`` plus the slope
    to the next entry times ``v & 127``, rounded (``+ 64 >> 7``), wrapped
    to int16."""
    v = np.asarray(value, np.int64)
    index = 256 + (v >> 7)
    offset = v & 0x7F
    base = lut[index]
    slope = quant.wrap_int32(lut[index + 1] - base)
    slope = ((slope + 32768) & 0xFFFF) - 32768
    delta = (slope * offset + 64) >> 7
    return ((base + delta + 32768) & 0xFFFF) - 32768


def output_multiplier(output_scale: float) -> quant.QuantizedMultiplier:
    """The Q0.31 multiplier of ``2**-31 / output_scale`` (int8/uint8
    path); ``output_scale`` must exceed ``2**-60`` (so that the final
    shift is at least 2)."""
    so = float(np.float32(output_scale))
    if not so > 2.0 ** -60:
        raise quant.QuantizationError(f"output_scale {so!r} is too small for qnn.softmax")
    return quant.quantize_multiplier(2.0 ** -31 / so)


def round_shift_up(v: np.ndarray, t: np.ndarray) -> np.ndarray:
    """``v / 2**t`` rounded half up for int64 ``0 <= v < 2**63``, ``t >=
    2``: ``((v >> 1) + 2**(t-2)) >> (t-1)`` (no overflow; dropping ``v``'s
    last bit cannot move the floor), 0 for ``t >= 64``."""
    v, t = np.asarray(v, np.int64), np.asarray(t, np.int64)
    tc = np.minimum(t, 63)
    r = ((v >> 1) + (np.int64(1) << (tc - 2))) >> (tc - 1)
    return np.where(t >= 64, 0, r)


# ------------------------------------------------------------ the compute

def _softmax_int8(x: np.ndarray, s_in: float, s_out: float, beta: float) -> np.ndarray:
    """Rows along the last axis of int64 ``x``: the output before the zero
    point (int64)."""
    p = int8_params(s_in, beta)
    om = output_multiplier(s_out)
    diff = x - x.max(axis=-1, keepdims=True)
    keep = diff >= p.diff_min
    scaled = quant.saturating_rounding_doubling_high_mul(
        quant.wrap_int32(np.where(keep, diff, 0) << p.left_shift), p.multiplier)
    e = gemmlowp.exp_on_negative_values(scaled, DIFF_INTEGER_BITS)
    terms = np.where(keep, quant.rounding_divide_by_pot(e, ACCUM_INTEGER_BITS), 0)
    total = quant.wrap_int32(terms.sum(axis=-1, keepdims=True))
    h = gemmlowp.count_leading_zeros(total)
    nbou = ACCUM_INTEGER_BITS - h
    shifted = quant.wrap_int32((total << h) - (1 << 31))
    recip = gemmlowp.one_over_one_plus_x_for_x_in_0_1(shifted)
    prob = quant.saturating_rounding_doubling_high_mul(recip, e)
    out = round_shift_up(prob * om.multiplier, 31 + nbou - om.shift)
    return np.where(keep, out, 0)


def _softmax_int16(x: np.ndarray, s_in: float, s_out: float, beta: float) -> np.ndarray:
    qm = int16_multiplier(s_in, beta)
    diff = x - x.max(axis=-1, keepdims=True)
    scaled = quant.multiply_by_quantized_multiplier(diff, qm.multiplier, qm.shift) + 32767
    e = lut_lookup(np.clip(scaled, -32768, 32767), _int16_lut("exp"))
    total = quant.wrap_int32(e.sum(axis=-1, keepdims=True))
    h = gemmlowp.count_leading_zeros(total)
    shifted = ((total << (h - 1)) + (1 << 13)) >> 14
    recip = lut_lookup(np.clip(shifted - ((1 << 15) + (1 << 16)), -32768, 32767),
                       _int16_lut("recip"))
    right = 31 - h
    q15 = np.clip((e * recip + (np.int64(1) << (right - 1))) >> right, 0, 32767)
    rq = quant.quantize_multiplier(2.0 ** -15 / s_out)
    return quant.multiply_by_quantized_multiplier(q15, rq.multiplier, rq.shift)


def _softmax_rel(args: Sequence[Type], attrs: QnnSoftmaxAttrs) -> Type | Solved | None:
    data = tensor_arg(args, 0, "data")
    if data is None:
        return None
    if data.dtype not in _DATA:
        raise RelationError(f"data must be int8, uint8 or int16, got {data}")
    if not (math.isfinite(attrs.beta) and attrs.beta > 0):
        raise RelationError(f"beta must be positive and finite, got {attrs.beta}")
    axis = normalize_axis(attrs.axis, data.ndim)
    limit = MAX_ROW[data.dtype]
    extent = data.shape[axis]
    if isinstance(extent, int) and extent > limit:
        raise RelationError(f"the softmax axis has {extent} elements; a {data.dtype} softmax "
                            f"sums at most {limit} (TFLite's fixed-point accumulator)")
    return with_params(TensorType(data.shape, data.dtype), io_scalar_params(args))


def _softmax(args: Sequence[np.ndarray], attrs: QnnSoftmaxAttrs, out: Type) -> np.ndarray:
    data, s_in, _z_in, s_out, z_out = (np.asarray(a) for a in args)
    si = float(scales(s_in, "input_scale").reshape(()))
    so = float(scales(s_out, "output_scale").reshape(()))
    zo = int(zero_points(z_out).reshape(()))
    axis = normalize_axis(attrs.axis, data.ndim)
    x = np.moveaxis(data.astype(np.int64), axis, -1)
    if x.size == 0:
        return np.zeros(data.shape, data.dtype)
    row = _softmax_int16 if data.dtype == np.int16 else _softmax_int8
    y = quant.wrap_int32(row(x, si, so, attrs.beta) + zo)
    return as_array(quant.saturate(np.moveaxis(y, -1, axis), data.dtype), data.dtype)


defop("qnn.softmax", arity=5, rel=_softmax_rel, pattern=PatternKind.OUT_ELEMWISE_FUSABLE,
      compute=_softmax,
      doc="quantized softmax along axis in integers (TFLite's reference kernels: gemmlowp "
          "fixed-point exp for int8/uint8, interpolated int16 tables for int16)",
      attrs=QnnSoftmaxAttrs, family=FAMILY)

__all__ = ["QnnSoftmaxAttrs", "Int8Params", "int8_params", "int16_multiplier", "int16_lut",
           "lut_lookup", "output_multiplier", "round_shift_up", "DIFF_INTEGER_BITS",
           "ACCUM_INTEGER_BITS", "LUT_SIZE", "MAX_ROW"]
