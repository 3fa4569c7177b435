"""Lower a whole-language program (closures, ADTs, match, recursion,
references, control flow) to the object IR (:mod:`aot.emit.objects`):
functions over the object runtime.

Design note
-----------
The input is a typed, monomorphic (:mod:`aot.passes.specialize`), fused
(:mod:`aot.passes.fuse_ops`) module.  The output is data: one
:class:`~aot.emit.objects.ir.Function` per global function and per
function literal (the entry's is built by :mod:`.program_entry`), the
static objects they use and the kernels they call; :mod:`.program_function`
lowers one function body, :mod:`aot.emit.objects.verify` checks the
result and :mod:`aot.emit.c.objects` prints it as C over
``runtime_c/aot_runtime.h``.

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

from dataclasses import dataclass

import numpy as np

from ...ir.adt import Constructor
from ...ir.analysis import free_vars
from ...ir.expr import Call, Constant, Function, GlobalVar, Var
from ...ir.module import IRModule
from ...ir.types import TensorType, TupleType, Type
from ..objects import ir as O
from .dataflow import KernelTable
from .group import flatten_type
from .program_function import FunctionLowering, error, field_path

__all__ = ["ProgramLowering"]


@dataclass
class _Closure:
    """A function literal's code: name, captured variables, static object
    (when nothing is captured)."""
    code: str
    captured: tuple[Var, ...]
    static_obj: O.StaticRef | None


class ProgramLowering:
    """Module-wide state: kernels, constants, static objects, the functions
    made so far."""

    def __init__(self, mod: IRModule, name: str) -> None:
        self.mod = mod
        self.name = name
        self.kernels = KernelTable(name)
        self.statics: list[O.StaticObject] = []
        self.declared: list[str] = []              # functions in prototype order
        self.functions: list[O.Code] = []          # ... in definition order
        self.global_fn: dict[str, str] = {}        # global name -> function
        self.global_clo: dict[str, O.StaticRef] = {}   # global name -> static closure
        self.ctor_obj: dict[str, O.StaticRef] = {}     # nullary constructor -> static object
        self.ctor_clo: dict[str, O.StaticRef] = {}     # constructor used as a function
        self.tensor_obj: dict[str, O.StaticRef] = {}   # constant symbol -> static object
        self.closures: dict[int, _Closure] = {}
        self.unit_obj: O.StaticRef | None = None
        self.writes_refs = False     # a RefWrite was lowered: collect cycles
        #: static ADT objects (value -> tag): a match on one is decided at
        #: compile time (C compilers warn about the field reads of the dead
        #: branches otherwise)
        self.static_tags: dict[O.Value, int] = {}
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
                raise error(gv, f"unknown global function @{gv.name}")
            cname = self.fresh("f_" + _c_safe(gv.name) + "_")
            self.global_fn[gv.name] = cname
            self.declared.append(cname)
            self.pending.append(gv)
        return self.global_fn[gv.name]

    def static_object(self, obj: O.StaticObject) -> O.StaticRef:
        self.statics.append(obj)
        return O.StaticRef(obj.symbol, obj.indirect)

    def unit(self) -> O.StaticRef:
        if self.unit_obj is None:
            self.unit_obj = self.static_object(O.StaticObject(
                f"{self.name}_unit", O.CellKind.TUPLE, "the unit value ()"))
        return self.unit_obj

    def nullary(self, c: Constructor) -> O.StaticRef:
        if c.name not in self.ctor_obj:
            # used through a volatile pointer: the code reads fields of
            # cells in branches that a tag test makes dead, and a compiler
            # that could see a field-less static object there would warn
            ref = self.static_object(O.StaticObject(
                self.fresh("ctor_" + _c_safe(c.name) + "_"), O.CellKind.ADT, c.name, tag=c.tag,
                indirect=True))
            self.ctor_obj[c.name] = ref
            self.static_tags[ref] = c.tag
        return self.ctor_obj[c.name]

    def constant(self, node: Constant) -> O.StaticRef:
        t = node.checked_type
        assert isinstance(t, TensorType)
        symbol = self.kernels.constant(t.dtype, np.asarray(node.data))
        if symbol not in self.tensor_obj:
            nbytes = t.dtype.nbytes(int(np.asarray(node.data).size))
            self.tensor_obj[symbol] = self.static_object(O.StaticObject(
                f"{self.name}_{symbol}_obj", O.CellKind.TENSOR, f"constant {t}",
                nbytes=nbytes, data=symbol))
        return self.tensor_obj[symbol]

    def _closure_object(self, code: str, comment: str) -> O.StaticRef:
        return self.static_object(O.StaticObject(code + "_obj", O.CellKind.CLOSURE, comment,
                                                 code=code))

    def global_closure(self, gv: GlobalVar) -> O.StaticRef:
        if gv.name not in self.global_clo:
            target = self.global_function(gv)
            code = self.fresh("gclo_")
            self._define(O.ForwardCode(code, target, len(self.mod[gv].params),
                                       f"@{gv.name} as a value"))
            self.global_clo[gv.name] = self._closure_object(code, f"closure of @{gv.name}")
        return self.global_clo[gv.name]

    def constructor_closure(self, c: Constructor) -> O.StaticRef:
        if c.name not in self.ctor_clo:
            code = self.fresh("cclo_")
            self._define(O.ConstructorCode(code, c.tag, len(c.inputs),
                                           f"constructor {c.name} as a function"))
            self.ctor_clo[c.name] = self._closure_object(code, f"closure of {c.name}")
        return self.ctor_clo[c.name]

    def _define(self, code: O.ForwardCode | O.ConstructorCode) -> None:
        self.declared.append(code.name)
        self.functions.append(code)

    def closure(self, fn: Function, self_var: Var | None) -> _Closure:
        """The code of a function literal (lowered on first sight)."""
        key = id(fn)
        if key not in self.closures:
            captured = tuple(v for v in free_vars(fn) if v is not self_var)
            code = self.fresh("fn_")
            static = None
            if not captured:
                static = self._closure_object(code, "closure without captured values")
            info = _Closure(code, captured, static)
            self.closures[key] = info
            self.declared.append(code)
            env: dict[Var, O.Value] = {v: O.Field(O.Var("self"), i)
                                       for i, v in enumerate(captured)}
            if self_var is not None:
                env[self_var] = O.Var("self")
            lowering = FunctionLowering(self, fn, self_ref=self_var)
            self.functions.append(lowering.lower(code, O.FunctionKind.CLOSURE, env,
                                                 "fn literal"))
        return self.closures[key]

    def lower_globals(self, entry: GlobalVar) -> str:
        main = self.global_function(entry)
        while self.pending:
            gv = self.pending.pop(0)
            lowering = FunctionLowering(self, self.mod[gv], self_ref=gv)
            self.functions.append(lowering.lower(self.global_fn[gv.name],
                                                 O.FunctionKind.GLOBAL, {}, f"@{gv.name}"))
        return main

    def kernel_call(self, fl: FunctionLowering, call: Call, args: list[O.Value]) -> O.Value:
        group, cname = self.kernels.lower_call(call)
        inputs = tuple(O.TensorArg(field_path(value, path), leaf.dtype)
                       for a, value in zip(call.args, args)
                       for path, leaf in _tensor_paths(a.type))
        assert len(inputs) == len(group.inputs), (len(inputs), len(group.inputs))
        constants = tuple(self.kernels.constant(buf.dtype, data) for buf, data in group.constants)
        outs = [fl.new_tensor(t.dtype, t.shape) for t in flatten_type(call.type)]
        scratch = [fl.new_tensor(buf.dtype, buf.shape) for buf in group.scratch]
        fl.put(O.CallKernel(cname, inputs, constants, (*outs, *scratch)))
        for s in scratch:
            fl.put(O.Release(s.temp))
            fl.put(O.Clear(s.temp))
        if not isinstance(call.checked_type, TupleType):
            return O.Var(outs[0].temp)
        return fl.build_tuple_tree(call.checked_type, iter(O.Var(o.temp) for o in outs))


def _tensor_paths(t: Type) -> list[tuple[tuple[int, ...], TensorType]]:
    if isinstance(t, TupleType):
        return [((i, *p), leaf) for i, f in enumerate(t.fields) for p, leaf in _tensor_paths(f)]
    assert isinstance(t, TensorType), t
    return [((), t)]


def _c_safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in name)
