"""Matching a dataflow pattern against an expression.

Design note
-----------
This follows Relay's ``DFPatternMatcher`` (src/relay/ir/dataflow_matcher.cc).

*Fast path.*  A pattern that is a tree of the common kinds is matched
by closures compiled once (:mod:`~.compiled`), which decide the same and
fill the same memo; everything below describes the general path, which
they reproduce (``fast=False`` forces it).

*Memo.*  One match fills ``memo: pattern -> [expressions]``.  When a
pattern has matched an expression, it is bound: matching the same pattern
object again succeeds only on the *same* expression (identity), which is
what makes ``x = wildcard(); add(x, x)`` require one shared operand and
what makes a diamond pattern match only a real diamond.  A failed branch
undoes the bindings it made (``matched`` is a stack of bound patterns; a
failure pops it back to its watermark, one memo entry per binding --
Relay erases the pattern's whole entry), so alternation and the
commutative retry start clean.  The memo of a successful match is the
``node_map`` given to rewrite callbacks and used to build partitions.

*Commutativity and association.*  A call pattern of ``add`` or
``multiply`` is tried with its two arguments in both orders.  As in Relay,
a ``divide(multiply(a, b), c)`` pattern also matches
``multiply(a, divide(b, c))`` (either operand), and a
``multiply(divide(a, b), c)`` pattern also matches
``divide(multiply(a, c), b)``.

*Attributes.*  ``has_attr`` compares by field name: on an operator, the
registry column (``TOpPattern``/``pattern`` is the fusion pattern kind,
compared as an int; ``name``, ``arity``, ``family`` also work); on a call,
the fields of its typed attrs (the raw value is converted to the field's
type first, so ``"float32"`` matches a DType field and ``[3, 3]`` a tuple);
on a call of a non-operator, its raw attrs; on a function, its
``FuncAttrs``.  A missing name never matches.

*Types* come from ``checked_type`` (or, for untyped nodes, from typing the
root once: :class:`~aot.ir.pattern.infer.TypeOracle`).

*Dominators.*  ``dominates(parent, path, child)`` matches ``child``, then
walks every input path backwards: an input either matches ``parent`` (with
the memo on, so all paths must reach the *same* parent node) or matches
``path`` (with the memo off, so many nodes may match it) and is walked
further; a path that ends anywhere else fails.  Finally the parent must be
post-dominated by the child.  The walk is an explicit stack, so a path of
10,000 nodes is fine; the matcher otherwise recurses only over the depth
of the *pattern*.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from ..attrs import AttrError, Attrs, RawCallAttrs, field_hints, convert
from ..expr import Call, Constant, Expr, Function, If, Let, Op, Tuple, TupleGetItem, Var
from ..module import IRModule
from ..registry import lookup
from ..structural import structural_equal
from ..types import TensorType
from .compiled import compile_pattern, match_compiled
from .graph import ExprGraph
from .infer import TypeOracle
from .patterns import (AltPattern, AttrPattern, CallPattern, ConstantPattern, DataTypePattern,
                       DFPattern, DominatorPattern, ExprPattern, FunctionPattern, IfPattern,
                       LetPattern, ShapePattern, TupleGetItemPattern, TuplePattern, TypePattern,
                       VarPattern, WildcardPattern)

MISSING = object()
_COMMUTATIVE = frozenset({"add", "multiply"})
#: call patterns of these operators may match calls of the other (see the note)
_REASSOCIATED = frozenset({"divide", "multiply"})


class DFPatternMatcher:
    """Matches patterns against sub-expressions of one root expression."""

    def __init__(self, root: Expr, mod: IRModule | None = None,
                 graph: ExprGraph | None = None, fast: bool = True) -> None:
        self.root = root
        self.fast = fast
        self._graph = graph
        self.types = TypeOracle(root, mod)
        self.memo: dict[DFPattern, list[Expr]] = {}
        self.matched: list[DFPattern] = []
        self.memoize = True

    @property
    def graph(self) -> ExprGraph:
        if self._graph is None:
            self._graph = ExprGraph(self.root)
        return self._graph

    # ------------------------------------------------------------ entry
    def match(self, pattern: DFPattern, expr: Expr) -> bool:
        """Does ``pattern`` match ``expr`` (a sub-expression of the root)?
        Resets the memo; after a match it holds the node map."""
        fast = compile_pattern(pattern) if self.fast else None
        if fast is not None:
            node_map = match_compiled(fast, expr)
            self.memo = node_map or {}
            self.matched = list(self.memo)
            return node_map is not None
        self.memo = {}
        self.matched = []
        self.memoize = True
        return self.visit(pattern, expr)

    def node_map(self) -> dict[DFPattern, list[Expr]]:
        return {p: list(es) for p, es in self.memo.items()}

    # ------------------------------------------------------------ memo
    def _clear(self, watermark: int) -> None:
        """Undo the bindings made since ``watermark`` (each one entry)."""
        for p in reversed(self.matched[watermark:]):
            bound = self.memo[p]
            bound.pop()
            if not bound:
                del self.memo[p]
        del self.matched[watermark:]

    def visit(self, p: DFPattern, e: Expr) -> bool:
        memo = self.memo
        if self.memoize and p in memo:
            # bound once, except a dominator's path pattern (many nodes)
            return any(b is e for b in memo[p])
        matched = self.matched
        watermark = len(matched)
        if _VISIT[type(p)](self, p, e):
            bound = memo.get(p)
            if bound is None:
                memo[p] = [e]
            else:
                bound.append(e)
            matched.append(p)
            return True
        if len(matched) > watermark:
            self._clear(watermark)
        return False

    # ------------------------------------------------------------ leaves
    def _wildcard(self, p: WildcardPattern, e: Expr) -> bool:
        return True

    def _expr(self, p: ExprPattern, e: Expr) -> bool:
        if p.expr is e:
            return True
        if isinstance(p.expr, Op):
            return isinstance(e, Op) and e.name == p.expr.name
        return structural_equal(p.expr, e)

    def _var(self, p: VarPattern, e: Expr) -> bool:
        return isinstance(e, Var) and (not p.name or p.name == e.name_hint)

    def _constant(self, p: ConstantPattern, e: Expr) -> bool:
        return isinstance(e, Constant)

    # ------------------------------------------------------------ structure
    def _many(self, ps: tuple[DFPattern, ...] | None, es: tuple[Expr, ...]) -> bool:
        if ps is None:
            return True
        if len(ps) != len(es):
            return False
        return all(self.visit(p, e) for p, e in zip(ps, es))

    def _call(self, p: CallPattern, e: Expr) -> bool:
        if not isinstance(e, Call):
            return False
        name = _pattern_op_name(p)
        if name is not None and name not in _REASSOCIATED and isinstance(e.op, Op) \
                and e.op.name != name:
            return False  # the common failure, without visiting the operator
        watermark = len(self.matched)
        if self.visit(p.op, e.op):
            inner = len(self.matched)
            if self._many(p.args, e.args):
                return True
            self._clear(inner)
            if _pattern_op_name(p) in _COMMUTATIVE and p.args is not None \
                    and len(p.args) == 2:
                if self._many((p.args[1], p.args[0]), e.args):
                    return True
                self._clear(inner)
            return False
        self._clear(watermark)
        return self._associative(p, e, watermark)

    def _associative(self, p: CallPattern, e: Call, watermark: int) -> bool:
        """Relay's divide/multiply re-association (see the note)."""
        if p.args is None or len(p.args) != 2:
            return False
        name = _pattern_op_name(p)
        if name == "divide":
            inner = p.args[0]
            if isinstance(inner, CallPattern) and _pattern_op_name(inner) == "multiply" \
                    and inner.args is not None and len(inner.args) == 2 \
                    and _expr_op_name(e) == "multiply" \
                    and any(_expr_op_name(a) == "divide" for a in e.args):
                for k in range(2):
                    div = CallPattern(p.op, (inner.args[k], p.args[1]))
                    mul = CallPattern(inner.op, (inner.args[1 - k], div))
                    if self.visit(mul, e):
                        return True
                    self._clear(watermark)
                return False
        if name == "multiply":
            for k in range(2):
                inner = p.args[k]
                if isinstance(inner, CallPattern) and _pattern_op_name(inner) == "divide" \
                        and inner.args is not None and len(inner.args) == 2 \
                        and _expr_op_name(e) == "divide" \
                        and any(_expr_op_name(a) == "multiply" for a in e.args):
                    mul = CallPattern(p.op, (inner.args[0], p.args[1 - k]))
                    div = CallPattern(inner.op, (mul, inner.args[1]))
                    return self.visit(div, e)
        return False

    def _function(self, p: FunctionPattern, e: Expr) -> bool:
        return isinstance(e, Function) and self._many(p.params, e.params) \
            and self.visit(p.body, e.body)

    def _tuple(self, p: TuplePattern, e: Expr) -> bool:
        return isinstance(e, Tuple) and self._many(p.fields, e.fields)

    def _tuple_get_item(self, p: TupleGetItemPattern, e: Expr) -> bool:
        return isinstance(e, TupleGetItem) and (p.index is None or p.index == e.index) \
            and self.visit(p.tuple, e.tuple_value)

    def _if(self, p: IfPattern, e: Expr) -> bool:
        return isinstance(e, If) and self.visit(p.cond, e.cond) \
            and self.visit(p.true_branch, e.true_branch) \
            and self.visit(p.false_branch, e.false_branch)

    def _let(self, p: LetPattern, e: Expr) -> bool:
        return isinstance(e, Let) and self.visit(p.var, e.var) \
            and self.visit(p.value, e.value) and self.visit(p.body, e.body)

    def _alt(self, p: AltPattern, e: Expr) -> bool:
        return self.visit(p.left, e) or self.visit(p.right, e)

    # ------------------------------------------------------------ types
    def _type(self, p: TypePattern, e: Expr) -> bool:
        t = self.types.type_of(e)
        return t is not None and structural_equal(p.type, t) and self.visit(p.pattern, e)

    def _dtype(self, p: DataTypePattern, e: Expr) -> bool:
        t = self.types.type_of(e)
        return isinstance(t, TensorType) and t.dtype == p.dtype and self.visit(p.pattern, e)

    def _shape(self, p: ShapePattern, e: Expr) -> bool:
        t = self.types.type_of(e)
        return isinstance(t, TensorType) and t.shape == p.shape and self.visit(p.pattern, e)

    # ------------------------------------------------------------ attributes
    def _attr(self, p: AttrPattern, e: Expr) -> bool:
        if not self.visit(p.pattern, e):
            return False
        if isinstance(e, Op):
            return all(op_attr_matches(e, k, v) for k, v in p.attrs)
        if isinstance(e, Call):
            return all(call_attr_matches(e.attrs, k, v) for k, v in p.attrs)
        if isinstance(e, Function):
            return all(e.attrs.get(k, MISSING) == v for k, v in p.attrs)
        return False

    # ------------------------------------------------------------ dominators
    def _dominator(self, p: DominatorPattern, e: Expr) -> bool:
        if not self.visit(p.child, e):
            return False
        ok = self._matches_path(p, e)
        self.memoize = True
        return ok and self._dominates_parent(p, e)

    def _path_inputs(self, e: Expr) -> list[Expr]:
        inputs = self.graph.inputs_of(e)
        if isinstance(e, Call):
            inputs = [i for i in inputs if i is not e.op]
        return inputs

    def _matches_path(self, p: DominatorPattern, child: Expr) -> bool:
        """Every input path of ``child`` reaches the parent through nodes
        matching the path pattern (iterative form of Relay's recursion)."""
        first = self._path_inputs(child)
        if not first:
            return False
        done: set[Expr] = set()
        stack = [iter(first)]
        while stack:
            node = next(stack[-1], None)
            if node is None:
                stack.pop()
                continue
            if node in done:
                continue
            done.add(node)
            self.memoize = True
            if self.visit(p.parent, node):
                continue
            self.memoize = False
            if not self.visit(p.path, node):
                return False
            inputs = self._path_inputs(node)
            if not inputs:
                return False
            stack.append(iter(inputs))
        return True

    def _dominates_parent(self, p: DominatorPattern, child: Expr) -> bool:
        """The parent lies in the child's post-dominator subtree."""
        bound = self.memo.get(p.parent)
        if bound:  # always, after a successful path walk
            return self.graph.post_dominates(child, bound[0])
        return any(self.visit(p.parent, node) for node in self.graph.dominator_subtree(child))


_VISIT: dict[type, Any] = {
    WildcardPattern: DFPatternMatcher._wildcard,
    ExprPattern: DFPatternMatcher._expr,
    VarPattern: DFPatternMatcher._var,
    ConstantPattern: DFPatternMatcher._constant,
    CallPattern: DFPatternMatcher._call,
    FunctionPattern: DFPatternMatcher._function,
    TuplePattern: DFPatternMatcher._tuple,
    TupleGetItemPattern: DFPatternMatcher._tuple_get_item,
    IfPattern: DFPatternMatcher._if,
    LetPattern: DFPatternMatcher._let,
    AltPattern: DFPatternMatcher._alt,
    TypePattern: DFPatternMatcher._type,
    DataTypePattern: DFPatternMatcher._dtype,
    ShapePattern: DFPatternMatcher._shape,
    AttrPattern: DFPatternMatcher._attr,
    DominatorPattern: DFPatternMatcher._dominator,
}


def _pattern_op_name(p: CallPattern) -> str | None:
    if isinstance(p.op, ExprPattern) and isinstance(p.op.expr, Op):
        return p.op.expr.name
    return None


def _expr_op_name(e: Expr) -> str | None:
    if isinstance(e, Call) and isinstance(e.op, Op):
        return e.op.name
    return None


# ------------------------------------------------------------ attribute values

_OP_COLUMNS = ("name", "arity", "pattern", "family")


def op_attr_matches(e: Op, key: str, value: Any) -> bool:
    op_def = lookup(e.name)
    if op_def is None:
        return False
    if key == "TOpPattern":
        key = "pattern"
    if key not in _OP_COLUMNS:
        return False
    have = getattr(op_def, key)
    if key == "pattern" and isinstance(value, str):
        return have.name == value.upper()
    return bool(have == value)


def call_attr_matches(attrs: Attrs, key: str, value: Any) -> bool:
    if isinstance(attrs, RawCallAttrs):
        return dict(attrs.items).get(key, MISSING) == value
    if key not in {f.name for f in fields(attrs)}:
        return False
    try:
        wanted = convert(value, field_hints(type(attrs))[key])
    except AttrError:
        return False
    return bool(getattr(attrs, key) == wanted)


def match(pattern: DFPattern, expr: Expr, mod: IRModule | None = None) -> bool:
    """Does ``pattern`` match ``expr``?  (``mod``: where globals the
    expression mentions live, for type patterns on untyped expressions.)"""
    from .patterns import as_pattern
    return DFPatternMatcher(expr, mod).match(as_pattern(pattern), expr)

