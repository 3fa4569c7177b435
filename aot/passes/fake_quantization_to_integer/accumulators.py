"""The rules that make and keep int32 accumulators (:class:`Acc`):
convolution and dense layers, average pooling and means, scaling by a
constant, bias and constant additions."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ...ir.dtype import DType
from ...ir.expr import Call, Constant, Expr
from ...ir.ops.nn_util import pair
from ...ir.ops.nn_conv import Conv2DAttrs
from ...ir.ops.nn_pool import AvgPool2DAttrs, GlobalPool2DAttrs
from ...ir.ops.qnn_linear import QnnConv2DAttrs, QnnDenseAttrs
from ...ir.ops.reduce import ReduceAttrs
from ...ir.ops.transform_init import CastAttrs
from ...ir.pattern import is_op
from ...ir.types import TensorType
from .representation import (CONV_IN, DENSE_DATA, DENSE_WEIGHT, I32, SAFE, Acc, Exact,
                             QParams, Rep, acc_scale, along, make_call, make_cell, param_axis,
                             pool_channel_axis, tensor_type)
from .rules import W, X, Y, rule

if TYPE_CHECKING:
    from .analysis import Analysis

def _weight_sums(an: Analysis, w: Exact, out_axis: int) -> np.ndarray | None:
    """``sum |w - zw|`` per output channel of a constant weight, or None."""
    v = an.value(w.expr)
    if v is None:
        return None
    ndim = v.ndim
    z = w.params.zero_point_at(ndim)
    dev = np.abs(v.astype(np.int64) - z)
    other = tuple(i for i in range(ndim) if i != out_axis)
    return dev.sum(axis=other)


def _acc_bound(an: Analysis, x: Exact, w: Exact, out_axis: int, taps: int) -> int:
    sums = _weight_sums(an, w, out_axis)
    per_channel = int(np.max(sums)) if sums is not None and sums.size else taps * w.params.deviation
    return x.params.deviation * per_channel


@rule("nn.conv2d", is_op("nn.conv2d")(X, W))
def _conv2d(an: Analysis, node: Call, nm: dict) -> Rep | None:
    x, w = an.exact(nm[X][0]), an.exact(nm[W][0])
    t, wt = tensor_type(node), tensor_type(nm[W][0])
    a = node.attrs
    assert isinstance(a, Conv2DAttrs)
    if x is None or w is None or t is None or wt is None or not x.params.per_tensor:
        return None
    if x.params.dtype not in CONV_IN or w.params.dtype not in CONV_IN \
            or a.out_dtype not in (None, DType.FLOAT32):
        return None
    if a.data_layout not in ("NCHW", "NHWC") or a.out_layout not in ("", "NCHW", "NHWC") \
            or a.kernel_layout not in ("OIHW", "HWIO", "HWOI", "OHWI"):
        return None
    o_axis = a.kernel_layout.index("O")
    if not w.params.per_tensor and w.params.axis != o_axis:
        return None
    taps = int(np.prod(wt.shape)) // int(wt.shape[o_axis])
    bound = _acc_bound(an, x, w, o_axis, taps)
    if bound >= SAFE:
        return None
    attrs = QnnConv2DAttrs(strides=a.strides, padding=a.padding, dilation=a.dilation,
                           groups=a.groups, channels=a.channels, kernel_size=a.kernel_size,
                           data_layout=a.data_layout, kernel_layout=a.kernel_layout,
                           out_layout=a.out_layout, out_dtype=I32)
    expr = make_call("qnn.conv2d", x.expr, w.expr, x.params.zero_point_arg(),
                     w.params.zero_point_arg(), x.params.scale_arg(), w.params.scale_arg(),
                     attrs=attrs, like=node)
    axis = None if w.params.per_tensor else (a.out_layout or a.data_layout).index("C")
    return Acc(expr, acc_scale(x, w), axis, bound, 0.0, t, make_cell(node, x.cell, w.cell))


def _dense_acc(an: Analysis, node: Call, x: Exact, w: Exact, w_expr: Expr,
               w_value: np.ndarray | None, t: TensorType, units: int | None) -> Rep | None:
    """``qnn.dense`` of ``x`` and the ``(units, K)`` weight ``w_expr``
    (values ``w_value`` when constant) whose quantization ``w`` is per
    tensor or per row (axis 0)."""
    if not x.params.per_tensor or x.params.dtype not in DENSE_DATA \
            or w.params.dtype not in DENSE_WEIGHT:
        return None
    if not w.params.per_tensor and w.params.axis != 0:
        return None
    k = int(t.shape[-1]) if w_value is None else int(w_value.shape[1])
    if w_value is None:
        bound = x.params.deviation * k * w.params.deviation
    else:
        dev = np.abs(w_value.astype(np.int64) - w.params.zero_point_at(2))
        bound = x.params.deviation * int(np.max(dev.sum(axis=1)))
    if bound >= SAFE:
        return None
    expr = make_call("qnn.dense", x.expr, w_expr, x.params.zero_point_arg(),
                     w.params.zero_point_arg(), x.params.scale_arg(), w.params.scale_arg(),
                     attrs=QnnDenseAttrs(units=units, out_dtype=I32), like=node)
    axis = None if w.params.per_tensor else len(t.shape) - 1
    return Acc(expr, acc_scale(x, w), axis, bound, 0.0, t, make_cell(node, x.cell, w.cell))


@rule("nn.dense", is_op("nn.dense")(X, W))
def _dense(an: Analysis, node: Call, nm: dict) -> Rep | None:
    x, w = an.exact(nm[X][0]), an.exact(nm[W][0])
    t = tensor_type(node)
    if x is None or w is None or t is None \
            or node.attrs.out_dtype not in (None, DType.FLOAT32):  # type: ignore[attr-defined]
        return None
    wt = tensor_type(w.expr)
    if wt is None or len(wt.shape) != 2:
        return None
    units = node.attrs.units  # type: ignore[attr-defined]
    return _dense_acc(an, node, x, w, w.expr, an.value(w.expr), t, units)


@rule("nn.matmul", is_op("nn.matmul")(X, W))
def _matmul(an: Analysis, node: Call, nm: dict) -> Rep | None:
    """``x @ w`` with a constant 2-D ``w``: ``qnn.dense`` of the weight
    transposed at compile time."""
    x, w = an.exact(nm[X][0]), an.exact(nm[W][0])
    t = tensor_type(node)
    a = node.attrs
    if x is None or w is None or t is None or a.transpose_a \
            or a.out_dtype not in (None, DType.FLOAT32):  # type: ignore[attr-defined]
        return None
    v = an.value(w.expr)
    if v is None or v.ndim != 2:
        return None
    params = w.params
    if not a.transpose_b:  # type: ignore[attr-defined]
        v = v.T
        if not params.per_tensor:
            if params.axis != 1:
                return None
            params = QParams(params.scale, params.zero_point, 0, params.dtype)
    v = np.ascontiguousarray(v)
    weight = Constant(v, span=w.expr.span)
    return _dense_acc(an, node, x, Exact(w.expr, params, w.ttype, w.cell), weight, v, t, None)


def _with_constant(an: Analysis, node: Call, acc: Acc, b: np.ndarray) -> Rep | None:
    """``acc + b`` for a float constant ``b`` (broadcasting against the
    accumulator): ``b`` rounded to the accumulator's scales, its rounding
    added to ``err``."""
    t = tensor_type(node)
    if t is None:
        return None
    ndim = len(t.shape)
    scale = acc.scale_at(ndim)
    with np.errstate(all="ignore"):
        b_int = np.round(b.astype(np.float64) / scale)
    if not np.all(np.isfinite(b_int)):
        return None
    try:
        if np.broadcast_shapes(tuple(t.shape), b_int.shape) != tuple(t.shape):
            return None
    except ValueError:
        return None
    top = float(np.max(np.abs(b_int))) if b_int.size else 0.0
    if acc.bound + top >= SAFE:
        return None
    err = float(np.max(np.abs(b_int * scale - b.astype(np.float64)))) if b_int.size else 0.0
    const = Constant(b_int.astype(np.int32))
    return Acc(make_call("add", acc.expr, const, like=node), acc.scale, acc.axis,
               acc.bound + int(top), acc.err + err, t, make_cell(node, acc.cell))


@rule("nn.bias_add", is_op("nn.bias_add")(X, Y))
def _bias_add(an: Analysis, node: Call, nm: dict) -> Rep | None:
    acc = an.acc(nm[X][0])
    b = an.float_value(nm[Y][0])
    t = tensor_type(node)
    if acc is None or b is None or t is None or b.ndim != 1:
        return None
    ndim = len(t.shape)
    axis = node.attrs.axis % ndim  # type: ignore[attr-defined]
    return _with_constant(an, node, acc, along(b, ndim, axis))


#: the bits an Exact operand is shifted left by when it becomes an
#: accumulator (:func:`_widen`): fine enough that a constant added at the
#: new scale rounds by at most 2**-(bits+1) of the operand's step
_WIDEN_BITS = 24


def _widen(x: Exact, ndim: int, like: Call, factors: np.ndarray | None = None,
           axis: int | None = None) -> Acc:
    """An Exact value as an accumulator: ``(int32(q) - z) * m`` with
    ``m = sign(f) * 2**k`` and scales ``s * |f| / 2**k`` (``f``: one
    factor, default 1, or one per index of ``axis``, which is then ``x``'s
    channel axis if it has one), so that constants added later are
    represented finely; ``k`` keeps ``|acc| < 2**24``."""
    dev = x.params.deviation
    k = max(0, _WIDEN_BITS - dev.bit_length())
    f = np.ones(()) if factors is None else factors
    mult = np.where(f < 0, -1, np.where(f > 0, 1, 0)) * (1 << k)
    magnitude = np.where(f == 0, 1.0, np.abs(f))
    scale = (x.params.scale.astype(np.float64) * magnitude / (1 << k)).astype(np.float32)
    if f.size == 1:
        axis = x.params.axis
    return _scaled_ints(x, ndim, like, mult, scale, axis, dev << k)


def _scaled_ints(x: Exact, ndim: int, like: Call, mult: np.ndarray, scale: np.ndarray,
                 axis: int | None, bound: int) -> Acc:
    ints: Expr = make_call("cast", x.expr, attrs=CastAttrs(dtype=I32), like=like)
    if np.any(x.params.zero_point):
        zp = Constant(x.params.zero_point_at(ndim).astype(np.int32))
        ints = make_call("subtract", ints, zp, like=like)
    if np.any(mult != 1):
        ints = make_call("multiply", ints, Constant(along(mult.astype(np.int32), ndim, axis)),
                         like=like)
    if scale.size == 1:
        scale, axis = scale.reshape(()), None
    return Acc(ints, scale, axis, bound, 0.0, x.ttype, x.cell)


def _channel_factors(c: np.ndarray, ndim: int,
                     axis: int | None) -> tuple[np.ndarray, int | None] | None:
    """A constant factor as (values, axis): one value, or one per index of
    a single axis, which must agree with the operand's channel ``axis``."""
    c_axis = param_axis(c.shape, ndim)
    if c_axis is False:
        return None
    values = c.astype(np.float64).reshape(-1)
    if c_axis is None:
        return values[:1].reshape(()), axis
    if axis is not None and axis != c_axis:
        return None
    return values, c_axis  # type: ignore[return-value]


def _split_constant(an: Analysis, nm: dict) -> tuple[Expr, Rep, np.ndarray] | None:
    """The operand with a representation and the other's constant value
    (an operand that is not itself a constant preferred)."""
    lhs, rhs = nm[X][0], nm[Y][0]
    found = []
    for x, c in ((lhs, rhs), (rhs, lhs)):
        rep = an.reps.get(x)
        if rep is None:     # (no constant evaluated: float models meet this everywhere)
            continue
        value = an.float_value(c)
        if value is not None:
            found.append((an.closed.get(x, False), x, rep, value))
    if not found:
        return None
    _, x, rep, value = min(found, key=lambda f: f[0])
    return x, rep, value


@rule("multiply", is_op("multiply")(X, Y))
@rule("divide", is_op("divide")(X, Y))
def _rescale(an: Analysis, node: Call, nm: dict) -> Rep | None:
    """``x * c`` or ``x / c`` for a constant ``c`` per tensor or per
    channel (a batch normalisation after SimplifyInference): an
    accumulator whose scales absorb ``|c|`` and whose integers carry its
    sign (and, from an Exact ``x``, a shift, :func:`_widen`)."""
    split = _split_constant(an, nm)
    t = tensor_type(node)
    if split is None or t is None:
        return None
    x_node, x, c = split
    name = node.op.name  # type: ignore[union-attr]
    if name == "divide" and x_node is not nm[X][0]:
        return None                                   # c / x is not linear
    if tensor_type(x_node) is None or tensor_type(x_node).shape != t.shape:  # type: ignore
        return None
    ndim = len(t.shape)
    x_axis = x.params.axis if isinstance(x, Exact) else x.axis
    got = _channel_factors(c, ndim, x_axis)
    if got is None:
        return None
    factors, axis = got
    if name == "divide":
        if np.any(factors == 0):
            return None
        factors = 1.0 / factors
    if not np.all(np.isfinite(factors)):
        return None
    if isinstance(x, Exact):
        acc = _widen(x, ndim, node, factors, axis)
        acc = Acc(acc.expr, acc.scale, acc.axis if acc.scale.ndim else None, acc.bound, 0.0, t,
                  make_cell(node, x.cell))
    else:
        mult = np.where(factors < 0, -1, np.where(factors > 0, 1, 0))
        magnitude = np.where(factors == 0, 1.0, np.abs(factors))
        scale = (x.scale.astype(np.float64) * magnitude).astype(np.float32)
        expr = x.expr
        if np.any(mult != 1):
            expr = make_call("multiply", expr, Constant(along(mult.astype(np.int32), ndim, axis)),
                             like=node)
        if scale.size == 1:
            scale, axis = scale.reshape(()), None
        acc = Acc(expr, scale, axis, x.bound, x.err * float(np.max(magnitude)), t,
                  make_cell(node, x.cell))
    if not np.all(np.isfinite(acc.scale)) or np.any(acc.scale <= 0):
        return None
    return acc


@rule("add", is_op("add")(X, Y))
def _add_acc(an: Analysis, node: Call, nm: dict) -> Rep | None:
    """``acc + acc`` with equal scales; ``acc + c`` and ``x + c`` for an
    Exact ``x`` (widened first) and a constant ``c``."""
    lhs, rhs = nm[X][0], nm[Y][0]
    a, b = an.acc(lhs), an.acc(rhs)
    t = tensor_type(node)
    if t is None:
        return None
    if a is not None and b is not None:
        same = a.axis == b.axis and a.scale.shape == b.scale.shape \
            and bool(np.all(a.scale == b.scale))
        if not same or a.bound + b.bound >= SAFE or a.ttype.shape != b.ttype.shape:
            return None
        return Acc(make_call("add", a.expr, b.expr, like=node), a.scale, a.axis, a.bound + b.bound,
                   a.err + b.err, t, make_cell(node, a.cell, b.cell))
    return _plus_constant(an, node, nm, 1.0)


@rule("subtract", is_op("subtract")(X, Y))
def _subtract_acc(an: Analysis, node: Call, nm: dict) -> Rep | None:
    """``x - c`` for a constant ``c``."""
    return _plus_constant(an, node, nm, -1.0)


def _plus_constant(an: Analysis, node: Call, nm: dict, sign: float) -> Rep | None:
    split = _split_constant(an, nm)
    t = tensor_type(node)
    if split is None or t is None or (sign < 0 and split[0] is not nm[X][0]):
        return None
    _, x, c = split
    acc = _widen(x, len(t.shape), node) if isinstance(x, Exact) else x
    return _with_constant(an, node, acc, sign * c.astype(np.float64))


def _sum_of_shifted(x: Exact, ndim: int, attrs: ReduceAttrs, like: Call) -> Call:
    """``sum(int32(q) - z)`` with the reduction's attributes."""
    shifted: Expr = make_call("cast", x.expr, attrs=CastAttrs(dtype=I32), like=like)
    if np.any(x.params.zero_point):
        zp = Constant(x.params.zero_point_at(ndim).astype(np.int32))
        shifted = make_call("subtract", shifted, zp, like=like)
    return make_call("sum", shifted, attrs=attrs, like=like)


def _mean_acc(an: Analysis, node: Call, x: Exact, axes: set[int], attrs: ReduceAttrs,
              xt: TensorType) -> Rep | None:
    t = tensor_type(node)
    ndim = len(xt.shape)
    if t is None or not axes or (x.params.axis is not None and x.params.axis in axes):
        return None
    n = int(np.prod([xt.shape[i] for i in axes]))
    bound = n * x.params.deviation
    if bound >= SAFE:
        return None
    axis = x.params.axis
    if axis is not None and not attrs.keepdims:
        axis -= sum(1 for i in axes if i < axis)
    scale = (x.params.scale.astype(np.float64) / n).astype(np.float32)
    return Acc(_sum_of_shifted(x, ndim, attrs, node), scale, axis, bound, 0.0, t,
               make_cell(node, x.cell))


@rule("mean", is_op("mean")(X))
def _mean(an: Analysis, node: Call, nm: dict) -> Rep | None:
    x = an.exact(nm[X][0])
    xt = tensor_type(nm[X][0])
    a = node.attrs
    if x is None or xt is None or not isinstance(a, ReduceAttrs):
        return None
    ndim = len(xt.shape)
    chosen = set(range(ndim)) if a.axis is None else {i % ndim for i in a.axis}
    axes = set(range(ndim)) - chosen if a.exclude else chosen
    return _mean_acc(an, node, x, axes, a, xt)


@rule("nn.global_avg_pool2d", is_op("nn.global_avg_pool2d")(X))
def _global_avg_pool(an: Analysis, node: Call, nm: dict) -> Rep | None:
    x = an.exact(nm[X][0])
    xt = tensor_type(nm[X][0])
    a = node.attrs
    assert isinstance(a, GlobalPool2DAttrs)
    if x is None or xt is None or pool_channel_axis(a) is None:
        return None
    axes = {a.layout.index("H"), a.layout.index("W")}
    attrs = ReduceAttrs(axis=tuple(sorted(axes)), keepdims=True)
    return _mean_acc(an, node, x, axes, attrs, xt)


@rule("nn.avg_pool2d", is_op("nn.avg_pool2d")(X))
def _avg_pool(an: Analysis, node: Call, nm: dict) -> Rep | None:
    """A window average with a fixed divisor (no padding, or padding
    counted) as a depthwise ``qnn.conv2d`` with unit weights: the exact
    window sum, scale ``s / taps``."""
    x = an.exact(nm[X][0])
    xt, t = tensor_type(nm[X][0]), tensor_type(node)
    a = node.attrs
    assert isinstance(a, AvgPool2DAttrs)
    if x is None or xt is None or t is None or not x.params.per_tensor \
            or x.params.dtype not in CONV_IN or pool_channel_axis(a) is None \
            or a.layout not in ("NCHW", "NHWC") or a.ceil_mode:
        return None
    if any(a.padding) and not a.count_include_pad:
        return None
    kh, kw = pair(a.pool_size)
    channels = int(xt.shape[a.layout.index("C")])
    taps = kh * kw
    bound = taps * x.params.deviation
    ones = Constant(np.ones((channels, 1, kh, kw), np.int8))
    attrs = QnnConv2DAttrs(strides=a.strides, padding=a.padding, dilation=a.dilation,
                           groups=channels, channels=channels, kernel_size=(kh, kw),
                           data_layout=a.layout, kernel_layout="OIHW", out_dtype=I32)
    expr = make_call("qnn.conv2d", x.expr, ones, x.params.zero_point_arg(),
                     Constant(np.zeros((), np.int32)), x.params.scale_arg(),
                     Constant(np.ones((), np.float32)), attrs=attrs, like=node)
    scale = (x.params.scale.astype(np.float64) / taps).astype(np.float32)
    return Acc(expr, scale, None, bound, 0.0, t, make_cell(node, x.cell))
