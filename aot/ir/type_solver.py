"""The type solver: unification plus operator relations to a fixed point.

Design note
-----------
Type inference (``type_infer.py``) walks a program once and turns every
node into *constraints* over types that may contain holes
(:class:`IncompleteType`):

* equalities, solved at once by :meth:`TypeSolver.unify` — a union-find
  over holes (``self.binding`` maps a hole to what it stands for; ``resolve``
  substitutes through it with path compression);
* deferred constraints: operator relations (``add(A, B) -> C``) and tuple
  projections of a not-yet-known tuple.  A relation can only run when its
  argument types are known well enough, so :meth:`TypeSolver.solve` loops
  over the pending ones, runs every relation on the currently resolved
  argument types, unifies its answer, and repeats until a round makes no
  progress (a fixed point).  What is still pending then cannot be inferred.

Polymorphism: a ``FuncType`` with ``type_params`` (a global ``@id[A]``, a
constructor, a ``fn[A]`` literal, an operator used as a value) is
instantiated with fresh holes whenever it is called or meets a
non-polymorphic type in unification, so polymorphic types never flow into
holes (no higher-rank types).  Type variables of the function being
checked are rigid: they unify only with themselves.

Dimensions: ``?`` (ANY) unifies with any dimension and yields the other
one.

Errors are collected as diagnostics (inference goes on after a mismatch so
several errors are reported at once).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

from ..diagnostics import DiagnosticCollector, Span
from .attrs import Attrs
from .registry import OpDef, PatternKind, RelationError, Solved
from .types import (ANY, Dim, FuncType, GlobalTypeVar, IncompleteType, RefType, TensorType,
                    TupleType, Type, TypeCall, TypeRelation, map_type, substitute)


class Mismatch(Exception):
    """Two types do not unify (message says where inside them)."""


@dataclass(slots=True)
class Relation:
    """A pending operator call: ``op(args) -> out``."""

    op: OpDef
    args: tuple[Type, ...]
    out: Type
    attrs: Attrs
    span: Span | None


@dataclass(slots=True)
class Deferred:
    """A pending check that needs a type to be known (a projection, say).
    ``run(solver)`` returns True when done, False to wait."""

    run: Callable[[TypeSolver], bool]
    #: what to say if it never becomes ready
    stuck_message: str
    span: Span | None


@dataclass
class TypeSolver:
    diagnostics: DiagnosticCollector = field(default_factory=DiagnosticCollector)
    binding: dict[IncompleteType, Type] = field(default_factory=dict)
    relations: list[Relation] = field(default_factory=list)
    deferred: list[Deferred] = field(default_factory=list)
    #: op lookup for TypeRelation constraints of instantiated op types
    op_lookup: Callable[[str], OpDef | None] | None = None

    # ------------------------------------------------------------ holes
    def fresh(self) -> IncompleteType:
        return IncompleteType()

    def resolve(self, t: Type) -> Type:
        """``t`` with every bound hole replaced (deeply)."""
        binding = self.binding

        def fn(node: Type) -> Type | None:
            if isinstance(node, IncompleteType):
                target = binding.get(node)
                if target is None:
                    return node
                resolved = self.resolve(target)
                binding[node] = resolved
                return resolved
            return None

        return map_type(t, fn)

    def _shallow(self, t: Type) -> Type:
        while isinstance(t, IncompleteType) and t in self.binding:
            t = self.binding[t]
        return t

    # ----------------------------------------------------- instantiation
    def instantiate(self, t: FuncType,
                    span: Span | None = None) -> tuple[FuncType, tuple[Type, ...]]:
        """Replace ``t``'s type parameters by fresh holes; returns the
        monomorphic type and the holes (the call's type arguments).
        Relation constraints of the type become pending relations."""
        holes = tuple(self.fresh() for _ in t.type_params)
        mapping: dict[Type, Type] = dict(zip(t.type_params, holes))
        inst = FuncType(tuple(substitute(a, mapping) for a in t.arg_types),
                        substitute(t.ret_type, mapping))
        for rel in t.type_constraints:
            self._add_type_relation(rel, mapping, span)
        return inst, holes

    def _add_type_relation(self, rel: TypeRelation, mapping: dict[Type, Type],
                           span: Span | None) -> None:
        op = self.op_lookup(rel.name) if self.op_lookup else None
        assert op is not None, f"type relation {rel.name} names no operator"
        args = tuple(substitute(a, mapping) for a in rel.args)
        attrs = rel.attrs if isinstance(rel.attrs, Attrs) else op.attrs_type()
        self.relations.append(Relation(op, args[:-1], args[-1], attrs, span))

    # ------------------------------------------------------------ unify
    def unify(self, expected: Type, found: Type, span: Span | None,
              what: str = "") -> Type:
        """Make ``expected`` and ``found`` equal; on failure record a
        diagnostic and return ``expected``."""
        try:
            return self._unify(expected, found)
        except Mismatch as exc:
            exp, got = self.resolve(expected), self.resolve(found)
            detail = f" ({exc})" if str(exc) else ""
            prefix = f"{what}: " if what else ""
            self.diagnostics.error(
                f"{prefix}type mismatch: expected `{exp}`, found `{got}`{detail}", span)
            return expected

    def _unify(self, a: Type, b: Type) -> Type:
        a = self._shallow(a)
        b = self._shallow(b)
        if a is b or a == b:
            return a
        if isinstance(a, FuncType) and a.type_params and not (
                isinstance(b, FuncType) and b.type_params):
            a = self.instantiate(a)[0]
        if isinstance(b, FuncType) and b.type_params and not (
                isinstance(a, FuncType) and a.type_params):
            b = self.instantiate(b)[0]
        if isinstance(a, IncompleteType):
            return self._bind(a, b)
        if isinstance(b, IncompleteType):
            return self._bind(b, a)
        if isinstance(a, TensorType) and isinstance(b, TensorType):
            return self._unify_tensor(a, b)
        if isinstance(a, TupleType) and isinstance(b, TupleType):
            if len(a.fields) != len(b.fields):
                raise Mismatch(f"tuples of {len(a.fields)} and {len(b.fields)} fields")
            return TupleType(tuple(self._unify(x, y) for x, y in zip(a.fields, b.fields)))
        if isinstance(a, TypeCall) and isinstance(b, TypeCall):
            if a.func.name != b.func.name or len(a.args) != len(b.args):
                raise Mismatch("")
            return TypeCall(a.func, tuple(self._unify(x, y) for x, y in zip(a.args, b.args)))
        if isinstance(a, GlobalTypeVar) and isinstance(b, TypeCall) and not b.args:
            return self._unify(TypeCall(a, ()), b)
        if isinstance(b, GlobalTypeVar) and isinstance(a, TypeCall) and not a.args:
            return self._unify(a, TypeCall(b, ()))
        if isinstance(a, RefType) and isinstance(b, RefType):
            return RefType(self._unify(a.value, b.value))
        if isinstance(a, FuncType) and isinstance(b, FuncType):
            return self._unify_func(a, b)
        raise Mismatch("")

    def _bind(self, hole: IncompleteType, t: Type) -> Type:
        if self._occurs(hole, t):
            raise Mismatch("the type would contain itself")
        self.binding[hole] = t
        return t

    def _occurs(self, hole: IncompleteType, t: Type) -> bool:
        stack = [t]
        while stack:
            node = self._shallow(stack.pop())
            if node is hole or node == hole:
                return True
            if isinstance(node, TupleType):
                stack.extend(node.fields)
            elif isinstance(node, TypeCall):
                stack.extend(node.args)
            elif isinstance(node, FuncType):
                stack.extend(node.arg_types)
                stack.append(node.ret_type)
            elif isinstance(node, RefType):
                stack.append(node.value)
        return False

    def _unify_tensor(self, a: TensorType, b: TensorType) -> TensorType:
        if a.dtype != b.dtype:
            raise Mismatch(f"dtype {a.dtype} vs {b.dtype}")
        if len(a.shape) != len(b.shape):
            raise Mismatch(f"rank {len(a.shape)} vs {len(b.shape)}")
        dims: list[Dim] = []
        for i, (x, y) in enumerate(zip(a.shape, b.shape)):
            if x is ANY:
                dims.append(y)
            elif y is ANY or x == y:
                dims.append(x)
            else:
                raise Mismatch(f"dimension {i}: {x} vs {y}")
        return TensorType(tuple(dims), a.dtype)

    def _unify_func(self, a: FuncType, b: FuncType) -> FuncType:
        if len(a.arg_types) != len(b.arg_types):
            raise Mismatch(f"functions of {len(a.arg_types)} and {len(b.arg_types)} arguments")
        if a.type_params or b.type_params:
            if len(a.type_params) != len(b.type_params):
                raise Mismatch("different numbers of type parameters")
            # alpha-rename b's parameters to a's
            mapping: dict[Type, Type] = dict(zip(b.type_params, a.type_params))
            b = FuncType(tuple(substitute(t, mapping) for t in b.arg_types),
                         substitute(b.ret_type, mapping), a.type_params)
        args = tuple(self._unify(x, y) for x, y in zip(a.arg_types, b.arg_types))
        ret = self._unify(a.ret_type, b.ret_type)
        return FuncType(args, ret, a.type_params)

    # ------------------------------------------------------------ solve
    def add_relation(self, op: OpDef, args: Sequence[Type], out: Type, attrs: Attrs,
                     span: Span | None) -> None:
        self.relations.append(Relation(op, tuple(args), out, attrs, span))

    def add_deferred(self, d: Deferred) -> None:
        self.deferred.append(d)

    def solve(self) -> None:
        """Run relations and deferred checks until nothing changes."""
        progress = True
        while progress and (self.relations or self.deferred):
            progress = False
            pending: list[Relation] = []
            for rel in self.relations:
                if self._run_relation(rel):
                    progress = True
                else:
                    pending.append(rel)
            self.relations = pending
            waiting: list[Deferred] = []
            for d in self.deferred:
                if d.run(self):
                    progress = True
                else:
                    waiting.append(d)
            self.deferred = waiting

    def _run_relation(self, rel: Relation) -> bool:
        args = [self.resolve(a) for a in rel.args]
        try:
            result = rel.op.rel(args, rel.attrs)
        except RelationError as exc:
            self.diagnostics.error(f"`{rel.op.name}`: {exc}", rel.span)
            return True
        if result is None:
            return False
        if isinstance(result, Solved):
            for given, refined in zip(rel.args, result.args):
                if refined is not None:
                    self.unify(refined, given, rel.span, f"`{rel.op.name}`")
            result = result.out
        self.unify(result, rel.out, rel.span, f"`{rel.op.name}` result")
        return True

    def apply_defaults(self) -> bool:
        """Last resort after the fixed point: an argument of an elementwise
        or broadcasting operator whose type nothing determines is assumed
        to have the type of a sibling argument of rank > 0 that is known
        (``add(%conv, %bias)`` with an unknown ``%bias``).  Returns True if it changed
        anything (then solve again)."""
        changed = False
        for rel in self.relations:
            if rel.op.pattern > PatternKind.BROADCAST:
                continue
            args = [self.resolve(a) for a in rel.args]
            # a scalar sibling says nothing about the operand's shape
            known = [a for a in args if isinstance(a, TensorType) and a.shape]
            if not known:
                continue
            for given, now in zip(rel.args, args):
                if isinstance(now, IncompleteType):
                    self.unify(known[0], given, rel.span, f"`{rel.op.name}`")
                    changed = True
        return changed

    def report_stuck(self) -> None:
        """Report what could not be inferred: only the root causes, not the
        calls that are stuck merely because they consume a stuck result."""
        outs = {self.resolve(r.out) for r in self.relations}
        roots = [r for r in self.relations
                 if not any(isinstance(a, IncompleteType) and a in outs
                            for a in (self.resolve(x) for x in r.args))]
        for rel in roots or self.relations:
            args = ", ".join(str(self.resolve(a)) for a in rel.args)
            self.diagnostics.error(
                f"cannot infer the type of this `{rel.op.name}` call: its argument types "
                f"({args}) are not known; annotate the parameters it depends on", rel.span)
        for d in self.deferred:
            self.diagnostics.error(d.stuck_message, d.span)
        self.relations = []
        self.deferred = []
