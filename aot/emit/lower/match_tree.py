"""A Relay ``match`` compiled to a decision tree (C code ``switch``es on tags).

Design note
-----------
**Output.**  A :data:`Tree` is a :class:`Switch` (test the constructor tag of
the ADT object at a :data:`Path` below the scrutinee, one subtree per tag,
plus a ``default`` for the tags no case lists), a :class:`Leaf` (clause
``clause`` matches; its pattern variables are bound to the objects at their
paths) or :class:`Fail` (no clause matches: an incomplete ``match?``).  A
path is a tuple of field indices; constructor fields and tuple fields are the
same kind of step, so ``(1, 0)`` is "field 0 of field 1 of the scrutinee".

**Algorithm** (Maranget, "Compiling pattern matching to good decision
trees", 2008).  The state is a *clause matrix*: one column per path still to
be examined, one row per clause that can still match, in source order.  A
cell is ``None`` (a wildcard or a variable: variables never test anything,
their bindings are read off the original pattern, see below) or a
constructor pattern.  Tuple patterns never fail (the type checker has made
the scrutinee a tuple of that arity), so a column holding a tuple pattern is
at once replaced by one column per tuple field, rows with a wildcard there
getting wildcards in every new column; a column of wildcards only is
dropped (nothing in it can fail).  Then, for a matrix ``M``:

1. no rows: ``Fail``;
2. row 0 has wildcards only: ``Leaf(row 0)``;
3. otherwise choose a column ``c`` in which row 0 has a constructor (the
   column must be tested before row 0 can be accepted, so the test is never
   wasted) and emit ``Switch(path(c))``.  For each constructor ``K`` that
   appears in column ``c`` (in tag order) the case is the *specialised*
   matrix ``S(K, M)``: the rows with ``K`` there (their sub-patterns become
   columns ``path(c) + (i,)``) or a wildcard (wildcards in those new
   columns); rows with another constructor are gone.  The ``default`` is the
   matrix of the rows with a wildcard in column ``c``, column removed; it is
   ``None`` when column ``c`` names every constructor of the type (no value
   can reach it).

The column choice is Maranget's *needed prefix* heuristic ("p"): among the
columns row 0 needs, the one whose constructors run down the most
consecutive rows from the top (testing it settles the most rows at once);
ties go to the leftmost column, so output is deterministic.

**First match wins.**  Specialisation and defaulting keep the surviving
rows in their original order and only remove rows that cannot match a value
with the tested tag.  So at a ``Leaf`` every clause that preceded the leaf's
clause has been removed -- it cannot match any value that reaches the leaf
-- and the leaf's clause matches all of them (its remaining cells are
wildcards).  Redundant clauses simply never appear in a leaf.

**No repeated tests.**  A switched column is removed from every child
matrix and new columns are strict extensions of it, so no root-to-leaf
branch tests a path twice.  Subtrees are not shared (no hash-consing): the
result is a tree, as the ``switch`` statements the C generator prints.

**Size.**  Every switch on a branch tests a distinct path at which some
clause has a constructor pattern, so the depth is at most ``P``, the number
of constructor-pattern nodes in all clauses, and a switch has at most ``K``
children (``K`` = most constructors of a type matched on): at most ``K**P``
leaves.  That is exponential, and for some inputs every decision tree is:
with ``n`` pairs of boolean-like fields and clauses ``(.., T@x_i, .., T@y_i,
..) => i`` (plus a catch-all), each of the ``2**n`` values that have exactly
one ``F`` in every pair needs a leaf of its own (a leaf shared by two of
them would have to leave some pair untested, yet that pair decides whether
clause ``i`` fires).  There is no size cap here; real matches are small and
the heuristic keeps ordinary ones linear.  A caller that wants a cap measures
:func:`tree_size` and falls back to clause-by-clause testing.

**Recursion.**  Compilation, :func:`evaluate` and :func:`tree_size` are
loops with explicit work lists: neither deep patterns nor deep trees nor
deep values recurse in Python.  (Trees are as deep as ``P``.)  A
consumer that prints a tree recursively recurses over that depth.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence, Union

from ...ir.adt import (Clause, Constructor, Pattern, PatternConstructor, PatternTuple, PatternVar,
                       PatternWildcard)
from ...ir.expr import Var
from ...values import ConstructorValue

__all__ = ["Path", "Leaf", "Fail", "Switch", "Tree", "compile_match", "evaluate", "tree_size",
           "iter_nodes", "clause_bindings"]

#: Field indices from the scrutinee; ``()`` is the scrutinee itself.
Path = tuple[int, ...]


@dataclass(frozen=True)
class Leaf:
    """Clause ``clause`` (its index in the match) is taken, with each of its
    pattern variables bound to the object at its path (left to right)."""

    clause: int
    bindings: tuple[tuple[Var, Path], ...]


@dataclass(frozen=True)
class Fail:
    """No clause matches (only reachable in an incomplete match)."""


@dataclass(frozen=True)
class Switch:
    """Test the constructor tag of the ADT object at ``path``.  ``cases``
    are ``(tag, subtree)`` sorted by tag; ``default`` handles every other
    tag and is None when the cases cover every constructor of the type."""

    path: Path
    cases: tuple[tuple[int, Tree], ...]
    default: Tree | None


Tree = Union[Leaf, Fail, Switch]

FAIL = Fail()


# ------------------------------------------------------------ the matrix

#: A matrix cell: None for "matches anything", else a constructor pattern.
#: (Tuple patterns are expanded into columns, never stored.)
_Cell = Union[PatternConstructor, None]


@dataclass(frozen=True)
class _Row:
    clause: int
    cells: tuple[_Cell | PatternTuple, ...]


@dataclass(frozen=True)
class _Matrix:
    paths: tuple[Path, ...]
    rows: tuple[_Row, ...]


def _cell(p: Pattern) -> _Cell | PatternTuple:
    if isinstance(p, (PatternWildcard, PatternVar)):
        return None
    assert isinstance(p, (PatternConstructor, PatternTuple)), f"unknown pattern {p!r}"
    return p


def _normalise(m: _Matrix) -> _Matrix:
    """Expand tuple columns into their fields and drop all-wildcard columns
    (repeated until neither applies: tuples may nest)."""
    paths = list(m.paths)
    rows = [list(r.cells) for r in m.rows]
    col = 0
    while col < len(paths):
        tuples = [t for t in (r[col] for r in rows) if isinstance(t, PatternTuple)]
        if tuples:
            arity = len(tuples[0].patterns)
            assert all(len(t.patterns) == arity for t in tuples), \
                f"tuple patterns of different arities at path {paths[col]} (ill-typed match)"
            assert all(r[col] is None or isinstance(r[col], PatternTuple) for r in rows), \
                f"a tuple and a constructor pattern at path {paths[col]} (ill-typed match)"
            for r in rows:
                cell = r[col]
                subs = [None] * arity if cell is None else [_cell(p) for p in cell.patterns]
                r[col:col + 1] = subs
            paths[col:col + 1] = [paths[col] + (i,) for i in range(arity)]
            continue  # look at the first new column (or the next one if arity 0)
        if all(r[col] is None for r in rows):
            del paths[col]
            for r in rows:
                del r[col]
            continue
        col += 1
    return _Matrix(tuple(paths),
                   tuple(_Row(old.clause, tuple(r)) for old, r in zip(m.rows, rows)))


def _specialise(m: _Matrix, col: int, ctor: Constructor) -> _Matrix:
    """The rows that can match ``ctor`` at column ``col``, the column
    replaced by one column per field of ``ctor``."""
    arity = len(ctor.inputs)
    base = m.paths[col]
    rows: list[_Row] = []
    for row in m.rows:
        cell = row.cells[col]
        if cell is None:
            subs: tuple[Any, ...] = (None,) * arity
        else:
            assert isinstance(cell, PatternConstructor)
            if cell.constructor.tag != ctor.tag:
                continue
            if cell.patterns:
                assert len(cell.patterns) == arity, \
                    f"{ctor.name} has {arity} fields, its pattern {len(cell.patterns)}"
                subs = tuple(_cell(p) for p in cell.patterns)
            else:  # `Cons` written without sub-patterns matches any Cons
                subs = (None,) * arity
        rows.append(_Row(row.clause, row.cells[:col] + subs + row.cells[col + 1:]))
    paths = m.paths[:col] + tuple(base + (i,) for i in range(arity)) + m.paths[col + 1:]
    return _normalise(_Matrix(paths, tuple(rows)))


def _default(m: _Matrix, col: int) -> _Matrix:
    """The rows with a wildcard at column ``col``, the column removed."""
    rows = tuple(_Row(r.clause, r.cells[:col] + r.cells[col + 1:])
                 for r in m.rows if r.cells[col] is None)
    return _normalise(_Matrix(m.paths[:col] + m.paths[col + 1:], rows))


def _choose_column(m: _Matrix) -> int:
    """Among the columns row 0 needs (has a constructor in), the one with
    the longest run of constructors from the top; leftmost on ties."""
    best, best_run = -1, 0
    for col, cell in enumerate(m.rows[0].cells):
        if cell is None:
            continue
        run = 0
        for row in m.rows:
            if row.cells[col] is None:
                break
            run += 1
        if run > best_run:
            best, best_run = col, run
    assert best >= 0
    return best


# ------------------------------------------------------------ compilation

@dataclass
class _PendingSwitch:
    """A Switch whose children (node ids) are not built yet."""

    path: Path
    cases: list[tuple[int, int]]
    default: int | None


def clause_bindings(pattern: Pattern) -> tuple[tuple[Var, Path], ...]:
    """Every variable of ``pattern`` with its path, left to right."""
    out: list[tuple[Var, Path]] = []
    stack: list[tuple[Pattern, Path]] = [(pattern, ())]
    while stack:
        p, path = stack.pop()
        if isinstance(p, PatternVar):
            out.append((p.var, path))
        elif isinstance(p, (PatternConstructor, PatternTuple)):
            for i in range(len(p.patterns) - 1, -1, -1):
                stack.append((p.patterns[i], path + (i,)))
    return tuple(out)


def compile_match(clauses: Sequence[Clause],
                  constructors_of: Callable[[Constructor], Sequence[Constructor]]) -> Tree:
    """The decision tree of a ``match`` with these clauses (first matching
    clause wins).  ``constructors_of(c)`` lists every constructor of
    ``c``'s type in tag order."""
    bindings = [clause_bindings(c.lhs) for c in clauses]
    start = _normalise(_Matrix(((),), tuple(_Row(i, (_cell(c.lhs),))
                                            for i, c in enumerate(clauses))))
    siblings: dict[Any, Sequence[Constructor]] = {}  # belong_to -> constructors

    def all_constructors(c: Constructor) -> Sequence[Constructor]:
        known = siblings.get(c.belong_to)
        if known is None:
            known = siblings[c.belong_to] = tuple(constructors_of(c))
            assert [k.tag for k in known] == list(range(len(known))), \
                f"constructors of {c.belong_to} are not in tag order"
        assert known[c.tag].name == c.name, f"{c.name} is not constructor {c.tag} of its type"
        return known

    # Phase 1: expand matrices top-down with an explicit work list.  A node
    # id is its index in `nodes`; children always get larger ids.
    nodes: list[Tree | _PendingSwitch | None] = []
    work: list[tuple[int, _Matrix]] = []

    def new_node(m: _Matrix) -> int:
        nodes.append(None)
        work.append((len(nodes) - 1, m))
        return len(nodes) - 1

    new_node(start)
    while work:
        node_id, m = work.pop()
        if not m.rows:
            nodes[node_id] = FAIL
            continue
        first = m.rows[0]
        if all(cell is None for cell in first.cells):
            nodes[node_id] = Leaf(first.clause, bindings[first.clause])
            continue
        col = _choose_column(m)
        present: dict[int, Constructor] = {}
        for row in m.rows:
            cell = row.cells[col]
            if cell is not None:
                assert isinstance(cell, PatternConstructor)
                present.setdefault(cell.constructor.tag, cell.constructor)
        ctors = all_constructors(first.cells[col].constructor)  # type: ignore[union-attr]
        for c in present.values():
            assert c.belong_to == ctors[0].belong_to, \
                f"constructors of different types at path {m.paths[col]} (ill-typed match)"
        pending = _PendingSwitch(m.paths[col], [], None)
        nodes[node_id] = pending
        for tag in sorted(present):
            pending.cases.append((tag, new_node(_specialise(m, col, ctors[tag]))))
        if len(present) < len(ctors):
            pending.default = new_node(_default(m, col))

    # Phase 2: build bottom-up (reverse id order visits children first).
    built: list[Tree | None] = [None] * len(nodes)
    for node_id in range(len(nodes) - 1, -1, -1):
        node = nodes[node_id]
        if isinstance(node, _PendingSwitch):
            cases = tuple((tag, _built(built, child)) for tag, child in node.cases)
            default = None if node.default is None else _built(built, node.default)
            built[node_id] = Switch(node.path, cases, default)
        else:
            assert node is not None
            built[node_id] = node
    return _built(built, 0)


def _built(built: list[Tree | None], node_id: int) -> Tree:
    tree = built[node_id]
    assert tree is not None
    return tree


# ------------------------------------------------------------ walking

def _value_at(value: Any, path: Path) -> Any:
    for i in path:
        if isinstance(value, ConstructorValue):
            value = value.fields[i]
        else:
            assert isinstance(value, tuple), f"path {path} steps into {value!r}"
            value = value[i]
    return value


def evaluate(tree: Tree, value: Any) -> tuple[int, dict[Var, Any]] | None:
    """Run ``tree`` on an interpreter value: the clause index taken and its
    bindings, or None when the tree reaches ``Fail``.  (The reference for
    the generated C; a value of the wrong type is an assertion failure.)"""
    node: Tree = tree
    while isinstance(node, Switch):
        obj = _value_at(value, node.path)
        assert isinstance(obj, ConstructorValue), f"switch at {node.path} on {obj!r}"
        tag = obj.constructor.tag
        nxt = next((sub for t, sub in node.cases if t == tag), node.default)
        assert nxt is not None, f"tag {tag} of {obj.constructor.name} not covered at {node.path}"
        node = nxt
    if isinstance(node, Fail):
        return None
    assert isinstance(node, Leaf), node
    return node.clause, {var: _value_at(value, path) for var, path in node.bindings}


def iter_nodes(tree: Tree) -> Iterator[Tree]:
    """Every node of ``tree``, pre-order (cases in tag order, then the
    default), without recursion."""
    stack: list[Tree] = [tree]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, Switch):
            if node.default is not None:
                stack.append(node.default)
            stack.extend(sub for _, sub in reversed(node.cases))


def tree_size(tree: Tree) -> int:
    """The number of nodes (switches, leaves and fails) of ``tree``."""
    return sum(1 for _ in iter_nodes(tree))
