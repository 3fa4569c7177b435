"""Blocks, and checkers for A-normal form and basic block normal form.

A *block* is code that runs as a unit or not at all: a function body, a
branch of an ``if``, a clause of a ``match``.  :func:`block_edges` says,
for each node, which children it evaluates and whether each is evaluated
in the node's own block or in a new block the node opens; the normal-form
passes (:mod:`aot.passes.scope_tree`) and the checkers below share it.

* **A-normal form**: every block is a chain of lets ending in an atom;
  every let value is an atom or a compound expression whose operands are
  atoms (an ``if``'s condition, a ``match``'s scrutinee included) and is
  never itself a let; no compound node is used twice.
* **Basic block normal form** (Relay's ``check_basic_block_normal_form``):
  no compound node is used from two blocks.

Atoms: variables, globals, operators, constructors, primitive functions
(FuseOps' kernels) and -- in basic block form only -- constants.
Constants are compound in A-normal form (Relay binds them too).
"""

from __future__ import annotations

from .adt import Constructor
from .expr import (Call, Constant, Expr, Function, GlobalVar, If, Let, Match, Op, RefCreate,
                   RefRead, RefWrite, Tuple, TupleGetItem, Var)
from .feature import Feature, detect_feature
from .module import IRModule

__all__ = ["SAME_BLOCK", "block_edges", "is_primitive_function", "is_atom",
           "a_normal_form_violations", "basic_block_violations",
           "check_a_normal_form", "check_basic_block_normal_form"]

#: the child is evaluated in its user's block (otherwise: the index of the
#: new block the user opens for it)
SAME_BLOCK = -1


def is_primitive_function(e: Expr) -> bool:
    """A FuseOps kernel (``Primitive=1``; the IR layer does not import the
    passes)."""
    return isinstance(e, Function) and bool(e.attrs.get("Primitive", 0))


def is_atom(e: Expr, *, constants: bool) -> bool:
    """``e`` is never bound by a normal form (``constants``: nor are
    constants)."""
    if isinstance(e, (Var, GlobalVar, Op, Constructor)):
        return True
    if isinstance(e, Constant):
        return constants
    return is_primitive_function(e)


def block_edges(node: Expr, *, let_body_scope: bool = False) -> list[tuple[Expr, int]]:
    """The children ``node`` evaluates (binding variables are not), in
    evaluation order, each with :data:`SAME_BLOCK` or the index of the new
    block ``node`` opens for it (an ``if``: 0 and 1; a ``match``: one per
    clause; a function: 0 for its body; primitive functions: none).
    ``let_body_scope`` gives a let's body index 0 too: a scope that is not
    a new block, for passes that insert bindings at its start."""
    if isinstance(node, Call):
        return [(node.op, SAME_BLOCK)] + [(a, SAME_BLOCK) for a in node.args]
    if isinstance(node, Tuple):
        return [(f, SAME_BLOCK) for f in node.fields]
    if isinstance(node, TupleGetItem):
        return [(node.tuple_value, SAME_BLOCK)]
    if isinstance(node, Function):
        return [] if is_primitive_function(node) else [(node.body, 0)]
    if isinstance(node, Let):
        return [(node.value, SAME_BLOCK), (node.body, 0 if let_body_scope else SAME_BLOCK)]
    if isinstance(node, If):
        return [(node.cond, SAME_BLOCK), (node.true_branch, 0), (node.false_branch, 1)]
    if isinstance(node, Match):
        return [(node.data, SAME_BLOCK)] + [(c.rhs, i) for i, c in enumerate(node.clauses)]
    if isinstance(node, RefCreate):
        return [(node.value, SAME_BLOCK)]
    if isinstance(node, RefRead):
        return [(node.ref, SAME_BLOCK)]
    if isinstance(node, RefWrite):
        return [(node.ref, SAME_BLOCK), (node.value, SAME_BLOCK)]
    return []


def _roots(x: Expr | IRModule) -> list[tuple[str, Expr]]:
    """(where, body) of each function body to check."""
    if isinstance(x, IRModule):
        return [(f"@{gv.name}", fn.body) for gv, fn in x.functions.items()
                if not is_primitive_function(fn)]
    if isinstance(x, Function) and not is_primitive_function(x):
        return [("fn", x.body)]
    return [("expr", x)]


# ------------------------------------------------------------ A-normal form

def _operands(value: Expr) -> list[Expr]:
    """The operands of a let value that A-normal form requires atomic."""
    return [c for c, kind in block_edges(value) if kind == SAME_BLOCK]


def a_normal_form_violations(x: Expr | IRModule) -> list[str]:
    """Every way ``x`` (an expression, a function or a module) is not in
    A-normal form, as messages (empty when it is)."""
    problems: list[str] = []
    for where, body in _roots(x):
        blocks = [body]
        while blocks:
            e = blocks.pop()
            while isinstance(e, Let):
                value = e.value
                if isinstance(value, Let):
                    problems.append(f"{where}: %{e.var.name_hint} is bound to a let")
                elif not is_atom(value, constants=True):
                    for op in _operands(value):
                        if not is_atom(op, constants=False):
                            problems.append(f"{where}: the value of %{e.var.name_hint} has a "
                                            f"compound operand ({type(op).__name__})")
                    blocks.extend(c for c, kind in block_edges(value) if kind != SAME_BLOCK)
                e = e.body
            if not is_atom(e, constants=False):
                problems.append(f"{where}: a block ends in {type(e).__name__}, not an atom")
        if Feature.fGraph in detect_feature(body):
            problems.append(f"{where}: a compound node is shared (graph form)")
    return problems


def check_a_normal_form(x: Expr | IRModule) -> None:
    """AssertionError naming the first violation of A-normal form."""
    problems = a_normal_form_violations(x)
    assert not problems, problems[0]


# ------------------------------------------------------------ basic blocks

def basic_block_violations(x: Expr | IRModule) -> list[str]:
    """Every compound node of ``x`` used from more than one block, as
    messages (empty when ``x`` is in basic block normal form)."""
    problems: list[str] = []
    for where, body in _roots(x):
        # each (node, block) pair once: a node is walked once per block it
        # is reached from, so a node reached from two blocks is caught
        first_block: dict[Expr, object] = {}
        shared: list[Expr] = []
        seen: set[tuple[int, object]] = set()
        stack: list[tuple[Expr, object]] = [(body, "root")]
        while stack:
            node, block = stack.pop()
            key = (id(node), block)
            if key in seen:
                continue
            seen.add(key)
            if is_atom(node, constants=True):
                continue
            known = first_block.setdefault(node, block)
            if known != block and node not in shared:
                shared.append(node)
            for child, kind in reversed(block_edges(node)):
                stack.append((child, block if kind == SAME_BLOCK else (id(node), kind)))
        for node in shared:
            problems.append(f"{where}: a {type(node).__name__} is used from more than one "
                            f"block")
    return problems


def check_basic_block_normal_form(x: Expr | IRModule) -> None:
    """AssertionError naming the first node shared between blocks."""
    problems = basic_block_violations(x)
    assert not problems, problems[0]
