"""Index arithmetic shared by the transform family's lowerings
(``transform.py``, ``transform_index.py``, ``layout.py``).

Design note
-----------
Every transform is a map from an output index to an input index; the
helpers here build those maps as int32 ``no_wrap`` kernel-IR expressions,
trying to keep integer division (a runtime helper call in C) out of the
common cases:

* :func:`reshape_index` does not linearise the whole index and unravel it
  again.  It splits the two shapes into the shortest *groups* of
  consecutive dimensions with equal products (``(2, 3, 4) -> (6, 4)`` is
  ``{2, 3} <-> {6}`` and ``{4} <-> {4}``), ignoring extents of 1.  A group
  of one input dimension needs no division at all; only a group that
  splits an output dimension over several input dimensions divides, and
  only by constants.
* :func:`fix_index` makes a *data-dependent* index (take, gather) valid
  for an axis as the reference's ``fix_indices`` does: the index is first
  widened to int32 (or int64, for uint32/int64/uint64 indices -- uint64 is
  reinterpreted as int64 exactly as ``astype(np.int64)``), then clamped or
  reduced modulo the extent, so no load can leave its buffer whatever the
  index tensor holds.  Comparisons whose outcome the index's dtype already
  decides are not emitted, and ``wrap`` on a power-of-two extent is a mask.
"""

from __future__ import annotations

from typing import Sequence

from ....ir.dtype import DType
from ....ir.ops.transform_index import TakeMode
from ...kernel import ir as K
from ...kernel.ranges import int_range
from ..registry import INDEX, Index, LoweringError

__all__ = ["ZERO", "idx_const", "iadd", "isub", "imul", "idiv", "imod", "unravel",
           "reshape_index", "widen_index", "fix_index", "clamp_index"]

ZERO = K.Const(0, INDEX)


def idx_const(v: int) -> K.Const:
    return K.Const(int(v), INDEX)


def iadd(a: K.Expr, b: int | K.Expr) -> K.Expr:
    if isinstance(b, int):
        if b == 0:
            return a
        return K.add(a, b, no_wrap=True) if b > 0 else K.sub(a, -b, no_wrap=True)
    return K.add(a, b, no_wrap=True)


def isub(a: int | K.Expr, b: K.Expr) -> K.Expr:
    return K.sub(a, b, no_wrap=True)


def imul(a: K.Expr, b: int) -> K.Expr:
    if b == 1:
        return a
    if b == 0:
        return ZERO
    return K.mul(a, b, no_wrap=True)


def idiv(a: K.Expr, b: int) -> K.Expr:
    """``a / b`` for a non-negative index ``a`` and a positive constant."""
    assert b > 0
    return a if b == 1 else K.div(a, idx_const(b))


def imod(a: K.Expr, b: int) -> K.Expr:
    """``a % b`` for a non-negative index ``a`` and a positive constant."""
    assert b > 0
    return ZERO if b == 1 else K.mod(a, idx_const(b))


def unravel(flat: K.Expr, shape: Sequence[int]) -> Index:
    """The N-d index of the row-major position ``flat`` in ``shape``
    (``0 <= flat < prod(shape)``)."""
    shape = tuple(int(d) for d in shape)
    strides = K.row_major_strides(shape)
    out: list[K.Expr] = []
    for axis, (d, s) in enumerate(zip(shape, strides)):
        if d == 1:
            out.append(ZERO)
            continue
        v = idiv(flat, s)
        out.append(v if axis == 0 else imod(v, d))
    return tuple(out)


def _groups(in_shape: Sequence[int], out_shape: Sequence[int]
            ) -> list[tuple[list[int], list[int]]]:
    """Pairs (input axes, output axes) of consecutive non-1 dimensions with
    equal products; both shapes have the same positive element count."""
    ins = [a for a, d in enumerate(in_shape) if d != 1]
    outs = [a for a, d in enumerate(out_shape) if d != 1]
    groups: list[tuple[list[int], list[int]]] = []
    i = j = 0
    while i < len(ins):
        gi, go = [ins[i]], [outs[j]]
        pin, pout = in_shape[ins[i]], out_shape[outs[j]]
        i, j = i + 1, j + 1
        while pin != pout:
            if pin < pout:
                gi.append(ins[i])
                pin *= in_shape[ins[i]]
                i += 1
            else:
                go.append(outs[j])
                pout *= out_shape[outs[j]]
                j += 1
        groups.append((gi, go))
    assert j == len(outs)
    return groups


def reshape_index(idx: Index, out_shape: Sequence[int], in_shape: Sequence[int]) -> Index:
    """The index into a tensor of ``in_shape`` holding the same row-major
    position as ``idx`` in ``out_shape`` (see the design note)."""
    in_shape = tuple(int(d) for d in in_shape)
    out_shape = tuple(int(d) for d in out_shape)
    result: list[K.Expr] = [ZERO] * len(in_shape)
    if any(d == 0 for d in in_shape):
        return tuple(result)   # no element is ever read
    for in_axes, out_axes in _groups(in_shape, out_shape):
        ext = [out_shape[a] for a in out_axes]
        flat = K.strided_index([idx[a] for a in out_axes], K.row_major_strides(ext))
        parts = unravel(flat, [in_shape[a] for a in in_axes])
        for a, p in zip(in_axes, parts):
            result[a] = p
    return tuple(result)


def widen_index(e: K.Expr) -> K.Expr:
    """An integer index value as the reference sees it after
    ``astype(np.int64)``: in int32 when that holds every value of its
    dtype, else in int64 (uint64 reinterpreted, as NumPy does)."""
    t = e.dtype
    assert t.is_int, f"index of dtype {t}"
    lo, hi = K.dtype_range(t)
    if -2**31 <= lo and hi < 2**31:
        return K.cast(DType.INT32, e)
    return K.cast(DType.INT64, e)


def clamp_index(v: K.Expr, lo: int, hi: int) -> K.Expr:
    """``min(max(v, lo), hi)`` as selects, leaving out a side the value's
    range already satisfies."""
    vlo, vhi = int_range(v)
    if vlo < lo:
        v = K.select(K.lt(v, K.Const(lo, v.dtype)), K.Const(lo, v.dtype), v)
    if vhi > hi:
        v = K.select(K.gt(v, K.Const(hi, v.dtype)), K.Const(hi, v.dtype), v)
    return v


def fix_index(e: K.Expr, extent: int, mode: TakeMode) -> K.Expr:
    """The int32 index ``fix_indices`` makes of the index value ``e`` for
    an axis of ``extent`` (clip and fast clamp, wrap is the floor
    modulo)."""
    if extent <= 0:
        raise LoweringError("take/gather from an axis of extent 0 with a non-empty index")
    if extent == 1:
        return ZERO
    v = widen_index(e)
    if mode is TakeMode.WRAP:
        n = K.Const(extent, v.dtype)
        if extent & (extent - 1) == 0:
            v = K.bit_and(v, K.Const(extent - 1, v.dtype))   # floor mod, two's complement
        else:
            v = K.floormod(v, n)
    else:
        v = clamp_index(v, 0, extent - 1)
    return K.cast(INDEX, v)
