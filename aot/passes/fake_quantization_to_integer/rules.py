"""The rule table (operator name -> dataflow patterns and handlers giving
a float node's integer representation) and the rules of the exact
operators: dequantize, layout operators, max pooling, relu, clip on the
grid, maximum/minimum, concatenate and pad of one set of parameters."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import numpy as np

from ...ir import quant
from ...ir.dtype import DType
from ...ir.expr import Call, Constant, Expr, Tuple
from ...ir.ops.transform_init import ClipAttrs
from ...ir.pattern import DFPattern, is_op, is_tuple, wildcard
from .representation import (LAYOUT_OPS, QUANT_DTYPES, Acc, Exact, QParams, Rep, make_call,
                             make_cell, pool_channel_axis, tensor_type)

if TYPE_CHECKING:
    from .analysis import Analysis

X, Y, W = wildcard(), wildcard(), wildcard()
QD, QS, QZ = wildcard(), wildcard(), wildcard()

#: ``qnn.dequantize(q, scale, zero_point)``
DEQUANTIZE = is_op("qnn.dequantize")(QD, QS, QZ)
#: ``qnn.quantize(x, scale, zero_point)``
QUANTIZE = is_op("qnn.quantize")(QD, QS, QZ)
Handler = Callable[["Analysis", Call, dict], Rep | None]
RULES: dict[str, list[tuple[DFPattern, Handler]]] = {}


def rule(name: str, pattern: DFPattern) -> Callable[[Handler], Handler]:
    def wrap(fn: Handler) -> Handler:
        RULES.setdefault(name, []).append((pattern, fn))
        return fn
    return wrap


@rule("qnn.dequantize", DEQUANTIZE)
def _dequantize(an: Analysis, node: Call, nm: dict) -> Rep | None:
    q = nm[QD][0]
    qt, t = tensor_type(q), tensor_type(node)
    s, z = an.value(nm[QS][0]), an.value(nm[QZ][0])
    if qt is None or t is None or s is None or z is None or t.dtype is not DType.FLOAT32 \
            or qt.dtype not in QUANT_DTYPES:
        return None
    ndim = len(qt.shape)
    axis = node.attrs.axis  # type: ignore[attr-defined]
    axis = (axis + ndim if axis < 0 else axis) if ndim else None
    params = QParams.make(s, z, axis, qt.dtype)
    if params is None:
        return None
    return Exact(q, params, t, None)


def _same_op(node: Call, *args: Expr) -> Call:
    return Call(node.op, tuple(args), node.attrs, span=node.span)


def _layout(an: Analysis, node: Call, nm: dict) -> Rep | None:
    x = an.reps.get(nm[X][0])
    t = tensor_type(node)
    if x is None or t is None:
        return None
    if isinstance(x, Exact):
        params = x.params
        if not params.per_tensor:
            if node.op.name != "transpose":  # type: ignore[union-attr]
                return None
            ndim = len(t.shape)
            axes = node.attrs.axes  # type: ignore[attr-defined]
            perm = list(range(ndim))[::-1] if axes is None else [a % ndim for a in axes]
            params = QParams(params.scale, params.zero_point, perm.index(params.axis),
                             params.dtype)
        return Exact(_same_op(node, x.expr), params, t, make_cell(node, x.cell))
    if x.axis is not None:
        return None
    return Acc(_same_op(node, x.expr), x.scale, None, x.bound, x.err, t, make_cell(node, x.cell))


for _name in LAYOUT_OPS:
    rule(_name, is_op(_name)(X))(_layout)


def _max_pool(an: Analysis, node: Call, nm: dict) -> Rep | None:
    x = an.reps.get(nm[X][0])
    t = tensor_type(node)
    c = pool_channel_axis(node.attrs)
    if x is None or t is None or c is None:
        return None
    axis = x.params.axis if isinstance(x, Exact) else x.axis
    if axis is not None and axis != c:
        return None
    if isinstance(x, Exact):
        return Exact(_same_op(node, x.expr), x.params, t, make_cell(node, x.cell))
    return Acc(_same_op(node, x.expr), x.scale, x.axis, x.bound, x.err, t, make_cell(node, x.cell))


rule("nn.max_pool2d", is_op("nn.max_pool2d")(X))(_max_pool)
rule("nn.global_max_pool2d", is_op("nn.global_max_pool2d")(X))(_max_pool)


@rule("nn.relu", is_op("nn.relu")(X))
def _relu(an: Analysis, node: Call, nm: dict) -> Rep | None:
    x = an.reps.get(nm[X][0])
    t = tensor_type(node)
    if x is None or t is None:
        return None
    ndim = len(t.shape)
    if isinstance(x, Acc):
        zero = Constant(np.zeros((), np.int32))
        return Acc(make_call("maximum", x.expr, zero, like=node), x.scale, x.axis, x.bound, x.err,
                   t, make_cell(node, x.cell))
    lo, hi = quant.dtype_range(x.params.dtype.np)
    if np.any(x.params.zero_point < lo) or np.any(x.params.zero_point > hi):
        return None
    zp = Constant(x.params.zero_point_at(ndim).astype(x.params.dtype.np))
    return Exact(make_call("maximum", x.expr, zp, like=node), x.params, t, make_cell(node, x.cell))


def _grid_index(params: QParams, value: float, side: str) -> int | None:
    """The integer ``k`` of the dtype with ``dequantize(k) == value``, the
    dtype's bound when ``value`` is beyond every dequantized value on
    ``side`` ("low" or "high"), else None (the bound is off the grid)."""
    lo, hi = quant.dtype_range(params.dtype.np)
    if hi - lo > 1 << 16:
        return None
    ks = np.arange(lo, hi + 1, dtype=np.int64)
    reals = params.dequantized(ks)
    if side == "low" and value <= reals[0]:
        return lo
    if side == "high" and value >= reals[-1]:
        return hi
    hits = np.nonzero(reals == np.float32(value))[0]
    if hits.size == 0:
        return None
    return int(ks[hits[0]] if side == "low" else ks[hits[-1]])


@rule("clip", is_op("clip")(X))
def _clip(an: Analysis, node: Call, nm: dict) -> Rep | None:
    x = an.exact(nm[X][0])
    t = tensor_type(node)
    if x is None or t is None or not x.params.per_tensor:
        return None
    k_lo = _grid_index(x.params, node.attrs.a_min, "low")  # type: ignore[attr-defined]
    k_hi = _grid_index(x.params, node.attrs.a_max, "high")  # type: ignore[attr-defined]
    if k_lo is None or k_hi is None or k_lo > k_hi:
        return None
    expr = make_call("clip", x.expr, attrs=ClipAttrs(float(k_lo), float(k_hi)), like=node)
    return Exact(expr, x.params, t, make_cell(node, x.cell))


def _extremum(an: Analysis, node: Call, nm: dict) -> Rep | None:
    a, b = an.exact(nm[X][0]), an.exact(nm[Y][0])
    t = tensor_type(node)
    if a is None or b is None or t is None or not a.params.same(b.params):
        return None
    ta, tb = tensor_type(nm[X][0]), tensor_type(nm[Y][0])
    if a.params.axis is not None and (ta is None or tb is None or ta.shape != tb.shape):
        return None
    return Exact(_same_op(node, a.expr, b.expr), a.params, t, make_cell(node, a.cell, b.cell))


rule("maximum", is_op("maximum")(X, Y))(_extremum)
rule("minimum", is_op("minimum")(X, Y))(_extremum)


@rule("concatenate", is_op("concatenate")(is_tuple(None)))
def _concat_exact(an: Analysis, node: Call, nm: dict) -> Rep | None:
    tup = node.args[0]
    t = tensor_type(node)
    assert isinstance(tup, Tuple)
    reps = [an.exact(f) for f in tup.fields]
    if t is None or not reps or any(r is None for r in reps):
        return None
    first = reps[0]
    assert first is not None
    if not first.params.per_tensor or not all(r.params.same(first.params)  # type: ignore
                                              for r in reps):
        return None
    inner = Tuple(tuple(r.expr for r in reps), span=tup.span)  # type: ignore[union-attr]
    cell = make_cell(node, make_cell(tup, *(r.cell for r in reps)))  # type: ignore[union-attr]
    return Exact(_same_op(node, inner), first.params, t, cell)


@rule("nn.pad", is_op("nn.pad")(X, Y))
def _pad(an: Analysis, node: Call, nm: dict) -> Rep | None:
    x = an.exact(nm[X][0])
    t = tensor_type(node)
    if x is None or t is None:
        return None
    constant_mode = node.attrs.pad_mode.value == "constant"  # type: ignore[attr-defined]
    if constant_mode:
        v = an.float_value(nm[Y][0])
        if v is None or v.size != 1 or not x.params.per_tensor:
            return None
        k = _grid_index(x.params, float(v.reshape(())), "exact")
        if k is None:
            return None
    else:
        k = int(np.max(x.params.zero_point)) if x.params.per_tensor else 0
        lo, hi = quant.dtype_range(x.params.dtype.np)
        k = min(max(k, lo), hi)
    fill = Constant(np.array(k, dtype=x.params.dtype.np))
    return Exact(_same_op(node, x.expr, fill), x.params, t, make_cell(node, x.cell))
