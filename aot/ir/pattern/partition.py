"""Partitioning: each match of a pattern becomes a call of a function.

Design note
-----------
Relay's ``PatternPartitioner``.  The matches are grouped as for rewriting
(:mod:`~.grouper`); at the root of each group for which ``check(pre)``
holds, the matched sub-graph is replaced by

    ``fn (%FunctionVar_0_0, ...) { <matched sub-graph> }(<inputs>)``

with function attributes ``PartitionedFromPattern="<op names in
post-order>"`` plus ``attrs`` (``{"Composite": "conv_bias"}`` for
BYOC-style composites; a key in ``attrs`` wins over the default).  The
inputs passed are the rewritten versions of the group's inputs, so
nested matches are partitioned in one walk.  Functions made by an earlier
partition are not searched again (their bodies are skipped), so
partitioning with several patterns in turn nests nothing twice.

A function pattern at the root is refused, and a match rooted at a
function literal or at a leaf (an operator, a constant) is left alone:
there is nothing to cut out.  (Rewrite callbacks do see such matches.)

Types: as for :func:`~.rewrite.rewrite` (a module is re-inferred; a typed
expression is typed again).
"""

from __future__ import annotations

from typing import Any, Callable

from ..attrs import FuncAttrs
from ..expr import Call, Expr, Function
from ..module import IRModule
from ..visitor import rebuild
from .graph import dataflow_inputs
from .grouper import PARTITIONED_FROM_PATTERN, GroupMutator, PatternGrouper, group_matches
from .infer import type_expr
from .patterns import DFPattern, FunctionPattern, as_pattern

Check = Callable[[Expr], bool]


class _Partitioner(GroupMutator):
    def __init__(self, grouper: PatternGrouper, attrs: dict[str, Any], check: Check) -> None:
        super().__init__()
        self.grouper = grouper
        self.attrs = attrs
        self.check = check

    def after(self, pre: Expr, post: Expr) -> Expr:
        group = self.grouper.group_at(pre)
        if group is None or isinstance(pre, Function) or not dataflow_inputs(pre) \
                or not self.check(pre):
            return post
        attrs = {PARTITIONED_FROM_PATTERN: group.name, **self.attrs}
        func = rebuild(group.function, attrs=FuncAttrs.of(attrs))
        args = tuple(self.memo.get(a, a) for a in group.args)
        return Call(func, args, span=pre.span)


def _partition_expr(pattern: DFPattern, expr: Expr, attrs: dict[str, Any], check: Check,
                    mod: IRModule | None) -> Expr:
    grouper = group_matches(pattern, expr, mod)
    if not grouper.groups:
        return expr
    return _Partitioner(grouper, attrs, check).visit(expr)


def partition(pattern: DFPattern, expr: Expr | IRModule, attrs: dict[str, Any] | None = None,
              check: Check | None = None, mod: IRModule | None = None) -> Expr | IRModule:
    """Replace every match of ``pattern`` in ``expr`` (an expression, or
    every function of a module) by a call of a function holding it."""
    pattern = as_pattern(pattern)
    if isinstance(pattern, FunctionPattern):
        return expr
    attrs = dict(attrs or {})
    check = check or (lambda pre: True)
    if isinstance(expr, IRModule):
        from ..type_infer import infer_types
        typed = expr if expr.is_typed else infer_types(expr)
        out = typed.copy()
        changed = False
        for gv, func in typed.functions.items():
            new = _partition_expr(pattern, func, attrs, check, typed)
            if new is not func:
                assert isinstance(new, Function), "a function root is never partitioned"
                out.add(gv, new)
                changed = True
        return infer_types(out) if changed else typed
    result = _partition_expr(pattern, expr, attrs, check, mod)
    if expr.checked_type is not None and result is not expr:
        result = type_expr(result, mod)
    return result
