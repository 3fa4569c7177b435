"""Lower one fused group (a ``Primitive=1`` function) to one kernel.

Design note
-----------
FuseOps (:mod:`aot.passes.fuse_ops`) guarantees the shape of a group: one
output (its root, possibly tuple-valued), every other member used only
inside it, and at most one *anchor* (an operator with an anchor lowering:
reduction, convolution, pooling, dense, softmax, sort ...).  Lowering walks
the group's body once, in dependency order, giving every node a value
(:class:`~aot.emit.lower.registry.TensorValue`, or a tuple of them):

* a parameter is read from a kernel parameter buffer (a tuple-typed
  parameter is one buffer per tensor leaf);
* a constant whose elements are all equal is a literal; any other constant
  becomes a ``CONST`` kernel parameter (the model's ``static const``
  table) -- unless the body never reads it (an anchor that repacks a weight
  into a table of its own layout reads only the table), so flash holds
  each weight once;
* an operator with an index lowering composes its arguments' reads;
* the anchor's value is a *placeholder*: a read that returns the scalar
  variable ``acc``.  The epilogue after the anchor reads the anchor's
  element at the output index only (FuseOps' epilogue rule), so composing
  the epilogue over the placeholder gives the epilogue as an expression of
  ``acc``; the anchor's sink declares ``acc`` and stores the root's read.

Without an anchor the root is materialised by one loop nest per output
tensor.  Every stored expression goes through
:func:`~aot.emit.kernel.cse.hoist` so values shared inside the fused expression
are computed once per element.

A group is *elementwise* when all its operators are elementwise or
broadcast operators and every value in it has the root's shape: element ``i`` of the output
depends only on element ``i`` of each input, so the output may be written over an input of the same
element size that dies at this kernel (the memory planner decides; such
parameters are not ``restrict``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from ...ir.dtype import DType
from ...ir.registry import PatternKind
from ...ir.registry import lookup as lookup_op
from ...ir.expr import Call, Constant, Function, Op, Tuple, TupleGetItem, Var
from ...ir.types import TensorType, TupleType, Type
from ...ir.visitor import post_order
from ..kernel import ir as K
from ..kernel.cse import hoist
from ..kernel.walk import buffers_in
from .registry import (ArgValue, LowerContext, LoweringError, TensorValue, check_index_range,
                       constant_value, from_buffer, is_splat, loop_nest, lookup_lowering)

__all__ = ["LoweredGroup", "lower_group", "group_ops", "flatten_type", "flat_leaves", "unflatten"]


@dataclass(frozen=True, slots=True, eq=False)
class LoweredGroup:
    kernel: K.Kernel
    #: one buffer per tensor leaf of the function's parameters, in order
    inputs: tuple[K.Buffer, ...]
    #: constants passed as parameters: (buffer, flat data)
    constants: tuple[tuple[K.Buffer, np.ndarray], ...]
    outputs: tuple[K.Buffer, ...]
    scratch: tuple[K.Buffer, ...]
    #: positions in ``inputs`` the output may overwrite (elementwise groups)
    inplace_inputs: tuple[int, ...]
    ops: tuple[str, ...]
    anchor: str | None
    source: str


def flatten_type(t: Type) -> list[TensorType]:
    if isinstance(t, TupleType):
        return [leaf for f in t.fields for leaf in flatten_type(f)]
    assert isinstance(t, TensorType), f"kernel parameter of type {t}"
    return [t]


def _static_shape(t: TensorType, what: str) -> tuple[int, ...]:
    shape = []
    for d in t.shape:
        if not isinstance(d, int):
            raise LoweringError(f"{what} has a dynamic shape {t}; "
                                "the C backend needs static shapes")
        shape.append(int(d))
    check_index_range(shape, what)
    return tuple(shape)


def group_ops(fn: Function) -> list[Call]:
    return [n for n in post_order(fn.body) if isinstance(n, Call) and isinstance(n.op, Op)]


def unflatten(t: Type, leaves: list) -> object:
    """Nested tuples shaped like ``t`` holding ``leaves`` (consumed in order)."""
    if isinstance(t, TupleType):
        return tuple(unflatten(f, leaves) for f in t.fields)
    return leaves.pop(0)


def flat_leaves(v: object) -> list:
    """The leaves of nested tuples, in order."""
    if isinstance(v, tuple):
        return [leaf for f in v for leaf in flat_leaves(f)]
    return [v]


@dataclass(slots=True)
class _State:
    ctx: LowerContext
    inputs: list[K.Buffer] = field(default_factory=list)
    constants: list[tuple[K.Buffer, np.ndarray]] = field(default_factory=list)
    values: dict[int, ArgValue] = field(default_factory=dict)
    anchor: tuple[Call, list[ArgValue]] | None = None
    acc: K.Var | None = None


def _constant(state: _State, c: Constant) -> TensorValue:
    t = c.checked_type
    data = np.asarray(c.data)
    dtype = t.dtype if isinstance(t, TensorType) else DType.from_numpy(data.dtype)
    flat = np.ascontiguousarray(data).reshape(-1)
    if is_splat(flat):
        return constant_value(data, dtype)
    buf = K.Buffer(f"c{len(state.constants)}", dtype, tuple(data.shape), K.BufferScope.CONST)
    state.constants.append((buf, flat))
    state.ctx.constant_data[buf.name] = flat
    return dataclasses.replace(from_buffer(buf), constant=data)


def _elementwise(fn: Function) -> tuple[int, ...] | None:
    """The root's shape when ``fn`` is an elementwise group (see the
    design note), else None."""
    leaves = flatten_type(fn.body.checked_type)
    if len(leaves) != 1:
        return None
    shape = tuple(leaves[0].shape)
    for p in fn.params:
        if any(tuple(t.shape) != shape for t in flatten_type(p.checked_type)):
            return None
    for call in group_ops(fn):
        lowering = lookup_lowering(call.op.name)
        op = lookup_op(call.op.name)
        # only elementwise and broadcast operators are pointwise when the
        # shapes agree (transpose, reverse, take ... permute elements)
        if lowering is None or lowering.anchor or op is None or \
                op.pattern > PatternKind.BROADCAST:
            return None
        if any(tuple(t.shape) != shape for t in flatten_type(call.checked_type)):
            return None
    return shape


def lower_group(fn: Function, name: str, *, source: str = "") -> LoweredGroup:
    """The kernel ``name`` computing the primitive function ``fn``."""
    ctx = LowerContext()
    state = _State(ctx)
    ret_leaves = flatten_type(fn.body.checked_type)
    elementwise = _elementwise(fn)
    out_itemsize = ret_leaves[0].dtype.itemsize

    for p in fn.params:
        leaves = []
        for t in flatten_type(p.checked_type):
            shape = _static_shape(t, f"%{p.name_hint}")
            aliasable = elementwise is not None and t.dtype.itemsize == out_itemsize
            buf = K.Buffer(f"p{len(state.inputs)}", t.dtype, shape, K.BufferScope.INPUT,
                           restrict=not aliasable)
            state.inputs.append(buf)
            leaves.append(from_buffer(buf))
        state.values[id(p)] = unflatten(p.checked_type, leaves)

    ops: list[str] = []
    for node in post_order(fn.body):
        key = id(node)
        if key in state.values:
            continue
        if isinstance(node, Constant):
            state.values[key] = _constant(state, node)
        elif isinstance(node, Tuple):
            state.values[key] = tuple(state.values[id(f)] for f in node.fields)
        elif isinstance(node, TupleGetItem):
            tup = state.values[id(node.tuple_value)]
            assert isinstance(tup, tuple)
            state.values[key] = tup[node.index]
        elif isinstance(node, Call) and isinstance(node.op, Op):
            ops.append(node.op.name)
            state.values[key] = _call(state, node)
        elif isinstance(node, (Op, Var)):
            continue
        else:
            raise LoweringError(f"unexpected {type(node).__name__} inside a fused group")

    out_bufs = [K.Buffer(f"out{i}" if len(ret_leaves) > 1 else "out", t.dtype,
                         _static_shape(t, "the result"), K.BufferScope.OUTPUT,
                         restrict=elementwise is None)
                for i, t in enumerate(ret_leaves)]
    root = flat_leaves(state.values[id(fn.body)])
    if state.anchor is None:
        body = K.block(*(_store_all(ctx, v, buf) for v, buf in zip(root, out_bufs)))
    else:
        body = _lower_anchor(state, root, out_bufs)
    inplace = tuple(i for i, b in enumerate(state.inputs) if not b.restrict)

    # a constant the body never reads (a weight the anchor repacked into a
    # table of its own) is neither passed nor stored in flash
    read = {b.name for b in buffers_in(body)}
    state.constants = [(b, d) for b, d in (*state.constants, *ctx.tables) if b.name in read]
    params = (*state.inputs, *(b for b, _ in state.constants), *out_bufs,
              *ctx.scratch_buffers)
    kernel = K.Kernel(name, params, body, comment=source)
    anchor = state.anchor[0].op.name if state.anchor is not None else None
    return LoweredGroup(kernel, tuple(state.inputs), tuple(state.constants), tuple(out_bufs),
                        tuple(ctx.scratch_buffers), inplace, tuple(ops), anchor, source)


def _call(state: _State, node: Call) -> ArgValue:
    name = node.op.name
    lowering = lookup_lowering(name)
    if lowering is None:
        raise LoweringError(f"operator {name} has no C lowering yet")
    args = [state.values[id(a)] for a in node.args]
    for t in flatten_type(node.checked_type):
        _static_shape(t, f"the result of {name}")
    if not lowering.anchor:
        return lowering.fn(state.ctx, args, node.attrs, node.checked_type)
    assert state.anchor is None, "two anchors in one fused group"
    state.anchor = (node, args)
    if isinstance(node.checked_type, TupleType):
        # a tuple-valued anchor takes no epilogue: it is the group's root
        leaves = [TensorValue(tuple(t.shape), t.dtype, _no_read)
                  for t in flatten_type(node.checked_type)]
        return unflatten(node.checked_type, leaves)
    t = node.checked_type
    acc = state.ctx.scalar("acc", t.dtype)
    state.acc = acc
    return TensorValue(tuple(t.shape), t.dtype, lambda idx: acc)


def _no_read(idx: tuple) -> K.Expr:
    raise AssertionError("a tuple-valued anchor's result is read inside its group")


def _store(ctx: LowerContext, buf: K.Buffer, idx: Sequence[K.Expr], value: K.Expr) -> K.Stmt:
    decls, expr = hoist(value, ctx.fresh)
    return K.block(*decls, K.store(buf, K.flat_index(idx, buf.shape), expr))


def _store_all(ctx: LowerContext, value: TensorValue, buf: K.Buffer) -> K.Stmt:
    return loop_nest(ctx, value.shape, lambda idx: _store(ctx, buf, idx, value.read(idx)))


def _lower_anchor(state: _State, root: list[TensorValue], outs: list[K.Buffer]) -> K.Stmt:
    node, args = state.anchor
    lowering = lookup_lowering(node.op.name)
    ctx = state.ctx
    if state.acc is None:
        sinks = [(lambda buf: lambda idx, v: _store(ctx, buf, idx, v))(b) for b in outs]
    else:
        acc, (value,), (buf,) = state.acc, root, outs

        def sink(idx: tuple, v: K.Expr) -> K.Stmt:
            return K.block(K.Decl(acc, v), _store(ctx, buf, idx, value.read(idx)))
        sinks = [sink]
    stmt = lowering.fn(ctx, args, node.attrs, node.checked_type, sinks)
    return stmt
