"""Control flow: If and Loop, imported as what they are.

Design note
-----------
*If* becomes a Relay ``if``.  The condition (a bool tensor of one
element) is reshaped to the 0-d bool tensor ``if`` takes; both branch
subgraphs are converted into the same context with the enclosing scope
visible (:meth:`~aot.frontend.onnx.graph.Node.subgraph`), so a branch
refers to outer values directly.  Both branches must compute the same
number of outputs of the same static types (the compiler plans memory
statically; ONNX lets branches differ in shape, which is refused with a
diagnostic); several outputs are one tuple.  A constant condition selects
its branch at import time (exporters leave such Ifs behind), and the
other branch is not even converted.

*Loop* becomes a local recursive function, the loop state its
parameters, called in tail position::

    let %loop = fn (%i: int64, %cond: bool, %v1, ..., %acc1, ...) {
      if (%i < %M && %cond) {            // either test absent when its input is
        <body>; %loop(%i + 1, <cond out>, <v out>..., <acc updated>...)
      } else { (%v1, ..., %acc1, ...) }
    };
    %loop(0i64, <cond>, <v initial>..., <zeros>...)

The whole-language backend turns a self tail call into a jump, so the loop
is a C loop.  Per the ONNX spec, an absent trip count ``M`` makes a
while loop and an absent ``cond`` a for loop whose body's condition output
is ignored; both absent (an infinite loop) is refused.  Loop-carried
values keep their static type: a body that changes a shape is refused.

*Scan outputs* (values the body computes each iteration, stacked along a
new first axis) are accumulated in a preallocated tensor of the final
shape carried as loop state: iteration ``i`` selects row ``i`` with
``where(arange(n) == i, y, acc)``.  This needs the number of iterations at
import time: ``M`` a constant and no early exit (``cond`` absent, or a
constant true that the body passes through or sets to constant true);
otherwise a Loop with scan outputs is refused.  ``where`` rewrites the
whole accumulator each step (O(n) per step): simple, type-generic, and
made of operators the backends already have; a dynamic slice update
operator would make it O(1).

Versions: 11, 13, 16, 19, 21 (opsets 11 to 21) and 23, 24, 25, which only widen
the element types, for both.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ....ir.dtype import DType
from ....ir.expr import Call, Expr, Function, If, Let, Var
from ....ir.types import FuncType, TensorType, TupleType, Type
from ..graph import Node
from ..registry import converter


def scalar_bool(node: Node, e: Expr, what: str) -> Expr:
    """``e`` (a bool tensor of one element) as a 0-d bool tensor."""
    shape = node.shape(e)
    if node.dtype(e) is not DType.BOOL or int(np.prod(shape)) != 1:
        raise node.error(f"{what} must be a bool tensor of one element, got "
                         f"{node.ctx.tensor_type(e)}")
    return node.call("reshape", [e], newshape=()) if shape else e


def register(node: Node, e: Expr, t: Type) -> Expr:
    """``e`` (built directly from IR nodes) with its type known to the
    context."""
    node.ctx.types[e] = t
    return e


def results(node: Node, value: Expr, n: int) -> list[Expr]:
    """The ``n`` outputs of ``value``: itself when ``n`` is 1, else the
    fields of the tuple it is."""
    if n == 1:
        return [value]
    return [node.ctx.get_item(value, i) for i in range(n)]


def pack(node: Node, fields: list[Expr]) -> Expr:
    return fields[0] if len(fields) == 1 else node.ctx.make_tuple(fields)


# ==================================================================== If

@converter("If", (11, 13, 16, 19, 21, 23, 24, 25))
def convert_if(node: Node) -> list[Expr]:
    cond = scalar_bool(node, node.input(0), "the condition")
    known = node.ctx.const_value(cond)
    if known is not None:
        return node.subgraph("then_branch" if bool(known) else "else_branch", [])
    then_out = node.subgraph("then_branch", [])
    else_out = node.subgraph("else_branch", [])
    if len(then_out) != len(else_out):
        raise node.error(f"the then branch computes {len(then_out)} outputs, the else branch "
                         f"{len(else_out)}")
    for i, (a, b) in enumerate(zip(then_out, else_out)):
        ta, tb = node.ctx.type_of(a), node.ctx.type_of(b)
        if ta != tb:
            raise node.error(f"output #{i} is {ta} in the then branch and {tb} in the else "
                             "branch; both branches must compute the same static types")
    if not then_out:
        raise node.error("the branches compute no outputs")
    t_then, t_else = pack(node, then_out), pack(node, else_out)
    value = register(node, If(cond, t_then, t_else, span=node.ctx.span),
                     node.ctx.type_of(t_then))
    return results(node, value, len(then_out))


# ================================================================== Loop

_I64 = DType.INT64
_BOOL = DType.BOOL


def _bind_scalar(node: Node, e: Expr, declared: object) -> Expr:
    """A 0-d loop variable as the body declares it: shape [1] when the
    body's input says so."""
    import onnx
    assert isinstance(declared, onnx.ValueInfoProto)
    tt = declared.type.tensor_type
    if declared.type.HasField("tensor_type") and tt.HasField("shape") and len(tt.shape.dim) == 1:
        return node.call("reshape", [e], newshape=(1,))
    return e


def loop_var(node: Node, name: str, t: Type) -> Var:
    """A parameter of a loop function, its type known to the context."""
    v = Var(name, t)
    register(node, v, t)
    return v


def tail_loop(node: Node, params: list[Var], init: list[Expr], go: Expr,
              step: list[Expr], before: Sequence[tuple[Var, Expr]] = ()) -> list[Expr]:
    """The final values of ``params[1:]`` after the loop ``while go:
    params = step`` from ``params = init``, built as a let-bound function
    calling itself in tail position (see the module docstring);
    ``params[0]`` is the iteration counter (its final value is dropped).
    ``before`` binds loop invariants the body reads through their variables
    (``let %v = e;`` ahead of the loop): an expression used only inside the
    function literal would otherwise be scoped in it and computed again in
    every iteration."""
    ctx = node.ctx
    param_types = [ctx.type_of(p) for p in params]
    ret_type = TupleType(tuple(param_types[1:]))
    fn_type = FuncType(tuple(param_types), ret_type)
    loop = loop_var(node, "loop", fn_type)
    again = register(node, Call(loop, tuple(step), span=ctx.span), ret_type)
    done = ctx.make_tuple(list(params[1:]))
    fn_body = register(node, If(go, again, done, span=ctx.span), ret_type)
    fn = register(node, Function(tuple(params), fn_body, ret_type, span=ctx.span), fn_type)
    start = register(node, Call(loop, tuple(init), span=ctx.span), ret_type)
    value = register(node, Let(loop, fn, start, span=ctx.span), ret_type)
    for var, bound in reversed(before):
        value = register(node, Let(var, bound, value, span=ctx.span), ret_type)
    return [ctx.get_item(value, i) for i in range(len(params) - 1)]


def counter(node: Node) -> tuple[Var, Expr, Expr]:
    """The iteration counter of a loop: the parameter, its initial value 0
    and its next value."""
    t = TensorType((), _I64)
    i = loop_var(node, "iter", t)
    zero = node.constant(np.asarray(0, dtype=np.int64))
    one = node.constant(np.asarray(1, dtype=np.int64))
    return i, zero, node.call("add", [i, one])


def accumulate(node: Node, acc: Expr, i: Expr, y: Expr) -> Expr:
    """``acc`` (the rows of a scan output) with row ``i`` set to ``y``."""
    trips = node.shape(acc)[0]
    index = node.constant(np.arange(trips, dtype=np.int64).reshape(
        (trips,) + (1,) * len(node.shape(y))))
    mask = node.call("equal", [index, i])
    return node.call("where", [mask, node.call("expand_dims", [y], axis=0), acc])


def _trip_count(node: Node) -> Expr | None:
    m = node.optional(0)
    if m is None:
        return None
    if node.dtype(m) != _I64 or int(np.prod(node.shape(m))) != 1:
        raise node.error(f"the trip count must be an int64 tensor of one element, got "
                         f"{node.ctx.tensor_type(m)}")
    return node.call("reshape", [m], newshape=()) if node.shape(m) else m


@converter("Loop", (11, 13, 16, 19, 21, 23, 24, 25))
def convert_loop(node: Node) -> list[Expr]:
    import onnx
    ctx = node.ctx
    body = node.attrs.get("body")
    if not isinstance(body, onnx.GraphProto):
        raise node.error("the graph attribute 'body' is required")
    m = _trip_count(node)
    has_cond = node.optional(1) is not None
    if m is None and not has_cond:
        raise node.error("a Loop without trip count and condition never ends")
    cond0 = scalar_bool(node, node.input(1), "the condition") if has_cond else \
        node.constant(np.asarray(True))
    initial = [node.input(i) for i in range(2, len(node.inputs))]
    n_state = len(initial)
    if len(body.input) != 2 + n_state or len(body.output) < 1 + n_state:
        raise node.error(f"the body has {len(body.input)} inputs and {len(body.output)} "
                         f"outputs for {n_state} loop-carried values")
    p_iter, zero, next_iter = counter(node)
    p_cond = loop_var(node, "cond", TensorType((), _BOOL))
    p_state: list[Var] = []
    for i, v in enumerate(initial):
        t = ctx.type_of(v)
        if not isinstance(t, TensorType):
            raise node.error(f"loop-carried value #{i} is {t}; only tensors are supported")
        p_state.append(loop_var(node, f"v{i}", t))
    body_in = [_bind_scalar(node, p_iter, body.input[0]),
               _bind_scalar(node, p_cond, body.input[1])] + list(p_state)
    out = node.subgraph("body", body_in)
    cond_out = scalar_bool(node, out[0], "the body's condition output")
    state_out, scan_out = out[1:1 + n_state], out[1 + n_state:]
    for i, (v, p) in enumerate(zip(state_out, p_state)):
        if ctx.type_of(v) != ctx.type_of(p):
            raise node.error(f"loop-carried value #{i} enters the body as {ctx.type_of(p)} and "
                             f"leaves it as {ctx.type_of(v)}; its type must not change")
    # scan outputs: accumulators of the final shape (see the module docstring)
    p_acc: list[Var] = []
    acc_init: list[Expr] = []
    if scan_out:
        trips = _static_trip_count(node, m, node.optional(1), body_in[1], out[0])
        for k, y in enumerate(scan_out):
            yt = ctx.tensor_type(y)
            shape = (trips,) + node.shape(y)
            p_acc.append(loop_var(node, f"acc{k}", TensorType(shape, yt.dtype)))
            acc_init.append(node.call("zeros", [], shape=tuple(shape), dtype=yt.dtype))
    acc_next = [accumulate(node, a, p_iter, y) for a, y in zip(p_acc, scan_out)]
    go: Expr | None = None if m is None else node.call("less", [p_iter, m])
    if has_cond:
        go = p_cond if go is None else node.call("logical_and", [go, p_cond])
    assert go is not None
    final = tail_loop(node, [p_iter, p_cond] + p_state + p_acc,
                      [zero, cond0] + initial + acc_init, go,
                      [next_iter, cond_out] + list(state_out) + acc_next)
    return final[1:]


def _static_trip_count(node: Node, m: Expr | None, cond_input: Expr | None,
                       cond_in: Expr, cond_out: Expr) -> int:
    """The number of iterations of a loop with scan outputs, which must be
    known at import time (see the module docstring)."""
    why = ("scan outputs need a number of iterations known at import time: a constant "
           "trip count and no early exit")
    trips = node.ctx.const_value(m) if m is not None else None
    if trips is None:
        raise node.error(why)
    if cond_input is not None:
        initial = node.ctx.const_value(cond_input)
        out_known = node.ctx.const_value(cond_out)
        passes = cond_out is cond_in or (out_known is not None and bool(out_known))
        if initial is None or not bool(np.asarray(initial).reshape(-1)[0]) or not passes:
            raise node.error(why)
    return max(0, int(trips))
