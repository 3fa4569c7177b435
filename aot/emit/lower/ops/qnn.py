"""Lowering of the qnn family's element operators (``aot/ir/ops/qnn.py``):
quantize, dequantize, requantize, add, subtract, mul, concatenate and
fixed_point_multiply, as index lowerings with TFLite's exact integer
arithmetic (:mod:`.fixed_point`).  qnn.dense and qnn.conv2d are in
:mod:`.qnn_linear`.

Design note
-----------
**Quantization parameters.**  Scales and zero points are tensor arguments
read like any other (``param_at`` is the reference's ``along_axis``: a
scalar or 1-element parameter is per tensor, a vector is indexed by the
element's position on the quantized axis).  Zero points, and the scales of
quantize and dequantize, are used as read: a literal when constant, a load
otherwise.

A requantization factor, though, is a fixed-point ``(multiplier, shift)``
pair that the reference derives from the float scales with
``QuantizeMultiplier``.  When the scales are compile-time constants (a
literal or a ``CONST`` table: :attr:`TensorValue.constant`) the pairs are
computed here, in Python, by the reference's own functions -- invalid
scales are reported at compile time with the reference's message -- and:

* one pair for the whole tensor (per-tensor scales, or per-channel scales
  that happen to give the same pair): literals; the arithmetic specialises
  on them (constant shifts, no branches);
* one pair per channel: two int32 tables indexed by the channel, when the
  lowering context can hold constant tables (``ctx.constant_table``; see
  :func:`_table`); otherwise the pair is recomputed per element from the
  scale table in float64 (:func:`.fixed_point.runtime_multiplier`), exact but
  slow.

Run-time scales use that float64 computation too (the C kernel cannot
report an invalid scale: the result is then unspecified, never undefined
behaviour).

**Rounding.**  ``rounding="TFLITE"`` is TFLite's two-step
``MultiplyByQuantizedMultiplier``; ``UPWARD`` / ``TONEAREST`` (and the
default ``None`` = ``UPWARD``) are TVM's single-rounding
``FixedPointMultiply``; ``compute_dtype="float32"/"float64"`` is TVM's
float lowering, computed in that precision exactly as the reference.
qnn.add, qnn.subtract and qnn.mul follow TFLite's reference kernels (20
bits of headroom for add and subtract), qnn.concatenate requantizes each
part with the default rounding (an identity when its parameters equal the
output's) and selects along the axis with the ``concatenate`` lowering.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ....ir.dtype import DType
from ....ir.ops.qnn import (DEFAULT_ROUNDING, BroadcastAttrs, DequantizeAttrs,
                            FixedPointMultiplyAttrs, QnnConcatenateAttrs, QuantizeAttrs,
                            RequantizeAttrs, Rounding, add_left_shift, add_multipliers,
                            mul_multiplier)
from ....ir.ops.qnn_common import scales
from ....ir.ops.transform import ConcatenateAttrs
from ....ir.quant import MAX_SHIFT_INT64, QuantizationError, quantize_multiplier
from ....ir.types import Type
from ...kernel import ir as K
from ..registry import (INDEX, ArgValue, Index, LowerContext, LoweringError, TensorValue,
                        broadcast_index, index_lowering, lookup_lowering, out_tensor)
from .fixed_point import (F32, F64, I32, I64, Multiplier, f64, i32, multiply_double,
                          multiply_int64, multiply_single, round_half_away, runtime_multiplier,
                          saturate, saturate_int, wrap_sub)
from .common import tensor
from .tuning import current as current_tuning

__all__ = ["constant_of", "param_at", "scalar_param", "check_scales", "requantize_value",
           "rescale_at", "MultiplierAt"]

MultiplierAt = Callable[[Index], Multiplier]


# ============================================================ parameters

def quant_axis(axis: int, ndim: int) -> int:
    """The reference's ``_axis``: negative counts from the end; a scalar
    has axis 0."""
    if ndim == 0:
        return 0
    return axis + ndim if axis < 0 else axis


def _zeros(ndim: int) -> Index:
    return tuple(K.Const(0, INDEX) for _ in range(ndim))


def param_at(p: TensorValue, idx: Index, ndim: int, axis: int) -> K.Expr:
    """The parameter of the element at ``idx`` of a rank-``ndim`` tensor
    quantized along ``axis`` (the reference's ``along_axis``)."""
    if p.ndim == 0 or p.size == 1 or ndim == 0:
        return p.read(_zeros(p.ndim))
    return p.read((idx[axis],))


def scalar_param(p: TensorValue) -> K.Expr:
    return p.read(_zeros(p.ndim))


def constant_of(ctx: LowerContext, p: TensorValue) -> np.ndarray | None:
    """``p``'s elements when they are known at compile time."""
    if p.constant is not None:
        return np.asarray(p.constant)
    probe = p.read(tuple(ctx.index_var("q") for _ in p.shape))
    if isinstance(probe, K.Const):
        return np.full(p.shape, probe.value, dtype=p.dtype.np)
    return None


def _literal(e: K.Expr) -> int | float | None:
    return e.value if isinstance(e, K.Const) else None


def checked(op: str, fn: Callable[[], object]) -> object:
    """Run a compile-time computation of the reference; its
    QuantizationError (an invalid constant scale) becomes a LoweringError."""
    try:
        return fn()
    except QuantizationError as e:
        raise LoweringError(f"{op}: {e}") from None


def _table(ctx: LowerContext, values: Sequence[int], dtype: DType) -> TensorValue | None:
    """A constant table of ``values`` in the kernel (a ``CONST`` buffer
    passed like a constant argument of the program)."""
    return ctx.constant_table(np.asarray(values, dtype=dtype.np), dtype)


def _per_channel(ctx: LowerContext, pairs: list[tuple[int, int]], channel: Callable[[Index],
                 K.Expr], runtime: MultiplierAt, single: bool = False,
                 out_zp: int | None = None) -> MultiplierAt:
    """Multipliers given per channel: literals when all equal, else tables
    (or the run-time computation when tables are unavailable).  ``single``:
    the multipliers feed TVM's single-rounding multiply; when every shift
    is at most -2 the shift table holds ``-shift - 2`` instead, and the
    multiply uses the high word of the product
    (:func:`.fixed_point.multiply_single`) -- not under the ``simd``
    tuning: a host compiler vectorizes the 64-bit form and not that one
    (DS-CNN int8 on x86-64, gcc -O3: 868 us against 947).  With a literal
    output zero point ``out_zp`` that form also folds it into a table of
    rounding terms ``2**e + out_zp * 2**(e+1)`` when every sum stays inside
    int32 (the high word is at most 2**30 in magnitude), and the shifts
    are read as ``e + 1``: per output one addition less
    (:func:`.fixed_point.multiply_single`; :func:`requantize_value` then
    adds no zero point)."""
    if len(set(pairs)) == 1:
        q = Multiplier(i32(pairs[0][0]), i32(pairs[0][1]))
        return lambda idx: q
    mult = _table(ctx, [m for m, _ in pairs], I32)
    if single and not current_tuning().simd and all(s <= -2 for _, s in pairs):
        high = _table(ctx, [-s - 2 for _, s in pairs], I32)
        positive = all(m > 0 for m, _ in pairs)
        rounds = [(1 << (-s - 2)) + (out_zp or 0) * (1 << (-s - 1)) for _, s in pairs]
        if (out_zp is not None and mult is not None and high is not None
                and all(abs(r) < 2 ** 30 - 2 for r in rounds)):
            rnd = _table(ctx, rounds, I32)
            total = _table(ctx, [-s - 1 for _, s in pairs], I32)
            if rnd is not None and total is not None:
                return lambda idx: Multiplier(
                    mult.read((channel(idx),)), K.neg(K.add(high.read((channel(idx),)), i32(2))),
                    high.read((channel(idx),)), positive, rnd.read((channel(idx),)),
                    total.read((channel(idx),)))
        if mult is not None and high is not None:
            return lambda idx: Multiplier(mult.read((channel(idx),)),
                                          K.neg(K.add(high.read((channel(idx),)), i32(2))),
                                          high.read((channel(idx),)), positive)
    shift = _table(ctx, [s for _, s in pairs], I32)
    if mult is None or shift is None:
        return runtime
    return lambda idx: Multiplier(mult.read((channel(idx),)), shift.read((channel(idx),)))


def rescale_at(ctx: LowerContext, op: str, in_scale: TensorValue, out_scale: TensorValue,
               ndim: int, axis: int, single: bool = False,
               out_zp: int | None = None) -> MultiplierAt:
    """The multiplier of ``input_scale / output_scale`` at each element of
    a rank-``ndim`` tensor quantized along ``axis``."""
    def runtime(idx: Index) -> Multiplier:
        real = K.div(K.cast(F64, param_at(in_scale, idx, ndim, axis)),
                     K.cast(F64, scalar_param(out_scale)))
        return runtime_multiplier(real)

    s_in, s_out = constant_of(ctx, in_scale), constant_of(ctx, out_scale)
    if s_in is None or s_out is None:
        return runtime

    def pairs() -> list[tuple[int, int]]:
        reals = (scales(s_in, "input_scale").reshape(-1)
                 / scales(s_out, "output_scale").reshape(()))
        return [(qm.multiplier, qm.shift) for qm in map(quantize_multiplier, reals.tolist())]
    return _per_channel(ctx, checked(op, pairs), lambda idx: idx[axis], runtime, single,
                        out_zp)


def check_scales(op: str, ctx: LowerContext, p: TensorValue, what: str) -> None:
    """Reject a constant scale the reference would reject (at compile time,
    with its message)."""
    data = constant_of(ctx, p)
    if data is not None:
        checked(op, lambda: scales(data, what))


# ============================================================ requantize

def requantize_value(data: TensorValue, in_zp: Callable[[Index], K.Expr],
                     mult: MultiplierAt, out_zp: K.Expr, rounding: Rounding,
                     out_dtype: DType) -> TensorValue:
    """The integer path of qnn.requantize (``requantize_values``)."""
    def read(idx: Index) -> K.Expr:
        q = mult(idx)
        if rounding is Rounding.TFLITE_INT64:
            x = K.sub(K.cast(I64, data.read(idx)), K.cast(I64, in_zp(idx)))
            scaled = multiply_int64(x, q)
            if _literal(out_zp) != 0:
                scaled = K.add(scaled, K.cast(I32, out_zp))
            return saturate(scaled, out_dtype)
        x = wrap_sub(data.read(idx), in_zp(idx))
        if rounding is Rounding.TFLITE:
            scaled = multiply_double(x, q)
        else:
            scaled = multiply_single(x, q, rounding is Rounding.TONEAREST)
            if q.high_round is not None:        # the zero point is in the table
                return saturate(scaled, out_dtype)
        if _literal(out_zp) != 0:
            scaled = K.add(scaled, K.cast(I32, out_zp))
        return saturate(scaled, out_dtype)
    return TensorValue(data.shape, out_dtype, read)


def _float_factor_at(ctx: LowerContext, op: str, in_scale: TensorValue, out_scale: TensorValue,
                     ndim: int, axis: int, ft: DType) -> Callable[[Index], K.Expr]:
    """``float(input_scale / output_scale)`` in ``ft`` (the division in
    float64, as the reference)."""
    s_in, s_out = constant_of(ctx, in_scale), constant_of(ctx, out_scale)
    if s_in is not None and s_out is not None:
        reals = checked(op, lambda: scales(s_in, "input_scale").reshape(-1)
                        / scales(s_out, "output_scale").reshape(()))
        values = np.asarray(reals).astype(ft.np)
        if np.all(values == values[0]):
            c = K.Const(values[0].item(), ft)
            return lambda idx: c
    return lambda idx: K.cast(ft, K.div(K.cast(F64, param_at(in_scale, idx, ndim, axis)),
                                        K.cast(F64, scalar_param(out_scale))))


def _requantize_float(ctx: LowerContext, args: list[TensorValue], attrs: RequantizeAttrs,
                      ) -> TensorValue:
    data, in_scale, in_zp, out_scale, out_zp = args
    ft = F32 if attrs.compute_dtype.value == "float32" else F64
    ndim = data.ndim
    axis = quant_axis(attrs.axis, ndim)
    factor = _float_factor_at(ctx, "qnn.requantize", in_scale, out_scale, ndim, axis, ft)
    upward = attrs.effective_rounding is Rounding.UPWARD

    def read(idx: Index) -> K.Expr:
        t = K.sub(K.cast(ft, data.read(idx)), K.cast(ft, param_at(in_zp, idx, ndim, axis)))
        t = K.mul(t, factor(idx))
        t = K.add(t, K.cast(ft, scalar_param(out_zp)))
        if upward:
            t = K.math_call("floor", K.add(t, K.Const(0.5, ft)))
        else:
            t = round_half_away(t)
        return K.cast(attrs.out_dtype, t)        # integral: saturates only
    return TensorValue(data.shape, attrs.out_dtype, read)


def _check_int64_shifts(ctx: LowerContext, in_scale: TensorValue, out_scale: TensorValue) -> None:
    """Reject constant factors the reference rejects for ``TFLITE_INT64``
    (a shift above ``quant.MAX_SHIFT_INT64``)."""
    s_in, s_out = constant_of(ctx, in_scale), constant_of(ctx, out_scale)
    if s_in is None or s_out is None:
        return
    reals = scales(s_in, "input_scale").reshape(-1) / scales(s_out, "output_scale").reshape(())
    for r in reals.tolist():
        qm = quantize_multiplier(r)
        if qm.shift > MAX_SHIFT_INT64:
            raise LoweringError(f'qnn.requantize: rounding="TFLITE_INT64" needs rescaling '
                                f'factors below {2 ** MAX_SHIFT_INT64}, got {r!r}')


@index_lowering("qnn.requantize")
def _requantize(ctx: LowerContext, args: Sequence[ArgValue], attrs: RequantizeAttrs,
                out_type: Type) -> TensorValue:
    vals = [tensor(a) for a in args]
    if attrs.is_float:
        return _requantize_float(ctx, vals, attrs)
    data, in_scale, in_zp, out_scale, out_zp = vals
    ndim = data.ndim
    axis = quant_axis(attrs.axis, ndim)
    single = attrs.effective_rounding in (Rounding.UPWARD, Rounding.TONEAREST)
    zp = _literal(scalar_param(out_zp)) if out_zp.size == 1 else None
    mult = rescale_at(ctx, "qnn.requantize", in_scale, out_scale, ndim, axis, single,
                      int(zp) if isinstance(zp, int) and single else None)
    if attrs.effective_rounding is Rounding.TFLITE_INT64:
        _check_int64_shifts(ctx, in_scale, out_scale)
    return requantize_value(data, lambda idx: param_at(in_zp, idx, ndim, axis), mult,
                            scalar_param(out_zp), attrs.effective_rounding, attrs.out_dtype)


# ====================================================== quantize, dequantize

def _quantize_fast(r: K.Expr, z: int, out: DType) -> K.Expr | None:
    """``clip(r + z)`` for a literal ``z`` by clamping ``r`` in float32 to
    ``[lo - z, hi - z]`` (exact bounds) and adding ``z`` in int32; NaN
    clamps to NaN, converts to 0 and gives ``z`` (which must then be in
    range, as the reference's ``clip(z)``)."""
    lo, hi = K.dtype_range(out)
    bounds = (lo - z, hi - z)
    if not lo <= z <= hi or any(abs(b) > 2 ** 24 for b in bounds):
        return None
    clamped = K.minimum(K.maximum(r, K.Const(float(bounds[0]), F32)),
                        K.Const(float(bounds[1]), F32))
    value = K.cast(I32, clamped)
    if z:
        value = K.add(value, i32(z))
    return K.cast(out, value)


@index_lowering("qnn.quantize")
def _quantize(ctx: LowerContext, args: Sequence[ArgValue], attrs: QuantizeAttrs,
              out_type: Type) -> TensorValue:
    data, scale, zp = (tensor(a) for a in args)
    check_scales("qnn.quantize", ctx, scale, "output_scale")
    ndim, out = data.ndim, attrs.out_dtype
    axis = quant_axis(attrs.axis, ndim)

    def read(idx: Index) -> K.Expr:
        r = round_half_away(K.div(data.read(idx), param_at(scale, idx, ndim, axis)))
        z = param_at(zp, idx, ndim, axis)
        if isinstance(z, K.Const):
            fast = _quantize_fast(r, int(z.value), out)
            if fast is not None:
                return fast
            nan_value: K.Expr = K.Const(saturate_int(int(z.value), out), out)
        else:
            nan_value = K.cast(out, K.cast(F64, z))          # saturating
        t = K.add(K.cast(F64, r), K.cast(F64, z))
        return K.select(K.ne(t, t), nan_value, K.cast(out, t))
    return TensorValue(data.shape, out, read)


_F16_MAX = float(np.finfo(np.float16).max)


@index_lowering("qnn.dequantize")
def _dequantize(ctx: LowerContext, args: Sequence[ArgValue], attrs: DequantizeAttrs,
                out_type: Type) -> TensorValue:
    data, scale, zp = (tensor(a) for a in args)
    check_scales("qnn.dequantize", ctx, scale, "input_scale")
    ndim = data.ndim
    axis = quant_axis(attrs.axis, ndim)

    def read(idx: Index) -> K.Expr:
        shifted = wrap_sub(data.read(idx), param_at(zp, idx, ndim, axis))
        value = K.mul(K.cast(F32, shifted), param_at(scale, idx, ndim, axis))
        if attrs.out_dtype is DType.FLOAT16:
            value = K.minimum(K.maximum(value, K.Const(-_F16_MAX, F32)), K.Const(_F16_MAX, F32))
        return K.cast(attrs.out_dtype, value)
    return TensorValue(data.shape, attrs.out_dtype, read)


# ============================================================== add, mul

class _Binary:
    """The operands of qnn.add / qnn.mul broadcast to the result: shifted
    values ``x - zero_point`` and the scales of each element."""

    def __init__(self, ctx: LowerContext, args: Sequence[ArgValue], attrs: BroadcastAttrs,
                 out_type: Type, op: str) -> None:
        (self.lhs, self.rhs, self.ls, self.lz, self.rs, self.rz, self.os,
         self.oz) = (tensor(a) for a in args)
        t = out_tensor(out_type)
        self.shape = tuple(int(d) for d in t.shape)
        self.dtype = t.dtype
        self.lax = quant_axis(attrs.lhs_axis, self.lhs.ndim)
        self.rax = quant_axis(attrs.rhs_axis, self.rhs.ndim)
        self.op = op
        for p, what in ((self.ls, "lhs_scale"), (self.rs, "rhs_scale"),
                        (self.os, "output_scale")):
            check_scales(op, ctx, p, what)
        consts = [constant_of(ctx, p) for p in (self.ls, self.rs, self.os)]
        self.static: tuple[float, float, float] | None = None
        if all(c is not None and np.all(c == c.reshape(-1)[0]) for c in consts):
            self.static = tuple(float(np.float32(c.reshape(-1)[0])) for c in consts)

    def operands(self, idx: Index) -> tuple[K.Expr, K.Expr, Index, Index]:
        li = broadcast_index(idx, self.shape, self.lhs.shape)
        ri = broadcast_index(idx, self.shape, self.rhs.shape)
        a = wrap_sub(self.lhs.read(li), param_at(self.lz, li, self.lhs.ndim, self.lax))
        b = wrap_sub(self.rhs.read(ri), param_at(self.rz, ri, self.rhs.ndim, self.rax))
        return a, b, li, ri

    def scales_f64(self, li: Index, ri: Index) -> tuple[K.Expr, K.Expr, K.Expr]:
        return (K.cast(F64, param_at(self.ls, li, self.lhs.ndim, self.lax)),
                K.cast(F64, param_at(self.rs, ri, self.rhs.ndim, self.rax)),
                K.cast(F64, scalar_param(self.os)))

    def finish(self, raw: K.Expr) -> K.Expr:
        oz = scalar_param(self.oz)
        if _literal(oz) != 0:
            raw = K.add(raw, K.cast(I32, oz))
        return saturate(raw, self.dtype)


def _add_or_subtract(ctx: LowerContext, args: Sequence[ArgValue], attrs: BroadcastAttrs,
                     out_type: Type, op: str) -> TensorValue:
    b = _Binary(ctx, args, attrs, out_type, op)
    left = add_left_shift(b.dtype)
    static = None
    if b.static is not None:
        ma, sa, mb, sb, mo, so = checked(op, lambda: add_multipliers(*b.static, op, left))
        static = (Multiplier(i32(ma), i32(sa)), Multiplier(i32(mb), i32(sb)),
                  Multiplier(i32(mo), i32(so)))
    combine = K.sub if op == "qnn.subtract" else K.add

    def multipliers(li: Index, ri: Index) -> tuple[Multiplier, Multiplier, Multiplier]:
        if static is not None:
            return static
        sa, sb, so = b.scales_f64(li, ri)
        twice = K.mul(f64(2.0), K.select(K.lt(sa, sb), sb, sa))
        return (runtime_multiplier(K.div(sa, twice)), runtime_multiplier(K.div(sb, twice)),
                runtime_multiplier(K.div(twice, K.mul(f64(float(1 << left)), so))))

    def read(idx: Index) -> K.Expr:
        x, y, li, ri = b.operands(idx)
        qa, qb, qo = multipliers(li, ri)
        xs = multiply_double(K.shl(x, left), qa)
        ys = multiply_double(K.shl(y, left), qb)
        return b.finish(multiply_double(combine(xs, ys), qo))
    return TensorValue(b.shape, b.dtype, read)


@index_lowering("qnn.add")
def _add(ctx: LowerContext, args: Sequence[ArgValue], attrs: BroadcastAttrs,
         out_type: Type) -> TensorValue:
    return _add_or_subtract(ctx, args, attrs, out_type, "qnn.add")


@index_lowering("qnn.subtract")
def _subtract(ctx: LowerContext, args: Sequence[ArgValue], attrs: BroadcastAttrs,
              out_type: Type) -> TensorValue:
    return _add_or_subtract(ctx, args, attrs, out_type, "qnn.subtract")


@index_lowering("qnn.mul")
def _mul(ctx: LowerContext, args: Sequence[ArgValue], attrs: BroadcastAttrs,
         out_type: Type) -> TensorValue:
    b = _Binary(ctx, args, attrs, out_type, "qnn.mul")
    static = None
    if b.static is not None:
        m, s = checked("qnn.mul", lambda: mul_multiplier(*b.static))
        static = Multiplier(i32(m), i32(s))

    def read(idx: Index) -> K.Expr:
        x, y, li, ri = b.operands(idx)
        if static is not None:
            q = static
        else:
            sa, sb, so = b.scales_f64(li, ri)
            q = runtime_multiplier(K.div(K.mul(sa, sb), so))
        return b.finish(multiply_double(K.mul(x, y), q))
    return TensorValue(b.shape, b.dtype, read)


# =========================================================== concatenate

def _same_parameters(ctx: LowerContext, s: TensorValue, z: TensorValue, os_: TensorValue,
                     oz: TensorValue) -> bool:
    values = [constant_of(ctx, p) for p in (s, z, os_, oz)]
    if any(v is None for v in values):
        return False
    s_v, z_v, os_v, oz_v = (v.reshape(-1)[0] for v in values)  # type: ignore[union-attr]
    return bool(np.float32(s_v) == np.float32(os_v) and int(z_v) == int(oz_v))


@index_lowering("qnn.concatenate")
def _concatenate(ctx: LowerContext, args: Sequence[ArgValue], attrs: QnnConcatenateAttrs,
                 out_type: Type) -> TensorValue:
    data, in_scales, in_zps = args[0], args[1], args[2]
    out_scale, out_zp = tensor(args[3]), tensor(args[4])
    assert isinstance(data, tuple) and isinstance(in_scales, tuple) and isinstance(in_zps, tuple)
    dtype = out_tensor(out_type).dtype
    parts: list[TensorValue] = []
    for x, s, z in zip(data, in_scales, in_zps):
        x, s, z = tensor(x), tensor(s), tensor(z)
        if _same_parameters(ctx, s, z, out_scale, out_zp):
            parts.append(x)
            continue
        mult = rescale_at(ctx, "qnn.concatenate", s, out_scale, x.ndim, x.ndim - 1)
        zero = scalar_param(z)
        parts.append(requantize_value(x, lambda idx, zero=zero: zero, mult,
                                      scalar_param(out_zp), DEFAULT_ROUNDING,
                                      dtype))
    concat = lookup_lowering("concatenate")
    assert concat is not None and not concat.anchor
    return concat.fn(ctx, [tuple(parts)], ConcatenateAttrs(axis=attrs.axis), out_type)


# ================================================== fixed_point_multiply

@index_lowering("fixed_point_multiply")
def _fixed_point_multiply(ctx: LowerContext, args: Sequence[ArgValue],
                          attrs: FixedPointMultiplyAttrs, out_type: Type) -> TensorValue:
    x = tensor(args[0])
    q = Multiplier(i32(attrs.multiplier), i32(attrs.shift))
    return TensorValue(x.shape, I32, lambda idx: multiply_single(x.read(idx), q, False))


from . import qnn_linear  # noqa: E402,F401  (registers qnn.dense and qnn.conv2d)
from . import qnn_pool  # noqa: E402,F401  (registers qnn.avg_pool2d)
from . import qnn_activation  # noqa: E402,F401  (registers qnn.leaky_relu)
from . import qnn_products  # noqa: E402,F401  (qnn.batch_matmul, qnn.conv2d_transpose)
