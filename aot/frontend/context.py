"""What importers build IR with: :class:`Context`, typed calls, constants
and the values of constant expressions.

Every graph input of an imported model has a static type and every other
leaf is a constant, so every type is static and known while building:
each call the context creates is typed on the spot by the operator's own
type relation (the registry's ``rel`` column, the same one type inference
runs) from the known types of its arguments.  The types live in a side
table keyed by node identity; the finished module is then type-checked
properly by ``infer_types``.  A relation that rejects a call becomes a
:class:`~aot.frontend.errors.ConvertError`, which the importer's graph
walk turns into a diagnostic naming the node.

The context also records, per expression, whether it depends on constants
only; :meth:`Context.const_value` evaluates such an expression with the
reference interpreter (nothing is re-implemented) and caches the array.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..diagnostics import DiagnosticError, Span, node_span
from ..interpreter import Interpreter
from ..ir.attrs import NO_ATTRS, AttrError, Attrs
from ..ir.dtype import DType
from ..ir.expr import Call, Constant, Expr, Tuple, TupleGetItem, Var, op
from ..ir.module import IRModule
from ..ir.registry import RelationError, Solved, lookup as lookup_op
from ..ir.types import TensorType, TupleType, Type
from .errors import ConvertError


class Context:
    """What converters build IR with: typed calls, constants, and the
    values of constant expressions."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.types: dict[Expr, Type] = {}
        #: expressions that depend on constants only
        self._constish: set[Expr] = set()
        self._values: dict[Expr, np.ndarray] = {}
        self._evaluator = Interpreter(IRModule())
        #: the span of the node being converted (its name in the model),
        #: given to every call and tuple built meanwhile
        self.span: Span | None = None

    # ------------------------------------------------------------ types
    def type_of(self, e: Expr) -> Type:
        return self.types[e]

    def tensor_type(self, e: Expr) -> TensorType:
        t = self.types[e]
        if not isinstance(t, TensorType):
            raise ConvertError(f"expected a tensor, got {t}")
        return t

    def shape(self, e: Expr) -> tuple[int, ...]:
        shape = self.tensor_type(e).shape
        assert all(isinstance(d, int) for d in shape), f"dynamic shape {shape}"
        return tuple(int(d) for d in shape)  # type: ignore[arg-type]

    def dtype(self, e: Expr) -> DType:
        return self.tensor_type(e).dtype

    # --------------------------------------------------------- building
    def constant(self, value: Any, dtype: DType | None = None) -> Constant:
        arr = np.asarray(value, dtype=dtype.np if dtype is not None else None)
        node = Constant(arr)
        self.types[node] = node.tensor_type
        self._constish.add(node)
        self._values[node] = node.data
        return node

    def param(self, name: str, t: TensorType, model_name: str = "") -> Var:
        """A parameter of ``@main``; ``model_name`` is the model's own name
        for it when ``name`` had to be made a C identifier (``input.1`` ->
        ``input_1``): its span carries it to the artifact's metadata, so a
        loaded model takes the input by either name."""
        span = node_span(self.source, model_name) if model_name and model_name != name else None
        v = Var(name, t, span=span)
        self.types[v] = t
        return v

    def call(self, op_name: str, args: Sequence[Expr], attrs: Attrs | None = None,
             **kwargs: Any) -> Expr:
        """``op_name(*args)`` with attributes ``attrs`` (or built from
        ``kwargs``), typed by the operator's relation."""
        op_def = lookup_op(op_name)
        assert op_def is not None, f"unknown operator {op_name}"
        if attrs is None:
            try:
                attrs = op_def.attrs_type.from_raw(kwargs) if kwargs else NO_ATTRS
            except AttrError as exc:
                raise ConvertError(f"{op_name}: {exc}") from None
        if attrs is NO_ATTRS and op_def.attrs_type is not Attrs:
            attrs = op_def.attrs_type()
        assert len(args) == op_def.arity, (op_name, len(args))
        try:
            out = op_def.rel([self.types[a] for a in args], attrs)
        except RelationError as exc:
            raise ConvertError(f"{op_name}: {exc}") from None
        if isinstance(out, Solved):
            out = out.out
        assert out is not None, f"{op_name}: relation gave no type for {args}"
        node = Call(op(op_name), tuple(args), attrs, span=self.span)
        self.types[node] = out
        if all(a in self._constish for a in args):
            self._constish.add(node)
        return node

    def make_tuple(self, fields: Sequence[Expr]) -> Expr:
        node = Tuple(tuple(fields), span=self.span)
        self.types[node] = TupleType(tuple(self.types[f] for f in fields))
        if all(f in self._constish for f in fields):
            self._constish.add(node)
        return node

    def get_item(self, tup: Expr, index: int) -> Expr:
        if isinstance(tup, Tuple):
            return tup.fields[index]
        t = self.types[tup]
        assert isinstance(t, TupleType), t
        node = TupleGetItem(tup, index, span=self.span)
        self.types[node] = t.fields[index]
        if tup in self._constish:
            self._constish.add(node)
        return node

    # -------------------------------------------------------- constants
    def is_constant(self, e: Expr) -> bool:
        return e in self._constish

    def const_value(self, e: Expr) -> np.ndarray | None:
        """The value of ``e`` when it depends on constants only, else None."""
        if e not in self._constish:
            return None
        value = self._values.get(e)
        if value is None:
            try:
                result = self._evaluator.evaluate(e)
            except DiagnosticError as exc:
                raise ConvertError(f"cannot evaluate a constant input: {exc.message}") from None
            assert isinstance(result, np.ndarray), type(result)
            value = self._values[e] = result
        return value


class ContextUser:
    """Base of what a converter is handed (an ONNX node, a TFLite
    operator): building IR through the shared :class:`Context`, and
    rejecting the node with :meth:`error`."""

    ctx: Context

    def error(self, message: str) -> ConvertError:
        return ConvertError(message)

    def call(self, op_name: str, args: Sequence[Expr], attrs: Attrs | None = None,
             **kwargs: Any) -> Expr:
        return self.ctx.call(op_name, args, attrs, **kwargs)

    def constant(self, value: Any, dtype: DType | None = None) -> Constant:
        return self.ctx.constant(value, dtype)

    def shape(self, e: Expr) -> tuple[int, ...]:
        return self.ctx.shape(e)

    def dtype(self, e: Expr) -> DType:
        return self.ctx.dtype(e)
