"""Types for the pattern matcher: typing an open expression in place.

Design note
-----------
Type patterns (``has_type``, ``has_dtype``, ``has_shape``) read the
``checked_type`` of the expression they look at, as Relay's matcher does.
An expression built by hand (or by a rewrite callback) may have no types
yet, and type inference works on modules, returns *new* nodes and knows
nothing of variables bound outside the expression.  Two services here:

* :func:`type_expr` types an expression that may be open: each free
  variable becomes a parameter annotated with the variable's own type, the
  wrapper function is inferred in a copy of ``mod`` (so globals resolve),
  and the typed body gets the original free variables back.  The result
  is a typed expression that can replace the original in its context.
* :class:`TypeOracle` answers "what is the type of this node" for every
  node of a root expression without replacing anything: nodes that have a
  ``checked_type`` answer themselves; otherwise the root is typed once and
  the typed copy is aligned with the original node by node (type inference
  rebuilds the tree with the same shape, so both post-orders align).
  If the root does not type-check, unknown types stay unknown and type
  patterns simply do not match.
"""

from __future__ import annotations

from ...diagnostics import DiagnosticError
from ..analysis import free_vars
from ..expr import Expr, Function, Var
from ..module import IRModule
from ..types import Type
from ..visitor import ExprMutator, post_order

_TMP_NAME = "__pattern_tmp"


def _fresh_name(mod: IRModule | None) -> str:
    name = _TMP_NAME
    n = 0
    while mod is not None and name in mod:
        n += 1
        name = f"{_TMP_NAME}{n}"
    return name


def _infer_open(expr: Expr, mod: IRModule | None) -> tuple[Function, list[Var]]:
    """The typed wrapper function of ``expr`` and the original free
    variables, one per typed parameter."""
    from ..type_infer import infer_types
    originals = free_vars(expr)
    params = tuple(Var(v.name_hint, v.type_annotation or v.checked_type) for v in originals)
    subst = ExprMutator()
    for old, new in zip(originals, params):
        subst.memo[old] = new
    body = subst.visit(expr)
    name = _fresh_name(mod)
    tmp = mod.copy() if mod is not None else IRModule()
    tmp.add(name, Function(params, body))
    typed = infer_types(tmp)[name]
    return typed, originals


def type_expr(expr: Expr, mod: IRModule | None = None) -> Expr:
    """``expr`` with a ``checked_type`` on every node; free variables are
    kept as they are.  Raises DiagnosticError if it does not type-check."""
    typed, originals = _infer_open(expr, mod)
    back = ExprMutator()
    for new, old in zip(typed.params, originals):
        back.memo[new] = old
    return back.visit(typed.body)


class TypeOracle:
    """The types of the nodes of one root expression (see the note)."""

    def __init__(self, root: Expr, mod: IRModule | None = None) -> None:
        self.root = root
        self.mod = mod
        self._table: dict[Expr, Type | None] | None = None

    def type_of(self, e: Expr) -> Type | None:
        if e.checked_type is not None:
            return e.checked_type
        if self._table is None:
            self._table = self._build()
        return self._table.get(e)

    def _build(self) -> dict[Expr, Type | None]:
        try:
            typed, _ = _infer_open(self.root, self.mod)
        except DiagnosticError:
            return {}
        original = post_order(self.root)
        copy = post_order(typed.body)
        if len(original) != len(copy) or any(type(a) is not type(b)
                                             for a, b in zip(original, copy)):
            return {}
        return {a: b.checked_type for a, b in zip(original, copy)}
