"""Shape and axis helpers shared by the transform, reduction and algorithm
families: axis normalisation with clear messages, tuple-of-tensor
arguments, products over dimensions that may be ``?``."""

from __future__ import annotations

from typing import Iterable, Protocol, Sequence

from ..types import ANY, Dim, IncompleteType, TensorType, TupleType, Type, TypeVar
from .common import RelationError, fmt_shape, ordinal, tensor_arg

__all__ = ["fmt_shape", "normalize_axis", "normalize_axes", "same_type_axis_rel",
           "tuple_tensor_arg", "dims_product", "is_static_dim", "require_int_dtype",
           "require_scalar"]


def is_static_dim(d: Dim) -> bool:
    return isinstance(d, int)


def dims_product(dims: Iterable[Dim]) -> Dim:
    """The product of ``dims``; ``?`` when any of them is ``?``."""
    n = 1
    for d in dims:
        if not isinstance(d, int):
            return ANY
        n *= d
    return n


def normalize_axis(axis: int, ndim: int, what: str = "axis") -> int:
    """``axis`` in ``[-ndim, ndim)`` mapped to ``[0, ndim)``.  The one axis
    normalisation of the operator families (qnn's variant for scalars is
    :func:`.qnn_common.normalize_axis`)."""
    if not -ndim <= axis < ndim:
        if ndim == 0:
            raise RelationError(f"{what}={axis} is out of range for a 0-d tensor")
        raise RelationError(f"{what}={axis} is out of range for a tensor of rank {ndim} "
                            f"(expected {-ndim} <= {what} < {ndim})")
    return axis + ndim if axis < 0 else axis


class _HasAxis(Protocol):
    @property
    def axis(self) -> int: ...


def same_type_axis_rel(args: Sequence[Type], attrs: _HasAxis) -> Type | None:
    """Relation of a unary operator whose result has its input's type and
    whose ``axis`` attribute must name one of its dimensions (sort,
    reverse)."""
    t = tensor_arg(args, 0)
    if t is None:
        return None
    normalize_axis(attrs.axis, t.ndim)
    return t


def normalize_axes(axes: Sequence[int], ndim: int, what: str = "axis") -> tuple[int, ...]:
    """Each axis normalised; duplicates rejected.  Keeps the given order."""
    out: list[int] = []
    for a in axes:
        n = normalize_axis(a, ndim, what)
        if n in out:
            raise RelationError(f"{what} {list(axes)} names dimension {n} twice")
        out.append(n)
    return tuple(out)


def tuple_tensor_arg(args: Sequence[Type], i: int) -> list[TensorType] | None:
    """``args[i]`` as a tuple of tensor types; None while it (or one of its
    fields) is still a hole."""
    t = args[i]
    if isinstance(t, (IncompleteType, TypeVar)):
        return None
    if not isinstance(t, TupleType):
        raise RelationError(f"expects a tuple of tensors as its {ordinal(i)} argument, got {t}")
    out: list[TensorType] = []
    for j, f in enumerate(t.fields):
        if isinstance(f, (IncompleteType, TypeVar)):
            return None
        if not isinstance(f, TensorType):
            raise RelationError(f"expects a tuple of tensors as its {ordinal(i)} argument, "
                                f"but field {j} is {f}")
        out.append(f)
    return out


def require_int_dtype(t: TensorType, what: str) -> None:
    if not t.dtype.is_int:
        raise RelationError(f"{what} must be an integer tensor, got {t}")


def require_scalar(t: TensorType, what: str) -> None:
    if t.shape != ():
        raise RelationError(f"{what} must be a scalar (shape ()), got {t}")


# ------------------------------------------------ normalisation axes (nn_norm)

def instance_axes(ndim: int, axis: int) -> tuple[int, ...]:
    """The axes instance norm reduces: all but the batch and ``axis``."""
    return tuple(i for i in range(1, ndim) if i != axis)


def group_shape(shape: Sequence[int], axis: int, groups: int) -> tuple[tuple[int, ...],
                                                                       tuple[int, ...]]:
    """The data's shape with ``axis`` split into (groups, channels per
    group), and the axes that shape normalises over (the channels of a
    group and every axis after)."""
    split = (*shape[:axis], groups, shape[axis] // groups, *shape[axis + 1:])
    return tuple(int(d) for d in split), tuple(range(axis + 1, len(split)))


def l2_axes(ndim: int, axis: tuple[int, ...] | None) -> tuple[int, ...]:
    """The axes l2_normalize sums over (None: all), sorted and checked."""
    if axis is None:
        return tuple(range(ndim))
    axes = tuple(sorted({normalize_axis(a, ndim) for a in axis}))
    if len(axes) != len(axis):
        raise RelationError(f"axis {list(axis)} names an axis twice")
    return axes
