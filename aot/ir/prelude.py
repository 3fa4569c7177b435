"""The standard library, written in the IR's own text format
(``prelude.relay`` beside this file), parsed and type-checked once."""

from __future__ import annotations

import functools
from pathlib import Path

from .adt import Constructor, Pattern, PatternConstructor, PatternTuple
from .expr import Function, GlobalVar, Match, Var
from .module import IRModule
from .types import GlobalTypeVar, Type, type_children
from .visitor import post_order

#: A top-level definition: ``("global", name)`` or ``("type", name)``.
Definition = tuple[str, str]

PRELUDE_PATH = Path(__file__).with_name("prelude.relay")


@functools.cache
def _load() -> IRModule:
    from .type_infer import infer_types
    from .parser import parse_module
    mod = parse_module(PRELUDE_PATH.read_text(), str(PRELUDE_PATH), prelude=False)
    return infer_types(mod)


def load_prelude() -> IRModule:
    """The typed prelude module (a fresh copy: callers may add to it)."""
    return _load().copy()


@functools.cache
def prelude_dependencies() -> dict[Definition, frozenset[Definition]]:
    """Each prelude definition -> the other prelude definitions it refers
    to: the functions it calls, the types it names or whose constructors
    it uses (in expressions, patterns, annotations or checked types)."""
    mod = _load()
    out: dict[Definition, frozenset[Definition]] = {}
    for data in mod.type_definitions.values():
        names: set[str] = set()
        for ctor in data.constructors:
            for t in ctor.inputs:
                _type_names(t, names)
        names.discard(data.header.name)
        out[("type", data.header.name)] = frozenset(("type", n) for n in names)
    for gv, func in mod.functions.items():
        out[("global", gv.name)] = frozenset(_function_refs(func)) - {("global", gv.name)}
    return out


def _function_refs(func: Function) -> set[Definition]:
    refs: set[Definition] = set()
    type_names: set[str] = set()
    for node in post_order(func):
        if isinstance(node, GlobalVar):
            refs.add(("global", node.name))
        elif isinstance(node, Constructor):
            type_names.add(node.belong_to.name)
        elif isinstance(node, Match):
            for clause in node.clauses:
                _pattern_type_names(clause.lhs, type_names)
        elif isinstance(node, Var) and node.type_annotation is not None:
            _type_names(node.type_annotation, type_names)
        elif isinstance(node, Function) and node.ret_type is not None:
            _type_names(node.ret_type, type_names)
        if node.checked_type is not None:
            _type_names(node.checked_type, type_names)
    return refs | {("type", n) for n in type_names}


def _pattern_type_names(pattern: Pattern, out: set[str]) -> None:
    if isinstance(pattern, PatternConstructor):
        out.add(pattern.constructor.belong_to.name)
    if isinstance(pattern, (PatternConstructor, PatternTuple)):
        for sub in pattern.patterns:
            _pattern_type_names(sub, out)


def _type_names(t: Type, out: set[str]) -> None:
    """Names of the global types (ADTs) in ``t``."""
    work = [t]
    while work:
        t = work.pop()
        if isinstance(t, GlobalTypeVar):
            out.add(t.name)
        work.extend(type_children(t))
