"""Scatters: ScatterElements and ScatterND.

* ScatterElements is ``scatter_elements`` (which counts negative indices
  from the end itself); ``reduction`` none is ``update``, add, mul (16),
  max and min (18) keep their names.
* ScatterND is ``scatter_nd`` with the index tuple moved from the last
  axis (ONNX) to the first (Relay) and negative components counted from
  the end of their axis, as for GatherND.

Constant indices out of ONNX's range ``[-s, s - 1]`` are an error here;
computed ones are clamped by the operators (ONNX leaves them an error).
ONNX leaves repeated positions with ``reduction`` none undefined; here the
last update wins.

Versions: ScatterElements 11, 13, 16 (reduction), 18 (max/min);
ScatterND 11, 13, 16, 18 (the same).
"""

from __future__ import annotations

import numpy as np

from ....ir.expr import Expr
from ..graph import Node
from ..registry import converter
from ....ir.dtype import DType
from .util import normalize_axis

def _index_input(node: Node, i: int) -> Expr:
    idx = node.input(i)
    if node.dtype(idx) not in (DType.INT32, DType.INT64):
        raise node.error(f"indices of dtype {node.dtype(idx)} are not supported")
    return idx


_REDUCTIONS = {"none": "update", "add": "add", "mul": "mul", "max": "max", "min": "min"}


def _reduction(node: Node) -> str:
    name = node.attr("reduction", "none")
    allowed = ("none",) if node.version < 16 else \
        ("none", "add", "mul") if node.version < 18 else tuple(_REDUCTIONS)
    if name not in allowed:
        raise node.unsupported("reduction", name, f"is not one of {', '.join(allowed)} in "
                               f"version {node.version}")
    return _REDUCTIONS[name]


def _check_range(node: Node, idx: Expr, extents: np.ndarray) -> None:
    value = node.ctx.const_value(idx)
    if value is not None and value.size:
        bad = (value < -extents) | (value >= extents)
        if bad.any():
            raise node.error(f"index {int(value[bad].flat[0])} is out of range (the indices "
                             f"address axes of extents {extents.tolist()})")


@converter("ScatterElements", (11, 13, 16, 18))
def convert_scatter_elements(node: Node) -> list[Expr]:
    data, idx, upd = node.input(0), _index_input(node, 1), node.input(2)
    shape = node.shape(data)
    axis = normalize_axis(node, int(node.attr("axis", 0)), len(shape))
    if node.shape(idx) != node.shape(upd):
        raise node.error(f"indices {list(node.shape(idx))} and updates "
                         f"{list(node.shape(upd))} differ in shape")
    _check_range(node, idx, np.asarray(shape[axis]))
    return [node.call("scatter_elements", [data, idx, upd], axis=axis,
                      reduction=_reduction(node))]


@converter("ScatterND", (11, 13, 16, 18))
def convert_scatter_nd(node: Node) -> list[Expr]:
    data, idx, upd = node.input(0), _index_input(node, 1), node.input(2)
    shape, ishape = node.shape(data), node.shape(idx)
    if not ishape or not 1 <= ishape[-1] <= len(shape):
        raise node.error(f"indices of shape {list(ishape)} do not index data of shape "
                         f"{list(shape)}")
    m = ishape[-1]
    extents = np.asarray(shape[:m], node.dtype(idx).np)
    _check_range(node, idx, extents)
    value = node.ctx.const_value(idx)
    if value is not None:
        idx = node.constant(np.where(value < 0, value + extents, value).astype(value.dtype))
    else:
        neg = node.call("less", [idx, node.constant(np.zeros((), extents.dtype))])
        idx = node.call("where", [neg, node.call("add", [idx, node.constant(extents)]), idx])
    first = node.call("transpose", [idx], axes=(len(ishape) - 1, *range(len(ishape) - 1)))
    return [node.call("scatter_nd", [data, first, upd], mode=_reduction(node))]
