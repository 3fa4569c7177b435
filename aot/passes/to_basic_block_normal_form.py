"""ToBasicBlockNormalForm: no node shared between basic blocks.

Design note
-----------
After Relay's ``ToBasicBlockNormalForm``
(``src/relay/transforms/to_basic_block_normal_form.cc``).  A *basic
block* is code that runs as a unit: a function body, a branch of an
``if``, a clause of a ``match``.  Inside a block, graph form is kept:
a node used twice in one block stays one shared node.  Only a node used
from more than one block -- ``%0`` in ``if (%c) { %0 } else { f(%0) }`` --
is let-bound, at the start of the innermost scope that encloses all its
uses (:mod:`aot.passes.scope_tree`, with a scope for each ``let`` body so
that a binding that uses a let's variable comes after it).  Everything
else -- lets already there, graph bindings, nested expressions -- stays
as it is, and a program without such sharing comes back unchanged (the
same objects).

In the result, each block can be compiled on its own: nothing it shares
with another block is evaluated anywhere but in a dominating block.

Constants, variables, globals, operators, constructors and primitive
functions are atoms: sharing them costs nothing and they are never
bound.  The function of a recursive ``let`` is never bound to a second
variable (it refers to its own); its other uses become the let's
variable.

Choices that differ from Relay's: a ``let``'s value and body are in one
block (Relay gives the let a scope of its own, so a node used by a let's
body and by code after the let is bound although both lie in one block),
uses of a variable bound by ``let %x = %y`` are not renamed, and
recursive functions that share a node referring to their own variable
with the code around them are copied first (see the scope tree).

Meaning: as for ToANormalForm, a node shared between blocks is evaluated
at its binding, in the dominating block; for effect-free nodes that is
the interpreter's meaning of graph form.
"""

from __future__ import annotations

from ..ir.expr import Expr, Function, Let
from ..ir.module import IRModule
from ..ir.normal_form import is_primitive_function as is_primitive
from ..ir.visitor import Visit, rebuild
from .manager import register_pass
from .scope_tree import ScopedRebuild, build_scope_tree

__all__ = ["to_basic_block_normal_form", "basic_block_normal_form_body"]


class _Fill(ScopedRebuild):
    """memo[node] = ``node`` rebuilt, or the variable it is bound to."""

    def finish(self, node: Expr, built: Expr) -> Expr:
        if node in self.tree.across:
            return self.tree.scope[node].bind(built)
        return built

    def visit_let(self, node: Let) -> Visit:
        if node in self.tree.recursive:
            value = yield from self.let_function(node)
        else:
            value = yield node.value
        body = yield from self.block(node.body, self.tree.subs[node][0])
        return self.finish(node, rebuild(node, value=value, body=body))


def basic_block_normal_form_body(body: Expr) -> Expr:
    """``body`` (a function body, or any closed expression) with every node
    shared between blocks let-bound where it dominates its uses."""
    body, tree = build_scope_tree(body, constants_atomic=True, let_scopes=True)
    return _Fill(tree).run(body)


def to_basic_block_normal_form(mod: IRModule) -> IRModule:
    """Every global function of ``mod`` in basic block normal form (see the
    design note)."""
    out = mod.copy()
    for gv, fn in mod.functions.items():
        if isinstance(fn, Function) and not is_primitive(fn):
            out.functions[gv] = rebuild(fn, body=basic_block_normal_form_body(fn.body))
    return out


register_pass("ToBasicBlockNormalForm", opt_level=0,
              doc="Let-binds the nodes shared between blocks (branches, clauses, closures) "
                  "where they dominate their uses; the rest stays graph form."
              )(to_basic_block_normal_form)
