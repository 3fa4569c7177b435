"""Operator family: transform (writes at computed positions).

``scatter_elements`` and ``scatter_nd``, as Relay has them.  Registered
when :mod:`transform` is imported.

* ``scatter_elements(data, indices, updates, axis=0, reduction="update")``:
  ``indices`` and ``updates`` have one shape, of ``data``'s rank, no larger
  than ``data`` off ``axis``.  The result starts as ``data``; then, for
  every position ``p`` of ``updates`` in row-major order, the element at
  ``p`` with ``p[axis]`` replaced by ``indices[p]`` becomes ``f(old,
  updates[p])``.  A negative index counts from the end of ``axis``
  (Relay's kernel adds the extent); an index still out of range is
  clamped to the axis (Relay leaves it undefined; here no store leaves the
  buffer).
* ``scatter_nd(data, indices, updates, mode="update")``: ``indices`` has
  shape ``(M, Y_0..Y_{K-1})`` (the index tuple on the *first* axis, as for
  ``gather_nd``), ``updates`` shape ``(Y_0..Y_{K-1}, X_M..X_{N-1})`` and
  ``data`` shape ``(X_0..X_{N-1})``; for every ``y`` in row-major order
  the slice ``data[indices[:, y]]`` becomes ``f(old, updates[y])``.  Index
  components are clamped to their axes.
* ``f`` (``reduction`` / ``mode``): ``update`` (the new value), ``add``,
  ``mul``, ``min``, ``max``, and for ``scatter_elements`` also ``mean``,
  Relay's ``(old + new) / 2`` one update at a time.  Updates are applied
  one at a time in that order, so a repeated position keeps the last
  ``update`` and accumulates in the data's type (integers wrap).

Pattern: opaque, as Relay registers both.
"""

from __future__ import annotations

import enum
from typing import Callable, ClassVar, Sequence

from ..attrs import attrs_class
from .common import (Attrs, PatternKind, RelationError, TensorType, Type, as_array, defop, np,
                     tensor_args)
from .shape_util import fmt_shape, normalize_axis, require_int_dtype

FAMILY = "transform"


class ScatterReduction(enum.Enum):
    UPDATE = "update"
    ADD = "add"
    MUL = "mul"
    MEAN = "mean"
    MIN = "min"
    MAX = "max"


@attrs_class
class ScatterElementsAttrs(Attrs):
    type_key: ClassVar[str] = "ScatterElementsAttrs"
    axis: int = 0
    reduction: ScatterReduction = ScatterReduction.UPDATE


@attrs_class
class ScatterNDAttrs(Attrs):
    type_key: ClassVar[str] = "ScatterNDAttrs"
    mode: ScatterReduction = ScatterReduction.UPDATE


def combine(reduction: ScatterReduction, old: np.ndarray, new: np.ndarray) -> np.ndarray:
    """``f(old, new)`` in the data's dtype (the reference's one step)."""
    dtype = old.dtype
    with np.errstate(all="ignore"):
        if reduction is ScatterReduction.UPDATE:
            out = new
        elif reduction is ScatterReduction.ADD:
            out = old + new
        elif reduction is ScatterReduction.MUL:
            out = old * new
        elif reduction is ScatterReduction.MIN:
            out = np.minimum(old, new)
        elif reduction is ScatterReduction.MAX:
            out = np.maximum(old, new)
        elif dtype.kind == "f":
            out = (old + new) / dtype.type(2)
        else:       # integer mean: the sum wraps, then C's truncating division
            s = (old + new).astype(np.int64)
            out = np.where(s < 0, -((-s) // 2), s // 2)
    return np.asarray(out).astype(dtype)


def _check_data(data: TensorType, updates: TensorType, reduction: ScatterReduction) -> None:
    if updates.dtype is not data.dtype:
        raise RelationError(f"updates of dtype {updates.dtype} differ from the data's "
                            f"{data.dtype}")
    if data.dtype.is_bool and reduction is not ScatterReduction.UPDATE:
        raise RelationError(f"reduction {reduction.value!r} of booleans")


# ========================================================== scatter_elements

def _scatter_elements_rel(args: Sequence[Type], attrs: ScatterElementsAttrs) -> Type | None:
    ts = tensor_args(args)
    if ts is None:
        return None
    data, indices, updates = ts
    require_int_dtype(indices, "the indices")
    _check_data(data, updates, attrs.reduction)
    axis = normalize_axis(attrs.axis, data.ndim)
    if indices.shape != updates.shape:
        raise RelationError(f"indices {fmt_shape(indices.shape)} and updates "
                            f"{fmt_shape(updates.shape)} differ in shape")
    if indices.ndim != data.ndim:
        raise RelationError(f"indices of rank {indices.ndim} for data of rank {data.ndim}")
    for k, (d, i) in enumerate(zip(data.shape, indices.shape)):
        if k != axis and isinstance(d, int) and isinstance(i, int) and i > d:
            raise RelationError(f"indices {fmt_shape(indices.shape)} do not fit data "
                                f"{fmt_shape(data.shape)} off axis {axis}")
    if data.shape[axis] == 0 and 0 not in indices.shape:
        raise RelationError(f"updates scattered along axis {axis} of extent 0")
    return data


def fix_scatter_index(i: int, extent: int) -> int:
    """A negative index counts from the end, then the clamp into the axis."""
    if i < 0:
        i += extent
    return min(max(i, 0), extent - 1)


def _scatter_elements(args: Sequence[np.ndarray], attrs: ScatterElementsAttrs,
                      out: Type) -> np.ndarray:
    data, indices, updates = args
    axis = normalize_axis(attrs.axis, data.ndim)
    result = np.array(data, copy=True)
    extent = data.shape[axis]
    for pos in np.ndindex(*indices.shape):
        dest = list(pos)
        dest[axis] = fix_scatter_index(int(indices[pos]), extent)
        at = tuple(dest)
        result[at] = combine(attrs.reduction, result[at], updates[pos])
    return as_array(result, data.dtype)


defop("scatter_elements", arity=3, rel=_scatter_elements_rel, pattern=PatternKind.OPAQUE,
      compute=_scatter_elements,
      doc="data with updates[p] combined into position p, p[axis] = indices[p]",
      attrs=ScatterElementsAttrs, family=FAMILY)


# ================================================================ scatter_nd

def _scatter_nd_rel(args: Sequence[Type], attrs: ScatterNDAttrs) -> Type | None:
    ts = tensor_args(args)
    if ts is None:
        return None
    data, indices, updates = ts
    require_int_dtype(indices, "the indices")
    if attrs.mode is ScatterReduction.MEAN:
        raise RelationError("scatter_nd has no mode 'mean' (update, add, mul, min, max)")
    _check_data(data, updates, attrs.mode)
    if indices.ndim < 1:
        raise RelationError("indices need an index axis (the first)")
    m = indices.shape[0]
    if not isinstance(m, int):
        raise RelationError("the index tuple's length (indices' first axis) must be static")
    if m < 1 or m > data.ndim:
        raise RelationError(f"index tuples of length {m} do not fit data of shape "
                            f"{fmt_shape(data.shape)}")
    want = tuple(indices.shape[1:]) + tuple(data.shape[m:])
    if len(want) != updates.ndim or any(
            isinstance(a, int) and isinstance(b, int) and a != b
            for a, b in zip(want, updates.shape)):
        raise RelationError(f"updates of shape {fmt_shape(updates.shape)} must have shape "
                            f"{fmt_shape(want)} (indices' after the first, then data's "
                            f"after the first {m})")
    if any(data.shape[k] == 0 for k in range(m)) and 0 not in indices.shape[1:]:
        raise RelationError(f"updates scattered into data of shape {fmt_shape(data.shape)}")
    return data


def _scatter_nd(args: Sequence[np.ndarray], attrs: ScatterNDAttrs, out: Type) -> np.ndarray:
    data, indices, updates = args
    m = indices.shape[0]
    result = np.array(data, copy=True)
    f: Callable[[np.ndarray, np.ndarray], np.ndarray] = \
        lambda old, new: combine(attrs.mode, old, new)   # noqa: E731
    for y in np.ndindex(*indices.shape[1:]):
        tup = tuple(min(max(int(indices[(k, *y)]), 0), data.shape[k] - 1) for k in range(m))
        result[tup] = f(result[tup], updates[y])
    return as_array(result, data.dtype)


defop("scatter_nd", arity=3, rel=_scatter_nd_rel, pattern=PatternKind.OPAQUE,
      compute=_scatter_nd,
      doc="data with updates[y] combined into the slice data[indices[:, y]] (index tuples "
          "on the first axis, clamped)", attrs=ScatterNDAttrs, family=FAMILY)

__all__ = ["ScatterElementsAttrs", "ScatterNDAttrs", "ScatterReduction", "combine",
           "fix_scatter_index"]
