"""The indexed dataflow graph of an expression, with its post-dominator tree.

Design note
-----------
Dominator patterns and the grouping of matches (partition, rewrite) need
more than the expression tree: the *users* of each node and its
post-dominators.  This is Relay's ``IndexedGraph<Expr>``:

* nodes are numbered in post-order (:func:`aot.ir.visitor.post_order`,
  function bodies included), so every input has a lower number than its
  users and the root is last;
* ``inputs[i]`` lists the operands of node ``i`` in Relay's order (a call's
  callee then its arguments; a function's parameters then its body; a
  let's value, variable, body; a match's scrutinee then the clause bodies),
  one entry per use; ``outputs[i]`` the reverse edges;
* the root is *external* (its value leaves the graph); every other node's
  immediate post-dominator is the least common ancestor of its users:
  :class:`aot.ir.dominators.PostDomTree`, the tree FuseOps uses, whose
  binary-lifting ancestor tables keep heavily shared nodes (an operator, a
  weight used by every layer of a 10,000-deep chain) O(log n) per query
  instead of O(depth).

Everything is iterative; building is O(n log n).
"""

from __future__ import annotations

from ..dominators import ForwardGraph, PostDomTree
from ..expr import Expr, Let, Match
from ..visitor import children, post_order


def dataflow_inputs(e: Expr) -> tuple[Expr, ...]:
    """The operands of ``e`` as edges of the dataflow graph: its
    :func:`~aot.ir.visitor.children` but in Relay's order for a let (value,
    variable, body) and without a match's pattern variables (they are
    bound, not used)."""
    if isinstance(e, Let):
        return (e.value, e.var, e.body)
    if isinstance(e, Match):
        return (e.data, *(c.rhs for c in e.clauses))
    return children(e)


class ExprGraph:
    """Nodes, use edges and post-dominators of one expression."""

    def __init__(self, root: Expr) -> None:
        self.root = root
        self.nodes: list[Expr] = post_order(root)
        self.index: dict[Expr, int] = {e: i for i, e in enumerate(self.nodes)}
        self.inputs: list[list[int]] = [[] for _ in self.nodes]
        self.outputs: list[list[int]] = [[] for _ in self.nodes]
        for i, e in enumerate(self.nodes):
            for operand in dataflow_inputs(e):
                j = self.index[operand]
                self.inputs[i].append(j)
                self.outputs[j].append(i)
        self._post_dominators()

    # ------------------------------------------------------------ post-dominators
    def _post_dominators(self) -> None:
        """The post-dominator tree of the use edges, the root external."""
        forward = ForwardGraph(self.outputs, [False] * len(self.nodes))  # read only
        forward.extern[self.index[self.root]] = True
        self.tree = PostDomTree.build(forward)
        self.dom_children: list[list[int]] = [[] for _ in self.nodes]
        for i, parent in enumerate(self.tree.parent):
            if parent >= 0:
                self.dom_children[parent].append(i)

    # ------------------------------------------------------------ queries
    def __len__(self) -> int:
        return len(self.nodes)

    def __contains__(self, e: Expr) -> bool:
        return e in self.index

    def inputs_of(self, e: Expr) -> list[Expr]:
        return [self.nodes[j] for j in self.inputs[self.index[e]]]

    def outputs_of(self, e: Expr) -> list[Expr]:
        return [self.nodes[j] for j in self.outputs[self.index[e]]]

    def dominator_subtree(self, e: Expr) -> list[Expr]:
        """Every node that ``e`` post-dominates (strictly), depth first."""
        out: list[Expr] = []
        stack = list(reversed(self.dom_children[self.index[e]]))
        while stack:
            i = stack.pop()
            out.append(self.nodes[i])
            stack.extend(reversed(self.dom_children[i]))
        return out

    def post_dominates(self, a: Expr, b: Expr) -> bool:
        """``a`` strictly post-dominates ``b``: every path from ``b`` to the
        root goes through ``a``."""
        return self.tree.post_dominates(self.index[a], self.index[b])
