"""Recognise the ``if``\\ s the dataflow backend compiles over its static
arena, and place every node of a dataflow graph in its branch.

Design note
-----------
An ``if`` whose condition is a run-time bool tensor of one element and
whose value is a tensor of static shape, or a (nested) tuple of them, is a
*static if*: whichever branch runs, its result has the same fixed size, so
it needs no object pool.  The importers write ONNX ``If`` and TFLite
``IF`` so; the optimiser leaves one where a condition is not a constant.
The dataflow backend (:mod:`aot.emit.lower.dataflow`) lowers it to a C
``if (cond[0]) { <then kernels> } else { <else kernels> }`` whose two
branches write the same result buffers (a branch's own result tensor is
renamed to the result buffer; an input, constant, a tensor computed before
the ``if`` or a leaf given twice is copied into it).  The branches are
consecutive spans of the plan's calls (:class:`~aot.emit.plan.model.BranchSpan`):
every tensor a branch creates lives inside its span, so the arena planner,
which sees one linear order of calls, lets the two branches share arena
space; only the result buffers live across both.

*Where a node runs* (:func:`branch_contexts`).  A dataflow graph shares
nodes: a node used by a branch and by something outside the ``if`` (or by
both branches, or by branches of two different ``if``\\ s) must be computed
where all its uses see it.  Every node gets a *context*, the path of
``(if, branch)`` pairs it runs under: a node's context is the longest
common prefix of the contexts its users give it (an ``if`` gives its
condition its own context and each branch its context plus that branch).
Walking parents before children (reversed post order) sees every user of a
node before the node.  So a kernel that does not depend on which branch
runs -- one both branches read, or one read after the ``if`` -- runs once
before it; a branch's own kernels run only when it is taken.
"""

from __future__ import annotations

import math
from typing import Sequence

from ...ir.dtype import DType
from ...ir.expr import Expr, Function, If
from ...ir.types import TensorType
from ...ir.visitor import children
from .static_loop import static_tensor_type

__all__ = ["Context", "branch_contexts", "is_static_if"]

#: the ``(id(if), branch taken)`` pairs a node runs under, outermost first
Context = tuple[tuple[int, bool], ...]


def is_static_if(node: If) -> bool:
    """``node`` has a one-element bool condition of static shape and a
    value of static tensor type (its branches are checked on their own)."""
    t = node.cond.checked_type
    return (isinstance(t, TensorType) and t.dtype is DType.BOOL
            and all(isinstance(d, int) for d in t.shape)
            and math.prod(int(d) for d in t.shape) == 1
            and static_tensor_type(node.checked_type))


def _common(a: Context, b: Context) -> Context:
    n = 0
    while n < len(a) and n < len(b) and a[n] == b[n]:
        n += 1
    return a[:n]


def branch_contexts(order: Sequence[Expr], roots: Sequence[Expr] = ()) -> dict[int, Context]:
    """The context of every node of ``order`` (dependencies first, each
    once; functions are leaves), by ``id``; a node no other node of
    ``order`` uses is at the top, ``()``, and so is each of ``roots``
    (values wanted outside ``order`` -- a loop's next state -- even when
    a branch inside ``order`` also reads them)."""
    ctx: dict[int, Context] = {id(r): () for r in roots}
    for node in reversed(order):
        here = ctx.setdefault(id(node), ())
        if isinstance(node, Function):
            continue
        subs: tuple[tuple[Expr, Context], ...]
        if isinstance(node, If):
            subs = ((node.cond, here), (node.true_branch, here + ((id(node), True),)),
                    (node.false_branch, here + ((id(node), False),)))
        else:
            subs = tuple((c, here) for c in children(node))
        for child, c in subs:
            old = ctx.get(id(child))
            ctx[id(child)] = c if old is None else _common(old, c)
    return ctx
