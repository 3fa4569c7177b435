"""Eta-expansion of operators used as values.

``@foldl(add, %acc, %xs)`` passes the operator ``add`` as a function
value.  The C backend compiles operator calls into fused kernels, so an
operator that is not called is turned into the function that calls it,
``fn (%x0: T1, %x1: T2) { add(%x0, %x1) }``.

Type inference records no type on an operator node (one ``Op`` object
stands for every use), so the instantiated type comes from where the
operator stands: the parameter type of the callee it is passed to (the
module is monomorphic: :mod:`aot.passes.specialize` runs first), the type
of the ``let`` variable, tuple field, branch, clause, function result or
reference it flows into.  Called operators are left alone.  The module
must be typed; the result is re-typed.

``EtaExpand`` is Relay's pass of that name
(``src/relay/transforms/eta_expand.cc``) for the two other kinds of
callee that can stand as values, each behind an option:

* ``expand_constructor``: a constructor not in the callee position of a
  call, ``Cons``, becomes ``fn [A](%x0: A, %x1: List[A]) -> List[A] {
  Cons(%x0, %x1) }`` -- polymorphic over fresh copies of its type's
  parameters, so no use-site type is needed;
* ``expand_global_var``: a global function not in callee position,
  ``@aux``, becomes ``fn (%x0: T0, ...) -> R { @aux(%x0, ...) }`` with the
  global's parameter and result types (and fresh copies of its type
  parameters when it is polymorphic).

Constructors in match patterns, called ones and nullary ones (a bare
``Nil`` is a value of its type, not a function) are left alone; each use
gets its own function (its parameters are bound once).  With both options
false (Relay's defaults, where Relay refuses to run) the pass changes
nothing.  The result is re-typed.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..diagnostics import DiagnosticError
from ..ir.adt import Constructor
from ..ir.expr import (Call, Expr, Function, GlobalVar, If, Let, Match, Op, RefCreate, RefWrite,
                       Tuple, Var)
from ..ir.module import IRModule
from ..ir.types import FuncType, RefType, TupleType, Type, TypeVar, substitute
from ..ir.visitor import ExprMutator, Visit, rebuild
from .manager import register_pass

__all__ = ["eta_expand_ops", "eta_expand", "EtaExpandOptions"]


def _expand(op: Op, t: Type | None) -> Expr:
    if not isinstance(t, FuncType):
        raise DiagnosticError(f"operator {op.name} used as a value where its type is not "
                              "known; bind it with a type annotation", op.span)
    if t.type_params:
        # a function literal cannot carry the operator's type relation: the
        # instance must be known (the compile pipeline runs Specialize first)
        raise DiagnosticError(f"operator {op.name} is used as a polymorphic value "
                              f"({t}); EtaExpandOps needs the instance: run Specialize "
                              "first, or annotate the value with a monomorphic type", op.span)
    params = tuple(Var(f"x{i}", a) for i, a in enumerate(t.arg_types))
    return Function(params, Call(op, params, span=op.span), t.ret_type, span=op.span)


def _fix(e: Expr, t: Type | None) -> Expr:
    return _expand(e, t) if isinstance(e, Op) else e


class _Expand(ExprMutator):
    def __init__(self, mod: IRModule) -> None:
        super().__init__()
        self.mod = mod

    def visit_op(self, node: Op) -> Expr:
        raise DiagnosticError(f"operator {node.name} used as a value where its type is not "
                              "known; bind it with a let and a type annotation", node.span)

    def _child(self, e: Expr) -> Visit:
        if isinstance(e, Op):
            return e
        return (yield e)

    def visit_call(self, node: Call) -> Visit:
        fn = node.op if isinstance(node.op, Op) else (yield node.op)
        if isinstance(node.op, GlobalVar) and node.op.name in self.mod:
            types = [p.checked_type for p in self.mod[node.op].params]
        elif isinstance(node.op.checked_type, FuncType):
            types = list(node.op.checked_type.arg_types)
        else:
            types = [a.checked_type for a in node.args]
        args = []
        for a, t in zip(node.args, types):
            args.append(_fix((yield from self._child(a)), t))
        return rebuild(node, op=fn, args=tuple(args))

    def visit_let(self, node: Let) -> Visit:
        value = _fix((yield from self._child(node.value)), node.var.checked_type)
        body = _fix((yield from self._child(node.body)), node.checked_type)
        return rebuild(node, value=value, body=body)

    def visit_tuple(self, node: Tuple) -> Visit:
        t = node.checked_type
        fields = []
        for i, f in enumerate(node.fields):
            ft = t.fields[i] if isinstance(t, TupleType) else None
            fields.append(_fix((yield from self._child(f)), ft))
        return rebuild(node, fields=tuple(fields))

    def visit_if(self, node: If) -> Visit:
        c = yield node.cond
        a = _fix((yield from self._child(node.true_branch)), node.checked_type)
        b = _fix((yield from self._child(node.false_branch)), node.checked_type)
        return rebuild(node, cond=c, true_branch=a, false_branch=b)

    def visit_function(self, node: Function) -> Visit:
        t = node.checked_type
        body = _fix((yield from self._child(node.body)),
                    t.ret_type if isinstance(t, FuncType) else node.ret_type)
        return rebuild(node, body=body)

    def visit_match(self, node: Match) -> Visit:
        data = yield node.data
        clauses = []
        for clause in node.clauses:
            rhs = _fix((yield from self._child(clause.rhs)), node.checked_type)
            clauses.append(rebuild(clause, rhs=rhs))
        return rebuild(node, data=data, clauses=tuple(clauses))

    def visit_ref_create(self, node: RefCreate) -> Visit:
        t = node.checked_type
        v = _fix((yield from self._child(node.value)),
                 t.value if isinstance(t, RefType) else None)
        return rebuild(node, value=v)

    def visit_ref_write(self, node: RefWrite) -> Visit:
        r = yield node.ref
        t = node.ref.checked_type
        v = _fix((yield from self._child(node.value)),
                 t.value if isinstance(t, RefType) else None)
        return rebuild(node, ref=r, value=v)


def eta_expand_ops(mod: IRModule) -> IRModule:
    from ..ir.type_infer import infer_types
    out = mod.copy()
    changed = False
    for gv, func in mod.functions.items():
        new = _Expand(mod).visit(func)
        changed |= new is not func
        out.add(gv, new)
    return infer_types(out) if changed else mod


register_pass("EtaExpandOps", opt_level=0,
              doc="Operators used as values become functions calling them.")(eta_expand_ops)


# ------------------------------------------------------------- EtaExpand

@dataclass(frozen=True)
class EtaExpandOptions:
    """Which values to expand: constructors, global functions (Relay's
    ``EtaExpand(expand_constructor, expand_global_var)``)."""

    expand_constructor: bool = False
    expand_global_var: bool = False


def _fresh_type_params(tps: tuple[TypeVar, ...]) -> tuple[tuple[TypeVar, ...], dict[Type, Type]]:
    fresh = tuple(TypeVar(tv.name, tv.kind) for tv in tps)
    return fresh, dict(zip(tps, fresh))


class _EtaExpand(ExprMutator):
    #: every use of a constructor or global gets its own function
    no_memo = (Constructor, GlobalVar)

    def __init__(self, mod: IRModule, opts: EtaExpandOptions) -> None:
        super().__init__()
        self.mod = mod
        self.opts = opts

    def visit_call(self, node: Call) -> Visit:
        if isinstance(node.op, (Constructor, GlobalVar)):
            args = yield from self._many(node.args)
            return rebuild(node, args=args)
        return (yield from super().visit_call(node))

    def visit_match(self, node: Match) -> Visit:
        data = yield node.data
        clauses = []
        for clause in node.clauses:
            rhs = yield clause.rhs
            clauses.append(rebuild(clause, rhs=rhs))
        return rebuild(node, data=data, clauses=tuple(clauses))

    def visit_constructor(self, node: Constructor) -> Expr:
        if not self.opts.expand_constructor or not node.inputs:
            return node             # a bare nullary constructor is a value, not a function
        data = self.mod.lookup_type(node.belong_to)
        tps, mapping = _fresh_type_params(data.type_vars)
        params = tuple(Var(f"x{i}", substitute(t, mapping), span=node.span)
                       for i, t in enumerate(node.inputs))
        ret = substitute(data.self_type, mapping)
        return Function(params, Call(node, params, span=node.span), ret, tps, span=node.span)

    def visit_global_var(self, node: GlobalVar) -> Expr:
        if not self.opts.expand_global_var or node not in self.mod:
            return node
        func = self.mod[node]
        tps, mapping = _fresh_type_params(func.type_params)
        params = []
        for i, p in enumerate(func.params):
            t = p.type_annotation if p.type_annotation is not None else p.checked_type
            params.append(Var(f"x{i}", None if t is None else substitute(t, mapping),
                              span=node.span))
        ret = func.ret_type
        if ret is None and isinstance(func.checked_type, FuncType):
            ret = func.checked_type.ret_type
        body = Call(node, tuple(params), span=node.span)
        return Function(tuple(params), body, None if ret is None else substitute(ret, mapping),
                        tps, span=node.span)


def eta_expand(mod: IRModule, opts: EtaExpandOptions = EtaExpandOptions()) -> IRModule:
    """``mod`` with constructors and/or globals used as values expanded
    into functions that call them (re-typed; unchanged when neither
    option is set)."""
    from ..ir.type_infer import infer_types
    if not (opts.expand_constructor or opts.expand_global_var):
        return mod
    out = mod.copy()
    changed = False
    for gv, func in mod.functions.items():
        new = _EtaExpand(mod, opts).visit(func)
        changed |= new is not func
        out.add(gv, new)
    return infer_types(out) if changed else mod


@register_pass("EtaExpand", opt_level=1, options=EtaExpandOptions)
def eta_expand_pass(mod: IRModule, opts: EtaExpandOptions) -> IRModule:
    """EtaExpand: constructors and globals used as values become functions."""
    return eta_expand(mod, opts)
