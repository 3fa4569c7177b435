"""Recognise the loops the dataflow backend compiles over its static arena.

Design note
-----------
The importers write a loop (ONNX ``Loop`` and ``Scan``, ``RNN``/``GRU``/
``LSTM`` over time, TFLite ``WHILE``) as a local recursive function
calling itself in tail position::

    let %loop = fn (%s0, %s1, ...) {
      if (<cond of the state>) { <body>; %loop(<next state>) } else { <result> }
    };
    ... %loop(<initial state>) ...

When every parameter is a tensor (or a tuple of tensors) of static shape,
the state of every iteration has the same fixed size: the loop needs no
object pool.  Such a ``let`` is a *static loop* and the dataflow backend
(:mod:`aot.emit.lower.dataflow`) lowers it to a C ``for (;;)`` over
statically planned arena buffers: one buffer per state leaf, the
continuing branch's kernels computing the next state into fresh buffers
and copy steps moving it into the state buffers at the end of the
iteration (a parallel assignment: a state buffer read by another's copy
is saved first), the other branch's kernels after the loop.  The branch
that continues may be either one (``exit_when`` says which value of the
condition leaves).

What makes a ``let`` a static loop (anything else stays with the
whole-language backend, whose pool holds closures and recursion):

* the value is a non-primitive function of static tensor parameters;
* its body is an ``if`` with exactly one branch a call of the ``let``
  variable (the tail call), with as many arguments as parameters;
* the variable occurs nowhere else in the body (no non-tail recursion,
  no escaping closure) and, in the ``let`` body, only as the callee of
  calls (each call is one run of the loop);
* the condition, the tail call's arguments and the other branch are
  dataflow themselves (kernel calls, tuples, projections, value ``let``\\ s
  and, nested, static loops) -- :func:`check_dataflow` of
  :mod:`aot.emit.lower.dataflow` checks that.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ...ir.dtype import DType
from ...ir.expr import Call, Expr, Function, If, Let, Var
from ...ir.types import TensorType, TupleType, Type
from ...ir.visitor import children, post_order

__all__ = ["StaticLoop", "static_loop", "static_tensor_type"]


@dataclass(frozen=True, slots=True, eq=False)
class StaticLoop:
    """A recognised loop: ``let var = fn; ...``; ``tail`` is the call that
    continues, ``exit`` the other branch, ``exit_when`` the value of the
    condition that leaves the loop."""

    let: Let
    fn: Function
    cond: Expr
    tail: Call
    exit: Expr
    exit_when: bool

    @property
    def var(self) -> Var:
        return self.let.var


def static_tensor_type(t: Type | None) -> bool:
    """A tensor of static shape or a (nested) tuple of them."""
    if isinstance(t, TupleType):
        return all(static_tensor_type(f) for f in t.fields)
    return isinstance(t, TensorType) and all(isinstance(d, int) for d in t.shape)


def _occurs(var: Var, exprs: tuple[Expr, ...]) -> bool:
    return any(n is var for e in exprs for n in post_order(e, into_functions=True))


def static_loop(let: Let) -> StaticLoop | None:
    """``let`` as a static loop, or None."""
    fn, var = let.value, let.var
    if not isinstance(fn, Function) or fn.attrs.get("Primitive", 0):
        return None
    if not all(static_tensor_type(p.checked_type) for p in fn.params):
        return None
    body = fn.body
    if not isinstance(body, If):
        return None
    branches = ((body.true_branch, body.false_branch, False),
                (body.false_branch, body.true_branch, True))
    found = [(tail, exit_branch, exit_when) for tail, exit_branch, exit_when in branches
             if isinstance(tail, Call) and tail.op is var and len(tail.args) == len(fn.params)]
    if not found:
        return None
    tail, exit_branch, exit_when = found[0]
    assert isinstance(tail, Call)
    if _occurs(var, (body.cond, *tail.args, exit_branch)):
        return None
    # in the let body, the variable is only ever called
    for node in post_order(let.body, into_functions=True):
        subs = children(node)
        if isinstance(node, Call) and node.op is var:
            subs = node.args
        if any(s is var for s in subs):
            return None
    if let.body is var:
        return None
    cond_t = body.cond.checked_type
    if not (isinstance(cond_t, TensorType) and all(isinstance(d, int) for d in cond_t.shape)
            and cond_t.dtype is DType.BOOL and math.prod(int(d) for d in cond_t.shape) == 1):
        return None
    return StaticLoop(let, fn, body.cond, tail, exit_branch, exit_when)
