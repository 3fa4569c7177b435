"""Lower a fused dataflow ``main`` to a :class:`~aot.emit.plan.model.ModelPlan`.

Design note
-----------
After FuseOps, ``main``'s body is a dataflow graph of calls to primitive
functions, tuples, projections, parameters and constants.  This module
walks it once in evaluation order and decides everything the emitter
prints:

1. **Kernels.**  Each call of a primitive function becomes a call of the
   kernel :func:`~aot.emit.lower.group.lower_group` makes of it.  Groups
   that lower to the same kernel (same loop nest over the same shapes,
   same constants) share one C function: repeated blocks of a network cost
   flash once.  Equal constant tables are stored once.
2. **Slots.**  Every tensor value is a *slot*: a model input, a constant
   table, or an intermediate tensor.  Tuples and projections only move
   slots around; they produce no code.
3. **Outputs.**  An intermediate tensor that is a leaf of the result is
   written by its kernel straight into the caller's output buffer.  A leaf
   that is an input, a constant, or a tensor already claimed by another
   output is copied by a small copy kernel at the end.
4. **Memory.**  Intermediates (and kernel scratch buffers) get a lifetime
   ``[step that writes it, last step that reads it]``; a kernel may write
   its output over (part of) an input that dies there when its loop nest
   allows it (:mod:`aot.emit.lower.overlap_pairs`).
   :mod:`aot.emit.plan.arena` packs them into one arena and reports the
   liveness lower bound next to it, and the bound of whole tensors (an
   elementwise kernel over its input only, see
   :mod:`aot.emit.lower.group`) next to that.

5. **Control flow.**  A static loop (:mod:`.static_loop`) is a span of
   steps that repeats; a static ``if`` (:mod:`.static_if`) two spans, one
   per branch, writing the same result buffers.  Both are spans of the one
   linear order of steps the planner sees.

Programs this dataflow backend does not compile (other control flow, ADTs,
closures, references: the whole-language backend's job) are rejected with
a diagnostic at the offending node.
"""

from __future__ import annotations

import dataclasses
import math

import keyword
import re
from dataclasses import dataclass
from typing import Sequence, Union

import numpy as np

from ...diagnostics import DiagnosticError, Span
from ...ir.attrs import output_names
from ...ir.dtype import DType
from ...ir.adt import Constructor
from ...ir.expr import (Call, Constant, Expr, Function, GlobalVar, If, Let, Match, Op, RefCreate,
                        RefRead, RefWrite, Tuple, TupleGetItem, Var)
from ...ir.module import IRModule
from ...ir.types import TensorType, TupleType, Type
from ...ir.analysis import free_vars
from ...ir.visitor import children, post_order
from ..kernel import ir as K
from ..kernel.simplify import simplify_kernel
from .group import (LoweredGroup, flat_leaves, flatten_type, group_ops, lower_group,
                    unflatten)
from ...passes.manager import current
from ...progress import stage
from ..plan.arena import InPlace, TensorLife, lower_bound, plan_memory, verify_plan
from ..plan.model import (ARENA_ALIGNMENT, ArenaOverlap, ArenaTensor, ArgKind, BufferRef,
                          BranchSpan, ConstantData, KernelCall, KernelInfo, LoopSpan, ModelPlan,
                          OutputTree, TensorSpec)
from .overlap_pairs import overlap_candidates, unrestrict
from .registry import LoweringError
from .static_if import Context, branch_contexts, is_static_if
from .static_loop import StaticLoop, static_loop, static_tensor_type

__all__ = ["plan_model", "describe_group", "KernelTable", "check_dataflow"]


# ------------------------------------------------------------------ slots

@dataclass(frozen=True, slots=True)
class _Slot:
    kind: ArgKind            # INPUT, OUTPUT, CONST or ARENA (an intermediate)
    key: str                 # "in3", "out0", a constant symbol, or "t12"
    dtype: DType
    shape: tuple[int, ...]
    index: int = 0           # position among the inputs / outputs

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.dtype.nbytes(self.size)


_Value = Union[_Slot, tuple["_Value", ...]]


@dataclass(slots=True)
class _Step:
    kernel: str
    inputs: list[_Slot]
    consts: list[str]
    outputs: list[_Slot]
    scratch: list[_Slot]
    inplace: tuple[int, ...]
    nodes: tuple[str, ...] = ()      # the model's nodes this call computes


@dataclass(frozen=True, slots=True)
class _LoopSteps:
    """Steps ``[begin, end)`` repeat; after step ``test - 1`` the loop
    leaves when ``cond`` holds ``exit_when``."""
    begin: int
    test: int
    end: int
    cond: _Slot
    exit_when: bool


@dataclass(frozen=True, slots=True)
class _BranchSteps:
    """Steps ``[begin, mid)`` run when ``cond`` holds, ``[mid, end)`` when not."""
    begin: int
    mid: int
    end: int
    cond: _Slot


class _Env(dict):
    """The value of every node walked so far (by ``id``); a ``let``-bound
    variable reads its value's entry (``alias``); ``loops`` are the
    static loops bound by ``let`` (:mod:`.static_loop`), by variable."""

    def __init__(self, *args: object, alias: dict[int, Expr] | None = None,
                 loops: dict[int, StaticLoop] | None = None) -> None:
        super().__init__(*args)
        self.alias: dict[int, Expr] = {} if alias is None else alias
        self.loops: dict[int, StaticLoop] = {} if loops is None else loops

    def __missing__(self, key: int) -> object:
        target = self.alias.get(key)
        if target is None:
            raise KeyError(key)
        return self[id(target)]

    def child(self) -> "_Env":
        return _Env(self, alias=self.alias, loops=self.loops)


class KernelTable:
    """The kernels and constant tables of one model, equal ones shared
    (used by this module and by the program backend)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.kernels: list[K.Kernel] = []
        self.infos: list[KernelInfo] = []
        self.kernel_keys: dict[tuple, str] = {}
        self.constants: list[ConstantData] = []
        self.constant_keys: dict[tuple, str] = {}

    def constant(self, dtype: DType, flat: np.ndarray) -> str:
        data = np.ascontiguousarray(flat).reshape(-1)
        key = (dtype, data.tobytes())
        if key not in self.constant_keys:
            symbol = f"c{len(self.constants)}"
            self.constant_keys[key] = symbol
            self.constants.append(ConstantData(symbol, dtype, data))
        return self.constant_keys[key]

    def lower_call(self, call: Call) -> tuple[LoweredGroup, str]:
        """The group lowered from a call of a primitive function and the C
        name of its (shared) kernel; a lowering failure is a diagnostic at
        the group's last operator."""
        fn = call.op
        assert isinstance(fn, Function)
        try:
            group = lower_group(fn, "k", source=describe_group(fn))
        except LoweringError as e:
            culprit = group_ops(fn)
            raise _error(culprit[-1] if culprit else call, str(e)) from None
        return group, self.kernel(group, [c.op.name for c in group_ops(fn)], group_nodes(fn))

    def kernel(self, group: LoweredGroup, ops: Sequence[str],
               nodes: Sequence[str] = ()) -> str:
        """The C name of ``group``'s kernel, shared with an equal one.  The
        table holds the kernel simplified (:mod:`aot.emit.kernel.simplify`),
        as the printer wants it.  ``nodes`` (the model's node names the
        group came from) add to those of the kernel's earlier groups."""
        k = group.kernel
        key = (k.params, k.body)
        if key not in self.kernel_keys:
            cname = f"{self.name}_k{len(self.kernels)}"
            self.kernel_keys[key] = cname
            self.kernels.append(simplify_kernel(K.Kernel(cname, k.params, k.body)))
            self.infos.append(KernelInfo(cname, group.source, tuple(ops), group.anchor,
                                         tuple(dict.fromkeys(nodes))))
            return cname
        cname = self.kernel_keys[key]
        index = next(i for i, info in enumerate(self.infos) if info.name == cname)
        info = self.infos[index]
        merged = tuple(dict.fromkeys((*info.nodes, *nodes)))
        if merged != info.nodes:
            self.infos[index] = dataclasses.replace(info, nodes=merged)
        return cname


class _Builder(KernelTable):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.steps: list[_Step] = []
        self.temp_count = 0
        self.loops: list[_LoopSteps] = []
        self.branches: list[_BranchSteps] = []
        #: constants made for constant nodes (not a kernel's tables)
        self.value_consts: set[str] = set()

    def temp(self, t: TensorType) -> _Slot:
        self.temp_count += 1
        return _Slot(ArgKind.ARENA, f"t{self.temp_count}", t.dtype,
                     tuple(int(d) for d in t.shape))


# ------------------------------------------------------------- the walk

def _error(node: Expr, message: str) -> DiagnosticError:
    span: Span | None = getattr(node, "span", None)
    return DiagnosticError(message, span)


def _is_primitive(fn: Expr) -> bool:
    return isinstance(fn, Function) and bool(fn.attrs.get("Primitive", 0))


def _tensor_type(t: Type, node: Expr, what: str) -> list[TensorType]:
    try:
        leaves = flatten_type(t)
    except AssertionError:
        raise _error(node, f"{what} has type {t}; the dataflow C backend compiles tensors "
                           "and tuples of tensors only") from None
    for leaf in leaves:
        if not all(isinstance(d, int) for d in leaf.shape):
            raise _error(node, f"{what} has a dynamic shape {leaf}; the C backend needs "
                               "static shapes")
    return leaves


def _c_names(params: Sequence[Var], model: str) -> list[str]:
    """C parameter names for the entry's inputs: the program's names made
    C identifiers, clear of keywords, of the outputs' and arena's names and
    of the model's file-scope symbols (``<model>_...``)."""
    names: list[str] = []
    used = {"arena", "out", "context"}
    for i, p in enumerate(params):
        base = re.sub(r"[^A-Za-z0-9_]", "_", p.name_hint) or f"in{i}"
        if base[0].isdigit():
            base = "in_" + base
        if base in K.C_KEYWORDS or keyword.iskeyword(base) or base.startswith("out") or \
                base.startswith(model + "_") or base.startswith("_"):
            base = "in_" + base
        name, n = base, 1
        while name in used:
            n += 1
            name = f"{base}_{n}"
        used.add(name)
        names.append(name)
    return names


def group_nodes(fn: Function) -> tuple[str, ...]:
    """The names of the imported model's nodes (ONNX node names, TFLite
    output tensors) whose operators are in the fused group, each once, in
    the group's order; empty for Relay text."""
    found: dict[str, None] = {}
    for node in post_order(fn.body):
        span = node.span
        if isinstance(node, Call) and span is not None and span.node:
            found.setdefault(span.node, None)
    return tuple(found)


def describe_group(fn: Function) -> str:
    """The fused group as text for the kernel's comment and metadata: one
    line per operator, ``%k = op(args) : type``."""
    names: dict[int, str] = {id(p): f"%{p.name_hint}" for p in fn.params}
    lines = []
    consts = 0
    for node in post_order(fn.body):
        if isinstance(node, Constant):
            data = np.asarray(node.data)
            names[id(node)] = (repr(data.item()) if data.size == 1 else f"const{list(data.shape)}")
            consts += 1
        elif isinstance(node, Tuple):
            names[id(node)] = "(" + ", ".join(names[id(f)] for f in node.fields) + ")"
        elif isinstance(node, TupleGetItem):
            names[id(node)] = f"{names[id(node.tuple_value)]}.{node.index}"
        elif isinstance(node, Call) and not isinstance(node.op, Function):
            args = ", ".join(names[id(a)] for a in node.args)
            attrs = node.attrs.to_raw() if hasattr(node.attrs, "to_raw") else {}
            shown = "".join(f", {k}={v}" for k, v in sorted(attrs.items()))
            name = f"%{len(lines)}"
            lines.append(f"{name} = {node.op.name}({args}{shown}) : {node.checked_type}")
            names[id(node)] = name
    return "\n".join(lines)


def plan_model(mod: IRModule, name: str, *, arena: str = "caller",
               entry: str = "main") -> ModelPlan:
    """The plan of ``mod``'s ``entry`` (typed, fused)."""
    if entry not in mod:
        raise DiagnosticError(f"the module has no `@{entry}` function to compile")
    main = mod[entry]
    with stage("lowering"):
        b, inputs, outputs, tree = _lower(main, name)
    with stage("planning"):
        sources = output_names(main.attrs, len(outputs))
        return _finish(b, name, arena, inputs, outputs, tree, sources)



def _lower(main: Function, name: str) -> tuple[_Builder, list[TensorSpec],
                                               list[tuple[_Slot, _Slot | None]], OutputTree]:
    """Every kernel and step of ``main``, in order; nothing planned yet."""
    b = _Builder(name)
    inputs: list[TensorSpec] = []
    values = _Env()
    c_names = _c_names(main.params, name)
    for p, cname in zip(main.params, c_names):
        leaves = _tensor_type(p.checked_type, p, f"parameter %{p.name_hint}")
        if isinstance(p.checked_type, TupleType):
            raise _error(p, f"parameter %{p.name_hint} is a tuple; the dataflow C backend takes "
                            "tensor parameters only")
        t = leaves[0]
        slot = _Slot(ArgKind.INPUT, f"in{len(inputs)}", t.dtype, tuple(t.shape), len(inputs))
        model_name = p.span.node if p.span is not None and p.span.node else p.name_hint
        inputs.append(TensorSpec(cname, tuple(t.shape), t.dtype, model_name))
        values[id(p)] = slot

    order = post_order(main.body, into_functions=False)
    values.loops.update(check_dataflow(order, loops=True))
    _walk(b, order, values)

    result = values[id(main.body)]
    _tensor_type(main.body.checked_type, main.body, "the result of main")
    outputs, tree = _bind_outputs(b, result)
    return b, inputs, outputs, tree


_FEATURES = {Let: "a let binding of a closure or an effect", If: "if-then-else",
             Match: "match", RefCreate: "references", RefRead: "references",
             RefWrite: "references", GlobalVar: "calls of global functions",
             Constructor: "algebraic data types", Op: "operators used as values"}


def check_dataflow(order: Sequence[Expr], *, loops: bool = False) -> dict[int, StaticLoop]:
    """Reject, at the first offending node, what only the whole-language
    backend can compile.  With ``loops``, a ``let`` of a tensor value and
    a static loop (:mod:`.static_loop`, its inside checked too) and a
    static ``if`` (:mod:`.static_if`) are dataflow; returns the static
    loops by ``let`` variable."""
    found: dict[int, StaticLoop] = {}
    allowed: set[int] = set()
    if loops:
        for node in order:
            if not isinstance(node, Let):
                continue
            if isinstance(node.value, Function):
                loop = static_loop(node)
                if loop is None:
                    continue
                inner = _nodes(loop.cond, *loop.tail.args, loop.exit)
                called = {id(n.op) for n in inner if isinstance(n, Call) and isinstance(n.op, Op)}
                found.update(check_dataflow([n for n in inner if id(n) not in called],
                                            loops=True))
                found[id(node.var)] = loop
                allowed.update((id(node), id(node.value)))
            elif static_tensor_type(node.value.checked_type):
                allowed.add(id(node))
        allowed.update(id(n) for n in order if isinstance(n, If) and is_static_if(n))
    for node in order:
        if id(node) in allowed:
            continue
        feature = _FEATURES.get(type(node))
        if isinstance(node, Function) and not _is_primitive(node):
            feature = "closures"
        if feature is not None:
            raise _error(node, f"{feature}: not supported by the dataflow C backend yet "
                               "(it compiles static tensor programs)")
    return found


def _walk(b: _Builder, order: Sequence[Expr], values: _Env,
          contexts: dict[int, Context] | None = None, here: Context = ()) -> None:
    """Give every node of ``order`` (dependencies first) its value; the
    nodes of a static ``if``'s branches when the ``if`` is reached
    (``contexts``, :func:`~.static_if.branch_contexts`; ``order`` holds
    the nodes of context ``here`` and deeper)."""
    _bind_lets(order, values)
    uses = _field_uses(order, values) if values.loops else {}
    if contexts is None:
        contexts = branch_contexts(order)
    for node in order:
        if id(node) in values or contexts.get(id(node), ()) != here:
            continue
        if isinstance(node, If):
            values[id(node)] = _lower_if(b, node, order, values, contexts, here)
            continue
        if isinstance(node, Var) and (id(node) in values.alias or id(node) in values.loops):
            continue
        if isinstance(node, Function) and not _is_primitive(node):
            continue                     # a static loop's function: its calls do the work
        if isinstance(node, Call) and isinstance(node.op, Var) and id(node.op) in values.loops:
            values[id(node)] = _lower_loop(b, values.loops[id(node.op)], node, values,
                                           uses.get(id(node), set()))
            continue
        values[id(node)] = _value(b, node, values)


def _field_uses(order: Sequence[Expr], values: _Env) -> dict[int, set[int] | None]:
    """Which fields of each node's (tuple) value ``order`` reads: a set of
    indices, or None for the whole value (a use other than a projection,
    a free variable of a function, the result)."""
    uses: dict[int, set[int] | None] = {}

    def target(e: Expr) -> int:
        while True:
            if isinstance(e, Var) and id(e) in values.alias:
                e = values.alias[id(e)]
            elif isinstance(e, Let):
                e = e.body               # a let's value is its body's
            else:
                return id(e)

    def whole(e: Expr) -> None:
        uses[target(e)] = None

    for node in order:
        if isinstance(node, TupleGetItem):
            key = target(node.tuple_value)
            seen = uses.get(key, set())
            if seen is not None:
                uses[key] = seen | {node.index}
        elif isinstance(node, Function):
            for v in free_vars(node):
                whole(v)
        elif isinstance(node, Let):
            continue
        else:
            for c in children(node):
                whole(c)
    if order:
        whole(order[-1])
    return uses


def _live_params(loop: StaticLoop, used: set[int] | None) -> set[int]:
    """The loop parameters whose values matter: those the condition, the
    used fields of the result (all when ``used`` is None or the result is
    not a tuple) and, transitively, the next values of live ones read."""
    params = {p: i for i, p in enumerate(loop.fn.params)}

    def reads(e: Expr) -> set[int]:
        return {params[v] for v in free_vars(e) if v in params}

    exit_ = loop.exit
    if used is None or not isinstance(exit_, Tuple):
        live = reads(exit_)
    else:
        live = set().union(*(reads(exit_.fields[i]) for i in used)) if used else set()
    live |= reads(loop.cond)
    work = list(live)
    while work:
        for j in reads(loop.tail.args[work.pop()]):
            if j not in live:
                live.add(j)
                work.append(j)
    return live


def _bind_lets(order: Sequence[Expr], values: _Env) -> None:
    """Every ``let``-bound value variable of ``order`` reads its value (a
    ``let`` comes after its body in post order)."""
    for node in order:
        if isinstance(node, Let) and id(node.var) not in values.loops:
            values.alias[id(node.var)] = node.value


def _nodes(*roots: Expr) -> list[Expr]:
    """The nodes of ``roots`` (not into functions), dependencies first, each once."""
    seen: set[int] = set()
    out: list[Expr] = []
    for r in roots:
        for n in post_order(r, into_functions=False):
            if id(n) not in seen:
                seen.add(id(n))
                out.append(n)
    return out


def _copy_step(b: _Builder, src: _Slot, dst: _Slot) -> None:
    b.steps.append(_Step(_copy_kernel(b, src.dtype, src.size), [src], [], [dst], [], ()))


def _lower_if(b: _Builder, node: If, order: Sequence[Expr], values: _Env,
              contexts: dict[int, Context], here: Context) -> _Value:
    """A static ``if`` (:mod:`.static_if`): the then branch's steps, then
    the else branch's, both leaving the result in the same fresh buffers
    (a branch's own result tensor renamed to the buffer, anything else
    copied into it).  The condition and what the branches share are
    computed before (their context is ``here``).  A branch's values are
    forgotten after it: nothing outside may read them."""
    leaves = _tensor_type(node.checked_type, node, "the value of an if")
    if not leaves:
        return unflatten(node.checked_type, [])      # () computes nothing
    cond = values[id(node.cond)]
    assert isinstance(cond, _Slot)
    results = [b.temp(t) for t in leaves]
    begin = mid = len(b.steps)
    for branch, taken in ((node.true_branch, True), (node.false_branch, False)):
        inside = here + ((id(node), taken),)
        nodes = [n for n in order if contexts.get(id(n), ())[:len(inside)] == inside]
        fresh = [id(n) for n in nodes if id(n) not in values]
        first_step, first_temp = len(b.steps), b.temp_count
        _walk(b, nodes, values, contexts, inside)
        _join(b, flat_leaves(values[id(branch)]), results, first_step, first_temp)
        for key in fresh:
            values.pop(key, None)
        if taken:
            mid = len(b.steps)
    b.branches.append(_BranchSteps(begin, mid, len(b.steps), cond))
    return unflatten(node.checked_type, list(results))


def _join(b: _Builder, got: list[_Slot], results: list[_Slot], first_step: int,
          first_temp: int) -> None:
    """Make a branch (steps from ``first_step``, temporaries numbered
    after ``first_temp``) leave ``got`` in ``results``: a temporary of the
    branch becomes the result buffer in every step, loop and branch test
    of the branch; anything else is copied."""
    renames: dict[str, _Slot] = {}
    copies = []
    for leaf, result in zip(got, results):
        own = leaf.kind is ArgKind.ARENA and int(leaf.key[1:]) > first_temp
        if own and leaf.key not in renames:
            renames[leaf.key] = result
        else:
            copies.append((renames.get(leaf.key, leaf), result))
    for src, dst in copies:
        _copy_step(b, src, dst)
    if not renames:
        return

    def swap(slots: list[_Slot]) -> list[_Slot]:
        return [renames.get(s.key, s) for s in slots]
    for step in b.steps[first_step:]:
        step.inputs, step.outputs, step.scratch = (swap(step.inputs), swap(step.outputs),
                                                   swap(step.scratch))
    b.loops[:] = [dataclasses.replace(lp, cond=renames.get(lp.cond.key, lp.cond))
                  if lp.begin >= first_step else lp for lp in b.loops]
    b.branches[:] = [dataclasses.replace(br, cond=renames.get(br.cond.key, br.cond))
                     if br.begin >= first_step else br for br in b.branches]


def _lower_loop(b: _Builder, loop: StaticLoop, call: Call, values: _Env,
                used: set[int] | None = None) -> _Value:
    """One run of a static loop (:mod:`.static_loop`): what the condition,
    the continuing branch and the tail call's arguments compute without
    reading the state is computed once before the loop; the state leaves
    get arena buffers, initialised by copies; the iteration computes the
    condition, leaves or computes the next state and copies it into the
    state buffers; the exit branch runs after the loop, seeing the
    condition's values but none of the continuing branch's (those are
    the previous iteration's).  A parameter nothing used reads (an
    output accumulator whose result is dropped, ``used`` giving the
    fields of the result read) is not carried: it keeps its initial
    value and its next value is never computed."""
    fn = loop.fn
    env = values.child()
    live = _live_params(loop, used)
    state: list[_Slot] = []
    inits: list[_Slot] = []
    for i, (p, a) in enumerate(zip(fn.params, call.args)):
        init = flat_leaves(values[id(a)])
        if i in live:
            leaves = [b.temp(t) for t in _tensor_type(p.checked_type, p,
                                                       f"loop state %{p.name_hint}")]
            state += leaves
            inits += init
        else:
            leaves = list(init)
        env[id(p)] = unflatten(p.checked_type, list(leaves))
    args = [a for i, a in enumerate(loop.tail.args) if i in live]
    order = _nodes(loop.cond, *args, loop.exit)
    _bind_lets(order, env)
    variant = {id(p) for p in fn.params}
    for node in order:
        if (isinstance(node, Call) and isinstance(node.op, Var) and id(node.op) in env.loops) or \
                any(id(c) in variant or id(env.alias.get(id(c), c)) in variant
                    for c in children(node)):
            variant.add(id(node))
        elif isinstance(node, Var) and id(env.alias.get(id(node), node)) in variant:
            variant.add(id(node))
    # a branch of an if that runs every iteration runs there too (not hoisted)
    contexts = branch_contexts(order)
    ifs = {id(n) for n in order if isinstance(n, If) and id(n) in variant}
    variant.update(id(n) for n in order if any(i in ifs for i, _ in contexts.get(id(n), ())))
    # loop invariants; one a variant node reads (or the loop reads) is
    # computed outside any branch of an invariant if that also reads it
    invariant = [n for n in order if id(n) not in variant]
    wanted = [n for n in (loop.cond, *args, loop.exit) if id(n) not in variant]
    wanted += [c for n in order if id(n) in variant for c in children(n)
               if id(c) not in variant]
    _walk(b, invariant, env, branch_contexts(invariant, wanted))
    for src, dst in zip(inits, state):
        _copy_step(b, src, dst)
    begin = len(b.steps)
    _walk(b, _nodes(loop.cond), env)
    cond = env[id(loop.cond)]
    assert isinstance(cond, _Slot)
    test = len(b.steps)
    after_test = env.child()
    nodes = _nodes(*args)
    _walk(b, nodes, env, branch_contexts(nodes, args))    # an arg a branch reads too
    new = [leaf for a in args for leaf in flat_leaves(env[id(a)])]
    moves = [(src, dst) for src, dst in zip(new, state) if src.key != dst.key]
    keys = {s.key for s in state}
    saved = []
    for src, dst in moves:          # a parallel assignment: save what a move overwrites
        if src.key in keys:
            tmp = b.temp(TensorType(src.shape, src.dtype))
            _copy_step(b, src, tmp)
            src = tmp
        saved.append((src, dst))
    for src, dst in saved:
        _copy_step(b, src, dst)
    b.loops.append(_LoopSteps(begin, test, len(b.steps), cond, loop.exit_when))
    _walk(b, _nodes(loop.exit), after_test)
    return after_test[id(loop.exit)]


def _value(b: _Builder, node: Expr, values: dict[int, _Value]) -> _Value | None:
    if isinstance(node, Function):
        if _is_primitive(node):
            return None          # its call does the work
        raise _error(node, "closures are not supported by the dataflow C backend")
    if isinstance(node, Constant):
        t = node.checked_type
        assert isinstance(t, TensorType)
        symbol = b.constant(t.dtype, np.asarray(node.data))
        b.value_consts.add(symbol)
        return _Slot(ArgKind.CONST, symbol, t.dtype, tuple(int(d) for d in t.shape))
    if isinstance(node, Tuple):
        return tuple(values[id(f)] for f in node.fields)
    if isinstance(node, TupleGetItem):
        tup = values[id(node.tuple_value)]
        assert isinstance(tup, tuple)
        return tup[node.index]
    if isinstance(node, Call) and _is_primitive(node.op):
        return _kernel_call(b, node, values)
    if isinstance(node, Let):
        return values[id(node.body)]
    if isinstance(node, Var):
        raise _error(node, f"free variable %{node.name_hint}")
    what = type(node).__name__
    if isinstance(node, Call):
        what = "a call of a function"
    raise _error(node, f"{what} is not supported by the dataflow C backend (only "
                       "static tensor programs compile to C so far)")


def _kernel_call(b: _Builder, call: Call, values: dict[int, _Value]) -> _Value:
    group, cname = b.lower_call(call)
    args = [leaf for a in call.args for leaf in flat_leaves(values[id(a)])]
    assert len(args) == len(group.inputs), (len(args), len(group.inputs))
    consts = [b.constant(buf.dtype, data) for buf, data in group.constants]
    out_types = _tensor_type(call.checked_type, call, "a result")
    outs = [b.temp(t) for t in out_types]
    scratch = [b.temp(TensorType(buf.shape, buf.dtype)) for buf in group.scratch]
    b.steps.append(_Step(cname, args, consts, outs, scratch, group.inplace_inputs,
                         group_nodes(call.op) if isinstance(call.op, Function) else ()))
    if isinstance(call.checked_type, TupleType):
        leaves = list(outs)
        return unflatten(call.checked_type, leaves)
    return outs[0]


def _bind_outputs(b: _Builder,
                  result: _Value) -> tuple[list[tuple[_Slot, _Slot | None]], OutputTree]:
    """Pairs (slot computed, slot to copy from or None), and the tree."""
    counter = iter(range(1 << 30))

    def tree(v: _Value) -> OutputTree:
        if isinstance(v, tuple):
            return tuple(tree(f) for f in v)
        return next(counter)
    shape = tree(result)
    claimed: set[str] = set()
    pairs = []
    for leaf in flat_leaves(result):
        if leaf.kind is ArgKind.ARENA and leaf.key not in claimed:
            claimed.add(leaf.key)
            pairs.append((leaf, None))
        else:
            pairs.append((leaf, leaf))
    return pairs, shape


def _copy_kernel(b: _Builder, dtype: DType, size: int) -> str:
    i = K.index_var("i0")
    src = K.Buffer("p0", dtype, (size,), K.BufferScope.INPUT)
    dst = K.Buffer("out", dtype, (size,), K.BufferScope.OUTPUT)
    body = K.for_range(i, size, K.store(dst, i, K.load(src, i)))
    group = LoweredGroup(K.Kernel("k", (src, dst), body), (src,), (), (dst,), (), (), ("copy",),
                         None, f"copy of {size} x {dtype}")
    return b.kernel(group, ["copy"])


def _loop_lifetimes(b: _Builder, start: dict[str, int], end: dict[str, int]) -> None:
    """A tensor a loop reads or writes that exists before the loop (its
    state, what it reads from outside) lives until after the loop: the
    next iteration reads it again, so no step of the loop is its last; the
    condition lives until it is tested.  A branch's condition is read at
    the branch's first step."""
    for br in b.branches:
        if br.cond.key in start:
            end[br.cond.key] = max(end[br.cond.key], br.begin)
    for lp in sorted(b.loops, key=lambda lp: lp.end - lp.begin):   # inner loops first
        for step in b.steps[lp.begin:lp.end]:
            for s in (*step.inputs, *step.outputs):
                if s.key in start and start[s.key] < lp.begin:
                    end[s.key] = max(end[s.key], lp.end)
        for br in b.branches:
            s = br.cond
            if lp.begin <= br.begin < lp.end and s.key in start and start[s.key] < lp.begin:
                end[s.key] = max(end[s.key], lp.end)
        if lp.cond.key in start:
            end[lp.cond.key] = max(end[lp.cond.key], lp.test - 1)
            if start[lp.cond.key] < lp.begin:
                end[lp.cond.key] = max(end[lp.cond.key], lp.end)


def _finish(b: _Builder, name: str, arena: str, inputs: list[TensorSpec],
            pairs: list[tuple[_Slot, _Slot | None]], tree: OutputTree,
            source_names: list[str]) -> ModelPlan:
    out_names = ["out"] if len(pairs) == 1 else [f"out{i}" for i in range(len(pairs))]
    outputs = [TensorSpec(n, slot.shape, slot.dtype, source)
               for n, (slot, _), source in zip(out_names, pairs, source_names)]
    output_of: dict[str, int] = {}
    for i, (slot, copy_from) in enumerate(pairs):
        if copy_from is None:
            output_of[slot.key] = i
        else:
            out_slot = _Slot(ArgKind.OUTPUT, f"out{i}", slot.dtype, slot.shape, i)
            b.steps.append(_Step(_copy_kernel(b, slot.dtype, slot.size), [copy_from], [],
                                 [out_slot], [], ()))

    # lifetimes of the intermediates
    start: dict[str, int] = {}
    end: dict[str, int] = {}
    sizes: dict[str, int] = {}
    for k, step in enumerate(b.steps):
        for s in (*step.outputs, *step.scratch):
            if s.kind is ArgKind.ARENA and s.key not in output_of:
                start.setdefault(s.key, k)
                end[s.key] = k
                sizes[s.key] = s.nbytes
        for s in step.inputs:
            if s.key in start:
                end[s.key] = k
    _loop_lifetimes(b, start, end)
    lives = [TensorLife(key, max(sizes[key], 1), start[key], end[key]) for key in start]
    whole = []
    for k, step in enumerate(b.steps):
        for pos in step.inplace:
            src = step.inputs[pos]
            out = step.outputs[0]
            if (src.key in start and end[src.key] == k and start.get(out.key) == k and
                    sizes[out.key] <= sizes[src.key] and src.key != out.key):
                whole.append(InPlace(out.key, src.key))
    kernels = {k.name: k for k in b.kernels}
    inplace, sites = overlap_candidates(b.steps, kernels, start, end, ARENA_ALIGNMENT)
    memory = plan_memory(lives, inplace, ARENA_ALIGNMENT)
    if current().verify:
        verify_plan(lives, memory, ARENA_ALIGNMENT)
    whole_bound = lower_bound(lives, whole, ARENA_ALIGNMENT)
    aliased: dict[str, set[str]] = {}
    overlaps = []
    for pair in memory.inplace:
        site = sites[pair.out, pair.inp]
        params = kernels[site.kernel].params
        aliased.setdefault(site.kernel, set()).update(
            params[j].name for j in (site.out_arg, *site.in_args))
        overlaps.append(ArenaOverlap(site.step, site.out_arg, site.in_args, pair.out, pair.inp,
                                     pair.shift))
    b.kernels = [unrestrict(k, frozenset(aliased[k.name])) if k.name in aliased else k
                 for k in b.kernels]

    def ref(s: _Slot) -> BufferRef:
        if s.kind is ArgKind.INPUT:
            return BufferRef(ArgKind.INPUT, s.dtype, s.size, index=s.index)
        if s.kind is ArgKind.CONST:
            return BufferRef(ArgKind.CONST, s.dtype, s.size, symbol=s.key)
        if s.kind is ArgKind.OUTPUT:
            return BufferRef(ArgKind.OUTPUT, s.dtype, s.size, index=s.index)
        if s.key in output_of:
            return BufferRef(ArgKind.OUTPUT, s.dtype, s.size, index=output_of[s.key])
        return BufferRef(ArgKind.ARENA, s.dtype, s.size, offset=memory.offsets[s.key])

    # a loop's dropped state (see _lower_loop) may leave a constant unread
    read = {s.key for step in b.steps for s in step.inputs if s.kind is ArgKind.CONST}
    read.update(c for step in b.steps for c in step.consts)
    b.constants = [c for c in b.constants if c.symbol in read or c.symbol not in b.value_consts]
    loops = tuple(LoopSpan(lp.begin, lp.test, lp.end, ref(lp.cond), lp.exit_when)
                  for lp in sorted(b.loops, key=lambda lp: (lp.begin, -lp.end)))
    branches = tuple(BranchSpan(br.begin, br.mid, br.end, ref(br.cond))
                     for br in sorted(b.branches, key=lambda br: (br.begin, -br.end)))
    constants = {c.symbol: c for c in b.constants}
    calls = []
    for step in b.steps:
        args = [ref(s) for s in step.inputs]
        args += [BufferRef(ArgKind.CONST, c.dtype, int(c.values.size), symbol=c.symbol)
                 for c in (constants[sym] for sym in step.consts)]
        args += [ref(s) for s in (*step.outputs, *step.scratch)]
        calls.append(KernelCall(step.kernel, tuple(args), step.nodes))

    return ModelPlan(
        name=name, inputs=tuple(inputs), outputs=tuple(outputs), output_tree=tree,
        kernels=tuple(b.kernels), kernel_info=tuple(b.infos), calls=tuple(calls),
        constants=tuple(b.constants), arena_bytes=memory.arena_bytes,
        arena_lower_bound_bytes=memory.lower_bound_bytes, arena=arena,
        arena_whole_tensor_bound_bytes=max(whole_bound, memory.lower_bound_bytes),
        arena_tensors=tuple(ArenaTensor(t.key, memory.offsets[t.key], sizes[t.key], t.start,
                                        t.end) for t in sorted(lives, key=lambda t: (t.start,
                                                                                    t.key))),
        arena_overlaps=tuple(overlaps), loops=loops, branches=branches,
        extra=(("memory_planner", memory.algorithm),
               ("inplace", len(memory.inplace))))
