"""Grouping the matches of a pattern in an expression (for rewrite and partition).

Design note
-----------
Relay's ``PatternGrouper``.  Every node of the expression's dataflow graph
is tried as the root of a match, from the root of the expression down
(reverse post-order), skipping nodes already inside a group, anything
inside a function that an earlier partition made
(``PartitionedFromPattern``) and nodes the pattern cannot match at its
root (:mod:`~.dispatch`: an ``add`` pattern is not tried on a ``relu``).
A match becomes a :class:`Group`:

* *inputs*: the expressions matched by the pattern's leaves (wildcards,
  variables, ``is_expr``), or the arguments/fields of calls and tuples
  whose pattern accepts any arguments (``is_op("concatenate")(None)``),
  in the order of the pattern's post-order, each once.  Operators,
  function literals and *fuzzy* matches are never inputs: nodes matched by
  a dominator pattern's parent or path, and everything inside a function
  matched by a function pattern (its parameters included).  Nor is a node
  that a call, tuple, projection, function, if or let pattern matched,
  even when a wildcard matched it too (``multiply(add(a, b), c)`` on
  ``multiply(%s, %s)`` with ``%s = add(...)``): it is computed inside the
  group.  (Relay passes such a node in, and the group loses the ``add``.)
  A constant matched by ``is_constant()`` (or by ``is_expr`` of a
  constant) is embedded in the group, not passed.
* *function* (built when first asked for: only partitioning needs it):
  the matched sub-graph with every input replaced by a fresh
  parameter (``FunctionVar_<group>_<n>``, annotated with the input's type
  when it has one), and a name listing the nodes in post-order
  (``nn.conv2d_nn.bias_add_nn.relu_``): the ``PartitionedFromPattern``
  attribute.
* a match is rejected when it *overlaps* an earlier group (shares a
  computing node) or when a node inside it, other than its root, is used
  outside it by a node that does not flow back into the root (the root
  does not post-dominate that user): cutting it out would then need the
  value twice.  Operators, constants, functions, variables, globals and
  constructors are shared freely (Relay also refuses a group whose
  function literal captures a variable used elsewhere; nothing is computed
  twice there, so we accept it).

``assignment`` maps each interior node of each group to the group id; a
group is rewritten when the mutator reaches its ``root``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from inspect import isgeneratorfunction
from types import GeneratorType
from typing import Any

from ..adt import Constructor, Pattern, PatternConstructor, PatternTuple, PatternVar
from ..expr import Call, Constant, Expr, Function, GlobalVar, Match, Op, Tuple, Var
from ..module import IRModule
from ..visitor import VISIT_METHOD, ExprMutator, ExprVisitor, Visit, post_order
from .dispatch import may_match, root_keys
from .graph import ExprGraph
from .matcher import DFPatternMatcher
from .patterns import (AltPattern, AttrPattern, CallPattern, ConstantPattern, DataTypePattern,
                       DFPattern, DominatorPattern, ExprPattern, FunctionPattern, IfPattern,
                       LetPattern, ShapePattern, TupleGetItemPattern, TuplePattern, TypePattern)

PARTITIONED_FROM_PATTERN = "PartitionedFromPattern"

#: patterns that match an expression by its structure (its operands are
#: matched by sub-patterns); what they match is computed inside the group.
_STRUCTURAL = (CallPattern, TuplePattern, TupleGetItemPattern, FunctionPattern, IfPattern,
               LetPattern)

#: nodes a group may share with the rest of the program: nothing is
#: computed twice if they are
_SHARED = (Op, Function, Constant, Var, GlobalVar, Constructor)


@dataclass(frozen=True, eq=False)
class Group:
    gid: int
    #: the expression the pattern matched
    root: Expr
    #: the matched expressions, per pattern (before any rewrite)
    node_map: dict[DFPattern, list[Expr]]
    #: expressions passed to the extracted function, one per parameter
    args: tuple[Expr, ...]
    #: each of ``args`` -> its parameter
    params: dict[Expr, Var] = field(repr=False)

    @cached_property
    def _extracted(self) -> tuple[Function, str]:
        # only partitioning needs the function: built on first use
        extractor = _Extractor(self.params)
        body = extractor.visit(self.root)
        return Function(tuple(self.params.values()), body), "".join(extractor.parts)

    @property
    def function(self) -> Function:
        """The matched sub-graph as a function of ``args``."""
        return self._extracted[0]

    @property
    def name(self) -> str:
        """The ``PartitionedFromPattern`` name."""
        return self._extracted[1]


def pattern_children(p: DFPattern) -> tuple[DFPattern, ...]:
    """The sub-patterns of ``p``, in Relay's order."""
    if isinstance(p, CallPattern):
        return (p.op, *(p.args or ()))
    if isinstance(p, FunctionPattern):
        return (*(p.params or ()), p.body)
    if isinstance(p, TuplePattern):
        return p.fields or ()
    if isinstance(p, TupleGetItemPattern):
        return (p.tuple,)
    if isinstance(p, IfPattern):
        return (p.cond, p.true_branch, p.false_branch)
    if isinstance(p, LetPattern):
        return (p.var, p.value, p.body)
    if isinstance(p, AltPattern):
        return (p.left, p.right)
    if isinstance(p, (TypePattern, DataTypePattern, ShapePattern, AttrPattern)):
        return (p.pattern,)
    if isinstance(p, DominatorPattern):
        return (p.parent, p.path, p.child)
    return ()


def pattern_post_order(root: DFPattern) -> list[DFPattern]:
    """Every sub-pattern once, children first."""
    order: list[DFPattern] = []
    seen: set[DFPattern] = set()
    stack: list[tuple[DFPattern, bool]] = [(root, False)]
    while stack:
        p, expanded = stack.pop()
        if expanded:
            order.append(p)
            continue
        if p in seen:
            continue
        seen.add(p)
        stack.append((p, True))
        for child in reversed(pattern_children(p)):
            if child not in seen:
                stack.append((child, False))
    return order


class _Extractor(ExprMutator):
    """Copies the matched sub-graph with inputs replaced by parameters and
    names it after the nodes it visits."""

    def __init__(self, inputs: dict[Expr, Var]) -> None:
        super().__init__()
        self.memo.update(inputs)
        self.parts: list[str] = []

    def _named(method: Any, label: Any) -> Any:  # type: ignore[misc]
        def visit(self: _Extractor, node: Expr) -> Any:
            out = yield from method(self, node)
            self.parts.append(label(node))
            return out
        return visit

    visit_tuple = _named(ExprMutator.visit_tuple, lambda n: "Tuple_")
    visit_function = _named(ExprMutator.visit_function, lambda n: "Function")
    visit_call = _named(ExprMutator.visit_call,
                        lambda n: f"{n.op.name}_" if isinstance(n.op, Op) else "Call_")
    visit_let = _named(ExprMutator.visit_let, lambda n: "Let_")
    visit_if = _named(ExprMutator.visit_if, lambda n: "If_")
    visit_tuple_getitem = _named(ExprMutator.visit_tuple_getitem,
                                 lambda n: f"TupleGetItem{n.index}_")
    visit_match = _named(ExprMutator.visit_match, lambda n: "Match_")
    del _named


class _Reach(ExprVisitor):
    """The nodes :class:`_Extractor` would copy, without copying: everything
    reachable from the root through the mutator's edges (a match's pattern
    constructors included) that is not an input."""

    def __init__(self, inputs: dict[Expr, Var]) -> None:
        super().__init__()
        self.memo.update(dict.fromkeys(inputs))

    def visit_match(self, node: Match) -> Visit:
        yield node.data
        for clause in node.clauses:
            for sub in _pattern_nodes(clause.lhs):
                yield sub
            yield clause.rhs


def _pattern_nodes(p: Pattern) -> list[Expr]:
    """The variables and constructors of a match pattern, in the order
    :meth:`ExprMutator.visit_pattern` visits them."""
    out: list[Expr] = []
    stack = [p]
    while stack:
        q = stack.pop()
        if isinstance(q, PatternVar):
            out.append(q.var)
        elif isinstance(q, PatternConstructor):
            out.append(q.constructor)
            stack.extend(reversed(q.patterns))
        elif isinstance(q, PatternTuple):
            stack.extend(reversed(q.patterns))
    return out


class PatternGrouper:
    """Finds the groups of ``pattern`` in ``root`` (see the note)."""

    def __init__(self, pattern: DFPattern, root: Expr, mod: IRModule | None = None,
                 graph: ExprGraph | None = None) -> None:
        self.pattern = pattern
        self.root = root
        assert graph is None or graph.root is root, "the graph of another expression"
        self.graph = graph if graph is not None else ExprGraph(root)
        self.matcher = DFPatternMatcher(root, mod, self.graph)
        self.pattern_order = pattern_post_order(pattern)
        self._leaves = {p for p in self.pattern_order if not pattern_children(p)}
        self._has_fuzzy = any(isinstance(p, (DominatorPattern, FunctionPattern))
                              for p in self.pattern_order)
        self.groups: dict[int, Group] = {}
        self.assignment: dict[Expr, int] = {}
        self._graph_number = 0

    def run(self) -> PatternGrouper:
        pre_partitioned: set[Expr] = set()
        keys = root_keys(self.pattern)
        for node in reversed(self.graph.nodes):
            if node in self.assignment:
                continue
            if isinstance(node, Function) and node.attrs.get(PARTITIONED_FROM_PATTERN) is not None:
                pre_partitioned.add(node)
                pre_partitioned.update(post_order(node.body))
            if node not in pre_partitioned and may_match(keys, node) \
                    and self.matcher.match(self.pattern, node):
                self._create_group(node)
        return self

    def group_at(self, node: Expr) -> Group | None:
        """The group whose root is ``node``, if any."""
        gid = self.assignment.get(node)
        if gid is None:
            return None
        group = self.groups[gid]
        return group if group.root is node else None

    # ------------------------------------------------------------ one group
    def _fuzzy(self, node_map: dict[DFPattern, list[Expr]]) -> set[Expr]:
        fuzzy: set[Expr] = set()
        if not self._has_fuzzy:
            return fuzzy
        for p in self.pattern_order:
            if isinstance(p, DominatorPattern):
                for q in (p.parent, p.path):
                    fuzzy.update(node_map.get(q, ()))
            elif isinstance(p, FunctionPattern):
                for f in node_map.get(p, ()):
                    assert isinstance(f, Function)
                    fuzzy.update(f.params)  # even unused ones: binders are never inputs
                    fuzzy.update(post_order(f.body))
        return fuzzy

    def _inputs(self, node_map: dict[DFPattern, list[Expr]], graph_number: int
                ) -> dict[Expr, Var]:
        fuzzy = self._fuzzy(node_map)
        computed = {e for p, es in node_map.items() if isinstance(p, _STRUCTURAL) for e in es}
        inputs: dict[Expr, Var] = {}

        def make_input(e: Expr, p: DFPattern) -> None:
            if e in fuzzy or e in computed or e in inputs or isinstance(e, (Op, Function)) \
                    or _embeds_constant(e, p):
                return
            name = f"FunctionVar_{graph_number}_{len(inputs)}"
            inputs[e] = Var(name, e.checked_type)

        for p in self.pattern_order:
            matches = node_map.get(p, ())
            if isinstance(p, TuplePattern) and p.fields is None:
                for m in matches:
                    assert isinstance(m, Tuple)
                    for f in m.fields:
                        make_input(f, p)
            elif isinstance(p, CallPattern) and p.args is None:
                for m in matches:
                    assert isinstance(m, Call)
                    for a in m.args:
                        make_input(a, p)
            elif p in self._leaves:
                for m in matches:
                    make_input(m, p)
        return inputs

    def _create_group(self, root: Expr) -> None:
        node_map = self.matcher.node_map()
        inputs = self._inputs(node_map, self._graph_number)
        self._graph_number += 1
        reached = _Reach(inputs)
        reached.visit(root)
        interior = [e for e in reached.memo if e not in inputs]
        for e in interior:
            if isinstance(e, _SHARED):
                continue
            if e in self.assignment:
                return  # overlaps an earlier group
            if e is root:
                continue
            for user in self.graph.outputs_of(e):
                if user not in reached.memo and not self.graph.post_dominates(root, user):
                    return  # an inner value escapes the group
        gid = len(self.groups) + 1
        self.groups[gid] = Group(gid, root, node_map, tuple(inputs), inputs)
        for e in interior:
            self.assignment[e] = gid


def _embeds_constant(e: Expr, p: DFPattern) -> bool:
    if not isinstance(e, Constant):
        return False
    return isinstance(p, ConstantPattern) or (
        isinstance(p, ExprPattern) and isinstance(p.expr, Constant))


def group_matches(pattern: DFPattern, root: Expr, mod: IRModule | None = None,
                  graph: ExprGraph | None = None) -> PatternGrouper:
    """The groups of ``pattern`` in ``root`` (``graph``: ``root``'s graph,
    if already built)."""
    return PatternGrouper(pattern, root, mod, graph).run()



class GroupMutator(ExprMutator):
    """An ExprMutator that hands every node, once its children are
    rebuilt, to :meth:`after` (``pre`` is the original node, ``post`` the
    rebuilt one); rewrite and partition replace group roots there."""

    def after(self, pre: Expr, post: Expr) -> Expr:
        return post


def _hooked(base: Any) -> Any:
    if not isgeneratorfunction(base):
        # a leaf (variable, constant, operator): no generator per node
        def visit_leaf(self: GroupMutator, node: Expr) -> Any:
            out = base(self, node)
            assert not isinstance(out, GeneratorType)
            return self.after(node, out)
        return visit_leaf

    def visit(self: GroupMutator, node: Expr) -> Any:
        out = yield from base(self, node)
        return self.after(node, out)
    return visit


for _name in sorted(set(VISIT_METHOD.values())):
    setattr(GroupMutator, _name, _hooked(getattr(ExprMutator, _name)))
del _name
