"""Short text of a pattern, for ``repr`` and error messages.

A pattern used twice is printed in full both times (patterns are small);
expressions inside ``is_expr`` are abbreviated to one line.
"""

from __future__ import annotations

from ..expr import Constant, Op, Var
from .patterns import (AltPattern, AttrPattern, CallPattern, ConstantPattern, DataTypePattern,
                       DFPattern, DominatorPattern, ExprPattern, FunctionPattern, IfPattern,
                       LetPattern, ShapePattern, TupleGetItemPattern, TuplePattern, TypePattern,
                       VarPattern, WildcardPattern)


def _many(items: tuple[DFPattern, ...] | None) -> str:
    if items is None:
        return "..."
    return ", ".join(pattern_str(p) for p in items)


def _expr_str(p: ExprPattern) -> str:
    e = p.expr
    if isinstance(e, Op):
        return f'is_op("{e.name}")'
    if isinstance(e, Var):
        return f"is_expr(%{e.name_hint})"
    if isinstance(e, Constant):
        return f"is_expr({e!r})"
    text = str(e).replace("\n", " ")
    return f"is_expr({text[:60]}{'...' if len(text) > 60 else ''})"


def pattern_str(p: DFPattern) -> str:
    if isinstance(p, WildcardPattern):
        return "*"
    if isinstance(p, ExprPattern):
        return _expr_str(p)
    if isinstance(p, VarPattern):
        return f'is_var("{p.name}")' if p.name else "is_var()"
    if isinstance(p, ConstantPattern):
        return "is_constant()"
    if isinstance(p, CallPattern):
        return f"{pattern_str(p.op)}({_many(p.args)})"
    if isinstance(p, FunctionPattern):
        return f"fn({_many(p.params)}) {{ {pattern_str(p.body)} }}"
    if isinstance(p, TuplePattern):
        return f"({_many(p.fields)})"
    if isinstance(p, TupleGetItemPattern):
        index = "?" if p.index is None else str(p.index)
        return f"{pattern_str(p.tuple)}.{index}"
    if isinstance(p, IfPattern):
        return (f"if ({pattern_str(p.cond)}) {{ {pattern_str(p.true_branch)} }} "
                f"else {{ {pattern_str(p.false_branch)} }}")
    if isinstance(p, LetPattern):
        return f"let {pattern_str(p.var)} = {pattern_str(p.value)}; {pattern_str(p.body)}"
    if isinstance(p, AltPattern):
        return f"({pattern_str(p.left)} | {pattern_str(p.right)})"
    if isinstance(p, TypePattern):
        return f"{pattern_str(p.pattern)}.has_type({p.type})"
    if isinstance(p, DataTypePattern):
        return f'{pattern_str(p.pattern)}.has_dtype("{p.dtype}")'
    if isinstance(p, ShapePattern):
        return f"{pattern_str(p.pattern)}.has_shape({list(p.shape)})"
    if isinstance(p, AttrPattern):
        return f"{pattern_str(p.pattern)}.has_attr({dict(p.attrs)})"
    if isinstance(p, DominatorPattern):
        return (f"dominates({pattern_str(p.parent)}, {pattern_str(p.path)}, "
                f"{pattern_str(p.child)})")
    raise AssertionError(f"unknown pattern {type(p).__name__}")
