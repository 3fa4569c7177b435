"""Shape manipulation: Reshape, Flatten, Transpose, Squeeze, Unsqueeze,
Concat, Split, Expand, Tile, Identity, Dropout, DepthToSpace, SpaceToDepth.

DepthToSpace and SpaceToDepth are ``nn.depth_to_space`` (DCR, CRD) and
``nn.space_to_depth`` (the C is the same as from the reshape, transpose,
reshape chain they were written as before; the program is one call).

Shapes are static, so every reshaping converter computes the output shape
itself and emits ``reshape`` with an explicit ``newshape`` (no special
values); ONNX's special values are resolved here: Reshape's ``0`` copies
the input dimension (a literal 0 with ``allowzero``) and ``-1`` is
inferred; Unsqueeze/Squeeze axes count in the output/input rank.  Axes
given as inputs (Squeeze/Unsqueeze 13+, Split 13+) must be constants.

Versions (opset 11+; 23, 24, 25 only widen the types): Reshape 5, 13, 14
(allowzero), 19, 21; Flatten 11, 13, 21; Transpose 1, 13, 21; Squeeze and
Unsqueeze 11 (axes attribute), 13 (axes input), 21; Concat 11, 13; Split
11, 13 (split input), 18 (num_outputs); Expand 8, 13; Tile 6, 13; Identity
1, 13, 14, 16, 19, 21; Dropout 10, 12, 13, 22; DepthToSpace 11, 13;
SpaceToDepth 1, 13.
"""

from __future__ import annotations

from ....ir.dtype import DType
from ....ir.expr import Expr
from ..graph import Node
from ..registry import converter
from .util import broadcast_shape, normalize_axis, prod, reshape_to

_LATER = (23, 24, 25)


@converter("Reshape", (5, 13, 14, 19, 21) + _LATER)
def convert_reshape(node: Node) -> list[Expr]:
    x = node.input(0)
    spec = node.const_ints(1, "shape")
    allowzero = bool(node.attr("allowzero", 0))
    in_shape = node.shape(x)
    out: list[int] = []
    infer = None
    for i, d in enumerate(spec):
        if d == 0 and not allowzero:
            if i >= len(in_shape):
                raise node.error(f"shape {spec}: 0 at position {i} has no input dimension "
                                 f"to copy (input {list(in_shape)})")
            out.append(in_shape[i])
        elif d == -1:
            if infer is not None:
                raise node.error(f"shape {spec} has more than one -1")
            infer = i
            out.append(1)
        elif d < 0:
            raise node.error(f"shape {spec} has the invalid dimension {d}")
        else:
            out.append(d)
    total = prod(in_shape)
    if infer is not None:
        known = prod(out)
        if known == 0 or total % known:
            raise node.error(f"cannot reshape {list(in_shape)} to {spec}")
        out[infer] = total // known
    if prod(out) != total:
        raise node.error(f"cannot reshape {list(in_shape)} ({total} elements) to {spec}")
    return [reshape_to(node, x, tuple(out))]


@converter("Flatten", (11, 13, 21) + _LATER)
def convert_flatten(node: Node) -> list[Expr]:
    x = node.input(0)
    shape = node.shape(x)
    axis = int(node.attr("axis", 1))
    if not -len(shape) <= axis <= len(shape):
        raise node.error(f"axis={axis} is out of range for a tensor of rank {len(shape)}")
    if axis < 0:
        axis += len(shape)
    return [reshape_to(node, x, (prod(shape[:axis]), prod(shape[axis:])))]


@converter("Transpose", (1, 13, 21) + _LATER)
def convert_transpose(node: Node) -> list[Expr]:
    x = node.input(0)
    rank = node.rank(x)
    perm = node.attr("perm")
    perm = list(range(rank))[::-1] if perm is None else [int(p) for p in perm]
    if sorted(normalize_axis(node, p, rank, "perm") for p in perm) != list(range(rank)):
        raise node.error(f"perm={perm} is not a permutation of the {rank} axes")
    if perm == list(range(rank)):
        return [x]
    return [node.call("transpose", [x], axes=tuple(perm))]


def _axes(node: Node, input_index: int, rank: int, what: str = "axes") -> list[int] | None:
    """Axes from the ``axes`` attribute (old versions) or a constant input
    (new versions), normalised against ``rank``; None when absent."""
    if node.version >= 13:
        if not node.has(input_index):
            return None
        raw = node.const_ints(input_index, what)
    else:
        raw = node.attr("axes")
        if raw is None:
            return None
        raw = [int(a) for a in raw]
    axes = [normalize_axis(node, a, rank, what) for a in raw]
    if len(set(axes)) != len(axes):
        raise node.error(f"{what}={raw} lists an axis twice")
    return axes


@converter("Squeeze", (11, 13, 21) + _LATER)
def convert_squeeze(node: Node) -> list[Expr]:
    x = node.input(0)
    shape = node.shape(x)
    axes = _axes(node, 1, len(shape))
    if axes is None:
        axes = [i for i, d in enumerate(shape) if d == 1]
    for a in axes:
        if shape[a] != 1:
            raise node.error(f"cannot squeeze axis {a} of extent {shape[a]} "
                             f"(input {list(shape)})")
    return [reshape_to(node, x, tuple(d for i, d in enumerate(shape) if i not in axes))]


@converter("Unsqueeze", (11, 13, 21) + _LATER)
def convert_unsqueeze(node: Node) -> list[Expr]:
    x = node.input(0)
    shape = node.shape(x)
    n_axes = len(node.attr("axes") or []) if node.version < 13 else \
        len(node.const_ints(1, "axes"))
    axes = _axes(node, 1, len(shape) + n_axes)
    if axes is None:
        raise node.error("axes are required")
    out: list[int] = []
    it = iter(shape)
    for i in range(len(shape) + len(axes)):
        out.append(1 if i in axes else next(it))
    return [reshape_to(node, x, tuple(out))]


@converter("Concat", (11, 13))
def convert_concat(node: Node) -> list[Expr]:
    xs = [node.input(i) for i in range(len(node.inputs))]
    rank = node.rank(xs[0])
    axis = node.attr("axis")
    if axis is None:
        raise node.error("the axis attribute is required")
    axis = normalize_axis(node, int(axis), rank)
    if len(xs) == 1:
        return [xs[0]]
    return [node.call("concatenate", [node.ctx.make_tuple(xs)], axis=axis)]


@converter("Split", (11, 13, 18))
def convert_split(node: Node) -> list[Expr]:
    x = node.input(0)
    shape = node.shape(x)
    axis = normalize_axis(node, int(node.attr("axis", 0)), len(shape))
    extent = shape[axis]
    n_out = len(node.proto.output)
    if node.version >= 13:
        sizes = node.const_ints(1, "split") if node.has(1) else None
    else:
        sizes = [int(s) for s in node.attr("split")] if node.attr("split") is not None else None
    if sizes is None:
        parts = int(node.attr("num_outputs", n_out)) if node.version >= 18 else n_out
        if parts != n_out:
            raise node.error(f"num_outputs={parts} but the node has {n_out} outputs")
        chunk = -(-extent // parts)
        sizes = [min(chunk, max(0, extent - i * chunk)) for i in range(parts)]
    if len(sizes) != n_out or sum(sizes) != extent or any(s < 0 for s in sizes):
        raise node.error(f"split={sizes} does not split axis {axis} of extent {extent} into "
                         f"{n_out} parts")
    outs = []
    start = 0
    for s in sizes:
        outs.append(node.call("strided_slice", [x], begin=(start,), end=(start + s,),
                              strides=(1,), axes=(axis,)))
        start += s
    return outs


@converter("Expand", (8, 13))
def convert_expand(node: Node) -> list[Expr]:
    x = node.input(0)
    target = node.const_ints(1, "shape")
    try:
        out = broadcast_shape(node.shape(x), target)
    except ValueError:
        raise node.error(f"cannot expand {list(node.shape(x))} to {target}") from None
    if out == node.shape(x):
        return [x]
    return [node.call("broadcast_to", [x], shape=out)]


@converter("Tile", (6, 13))
def convert_tile(node: Node) -> list[Expr]:
    x = node.input(0)
    reps = node.const_ints(1, "repeats")
    if len(reps) != node.rank(x) or any(r < 0 for r in reps):
        raise node.error(f"repeats={reps} needs one non-negative value per axis of "
                         f"{list(node.shape(x))}")
    if all(r == 1 for r in reps):
        return [x]
    if any(r == 0 for r in reps):
        zero = node.call("tile", [x], reps=tuple(max(r, 1) for r in reps))
        return [node.call("strided_slice", [zero], begin=(0,) * len(reps),
                          end=tuple(0 if r == 0 else d * r
                                    for r, d in zip(reps, node.shape(x))),
                          strides=(1,) * len(reps))]
    return [node.call("tile", [x], reps=tuple(reps))]


@converter("Identity", (1, 13, 14, 16, 19, 21) + _LATER)
def convert_identity(node: Node) -> list[Expr]:
    return [node.input(0)]


@converter("Dropout", (10, 12, 13, 22))
def convert_dropout(node: Node) -> list[Expr]:
    x = node.input(0)
    if node.has(2):
        training = node.const(2, "training_mode")
        if bool(training.reshape(-1)[0]):
            raise node.error("training_mode=true is not supported (inference only)")
    mask = node.call("ones", [], shape=node.shape(x), dtype=DType.BOOL)
    return [x, mask]


def _block_size(node: Node) -> int:
    b = int(node.attr("blocksize", 0))
    if b < 1:
        raise node.unsupported("blocksize", b, "must be positive")
    return b


@converter("DepthToSpace", (11, 13))
def convert_depth_to_space(node: Node) -> list[Expr]:
    x = node.input(0)
    shape = node.shape(x)
    if len(shape) != 4:
        raise node.error(f"the input must be 4-d, got {list(shape)}")
    n, c, h, w = shape
    b = _block_size(node)
    if c % (b * b):
        raise node.error(f"{c} channels are not divisible by blocksize^2 = {b * b}")
    mode = node.attr("mode", "DCR")
    if mode not in ("DCR", "CRD"):
        raise node.unsupported("mode")
    return [node.call("nn.depth_to_space", [x], block_size=b, mode=mode)]


@converter("SpaceToDepth", (1, 13))
def convert_space_to_depth(node: Node) -> list[Expr]:
    x = node.input(0)
    shape = node.shape(x)
    if len(shape) != 4:
        raise node.error(f"the input must be 4-d, got {list(shape)}")
    n, c, h, w = shape
    b = _block_size(node)
    if h % b or w % b:
        raise node.error(f"the spatial size {h}x{w} is not divisible by blocksize={b}")
    return [node.call("nn.space_to_depth", [x], block_size=b)]
