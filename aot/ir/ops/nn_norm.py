"""The normalisations beyond batch and layer norm, as Relay has them:
``nn.instance_norm``, ``nn.group_norm`` and ``nn.l2_normalize``.

* ``nn.instance_norm(x, gamma, beta)``: each instance and channel
  normalised over every other axis (not 0, not ``axis``), then scaled by
  ``gamma`` and shifted by ``beta`` per channel (``axis``)::

      (x - mean) / sqrt(var + eps) * gamma + beta

  with the population variance; the data has rank 3 or more.
* ``nn.group_norm(x, gamma, beta, num_groups)``: the channels (``axis``)
  split into ``num_groups`` contiguous groups; each instance and group is
  normalised over its channels and every axis after ``axis``, then
  ``gamma``/``beta`` apply per channel.  ``num_groups`` divides the
  channel count.
* ``nn.l2_normalize(x, eps, axis)``: ``x / sqrt(max(sum(x * x, axis), eps))``
  (``axis`` None: every axis), on float tensors.

Like ``nn.layer_norm`` they accept floating-point tensors only, and the
reference computes in float64 and rounds once.  SimplifyInference rewrites
each into the reductions and arithmetic it computes, exactly as Relay's
``SimplifyInference`` does (``aot/passes/simplify_inference.py``), and the
C backend compiles that arithmetic; the interpreter computes the records
themselves.  Pattern kinds follow Relay: instance and group norm opaque,
l2_normalize out-elemwise-fusable (``kOutEWiseFusable``).
"""

from __future__ import annotations

from typing import ClassVar, Sequence

from ..attrs import attrs_class
from ..registry import RelResult, Solved
from ..types import Type
from .common import (Attrs, PatternKind, RelationError, TensorType, as_array, defop, fmt_shape, np,
                     tensor_arg)
from .nn import channel_shape, channel_vector, scale_center
from .nn_util import require_float
from .shape_util import group_shape, instance_axes, l2_axes, normalize_axis

FAMILY = "nn"


@attrs_class
class InstanceNormAttrs(Attrs):
    type_key: ClassVar[str] = "InstanceNormAttrs"
    axis: int = 1
    epsilon: float = 1e-5
    center: bool = True
    scale: bool = True


@attrs_class
class GroupNormAttrs(Attrs):
    type_key: ClassVar[str] = "GroupNormAttrs"
    num_groups: int = 0
    axis: int = 1
    epsilon: float = 1e-5
    center: bool = True
    scale: bool = True


@attrs_class
class L2NormalizeAttrs(Attrs):
    type_key: ClassVar[str] = "L2NormalizeAttrs"
    eps: float = 0.0
    axis: tuple[int, ...] | None = None


def _affine_rel(args: Sequence[Type], axis_attr: int, min_rank: int, what: str,
                check=None) -> RelResult:
    """The relation of ``op(data, gamma, beta)`` normalising per channel
    of ``axis_attr``: the data's type, gamma and beta channel vectors."""
    data = tensor_arg(args, 0, "data")
    if data is None:
        return None
    require_float(data)
    if data.ndim < min_rank:
        raise RelationError(f"{what} needs data of rank {min_rank} or more, got "
                            f"{fmt_shape(data.shape)}")
    axis = normalize_axis(axis_attr, data.ndim)
    if check is not None:
        check(data, axis)
    refined = (channel_vector(data, args[1], axis, "gamma"),
               channel_vector(data, args[2], axis, "beta"))
    if any(r is not None for r in refined):
        return Solved(data, (None, *refined))
    return data


def _normalized(xf: np.ndarray, axes: tuple[int, ...], eps: float) -> np.ndarray:
    mean = np.mean(xf, axis=axes, keepdims=True)
    var = np.mean((xf - mean) ** 2, axis=axes, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (xf - mean) / np.sqrt(var + eps)


# ------------------------------------------------------------ instance norm

def _instance_norm_rel(args: Sequence[Type], attrs: InstanceNormAttrs) -> RelResult:
    return _affine_rel(args, attrs.axis, 3, "nn.instance_norm")


def _instance_norm(args: Sequence[np.ndarray], attrs: InstanceNormAttrs,
                   out: Type) -> np.ndarray:
    x, gamma, beta = args
    axis = attrs.axis % x.ndim
    y = _normalized(x.astype(np.float64), instance_axes(x.ndim, axis), attrs.epsilon)
    y = scale_center(y, gamma, beta, channel_shape(x.ndim, axis, x.shape[axis]), attrs)
    return as_array(y, x.dtype)


defop("nn.instance_norm", arity=3, rel=_instance_norm_rel, pattern=PatternKind.OPAQUE,
      compute=_instance_norm,
      doc="(x - mean) / sqrt(var + eps) * gamma + beta over each instance and channel",
      attrs=InstanceNormAttrs, family=FAMILY)


# --------------------------------------------------------------- group norm

def _check_groups(attrs: GroupNormAttrs):
    def check(data: TensorType, axis: int) -> None:
        channels = data.shape[axis]
        if attrs.num_groups < 1:
            raise RelationError(f"num_groups must be at least 1, got {attrs.num_groups}")
        if isinstance(channels, int) and channels % attrs.num_groups:
            raise RelationError(f"num_groups={attrs.num_groups} does not divide the "
                                f"{channels} channels of axis {axis}")
    return check


def _group_norm_rel(args: Sequence[Type], attrs: GroupNormAttrs) -> RelResult:
    return _affine_rel(args, attrs.axis, 2, "nn.group_norm", _check_groups(attrs))


def _group_norm(args: Sequence[np.ndarray], attrs: GroupNormAttrs, out: Type) -> np.ndarray:
    x, gamma, beta = args
    axis = attrs.axis % x.ndim
    split, axes = group_shape(x.shape, axis, attrs.num_groups)
    y = _normalized(x.astype(np.float64).reshape(split), axes, attrs.epsilon).reshape(x.shape)
    y = scale_center(y, gamma, beta, channel_shape(x.ndim, axis, x.shape[axis]), attrs)
    return as_array(y, x.dtype)


defop("nn.group_norm", arity=3, rel=_group_norm_rel, pattern=PatternKind.OPAQUE,
      compute=_group_norm,
      doc="(x - mean) / sqrt(var + eps) * gamma + beta over each instance and channel group",
      attrs=GroupNormAttrs, family=FAMILY)


# ------------------------------------------------------------- l2_normalize

def _l2_normalize_rel(args: Sequence[Type], attrs: L2NormalizeAttrs) -> RelResult:
    data = tensor_arg(args, 0, "data")
    if data is None:
        return None
    require_float(data)
    l2_axes(data.ndim, attrs.axis)
    return data


def _l2_normalize(args: Sequence[np.ndarray], attrs: L2NormalizeAttrs, out: Type) -> np.ndarray:
    (x,) = args
    xf = x.astype(np.float64)
    total = np.sum(xf * xf, axis=l2_axes(x.ndim, attrs.axis), keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        y = xf / np.sqrt(np.maximum(total, attrs.eps))
    return as_array(y, x.dtype)


defop("nn.l2_normalize", arity=1, rel=_l2_normalize_rel,
      pattern=PatternKind.OUT_ELEMWISE_FUSABLE, compute=_l2_normalize,
      doc="x / sqrt(max(sum(x * x, axis), eps))", attrs=L2NormalizeAttrs, family=FAMILY)
