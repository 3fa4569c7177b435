"""Shared pieces of the qnn family: checking quantization-parameter
arguments in relations, and laying them out along an axis in computes.

Quantization parameters are tensor *arguments* (as in Relay): a scale is a
``float32`` tensor, a zero point an ``int32`` tensor.  A per-tensor
parameter is a scalar (shape ``()``); a per-channel parameter is 1-D with
one value per index of the quantized axis.  A 1-D parameter of length 1 is
accepted anywhere a per-channel one is and means per-tensor (Relay accepts
that only for ``qnn.dequantize``; accepting it everywhere costs nothing).
Parameters that Relay requires to be scalars (``output_scale`` of
``qnn.requantize``, ...) must have shape ``()``; when such an argument is
still a hole, the relation gives it that type.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ..quant import QuantizationError
from ..registry import Solved
from .common import DType, RelationError, TensorType, tensor_arg
from .nn_util import compatible
from ..types import Dim, Type

SCALE = DType.FLOAT32
ZERO_POINT = DType.INT32


def normalize_axis(axis: int, rank: int, what: str = "axis") -> int:
    """Relay's rule for quantization axes: ``axis < 0`` counts from the end;
    a rank-0 tensor has the single axis 0 (``axis`` 0 or -1).

    A deliberate variant of :func:`.shape_util.normalize_axis`, which the
    other families share and which rejects every axis of a rank-0 tensor.
    For rank > 0 both accept the same range; only the messages differ."""
    if rank == 0:
        if axis in (0, -1):
            return 0
        raise RelationError(f"{what}={axis} is out of range for a scalar")
    norm = axis + rank if axis < 0 else axis
    if not 0 <= norm < rank:
        raise RelationError(f"{what}={axis} is out of range for a tensor of rank {rank}")
    return norm


class Params:
    """Collects the refined types of parameter arguments that were holes,
    so a relation can return ``Solved``."""

    def __init__(self, args: Sequence[Type]) -> None:
        self.args = args
        self.refined: list[Type | None] = [None] * len(args)

    @property
    def any_refined(self) -> bool:
        return any(t is not None for t in self.refined)

    def scalar(self, i: int, what: str, dtype: DType) -> bool:
        """Argument ``i`` must be a ``dtype`` scalar.  A hole is given that
        type.  Returns True (the argument's type is then known)."""
        t = tensor_arg(self.args, i, what)
        if t is None:
            self.refined[i] = TensorType((), dtype)
            return True
        if t.dtype != dtype or t.shape != ():
            raise RelationError(f"{what} must be a {dtype} scalar, got {t}")
        return True

    def per_axis(self, i: int, what: str, dtype: DType, extent: Dim, where: str) -> bool:
        """Argument ``i`` must be a ``dtype`` scalar or 1-D with ``extent``
        (or 1) elements.  ``where`` describes the axis for messages.
        Returns False while the argument is a hole (scalar or vector is not
        determined, so the relation must wait)."""
        t = tensor_arg(self.args, i, what)
        if t is None:
            return False
        ok = t.dtype == dtype and (
            t.shape == () or (len(t.shape) == 1 and (t.shape[0] == 1
                                                     or compatible(t.shape[0], extent))))
        if not ok:
            raise RelationError(f"{what} must be a {dtype} scalar or a 1-D {dtype} tensor "
                                f"of {extent} elements ({where}), got {t}")
        return True

    def is_per_channel(self, i: int) -> bool:
        t = self.args[i]
        return isinstance(t, TensorType) and len(t.shape) == 1 and t.shape[0] != 1


def io_scalar_params(args: Sequence[Type]) -> Params:
    """Arguments 1-4 of a unary quantized operator (``input_scale``,
    ``input_zero_point``, ``output_scale``, ``output_zero_point``), all
    scalars; holes are given their types."""
    params = Params(args)
    params.scalar(1, "input_scale", SCALE)
    params.scalar(2, "input_zero_point", ZERO_POINT)
    params.scalar(3, "output_scale", SCALE)
    params.scalar(4, "output_zero_point", ZERO_POINT)
    return params


def with_params(out: Type, params: Params) -> Type | Solved:
    """``out``, or ``Solved`` when parameter holes were refined."""
    if params.any_refined:
        return Solved(out, tuple(params.refined))
    return out


def kernel_params(args: Sequence[Type], out_channels: Dim) -> Params | None:
    """input_zero_point (2), kernel_zero_point (3), input_scale (4) and
    kernel_scale (5) of the contractions (dense, conv2d, conv2d_transpose):
    scalars for the input, one per output channel (or one) for the
    kernel; None while a per-channel count is unknown."""
    params = Params(args)
    params.scalar(2, "input_zero_point", ZERO_POINT)
    params.scalar(4, "input_scale", SCALE)
    where = f"one per output channel, {out_channels}"
    if not params.per_axis(3, "kernel_zero_point", ZERO_POINT, out_channels, where):
        return None
    if not params.per_axis(5, "kernel_scale", SCALE, out_channels, where):
        return None
    return params


# ------------------------------------------------------------------ computes

def along_axis(value: np.ndarray, ndim: int, axis: int) -> np.ndarray:
    """A scalar or per-channel parameter shaped to broadcast against a
    rank-``ndim`` tensor whose channels are on ``axis`` (normalized)."""
    v = np.asarray(value)
    if v.ndim == 0 or v.size == 1 or ndim == 0:
        return v.reshape(())
    shape = [1] * ndim
    shape[axis] = v.size
    return v.reshape(shape)


def scales(value: np.ndarray, what: str) -> np.ndarray:
    """Scale values as float64 (exact widening of float32); they must be
    positive and finite."""
    s = np.asarray(value, dtype=np.float32).astype(np.float64)
    bad = ~np.isfinite(s) | (s <= 0.0)
    if np.any(bad):
        raise QuantizationError(f"{what} must be positive and finite, got "
                                f"{float(s[bad].ravel()[0])!r}")
    return s


def zero_points(value: np.ndarray) -> np.ndarray:
    return np.asarray(value).astype(np.int64)


def map_unique(fn: Callable[..., tuple[int, ...]], n_out: int,
               *inputs: np.ndarray) -> list[np.ndarray]:
    """Apply a scalar function returning ``n_out`` integers to broadcast
    float arrays, once per distinct combination of inputs; returns int64
    arrays of the broadcast shape."""
    arrays = np.broadcast_arrays(*[np.asarray(a, dtype=np.float64) for a in inputs])
    shape = arrays[0].shape
    if arrays[0].size == 0:
        return [np.zeros(shape, np.int64) for _ in range(n_out)]
    keys = np.stack([a.ravel() for a in arrays], axis=1)
    uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
    table = np.array([fn(*(float(v) for v in row)) for row in uniq], dtype=np.int64)
    inverse = inverse.ravel()
    return [table[inverse, j].reshape(shape) for j in range(n_out)]


