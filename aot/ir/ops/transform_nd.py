"""Operator family: transform (indexing several axes at once, masks).

``gather_nd`` and ``trilu``, as Relay has them.  Registered when
:mod:`transform` is imported.

* ``gather_nd(data, indices, batch_dims=0)``: ``indices`` has shape
  ``(M, B_0..B_{b-1}, Y_0..Y_{K-1})`` (the index tuple on the *first*
  axis, Relay's layout; ONNX's GatherND has it last) and ``data`` shape
  ``(B_0..B_{b-1}, X_0..X_{N-1})``; the result has shape
  ``(B.., Y.., X_M..X_{N-1})`` and element ``out[b, y, x] =
  data[b, indices[0, b, y], .., indices[M-1, b, y], x]``.  ``M <= N``.
  Relay leaves out-of-range indices undefined; here each index component
  is clamped to ``[0, X_k - 1]`` like ``gather``'s (so no load leaves the
  buffer; ONNX's negative indices are made non-negative by the importer).
  ``index_rank`` (Relay's hint for dynamic index tuples) must be ``M`` when
  given.
* ``trilu(data, k, upper=True)``: the upper (``j - i >= k``) or lower
  (``j - i <= k``) triangle of the last two axes, zeros elsewhere, with
  ``k`` a scalar integer tensor (NumPy's ``triu``/``tril``).
"""

from __future__ import annotations

from typing import ClassVar, Sequence

from ..attrs import attrs_class
from .common import (Attrs, PatternKind, RelationError, TensorType, Type, as_array, defop, np,
                     tensor_args)
from .shape_util import fmt_shape, require_int_dtype, require_scalar

FAMILY = "transform"


# ================================================================= gather_nd

@attrs_class
class GatherNDAttrs(Attrs):
    type_key: ClassVar[str] = "GatherNDAttrs"
    batch_dims: int = 0
    index_rank: int | None = None


def gather_nd_shape(data: Sequence, indices: Sequence, attrs: GatherNDAttrs) -> tuple:
    """The result's shape (and the checks of the relation)."""
    b = attrs.batch_dims
    if b < 0:
        raise RelationError(f"batch_dims must be non-negative, got {b}")
    if len(indices) < 1 + b:
        raise RelationError(f"indices of shape {fmt_shape(indices)} have no index axis and "
                            f"{b} batch axes")
    m = indices[0]
    if not isinstance(m, int):
        raise RelationError("the index tuple's length (indices' first axis) must be static")
    if attrs.index_rank is not None and attrs.index_rank != m:
        raise RelationError(f"index_rank={attrs.index_rank} differs from the index tuples' "
                            f"length {m}")
    if m < 1 or b + m > len(data):
        raise RelationError(f"index tuples of length {m} after {b} batch axes do not fit data "
                            f"of shape {fmt_shape(data)}")
    for k in range(b):
        d, i = data[k], indices[1 + k]
        if isinstance(d, int) and isinstance(i, int) and d != i:
            raise RelationError(f"batch axis {k} differs: data {fmt_shape(data)} vs indices "
                                f"{fmt_shape(indices)}")
    return tuple(data[:b]) + tuple(indices[1 + b:]) + tuple(data[b + m:])


def _gather_nd_rel(args: Sequence[Type], attrs: GatherNDAttrs) -> Type | None:
    ts = tensor_args(args)
    if ts is None:
        return None
    data, indices = ts
    require_int_dtype(indices, "the indices")
    return TensorType(gather_nd_shape(data.shape, indices.shape, attrs), data.dtype)


def _gather_nd(args: Sequence[np.ndarray], attrs: GatherNDAttrs, out: Type) -> np.ndarray:
    data, indices = args
    b = attrs.batch_dims
    m = indices.shape[0]
    shape = gather_nd_shape(data.shape, indices.shape, attrs)
    result = np.empty(shape, dtype=data.dtype)
    idx = indices.astype(np.int64)
    lead = result.shape[:len(shape) - (data.ndim - b - m)]
    for pos in np.ndindex(*lead):
        batch, rest = pos[:b], pos[b:]
        tup = tuple(int(np.clip(idx[(k, *batch, *rest)], 0, data.shape[b + k] - 1))
                    for k in range(m))
        result[pos] = data[(*batch, *tup)]
    return as_array(result, data.dtype)


defop("gather_nd", arity=2, rel=_gather_nd_rel, pattern=PatternKind.INJECTIVE,
      compute=_gather_nd, doc="out[b, y, x] = data[b, indices[:, b, y], x] (index tuples on "
                              "the first axis, clamped)", attrs=GatherNDAttrs, family=FAMILY)


# ===================================================================== trilu

@attrs_class
class TriluAttrs(Attrs):
    type_key: ClassVar[str] = "TriluAttrs"
    upper: bool = True


def _trilu_rel(args: Sequence[Type], attrs: TriluAttrs) -> Type | None:
    ts = tensor_args(args)
    if ts is None:
        return None
    data, k = ts
    if data.ndim < 2:
        raise RelationError(f"trilu needs data of rank 2 or more, got {fmt_shape(data.shape)}")
    require_int_dtype(k, "k")
    require_scalar(k, "k")
    return data


def _trilu(args: Sequence[np.ndarray], attrs: TriluAttrs, out: Type) -> np.ndarray:
    data, k = args
    shift = int(np.asarray(k, np.int64))
    rows, cols = data.shape[-2:]
    diff = np.arange(cols)[None, :] - np.arange(rows)[:, None]
    keep = diff >= shift if attrs.upper else diff <= shift
    return as_array(np.where(keep, data, np.zeros((), data.dtype)), data.dtype)


defop("trilu", arity=2, rel=_trilu_rel, pattern=PatternKind.INJECTIVE, compute=_trilu,
      doc="the upper (j - i >= k) or lower (j - i <= k) triangle of the last two axes",
      attrs=TriluAttrs, family=FAMILY)

__all__ = ["GatherNDAttrs", "TriluAttrs", "gather_nd_shape"]
