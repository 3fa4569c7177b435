"""Pattern-directed rewriting: ``rewrite(callbacks, expr_or_module)``.

Design note
-----------
Relay's ``PatternRewriter``.  A callback is any object with a ``pattern``
and a method ``callback(pre, post, node_map) -> Expr`` (optionally
``require_type`` and ``rewrite_once`` flags; :class:`DFPatternCallback`
is a convenient base).  One *round* applies each callback in turn:

1. (``require_type``) the expression is typed (:func:`~.infer.type_expr`);
2. the matches of the callback's pattern are grouped
   (:mod:`~.grouper`: non-overlapping, no inner value escaping);
3. the expression is rebuilt bottom-up; at the root of each group the
   callback is called with the original node (``pre``), the rebuilt node
   (``post``, whose operands are already rewritten) and the node map
   (pattern -> matched expressions, mapped to their rewritten versions),
   and its result replaces the node.

Rounds repeat until a whole round leaves the expression structurally
unchanged (a fixed point), so a rewrite that exposes a new match is
finished too.  A callback with ``rewrite_once`` stops taking part after
the first round in which it changed something.  At most ``max_rounds``
rounds run; more means the callbacks undo each other, which is an error
in the callbacks (:class:`RewriteError`).

Types: given a module, the module is typed first (so type patterns see
types) and the result is the re-inferred module.  Given a typed
expression, the result is typed again (free variables are kept); an
untyped expression gives an untyped result.
"""

from __future__ import annotations

from typing import Any, Sequence

from ..expr import Expr, Function
from ..module import IRModule
from ..structural import structural_equal
from .grouper import GroupMutator, PatternGrouper, group_matches
from .infer import type_expr
from .patterns import DFPattern, as_pattern

DEFAULT_MAX_ROUNDS = 100


class RewriteError(RuntimeError):
    """The callbacks did not reach a fixed point, or returned a non-expression."""


class DFPatternCallback:
    """Base class of rewrite callbacks: set ``self.pattern`` and override
    :meth:`callback`."""

    pattern: DFPattern

    def __init__(self, require_type: bool = False, rewrite_once: bool = False) -> None:
        self.require_type = require_type
        self.rewrite_once = rewrite_once

    def callback(self, pre: Expr, post: Expr, node_map: dict[DFPattern, list[Expr]]) -> Expr:
        raise NotImplementedError

    def rewrite(self, expr: Expr | IRModule, mod: IRModule | None = None) -> Expr | IRModule:
        return rewrite(self, expr, mod)


class _Rewriter(GroupMutator):
    def __init__(self, grouper: PatternGrouper, cb: Any) -> None:
        super().__init__()
        self.grouper = grouper
        self.cb = cb

    def after(self, pre: Expr, post: Expr) -> Expr:
        group = self.grouper.group_at(pre)
        if group is None:
            return post
        node_map = {p: [self.memo.get(e, e) for e in es] for p, es in group.node_map.items()}
        out = self.cb.callback(pre, post, node_map)
        if not isinstance(out, Expr):
            raise RewriteError(f"rewrite callback {type(self.cb).__name__} returned "
                               f"{out!r}, not an expression")
        return out


def _one_pass(cb: Any, expr: Expr, mod: IRModule | None) -> Expr:
    if getattr(cb, "require_type", False):
        expr = type_expr(expr, mod)
    grouper = group_matches(as_pattern(cb.pattern), expr, mod)
    if not grouper.groups:
        return expr
    return _Rewriter(grouper, cb).visit(expr)


def _rewrite_expr(callbacks: Sequence[Any], expr: Expr, mod: IRModule | None,
                  max_rounds: int) -> Expr:
    post = expr
    finished: set[int] = set()
    for _ in range(max_rounds):
        last = post
        for cb in callbacks:
            if id(cb) in finished:
                continue
            before = post
            post = _one_pass(cb, post, mod)
            if getattr(cb, "rewrite_once", False) and \
                    not structural_equal(before, post, map_free_vars=True):
                finished.add(id(cb))
        if structural_equal(last, post, map_free_vars=True):
            return post
    names = ", ".join(type(cb).__name__ for cb in callbacks)
    raise RewriteError(f"rewrite did not reach a fixed point after {max_rounds} rounds "
                       f"(callbacks: {names}); do they undo each other?")


def rewrite(callbacks: Any, expr: Expr | IRModule, mod: IRModule | None = None,
            max_rounds: int = DEFAULT_MAX_ROUNDS) -> Expr | IRModule:
    """Rewrite ``expr`` (an expression or every function of a module) with
    ``callbacks`` (one callback or a list) to a fixed point."""
    cbs = list(callbacks) if isinstance(callbacks, (list, tuple)) else [callbacks]
    if isinstance(expr, IRModule):
        from ...passes.type_infer import infer_types
        typed = expr if expr.is_typed else infer_types(expr)
        out = typed.copy()
        changed = False
        for gv, func in typed.functions.items():
            new = _rewrite_expr(cbs, func, typed, max_rounds)
            if new is not func:
                if not isinstance(new, Function):
                    raise RewriteError(f"rewriting @{gv.name} gave {type(new).__name__}, "
                                       "not a function")
                out.add(gv, new)
                changed = True
        return infer_types(out) if changed else typed
    result = _rewrite_expr(cbs, expr, mod, max_rounds)
    if expr.checked_type is not None and result is not expr:
        result = type_expr(result, mod)
    return result
