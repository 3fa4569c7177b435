"""FoldScaleAxis: fold per-channel scales into the weights of constant-weight
convolutions and dense layers, in both of Relay's directions.

Design note
-----------
A per-channel scale ``s`` next to a layer that is linear in its weight can
move into the weight, because per channel::

    conv(x, W)[o] * s[o]  ==  conv(x, W[o] * s[o])[o]        (output channel o)
    conv(x * s, W)        ==  conv(x, W[:, c] * s[c])        (input channel c)

so the scale costs nothing at run time (one multiply per element less: on
a microcontroller as much as a few multiply-accumulates of a depthwise
layer).  Relay (``src/relay/transforms/fold_scale_axis.cc``) names the two
directions after the way the scale travels:

* **BackwardFoldScaleAxis** (:mod:`.backward_fold_scale_axis`): a scale
  *after* the layer travels backwards into the weight's output channels,
  through ``nn.bias_add`` and ``add``/``subtract`` of a per-channel
  constant (which are scaled too) and through ``nn.relu``/``nn.leaky_relu``
  when every scale is positive.  This is batch normalisation after a
  convolution, the pattern every exporter produces.
* **ForwardFoldScaleAxis** (:mod:`.forward_fold_scale_axis`): a scale
  *before* the layer travels forwards into the weight's input channels,
  through ``nn.relu``/``nn.leaky_relu`` (positive scales) and a
  per-channel shift (which is divided by the scale).  This is an input
  normalisation or a batch normalisation before a convolution.

**FoldScaleAxis** is the pair, backward first, as Relay composes them
(Relay then runs FoldConstant; ours compute the new weights in NumPy
directly, so there is nothing left to fold).  Backward first matters for
the common ``conv1 -> scale -> relu -> conv2``: the scale goes into
``conv1``'s output channels (and its bias), where it is exact up to one
rounding per weight, rather than into ``conv2``'s input channels, which
would divide ``conv1``'s shift by it.  Each direction is a pass of its
own too; ``PassContext(disabled=["ForwardFoldScaleAxis"])`` skips that
half inside FoldScaleAxis.

What is folded, in both directions: the layer is an ``nn.conv2d`` /
``nn.conv1d`` with channels-first data and output (``NCHW``/``NCW``) and
a kernel layout naming ``O`` and ``I`` (any ``groups``, depthwise
included: input channel ``c`` of group ``g`` meets weight column
``c - g * I``), or an ``nn.dense`` (channels on the last axis); the
weight is a Constant; the scale a Constant that broadcasts along the
channel axis only (a ``(C, 1, 1)`` or ``(C,)`` vector, or a scalar);
every node between scale and layer is used once (the rewrite must not
change what another user sees).  Float dtypes only.

Rounding: ``sum(x * (w * s))`` is not bit-identical to ``sum(x * w) * s``
-- each product of the folded layer carries one more rounding (a relative
2**-24 in float32), as in every framework that folds batch normalisation
(onnxruntime's graph optimiser does the same).  The result equals the
unfolded program within that tolerance, and bit for bit when every scale
is a power of two (barring subnormal weights).  A fold whose new weights,
biases or shifts would overflow to infinity is not done.  A scale must be
finite: an infinite scale times a zero sum is NaN, times a zero weight
also NaN, but not at the same elements.  A zero scale folds (Relay's
batch norm with zero parameters becomes a zero weight): both forms give
0, or NaN where an input is infinite, and differ only where the unfolded
sum overflows, like any scale.  Divides are stricter: ``x / c`` is folded as
``x * (1 / c)`` only when ``1 / c`` is exact (``c`` a power of two, so
``x / c == x * (1 / c)`` for every ``x``), and a forward shift ``t`` only
when ``t / s`` is exact; option ``inexact_divide=True`` folds every finite
non-zero divisor, adding one rounding of ``1 / c`` (relative 2**-24) per
scale.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..diagnostics import Span
from ..ir.dtype import DType
from ..ir.expr import Call, Constant, Expr, Function, Op
from ..ir.module import IRModule
from ..ir.types import TensorType
from ..ir.visitor import ExprMutator, children, post_order
from .manager import current, register_pass

__all__ = ["fold_scale_axis", "ScaleAxisOptions"]


@dataclass(frozen=True)
class ScaleAxisOptions:
    """Options of FoldScaleAxis and its two directions."""

    #: fold ``x / c`` as ``x * (1 / c)`` (and a forward shift ``t`` as
    #: ``t / s``) also when the reciprocal is rounded
    inexact_divide: bool = False


def fold_scale_axis(mod: IRModule, opts: ScaleAxisOptions | None = None) -> IRModule:
    """BackwardFoldScaleAxis then ForwardFoldScaleAxis (each unless the
    current PassContext disables it by name)."""
    from .backward_fold_scale_axis import backward_fold_scale_axis
    from .forward_fold_scale_axis import forward_fold_scale_axis
    opts = opts or ScaleAxisOptions()
    disabled = current().disabled
    if "BackwardFoldScaleAxis" not in disabled:
        mod = backward_fold_scale_axis(mod, opts)
    if "ForwardFoldScaleAxis" not in disabled:
        mod = forward_fold_scale_axis(mod, opts)
    return mod


# ------------------------------------------------------- shared machinery

def use_counts(func: Function) -> dict[int, int]:
    """How many times each node is referenced (graph form shares nodes)."""
    uses: dict[int, int] = {id(func.body): 1}
    for node in post_order(func):
        for child in children(node):
            uses[id(child)] = uses.get(id(child), 0) + 1
    return uses


@dataclass(frozen=True)
class Linear:
    """Where the channels are for a foldable linear layer."""

    data_axis: int      # channel axis of the data (input)
    out_axis: int       # channel axis of the output
    o_axis: int         # the weight's output-channel axis
    i_axis: int         # the weight's input-channel axis
    groups: int


def linear_info(call: Expr) -> Linear | None:
    """The channel axes of ``call`` when it is a convolution or dense layer
    with a constant float weight that a per-channel scale can fold into."""
    if not (isinstance(call, Call) and isinstance(call.op, Op)):
        return None
    name = call.op.name
    if name not in ("nn.conv2d", "nn.conv1d", "nn.dense") or len(call.args) != 2:
        return None
    data, weight = call.args
    data_t, out_t = data.checked_type, call.checked_type
    if not isinstance(weight, Constant) or weight.data.dtype.kind != "f" \
            or not isinstance(data_t, TensorType) or not isinstance(out_t, TensorType) \
            or not out_t.dtype.is_float or data_t.dtype != out_t.dtype \
            or weight.data.dtype != out_t.dtype.np:
        return None
    if name == "nn.dense":
        if weight.data.ndim != 2:
            return None
        return Linear(len(data_t.shape) - 1, len(out_t.shape) - 1, 0, 1, 1)
    attrs = call.attrs
    layout = attrs.data_layout
    if layout not in ("NCHW", "NCW") or (attrs.out_layout or layout) != layout:
        return None
    kernel = attrs.kernel_layout
    if "O" not in kernel or "I" not in kernel or len(kernel) != weight.data.ndim:
        return None
    return Linear(1, 1, kernel.index("O"), kernel.index("I"), attrs.groups)


def channel_vector(c: np.ndarray, t: TensorType, axis: int) -> np.ndarray | None:
    """``c`` as a vector along ``axis`` of a tensor of type ``t`` when it
    broadcasts along that axis only (and has ``t``'s dtype), else None."""
    rank = len(t.shape)
    if c.dtype != t.dtype.np or c.ndim > rank or not isinstance(t.shape[axis], int):
        return None
    shape = (1,) * (rank - c.ndim) + c.shape
    channels = int(t.shape[axis])
    if any(d != 1 for i, d in enumerate(shape) if i != axis) or shape[axis] not in (1, channels):
        return None
    return np.broadcast_to(c.reshape(-1), (channels,)).copy()


def channel_shaped(vec: np.ndarray, rank: int, axis: int) -> np.ndarray:
    """``vec`` shaped to broadcast along ``axis`` of a rank-``rank`` tensor
    (``(C, 1, 1)`` for axis 1 of rank 4; ``(C,)`` for the last axis)."""
    return vec.reshape((-1,) + (1,) * (rank - 1 - axis))


def usable_scale(vec: np.ndarray) -> bool:
    """A scale that folds: finite everywhere."""
    return bool(np.all(np.isfinite(vec)))


def reciprocal(c: np.ndarray, inexact: bool) -> np.ndarray | None:
    """``1 / c`` when ``x / c == x * (1 / c)`` for every ``x`` (every
    ``c`` a power of two whose reciprocal is finite), or, with
    ``inexact``, for any finite non-zero ``c``; else None."""
    if not np.all(np.isfinite(c)) or np.any(c == 0):
        return None
    with np.errstate(all="ignore"):
        r = (np.ones_like(c) / c).astype(c.dtype)
    if not np.all(np.isfinite(r)) or np.any(r == 0):
        return None
    if inexact:
        return r
    mantissa, _ = np.frexp(c)
    return r if bool(np.all(np.abs(mantissa) == 0.5)) else None


def exact_quotient(t: np.ndarray, vec: np.ndarray, inexact: bool) -> np.ndarray | None:
    """``t / vec`` (elementwise, broadcast) when it is exact (multiplying
    back gives ``t``, and every ``vec`` is a power of two), or, with
    ``inexact``, when it is finite; else None."""
    with np.errstate(all="ignore"):
        q = (t / vec).astype(t.dtype)
        back = (q * vec).astype(t.dtype)
    if not np.all(np.isfinite(q)):
        return None
    if inexact:
        return q
    mantissa, _ = np.frexp(vec)
    if not np.all(np.abs(mantissa) == 0.5) \
            or not np.array_equal(back, np.broadcast_to(t, back.shape)):
        return None
    return q


def stays_finite(new: np.ndarray, old: np.ndarray) -> bool:
    """Scaling ``old`` into ``new`` overflowed nowhere."""
    return bool(np.all(np.isfinite(new) | ~np.isfinite(np.broadcast_to(old, new.shape))))


def scale_output_channels(w: np.ndarray, lin: Linear, vec: np.ndarray) -> np.ndarray:
    """The weight with output channel ``o`` multiplied by ``vec[o]``."""
    shape = [1] * w.ndim
    shape[lin.o_axis] = -1
    with np.errstate(all="ignore"):
        return (w * vec.reshape(shape)).astype(w.dtype)


def scale_input_channels(w: np.ndarray, lin: Linear, vec: np.ndarray) -> np.ndarray | None:
    """The weight with every entry that meets input channel ``c`` multiplied
    by ``vec[c]`` (grouped: output channel ``o`` of group ``g`` reads input
    channels ``g * I .. g * I + I - 1`` through weight columns ``0 .. I - 1``),
    or None when the shapes do not fit."""
    out_channels, per_group = w.shape[lin.o_axis], w.shape[lin.i_axis]
    if out_channels % lin.groups or per_group * lin.groups != vec.shape[0]:
        return None
    group_of = np.arange(out_channels) // (out_channels // lin.groups)
    factors = vec[group_of[:, None] * per_group + np.arange(per_group)[None, :]]  # (O, I)
    moved = np.moveaxis(w, (lin.o_axis, lin.i_axis), (0, 1))
    with np.errstate(all="ignore"):
        scaled = moved * factors.reshape(factors.shape + (1,) * (w.ndim - 2))
    return np.moveaxis(scaled, (0, 1), (lin.o_axis, lin.i_axis)).astype(w.dtype)


class ScaleRewriter(ExprMutator):
    """A bottom-up mutator that knows which nodes are used once, for nodes
    of the input (use counts) and the nodes it rebuilds or makes."""

    def __init__(self, uses: dict[int, int], opts: ScaleAxisOptions) -> None:
        super().__init__()
        self.uses = uses
        self.opts = opts
        #: id of a node this pass rebuilt or made -> (the node, the original
        #: it stands for, or None for a new node used once)
        self.made: dict[int, tuple[Expr, Expr | None]] = {}

    def single(self, node: Expr) -> bool:
        """``node`` (old, rebuilt or new) is used once."""
        if id(node) in self.made:
            original = self.made[id(node)][1]
            if original is None:
                return True
            node = original
        return self.uses.get(id(node), 0) == 1

    def make(self, node: Expr) -> Expr:
        self.made[id(node)] = (node, None)
        return node

    def note_rebuilt(self, old: Expr, new: Expr) -> None:
        """``new`` replaces ``old``: it is used wherever ``old`` was (a fold
        whose root is used twice must not be folded into again, or the
        layer under it would be computed twice)."""
        if new is not old:
            self.made[id(new)] = (new, old)


def is_op(e: Expr, *names: str) -> bool:
    return isinstance(e, Call) and isinstance(e.op, Op) and e.op.name in names


def shift_side(n: Call, t: TensorType, axis: int) -> int | None:
    """Which operand of the add/subtract ``n`` is a per-channel constant
    along ``axis`` (the other having type ``t``), or None."""
    for side in (1, 0):
        c, other = n.args[side], n.args[1 - side]
        if isinstance(c, Constant) and other.checked_type == t \
                and channel_vector(np.asarray(c.data), t, axis) is not None:
            return side
    return None


def typed_const(data: np.ndarray, span: Span | None) -> Constant:
    """A constant with its checked type (new nodes keep the module typed
    for the checks of later rewrites in the same walk)."""
    return Constant(data, span=span,
                    checked_type=TensorType(tuple(int(d) for d in data.shape),
                                            DType.from_numpy(data.dtype)))


def run_on_functions(mod: IRModule, make_rewriter) -> IRModule:
    """A new, typed module with every function rewritten by a fresh
    ``make_rewriter(use_counts)`` (``mod`` itself when no function changed:
    it is typed already)."""
    from ..ir.type_infer import infer_types
    assert mod.is_typed, "the scale-axis passes need a typed module"
    out = mod.copy()
    changed = False
    for gv, func in mod.functions.items():
        new = make_rewriter(use_counts(func)).visit(func)
        out.add(gv, new)
        changed = changed or new is not func
    return infer_types(out) if changed else mod


register_pass("FoldScaleAxis", opt_level=2, options=ScaleAxisOptions)(fold_scale_axis)
