"""A tiny C expression tree and its formatter.

Design note
-----------
:mod:`aot.emit.c.printer` spells kernel-IR expressions as these nodes
(``CAtom``, ``CIndex``, ``CCall``, ``CCast``, ``CUnary``, ``CBinary``,
``CTernary``); :func:`format_c` turns them into text, as pycparser splits
its AST from its generator.

:func:`format_c` prints the *minimal* parentheses given by C's precedence
and associativity table (:class:`Prec`, :data:`BINARY_PREC`), plus the few
"clarity" parentheses gcc's and clang's ``-Wparentheses`` insist on
(``a << (b + c)``, ``(a & b) | c``, ``a || (b && c)``, ``(a < b) == c``,
``(!a) == b``, ``(a & b) ? c : d``).  A unary minus never glues to a
negative operand (``- -1``, never ``--1``).  Trees are folded with the
iterative :func:`~aot.emit.kernel.walk.postorder`, so depth is unbounded.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Mapping

from ..kernel.walk import postorder

__all__ = ["Prec", "BINARY_PREC", "CExpr", "CAtom", "CIndex", "CCall", "CCast", "CUnary",
           "CBinary", "CTernary", "format_c", "names_in"]


class Prec(enum.IntEnum):
    """C precedence levels, loosest first."""
    COMMA = 1
    ASSIGN = 2
    TERNARY = 3
    LOR = 4
    LAND = 5
    BOR = 6
    BXOR = 7
    BAND = 8
    EQUALITY = 9
    RELATIONAL = 10
    SHIFT = 11
    ADDITIVE = 12
    MULTIPLICATIVE = 13
    UNARY = 14
    POSTFIX = 15
    PRIMARY = 16


BINARY_PREC: Mapping[str, Prec] = {
    "*": Prec.MULTIPLICATIVE, "/": Prec.MULTIPLICATIVE, "%": Prec.MULTIPLICATIVE,
    "+": Prec.ADDITIVE, "-": Prec.ADDITIVE,
    "<<": Prec.SHIFT, ">>": Prec.SHIFT,
    "<": Prec.RELATIONAL, "<=": Prec.RELATIONAL, ">": Prec.RELATIONAL, ">=": Prec.RELATIONAL,
    "==": Prec.EQUALITY, "!=": Prec.EQUALITY,
    "&": Prec.BAND, "^": Prec.BXOR, "|": Prec.BOR, "&&": Prec.LAND, "||": Prec.LOR,
}


class CExpr:
    __slots__ = ()


@dataclass(frozen=True, slots=True)
class CAtom(CExpr):
    """A name or literal; ``prec`` is UNARY for a negative literal (``-1``)
    and POSTFIX for a macro call (``INT64_C(5)``)."""
    text: str
    prec: Prec = Prec.PRIMARY


@dataclass(frozen=True, slots=True)
class CIndex(CExpr):
    array: str
    index: CExpr


@dataclass(frozen=True, slots=True)
class CCall(CExpr):
    fn: str
    args: tuple[CExpr, ...]


@dataclass(frozen=True, slots=True)
class CCast(CExpr):
    ctype: str
    operand: CExpr


@dataclass(frozen=True, slots=True)
class CUnary(CExpr):
    op: str
    operand: CExpr


@dataclass(frozen=True, slots=True)
class CBinary(CExpr):
    op: str
    left: CExpr
    right: CExpr


@dataclass(frozen=True, slots=True)
class CTernary(CExpr):
    cond: CExpr
    then: CExpr
    else_: CExpr


def _c_children(c: CExpr) -> tuple[CExpr, ...]:
    if isinstance(c, CAtom):
        return ()
    if isinstance(c, CIndex):
        return (c.index,)
    if isinstance(c, CCall):
        return c.args
    if isinstance(c, (CCast, CUnary)):
        return (c.operand,)
    if isinstance(c, CBinary):
        return (c.left, c.right)
    if isinstance(c, CTernary):
        return (c.cond, c.then, c.else_)
    raise AssertionError(f"not a C expression: {c!r}")


def names_in(c: CExpr) -> set[str]:
    """The called functions and the atoms (names, literals, macros) of a
    C tree: what the printer reports a kernel uses, read from the tree
    it formats rather than from the text."""
    names: set[str] = set()
    stack = [c]
    while stack:
        node = stack.pop()
        if isinstance(node, CAtom):
            names.add(node.text.lstrip("-"))      # a negated macro is one atom: -AOT_INF_F32
        elif isinstance(node, CCall):
            names.add(node.fn)
        stack.extend(_c_children(node))
    return names


def _prec(c: CExpr) -> Prec:
    if isinstance(c, CAtom):
        return c.prec
    if isinstance(c, (CIndex, CCall)):
        return Prec.POSTFIX
    if isinstance(c, (CCast, CUnary)):
        return Prec.UNARY
    if isinstance(c, CBinary):
        return BINARY_PREC[c.op]
    assert isinstance(c, CTernary), c
    return Prec.TERNARY


_COMPARE_PRECS = (Prec.RELATIONAL, Prec.EQUALITY)
_BITWISE_OPS = ("&", "^", "|")


def _clarity(parent: str, child: CExpr, is_left: bool) -> bool:
    """Parentheses that precedence does not need but -Wparentheses wants."""
    p = BINARY_PREC[parent]
    if isinstance(child, CUnary):
        return child.op == "!" and is_left and p in _COMPARE_PRECS
    if not isinstance(child, CBinary):
        return False
    c = BINARY_PREC[child.op]
    if p is Prec.SHIFT:
        return c in (Prec.ADDITIVE, Prec.MULTIPLICATIVE)
    if parent in _BITWISE_OPS:
        return child.op != parent
    if parent == "||":
        return child.op == "&&"
    if p in _COMPARE_PRECS:
        return c in _COMPARE_PRECS
    return False


def format_c(root: CExpr) -> str:
    """C text of an expression with minimal (plus -Wparentheses) parentheses."""
    def combine(c: CExpr, texts: list[str]) -> str:
        kids = _c_children(c)
        if isinstance(c, CAtom):
            return c.text
        if isinstance(c, CIndex):
            return f"{c.array}[{texts[0]}]"
        if isinstance(c, CCall):
            return f"{c.fn}({', '.join(texts)})"
        if isinstance(c, CCast):
            return f"({c.ctype}){_wrap(texts[0], _prec(kids[0]) < Prec.UNARY)}"
        if isinstance(c, CUnary):
            operand = _wrap(texts[0], _prec(kids[0]) < Prec.UNARY)
            glue = " " if c.op in "+-" and operand.startswith(c.op) else ""
            return f"{c.op}{glue}{operand}"
        if isinstance(c, CBinary):
            p = BINARY_PREC[c.op]
            left = _wrap(texts[0], _prec(kids[0]) < p or _clarity(c.op, kids[0], True))
            right = _wrap(texts[1], _prec(kids[1]) <= p or _clarity(c.op, kids[1], False))
            return f"{left} {c.op} {right}"
        assert isinstance(c, CTernary), c
        cond_kid = kids[0]
        bitwise_cond = isinstance(cond_kid, CBinary) and cond_kid.op in _BITWISE_OPS
        cond = _wrap(texts[0], _prec(cond_kid) <= Prec.TERNARY or bitwise_cond)
        other = _wrap(texts[2], _prec(kids[2]) < Prec.TERNARY)
        return f"{cond} ? {texts[1]} : {other}"
    return postorder(root, _c_children, combine)


def _wrap(text: str, parens: bool) -> str:
    return f"({text})" if parens else text
