"""Importing a TFLite subgraph: the walk over the operators and what a
converter sees of one (:class:`Op`).

Design note
-----------
TFLite stores operators in execution order over numbered tensors.  The
walk keeps, per tensor index, the IR expression computing it (graph
inputs are ``@main``'s parameters, tensors with a buffer are constants,
made when first used) and hands each operator to its converter
(:mod:`.registry`).  Expressions are typed as they are built by the
importers' shared :class:`~aot.frontend.context.Context`, so converters
know every shape and dtype.

TFLite tensors carry their static shapes, dtypes and quantization
parameters; after each operator the walk checks that what the converter
built has exactly the shape and dtype the model declares for every output
tensor.  A model that lies about a shape, or a converter that misreads an
option, is reported against the operator instead of surfacing later as a
wrong result.

*Errors.*  Before converting anything, every operator is checked (custom
operators, operators without a converter, tensors with a dynamic shape
or a type the IR lacks) and all problems are reported together, each
naming the operator: ``model.tflite: error: operator #3 (CUSTOM 'MyOp'):
custom operators are not supported``.  A converter rejects an operator by
raising through :meth:`Op.error`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...diagnostics import node_span
from ...ir.expr import Expr, Var
from ...ir.module import IRModule
from ...ir.types import TensorType
from ..context import Context, ContextUser
from ..errors import ConvertError, file_error, file_errors
from ..names import entry_module, sanitize_names
from .reader import ModelData, OperatorInfo, QuantInfo, TensorInfo
from .registry import ConvertFn, lookup


class Op(ContextUser):
    """One TFLite operator as its converter sees it."""

    def __init__(self, ctx: Context, info: OperatorInfo, model: ModelData,
                 values: dict[int, Expr]) -> None:
        self.ctx = ctx
        self.info = info
        self.name = info.name
        self._model = model
        self._values = values
        #: the whole model (its subgraphs) and the subgraphs being converted
        self.root = model
        self.active: tuple[int, ...] = ()

    # ---------------------------------------------------------- inputs
    def has(self, i: int) -> bool:
        return i < len(self.info.inputs) and self.info.inputs[i] >= 0

    def tensor(self, i: int) -> TensorInfo:
        """The tensor of input ``i``."""
        if not self.has(i):
            raise self.error(f"input #{i} is required")
        return self._model.tensors[self.info.inputs[i]]

    def output(self, j: int = 0) -> TensorInfo:
        return self._model.tensors[self.info.outputs[j]]

    def input(self, i: int) -> Expr:
        t = self.tensor(i)
        e = self._values.get(t.index)
        if e is None:
            if t.data is None:
                raise self.error(f"input tensor '{t.name}' is not computed before the operator")
            e = self._values[t.index] = self.ctx.constant(t.data)
        return e

    def const(self, i: int, what: str) -> np.ndarray:
        """The value of input ``i``, which must be a constant tensor."""
        t = self.tensor(i)
        if t.data is None:
            raise self.error(f"the {what} (tensor '{t.name}') must be a constant")
        return t.data

    def quant(self, t: TensorInfo) -> QuantInfo:
        """The quantization of ``t``, which must have one."""
        if t.quant is None:
            raise self.error(f"tensor '{t.name}' ({t.type_name}) has no quantization parameters")
        return t.quant

    def option(self, name: str, default: Any = None) -> Any:
        return self.info.options.get(name, default)

    def subgraph(self, option: str, inputs: list[Expr]) -> list[Expr]:
        """The outputs of the subgraph whose index is the option ``option``
        (IF's branches, WHILE's condition and body), converted with its
        inputs bound to ``inputs``."""
        index = self.option(option)
        graphs = self.root.subgraphs
        if not isinstance(index, int) or not 0 < index < len(graphs):
            raise self.error(f"{option}={index} names no subgraph (the model has "
                             f"{max(len(graphs), 1)})")
        if index in self.active:
            raise self.error(f"subgraph {index} calls itself; recursion is not supported")
        graph = graphs[index]
        if len(graph.inputs) != len(inputs):
            raise self.error(f"subgraph {index} takes {len(graph.inputs)} inputs, given "
                             f"{len(inputs)}")
        for k, e in zip(graph.inputs, inputs):
            t = graph.tensors[k]
            if (self.shape(e), self.dtype(e)) != (t.shape, t.dtype):
                raise self.error(f"subgraph {index} declares input '{t.name}' as "
                                 f"{t.dtype}{list(t.shape)}, given {self.dtype(e)}"
                                 f"{list(self.shape(e))}")
        return convert_graph(self.ctx, graph, self.root, dict(zip(graph.inputs, inputs)),
                             (*self.active, index))



# ============================================================ graph walk

def _check_operator(info: OperatorInfo, model: ModelData) -> list[str]:
    """Why ``info`` cannot be imported (empty when it can)."""
    label = info.label
    if info.custom_code is not None:
        return [f"{label}: custom operators are not supported"]
    if lookup(info.name) is None:
        return [f"{label}: unsupported operator {info.name}"]
    problems = []
    for k in list(info.inputs) + list(info.outputs):
        if k < 0:
            continue
        if k >= len(model.tensors):
            problems.append(f"{label}: refers to tensor {k}, but the subgraph has "
                            f"{len(model.tensors)}")
            continue
        t = model.tensors[k]
        if t.is_dynamic:
            problems.append(f"{label}: tensor '{t.name}' has a dynamic shape (shape_signature "
                            f"{list(t.signature or ())}); only static shapes are supported")
        elif t.dtype is None:
            problems.append(f"{label}: tensor '{t.name}' has type {t.type_name}, which is not "
                            "supported")
    return problems


def _plan(model: ModelData, source: str) -> list[tuple[OperatorInfo, ConvertFn]]:
    errors: list[str] = []
    planned = []
    for info in model.operators:
        problems = _check_operator(info, model)
        errors.extend(problems)
        if not problems:
            fn = lookup(info.name)
            assert fn is not None
            planned.append((info, fn))
    for k in model.inputs + model.outputs:
        if not 0 <= k < len(model.tensors):
            errors.append(f"the subgraph's inputs or outputs refer to tensor {k}, which does "
                          "not exist")
    if errors:
        raise file_errors(source, errors)
    return planned


def _params(ctx: Context, model: ModelData, source: str) -> list[Var]:
    params = []
    tensors = [model.tensors[k] for k in model.inputs]
    for t, name in zip(tensors, sanitize_names([t.name for t in tensors])):
        if t.is_dynamic or t.dtype is None:
            what = f"a dynamic shape (shape_signature {list(t.signature or ())})" \
                if t.is_dynamic else f"type {t.type_name}"
            raise file_error(source, f"input tensor '{t.name}' has {what}, which is not "
                             "supported")
        params.append(ctx.param(name, TensorType(t.shape, t.dtype), t.name))
    return params


def import_model(model: ModelData, source: str) -> IRModule:
    """The module of a read model (see :func:`aot.frontend.tflite.from_tflite`)."""
    _plan(model, source)
    ctx = Context(source)
    params = _params(ctx, model, source)
    outputs = convert_graph(ctx, model, model, dict(zip(model.inputs, params)), ())
    if not outputs:
        raise file_error(source, "the graph has no outputs")
    return entry_module(params, outputs, [model.tensors[k].name for k in model.outputs])


def convert_graph(ctx: Context, graph: ModelData, root: ModelData, values: dict[int, Expr],
                  active: tuple[int, ...]) -> list[Expr]:
    """The outputs of ``graph`` (the main graph or a subgraph of ``root``)
    with its inputs bound in ``values``; ``active`` the subgraphs being
    converted around it."""
    source = ctx.source
    saved = ctx.span
    for info, fn in _plan(graph, source):
        _convert(ctx, info, fn, graph, values, root, active)
    ctx.span = saved
    outputs = []
    for k in graph.outputs:
        t = graph.tensors[k]
        if k not in values and t.data is None:
            raise file_error(source, f"graph output '{t.name}' is not computed by any operator")
        outputs.append(values[k] if k in values else ctx.constant(t.data))
    return outputs


def _convert(ctx: Context, info: OperatorInfo, fn: ConvertFn, model: ModelData,
             values: dict[int, Expr], root: ModelData, active: tuple[int, ...]) -> None:
    op = Op(ctx, info, model, values)
    op.root, op.active = root, active
    # TFLite operators have no names: an operator is known by its first
    # output tensor's (as Netron and the TFLite tools show it)
    named = next((model.tensors[k].name for k in info.outputs if model.tensors[k].name), "")
    ctx.span = node_span(ctx.source, named or info.label)
    try:
        results = list(fn(op))
        assert len(results) == len(info.outputs), (info.label, len(results))
        for k, e in zip(info.outputs, results):
            _check_output(op, model.tensors[k], e)
    except ConvertError as exc:
        raise file_error(ctx.source, f"{info.label}: {exc.message}") from None
    finally:
        ctx.span = None
    for k, e in zip(info.outputs, results):
        values[k] = e


def _check_output(op: Op, t: TensorInfo, e: Expr) -> None:
    shape, dtype = op.shape(e), op.dtype(e)
    if shape != t.shape or dtype != t.dtype:
        raise op.error(f"the model declares output '{t.name}' as {t.dtype}{list(t.shape)}, "
                       f"but the operator computes {dtype}{list(shape)}")
