"""FuseOps: group operator calls into primitive functions, one per kernel.

Design note
-----------
The backend turns each fused group into one C function (one loop nest):
an *anchor* operator (convolution, dense, pooling, softmax, reduction,
sort ...) owns the loop skeleton, and the cheap operators around it are
inlined as scalar expressions, so no intermediate tensor of the group is
ever stored.  Deciding the groups is the job of this pass; it follows
Relay's FuseOps (``src/relay/transforms/fuse_ops.cc``) and its
post-dominator algorithm.

**The problem.**  A value may be used several times, so fusing a producer
into "its consumer" is ill-defined; a diamond (``conv2d`` feeding three
ops that meet again in one ``add``) can fuse as a whole only if every path
from the producer ends in the same node.  That node is the producer's
*immediate post-dominator* (the nearest node every path to the exit
passes through).  So, as Relay:

1. build an indexed forward graph of the dataflow (:func:`_build_graph`):
   operator calls, tuples and projections, numbered in evaluation order,
   each with its consumers; a node used by anything else (a function
   result, ``let``, ``if``, ``match``, ``ref``, a call of a closure,
   global or constructor) is *extern*: it must be an output;
2. build the post-dominator tree in one reverse pass, the parent being the
   least common ancestor of the consumers
   (:class:`~aot.ir.dominators.PostDomTree`);
3. keep groups in a union-find (:class:`_Partition`), every node starting
   alone, and in three phases over the nodes in order try to merge a
   group *into the group of the post-dominator of its output*, taking along
   every node on a path between the two (:func:`~aot.ir.dominators.nodes_between`);
   a merge is all or nothing: it is refused if any node on the way, or the
   group met there, breaks the rules below.
4. rewrite (:class:`_FuseMutator`): each group with at least one operator
   call becomes ``Call(Function(params, body, Primitive=1), args)`` in
   place of its output node.

Because a group only ever merges into the group of a post-dominator of
its output, together with everything in between, every group is convex
and its output post-dominates all its members: **a group has exactly one
output** (its root, possibly tuple-valued: a ``split`` or ``topk`` call,
or a projection of one), and every other member is used only inside the
group.  The lowering relies on that; :meth:`_Partition.check` asserts it.

**Phases** (as Relay, over nodes in evaluation order; only a group's
output node extends the group):

* phase 0: anchor groups (``OUT_ELEMWISE_FUSABLE`` / ``COMM_REDUCE``)
  take their *epilogue*; groups of ``ELEMWISE``/``BROADCAST`` ops fuse
  forward into injective, elementwise, or anchor consumers (*prologue*);
* phase 1: ``INJECTIVE`` groups and lone tuples fuse forward (a tuple
  into ``concatenate``); injective ops are deferred so that the anchors
  have finished taking their epilogues first;
* phase 2: groups of kind at most ``INJECTIVE`` fuse into a tuple that
  phase 1 fused into its consumer (the fields of a ``concatenate``).

**Rules** (the backend's constraints):

* *At most one anchor per group*: an operator whose pattern is
  ``COMM_REDUCE``, ``OUT_ELEMWISE_FUSABLE`` or ``OPAQUE``.  An ``OPAQUE``
  call (``topk``, ``sort``, ``arange``, ``nn.layer_norm``, ``nn.dropout``)
  fuses with nothing: no epilogue, no prologue, it is its own group.
* *Epilogue* (after an ``OUT_ELEMWISE_FUSABLE`` or ``COMM_REDUCE`` anchor
  whose result is a tensor of static shape S; tuple-valued anchors such
  as ``nn.batch_norm`` take none): every node on the way to the
  post-dominator is an ``ELEMWISE`` or ``BROADCAST`` operator call whose
  result has shape S, so each operand coming from the anchor through the
  chain has shape S too (it is the anchor or another such call), and
  output element ``i`` depends on anchor element ``i`` only (conv2d +
  bias_add + relu, dense + add + tanh, sum + multiply by a scalar,
  softmax + cast).  Those nodes must not belong to a group with an anchor,
  and the group of each must have its output on the way (so no node
  beyond the post-dominator comes along unchecked).  Other operands of
  epilogue ops are parameters, constants or side computations without an
  anchor that were fused into them (``add(conv2d(..), exp(%b))``: the
  ``exp`` is post-dominated by the ``add`` and joins it as any
  elementwise op joins its consumer).
* *Prologue and anchor-free groups*: a group without anchor whose output
  is not a lone tuple or projection may merge into its post-dominator's
  group if every node strictly between them is in a group without anchor
  and not rooted at a tuple, and the post-dominator's group is not rooted
  at a tuple and has no ``OPAQUE`` anchor.  This gives chains of
  elementwise/broadcast/injective ops (reshape + transpose + add), pad +
  conv2d, cast + dense, subtract + sum, and elementwise ops feeding a
  ``concatenate``.  An op whose result feeds two anchors joins neither
  (its post-dominator lies beyond them and the path crosses an anchor).
* *Prologues of a contraction move data only* (an anchor whose operator
  record says ``contraction``: conv1d/conv2d/conv2d_transpose, dense,
  matmul, batch_matmul and their qnn forms): injective ops (``pad``,
  ``reshape``, ``transpose``, slices ...), casts, tuples and
  projections.  A contraction reads each operand element many
  times (a dense ``units`` times, a conv2d about ``C_out * KH * KW``
  times), and a fused prologue is recomputed at every read: layer-norm's
  divide, multiply and add fused into GPT-2's 3072-unit dense cost a
  division and three float16 roundings per multiply-accumulate, and that
  kernel ran 25 times slower than the same dense and a separate
  elementwise kernel.  The exception is a prologue that computes from
  constants only: the conversion of a narrow weight table that
  FoldConstant keeps because folding it would widen the table (an int4 or
  int8 weight's dequantize: unpack, subtract the zero point, multiply by
  the scale), so the kernel reads the narrow table.  Its cost is that
  conversion at every read: nothing extra for a dense or matmul of one row
  (each weight is read once), a subtract and a multiply per
  multiply-accumulate for a convolution -- the price of 4 or 8 times less
  flash than a float32 table and no arena tensor for the float weights.
  Arithmetic before such an anchor is otherwise its own kernel
  (a stored intermediate: arena, exactly planned, for speed -- Relay fuses
  nothing into conv2d at all).  Other anchors read an element once or a
  few times (a reduction, batch_norm, softmax, a non-overlapping pool) and
  take arithmetic prologues (subtract + power + mean).
* *Tuples*: a ``Tuple`` node (of tensors) is a member only when it fused
  into its consumer; a tuple that is a group's output stays in the outer
  body and its fields fuse into it never (Relay does the same).  A
  projection ``t.i`` joins a group only with the node that produces ``t``
  (a projection of a variable or of another group's result stays outside
  and becomes a parameter), so a ``split`` is a non-output member only
  when all its projections are inside.  Groups made only of tuples and
  projections (no operator call) are left as they were.
* *Max size*: a merge whose groups together hold more than ``max_depth``
  nodes is refused (Relay's ``max_fuse_depth``, 256): a 300-op chain
  becomes groups of 256 and 44.
* *Constants* are not graph nodes: a constant operand stays inside the
  group's function; every other operand from outside (variables, other
  groups' results, projections of outside tuples, tuples) becomes a
  parameter, deduplicated, in order of first use.

**Scope.**  Every function of the module is fused, nested closures
included; functions already marked ``Primitive`` are left alone.  Control
flow and calls of anything but an operator are boundaries (Relay treats
them as opaque): their operands are extern, and the bodies of functions,
``if`` branches and ``match`` clauses are separate *regions*: a node used
from two regions (outside an ``if`` and inside a branch, or in both
branches) is extern too, so no computation moves into or out of a branch
or closure body.  Calls whose type or operand types are not tensors or
tuples of tensors (polymorphic code) are boundaries as well.  Since a
``let`` is a boundary, run FuseOps on graph form, before A-normal form.

**Deviations from Relay.**

* Data-movement prologues into contractions (pad + conv2d, cast + dense)
  and injective prologues into reductions: Relay fuses only
  elementwise/broadcast ops into reductions and nothing into conv2d.  Our
  kernels inline any index expression into the anchor's operand reads.
* ``COMM_REDUCE`` anchors take epilogues (Relay leaves a reduction alone).
* Relay's edge patterns (a broadcast edge of equal shapes counts as
  elementwise) are replaced by the explicit shape rule of the epilogue.
* At most one anchor per group is checked and the merge refused, where
  Relay asserts; an epilogue merge needs the post-dominator to be its
  group's output.
* Constants are inlined, never parameters or graph nodes.
* Only a group's output node extends it (Relay visits every node and
  skips those already fused into their post-dominator: the same thing).
* The size limit counts every group a merge joins, not just two.

The result keeps every type: new parameters, functions and calls carry
``checked_type`` (and the functions their ``ret_type``), so it need not be
type-checked again (it re-checks to the same types).  Everything is
iterative (:mod:`aot.ir.visitor`, the union-find and path walks), linear
up to the post-dominator climbs of multi-use nodes, and deterministic.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..ir.attrs import FuncAttrs
from ..ir.expr import (Call, Constant, Expr, Function, If, Let, Match, Op, RefCreate, RefRead,
                       RefWrite, Tuple, TupleGetItem, Var)
from ..ir.module import IRModule
from ..ir.registry import PatternKind
from ..ir.types import FuncType, TensorType, TupleType, Type
from ..ir.visitor import ExprMutator, ExprVisitor, Visit, post_order, rebuild
from ..ir.dominators import ForwardGraph, PostDomTree, nodes_between
from .manager import current, register_pass

__all__ = ["fuse_ops", "fuse_expr", "primitive_groups", "is_primitive", "PRIMITIVE_ATTRS"]

K = PatternKind
PRIMITIVE_ATTRS = FuncAttrs.of({"Primitive": 1})
_ANCHOR_KINDS = (K.COMM_REDUCE, K.OUT_ELEMWISE_FUSABLE, K.OPAQUE)
_EPILOGUE_ANCHORS = (K.COMM_REDUCE, K.OUT_ELEMWISE_FUSABLE)
_EPILOGUE_OPS = (K.ELEMWISE, K.BROADCAST)


def fuse_ops(mod: IRModule, max_depth: int = 256) -> IRModule:
    """A new module whose operator calls are grouped into ``Primitive=1``
    functions (see the module's design note).  ``mod`` is type-checked
    first if it is not typed yet."""
    assert max_depth >= 1, max_depth
    if not mod.is_typed:
        from ..ir.type_infer import infer_types
        mod = infer_types(mod)
    out = mod.copy()
    for gv, func in mod.functions.items():
        out.add(gv, fuse_expr(func, max_depth))
    return out


def fuse_expr(expr: Expr, max_depth: int = 256) -> Expr:
    """Fuse a typed expression (a function, usually)."""
    if isinstance(expr, Function) and is_primitive(expr):
        return expr
    builder = _GraphBuilder()
    builder.visit(expr)
    builder.mark_extern(expr)
    partition = _Partition(builder, max_depth)
    partition.run()
    return _FuseMutator(builder, partition).visit(expr)


def is_primitive(expr: Expr) -> bool:
    return isinstance(expr, Function) and bool(expr.attrs.get("Primitive", 0))


def primitive_groups(expr: Expr) -> list[Function]:
    """The primitive functions in ``expr`` in evaluation order: a function
    called directly comes at its call (after the groups computing its
    arguments), any other where it appears."""
    nodes = post_order(expr)
    called = {n.op for n in nodes if isinstance(n, Call) and is_primitive(n.op)}
    out: list[Function] = []
    seen: set[Function] = set()
    for n in nodes:
        fn = None
        if isinstance(n, Call) and is_primitive(n.op):
            fn = n.op
        elif is_primitive(n) and n not in called:
            fn = n
        if fn is not None and fn not in seen:
            seen.add(fn)
            out.append(fn)
    return out


# ------------------------------------------------------------------ graph

def _fusible_type(t: Type | None) -> bool:
    """A tensor, or a tuple of tensors: what a kernel reads and writes."""
    if isinstance(t, TensorType):
        return True
    return isinstance(t, TupleType) and bool(t.fields) \
        and all(isinstance(f, TensorType) for f in t.fields)


def _static_shape(t: Type | None) -> tuple[int, ...] | None:
    if isinstance(t, TensorType) and t.is_static:
        return tuple(int(d) for d in t.shape)  # type: ignore[arg-type]
    return None


class _GraphBuilder(ExprVisitor):
    """Builds the :class:`ForwardGraph` of the fusion candidates: operator
    calls of tensor types, tuples of tensors, and projections of candidate
    tuples.  Each node also gets the *region* (function body, ``if``
    branch, ``match`` clause) where evaluation first reaches it; a use from
    another region or by a non-candidate makes the used node extern."""

    def __init__(self) -> None:
        super().__init__()
        self.graph = ForwardGraph()
        self.nodes: list[Expr] = []
        self.index: dict[Expr, int] = {}
        self.pattern: list[PatternKind] = []
        self._region_of: dict[Expr, int] = {}
        self._regions = [0]
        self._next_region = 1

    # ---------------------------------------------------------- helpers
    def _enter(self, node: Expr) -> int:
        region = self._regions[-1]
        self._region_of[node] = region
        return region

    def _add(self, node: Expr, pattern: PatternKind, operands: tuple[Expr, ...],
             region: int) -> None:
        idx = self.graph.add_node()
        self.index[node] = idx
        self.nodes.append(node)
        self.pattern.append(pattern)
        for a in operands:
            src = self.index.get(a)
            if src is None:
                continue
            if self._region_of[a] != region:
                self.graph.extern[src] = True
            else:
                self.graph.add_edge(src, idx)

    def mark_extern(self, node: Expr) -> None:
        """``node`` is used by something that is not a candidate."""
        idx = self.index.get(node)
        if idx is not None:
            self.graph.extern[idx] = True

    def _boundary(self, operands: list[tuple[Expr, bool]]) -> Visit:
        """Visit the operands of a non-candidate, each in a new region when
        flagged; every one is an extern use."""
        for child, new_region in operands:
            if new_region:
                self._regions.append(self._next_region)
                self._next_region += 1
            yield child
            if new_region:
                self._regions.pop()
            self.mark_extern(child)

    # ---------------------------------------------------------- visits
    def _leaf(self, node: Expr) -> None:
        self._enter(node)

    visit_var = visit_global_var = visit_constant = visit_op = visit_constructor = _leaf

    def visit_call(self, node: Call) -> Visit:
        region = self._enter(node)
        if isinstance(node.op, Op) and _fusible_type(node.checked_type) \
                and all(_fusible_type(a.checked_type) for a in node.args):
            for a in node.args:
                yield a
            self._add(node, node.op.op_def.pattern, node.args, region)
            return
        operands = [(a, False) for a in node.args]
        if not isinstance(node.op, Op):
            operands.insert(0, (node.op, False))
        yield from self._boundary(operands)

    def visit_tuple(self, node: Tuple) -> Visit:
        region = self._enter(node)
        if _fusible_type(node.checked_type):
            for f in node.fields:
                yield f
            self._add(node, K.TUPLE, node.fields, region)
            return
        yield from self._boundary([(f, False) for f in node.fields])

    def visit_tuple_getitem(self, node: TupleGetItem) -> Visit:
        region = self._enter(node)
        yield node.tuple_value
        if node.tuple_value in self.index and _fusible_type(node.tuple_value.checked_type):
            self._add(node, K.INJECTIVE, (node.tuple_value,), region)
        else:
            self.mark_extern(node.tuple_value)

    def visit_function(self, node: Function) -> Visit:
        self._enter(node)
        if is_primitive(node):
            return
        yield from self._boundary([(node.body, True)])

    def visit_let(self, node: Let) -> Visit:
        self._enter(node)
        yield from self._boundary([(node.value, False), (node.body, False)])

    def visit_if(self, node: If) -> Visit:
        self._enter(node)
        yield from self._boundary([(node.cond, False), (node.true_branch, True),
                                   (node.false_branch, True)])

    def visit_match(self, node: Match) -> Visit:
        self._enter(node)
        yield from self._boundary([(node.data, False)]
                                  + [(c.rhs, True) for c in node.clauses])

    def visit_ref_create(self, node: RefCreate) -> Visit:
        self._enter(node)
        yield from self._boundary([(node.value, False)])

    def visit_ref_read(self, node: RefRead) -> Visit:
        self._enter(node)
        yield from self._boundary([(node.ref, False)])

    def visit_ref_write(self, node: RefWrite) -> Visit:
        self._enter(node)
        yield from self._boundary([(node.ref, False), (node.value, False)])


# -------------------------------------------------------------- partition

def _is_contraction(node: Expr) -> bool:
    return isinstance(node, Call) and isinstance(node.op, Op) and node.op.op_def.contraction


def _moves_data(node: Expr, pattern: PatternKind) -> bool:
    """Whether a graph node only moves (or widens) data: an injective
    operator, a cast, a tuple or a projection."""
    if isinstance(node, Call):
        return pattern == K.INJECTIVE or (isinstance(node.op, Op) and node.op.name == "cast")
    return isinstance(node, (Tuple, TupleGetItem))


class _Partition:
    """Union-find over the graph's nodes.  Per representative: the group's
    output node, its anchor (-1 if none), its size and the largest pattern
    of its non-anchor members (tuples count as injective)."""

    def __init__(self, builder: _GraphBuilder, max_depth: int) -> None:
        self.b = builder
        self.graph = builder.graph
        self.max_depth = max_depth
        n = self.graph.size
        self.tree = PostDomTree.build(self.graph)
        self.uf = list(range(n))
        self.out = list(range(n))
        self.size = [1] * n
        self.anchor = [i if builder.pattern[i] in _ANCHOR_KINDS else -1 for i in range(n)]
        self.kind = [min(p, K.INJECTIVE) if p not in _ANCHOR_KINDS else K.ELEMWISE
                     for p in builder.pattern]
        #: the group only moves data (a prologue a contraction may take)
        self.moves_only = [_moves_data(node, p) for node, p in zip(builder.nodes, builder.pattern)]
        #: the node computes from constants only (a weight conversion that
        #: FoldConstant left because it widens: a prologue a contraction
        #: may take, arithmetic included)
        self.from_constants: list[bool] = []
        for node in builder.nodes:
            self.from_constants.append(
                isinstance(node, Call) and node.args != () and all(
                    isinstance(a, Constant) or (a in builder.index
                                                and self.from_constants[builder.index[a]])
                    for a in node.args))

    def find(self, i: int) -> int:
        root = i
        while self.uf[root] != root:
            root = self.uf[root]
        while self.uf[i] != root:
            self.uf[i], i = root, self.uf[i]
        return root

    # ------------------------------------------------------------ queries
    def _tuple_rooted(self, g: int) -> bool:
        return isinstance(self.b.nodes[self.out[g]], Tuple)

    def _lone_projection(self, g: int) -> bool:
        node = self.b.nodes[self.out[g]]
        return isinstance(node, TupleGetItem) \
            and self.find(self.b.index[node.tuple_value]) != g

    def _fits(self, groups: set[int]) -> bool:
        return sum(self.size[g] for g in groups) <= self.max_depth

    # ------------------------------------------------------------ phases
    def run(self) -> None:
        for phase in (0, 1, 2):
            for i in range(self.graph.size):
                self._extend(i, phase)
        self.check()

    def _extend(self, i: int, phase: int) -> None:
        g = self.find(i)
        if self.out[g] != i:
            return
        sink = self.tree.parent[i]
        if sink < 0 or self.find(sink) == g:
            return
        anchor = self.anchor[g]
        if anchor >= 0:
            if phase == 0 and self.b.pattern[anchor] in _EPILOGUE_ANCHORS:
                self._try_epilogue(i, sink, anchor)
            return
        if self._lone_projection(g):
            return
        tuple_out = self._tuple_rooted(g)
        if phase == 0:
            ok = not tuple_out and self.kind[g] <= K.BROADCAST
        elif phase == 1:
            ok = tuple_out or self.kind[g] == K.INJECTIVE
        else:
            ok = not tuple_out and isinstance(self.b.nodes[sink], Tuple) \
                and self.out[self.find(sink)] != sink
        if ok:
            self._try_forward(i, sink)

    def _try_forward(self, src: int, sink: int) -> None:
        """Merge the anchor-free group of ``src`` into the group of
        ``sink`` (a prologue, or an anchor-free chain)."""
        between = nodes_between(self.graph, src, sink)
        groups = {self.find(src)}
        for m in between:
            h = self.find(m)
            groups.add(h)
            if m == sink:
                continue
            if self.anchor[h] >= 0 or self._tuple_rooted(h):
                return
        hs = self.find(sink)
        if self._tuple_rooted(hs):
            return
        anchor = self.anchor[hs]
        if anchor >= 0 and self.b.pattern[anchor] == K.OPAQUE:
            return
        if anchor >= 0 and _is_contraction(self.b.nodes[anchor]) \
                and not all(self.moves_only[g] or self.from_constants[self.out[g]]
                            for g in groups if g != hs) \
                and self._feeds(sink, anchor):
            return
        if self._fits(groups):
            self._merge(groups, hs)

    def _feeds(self, node: int, anchor: int) -> bool:
        """Whether ``node`` is the anchor or reaches it inside its group
        (then what merges into ``node`` is a prologue of the anchor's
        operands; otherwise ``node`` is in the epilogue, computed once per
        output element)."""
        group = self.find(anchor)
        stack, seen = [node], {node}
        while stack:
            m = stack.pop()
            if m == anchor:
                return True
            for c in self.graph.outputs[m]:
                if c <= anchor and c not in seen and self.find(c) == group:
                    seen.add(c)
                    stack.append(c)
        return False

    def _try_epilogue(self, src: int, sink: int, anchor: int) -> None:
        """Merge the ops after the anchor group's output ``src`` up to
        ``sink`` into it, if they form an epilogue."""
        shape = _static_shape(self.b.nodes[anchor].checked_type)
        if shape is None:
            return
        between = nodes_between(self.graph, src, sink)
        on_way = set(between)
        groups = {self.find(src)}
        for m in between:
            node = self.b.nodes[m]
            if not isinstance(node, Call) or self.b.pattern[m] not in _EPILOGUE_OPS:
                return
            if _static_shape(node.checked_type) != shape:
                return
            h = self.find(m)
            if self.anchor[h] >= 0 or self.out[h] not in on_way:
                return
            groups.add(h)
        if self._fits(groups):
            self._merge(groups, self.find(sink))

    def _merge(self, groups: set[int], into: int) -> None:
        anchors = [self.anchor[g] for g in groups if self.anchor[g] >= 0]
        if len(anchors) > 1:
            return
        out = self.out[into]
        size = sum(self.size[g] for g in groups)
        kind = max(self.kind[g] for g in groups)
        for g in groups:
            self.uf[g] = into
        self.out[into] = out
        self.size[into] = size
        self.kind[into] = kind
        self.anchor[into] = anchors[0] if anchors else -1
        self.moves_only[into] = all(self.moves_only[g] for g in groups)

    # ------------------------------------------------------------ result
    def check(self) -> None:
        """Assert the invariants the lowering relies on: one output per
        group, every other member used only inside it, one anchor at most."""
        graph = self.graph
        anchors: dict[int, int] = {}
        for i in range(graph.size):
            g = self.find(i)
            if self.b.pattern[i] in _ANCHOR_KINDS:
                anchors[g] = anchors.get(g, 0) + 1
                assert anchors[g] == 1, "two anchors in one group"
                assert self.b.pattern[i] != K.OPAQUE or self.size[g] == 1
            if self.out[g] == i:
                continue
            assert not graph.extern[i], f"{self.b.nodes[i]!r} is used outside its group"
            for u in graph.outputs[i]:
                assert self.find(u) == g, f"{self.b.nodes[i]!r} is used outside its group"

    def groups(self) -> list[list[int]]:
        """Members of each group, in evaluation order, groups ordered by
        their output."""
        members: dict[int, list[int]] = {}
        for i in range(self.graph.size):
            members.setdefault(self.find(i), []).append(i)
        return sorted(members.values(), key=lambda ms: self.out[self.find(ms[0])])


# ---------------------------------------------------------------- rewrite

@dataclass(eq=False)
class _GroupBuild:
    """A group being turned into a primitive function."""

    output: Expr
    params: list[Var] = field(default_factory=list)
    args: list[Expr] = field(default_factory=list)
    by_operand: dict[Expr, Var] = field(default_factory=dict)

    def param(self, operand: Expr, rewritten: Expr) -> Var:
        var = self.by_operand.get(operand)
        if var is None:
            t = operand.checked_type
            var = Var(f"p{len(self.params)}", t, checked_type=t)
            self.by_operand[operand] = var
            self.params.append(var)
            self.args.append(rewritten)
        return var


class _FuseMutator(ExprMutator):
    """Rewrites members of groups that hold an operator call: inside a
    group, operands from outside become parameters; the group's output
    becomes the call of the new primitive function."""

    def __init__(self, builder: _GraphBuilder, partition: _Partition) -> None:
        super().__init__()
        self.group_of: dict[Expr, _GroupBuild] = {}
        for members in partition.groups():
            nodes = [builder.nodes[i] for i in members]
            if not any(isinstance(n, Call) for n in nodes):
                continue
            out = builder.nodes[partition.out[partition.find(members[0])]]
            build = _GroupBuild(out)
            for n in nodes:
                self.group_of[n] = build

    def _operand(self, group: _GroupBuild, operand: Expr, rewritten: Expr) -> Expr:
        if isinstance(operand, Constant):
            return operand
        if self.group_of.get(operand) is group and operand is not group.output:
            return rewritten
        return group.param(operand, rewritten)

    def _finish(self, group: _GroupBuild, node: Expr, inner: Expr) -> Expr:
        if node is not group.output:
            return inner
        ret = node.checked_type
        assert ret is not None
        fn_type = FuncType(tuple(p.type for p in group.params), ret)
        fn = Function(tuple(group.params), inner, ret, attrs=PRIMITIVE_ATTRS,
                      span=node.span, checked_type=fn_type)
        return Call(fn, tuple(group.args), span=node.span, checked_type=ret)

    def _operands(self, group: _GroupBuild, operands: tuple[Expr, ...]) -> Visit:
        out = []
        for a in operands:
            rewritten = yield a
            out.append(self._operand(group, a, rewritten))
        return tuple(out)

    def visit_call(self, node: Call) -> Visit:
        group = self.group_of.get(node)
        if group is None:
            return (yield from super().visit_call(node))
        args = yield from self._operands(group, node.args)
        return self._finish(group, node, rebuild(node, args=args))

    def visit_tuple(self, node: Tuple) -> Visit:
        group = self.group_of.get(node)
        if group is None:
            return (yield from super().visit_tuple(node))
        fields = yield from self._operands(group, node.fields)
        return self._finish(group, node, rebuild(node, fields=fields))

    def visit_tuple_getitem(self, node: TupleGetItem) -> Visit:
        group = self.group_of.get(node)
        if group is None:
            return (yield from super().visit_tuple_getitem(node))
        (value,) = yield from self._operands(group, (node.tuple_value,))
        return self._finish(group, node, rebuild(node, tuple_value=value))

    def visit_function(self, node: Function) -> Visit:
        if is_primitive(node):
            return node
        return (yield from super().visit_function(node))


@dataclass(frozen=True)
class FuseOpsOptions:
    """``max_depth``: most operators in one fused kernel (default 256, or
    1 -- no fusion -- at opt level 0)."""

    max_depth: int | None = None


@register_pass("FuseOps", opt_level=0, options=FuseOpsOptions)
def fuse_ops_pass(mod: IRModule, opts: FuseOpsOptions) -> IRModule:
    """FuseOps: dataflow operators into primitive functions, one kernel each."""
    default_depth = 256 if current().opt_level >= 1 else 1
    depth = opts.max_depth if opts.max_depth is not None else default_depth
    return fuse_ops(mod, max_depth=depth)
