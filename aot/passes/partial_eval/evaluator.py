"""The online partial evaluator: an interpreter over partially static values.

See the package's design note (:mod:`aot.passes.partial_eval`) for the
rules; this module is the machine.  :class:`Evaluator` is an
:class:`~aot.ir.visitor.ExprFunctor` without memo (a node's meaning depends
on the environment): each ``visit_<node>`` is a generator on the
framework's trampoline, so neither deep programs nor deep unfolding grow
the Python stack.  The context a child is evaluated in lives on the
evaluator and is saved and restored around the ``yield`` that evaluates
the child:

* ``env``    the current activation: Var -> PStatic;
* ``act``    the activation's number (a key of the shared-node memo);
* ``block``  where residual bindings go;
* ``store``  what is known of each static reference's contents;
* ``tsubst``/``tscope``  type variables of inlined polymorphic code and
  the type variables in scope in the residual function being built;
* ``fuel``   per function, the measure of the unfoldings in progress;
* ``budget`` unfoldings left for the global being residualised.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Generator

import numpy as np

from ...diagnostics import DiagnosticError
from ...interpreter import Interpreter
from ...ir.adt import Clause, Constructor, Pattern, PatternConstructor, PatternTuple, PatternVar
from ...ir.analysis import free_vars
from ...ir.attrs import Attrs
from ...ir.expr import (Call, Constant, Expr, Function, GlobalVar, If, Let, Match, Op,
                        RefCreate, RefRead, RefWrite, Tuple, TupleGetItem, Var)
from ...ir.module import IRModule
from ...ir.types import Type, TypeVar, free_type_vars, holes, substitute
from ...ir.visitor import ExprFunctor, children, post_order
from ...values import Closure, Value
from ..inline import fresh_copy
from .residual import Block
from .static import (MatchStatus, PStatic, SClosure, SConstructor, SCtorFn, SOp, SRef, STensor,
                     STuple, int_measure, match_static, static_value)

__all__ = ["Evaluator", "Limits"]

Eval = Generator[Expr, Any, Any]

#: nodes never worth memoising (cheap, or values by themselves)
_LEAVES = (Var, GlobalVar, Constant, Op, Constructor)


@dataclass(frozen=True)
class Limits:
    """Bounds on unfolding (see the design note's termination rule)."""

    max_depth: int
    max_unfold: int


@dataclass(frozen=True)
class _Fuel:
    """For one function: per argument position, the smallest (creation
    time, integer value) seen on the chain of its unfoldings in progress,
    and the length of that chain."""

    measures: tuple[tuple[int, int], ...]
    depth: int


def _measures(args: list[PStatic]) -> tuple[tuple[int, int], ...]:
    return tuple((a.time, int_measure(a)) for a in args)


def _entry_values(clo: SClosure, args: list[PStatic]) -> list[PStatic]:
    """What an unfolding of ``clo`` depends on: the arguments, then the
    captured values (in the environment's fixed order).  Closures made by
    one literal share their fuel; the captured values tell them apart
    (``compose(f, compose(f, g))`` unfolds the inner one too)."""
    return [*args, *clo.env.values()]


def _is_primitive(func: Function) -> bool:
    return bool(func.attrs.get("Primitive"))


class Evaluator(ExprFunctor[PStatic]):
    memoize = False

    def __init__(self, mod: IRModule, limits: Limits) -> None:
        super().__init__()
        self.mod = mod
        self.limits = limits
        self.interp = Interpreter(mod)
        self.shared, self.hints = _scan(mod)
        self.globals: dict[GlobalVar, PStatic] = {}
        self.free: dict[Function, tuple[Var, ...]] = {}
        self._acts = itertools.count()
        # the context (see the module docstring)
        self.env: dict[Var, PStatic] = {}
        self.act = 0
        self.block = Block()
        self.store: dict[SRef, PStatic] = {}
        self.tsubst: dict[TypeVar, Type] = {}
        self.tscope: frozenset[TypeVar] = frozenset()
        self.fuel: dict[Function, _Fuel] = {}
        self.budget = 0
        self.memo_scoped: dict[tuple[int, Expr], PStatic] = {}

    # ================================================================ roots
    def residualise(self, func: Function) -> Function:
        """``func`` (a global) with its parameters dynamic."""
        if _is_primitive(func):
            return func
        args = [PStatic(None, p) for p in func.params]
        self.env = dict(zip(func.params, args))
        self.act = next(self._acts)
        self.block = Block()
        self.store = {}
        self.tsubst = {}
        self.tscope = frozenset(func.type_params)
        self.fuel = {func: _Fuel(_measures(args), 1)}
        self.budget = self.limits.max_unfold
        self.memo_scoped = {}
        result = self.visit(func.body)
        body = self.block.finish(result.dyn)
        return Function(func.params, body, func.ret_type, func.type_params, func.attrs,
                        span=func.span)

    # ============================================================ plumbing
    def ev(self, expr: Expr) -> Eval:
        """Evaluate ``expr`` in the current context; a node with several
        parents is evaluated once per activation (as the interpreter
        does), and its value reused while its residual binding is in
        scope."""
        if expr not in self.shared:
            return (yield expr)
        key = (self.act, expr)
        known = self.memo_scoped.get(key)
        if known is not None:
            return known
        ps = yield expr
        self.memo_scoped[key] = ps
        self.block.memo_keys.append(key)
        return ps

    def bind(self, value: Expr, node: Expr | None = None) -> Var:
        """Append ``let %v = value`` to the current block; return %v,
        annotated with ``node``'s type when it is concrete here (a
        residual nullary constructor, ``ref(GradZero)``, has no other
        source for its type arguments once the reads and writes that
        fixed them were evaluated away)."""
        if node is None:
            var = Var("x", span=value.span)
        else:
            var = Var(self.hints.get(node, "x"), self.residual_type(node.checked_type),
                      span=value.span)
        self.block.bindings.append((var, value))
        return var

    def in_block(self, expr: Expr) -> Eval:
        """Evaluate ``expr`` into a block of its own (a branch); return
        the block as an expression."""
        outer = self.block
        self.block = Block()
        ps = yield from self.ev(expr)
        block = self.block
        self.block = outer
        self._forget(block)
        return block.finish(ps.dyn)

    def _forget(self, block: Block) -> None:
        for key in block.memo_keys:
            del self.memo_scoped[key]

    def residual_type(self, t: Type | None) -> Type | None:
        """``t`` under the current type substitution, or None if it still
        mentions type variables the residual function does not bind."""
        if t is None:
            return None
        if self.tsubst:
            t = substitute(t, self.tsubst)  # type: ignore[arg-type]
        if holes(t) or any(tv not in self.tscope for tv in free_type_vars(t)):
            return None
        return t

    def dynamic(self, value: Expr, node: Expr) -> PStatic:
        return PStatic(None, self.bind(value, node))

    # ============================================================== leaves
    def visit_var(self, node: Var) -> PStatic:
        ps = self.env.get(node)
        assert ps is not None, f"%{node.name_hint} is not bound (ill-formed input)"
        return ps

    def visit_global_var(self, node: GlobalVar) -> PStatic:
        ps = self.globals.get(node)
        if ps is None:
            func = self.mod.functions.get(node) or self.mod[node.name]
            ps = self.globals[node] = PStatic(SClosure(func, {}, global_var=node), node)
        return ps

    def visit_constant(self, node: Constant) -> PStatic:
        return PStatic(STensor(node.data), node)

    def visit_op(self, node: Op) -> PStatic:
        return PStatic(SOp(node), node)

    def visit_constructor(self, node: Constructor) -> PStatic:
        if not node.inputs:
            # `Nil()`, the parser's form of a nullary constructor's value
            return PStatic(SConstructor(node, ()), Call(node, (), span=node.span))
        return PStatic(SCtorFn(node), node)

    # ========================================================== structures
    def visit_tuple(self, node: Tuple) -> Eval:
        fields = []
        for f in node.fields:
            fields.append((yield from self.ev(f)))
        if not fields:
            return PStatic(STuple(()), Tuple((), span=node.span))
        value = Tuple(tuple(f.dyn for f in fields), span=node.span)
        return PStatic(STuple(tuple(fields)), self.bind(value, node))

    def visit_tuple_getitem(self, node: TupleGetItem) -> Eval:
        tup = yield from self.ev(node.tuple_value)
        if isinstance(tup.static, STuple):
            return tup.static.fields[node.index]
        return self.dynamic(TupleGetItem(tup.dyn, node.index, span=node.span), node)

    # ============================================================ bindings
    def visit_let(self, node: Let) -> Eval:
        e: Expr = node
        while True:
            assert isinstance(e, Let)
            if isinstance(e.value, Function):
                ps = yield from self.closure(e.value, e.var, e.var.name_hint)
            else:
                ps = yield from self.ev(e.value)
                if isinstance(ps.dyn, Op):
                    # an operator used as a value keeps a typed binding: a bare
                    # operator is polymorphic, and where it meets a function of
                    # a concrete type (an `if` branch) inference cannot unify them
                    var = Var(e.var.name_hint, e.var.type_annotation or e.var.checked_type,
                              span=e.var.span)
                    self.block.bindings.append((var, ps.dyn))
                    ps = PStatic(ps.static, var)
            self.env[e.var] = ps
            e = e.body
            if not isinstance(e, Let) or e in self.shared:
                break
        return (yield from self.ev(e))

    # =========================================================== functions
    def visit_function(self, node: Function) -> Eval:
        return (yield from self.closure(node, None, self.hints.get(node, "f")))

    def closure(self, func: Function, self_var: Var | None, hint: str) -> Eval:
        """A closure over the current environment, with its residual
        function bound at once (in case it escapes into residual code)."""
        env = {v: self.env[v] for v in self._free_vars(func) if v is not self_var}
        ps = PStatic(SClosure(func, env, self_var, self.tsubst), Var(hint, span=func.span))
        if _is_primitive(func):
            # a fused kernel: kept as it is (fresh binders for this copy)
            residual = fresh_copy(func)
        else:
            residual = yield from self.materialise(ps)
        assert isinstance(ps.dyn, Var)
        self.block.bindings.append((ps.dyn, residual))
        return ps

    def _free_vars(self, func: Function) -> tuple[Var, ...]:
        fv = self.free.get(func)
        if fv is None:
            fv = self.free[func] = tuple(free_vars(func))
        return fv

    def materialise(self, ps: PStatic) -> Eval:
        """The residual function of closure ``ps``: its body evaluated with
        dynamic parameters, knowing nothing of the store (it runs at some
        unknown later time)."""
        clo = ps.static
        assert isinstance(clo, SClosure)
        func = clo.func
        saved = (self.env, self.act, self.block, self.store, self.tsubst, self.tscope)
        old_fuel = self.fuel.get(func)
        self.tsubst = {k: v for k, v in clo.tsubst.items() if k not in func.type_params}
        self.tscope = self.tscope | frozenset(func.type_params)
        params = tuple(Var(p.name_hint, self.residual_type(p.checked_type or p.type_annotation),
                           span=p.span) for p in func.params)
        args = [PStatic(None, q) for q in params]
        self.env = dict(clo.env)
        if clo.self_var is not None:
            self.env[clo.self_var] = ps
        self.env.update(zip(func.params, args))
        self.act = next(self._acts)
        self.block = Block()
        self.store = {}
        # Entering the body is an unfolding for the termination rule,
        # without the progress check (the body must be residualised once).
        self.fuel[func] = self._meet(old_fuel, _entry_values(clo, args))[0]
        result = yield from self.ev(func.body)
        body = self.block.finish(result.dyn)
        self._forget(self.block)
        ret_type = self.residual_type(func.ret_type)
        self._restore_fuel(func, old_fuel)
        self.env, self.act, self.block, self.store, self.tsubst, self.tscope = saved
        return Function(params, body, ret_type, func.type_params, func.attrs, span=func.span)

    # =============================================================== calls
    def visit_call(self, node: Call) -> Eval:
        callee = yield from self.ev(node.op)
        args: list[PStatic] = []
        for a in node.args:
            args.append((yield from self.ev(a)))
        s = callee.static
        if isinstance(s, SOp):
            return self.op_call(s.op, args, node)
        if isinstance(s, SCtorFn):
            value = Call(s.constructor, tuple(a.dyn for a in args), span=node.span)
            return PStatic(SConstructor(s.constructor, tuple(args)), self.bind(value, node))
        if isinstance(s, SConstructor) and not s.fields and not args:
            return callee                            # `Nil()`
        if isinstance(s, SClosure):
            return (yield from self.apply(callee, args, node))
        return self.residual_call(callee, args, node)

    def residual_call(self, callee: PStatic, args: list[PStatic], node: Call,
                      effects: bool = True) -> PStatic:
        value = Call(callee.dyn, tuple(a.dyn for a in args), node.attrs, span=node.span)
        out = self.dynamic(value, node)
        if effects:
            self.store = {}     # the callee may write any reference
        return out

    def op_call(self, op: Op, args: list[PStatic], node: Call) -> PStatic:
        """Evaluate an operator on static tensors (not one without
        arguments, as FoldConstant); otherwise residualise it (operators
        are pure: the store is kept)."""
        values = [static_value(a) for a in args]
        if args and all(v is not None for v in values):
            attrs = None if type(node.attrs) is Attrs else node.attrs
            try:
                out = self.interp.apply_op(op, values, attrs, node.span)
            except DiagnosticError:
                pass            # fails on this data: it will fail at run time too
            else:
                return self.reify(out, node)
        operands = tuple(_operand(a) for a in args)
        return self.dynamic(Call(op, operands, node.attrs, span=node.span), node)

    def reify(self, value: Value, node: Expr) -> PStatic:
        """A runtime value (a tensor or a tuple of them) as a PStatic."""
        if isinstance(value, np.ndarray):
            return PStatic(STensor(value), Constant(value, span=node.span))
        assert isinstance(value, tuple), type(value)
        fields = tuple(self.reify(v, node) for v in value)
        if not fields:
            return PStatic(STuple(()), Tuple((), span=node.span))
        tup = Tuple(tuple(f.dyn for f in fields), span=node.span)
        return PStatic(STuple(fields), self.bind(tup, node))

    def apply(self, callee: PStatic, args: list[PStatic], node: Call) -> Eval:
        """Apply a closure: unfold its body when the termination rule
        allows it, else call its residual function."""
        clo = callee.static
        assert isinstance(clo, SClosure)
        func = clo.func
        assert len(args) == len(func.params), "arity mismatch (ill-typed input)"
        if _is_primitive(func):
            return self.primitive_call(callee, args, node)
        fuel = self._fuel_for(func, _entry_values(clo, args))
        if fuel is None:
            return self.residual_call(callee, args, node)
        self.budget -= 1
        mapping = dict(clo.tsubst)
        if func.type_params:
            if len(node.type_args) == len(func.type_params):
                mapping.update((tp, substitute(ta, self.tsubst))  # type: ignore[arg-type]
                               for tp, ta in zip(func.type_params, node.type_args))
            else:
                # a recursive call checked monomorphically: same instance
                mapping.update((tp, self.tsubst[tp]) for tp in func.type_params
                               if tp in self.tsubst)
        saved = (self.env, self.act, self.tsubst)
        old_fuel = self.fuel.get(func)
        env = dict(clo.env)
        if clo.self_var is not None:
            env[clo.self_var] = callee
        env.update(zip(func.params, args))
        self.env = env
        self.act = next(self._acts)
        self.tsubst = mapping
        self.fuel[func] = fuel
        result = yield from self.ev(func.body)
        self._restore_fuel(func, old_fuel)
        self.env, self.act, self.tsubst = saved
        return result

    def primitive_call(self, callee: PStatic, args: list[PStatic], node: Call) -> PStatic:
        """A fused primitive function is evaluated as a whole on static
        arguments and otherwise called; it is never unfolded.  As for
        operators, one without arguments is not evaluated (FoldConstant's
        rule: that would only trade a loop for a constant in flash)."""
        clo = callee.static
        assert isinstance(clo, SClosure)
        values = [static_value(a) for a in args]
        if args and all(v is not None for v in values):
            try:
                out = self.interp.apply(Closure(clo.func, {}), values)
            except DiagnosticError:
                pass
            else:
                return self.reify(out, node)
        return self.residual_call(callee, args, node, effects=False)

    # ------------------------------------------------------------ fuel
    def _meet(self, old: _Fuel | None, args: list[PStatic]) -> tuple[_Fuel, bool]:
        """The fuel after entering with ``args``, and whether the
        arguments made progress (see the design note)."""
        now = _measures(args)
        if old is None:
            return _Fuel(now, 1), True
        met = tuple((min(t, ot), min(v, ov)) for (t, v), (ot, ov) in zip(now, old.measures))
        progress = any(t < ot or v < ov for (t, v), (ot, ov) in zip(now, old.measures))
        return _Fuel(met, old.depth + 1), progress

    def _fuel_for(self, func: Function, args: list[PStatic]) -> _Fuel | None:
        """The fuel to unfold ``func`` with, or None to call it instead."""
        if self.budget <= 0:
            return None
        old = self.fuel.get(func)
        if old is not None and old.depth >= self.limits.max_depth:
            return None
        fuel, progress = self._meet(old, args)
        return fuel if progress else None

    def _restore_fuel(self, func: Function, old: _Fuel | None) -> None:
        if old is None:
            del self.fuel[func]
        else:
            self.fuel[func] = old

    # ======================================================= control flow
    def visit_if(self, node: If) -> Eval:
        cond = yield from self.ev(node.cond)
        if isinstance(cond.static, STensor):
            branch = node.true_branch if bool(cond.static.data) else node.false_branch
            return (yield from self.ev(branch))
        base = self.store
        branches = []
        stores = []
        for branch in (node.true_branch, node.false_branch):
            self.store = dict(base)
            branches.append((yield from self.in_block(branch)))
            stores.append(self.store)
        self.store = _merge(base, stores)
        return self.dynamic(If(cond.dyn, branches[0], branches[1], span=node.span), node)

    def visit_match(self, node: Match) -> Eval:
        data = yield from self.ev(node.data)
        for clause in node.clauses:
            status, bindings = match_static(clause.lhs, data)
            if status is MatchStatus.MATCH:
                self.env.update(bindings)
                return (yield from self.ev(clause.rhs))
            if status is MatchStatus.UNKNOWN:
                break
        # Undecided (or no clause matches: the residual match fails at
        # run time, where the program would have).
        base = self.store
        clauses = []
        stores = []
        for clause in node.clauses:
            self.store = dict(base)
            lhs = self._fresh_pattern(clause.lhs)
            rhs = yield from self.in_block(clause.rhs)
            clauses.append(Clause(lhs, rhs, span=clause.span))
            stores.append(self.store)
        self.store = _merge(base, stores)
        match = Match(data.dyn, tuple(clauses), node.complete, span=node.span)
        return self.dynamic(match, node)

    def _fresh_pattern(self, p: Pattern) -> Pattern:
        """``p`` with fresh variables, each bound to a dynamic value."""
        if isinstance(p, PatternVar):
            var = Var(p.var.name_hint,
                      self.residual_type(p.var.checked_type or p.var.type_annotation),
                      span=p.var.span)
            self.env[p.var] = PStatic(None, var)
            return PatternVar(var, span=p.span)
        if isinstance(p, PatternConstructor):
            subs = tuple(self._fresh_pattern(q) for q in p.patterns)
            return PatternConstructor(p.constructor, subs, span=p.span)
        if isinstance(p, PatternTuple):
            return PatternTuple(tuple(self._fresh_pattern(q) for q in p.patterns), span=p.span)
        return p

    # ========================================================== references
    def visit_ref_create(self, node: RefCreate) -> Eval:
        value = yield from self.ev(node.value)
        ref = SRef()
        self.store[ref] = value
        return PStatic(ref, self.bind(RefCreate(value.dyn, span=node.span), node))

    def visit_ref_read(self, node: RefRead) -> Eval:
        ref = yield from self.ev(node.ref)
        s = ref.static
        if isinstance(s, SRef):
            known = self.store.get(s)
            if known is not None:
                return known
        out = self.dynamic(RefRead(ref.dyn, span=node.span), node)
        if isinstance(s, SRef):
            self.store[s] = out     # until the next write
        return out

    def visit_ref_write(self, node: RefWrite) -> Eval:
        ref = yield from self.ev(node.ref)
        value = yield from self.ev(node.value)
        self.bind(RefWrite(ref.dyn, value.dyn, span=node.span), node)
        if isinstance(ref.static, SRef):
            self.store[ref.static] = value
        else:
            self.store = {}         # an unknown cell: any known one may alias it
        return PStatic(STuple(()), Tuple((), span=node.span))


# ================================================================= helpers

def _operand(ps: PStatic) -> Expr:
    """The operand an operator call takes for ``ps``: a static tuple is
    passed as a tuple literal (``concatenate((%a, %b))``), as written."""
    s = ps.static
    if not isinstance(s, STuple) or not s.fields:
        return ps.dyn
    out: list[Expr] = []
    stack: list[tuple[PStatic, bool]] = [(ps, False)]
    while stack:
        node, done = stack.pop()
        st = node.static
        if done:
            assert isinstance(st, STuple)
            n = len(st.fields)
            fields = tuple(out[len(out) - n:])
            del out[len(out) - n:]
            out.append(Tuple(fields, span=node.dyn.span))
        elif isinstance(st, STuple) and st.fields:
            stack.append((node, True))
            stack.extend((f, False) for f in reversed(st.fields))
        else:
            out.append(node.dyn)
    return out[0]


def _merge(base: dict[SRef, PStatic], stores: list[dict[SRef, PStatic]]) -> dict[SRef, PStatic]:
    """The store after alternative branches: what none of them changed."""
    return {r: ps for r, ps in base.items() if all(s.get(r) is ps for s in stores)}


def _scan(mod: IRModule) -> tuple[set[Expr], dict[Expr, str]]:
    """Nodes with several parents (evaluated once per activation), and
    the name of the ``let`` variable each let-bound value had (a name
    for its residual binding)."""
    shared: set[Expr] = set()
    hints: dict[Expr, str] = {}
    for func in mod.functions.values():
        seen: set[Expr] = set()
        for node in post_order(func):
            if isinstance(node, Let):
                hints[node.value] = node.var.name_hint
            for child in children(node):
                if child in seen:
                    if not isinstance(child, _LEAVES):
                        shared.add(child)
                else:
                    seen.add(child)
    return shared, hints
