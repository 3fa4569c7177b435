"""Indexed forward dataflow graphs and their post-dominator trees.

Design note
-----------
FuseOps (:mod:`aot.passes.fuse_ops`) decides what to fuse from the
*post-dominators* of a dataflow DAG, as Relay does
(``src/relay/transforms/fuse_ops.cc``).  This module holds the two data
structures, independent of the IR:

* :class:`ForwardGraph` numbers the nodes in a topological order (producers
  before consumers; FuseOps uses the evaluation order) and keeps, for each
  node, its *outputs* (the consumers of its value, one entry per use) and
  an ``extern`` flag: the value is also used by something outside the
  graph (the result of a function, an operand of a ``let``, ``if`` or call
  of a closure ...), so it has no post-dominator at all.

* :class:`PostDomTree` gives each node its *immediate post-dominator*:
  the nearest node through which every path from the node to the exit
  passes.  Because the graph is a DAG, one pass in reverse topological
  order suffices (Relay's "single pass via LCA"): every consumer of a node
  already has its tree position, and the node's parent is the least common
  ancestor, in the tree, of all its consumers.  A node that is extern, or
  whose consumers have no common ancestor, has no parent (it is a root of
  the forest).  The LCA uses *binary lifting*: ``up[k][i]`` is the
  2**k-th ancestor of ``i``, filled in as each node gets its parent, so an
  LCA costs O(log n) however far apart its nodes are.  (Climbing one level
  at a time, or the Cooper-Harvey-Kennedy intersect on the numbering, is
  O(depth) per query: a node used by every layer of a 10,000-deep let
  chain, whose running LCA sits at the top while each next user sits
  deeper, made that quadratic.)  :meth:`PostDomTree.post_dominates`
  answers "is ``a`` a strict post-dominator of ``b``" with the same table.

:func:`nodes_between` lists every node on some path from a node to one of
its post-dominators: the nodes a fusion from ``src`` into ``sink`` takes
along.  Everything is iterative: a 10,000-node chain is a 10,000-deep tree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

__all__ = ["ForwardGraph", "PostDomTree", "nodes_between"]


@dataclass(slots=True)
class ForwardGraph:
    """A DAG on nodes ``0 .. size-1`` numbered in topological order (every
    edge goes from a lower to a higher number)."""

    #: ``outputs[i]``: the consumers of node ``i``, one entry per use.
    outputs: list[list[int]] = field(default_factory=list)
    #: ``extern[i]``: node ``i`` is used outside the graph.
    extern: list[bool] = field(default_factory=list)

    @property
    def size(self) -> int:
        return len(self.outputs)

    def add_node(self) -> int:
        self.outputs.append([])
        self.extern.append(False)
        return len(self.outputs) - 1

    def add_edge(self, producer: int, consumer: int) -> None:
        assert producer < consumer, "edges go forward in topological order"
        self.outputs[producer].append(consumer)


@dataclass(frozen=True, slots=True)
class PostDomTree:
    """``parent[i]`` is the immediate post-dominator of node ``i`` (-1 for
    none); ``depth[i]`` its depth in the forest (roots have depth 1);
    ``up[k][i]`` its 2**k-th ancestor (-1 past a root)."""

    parent: tuple[int, ...]
    depth: tuple[int, ...]
    up: tuple[tuple[int, ...], ...]

    @staticmethod
    def build(graph: ForwardGraph) -> PostDomTree:
        n = graph.size
        parent = [-1] * n
        depth = [1] * n
        up = [[-1] * n for _ in range(max(1, n.bit_length()))]
        for i in range(n - 1, -1, -1):
            users = graph.outputs[i]
            if graph.extern[i] or not users:
                continue
            lca = users[0]
            for u in users[1:]:
                lca = _lca(up, depth, lca, u)
                if lca < 0:
                    break
            if lca >= 0:
                parent[i] = lca
                depth[i] = depth[lca] + 1
                _link(up, i, lca)
        return PostDomTree(tuple(parent), tuple(depth), tuple(tuple(row) for row in up))

    def ancestor(self, i: int, steps: int) -> int:
        """The ancestor ``steps`` levels above ``i`` (-1 past a root)."""
        return _lift(self.up, i, steps)

    def lca(self, a: int, b: int) -> int:
        """The least common ancestor of ``a`` and ``b``, or -1."""
        return _lca(self.up, self.depth, a, b)

    def post_dominates(self, a: int, b: int) -> bool:
        """``a`` strictly post-dominates ``b``: ``a`` is a proper ancestor
        of ``b`` in the tree."""
        steps = self.depth[b] - self.depth[a]
        return steps > 0 and _lift(self.up, b, steps) == a


def _link(up: list[list[int]], i: int, parent: int) -> None:
    """Fill ``i``'s column of the ancestor table (its ancestors' are
    complete: they were placed before it)."""
    up[0][i] = parent
    for k in range(1, len(up)):
        mid = up[k - 1][i]
        if mid < 0:
            break
        up[k][i] = up[k - 1][mid]


def _lift(up: Sequence[Sequence[int]], i: int, steps: int) -> int:
    k = 0
    while steps and i >= 0:
        if k == len(up):
            return -1  # 2**k > the number of nodes >= any depth
        if steps & 1:
            i = up[k][i]
        steps >>= 1
        k += 1
    return i


def _lca(up: Sequence[Sequence[int]], depth: Sequence[int], a: int, b: int) -> int:
    """The least common ancestor of ``a`` and ``b`` in the forest, or -1:
    lift the deeper one to the other's depth, then both together by the
    largest jumps that keep them apart."""
    if depth[a] < depth[b]:
        a, b = b, a
    a = _lift(up, a, depth[a] - depth[b])
    if a == b:
        return a
    for k in range(depth[b].bit_length() - 1, -1, -1):
        ua, ub = up[k][a], up[k][b]
        if ua != ub:
            a, b = ua, ub
    return up[0][a]  # -1 when a and b are in different trees


def nodes_between(graph: ForwardGraph, src: int, sink: int) -> list[int]:
    """Every node on a path from ``src`` to ``sink``, ``src`` excluded and
    ``sink`` included, in increasing (topological) order.  ``sink`` must
    post-dominate ``src``, so every path from ``src`` reaches it."""
    assert src != sink
    seen = {sink}
    stack = [u for u in graph.outputs[src]]
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        assert not graph.extern[node] and graph.outputs[node], \
            "sink does not post-dominate src"
        stack.extend(graph.outputs[node])
    return sorted(seen)
