"""Helpers shared by the converter families: spatial attributes of
convolutions and pools, broadcasting, small constants."""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ....ir.dtype import DType
from ....ir.expr import Expr
from ...padding import same_padding
from ..graph import Node


def spatial_ints(node: Node, name: str, n: int, default: int) -> list[int]:
    """An INTS attribute with one value per spatial axis (``strides``,
    ``dilations``), ``default`` everywhere when absent."""
    values = node.attr(name)
    if values is None:
        return [default] * n
    values = [int(v) for v in values]
    if len(values) != n:
        raise node.error(f"{name}={values} needs {n} values (one per spatial axis)")
    if any(v < 1 for v in values):
        raise node.unsupported(name, values, "must be positive")
    return values


def spatial_pads(node: Node, in_sizes: Sequence[int], kernel: Sequence[int],
                 strides: Sequence[int], dilations: Sequence[int],
                 dilated_same: bool = False) -> list[tuple[int, int]]:
    """(begin, end) padding per spatial axis from ``auto_pad`` and
    ``pads``.  ``SAME_UPPER``/``SAME_LOWER`` pad so that the output size is
    ``ceil(in / stride)``, the odd unit at the end (upper) or the beginning
    (lower).  With dilations, ``dilated_same`` (convolutions) pads for the
    dilated kernel's extent ``(k - 1) * d + 1``, as ONNX's reference
    implementation and PyTorch's ``padding="same"`` (which the classic
    exporter writes as ``SAME_UPPER``) do; onnxruntime refuses these.
    Elsewhere (pooling) dilations with ``SAME_*`` are refused."""
    n = len(in_sizes)
    auto_pad = node.attr("auto_pad", "NOTSET")
    if auto_pad == "NOTSET":
        pads = node.attr("pads")
        if pads is None:
            return [(0, 0)] * n
        pads = [int(p) for p in pads]
        if len(pads) != 2 * n:
            raise node.error(f"pads={pads} needs {2 * n} values")
        if any(p < 0 for p in pads):
            raise node.unsupported("pads", pads, "(negative padding) is not supported")
        return [(pads[i], pads[i + n]) for i in range(n)]
    if auto_pad == "VALID":
        return [(0, 0)] * n
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        if any(d != 1 for d in dilations) and not dilated_same:
            raise node.error(f"auto_pad={auto_pad} with dilations is not supported")
        out = []
        for size, k, s, d in zip(in_sizes, kernel, strides, dilations):
            small, big = same_padding(size, k, s, d)
            out.append((small, big) if auto_pad == "SAME_UPPER" else (big, small))
        return out
    raise node.unsupported("auto_pad", auto_pad)


def broadcast_shape(a: Sequence[int], b: Sequence[int]) -> tuple[int, ...]:
    return tuple(int(d) for d in np.broadcast_shapes(tuple(a), tuple(b)))


def scalar_like(node: Node, value: float | int, like: Expr) -> Expr:
    """A 0-d constant of ``like``'s dtype."""
    return node.constant(np.asarray(value, dtype=node.dtype(like).np))


def prod(values: Sequence[int]) -> int:
    return int(math.prod(values))


def normalize_axis(node: Node, axis: int, rank: int, what: str = "axis") -> int:
    if not -rank <= axis < rank:
        raise node.error(f"{what}={axis} is out of range for a tensor of rank {rank}")
    return axis + rank if axis < 0 else axis


def require_float(node: Node, e: Expr, what: str = "the input") -> DType:
    dt = node.dtype(e)
    if not dt.is_float:
        raise node.error(f"{what} has dtype {dt}; a floating-point tensor is required")
    return dt


def reshape_to(node: Node, x: Expr, shape: tuple[int, ...]) -> Expr:
    """``x`` reshaped to the explicit ``shape`` (``x`` itself when it has
    that shape already)."""
    shape = tuple(int(d) for d in shape)
    if node.shape(x) == shape:
        return x
    # explicit extents only: allowzero makes a 0 an extent, not "copy"
    return node.call("reshape", [x], newshape=shape, allowzero=0 in shape)
