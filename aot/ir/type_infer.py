"""InferType: a new, fully typed module, or diagnostics.

Design note
-----------
1. Type definitions are checked (constructor fields mention only the
   definition's type parameters and ADTs that exist, with the right number
   of arguments).
2. Globals are inferred one strongly connected component of the call graph
   at a time, callees first, so a function's final (generalised) type is
   known wherever it is used outside its own component.  Inside a
   component each function has a *skeleton* type built from its
   annotations, with holes where annotations are missing; mutual recursion
   goes through the skeletons.
3. :class:`_Constraints` walks each body once (with the memoised trampoline
   of :mod:`aot.ir.visitor`) and states constraints in a
   :class:`~aot.ir.type_solver.TypeSolver`: unifications at once,
   operator relations and projections deferred.  ``solve`` runs relations to
   a fixed point; whatever is still unknown is reported.
4. Generalisation: holes left in a global's signature become type
   parameters (``def @id(%x) { %x }`` gets ``fn[A](A) -> A``).  Holes left
   only inside a body are unconstrained and default to ``()``.
5. :class:`_Annotate` rebuilds each function with ``checked_type`` on every
   node, fully resolved, and ``type_args`` on calls of polymorphic callees.

Every error is collected with its span and all are raised together.

6. A module that still holds exactly the function and type-definition
   objects inference returned (IR nodes are immutable, so the same
   objects are the same program) is typed already: a copy of it is
   returned without inferring again (a pipeline's InferType after the
   frontend's, verification after a pass that ended with inference).
"""

from __future__ import annotations

import dataclasses
from types import GeneratorType
from typing import Any

from ..diagnostics import DiagnosticCollector, DiagnosticError, Span
from .adt import (Constructor, Pattern, PatternConstructor, PatternTuple, PatternVar,
                  TypeData)
from .analysis import global_refs
from .attrs import Attrs
from .expr import (Call, Constant, Expr, Function, GlobalVar, If, Let, Match, Op,
                   RefCreate, RefRead, RefWrite, Tuple, TupleGetItem, Var)
from .module import IRModule
from .registry import lookup
from .types import (BOOL_SCALAR, UNIT, FuncType, GlobalTypeVar, IncompleteType, RefType,
                    TupleType, Type, TypeCall, TypeKind, TypeRelation, TypeVar,
                    free_type_vars, holes, map_type, substitute, type_children)
from .visitor import VISIT_METHOD, ExprFunctor, ExprMutator, Visit
from .match_check import unmatched_cases
from .type_solver import Deferred, TypeSolver


def _contents(mod: IRModule) -> tuple[tuple, tuple]:
    return tuple(mod.functions.items()), tuple(mod.type_definitions.items())


def _still_inferred(mod: IRModule) -> bool:
    """Whether ``mod`` holds exactly what inference returned (note 6)."""
    then = getattr(mod, "_inferred", None)
    if then is None:
        return False
    return all(len(a) == len(b) and all(x is y and f is g for (x, f), (y, g) in zip(a, b))
               for a, b in zip(then, _contents(mod)))


def infer_types(mod: IRModule) -> IRModule:
    if _still_inferred(mod):
        return mod.copy()
    diags = DiagnosticCollector()
    _check_type_definitions(mod, diags)
    diags.raise_if_any()
    final: dict[GlobalVar, FuncType] = {}
    typed: dict[GlobalVar, Function] = {}
    for component in _components(mod):
        solver = TypeSolver(diagnostics=diags, op_lookup=lookup)
        infer = _Constraints(mod, solver, final)
        skeletons = {gv: _skeleton(mod[gv]) for gv in component}
        infer.global_types.update(skeletons)
        for gv in component:
            infer.check_global(gv, mod[gv], skeletons[gv])
        solver.solve()
        while solver.relations and solver.apply_defaults():
            solver.solve()
        finished = {gv: _finish(mod[gv], skeletons[gv], solver, infer) for gv in component}
        solver.report_stuck()
        if diags:
            # Later components would only repeat these errors.
            break
        for gv, (func_type, typed_func) in finished.items():
            final[gv] = func_type
            typed[gv] = typed_func
    diags.raise_if_any()
    out = IRModule()
    for data in mod.type_definitions.values():
        out.add_type(data)
    for gv in mod.functions:
        out.add(gv, typed[gv])
    out._inferred = _contents(out)
    return out


# --------------------------------------------------------------- components

def _components(mod: IRModule) -> list[list[GlobalVar]]:
    """Strongly connected components of the call graph, callees first
    (Tarjan's algorithm, iterative)."""
    gvars = list(mod.functions)
    edges = {gv: [g for g in global_refs(mod[gv]) if g in mod.functions] for gv in gvars}
    index: dict[GlobalVar, int] = {}
    low: dict[GlobalVar, int] = {}
    on_stack: set[GlobalVar] = set()
    stack: list[GlobalVar] = []
    out: list[list[GlobalVar]] = []
    counter = 0
    for root in gvars:
        if root in index:
            continue
        work: list[tuple[GlobalVar, int]] = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            succ = edges[node]
            if i < len(succ):
                work.append((node, i + 1))
                nxt = succ[i]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w is node:
                        break
                order = {g: k for k, g in enumerate(gvars)}
                out.append(sorted(comp, key=order.__getitem__))
    return out


def _skeleton(func: Function) -> FuncType:
    args = tuple(p.type_annotation if p.type_annotation is not None else IncompleteType()
                 for p in func.params)
    ret = func.ret_type if func.ret_type is not None else IncompleteType()
    return FuncType(args, ret, func.type_params)


# ------------------------------------------------------------- definitions

def _check_type_definitions(mod: IRModule, diags: DiagnosticCollector) -> None:
    for data in mod.type_definitions.values():
        allowed = set(data.type_vars)
        for ctor in data.constructors:
            for t in ctor.inputs:
                _check_type_wf(mod, t, allowed, data.span, diags,
                               f"constructor `{ctor.name}`")


def _check_type_wf(mod: IRModule, t: Type, allowed: set[TypeVar], span: Span | None,
                   diags: DiagnosticCollector, where: str) -> None:
    stack = [(t, frozenset(allowed))]
    while stack:
        node, scope = stack.pop()
        if isinstance(node, TypeVar) and node not in scope:
            diags.error(f"{where}: type variable `{node}` is not in scope", span)
        elif isinstance(node, (TypeCall, GlobalTypeVar)):
            problem = _type_arity_problem(mod, node)
            if problem:
                diags.error(f"{where}: {problem}", span)
            if isinstance(node, TypeCall):
                stack.extend((a, scope) for a in node.args)
                continue
        elif isinstance(node, FuncType):
            scope = scope | frozenset(node.type_params)
        stack.extend((c, scope) for c in type_children(node))


def _type_arity_problem(mod: IRModule, node: TypeCall | GlobalTypeVar) -> str | None:
    """What is wrong with a use of a defined type: unknown, or given the
    wrong number of type arguments (a bare ``Option`` is given none)."""
    head = node.func if isinstance(node, TypeCall) else node
    given = len(node.args) if isinstance(node, TypeCall) else 0
    if head not in mod.type_definitions:
        return f"unknown type `{head.name}`"
    want = len(mod.type_definitions[head].type_vars)
    if want == given:
        return None
    if given == 0:
        return f"`{head.name}` needs {want} type argument(s)"
    return f"`{head.name}` takes {want} type argument(s), given {given}"


def _annotation_problems(mod: IRModule, t: Type) -> list[str]:
    """Arity problems of every defined type used in an annotation."""
    out = []
    stack = [t]
    while stack:
        node = stack.pop()
        if isinstance(node, (TypeCall, GlobalTypeVar)):
            problem = _type_arity_problem(mod, node)
            if problem:
                out.append(problem)
            if isinstance(node, TypeCall):
                stack.extend(node.args)
                continue
        stack.extend(type_children(node))
    return out


# -------------------------------------------------------------- constraints

def op_value_type(name: str, arity: int) -> FuncType:
    """The polymorphic type of an operator used as a value:
    ``fn[T0, .., Tn](T0, .., Tn-1) -> Tn where name(T0, .., Tn)``."""
    params = tuple(TypeVar(f"T{i}") for i in range(arity + 1))
    return FuncType(params[:-1], params[-1], params, (TypeRelation(name, params),))


class _Constraints(ExprFunctor[Type]):
    """Walks expressions and states their typing constraints.  ``memo`` maps
    every node to its (possibly unresolved) type."""

    no_memo = (GlobalVar, Constructor, Op)

    def __init__(self, mod: IRModule, solver: TypeSolver,
                 final: dict[GlobalVar, FuncType]) -> None:
        super().__init__()
        self.mod = mod
        self.solver = solver
        self.diags = solver.diagnostics
        self.global_types: dict[GlobalVar, FuncType] = dict(final)
        self.type_args: dict[Call, tuple[Type, ...]] = {}
        self.attrs: dict[Call, Attrs] = {}

    def error(self, message: str, span: Span | None) -> Type:
        self.diags.error(message, span)
        return IncompleteType()

    def unify(self, expected: Type, found: Type, span: Span | None, what: str = "") -> Type:
        return self.solver.unify(expected, found, span, what)

    # -------------------------------------------------------------- globals
    def check_global(self, gv: GlobalVar, func: Function, skeleton: FuncType) -> None:
        for p, t in zip(func.params, skeleton.arg_types):
            self.memo[p] = self.annotation(t, p.span)
        if func.ret_type is not None:
            self.annotation(func.ret_type, func.span)
        self.memo[func] = skeleton
        body = self.visit(func.body)
        self.unify(skeleton.ret_type, body, func.body.span or func.span,
                   f"@{gv.name} returns")

    # -------------------------------------------------------------- leaves
    def annotation(self, t: Type, span: Span | None) -> Type:
        """A type written in the program, its defined types checked."""
        for problem in _annotation_problems(self.mod, t):
            self.diags.error(f"in the type `{t}`: {problem}", span)
        return t

    def visit_var(self, node: Var) -> Type:
        if node.type_annotation is None:
            return IncompleteType()
        return self.annotation(node.type_annotation, node.span)

    def visit_global_var(self, node: GlobalVar) -> Type:
        t = self.global_types.get(node)
        if t is None:
            return self.error(f"unknown global function @{node.name}", node.span)
        return t

    def visit_constant(self, node: Constant) -> Type:
        return node.tensor_type

    def visit_op(self, node: Op) -> Type:
        op_def = lookup(node.name)
        if op_def is None:
            return self.error(f"unknown operator `{node.name}`", node.span)
        return op_value_type(node.name, op_def.arity)

    def _type_data(self, ctor: Constructor) -> TypeData | None:
        return self.mod.type_definitions.get(ctor.belong_to)

    def visit_constructor(self, node: Constructor) -> Type:
        data = self._type_data(node)
        if data is None:
            return self.error(f"unknown constructor `{node.name}`", node.span)
        if not node.inputs:
            # A nullary constructor is a value of its ADT (``Nil``).
            return TypeCall(data.header, tuple(IncompleteType() for _ in data.type_vars))
        return FuncType(node.inputs, data.self_type, data.type_vars)

    # -------------------------------------------------------------- nodes
    def visit_tuple(self, node: Tuple) -> Visit:
        fields = []
        for f in node.fields:
            fields.append((yield f))
        return TupleType(tuple(fields))

    def visit_tuple_getitem(self, node: TupleGetItem) -> Visit:
        tup = yield node.tuple_value
        result = IncompleteType()
        index = node.index

        def project(solver: TypeSolver) -> bool:
            t = solver.resolve(tup)
            if isinstance(t, TupleType):
                if not 0 <= index < len(t.fields):
                    solver.diagnostics.error(
                        f"tuple index {index} is out of range for `{t}` "
                        f"({len(t.fields)} fields)", node.span)
                else:
                    solver.unify(result, t.fields[index], node.span)
                return True
            if isinstance(t, IncompleteType):
                return False
            solver.diagnostics.error(f"cannot take field {index} of a value of type `{t}`, "
                                     "which is not a tuple", node.span)
            return True

        if not project(self.solver):
            self.solver.add_deferred(Deferred(
                project, f"cannot infer the type of the tuple projected here (.{index})",
                node.span))
        return result

    def visit_call(self, node: Call) -> Visit:
        callee = node.op
        args = []
        for a in node.args:
            args.append((yield a))
        if isinstance(callee, Op):
            return self._op_call(node, callee, args)
        if isinstance(callee, Constructor):
            return self._ctor_call(node, callee, args)
        if isinstance(callee, GlobalVar):
            ftype = self.visit_global_var(callee)
        else:
            ftype = yield callee
        return self._apply(node, ftype, args)

    def _op_call(self, node: Call, callee: Op, args: list[Type]) -> Type:
        op_def = lookup(callee.name)
        if op_def is None:
            return self.error(f"unknown operator `{callee.name}`", callee.span or node.span)
        if len(args) != op_def.arity:
            return self.error(f"`{op_def.name}` takes {op_def.arity} argument(s), "
                              f"given {len(args)}", node.span)
        attrs = node.attrs
        if not isinstance(attrs, op_def.attrs_type):
            if type(attrs) is Attrs:
                attrs = op_def.attrs_type()
            else:
                return self.error(f"`{op_def.name}` expects attributes of type "
                                  f"{op_def.attrs_type.__name__}, given "
                                  f"{type(attrs).__name__}", node.span)
        self.attrs[node] = attrs
        out = IncompleteType()
        self.solver.add_relation(op_def, args, out, attrs, node.span)
        return out

    def _ctor_call(self, node: Call, ctor: Constructor, args: list[Type]) -> Type:
        data = self._type_data(ctor)
        if data is None:
            return self.error(f"unknown constructor `{ctor.name}`", node.span)
        if len(args) != len(ctor.inputs):
            return self.error(f"constructor `{ctor.name}` takes {len(ctor.inputs)} "
                              f"argument(s), given {len(args)}", node.span)
        fresh = tuple(IncompleteType() for _ in data.type_vars)
        mapping: dict[Type, Type] = dict(zip(data.type_vars, fresh))
        for want, got, arg in zip(ctor.inputs, args, node.args):
            self.unify(substitute(want, mapping), got, arg.span or node.span,
                       f"argument of `{ctor.name}`")
        self.type_args[node] = fresh
        return TypeCall(data.header, fresh)

    def _apply(self, node: Call, ftype: Type, args: list[Type]) -> Type:
        ftype = self.solver.resolve(ftype)
        if isinstance(ftype, FuncType) and ftype.type_params:
            ftype, inst = self.solver.instantiate(ftype, node.span)
            self.type_args[node] = inst
        if isinstance(ftype, FuncType):
            if len(ftype.arg_types) != len(args):
                return self.error(f"this function takes {len(ftype.arg_types)} argument(s), "
                                  f"given {len(args)}", node.span)
            for k, (want, got, arg) in enumerate(zip(ftype.arg_types, args, node.args)):
                self.unify(want, got, arg.span or node.span, f"argument {k + 1}")
            return ftype.ret_type
        if isinstance(ftype, IncompleteType):
            ret = IncompleteType()
            self.unify(ftype, FuncType(tuple(args), ret), node.span)
            return ret
        return self.error(f"cannot call a value of type `{ftype}`", node.op.span or node.span)

    def visit_function(self, node: Function) -> Visit:
        params = []
        for p in node.params:
            params.append((yield p))
        body = yield node.body
        ret = body
        if node.ret_type is not None:
            self.annotation(node.ret_type, node.span)
            ret = self.unify(node.ret_type, body, node.body.span or node.span,
                             "function result")
            ret = node.ret_type
        return FuncType(tuple(params), ret, node.type_params)

    def visit_let(self, node: Let) -> Visit:
        var_t = yield node.var
        value_t = yield node.value
        resolved = self.solver.resolve(value_t)
        if (node.var.type_annotation is None and isinstance(resolved, FuncType)
                and resolved.type_params and isinstance(var_t, IncompleteType)):
            # let-bound polymorphic function literal keeps its polymorphism
            self.solver.binding[var_t] = resolved
        else:
            self.unify(var_t, value_t, node.value.span or node.span,
                       f"let %{node.var.name_hint}")
        return (yield node.body)

    def visit_if(self, node: If) -> Visit:
        cond = yield node.cond
        self.unify(BOOL_SCALAR, cond, node.cond.span or node.span, "if condition")
        then = yield node.true_branch
        other = yield node.false_branch
        self.unify(then, other, node.false_branch.span or node.span,
                   "the else branch must have the type of the then branch")
        return then

    def visit_match(self, node: Match) -> Visit:
        data = yield node.data
        result: Type | None = None
        for clause in node.clauses:
            yield from self._pattern(clause.lhs, data)
            rhs = yield clause.rhs
            if result is None:
                result = rhs
            else:
                self.unify(result, rhs, clause.rhs.span or clause.span,
                           "every clause must have the type of the first")
        if node.complete:
            self._check_exhaustive(node)
        return result if result is not None else IncompleteType()

    def _pattern(self, p: Pattern, t: Type) -> Visit:
        if isinstance(p, PatternVar):
            vt = yield p.var
            self.unify(vt, t, p.span, f"pattern %{p.var.name_hint}")
        elif isinstance(p, PatternConstructor):
            ctor = p.constructor
            data = self._type_data(ctor)
            if data is None:
                self.error(f"unknown constructor `{ctor.name}`", p.span)
                return
            fresh = tuple(IncompleteType() for _ in data.type_vars)
            mapping: dict[Type, Type] = dict(zip(data.type_vars, fresh))
            self.unify(t, TypeCall(data.header, fresh), p.span, f"pattern `{ctor.name}`")
            if len(p.patterns) != len(ctor.inputs):
                self.error(f"constructor `{ctor.name}` has {len(ctor.inputs)} field(s), "
                           f"the pattern gives {len(p.patterns)}", p.span)
                return
            for sub, field_t in zip(p.patterns, ctor.inputs):
                yield from self._pattern(sub, substitute(field_t, mapping))
        elif isinstance(p, PatternTuple):
            fields = tuple(IncompleteType() for _ in p.patterns)
            self.unify(t, TupleType(fields), p.span, "tuple pattern")
            for sub, field_t in zip(p.patterns, fields):
                yield from self._pattern(sub, field_t)

    def _check_exhaustive(self, node: Match) -> None:
        def type_data(gtv: GlobalTypeVar) -> TypeData:
            return self.mod.type_definitions[gtv]
        try:
            missing = unmatched_cases([c.lhs for c in node.clauses], type_data)
        except KeyError:
            return  # an unknown constructor, reported elsewhere
        if missing:
            cases = ", ".join(missing[:8]) + (", ..." if len(missing) > 8 else "")
            self.diags.error(f"match is not exhaustive: no clause handles {cases} "
                             "(use `match?` for a partial match)", node.span)

    def visit_ref_create(self, node: RefCreate) -> Visit:
        return RefType((yield node.value))

    def visit_ref_read(self, node: RefRead) -> Visit:
        ref = yield node.ref
        value = IncompleteType()
        self.unify(RefType(value), ref, node.ref.span or node.span, "ref_read")
        return value

    def visit_ref_write(self, node: RefWrite) -> Visit:
        ref = yield node.ref
        value = yield node.value
        self.unify(ref, RefType(value), node.value.span or node.span, "ref_write")
        return UNIT


# ----------------------------------------------------------------- finish

def _finish(func: Function, skeleton: FuncType, solver: TypeSolver,
            infer: _Constraints) -> tuple[FuncType, Function]:
    """Generalise the signature, default stray holes, and annotate."""
    sig = solver.resolve(skeleton)
    assert isinstance(sig, FuncType)
    names = _fresh_names(func.type_params)
    generalised: dict[IncompleteType, Type] = {}
    for h in holes(sig):
        generalised[h] = TypeVar(next(names))
    params = tuple(func.type_params) + tuple(generalised.values())  # type: ignore[arg-type]

    def final(t: Type) -> Type:
        resolved = solver.resolve(t)

        def fill(node: Type) -> Type | None:
            if isinstance(node, IncompleteType):
                return generalised.get(node, UNIT)
            return None
        return map_type(resolved, fill)

    # Relations still pending over nothing but generalised holes become
    # constraints of the function's type, checked at each instantiation
    # (``def @f(%x, %y) { %x + %y }`` : ``fn [A, B, C](A, B) -> C where
    # add(A, B, C)``).
    constraints: list[TypeRelation] = []
    pending = []
    for rel in solver.relations:
        types = [solver.resolve(a) for a in (*rel.args, rel.out)]
        if all(h in generalised for t in types for h in holes(t)):
            constraints.append(TypeRelation(rel.op.name, tuple(final(t) for t in types),
                                            rel.attrs))
        else:
            pending.append(rel)
    solver.relations = pending
    func_type = FuncType(tuple(final(a) for a in sig.arg_types), final(sig.ret_type),
                         params, tuple(constraints))  # type: ignore[arg-type]
    typed = _Annotate(infer, final).visit(func)
    assert isinstance(typed, Function)
    typed = dataclasses.replace(typed, ret_type=func_type.ret_type, type_params=params,
                                checked_type=func_type)
    return func_type, typed


def _fresh_names(taken: tuple[TypeVar, ...]) -> Any:
    used = {t.name for t in taken}
    i = 0
    while True:
        name = chr(ord("A") + i % 26) + (str(i // 26) if i >= 26 else "")
        i += 1
        if name not in used:
            yield name


class _Annotate(ExprMutator):
    """Rebuilds a function with ``checked_type`` on every node.  Globals,
    constructors and operators stay the module's own objects."""

    def __init__(self, infer: _Constraints, final: Any) -> None:
        super().__init__()
        self.infer = infer
        self.final = final

    def typed(self, old: Expr, new: Expr) -> Expr:
        if isinstance(old, (GlobalVar, Constructor, Op)):
            return new
        t = self.final(self.infer.memo[old])
        changes: dict[str, Any] = {"checked_type": t}
        if isinstance(old, Var):
            changes["type_annotation"] = t
        elif isinstance(old, Call):
            if old in self.infer.type_args:
                changes["type_args"] = tuple(self.final(a) for a in self.infer.type_args[old])
            if old in self.infer.attrs:
                changes["attrs"] = self.infer.attrs[old]
        elif isinstance(old, Function):
            assert isinstance(t, FuncType)
            changes["ret_type"] = t.ret_type
        return dataclasses.replace(new, **changes)


def _wrap(method: str) -> Any:
    base = getattr(ExprMutator, method)

    def visit(self: _Annotate, node: Expr) -> Any:
        out = base(self, node)
        if isinstance(out, GeneratorType):
            new = yield from out
        else:
            new = out
        return self.typed(node, new)
    return visit


for _m in set(VISIT_METHOD.values()):
    setattr(_Annotate, _m, _wrap(_m))

__all__ = ["infer_types", "op_value_type", "DiagnosticError", "TypeKind", "free_type_vars"]

