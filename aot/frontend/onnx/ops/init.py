"""Values and types: Constant, ConstantOfShape, Shape, Size, Range, Cast,
CastLike.

Shape and Size of a value are constants (every shape is static), which is
what lets ``Shape -> Gather -> Concat -> Reshape`` chains fold.  Range's
inputs must be constants and it becomes a constant too (its length decides
its type).  Cast follows the IR's ``cast`` (float -> integer truncates
toward zero, as ONNX; out-of-range values, undefined in ONNX, saturate).

Versions (opset 11+; the later ones only widen the types, and the
Cast/CastLike ``round_mode`` of 24 only concerns float8e8m0): Constant 11,
12, 13, 19, 21; ConstantOfShape 9, 20, 21; Shape 1, 13, 15, 19, 21; Size
1, 13, 19, 21; Cast 9, 13, 19, 21; CastLike 15, 19, 21; plus 23, 24, 25
where they exist; Range 11 and 27 (float16, computed in float32 as its
``stash_type`` says).
"""

from __future__ import annotations

import numpy as np
import onnx

from ....ir.dtype import DType
from ....ir.expr import Expr
from ..dtypes import onnx_type_name, to_dtype
from ...errors import ConvertError
from ..graph import Node, tensor_to_array
from ..registry import converter

_LATER = (23, 24, 25)


def _tensor_attr(node: Node, value: onnx.TensorProto, what: str) -> np.ndarray:
    try:
        return tensor_to_array(value, what)
    except ConvertError as exc:
        raise node.error(exc.message) from None


@converter("Constant", (11, 12, 13, 19, 21) + _LATER)
def convert_constant(node: Node) -> list[Expr]:
    attrs = node.attrs
    if len(attrs) != 1:
        raise node.error(f"needs exactly one value attribute, got {sorted(attrs)}")
    (name, value), = attrs.items()
    if name == "value":
        arr = _tensor_attr(node, value, "the value")
    elif name == "value_float":
        arr = np.asarray(value, dtype=np.float32)
    elif name == "value_floats":
        arr = np.asarray(list(value), dtype=np.float32)
    elif name == "value_int":
        arr = np.asarray(value, dtype=np.int64)
    elif name == "value_ints":
        arr = np.asarray(list(value), dtype=np.int64)
    elif name in ("value_string", "value_strings"):
        raise node.error("string constants are not supported")
    elif name == "sparse_value":
        raise node.error("sparse constants are not supported")
    else:
        raise node.error(f"unknown attribute {name}")
    return [node.constant(arr)]


@converter("ConstantOfShape", (9, 20, 21) + _LATER)
def convert_constant_of_shape(node: Node) -> list[Expr]:
    shape = node.const_ints(0, "shape")
    if any(d < 0 for d in shape):
        raise node.error(f"the shape {shape} has a negative dimension")
    value = node.attr("value")
    fill = np.zeros((), dtype=np.float32) if value is None else \
        _tensor_attr(node, value, "the value").reshape(-1)[:1].reshape(())
    return [node.constant(np.full(tuple(shape), fill, dtype=fill.dtype))]


@converter("Shape", (1, 13, 15, 19, 21) + _LATER)
def convert_shape(node: Node) -> list[Expr]:
    shape = node.shape(node.input(0))
    rank = len(shape)
    start = int(node.attr("start", 0))
    end = node.attr("end")
    end = rank if end is None else int(end)
    start = min(max(start + rank if start < 0 else start, 0), rank)
    end = min(max(end + rank if end < 0 else end, 0), rank)
    return [node.constant(np.asarray(shape[start:end], dtype=np.int64))]


@converter("Size", (1, 13, 19, 21) + _LATER)
def convert_size(node: Node) -> list[Expr]:
    return [node.constant(np.asarray(int(np.prod(node.shape(node.input(0)))), dtype=np.int64))]


@converter("Range", (11, 27))
def convert_range(node: Node) -> list[Expr]:
    start, limit, delta = (node.const(i, name) for i, name in
                           enumerate(("start", "limit", "delta")))
    for v, name in ((start, "start"), (limit, "limit"), (delta, "delta")):
        if v.shape != ():
            raise node.error(f"{name} must be a scalar, got shape {list(v.shape)}")
    dtype = start.dtype
    if limit.dtype != dtype or delta.dtype != dtype:
        raise node.error(f"start, limit and delta must have one dtype, got {start.dtype}, "
                         f"{limit.dtype} and {delta.dtype}")
    if delta == 0:
        raise node.error("delta must not be 0")
    # element i is start + i * delta in the dtype: the specification's
    # formula, which the ONNX test suite follows (onnxruntime accumulates
    # the delta, which differs in the last bits for inexact floats);
    # float16 and bfloat16 compute in float32 (version 27's stash_type=1;
    # version 11 has neither)
    narrow = DType.from_numpy(dtype).is_narrow_float
    work = np.dtype(np.float32) if narrow else dtype
    if narrow and int(node.attr("stash_type", 1)) != 1:
        raise node.unsupported("stash_type")
    s, lim, d = (np.asarray(v).astype(work) for v in (start, limit, delta))
    n = max(int(np.ceil((float(lim) - float(s)) / float(d))), 0)
    with np.errstate(all="ignore"):
        values = (s + np.arange(n).astype(work) * d).astype(dtype)
    return [node.constant(values)]


def _target(node: Node, elem_type: int) -> DType:
    dtype = to_dtype(int(elem_type))
    if dtype is None:
        raise node.error(f"casting to {onnx_type_name(int(elem_type))} is not supported")
    return dtype


def _cast(node: Node, x: Expr, dtype: DType) -> Expr:
    """``x`` cast to ``dtype``; to a float8 format with ``saturate`` (19+,
    default 1) values beyond the format's largest finite value become it,
    infinities included (the reference implementation's ``clip`` then
    convert: what the node tests expect, for the ``fnuz`` formats too),
    NaN stays NaN; without, the conversion's own overflow (NaN, or
    infinity for float8e5m2).  A float cast to int4/uint4 goes through
    int32 (see there)."""
    src = node.dtype(x)
    if src == dtype:
        return x
    saturate = int(node.attr("saturate", 1)) if node.version >= 19 else 1
    if dtype.is_float8 and saturate:
        if src not in (DType.FLOAT32, DType.FLOAT16, DType.FLOAT64):
            # the float8 and bfloat16 values and integers beyond 2^24 are
            # all either exact in float32 or far beyond the format's range
            x = node.call("cast", [x], dtype=DType.FLOAT32)
        x = node.call("clip", [x], a_min=float(dtype.min), a_max=float(dtype.max))
    if dtype.packed and src.is_float:
        # out of range is undefined in ONNX; the reference implementation
        # (and its node tests) wrap, as converting through int32 does
        x = node.call("cast", [x], dtype=DType.INT32)
    return node.call("cast", [x], dtype=dtype)


@converter("Cast", (9, 13, 19, 21) + _LATER)
def convert_cast(node: Node) -> list[Expr]:
    x = node.input(0)
    to = node.attr("to")
    if to is None:
        raise node.error("the attribute 'to' is required")
    return [_cast(node, x, _target(node, to))]


@converter("CastLike", (15, 19, 21) + _LATER)
def convert_cast_like(node: Node) -> list[Expr]:
    x, like = node.input(0), node.input(1)
    return [_cast(node, x, node.dtype(like))]
