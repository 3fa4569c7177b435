"""Gradient rules for indexing, scans, products, sorting, resizing and the
remaining convolutions (merged into :data:`aot.ir.ops.gradients.RULES`).

Design note
-----------
Same conventions as :mod:`aot.ir.ops.gradients` (``call`` stands for the
call's result, ``None`` is a free zero, shapes are static).  The catalogue
has no scatter operator, so every "put the gradient back where it was
read" step is a product with a one-hot tensor followed by a sum
(:func:`_scatter_along`, and for ``gather_nd`` a batched matrix product
with the one-hot of the flattened index): exact, and every step is an
operator the C backend already compiles.

* ``one_hot``: differentiable in its on and off values (a float result
  with integer indices; its sum over the hot / cold positions).  Relay's
  rule picks the positions by comparing the result with the on value,
  which misattributes when on equals off; ours uses the indices.
* ``gather_nd``: Relay's rule is ``scatter_nd(zeros, indices, g, "add")``;
  ours computes the same sums (with the forward pass's clamped indices).
* ``gather`` / ``sort`` / ``topk``: the values are read through indices
  along one axis (``gather``'s clamped, ``sort``'s and ``topk``'s from the
  same stable ``argsort``), so the gradient scatters back through them.
* ``prod``: ``d prod / d x_k`` is the product of the other elements,
  computed without division (so zeros are exact) as the exclusive
  running product from the front times the one from the back.
* ``cumprod``: ``dx_k = prod_{j<k} x_j * sum_{i>=k} g_i prod_{k<j<=i} x_j``;
  the inner products for every ``k`` at once are one ``cumprod`` of an
  ``n x n`` masked copy of the data (division-free, exact at zeros; the
  scan axis is squared, fine for the short scans models use).
* ``einsum``: the adjoint of an operand is the einsum of ``g`` with the
  other operands into the operand's letters, broadcast along letters only
  that operand has (they were summed); repeated letters (diagonals) are
  refused.
* ``image.resize2d``: resizing is linear and separable,
  ``y = R_h x R_w^T`` with the interpolation matrices built from the same
  per-axis tap table the kernel uses, so ``dx = R_h^T g R_w``.
* ``nn.conv1d``: a convolution of height 1, differentiated by the
  ``nn.conv2d`` rule on reshaped operands.
* ``nn.conv2d_transpose``: the data gradient is the ``nn.conv2d`` of
  ``g`` with the same weight (its I and O axes read as O and I), the
  weight gradient correlates ``g`` with the data (a convolution with
  strides and dilation exchanged, cut to the kernel size).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ..expr import Call, Constant, Expr, Tuple, TupleGetItem
from ..types import TensorType, TupleType
from .gradients import RULES, Adjoints, NoGradient, Rule, call, tensor_type

__all__ = ["MORE_RULES"]


# ------------------------------------------------------------ building blocks

def _attr(c: Call, name: str) -> Any:
    return getattr(c.attrs, name)


def _shape(e: Expr) -> tuple[int, ...]:
    shape = tensor_type(e).shape
    assert all(isinstance(d, int) for d in shape), "gradient rules need static shapes"
    return tuple(int(d) for d in shape)  # type: ignore[arg-type]


def _scalar(value: float, like: Expr) -> Constant:
    return Constant(np.asarray(value, dtype=tensor_type(like).dtype.np))


def _mul(a: Expr, b: Expr) -> Expr:
    return call("multiply", a, b)


def _cut(e: Expr, kh: int, kw: int, reach: tuple[int, int]) -> Expr:
    """``e[:, :, :kh, :kw]`` (a correlation reaching ``reach`` taps)."""
    if reach == (kh, kw):
        return e
    return call("strided_slice", e, begin=[0, 0], end=[kh, kw], strides=[1, 1], axes=[2, 3])


# ------------------------------------------------------------ the rules


def _axis(c: Call, rank: int) -> int:
    a = _attr(c, "axis")
    return a + rank if a < 0 else a


def _scatter_along(g: Expr, idx: Expr, axis: int, extent: int, like: Expr) -> Expr:
    """``dx[.., j, ..] = sum_i [idx[.., i, ..] = j] g[.., i, ..]`` along ``axis``
    (``idx`` valid indices of ``g``'s shape, ``dx`` of ``extent`` there)."""
    dtype = tensor_type(like).dtype.value
    hot = call("one_hot", idx, _scalar(1.0, like), _scalar(0.0, like), depth=extent,
               axis=axis + 1, dtype=dtype)
    return call("sum", _mul(hot, call("expand_dims", g, axis=axis + 1)), axis=[axis])


def _clamped(idx: Expr, extent: int, idt: np.dtype | None = None) -> Expr:
    """``idx`` clamped to ``[0, extent)`` (``idt``: its dtype, when untyped)."""
    idt = tensor_type(idx).dtype.np if idt is None else idt
    return call("minimum", call("maximum", idx, Constant(np.asarray(0, idt))),
                Constant(np.asarray(extent - 1, idt)))


def _gather_grad(c: Call, g: Expr) -> Adjoints:
    x, idx = c.args
    shape = _shape(x)
    axis = _axis(c, len(shape))
    return [_scatter_along(g, _clamped(idx, shape[axis]), axis, shape[axis], x), None]


def _gather_nd_grad(c: Call, g: Expr) -> Adjoints:
    """Index tuples flattened to one linear index into the indexed axes;
    ``dx[b, t, x] = sum_y [lin[b, y] = t] g[b, y, x]`` is a batched
    product with the one-hot of ``lin``."""
    x, idx = c.args
    xs, ids = _shape(x), _shape(idx)
    b = _attr(c, "batch_dims")
    m = ids[0]
    idt = tensor_type(idx).dtype.np
    batch = int(np.prod(xs[:b], dtype=np.int64))
    depth = int(np.prod(xs[b:b + m], dtype=np.int64))
    rows = int(np.prod(ids[1 + b:], dtype=np.int64))
    tail = int(np.prod(xs[b + m:], dtype=np.int64))
    lin: Expr | None = None
    stride = 1
    for k in reversed(range(m)):
        part = _clamped(call("squeeze", call("strided_slice", idx, begin=[k], end=[k + 1],
                                             axes=[0]), axis=[0]), xs[b + k], idt)
        term = part if stride == 1 else call("multiply", part,
                                             Constant(np.asarray(stride, idt)))
        lin = term if lin is None else call("add", lin, term)
        stride *= xs[b + k]
    assert lin is not None
    hot = call("one_hot", call("reshape", lin, newshape=[batch, rows]), _scalar(1.0, x),
               _scalar(0.0, x), depth=depth, axis=-1, dtype=tensor_type(x).dtype.value)
    gr = call("reshape", g, newshape=[batch, rows, tail])
    dx = call("nn.batch_matmul", hot, gr, transpose_a=True, transpose_b=False)
    return [call("reshape", dx, newshape=list(xs)), None]


def _one_hot_grad(c: Call, g: Expr) -> Adjoints:
    """Each element is the on value or the off value: their adjoints are
    the sums of ``g`` over the hot and the cold positions (the indices
    get none)."""
    idx, on, off = c.args
    hot = call("one_hot", idx, _scalar(1.0, c), _scalar(0.0, c), depth=_attr(c, "depth"),
               axis=_attr(c, "axis"), dtype=tensor_type(c).dtype.value)
    total = call("sum", g)
    d_on = call("sum", _mul(g, hot))
    return [None, call("cast_like", d_on, on),
            call("cast_like", call("subtract", total, d_on), off)]


def _sort_grad(c: Call, g: Expr) -> Adjoints:
    x = c.args[0]
    shape = _shape(x)
    axis = _axis(c, len(shape))
    idx = call("argsort", x, axis=axis, is_ascend=_attr(c, "is_ascend"), dtype="int32")
    return [_scatter_along(g, idx, axis, shape[axis], x)]


def _topk_grad(c: Call, g: Expr) -> Adjoints:
    """The values' gradient scatters back through the indices (the
    indices themselves carry none)."""
    from .algorithm import TopKRetType
    x = c.args[0]
    ret = _attr(c, "ret_type")
    if ret is TopKRetType.INDICES:
        return [None]
    shape = _shape(x)
    axis = _axis(c, len(shape))
    if ret is TopKRetType.BOTH:
        gv: Expr = g.fields[0] if isinstance(g, Tuple) else TupleGetItem(g, 0)
        idx: Expr = TupleGetItem(c, 1)
    else:
        gv = g
        idx = call("topk", x, k=_attr(c, "k"), axis=axis, ret_type="indices",
                   is_ascend=_attr(c, "is_ascend"), dtype=_attr(c, "dtype").value)
    return [_scatter_along(gv, idx, axis, shape[axis], x)]


def _to_last(x: Expr, axes: list[int], rank: int) -> tuple[Expr, list[int]]:
    """``x`` with ``axes`` moved to the end (in order); the permutation."""
    perm = [a for a in range(rank) if a not in axes] + axes
    return (x if perm == list(range(rank)) else call("transpose", x, axes=perm)), perm


def _from_last(x: Expr, perm: list[int]) -> Expr:
    if perm == list(range(len(perm))):
        return x
    inverse = [0] * len(perm)
    for i, a in enumerate(perm):
        inverse[a] = i
    return call("transpose", x, axes=inverse)


def _prod_grad(c: Call, g: Expr) -> Adjoints:
    x = c.args[0]
    shape = _shape(x)
    from .reduce import ReduceAttrs, reduce_axes
    assert isinstance(c.attrs, ReduceAttrs)
    axes = list(reduce_axes(len(shape), c.attrs))
    xt, perm = _to_last(x, axes, len(shape))
    kept = [shape[a] for a in perm[:len(perm) - len(axes)]]
    moved = [shape[a] for a in axes]
    flat = call("reshape", xt, newshape=kept + [int(np.prod(moved, dtype=np.int64))])
    front = call("cumprod", flat, axis=-1, exclusive=True)
    back = call("reverse", call("cumprod", call("reverse", flat, axis=-1), axis=-1,
                                exclusive=True), axis=-1)
    others = _mul(_mul(front, back), call("reshape", g, newshape=kept + [1]))
    return [_from_last(call("reshape", others, newshape=kept + moved), perm)]


def _cumprod_grad(c: Call, g: Expr) -> Adjoints:
    x = c.args[0]
    shape = _shape(x)
    axis = _attr(c, "axis")
    exclusive = bool(_attr(c, "exclusive"))
    data: Expr = x
    if axis is None:
        data, along, rank = call("reshape", x, newshape=[-1]), 0, 1
    else:
        rank = len(shape)
        along = axis + rank if axis < 0 else axis
    gd = call("cast_like", g, x)
    if axis is None:
        gd = call("reshape", gd, newshape=[-1])
    xt, perm = _to_last(data, [along], rank)
    gt, _ = _to_last(gd, [along], rank)
    n = int(np.prod(shape)) if axis is None else shape[along]
    k, j = np.indices((n, n))
    dt = tensor_type(x).dtype.np
    square = call("broadcast_to", call("expand_dims", xt, axis=-2),
                  shape=_lead(shape, axis, along) + [n, n])
    later = call("where", Constant(j <= k), _scalar(1.0, x), square)
    runs = call("cumprod", later, axis=-1, exclusive=exclusive)
    reach = Constant(((j > k) if exclusive else (j >= k)).astype(dt))
    tails = call("sum", _mul(_mul(runs, reach), call("expand_dims", gt, axis=-2)), axis=[-1])
    dx = _from_last(_mul(tails, call("cumprod", xt, axis=-1, exclusive=True)), perm)
    if axis is None:
        dx = call("reshape", dx, newshape=list(shape))
    return [dx]


def _lead(shape: tuple[int, ...], axis: int | None, along: int) -> list[int]:
    """The extents before the scan axis once it is moved last."""
    if axis is None:
        return []
    return [d for a, d in enumerate(shape) if a != along]


def _einsum_grad(c: Call, g: Expr) -> Adjoints:
    from .einsum import parse
    operands = c.args[0]
    t = operands.checked_type
    assert isinstance(t, TupleType)
    shapes = [tuple(int(d) for d in f.shape) for f in t.fields  # type: ignore[attr-defined]
              ]
    eq = parse(_attr(c, "equation"), shapes)

    def field(i: int) -> Expr:
        if isinstance(operands, Tuple):
            return operands.fields[i]
        return TupleGetItem(operands, i)
    adjoints: list[Expr] = []
    for i, letters in enumerate(eq.inputs):
        if len(set(letters)) != len(letters):
            raise NoGradient(f"the gradient rule does not handle repeated axes "
                             f"({letters!r}, a diagonal)")
        others = [eq.output] + [s for j, s in enumerate(eq.inputs) if j != i]
        seen = set("".join(others))
        kept = "".join(ch for ch in letters if ch in seen)
        terms = [g] + [field(j) for j in range(len(eq.inputs)) if j != i]
        d: Expr = call("einsum", Tuple(tuple(terms)), equation=",".join(others) + "->" + kept)
        if kept != letters:
            unit = [eq.extents[ch] if ch in seen else 1 for ch in letters]
            d = call("broadcast_to", call("reshape", d, newshape=unit),
                     shape=[eq.extents[ch] for ch in letters])
        adjoints.append(d)
    return [Tuple(tuple(adjoints))]


def _resize_matrix(in_size: int, out_size: int, geometry, start: float, end: float,
                   dtype: np.dtype) -> np.ndarray:
    """The (out, in) interpolation matrix of one axis (``tf_crop_and_resize``:
    rows of coordinates outside the image are the constant extrapolation
    value, so zero)."""
    from .image import CoordinateMode, axis_table
    taps, weights, outside = axis_table(in_size, out_size, geometry, start, end)
    crop = geometry.mode is CoordinateMode.TF_CROP_AND_RESIZE
    m = np.zeros((out_size, in_size))
    for o in range(out_size):
        if crop and outside[o]:
            continue
        for tap, w in zip(taps[o], weights[o]):
            m[o, tap] += w
    return m.astype(dtype)


def _resize2d_grad(c: Call, g: Expr) -> Adjoints:
    from .image import CoordinateMode, ResizeGeometry
    x = c.args[0]
    layout = _attr(c, "layout")
    if layout not in ("NCHW", "NHWC"):
        raise NoGradient("the gradient rule handles NCHW and NHWC layouts")
    if not tensor_type(x).dtype.is_float or tensor_type(c).dtype != tensor_type(x).dtype:
        raise NoGradient("the gradient rule needs a float result of the data's dtype")
    roi = tuple(_attr(c, "roi") or (0.0, 0.0, 0.0, 0.0))
    geometry = ResizeGeometry(_attr(c, "method"), _attr(c, "coordinate_transformation_mode"),
                              _attr(c, "rounding_method"), roi,  # type: ignore[arg-type]
                              _attr(c, "cubic_alpha"), bool(_attr(c, "cubic_exclude")),
                              _attr(c, "extrapolation_value"))
    if geometry.mode is not CoordinateMode.TF_CROP_AND_RESIZE:
        roi = (0.0, 0.0, 0.0, 0.0)
    shape = _shape(x)
    if layout == "NHWC":
        gc: Expr = call("transpose", g, axes=[0, 3, 1, 2])
        n, h, w, ch = shape
    else:
        gc = g
        n, ch, h, w = shape
    oh, ow = _attr(c, "size")
    dt = tensor_type(x).dtype.np
    rh = _resize_matrix(h, oh, geometry, roi[0], roi[2], dt)
    rw = _resize_matrix(w, ow, geometry, roi[1], roi[3], dt)
    rows = call("nn.matmul", call("reshape", gc, newshape=[n * ch * oh, ow]), Constant(rw),
                transpose_a=False, transpose_b=False)
    cols = call("nn.batch_matmul", Constant(rh.T[None].copy()),
                call("reshape", rows, newshape=[n * ch, oh, w]),
                transpose_a=False, transpose_b=False)
    dx = call("reshape", cols, newshape=[n, ch, h, w])
    if layout == "NHWC":
        dx = call("transpose", dx, axes=[0, 2, 3, 1])
    return [dx]


def _typed(e: Expr, shape: list[int], like: Expr) -> Expr:
    return dataclasses.replace(e, checked_type=TensorType(tuple(shape), tensor_type(like).dtype))


def _conv1d_grad(c: Call, g: Expr) -> Adjoints:
    """The ``nn.conv2d`` rule on the operands reshaped to height 1."""
    from .nn_util import expand, padding_1d
    x, w = c.args
    if (_attr(c, "data_layout"), _attr(c, "kernel_layout")) != ("NCW", "OIW") \
            or _attr(c, "out_layout") not in ("", "NCW"):
        raise NoGradient("the gradient rule handles NCW data and OIW kernels only")
    n, ch, width = _shape(x)
    o, ig, k = _shape(w)
    _, _, ow = _shape(c)
    left, right = padding_1d(_attr(c, "padding"))
    x4 = _typed(call("reshape", x, newshape=[n, ch, 1, width]), [n, ch, 1, width], x)
    w4 = _typed(call("reshape", w, newshape=[o, ig, 1, k]), [o, ig, 1, k], w)
    conv = call("nn.conv2d", x4, w4, strides=[1, expand(_attr(c, "strides"), 1)[0]],
                padding=[0, left, 0, right], dilation=[1, expand(_attr(c, "dilation"), 1)[0]],
                groups=_attr(c, "groups"), channels=o, kernel_size=[1, k],
                out_dtype=_attr(c, "out_dtype"))
    conv4 = _typed(conv, [n, o, 1, ow], c)
    assert isinstance(conv4, Call)
    dx4, dw4 = RULES["nn.conv2d"](conv4, call("reshape", g, newshape=[n, o, 1, ow]))
    assert dx4 is not None and dw4 is not None
    return [call("reshape", dx4, newshape=[n, ch, width]),
            call("reshape", dw4, newshape=[o, ig, k])]


def _conv2d_transpose_grad(c: Call, g: Expr) -> Adjoints:
    from .nn_util import pair, padding_2d
    x, w = c.args
    if (_attr(c, "data_layout"), _attr(c, "kernel_layout")) != ("NCHW", "IOHW") \
            or _attr(c, "out_layout") not in ("", "NCHW"):
        raise NoGradient("the gradient rule handles NCHW data and IOHW kernels only")
    if _attr(c, "groups") != 1:
        raise NoGradient(f"the gradient rule handles groups=1, not groups={_attr(c, 'groups')}")
    out_dtype = _attr(c, "out_dtype")
    if out_dtype is not None and out_dtype != tensor_type(x).dtype:
        raise NoGradient("the gradient rule needs out_dtype equal to the data's dtype")
    n, ch, h, wd = _shape(x)
    _, o, kh, kw = _shape(w)
    _, _, oh, ow = _shape(c)
    sh, sw = pair(_attr(c, "strides"))
    dh, dw = pair(_attr(c, "dilation"))
    pads = list(padding_2d(_attr(c, "padding")))
    dx: Expr = call("nn.conv2d", g, w, strides=[sh, sw], padding=pads, dilation=[dh, dw],
                    channels=ch, kernel_size=[kh, kw])
    got = ((oh + pads[0] + pads[2] - dh * (kh - 1) - 1) // sh + 1,
           (ow + pads[1] + pads[3] - dw * (kw - 1) - 1) // sw + 1)
    if got != (h, wd):
        dx = call("strided_slice", dx, begin=[0, 0], end=[h, wd], strides=[1, 1], axes=[2, 3])
    reach = ((oh + pads[0] + pads[2] - sh * (h - 1) - 1) // dh + 1,
             (ow + pads[1] + pads[3] - sw * (wd - 1) - 1) // dw + 1)
    corr = call("nn.conv2d", call("transpose", g, axes=[1, 0, 2, 3]),
                call("transpose", x, axes=[1, 0, 2, 3]), strides=[dh, dw], padding=pads,
                dilation=[sh, sw], channels=ch, kernel_size=[h, wd])
    dwt = call("transpose", _cut(corr, kh, kw, reach), axes=[1, 0, 2, 3])
    return [dx, dwt]


MORE_RULES: dict[str, Rule] = {
    "gather": _gather_grad,
    "gather_nd": _gather_nd_grad,
    "prod": _prod_grad,
    "cumprod": _cumprod_grad,
    "einsum": _einsum_grad,
    "one_hot": _one_hot_grad,
    "sort": _sort_grad,
    "topk": _topk_grad,
    "image.resize2d": _resize2d_grad,
    "nn.conv1d": _conv1d_grad,
    "nn.conv2d_transpose": _conv2d_transpose_grad,
}
