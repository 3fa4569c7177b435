"""FoldConstant: evaluate at compile time what depends only on constants.

Design note
-----------
As Relay's ``FoldConstant`` (``src/relay/transforms/fold_constant.cc``), one
bottom-up :class:`~aot.ir.visitor.ExprMutator` walk (iterative, memoised by
node, so a 10,000-node graph or let chain is fine) that, after rebuilding a
node's children:

* **calls an operator whose arguments are all constant** (a Constant, or a
  Tuple whose fields are all constant, recursively): the call is evaluated
  by the reference interpreter (:meth:`aot.interpreter.Interpreter.evaluate`
  on the rebuilt call, the operator's registered NumPy reference: nothing
  is re-implemented here) and replaced by a Constant, or a Tuple of
  Constants for operators returning tuples (``split``, ``nn.batch_norm``).
  Every operator of the catalogue is pure and deterministic, so every one
  is folded, qnn included (Relay folds qnn only on request, because its qnn
  operators have no compute before legalisation; ours do).  Not folded:

  - calls without arguments (``zeros``/``ones`` of a static shape) and
    the calls that only expand a value into a shape (``full``,
    ``full_like``, ``ones_like``, ``zeros_like``): Relay's heuristic and
    skip list, folding them only trades a loop for a constant in flash;
  - *widening* calls: an elementwise, broadcast or injective operator
    (``cast``, ``qnn.dequantize``, ``subtract``, ``repeat``, ...) whose
    result needs more bytes of C storage than all its arguments together,
    and at least 64 (smaller ones fold: a scalar or short vector costs
    less as a constant than as code; :func:`_widens`) -- except a
    conversion (``cast``, ``qnn.dequantize``) of an int8, uint8, int16,
    uint16 or float16 constant, folded as before.  Folding one would
    undo what a narrow weight type (int4/uint4, bfloat16, float8) is for:
    the dequantize of an int4 16x32 weight is a 2,048-byte float32 table
    instead of 256 packed bytes.  The conversion (a load, a widen, a
    subtract and a multiply) is put by FuseOps inside the consuming
    kernel (a contraction may take a prologue computed from constants
    only).  The calls that consume such a call are then not constant
    either, so the whole conversion chain (ONNX's blocked DequantizeLinear
    is cast, repeat of the scales, subtract, cast, multiply; a Gemm adds a
    transpose) stays, with the narrow tables as its only constants.
    int8, uint8 and float16 weights are folded as before (float32
    tables): the conversion at every read costs speed -- per
    multiply-accumulate for a convolution, whose host SIMD build of a
    32x32-channel 3x3 int4 layer ran 7 times slower than with a float32
    table -- and an int8 table saves half what an int4 one does; a model
    that stores int8 weights for flash is quantized whole
    (FakeQuantizationToInteger, integer kernels).  FoldScaleAxis cannot
    fold a per-channel scale into a kept weight (it is not a constant), so
    that multiply stays in the kernel's epilogue.  The option
    ``keep_narrow=False`` (``PassContext(options={"FoldConstant":
    {"keep_narrow": False}})``) folds these too: speed over flash;
  - calls whose evaluation fails on the data (an index out of range): the
    call stays and fails at run time, where the program would have;
  - calls of anything but an operator (globals, closures, constructors):
    a function may recurse forever or have effects, and inlining is not
    this pass's job.

* ``let %x = <constant>; body`` -> ``body`` with ``%x`` replaced by the
  constant node (one shared node: a graph binding, not a copy).
* ``(a, b, ...).i`` of a Tuple node -> its field ``i`` when the other
  fields are *inert*: constants, variables, globals, operators,
  constructors, function literals, constructor applications and tuples
  of these, whose evaluation has no effect and cannot fail, so dropping
  them changes nothing.  This covers tuples of constants; Relay drops any
  field unconditionally (it has no effects to lose).

Beyond Relay's FoldConstant (which leaves control flow to PartialEval),
the walk also resolves control flow whose outcome is known:

* ``if (True) { a } else { b }`` -> ``a`` (the condition is folded first,
  so ``if (less(1, 2))`` counts); the branch not taken is never evaluated
  by the program either, so dropping it drops no effect.
* ``match`` whose scrutinee is a *known value* -- a constructor
  application, tuple or constant, directly or through a let-bound
  variable (``let %l = Cons(1, %n); ... match (%l) { ... }``) -- to the
  first clause whose pattern matches, with the pattern's variables bound
  to the matched parts: an *atom* (constant, variable, global, operator,
  constructor) is substituted, anything else is let-bound in evaluation
  order, so each part is still evaluated exactly once.  The fold happens
  only when it is decidable and loses nothing: a clause whose pattern
  meets a part of unknown shape (a parameter, a call) stops the search;
  a part that is not inert must be bound by a variable of the chosen
  clause (else its evaluation would be lost); a let-bound scrutinee is
  looked through, but only its atoms are bound again (binding a computed
  part would compute it again); when no clause matches, the ``match`` stays
  and fails at run time as before.
* ``%t.i`` where ``%t`` is let-bound to a Tuple whose field ``i`` is an
  atom -> that atom.

Effects are never folded: ``ref``/``ref_read``/``ref_write`` are kept
(their operands are folded), and a let whose value has an effect stays.
Function parameters are variables, so nothing is folded *through* them;
function bodies are folded inside, as Relay does.  The catalogue has no
``shape_of``/``ndarray_size``, so there is nothing to fold from types
alone.  Folded constants take the span of the call they replace.  The
result is type-checked again (a folded call of a ``?``-shaped type gets
the constant's exact shape).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..diagnostics import DiagnosticError, Span
from ..interpreter import Interpreter
from ..ir.adt import (Clause, Constructor, Pattern, PatternConstructor, PatternTuple, PatternVar,
                      PatternWildcard)
from ..ir.dtype import DType
from ..ir.expr import (Call, Constant, Expr, Function, GlobalVar, If, Let, Match, Op, Tuple,
                       TupleGetItem, Var)
from ..ir.module import IRModule
from ..ir.registry import PatternKind
from ..ir.types import TensorType, TupleType, Type
from ..ir.visitor import ExprMutator, Visit, rebuild
from ..values import Value
from .manager import register_pass

__all__ = ["FoldConstantOptions", "fold_constant", "is_constant"]


@dataclass(frozen=True)
class FoldConstantOptions:
    """``keep_narrow``: keep a widening conversion of an int4/uint4,
    bfloat16 or float8 constant (the dequantize of int4 weights: narrow
    tables, converted in the consuming kernel at every read); False folds
    it too (float32 tables: more flash, faster kernels)."""

    keep_narrow: bool = True


def fold_constant(mod: IRModule, opts: FoldConstantOptions = FoldConstantOptions()
                  ) -> IRModule:
    """A new, typed module with every constant sub-computation folded."""
    from ..ir.type_infer import infer_types
    evaluator = Interpreter(IRModule())
    out = mod.copy()
    for gv, func in mod.functions.items():
        out.add(gv, _Folder(evaluator, opts.keep_narrow).visit(func))
    return infer_types(out)


def is_constant(e: Expr) -> bool:
    """A Constant, or a Tuple of constants (Relay's "complex constant")."""
    stack = [e]
    while stack:
        node = stack.pop()
        if isinstance(node, Tuple):
            stack.extend(node.fields)
        elif not isinstance(node, Constant):
            return False
    return True


#: Operators that only expand a value into a shape: folding them would
#: trade a loop for a constant in flash (Relay's skip list).
_EXPANDING = frozenset({"full", "full_like", "ones_like", "zeros_like"})


def _storage_bytes(t: Type | None) -> int:
    """Bytes of C storage of a value of type ``t`` (tuples: their fields);
    -1 for a type that is not fully static."""
    if isinstance(t, TupleType):
        sizes = [_storage_bytes(f) for f in t.fields]
        return -1 if -1 in sizes else sum(sizes)
    if not isinstance(t, TensorType) or not all(isinstance(d, int) for d in t.shape):
        return -1
    return t.dtype.nbytes(int(np.prod(t.shape, dtype=np.int64)))


#: Below this many bytes a widened result is folded all the same: a scalar
#: or a short vector (a zero point cast to int32) costs less as a constant
#: than the code converting it.
_WIDE_BYTES = 64

#: a conversion of a constant of these types is folded all the same: an
#: int8 or float16 table saves half or less of what an int4 one does, and
#: converting at every read costs speed (design note)
_CONVERSIONS = frozenset({"cast", "qnn.dequantize"})
_FOLDED_SOURCES = frozenset({DType.INT8, DType.UINT8, DType.INT16, DType.UINT16, DType.FLOAT16})


def _widens(call: Call, result: Type | None) -> bool:
    """An elementwise/broadcast/injective operator call (all arguments
    constant) whose result takes more bytes of storage than its arguments
    together: kept, so the narrow constants stay in flash (design note)."""
    assert isinstance(call.op, Op)
    if call.op.op_def.pattern > PatternKind.INJECTIVE:
        return False
    if call.op.name in _CONVERSIONS and isinstance(call.args[0].checked_type, TensorType) \
            and call.args[0].checked_type.dtype in _FOLDED_SOURCES:
        return False
    out = _storage_bytes(result)
    ins = [_storage_bytes(a.checked_type) for a in call.args]
    return out >= _WIDE_BYTES and -1 not in ins and out > sum(ins)


def _is_atom(e: Expr) -> bool:
    """A value that may be referenced again instead of being bound: its
    evaluation is free, has no effect, and a second reference computes
    nothing again (a nullary constructor application such as ``Nil``
    counts: it has no fields to compute)."""
    if isinstance(e, Call):
        return isinstance(e.op, Constructor) and not e.args
    return isinstance(e, (Constant, Var, GlobalVar, Op, Constructor)) or is_constant(e)


def _is_inert(e: Expr) -> bool:
    """Evaluating ``e`` has no effect and cannot fail."""
    stack = [e]
    while stack:
        node = stack.pop()
        if isinstance(node, Tuple):
            stack.extend(node.fields)
        elif isinstance(node, Call) and isinstance(node.op, Constructor):
            stack.extend(node.args)
        elif not isinstance(node, (Constant, Var, GlobalVar, Op, Constructor, Function)):
            return False
    return True


def _is_known_value(e: Expr) -> bool:
    """A Tuple or constructor application: what a let-bound variable is
    looked through to (its parts were evaluated at the let, so only atoms
    among them are ever referenced again)."""
    if isinstance(e, Call):
        return isinstance(e.op, Constructor)
    return isinstance(e, Tuple)


def _same_constructor(c: Constructor, d: Constructor) -> bool:
    """The interpreter's test: one object, or the same name of the same type
    (a copied module may hold equal constructors)."""
    return c is d or (c.name == d.name and c.belong_to == d.belong_to)


def _to_expr(value: Value, span: Span | None) -> Expr:
    """A runtime value (an array or nested tuple of arrays) as a Constant or
    Tuple of Constants, typed."""
    if isinstance(value, tuple):
        fields = tuple(_to_expr(v, span) for v in value)
        field_types: tuple[Type, ...] = tuple(f.type for f in fields)
        return Tuple(fields, span=span, checked_type=TupleType(field_types))
    assert isinstance(value, np.ndarray), f"an operator returned {type(value).__name__}"
    dtype = DType.from_numpy(value.dtype)
    return Constant(value, span=span,
                    checked_type=TensorType(tuple(int(d) for d in value.shape), dtype))


class _Unknown(Exception):
    """Whether a pattern matches cannot be decided at compile time (or the
    match cannot be resolved without losing an evaluation)."""


class _Folder(ExprMutator):
    def __init__(self, evaluator: Interpreter, keep_narrow: bool = True) -> None:
        super().__init__()
        self.evaluator = evaluator
        self.keep_narrow = keep_narrow
        #: let-bound variable -> its (folded) value, when that value is a
        #: Tuple or constructor application
        self.known: dict[Var, Expr] = {}

    # ------------------------------------------------------------ operators

    def visit_call(self, node: Call) -> Visit:
        new = yield from super().visit_call(node)
        if not isinstance(new.op, Op) or not new.args or new.op.name in _EXPANDING:
            return new
        if not all(is_constant(a) for a in new.args):
            return new
        if self.keep_narrow and _widens(new, node.checked_type):
            return new
        try:
            value = self.evaluator.evaluate(new)
        except DiagnosticError:
            return new
        return _to_expr(value, node.span)

    # ----------------------------------------------------- lets and tuples

    def visit_let(self, node: Let) -> Visit:
        value = yield node.value
        if is_constant(value):
            self.memo[node.var] = value
            return (yield node.body)
        var = yield node.var
        if isinstance(var, Var) and _is_known_value(value):
            self.known[var] = value
        body = yield node.body
        return rebuild(node, var=var, value=value, body=body)

    def visit_tuple_getitem(self, node: TupleGetItem) -> Visit:
        t = yield node.tuple_value
        if isinstance(t, Tuple) and all(_is_inert(f) for i, f in enumerate(t.fields)
                                        if i != node.index):
            return t.fields[node.index]
        bound = self.known.get(t) if isinstance(t, Var) else None
        if isinstance(bound, Tuple) and _is_atom(bound.fields[node.index]):
            return bound.fields[node.index]
        return rebuild(node, tuple_value=t)

    # --------------------------------------------------------- control flow

    def visit_if(self, node: If) -> Visit:
        cond = yield node.cond
        if isinstance(cond, Constant) and cond.data.shape == () and cond.data.dtype == np.bool_:
            return (yield node.true_branch if bool(cond.data) else node.false_branch)
        t = yield node.true_branch
        f = yield node.false_branch
        return rebuild(node, cond=cond, true_branch=t, false_branch=f)

    def visit_match(self, node: Match) -> Visit:
        data = yield node.data
        chosen = self._select(data, node.clauses)
        if chosen is None:
            clauses = []
            for clause in node.clauses:
                lhs = yield from self.visit_pattern(clause.lhs)
                rhs = yield clause.rhs
                clauses.append(rebuild(clause, lhs=lhs, rhs=rhs))
            return rebuild(node, data=data, clauses=tuple(clauses))
        clause, bindings = chosen
        lets: list[tuple[Var, Expr]] = []
        for var, part in bindings:
            if _is_atom(part):
                self.memo[var] = part
            else:
                lets.append((var, part))
        body = yield clause.rhs
        for var, part in reversed(lets):
            body = Let(var, part, body, span=clause.span or node.span)
        return body

    def _select(self, data: Expr, clauses: tuple[Clause, ...]
                ) -> tuple[Clause, list[tuple[Var, Expr]]] | None:
        """The clause a known scrutinee selects and its bindings (in
        evaluation order), or None when that is not decidable or the fold
        would lose an evaluation."""
        direct = not isinstance(data, Var)
        value = data if direct else self.known.get(data)
        if value is None or (direct and not isinstance(value, (Tuple, Call, Constant))):
            return None
        for clause in clauses:
            try:
                bindings = self._match(clause.lhs, data, shared=not direct)
            except _Unknown:
                return None
            if bindings is None:
                continue
            if direct and not self._loses_nothing(data, bindings):
                return None
            return clause, bindings
        return None

    def _resolve(self, e: Expr) -> Expr:
        """``e``, or the known value of the let-bound variable ``e``."""
        if isinstance(e, Var) and e in self.known:
            return self.known[e]
        return e

    def _match(self, pattern: Pattern, e: Expr, shared: bool
               ) -> list[tuple[Var, Expr]] | None:
        """Bindings of ``pattern`` against the expression ``e`` (None: no
        match; _Unknown: undecidable).  ``shared``: ``e`` is part of a
        let-bound value, already evaluated, so only an atom may be bound
        (binding more would evaluate it again).  Patterns are shallow, so
        this recursion is bounded by the pattern's depth."""
        if isinstance(pattern, PatternWildcard):
            return []
        if isinstance(pattern, PatternVar):
            if shared and not _is_atom(e):
                raise _Unknown
            return [(pattern.var, e)]
        value = self._resolve(e)
        shared = shared or value is not e
        if isinstance(pattern, PatternConstructor):
            if not (isinstance(value, Call) and isinstance(value.op, Constructor)):
                raise _Unknown
            if not _same_constructor(value.op, pattern.constructor):
                return None
            parts = value.args
        else:
            assert isinstance(pattern, PatternTuple), pattern
            if not isinstance(value, Tuple):
                raise _Unknown
            parts = value.fields
        assert len(parts) == len(pattern.patterns), (pattern, value)
        out: list[tuple[Var, Expr]] = []
        for sub, part in zip(pattern.patterns, parts):
            got = self._match(sub, part, shared)
            if got is None:
                return None
            out.extend(got)
        return out

    def _loses_nothing(self, data: Expr, bindings: list[tuple[Var, Expr]]) -> bool:
        """Every part of the scrutinee expression ``data`` that is not
        inert is bound (so evaluated once by the lets) by the chosen
        clause."""
        bound = {id(part) for _, part in bindings}
        stack = [data]
        while stack:
            e = stack.pop()
            if id(e) in bound or _is_inert(e):
                continue
            if isinstance(e, Tuple):
                stack.extend(e.fields)
            elif isinstance(e, Call) and isinstance(e.op, Constructor):
                stack.extend(e.args)
            else:
                return False
        return True


register_pass("FoldConstant", opt_level=1, options=FoldConstantOptions)(fold_constant)
