"""ToGraphNormalForm: ``let`` bindings of pure dataflow become graph edges.

``let %x = add(%a, %b); multiply(%x, %x)`` becomes ``%0 = add(%a, %b);
multiply(%0, %0)``: the let variable is replaced by the (shared) value
node.  In graph form a shared node is still evaluated once per call (the
interpreter and the backends both guarantee it), so the meaning is kept as
long as moving the evaluation is invisible -- the value must be free of
effects.  FuseOps only fuses inside dataflow regions, so this pass is what
lets it fuse programs written with lets.

Kept as lets: bindings of functions (closures, possibly recursive), of
operators and constructors used as values (their type is the binding's), and
values that touch references or call anything but an operator or a
constructor (those may have effects, or diverge, and their order matters).
The check looks at the binding's own expression with let variables as
leaves, so a chain of 10,000 lets costs linear time.
"""

from __future__ import annotations

from ..ir.adt import Constructor
from ..ir.expr import Call, Expr, Function, Let, Op, RefCreate, RefRead, RefWrite
from ..ir.module import IRModule
from ..ir.visitor import ExprMutator, Visit, post_order
from .manager import register_pass

__all__ = ["to_graph_normal_form", "graph_normal_form_expr"]


def is_pure(value: Expr) -> bool:
    if isinstance(value, (Function, Op, Constructor)):
        # an operator or constructor used as a value is polymorphic: its
        # type is the let's annotation, lost if the use site named it bare
        return False
    for node in post_order(value, into_functions=False):
        if isinstance(node, (RefCreate, RefRead, RefWrite, Function)):
            return False
        if isinstance(node, Call) and not isinstance(node.op, (Op, Constructor)):
            return False
    return True


class _ToGraph(ExprMutator):
    def visit_let(self, node: Let) -> Visit:
        if not is_pure(node.value):
            return (yield from super().visit_let(node))
        value = yield node.value
        self.memo[node.var] = value
        return (yield node.body)


def graph_normal_form_expr(expr: Expr) -> Expr:
    return _ToGraph().visit(expr)


def to_graph_normal_form(mod: IRModule) -> IRModule:
    """Every function of ``mod`` in graph form (types are kept: the nodes
    that remain are the typed nodes of the input)."""
    out = mod.copy()
    for gv, fn in mod.functions.items():
        out.functions[gv] = graph_normal_form_expr(fn)
    return out


register_pass("ToGraphNormalForm", opt_level=0)(to_graph_normal_form)
