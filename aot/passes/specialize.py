"""Specialize: monomorphisation of polymorphic functions.

Design note
-----------
The C backend needs every value to have one concrete type, so every
function it compiles must be monomorphic.  ``specialize(mod, entry)`` makes
a module in which that holds: it keeps every type definition and exactly
the global functions reachable from ``@entry``, each without type
parameters, each polymorphic one replaced by one copy per instantiation it
is used at.

*Worklist over instantiations.*  An instance is a pair (global, type
arguments).  The worklist starts with ``(@entry, ())``; specialising an
instance's body (under the substitution ``type params -> type args``)
requests the instances it refers to, which are queued when new.  A
monomorphic global is its own (only) instance and keeps its name and its
``GlobalVar``; a polymorphic one gets a copy named
``<name>__<mangled type args>`` (see :func:`mangle_type`; long suffixes are
shortened with a SHA-256 prefix, so names are C identifiers and the same
in every process).

*Which instantiation.*  A call of a polymorphic callee carries the
instantiation in ``Call.type_args`` (type inference records it); under a
copy's substitution it becomes concrete.  Two cases lack it: a global used
as a value (``@foldr(@add1, ..)``, ``let %f = @id``; type inference gives
``GlobalVar`` nodes no type), and a recursive call inside a strongly
connected component, which type inference checks monomorphically (no, or
too few, type arguments).  There the instantiation is found by *matching*
the callee's generic type against the type its context expects: the
instantiated parameter type of the enclosing call, the let variable's
type, the tuple field's type, ...  Expected types flow top-down, from a
node's own (substituted) type to its children.  Type parameters a context
does not determine (an unused ``[A]``) default to ``()``, as in type
inference.  So do the entry's own (``def @main() { Nil }`` is
``fn [A]() -> List[A]``; the entry keeps its name at that instance),
unless a parameter's type mentions one (the caller would choose it) or an
operator's relation constrains one (``def @main() { add }``): those are
refused with a diagnostic.

*Local polymorphism.*  The type checker accepts let-bound polymorphic
values (``let %f = fn [A](%x: A) { %x };``, ``let %g = @id;``) and
polymorphic function literals called in place.  A polymorphic let is
specialised like a global, but locally: its body is rewritten first,
collecting the instantiations its uses ask for, and the binding becomes
one ``let %f__<args> = <copy>`` per instantiation (none if unused).  Only
syntactic values (function literals, globals, variables, constructors) can
be copied this way; anything else (an ``if`` that chooses between two
polymorphic functions, say) is refused with a diagnostic, as are
polymorphic function *parameters* (higher-rank types) and variables whose
type holds a polymorphic function inside a tuple or ADT.

*Copies.*  Each copy is rebuilt by a fresh :class:`_Specializer` (an
:class:`~aot.ir.visitor.ExprMutator`, so deep expressions are walked
iteratively) with its own substitution and fresh binder variables; a copy
of a local function looks up captured variables in the enclosing
specialiser.  Calls lose their ``type_args`` (constructor calls keep
theirs, substituted), and the result is type-checked again so every node
has its concrete type.

*Polymorphic recursion* (``@f[A]`` calling ``@f[(A, A)]``) would need
infinitely many copies.  It is detected by bounding the copies per global
(:data:`MAX_COPIES`) and the size and depth of type arguments
(:data:`MAX_TYPE_SIZE`, :data:`MAX_TYPE_DEPTH`, checked before anything
walks them, since their tree size can double at every step); each bound
raises a :class:`DiagnosticError` at the function.

Output order is deterministic: globals in the input module's order, each
one's instances in the order they were first requested.
"""

from __future__ import annotations

import hashlib
import re
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Generator

from ..diagnostics import DiagnosticError
from ..ir.adt import Constructor, Pattern, PatternConstructor, PatternTuple, PatternVar
from ..ir.dtype import DType
from ..ir.expr import (Call, Expr, Function, GlobalVar, If, Let, Match, Op, RefCreate,
                       RefRead, RefWrite, Tuple, TupleGetItem, Var)
from ..ir.module import IRModule
from ..ir.types import (ANY, BOOL_SCALAR, UNIT, FuncType, GlobalTypeVar, IncompleteType,
                        RefType, TensorType, TupleType, Type, TypeCall, TypeVar,
                        free_type_vars, map_type, substitute, type_children)
from ..ir.visitor import ExprMutator, Visit, rebuild
from ..ir.type_infer import infer_types
from .manager import register_pass

#: Most copies one global may get before we call it polymorphic recursion.
MAX_COPIES = 256
#: Largest type argument (in type nodes, counted as a tree) we accept.
MAX_TYPE_SIZE = 10_000
#: Deepest type argument we accept (types are compared, hashed and printed
#: recursively, so depth is bounded well below Python's recursion limit).
MAX_TYPE_DEPTH = 64
#: Mangled type-argument suffixes longer than this are shortened with a hash.
MAX_SUFFIX = 48

TypeArgs = tuple[Type, ...]


def specialize(mod: IRModule, entry: str = "main") -> IRModule:
    """A typed module holding ``@entry`` and the globals reachable from it,
    all monomorphic; see the module docstring."""
    if not mod.is_typed:
        mod = infer_types(mod)
    if entry not in mod:
        raise DiagnosticError(f"no function @{entry} to specialise from")
    ctx = _Context(mod, entry)
    ctx.request(mod.get_global_var(entry), _entry_type_args(mod[entry], entry))
    ctx.run()
    typed = infer_types(ctx.module())
    for gv, func in typed.functions.items():
        assert not func.type_params, f"@{gv.name} is still polymorphic after specialize"
    return typed


def _entry_type_args(main: Function, entry: str) -> TypeArgs:
    """The instance of the entry compiled: a type parameter no parameter
    type mentions is determined by nothing (``def @main() { Nil }`` is
    ``fn [A]() -> List[A]``) and defaults to ``()``, the interpreter's
    choice (its ``Nil`` is every list type's); one a parameter type
    mentions would be chosen by the caller, which C cannot do."""
    ftype = main.checked_type
    assert isinstance(ftype, FuncType)
    in_params = {tv for a in ftype.arg_types for tv in free_type_vars(a)}
    chosen = [tp for tp in main.type_params if tp in in_params]
    if chosen:
        names = ", ".join(tp.name for tp in chosen)
        raise DiagnosticError(
            f"@{entry} is polymorphic (`{ftype}`): the caller would choose its type "
            f"parameter{'s' if len(chosen) > 1 else ''} {names}; give its parameters "
            "concrete types", main.span)
    if ftype.type_constraints:
        # an operator returned as a value (`def @main() { add }`): its
        # relation holds of tensor types only, which nothing here picks
        raise DiagnosticError(
            f"@{entry} is polymorphic (`{ftype}`): nothing determines its type "
            f"parameters, and {', '.join(map(str, ftype.type_constraints))} rules out "
            "the unit type; annotate its result type", main.span)
    return tuple(UNIT for _ in main.type_params)


# ------------------------------------------------------------------ names

_DTYPE_SHORT = {
    DType.BOOL: "bool", DType.INT8: "i8", DType.INT16: "i16", DType.INT32: "i32",
    DType.INT64: "i64", DType.UINT8: "u8", DType.UINT16: "u16", DType.UINT32: "u32",
    DType.UINT64: "u64", DType.FLOAT16: "f16", DType.FLOAT32: "f32", DType.FLOAT64: "f64",
    DType.BFLOAT16: "bf16", DType.FLOAT8_E4M3FN: "e4m3fn", DType.FLOAT8_E4M3FNUZ: "e4m3fnuz",
    DType.FLOAT8_E5M2: "e5m2", DType.FLOAT8_E5M2FNUZ: "e5m2fnuz", DType.INT4: "i4",
    DType.UINT4: "u4",
}
_NOT_IDENT = re.compile(r"[^A-Za-z0-9_]")


def _ident(name: str) -> str:
    return _NOT_IDENT.sub("_", name)


def mangle_type(t: Type) -> str:
    """A C-identifier fragment naming a concrete type, prefix-coded:
    ``f32`` (scalar), ``f32_3x4`` (tensor; ``any`` for ``?``), ``unit``,
    ``tup2_<a>_<b>``, ``List_<a>`` (an ADT and its arguments),
    ``fn2_<a>_<b>_<ret>``, ``ref_<a>``."""
    if isinstance(t, TensorType):
        out = _DTYPE_SHORT[t.dtype]
        if t.shape:
            out += "_" + "x".join("any" if d is ANY else str(d) for d in t.shape)
        return out
    if isinstance(t, TupleType):
        if not t.fields:
            return "unit"
        return f"tup{len(t.fields)}_" + "_".join(mangle_type(f) for f in t.fields)
    if isinstance(t, GlobalTypeVar):
        return _ident(t.name)
    if isinstance(t, TypeCall):
        return _ident(t.func.name) + "".join("_" + mangle_type(a) for a in t.args)
    if isinstance(t, FuncType):
        parts = [mangle_type(a) for a in (*t.arg_types, t.ret_type)]
        return f"fn{len(t.arg_types)}_" + "_".join(parts)
    if isinstance(t, RefType):
        return "ref_" + mangle_type(t.value)
    if isinstance(t, TypeVar):
        return _ident(t.name)
    return "t"


def mangle_args(type_args: TypeArgs) -> str:
    """The suffix of a copy's name: mangled type arguments joined by
    ``__``, shortened to at most about :data:`MAX_SUFFIX` characters with a
    stable hash of the full text when longer."""
    full = "__".join(mangle_type(t) for t in type_args)
    if len(full) <= MAX_SUFFIX:
        return full
    digest = hashlib.sha256(full.encode()).hexdigest()[:10]
    return full[:MAX_SUFFIX - 14].rstrip("_") + "_h" + digest


# ------------------------------------------------------------------ types

def _has_poly(t: Type) -> bool:
    """Does ``t`` contain a function type with type parameters?"""
    stack = [t]
    while stack:
        node = stack.pop()
        if isinstance(node, FuncType) and node.type_params:
            return True
        stack.extend(type_children(node))
    return False


def _tree_size_exceeds(t: Type, limit: int) -> bool:
    """Is ``t``, counted as a tree (shared subterms counted at every use),
    larger than ``limit``?  Stops counting at the limit."""
    count = 0
    stack = [t]
    while stack:
        node = stack.pop()
        count += 1
        if count > limit:
            return True
        stack.extend(type_children(node))
    return False


def _depth_exceeds(t: Type, limit: int) -> bool:
    """Is ``t`` nested more than ``limit`` deep?"""
    stack = [(t, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        stack.extend((c, depth + 1) for c in type_children(node))
    return False


def _instantiate(ft: FuncType, type_args: TypeArgs) -> FuncType:
    """``ft`` without its type parameters, replaced by ``type_args``."""
    mapping: dict[Type, Type] = dict(zip(ft.type_params, type_args))
    return FuncType(tuple(substitute(a, mapping) for a in ft.arg_types),
                    substitute(ft.ret_type, mapping))


def _concrete(t: Type) -> Type:
    """``t`` with every polymorphic function type inside it instantiated at
    ``()`` (its parameters are not determined there), and every ADT without
    arguments written as ``TypeCall(name, ())``."""
    def fn(node: Type) -> Type | None:
        if isinstance(node, FuncType) and node.type_params:
            return _concrete(_instantiate(node, tuple(UNIT for _ in node.type_params)))
        if isinstance(node, GlobalTypeVar):
            return TypeCall(node, ())
        return None
    if not _has_poly(t) and not _has_bare_adt(t):
        return t
    return map_type(t, fn)


def _has_bare_adt(t: Type) -> bool:
    stack = [t]
    while stack:
        node = stack.pop()
        if isinstance(node, GlobalTypeVar):
            return True
        if isinstance(node, TypeCall):
            stack.extend(node.args)
        else:
            stack.extend(type_children(node))
    return False


def _match(generic: FuncType, expected: Type | None) -> TypeArgs:
    """The type arguments that make ``generic`` (a polymorphic function
    type) equal to ``expected``, as far as ``expected`` says; parameters it
    does not determine are ``()``."""
    params = set(generic.type_params)
    found: dict[Type, Type] = {}
    stack: list[tuple[Type, Type]] = []
    if expected is not None:
        stack.append((FuncType(generic.arg_types, generic.ret_type), expected))
    while stack:
        pat, target = stack.pop()
        if isinstance(target, IncompleteType) or (isinstance(target, FuncType)
                                                  and target.type_params):
            continue
        if isinstance(pat, TypeVar) and pat in params:
            if pat not in found and not _has_poly(target):
                found[pat] = target
        elif isinstance(pat, TupleType) and isinstance(target, TupleType):
            if len(pat.fields) == len(target.fields):
                stack.extend(zip(pat.fields, target.fields))
        elif isinstance(pat, TypeCall) and isinstance(target, TypeCall):
            if len(pat.args) == len(target.args):
                stack.extend(zip(pat.args, target.args))
        elif isinstance(pat, FuncType) and isinstance(target, FuncType):
            if not pat.type_params and len(pat.arg_types) == len(target.arg_types):
                stack.extend(zip(pat.arg_types, target.arg_types))
                stack.append((pat.ret_type, target.ret_type))
        elif isinstance(pat, RefType) and isinstance(target, RefType):
            stack.append((pat.value, target.value))
    return tuple(_concrete(found.get(p, UNIT)) for p in generic.type_params)


def _short(t: Type | TypeArgs, width: int = 60) -> str:
    text = ", ".join(str(a) for a in t) if isinstance(t, tuple) else str(t)
    return text if len(text) <= width else text[:width - 3] + "..."


# ------------------------------------------------------------------ context

@dataclass
class _Instance:
    source: GlobalVar
    type_args: TypeArgs
    gvar: GlobalVar
    order: int
    func: Function | None = None


class _Context:
    """The module-wide state: instances, their names, the worklist."""

    def __init__(self, mod: IRModule, entry: str) -> None:
        self.mod = mod
        self.entry = entry
        self.instances: dict[tuple[GlobalVar, TypeArgs], _Instance] = {}
        self.copies: dict[GlobalVar, int] = {}
        self.taken: set[str] = {gv.name for gv in mod.functions}
        self.pending: deque[_Instance] = deque()
        #: each instance's concrete function type
        self.signatures: dict[GlobalVar, Type] = {}
        #: the global being specialised (blamed for runaway type arguments)
        self.current: GlobalVar | None = None

    def request(self, gv: GlobalVar, type_args: TypeArgs) -> GlobalVar:
        """The GlobalVar of ``gv`` instantiated at ``type_args`` (queued for
        specialisation when new)."""
        func = self.mod[gv]
        assert len(type_args) == len(func.type_params), (gv.name, type_args)
        key = (gv, type_args)
        inst = self.instances.get(key)
        if inst is not None:
            return inst.gvar
        if not func.type_params or (gv.name == self.entry and not self.instances):
            new_gv = gv         # the entry keeps its name at its one instance
        else:
            count = self.copies.get(gv, 0) + 1
            if count > MAX_COPIES:
                raise self.recursion_error(
                    gv, f"would need more than {MAX_COPIES} specialised copies (the last "
                        f"at [{_short(type_args)}])")
            self.copies[gv] = count
            new_gv = GlobalVar(self._fresh_name(gv.name, type_args))
        inst = _Instance(gv, type_args, new_gv, len(self.instances))
        ftype = func.checked_type
        assert isinstance(ftype, FuncType)
        self.signatures[new_gv] = _concrete(_instantiate(ftype, type_args))
        self.instances[key] = inst
        self.pending.append(inst)
        return new_gv

    def recursion_error(self, gv: GlobalVar, what: str) -> DiagnosticError:
        """``what`` says how @gv's instantiations ran away."""
        return DiagnosticError(
            f"polymorphic recursion: @{gv.name} {what}; a function that calls itself at "
            "ever larger types cannot be specialised (make its recursive calls use its "
            "own type parameters)", self.mod[gv].span)

    def _fresh_name(self, name: str, type_args: TypeArgs) -> str:
        base = f"{_ident(name)}__{mangle_args(type_args)}"
        candidate, k = base, 2
        while candidate in self.taken:
            candidate = f"{base}_{k}"
            k += 1
        self.taken.add(candidate)
        return candidate

    def run(self) -> None:
        while self.pending:
            inst = self.pending.popleft()
            self.current = inst.source
            inst.func = self._specialise(inst)
        self.current = None

    def _specialise(self, inst: _Instance) -> Function:
        func = self.mod[inst.source]
        ftype = func.checked_type
        assert isinstance(ftype, FuncType)
        sig = _instantiate(ftype, inst.type_args) if func.type_params else ftype
        if _has_poly(sig.ret_type) and inst.source.name != self.entry:
            raise DiagnosticError(
                f"@{inst.source.name} returns a polymorphic function (`{sig.ret_type}`); "
                "it cannot be specialised: give its result a monomorphic type",
                func.span)
        mapping: dict[Type, Type] = dict(zip(func.type_params, inst.type_args))
        spec = _Specializer(self, mapping, parent=None, fresh_vars=bool(mapping))
        params = tuple(spec.bind(p) for p in func.params)
        ret = _concrete(sig.ret_type)
        body = spec.run(func.body, ret)
        return rebuild(func, params=params, body=body, ret_type=ret, type_params=())

    def module(self) -> IRModule:
        out = IRModule()
        for data in self.mod.type_definitions.values():
            out.add_type(data)
        position = {gv: i for i, gv in enumerate(self.mod.functions)}
        ordered = sorted(self.instances.values(),
                         key=lambda inst: (position[inst.source], inst.order))
        for inst in ordered:
            assert inst.func is not None
            out.add(inst.gvar, inst.func)
        return out


# ------------------------------------------------------------ local lets

@dataclass
class _PolyLet:
    """A let-bound polymorphic value being specialised: its generic type,
    the instance variable of each instantiation asked for, and the
    instantiation whose copy is being built (uses inside the value itself
    are recursive references to that copy)."""

    var: Var
    generic: FuncType
    instances: dict[TypeArgs, Var] = field(default_factory=dict)
    building: TypeArgs | None = None


# ------------------------------------------------------------ the rewrite

class _Specializer(ExprMutator):
    """Rewrites one function body (or one copy of a local polymorphic
    function) under ``mapping`` (type parameters -> concrete types).

    Every child is reached through :meth:`_sub`, which gets the type the
    parent expects for it: references to polymorphic globals, local
    polymorphic variables and polymorphic function literals are replaced
    there, by their instance for the instantiation that type (or the
    call's type arguments) implies; a child whose own type holds a
    polymorphic function remembers the expected type in ``expect``."""

    def __init__(self, ctx: _Context, mapping: dict[Type, Type], parent: _Specializer | None,
                 fresh_vars: bool) -> None:
        super().__init__()
        self.ctx = ctx
        self.mapping = mapping
        self.parent = parent
        self.fresh_vars = fresh_vars
        self.poly_lets: dict[Var, _PolyLet] = {}
        self.expect: dict[Expr, Type] = {}

    # ---------------------------------------------------------- types
    def subst(self, t: Type) -> Type:
        return substitute(t, self.mapping) if self.mapping else t

    def mono(self, t: Type) -> Type:
        """``t`` under the substitution, with polymorphic function types
        inside it instantiated at ``()``."""
        out = self.subst(t)
        if self.mapping:
            # Checked before anything walks ``out`` recursively: under
            # polymorphic recursion its tree size doubles at every copy.
            problem = None
            if _tree_size_exceeds(out, MAX_TYPE_SIZE):
                problem = f"gets type arguments of more than {MAX_TYPE_SIZE} type nodes"
            elif _depth_exceeds(out, MAX_TYPE_DEPTH):
                problem = f"gets type arguments nested more than {MAX_TYPE_DEPTH} deep"
            if problem is not None:
                gv = self.ctx.current
                assert gv is not None
                raise self.ctx.recursion_error(gv, problem)
        return _concrete(out)

    def type_of(self, node: Expr) -> Type | None:
        """The concrete type ``node`` is used at (None for references whose
        type depends on the use: globals, constructors, operators and
        polymorphic locals)."""
        if node in self.expect:
            return self.expect[node]
        if isinstance(node, GlobalVar):
            ftype = self.ctx.mod[node].checked_type
            assert isinstance(ftype, FuncType)
            return None if ftype.type_params else _concrete(ftype)
        if isinstance(node, (Constructor, Op)):
            return None
        if isinstance(node, Var) and self.poly_let(node) is not None:
            return None
        if isinstance(node, Function) and node.type_params:
            return None
        assert node.checked_type is not None, f"untyped {type(node).__name__}"
        return self.mono(node.checked_type)

    def _raw_type(self, node: Expr) -> Type | None:
        """``node``'s type under the substitution, polymorphism kept."""
        if isinstance(node, GlobalVar):
            return self.ctx.mod[node].checked_type
        if node.checked_type is None:
            return None
        return self.subst(node.checked_type)

    # ---------------------------------------------------------- variables
    def bind(self, var: Var) -> Var:
        """The variable a binder becomes (fresh in a copy)."""
        t = var.checked_type if var.checked_type is not None else var.type_annotation
        assert t is not None, f"%{var.name_hint} has no type"
        t = self.subst(t)
        if _has_poly(t):
            raise DiagnosticError(
                f"%{var.name_hint} has type `{t}`, which holds a polymorphic function; "
                "specialisation needs every variable but a let-bound function to have a "
                "monomorphic type", var.span)
        if not self.fresh_vars:
            self.memo[var] = var
            return var
        t = self.mono(t)
        new = Var(var.name_hint, t, span=var.span, checked_type=t)
        self.memo[var] = new
        return new

    def lookup_var(self, var: Var) -> Expr:
        if var in self.memo:
            return self.memo[var]
        if self.parent is not None:
            return self.parent.lookup_var(var)
        return var

    def poly_let(self, var: Var) -> _PolyLet | None:
        spec: _Specializer | None = self
        while spec is not None:
            plet = spec.poly_lets.get(var)
            if plet is not None:
                return plet
            spec = spec.parent
        return None

    def visit_var(self, node: Var) -> Expr:
        # A variable bound here was put in ``memo`` by ``bind``; one that
        # misses is captured from an enclosing specialiser.
        return self.parent.lookup_var(node) if self.parent is not None else node

    def visit_global_var(self, node: GlobalVar) -> Expr:
        raise AssertionError("global references are replaced in _sub")

    # ---------------------------------------------------------- children
    def run(self, expr: Expr, expected: Type | None) -> Expr:
        """Rewrite a root expression (a function body)."""
        out = self.intercept(expr, expected, None)
        return out if out is not None else self.visit(expr)

    def _sub(self, child: Expr, expected: Type | None,
             type_args: TypeArgs | None = None) -> Generator[Expr, Any, Expr]:
        out = self.intercept(child, expected, type_args)
        if out is None:
            out = yield child
        return out

    def intercept(self, child: Expr, expected: Type | None,
                  type_args: TypeArgs | None) -> Expr | None:
        """The replacement of a reference whose instance depends on its use
        (None: visit the child as usual)."""
        if isinstance(child, GlobalVar):
            return self._global_at(child, expected, type_args)
        if isinstance(child, (Constructor, Op)):
            return child
        if isinstance(child, Var):
            plet = self.poly_let(child)
            if plet is None:
                return None
            return self._local_at(plet, child, expected, type_args)
        if isinstance(child, Function) and child.type_params:
            return self._function_at(child, expected, type_args)
        raw = self._raw_type(child)
        if expected is not None and raw is not None and _has_poly(raw):
            old = self.expect.get(child)
            if old is not None and old != expected:
                raise DiagnosticError(
                    f"this expression is shared at two types (`{old}` and `{expected}`); "
                    "it cannot be specialised", child.span)
            self.expect[child] = expected
        return None

    def _global_at(self, gv: GlobalVar, expected: Type | None,
                   type_args: TypeArgs | None) -> GlobalVar:
        ftype = self.ctx.mod[gv].checked_type
        assert isinstance(ftype, FuncType)
        if not ftype.type_params:
            return self.ctx.request(gv, ())
        if type_args is None:
            type_args = _match(ftype, expected)
        return self.ctx.request(gv, type_args)

    def _local_at(self, plet: _PolyLet, use: Var, expected: Type | None,
                  type_args: TypeArgs | None) -> Var:
        if type_args is None:
            type_args = _match(plet.generic, expected)
        if plet.building is not None and type_args != plet.building:
            raise DiagnosticError(
                f"polymorphic recursion: %{plet.var.name_hint} calls itself at "
                f"[{_short(type_args)}] inside its instance at [{_short(plet.building)}], "
                "so it cannot be specialised", use.span or plet.var.span)
        inst = plet.instances.get(type_args)
        if inst is None:
            t = _concrete(_instantiate(plet.generic, type_args))
            inst = Var(f"{plet.var.name_hint}__{mangle_args(type_args)}", t,
                       span=plet.var.span, checked_type=t)
            plet.instances[type_args] = inst
        return inst

    def _function_at(self, fn: Function, expected: Type | None,
                     type_args: TypeArgs | None) -> Function:
        """A monomorphic copy of a polymorphic function literal."""
        generic = self._raw_type(fn)
        assert isinstance(generic, FuncType) and generic.type_params == fn.type_params
        if type_args is None:
            type_args = _match(generic, expected)
        mapping = dict(self.mapping)
        mapping.update(zip(fn.type_params, type_args))
        sub = _Specializer(self.ctx, mapping, parent=self, fresh_vars=True)
        sig = _concrete(_instantiate(generic, type_args))
        assert isinstance(sig, FuncType)
        params = tuple(sub.bind(p) for p in fn.params)
        body = sub.run(fn.body, sig.ret_type)
        return Function(params, body, sig.ret_type, (), fn.attrs, span=fn.span,
                        checked_type=sig)

    def _fields(self, exprs: tuple[Expr, ...],
                expected: tuple[Type | None, ...]) -> Generator[Expr, Any, tuple[Expr, ...]]:
        out = []
        for e, t in zip(exprs, expected):
            out.append((yield from self._sub(e, t)))
        return tuple(out)

    # ---------------------------------------------------------- nodes
    def visit_tuple(self, node: Tuple) -> Visit:
        t = self.type_of(node)
        expected: tuple[Type | None, ...] = (None,) * len(node.fields)
        if isinstance(t, TupleType) and len(t.fields) == len(node.fields):
            expected = t.fields
        fields = yield from self._fields(node.fields, expected)
        return rebuild(node, fields=fields)

    def visit_tuple_getitem(self, node: TupleGetItem) -> Visit:
        t = self.type_of(node)
        tup_t = self.type_of(node.tuple_value)
        if isinstance(tup_t, TupleType) and 0 <= node.index < len(tup_t.fields) \
                and t is not None:
            fields = list(tup_t.fields)
            fields[node.index] = t
            tup_t = TupleType(tuple(fields))
        value = yield from self._sub(node.tuple_value, tup_t)
        return rebuild(node, tuple_value=value)

    def visit_call(self, node: Call) -> Visit:
        callee = node.op
        n = len(node.args)
        if isinstance(callee, Op):
            args = yield from self._fields(node.args, (None,) * n)
            return rebuild(node, args=args)
        if isinstance(callee, Constructor):
            return (yield from self._constructor_call(node, callee))
        result_t = self.type_of(node)
        raw = self._raw_type(callee)
        type_args: TypeArgs | None = None
        if isinstance(raw, FuncType) and raw.type_params:
            if len(node.type_args) == len(raw.type_params):
                type_args = tuple(self.mono(a) for a in node.type_args)
                op_t: Type | None = _concrete(_instantiate(raw, type_args))
            else:
                # A call inside the callee's own recursive component (type
                # inference checked it monomorphically): the arguments'
                # and the result's types say which instance it is.
                arg_ts = tuple(self.type_of(a) or IncompleteType() for a in node.args)
                op_t = FuncType(arg_ts, result_t or IncompleteType())
        else:
            op_t = self.type_of(callee)
            if raw is not None and _has_poly(raw) and isinstance(op_t, FuncType) \
                    and result_t is not None:
                op_t = FuncType(op_t.arg_types, result_t)
        new_op = yield from self._sub(callee, op_t, type_args)
        if isinstance(raw, FuncType) and raw.type_params:
            # the instance's own signature is the best guide for the arguments
            op_t = self._signature(new_op) or op_t
        arg_expected: tuple[Type | None, ...] = (None,) * n
        if isinstance(op_t, FuncType) and len(op_t.arg_types) == n:
            arg_expected = tuple(None if isinstance(a, IncompleteType) else a
                                 for a in op_t.arg_types)
        args = yield from self._fields(node.args, arg_expected)
        return rebuild(node, op=new_op, args=args, type_args=())

    def _signature(self, instance: Expr) -> Type | None:
        """The concrete type of an instance made by ``intercept``."""
        if isinstance(instance, GlobalVar):
            return self.ctx.signatures[instance]
        return instance.checked_type

    def _constructor_call(self, node: Call, ctor: Constructor) -> Visit:
        data = self.ctx.mod.type_definitions[ctor.belong_to]
        n = len(node.args)
        if len(node.type_args) == len(data.type_vars):
            type_args = tuple(self.mono(a) for a in node.type_args)
            mapping: dict[Type, Type] = dict(zip(data.type_vars, type_args))
            expected: tuple[Type | None, ...] = tuple(
                _concrete(substitute(t, mapping)) for t in ctor.inputs)
        else:
            type_args = node.type_args
            expected = (None,) * n
        args = yield from self._fields(node.args, expected)
        return rebuild(node, args=args, type_args=type_args)

    def visit_function(self, node: Function) -> Visit:
        assert not node.type_params, "polymorphic literals are replaced in _sub"
        t = self.type_of(node)
        assert isinstance(t, FuncType)
        params = tuple(self.bind(p) for p in node.params)
        body = yield from self._sub(node.body, t.ret_type)
        ret = node.ret_type
        if ret is not None and (self.mapping or _has_poly(ret)):
            ret = t.ret_type
        return rebuild(node, params=params, body=body, ret_type=ret)

    def visit_let(self, node: Let) -> Visit:
        t = self.type_of(node)
        var_t = self._raw_type(node.var)
        if isinstance(var_t, FuncType) and var_t.type_params:
            return (yield from self._specialise_poly_let(node, var_t, t))
        var = self.bind(node.var)
        value = yield from self._sub(node.value, var.type_annotation)
        body = yield from self._sub(node.body, t)
        return rebuild(node, var=var, value=value, body=body)

    def _specialise_poly_let(self, node: Let, generic: FuncType, t: Type | None) -> Visit:
        """``let %f = <polymorphic value>; body``: one binding per
        instantiation the body uses (see the module docstring)."""
        value = node.value
        syntactic = isinstance(value, (Function, GlobalVar, Var, Constructor, Op))
        if isinstance(value, Var) and self.poly_let(value) is None:
            syntactic = False
        if isinstance(value, Function) and not value.type_params:
            syntactic = False
        if not syntactic:
            raise DiagnosticError(
                f"%{node.var.name_hint} is bound to a polymorphic value (`{generic}`) that "
                "is not a function, global function or constructor; it cannot be "
                "specialised", node.value.span or node.span)
        plet = _PolyLet(node.var, generic)
        self.poly_lets[node.var] = plet
        result = yield from self._sub(node.body, t)
        for type_args in reversed(list(plet.instances)):
            inst_var = plet.instances[type_args]
            plet.building = type_args
            copy = self.intercept(value, inst_var.type_annotation, None)
            assert copy is not None
            plet.building = None
            result = Let(inst_var, copy, result, span=node.span)
        return result

    def visit_if(self, node: If) -> Visit:
        t = self.type_of(node)
        cond = yield from self._sub(node.cond, BOOL_SCALAR)
        then = yield from self._sub(node.true_branch, t)
        other = yield from self._sub(node.false_branch, t)
        return rebuild(node, cond=cond, true_branch=then, false_branch=other)

    def visit_match(self, node: Match) -> Visit:
        t = self.type_of(node)
        data = yield from self._sub(node.data, self.type_of(node.data))
        clauses = []
        for clause in node.clauses:
            lhs = self._pattern(clause.lhs)
            rhs = yield from self._sub(clause.rhs, t)
            clauses.append(rebuild(clause, lhs=lhs, rhs=rhs))
        return rebuild(node, data=data, clauses=tuple(clauses))

    def _pattern(self, p: Pattern) -> Pattern:
        if isinstance(p, PatternVar):
            return rebuild(p, var=self.bind(p.var))
        if isinstance(p, (PatternConstructor, PatternTuple)):
            return rebuild(p, patterns=tuple(self._pattern(s) for s in p.patterns))
        return p

    def visit_ref_create(self, node: RefCreate) -> Visit:
        t = self.type_of(node)
        value = yield from self._sub(node.value, t.value if isinstance(t, RefType) else None)
        return rebuild(node, value=value)

    def visit_ref_read(self, node: RefRead) -> Visit:
        t = self.type_of(node)
        ref = yield from self._sub(node.ref, RefType(t) if t is not None else None)
        return rebuild(node, ref=ref)

    def visit_ref_write(self, node: RefWrite) -> Visit:
        ref_t = self.type_of(node.ref)
        ref = yield from self._sub(node.ref, ref_t)
        value_t = ref_t.value if isinstance(ref_t, RefType) else None
        value = yield from self._sub(node.value, value_t)
        return rebuild(node, ref=ref, value=value)


__all__ = ["specialize", "mangle_type", "mangle_args", "MAX_COPIES", "MAX_TYPE_SIZE",
           "MAX_TYPE_DEPTH"]


@dataclass(frozen=True)
class SpecializeOptions:
    """``entry``: the function specialisation starts from."""

    entry: str = "main"


@register_pass("Specialize", opt_level=0, options=SpecializeOptions)
def specialize_pass(mod: IRModule, opts: SpecializeOptions) -> IRModule:
    """Specialize: the monomorphic instances reachable from the entry."""
    return specialize(mod, opts.entry)
