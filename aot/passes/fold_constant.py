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

  - calls without arguments (``zeros``/``ones`` of a static shape): Relay's
    heuristic, folding them only trades a loop for a constant in flash;
  - calls whose evaluation fails on the data (an index out of range): the
    call stays and fails at run time, where the program would have;
  - calls of anything but an operator (globals, closures, constructors),
    which may recurse or have effects.

* ``let %x = <constant>; body`` -> ``body`` with ``%x`` replaced by the
  constant node (one shared node: a graph binding, not a copy).
* ``(a, b, ...).i`` of a Tuple node -> its field ``i`` when the other
  fields are *inert*: constants, variables, globals, operators,
  constructors, function literals or tuples of these, whose evaluation
  has no effect and cannot fail, so dropping them changes nothing.  This
  covers tuples of constants; Relay drops any field unconditionally.

Function parameters are variables, so nothing is folded *through* them;
function bodies are folded inside, as Relay does.  The catalogue has no
``shape_of``/``ndarray_size``, so there is nothing to fold from types
alone.  Folded constants take the span of the call they replace.  The
result is type-checked again (a folded call of a ``?``-shaped type gets
the constant's exact shape).
"""

from __future__ import annotations

import numpy as np

from ..diagnostics import DiagnosticError, Span
from ..interpreter import Interpreter
from ..ir.adt import Constructor
from ..ir.expr import (Call, Constant, Expr, Function, GlobalVar, Let, Op, Tuple, TupleGetItem,
                       Var)
from ..ir.module import IRModule
from ..ir.dtype import DType
from ..ir.types import TensorType, TupleType, Type
from ..ir.visitor import ExprMutator, Visit, rebuild
from ..values import Value
from .manager import register_pass

__all__ = ["fold_constant"]


def fold_constant(mod: IRModule) -> IRModule:
    """A new, typed module with every constant sub-computation folded."""
    from .type_infer import infer_types
    evaluator = Interpreter(IRModule())
    out = mod.copy()
    for gv, func in mod.functions.items():
        out.add(gv, _Folder(evaluator).visit(func))
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


def _is_inert(e: Expr) -> bool:
    """Evaluating ``e`` has no effect and cannot fail."""
    stack = [e]
    while stack:
        node = stack.pop()
        if isinstance(node, Tuple):
            stack.extend(node.fields)
        elif not isinstance(node, (Constant, Var, GlobalVar, Op, Constructor, Function)):
            return False
    return True


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


class _Folder(ExprMutator):
    def __init__(self, evaluator: Interpreter) -> None:
        super().__init__()
        self.evaluator = evaluator

    def visit_call(self, node: Call) -> Visit:
        new = yield from super().visit_call(node)
        if not isinstance(new.op, Op) or not new.args:
            return new
        if not all(is_constant(a) for a in new.args):
            return new
        try:
            value = self.evaluator.evaluate(new)
        except DiagnosticError:
            return new
        return _to_expr(value, node.span)

    def visit_let(self, node: Let) -> Visit:
        value = yield node.value
        if is_constant(value):
            self.memo[node.var] = value
            return (yield node.body)
        var = yield node.var
        body = yield node.body
        return rebuild(node, var=var, value=value, body=body)

    def visit_tuple_getitem(self, node: TupleGetItem) -> Visit:
        t = yield node.tuple_value
        if isinstance(t, Tuple) and all(_is_inert(f) for i, f in enumerate(t.fields)
                                        if i != node.index):
            return t.fields[node.index]
        return rebuild(node, tuple_value=t)


register_pass("FoldConstant", opt_level=1)(fold_constant)
