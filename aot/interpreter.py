"""The reference interpreter: the definition of what a program means.

Design note
-----------
The evaluator is an explicit-stack machine (CEK style): a *control* (the
expression being evaluated, or ``None`` when a value has just been
produced), an *environment* and a *continuation stack* of small frame
objects, one per pending sub-computation ("after the value of this let,
bind it and evaluate the body").  No Python recursion grows with the
depth of the program or with the recursion depth of the evaluated
program: a 10,000-deep ``let`` chain, a non-tail-recursive ``@length`` of
a 10,000-element list and a 10,000-step ``@foldr`` all run in constant
Python stack.  Calls in tail position (a let body, an if branch, a match
clause, a function body) push no frame, so tail recursion runs in
constant machine stack too.

Environments.  Each function *activation* has one ``dict`` from
:class:`Var` to value.  Every ``Var`` object is bound at one place
(``let``, parameter, pattern) and control passes through a place at most
once per activation, so one mutable dict per activation is sound.  A
closure captures only the free variables of its function (computed once
per Function node and cached), so creating one costs its free variables,
not the size of the environment.  A recursive ``let %f = fn ... %f ...``
puts the new closure into its own captured environment.

Sharing.  A node referenced twice inside a function body (a graph binding
``%0`` used twice, or a Python object reused by the builder) is evaluated
once per activation and its value reused: a graph is a DAG of values, the
same meaning A-normal form gives it (and what the compiled C computes).
The memo lives in the activation's dict, keyed by the node.

Operator calls go through the registry: the result type comes from the
operator's type relation applied to the argument values' concrete types,
then its NumPy ``compute`` runs under ``np.errstate(all="ignore")`` and
the result is normalised to arrays of exactly that type.

Types are erased: polymorphic functions run unchanged, ``Call.type_args``
is ignored.  :func:`run` type-checks the module first and checks the
arguments against the entry's parameter types.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import ml_dtypes
import numpy as np

from .diagnostics import DiagnosticError, Span
from .ir import adt
from .ir.adt import Constructor, Pattern
from .ir.analysis import free_vars
from .ir.attrs import Attrs
from .ir.dtype import DType
from .ir.expr import (Call, Constant, Expr, Function, GlobalVar, If, Let, Match, Op,
                      RefCreate, RefRead, RefWrite, Tuple, TupleGetItem, Var)
from .ir.module import IRModule
from .ir.registry import RelationError, Solved, lookup
from .ir.types import (ANY, FuncType, GlobalTypeVar, RefType, TensorType, TupleType, Type,
                       TypeCall, TypeVar, substitute)
from .ir.visitor import children, post_order
from .values import (Closure, ConstructorFunction, ConstructorValue, FunctionValue, OpFunction,
                     RefValue, Value, describe_value, format_value, value_type)

__all__ = ["run", "Interpreter", "check_arguments"]

#: how much of a value a diagnostic shows
_SHOW = 200


def _error(message: str, span: Span | None) -> DiagnosticError:
    return DiagnosticError(message, span)


# =================================================================== frames
#
# A frame is a pending computation waiting for one value.  ``resume`` gets
# the machine and the value and either produces a value (``m.ret``) or
# continues with an expression (``m.eval``), possibly pushing itself back.

class _Frame:
    __slots__ = ()

    def resume(self, m: _Machine, value: Value) -> None:
        raise NotImplementedError


class _MemoFrame(_Frame):
    """Record the value of a shared node in its activation."""

    __slots__ = ("node", "env")

    def __init__(self, node: Expr, env: dict) -> None:
        self.node = node
        self.env = env

    def resume(self, m: _Machine, value: Value) -> None:
        self.env[self.node] = value
        m.ret(value)


class _LetFrame(_Frame):
    __slots__ = ("node", "env")

    def __init__(self, node: Let, env: dict) -> None:
        self.node = node
        self.env = env

    def resume(self, m: _Machine, value: Value) -> None:
        self.env[self.node.var] = value
        m.eval(self.node.body, self.env)


class _TupleFrame(_Frame):
    __slots__ = ("node", "env", "values")

    def __init__(self, node: Tuple, env: dict) -> None:
        self.node = node
        self.env = env
        self.values: list[Value] = []

    def resume(self, m: _Machine, value: Value) -> None:
        self.values.append(value)
        fields = self.node.fields
        if len(self.values) == len(fields):
            m.ret(tuple(self.values))
        else:
            m.push(self)
            m.eval(fields[len(self.values)], self.env)


class _GetItemFrame(_Frame):
    __slots__ = ("node",)

    def __init__(self, node: TupleGetItem) -> None:
        self.node = node

    def resume(self, m: _Machine, value: Value) -> None:
        index = self.node.index
        if not isinstance(value, tuple):
            raise _error(f"projection .{index} of {describe_value(value)}, not a tuple",
                         self.node.span)
        if not 0 <= index < len(value):
            raise _error(f"tuple index {index} out of range for a tuple of {len(value)} "
                         f"fields", self.node.span)
        m.ret(value[index])


class _CallFrame(_Frame):
    """Evaluates the callee (unless it is known statically), then the
    arguments left to right, then applies."""

    __slots__ = ("node", "env", "callee", "values")

    def __init__(self, node: Call, env: dict, callee: Value) -> None:
        self.node = node
        self.env = env
        #: the callee's value, or _PENDING while it is being evaluated
        self.callee = callee
        self.values: list[Value] = []

    def resume(self, m: _Machine, value: Value) -> None:
        if self.callee is _PENDING:
            self.callee = value
        else:
            self.values.append(value)
        self.next(m)

    def next(self, m: _Machine) -> None:
        args = self.node.args
        if len(self.values) == len(args):
            m.apply(self.callee, self.values, self.node)
        else:
            m.push(self)
            m.eval(args[len(self.values)], self.env)


class _IfFrame(_Frame):
    __slots__ = ("node", "env")

    def __init__(self, node: If, env: dict) -> None:
        self.node = node
        self.env = env

    def resume(self, m: _Machine, value: Value) -> None:
        if not (isinstance(value, np.ndarray) and value.shape == () and value.dtype == np.bool_):
            raise _error(f"the condition of `if` must be a 0-d bool tensor, got "
                         f"{describe_value(value)}", self.node.cond.span or self.node.span)
        branch = self.node.true_branch if bool(value) else self.node.false_branch
        m.eval(branch, self.env)


class _MatchFrame(_Frame):
    __slots__ = ("node", "env")

    def __init__(self, node: Match, env: dict) -> None:
        self.node = node
        self.env = env

    def resume(self, m: _Machine, value: Value) -> None:
        for clause in self.node.clauses:
            bindings = match_pattern(clause.lhs, value)
            if bindings is not None:
                self.env.update(bindings)
                m.eval(clause.rhs, self.env)
                return
        raise _error(f"no clause matches {format_value(value, limit=_SHOW)}", self.node.span)


class _RefCreateFrame(_Frame):
    __slots__ = ()

    def resume(self, m: _Machine, value: Value) -> None:
        m.ret(RefValue(value))


_REF_CREATE = _RefCreateFrame()


class _RefReadFrame(_Frame):
    __slots__ = ("node",)

    def __init__(self, node: RefRead) -> None:
        self.node = node

    def resume(self, m: _Machine, value: Value) -> None:
        m.ret(_as_ref(value, self.node).value)


class _RefWriteFrame(_Frame):
    __slots__ = ("node", "env", "ref")

    def __init__(self, node: RefWrite, env: dict) -> None:
        self.node = node
        self.env = env
        self.ref: RefValue | None = None

    def resume(self, m: _Machine, value: Value) -> None:
        if self.ref is None:
            self.ref = _as_ref(value, self.node)
            m.push(self)
            m.eval(self.node.value, self.env)
        else:
            self.ref.value = value
            m.ret(())


def _as_ref(value: Value, node: Expr) -> RefValue:
    if not isinstance(value, RefValue):
        raise _error(f"expected a reference, got {describe_value(value)}", node.span)
    return value


_PENDING = object()
_MISSING = object()


# ================================================================== patterns

def match_pattern(pattern: Pattern, value: Value) -> dict[Var, Value] | None:
    """The bindings of ``pattern`` against ``value``, or None when it does
    not match.  Iterative, so patterns may nest to any depth."""
    bindings: dict[Var, Value] = {}
    work: list[tuple[Pattern, Value]] = [(pattern, value)]
    while work:
        p, v = work.pop()
        if isinstance(p, adt.PatternWildcard):
            continue
        if isinstance(p, adt.PatternVar):
            bindings[p.var] = v
        elif isinstance(p, adt.PatternConstructor):
            if not isinstance(v, ConstructorValue) or not _ctor_matches(p.constructor, v):
                return None
            if len(p.patterns) != len(v.fields):
                if p.patterns:  # `Cons` written without sub-patterns matches any Cons
                    return None
                continue
            work.extend(zip(p.patterns, v.fields))
        elif isinstance(p, adt.PatternTuple):
            if not isinstance(v, tuple) or len(v) != len(p.patterns):
                return None
            work.extend(zip(p.patterns, v))
        else:
            raise AssertionError(f"unknown pattern {p!r}")
    return bindings


def _ctor_matches(c: Constructor, v: ConstructorValue) -> bool:
    d = v.constructor
    return c is d or (c.name == d.name and c.belong_to == d.belong_to)


# =================================================================== machine

_Eval = Callable[["_Machine", Any, dict], None]


#: The most pending computations (continuation frames) a program may build
#: up: non-tail recursion that deep is a runaway (a few frames per level,
#: so about ten times the C's default bound of 10,000 nested calls; about
#: 100 MB), and the evaluator stops with a diagnostic instead of exhausting
#: the machine's memory.
MAX_PENDING = 200_000


class _Machine:
    """One evaluation: control, environment, continuation stack."""

    __slots__ = ("interp", "ctrl", "env", "value", "stack")

    def __init__(self, interp: Interpreter) -> None:
        self.interp = interp
        self.ctrl: Expr | None = None
        self.env: dict = {}
        self.value: Value = None
        self.stack: list[_Frame] = []

    # -- the three moves
    def eval(self, expr: Expr, env: dict) -> None:
        self.ctrl = expr
        self.env = env

    def ret(self, value: Value) -> None:
        self.ctrl = None
        self.value = value

    def push(self, frame: _Frame) -> None:
        self.stack.append(frame)

    def run(self) -> Value:
        stack = self.stack
        shared = self.interp._shared
        handlers = _HANDLERS
        while True:
            node = self.ctrl
            if node is not None:
                self.ctrl = None
                env = self.env
                if node in shared:
                    memo = env.get(node, _MISSING)
                    if memo is not _MISSING:
                        self.value = memo
                        continue
                    stack.append(_MemoFrame(node, env))
                handlers[type(node)](self, node, env)
            elif stack:
                stack.pop().resume(self, self.value)
            else:
                return self.value

    # -- calls
    def apply(self, callee: Value, args: Sequence[Value], node: Call | None) -> None:
        span = node.span if node is not None else None
        if isinstance(callee, Closure):
            if len(self.stack) > MAX_PENDING:
                raise _error(f"the evaluation is nested too deeply: more than {MAX_PENDING:,} "
                             "pending computations (a recursion without a base case? the "
                             "compiled C stops at max_depth nested calls)", span)
            func = callee.func
            if len(args) != len(func.params):
                raise _error(f"{_callee_name(callee)} expects {len(func.params)} "
                             f"argument{'s' if len(func.params) != 1 else ''}, got {len(args)}",
                             span or func.span)
            env = dict(callee.env)
            for param, arg in zip(func.params, args):
                env[param] = arg
            self.eval(func.body, env)
        elif isinstance(callee, ConstructorFunction):
            ctor = callee.constructor
            if len(args) != len(ctor.inputs):
                raise _error(f"constructor {ctor.name} expects {len(ctor.inputs)} "
                             f"field{'s' if len(ctor.inputs) != 1 else ''}, got {len(args)}",
                             span)
            self.ret(ConstructorValue(ctor, tuple(args)))
        elif isinstance(callee, ConstructorValue) and not callee.fields and not args:
            self.ret(callee)  # `Nil()`: a nullary constructor called with no fields
        elif isinstance(callee, OpFunction):
            attrs = node.attrs if node is not None and node.op is callee.op else None
            self.ret(self.interp.apply_op(callee.op, list(args), attrs, span))
        else:
            raise _error(f"cannot call {describe_value(callee)}", span)


def _callee_name(c: Closure) -> str:
    return f"@{c.name}" if c.name is not None else "the function"


# ---------------------------------------------------------------- handlers

def _eval_var(m: _Machine, node: Var, env: dict) -> None:
    value = env.get(node, _MISSING)
    if value is _MISSING:
        raise _error(f"unbound variable %{node.name_hint}", node.span)
    m.ret(value)


def _eval_global(m: _Machine, node: GlobalVar, env: dict) -> None:
    m.ret(m.interp.global_closure(node))


def _eval_constant(m: _Machine, node: Constant, env: dict) -> None:
    m.ret(node.data)


def _eval_op(m: _Machine, node: Op, env: dict) -> None:
    m.ret(OpFunction(node))


def _eval_constructor(m: _Machine, node: Constructor, env: dict) -> None:
    m.ret(m.interp.constructor_value(node))


def _eval_tuple(m: _Machine, node: Tuple, env: dict) -> None:
    if not node.fields:
        m.ret(())
        return
    m.push(_TupleFrame(node, env))
    m.eval(node.fields[0], env)


def _eval_getitem(m: _Machine, node: TupleGetItem, env: dict) -> None:
    m.push(_GetItemFrame(node))
    m.eval(node.tuple_value, env)


def _eval_call(m: _Machine, node: Call, env: dict) -> None:
    callee = node.op
    if isinstance(callee, Op):
        value: Value = OpFunction(callee)
    elif isinstance(callee, GlobalVar):
        value = m.interp.global_closure(callee)
    elif isinstance(callee, Constructor):
        value = m.interp.constructor_value(callee)
    elif isinstance(callee, Var):
        value = env.get(callee, _MISSING)
        if value is _MISSING:
            raise _error(f"unbound variable %{callee.name_hint}", callee.span)
    else:
        frame = _CallFrame(node, env, _PENDING)
        m.push(frame)
        m.eval(callee, env)
        return
    _CallFrame(node, env, value).next(m)


def _eval_function(m: _Machine, node: Function, env: dict) -> None:
    m.ret(m.interp.make_closure(node, env))


def _eval_let(m: _Machine, node: Let, env: dict) -> None:
    value = node.value
    if isinstance(value, Function):
        # A let-bound function may call itself: it captures its own closure.
        closure = m.interp.make_closure(value, env, self_var=node.var)
        env[node.var] = closure
        m.eval(node.body, env)
        return
    m.push(_LetFrame(node, env))
    m.eval(value, env)


def _eval_if(m: _Machine, node: If, env: dict) -> None:
    m.push(_IfFrame(node, env))
    m.eval(node.cond, env)


def _eval_match(m: _Machine, node: Match, env: dict) -> None:
    m.push(_MatchFrame(node, env))
    m.eval(node.data, env)


def _eval_ref_create(m: _Machine, node: RefCreate, env: dict) -> None:
    m.push(_REF_CREATE)
    m.eval(node.value, env)


def _eval_ref_read(m: _Machine, node: RefRead, env: dict) -> None:
    m.push(_RefReadFrame(node))
    m.eval(node.ref, env)


def _eval_ref_write(m: _Machine, node: RefWrite, env: dict) -> None:
    m.push(_RefWriteFrame(node, env))
    m.eval(node.ref, env)


_HANDLERS: dict[type, _Eval] = {
    Var: _eval_var,
    GlobalVar: _eval_global,
    Constant: _eval_constant,
    Op: _eval_op,
    Constructor: _eval_constructor,
    Tuple: _eval_tuple,
    TupleGetItem: _eval_getitem,
    Call: _eval_call,
    Function: _eval_function,
    Let: _eval_let,
    If: _eval_if,
    Match: _eval_match,
    RefCreate: _eval_ref_create,
    RefRead: _eval_ref_read,
    RefWrite: _eval_ref_write,
}

#: nodes that are never worth memoising (cheap, or values by themselves)
_LEAVES = (Var, GlobalVar, Constant, Op, Constructor, Function)


# ================================================================ interpreter

class Interpreter:
    """Evaluates expressions and calls global functions of ``mod``.

    The module need not be typed (types are erased at run time); use
    :func:`run` to type-check and check arguments first.
    """

    def __init__(self, mod: IRModule) -> None:
        self.mod = mod
        self._free: dict[Function, tuple[Var, ...]] = {}
        self._globals: dict[str, Closure] = {}
        self._nullary: dict[Constructor, ConstructorValue] = {}
        self._ctor_fns: dict[Constructor, ConstructorFunction] = {}
        #: nodes with more than one parent (evaluated once per activation)
        self._shared: set[Expr] = set()
        self._scanned: set[Expr] = set()

    # ------------------------------------------------------------ public
    def call(self, entry: str, args: Sequence[Value]) -> Value:
        """Call global ``@entry`` with runtime values ``args``."""
        gv = self._find_global(entry)
        if gv is None:
            raise _error(f"no global function @{entry} in the module", None)
        return self.apply(self.global_closure(gv), args)

    def apply(self, func: Value, args: Sequence[Value]) -> Value:
        """Apply a function value (closure, constructor, operator) to
        ``args``."""
        m = _Machine(self)
        m.apply(func, list(args), None)
        return m.run()

    def evaluate(self, expr: Expr) -> Value:
        """The value of a closed expression (globals come from the
        module)."""
        self._scan(expr)
        m = _Machine(self)
        m.eval(expr, {})
        return m.run()

    # ----------------------------------------------------------- runtime
    def _find_global(self, name: str) -> GlobalVar | None:
        for gv in self.mod.functions:
            if gv.name == name:
                return gv
        return None

    def global_closure(self, gv: GlobalVar) -> Closure:
        closure = self._globals.get(gv.name)
        if closure is None:
            func = self.mod.functions.get(gv)
            if func is None:
                found = self._find_global(gv.name)
                func = self.mod.functions[found] if found is not None else None
            if func is None:
                raise _error(f"unknown global function @{gv.name}", gv.span)
            self._scan(func)
            closure = self._globals[gv.name] = Closure(func, {}, gv.name)
        return closure

    def constructor_value(self, ctor: Constructor) -> Value:
        """A constructor used as a value: the ADT value itself when it has
        no fields (``Nil``), else a function building one (``Cons``)."""
        if not ctor.inputs:
            value = self._nullary.get(ctor)
            if value is None:
                value = self._nullary[ctor] = ConstructorValue(ctor, ())
            return value
        fn = self._ctor_fns.get(ctor)
        if fn is None:
            fn = self._ctor_fns[ctor] = ConstructorFunction(ctor)
        return fn

    def make_closure(self, func: Function, env: dict, self_var: Var | None = None) -> Closure:
        captured: dict[Var, Value] = {}
        closure = Closure(func, captured)
        for var in self._free_vars(func):
            if var is self_var:
                captured[var] = closure
                continue
            value = env.get(var, _MISSING)
            if value is _MISSING:
                raise _error(f"unbound variable %{var.name_hint} in a function", var.span
                             or func.span)
            captured[var] = value
        return closure

    def _free_vars(self, func: Function) -> tuple[Var, ...]:
        fv = self._free.get(func)
        if fv is None:
            fv = self._free[func] = tuple(free_vars(func))
        return fv

    def apply_op(self, op: Op, args: list[Value], attrs: Attrs | None,
                 span: Span | None) -> Value:
        op_def = lookup(op.name)
        if op_def is None:
            raise _error(f"unknown operator `{op.name}`", span)
        if attrs is None:
            attrs = op_def.attrs_type()
        if op_def.arity >= 0 and len(args) != op_def.arity:
            raise _error(f"{op.name} expects {op_def.arity} argument"
                         f"{'s' if op_def.arity != 1 else ''}, got {len(args)}", span)
        try:
            arg_types = [value_type(a) for a in args]
        except (TypeError, ValueError) as exc:
            raise _error(f"{op.name}: {exc}", span) from None
        try:
            out = op_def.rel(arg_types, attrs)
        except RelationError as exc:
            raise _error(f"{op.name}: {exc}", span) from None
        if isinstance(out, Solved):
            out = out.out
        assert out is not None, f"relation of {op.name} gave no type for concrete {arg_types}"
        try:
            with np.errstate(all="ignore"):
                result = op_def.compute(args, attrs, out)
        except (ValueError, IndexError, ArithmeticError) as exc:
            # A failure that depends on the data (an index out of range,
            # say): report it at the call rather than as a traceback.
            raise _error(f"{op.name}: {exc}", span) from None
        return _normalise(result, out, op.name)

    # ----------------------------------------------------------- analysis
    def _scan(self, root: Expr) -> None:
        """Find the nodes of ``root`` that have several parents."""
        if root in self._scanned:
            return
        self._scanned.add(root)
        seen: set[Expr] = set()
        for node in post_order(root):
            for child in children(node):
                if child in seen:
                    if not isinstance(child, _LEAVES):
                        self._shared.add(child)
                else:
                    seen.add(child)
            if isinstance(node, Function):
                self._scanned.add(node)


def _normalise(result: object, out: Type, name: str) -> Value:
    """``result`` as ndarray(s) of exactly the type ``out``."""
    if isinstance(out, TupleType):
        assert isinstance(result, (tuple, list)) and len(result) == len(out.fields), \
            f"{name} returned {type(result).__name__} for {out}"
        return tuple(_normalise(r, t, name) for r, t in zip(result, out.fields))
    assert isinstance(out, TensorType), f"{name}: unexpected output type {out}"
    if isinstance(result, (np.ndarray, np.generic)):
        arr = np.asarray(result)
        assert arr.dtype == out.dtype.np, \
            f"{name} computed dtype {arr.dtype}, its relation says {out.dtype}"
    else:
        arr = np.asarray(result, dtype=out.dtype.np)
    assert len(arr.shape) == len(out.shape) and all(
        d is ANY or d == s for d, s in zip(out.shape, arr.shape)), \
        f"{name} computed shape {arr.shape}, its relation says {out}"
    return arr


# ====================================================================== run

def run(mod: IRModule, *args: Any, entry: str = "main") -> Value:
    """Type-check ``mod``, check ``args`` against ``@entry``'s parameters
    and evaluate ``@entry(*args)``."""
    if not mod.is_typed:
        from .ir.type_infer import infer_types
        mod = infer_types(mod)
    if entry not in mod:
        raise _error(f"no global function @{entry} in the module", None)
    func = mod[entry]
    values = check_arguments(func, args, entry, mod)
    return Interpreter(mod).call(entry, values)


def check_arguments(func: Function, args: Sequence[Any], name: str = "main",
                    mod: IRModule | None = None) -> list[Value]:
    """Check (and convert Python scalars in) ``args`` against the parameter
    types of ``func``; a DiagnosticError names the parameter at fault."""
    params = func.params
    if len(args) != len(params):
        names = ", ".join("%" + p.name_hint for p in params)
        raise _error(f"@{name} expects {len(params)} argument{'s' if len(params) != 1 else ''}"
                     f" ({names}), got {len(args)}", func.span)
    types = _param_types(func)
    out = []
    for param, ptype, arg in zip(params, types, args):
        try:
            out.append(_convert(arg, ptype, mod) if ptype is not None else arg)
        except _Mismatch as exc:
            raise _error(f"argument %{param.name_hint} of @{name}: expected {ptype}, got "
                         f"{exc.given}", param.span or func.span) from None
    return out


def _param_types(func: Function) -> list[Type | None]:
    ftype = func.checked_type
    if isinstance(ftype, FuncType) and len(ftype.arg_types) == len(func.params):
        return list(ftype.arg_types)
    return [p.checked_type or p.type_annotation for p in func.params]


class _Mismatch(Exception):
    def __init__(self, given: str) -> None:
        super().__init__(given)
        self.given = given


def _convert(value: Any, t: Type, mod: IRModule | None) -> Value:
    """``value`` checked against ``t``; Python numbers (and nested lists of
    them) become arrays of the expected dtype when they fit exactly."""
    if isinstance(t, TensorType):
        return _convert_tensor(value, t)
    if isinstance(t, TupleType):
        if not isinstance(value, tuple) or len(value) != len(t.fields):
            raise _Mismatch(describe_value(value))
        return tuple(_convert(v, ft, mod) for v, ft in zip(value, t.fields))
    _check_value(value, t, mod)
    return value


def _convert_tensor(value: Any, t: TensorType) -> np.ndarray:
    if isinstance(value, (np.ndarray, np.generic)):
        arr = np.asarray(value)
        if arr.dtype != t.dtype.np or not _shape_fits(arr.shape, t):
            raise _Mismatch(_describe_array(arr))
        return arr
    if isinstance(value, (bool, int, float, list)):
        arr = _python_to_array(value, t.dtype)
        if arr is None:
            raise _Mismatch(describe_value(value))
        if not _shape_fits(arr.shape, t):
            raise _Mismatch(f"a Python value of shape {arr.shape}")
        return arr
    raise _Mismatch(describe_value(value))


def _describe_array(arr: np.ndarray) -> str:
    try:
        return f"a tensor of type {value_type(arr)}"
    except ValueError:
        return f"a NumPy array of unsupported dtype {arr.dtype}"


def _shape_fits(shape: tuple[int, ...], t: TensorType) -> bool:
    return len(shape) == len(t.shape) and all(
        d is ANY or d == s for d, s in zip(t.shape, shape))


def _python_to_array(value: Any, dtype: DType) -> np.ndarray | None:
    """Python bools/ints/floats (or nested lists of them) as an array of
    ``dtype``, or None if some element does not fit exactly."""
    flat: list[Any] = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, list):
            stack.extend(v)
        else:
            flat.append(v)
    for v in flat:
        if not _scalar_fits(v, dtype):
            return None
    try:
        arr = np.array(value, dtype=dtype.np)
    except (ValueError, OverflowError):
        return None
    if arr.dtype == object:
        return None
    return arr


def _scalar_fits(v: Any, dtype: DType) -> bool:
    if isinstance(v, bool):
        return dtype is DType.BOOL
    if isinstance(v, int):
        if dtype.is_int:
            info = ml_dtypes.iinfo(dtype.np)
            return info.min <= v <= info.max
        if dtype.is_float:
            with np.errstate(all="ignore"):
                return bool(int(dtype.np.type(v)) == v) if abs(v) < 2 ** 1000 else False
        return False
    if isinstance(v, float):
        if not dtype.is_float:
            return False
        with np.errstate(all="ignore"):
            converted = dtype.np.type(v)
        return not (np.isinf(converted) and not np.isinf(v))
    return False


def _check_value(value: Value, t: Type, mod: IRModule | None) -> None:
    """Check a value against a type without converting it (ADT fields,
    functions, references); iterative over ADT depth."""
    work: list[tuple[Value, Type]] = [(value, t)]
    while work:
        v, ty = work.pop()
        if isinstance(ty, TypeVar) or ty is None:
            continue
        if isinstance(ty, TensorType):
            if not isinstance(v, np.ndarray) or v.dtype != ty.dtype.np \
                    or not _shape_fits(v.shape, ty):
                raise _Mismatch(describe_value(v) + _inside(v, value))
        elif isinstance(ty, TupleType):
            if not isinstance(v, tuple) or len(v) != len(ty.fields):
                raise _Mismatch(describe_value(v) + _inside(v, value))
            work.extend(zip(v, ty.fields))
        elif isinstance(ty, (TypeCall, GlobalTypeVar)):
            head = ty.func if isinstance(ty, TypeCall) else ty
            targs = ty.args if isinstance(ty, TypeCall) else ()
            if not isinstance(v, ConstructorValue) or v.constructor.belong_to != head:
                raise _Mismatch(describe_value(v) + _inside(v, value))
            ctor = v.constructor
            if len(v.fields) != len(ctor.inputs):
                raise _Mismatch(f"a malformed {ctor.name} value")
            mapping = _type_mapping(ctor, targs, mod)
            work.extend((f, substitute(ft, mapping)) for f, ft in zip(v.fields, ctor.inputs))
        elif isinstance(ty, FuncType):
            if not isinstance(v, FunctionValue):
                raise _Mismatch(describe_value(v) + _inside(v, value))
        elif isinstance(ty, RefType):
            if not isinstance(v, RefValue):
                raise _Mismatch(describe_value(v) + _inside(v, value))


def _type_mapping(ctor: Constructor, targs: tuple[Type, ...],
                  mod: IRModule | None) -> dict[Type, Type]:
    """Map the type variables of the constructor's ADT to ``targs``."""
    if mod is None or ctor.belong_to not in mod.type_definitions:
        return {}
    tvs = mod.type_definitions[ctor.belong_to].type_vars
    if len(tvs) != len(targs):
        return {}
    return dict(zip(tvs, targs))


def _inside(v: Value, whole: Value) -> str:
    return "" if v is whole else f" inside {format_value(whole, limit=_SHOW)}"
