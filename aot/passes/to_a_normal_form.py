"""ToANormalForm: every compound sub-expression bound by a ``let``.

Design note
-----------
After Relay's ``ToANormalForm`` (``src/relay/transforms/to_a_normal_form.cc``).
In A-normal form every operand is an *atom* -- a variable, a global, an
operator, a constructor or a primitive function -- and every compound
expression (calls, tuples, projections, constants, closures, ``if``,
``match``, reference operations) is the value of exactly one ``let``; each
block (a function body, a branch, a clause) is a chain of lets ending in
an atom.  Implicit sharing becomes explicit: a node used twice is bound
once and its variable used twice.

Where a node is bound comes from the scope tree
(:mod:`aot.passes.scope_tree`): at the lowest common ancestor of the
blocks it is used from, at the point where the conversion -- which walks
the program in evaluation order -- first reaches it.  So a node used by
both branches of an ``if`` is bound before the ``if``; a node used only
inside a branch stays inside it.

Choices that differ from Relay's:

* A ``let`` is flattened into its block: ``let %x = v; b`` binds ``v`` to
  ``%x`` where the let stands and continues with ``b`` in the same chain
  (Relay nests a fresh scope and binds the whole let to one more
  variable, leaving lets inside let values).  When ``v`` was already bound
  (a shared node) or is an atom, the let becomes ``let %x = <atom>``.
* The body of a let keeps using ``%x``; Relay's conversion renames uses of
  a variable ``%y`` bound by ``let %x = %y`` to ``%x``.
* Primitive functions are atoms (left in call position, bodies
  untouched), so FuseOps' output converts without hiding its kernels
  behind variables.
* A node shared between a recursive function and the code around it that
  refers to the function's own variable cannot be hoisted; the function
  is copied first (:func:`~aot.passes.scope_tree.separate_recursive_functions`).

Meaning: the interpreter evaluates a shared node once per function
activation, when first reached; after conversion it is evaluated once, at
its binding.  For effect-free nodes (all operator calls) these agree.  A
node shared *between blocks* moves to the block that dominates its uses,
as in Relay: it may then be evaluated where the original evaluated it in
only one path (e.g. shared between a closure and one branch), and an
effectful shared node (a ``ref_read``) may move relative to the other
effects of its block.

Types: every new variable and let gets the checked type of the node it
binds; rebuilt nodes keep theirs, so a typed module stays typed.
"""

from __future__ import annotations

from ..ir.expr import Expr, Function, Let
from ..ir.module import IRModule
from ..ir.normal_form import is_atom
from ..ir.normal_form import is_primitive_function as is_primitive
from ..ir.visitor import Visit, rebuild
from .manager import register_pass
from .scope_tree import ScopedRebuild, build_scope_tree

__all__ = ["to_a_normal_form", "a_normal_form_body"]


class _Fill(ScopedRebuild):
    """memo[node] = the atom standing for ``node``."""

    def finish(self, node: Expr, built: Expr) -> Expr:
        return self.tree.scope[node].bind(built)

    def visit_let(self, node: Let) -> Visit:
        scope = self.tree.scope[node]
        value = node.value
        if node in self.tree.recursive:
            scope.bindings.append((node.var, (yield from self.let_function(node))))
        elif (not isinstance(value, Let) and not is_atom(value, constants=False)
              and value not in self.memo and self.tree.scope[value] is scope):
            # bind the value to the let's own variable
            scope.bindings.append((node.var, (yield from self.build(value))))
            self.memo[value] = node.var
        else:
            atom = yield value
            scope.bindings.append((node.var, atom))
        return (yield node.body)


def a_normal_form_body(body: Expr) -> Expr:
    """``body`` (a function body, or any closed expression) in A-normal
    form: a chain of lets ending in an atom."""
    body, tree = build_scope_tree(body, constants_atomic=False, let_scopes=False)
    return _Fill(tree).run(body)


def to_a_normal_form(mod: IRModule) -> IRModule:
    """Every global function of ``mod`` in A-normal form (see the design
    note)."""
    out = mod.copy()
    for gv, fn in mod.functions.items():
        if isinstance(fn, Function) and not is_primitive(fn):
            out.functions[gv] = rebuild(fn, body=a_normal_form_body(fn.body))
    return out


register_pass("ToANormalForm", opt_level=0,
              doc="Binds every compound sub-expression to a let (A-normal form); a shared "
                  "node once, in the innermost block enclosing its uses.")(to_a_normal_form)
