"""A fused per-channel bias moved into an integer anchor's accumulator start.

Design note
-----------
An int8 convolution's epilogue usually begins with the bias: the group
lowering hands the anchor a sink computing ``f(acc + B[o])`` (``B`` a
constant, ``o`` the output channel) and storing it.  A kernel that already
starts its accumulators from a compile-time table per channel (the DSP
kernels' ``-zx * sum(w)``) can start them from ``table + B`` instead and
drop the addition from the epilogue: one add and one load less per
output, and one live value less in the epilogue's registers.  Integer
addition is associative modulo 2^32 and both forms wrap like the int32
reference, so the result is bit-identical.

The sink is opaque (a closure over the fused operators' reads), so the
bias is found by *probing* it: :func:`fold_bias` calls it once with
symbolic index variables and a probe value, finds the declaration ``acc =
probe`` the sink opens with and requires that ``acc`` is used exactly
once, in a wrapping int32 ``acc + X`` whose ``X`` is a literal or a load
from a constant of the program whose index depends on the channel
variable alone.  ``X`` is then evaluated for every channel at compile time
(the constant's data comes from :attr:`LowerContext.constant_data`).  The
returned sink calls the original one and rewrites ``acc + X`` to ``acc``
in its statement -- the same structure, found the same way, checked to be
a load from the same constant.  Anything else (no bias, a bias read
twice, an epilogue that reads ``acc`` again, a per-position bias) gives
None and the kernel keeps the original sink.

*Float accumulators* (:func:`fold_float_bias`): a float32 convolution may
start its accumulators from the bias as well (``acc = B[o]; acc += x*w``
...; a project decision: float sums already agree with the interpreter's
only to rounding, FMA contraction changes it too).  The sum then rounds
differently from the interpreter's convolution-then-bias, so the probe
finds the same structure in float32 and hands back the bias as an
expression of the channel (the load from the same constant table, no new
table, or from the tensor the bias is at run time: a constant and a
run-time bias give the same sums), not as numbers; ``acc + X`` may occur more than once (a ReLU's
select repeats it), every occurrence the same ``X``.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ....ir.dtype import DType
from ...kernel import ir as K
from ...kernel.evaluate import evaluate
from ...kernel.walk import map_stmt_exprs, postorder, children, with_children, walk_exprs, \
    walk_stmts, stmt_exprs, substitute, substitute_stmt
from ..registry import LowerContext, Sink

__all__ = ["fold_bias", "fold_float_bias"]

I32 = DType.INT32


def _acc_decl(st: K.Stmt, value: K.Expr) -> K.Var | None:
    for s in walk_stmts(st):
        if isinstance(s, K.Decl) and s.init is value:
            return s.var
    return None


def _term(e: K.Expr, acc: K.Var) -> K.Expr | None:
    """``X`` when ``e`` is the sum ``acc + X`` (either order) in ``acc``'s
    type (wrapping int32, or float32)."""
    if not (isinstance(e, K.BinOp) and e.op is K.BinaryOperator.ADD and e.dtype is acc.dtype):
        return None
    for a, b in ((e.a, e.b), (e.b, e.a)):
        if a == acc and acc not in walk_exprs(b):
            return b
    return None


def _rewrite(st: K.Stmt, acc: K.Var, marker: K.Expr) -> tuple[K.Stmt, list[K.Expr]]:
    """``st`` with every ``acc + X`` replaced by ``marker``, and the Xs."""
    found: list[K.Expr] = []

    def combine(e: K.Expr, kids: list[K.Expr]) -> K.Expr:
        e = with_children(e, kids) if kids else e
        x = _term(e, acc)
        if x is not None:
            found.append(x)
            return marker
        return e
    return map_stmt_exprs(st, lambda e: postorder(e, children, combine)), found


def _uses(st: K.Stmt, v: K.Var) -> bool:
    return any(v == x for s in walk_stmts(st) for e in stmt_exprs(s) for x in walk_exprs(e))


def fold_bias(ctx: LowerContext, sink: Sink, shape: Sequence[int],
              axis: int) -> tuple[np.ndarray, Sink] | None:
    """The bias ``B[o]`` (int64 array, one value per index ``o`` of axis
    ``axis`` of the output ``shape``) the sink adds first, and a sink
    without that addition; None when the sink does not start so (see the
    design note)."""
    ndim, channels = len(shape), int(shape[axis])
    idx = tuple(ctx.index_var("probe") for _ in range(ndim))
    probe = ctx.scalar("probe", I32)
    st = sink(idx, probe)
    acc = _acc_decl(st, probe)
    if acc is None:
        return None
    marker = ctx.scalar("probe", I32)
    rewritten, found = _rewrite(st, acc, marker)
    # one bias term, and acc read nowhere else (it remains the target of
    # its declaration only)
    if len(found) != 1 or _uses(rewritten, acc):
        return None
    x = found[0]
    channel = idx[axis]
    buffer: K.Buffer | None = None
    # the index may read the channel and axes of extent 1 (at 0), nothing else
    fixed = {v.name: 0 for d, v in enumerate(idx) if d != axis and int(shape[d]) == 1}
    if (isinstance(x, K.Load) and x.lanes == 1 and x.buffer.scope is K.BufferScope.CONST
            and x.buffer.name in ctx.constant_data
            and all(v == channel or v.name in fixed for v in walk_exprs(x.index)
                    if isinstance(v, K.Var))):
        data = ctx.constant_data[x.buffer.name]
        at = [int(evaluate(x.index, {**fixed, channel.name: c}, {})) for c in range(channels)]
        if not all(0 <= i < data.size for i in at):
            return None
        bias = data.reshape(-1)[at].astype(np.int64)
        buffer = x.buffer
    elif isinstance(x, K.Const):
        bias = np.full(channels, int(x.value), dtype=np.int64)
    else:
        return None

    def folded(index: Sequence[K.Expr], value: K.Expr) -> K.Stmt:
        full = sink(tuple(index), value)
        a = _acc_decl(full, value)
        assert a is not None
        out, terms = _rewrite(full, a, a)
        assert len(terms) == 1 and (isinstance(terms[0], K.Const) if buffer is None else
                                    isinstance(terms[0], K.Load)
                                    and terms[0].buffer == buffer), terms
        return out
    return bias, folded


def fold_float_bias(sink: Sink, probe: K.Var, index: Sequence[K.Var], shape: Sequence[int],
                    axis: int) -> tuple[Callable[[K.Expr], K.Expr], Sink] | None:
    """For a float32 accumulator: a function giving the bias ``B[o]`` the
    sink adds first as an expression of a channel index expression ``o``,
    and a sink without that addition; None when the sink does not start
    so.  ``probe`` is a fresh float32 scalar and ``index`` fresh index
    variables, one per axis of the output ``shape`` (see the design note)."""
    st = sink(tuple(index), probe)
    acc = _acc_decl(st, probe)
    if acc is None or acc.dtype is not DType.FLOAT32:
        return None
    rewritten, found = _rewrite(st, acc, probe)
    if not found or any(x != found[0] for x in found) or _uses(rewritten, acc):
        return None
    x = found[0]
    channel = index[axis]
    fixed = {v: K.as_expr(0, I32) for d, v in enumerate(index)
             if d != axis and int(shape[d]) == 1}
    if not (isinstance(x, K.Load) and x.lanes == 1 and x.dtype is DType.FLOAT32
            and x.buffer.scope in (K.BufferScope.CONST, K.BufferScope.INPUT, K.BufferScope.ARENA)
            and all(v == channel or v in fixed for v in walk_exprs(x.index)
                    if isinstance(v, K.Var))):
        return None
    buffer = x.buffer

    def bias(o: K.Expr) -> K.Expr:
        return substitute(x, {**fixed, channel: o})

    def folded(idx: Sequence[K.Expr], value: K.Expr) -> K.Stmt:
        full = sink(tuple(idx), value)
        a = _acc_decl(full, value)
        assert a is not None
        # rewritten to the probe first, then to ``a``: an ``acc + X`` made
        # by the rewrite (a residual added after the bias) stays as it is
        out, terms = _rewrite(full, a, probe)
        assert terms and all(isinstance(t, K.Load) and t.buffer == buffer for t in terms), terms
        return substitute_stmt(out, {probe: a})
    return bias, folded
