"""Eta-expansion of operators used as values.

``@foldl(add, %acc, %xs)`` passes the operator ``add`` as a function
value.  The C backend compiles operator calls into fused kernels, so an
operator that is not called is turned into the function that calls it,
``fn (%x: T1, %y: T2) { add(%x, %y) }``, with the operator's instantiated
type (its ``checked_type``) giving the parameter types.  Called operators
are left alone.  The module must be typed; the result is re-typed.
"""

from __future__ import annotations

from ..ir.expr import Call, Expr, Function, Op, Var
from ..ir.module import IRModule
from ..ir.types import FuncType
from ..ir.visitor import ExprMutator, Visit, rebuild

__all__ = ["eta_expand_ops"]


class _Expand(ExprMutator):
    def visit_call(self, node: Call) -> Visit:
        fn = node.op if isinstance(node.op, Op) else (yield node.op)
        args = yield from self._many(node.args)
        return rebuild(node, op=fn, args=args)

    def visit_op(self, node: Op) -> Expr:
        t = node.checked_type
        assert isinstance(t, FuncType), f"operator {node.name} of type {t}"
        params = tuple(Var(f"x{i}", a) for i, a in enumerate(t.arg_types))
        return Function(params, Call(node, params, span=node.span), t.ret_type, span=node.span)


def eta_expand_ops(mod: IRModule) -> IRModule:
    from .type_infer import infer_types
    out = mod.copy()
    changed = False
    for gv, func in mod.functions.items():
        new = _Expand().visit(func)
        changed |= new is not func
        out.add(gv, new)
    return infer_types(out) if changed else mod
