"""Traversals of kernel IR: children, folds, walks and substitution.

Design note
-----------
Expression trees are walked iteratively (:func:`postorder`,
:func:`walk_exprs`), so a deep fused chain cannot exhaust Python's stack;
both visit a sub-tree shared by identity once.  Statement trees are only as
deep as the loop nest and are walked recursively (:func:`walk_stmts`).
Rebuilding (:func:`with_children`, :func:`map_stmt_exprs`) goes through the
node constructors, so every rebuilt node is checked again; an expression
whose children are unchanged is returned as is.
"""

from __future__ import annotations

from typing import Callable, Iterator, Mapping, Sequence, TypeVar

from .ir import (Assign, BinOp, Block, Buffer, Call, Cast, Const, Decl, Expr, For,
                 IfThenElse, KernelIRError, Load, Select, Stmt, Store, UnaryOp, Var)

__all__ = ["children", "with_children", "postorder", "walk_exprs", "walk_stmts", "stmt_exprs",
           "map_stmt_exprs", "substitute", "substitute_stmt", "buffers_in", "stored_buffers"]


def children(e: Expr) -> tuple[Expr, ...]:
    if isinstance(e, (Const, Var)):
        return ()
    if isinstance(e, Load):
        return (e.index,)
    if isinstance(e, BinOp):
        return (e.a, e.b)
    if isinstance(e, (UnaryOp, Cast)):
        return (e.a,)
    if isinstance(e, Select):
        return (e.cond, e.a, e.b)
    if isinstance(e, Call):
        return e.args
    raise KernelIRError(f"not an expression: {e!r}")


def with_children(e: Expr, new: Sequence[Expr]) -> Expr:
    """``e`` with its children replaced (``e`` itself when unchanged)."""
    old = children(e)
    if len(old) == len(new) and all(x is y for x, y in zip(old, new)):
        return e
    if isinstance(e, Load):
        return Load(e.buffer, new[0], e.lanes)
    if isinstance(e, BinOp):
        return BinOp(e.op, new[0], new[1], e.no_wrap)
    if isinstance(e, UnaryOp):
        return UnaryOp(e.op, new[0])
    if isinstance(e, Cast):
        return Cast(e.to, new[0])
    if isinstance(e, Select):
        return Select(new[0], new[1], new[2])
    if isinstance(e, Call):
        return Call(e.name, tuple(new), e.dtype)
    raise KernelIRError(f"{type(e).__name__} has no children")


N = TypeVar("N")
R = TypeVar("R")


def postorder(root: N, kids: Callable[[N], Sequence[N]],
              combine: Callable[[N, list[R]], R]) -> R:
    """Fold a tree bottom-up without recursion: ``combine(node, results of
    its children)``.  Results are memoised by node identity, so a shared
    sub-tree is combined once."""
    done: dict[int, R] = {}
    # (node, None): not expanded yet; (node, its children): combine next
    stack: list[tuple[N, Sequence[N] | None]] = [(root, None)]
    while stack:
        node, ks = stack.pop()
        key = id(node)
        if key in done:
            continue
        if ks is None:
            ks = kids(node)
            if ks:
                stack.append((node, ks))
                for k in reversed(ks):
                    if id(k) not in done:
                        stack.append((k, None))
                continue
        done[key] = combine(node, [done[id(k)] for k in ks])
    return done[id(root)]


def walk_exprs(root: Expr, seen: set[int] | None = None) -> Iterator[Expr]:
    """Every node of an expression tree, pre-order, each shared node once
    (with ``seen``, once across every walk given the same set)."""
    if seen is None:
        seen = set()
    stack = [root]
    while stack:
        e = stack.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        yield e
        stack.extend(reversed(children(e)))


def stmt_exprs(s: Stmt) -> tuple[Expr, ...]:
    """The expressions held directly by a statement (not by nested ones)."""
    if isinstance(s, For):
        return (s.start, s.extent)
    if isinstance(s, Store):
        return (s.index, s.value)
    if isinstance(s, Decl):
        return () if s.init is None else (s.init,)
    if isinstance(s, Assign):
        return (s.value,)
    if isinstance(s, IfThenElse):
        return (s.cond,)
    return ()


def _sub_stmts(s: Stmt) -> tuple[Stmt, ...]:
    if isinstance(s, For):
        return (s.body,)
    if isinstance(s, Block):
        return s.stmts
    if isinstance(s, IfThenElse):
        return (s.then,) if s.else_ is None else (s.then, s.else_)
    return ()


def walk_stmts(s: Stmt) -> Iterator[Stmt]:
    """Every statement, pre-order (recursion depth = nesting depth)."""
    yield s
    for sub in _sub_stmts(s):
        yield from walk_stmts(sub)


def map_stmt_exprs(s: Stmt, fn: Callable[[Expr], Expr]) -> Stmt:
    """Apply ``fn`` to every top-level expression of every statement."""
    if isinstance(s, For):
        return For(s.var, fn(s.start), fn(s.extent), map_stmt_exprs(s.body, fn), s.kind)
    if isinstance(s, Store):
        return Store(s.buffer, fn(s.index), fn(s.value))
    if isinstance(s, Decl):
        return s if s.init is None else Decl(s.var, fn(s.init))
    if isinstance(s, Assign):
        return Assign(s.var, fn(s.value))
    if isinstance(s, IfThenElse):
        return IfThenElse(fn(s.cond), map_stmt_exprs(s.then, fn),
                          None if s.else_ is None else map_stmt_exprs(s.else_, fn))
    if isinstance(s, Block):
        return Block(tuple(map_stmt_exprs(x, fn) for x in s.stmts))
    return s


def substitute(root: Expr, mapping: Mapping[Var, Expr]) -> Expr:
    """``root`` with every variable in ``mapping`` replaced."""
    def combine(e: Expr, kids: list[Expr]) -> Expr:
        if isinstance(e, Var):
            return mapping.get(e, e)
        return with_children(e, kids) if kids else e
    return postorder(root, children, combine)


def substitute_stmt(s: Stmt, mapping: Mapping[Var, Expr]) -> Stmt:
    return map_stmt_exprs(s, lambda e: substitute(e, mapping))


def buffers_in(s: Stmt) -> list[Buffer]:
    """Buffers referenced by a statement tree, in order of first reference
    (remembered for the last few trees: lowering, verification and printing
    ask about the same kernel body in turn)."""
    got = _BUFFERS.get(id(s))
    if got is not None and got[0] is s:
        return list(got[1])
    found = _buffers_in(s)
    _BUFFERS[id(s)] = (s, tuple(found))     # holds ``s``: its id is not reused meanwhile
    while len(_BUFFERS) > 64:
        del _BUFFERS[next(iter(_BUFFERS))]
    return found


#: buffers_in's answers by tree identity, oldest first
_BUFFERS: dict[int, tuple[Stmt, tuple[Buffer, ...]]] = {}


def _buffers_in(s: Stmt) -> list[Buffer]:
    out: dict[Buffer, None] = {}
    seen: set[int] = set()     # a sub-tree shared by identity is walked once
    for st in walk_stmts(s):
        if isinstance(st, Store):
            out.setdefault(st.buffer)
        for root in stmt_exprs(st):
            for e in walk_exprs(root, seen):
                if isinstance(e, Load):
                    out.setdefault(e.buffer)
    return list(out)


def stored_buffers(s: Stmt) -> frozenset[str]:
    """Names of the buffers a statement tree stores into."""
    return frozenset(st.buffer.name for st in walk_stmts(s) if isinstance(st, Store))
