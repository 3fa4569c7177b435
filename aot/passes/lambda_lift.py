"""LambdaLift: every local function becomes a global function.

Design note
-----------
As Relay's ``LambdaLift`` (``src/relay/backend/vm/lambda_lift.cc``), in
Relay's *two-level closure form*.  A local function ``F`` (let-bound or
anonymous, recursive or not) with captured variables ``c1..ck`` (its free
variables, less its own let variable when it is recursive) becomes

    def @L(%c1': T1, .., %ck': Tk, Closure=1) -> fn (P..) -> R {
      fn (%p: P, ..) -> R { <body of F, ci -> ci'> }
    }

and its occurrence becomes ``@L(%c1, .., %ck)``: calling the outer
function *allocates the closure* (it takes the environment and returns the
code), which is how Relay's VM compiler reads the ``Closure=1`` attribute.
A function that captures nothing is lifted *flat* (``def @L(%p: P) -> R``,
no attribute) and its occurrence is the bare ``@L``.  We chose Relay's
form over a flat one with partial application because partial application
does not exist in the IR: the two-level form needs no new construct, is
typed by :func:`~aot.ir.type_infer.infer_types` as it stands and runs
in :func:`aot.interpret` unchanged (calling ``@L(..)`` returns a closure).
Defunctionalization (:mod:`aot.passes.defunctionalization`) reads the
same form: ``@L(caps)`` is a closure value, ``@L(caps)(args)`` a direct
call.

* **Recursion.**  Inside ``let %f = fn (..) { .. %f .. }`` every use of
  ``%f`` -- a call, or ``%f`` passed as a value, or captured by a function
  nested in ``F`` -- becomes ``@L(%c1', .., %ck')`` (``@L`` when flat), so
  the lifted function refers to itself.  (Relay rewrites only direct
  calls of ``%f``; a non-call use would be left unbound there.)
* **Types.**  The input is typed; captured variables become parameters
  annotated with their checked types, and ``F``'s own unannotated
  parameters get their checked types too, so a lifted global is never
  generalised into a polymorphic one by type inference.  Type variables of
  enclosing polymorphic functions that ``F`` mentions become type
  parameters of the lifted global (of the outer function in the two-level
  form, in front of ``F``'s own in the flat form); a polymorphic local
  function keeps its own type parameters (the outer function returns a
  polymorphic function).  Relay returns the bare global when nothing is
  captured even if it had to add type parameters to a two-level function;
  the flat form avoids that.
* **Not lifted.**  Primitive functions (``Primitive=1``, made by FuseOps)
  are kernels, not closures: they stay where they are and are not entered.
  Globals with a ``Compiler`` attribute (external code) are skipped, as in
  Relay.  The code function directly under a ``Closure=1`` global is the
  lifted form itself, so the pass is idempotent.
* **Names.**  ``@<enclosing>_<let variable>`` for a let-bound function,
  ``@<enclosing>_lambda`` for an anonymous one, where ``<enclosing>`` is
  the name of the global the enclosing function became (the enclosing
  global's, when that would exceed :data:`MAX_NAME` characters), with
  ``_1``, ``_2``, .. when taken (deterministic: globals in module order,
  functions in the order they are met).  The lifted globals follow their
  enclosing global in the module.

Algorithm (linear, iterative).  Each global is processed with a worklist
of *scopes*: the global's own body first, then each lifted function's
body.  A scope is rewritten by one :class:`~aot.ir.visitor.ExprMutator`
whose memo is seeded with the scope's substitution (captured variable ->
fresh parameter, recursive variable -> ``@L(..)``).  The mutator does not
enter nested local functions: it replaces each by its occurrence
(``@L(subst(c1), ..)``) and queues a new scope for its body.  So every
node is rewritten in the context of its innermost enclosing function only,
no substitution is applied twice, and deep nesting costs no Python
recursion.  Free variables of every function are computed once per global
by one memoised bottom-up walk; captured variables are ordered by first
occurrence in the global, so output is deterministic.  Type variables a
lifted function mentions are collected by a walk of that function, only in
globals that have polymorphic functions (the cost is then the function
size times the nesting depth).  The nodes the pass makes carry their
checked types, and the module is type-checked again at the end.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from ..ir.analysis import FreeVarSets
from ..ir.attrs import FuncAttrs
from ..ir.expr import Call, Expr, Function, GlobalVar, Let, Var
from ..ir.module import IRModule
from ..ir.types import FuncType, Type, TypeVar, free_type_vars
from ..ir.visitor import ExprMutator, Visit, post_order, rebuild
from .manager import register_pass

__all__ = ["lambda_lift", "is_closure", "is_primitive", "CLOSURE_ATTR"]

#: The attribute marking a lifted closure's outer (environment) function.
CLOSURE_ATTR = "Closure"
#: Names of nested lifted functions longer than this are made from the
#: enclosing global's name instead of the enclosing lifted function's.
MAX_NAME = 48


def is_primitive(func: Function) -> bool:
    """A fused kernel made by FuseOps (never lifted or converted)."""
    return bool(func.attrs.get("Primitive", 0))


def is_closure(func: Function) -> bool:
    """A lifted closure in two-level form: ``Closure=1`` and a function body."""
    return bool(func.attrs.get(CLOSURE_ATTR, 0)) and isinstance(func.body, Function)


def _skipped(func: Function) -> bool:
    return is_primitive(func) or func.attrs.get("Compiler") is not None


def _type_vars_of(func: Function) -> list[TypeVar]:
    """Type variables ``func`` mentions that it does not bind (those of
    enclosing polymorphic functions), in order of first occurrence."""
    bound: set[TypeVar] = set()
    seen: list[TypeVar] = []

    def note(t: Type | None) -> None:
        if t is not None:
            for tv in free_type_vars(t):
                if tv not in seen:
                    seen.append(tv)

    for node in post_order(func):
        if isinstance(node, Function):
            if is_primitive(node):
                continue
            bound.update(node.type_params)
            note(node.ret_type)
        if isinstance(node, Var):
            note(node.type_annotation)
        if isinstance(node, Call):
            for t in node.type_args:
                note(t)
        note(node.checked_type)
    return [tv for tv in seen if tv not in bound]


# ------------------------------------------------------------------ scopes

@dataclass
class _Scope:
    """One function body to rewrite: the global's own, or a lifted one."""

    gv: GlobalVar               # the global this body ends up in
    func: Function              # the original function
    captured: tuple[Var, ...]   # original captured variables (empty: flat)
    rec_var: Var | None         # the let variable it refers to itself by
    lifted: bool                # False for the global's own function


class _Names:
    def __init__(self, taken: set[str]) -> None:
        self.taken = set(taken)

    def fresh(self, base: str) -> str:
        name, k = base, 0
        while name in self.taken:
            k += 1
            name = f"{base}_{k}"
        self.taken.add(name)
        return name


class _Rewrite(ExprMutator):
    """Rewrites one scope's body; nested local functions are replaced by
    their occurrence and queued (see the module docstring)."""

    def __init__(self, lifter: _GlobalLifter, scope: _Scope, subst: dict[Var, Expr],
                 keep: Function | None) -> None:
        super().__init__()
        self.lifter = lifter
        self.scope = scope
        self.keep = keep            # a code function to enter, not lift
        self.memo.update(subst)
        self.let_var: dict[Function, Var] = {}

    def visit_let(self, node: Let) -> Visit:
        if isinstance(node.value, Function):
            self.let_var[node.value] = node.var
        return (yield from super().visit_let(node))

    def visit_function(self, node: Function) -> Visit:
        if is_primitive(node):
            return node
        if node is self.keep:
            return (yield from super().visit_function(node))
        return self.lifter.lift(node, self.let_var.get(node), self.memo, self.scope.gv.name)


class _GlobalLifter:
    def __init__(self, gv: GlobalVar, func: Function, names: _Names) -> None:
        self.gv = gv
        self.func = func
        self.names = names
        self.free = FreeVarSets(closed=is_primitive)     # primitive functions are closed
        self.free.visit(func)
        self.order: dict[Var, int] = {}
        self.poly = False
        for node in post_order(func):
            if isinstance(node, Var) and node not in self.order:
                self.order[node] = len(self.order)
            if isinstance(node, Function) and node.type_params:
                self.poly = True
        self.queue: deque[_Scope] = deque()
        self.out: list[tuple[GlobalVar, Function]] = []

    # ---------------------------------------------------------- lifting
    def lift(self, func: Function, let_var: Var | None, memo: dict, prefix: str) -> Expr:
        """Queue ``func`` as a new global named after ``prefix`` (the
        global its scope ends up in); its occurrence in the current scope
        (whose substitution is ``memo``)."""
        free = self.free.memo[func]
        rec_var = let_var if let_var is not None and let_var in free else None
        captured = tuple(sorted((v for v in free if v is not rec_var),
                                key=self.order.__getitem__))
        hint = let_var.name_hint if let_var is not None else "lambda"
        base = f"{prefix}_{hint}"
        if len(base) > MAX_NAME:        # deep nesting: name after the global
            base = f"{self.gv.name}_{hint}"
        gv = GlobalVar(self.names.fresh(base), span=func.span)
        self.queue.append(_Scope(gv, func, captured, rec_var, lifted=True))
        if not captured:
            return gv
        return Call(gv, tuple(memo.get(v, v) for v in captured), span=func.span,
                    checked_type=func.checked_type)

    def run(self) -> list[tuple[GlobalVar, Function]]:
        keep = self.func.body if is_closure(self.func) else None
        body = _Rewrite(self, _Scope(self.gv, self.func, (), None, False), {}, keep
                        ).visit(self.func.body)
        self.out.append((self.gv, rebuild(self.func, body=body)))
        while self.queue:
            self.out.append(self._lift_scope(self.queue.popleft()))
        return self.out

    def _lift_scope(self, scope: _Scope) -> tuple[GlobalVar, Function]:
        func = scope.func
        subst: dict[Var, Expr] = {}
        env = []
        ftype = func.checked_type
        for v in scope.captured:
            t = v.checked_type or v.type_annotation
            fresh = Var(v.name_hint, t, span=v.span, checked_type=t)
            subst[v] = fresh
            env.append(fresh)
        if scope.rec_var is not None:
            subst[scope.rec_var] = (Call(scope.gv, tuple(env), span=func.span,
                                         checked_type=ftype) if env else scope.gv)
        params = []
        for p in func.params:
            if p.type_annotation is None and p.checked_type is not None:
                new = Var(p.name_hint, p.checked_type, span=p.span, checked_type=p.checked_type)
                subst[p] = new
                params.append(new)
            else:
                params.append(p)
        body = _Rewrite(self, scope, subst, None).visit(func.body)
        assert isinstance(ftype, FuncType), f"local function without a type: {func}"
        ret = func.ret_type if func.ret_type is not None else ftype.ret_type
        outer_tps = tuple(_type_vars_of(func)) if self.poly else ()
        if not env:
            flat_type = FuncType(ftype.arg_types, ftype.ret_type, outer_tps + ftype.type_params,
                                 ftype.type_constraints)
            lifted = Function(tuple(params), body, ret, outer_tps + func.type_params,
                              func.attrs, span=func.span, checked_type=flat_type)
            return scope.gv, lifted
        code = Function(tuple(params), body, ret, func.type_params, func.attrs, span=func.span,
                        checked_type=ftype)
        outer_type = FuncType(tuple(v.type_annotation for v in env), ftype, outer_tps)
        lifted = Function(tuple(env), code, ftype, outer_tps,
                          FuncAttrs.of({CLOSURE_ATTR: 1}), span=func.span,
                          checked_type=outer_type)
        return scope.gv, lifted


def lambda_lift(mod: IRModule, *, retype: bool = True) -> IRModule:
    """Every local function of ``mod`` as a global (see the module
    docstring); the result is typed.  The nodes the pass makes carry their
    checked types; ``retype=False`` skips the final type inference (calls
    of polymorphic lifted globals then lack ``type_args``), for callers
    that infer types again anyway."""
    from ..ir.type_infer import infer_types
    if not mod.is_typed:
        mod = infer_types(mod)
    names = _Names({gv.name for gv in mod.functions})
    out = IRModule()
    for data in mod.type_definitions.values():
        out.add_type(data)
    changed = False
    for gv, func in mod.functions.items():
        if _skipped(func):
            out.add(gv, func)
            continue
        lifted = _GlobalLifter(gv, func, names).run()
        changed |= len(lifted) > 1 or lifted[0][1] is not func
        for g, f in lifted:
            out.add(g, f)
    if not changed:
        return mod
    return infer_types(out) if retype else out


register_pass("LambdaLift", opt_level=4,
              doc="Local functions become globals (Relay's two-level closure form, "
                  "Closure=1)")(lambda_lift)
