"""Operator family: scan (running reductions).

``cumsum`` and ``cumprod``, as Relay has them (``ScanopAttrs``):

* ``cumsum(data, axis=None, dtype=None, exclusive=False)``: element ``k``
  along ``axis`` is the sum of elements ``0..k`` (``0..k-1`` when
  ``exclusive``; the first is then 0).  ``axis`` None scans the flattened
  tensor (the result is 1-D).  ``cumprod`` is the same with products (an
  exclusive one starts from 1).
* The result has ``dtype`` (default: the data's); each element is
  converted to it (cast's rules) and the running value is kept in it, one
  addition or multiplication at a time in index order: integers wrap,
  floats round after every step (NumPy's ``cumsum(..., dtype=)``, and what
  the C loop computes).  Boolean data needs an explicit ``dtype``.

Pattern: opaque, as Relay registers the scans.
"""

from __future__ import annotations

from typing import ClassVar, Sequence

from ..attrs import attrs_class
from .common import (Attrs, DType, PatternKind, RelationError, TensorType, Type, as_array, defop,
                     np, tensor_arg)
from .shape_util import dims_product, normalize_axis
from .transform_init import cast_array

FAMILY = "scan"


@attrs_class
class ScanopAttrs(Attrs):
    type_key: ClassVar[str] = "ScanopAttrs"
    axis: int | None = None
    dtype: DType | None = None
    exclusive: bool = False


def scan_dtype(data: TensorType, attrs: ScanopAttrs) -> DType:
    dtype = attrs.dtype if attrs.dtype is not None else data.dtype
    if dtype is DType.BOOL:
        raise RelationError("a scan of booleans needs dtype= (a numeric result type)")
    return dtype


def _scan_rel(args: Sequence[Type], attrs: ScanopAttrs) -> Type | None:
    data = tensor_arg(args, 0, "data")
    if data is None:
        return None
    dtype = scan_dtype(data, attrs)
    if attrs.axis is None:
        return TensorType((dims_product(data.shape),), dtype)
    normalize_axis(attrs.axis, data.ndim)
    return TensorType(data.shape, dtype)


def _scan(ufunc: np.ufunc, identity: int):
    def compute(args: Sequence[np.ndarray], attrs: ScanopAttrs, out: Type) -> np.ndarray:
        (x,) = args
        dtype = attrs.dtype if attrs.dtype is not None else DType(str(x.dtype))
        if attrs.axis is None:
            x, axis = x.reshape(-1), 0
        else:
            axis = attrs.axis % x.ndim
        values = cast_array(x, dtype)
        with np.errstate(all="ignore"):
            result = ufunc.accumulate(values, axis=axis, dtype=dtype.np)
        if attrs.exclusive:
            first = np.full_like(np.take(result, [0], axis=axis), identity)
            result = np.concatenate([first, np.delete(result, -1, axis=axis)], axis=axis) \
                if result.shape[axis] else result
        return as_array(result, dtype)
    return compute


defop("cumsum", arity=1, rel=_scan_rel, pattern=PatternKind.OPAQUE, compute=_scan(np.add, 0),
      doc="running sum along axis (exclusive: of the elements before), in dtype",
      attrs=ScanopAttrs, family=FAMILY)
defop("cumprod", arity=1, rel=_scan_rel, pattern=PatternKind.OPAQUE,
      compute=_scan(np.multiply, 1),
      doc="running product along axis (exclusive: of the elements before), in dtype",
      attrs=ScanopAttrs, family=FAMILY)

__all__ = ["ScanopAttrs", "scan_dtype"]
