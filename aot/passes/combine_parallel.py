"""Shared machinery of CombineParallelConv2D and CombineParallelDense:
find groups of parallel branches, combine each group into one wide call,
and give every branch its part of the result.

Design note
-----------
As Relay's ``combine_parallel_op.cc``.  An Inception block computes
several convolutions of the same input; one convolution with the weights
concatenated along the output channels computes all of them in one loop
nest (one kernel, the input read once per tile instead of once per
branch).  Terms:

* **region**: the top-level dataflow of a function -- the nodes reachable
  from its body through call arguments, tuple fields and projections.
  Everything this machinery touches lives there, so a combined call is
  evaluated exactly where its branches were: never moved into or out of
  a closure, an ``if`` branch or past a ``let`` (modules reach the
  dataflow pipeline in graph form, where a model is one region).
* **branch**: a call of the target operator whose data argument
  (``args[0]``) is the *root*, followed by the chain of its single users
  that are elementwise or broadcast operator calls (``conv2d -> bias_add
  -> relu``); a node with two users ends the chain.
* **group**: the branches of one root whose calls are compatible
  (:meth:`ParallelCombiner.compatible` with the group's first branch),
  in the order the calls appear in the program.

A group with at least ``min_num_branches`` branches is combined:

1. :meth:`ParallelCombiner.make_combined` builds the wide call;
2. level by level (depth 1, 2, ... up to the shortest branch) the
   followers are combined too, while at that depth every branch has the
   same operator with equal attributes and arity, takes its parent at the
   same argument position, keeps its parent's shape (an operand that
   broadcasts the parent to a larger shape ends the combination), has no
   attribute that names axes or shapes (``bias_add`` and ``prelu``, whose
   ``axis`` is the channel axis, excepted), and the other operands can be
   combined by :meth:`ParallelCombiner.combine_args`;
3. each branch's node at the last combined depth is replaced by its part
   of the combined result (:meth:`ParallelCombiner.split`); the nodes
   below it had a single user, so nothing else saw them.

**Cycles.**  The wide call reads every branch's operands, so no operand
(a weight, a follower's other operand) may depend on a node of any
group: ``add(conv(x, w1), conv(x, w2))`` must not combine the ``add``,
and a weight computed from a sibling's output would make the combined
call depend on itself.  Nor may it depend on a node of another group:
that group's combined call reads all of *its* branches' operands, one
of which may depend on this group (two sibling branches, independent
before, become one node).  Such operands are *tainted* (one pass over
the function) and end the combination, or drop the branch.  The group's
root is exempt: the combined call reads it anyway.

Replacements are built over the original nodes and applied by one
:class:`~aot.ir.visitor.ExprMutator` walk that visits each replacement
in turn, so a group whose root lies below another group (stacked
Inception blocks) reads the earlier group's rewritten output.  The
result is re-typed by :func:`~aot.ir.type_infer.infer_types`.
"""

from __future__ import annotations

import abc
import dataclasses
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..diagnostics import DiagnosticError
from ..ir.expr import Call, Constant, Expr, Function, Op, Tuple, TupleGetItem, op
from ..ir.module import IRModule
from ..ir.ops.transform import ConcatenateAttrs
from ..ir.ops.transform_index import StridedSliceAttrs
from ..ir.registry import PatternKind
from ..ir.types import TensorType
from ..ir.visitor import ExprMutator, Visit, children, post_order

__all__ = ["Branch", "CHANNEL_AXIS_OPS", "ParallelCombiner", "ChannelConcatCombiner",
           "combine_module", "concat_exprs", "static_tensor", "check_min_branches"]

Branch = tuple[Call, ...]

#: attribute fields that give positions or shapes: a follower with one of
#: them is not a plain per-element operation of the parent.
_SHAPE_FIELDS = frozenset({"axis", "axes", "lhs_axis", "rhs_axis", "layout", "out_layout",
                           "shape", "newshape", "reps", "repeats", "indices_or_sections",
                           "num_newaxis"})

#: followers whose ``axis`` attribute names the axis of their 1-d operand.
CHANNEL_AXIS_OPS = frozenset({"nn.bias_add", "nn.prelu"})


def static_tensor(node: Expr) -> TensorType | None:
    """The checked type of ``node`` when it is a tensor of static shape."""
    t = node.checked_type
    if isinstance(t, TensorType) and all(isinstance(d, int) for d in t.shape):
        return t
    return None


def check_min_branches(name: str, value: int) -> None:
    if value < 2:
        raise DiagnosticError(f"option {name}.min_num_branches must be at least 2, not {value}")


def concat_exprs(exprs: Sequence[Expr], axis: int) -> Expr:
    """``exprs`` joined along ``axis``: a Constant when all are constants
    (joined now), else a ``concatenate`` call."""
    if all(isinstance(e, Constant) for e in exprs):
        return Constant(np.concatenate([np.asarray(e.data) for e in exprs], axis=axis))
    return Call(op("concatenate"), (Tuple(tuple(exprs)),), ConcatenateAttrs(axis=axis))


# ------------------------------------------------------------------ analysis

@dataclass
class _Analysis:
    """Users (with multiplicity, any parent node) of every node of a
    function, its region and its region's nodes in post order."""

    users: dict[int, list[Expr]]
    region: set[int]
    order: list[Expr]


def _analyse(func: Function) -> _Analysis:
    everything = post_order(func)
    users: dict[int, list[Expr]] = {}
    for node in everything:
        for child in children(node):
            users.setdefault(id(child), []).append(node)
    region: set[int] = set()
    stack: list[Expr] = [func.body]
    while stack:
        node = stack.pop()
        if id(node) in region:
            continue
        region.add(id(node))
        if isinstance(node, Call):
            stack.extend(node.args)
        elif isinstance(node, Tuple):
            stack.extend(node.fields)
        elif isinstance(node, TupleGetItem):
            stack.append(node.tuple_value)
    return _Analysis(users, region, [n for n in everything if id(n) in region])


def _is_op_call(node: Expr, name: str | None = None) -> bool:
    return isinstance(node, Call) and isinstance(node.op, Op) and \
        (name is None or node.op.name == name)


def _taint(func: Function, seeds: set[int]) -> set[int]:
    """Ids of the nodes of ``func`` that are in ``seeds`` or depend on one."""
    tainted = set(seeds)
    for node in post_order(func):
        if id(node) not in tainted and any(id(c) in tainted for c in children(node)):
            tainted.add(id(node))
    return tainted


# ------------------------------------------------------------------ combiner

class ParallelCombiner(abc.ABC):
    """One strategy of combining parallel calls of ``op_name``."""

    op_name: str = ""

    def __init__(self, min_num_branches: int) -> None:
        self.min_num_branches = min_num_branches

    # --- what subclasses say --------------------------------------------

    @abc.abstractmethod
    def supported(self, call: Call) -> bool:
        """``call`` (of ``op_name``) may be combined at all."""

    @abc.abstractmethod
    def compatible(self, a: Call, b: Call) -> bool:
        """``a`` and ``b`` (same root, both supported) combine."""

    @abc.abstractmethod
    def make_combined(self, group: Sequence[Branch]) -> Expr:
        """The wide call computing every branch's first call."""

    @abc.abstractmethod
    def combine_args(self, group: Sequence[Branch], depth: int, index: int) -> Expr | None:
        """Operand ``index`` (not the parent) of the combined follower at
        ``depth``, or None when the branches' operands do not combine."""

    @abc.abstractmethod
    def split(self, combined: Expr, group: Sequence[Branch], depth: int) -> list[Expr]:
        """Per branch, its part of ``combined`` (the group combined up to
        ``depth``): what replaces ``branch[depth]``."""

    def follower_ok(self, call: Call) -> bool:
        """Extra condition on a follower's operator (subclasses narrow)."""
        return True

    # --- the algorithm ----------------------------------------------------

    def run(self, func: Function) -> Function:
        info = _analyse(func)
        groups = self._groups(info)
        if not groups:
            return func
        seeds = {id(c) for g in groups for b in g for c in b}
        tainted = _taint(func, seeds)
        subst: dict[int, Expr] = {}
        for group in groups:
            group = [b for b in group if not any(id(a) in tainted for a in b[0].args[1:])]
            if len(group) >= self.min_num_branches:
                self._combine(group, tainted, subst)
        if not subst:
            return func
        return _Substitute(subst).visit(func)

    def _groups(self, info: _Analysis) -> list[list[Branch]]:
        """Groups of at least ``min_num_branches`` branches, in program order."""
        roots: list[Expr] = []
        by_root: dict[int, list[Call]] = {}
        for node in info.order:
            if _is_op_call(node, self.op_name) and node.args and self.supported(node):
                root = node.args[0]
                if id(root) not in by_root:
                    roots.append(root)
                    by_root[id(root)] = []
                by_root[id(root)].append(node)
        groups: list[list[Branch]] = []
        for root in roots:
            found: list[list[Branch]] = []
            for call in by_root[id(root)]:
                branch = self._branch(call, info)
                for group in found:
                    if self.compatible(group[0][0], call):
                        group.append(branch)
                        break
                else:
                    found.append([branch])
            groups += [g for g in found if len(g) >= self.min_num_branches]
        return groups

    def _branch(self, call: Call, info: _Analysis) -> Branch:
        branch = [call]
        while True:
            users = info.users.get(id(branch[-1]), [])
            if len(users) != 1:
                break
            (user,) = users
            if not _is_op_call(user) or id(user) not in info.region \
                    or user.op.op_def.pattern > PatternKind.BROADCAST:
                break
            branch.append(user)
        return tuple(branch)

    def _combine(self, group: list[Branch], tainted: set[int], subst: dict[int, Expr]) -> None:
        combined = self.make_combined(group)
        depth = 1
        shortest = min(len(b) for b in group)
        while depth < shortest:
            follower = self._follower(group, depth, tainted, combined)
            if follower is None:
                break
            combined = follower
            depth += 1
        for branch, part in zip(group, self.split(combined, group, depth - 1)):
            subst[id(branch[depth - 1])] = part

    def _follower(self, group: list[Branch], depth: int, tainted: set[int],
                  combined: Expr) -> Expr | None:
        first = group[0][depth]
        parents = [i for i, a in enumerate(first.args) if a is group[0][depth - 1]]
        if len(parents) != 1 or not self.follower_ok(first):
            return None
        (parent,) = parents
        root = group[0][0].args[0]
        fields = {f.name for f in dataclasses.fields(first.attrs)} \
            if dataclasses.is_dataclass(first.attrs) else set()
        if fields & _SHAPE_FIELDS and first.op.name not in CHANNEL_AXIS_OPS:
            return None
        for branch in group:
            call, prev = branch[depth], branch[depth - 1]
            if call.op.name != first.op.name or call.attrs != first.attrs \
                    or len(call.args) != len(first.args) or call.args[parent] is not prev:
                return None
            out, before = static_tensor(call), static_tensor(prev)
            if out is None or before is None or out.shape != before.shape:
                return None
            if any(id(a) in tainted and a is not root
                   for i, a in enumerate(call.args) if i != parent):
                return None
        args: list[Expr] = []
        for i in range(len(first.args)):
            if i == parent:
                args.append(combined)
                continue
            arg = self.combine_args(group, depth, i)
            if arg is None:
                return None
            args.append(arg)
        return Call(first.op, tuple(args), first.attrs, span=first.span)


class ChannelConcatCombiner(ParallelCombiner):
    """Combine along the output-channel axis: weights concatenated, the
    followers' per-channel operands concatenated, each branch a
    ``strided_slice`` of its channels."""

    @abc.abstractmethod
    def channel_axis(self, call: Call) -> int:
        """The channel axis of the output of ``call`` (an ``op_name`` call)."""

    def channels(self, branch: Branch) -> int:
        t = static_tensor(branch[0])
        assert t is not None
        return int(t.shape[self.channel_axis(branch[0])])

    def combine_args(self, group: Sequence[Branch], depth: int, index: int) -> Expr | None:
        call = group[0][depth]
        out = static_tensor(call)
        assert out is not None
        rank = len(out.shape)
        c = self.channel_axis(group[0][0])
        counts = [self.channels(b) for b in group]
        args = [b[depth].args[index] for b in group]
        types = [static_tensor(a) for a in args]
        if any(t is None for t in types) or len({t.dtype for t in types}) != 1:
            return None
        same = all(a is args[0] for a in args)
        if call.op.name in CHANNEL_AXIS_OPS:
            if call.attrs.axis % rank != c:
                return args[0] if same else None
            if all(t.shape == (n,) for t, n in zip(types, counts)):
                return concat_exprs(args, 0)
            return None
        ranks = {len(t.shape) for t in types}
        if len(ranks) != 1:
            return None
        (r,) = ranks
        ac = c - (rank - r)
        per_channel = ac >= 0 and all(t.shape[ac] == n for t, n in zip(types, counts))
        if per_channel and _equal_but(types, ac):
            return concat_exprs(args, ac)
        broadcast = ac < 0 or all(t.shape[ac] == 1 for t in types)
        if not broadcast:
            return None
        if same:
            return args[0]
        if all(isinstance(a, Constant) for a in args):
            return _spread_constants(args, counts, rank, c)
        return None

    def split(self, combined: Expr, group: Sequence[Branch], depth: int) -> list[Expr]:
        c = self.channel_axis(group[0][0])
        parts: list[Expr] = []
        offset = 0
        for branch in group:
            n = self.channels(branch)
            attrs = StridedSliceAttrs(begin=(offset,), end=(offset + n,), strides=(1,), axes=(c,))
            parts.append(Call(op("strided_slice"), (combined,), attrs, span=branch[depth].span))
            offset += n
        return parts


def _equal_but(types: Sequence[TensorType], axis: int) -> bool:
    shapes = [tuple(d for i, d in enumerate(t.shape) if i != axis) for t in types]
    return all(s == shapes[0] for s in shapes)


def _spread_constants(args: Sequence[Expr], counts: Sequence[int], rank: int,
                      c: int) -> Expr | None:
    """Constants that broadcast along the channel axis, each repeated to its
    branch's channel count and joined: one per-channel constant."""
    arrays = [np.asarray(a.data) for a in args]
    r = max(max(a.ndim for a in arrays), rank - c)
    ac = c - (rank - r)
    spread = []
    for a, n in zip(arrays, counts):
        a = a.reshape((1,) * (r - a.ndim) + a.shape)
        shape = list(a.shape)
        shape[ac] = n
        spread.append(np.broadcast_to(a, shape))
    rest = {tuple(d for i, d in enumerate(a.shape) if i != ac) for a in spread}
    if len(rest) != 1:
        return None
    return Constant(np.concatenate(spread, axis=ac))


class _Substitute(ExprMutator):
    """Replace nodes by id; each replacement is itself visited, so it reads
    the rewritten versions of the nodes it was built over."""

    def __init__(self, subst: dict[int, Expr]) -> None:
        super().__init__()
        self.subst = subst

    def visit_call(self, node: Call) -> Visit:
        if id(node) in self.subst:
            return (yield self.subst[id(node)])
        return (yield from super().visit_call(node))


def combine_module(mod: IRModule, combiner: ParallelCombiner) -> IRModule:
    """Every function of ``mod`` with ``combiner`` applied, re-typed."""
    from ..ir.type_infer import infer_types
    assert mod.is_typed, "the combine passes need a typed module"
    out = mod.copy()
    changed = False
    for gv, func in mod.functions.items():
        new = combiner.run(func)
        changed = changed or new is not func
        out.add(gv, new)
    return infer_types(out) if changed else mod
