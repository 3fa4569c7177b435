"""Control flow: IF and WHILE, whose branches, condition and body are
other subgraphs of the model.

IF becomes a Relay ``if``: input 0 is the condition (a bool tensor of one
element), the other inputs are the inputs of both branch subgraphs
(``then_subgraph_index``, ``else_subgraph_index``), whose outputs must
have the operator's output types.  A constant condition selects its
branch at import time.

WHILE becomes a local recursive function calling itself in tail
position, as ONNX Loop does (:mod:`aot.frontend.onnx.ops.control`)::

    let %loop = fn (%v0, %v1, ...) {
      if (<cond subgraph>(%v...)) { %loop(<body subgraph>(%v...)) } else { (%v...) }
    };
    %loop(<inputs>)

The loop variables keep their static shapes (a body that changes one is
refused), so the compiler lowers the loop to a C loop over the static
arena (:mod:`aot.emit.lower.static_loop`).
"""

from __future__ import annotations

import numpy as np

from ....ir.dtype import DType
from ....ir.expr import Call, Expr, Function, If, Let, Var
from ....ir.types import FuncType, TupleType, Type
from ..graph import Op
from ..registry import converter


def _typed(op: Op, e: Expr, t: Type) -> Expr:
    op.ctx.types[e] = t
    return e


def _condition(op: Op, e: Expr, what: str) -> Expr:
    if op.dtype(e) is not DType.BOOL or int(np.prod(op.shape(e))) != 1:
        raise op.error(f"{what} must be a bool tensor of one element, got "
                       f"{op.dtype(e)}{list(op.shape(e))}")
    return op.call("reshape", [e], newshape=()) if op.shape(e) else e


def _same_types(op: Op, what: str, got: list[Expr], want: list[Expr]) -> None:
    if len(got) != len(want):
        raise op.error(f"{what} computes {len(got)} values for {len(want)}")
    for i, (g, w) in enumerate(zip(got, want)):
        if op.ctx.type_of(g) != op.ctx.type_of(w):
            raise op.error(f"{what}: value #{i} is {op.ctx.type_of(g)}, expected "
                           f"{op.ctx.type_of(w)} (shapes and types must not change)")


def _pack(op: Op, fields: list[Expr]) -> Expr:
    return op.ctx.make_tuple(fields)


@converter("IF")
def convert_if(op: Op) -> list[Expr]:
    cond = _condition(op, op.input(0), "the condition")
    args = [op.input(i) for i in range(1, len(op.info.inputs))]
    known = op.ctx.const_value(cond)
    if known is not None:
        return op.subgraph("then_subgraph_index" if bool(known) else "else_subgraph_index",
                           args)
    then_out = op.subgraph("then_subgraph_index", args)
    else_out = op.subgraph("else_subgraph_index", args)
    _same_types(op, "the else branch", else_out, then_out)
    if not then_out:
        raise op.error("the branches compute no outputs")
    t_then, t_else = _pack(op, then_out), _pack(op, else_out)
    value = _typed(op, If(cond, t_then, t_else, span=op.ctx.span), op.ctx.type_of(t_then))
    return [op.ctx.get_item(value, i) for i in range(len(then_out))]


@converter("WHILE")
def convert_while(op: Op) -> list[Expr]:
    ctx = op.ctx
    init = [op.input(i) for i in range(len(op.info.inputs))]
    if not init:
        raise op.error("a WHILE without loop variables never changes its condition")
    params = [_typed(op, Var(f"v{i}", ctx.type_of(e)), ctx.type_of(e))
              for i, e in enumerate(init)]
    cond_out = op.subgraph("cond_subgraph_index", list(params))
    if len(cond_out) != 1:
        raise op.error(f"the condition subgraph computes {len(cond_out)} values, not one")
    go = _condition(op, cond_out[0], "the condition subgraph's output")
    step = op.subgraph("body_subgraph_index", list(params))
    _same_types(op, "the body", step, params)
    ret = TupleType(tuple(ctx.type_of(p) for p in params))
    fn_type = FuncType(tuple(ctx.type_of(p) for p in params), ret)
    loop = _typed(op, Var("loop", fn_type), fn_type)
    assert isinstance(loop, Var)
    again = _typed(op, Call(loop, tuple(step), span=ctx.span), ret)
    body = _typed(op, If(go, again, _pack(op, list(params)), span=ctx.span), ret)
    fn = _typed(op, Function(tuple(params), body, ret, span=ctx.span), fn_type)   # type: ignore[arg-type]
    start = _typed(op, Call(loop, tuple(init), span=ctx.span), ret)
    value = _typed(op, Let(loop, fn, start, span=ctx.span), ret)
    return [ctx.get_item(value, i) for i in range(len(params))]
