"""Walks over the object IR (:mod:`.ir`): the statements of a block at any
depth, what a statement reads, what code refers to, and what the entry
reaches.  Iterative, so nesting depth is unbounded."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from .ir import (Block, CallClosure, CallFunction, CallKernel, Code,
                 CollectCycles, ConstructorCode, CopyOut, Field, ForwardCode, Function, If,
                 ObjectProgram, Retain, Return, SetCode, SetField, StaticObject, StaticRef,
                 StoreOutput, Stmt, Switch, Take, Value, Var)

__all__ = ["value_vars", "value_statics", "stmt_values", "sub_blocks", "iter_stmts",
           "describe", "Reached", "reachable"]


def _leaf(v: Value) -> Value:
    while isinstance(v, Field):
        v = v.base
    return v


def value_vars(v: Value) -> Iterator[str]:
    """The local a value reads (none for a static object or an output)."""
    leaf = _leaf(v)
    if isinstance(leaf, Var):
        yield leaf.name


def value_statics(v: Value) -> Iterator[str]:
    leaf = _leaf(v)
    if isinstance(leaf, StaticRef):
        yield leaf.symbol


def stmt_values(s: Stmt) -> tuple[Value, ...]:
    """The values ``s`` itself reads (not those of nested blocks)."""
    if isinstance(s, SetField):
        return (s.obj, s.value)
    if isinstance(s, (Retain, Take)):
        return (s.src,)
    if isinstance(s, SetCode):
        return (s.obj,)
    if isinstance(s, CallKernel):
        return tuple(a.value for a in s.inputs) + tuple(Var(o.temp) for o in s.outputs)
    if isinstance(s, CallFunction):
        return s.args
    if isinstance(s, CallClosure):
        return (s.closure, *s.args)
    if isinstance(s, If):
        return (s.cond,)
    if isinstance(s, Switch):
        return (s.scrutinee,)
    if isinstance(s, Return):
        return (s.value,)
    if isinstance(s, (CopyOut, StoreOutput)):
        return (s.src,)
    if isinstance(s, CollectCycles):
        return s.roots
    return ()


def sub_blocks(s: Stmt) -> tuple[Block, ...]:
    if isinstance(s, If):
        return (s.then, s.otherwise)
    if isinstance(s, Switch):
        return (*(b for _, b in s.cases), s.default)
    return ()


def iter_stmts(block: Block) -> Iterator[Stmt]:
    """Every statement of ``block``, nested ones included, pre-order."""
    stack = [iter(block)]
    while stack:
        s = next(stack[-1], None)
        if s is None:
            stack.pop()
            continue
        yield s
        for b in reversed(sub_blocks(s)):
            stack.append(iter(b))


def describe(s: Stmt) -> str:
    """``s`` in one line (a compound statement without its blocks)."""
    if isinstance(s, If):
        return f"If(cond={s.cond})"
    if isinstance(s, Switch):
        return f"Switch(scrutinee={s.scrutinee}, tags={[t for t, _ in s.cases]})"
    return repr(s)


@dataclass(frozen=True)
class Reached:
    """What the entry reaches: function and static symbols, kernels and
    constant tables (symbols as in the kernel table)."""
    names: frozenset[str]
    kernels: frozenset[str]
    constants: frozenset[str]


def _refs(item: Code | StaticObject) -> tuple[set[str], set[str], set[str]]:
    names: set[str] = set()
    kernels: set[str] = set()
    constants: set[str] = set()
    if isinstance(item, ForwardCode):
        names.add(item.target)
    elif isinstance(item, StaticObject):
        names.update(x for x in (item.code,) if x is not None)
        constants.update(x for x in (item.data,) if x is not None)
    elif isinstance(item, Function):
        for s in iter_stmts(item.body + item.cleanup):
            for v in stmt_values(s):
                names.update(value_statics(v))
            if isinstance(s, CallFunction):
                names.add(s.function)
            elif isinstance(s, SetCode):
                names.add(s.code)
            elif isinstance(s, CallKernel):
                kernels.add(s.kernel)
                constants.update(s.constants)
    else:
        assert isinstance(item, ConstructorCode), item
    return names, kernels, constants


def reachable(program: ObjectProgram) -> Reached:
    """Functions, statics, kernels and constants reachable from the entry
    (a closure bound but never called leaves its code unreached)."""
    items: dict[str, Code | StaticObject] = {f.name: f for f in program.functions}
    items.update((s.symbol, s) for s in program.statics)
    names: set[str] = set()
    kernels: set[str] = set()
    constants: set[str] = set()
    work: list[Code | StaticObject] = [program.entry]
    while work:
        n, k, c = _refs(work.pop())
        kernels |= k
        constants |= c
        for name in sorted(n - names):
            names.add(name)
            work.append(items[name])
    return Reached(frozenset(names), frozenset(kernels), frozenset(constants))
