"""Defunctionalization: a higher-order program as a first-order one.

Design note
-----------
After Relay's ``Defunctionalization`` (``src/relay/transforms/
defunctionalization.cc``), Reynolds' typed defunctionalization: every
function *value* becomes a value of an algebraic data type, and every call
of a function value becomes a call of a generated ``apply`` function that
matches on it.

* **One ADT per function type.**  A function type ``T = fn (A..) -> R``
  is encoded as ``Defunc_<T>`` (a type without parameters, named by the
  mangled type, :func:`~aot.passes.specialize.mangle_args`), and every
  type is encoded structurally (``List[fn (int32) -> int32]`` becomes
  ``List[Defunc_fn1_i32_i32]``, tuples, references and function arguments
  and results alike).  Its constructors are the function values of type
  ``T`` the program makes: one per lifted closure (its fields are the
  captured variables), one per global used as a value (no fields).
* **One ``apply`` per function type**, made when a value of that type is
  called: ``def @apply_<T>(%f: Defunc_<T>, %y..: A..) -> R`` matches
  ``%f`` and calls the first-order function of each constructor with the
  captured fields and ``%y..``.
* **First-order functions.**  The pass runs :mod:`~aot.passes.lambda_lift`
  first, so every local function is a global in Relay's two-level form.
  A closure global ``@L(%c.., Closure=1) { fn (%p..) { body } }`` becomes
  the flat ``@L(%c.., %p..) { body }``; an occurrence ``@L(%x..)`` (a
  closure allocation) becomes the constructor value ``Fn_L(%x..)``, and
  ``@L(%x..)(%a..)`` (a closure called at once, e.g. a recursive call)
  the direct call ``@L(%x.., %a..)``.  A global ``@g`` used as a value
  becomes ``Fn_g``.  Constructors and operators used as values are first
  eta-expanded into local functions (their types come from type inference
  in context), so they become closures like any other.
* **Specialisation per function type.**  Relay clones each higher-order
  global per instantiation of its type parameters; here the input must be
  monomorphic (run :mod:`~aot.passes.specialize` first), so every global
  already has one type and keeps its name; its function-typed parameters
  simply take the encoded ADT.
* **Beyond Relay.**  Relay assumes function arguments are identifiers or
  lambdas, no function is let-bound, stored in a data type or returned.
  The type-directed encoding has none of these limits: functions in lets,
  tuples, references, ADT values and results are all encoded.  A type
  definition whose constructor fields hold function types is rewritten
  (new constructors with encoded fields) when those function types are
  monomorphic.

Refused with a diagnostic: polymorphic globals, local functions or values
(run Specialize), an entry function with function values in its
parameters or result (the caller could not build or read the encoding,
also through an ADT), function-typed constructor fields mentioning type
variables, a ``Closure=1`` global used other than by calling it, and
FuseOps' primitive functions used other than by calling them.

The result is checked to be first-order (:func:`first_order_problems`:
no value, parameter or field of function type, every call's callee a
global, operator, constructor or primitive function); a failure is a bug.

Cost: lambda lifting (see its note), then one memoised walk per global;
each type is encoded once.  Output is deterministic: ADTs, constructors
and ``apply`` functions in the order the walk meets them (globals in
module order), after the module's own types and globals.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..diagnostics import DiagnosticError, Span
from ..ir.adt import Clause, Constructor, Pattern, PatternConstructor, PatternVar, TypeData
from ..ir.expr import Call, Expr, Function, GlobalVar, Match, Op, Var
from ..ir.module import IRModule
from ..ir.types import (FuncType, GlobalTypeVar, Type, TypeCall, TypeVar, free_type_vars,
                        map_type, type_children)
from ..ir.visitor import ExprMutator, Visit, post_order, rebuild
from .lambda_lift import CLOSURE_ATTR, is_closure, is_primitive, lambda_lift
from .manager import register_pass
from .specialize import mangle_args

__all__ = ["defunctionalize", "first_order_problems", "DefunctionalizationOptions"]


# ------------------------------------------------------------------ types

def _has_func(t: Type | None) -> bool:
    stack = [t] if t is not None else []
    while stack:
        node = stack.pop()
        if isinstance(node, FuncType):
            return True
        stack.extend(type_children(node))
    return False


def _is_poly(t: Type | None) -> bool:
    """Type variables, or a function type with type parameters, in ``t``."""
    stack = [t] if t is not None else []
    while stack:
        node = stack.pop()
        if isinstance(node, TypeVar) or (isinstance(node, FuncType) and node.type_params):
            return True
        stack.extend(type_children(node))
    return False


def _reaches_func(t: Type, mod: IRModule) -> bool:
    """Does a value of type ``t`` hold a function, also inside ADT values?"""
    seen: set[GlobalTypeVar] = set()
    stack = [t]
    while stack:
        node = stack.pop()
        if isinstance(node, FuncType):
            return True
        if isinstance(node, TypeCall) and node.func not in seen:
            seen.add(node.func)
            data = mod.type_definitions.get(node.func)
            if data is not None:
                for c in data.constructors:
                    stack.extend(c.inputs)
        stack.extend(type_children(node))
    return False


def _func_type_of(node: Expr) -> FuncType:
    t = node.checked_type
    assert isinstance(t, FuncType) and not t.type_params, f"{node!r} has type {t}"
    return t


# ------------------------------------------------------------ input checks

def _check_input(mod: IRModule, entry: str) -> None:
    if entry not in mod:
        raise DiagnosticError(f"Defunctionalization: no function @{entry} to start from")
    for data in mod.type_definitions.values():
        for c in data.constructors:
            for t in c.inputs:
                if _has_func(t) and free_type_vars(t):
                    raise DiagnosticError(
                        f"Defunctionalization: constructor `{c.name}` of `{data.header}` "
                        f"has a field of polymorphic function type `{t}`; only monomorphic "
                        "function fields can be encoded", data.span)
    for gv, func in mod.functions.items():
        if func.type_params:
            raise DiagnosticError(
                f"Defunctionalization needs a monomorphic module, but @{gv.name} is "
                f"polymorphic (`{func.checked_type}`); run Specialize first", func.span)
        nodes = post_order(func)
        for node in nodes:
            if isinstance(node, Function) and node.type_params:
                raise DiagnosticError(
                    f"Defunctionalization needs a monomorphic module, but @{gv.name} has "
                    "a polymorphic local function; run Specialize first", node.span)
        for node in nodes:
            if isinstance(node, Var) and _is_poly(node.checked_type):
                raise DiagnosticError(
                    f"Defunctionalization needs a monomorphic module, but %{node.name_hint} "
                    f"in @{gv.name} has type `{node.checked_type}`; run Specialize first",
                    node.span)
    main = mod[entry]
    ftype = main.checked_type
    assert isinstance(ftype, FuncType)
    for p, t in zip(main.params, ftype.arg_types):
        if _reaches_func(t, mod):
            raise DiagnosticError(
                f"Defunctionalization: the entry @{entry} takes a function value in "
                f"%{p.name_hint} (`{t}`); the entry must be first-order", p.span or main.span)
    if _reaches_func(ftype.ret_type, mod):
        raise DiagnosticError(
            f"Defunctionalization: the entry @{entry} returns a function value "
            f"(`{ftype.ret_type}`); the entry must be first-order", main.span)


# ------------------------------------- constructors and operators as values

class _EtaValues(ExprMutator):
    """``Cons`` or ``add`` used as a value -> ``fn (%x0, ..) { Cons(%x0, ..) }``
    with unannotated parameters (type inference finds their types from the
    context, the module being monomorphic).  Operator nodes are shared by
    every use, so each occurrence gets its own function."""

    no_memo = (Op, Constructor)

    def visit_call(self, node: Call) -> Visit:
        callee = node.op
        if not isinstance(callee, (Op, Constructor)):
            callee = yield callee
        args = yield from self._many(node.args)
        return rebuild(node, op=callee, args=args)

    def _expand(self, node: Expr, arity: int) -> Function:
        params = tuple(Var(f"x{i}", span=node.span) for i in range(arity))
        return Function(params, Call(node, params, span=node.span), span=node.span)

    def visit_op(self, node: Op) -> Expr:
        return self._expand(node, node.op_def.arity)

    def visit_constructor(self, node: Constructor) -> Expr:
        return self._expand(node, len(node.inputs)) if node.inputs else node

    def visit_pattern(self, p: Pattern) -> Any:
        return p
        yield  # a generator, like the method it overrides


def _eta_values(mod: IRModule) -> IRModule:
    from ..ir.type_infer import infer_types
    out = mod.copy()
    changed = False
    for gv, func in mod.functions.items():
        new = _EtaValues().visit(func)
        changed |= new is not func
        out.add(gv, new)
    return infer_types(out) if changed else mod


# --------------------------------------------------------------- encodings

@dataclass
class _Encoding:
    """The ADT and ``apply`` function of one function type."""

    ftype: FuncType                   # the original (unencoded) type
    header: GlobalTypeVar
    constructors: list[Constructor] = field(default_factory=list)
    #: per constructor: the first-order global its ``apply`` clause calls
    targets: list[GlobalVar] = field(default_factory=list)
    apply: GlobalVar | None = None


class _Defunc:
    def __init__(self, mod: IRModule) -> None:
        self.mod = mod
        self.global_names = {gv.name for gv in mod.functions}
        self.ctor_names = {c.name for d in mod.type_definitions.values() for c in d.constructors}
        self.type_names = {h.name for h in mod.type_definitions}
        self.encodings: dict[FuncType, _Encoding] = {}
        self.enc_memo: dict[Type, Type] = {}
        self.ctor_map: dict[Constructor, Constructor] = {}
        self.value_ctor: dict[GlobalVar, Constructor] = {}
        self.type_defs: list[TypeData] = []

    # ---------------------------------------------------------- names
    @staticmethod
    def _fresh(base: str, taken: set[str]) -> str:
        name, k = base, 0
        while name in taken:
            k += 1
            name = f"{base}_{k}"
        taken.add(name)
        return name

    # ---------------------------------------------------------- types
    def encode(self, t: Type) -> Type:
        out = self.enc_memo.get(t)
        if out is None:
            out = self.enc_memo[t] = map_type(t, self._encode_node)
        return out

    def _encode_node(self, t: Type) -> Type | None:
        if isinstance(t, FuncType):
            return TypeCall(self.encoding(t).header, ())
        return None

    def encoding(self, t: FuncType) -> _Encoding:
        enc = self.encodings.get(t)
        if enc is None:
            assert not t.type_params, t
            name = self._fresh("Defunc_" + mangle_args((t,)), self.type_names)
            enc = self.encodings[t] = _Encoding(t, GlobalTypeVar(name))
        return enc

    def _add_constructor(self, t: FuncType, base: str, fields: tuple[Type, ...],
                         target: GlobalVar) -> Constructor:
        enc = self.encoding(t)
        name = self._fresh(base, self.ctor_names)
        ctor = Constructor(name, tuple(self.encode(f) for f in fields), enc.header,
                           len(enc.constructors))
        enc.constructors.append(ctor)
        enc.targets.append(target)
        return ctor

    def value_constructor(self, gv: GlobalVar) -> Constructor:
        """The constructor standing for ``@gv`` as a value: a closure
        global's takes its captured variables, any other global's none."""
        ctor = self.value_ctor.get(gv)
        if ctor is None:
            func = self.mod[gv]
            if is_closure(func):
                ftype = _func_type_of(func.body)
                fields = tuple(p.checked_type for p in func.params)
            else:
                ftype, fields = _func_type_of(func), ()
            ctor = self.value_ctor[gv] = self._add_constructor(ftype, f"Fn_{gv.name}",
                                                               fields, gv)
        return ctor

    def apply_function(self, t: FuncType) -> GlobalVar:
        enc = self.encoding(t)
        if enc.apply is None:
            name = self._fresh("apply_" + mangle_args((t,)), self.global_names)
            enc.apply = GlobalVar(name)
        return enc.apply

    # ---------------------------------------------------------- ADT defs
    def rewrite_type_definitions(self) -> None:
        for data in self.mod.type_definitions.values():
            if not any(_has_func(t) for c in data.constructors for t in c.inputs):
                self.type_defs.append(data)
                continue
            ctors = []
            for c in data.constructors:
                new = Constructor(c.name, tuple(self.encode(t) for t in c.inputs),
                                  c.belong_to, c.tag, span=c.span)
                self.ctor_map[c] = new
                ctors.append(new)
            self.type_defs.append(TypeData(data.header, data.type_vars, tuple(ctors),
                                           data.extern, span=data.span))

    # ---------------------------------------------------------- globals
    def convert_global(self, gv: GlobalVar, func: Function) -> Function:
        if is_primitive(func) or func.attrs.get("Compiler") is not None:
            return func
        conv = _Convert(self, gv)
        if is_closure(func):
            code = func.body
            assert isinstance(code, Function)
            params = tuple(conv.visit(p) for p in (*func.params, *code.params))
            body = conv.visit(code.body)
            ret = _func_type_of(code).ret_type
            attrs = code.attrs
        else:
            params = tuple(conv.visit(p) for p in func.params)
            body = conv.visit(func.body)
            ret = _func_type_of(func).ret_type
            attrs = func.attrs
        assert attrs.get(CLOSURE_ATTR) is None
        return Function(params, body, self.encode(ret), (), attrs, span=func.span)

    def apply_definition(self, enc: _Encoding) -> Function:
        t = enc.ftype
        f = Var("f", TypeCall(enc.header, ()))
        ys = tuple(Var(f"y{i}", self.encode(a)) for i, a in enumerate(t.arg_types))
        clauses = []
        for ctor, target in zip(enc.constructors, enc.targets):
            fields = tuple(Var(f"c{i}", ft) for i, ft in enumerate(ctor.inputs))
            pattern = PatternConstructor(ctor, tuple(PatternVar(v) for v in fields))
            clauses.append(Clause(pattern, Call(target, (*fields, *ys))))
        # A type no value of which is made has no constructors: its apply
        # is never reached, and a partial match with no clause says so.
        match = Match(f, tuple(clauses), complete=bool(clauses))
        return Function((f, *ys), match, self.encode(t.ret_type))


class _Convert(ExprMutator):
    """One global's body in first-order form (after lambda lifting no local
    function is left but FuseOps' primitive ones)."""

    def __init__(self, defunc: _Defunc, gv: GlobalVar) -> None:
        super().__init__()
        self.d = defunc
        self.gv = gv

    def _error(self, message: str, span: Span | None) -> DiagnosticError:
        return DiagnosticError(f"Defunctionalization: {message} (in @{self.gv.name})", span)

    def visit_var(self, node: Var) -> Expr:
        t = node.checked_type or node.type_annotation
        assert t is not None, f"%{node.name_hint} has no type"
        new_t = self.d.encode(t)
        if new_t == t:
            return node
        return Var(node.name_hint, new_t, span=node.span)

    def visit_global_var(self, node: GlobalVar) -> Expr:
        # Only values reach here: callees are handled by visit_call.
        if is_closure(self.d.mod[node]):
            raise self._error(f"the closure allocator @{node.name} is used as a value; "
                              "it may only be called", node.span)
        # A constructor without fields as a value is applied to nothing, as
        # the parser writes ``Nil``.
        return Call(self.d.value_constructor(node), (), span=node.span)

    def visit_constructor(self, node: Constructor) -> Expr:
        return self.d.ctor_map.get(node, node)

    def visit_op(self, node: Op) -> Expr:
        return node

    def visit_function(self, node: Function) -> Visit:
        if is_primitive(node):
            raise self._error("a primitive (fused) function is used as a value; run "
                              "Defunctionalization before FuseOps", node.span)
        raise AssertionError("a local function survived lambda lifting")
        yield  # a generator, like the method it overrides

    def visit_call(self, node: Call) -> Visit:
        callee = node.op
        args = yield from self._many(node.args)
        if isinstance(callee, Op):
            return rebuild(node, args=args)
        if isinstance(callee, Constructor):
            return rebuild(node, op=self.d.ctor_map.get(callee, callee), args=args)
        if isinstance(callee, Function) and is_primitive(callee):
            return rebuild(node, args=args)
        if isinstance(callee, GlobalVar):
            if is_closure(self.d.mod[callee]):       # a closure allocation
                return Call(self.d.value_constructor(callee), args, span=node.span)
            return rebuild(node, args=args)
        if (isinstance(callee, Call) and isinstance(callee.op, GlobalVar)
                and is_closure(self.d.mod[callee.op])):
            env = yield from self._many(callee.args)   # a closure called at once
            return Call(callee.op, (*env, *args), span=node.span)
        value = yield callee
        apply = self.d.apply_function(_func_type_of(callee))
        return Call(apply, (value, *args), span=node.span)


# ------------------------------------------------------------- the check

def first_order_problems(mod: IRModule) -> list[str]:
    """Why ``mod`` is not first-order (empty when it is): function types in
    constructor fields, global signatures or any value; local functions
    other than primitive ones; calls of anything but a global, operator,
    constructor or primitive function."""
    problems = []
    for data in mod.type_definitions.values():
        for c in data.constructors:
            if any(_has_func(t) for t in c.inputs):
                problems.append(f"constructor {c.name} has a function-typed field")
    for gv, func in mod.functions.items():
        if is_primitive(func):
            continue
        if any(_has_func(p.checked_type) for p in func.params):
            problems.append(f"@{gv.name} takes a function")
        if _has_func(func.ret_type):
            problems.append(f"@{gv.name} returns a function")
        callees: set[Expr] = set()
        for node in post_order(func.body):
            if isinstance(node, Call):
                op = node.op
                if not (isinstance(op, (GlobalVar, Op, Constructor))
                        or (isinstance(op, Function) and is_primitive(op))):
                    problems.append(f"@{gv.name} calls a function value: {node}")
                callees.add(op)
        for node in post_order(func.body, into_functions=False):
            if node in callees:
                continue
            if isinstance(node, Function) and not is_primitive(node):
                problems.append(f"@{gv.name} has a local function")
            elif isinstance(node, GlobalVar):
                problems.append(f"@{gv.name} uses @{node.name} as a value")
            elif _has_func(node.checked_type):
                problems.append(f"@{gv.name} has a function value: {node!r} : "
                                f"{node.checked_type}")
    return problems


# ------------------------------------------------------------------ pass

def defunctionalize(mod: IRModule, entry: str = "main") -> IRModule:
    """``mod`` (monomorphic, with a first-order ``@entry``) as a first-order
    module; see the module docstring.  The result is typed."""
    from ..ir.type_infer import infer_types
    if not mod.is_typed:
        mod = infer_types(mod)
    _check_input(mod, entry)
    # Lifting keeps checked types correct (the module is monomorphic, so no
    # type arguments are missing); the result is inferred once, at the end.
    lifted = lambda_lift(_eta_values(mod), retype=False)
    d = _Defunc(lifted)
    d.rewrite_type_definitions()
    converted = [(gv, d.convert_global(gv, func)) for gv, func in lifted.functions.items()]
    out = IRModule()
    for data in d.type_defs:
        out.add_type(data)
    for enc in d.encodings.values():
        out.add_type(TypeData(enc.header, (), tuple(enc.constructors)))
    for gv, func in converted:
        out.add(gv, func)
    for enc in d.encodings.values():
        if enc.apply is not None:
            out.add(enc.apply, d.apply_definition(enc))
    typed = infer_types(out)
    problems = first_order_problems(typed)
    assert not problems, "Defunctionalization left higher-order code: " + "; ".join(problems[:3])
    return typed


@dataclass(frozen=True)
class DefunctionalizationOptions:
    #: the entry function, which must be first-order
    entry: str = "main"


@register_pass("Defunctionalization", opt_level=4, options=DefunctionalizationOptions)
def defunctionalization_pass(mod: IRModule, opts: DefunctionalizationOptions) -> IRModule:
    """Function values as ADT values and ``apply`` functions (monomorphic
    input: run Specialize first)."""
    return defunctionalize(mod, opts.entry)
