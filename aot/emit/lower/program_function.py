"""The body of one function of a whole-language program, lowered to the
object IR (:mod:`aot.emit.objects.ir`); the rules are in
:mod:`aot.emit.lower.program`'s design note."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterator, Sequence

from ...diagnostics import DiagnosticError, Span
from ...ir.adt import Constructor
from ...ir.expr import (Call, Constant, Expr, Function, GlobalVar, If, Let, Match, Op, RefCreate,
                        RefRead, RefWrite, Tuple, TupleGetItem, Var)
from ...ir.types import TupleType
from ..objects import ir as O
from .match_tree import Fail, Leaf, Switch, Tree, compile_match

if TYPE_CHECKING:
    from .program import ProgramLowering

__all__ = ["FunctionLowering", "error", "is_primitive", "field_path"]

#: The target of an expression in tail position: the function's result.
RETURN = None


def error(node: object, message: str) -> DiagnosticError:
    span: Span | None = getattr(node, "span", None)
    return DiagnosticError(message, span)


def is_primitive(e: Expr) -> bool:
    return isinstance(e, Function) and bool(e.attrs.get("Primitive", 0))


def field_path(value: O.Value, path: Sequence[int]) -> O.Value:
    for i in path:
        value = O.Field(value, i)
    return value


@dataclass
class FunctionLowering:
    """The object IR of one function (see the module note)."""

    prog: "ProgramLowering"
    fn: Function
    self_ref: Expr | None            # GlobalVar or let Var whose tail calls loop
    blocks: list[list[O.Stmt]] = field(default_factory=lambda: [[]])
    temps: list[str] = field(default_factory=list)
    borrowed: list[str] = field(default_factory=list)
    env: dict[Var, O.Value] = field(default_factory=dict)
    params: list[str] = field(default_factory=list)
    loops: bool = False
    #: values computed so far, one dict per nested block (a node shared in
    #: graph form is computed once where it is visible, again elsewhere)
    memo: list[dict[int, O.Value]] = field(default_factory=lambda: [{}])

    def put(self, stmt: O.Stmt) -> None:
        self.blocks[-1].append(stmt)

    def block(self, lower) -> O.Block:
        """The statements ``lower()`` puts, in a nested block."""
        self.blocks.append([])
        self.memo.append({})
        lower()
        self.memo.pop()
        return tuple(self.blocks.pop())

    def temp(self) -> str:
        name = f"t{len(self.temps)}"
        self.temps.append(name)
        return name

    def local(self) -> str:
        name = f"b{len(self.borrowed)}"
        self.borrowed.append(name)
        return name

    def new_tensor(self, dtype, shape) -> O.TensorOut:
        """A temporary holding a fresh pool tensor."""
        tmp = self.temp()
        self.put(O.AllocTensor(tmp, dtype.nbytes(math.prod(int(d) for d in shape))))
        return O.TensorOut(tmp, dtype)

    def new_cell(self, kind: O.CellKind, tag: int, fields: Sequence[O.Value]) -> O.Var:
        """A temporary holding a fresh cell whose fields retain ``fields``."""
        tmp = self.temp()
        self.put(O.AllocCell(tmp, kind, tag, len(fields)))
        for i, f in enumerate(fields):
            self.put(O.SetField(O.Var(tmp), i, f))
        return O.Var(tmp)

    # ---------------------------------------------------------- function

    def lower(self, name: str, kind: O.FunctionKind, env: dict[Var, O.Value],
              comment: str) -> O.Function:
        self.params = [f"a{i}" for i in range(len(self.fn.params))]
        self.env = dict(env)
        for v, p in zip(self.fn.params, self.params):
            self.env[v] = O.Var(p)
        self.emit(self.fn.body, RETURN)
        cleanup: list[O.Stmt] = [O.Release(t) for t in self.temps]
        if self.loops:
            cleanup.append(O.ReleaseParams(tuple(self.params)))
        cleanup.append(O.Leave())
        return O.Function(name, kind, f"{comment}: {_signature_text(self.fn)}",
                          tuple(self.params), tuple(self.temps), tuple(self.borrowed),
                          self.loops, tuple(self.blocks[0]), tuple(cleanup))

    # ------------------------------------------------------ expressions

    def assign(self, target: str | None, value: O.Value) -> None:
        self.put(O.Return(value) if target is RETURN else O.Retain(target, value))

    def emit(self, e: Expr, target: str | None) -> None:
        """Compute ``e`` into ``target`` (RETURN: the function's result)."""
        while isinstance(e, Let):
            value = e.value
            if isinstance(value, Function) and not is_primitive(value):
                self.env[e.var] = self.make_closure(value, e.var)
            else:
                self.env[e.var] = self.value(value)
            e = e.body
        if isinstance(e, If):
            cond = self.value(e.cond)
            then = self.block(lambda: self.emit(e.true_branch, target))
            otherwise = self.block(lambda: self.emit(e.false_branch, target))
            self.put(O.If(cond, then, otherwise))
            return
        if isinstance(e, Match):
            self.match(e, target)
            return
        if target is RETURN and isinstance(e, Call) and self.is_self_call(e):
            self.tail_call(e)
            return
        self.assign(target, self.value(e))

    def is_self_call(self, e: Expr) -> bool:
        return (isinstance(e, Call) and self.self_ref is not None and
                (e.op is self.self_ref or (isinstance(e.op, GlobalVar) and
                                           isinstance(self.self_ref, GlobalVar) and
                                           e.op.name == self.self_ref.name)))

    def tail_call(self, call: Call) -> None:
        args = [self.value(a) for a in call.args]
        nxt = []
        for a in args:
            tmp = self.local()
            self.put(O.Retain(tmp, a))
            nxt.append(tmp)
        self.loops = True
        self.put(O.TailJump(tuple(nxt)))

    def match(self, e: Match, target: str | None) -> None:
        scrut = self.value(e.data)
        tree: Tree | None = compile_match(e.clauses, self._constructors_of)
        tag = self.prog.static_tags.get(scrut)
        while tag is not None and isinstance(tree, Switch) and tree.path == ():
            tree = dict(tree.cases).get(tag, tree.default)
        self._tree(tree, scrut, e, target)

    def _constructors_of(self, c: Constructor) -> Sequence[Constructor]:
        return self.prog.mod.lookup_type(c.belong_to).constructors

    def _tree(self, tree: object, scrut: O.Value, e: Match, target: str | None) -> None:
        if isinstance(tree, Fail):
            self.put(O.Raise(O.Status.MATCH))
            return
        if isinstance(tree, Leaf):
            for var, path in tree.bindings:
                self.env[var] = field_path(scrut, path)
            self.emit(e.clauses[tree.clause].rhs, target)
            return
        assert isinstance(tree, Switch), tree
        cases = tuple((tag, self.block(lambda sub=sub: self._tree(sub, scrut, e, target)))
                      for tag, sub in tree.cases)
        if tree.default is None:
            default: O.Block = (O.Raise(O.Status.BAD_TAG),)
        else:
            default = self.block(lambda: self._tree(tree.default, scrut, e, target))
        self.put(O.Switch(field_path(scrut, tree.path), cases, default))

    def make_closure(self, fn: Function, self_var: Var | None) -> O.Value:
        info = self.prog.closure(fn, self_var)
        if info.static_obj is not None:
            return info.static_obj
        tmp = self.new_cell(O.CellKind.CLOSURE, 0, [self.lookup(v) for v in info.captured])
        self.put(O.SetCode(tmp, info.code))
        return tmp

    def lookup(self, v: Var) -> O.Value:
        if v not in self.env:
            raise error(v, f"free variable %{v.name_hint}")
        return self.env[v]

    def build_tuple_tree(self, t: TupleType, leaves: Iterator[O.Value]) -> O.Value:
        fields = [self.build_tuple_tree(f, leaves) if isinstance(f, TupleType) else next(leaves)
                  for f in t.fields]
        return self.tuple_of(fields)

    def tuple_of(self, fields: list[O.Value]) -> O.Value:
        if not fields:
            return self.prog.unit()
        return self.new_cell(O.CellKind.TUPLE, 0, fields)

    def value(self, e: Expr) -> O.Value:
        """A value holding ``e``'s, valid until the function (or the loop
        iteration) ends."""
        if isinstance(e, Var):
            return self.lookup(e)
        key = id(e)
        for scope in reversed(self.memo):
            if key in scope:
                return scope[key]
        result = self._value(e)
        self.memo[-1][key] = result
        return result

    def _value(self, e: Expr) -> O.Value:
        if isinstance(e, GlobalVar):
            return self.prog.global_closure(e)
        if isinstance(e, Constant):
            return self.prog.constant(e)
        if isinstance(e, Constructor):
            return self.prog.nullary(e) if not e.inputs else self.prog.constructor_closure(e)
        if isinstance(e, Tuple):
            return self.tuple_of([self.value(f) for f in e.fields])
        if isinstance(e, TupleGetItem):
            return O.Field(self.value(e.tuple_value), e.index)
        if isinstance(e, Function):
            if is_primitive(e):
                raise error(e, "a primitive function used as a value")
            return self.make_closure(e, None)
        if isinstance(e, RefCreate):
            return self.new_cell(O.CellKind.REF, 0, [self.value(e.value)])
        if isinstance(e, RefRead):
            tmp = self.temp()
            self.put(O.Retain(tmp, O.Field(self.value(e.ref), 0)))
            return O.Var(tmp)
        if isinstance(e, RefWrite):
            return self.ref_write(e)
        if isinstance(e, (Let, If, Match)):
            tmp = self.temp()
            self.emit(e, tmp)
            return O.Var(tmp)
        if isinstance(e, Call):
            return self.call(e)
        if isinstance(e, Op):
            raise error(e, f"operator {e.name} used as a value (eta-expand it first)")
        raise error(e, f"{type(e).__name__} cannot be compiled to C")

    def ref_write(self, e: RefWrite) -> O.Value:
        self.prog.writes_refs = True
        r = self.value(e.ref)
        v = self.value(e.value)
        old = self.local()
        self.put(O.Take(old, O.Field(r, 0)))
        self.put(O.SetField(r, 0, v))
        self.put(O.Release(old))
        return self.prog.unit()

    def call(self, e: Call) -> O.Value:
        op = e.op
        if is_primitive(op):
            args = [self.value(a) for a in e.args]
            return self.prog.kernel_call(self, e, args)
        if isinstance(op, Constructor):
            args = [self.value(a) for a in e.args]
            if not args:
                return self.prog.nullary(op)
            return self.new_cell(O.CellKind.ADT, op.tag, args)
        if isinstance(op, Op):
            raise error(e, f"operator {op.name} outside a fused group")
        if isinstance(op, GlobalVar):
            target = self.prog.global_function(op)
            args = [self.value(a) for a in e.args]
            tmp = self.temp()
            self.put(O.CallFunction(tmp, target, tuple(args)))
            return O.Var(tmp)
        f = self.value(op)
        args = [self.value(a) for a in e.args]
        tmp = self.temp()
        self.put(O.CallClosure(tmp, f, tuple(args)))
        return O.Var(tmp)


def _signature_text(fn: Function) -> str:
    params = ", ".join(f"%{p.name_hint}: {p.checked_type}" for p in fn.params)
    ret = fn.body.checked_type
    return f"fn ({params}) -> {ret}".replace("*/", "* /")
