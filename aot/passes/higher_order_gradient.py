"""HigherOrderGradient: reverse-mode automatic differentiation of whole programs.

Design note
-----------
As Relay's ``ReverseAD`` (``src/relay/transforms/higher_order_gradient.cc``)
with the zero handling of its ``LazyGradientInit``
(``lazy_gradient_init.cc``): with ``if``, ``match``, recursion and
closures the order of the backward steps is known only at run time, so
instead of a tape built at compile time (first-order mode,
:mod:`.gradient`) the program is rewritten into one that builds its own
backward pass, out of references and closures, as it runs.

The globals the entry reaches are first made monomorphic
(:mod:`.specialize`; constructors used as values are eta-expanded before,
operators used as values after, :mod:`.eta_expand`) and put in A-normal
form (:mod:`.to_a_normal_form`: a shared node is let-bound once, so each
construct is transformed once).  Then the entry
``fn(p1, ..., pn) -> r`` becomes

    fn(p1, ..., pn) -> (r, (dr/dp1, ..., dr/dpn))

seeded with ``ones_like(r)`` (every float field of a tuple result), as
first-order mode.

*Types* (``R``): a float tensor ``T`` becomes the pair
``(T, Ref[GradCell[T]])`` -- its value and its adjoint cell; integer and
boolean tensors stay as they are (no adjoint: indices, masks,
conditions); tuples, references and ADT arguments map their parts; a
function ``(A...) -> B`` becomes ``(R(A)..., Ref[fn() -> ()]) -> R(B)``:
every function takes the *backpropagator* ``bp`` as an extra, last
parameter.  An ADT whose constructors hold float tensors directly (not
through a type parameter) gets a copy ``<Name>_grad`` with mapped fields.

*Expressions* (``E``, under the current ``bp``):

* an operator call computes the forward call on the arguments' values,
  gives its result fresh cells, and, when an argument and the result are
  differentiable, *prepends* to the backpropagator::

      let %prev = ref(read(bp));
      bp := fn () { match (read(adj(y))) { GradRaw(%g) => adj(x_i) += rule_i(y, %g) ...
                                           | GradZero => () };
                    read(%prev)() }

  The rules are the operators' ``grad`` column
  (:mod:`aot.ir.ops.gradients`), the same as first-order mode's; a rule's
  ``call`` is the variable holding the forward result.  An operator
  without a rule is refused at transform time naming it, when a
  differentiable value flows into it and out of it.
* a constant is paired with a fresh zero cell; a variable maps to its
  transformed variable; ``if`` tests its (boolean) condition, ``match``
  its transformed scrutinee with mapped patterns; references hold
  transformed values (so gradients flow through them); constructors build
  transformed fields.
* a function literal gets a fresh ``bp`` parameter and its body is
  transformed under it; any other call (a global, a closure, a literal)
  passes the current ``bp``.  A global is transformed once into
  ``@<name>_grad`` (a worklist, so global, local and mutual recursion
  work).

*Zero handling* (``LazyGradientInit``): an adjoint cell holds
``GradCell[T] = GradRaw(T) | GradZero`` (Relay's ``GradCell`` without the
``One`` case: the seed is written as ``GradRaw(ones_like(r))``).  A cell
starts as ``GradZero`` (no tensor allocated), adding into ``GradZero``
stores the contribution itself, and a backward step whose result cell is
still ``GradZero`` is skipped whole (its rule is not evaluated): an
untouched gradient costs a tag test, never a ``zeros_like`` and an
``add``.  A parameter whose cell is still ``GradZero`` at the end gets
``zeros_like``; an integer parameter's gradient is zeros, as in
first-order mode.

*Code size*: the step before (``%prev``) is kept in a cell of its own
rather than captured directly.  PartialEvaluate residualises every closure
literal with an empty store; a captured static closure would be unfolded
into it, so the residual function of the n-th step would contain all n
steps before it (code quadratic in the number of operations, when the
steps stay closures because control flow is dynamic).  Through the cell,
the activation that runs the backward pass (whose store knows the cell)
still unfolds the whole chain, while a residual step calls its
predecessor.

*Entry*: each float parameter is paired with a ``GradZero`` cell, the body
is transformed in place with ``bp = ref(fn () { () })``, the result's cells
are seeded, ``read(bp)()`` runs the backward pass, and the cells are read.

*Back to dataflow*: for a dataflow program every cell, closure and
``GradCell`` is static, so PartialEvaluate (which tracks references,
unfolds closures and resolves matches on known constructors) runs the
backward pass at compile time and leaves only the operator calls;
DeadCodeElimination and FoldConstant clean up, and the program takes the
dataflow backend (fused kernels on the static arena, no object pool), as
first-order mode's output does (the same program, structurally).
Each backward step is one unfolding, so PartialEvaluate's budget
(``max_unfold``, 1,000 per global) bounds it: past about a thousand
operator calls in one function, raise the budget or use first-order mode
(``mode="auto"`` does for a dataflow entry).  Programs whose control flow
depends on run-time values keep closures, references and ``GradCell``
values and compile with the object pool.

The output module holds the transformed entry, the ``@<name>_grad``
globals and ``GradCell`` (and ``<Name>_grad`` ADTs) besides every global
of the input, unchanged.

Refused with a diagnostic: a polymorphic entry, entry parameters or a
result that are not tensors or tuples of tensors (the seed and the
gradients are tensors), fused (``Primitive``) functions, and an operator
without a rule (named) that a differentiable value flows into and out of
-- at transform time, even if at run time no gradient would reach it
(first-order mode refuses only when one does).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..diagnostics import DiagnosticError
from ..ir.adt import (Clause, Constructor, Pattern, PatternConstructor, PatternTuple, PatternVar,
                      PatternWildcard, TypeData)
from ..ir.expr import (Call, Constant, Expr, Function, GlobalVar, If, Let, Match, Op, RefCreate,
                       RefRead, RefWrite, Tuple, TupleGetItem, Var)
from ..ir.module import IRModule
from ..ir.ops.gradients import NoGradient, call, why_not_differentiable
from ..ir.registry import lookup
from ..ir.type_infer import infer_types
from ..ir.types import (FuncType, GlobalTypeVar, RefType, TensorType, TupleType, Type, TypeCall,
                        TypeVar)
from ..ir.visitor import ExprFunctor, Visit
from .gradient import SubstituteCall, differentiable_type
from .manager import register_pass

__all__ = ["HigherOrderGradientOptions", "higher_order_gradient", "GRAD_CELL"]

#: the name of the adjoint-cell ADT added to the module
GRAD_CELL = "GradCell"
UNIT = TupleType(())
BP_TYPE = RefType(FuncType((), UNIT))


@dataclass(frozen=True)
class HigherOrderGradientOptions:
    """``entry``: the function to differentiate."""

    entry: str = "main"


@register_pass("HigherOrderGradient", opt_level=4, options=HigherOrderGradientOptions)
def higher_order_gradient(mod: IRModule,
                          opts: HigherOrderGradientOptions = HigherOrderGradientOptions()
                          ) -> IRModule:
    """HigherOrderGradient: @entry returns (result, gradients of its parameters),
    for any program (see the module docstring)."""
    from .dead_code import reachable_globals
    from .eta_expand import EtaExpandOptions, eta_expand, eta_expand_ops
    from .specialize import specialize
    from .to_a_normal_form import to_a_normal_form
    if opts.entry not in mod:
        raise DiagnosticError(f"gradient: the module has no function @{opts.entry}")
    # only what the entry reaches is transformed (and type-checked here)
    sub = IRModule()
    for data in mod.type_definitions.values():
        sub.add_type(data)
    for gv in reachable_globals(mod, opts.entry):
        sub.add(gv, mod[gv])
    typed = infer_types(sub)
    if typed[opts.entry].type_params:
        raise DiagnosticError(f"higher-order gradient: @{opts.entry} is polymorphic; "
                              f"differentiate a monomorphic function", typed[opts.entry].span)
    for gv, fn in typed.functions.items():
        if fn.attrs.get("Primitive"):
            raise DiagnosticError(f"higher-order gradient: @{gv.name} is a fused (Primitive) "
                                  f"function; differentiate the program before FuseOps", fn.span)
    expanded = eta_expand(typed, EtaExpandOptions(expand_constructor=True))
    mono = infer_types(to_a_normal_form(eta_expand_ops(specialize(expanded, opts.entry))))
    out = mod.copy()            # other globals are kept as they are
    out.update(_ReverseAD(mono, opts.entry, mod).run())
    return infer_types(out)


class _LetList:
    """Bindings in evaluation order, wrapped around a body at the end."""

    def __init__(self) -> None:
        self.lets: list[tuple[Var, Expr]] = []

    def push(self, value: Expr, t: Type | None, name: str = "t") -> Var:
        v = Var(f"{name}{len(self.lets)}", t, checked_type=t)
        self.lets.append((v, value))
        return v

    def do(self, value: Expr) -> None:
        self.push(value, UNIT, "u")

    def wrap(self, body: Expr) -> Expr:
        for v, value in reversed(self.lets):
            body = Let(v, value, body)
        return body


def _is_float(t: Type | None) -> bool:
    return isinstance(t, TensorType) and t.dtype.is_float


class _ReverseAD(ExprFunctor[Expr]):
    memoize = False

    def __init__(self, mod: IRModule, entry: str, whole: IRModule) -> None:
        super().__init__()
        self.mod = mod
        self.whole = whole          # names of the output module must not clash
        self.entry = entry
        self.out = mod.copy()
        self.vars: dict[Var, Var] = {}
        self.gvars: dict[GlobalVar, GlobalVar] = {}
        self.work: list[GlobalVar] = []
        self.adts: dict[GlobalTypeVar, GlobalTypeVar | None] = {}
        self.ctors: dict[Constructor, Constructor] = {}
        self.bp: Var = Var("bp", BP_TYPE)
        cell = self.out.type_definitions.get(GlobalTypeVar(GRAD_CELL))
        if cell is None:
            a = TypeVar("A")
            header = GlobalTypeVar(GRAD_CELL)
            cell = TypeData(header, (a,), (Constructor("GradRaw", (a,), header, 0),
                                           Constructor("GradZero", (), header, 1)))
            self.out.add_type(cell)
        if [c.name for c in cell.constructors] != ["GradRaw", "GradZero"]:
            raise DiagnosticError(f"higher-order gradient: the module defines its own type "
                                  f"{GRAD_CELL}; the gradient needs that name", cell.span)
        self.raw, self.zero = cell.constructors

    # ================================================================ types
    def rtype(self, t: Type | None) -> Type | None:
        if t is None:
            return None
        if isinstance(t, TensorType):
            return TupleType((t, RefType(self.cell_type(t)))) if t.dtype.is_float else t
        if isinstance(t, TupleType):
            return TupleType(tuple(self.rtype_(f) for f in t.fields))
        if isinstance(t, RefType):
            return RefType(self.rtype_(t.value))
        if isinstance(t, FuncType):
            return FuncType(tuple(self.rtype_(a) for a in t.arg_types) + (BP_TYPE,),
                            self.rtype_(t.ret_type), t.type_params, t.type_constraints)
        if isinstance(t, TypeCall):
            return TypeCall(self.adt(t.func), tuple(self.rtype_(a) for a in t.args))
        return t

    def rtype_(self, t: Type) -> Type:
        out = self.rtype(t)
        assert out is not None
        return out

    def cell_type(self, t: Type) -> Type:
        return TypeCall(GlobalTypeVar(GRAD_CELL), (t,))

    def adt(self, name: GlobalTypeVar) -> GlobalTypeVar:
        """``name``, or its ``_grad`` copy when a constructor holds a float
        tensor directly."""
        if name in self.adts:
            return self.adts[name] or name
        data = self.mod.type_definitions.get(name)
        if data is None or data.extern:
            self.adts[name] = None
            return name
        self.adts[name] = None               # a recursive mention maps to itself meanwhile
        if all(self.rtype(i) == i for c in data.constructors for i in c.inputs):
            return name
        new = GlobalTypeVar(self._fresh_type_name(f"{name.name}_grad"))
        self.adts[name] = new
        ctors = tuple(Constructor(self._fresh_ctor_name(f"{c.name}_grad"),
                                  tuple(self.rtype_(i) for i in c.inputs), new, c.tag)
                      for c in data.constructors)
        self.ctors.update(zip(data.constructors, ctors))
        self.out.add_type(TypeData(new, data.type_vars, ctors, span=data.span))
        return new

    def _fresh_type_name(self, base: str) -> str:
        name, i = base, 0
        while self.out.has_type(name) or self.whole.has_type(name):
            i += 1
            name = f"{base}{i}"
        return name

    def _fresh_ctor_name(self, base: str) -> str:
        name, i = base, 0
        while self.out.constructor(name) is not None or self.whole.constructor(name) is not None:
            i += 1
            name = f"{base}{i}"
        return name

    def ctor(self, c: Constructor) -> Constructor:
        self.adt(c.belong_to)
        return self.ctors.get(c, c)

    # ================================================================ driver
    def run(self) -> IRModule:
        fn = self.mod[self.entry]
        ll = _LetList()
        for p in fn.params:
            self.check_tensors(p.checked_type or p.type_annotation, "a parameter", p)
        self.bp = ll.push(RefCreate(Function((), Tuple(()), UNIT)), BP_TYPE, "bp")
        pairs = []
        for p in fn.params:
            t = p.checked_type or p.type_annotation
            pair = ll.push(self.lift(p, t), self.rtype(t), p.name_hint + "_ad")
            self.vars[p] = pair
            pairs.append((p, pair, t))
        result_t = fn.body.checked_type
        self.check_tensors(result_t, "a result", fn.body)
        result = ll.push(self.visit(fn.body), self.rtype(result_t), "result")
        self.seed(ll, result, result_t)
        ll.do(Call(RefRead(self.bp), ()))
        grads = [self.read_grad(ll, pair, p, t) for p, pair, t in pairs]
        assert result_t is not None
        body = ll.wrap(Tuple((self.value(result, result_t, ll), Tuple(tuple(grads)))))
        while self.work:
            self.transform_global(self.work.pop())
        self.out.add(self.entry, Function(fn.params, body, None, (), fn.attrs, span=fn.span))
        return self.out

    def transform_global(self, gv: GlobalVar) -> None:
        fn = self.mod[gv]
        new_gv = self.gvars[gv]
        self.bp = Var("bp", BP_TYPE)
        params = tuple(self.map_var(p) for p in fn.params) + (self.bp,)
        body = self.visit(fn.body)
        self.out.add(new_gv, Function(params, body, self.rtype(fn.ret_type), (), fn.attrs,
                                      span=fn.span))

    def check_tensors(self, t: Type | None, what: str, node: Expr) -> None:
        if isinstance(t, TupleType):
            for f in t.fields:
                self.check_tensors(f, what, node)
        elif not isinstance(t, TensorType):
            raise DiagnosticError(f"higher-order gradient of @{self.entry}: {what} of type {t} "
                                  f"is not supported; parameters and the result must be "
                                  f"tensors or tuples of tensors", node.span)

    def lift(self, e: Expr, t: Type | None) -> Expr:
        """A value of the original program as a transformed value (fresh cells)."""
        if _is_float(t):
            return Tuple((e, RefCreate(self.zero)))
        if isinstance(t, TupleType):
            return Tuple(tuple(self.lift(TupleGetItem(e, i), f) for i, f in enumerate(t.fields)))
        return e

    def value(self, e: Expr, t: Type, ll: _LetList) -> Expr:
        """The forward value of a transformed value ``e`` of original type ``t``."""
        if _is_float(t):
            return TupleGetItem(e, 0)
        if isinstance(t, TupleType):
            return Tuple(tuple(self.value(TupleGetItem(e, i), f, ll)
                               for i, f in enumerate(t.fields)))
        return e

    def seed(self, ll: _LetList, e: Expr, t: Type | None) -> None:
        if _is_float(t):
            ll.do(RefWrite(TupleGetItem(e, 1),
                           Call(self.raw, (call("ones_like", TupleGetItem(e, 0)),))))
        elif isinstance(t, TupleType):
            for i, f in enumerate(t.fields):
                self.seed(ll, TupleGetItem(e, i), f)

    def read_grad(self, ll: _LetList, pair: Expr, p: Expr, t: Type | None) -> Expr:
        if _is_float(t):
            return self.materialize(RefRead(TupleGetItem(pair, 1)), TupleGetItem(pair, 0), t)
        if isinstance(t, TupleType):
            return Tuple(tuple(self.read_grad(ll, TupleGetItem(pair, i), TupleGetItem(p, i), f)
                               for i, f in enumerate(t.fields)))
        return call("zeros_like", p)

    def materialize(self, cell: Expr, value: Expr, t: Type | None) -> Expr:
        """The tensor a GradCell stands for: its contents, or zeros."""
        g = Var("g", t)
        return Match(cell, (Clause(PatternConstructor(self.raw, (PatternVar(g),)), g),
                            Clause(PatternConstructor(self.zero, ()),
                                   call("zeros_like", value))))

    def accumulate(self, ll: _LetList, target: Expr, t: Type | None, contribution: Expr) -> None:
        """``adj(target) += contribution`` for a transformed value ``target``."""
        if isinstance(t, TensorType) and t.dtype.is_float:
            c = ll.push(contribution, t, "c")
            cell = ll.push(TupleGetItem(target, 1), RefType(self.cell_type(t)), "cell")
            old = Var("old", t)
            new = Match(RefRead(cell), (
                Clause(PatternConstructor(self.raw, (PatternVar(old),)),
                       Call(self.raw, (call("add", old, c),))),
                Clause(PatternConstructor(self.zero, ()), Call(self.raw, (c,)))))
            ll.do(RefWrite(cell, new))
        elif isinstance(t, TupleType) and differentiable_type(t):
            c = ll.push(contribution, t, "c")
            for i, f in enumerate(t.fields):
                if differentiable_type(f):
                    self.accumulate(ll, TupleGetItem(target, i), f, TupleGetItem(c, i))

    def map_var(self, v: Var) -> Var:
        new = self.vars.get(v)
        if new is None:
            t = v.checked_type or v.type_annotation
            new = self.vars[v] = Var(v.name_hint, self.rtype(t), span=v.span)
        return new

    # ================================================================ expressions
    def visit_var(self, node: Var) -> Expr:
        return self.map_var(node)

    def visit_global_var(self, node: GlobalVar) -> Expr:
        new = self.gvars.get(node)
        if new is None:
            name, i = f"{node.name}_grad", 0
            while (name in self.out or name in self.whole
                   or any(g.name == name for g in self.gvars.values())):
                i += 1
                name = f"{node.name}_grad{i}"
            new = self.gvars[node] = self.out.global_var(name)
            self.work.append(node)
        return new

    def visit_constant(self, node: Constant) -> Expr:
        return self.lift(node, node.checked_type)

    def visit_constructor(self, node: Constructor) -> Expr:
        if node.inputs:
            raise DiagnosticError(f"higher-order gradient of @{self.entry}: the constructor "
                                  f"{node.name} used as a value is not supported; eta-expand "
                                  f"it (fn (...) {{ {node.name}(...) }})", node.span)
        return self.ctor(node)

    def visit_op(self, node: Op) -> Expr:
        raise DiagnosticError(f"higher-order gradient of @{self.entry}: operator {node.name} "
                              f"used as a value", node.span)

    def visit_tuple(self, node: Tuple) -> Visit:
        fields = []
        for f in node.fields:
            fields.append((yield f))
        return Tuple(tuple(fields), span=node.span)

    def visit_tuple_getitem(self, node: TupleGetItem) -> Visit:
        return TupleGetItem((yield node.tuple_value), node.index, span=node.span)

    def visit_let(self, node: Let) -> Visit:
        v = self.map_var(node.var)
        value = yield node.value
        return Let(v, value, (yield node.body), span=node.span)

    def visit_if(self, node: If) -> Visit:
        cond = yield node.cond
        return If(cond, (yield node.true_branch), (yield node.false_branch), span=node.span)

    def visit_match(self, node: Match) -> Visit:
        data = yield node.data
        clauses = []
        for c in node.clauses:
            lhs = self.pattern(c.lhs)
            clauses.append(Clause(lhs, (yield c.rhs), span=c.span))
        return Match(data, tuple(clauses), node.complete, span=node.span)

    def pattern(self, p: Pattern) -> Pattern:
        if isinstance(p, PatternVar):
            return PatternVar(self.map_var(p.var), span=p.span)
        if isinstance(p, PatternConstructor):
            return PatternConstructor(self.ctor(p.constructor),
                                      tuple(self.pattern(q) for q in p.patterns), span=p.span)
        if isinstance(p, PatternTuple):
            return PatternTuple(tuple(self.pattern(q) for q in p.patterns), span=p.span)
        assert isinstance(p, PatternWildcard)
        return p

    def visit_ref_create(self, node: RefCreate) -> Visit:
        return RefCreate((yield node.value), span=node.span)

    def visit_ref_read(self, node: RefRead) -> Visit:
        return RefRead((yield node.ref), span=node.span)

    def visit_ref_write(self, node: RefWrite) -> Visit:
        ref = yield node.ref
        return RefWrite(ref, (yield node.value), span=node.span)

    def visit_function(self, node: Function) -> Visit:
        if node.attrs.get("Primitive"):
            raise DiagnosticError(f"higher-order gradient of @{self.entry}: a fused (Primitive) "
                                  f"function; differentiate the program before FuseOps",
                                  node.span)
        saved = self.bp
        self.bp = Var("bp", BP_TYPE)
        params = tuple(self.map_var(p) for p in node.params) + (self.bp,)
        body = yield node.body
        self.bp = saved
        return Function(params, body, self.rtype(node.ret_type), node.type_params, node.attrs,
                        span=node.span)

    def visit_call(self, node: Call) -> Visit:
        if isinstance(node.op, Op):
            return (yield from self.op_call(node))
        args = []
        for a in node.args:
            args.append((yield a))
        if isinstance(node.op, Constructor):
            return Call(self.ctor(node.op), tuple(args), node.attrs,
                        tuple(self.rtype_(t) for t in node.type_args), span=node.span)
        callee = yield node.op
        return Call(callee, (*args, self.bp), node.attrs, (), span=node.span)

    def op_call(self, node: Call) -> Visit:
        assert isinstance(node.op, Op)
        ll = _LetList()
        arg_types = [a.checked_type for a in node.args]
        args = []
        for a, t in zip(node.args, arg_types):
            args.append(ll.push((yield a), self.rtype(t), "a"))
        primal = []
        for a, t in zip(args, arg_types):
            pv = self.value(a, t, ll) if t is not None else a
            primal.append(pv if isinstance(pv, Var) else ll.push(pv, t, "x"))
        out_t = node.checked_type
        y = ll.push(Call(node.op, tuple(primal), node.attrs, node.type_args, span=node.span,
                         checked_type=out_t), out_t, "y")
        ret = ll.push(self.lift(y, out_t), self.rtype(out_t), "r")
        if differentiable_type(out_t) and any(differentiable_type(t) for t in arg_types):
            self.backward(ll, node, args, arg_types, primal, y, ret)
        return ll.wrap(ret)

    def backward(self, ll: _LetList, node: Call, args: list[Var], arg_types: list[Type | None],
                 primal: list[Var], y: Var, ret: Var) -> None:
        assert isinstance(node.op, Op)
        name = node.op.name
        op_def = lookup(name)
        assert op_def is not None
        if op_def.grad is None:
            raise DiagnosticError(f"gradient of @{self.entry}: operator {name} has no gradient "
                                  f"rule ({why_not_differentiable(name)})", node.span)
        out_t = node.checked_type
        c = Call(node.op, tuple(primal), node.attrs, node.type_args, span=node.span,
                 checked_type=out_t)
        g = Var("g", out_t, checked_type=out_t)
        try:
            contributions = op_def.grad(c, g)
        except NoGradient as exc:
            raise DiagnosticError(f"gradient of @{self.entry}: operator {name}: {exc}",
                                  node.span) from None
        assert len(contributions) == len(args), \
            f"{name}: gradient rule gave {len(contributions)} adjoints for {len(args)} arguments"
        step = _LetList()
        for arg, t, contribution in zip(args, arg_types, contributions):
            if contribution is None or not differentiable_type(t):
                continue
            self.accumulate(step, arg, t, SubstituteCall(c, y).visit(contribution))
        # the step before this one, in a cell of its own (see "Code size")
        prev = ll.push(RefCreate(RefRead(self.bp)), BP_TYPE, "prev")
        if _is_float(out_t):
            # skip the whole step while the result's adjoint is zero
            update: Expr = Match(RefRead(TupleGetItem(ret, 1)), (
                Clause(PatternConstructor(self.raw, (PatternVar(g),)), step.wrap(Tuple(()))),
                Clause(PatternConstructor(self.zero, ()), Tuple(()))))
        else:
            update = Let(g, self.read_grad(step, ret, y, out_t), step.wrap(Tuple(())))
        body = Let(Var("u", UNIT), update, Call(RefRead(prev), ()))
        ll.do(RefWrite(self.bp, Function((), body, UNIT)))

