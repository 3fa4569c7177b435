"""Importing an ONNX graph: the walk over the nodes and the context the
converters build IR with.

Design note
-----------
The importer keeps, for every ONNX value name, the IR expression computing
it, and walks the nodes once in graph order (ONNX requires a topologically
sorted graph), handing each node to its converter (:mod:`.registry`).  The
expressions form one dataflow graph: a value used twice is one shared node
(a graph binding ``%0 = ...`` in the text format), so nothing is copied and
the walk is linear in the number of nodes.

*Types.*  Converters need the shapes and dtypes of their inputs (a Gemm
must know ranks, a Conv its input size for ``auto_pad``).  Every graph
input has a static shape (free dimensions must be fixed by
``input_shapes``) and every other leaf is a constant, so every type is
static and known while building: the importers' shared
:class:`~aot.frontend.context.Context` types each call on the spot by the
operator's own type relation.  A relation that rejects a call (a model
whose shapes do not broadcast, say) becomes a diagnostic naming the node.

*Constants.*  Many ONNX inputs must be known at import time because they
become attributes of IR operators (Reshape's shape, Slice's starts, the
axes of Unsqueeze and of the opset-18 reductions, Pad's pads ...).  They
come from initializers, Constant nodes, or subgraphs over them: PyTorch
exports ``Shape -> Gather -> Unsqueeze -> Concat -> Reshape``.  ``Shape``
of a value with a static type *is* a constant, so such chains end in
constants.  The context records, per expression, whether it depends on
constants only (one flag per node, set when the node is built); when a
converter asks for the value of such an expression (``Context.const_value``),
the reference interpreter evaluates it (the operators' NumPy references:
nothing is re-implemented) and the array is cached.  Nothing is folded
behind the converters' backs: an expression only used as an attribute
disappears from the program (nothing refers to it), and constant subgraphs
that stay in the program (a DequantizeLinear of int8 weights, say) are
left to the compiler's FoldConstant pass, which may or may not want them
folded.  (Shape, Size and Range produce constants directly: their values
decide types.)

*Errors.*  Before converting anything, every node's operator, domain and
schema version are checked and all unsupported nodes are reported
together.  A converter rejects a node by raising through
:meth:`Node.error`; the walk turns that into
``model.onnx: error: node 'conv1' (Conv): <why>``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import onnx
from onnx import numpy_helper

from ...diagnostics import node_span, warn
from ...ir.expr import Expr, Var
from ...ir.module import IRModule
from ...ir.types import TensorType
from ..context import Context, ContextUser
from ..errors import ConvertError, file_error, file_errors
from ..names import entry_module, sanitize_names
from .dtypes import onnx_type_name, to_dtype
from .registry import Converter, lookup, normalize_domain

#: the oldest default-domain opset the importer accepts
MIN_OPSET = 11


# =================================================================== node

def _attr_value(attr: onnx.AttributeProto) -> Any:
    value = onnx.helper.get_attribute_value(attr)
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, list) and value and isinstance(value[0], bytes):
        return [v.decode("utf-8", errors="replace") for v in value]
    return value


class Node(ContextUser):
    """One ONNX node as its converter sees it."""

    def __init__(self, ctx: Context, proto: onnx.NodeProto, label: str, version: int,
                 opset: int, inputs: list[Expr | None],
                 scope: dict[str, Expr] | None = None,
                 domains: dict[str, int] | None = None) -> None:
        self.ctx = ctx
        #: the values visible at the node (by ONNX name): what a subgraph
        #: attribute (If's branches, Loop's body) may refer to
        self.scope: dict[str, Expr] = scope if scope is not None else {}
        self.domains: dict[str, int] = domains if domains is not None else {"": opset}
        self.proto = proto
        self.label = label
        self.op_type = proto.op_type
        #: the since_version of the schema the model's opset selects
        self.version = version
        self.opset = opset
        self.inputs = inputs
        self.attrs: dict[str, Any] = {a.name: _attr_value(a) for a in proto.attribute}

    # ---------------------------------------------------------- inputs
    def has(self, i: int) -> bool:
        return i < len(self.inputs) and self.inputs[i] is not None

    def input(self, i: int) -> Expr:
        e = self.inputs[i] if i < len(self.inputs) else None
        if e is None:
            raise self.error(f"input #{i} is required")
        return e

    def optional(self, i: int) -> Expr | None:
        return self.inputs[i] if i < len(self.inputs) else None

    def const(self, i: int, what: str) -> np.ndarray:
        """The value of input ``i``, which must be a constant (an
        initializer, a Constant node, or a subgraph over them)."""
        e = self.input(i)
        value = self.ctx.const_value(e)
        if value is None:
            name = self.proto.input[i]
            raise self.error(f"the {what} (input '{name}') must be a constant: an initializer, "
                             "a Constant node or computed from them")
        return value

    def const_ints(self, i: int, what: str) -> list[int]:
        return [int(v) for v in np.asarray(self.const(i, what)).reshape(-1)]

    # ------------------------------------------------------- attributes
    def attr(self, name: str, default: Any = None) -> Any:
        return self.attrs.get(name, default)

    def unsupported(self, name: str, value: Any = None, why: str = "is not supported") -> \
            ConvertError:
        v = self.attrs.get(name) if value is None else value
        return self.error(f"{name}={_fmt_attr(v)} {why}")

    def rank(self, e: Expr) -> int:
        return len(self.ctx.shape(e))

    def subgraph(self, attr: str, inputs: list[Expr]) -> list[Expr]:
        """The outputs of the graph attribute ``attr`` converted with its
        inputs bound to ``inputs`` and the node's scope visible (see
        :func:`convert_subgraph`)."""
        graph = self.attrs.get(attr)
        if not isinstance(graph, onnx.GraphProto):
            raise self.error(f"the graph attribute '{attr}' is required")
        return convert_subgraph(self, graph, inputs)


def _fmt_attr(v: Any) -> str:
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(str(x) for x in v) + "]"
    return str(v)


# ============================================================ graph walk

@dataclass(frozen=True, slots=True)
class _Planned:
    proto: onnx.NodeProto
    label: str
    converter: Converter
    version: int


def node_label(proto: onnx.NodeProto, index: int) -> str:
    """How diagnostics name a node: ``node 'conv1' (Conv)``."""
    if proto.name:
        return f"node '{proto.name}' ({proto.op_type})"
    outs = [o for o in proto.output if o]
    if outs:
        return f"node #{index} ({proto.op_type}) producing '{outs[0]}'"
    return f"node #{index} ({proto.op_type})"


def node_name(proto: onnx.NodeProto) -> str:
    """How kernels and diagnostics name a node: its name, or (exporters
    leave it empty) its first output's, which viewers such as Netron show."""
    return proto.name or next((o for o in proto.output if o), proto.op_type)


def default_opset(model: onnx.ModelProto) -> int | None:
    for imp in model.opset_import:
        if normalize_domain(imp.domain) == "":
            return int(imp.version)
    return None


def _domains(model: onnx.ModelProto) -> dict[str, int]:
    return {normalize_domain(i.domain): int(i.version) for i in model.opset_import}


def _plan(nodes: Sequence[onnx.NodeProto], source: str, opset: int,
          domains: dict[str, int]) -> list[_Planned]:
    """Every node's converter and schema version; all problems at once."""
    errors: list[str] = []
    planned: list[_Planned] = []
    for index, proto in enumerate(nodes):
        label = node_label(proto, index)
        domain = normalize_domain(proto.domain)
        if domain != "":
            errors.append(f"{label}: operators of domain '{proto.domain}' are not supported "
                          "(only the default ONNX domain is)")
            continue
        try:
            version = int(onnx.defs.get_schema(proto.op_type, opset, domain).since_version)
        except onnx.defs.SchemaError:
            errors.append(f"{label}: {proto.op_type} is not an ONNX operator at opset {opset}")
            continue
        conv = lookup(proto.op_type, domain)
        if conv is None:
            errors.append(f"{label}: unsupported operator {proto.op_type}")
            continue
        if version not in conv.versions:
            listed = ", ".join(str(v) for v in conv.versions)
            errors.append(f"{label}: {proto.op_type} version {version} (selected by opset "
                          f"{domains.get(domain, opset)}) is not supported; supported versions: "
                          f"{listed}")
            continue
        planned.append(_Planned(proto, label, conv, version))
    if errors:
        raise file_errors(source, errors)
    return planned


def tensor_to_array(t: onnx.TensorProto, what: str) -> np.ndarray:
    """An initializer or tensor attribute as an array of an IR dtype."""
    dtype = to_dtype(t.data_type)
    if dtype is None:
        raise ConvertError(f"{what} has element type {onnx_type_name(t.data_type)}, "
                           "which is not supported")
    try:
        arr = numpy_helper.to_array(t)
    except Exception as exc:  # noqa: BLE001 - a malformed tensor in the file
        raise ConvertError(f"{what} cannot be read: {exc}") from None
    return np.asarray(arr, dtype=dtype.np)


def _check_declared_output(ctx: Context, out: onnx.ValueInfoProto, value: Expr) -> None:
    """A graph output declared with another element type or rank than the
    graph computes is an inconsistent model: an error.  Other static
    dimensions than computed are a warning, and the computed shape is used,
    as onnxruntime does: ONNX's own shape inference has written such
    declarations (pooling with ``ceil_mode`` before ONNX PR 5741).
    Symbolic and 0 dimensions, which exporters write for "unknown", are
    not compared."""
    if not out.type.HasField("tensor_type") or not isinstance(ctx.types.get(value), TensorType):
        return
    declared = out.type.tensor_type
    what = f"graph output '{out.name}' is declared with"
    want = to_dtype(declared.elem_type) if declared.elem_type else None
    if want is not None and want is not ctx.dtype(value):
        raise file_error(ctx.source, f"{what} element type {want}, the graph computes "
                                     f"{ctx.dtype(value)}")
    if not declared.HasField("shape"):
        return
    dims = [d.dim_value if d.HasField("dim_value") else None for d in declared.shape.dim]
    got = ctx.shape(value)
    shown = f"shape [{', '.join('?' if not d else str(d) for d in dims)}]"
    if len(dims) != len(got):
        raise file_error(ctx.source, f"{what} {shown}, the graph computes {list(got)}")
    if any(d and d != g for d, g in zip(dims, got)):
        warn(ctx.source, f"{what} {shown}, the graph computes {list(got)}: the computed "
                         "shape is used")


def import_graph(model: onnx.ModelProto, source: str,
                 input_types: dict[str, TensorType]) -> IRModule:
    """The module of a checked model whose graph inputs have the given
    (static) types; see :func:`aot.frontend.onnx.from_onnx`."""
    opset = default_opset(model)
    assert opset is not None and opset >= MIN_OPSET
    graph = model.graph
    domains = _domains(model)
    planned = _plan(graph.node, source, opset, domains)
    ctx = Context(source)
    values: dict[str, Expr] = {}
    for init in graph.initializer:
        try:
            values[init.name] = ctx.constant(tensor_to_array(init, f"initializer '{init.name}'"))
        except ConvertError as exc:
            raise file_error(source, exc.message) from None
    if len(graph.sparse_initializer):
        raise file_error(source, "sparse initializers are not supported")
    params: list[Var] = []
    names = sanitize_names(list(input_types))
    for (onnx_name, t), name in zip(input_types.items(), names):
        v = ctx.param(name, t, onnx_name)
        params.append(v)
        values[onnx_name] = v
    for item in planned:
        _convert_node(ctx, item, values, opset, domains)
    outputs: list[Expr] = []
    for out in graph.output:
        if out.name not in values:
            raise file_error(source, f"graph output '{out.name}' is not computed by any node")
        _check_declared_output(ctx, out, values[out.name])
        outputs.append(values[out.name])
    if not outputs:
        raise file_error(source, "the graph has no outputs")
    return entry_module(params, outputs, [out.name for out in graph.output])


def convert_subgraph(outer: Node, graph: onnx.GraphProto, inputs: list[Expr]) -> list[Expr]:
    """The outputs of ``graph``, a graph attribute of ``outer`` (If's
    branches, Loop's body), converted into the same context: its inputs
    are bound to ``inputs`` (expressions the caller built, usually the
    parameters of a function), its initializers become constants, and
    every value of ``outer``'s scope is visible by name (ONNX's outer-scope
    references; the subgraph's own names shadow them).  The result refers
    to outer values directly: the caller places it (an ``if`` branch, a
    function body), and closures capture what a function body uses."""
    ctx = outer.ctx
    if len(graph.input) != len(inputs):
        raise outer.error(f"the subgraph '{graph.name}' has {len(graph.input)} inputs, "
                          f"{len(inputs)} expected")
    values = dict(outer.scope)
    for init in graph.initializer:
        values[init.name] = ctx.constant(tensor_to_array(init, f"initializer '{init.name}'"))
    if len(graph.sparse_initializer):
        raise outer.error("sparse initializers are not supported")
    for inp, e in zip(graph.input, inputs):
        values[inp.name] = e
    planned = _plan(graph.node, ctx.source, outer.opset, outer.domains)
    for item in planned:
        _convert_node(ctx, item, values, outer.opset, outer.domains)
    outputs = []
    for out in graph.output:
        if out.name not in values:
            raise outer.error(f"output '{out.name}' of the subgraph '{graph.name}' is not "
                              "computed by any node")
        outputs.append(values[out.name])
    return outputs


def _convert_node(ctx: Context, item: _Planned, values: dict[str, Expr], opset: int,
                  domains: dict[str, int]) -> None:
    proto = item.proto
    inputs: list[Expr | None] = []
    for name in proto.input:
        if not name:
            inputs.append(None)
            continue
        if name not in values:
            raise file_error(ctx.source, f"{item.label}: input '{name}' is not defined before "
                             "the node")
        inputs.append(values[name])
    node = Node(ctx, proto, item.label, item.version, opset, inputs, values, domains)
    outer_span = ctx.span
    ctx.span = node_span(ctx.source, node_name(proto))
    try:
        results = list(item.converter.convert(node))
    except ConvertError as exc:
        raise file_error(ctx.source, f"{item.label}: {exc.message}") from None
    finally:
        ctx.span = outer_span
    for i, name in enumerate(proto.output):
        if not name:
            continue
        value = results[i] if i < len(results) else None
        if value is None:
            raise file_error(ctx.source, f"{item.label}: output #{i} ('{name}') is not "
                             "supported")
        values[name] = value
