"""Lower a whole-language program (closures, ADTs, match, recursion,
references, control flow) to C functions over the object runtime.

Design note
-----------
The input is a typed, monomorphic (:mod:`aot.passes.specialize`), fused
(:mod:`aot.passes.fuse_ops`) module.  The output is C text: one static C
function per global function and per function literal, plus the entry
function, over the objects of ``runtime_c/aot_runtime.h``.

**Values are uniform.**  Every value is an ``aot_obj *``: tensors (boxed:
the elements follow the header in the pool), ADT cells, tuples, closures
and reference cells.  One representation means one calling convention,
polymorphic code needs no per-type layout, and the pool can hold any
value.  Rank-0 tensors are boxed too: simple before fast.

**Closures are closure-converted** (not defunctionalised): a closure is a
code pointer plus its captured values.  With uniform values every closure
of arity *n* has the same C type (``aot_code``: arguments as an array),
so a closure call is one indirect call, the code of each function literal
is compiled once where it stands, and no whole-program dispatch table
has to be kept in sync with specialisation.  A function literal without
free variables, a global used as a value and a constructor used as a
function are *static* closures: no allocation.  A recursive ``let``-bound
function does not capture itself (which would be a reference cycle): in
its own body the name is ``self``.

**Ownership.**  Every C local is *owned* (a temporary ``tN`` holding one
reference, released on the way out of the function) or *borrowed*
(parameters, captured values, fields of cells the function can reach:
cells are immutable, so a field lives as long as its cell).  Calls borrow
their arguments and return an owned result; storing a value into a cell
retains it; a reference read retains (a later write could drop the old
value).  Every error path is ``st = <code>; goto done;`` and ``done:``
releases every temporary: whatever fails, everything the call allocated
is back in the pool.

**Control flow.**  ``if`` is a C ``if`` on the condition's byte; ``match``
is a decision tree (:mod:`aot.emit.lower.match_tree`) printed as nested
``switch`` statements on constructor tags, with ``AOT_ERR_MATCH`` where no
clause applies.  Values of ``if``/``match`` in non-tail position are
assigned to a temporary.

**Tail calls.**  A call of the function itself (a global by name, a
recursive ``let`` by its variable) in tail position becomes a jump to the
top: the new arguments are retained, the iteration's temporaries
released, the parameters replaced (owned from then on).  A loop of any
length runs in constant stack.  Other calls count against the recursion
bound (``aot_enter``): past it the call returns ``AOT_ERR_DEPTH``.

**Kernels.**  A call of a ``Primitive`` function is a fused kernel from
:mod:`aot.emit.lower.group` (shared with the dataflow backend): its
outputs are fresh pool tensors, its scratch buffers pool tensors freed
right after the call.
"""

from __future__ import annotations

import re

import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from ...diagnostics import DiagnosticError, Span
from ...ir.adt import Constructor
from ...ir.analysis import free_vars
from ...ir.expr import (Call, Constant, Expr, Function, GlobalVar, If, Let, Match, Op, RefCreate,
                       RefRead, RefWrite, Tuple, TupleGetItem, Var)
from ...ir.module import IRModule
from ...ir.types import FuncType, TensorType, TupleType, Type
from ..c.types import c_storage_type
from .group import flatten_type
from .dataflow import KernelTable
from .match_tree import Fail, Leaf, Switch, compile_match

__all__ = ["ProgramLowering", "RETURN"]

#: The target of an expression in tail position: ``*out``.
RETURN = "*out"
_RELEASE_TEMPS = "@release-temporaries@"


def _error(node: object, message: str) -> DiagnosticError:
    span: Span | None = getattr(node, "span", None)
    return DiagnosticError(message, span)


def _is_primitive(e: Expr) -> bool:
    return isinstance(e, Function) and bool(e.attrs.get("Primitive", 0))


@dataclass
class _Closure:
    """A function literal's C code: name, captured variables, static
    object (when nothing is captured)."""
    code: str
    captured: tuple[Var, ...]
    static_obj: str | None


class ProgramLowering:
    """Module-wide state: kernels, constants, static objects, the C
    functions made so far."""

    def __init__(self, mod: IRModule, name: str) -> None:
        self.mod = mod
        self.name = name
        self.kernels = KernelTable(name)
        self.statics: list[tuple[str, str]] = []    # (symbol, definition)
        self.prototypes: list[str] = []
        self.functions: list[str] = []
        self.global_fn: dict[str, str] = {}        # global name -> C function
        self.global_clo: dict[str, str] = {}       # global name -> static closure object
        self.ctor_obj: dict[str, str] = {}         # nullary constructor -> static object
        self.ctor_clo: dict[str, str] = {}         # constructor used as a function
        self.tensor_obj: dict[str, str] = {}       # constant symbol -> static object
        self.closures: dict[int, _Closure] = {}
        self.unit_obj: str | None = None
        self.writes_refs = False     # a RefWrite was compiled: collect cycles
        #: static ADT objects (C expression -> tag): a match on one is
        #: decided at compile time (C compilers warn about the field reads
        #: of the dead branches otherwise)
        self.static_tags: dict[str, int] = {}
        self.pending: list[GlobalVar] = []
        self.counter = 0
        self.ctor_ids: dict[str, int] = {}
        for header in sorted(mod.type_definitions, key=lambda h: h.name):
            for c in mod.type_definitions[header].constructors:
                self.ctor_ids[c.name] = len(self.ctor_ids)

    # ------------------------------------------------------------ names

    def fresh(self, base: str) -> str:
        self.counter += 1
        return f"{self.name}_{base}{self.counter}"

    def global_function(self, gv: GlobalVar) -> str:
        if gv.name not in self.global_fn:
            if gv.name not in self.mod:
                raise _error(gv, f"unknown global function @{gv.name}")
            cname = self.fresh("f_" + _c_safe(gv.name) + "_")
            self.global_fn[gv.name] = cname
            fn = self.mod[gv]
            params = ", ".join(["aot_ctx *ctx"] + [f"aot_obj *p{i}" for i in range(len(fn.params))]
                               + ["aot_obj **out"])
            self.prototypes.append(f"static int32_t {cname}({params});")
            self.pending.append(gv)
        return self.global_fn[gv.name]

    def static_object(self, symbol: str, kind: str, init: str, comment: str) -> str:
        self.statics.append((f"&{symbol})", f"/* {comment} */\nstatic aot_obj {symbol} = "
                                                 f"{{0u, (uint8_t){kind}, 0u, {init}}};"))
        return f"(&{symbol})"

    def unit(self) -> str:
        if self.unit_obj is None:
            self.unit_obj = self.static_object(f"{self.name}_unit", "AOT_KIND_TUPLE",
                                               "0u, 0u, 0u, 0u, {NULL}", "the unit value ()")
        return self.unit_obj

    def nullary(self, c: Constructor) -> str:
        if c.name not in self.ctor_obj:
            sym = self.fresh("ctor_" + _c_safe(c.name) + "_")
            self.static_object(sym, "AOT_KIND_ADT", f"{c.tag}u, 0u, 0u, 0u, {{NULL}}", f"{c.name}")
            # used through a volatile pointer: the code reads fields of
            # cells in branches that a tag test makes dead, and a compiler
            # that could see a field-less static object there would warn
            symbol, text = self.statics.pop()
            ref = f"{sym}_ref"
            self.statics.append((ref, f"{text}\nstatic aot_obj *volatile {ref} = &{sym};"))
            self.ctor_obj[c.name] = ref
            self.static_tags[ref] = c.tag
        return self.ctor_obj[c.name]

    def constant(self, node: Constant) -> str:
        t = node.checked_type
        assert isinstance(t, TensorType)
        symbol = self.kernels.constant(t.dtype, np.asarray(node.data))
        if symbol not in self.tensor_obj:
            nbytes = int(np.asarray(node.data).size) * t.dtype.itemsize
            self.tensor_obj[symbol] = self.static_object(
                f"{self.name}_{symbol}_obj", "AOT_KIND_TENSOR",
                f"0u, 0u, 0u, {nbytes}u, {{{self.name}_{symbol}}}", f"constant {t}")
        return self.tensor_obj[symbol]

    def global_closure(self, gv: GlobalVar) -> str:
        if gv.name not in self.global_clo:
            target = self.global_function(gv)
            arity = len(self.mod[gv].params)
            code = self.fresh("gclo_")
            args = ", ".join(["ctx"] + [f"args[{i}]" for i in range(arity)] + ["out"])
            self._code_function(code, [f"(void)self;", *(["(void)args;"] if arity == 0 else []),
                                       f"return {target}({args});"],
                                f"@{gv.name} as a value")
            self.global_clo[gv.name] = self.static_object(
                code + "_obj", "AOT_KIND_CLOSURE", f"0u, 0u, 0u, 0u, {{.code = {code}}}",
                f"closure of @{gv.name}")
        return self.global_clo[gv.name]

    def constructor_closure(self, c: Constructor) -> str:
        if c.name not in self.ctor_clo:
            code = self.fresh("cclo_")
            n = len(c.inputs)
            body = ["aot_obj *o;", "(void)self;",
                    f"o = aot_new_cell(ctx, AOT_KIND_ADT, {c.tag}u, {n}u);",
                    "if (o == NULL) {", "    return AOT_ERR_POOL;", "}"]
            body += [f"o->fields[{i}] = aot_retain(args[{i}]);" for i in range(n)]
            body += ["*out = o;", "return AOT_OK;"]
            self._code_function(code, body, f"constructor {c.name} as a function")
            self.ctor_clo[c.name] = self.static_object(
                code + "_obj", "AOT_KIND_CLOSURE", f"0u, 0u, 0u, 0u, {{.code = {code}}}",
                f"closure of {c.name}")
        return self.ctor_clo[c.name]

    def _code_function(self, code: str, body: Sequence[str], comment: str) -> None:
        sig = (f"static int32_t {code}(aot_ctx *ctx, aot_obj *self, aot_obj *const *args, "
               "aot_obj **out)")
        self.prototypes.append(sig + ";")
        self.functions.append(f"/* {comment} */\n{sig}\n{{\n"
                              + "".join(f"    {line}\n" for line in body) + "}")

    def closure(self, fn: Function, self_var: Var | None) -> _Closure:
        """The code of a function literal (compiled on first sight)."""
        key = id(fn)
        if key not in self.closures:
            captured = tuple(v for v in free_vars(fn) if v is not self_var)
            code = self.fresh("fn_")
            static = None
            if not captured:
                static = self.static_object(code + "_obj", "AOT_KIND_CLOSURE",
                                            f"0u, 0u, 0u, 0u, {{.code = {code}}}",
                                            "closure without captured values")
            info = _Closure(code, captured, static)
            self.closures[key] = info
            sig = (f"static int32_t {code}(aot_ctx *ctx, aot_obj *self, aot_obj *const *args, "
                   "aot_obj **out)")
            self.prototypes.append(sig + ";")
            emitter = _FunctionEmitter(self, fn, self_ref=self_var)
            params = [f"args[{i}]" for i in range(len(fn.params))]
            env = {v: f"self->fields[{i}]" for i, v in enumerate(captured)}
            if self_var is not None:
                env[self_var] = "self"
            self.functions.append(emitter.emit_function(sig, params, env, "fn literal",
                                                        uses_self=True))
        return self.closures[key]

    def lower_globals(self, entry: GlobalVar) -> str:
        main = self.global_function(entry)
        while self.pending:
            gv = self.pending.pop(0)
            fn = self.mod[gv]
            cname = self.global_fn[gv.name]
            params = ", ".join(["aot_ctx *ctx"] + [f"aot_obj *p{i}" for i in range(len(fn.params))]
                               + ["aot_obj **out"])
            emitter = _FunctionEmitter(self, fn, self_ref=gv)
            self.functions.append(emitter.emit_function(
                f"static int32_t {cname}({params})", [f"p{i}" for i in range(len(fn.params))],
                {}, f"@{gv.name}", uses_self=False))
        return main

    def kernel_call(self, em: _FunctionEmitter, call: Call, args: list[str]) -> str:
        group, cname = self.kernels.lower_call(call)
        c_args: list[str] = []
        for a, value in zip(call.args, args):
            for path, leaf in _tensor_paths(a.checked_type):
                expr = value + "".join(f"->fields[{i}]" for i in path)
                c_args.append(f"(const {c_storage_type(leaf.dtype)} *){expr}->u.data")
        assert len(c_args) == len(group.inputs), (len(c_args), len(group.inputs))
        for buf, data in group.constants:
            c_args.append(f"{self.name}_{self.kernels.constant(buf.dtype, data)}")
        outs = [em.new_tensor(t.dtype, t.shape) for t in flatten_type(call.checked_type)]
        scratch = [em.new_tensor(buf.dtype, buf.shape) for buf in group.scratch]
        c_args += [f"({c_storage_type(dtype)} *)aot_tensor_out({tmp})"
                   for tmp, dtype in (*outs, *scratch)]
        outs = [tmp for tmp, _ in outs]
        em.line(f"{cname}({', '.join(c_args)});")
        for tmp, _ in scratch:
            em.line(f"aot_release(ctx, {tmp});")
            em.line(f"{tmp} = NULL;")
        if not isinstance(call.checked_type, TupleType):
            return outs[0]
        leaves = iter(outs)
        return em.build_tuple_tree(call.checked_type, leaves)


def _tensor_paths(t: Type) -> list[tuple[tuple[int, ...], TensorType]]:
    if isinstance(t, TupleType):
        return [((i, *p), leaf) for i, f in enumerate(t.fields) for p, leaf in _tensor_paths(f)]
    assert isinstance(t, TensorType), t
    return [((), t)]


def _c_safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in name)


@dataclass
class _FunctionEmitter:
    """The C body of one function (see the module note)."""

    prog: ProgramLowering
    fn: Function
    self_ref: Expr | None            # GlobalVar or let Var whose tail calls loop
    lines: list[str] = field(default_factory=list)
    depth: int = 1
    temps: list[str] = field(default_factory=list)
    borrowed: list[str] = field(default_factory=list)
    env: dict[Var, str] = field(default_factory=dict)
    params: list[str] = field(default_factory=list)
    loops: bool = False
    #: values computed so far, one dict per nested block (a node shared in
    #: graph form is computed once where it is visible, again elsewhere)
    memo: list[dict[int, str]] = field(default_factory=lambda: [{}])

    def enter_block(self) -> None:
        self.depth += 1
        self.memo.append({})

    def leave_block(self) -> None:
        self.depth -= 1
        self.memo.pop()

    def line(self, text: str) -> None:
        self.lines.append("    " * self.depth + text)

    def temp(self) -> str:
        name = f"t{len(self.temps)}"
        self.temps.append(name)
        return name

    def local(self) -> str:
        name = f"b{len(self.borrowed)}"
        self.borrowed.append(name)
        return name

    def new_tensor(self, dtype, shape) -> tuple[str, object]:
        """A temporary holding a fresh pool tensor (and its dtype)."""
        tmp = self.temp()
        nbytes = math.prod(int(d) for d in shape) * dtype.itemsize
        self.line(f"{tmp} = aot_new_tensor(ctx, {nbytes}u);")
        self.check_alloc(tmp)
        return tmp, dtype

    def new_cell(self, kind: str, tag: int, fields: Sequence[str]) -> str:
        """A temporary holding a fresh cell whose fields retain ``fields``."""
        tmp = self.temp()
        self.line(f"{tmp} = aot_new_cell(ctx, {kind}, {tag}u, {len(fields)}u);")
        self.check_alloc(tmp)
        for i, f in enumerate(fields):
            self.line(f"{tmp}->fields[{i}] = aot_retain({f});")
        return tmp

    def check_alloc(self, tmp: str) -> None:
        self.line(f"if ({tmp} == NULL) {{")
        self.line("    st = AOT_ERR_POOL;")
        self.line("    goto done;")
        self.line("}")

    def check_status(self) -> None:
        self.line("if (st != AOT_OK) {")
        self.line("    goto done;")
        self.line("}")

    # ---------------------------------------------------------- function

    def emit_function(self, signature: str, params: list[str], env: dict[Var, str],
                      comment: str, uses_self: bool) -> str:
        n = len(self.fn.params)
        self.params = [f"a{i}" for i in range(n)]
        self.env = dict(env)
        for v, name in zip(self.fn.params, self.params):
            self.env[v] = name
        self.emit(self.fn.body, RETURN)
        head = [f"/* {comment}: {_signature_text(self.fn)} */", signature, "{",
                "    int32_t st = AOT_OK;"]
        for name, src in zip(self.params, params):
            head.append(f"    aot_obj *{name} = {src};")
        if self.loops:
            head.append("    int owned = 0;  /* the parameters are ours after a tail call */")
        for name in self.temps:
            head.append(f"    aot_obj *{name} = NULL;")
        for name in self.borrowed:
            head.append(f"    aot_obj *{name} = NULL;")
        for name in self.params:
            used = re.compile(rf"\b{name}\b")
            if not any(used.search(line) for line in self.lines):
                head.append(f"    (void){name};  /* unused */")
        if uses_self and not any("self" in line for line in self.lines):
            head.append("    (void)self;")
        if n == 0 and uses_self:
            head.append("    (void)args;")
        head += ["    st = aot_enter(ctx);", "    if (st != AOT_OK) {", "        return st;",
                 "    }"]
        if self.loops:
            head.append("top:")
        release = [f"    aot_release(ctx, {t});" for t in self.temps]
        if self.loops:
            release += ["    if (owned) {"] + [f"        aot_release(ctx, {p});"
                                              for p in self.params] + ["    }"]
        tail = ["done:"] + release + ["    aot_leave(ctx);", "    return st;", "}"]
        out: list[str] = []
        for line in self.lines:
            if line.strip() == _RELEASE_TEMPS:
                indent = line[:len(line) - len(line.lstrip())]
                for t in self.temps:
                    out += [f"{indent}aot_release(ctx, {t});", f"{indent}{t} = NULL;"]
            else:
                out.append(line)
        return "\n".join(head + out + tail)

    # ------------------------------------------------------ expressions

    def assign(self, target: str, value: str) -> None:
        if target == RETURN:
            self.line(f"*out = aot_retain({value});")
            self.line("goto done;")
        else:
            self.line(f"{target} = aot_retain({value});")

    def emit(self, e: Expr, target: str) -> None:
        """Compute ``e`` into ``target`` (RETURN: the function's result)."""
        while isinstance(e, Let):
            value = e.value
            if isinstance(value, Function) and not _is_primitive(value):
                self.env[e.var] = self.make_closure(value, e.var)
            else:
                self.env[e.var] = self.value(value)
            e = e.body
        if isinstance(e, If):
            cond = self.value(e.cond)
            self.line(f"if (aot_truth({cond})) {{")
            self.enter_block()
            self.emit(e.true_branch, target)
            self.leave_block()
            self.line("} else {")
            self.enter_block()
            self.emit(e.false_branch, target)
            self.leave_block()
            self.line("}")
            return
        if isinstance(e, Match):
            self.match(e, target)
            return
        if target == RETURN and self.is_self_call(e):
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
            self.line(f"{tmp} = aot_retain({a});")
            nxt.append(tmp)
        self.loops = True
        self.line(_RELEASE_TEMPS)   # the iteration's temporaries (known at the end)
        self.line("if (owned) {")
        for p in self.params:
            self.line(f"    aot_release(ctx, {p});")
        self.line("}")
        for p, tmp in zip(self.params, nxt):
            self.line(f"{p} = {tmp};")
        self.line("owned = 1;")
        self.line("goto top;")

    def match(self, e: Match, target: str) -> None:
        scrut = self.value(e.data)
        tree = compile_match(e.clauses, self._constructors_of)
        tag = self.prog.static_tags.get(scrut)
        while tag is not None and isinstance(tree, Switch) and tree.path == ():
            tree = dict(tree.cases).get(tag, tree.default)
        self._tree(tree, scrut, e, target)

    def _constructors_of(self, c: Constructor) -> Sequence[Constructor]:
        return self.prog.mod.lookup_type(c.belong_to).constructors

    def _tree(self, tree: object, scrut: str, e: Match, target: str) -> None:
        if isinstance(tree, Fail):
            self.line("st = AOT_ERR_MATCH;")
            self.line("goto done;")
            return
        if isinstance(tree, Leaf):
            for var, path in tree.bindings:
                self.env[var] = scrut + "".join(f"->fields[{i}]" for i in path)
            self.emit(e.clauses[tree.clause].rhs, target)
            return
        assert isinstance(tree, Switch), tree
        obj = scrut + "".join(f"->fields[{i}]" for i in tree.path)
        self.line(f"switch ({obj}->tag) {{")
        for tag, sub in tree.cases:
            self.line(f"case {tag}: {{")
            self.enter_block()
            self._tree(sub, scrut, e, target)
            self.leave_block()
            self.line("    break;")
            self.line("}")
        self.line("default: {")
        self.enter_block()
        if tree.default is None:
            self.line("st = AOT_ERR_VALUE;  /* a tag the type does not have */")
            self.line("goto done;")
        else:
            self._tree(tree.default, scrut, e, target)
        self.leave_block()
        self.line("    break;")
        self.line("}")
        self.line("}")

    def make_closure(self, fn: Function, self_var: Var | None) -> str:
        info = self.prog.closure(fn, self_var)
        if info.static_obj is not None:
            return info.static_obj
        tmp = self.new_cell("AOT_KIND_CLOSURE", 0, [self.lookup(v) for v in info.captured])
        self.line(f"{tmp}->u.code = {info.code};")
        return tmp

    def lookup(self, v: Var) -> str:
        if v not in self.env:
            raise _error(v, f"free variable %{v.name_hint}")
        return self.env[v]

    def build_tuple_tree(self, t: TupleType, leaves) -> str:
        fields = [self.build_tuple_tree(f, leaves) if isinstance(f, TupleType) else next(leaves)
                  for f in t.fields]
        return self.tuple_of(fields)

    def tuple_of(self, fields: list[str]) -> str:
        if not fields:
            return self.prog.unit()
        return self.new_cell("AOT_KIND_TUPLE", 0, fields)

    def value(self, e: Expr) -> str:
        """A C expression holding ``e``'s value, valid until the function
        (or the loop iteration) ends."""
        if isinstance(e, Var):
            return self.lookup(e)
        key = id(e)
        for scope in reversed(self.memo):
            if key in scope:
                return scope[key]
        result = self._value(e)
        self.memo[-1][key] = result
        return result

    def _value(self, e: Expr) -> str:
        if isinstance(e, Var):
            return self.lookup(e)
        if isinstance(e, GlobalVar):
            return self.prog.global_closure(e)
        if isinstance(e, Constant):
            return self.prog.constant(e)
        if isinstance(e, Constructor):
            if not e.inputs:
                return self.prog.nullary(e)
            return self.prog.constructor_closure(e)
        if isinstance(e, Tuple):
            return self.tuple_of([self.value(f) for f in e.fields])
        if isinstance(e, TupleGetItem):
            return f"{self.value(e.tuple_value)}->fields[{e.index}]"
        if isinstance(e, Function):
            if _is_primitive(e):
                raise _error(e, "a primitive function used as a value")
            return self.make_closure(e, None)
        if isinstance(e, RefCreate):
            return self.new_cell("AOT_KIND_REF", 0, [self.value(e.value)])
        if isinstance(e, RefRead):
            r = self.value(e.ref)
            tmp = self.temp()
            self.line(f"{tmp} = aot_retain({r}->fields[0]);")
            return tmp
        if isinstance(e, RefWrite):
            self.prog.writes_refs = True
            r = self.value(e.ref)
            v = self.value(e.value)
            old = self.local()
            self.line(f"{old} = {r}->fields[0];")
            self.line(f"{r}->fields[0] = aot_retain({v});")
            self.line(f"aot_release(ctx, {old});")
            return self.prog.unit()
        if isinstance(e, (Let, If, Match)):
            tmp = self.temp()
            self.emit(e, tmp)
            return tmp
        if isinstance(e, Call):
            return self.call(e)
        if isinstance(e, Op):
            raise _error(e, f"operator {e.name} used as a value (eta-expand it first)")
        raise _error(e, f"{type(e).__name__} cannot be compiled to C")

    def call(self, e: Call) -> str:
        op = e.op
        if _is_primitive(op):
            args = [self.value(a) for a in e.args]
            return self.prog.kernel_call(self, e, args)
        if isinstance(op, Constructor):
            args = [self.value(a) for a in e.args]
            if not args:
                return self.prog.nullary(op)
            return self.new_cell("AOT_KIND_ADT", op.tag, args)
        if isinstance(op, Op):
            raise _error(e, f"operator {op.name} outside a fused group")
        if isinstance(op, GlobalVar):
            target = self.prog.global_function(op)
            args = [self.value(a) for a in e.args]
            tmp = self.temp()
            self.line(f"st = {target}({', '.join(['ctx', *args, '&' + tmp])});")
            self.check_status()
            return tmp
        f = self.value(op)
        args = [self.value(a) for a in e.args]
        tmp = self.temp()
        if args:
            self.line("{")
            self.line(f"    aot_obj *argv[{len(args)}];")
            for i, a in enumerate(args):
                self.line(f"    argv[{i}] = {a};")
            self.line(f"    st = {f}->u.code(ctx, {f}, argv, &{tmp});")
            self.line("}")
        else:
            self.line(f"st = {f}->u.code(ctx, {f}, NULL, &{tmp});")
        self.check_status()
        return tmp


def _signature_text(fn: Function) -> str:
    params = ", ".join(f"%{p.name_hint}: {p.checked_type}" for p in fn.params)
    ret = fn.body.checked_type
    return f"fn ({params}) -> {ret}".replace("*/", "* /")
