"""ConvertLayout: convolutions and pooling to the layouts asked for, and
the transposes between layouts moved through the graph until they cancel.

Design note
-----------
Models exported from TensorFlow keep their activations ``NHWC`` and wrap
every convolution (``NCHW`` in ONNX) in a pair of ``Transpose`` nodes; in
the generated C each is a copy loop or an index shuffle in a prologue.
Relay's ``ConvertLayout`` rewrites the convolutions to one layout and
lets every other operator *infer* the layout of its inputs
(``InferCorrectLayout``), inserting ``layout_transform`` only where an
operator cannot follow.  We do the same with one piece of bookkeeping:

**Tags.**  Walking bottom-up (one memoised, iterative
:class:`~aot.ir.visitor.ExprMutator` walk), every rewritten node stands
for its original value *up to a permutation of its axes*: the pair
``(inner, P)`` means ``inner == transpose(original, P)`` (``P`` is None
for "same layout").  The walk never hands a permuted value to code that
does not know about tags: for a tagged node it returns the
*materialisation* ``transpose(inner, P^-1)`` -- the original value -- and
remembers ``(inner, P)`` under that node.  An operator that can follow a
layout looks its operands up, works on the ``inner`` values and tags its
own result; an operator that cannot (``reshape``, ``nn.dense``, a tuple,
a function result) simply uses the materialisations.  Materialisations
nobody uses disappear with the old graph.  Tagging follows Relay's
``InferCorrectLayout`` per operator:

* ``transpose(x, A)`` and ``layout_transform`` between permutations of
  the same axes produce no node at all: the result is ``x``'s inner value
  with tag ``A^-1 . P``.  So ``transpose(transpose(x, p), p^-1)`` is ``x``,
  and a transpose pair with elementwise operators between cancels;
* elementwise and broadcast operators without positional attributes
  (``relu``, ``add``, ``clip``, ``cast``, ``where`` ...) follow the tag of
  their first full-rank tagged operand; the other operands are brought to
  it -- constants permuted (and given leading unit axes) at compile time,
  others by a ``transpose`` / ``reshape``;
* operators with an axis follow with the axis renamed: ``nn.bias_add``,
  ``nn.prelu``, ``nn.softmax``, ``nn.log_softmax``, ``concatenate``
  (fields brought to the first tagged field's layout), reductions
  (``sum``, ``mean``, ``max`` ... over the renamed axes, the result's tag
  the order of the kept axes; ``argmax``/``argmin`` over one axis only, a
  flat index over several depends on the axis order), ``strided_slice``
  (its per-axis entries renamed) and ``nn.pad`` (pad widths permuted);
* pooling follows its input's layout (``layout`` renamed), unless a
  layout is desired for it;
* **convolutions** (``nn.conv2d``, ``nn.conv1d``, ``nn.conv2d_transpose``)
  keep their layouts unless a layout is desired for them, as in Relay;
  then the data is brought to the desired layout (usually the transpose
  cancels against the tag it arrives with), the weight to the desired
  kernel layout (permuted at compile time when it is a constant) and the
  result is tagged with the permutation from the old output layout.

**Option** ``desired_layouts``: a tuple of strings ``"op:DATA"`` or
``"op:DATA:KERNEL"`` (``("nn.conv2d:NHWC:HWIO", "nn.max_pool2d:NHWC")``).
Without a kernel layout the default for the data layout is taken (Relay's
``"default"``: ``OIHW`` for ``NCHW``, ``HWIO`` for ``NHWC``; ``IOHW`` /
``HWOI`` for the transposed convolution, ``OIW`` / ``WIO`` for conv1d).  The
default ``()`` converts nothing and only moves and cancels transposes --
enough for a TensorFlow-style graph: the transposes around its ``NCHW``
convolutions meet across the ``NHWC`` elementwise operators and cancel,
leaving the one at the input.  ``("nn.conv2d:NHWC",)`` makes such a
graph transpose-free.  Without desired layouts, a function whose rewrite
would execute *more* transposes than before is left as it was (moving a
transpose through an ``add`` with a plain operand costs a second transpose
and gains nothing).  The conv lowering (``aot/emit/lower/ops/nn_conv.py``)
and the pooling lowering accept any permutation of the layout letters, so
every form this pass produces compiles.

Floating-point results may differ in rounding where a reduction's order
follows the layout: reductions over several axes, and convolutions
converted to another layout (the lowering orders a convolution's sum by
its data layout).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..diagnostics import DiagnosticError
from ..ir.expr import Call, Constant, Expr, Function, Op, Tuple, op
from ..ir.module import IRModule
from ..ir.ops.layout import Layout
from ..ir.ops.reduce import ArgReduceAttrs, ReduceAttrs, reduce_axes
from ..ir.ops.transform import ReshapeAttrs, TransposeAttrs, ExpandDimsAttrs
from ..ir.ops.transform_index import SliceMode
from ..ir.registry import PatternKind
from ..ir.types import TensorType
from ..ir.visitor import ExprMutator, Visit
from .manager import register_pass

__all__ = ["ConvertLayoutOptions", "convert_layout"]

Perm = tuple[int, ...]

#: (op, canonical data letters, canonical kernel letters or "" for pooling)
_LAYOUT_OPS = {
    "nn.conv2d": ("NCHW", "OIHW"),
    "nn.conv1d": ("NCW", "OIW"),
    "nn.conv2d_transpose": ("NCHW", "IOHW"),
    "nn.max_pool2d": ("NCHW", ""),
    "nn.avg_pool2d": ("NCHW", ""),
    "nn.global_max_pool2d": ("NCHW", ""),
    "nn.global_avg_pool2d": ("NCHW", ""),
}
_DEFAULT_KERNEL = {
    ("nn.conv2d", "NCHW"): "OIHW", ("nn.conv2d", "NHWC"): "HWIO",
    ("nn.conv1d", "NCW"): "OIW", ("nn.conv1d", "NWC"): "WIO",
    ("nn.conv2d_transpose", "NCHW"): "IOHW", ("nn.conv2d_transpose", "NHWC"): "HWOI",
}
_CONVS = ("nn.conv2d", "nn.conv1d", "nn.conv2d_transpose")
_POOLS = ("nn.max_pool2d", "nn.avg_pool2d", "nn.global_max_pool2d", "nn.global_avg_pool2d")
_AXIS_OPS = ("nn.bias_add", "nn.prelu", "nn.softmax", "nn.log_softmax")
#: attribute fields that give positions or shapes (see the generic rule)
_SHAPE_FIELDS = frozenset({"axis", "axes", "lhs_axis", "rhs_axis", "layout", "out_layout",
                           "shape", "newshape", "reps", "repeats", "indices_or_sections",
                           "num_newaxis", "data_layout", "kernel_layout"})


@dataclass(frozen=True)
class ConvertLayoutOptions:
    """``desired_layouts``: ``"op:DATA"`` or ``"op:DATA:KERNEL"`` entries
    (``"nn.conv2d:NHWC:HWIO"``); empty: only move and cancel transposes."""

    desired_layouts: tuple[str, ...] = ()


def parse_desired(entries: Sequence[str]) -> dict[str, tuple[str, str]]:
    """``op -> (data layout, kernel layout or "")``; user errors are
    DiagnosticErrors naming the entry."""
    out: dict[str, tuple[str, str]] = {}
    for entry in entries:
        parts = entry.split(":")
        name = parts[0]
        if name not in _LAYOUT_OPS or len(parts) not in (2, 3):
            raise DiagnosticError(
                f"ConvertLayout: bad desired layout {entry!r}: expected 'op:DATA' or "
                f"'op:DATA:KERNEL' with op one of {', '.join(sorted(_LAYOUT_OPS))}")
        data_canon, kernel_canon = _LAYOUT_OPS[name]
        data = parts[1]
        kernel = parts[2] if len(parts) == 3 else ""
        if sorted(data) != sorted(data_canon):
            raise DiagnosticError(f"ConvertLayout: {entry!r}: the data layout must be a "
                                  f"permutation of {data_canon!r}")
        if not kernel_canon and kernel:
            raise DiagnosticError(f"ConvertLayout: {entry!r}: {name} has no kernel layout")
        if kernel_canon and not kernel:
            kernel = _DEFAULT_KERNEL.get((name, data), "")
            if not kernel:
                raise DiagnosticError(f"ConvertLayout: {entry!r}: no default kernel layout "
                                      f"for {data}; give one ('{name}:{data}:...')")
        if kernel_canon and sorted(kernel) != sorted(kernel_canon):
            raise DiagnosticError(f"ConvertLayout: {entry!r}: the kernel layout must be a "
                                  f"permutation of {kernel_canon!r}")
        if name in out:
            raise DiagnosticError(f"ConvertLayout: {name} is given twice in desired_layouts")
        out[name] = (data, kernel)
    return out


# ------------------------------------------------------------ permutations

def _identity(p: Perm | None) -> bool:
    return p is None or all(i == a for i, a in enumerate(p))


def _inverse(p: Perm) -> Perm:
    inv = [0] * len(p)
    for i, a in enumerate(p):
        inv[a] = i
    return tuple(inv)


def _between(src: str, dst: str) -> Perm:
    """The permutation taking a tensor in layout ``src`` to ``dst``."""
    return tuple(src.index(c) for c in dst)


def _static(node: Expr) -> TensorType | None:
    t = node.checked_type
    if isinstance(t, TensorType) and all(isinstance(d, int) for d in t.shape):
        return t
    return None


# ---------------------------------------------------------------- the walk

Tagged = tuple[Expr, Perm | None]


class _Converter(ExprMutator):
    def __init__(self, desired: dict[str, tuple[str, str]]) -> None:
        super().__init__()
        self.desired = desired
        #: id(materialisation) -> (the materialisation, inner, tag)
        self.tags: dict[int, tuple[Expr, Expr, Perm]] = {}
        #: (id(inner), target) -> (inner, view)
        self.views: dict[tuple[int, Perm], tuple[Expr, Expr]] = {}

    # --- tags ---------------------------------------------------------------

    def split(self, new: Expr) -> Tagged:
        entry = self.tags.get(id(new))
        if entry is None:
            return new, None
        return entry[1], entry[2]

    def tag(self, inner: Expr, perm: Perm | None, span) -> Expr:
        """The original value of ``inner`` (which is it permuted by
        ``perm``), remembered as such."""
        if _identity(perm):
            return inner
        if isinstance(inner, Constant):
            return Constant(np.transpose(np.asarray(inner.data), _inverse(perm)))
        m = Call(op("transpose"), (inner,), TransposeAttrs(axes=_inverse(perm)), span=span)
        self.tags[id(m)] = (m, inner, perm)
        return m

    def view(self, inner: Expr, perm: Perm | None, target: Perm, span=None) -> Expr:
        """``inner`` (the original permuted by ``perm``) as the original
        permuted by ``target``."""
        rank = len(target)
        p = perm if perm is not None else tuple(range(rank))
        inv = _inverse(p)
        q = tuple(inv[t] for t in target)
        if _identity(q):
            return inner
        key = (id(inner), q)
        if key in self.views:
            return self.views[key][1]
        if isinstance(inner, Constant):
            out: Expr = Constant(np.transpose(np.asarray(inner.data), q))
        else:
            out = Call(op("transpose"), (inner,), TransposeAttrs(axes=q), span=span)
        self.views[key] = (inner, out)
        return out

    # --- the walk -----------------------------------------------------------

    def visit_call(self, node: Call) -> Visit:
        new = yield from super().visit_call(node)
        if not isinstance(node.op, Op) or _static(node) is None:
            return new
        name = node.op.name
        if name in ("transpose", "layout_transform"):
            result = self._transpose(node, new)
        elif name in _CONVS:
            result = self._conv(node, new)
        elif name in _POOLS:
            result = self._pool(node, new)
        elif name in _AXIS_OPS:
            result = self._axis_op(node, new)
        elif name == "concatenate":
            result = self._concatenate(node, new)
        elif name == "strided_slice":
            result = self._strided_slice(node, new)
        elif name == "nn.pad":
            result = self._pad(node, new)
        elif isinstance(node.attrs, (ReduceAttrs, ArgReduceAttrs)):
            result = self._reduce(node, new)
        else:
            result = self._elementwise(node, new)
        if result is None:
            return new
        inner, perm = result
        return self.tag(inner, perm, node.span)

    # --- handlers: each returns (inner, tag) or None (the op does not follow)

    def _transpose(self, node: Call, new: Call) -> Tagged | None:
        rank = len(_static(node).shape)
        if node.op.name == "transpose":
            axes = node.attrs.axes
            a = tuple(reversed(range(rank))) if axes is None else tuple(x % rank for x in axes)
        else:
            src, dst = Layout.parse(node.attrs.src_layout), Layout.parse(node.attrs.dst_layout)
            if any(f for _, f in src.axes + dst.axes) or src.ndim != rank:
                return None
            a = _between(src.name, dst.name)
        inner, p = self.split(new.args[0])
        p = p if p is not None else tuple(range(rank))
        inv = _inverse(a)
        return inner, tuple(inv[x] for x in p)

    def _conv(self, node: Call, new: Call) -> Tagged | None:
        name = node.op.name
        if name not in self.desired:
            return None
        data, kernel = self.desired[name]
        attrs = node.attrs
        out_layout = attrs.out_layout or attrs.data_layout
        x, px = self.split(new.args[0])
        w, pw = self.split(new.args[1])
        x = self.view(x, px, _between(attrs.data_layout, data), node.span)
        w = self.view(w, pw, _between(attrs.kernel_layout, kernel), node.span)
        new_attrs = dataclasses.replace(attrs, data_layout=data, kernel_layout=kernel,
                                        out_layout="")
        if new_attrs == attrs and x is new.args[0] and w is new.args[1]:
            return None
        return (Call(node.op, (x, w), new_attrs, span=node.span), _between(out_layout, data))

    def _pool(self, node: Call, new: Call) -> Tagged | None:
        attrs = node.attrs
        x, px = self.split(new.args[0])
        if node.op.name in self.desired:
            layout = self.desired[node.op.name][0]
            if sorted(layout) != sorted(attrs.layout):
                return None
            x = self.view(x, px, _between(attrs.layout, layout), node.span)
            perm = _between(attrs.layout, layout)
        elif px is not None and len(px) == len(attrs.layout):
            layout = "".join(attrs.layout[i] for i in px)
            perm = px
        else:
            return None
        new_attrs = dataclasses.replace(attrs, layout=layout, out_layout="")
        return Call(node.op, (x,), new_attrs, span=node.span), perm

    def _axis_op(self, node: Call, new: Call) -> Tagged | None:
        x, px = self.split(new.args[0])
        rank = len(_static(node).shape)
        if px is None or len(px) != rank:
            return None
        axis = px.index(node.attrs.axis % rank)
        new_attrs = dataclasses.replace(node.attrs, axis=axis)
        return Call(node.op, (x,) + tuple(new.args[1:]), new_attrs, span=node.span), px

    def _concatenate(self, node: Call, new: Call) -> Tagged | None:
        fields_new = new.args[0]
        if not isinstance(fields_new, Tuple) or not isinstance(node.args[0], Tuple):
            return None
        rank = len(_static(node).shape)
        split = [self.split(f) for f in fields_new.fields]
        perm = next((p for _, p in split if p is not None and len(p) == rank), None)
        if perm is None:
            return None
        fields = tuple(self.view(inner, p, perm, node.span) for inner, p in split)
        new_attrs = dataclasses.replace(node.attrs, axis=perm.index(node.attrs.axis % rank))
        return Call(node.op, (Tuple(fields, span=fields_new.span),), new_attrs,
                    span=node.span), perm

    def _strided_slice(self, node: Call, new: Call) -> Tagged | None:
        x, px = self.split(new.args[0])
        rank = len(_static(node).shape)
        if px is None or len(px) != rank:
            return None
        attrs = node.attrs
        n = len(attrs.begin)
        if attrs.axes is None:
            if len(attrs.end) != n:
                return None
            axes = tuple(range(n))
        else:
            axes = tuple(a % rank for a in attrs.axes)
        strides = tuple(attrs.strides[i] if i < len(attrs.strides) else 1 for i in range(n))
        if attrs.slice_mode is SliceMode.END and attrs.axes is not None:
            strides = attrs.strides
        new_attrs = dataclasses.replace(attrs, axes=tuple(px.index(a) for a in axes),
                                        strides=strides)
        return Call(node.op, (x,), new_attrs, span=node.span), px

    def _pad(self, node: Call, new: Call) -> Tagged | None:
        x, px = self.split(new.args[0])
        rank = len(_static(node).shape)
        if px is None or len(px) != rank:
            return None
        width = node.attrs.pad_width
        new_attrs = dataclasses.replace(node.attrs, pad_width=tuple(width[i] for i in px))
        return Call(node.op, (x, new.args[1]), new_attrs, span=node.span), px

    def _reduce(self, node: Call, new: Call) -> Tagged | None:
        data_t = _static(node.args[0])
        if data_t is None or len(node.args) != 1:
            return None
        x, px = self.split(new.args[0])
        rank = len(data_t.shape)
        if px is None or len(px) != rank:
            return None
        attrs = node.attrs
        reduced = reduce_axes(rank, attrs)
        if not reduced or (isinstance(attrs, ArgReduceAttrs) and len(reduced) != 1):
            return None
        axes = tuple(sorted(px.index(a) for a in reduced))
        new_attrs = dataclasses.replace(attrs, axis=axes, exclude=False)
        call = Call(node.op, (x,), new_attrs, span=node.span)
        if attrs.keepdims:
            return call, px
        kept_new = [a for a in px if a not in reduced]
        kept = sorted(kept_new)
        return call, (tuple(kept.index(a) for a in kept_new) if kept_new else None)

    def _elementwise(self, node: Call, new: Call) -> Tagged | None:
        opdef = node.op.op_def
        if opdef.pattern > PatternKind.BROADCAST:
            return None
        if dataclasses.is_dataclass(node.attrs) and \
                {f.name for f in dataclasses.fields(node.attrs)} & _SHAPE_FIELDS:
            return None
        out = _static(node)
        types = [_static(a) for a in node.args]
        if any(t is None for t in types):
            return None
        try:
            shape = tuple(np.broadcast_shapes(*[t.shape for t in types]))
        except ValueError:       # a BROADCAST-kind operator whose operands do not
            return None          # broadcast NumPy's way: leave its layout alone
        if shape != out.shape:
            return None
        rank = len(out.shape)
        split = [self.split(a) for a in new.args]
        perm = next((p for (_, p), t in zip(split, types)
                     if p is not None and len(t.shape) == rank), None)
        if perm is None:
            return None
        args = []
        for (inner, p), plain, t in zip(split, new.args, types):
            r = len(t.shape)
            if r == rank:
                args.append(self.view(inner, p, perm, node.span))
            elif r == 0:
                args.append(plain)
            else:
                args.append(self._lift(plain, t, rank, perm, node.span))
        return Call(node.op, tuple(args), node.attrs, span=node.span), perm

    def _lift(self, value: Expr, t: TensorType, rank: int, perm: Perm, span) -> Expr:
        """``value`` (original layout, rank below ``rank``) given leading
        unit axes and permuted by ``perm``, to broadcast against a tensor
        in that layout."""
        expanded = (1,) * (rank - len(t.shape)) + tuple(t.shape)
        target = tuple(expanded[i] for i in perm)
        if isinstance(value, Constant):
            data = np.asarray(value.data).reshape(expanded)
            return Constant(np.transpose(data, perm))
        big = [i for i in perm if expanded[i] != 1]
        if big == sorted(big):
            return Call(op("reshape"), (value,), ReshapeAttrs(newshape=target), span=span)
        grown = Call(op("expand_dims"), (value,),
                     ExpandDimsAttrs(axis=0, num_newaxis=rank - len(t.shape)), span=span)
        return Call(op("transpose"), (grown,), TransposeAttrs(axes=perm), span=span)


def convert_layout(mod: IRModule, opts: ConvertLayoutOptions = ConvertLayoutOptions()) -> IRModule:
    """A new, typed module with the desired layouts and the transposes
    moved and cancelled."""
    from ..ir.type_infer import infer_types
    assert mod.is_typed, "convert_layout needs a typed module"
    desired = parse_desired(opts.desired_layouts)
    out = mod.copy()
    changed = False
    for gv, func in mod.functions.items():
        new = _Converter(desired).visit(func)
        if not desired and _transposes(new) > _transposes(func):
            new = func           # moving transposes only pays when they cancel
        changed = changed or new is not func
        out.add(gv, new)
    return infer_types(out) if changed else mod


def _transposes(func: Function) -> int:
    """Layout changes executed by ``func``: transpose and layout_transform calls."""
    from ..ir.visitor import post_order
    return sum(1 for n in post_order(func) if isinstance(n, Call) and isinstance(n.op, Op)
               and n.op.name in ("transpose", "layout_transform"))


register_pass("ConvertLayout", opt_level=3, options=ConvertLayoutOptions)(convert_layout)
