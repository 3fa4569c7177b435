"""FirstOrderGradient: reverse-mode automatic differentiation of a dataflow function.

Design note
-----------
As Relay's ``FirstOrderGradient`` (``src/relay/transforms/first_order_gradient.cc``):
the entry function ``fn(p1, ..., pn) -> r`` becomes

    fn(p1, ..., pn) -> (r, (dr/dp1, ..., dr/dpn))

where ``dr/dpi`` is the vector-Jacobian product of the seed ``ones_like(r)``
(so a scalar result gives the plain gradient, a tensor result the gradient
of the sum of its elements), of ``pi``'s type.

1. **Forward.**  One walk over the body (the iterative trampoline of
   :mod:`aot.ir.visitor`, memoised, so a shared node is evaluated once and
   a 10,000-deep let chain is a loop) binds every operator call, tuple and
   projection to a fresh, typed variable in evaluation order and records it
   on a *tape*.  Let-bound variables map to the value they are bound to.
2. **Backward.**  The tape is walked backwards.  Each recorded value has an
   adjoint: an expression for a tensor, a list of field adjoints for a
   tuple, and ``None`` while nothing has flowed into it.  ``None`` is the
   lazy zero of Relay's ``LazyGradientInit``: it is never materialised
   unless it reaches a parameter, so an untouched gradient costs nothing
   and a call whose result gets no gradient is skipped (its rule is not
   even consulted).  A call's adjoints come from the operator's ``grad``
   column (:mod:`aot.ir.ops.gradients`); ``call`` inside a rule's
   expressions is replaced by the variable holding the call's result.
   Contributions to one value are summed (``add``); every adjoint is bound
   to a variable, so nothing is computed twice.  Values of integer or
   boolean type get no adjoint (indices, masks, shapes).
3. **Result.**  Parameters without an adjoint get ``zeros_like``.

**``if``.**  An ``if`` over tensors is one step of the tape: forward, the
``if`` of its branches' forward values; backward, an ``if`` on the same
condition whose branches differentiate their branch on its own (a nested
tape seeded with the ``if``'s adjoint, the branch's forward recomputed
there) and give the adjoints of the values from outside the ``if`` that
either branch reads (zeros where that branch reads none).  So the result
is still a dataflow program with static ``if`` expressions, which the C backend
compiles over its arena (:mod:`aot.emit.lower.static_if`) -- at the price
of the taken branch's forward computed twice.

The pass refuses, with a diagnostic naming the construct, what first-order
mode cannot differentiate: ``match``, references, function
literals, calls of globals, closures or constructors, and polymorphic
entries; an operator without a gradient rule is refused naming it and
saying why (from :data:`~aot.ir.ops.gradients.NOT_DIFFERENTIABLE`).  Other
globals of the module are kept as they are.

Higher-order mode and ``mode="auto"``
-------------------------------------
``gradient(mod, entry, mode="higher_order")`` is
:mod:`.higher_order_gradient` (the pass ``HigherOrderGradient``): Relay's
``ReverseAD``, a type-directed program transformation rather than a tape
built at compile time, because with ``if``, ``match`` and recursion the
order of the backward steps is known only at run time.  Every float
tensor is paired with an adjoint cell (a reference to a ``GradCell``,
LazyGradientInit's lazy zero), every function takes the backpropagator
(a reference to a closure) as an extra parameter, and each operator call
prepends its backward step, using the same ``grad`` column as this
module.  For a dataflow program PartialEvaluate runs that backward pass at
compile time, so the optimised result is the same dataflow program this
module builds (a test checks both give the same operator calls).
``mode="auto"`` (the default of ``aot compile --grad``) takes first order
when ``@entry`` is dataflow (:func:`is_dataflow_function`) and higher
order otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Union

from ..diagnostics import DiagnosticError
from ..ir.expr import (Call, Constant, Expr, Function, If, Let, Op, Tuple, TupleGetItem, Var)
from ..ir.module import IRModule
from ..ir.ops.gradients import NoGradient, call, why_not_differentiable
from ..ir.registry import lookup
from ..ir.type_infer import infer_types
from ..ir.types import TensorType, TupleType, Type
from ..ir.visitor import ExprFunctor, ExprMutator, Visit, post_order
from .manager import register_pass

__all__ = ["GradientOptions", "SubstituteCall", "differentiable_type", "first_order_gradient",
           "gradient", "is_dataflow_function"]

#: an adjoint: an expression (tensor), a list of field adjoints (tuple), or None (zero)
Adjoint = Union[Expr, list[Any], None]

MODES = ("first_order", "higher_order", "auto")


@dataclass(frozen=True)
class GradientOptions:
    """``entry``: the function to differentiate."""

    entry: str = "main"


def gradient(mod: IRModule, entry: str = "main", mode: str = "first_order") -> IRModule:
    """``mod`` with ``@entry`` returning ``(result, (d result / d p for each
    parameter p))``, seeded with ones (see the module docstring).  ``mode``:
    ``"first_order"`` (dataflow programs), ``"higher_order"`` (the whole
    language, :mod:`.higher_order_gradient`) or ``"auto"`` (first order when
    ``@entry`` is dataflow, higher order otherwise)."""
    if mode not in MODES:
        raise DiagnosticError(f"unknown gradient mode {mode!r} (modes: {', '.join(MODES)})")
    if mode == "auto":
        if entry not in mod:
            raise DiagnosticError(f"gradient: the module has no function @{entry}")
        mode = "first_order" if is_dataflow_function(mod[entry]) else "higher_order"
    if mode == "higher_order":
        from .higher_order_gradient import HigherOrderGradientOptions, higher_order_gradient
        return higher_order_gradient(mod, HigherOrderGradientOptions(entry))
    return first_order_gradient(mod, GradientOptions(entry))


def is_dataflow_function(fn: Function) -> bool:
    """Whether first-order mode can differentiate ``fn``: operator calls,
    tuples, projections, ``if`` and ``let`` of values only (what ``mode="auto"``
    sends to first-order mode; anything else goes to higher-order mode)."""
    for node in post_order(fn.body):
        if isinstance(node, Call) and not isinstance(node.op, Op):
            return False
        if isinstance(node, Let) and isinstance(node.value, Function):
            return False
        if not isinstance(node, (Call, Constant, If, Let, Op, Tuple, TupleGetItem, Var)):
            return False
    return True


@register_pass("FirstOrderGradient", opt_level=4, options=GradientOptions)
def first_order_gradient(mod: IRModule, opts: GradientOptions = GradientOptions()) -> IRModule:
    """FirstOrderGradient: @entry returns (result, gradients of its parameters)."""
    if opts.entry not in mod:
        raise DiagnosticError(f"gradient: the module has no function @{opts.entry}")
    typed = infer_types(mod)
    fn = typed[opts.entry]
    if fn.type_params:
        raise DiagnosticError(f"first-order gradient: @{opts.entry} is polymorphic; "
                              f"differentiate a monomorphic function", fn.span)
    out = typed.copy()
    out.add(opts.entry, _Differentiate(opts.entry).run(fn))
    return infer_types(out)


def _refuse(what: str, entry: str, node: Expr) -> DiagnosticError:
    return DiagnosticError(f"first-order gradient of @{entry}: {what} is not supported; "
                           f"first-order mode differentiates dataflow programs (operator "
                           f"calls, tuples, let)", node.span)


class _Forward(ExprFunctor[Expr]):
    """Step 1: rebind every value to a typed variable, recording a tape.
    Returns, for each node, the expression holding its value (a variable
    or a constant)."""

    def __init__(self, owner: _Differentiate) -> None:
        super().__init__()
        self.o = owner

    def visit_var(self, node: Var) -> Expr:
        return self.o.env[node]

    def visit_constant(self, node: Constant) -> Expr:
        return node

    def visit_tuple(self, node: Tuple) -> Visit:
        fields = []
        for f in node.fields:
            fields.append((yield f))
        v = self.o.bind(Tuple(tuple(fields), span=node.span), node.type)
        self.o.tape.append(("tuple", v, fields))
        return v

    def visit_tuple_getitem(self, node: TupleGetItem) -> Visit:
        t = yield node.tuple_value
        v = self.o.bind(TupleGetItem(t, node.index, span=node.span), node.type)
        self.o.tape.append(("proj", v, t, node.index))
        return v

    def visit_call(self, node: Call) -> Visit:
        if not isinstance(node.op, Op):
            raise _refuse(f"a call of {_kind(node.op)}", self.o.entry, node)
        args = []
        for a in node.args:
            args.append((yield a))
        new = Call(node.op, tuple(args), node.attrs, node.type_args, span=node.span,
                   checked_type=node.type)
        v = self.o.bind(new, node.type)
        self.o.tape.append(("call", v, new))
        return v

    def visit_let(self, node: Let) -> Visit:
        if isinstance(node.value, Function):
            raise _refuse("a local function", self.o.entry, node.value)
        self.o.env[node.var] = yield node.value
        return (yield node.body)

    def visit_if(self, node: If) -> Visit:
        cond = yield node.cond
        branches = [self.o.nested(self.memo).forward(b)[1]
                    for b in (node.true_branch, node.false_branch)]
        v = self.o.bind(If(cond, branches[0], branches[1], span=node.span), node.type)
        self.o.tape.append(("if", v, cond, node, dict(self.memo)))
        return v

    def _unhandled(self, node: Any) -> Any:
        raise _refuse(_kind(node), self.o.entry, node)

    visit_global_var = visit_op = visit_constructor = visit_function = _unhandled
    visit_match = visit_ref_create = visit_ref_read = visit_ref_write = _unhandled


def _kind(node: Expr) -> str:
    names = {"If": "`if`", "Match": "`match`", "RefCreate": "a reference (ref)",
             "RefRead": "a reference read", "RefWrite": "a reference write",
             "Function": "a function literal", "GlobalVar": "a global function",
             "Constructor": "an ADT constructor", "Var": "a closure"}
    return names.get(type(node).__name__, type(node).__name__)


class _Differentiate:
    def __init__(self, entry: str) -> None:
        self.entry = entry
        self.env: dict[Var, Expr] = {}
        self.lets: list[tuple[Var, Expr]] = []
        self.tape: list[tuple[Any, ...]] = []
        self.memo: dict[Any, Any] = {}
        self.adj: dict[Expr, Adjoint] = {}
        self.types: dict[Expr, Type] = {}

    def bind(self, value: Expr, t: Type) -> Var:
        v = Var(f"ad{len(self.lets)}", t, checked_type=t)
        self.lets.append((v, value))
        self.types[v] = t
        return v

    # ---------------------------------------------------------------- driver

    def nested(self, memo: dict) -> _Differentiate:
        """A tape for a branch: it sees this tape's values as given."""
        sub = _Differentiate(self.entry)
        sub.env, sub.types, sub.memo = dict(self.env), dict(self.types), dict(memo)
        return sub

    def forward(self, e: Expr) -> tuple[Expr, Expr]:
        """``e``'s forward value and ``e`` as let bindings ending in it."""
        f = _Forward(self)
        f.memo.update(self.memo)
        result = f.visit(e)
        return result, self.wrap(result)

    def wrap(self, body: Expr) -> Expr:
        for v, value in reversed(self.lets):
            body = Let(v, value, body)
        return body

    def run(self, fn: Function) -> Function:
        for p in fn.params:
            self.env[p] = p
            self.types[p] = p.type
        result = _Forward(self).visit(fn.body)
        rtype = fn.body.type
        self.accumulate(result, rtype, self.ones(result, rtype))
        for entry in reversed(self.tape):
            self.backward(entry)
        grads = [self.materialize(self.adj.get(p), p, self.types[p]) for p in fn.params]
        body = self.wrap(Tuple((result, Tuple(tuple(grads)))))
        return Function(fn.params, body, None, (), fn.attrs, span=fn.span)

    # ---------------------------------------------------------------- adjoints

    def ones(self, value: Expr, t: Type) -> Adjoint:
        if isinstance(t, TupleType):
            return [self.ones(self.bind(TupleGetItem(value, i), f), f)
                    for i, f in enumerate(t.fields)]
        if isinstance(t, TensorType):
            return self.bind(call("ones_like", value), t) if t.dtype.is_float else None
        raise _refuse(f"a result of type {t}", self.entry, value)

    def materialize(self, a: Adjoint, value: Expr, t: Type) -> Expr:
        """An adjoint as an expression; zero where nothing flowed."""
        if isinstance(t, TupleType):
            fields = a if isinstance(a, list) else [None] * len(t.fields)
            return Tuple(tuple(self.materialize(part, TupleGetItem(value, i), f)
                               for i, (part, f) in enumerate(zip(fields, t.fields))))
        if isinstance(t, TensorType):
            if a is None:
                return self.bind(call("zeros_like", value), t)
            assert isinstance(a, Expr)
            return a
        raise _refuse(f"a parameter of type {t}", self.entry, value)

    def split(self, e: Expr, t: Type) -> Adjoint:
        """A rule's tuple-typed adjoint expression as a list of field adjoints."""
        if not isinstance(t, TupleType):
            return e if isinstance(e, (Var, Constant)) else self.bind(e, t)
        v = self.bind(e, t)
        return [self.split(TupleGetItem(v, i), f) for i, f in enumerate(t.fields)]

    def plus(self, t: Type, a: Adjoint, b: Adjoint) -> Adjoint:
        if a is None:
            return b
        if b is None:
            return a
        if isinstance(t, TupleType):
            assert isinstance(a, list) and isinstance(b, list)
            return [self.plus(f, x, y) for f, x, y in zip(t.fields, a, b)]
        assert isinstance(a, Expr) and isinstance(b, Expr)
        return self.bind(call("add", a, b), t)

    def accumulate(self, target: Expr, t: Type, contribution: Adjoint) -> None:
        if contribution is None or isinstance(target, Constant) or not differentiable_type(t):
            return
        self.adj[target] = self.plus(t, self.adj.get(target), contribution)

    # ---------------------------------------------------------------- backward

    def backward(self, entry: tuple[Any, ...]) -> None:
        kind, v = entry[0], entry[1]
        g = self.adj.get(v)
        if g is None:
            return
        if kind == "tuple":
            assert isinstance(g, list)
            for field, part in zip(entry[2], g):
                self.accumulate(field, self.types.get(field, field.checked_type), part)
        elif kind == "proj":
            t, index = entry[2], entry[3]
            tt = self.types.get(t, t.checked_type)
            assert isinstance(tt, TupleType)
            parts: list[Adjoint] = [None] * len(tt.fields)
            parts[index] = g
            self.accumulate(t, tt, parts)
        elif kind == "if":
            self.if_backward(v, entry[2], entry[3], entry[4], g)
        else:
            self.call_backward(v, entry[2], g)

    def if_backward(self, v: Var, cond: Expr, node: If, memo: dict, g: Adjoint) -> None:
        """The adjoints of the outside values the branches read: an ``if``
        of each branch's own tape, seeded with ``g``."""
        t = self.types[v]
        seed = self.materialize(g, v, t)
        subs = []
        for branch in (node.true_branch, node.false_branch):
            sub = self.nested(memo)
            result, _ = sub.forward(branch)
            sub.accumulate(result, t, sub.split(seed, t))
            for entry in reversed(sub.tape):
                sub.backward(entry)
            subs.append(sub)
        outside = list(dict.fromkeys(k for sub in subs for k, a in sub.adj.items()
                                     if a is not None and k in self.types))
        if not outside:
            return
        types = [self.types[k] for k in outside]
        branches = [sub.wrap(Tuple(tuple(sub.materialize(sub.adj.get(k), k, kt)
                                         for k, kt in zip(outside, types))))
                    for sub in subs]
        tt = TupleType(tuple(types))
        back = self.bind(If(cond, branches[0], branches[1], span=node.span), tt)
        for i, (k, kt) in enumerate(zip(outside, types)):
            self.accumulate(k, kt, self.split(TupleGetItem(back, i), kt))

    def call_backward(self, v: Var, c: Call, g: Adjoint) -> None:
        assert isinstance(c.op, Op)
        name = c.op.name
        op_def = lookup(name)
        assert op_def is not None
        if op_def.grad is None:
            raise DiagnosticError(f"gradient of @{self.entry}: operator {name} has no gradient "
                                  f"rule ({why_not_differentiable(name)})", c.span)
        g_expr = self.materialize(g, v, self.types[v])
        try:
            contributions = op_def.grad(c, g_expr)
        except NoGradient as exc:
            raise DiagnosticError(f"gradient of @{self.entry}: operator {name}: {exc}",
                                  c.span) from None
        assert len(contributions) == len(c.args), \
            f"{name}: gradient rule gave {len(contributions)} adjoints for {len(c.args)} arguments"
        for arg, contribution in zip(c.args, contributions):
            if contribution is None:
                continue
            t = self.types.get(arg, arg.checked_type)
            assert t is not None
            if not differentiable_type(t):
                continue
            self.accumulate(arg, t, self.split(SubstituteCall(c, v).visit(contribution), t))


def differentiable_type(t: Type | None) -> bool:
    """Whether a value of type ``t`` gets an adjoint: a float tensor, or a
    tuple holding one."""
    if isinstance(t, TensorType):
        return t.dtype.is_float
    if isinstance(t, TupleType):
        return any(differentiable_type(f) for f in t.fields)
    return False


class SubstituteCall(ExprMutator):
    """Replaces the call a rule received by the variable holding its result."""

    def __init__(self, c: Call, v: Var) -> None:
        super().__init__()
        self.memo[c] = v
