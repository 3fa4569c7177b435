"""Gradient rules: the ``grad`` column of the operator records.

Design note
-----------
As Relay's ``python/tvm/relay/op/_tensor_grad.py`` (``register_gradient``),
each rule maps a typed call and the gradient of its result (``g``, same
type as the result) to the adjoint of each argument: expressions built
from operator calls of the catalogue, so the gradient program is an
ordinary program that type inference, the optimizer and the C backend
handle like any other.  :func:`~aot.ir.ops.common.defop` fills the column
from :data:`RULES`, so the operator records need no change.

Conventions, where we differ from Relay (same values, fewer kernels):

* ``call`` itself stands for the call's result; automatic differentiation
  binds the result once and substitutes it (so ``exp``'s rule is
  ``g * exp(x)`` computed as ``g * call``, not a second ``exp``).
* A broadcasting operand's adjoint is summed back to its shape with
  ``collapse_sum_like`` only when the shapes differ.
* ``None`` is a zero adjoint that costs nothing (an index, a condition,
  the shape source of ``*_like``): Relay's LazyGradientInit idea at the
  rule level.
* Shapes are static (the rules read ``checked_type``), so reshapes back
  to an operand's shape use ``reshape`` with the known shape.

:data:`NOT_DIFFERENTIABLE` says, for every other operator of the catalogue,
why it has no rule; ``tests/test_gradient_rules.py`` checks that the two
tables cover the catalogue exactly.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

import numpy as np

from ..expr import Call, Constant, Expr, op
from ..types import TensorType
from .shape_util import group_shape, instance_axes, l2_axes

__all__ = ["RULES", "NOT_DIFFERENTIABLE", "NoGradient", "why_not_differentiable", "call",
           "tensor_type"]


class NoGradient(Exception):
    """A rule cannot differentiate this particular call (a layout or an
    attribute it does not handle); automatic differentiation reports it
    as a diagnostic naming the operator."""

Adjoints = list[Optional[Expr]]
Rule = Callable[[Call, Expr], Sequence[Optional[Expr]]]


# ------------------------------------------------------------ building blocks

def call(name: str, *args: Expr, **attrs: Any) -> Call:
    """A call of operator ``name``; ``attrs`` converted by its attrs class
    (the C++ defaults of Relay for omitted ones)."""
    from ..registry import lookup
    op_def = lookup(name)
    assert op_def is not None, name
    return Call(op(name), tuple(args), op_def.attrs_type.from_raw(attrs))


def tensor_type(e: Expr) -> TensorType:
    t = e.checked_type
    assert isinstance(t, TensorType), f"gradient rule on an untyped or non-tensor value: {t}"
    return t


def _shape(e: Expr) -> tuple[int, ...]:
    shape = tensor_type(e).shape
    assert all(isinstance(d, int) for d in shape), "gradient rules need static shapes"
    return tuple(int(d) for d in shape)  # type: ignore[arg-type]


def _scalar(value: float, like: Expr) -> Constant:
    dt = tensor_type(like).dtype
    return Constant(np.asarray(value, dtype=dt.np))


def _add(a: Expr, b: Expr) -> Expr:
    return call("add", a, b)


def _sub(a: Expr, b: Expr) -> Expr:
    return call("subtract", a, b)


def _mul(a: Expr, b: Expr) -> Expr:
    return call("multiply", a, b)


def _div(a: Expr, b: Expr) -> Expr:
    return call("divide", a, b)


def _neg(a: Expr) -> Expr:
    return call("negative", a)


def _collapse(g: Expr, out: Call, x: Expr) -> Expr:
    """``g`` (of ``out``'s shape) summed back to ``x``'s shape."""
    if _shape(out) == _shape(x):
        return g
    return call("collapse_sum_like", g, x)


def _attr(c: Call, name: str) -> Any:
    """Attribute ``name`` of the call (each operator has its own attrs class)."""
    return getattr(c.attrs, name)


def _reduce_axes(c: Call) -> list[int]:
    """The axes a reduction ``c`` reduces, nonnegative and sorted."""
    rank = len(_shape(c.args[0]))
    attrs = c.attrs
    axis = getattr(attrs, "axis", None)
    if axis is None:
        return list(range(rank))
    axes = [axis] if isinstance(axis, int) else list(axis)
    norm = sorted({a + rank if a < 0 else a for a in axes})
    if getattr(attrs, "exclude", False):
        norm = [a for a in range(rank) if a not in norm]
    return norm


def _unreduce(g: Expr, c: Call) -> Expr:
    """``g`` (a reduction's result gradient) with the reduced axes put back
    as size 1, so it broadcasts against the reduction's input."""
    if getattr(c.attrs, "keepdims", False):
        return g
    shape = list(_shape(c.args[0]))
    for a in _reduce_axes(c):
        shape[a] = 1
    return call("reshape", g, newshape=shape)


# ------------------------------------------------------------ the rules

def _add_grad(c: Call, g: Expr) -> Adjoints:
    x, y = c.args
    return [_collapse(g, c, x), _collapse(g, c, y)]


def _subtract_grad(c: Call, g: Expr) -> Adjoints:
    x, y = c.args
    return [_collapse(g, c, x), _collapse(_neg(g), c, y)]


def _multiply_grad(c: Call, g: Expr) -> Adjoints:
    x, y = c.args
    return [_collapse(_mul(g, y), c, x), _collapse(_mul(g, x), c, y)]


def _divide_grad(c: Call, g: Expr) -> Adjoints:
    x, y = c.args
    return [_collapse(_div(g, y), c, x), _collapse(_neg(_div(_mul(g, c), y)), c, y)]


def _power_grad(c: Call, g: Expr) -> Adjoints:
    """d x^y = y x^(y-1) dx + x^y log(x) dy."""
    x, y = c.args
    one = _scalar(1.0, x)
    dx = _mul(g, _mul(y, call("power", x, _sub(y, one))))
    dy = _mul(g, _mul(c, call("log", x)))
    return [_collapse(dx, c, x), _collapse(dy, c, y)]


def _select_grad(pick_first: Callable[[Expr, Expr], Expr]) -> Rule:
    """maximum / minimum: the gradient goes to the operand picked (to the
    first on ties, as the comparison ``pick_first`` decides)."""
    def rule(c: Call, g: Expr) -> Adjoints:
        x, y = c.args
        first = pick_first(x, y)
        zero = _scalar(0.0, c)
        return [_collapse(call("where", first, g, zero), c, x),
                _collapse(call("where", first, zero, g), c, y)]
    return rule


def _unary(dfdx: Callable[[Call, Expr], Expr]) -> Rule:
    """A rule ``[g * dfdx(call, x)]`` for an elementwise function of one argument."""
    def rule(c: Call, g: Expr) -> Adjoints:
        return [_mul(g, dfdx(c, c.args[0]))]
    return rule


def _relu_grad(c: Call, g: Expr) -> Adjoints:
    x = c.args[0]
    return [call("where", call("less", x, _scalar(0.0, x)), _scalar(0.0, x), g)]


def _leaky_relu_grad(c: Call, g: Expr) -> Adjoints:
    x = c.args[0]
    alpha = _scalar(float(_attr(c, "alpha")), x)
    return [call("where", call("less", x, _scalar(0.0, x)), _mul(g, alpha), g)]


def _abs_grad(c: Call, g: Expr) -> Adjoints:
    x = c.args[0]
    return [call("where", call("less", x, _scalar(0.0, x)), _neg(g), g)]


def _clip_grad(c: Call, g: Expr) -> Adjoints:
    x = c.args[0]
    lo = _scalar(float(_attr(c, "a_min")), x)
    hi = _scalar(float(_attr(c, "a_max")), x)
    outside = call("logical_or", call("less", x, lo), call("less", hi, x))
    return [call("where", outside, _scalar(0.0, x), g)]


def _identity_grad(c: Call, g: Expr) -> Adjoints:
    return [g]


def _negative_grad(c: Call, g: Expr) -> Adjoints:
    return [_neg(g)]


def _cast_grad(c: Call, g: Expr) -> Adjoints:
    x = c.args[0]
    if not tensor_type(x).dtype.is_float:
        return [None]
    return [call("cast", g, dtype=tensor_type(x).dtype.value)]


def _reshape_grad(c: Call, g: Expr) -> Adjoints:
    """reshape, reshape_like, batch_flatten, squeeze, expand_dims: the
    gradient reshaped back (a ``*_like`` shape source gets none)."""
    return [call("reshape", g, newshape=list(_shape(c.args[0])))] + [None] * (len(c.args) - 1)


def _transpose_grad(c: Call, g: Expr) -> Adjoints:
    axes = _attr(c, "axes")
    if not axes:
        return [call("transpose", g)]
    rank = len(axes)
    inverse = [0] * rank
    for i, a in enumerate(axes):
        inverse[a + rank if a < 0 else a] = i
    return [call("transpose", g, axes=inverse)]


def _sum_grad(c: Call, g: Expr) -> Adjoints:
    return [call("broadcast_to_like", _unreduce(g, c), c.args[0])]


def _mean_grad(c: Call, g: Expr) -> Adjoints:
    shape = _shape(c.args[0])
    count = 1
    for a in _reduce_axes(c):
        count *= shape[a]
    scaled = _mul(_unreduce(g, c), _scalar(1.0 / count, c.args[0]))
    return [call("broadcast_to_like", scaled, c.args[0])]


def _softmax_grad(c: Call, g: Expr) -> Adjoints:
    axis = _attr(c, "axis")
    return [_mul(_sub(g, call("sum", _mul(g, c), axis=[axis], keepdims=True)), c)]


def _log_softmax_grad(c: Call, g: Expr) -> Adjoints:
    axis = _attr(c, "axis")
    return [_sub(g, _mul(call("sum", g, axis=[axis], keepdims=True), call("exp", c)))]


def _bias_add_grad(c: Call, g: Expr) -> Adjoints:
    data = c.args[0]
    rank = len(_shape(data))
    axis = _attr(c, "axis")
    axis = axis + rank if axis < 0 else axis
    return [g, call("sum", g, axis=[axis], exclude=True)]


def _dense_grad(c: Call, g: Expr) -> Adjoints:
    """``y = x W^T``: ``dx = g W``, ``dW = g^T x`` (leading axes of ``x``
    flattened into one batch axis first)."""
    x, w = c.args
    xs, ws = _shape(x), _shape(w)
    units, k = ws
    x2: Expr = x
    g2: Expr = g
    if len(xs) != 2:
        x2 = call("reshape", x, newshape=[-1, k])
        g2 = call("reshape", g, newshape=[-1, units])
    dx: Expr = call("nn.dense", g2, call("transpose", w), units=k)
    if len(xs) != 2:
        dx = call("reshape", dx, newshape=list(xs))
    dw = call("nn.dense", call("transpose", g2), call("transpose", x2), units=k)
    return [dx, dw]


def _global_avg_pool_grad(c: Call, g: Expr) -> Adjoints:
    x = c.args[0]
    layout = _attr(c, "layout")
    shape = _shape(x)
    h, w = shape[layout.index("H")], shape[layout.index("W")]
    return [call("broadcast_to_like", _mul(g, _scalar(1.0 / (h * w), x)), x)]


def _where_grad(c: Call, g: Expr) -> Adjoints:
    cond, x, y = c.args
    zero = _scalar(0.0, c)
    return [None, _collapse(call("where", cond, g, zero), c, x),
            _collapse(call("where", cond, zero, g), c, y)]


def _broadcast_grad(c: Call, g: Expr) -> Adjoints:
    """broadcast_to, broadcast_to_like: sum back (the shape source gets none)."""
    return [_collapse(g, c, c.args[0])] + [None] * (len(c.args) - 1)


def _collapse_grad(c: Call, g: Expr) -> Adjoints:
    """collapse_sum_like / collapse_sum_to: broadcast back."""
    return [call("broadcast_to_like", g, c.args[0])] + [None] * (len(c.args) - 1)


def _constant_grad(c: Call, g: Expr) -> Adjoints:
    """zeros, ones, zeros_like, ones_like: the result does not depend on the values."""
    return [None] * len(c.args)


def _full_grad(c: Call, g: Expr) -> Adjoints:
    """full(v) / full_like(x, v): every element is the fill value ``v``."""
    return [None] * (len(c.args) - 1) + [call("sum", g)]


def _concatenate_grad(c: Call, g: Expr) -> Adjoints:
    from ..types import TupleType
    t = c.args[0].checked_type
    assert isinstance(t, TupleType)
    axis = _attr(c, "axis")
    rank = len(_shape(c))
    axis = axis + rank if axis < 0 else axis
    cuts, at = [], 0
    for f in t.fields[:-1]:
        assert isinstance(f, TensorType)
        at += int(f.shape[axis])  # type: ignore[call-overload]
        cuts.append(at)
    return [call("split", g, indices_or_sections=cuts, axis=axis)]


def _conv2d_grad(c: Call, g: Expr) -> Adjoints:
    """Relay's rule: the data gradient is the transposed convolution of
    ``g`` with the same weight; the weight gradient correlates the data
    with ``g`` -- itself a convolution with strides and dilation swapped,
    batch and channel axes exchanged (``groups=1``) or folded together
    (depthwise), cut to the kernel size.  NCHW / OIHW only."""
    from .nn_util import pair, padding_2d
    x, w = c.args
    if (_attr(c, "data_layout"), _attr(c, "kernel_layout")) != ("NCHW", "OIHW") \
            or _attr(c, "out_layout") not in ("", "NCHW"):
        raise NoGradient("the gradient rule handles NCHW data and OIHW kernels only "
                         "(ConvertLayout can convert the program first)")
    n, ch, h, wd = _shape(x)
    o, ig, kh, kw = _shape(w)
    _, _, oh, ow = _shape(c)
    sh, sw = pair(_attr(c, "strides"))
    dh, dw = pair(_attr(c, "dilation"))
    pads = list(padding_2d(_attr(c, "padding")))
    groups = _attr(c, "groups")
    out_dtype = _attr(c, "out_dtype")
    if out_dtype is not None and out_dtype != tensor_type(x).dtype:
        raise NoGradient("the gradient rule needs out_dtype equal to the data's dtype")
    full_h = (oh - 1) * sh - pads[0] - pads[2] + dh * (kh - 1) + 1
    full_w = (ow - 1) * sw - pads[1] - pads[3] + dw * (kw - 1) + 1
    dx = call("nn.conv2d_transpose", g, w, channels=ch, kernel_size=[kh, kw],
              strides=[sh, sw], padding=pads, output_padding=[h - full_h, wd - full_w],
              dilation=[dh, dw], groups=groups)
    reach = ((h + pads[0] + pads[2] - sh * (oh - 1) - 1) // dh + 1,
             (wd + pads[1] + pads[3] - sw * (ow - 1) - 1) // dw + 1)
    swapped = {"strides": [dh, dw], "padding": pads, "dilation": [sh, sw],
               "kernel_size": [oh, ow]}
    if groups == 1:
        corr = call("nn.conv2d", call("transpose", x, axes=[1, 0, 2, 3]),
                    call("transpose", g, axes=[1, 0, 2, 3]), channels=o, **swapped)
        dw_full = call("transpose", _cut(corr, kh, kw, reach), axes=[1, 0, 2, 3])
    elif groups == ch == o and ig == 1:
        corr = call("nn.conv2d", call("reshape", x, newshape=[1, n * ch, h, wd]),
                    call("reshape", g, newshape=[n * ch, 1, oh, ow]), channels=n * ch,
                    groups=n * ch, **swapped)
        per_image = call("reshape", _cut(corr, kh, kw, reach), newshape=[n, ch, kh, kw])
        dw_full = call("reshape", call("sum", per_image, axis=[0]), newshape=[o, 1, kh, kw])
    else:
        raise NoGradient(f"the gradient rule handles groups=1 and depthwise convolutions, "
                         f"not groups={groups} with {ig} input channels per group")
    return [dx, dw_full]


def _cut(e: Expr, kh: int, kw: int, reach: tuple[int, int]) -> Expr:
    """``e[:, :, :kh, :kw]``: the correlation reaches ``reach`` taps, past
    the kernel when the stride does not divide the padded extent."""
    if reach == (kh, kw):
        return e
    return call("strided_slice", e, begin=[0, 0], end=[kh, kw], strides=[1, 1], axes=[2, 3])


def _matmul_table(mm: str, c: Call, g: Expr) -> Adjoints:
    """``y = op(a) @ op(b)`` (``op`` a transpose when its flag is set), as
    Relay's ``matmul_grad`` / ``batch_matmul_grad``: both adjoints are
    products of ``g`` with the other operand, flags chosen so no explicit
    transpose is needed; a broadcast batch of 1 is summed back."""
    a, b = c.args
    ta, tb = bool(_attr(c, "transpose_a")), bool(_attr(c, "transpose_b"))
    if not ta:
        da: Expr = call(mm, g, b, transpose_a=False, transpose_b=not tb)
    else:
        da = call(mm, b, g, transpose_a=tb, transpose_b=True)
    if not tb:
        db: Expr = call(mm, a, g, transpose_a=not ta, transpose_b=False)
    else:
        db = call(mm, g, a, transpose_a=True, transpose_b=ta)
    if mm == "nn.batch_matmul":
        da = _collapse_to(da, _shape(c)[0], a)
        db = _collapse_to(db, _shape(c)[0], b)
    return [da, db]


def _collapse_to(d: Expr, batch: int, x: Expr) -> Expr:
    return d if _shape(x)[0] == batch else call("sum", d, axis=[0], keepdims=True)


def _matmul_grad(c: Call, g: Expr) -> Adjoints:
    if len(_shape(c.args[0])) != 2 or len(_shape(c.args[1])) != 2:
        raise NoGradient("the gradient rule handles 2-d operands only")
    return _matmul_table("nn.matmul", c, g)


def _batch_matmul_grad(c: Call, g: Expr) -> Adjoints:
    return _matmul_table("nn.batch_matmul", c, g)


def _reverse_grad(c: Call, g: Expr) -> Adjoints:
    return [call("reverse", g, axis=_attr(c, "axis"))]


def _extremum_grad(c: Call, g: Expr) -> Adjoints:
    """max / min: the gradient is shared equally by the elements equal to
    the extremum (Relay's rule)."""
    x = c.args[0]
    dtype = tensor_type(x).dtype.value
    hit = call("cast", call("equal", x, _unreduce(c, c)), dtype=dtype)
    count = call("sum", hit, axis=_reduce_axes(c), keepdims=True)
    return [_div(_mul(hit, _unreduce(g, c)), count)]


def _logsumexp_grad(c: Call, g: Expr) -> Adjoints:
    x = c.args[0]
    return [_mul(call("exp", _sub(x, _unreduce(c, c))), _unreduce(g, c))]


def _split_grad(c: Call, g: Expr) -> Adjoints:
    axis = _attr(c, "axis")
    rank = len(_shape(c.args[0]))
    return [call("concatenate", g, axis=axis + rank if axis < 0 else axis)]


def _stack_grad(c: Call, g: Expr) -> Adjoints:
    from ..expr import Tuple, TupleGetItem
    from ..types import TupleType
    t = c.args[0].checked_type
    assert isinstance(t, TupleType)
    rank = len(_shape(c))
    axis = _attr(c, "axis")
    axis = axis + rank if axis < 0 else axis
    n = len(t.fields)
    parts = call("split", g, indices_or_sections=n, axis=axis)
    fields = []
    for i, f in enumerate(t.fields):
        assert isinstance(f, TensorType)
        fields.append(call("reshape", TupleGetItem(parts, i),
                           newshape=[int(d) for d in f.shape]))  # type: ignore[call-overload]
    return [Tuple(tuple(fields))]


def _tile_grad(c: Call, g: Expr) -> Adjoints:
    x = c.args[0]
    shape = list(_shape(x))
    reps = list(_attr(c, "reps")) or [1]
    m = max(len(shape), len(reps))
    shape_m = [1] * (m - len(shape)) + shape
    reps_m = [1] * (m - len(reps)) + reps
    split = [d for pair in zip(reps_m, shape_m) for d in pair]
    summed = call("sum", call("reshape", g, newshape=split), axis=list(range(0, 2 * m, 2)))
    return [call("reshape", summed, newshape=shape)]


def _repeat_grad(c: Call, g: Expr) -> Adjoints:
    x = c.args[0]
    shape = list(_shape(x))
    axis = _attr(c, "axis")
    axis = axis + len(shape) if axis < 0 else axis
    split = shape[:axis + 1] + [_attr(c, "repeats")] + shape[axis + 1:]
    return [call("sum", call("reshape", g, newshape=split), axis=[axis + 1])]


def _cast_like_grad(c: Call, g: Expr) -> Adjoints:
    return [_cast_grad(c, g)[0], None]


def _prelu_grad(c: Call, g: Expr) -> Adjoints:
    """``x > 0 ? x : alpha[c] * x``."""
    x, alpha = c.args
    shape = _shape(x)
    axis = _attr(c, "axis") % len(shape)
    channel = [1] * len(shape)
    channel[axis] = shape[axis]
    positive = call("greater", x, _scalar(0.0, x))
    dx = call("where", positive, g, _mul(g, call("reshape", alpha, newshape=channel)))
    dalpha = call("sum", call("where", positive, _scalar(0.0, x), _mul(g, x)),
                  axis=[axis], exclude=True)
    return [dx, dalpha]


def _pad_grad(c: Call, g: Expr) -> Adjoints:
    """Constant padding: the data gets the inner window of ``g``, the pad
    value the sum of the rest."""
    widths = [tuple(w) for w in _attr(c, "pad_width")]
    if _attr(c, "pad_mode").value != "constant" or any(w < 0 for p in widths for w in p):
        raise NoGradient("the gradient rule handles constant padding with nonnegative widths "
                         "only")
    shape = _shape(c.args[0])
    inner = call("strided_slice", g, begin=[p[0] for p in widths],
                 end=[p[0] + n for p, n in zip(widths, shape)], strides=[1] * len(shape))
    return [inner, _sub(call("sum", g), call("sum", inner))]


def _avg_pool_grad(c: Call, g: Expr) -> Adjoints:
    """An average over windows that always count ``kh * kw`` elements is a
    depthwise convolution with a constant kernel, so its gradient is that
    kernel's transposed convolution."""
    from .nn_util import pair, padding_2d
    x = c.args[0]
    pads = list(padding_2d(_attr(c, "padding")))
    if _attr(c, "layout") != "NCHW" or _attr(c, "out_layout") not in ("", "NCHW"):
        raise NoGradient("the gradient rule handles NCHW only")
    if any(pads) and not _attr(c, "count_include_pad"):
        raise NoGradient("the gradient rule needs count_include_pad=True when padding")
    n, ch, h, wd = _shape(x)
    _, _, oh, ow = _shape(c)
    kh, kw = pair(_attr(c, "pool_size"))
    sh, sw = pair(_attr(c, "strides"))
    dh, dw = pair(_attr(c, "dilation"))
    full_h = (oh - 1) * sh - pads[0] - pads[2] + dh * (kh - 1) + 1
    full_w = (ow - 1) * sw - pads[1] - pads[3] + dw * (kw - 1) + 1
    if not (0 <= h - full_h < max(sh, dh) and 0 <= wd - full_w < max(sw, dw)):
        raise NoGradient("the gradient rule does not handle ceil_mode windows past the edge")
    kernel = Constant(np.full((ch, 1, kh, kw), 1.0 / (kh * kw), dtype=tensor_type(x).dtype.np))
    return [call("nn.conv2d_transpose", g, kernel, channels=ch, kernel_size=[kh, kw],
                 strides=[sh, sw], padding=pads, output_padding=[h - full_h, wd - full_w],
                 dilation=[dh, dw], groups=ch)]


def _strided_slice_grad(c: Call, g: Expr) -> Adjoints:
    """The slice's gradient put back in place, zeros elsewhere: a stride
    ``s`` interleaves ``s - 1`` zeros after each element (pad a new axis of
    size 1 to ``s``, merge it), then ``nn.pad`` puts the block at ``begin``
    (cutting first where the last stride overruns the axis)."""
    from .transform_index import resolve_slice, slice_spec
    x = c.args[0]
    shape = list(_shape(x))
    rank = len(shape)
    widths = [[0, 0] for _ in range(rank)]
    cut = list(_shape(c))
    for sl in slice_spec(rank, c.attrs):  # type: ignore[arg-type]
        if sl.stride < 0:
            raise NoGradient("the gradient rule handles positive strides only")
        begin, _, length = resolve_slice(sl, shape[sl.axis])
        if sl.stride > 1 and length > 0:
            spread = [[0, 0] for _ in range(rank + 1)]
            spread[sl.axis + 1] = [0, sl.stride - 1]
            cur = list(cut)
            g = call("nn.pad", call("expand_dims", g, axis=sl.axis + 1), _scalar(0.0, x),
                     pad_width=spread)
            cur[sl.axis] = length * sl.stride
            g = call("reshape", g, newshape=cur)
            cut[sl.axis] = min(length * sl.stride, shape[sl.axis] - begin)
            if cut[sl.axis] != cur[sl.axis]:
                g = call("strided_slice", g, begin=[0], end=[cut[sl.axis]], strides=[1],
                         axes=[sl.axis])
        widths[sl.axis] = [begin, shape[sl.axis] - begin - cut[sl.axis]]
    if not any(w for pair in widths for w in pair):
        return [g]
    return [call("nn.pad", g, _scalar(0.0, x), pad_width=widths)]


def _max_pool_grad(c: Call, g: Expr) -> Adjoints:
    """Non-overlapping windows that tile the input (strides = pool size, no
    padding, no dilation): each window's gradient goes to its maximum,
    shared equally among ties (as ``max``)."""
    from .nn_util import pair, padding_2d
    x = c.args[0]
    n, ch, h, wd = _shape(x)
    _, _, oh, ow = _shape(c)
    kh, kw = pair(_attr(c, "pool_size"))
    if _attr(c, "layout") != "NCHW" or _attr(c, "out_layout") not in ("", "NCHW") \
            or pair(_attr(c, "strides")) != (kh, kw) or any(padding_2d(_attr(c, "padding"))) \
            or pair(_attr(c, "dilation")) != (1, 1) or (h, wd) != (oh * kh, ow * kw):
        raise NoGradient("the gradient rule handles NCHW windows that tile the input "
                         "(strides = pool_size, no padding or dilation)")
    windows = [n, ch, oh, kh, ow, kw]
    corner = [n, ch, oh, 1, ow, 1]
    xr = call("reshape", x, newshape=windows)
    hit = call("cast", call("equal", xr, call("reshape", c, newshape=corner)),
               dtype=tensor_type(x).dtype.value)
    count = call("sum", hit, axis=[3, 5], keepdims=True)
    share = _div(_mul(hit, call("reshape", g, newshape=corner)), count)
    return [call("reshape", share, newshape=[n, ch, h, wd])]


def _take_grad(c: Call, g: Expr) -> Adjoints:
    """An embedding lookup's gradient: each selected row's gradient is
    added back into its row, as a product with the one-hot matrix of the
    (clipped or wrapped) indices: ``dx[a, j, b] = sum_k [idx_k = j] g[a, k, b]``."""
    x, idx = c.args
    if _attr(c, "batch_dims") != 0:
        raise NoGradient("the gradient rule handles batch_dims=0 only")
    shape = list(_shape(x))
    axis = _attr(c, "axis")
    if axis is None:
        pre, n, post = 1, int(np.prod(shape)), 1
    else:
        axis = axis + len(shape) if axis < 0 else axis
        pre, n, post = int(np.prod(shape[:axis])), shape[axis], int(np.prod(shape[axis + 1:]))
    k = int(np.prod(_shape(idx)))
    idt = tensor_type(idx).dtype.np
    flat = call("reshape", idx, newshape=[k])
    if _attr(c, "mode").value == "wrap":
        fixed = call("floor_mod", flat, Constant(np.asarray(n, idt)))
    else:
        fixed = call("minimum", call("maximum", flat, Constant(np.asarray(0, idt))),
                     Constant(np.asarray(n - 1, idt)))
    hot = call("one_hot", fixed, _scalar(1.0, x), _scalar(0.0, x), depth=n, axis=-1,
               dtype=tensor_type(x).dtype.value)
    rows = call("reshape", call("transpose", call("reshape", g, newshape=[pre, k, post]),
                                axes=[1, 0, 2]), newshape=[k, pre * post])
    summed = call("nn.matmul", hot, rows, transpose_a=True, transpose_b=False)
    back = call("transpose", call("reshape", summed, newshape=[n, pre, post]), axes=[1, 0, 2])
    return [call("reshape", back, newshape=shape), None]


def _variance_grad(std: bool) -> Rule:
    """``v = sum((x - m)^2) / (N - unbiased)`` with the mean ``m`` an
    argument (broadcast against ``x``): ``dx = 2 (x - m) / (N - u) * g``,
    ``dm = -sum(dx)`` down to ``m``'s shape; ``std = sqrt(v)`` divides by
    ``2 std`` first."""
    def rule(c: Call, g: Expr) -> Adjoints:
        x, m = c.args
        shape = _shape(x)
        count = 1
        for a in _reduce_axes(c):
            count *= shape[a]
        count -= 1 if _attr(c, "unbiased") else 0
        scale: Expr = _unreduce(g, c)
        if std:
            scale = _div(scale, _unreduce(c, c))
        else:
            scale = _mul(scale, _scalar(2.0, x))
        dx = _mul(_sub(x, m), _mul(scale, _scalar(1.0 / count, x)))
        dm: Expr = _neg(dx)
        if _shape(m) != shape:
            dm = call("collapse_sum_like", dm, m)
        return [dx, dm]
    return rule


def _norm_grad(c: Call, g: Expr, axes: list[int], split: tuple[int, ...] | None = None
               ) -> Adjoints:
    """``y = xhat * gamma + beta`` with ``xhat = (x - mean) * rstd``, the
    statistics over ``axes`` (of ``x`` reshaped to ``split`` when given,
    group norm's channel groups): ``dx = rstd (dxhat - mean(dxhat) - xhat
    mean(dxhat xhat))`` with ``dxhat = g * gamma``; ``dgamma = sum(g
    xhat)``, ``dbeta = sum(g)`` over the axes but the channel's."""
    x, gamma, _ = c.args
    shape = _shape(x)
    axis = _attr(c, "axis") % len(shape)
    channel = [1] * len(shape)
    channel[axis] = shape[axis]

    def view(e: Expr) -> Expr:
        return e if split is None else call("reshape", e, newshape=list(split))

    def back(e: Expr) -> Expr:
        return e if split is None else call("reshape", e, newshape=list(shape))
    xs = view(x)
    mean = call("mean", xs, axis=axes, keepdims=True)
    centered = _sub(xs, mean)
    var = call("mean", _mul(centered, centered), axis=axes, keepdims=True)
    rstd = call("rsqrt", _add(var, _scalar(float(_attr(c, "epsilon")), x)))
    xhat = _mul(centered, rstd)
    dxhat = view(_mul(g, call("reshape", gamma, newshape=channel)) if _attr(c, "scale") else g)
    mean_d = call("mean", dxhat, axis=axes, keepdims=True)
    mean_dx = call("mean", _mul(dxhat, xhat), axis=axes, keepdims=True)
    dx = back(_mul(rstd, _sub(_sub(dxhat, mean_d), _mul(xhat, mean_dx))))
    dgamma = call("sum", _mul(g, back(xhat)), axis=[axis], exclude=True) \
        if _attr(c, "scale") else None
    dbeta = call("sum", g, axis=[axis], exclude=True) if _attr(c, "center") else None
    return [dx, dgamma, dbeta]


def _layer_norm_grad(c: Call, g: Expr) -> Adjoints:
    """Statistics along the one axis (:func:`_norm_grad`)."""
    return _norm_grad(c, g, [_attr(c, "axis") % len(_shape(c.args[0]))])


def _instance_norm_grad(c: Call, g: Expr) -> Adjoints:
    """Statistics over every axis but 0 and ``axis`` (:func:`_norm_grad`)."""
    ndim = len(_shape(c.args[0]))
    return _norm_grad(c, g, list(instance_axes(ndim, _attr(c, "axis") % ndim)))


def _group_norm_grad(c: Call, g: Expr) -> Adjoints:
    """Statistics over each channel group and the axes after it, on the
    data with ``axis`` split into (groups, channels per group)."""
    shape = _shape(c.args[0])
    split, axes = group_shape(shape, _attr(c, "axis") % len(shape), _attr(c, "num_groups"))
    return _norm_grad(c, g, list(axes), split)


def _l2_normalize_grad(c: Call, g: Expr) -> Adjoints:
    """``y = x / s``, ``s = sqrt(max(S, eps))``, ``S = sum(x^2)`` over the
    axes: ``dx = g / s - x sum(g x) / s^3`` where ``S > eps``; where the
    floor ``eps`` holds, ``s`` is constant and ``dx = g / s``."""
    x = c.args[0]
    axes = list(l2_axes(len(_shape(x)), _attr(c, "axis")))
    total = call("sum", _mul(x, x), axis=axes, keepdims=True)
    eps = _scalar(float(_attr(c, "eps")), x)
    s = call("sqrt", call("maximum", total, eps))
    through = call("sum", _mul(g, x), axis=axes, keepdims=True)
    cube = _mul(s, _mul(s, s))
    varying = call("where", call("greater", total, eps), _div(through, cube),
                   call("zeros_like", cube))
    return [_sub(_div(g, s), _mul(x, varying))]


def _cumsum_grad(c: Call, g: Expr) -> Adjoints:
    """Element ``k`` feeds every output from ``k`` on (after ``k`` when
    exclusive): ``dx`` is the same scan of ``g`` run backwards (reverse,
    scan, reverse), reshaped back when the scan flattened, in the data's
    dtype."""
    x = c.args[0]
    axis = _attr(c, "axis")
    along = 0 if axis is None else axis
    back = call("reverse", g, axis=along)
    back = call("cumsum", back, axis=along, exclusive=_attr(c, "exclusive"))
    dx: Expr = call("reverse", back, axis=along)
    if axis is None:
        dx = call("reshape", dx, newshape=list(_shape(x)))
    return [call("cast_like", dx, x)]


def _trilu_grad(c: Call, g: Expr) -> Adjoints:
    """The kept triangle passes the gradient, the rest none: ``trilu(g, k)``;
    ``k`` is an integer."""
    return [call("trilu", g, c.args[1], upper=_attr(c, "upper")), None]


def _scatter_add_only(c: Call, attr: str) -> None:
    if _attr(c, attr).value != "add":
        raise NoGradient(f"the gradient rule handles {attr}='add' only (otherwise a repeated "
                         "position's gradient depends on which update wins)")


def _scatter_elements_grad(c: Call, g: Expr) -> Adjoints:
    """Added updates: the data passes ``g``, each update gets ``g`` at its
    destination (``gather`` at the same indices, negative ones counted
    from the end first; both clamp alike)."""
    _scatter_add_only(c, "reduction")
    x, idx, _ = c.args
    shape = _shape(x)
    axis = _attr(c, "axis") % len(shape)
    dt = tensor_type(idx).dtype.np
    ishape = _shape(idx)
    gx = g
    if np.issubdtype(dt, np.signedinteger):
        neg = call("less", idx, Constant(np.asarray(0, dt)))
        idx = call("where", neg, call("add", idx, Constant(np.asarray(shape[axis], dt))), idx)
    if any(i != d for k, (i, d) in enumerate(zip(ishape, shape)) if k != axis):
        ends = [d if k == axis else i for k, (i, d) in enumerate(zip(ishape, shape))]
        g = call("strided_slice", g, begin=[0] * len(ends), end=ends, strides=[1] * len(ends))
    return [gx, None, call("gather", g, idx, axis=axis)]


def _scatter_nd_grad(c: Call, g: Expr) -> Adjoints:
    """Added updates: the data passes ``g``, each update slice gets ``g``
    at its destination (``gather_nd`` clamps like ``scatter_nd``)."""
    _scatter_add_only(c, "mode")
    return [g, None, call("gather_nd", g, c.args[1])]


def _depth_to_space_grad(c: Call, g: Expr) -> Adjoints:
    """A permutation's gradient is its inverse: ``nn.space_to_depth`` for
    DCR; for CRD (NCHW) the inverse reshape/transpose chain."""
    b, layout = _attr(c, "block_size"), _attr(c, "layout")
    if _attr(c, "mode") == "DCR":
        return [call("nn.space_to_depth", g, block_size=b, layout=layout)]
    if layout != "NCHW":
        raise NoGradient("the gradient rule handles CRD in NCHW only")
    n, ch, h, w = _shape(c.args[0])
    parts = call("reshape", g, newshape=[n, ch // (b * b), h, b, w, b])
    back = call("transpose", parts, axes=[0, 1, 3, 5, 2, 4])
    return [call("reshape", back, newshape=[n, ch, h, w])]


def _space_to_depth_grad(c: Call, g: Expr) -> Adjoints:
    """The inverse permutation: ``nn.depth_to_space`` in DCR."""
    return [call("nn.depth_to_space", g, block_size=_attr(c, "block_size"),
                 layout=_attr(c, "layout"))]


def _mirror_pad_grad(c: Call, g: Expr) -> Adjoints:
    """Each border element's gradient goes back to the element it mirrors:
    axis by axis, the centre plus each border reversed and placed (zero
    padded) where its sources lie -- from position 1 (REFLECT) or 0
    (SYMMETRIC) on the left, ending at ``d - 1`` or ``d`` on the right."""
    x = c.args[0]
    shape = _shape(x)
    s = 0 if _attr(c, "mode") == "REFLECT" else 1

    def part(e: Expr, axis: int, lo: int, hi: int) -> Expr:
        return call("strided_slice", e, begin=[lo], end=[hi], strides=[1], axes=[axis])

    def placed(e: Expr, axis: int, before: int, after: int) -> Expr:
        widths = [[0, 0]] * len(shape)
        widths[axis] = [before, after]
        return call("nn.pad", call("reverse", e, axis=axis), _scalar(0.0, x), pad_width=widths)

    for axis, ((b, a), d) in enumerate(zip(_attr(c, "pad_width"), shape)):
        if not b and not a:
            continue
        total = part(g, axis, b, b + d)
        if b:
            total = _add(total, placed(part(g, axis, 0, b), axis, 1 - s, d - b - 1 + s))
        if a:
            total = _add(total, placed(part(g, axis, b + d, b + d + a), axis, d - 1 + s - a,
                                       1 - s))
        g = total
    return [g]


def _global_max_pool_grad(c: Call, g: Expr) -> Adjoints:
    """Each channel's gradient goes to its maximum, shared among ties; the
    result keeps H and W as size 1, so it broadcasts against the data."""
    x = c.args[0]
    if _attr(c, "out_layout") not in ("", _attr(c, "layout")):
        raise NoGradient("the gradient rule needs out_layout equal to layout")
    layout = _attr(c, "layout")
    hit = call("cast", call("equal", x, c), dtype=tensor_type(x).dtype.value)
    count = call("sum", hit, axis=[layout.index("H"), layout.index("W")], keepdims=True)
    return [_div(_mul(hit, g), count)]


def _layout_transform_grad(c: Call, g: Expr) -> Adjoints:
    """The inverse transform, when the forward one pads nothing."""
    back = call("layout_transform", g, src_layout=_attr(c, "dst_layout"),
                dst_layout=_attr(c, "src_layout"))
    if int(np.prod(_shape(c))) != int(np.prod(_shape(c.args[0]))):
        raise NoGradient("the gradient rule handles transforms that pad nothing")
    return [back]


def _upsampling_grad(c: Call, g: Expr) -> Adjoints:
    """Nearest neighbour by integer factors: each input pixel is copied
    into a ``sh x sw`` block, so its gradient is the block's sum."""
    from .image import UpsamplingMethod
    x = c.args[0]
    sh, sw = _attr(c, "scale_h"), _attr(c, "scale_w")
    if _attr(c, "method") is not UpsamplingMethod.NEAREST_NEIGHBOR \
            or _attr(c, "layout") != "NCHW" or not (float(sh).is_integer()
                                                     and float(sw).is_integer()):
        raise NoGradient("the gradient rule handles NCHW nearest-neighbour upsampling by "
                         "integer factors only")
    n, ch, h, wd = _shape(x)
    blocks = call("reshape", g, newshape=[n, ch, h, int(sh), wd, int(sw)])
    return [call("sum", blocks, axis=[3, 5])]


def _sqrt(c: Call, x: Expr) -> Expr:
    return _div(_scalar(0.5, x), c)


def _rsqrt(c: Call, x: Expr) -> Expr:
    return _mul(_scalar(-0.5, x), _mul(c, _mul(c, c)))


RULES: dict[str, Rule] = {
    "add": _add_grad,
    "subtract": _subtract_grad,
    "multiply": _multiply_grad,
    "divide": _divide_grad,
    "power": _power_grad,
    "maximum": _select_grad(lambda x, y: call("greater_equal", x, y)),
    "minimum": _select_grad(lambda x, y: call("less_equal", x, y)),
    "negative": _negative_grad,
    "copy": _identity_grad,
    "exp": _unary(lambda c, x: c),
    "log": _unary(lambda c, x: _div(_scalar(1.0, x), x)),
    "log2": _unary(lambda c, x: _div(_scalar(1.0 / np.log(2.0), x), x)),
    "log10": _unary(lambda c, x: _div(_scalar(1.0 / np.log(10.0), x), x)),
    "sqrt": _unary(_sqrt),
    "rsqrt": _unary(_rsqrt),
    "tanh": _unary(lambda c, x: _sub(_scalar(1.0, x), _mul(c, c))),
    "sigmoid": _unary(lambda c, x: _mul(c, _sub(_scalar(1.0, x), c))),
    "sin": _unary(lambda c, x: call("cos", x)),
    "cos": _unary(lambda c, x: _neg(call("sin", x))),
    "tan": _unary(lambda c, x: _add(_scalar(1.0, x), _mul(c, c))),
    "sinh": _unary(lambda c, x: call("cosh", x)),
    "cosh": _unary(lambda c, x: call("sinh", x)),
    "asin": _unary(lambda c, x: call("rsqrt", _sub(_scalar(1.0, x), _mul(x, x)))),
    "acos": _unary(lambda c, x: _neg(call("rsqrt", _sub(_scalar(1.0, x), _mul(x, x))))),
    "atan": _unary(lambda c, x: _div(_scalar(1.0, x), _add(_scalar(1.0, x), _mul(x, x)))),
    "erf": _unary(lambda c, x: _mul(_scalar(2.0 / np.sqrt(np.pi), x),
                                    call("exp", _neg(_mul(x, x))))),
    "abs": _abs_grad,
    "clip": _clip_grad,
    "cast": _cast_grad,
    "nn.relu": _relu_grad,
    "nn.leaky_relu": _leaky_relu_grad,
    "nn.dense": _dense_grad,
    "nn.bias_add": _bias_add_grad,
    "nn.softmax": _softmax_grad,
    "nn.log_softmax": _log_softmax_grad,
    "nn.global_avg_pool2d": _global_avg_pool_grad,
    "nn.conv2d": _conv2d_grad,
    "nn.avg_pool2d": _avg_pool_grad,
    "nn.max_pool2d": _max_pool_grad,
    "strided_slice": _strided_slice_grad,
    "take": _take_grad,
    "nn.global_max_pool2d": _global_max_pool_grad,
    "layout_transform": _layout_transform_grad,
    "nn.upsampling": _upsampling_grad,
    "variance": _variance_grad(std=False),
    "std": _variance_grad(std=True),
    "nn.layer_norm": _layer_norm_grad,
    "nn.instance_norm": _instance_norm_grad,
    "nn.group_norm": _group_norm_grad,
    "nn.l2_normalize": _l2_normalize_grad,
    "trilu": _trilu_grad,
    "scatter_elements": _scatter_elements_grad,
    "scatter_nd": _scatter_nd_grad,
    "nn.depth_to_space": _depth_to_space_grad,
    "nn.space_to_depth": _space_to_depth_grad,
    "nn.mirror_pad": _mirror_pad_grad,
    "cumsum": _cumsum_grad,
    "nn.matmul": _matmul_grad,
    "nn.batch_matmul": _batch_matmul_grad,
    "nn.prelu": _prelu_grad,
    "nn.pad": _pad_grad,
    "reverse": _reverse_grad,
    "max": _extremum_grad,
    "min": _extremum_grad,
    "logsumexp": _logsumexp_grad,
    "split": _split_grad,
    "stack": _stack_grad,
    "tile": _tile_grad,
    "repeat": _repeat_grad,
    "cast_like": _cast_like_grad,
    "nn.batch_flatten": _reshape_grad,
    "sum": _sum_grad,
    "mean": _mean_grad,
    "reshape": _reshape_grad,
    "reshape_like": _reshape_grad,
    "squeeze": _reshape_grad,
    "expand_dims": _reshape_grad,
    "transpose": _transpose_grad,
    "where": _where_grad,
    "broadcast_to": _broadcast_grad,
    "broadcast_to_like": _broadcast_grad,
    "collapse_sum_like": _collapse_grad,
    "collapse_sum_to": _collapse_grad,
    "concatenate": _concatenate_grad,
    "zeros": _constant_grad,
    "ones": _constant_grad,
    "full": _full_grad,
    "zeros_like": _constant_grad,
    "ones_like": _constant_grad,
    "full_like": _full_grad,
}

from .gradients_extra import EXTRA_RULES  # noqa: E402  (built from the blocks above)

RULES.update(EXTRA_RULES)


_INTEGER_RESULT = "its result is an integer or boolean tensor (no gradient flows through it)"
_PIECEWISE_CONSTANT = "piecewise constant: its derivative is zero almost everywhere"
_QUANTIZED = "quantized integer arithmetic: differentiate the float model before quantizing"

#: why each operator without a rule has none
NOT_DIFFERENTIABLE: dict[str, str] = {
    **{name: _INTEGER_RESULT for name in (
        "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
        "isnan", "isinf", "isfinite", "logical_and", "logical_or", "logical_xor", "logical_not",
        "all", "any", "argmax", "argmin", "argsort", "arange",
        "floor_divide", "floor_mod", "mod",
        "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "left_shift", "right_shift")},
    **{name: _PIECEWISE_CONSTANT for name in ("ceil", "floor", "round", "sign", "trunc")},
    **{name: _QUANTIZED for name in (
        "fixed_point_multiply", "qnn.add", "qnn.avg_pool2d", "qnn.batch_matmul",
        "qnn.concatenate", "qnn.conv2d", "qnn.conv2d_transpose", "qnn.dense", "qnn.dequantize",
        "qnn.hardswish", "qnn.leaky_relu", "qnn.mean", "qnn.mul", "qnn.quantize",
        "qnn.requantize", "qnn.sigmoid", "qnn.softmax", "qnn.subtract", "qnn.tanh")},
    "nn.dropout": "training-mode randomness; inference dropout is the identity "
                  "(SimplifyInference removes it before differentiating)",
    "nn.batch_norm": "inference batch norm; SimplifyInference rewrites it into "
                     "differentiable arithmetic first",
}


def why_not_differentiable(name: str) -> str:
    """Why operator ``name`` has no gradient rule (for diagnostics)."""
    return NOT_DIFFERENTIABLE.get(name, "no gradient rule")


from .gradients_more import MORE_RULES  # noqa: E402  (its rules use the blocks above)

RULES.update(MORE_RULES)

from .gradients_conv_nd import CONV_ND_RULES  # noqa: E402  (built on call above)

RULES.update(CONV_ND_RULES)
