"""Operator family: transform (shape manipulation).

reshape, reshape_like, transpose, squeeze, expand_dims, concatenate,
stack, split, tile, repeat, reverse.  The broadcasting transforms
(broadcast_to, broadcast_to_like, collapse_sum_like, collapse_sum_to) live
in :mod:`transform_broadcast`, the index-based ones (strided_slice, take,
gather, one_hot, where) in :mod:`transform_index`, gather_nd and trilu in
:mod:`transform_nd`, scatter_elements and scatter_nd in :mod:`transform_scatter`,
the value-creating ones (full, zeros, ones, the
``*_like`` initialisers, cast, clip, arange) in :mod:`transform_init` and
layout_transform in :mod:`layout`; importing this module registers them
all.

Semantics follow TVM Relay (``src/relay/op/tensor/transform.cc``); the
choices worth knowing:

* ``reshape``'s ``newshape`` takes Relay's special values: ``0`` copies
  the input dimension at the same position (a literal 0 with
  ``allowzero=True``), ``-1`` infers one dimension, ``-2`` copies all
  remaining input dimensions, ``-3`` merges two consecutive input
  dimensions, ``-4`` splits one input dimension into the two values that
  follow it (one of which may be -1).  The element count must match when
  the shapes are static.
* ``transpose`` with ``axes=None`` reverses the dimensions; otherwise
  ``axes`` must be a permutation (negative values allowed).
* ``squeeze`` with ``axis=None`` drops every dimension equal to 1 (the
  input shape must then be static); a listed axis must have extent 1.
* ``concatenate`` and ``stack`` take ONE tuple argument, as in Relay; the
  NumPy reference receives it as a Python tuple of arrays.
* ``split`` returns a tuple.  An integer ``indices_or_sections`` must
  divide the axis; a list of indices must be strictly ascending, start
  above 0 and end below the axis extent (Relay's checks).
* ``tile`` reps and ``repeat`` repeats must be >= 1 (Relay rejects 0).
* A dimension ``?`` propagates: an output dimension computed from a ``?``
  is ``?``; checks that need a value are skipped for it.
"""

from __future__ import annotations

from typing import ClassVar, Sequence

from ..attrs import attrs_class
from ..types import Dim
from .common import (ANY, Attrs, PatternKind, RelationError, TensorType, TupleType, Type,
                     as_array, defop, np, out_tensor_type, tensor_arg, tensor_args)
from .shape_util import (dims_product, fmt_shape, normalize_axes, normalize_axis,
                         same_type_axis_rel, tuple_tensor_arg)

FAMILY = "transform"
INJ = PatternKind.INJECTIVE
BC = PatternKind.BROADCAST


# ================================================================== reshape

@attrs_class
class ReshapeAttrs(Attrs):
    type_key: ClassVar[str] = "ReshapeAttrs"
    newshape: tuple[int, ...] = ()
    allowzero: bool = False

    def __post_init__(self) -> None:
        for v in self.newshape:
            if v < -4:
                raise ValueError(f"newshape {list(self.newshape)}: {v} is neither a dimension "
                                 f"nor a special value (0, -1, -2, -3, -4)")


def infer_reshape(ishape: Sequence[Dim], newshape: Sequence[int],
                  allowzero: bool = False) -> tuple[Dim, ...]:
    """Relay's InferNewShape: the output shape of ``reshape``.

    Walks ``newshape`` with a cursor ``src`` into the input shape.  Input
    dimensions copied through 0/-2/-3/-4 and the output dimensions they
    produce are recorded, so that a ``-1`` can still be inferred when a
    ``?`` input dimension was copied verbatim.
    """
    ishape = tuple(ishape)
    oshape: list[Dim] = []
    used_in: set[int] = set()
    used_out: set[int] = set()
    src = 0
    infer_at = -1
    i = 0
    while i < len(newshape):
        v = newshape[i]
        if v > 0 or (v == 0 and allowzero):
            oshape.append(v)
            src += 1
        elif v == 0:
            if src >= len(ishape):
                raise RelationError(f"newshape {list(newshape)}: the 0 at position {i} copies "
                                    f"input dimension {src}, but the input shape "
                                    f"{fmt_shape(ishape)} has only {len(ishape)}")
            used_in.add(src)
            used_out.add(len(oshape))
            oshape.append(ishape[src])
            src += 1
        elif v == -1:
            if infer_at >= 0:
                raise RelationError(f"newshape {list(newshape)}: at most one dimension can be "
                                    f"-1 (inferred)")
            infer_at = len(oshape)
            oshape.append(1)
            src += 1
        elif v == -2:
            while src < len(ishape):
                used_in.add(src)
                used_out.add(len(oshape))
                oshape.append(ishape[src])
                src += 1
        elif v == -3:
            if src + 1 >= len(ishape):
                raise RelationError(f"newshape {list(newshape)}: the -3 at position {i} merges "
                                    f"input dimensions {src} and {src + 1}, but the input "
                                    f"shape {fmt_shape(ishape)} has only {len(ishape)}")
            used_in.update((src, src + 1))
            used_out.add(len(oshape))
            oshape.append(dims_product(ishape[src:src + 2]))
            src += 2
        else:  # -4
            if i + 2 >= len(newshape):
                raise RelationError(f"newshape {list(newshape)}: the -4 at position {i} must "
                                    f"be followed by two dimensions")
            if src >= len(ishape):
                raise RelationError(f"newshape {list(newshape)}: the -4 at position {i} splits "
                                    f"input dimension {src}, but the input shape "
                                    f"{fmt_shape(ishape)} has only {len(ishape)}")
            d0 = ishape[src]
            used_in.add(src)
            src += 1
            d1, d2 = newshape[i + 1], newshape[i + 2]
            i += 2
            if d1 == -1 and d2 == -1:
                raise RelationError(f"newshape {list(newshape)}: the two dimensions after -4 "
                                    f"cannot both be -1")
            if d1 < -1 or d2 < -1 or d1 == 0 or d2 == 0:
                raise RelationError(f"newshape {list(newshape)}: the dimensions after -4 must "
                                    f"be positive or -1, got {d1} and {d2}")
            known = d2 if d1 == -1 else d1
            if isinstance(d0, int) and d0 % known != 0:
                raise RelationError(f"newshape {list(newshape)}: -4 cannot split input "
                                    f"dimension {d0} by {known}")
            first: Dim = (d0 // d2 if isinstance(d0, int) else ANY) if d1 == -1 else d1
            second: Dim = (d0 // d1 if isinstance(d0, int) else ANY) if d2 == -1 else d2
            if isinstance(d0, int) and isinstance(first, int) and isinstance(second, int) \
                    and first * second != d0:
                raise RelationError(f"newshape {list(newshape)}: -4 splits input dimension "
                                    f"{d0} into {first} x {second}")
            used_out.update((len(oshape), len(oshape) + 1))
            oshape.extend((first, second))
        i += 1

    if infer_at >= 0:
        rest_in = dims_product(d for k, d in enumerate(ishape) if k not in used_in)
        rest_out = dims_product(d for k, d in enumerate(oshape)
                                if k not in used_out and k != infer_at)
        if isinstance(rest_in, int) and isinstance(rest_out, int):
            if rest_out == 0 or rest_in % rest_out != 0:
                raise RelationError(f"cannot infer the -1 in newshape {list(newshape)} for "
                                    f"input shape {fmt_shape(ishape)}")
            oshape[infer_at] = rest_in // rest_out
        else:
            oshape[infer_at] = ANY

    total_in = dims_product(ishape)
    total_out = dims_product(oshape)
    if isinstance(total_in, int) and isinstance(total_out, int) and total_in != total_out:
        raise RelationError(f"cannot reshape {fmt_shape(ishape)} ({total_in} elements) into "
                            f"{fmt_shape(oshape)} ({total_out} elements) "
                            f"(newshape {list(newshape)})")
    return tuple(oshape)


def _reshape_rel(args: Sequence[Type], attrs: ReshapeAttrs) -> Type | None:
    t = tensor_arg(args, 0)
    if t is None:
        return None
    return TensorType(infer_reshape(t.shape, attrs.newshape, attrs.allowzero), t.dtype)


def _reshape(args: Sequence[np.ndarray], attrs: ReshapeAttrs, out: Type) -> np.ndarray:
    (x,) = args
    # from the data's own (static) shape, so a `?` in the type is no obstacle
    shape = infer_reshape(x.shape, attrs.newshape, attrs.allowzero)
    return as_array(np.reshape(x, shape), x.dtype)


defop("reshape", arity=1, rel=_reshape_rel, pattern=INJ, compute=_reshape,
      doc="reshape to newshape (0 copy, -1 infer, -2 rest, -3 merge, -4 split)", attrs=ReshapeAttrs,
      family=FAMILY)


@attrs_class
class ReshapeLikeAttrs(Attrs):
    type_key: ClassVar[str] = "ReshapeLikeAttrs"
    lhs_begin: int = 0
    lhs_end: int | None = None
    rhs_begin: int = 0
    rhs_end: int | None = None


def _span(begin: int, end: int | None, ndim: int, what: str) -> tuple[int, int]:
    b = begin + ndim if begin < 0 else begin
    e = ndim if end is None else (end + ndim if end < 0 else end)
    if not 0 <= b <= e <= ndim:
        raise RelationError(f"{what}_begin={begin}, {what}_end={end} do not select a range "
                            f"of a rank-{ndim} shape")
    return b, e


def reshape_like_shape(lhs: Sequence[Dim], rhs: Sequence[Dim],
                       attrs: ReshapeLikeAttrs) -> tuple[Dim, ...]:
    lb, le = _span(attrs.lhs_begin, attrs.lhs_end, len(lhs), "lhs")
    rb, re = _span(attrs.rhs_begin, attrs.rhs_end, len(rhs), "rhs")
    return tuple(lhs[:lb]) + tuple(rhs[rb:re]) + tuple(lhs[le:])


def _reshape_like_rel(args: Sequence[Type], attrs: ReshapeLikeAttrs) -> Type | None:
    ts = tensor_args(args)
    if ts is None:
        return None
    data, like = ts
    shape = reshape_like_shape(data.shape, like.shape, attrs)
    n_in, n_out = dims_product(data.shape), dims_product(shape)
    if isinstance(n_in, int) and isinstance(n_out, int) and n_in != n_out:
        raise RelationError(f"cannot reshape {fmt_shape(data.shape)} ({n_in} elements) like "
                            f"{fmt_shape(like.shape)} into {fmt_shape(shape)} "
                            f"({n_out} elements)")
    return TensorType(shape, data.dtype)


def _reshape_like(args: Sequence[np.ndarray], attrs: ReshapeLikeAttrs, out: Type) -> np.ndarray:
    x, like = args
    shape = reshape_like_shape(x.shape, like.shape, attrs)
    return as_array(np.reshape(x, shape), x.dtype)


defop("reshape_like", arity=2, rel=_reshape_like_rel, pattern=INJ, compute=_reshape_like,
      doc="reshape the first tensor to (a slice of) the second tensor's shape",
      attrs=ReshapeLikeAttrs, family=FAMILY)


# ============================================================== permutation

@attrs_class
class TransposeAttrs(Attrs):
    type_key: ClassVar[str] = "TransposeAttrs"
    axes: tuple[int, ...] | None = None


def transpose_axes(ndim: int, axes: tuple[int, ...] | None) -> tuple[int, ...]:
    if axes is None:
        return tuple(reversed(range(ndim)))
    if len(axes) != ndim:
        raise RelationError(f"axes {list(axes)} has {len(axes)} entries but the tensor has "
                            f"rank {ndim}")
    return normalize_axes(axes, ndim, "axes")


def _transpose_rel(args: Sequence[Type], attrs: TransposeAttrs) -> Type | None:
    t = tensor_arg(args, 0)
    if t is None:
        return None
    perm = transpose_axes(t.ndim, attrs.axes)
    return TensorType(tuple(t.shape[a] for a in perm), t.dtype)


def _transpose(args: Sequence[np.ndarray], attrs: TransposeAttrs, out: Type) -> np.ndarray:
    (x,) = args
    return as_array(np.transpose(x, transpose_axes(x.ndim, attrs.axes)).copy(), x.dtype)


defop("transpose", arity=1, rel=_transpose_rel, pattern=INJ, compute=_transpose,
      doc="permute the dimensions (axes=None reverses them)", attrs=TransposeAttrs, family=FAMILY)


@attrs_class
class SqueezeAttrs(Attrs):
    type_key: ClassVar[str] = "SqueezeAttrs"
    axis: tuple[int, ...] | None = None


def _squeeze_axes(shape: Sequence[Dim], axis: tuple[int, ...] | None) -> tuple[int, ...]:
    if axis is None:
        if any(not isinstance(d, int) for d in shape):
            raise RelationError(f"squeeze with axis=None needs a static shape, got "
                                f"{fmt_shape(shape)}; list the axes to drop")
        return tuple(i for i, d in enumerate(shape) if d == 1)
    axes = normalize_axes(axis, len(shape))
    for a in axes:
        if isinstance(shape[a], int) and shape[a] != 1:
            raise RelationError(f"cannot squeeze axis {a} of shape {fmt_shape(shape)}: its "
                                f"extent is {shape[a]}, not 1")
    return axes


def _squeeze_rel(args: Sequence[Type], attrs: SqueezeAttrs) -> Type | None:
    t = tensor_arg(args, 0)
    if t is None:
        return None
    drop = set(_squeeze_axes(t.shape, attrs.axis))
    return TensorType(tuple(d for i, d in enumerate(t.shape) if i not in drop), t.dtype)


def _squeeze(args: Sequence[np.ndarray], attrs: SqueezeAttrs, out: Type) -> np.ndarray:
    (x,) = args
    axes = _squeeze_axes(x.shape, attrs.axis)
    return as_array(np.squeeze(x, axis=axes), x.dtype)


defop("squeeze", arity=1, rel=_squeeze_rel, pattern=INJ, compute=_squeeze,
      doc="drop dimensions of extent 1 (axis=None drops all of them)", attrs=SqueezeAttrs,
      family=FAMILY)


@attrs_class
class ExpandDimsAttrs(Attrs):
    type_key: ClassVar[str] = "ExpandDimsAttrs"
    axis: int = 0
    num_newaxis: int = 1

    def __post_init__(self) -> None:
        if self.num_newaxis < 0:
            raise ValueError(f"num_newaxis must be >= 0, got {self.num_newaxis}")


def expand_pivot(ndim: int, axis: int) -> int:
    if not -ndim - 1 <= axis <= ndim:
        raise RelationError(f"axis={axis} is out of range for a tensor of rank {ndim} "
                            f"(expected {-ndim - 1} <= axis <= {ndim})")
    return axis + ndim + 1 if axis < 0 else axis


def _expand_shape(shape: Sequence[Dim], attrs: ExpandDimsAttrs) -> tuple[Dim, ...]:
    p = expand_pivot(len(shape), attrs.axis)
    return tuple(shape[:p]) + (1,) * attrs.num_newaxis + tuple(shape[p:])


def _expand_dims_rel(args: Sequence[Type], attrs: ExpandDimsAttrs) -> Type | None:
    t = tensor_arg(args, 0)
    if t is None:
        return None
    return TensorType(_expand_shape(t.shape, attrs), t.dtype)


def _expand_dims(args: Sequence[np.ndarray], attrs: ExpandDimsAttrs, out: Type) -> np.ndarray:
    (x,) = args
    return as_array(np.reshape(x, _expand_shape(x.shape, attrs)), x.dtype)


defop("expand_dims", arity=1, rel=_expand_dims_rel, pattern=BC, compute=_expand_dims,
      doc="insert num_newaxis dimensions of extent 1 at axis", attrs=ExpandDimsAttrs, family=FAMILY)


@attrs_class
class ReverseAttrs(Attrs):
    type_key: ClassVar[str] = "ReverseAttrs"
    axis: int = 0


def _reverse(args: Sequence[np.ndarray], attrs: ReverseAttrs, out: Type) -> np.ndarray:
    (x,) = args
    return as_array(np.flip(x, axis=normalize_axis(attrs.axis, x.ndim)).copy(), x.dtype)


defop("reverse", arity=1, rel=same_type_axis_rel, pattern=INJ, compute=_reverse,
      doc="reverse the order along axis", attrs=ReverseAttrs, family=FAMILY)


# ====================================================== joining and splitting

def _same_dims(ts: Sequence[TensorType], skip: int | None) -> list[Dim]:
    """The common shape of ``ts`` (ignoring dimension ``skip``); ``?``
    matches anything and a static extent wins over it."""
    shape: list[Dim] = list(ts[0].shape)
    for j, t in enumerate(ts[1:], 1):
        if t.ndim != len(shape):
            raise RelationError(f"tensor 0 has rank {len(shape)} but tensor {j} has "
                                f"rank {t.ndim} ({t})")
        if t.dtype != ts[0].dtype:
            raise RelationError(f"tensor 0 is {ts[0].dtype} but tensor {j} is "
                                f"{t.dtype}")
        for k, d in enumerate(t.shape):
            if k == skip:
                continue
            if isinstance(shape[k], int) and isinstance(d, int):
                if shape[k] != d:
                    raise RelationError(f"dimension {k} of tensor {j} is {d} but "
                                        f"{shape[k]} in tensor 0 ({fmt_shape(ts[0].shape)} "
                                        f"vs {fmt_shape(t.shape)})")
            elif isinstance(d, int):
                shape[k] = d
    return shape


@attrs_class
class ConcatenateAttrs(Attrs):
    type_key: ClassVar[str] = "ConcatenateAttrs"
    axis: int = 0


def _joined_tensors(args: Sequence[Type], verb: str) -> list[TensorType] | None:
    """The tensors in the tuple argument of concatenate or stack (None
    while unknown); at least one."""
    ts = tuple_tensor_arg(args, 0)
    if ts is None:
        return None
    if not ts:
        raise RelationError(f"needs at least one tensor to {verb}")
    return ts


def _concatenate_rel(args: Sequence[Type], attrs: ConcatenateAttrs) -> Type | None:
    ts = _joined_tensors(args, "concatenate")
    if ts is None:
        return None
    if ts[0].ndim == 0:
        raise RelationError("cannot concatenate 0-d tensors")
    axis = normalize_axis(attrs.axis, ts[0].ndim)
    shape = _same_dims(ts, axis)
    shape[axis] = _sum_dims(t.shape[axis] for t in ts)
    return TensorType(tuple(shape), ts[0].dtype)


def _sum_dims(dims) -> Dim:
    total = 0
    for d in dims:
        if not isinstance(d, int):
            return ANY
        total += d
    return total


def _concatenate(args: Sequence, attrs: ConcatenateAttrs, out: Type) -> np.ndarray:
    (xs,) = args
    xs = tuple(xs)
    axis = normalize_axis(attrs.axis, xs[0].ndim)
    return as_array(np.concatenate(xs, axis=axis), out_tensor_type(out).dtype)


defop("concatenate", arity=1, rel=_concatenate_rel, pattern=INJ, compute=_concatenate,
      doc="join a tuple of tensors along an existing axis", attrs=ConcatenateAttrs, family=FAMILY)


@attrs_class
class StackAttrs(Attrs):
    type_key: ClassVar[str] = "StackAttrs"
    axis: int = 0


def _stack_rel(args: Sequence[Type], attrs: StackAttrs) -> Type | None:
    ts = _joined_tensors(args, "stack")
    if ts is None:
        return None
    shape = _same_dims(ts, None)
    p = expand_pivot(len(shape), attrs.axis)
    return TensorType(tuple(shape[:p]) + (len(ts),) + tuple(shape[p:]), ts[0].dtype)


def _stack(args: Sequence, attrs: StackAttrs, out: Type) -> np.ndarray:
    (xs,) = args
    xs = tuple(xs)
    p = expand_pivot(xs[0].ndim, attrs.axis)
    return as_array(np.stack(xs, axis=p), out_tensor_type(out).dtype)


defop("stack", arity=1, rel=_stack_rel, pattern=INJ, compute=_stack,
      doc="join a tuple of tensors along a new axis", attrs=StackAttrs, family=FAMILY)


@attrs_class
class SplitAttrs(Attrs):
    type_key: ClassVar[str] = "SplitAttrs"
    indices_or_sections: int | tuple[int, ...] = 1
    axis: int = 0

    def __post_init__(self) -> None:
        if isinstance(self.indices_or_sections, int) and self.indices_or_sections < 1:
            raise ValueError(f"indices_or_sections must be a positive number of sections, got "
                             f"{self.indices_or_sections}")


def split_extents(dim: Dim, attrs: SplitAttrs) -> list[Dim]:
    ios = attrs.indices_or_sections
    if isinstance(ios, int):
        if not isinstance(dim, int):
            return [ANY] * ios
        if dim % ios != 0:
            raise RelationError(f"{ios} sections do not divide the axis extent {dim}")
        return [dim // ios] * ios
    begin = 0
    out: list[Dim] = []
    for idx in ios:
        if idx <= begin:
            raise RelationError(f"split indices {list(ios)} must be strictly ascending and "
                                f"positive")
        out.append(idx - begin)
        begin = idx
    if isinstance(dim, int):
        if begin >= dim:
            raise RelationError(f"split index {begin} is not below the axis extent {dim} "
                                f"(indices {list(ios)})")
        out.append(dim - begin)
    else:
        out.append(ANY)
    return out


def _split_rel(args: Sequence[Type], attrs: SplitAttrs) -> Type | None:
    t = tensor_arg(args, 0)
    if t is None:
        return None
    if t.ndim == 0:
        raise RelationError("cannot split a 0-d tensor")
    axis = normalize_axis(attrs.axis, t.ndim)
    fields = []
    for ext in split_extents(t.shape[axis], attrs):
        shape = list(t.shape)
        shape[axis] = ext
        fields.append(TensorType(tuple(shape), t.dtype))
    return TupleType(tuple(fields))


def _split(args: Sequence[np.ndarray], attrs: SplitAttrs, out: Type) -> tuple:
    (x,) = args
    axis = normalize_axis(attrs.axis, x.ndim)
    ios = attrs.indices_or_sections
    parts = np.split(x, ios if isinstance(ios, int) else list(ios), axis=axis)
    return tuple(as_array(p.copy(), x.dtype) for p in parts)


defop("split", arity=1, rel=_split_rel, pattern=INJ, compute=_split,
      doc="split along axis into equal sections or at indices (a tuple)", attrs=SplitAttrs,
      family=FAMILY)


# ================================================================ repetition

@attrs_class
class TileAttrs(Attrs):
    type_key: ClassVar[str] = "TileAttrs"
    reps: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if any(r < 1 for r in self.reps):
            raise ValueError(f"tile reps must all be >= 1, got {list(self.reps)}")


def _tile_rel(args: Sequence[Type], attrs: TileAttrs) -> Type | None:
    t = tensor_arg(args, 0)
    if t is None:
        return None
    n = max(t.ndim, len(attrs.reps))
    shape = (1,) * (n - t.ndim) + tuple(t.shape)
    reps = (1,) * (n - len(attrs.reps)) + attrs.reps
    return TensorType(tuple(d * r if isinstance(d, int) else ANY
                            for d, r in zip(shape, reps)), t.dtype)


def _tile(args: Sequence[np.ndarray], attrs: TileAttrs, out: Type) -> np.ndarray:
    (x,) = args
    if not attrs.reps:
        return x.copy()
    return as_array(np.tile(x, attrs.reps), x.dtype)


defop("tile", arity=1, rel=_tile_rel, pattern=BC, compute=_tile,
      doc="repeat the whole tensor reps times per dimension", attrs=TileAttrs, family=FAMILY)


@attrs_class
class RepeatAttrs(Attrs):
    type_key: ClassVar[str] = "RepeatAttrs"
    repeats: int = 1
    axis: int = 0

    def __post_init__(self) -> None:
        if self.repeats < 1:
            raise ValueError(f"repeats must be >= 1, got {self.repeats}")


def _repeat_rel(args: Sequence[Type], attrs: RepeatAttrs) -> Type | None:
    t = tensor_arg(args, 0)
    if t is None:
        return None
    axis = normalize_axis(attrs.axis, t.ndim)
    shape = list(t.shape)
    shape[axis] = shape[axis] * attrs.repeats if isinstance(shape[axis], int) else ANY
    return TensorType(tuple(shape), t.dtype)


def _repeat(args: Sequence[np.ndarray], attrs: RepeatAttrs, out: Type) -> np.ndarray:
    (x,) = args
    return as_array(np.repeat(x, attrs.repeats, axis=normalize_axis(attrs.axis, x.ndim)),
                    x.dtype)


defop("repeat", arity=1, rel=_repeat_rel, pattern=BC, compute=_repeat,
      doc="repeat each element repeats times along axis", attrs=RepeatAttrs, family=FAMILY)


__all__ = ["ReshapeAttrs", "ReshapeLikeAttrs", "TransposeAttrs", "SqueezeAttrs",
           "ExpandDimsAttrs", "ReverseAttrs", "ConcatenateAttrs", "StackAttrs", "SplitAttrs",
           "TileAttrs", "RepeatAttrs", "infer_reshape"]
