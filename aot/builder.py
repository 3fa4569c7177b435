"""A small Python API to build IR without writing text.

::

    from aot import builder as B

    x = B.var("x", B.tensor((2, 3), "float32"))
    f = B.function([x], B.add(x, 1.0))          # 1.0 becomes a float32 constant
    mod = B.module(main=f)                        # an IRModule with @main

    List = B.adt("List", ["A"], lambda L, A: [("Cons", [A, L[A]]), ("Nil", [])])
    xs = B.var("xs", List["int32"])
    length = B.function([xs], B.match(xs, [
        (B.pcons(List.Cons, "_", "t"), lambda t: B.add(1, B.call(B.gvar("length"), t))),
        (B.pcons(List.Nil), 0),
    ]))
    mod = B.module(types=[List], length=length)

Conventions:

* Wherever an expression is expected, Python numbers become constants
  (``int`` -> int32, ``float`` -> float32, ``bool`` -> bool, unless the
  other operand of an elementwise operator has a known dtype, which is
  then used), NumPy arrays become constants and Python tuples become
  tuple expressions.
* Wherever a type is expected, a dtype name (``"int32"``) means the
  scalar tensor type of that dtype and an ADT without type parameters
  means its type.
* Each node gets a span naming the Python line that built it, so type
  errors point at the builder call.
* Every operator of the registry (:mod:`aot.ir.registry`) has a wrapper,
  generated from its record: the arguments positionally, the attributes
  as keywords (the fields of its attrs class), the same as
  ``call(name, ...)``.  A plain name is a function of this module
  (``B.add(x, 1)``, ``B.sum(x, axis=1)``, ``B.max``, ``B.round``); a dotted
  name goes through its namespace (``nn.conv2d`` is
  ``B.nn.conv2d(x, w, channels=4, kernel_size=(3, 3))``, ``qnn.dense`` is
  ``B.qnn.dense``, ``image.resize2d`` is ``B.image.resize2d``).  ``B.sub``,
  ``B.mul`` and ``B.neg`` are short for ``subtract``, ``multiply`` and
  ``negative``.
* The builder only builds nodes: it does not type-check.  Reusing a
  Python node object twice *shares* it (a graph binding, evaluated once);
  build it twice to evaluate it twice.
"""

from __future__ import annotations

import builtins
import dataclasses
import inspect
import os
import sys
from types import FrameType
from typing import Any, Callable, Iterable, Sequence, Union

import numpy as np

from .diagnostics import Span
from .ir.adt import (Clause, Constructor, Pattern, PatternConstructor, PatternTuple, PatternVar,
                     PatternWildcard, TypeData, pattern_vars)
from .ir.attrs import AttrError, Attrs, FuncAttrs
from .ir.dtype import DType
from .ir.expr import (Call, Constant, Expr, Function, GlobalVar, If, Let, Match, RefCreate,
                      RefRead, RefWrite, Tuple, TupleGetItem, Var)
from .ir.expr import const as _ir_const
from .ir.expr import op as _ir_op
from .ir.module import IRModule
from .ir.registry import OpDef, all_ops, lookup
from .ir.types import (ANY, UNIT, AnyDim, FuncType, GlobalTypeVar, RefType, TensorType,
                       TupleType, Type, TypeCall, TypeVar)
from .ir.visitor import ExprMutator

ExprLike = Any   # Expr | bool | int | float | np.ndarray | tuple of ExprLike
TypeLike = Any   # Type | str (a dtype name) | ADT | DType

_HERE = os.path.normcase(os.path.abspath(__file__))


def _span() -> Span | None:
    """The span of the first caller outside this file."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and os.path.normcase(os.path.abspath(
            frame.f_code.co_filename)) == _HERE:
        frame = frame.f_back
    if frame is None:
        return None
    line = frame.f_lineno
    return Span(frame.f_code.co_filename, line, 1, line, 1)


# ====================================================================== types

def dtype(d: DType | str | np.dtype | type) -> DType:
    """A DType from a name (``"float32"``, ``"int"``), a NumPy dtype or a
    DType."""
    if isinstance(d, DType):
        return d
    if isinstance(d, str):
        parsed = DType.parse(d)
        if parsed is None:
            raise ValueError(f"unknown dtype {d!r}")
        return parsed
    return DType.from_numpy(d)


def tensor(shape: Sequence[int | None | str | AnyDim] | int, dtype_: DType | str = "float32"
           ) -> TensorType:
    """``Tensor[shape, dtype]``; a dimension of ``None``, ``"?"`` or
    ``ANY`` is unknown until run time."""
    if isinstance(shape, int):
        shape = (shape,)
    dims: list[int | AnyDim] = []
    for d in shape:
        if d is None or d == "?" or d is ANY:
            dims.append(ANY)
        elif isinstance(d, (int, np.integer)) and not isinstance(d, bool) and d >= 0:
            dims.append(int(d))
        else:
            raise ValueError(f"bad dimension {d!r} in shape {shape!r}")
    return TensorType(builtins.tuple(dims), dtype(dtype_))


def scalar(dtype_: DType | str | np.dtype = "float32") -> TensorType:
    """The 0-d tensor type of ``dtype_``."""
    return TensorType((), dtype(dtype_))


def tuple_type(*fields: TypeLike) -> TupleType:
    """``(t1, t2, ...)``; ``tuple_type()`` is the unit type."""
    if len(fields) == 1 and isinstance(fields[0], (list, builtins.tuple)):
        fields = builtins.tuple(fields[0])
    return TupleType(builtins.tuple(as_type(f) for f in fields))


def func_type(args: Sequence[TypeLike], ret: TypeLike,
              type_params: Sequence[TypeVar] = ()) -> FuncType:
    """``fn [type_params] (args) -> ret``."""
    return FuncType(builtins.tuple(as_type(a) for a in args), as_type(ret),
                    builtins.tuple(_type_params(type_params)))


def ref_type(t: TypeLike) -> RefType:
    return RefType(as_type(t))


def type_var(name: str) -> TypeVar:
    """A new type variable (each call makes a distinct one)."""
    return TypeVar(name)


def as_type(t: TypeLike) -> Type:
    """Coerce a type-like value: a Type, a dtype name/DType (scalar), or an
    ADT without parameters."""
    if isinstance(t, Type):
        return t
    if isinstance(t, (str, DType, np.dtype)):
        return scalar(t)
    if isinstance(t, ADT):
        return t.type()
    if isinstance(t, _SelfType):
        return t.type()
    raise TypeError(f"expected a type, got {t!r}")


def _type_params(tps: Sequence[TypeVar]) -> list[TypeVar]:
    for tp in tps:
        if not isinstance(tp, TypeVar):
            raise TypeError(f"type parameters must be TypeVars (B.type_var), got {tp!r}")
    return list(tps)


# ================================================================ expressions

def var(name: str, type_: TypeLike | None = None) -> Var:
    """A new local variable (optionally annotated)."""
    return Var(name, as_type(type_) if type_ is not None else None, span=_span())


def const(value: Any, dtype_: DType | str | None = None) -> Constant:
    """A constant tensor: Python ints are int32, floats float32, bools bool,
    NumPy values keep their dtype (unless ``dtype_`` says otherwise)."""
    return _ir_const(value, dtype_, span=_span())


def expr(x: ExprLike, like: Expr | None = None) -> Expr:
    """Coerce an expression-like value (see the module docstring).  With
    ``like``, a Python number takes ``like``'s dtype when that is known."""
    if isinstance(x, Expr):
        return x
    if isinstance(x, builtins.tuple):
        return Tuple(builtins.tuple(expr(f) for f in x), span=_span())
    if isinstance(x, (bool, int, float)) and like is not None:
        known = _known_dtype(like)
        if known is not None and _python_fits(x, known):
            return _ir_const(x, known, span=_span())
    if isinstance(x, (bool, int, float, np.ndarray, np.generic, list)):
        return _ir_const(x, span=_span())
    if isinstance(x, (ADT, str)):
        raise TypeError(f"expected an expression, got {x!r} (a constructor is ADT.<Name>)")
    raise TypeError(f"expected an expression, got {x!r}")


def _known_dtype(e: Expr) -> DType | None:
    t: Type | None = e.checked_type
    if t is None and isinstance(e, Var):
        t = e.type_annotation
    if t is None and isinstance(e, Constant):
        return e.dtype
    return t.dtype if isinstance(t, TensorType) else None


def _python_fits(x: bool | int | float, d: DType) -> bool:
    if isinstance(x, bool):
        return d is DType.BOOL
    if isinstance(x, int):
        return d.is_float or (d.is_int and int(d.min) <= x <= int(d.max))
    return d.is_float


def tuple_(*fields: ExprLike) -> Tuple:
    """A tuple expression ``(a, b, ...)``; ``tuple_()`` is unit."""
    return Tuple(builtins.tuple(expr(f) for f in fields), span=_span())


tup = tuple_


def proj(t: ExprLike, index: int) -> TupleGetItem:
    """``t.index``."""
    return TupleGetItem(expr(t), index, span=_span())


def gvar(name: str) -> GlobalVar:
    """A reference to global ``@name``.  :func:`module` replaces it by the
    module's own GlobalVar of that name, so functions can refer to each
    other (and to themselves) before the module exists."""
    return GlobalVar(name, span=_span())


# ---------------------------------------------------------------- calls

def call(callee: str | ExprLike, *args: ExprLike, **attrs: Any) -> Call:
    """A call.  ``callee`` is an operator name (``"nn.conv2d"``; keyword
    arguments are its attributes, converted and checked by the operator's
    attrs class; an omitted one takes the default of Relay's Python API,
    the record's :meth:`~aot.ir.registry.OpDef.builder_defaults`), a
    global, a constructor or any function-valued expression."""
    span = _span()
    if isinstance(callee, str):
        op_def = lookup(callee)
        if op_def is None:
            raise ValueError(f"unknown operator {callee!r}")
        try:
            typed_attrs = _op_attrs(op_def, attrs)
        except AttrError as exc:
            raise ValueError(f"{callee}: {exc}") from None
        if op_def.arity >= 0 and len(args) != op_def.arity:
            raise ValueError(f"{callee} takes {op_def.arity} argument"
                             f"{'s' if op_def.arity != 1 else ''}, got {len(args)}")
        return Call(_ir_op(callee), _coerce_args(args), typed_attrs, span=span)
    if attrs:
        raise ValueError("keyword attributes are only for operator calls")
    return Call(expr(callee), builtins.tuple(expr(a) for a in args), span=span)


def _op_attrs(op_def: OpDef, raw: dict[str, Any]) -> Attrs:
    """``raw`` converted by the operator's attrs class, over the operator's
    builder defaults (the Python API's, where they differ from the text
    format's)."""
    given = op_def.attrs_type.from_raw(raw)
    if op_def.api_defaults is None:
        return given
    try:
        return dataclasses.replace(op_def.api_defaults,
                                   **{k: getattr(given, k) for k in raw})
    except (TypeError, ValueError) as exc:
        raise AttrError(str(exc)) from None


def _coerce_args(args: Sequence[ExprLike]) -> builtins.tuple[Expr, ...]:
    """Coerce operator arguments; Python numbers borrow the dtype of a
    sibling argument whose dtype is known."""
    like = next((a for a in args if isinstance(a, Expr) and _known_dtype(a) is not None), None)
    return builtins.tuple(expr(a, like) for a in args)


# ---------------------------------------------------------------- functions

def function(params: Sequence[Var], body: ExprLike, ret_type: TypeLike | None = None,
             type_params: Sequence[TypeVar] = (), attrs: dict[str, Any] | None = None
             ) -> Function:
    """``fn [type_params] (params) -> ret_type { body }``."""
    for p in params:
        if not isinstance(p, Var):
            raise TypeError(f"function parameters must be Vars (B.var), got {p!r}")
    return Function(builtins.tuple(params), expr(body),
                    as_type(ret_type) if ret_type is not None else None,
                    builtins.tuple(_type_params(type_params)), FuncAttrs.of(attrs),
                    span=_span())


def lam(body: Callable[..., ExprLike], *param_types: TypeLike | None,
        ret_type: TypeLike | None = None, type_params: Sequence[TypeVar] = ()) -> Function:
    """A function from a Python callable: its parameters become Vars named
    after the callable's parameters, typed by ``param_types`` (``None``
    leaves one unannotated; fewer types than parameters leaves the rest
    unannotated)::

        B.lam(lambda x, y: B.add(x, y), "int32", "int32")
    """
    names = list(inspect.signature(body).parameters)
    if len(param_types) > len(names):
        raise ValueError(f"{len(param_types)} types for {len(names)} parameters")
    types = list(param_types) + [None] * (len(names) - len(param_types))
    span = _span()
    params = [Var(n, as_type(t) if t is not None else None, span=span)
              for n, t in zip(names, types)]
    return Function(builtins.tuple(params), expr(body(*params)),
                    as_type(ret_type) if ret_type is not None else None,
                    builtins.tuple(_type_params(type_params)), span=span)


# ---------------------------------------------------------------- let

def let(binder: Var | str, value: ExprLike, body: ExprLike | Callable[[Var], ExprLike]) -> Let:
    """``let %binder = value; body``.  ``binder`` may be a name (a new
    Var); ``body`` may be a callable given the Var.  When ``value`` is a
    function it may refer to ``binder`` (recursion): build the Var first."""
    v = binder if isinstance(binder, Var) else Var(binder, span=_span())
    b = body(v) if callable(body) and not isinstance(body, Expr) else body
    return Let(v, expr(value), expr(b), span=_span())


def let_chain(bindings: Iterable[builtins.tuple[Var, ExprLike]], body: ExprLike) -> Expr:
    """``let %v1 = e1; let %v2 = e2; ...; body``, built without recursion
    (any length)."""
    result = expr(body)
    span = _span()
    for v, value in reversed(list(bindings)):
        if not isinstance(v, Var):
            raise TypeError(f"let_chain binds Vars, got {v!r}")
        result = Let(v, expr(value), result, span=span)
    return result


class Scope:
    """Builds a sequence of lets imperatively::

        s = B.Scope()
        x = s.let("x", B.add(a, b))
        s.do(B.ref_write(r, x))            # evaluated for its effect
        body = s.ret(B.multiply(x, x))     # the whole let chain
    """

    def __init__(self) -> None:
        self._bindings: list[builtins.tuple[Var, Expr]] = []
        self._done = False

    def let(self, name: str | Var, value: ExprLike, type_: TypeLike | None = None) -> Var:
        """Bind ``value`` to a new Var (returned)."""
        assert not self._done, "Scope already closed by ret()"
        if isinstance(name, Var):
            v = name
        else:
            v = Var(name, as_type(type_) if type_ is not None else None, span=_span())
        self._bindings.append((v, expr(value)))
        return v

    def do(self, value: ExprLike) -> Var:
        """Evaluate ``value`` for its effect (bound to ``%_``)."""
        return self.let("_", value)

    def ret(self, body: ExprLike) -> Expr:
        """The let chain ending in ``body``."""
        self._done = True
        return let_chain(self._bindings, body)

    def __len__(self) -> int:
        return len(self._bindings)


# ---------------------------------------------------------------- control

def if_(cond: ExprLike, then: ExprLike, else_: ExprLike) -> If:
    """``if (cond) { then } else { else_ }`` (cond is a 0-d bool)."""
    return If(expr(cond), expr(then), expr(else_), span=_span())


ClauseLike = Union[Clause, builtins.tuple[Any, Any]]


def match(data: ExprLike, clauses: Sequence[ClauseLike], complete: bool = True) -> Match:
    """``match (data) { pattern => rhs, ... }`` (``match?`` when
    ``complete=False``).  Each clause is a :class:`Clause` or a pair
    ``(pattern, rhs)``; ``rhs`` may be a callable taking the pattern's
    variables left to right::

        B.match(xs, [(B.pcons(List.Cons, "h", "_"), lambda h: h),
                     (B.pcons(List.Nil), 0)])
    """
    built = []
    for c in clauses:
        if isinstance(c, Clause):
            built.append(c)
            continue
        pattern, rhs = c
        built.append(clause(pattern, rhs))
    return Match(expr(data), builtins.tuple(built), complete, span=_span())


def clause(pattern: Pattern | Var | str, rhs: ExprLike | Callable[..., ExprLike]) -> Clause:
    p = _pattern(pattern)
    if callable(rhs) and not isinstance(rhs, Expr):
        rhs = rhs(*pattern_vars(p))
    return Clause(p, expr(rhs), span=_span())


def pcons(ctor: Constructor, *patterns: Pattern | Var | str) -> PatternConstructor:
    """``Ctor(p1, p2, ...)``; a sub-pattern may be a Var, a name (a new
    variable) or ``"_"`` (wildcard)."""
    if not isinstance(ctor, Constructor):
        raise TypeError(f"pcons expects a Constructor (e.g. List.Cons), got {ctor!r}")
    return PatternConstructor(ctor, builtins.tuple(_pattern(p) for p in patterns),
                              span=_span())


def ptuple(*patterns: Pattern | Var | str) -> PatternTuple:
    """``(p1, p2, ...)``."""
    return PatternTuple(builtins.tuple(_pattern(p) for p in patterns), span=_span())


def pvar(v: Var | str, type_: TypeLike | None = None) -> PatternVar:
    """A variable pattern; a name makes a new Var (``.var`` gives it)."""
    if isinstance(v, str):
        v = Var(v, as_type(type_) if type_ is not None else None, span=_span())
    return PatternVar(v, span=_span())


def pwild() -> PatternWildcard:
    """``_``."""
    return PatternWildcard(span=_span())


def _pattern(p: Pattern | Var | str) -> Pattern:
    if isinstance(p, Pattern):
        return p
    if isinstance(p, Var):
        return PatternVar(p, span=_span())
    if p == "_":
        return PatternWildcard(span=_span())
    if isinstance(p, str):
        return PatternVar(Var(p, span=_span()), span=_span())
    if isinstance(p, Constructor):
        return PatternConstructor(p, (), span=_span())
    raise TypeError(f"expected a pattern, got {p!r}")


# ---------------------------------------------------------------- refs

def ref(value: ExprLike) -> RefCreate:
    """``ref(value)``: a new mutable cell."""
    return RefCreate(expr(value), span=_span())


def ref_read(r: ExprLike) -> RefRead:
    return RefRead(expr(r), span=_span())


def ref_write(r: ExprLike, value: ExprLike) -> RefWrite:
    """``ref_write(r, value)``, which evaluates to ``()``."""
    return RefWrite(expr(r), expr(value), span=_span())


# ====================================================================== ADTs

class _SelfType:
    """The ADT being defined, inside :func:`adt`'s body: ``L[A]`` is
    ``List[A]``."""

    def __init__(self, header: GlobalTypeVar, arity: int) -> None:
        self.header = header
        self.arity = arity

    def __getitem__(self, args: Any) -> TypeCall:
        if not isinstance(args, builtins.tuple):
            args = (args,)
        if len(args) != self.arity:
            raise ValueError(f"{self.header.name} takes {self.arity} type argument"
                             f"{'s' if self.arity != 1 else ''}, got {len(args)}")
        return TypeCall(self.header, builtins.tuple(as_type(a) for a in args))

    def type(self) -> TypeCall:
        if self.arity:
            raise ValueError(f"{self.header.name} needs {self.arity} type argument(s)")
        return TypeCall(self.header, ())


class ADT(_SelfType):
    """An algebraic data type: the :class:`TypeData` (``.data``) with its
    constructors as attributes (``List.Cons``) and type application by
    indexing (``List["int32"]``, ``List[A]``)."""

    def __init__(self, data: TypeData) -> None:
        super().__init__(data.header, len(data.type_vars))
        self.data = data
        self.constructors = {c.name: c for c in data.constructors}

    @property
    def name(self) -> str:
        return self.header.name

    def ctor(self, name: str) -> Constructor:
        try:
            return self.constructors[name]
        except KeyError:
            known = ", ".join(self.constructors) or "none"
            raise AttributeError(f"{self.name} has no constructor {name} "
                                 f"(constructors: {known})") from None

    def __getattr__(self, name: str) -> Constructor:
        if name.startswith("__") or name in ("data", "constructors", "header", "arity"):
            raise AttributeError(name)
        return self.ctor(name)

    def __repr__(self) -> str:
        return f"ADT({self.name})"

    @staticmethod
    def of(mod: IRModule, name: str) -> ADT:
        """The ADT ``name`` of an existing module (``ADT.of(prelude, "List")``)."""
        if not mod.has_type(name):
            raise KeyError(f"the module has no type {name}")
        return ADT(mod.lookup_type(name))


def adt(name: str, type_params: Sequence[str | TypeVar],
        body: Callable[..., Sequence[builtins.tuple[str, Sequence[TypeLike]]]]
        | Sequence[builtins.tuple[str, Sequence[TypeLike]]]) -> ADT:
    """Define an ADT.  ``body`` lists ``(constructor name, field types)``;
    it may be a callable taking the type being defined and the type
    variables, so fields can mention them::

        List = B.adt("List", ["A"], lambda L, A: [("Cons", [A, L[A]]), ("Nil", [])])
        Color = B.adt("Color", [], [("Red", []), ("Green", [])])
    """
    header = GlobalTypeVar(name)
    tvs = [tp if isinstance(tp, TypeVar) else TypeVar(tp) for tp in type_params]
    self_type = _SelfType(header, len(tvs))
    ctor_specs = body(self_type, *tvs) if callable(body) else body
    ctors = []
    for tag, (cname, fields) in enumerate(ctor_specs):
        ctors.append(Constructor(cname, builtins.tuple(as_type(f) for f in fields), header,
                                 tag, span=_span()))
    names = [c.name for c in ctors]
    if len(set(names)) != len(names):
        raise ValueError(f"duplicate constructor names in {name}: {names}")
    return ADT(TypeData(header, builtins.tuple(tvs), builtins.tuple(ctors), span=_span()))


# =================================================================== modules

def module(functions: dict[str, Function] | None = None, *,
           types: Iterable[ADT | TypeData] = (), base: IRModule | None = None,
           **more: Function) -> IRModule:
    """An IRModule with the given global functions (by name) and ADTs, on
    top of a copy of ``base`` (e.g. ``aot.prelude()``) if given.

    Every GlobalVar in the bodies (from :func:`gvar`, or another module)
    is replaced by the module's own GlobalVar of the same name, so globals
    can refer to each other by name, mutually recursively.
    """
    mod = base.copy() if base is not None else IRModule()
    for t in types:
        mod.add_type(t.data if isinstance(t, ADT) else t)
    funcs = dict(functions or {})
    for name, f in more.items():
        if name in funcs:
            raise ValueError(f"@{name} given twice")
        funcs[name] = f
    for name in funcs:
        mod.global_var(name)
    fixer = _GlobalFixer(mod)
    for name, f in funcs.items():
        if not isinstance(f, Function):
            raise TypeError(f"@{name} must be a Function, got {type(f).__name__}")
        mod.add(name, fixer.visit(f))
    return mod


class _GlobalFixer(ExprMutator):
    def __init__(self, mod: IRModule) -> None:
        super().__init__()
        self.mod = mod

    def visit_global_var(self, node: GlobalVar) -> Expr:
        return self.mod.global_var(node.name)


UNIT_TYPE = UNIT


# ================================================================= operators
#
# The operator wrappers are generated from the operator registry when this
# module is imported: the registry is the one list of operators (a
# hand-written mirror here drifted from it).  No operator has a
# hand-written wrapper: none does more than build the call.  The wrappers
# hide Python builtins of the same name (abs, all, any, max, min, round,
# sum) in this module: code here spells those ``builtins.<name>``.

class OpNamespace:
    """The operators whose names start with ``<prefix>.``:
    ``B.nn.conv2d`` builds a call of ``nn.conv2d``."""

    def __init__(self, prefix: str, wrappers: dict[str, Callable[..., Call]]) -> None:
        self._prefix = prefix
        self._names = sorted(wrappers)
        for short, wrapper in wrappers.items():
            setattr(self, short, wrapper)

    def __getattr__(self, name: str) -> Callable[..., Call]:
        raise AttributeError(f"no operator {self._prefix}.{name} "
                             f"(operators: {', '.join(self._names)})")

    def __dir__(self) -> list[str]:
        return list(self._names)

    def __repr__(self) -> str:
        return f"OpNamespace({self._prefix})"


def _op_signature(op_def: OpDef) -> inspect.Signature:
    """``(arg0, ..., /, *, attr=default, ...)``: the arguments positionally,
    the attrs class's fields as keywords, with the record's builder
    defaults."""
    P = inspect.Parameter
    params = [P(f"arg{i}", P.POSITIONAL_ONLY) for i in range(op_def.arity)]
    defaults = op_def.builder_defaults()
    for f in dataclasses.fields(op_def.attrs_type):
        params.append(P(f.name, P.KEYWORD_ONLY, default=getattr(defaults, f.name)))
    return inspect.Signature(params, return_annotation=Call)


def _op_wrapper(op_def: OpDef) -> Callable[..., Call]:
    name = op_def.name

    def wrapper(*args: ExprLike, **attrs: Any) -> Call:
        return call(name, *args, **attrs)
    wrapper.__name__ = name.rpartition(".")[2]
    wrapper.__qualname__ = name
    wrapper.__doc__ = f"A call of ``{name}``: {op_def.doc}"
    wrapper.__signature__ = _op_signature(op_def)  # type: ignore[attr-defined]
    return wrapper


#: short names of operators (``B.sub`` is ``B.subtract``)
_ALIASES = {"sub": "subtract", "mul": "multiply", "neg": "negative"}


def _install_operator_wrappers() -> list[str]:
    """Bind a wrapper for every registered operator in this module (an
    :class:`OpNamespace` per prefix); returns the names bound."""
    top: dict[str, Callable[..., Call]] = {}
    spaces: dict[str, dict[str, Callable[..., Call]]] = {}
    for op_def in all_ops():
        prefix, _, short = op_def.name.rpartition(".")
        assert "." not in prefix, f"{op_def.name}: nested operator namespaces are not supported"
        (spaces.setdefault(prefix, {}) if prefix else top)[short] = _op_wrapper(op_def)
    bound: dict[str, object] = dict(top)
    bound.update((prefix, OpNamespace(prefix, ws)) for prefix, ws in spaces.items())
    bound.update((alias, top[name]) for alias, name in _ALIASES.items())
    for name in bound:
        assert name not in globals(), f"operator wrapper {name} would hide the builder's {name}"
    globals().update(bound)
    return sorted(bound)


__all__ = [
    "dtype", "tensor", "scalar", "tuple_type", "func_type", "ref_type", "type_var", "as_type",
    "var", "const", "expr", "tuple_", "tup", "proj", "gvar", "call", "function", "lam", "let",
    "let_chain", "Scope", "if_", "match", "clause", "pcons", "ptuple", "pvar", "pwild", "ref",
    "ref_read", "ref_write", "adt", "ADT", "module", "UNIT_TYPE", "ANY", "OpNamespace",
    *_install_operator_wrappers(),
]
