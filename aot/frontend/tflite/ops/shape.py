"""Data movement: RESHAPE, SQUEEZE, EXPAND_DIMS, TRANSPOSE, CONCATENATION,
PAD, PADV2, STRIDED_SLICE, SPLIT.

These move stored values without arithmetic, for quantized tensors too
(TFLite's converter gives input and output the same parameters, and the
kernels copy bytes).  RESHAPE, SQUEEZE and EXPAND_DIMS reshape to the
output tensor's static shape, which the model declares.  PAD fills with
zero (the zero point for quantized tensors), PADV2 with its constant
value input (stored, so quantized for quantized tensors).
CONCATENATION of quantized inputs whose parameters differ from the
output's is ``qnn.concatenate`` (TFLite allows that for uint8 only and
requantizes in float; ours rounds in fixed point, which can differ by one
step).  STRIDED_SLICE follows TFLite's reference (``begin_mask``,
``end_mask``, ``shrink_axis_mask``, negative strides); ``ellipsis_mask``,
``new_axis_mask`` and ``offset`` are refused.
"""

from __future__ import annotations

import numpy as np

from ....ir.expr import Expr
from ..graph import Op
from ..registry import converter
from .util import const_ints, fused_activation, is_quantized, normalize_axis, qparams


def _reshape(op: Op, x: Expr, shape: tuple[int, ...]) -> Expr:
    if op.shape(x) == shape:
        return x
    return op.call("reshape", [x], newshape=shape, allowzero=0 in shape)


@converter("RESHAPE", "SQUEEZE", "EXPAND_DIMS")
def convert_reshape(op: Op) -> list[Expr]:
    x_t, y_t = op.tensor(0), op.output()
    if np.prod(x_t.shape, dtype=np.int64) != np.prod(y_t.shape, dtype=np.int64):
        raise op.error(f"cannot reshape {list(x_t.shape)} to the output's {list(y_t.shape)}")
    return [_reshape(op, op.input(0), y_t.shape)]


@converter("TRANSPOSE")
def convert_transpose(op: Op) -> list[Expr]:
    perm = const_ints(op, 1, "permutation")
    return [op.call("transpose", [op.input(0)], axes=tuple(perm))]


def _same_params(op: Op, indices: list[int]) -> bool:
    out = qparams(op, op.output())
    return all((q.scale[0], q.zero_point[0]) == (out.scale[0], out.zero_point[0])
               for q in (qparams(op, op.tensor(i)) for i in indices))


@converter("CONCATENATION")
def convert_concatenation(op: Op) -> list[Expr]:
    n = len(op.info.inputs)
    rank = len(op.output().shape)
    axis = normalize_axis(op, int(op.option("axis", 0)), rank)
    xs = [op.input(i) for i in range(n)]
    if is_quantized(op) and not _same_params(op, list(range(n))):
        qs = [qparams(op, op.tensor(i)) for i in range(n)]
        out = qparams(op, op.output())
        scales = op.ctx.make_tuple([op.constant(np.float32(q.scale[0])) for q in qs])
        zps = op.ctx.make_tuple([op.constant(np.int32(q.zero_point[0])) for q in qs])
        y = op.call("qnn.concatenate", [op.ctx.make_tuple(xs), scales, zps,
                                        op.constant(np.float32(out.scale[0])),
                                        op.constant(np.int32(out.zero_point[0]))], axis=axis)
    else:
        y = op.call("concatenate", [op.ctx.make_tuple(xs)], axis=axis)
    return [fused_activation(op, y)]


@converter("PAD", "PADV2")
def convert_pad(op: Op) -> list[Expr]:
    x = op.input(0)
    rank = len(op.shape(x))
    pads = np.asarray(op.const(1, "paddings")).astype(np.int64)
    if pads.shape != (rank, 2) or np.any(pads < 0):
        raise op.error(f"the paddings {pads.tolist()} must be non-negative, one (before, after) "
                       f"pair per axis of the rank-{rank} input")
    dtype = op.dtype(x)
    if op.name == "PADV2" and op.has(2):
        value = np.asarray(op.const(2, "padding value")).reshape(())
    elif is_quantized(op):
        value = np.asarray(qparams(op, op.tensor(0)).zero_point[0])
    else:
        value = np.asarray(0)
    pad_width = tuple((int(a), int(b)) for a, b in pads)
    return [op.call("nn.pad", [x, op.constant(value.astype(dtype.np))], pad_width=pad_width)]


def _slice_axis(dim: int, begin: int, end: int, stride: int, masked_begin: bool,
                masked_end: bool) -> tuple[int, int]:
    """TFLite's normalised (start, stop) of one axis: Python's slice
    semantics, with a mask meaning "from the first/to the last"."""
    start, stop, _ = slice(None if masked_begin else begin, None if masked_end else end,
                           stride).indices(dim)
    return start, stop


@converter("STRIDED_SLICE")
def convert_strided_slice(op: Op) -> list[Expr]:
    for name in ("ellipsis_mask", "new_axis_mask", "offset"):
        if op.option(name, 0):
            raise op.error(f"{name}={op.option(name)} is not supported")
    x = op.input(0)
    shape = op.shape(x)
    begin, end = const_ints(op, 1, "begin"), const_ints(op, 2, "end")
    strides = const_ints(op, 3, "strides") if op.has(3) else [1] * len(begin)
    if not len(begin) == len(end) == len(strides) <= len(shape) or 0 in strides:
        raise op.error(f"begin {begin}, end {end} and strides {strides} must have one nonzero "
                       f"stride per sliced axis of the input {list(shape)}")
    bm, em, shrink = (int(op.option(k, 0)) for k in ("begin_mask", "end_mask",
                                                      "shrink_axis_mask"))
    starts, stops = [], []
    for i, (dim, b, e, s) in enumerate(zip(shape, begin, end, strides)):
        if shrink >> i & 1:
            b = b + dim if b < 0 else b
            if not 0 <= b < dim:
                raise op.error(f"begin {begin[i]} is out of range for axis {i} of extent {dim}")
            start, stop, s = b, b + 1, 1
            strides[i] = 1
        else:
            start, stop = _slice_axis(dim, b, e, s, bool(bm >> i & 1), bool(em >> i & 1))
        starts.append(start)
        # the IR reads a negative end as counted from the end: "before
        # element 0" of a negative stride is -(dim + 1)
        stops.append(stop - dim if stop < 0 else stop)
    y = op.call("strided_slice", [x], begin=tuple(starts), end=tuple(stops),
                strides=tuple(strides), axes=tuple(range(len(starts))))
    return [_reshape(op, y, op.output().shape)]


@converter("SPLIT")
def convert_split(op: Op) -> list[Expr]:
    axes = const_ints(op, 0, "axis")
    x = op.input(1)
    shape = op.shape(x)
    if len(axes) != 1:
        raise op.error(f"the axis must be a single value, got {axes}")
    axis = normalize_axis(op, axes[0], len(shape))
    n = len(op.info.outputs)
    if shape[axis] % n:
        raise op.error(f"axis {axis} of extent {shape[axis]} does not split into {n} parts")
    parts = op.call("split", [x], indices_or_sections=n, axis=axis)
    return [op.ctx.get_item(parts, i) for i in range(n)]
