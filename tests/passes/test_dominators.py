"""aot.ir.dominators: post-dominator trees and nodes_between on a
table of small graphs, checked against the definition by brute force on
random DAGs (hypothesis), and a 10,000-node chain and diamond ladder."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aot.ir.dominators import ForwardGraph, PostDomTree, nodes_between


def graph(n: int, edges: list[tuple[int, int]], extern: tuple[int, ...] = ()) -> ForwardGraph:
    g = ForwardGraph()
    for _ in range(n):
        g.add_node()
    for a, b in edges:
        g.add_edge(a, b)
    for i in extern:
        g.extern[i] = True
    return g


# ------------------------------------------------------------ the definition

def post_dominators(g: ForwardGraph) -> list[set[int]]:
    """PD(i): the nodes every path from i to an exit passes through (i
    excluded).  Exits: nodes used outside (extern) and nodes without
    consumers; an extern node escapes at once, so it has none."""
    pd: list[set[int]] = [set() for _ in range(g.size)]
    for i in range(g.size - 1, -1, -1):
        users = g.outputs[i]
        if g.extern[i] or not users:
            continue
        common = None
        for u in users:
            through = {u} | pd[u]
            common = through if common is None else common & through
        pd[i] = common or set()
    return pd


def brute_parent(g: ForwardGraph) -> list[int]:
    """The immediate post-dominator: the post-dominator nearest to i (all
    of them lie on every path, and a path visits nodes in increasing
    order)."""
    return [min(s) if s else -1 for s in post_dominators(g)]


def on_a_path(g: ForwardGraph, src: int, sink: int) -> list[int]:
    """Nodes on some path from src to sink (src excluded, sink included)."""
    reach = {src}
    for i in range(src, g.size):
        if i in reach:
            reach.update(g.outputs[i])
    back = {sink}
    for i in range(sink, -1, -1):
        if any(u in back for u in g.outputs[i]):
            back.add(i)
    return sorted((reach & back) - {src})


# ------------------------------------------------------------------ table

TABLE = {
    # name: (size, edges, extern, expected parent)
    "chain": (3, [(0, 1), (1, 2)], (), [1, 2, -1]),
    "diamond": (4, [(0, 1), (0, 2), (1, 3), (2, 3)], (), [3, 3, 3, -1]),
    "diamond_with_extern_side": (4, [(0, 1), (0, 2), (1, 3), (2, 3)], (1,), [-1, -1, 3, -1]),
    "two_uses_of_one_node": (2, [(0, 1), (0, 1)], (), [1, -1]),
    "fork_without_join": (3, [(0, 1), (0, 2)], (), [-1, -1, -1]),
    "extern_root": (2, [(0, 1)], (0,), [-1, -1]),
    "skip_edge": (3, [(0, 1), (1, 2), (0, 2)], (), [2, 2, -1]),
    "nested_diamonds": (6, [(0, 1), (0, 4), (1, 2), (1, 3), (2, 4), (3, 4), (4, 5)], (),
                        [4, 4, 4, 4, 5, -1]),
}


def test_table() -> None:
    for name, (n, edges, extern, want) in TABLE.items():
        g = graph(n, edges, extern)
        tree = PostDomTree.build(g)
        assert list(tree.parent) == want, name
        assert list(tree.parent) == brute_parent(g), name
        for i, p in enumerate(tree.parent):
            assert tree.depth[i] == (1 if p < 0 else tree.depth[p] + 1), name


def test_nodes_between() -> None:
    g = graph(*TABLE["nested_diamonds"][:3])
    assert nodes_between(g, 0, 4) == [1, 2, 3, 4]
    assert nodes_between(g, 1, 4) == [2, 3, 4]
    assert nodes_between(g, 0, 5) == [1, 2, 3, 4, 5]
    assert nodes_between(g, 4, 5) == [5]


def test_edges_go_forward() -> None:
    g = graph(2, [])
    with pytest.raises(AssertionError):
        g.add_edge(1, 0)


@st.composite
def dags(draw) -> ForwardGraph:
    n = draw(st.integers(1, 12))
    edges = []
    for j in range(1, n):
        for i in draw(st.lists(st.integers(0, j - 1), max_size=3)):
            edges.append((i, j))
    extern = tuple(draw(st.sets(st.integers(0, n - 1), max_size=2)))
    return graph(n, edges, extern)


@settings(max_examples=200, deadline=None)
@given(dags())
def test_random_dags_match_the_definition(g: ForwardGraph) -> None:
    tree = PostDomTree.build(g)
    assert list(tree.parent) == brute_parent(g)
    pd = post_dominators(g)
    for src in range(g.size):
        for sink in sorted(pd[src]):
            assert nodes_between(g, src, sink) == on_a_path(g, src, sink)
        for other in range(g.size):
            assert tree.post_dominates(other, src) == (other in pd[src])


def ancestors(tree: PostDomTree, i: int) -> list[int]:
    """``i`` and its ancestors, climbing one level at a time."""
    out = []
    while i >= 0:
        out.append(i)
        i = tree.parent[i]
    return out


@settings(max_examples=100, deadline=None)
@given(dags())
def test_lca_and_ancestor_tables_match_climbing(g: ForwardGraph) -> None:
    tree = PostDomTree.build(g)
    for a in range(g.size):
        line = ancestors(tree, a)
        for steps in range(len(line) + 2):
            want = line[steps] if steps < len(line) else -1
            assert tree.ancestor(a, steps) == want
        for b in range(g.size):
            common = [x for x in line if x in ancestors(tree, b)]
            assert tree.lca(a, b) == (common[0] if common else -1)


def test_ten_thousand_node_chain_and_ladder() -> None:
    n = 10_000
    chain = graph(n, [(i, i + 1) for i in range(n - 1)])
    tree = PostDomTree.build(chain)
    assert tree.parent[0] == 1 and tree.depth[0] == n
    # a ladder of diamonds: 0 -> {1, 2} -> 3 -> {4, 5} -> 6 ...
    edges = []
    for k in range(0, n - 3, 3):
        edges += [(k, k + 1), (k, k + 2), (k + 1, k + 3), (k + 2, k + 3)]
    size = edges[-1][1] + 1
    ladder = graph(size, edges)
    tree = PostDomTree.build(ladder)
    assert all(tree.parent[k] == k + 3 for k in range(0, size - 3, 3))
    assert nodes_between(ladder, 0, size - 1) == list(range(1, size))


def let_chain_graph(n: int) -> ForwardGraph:
    """The dataflow of ``let %x1 = f(%s); ...; let %xn = f(%s); ...`` with
    one node ``%s`` (0) used by every value: values 1..n, the let of value
    k is node 2n+1-k and has the next let as its body.  Each next user of
    %s sits one level deeper under the LCA of the previous ones (the
    outermost let): climbing one level at a time made this quadratic."""
    g = graph(2 * n + 1, [])
    for k in range(1, n + 1):
        g.add_edge(0, k)
    for k in range(1, n + 1):
        g.add_edge(k, 2 * n + 1 - k)
        if k < n:
            g.add_edge(2 * n - k, 2 * n + 1 - k)
    return g


def test_node_used_by_every_layer_of_a_ten_thousand_deep_let_chain() -> None:
    n = 10_000
    g = let_chain_graph(n)
    tree = PostDomTree.build(g)
    outermost = 2 * n
    assert tree.parent[0] == outermost
    assert all(tree.parent[k] == 2 * n + 1 - k for k in range(1, n + 1))
    assert all(tree.parent[2 * n + 1 - k] == 2 * n + 2 - k for k in range(2, n + 1))
    assert tree.parent[outermost] == -1 and tree.depth[n] == n + 1
    assert tree.post_dominates(outermost, n) and not tree.post_dominates(n, outermost)
    assert tree.lca(1, n) == outermost and tree.ancestor(n, n) == outermost
    small = let_chain_graph(30)
    assert list(PostDomTree.build(small).parent) == brute_parent(small)
