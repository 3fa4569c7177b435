"""The ONNX importer: ``from_onnx(model) -> IRModule``.

::

    mod = from_onnx("model.onnx", input_shapes={"input": (1, 3, 96, 96)})

``@main`` has one parameter per graph input that is not an initializer (in
graph order, names sanitized to IR identifiers), the initializers and
Constant nodes become constants, and it returns the single graph output or
a tuple of the outputs in graph order.  Free dimensions of graph inputs
(symbolic, or without a value) must be fixed by ``input_shapes`` (the CLI's
``--input-shape NAME=1,3,96,96``): the compiler plans memory statically.
A dimension 0 is taken literally (an empty tensor, as the ONNX test suite
uses it), but ``input_shapes`` may override it, for exporters that write 0
for "unknown".

Supported: the default ONNX domain at opsets 11 to 21, and later opsets for
operators whose newer schemas only widened their types; see
:mod:`.registry`.  Every problem is a
:class:`~aot.diagnostics.DiagnosticError` naming the file and the node
(``model.onnx: error: node 'conv1' (Conv): ...``), never a traceback.

This package imports ``onnx`` (an optional dependency); ``import aot``
does not import it.
"""

from __future__ import annotations

import os
from typing import Mapping, Sequence, Union

import onnx

from ...ir.module import IRModule
from ...ir.types import TensorType
from .dtypes import onnx_type_name, to_dtype
from ..errors import file_error, file_errors
from .graph import MIN_OPSET, default_opset, import_graph
from .sequence_loop import rewrite_sequence_loops

ModelLike = Union[str, "os.PathLike[str]", bytes, onnx.ModelProto]

__all__ = ["from_onnx", "load_model"]


def from_onnx(model: ModelLike, *, input_shapes: Mapping[str, Sequence[int]] | None = None,
              source_name: str | None = None) -> IRModule:
    """Import an ONNX model (a path, the serialized bytes or a
    ``ModelProto``) as a typed module.  ``input_shapes`` maps graph input
    names to full static shapes, fixing their free dimensions."""
    from ...ir.type_infer import infer_types
    proto, source = load_model(model, source_name)
    proto = rewrite_sequence_loops(proto)
    input_types = _input_types(proto, source, dict(input_shapes or {}))
    mod = import_graph(proto, source, input_types)
    return infer_types(mod)


def load_model(model: ModelLike, source_name: str | None = None) -> tuple[onnx.ModelProto, str]:
    """The checked ``ModelProto`` and the name diagnostics use for it."""
    if isinstance(model, onnx.ModelProto):
        source = source_name or "<onnx>"
        proto = model
    elif isinstance(model, (bytes, bytearray)):
        source = source_name or "<onnx>"
        try:
            proto = onnx.load_from_string(bytes(model))
        except Exception as exc:  # noqa: BLE001 - protobuf raises several kinds
            raise file_error(source, f"cannot read the ONNX model: {_first_line(exc)}") from None
    elif isinstance(model, (str, os.PathLike)):
        source = source_name or os.fspath(model)
        try:
            proto = onnx.load(os.fspath(model))
        except OSError as exc:
            raise file_error(source, f"cannot read: {exc.strerror or exc}") from None
        except Exception as exc:  # noqa: BLE001 - protobuf raises several kinds
            raise file_error(source, f"cannot read the ONNX model: {_first_line(exc)}") from None
    else:
        raise TypeError(f"from_onnx expects a path, bytes or onnx.ModelProto, "
                        f"got {type(model).__name__}")
    try:
        onnx.checker.check_model(proto)
    except Exception as exc:  # noqa: BLE001 - ValidationError and protobuf errors
        raise file_error(source, f"the model is not valid ONNX: {_first_line(exc)}") from None
    opset = default_opset(proto)
    if opset is None:
        raise file_error(source, "the model does not import the default ONNX operator set")
    if opset < MIN_OPSET:
        raise file_error(source, f"the model uses opset {opset}; the importer supports opset "
                         f"{MIN_OPSET} and later (convert it with "
                         "onnx.version_converter.convert_version)")
    newest = onnx.defs.onnx_opset_version()
    if opset > newest:
        # the schemas of an opset the onnx package does not know are
        # unknown: its operators could mean anything
        raise file_error(source, f"the model uses opset {opset}, newer than the newest the "
                         f"installed onnx package knows ({newest}); the meaning of its "
                         "operators is unknown (upgrade onnx, or export at an older opset)")
    return proto, source


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[0] if lines else type(exc).__name__


def _input_types(model: onnx.ModelProto, source: str,
                 given: dict[str, Sequence[int]]) -> dict[str, TensorType]:
    """The static type of every graph input that is not an initializer."""
    graph = model.graph
    initialized = {t.name for t in graph.initializer}
    errors: list[str] = []
    out: dict[str, TensorType] = {}
    inputs = [i for i in graph.input if i.name not in initialized]
    known = {i.name for i in inputs}
    for name in sorted(set(given) - known):
        listed = ", ".join(f"'{n}'" for n in known) or "none"
        errors.append(f"a shape is given for '{name}', which is not a graph input "
                      f"(inputs: {listed})")
    for inp in inputs:
        t, message = _input_type(inp, given.get(inp.name))
        if message is not None:
            errors.append(message)
        elif t is not None:
            out[inp.name] = t
    if errors:
        raise file_errors(source, errors)
    return out


def _input_type(inp: onnx.ValueInfoProto,
                given: Sequence[int] | None) -> tuple[TensorType | None, str | None]:
    name = inp.name
    kind = inp.type.WhichOneof("value")
    if kind != "tensor_type":
        return None, (f"input '{name}' is a {kind or 'value without type'}; "
                      "only tensors are supported")
    tt = inp.type.tensor_type
    dtype = to_dtype(tt.elem_type)
    if dtype is None:
        return None, (f"input '{name}' has element type {onnx_type_name(tt.elem_type)}, "
                      "which is not supported")
    dims: list[int | str | None] | None = None
    if tt.HasField("shape"):
        dims = []
        for d in tt.shape.dim:
            if d.HasField("dim_value") and d.dim_value >= 0:
                dims.append(int(d.dim_value))
            elif d.HasField("dim_param") and d.dim_param:
                dims.append(d.dim_param)
            else:
                dims.append(None)
    shown = "unknown rank" if dims is None else \
        "(" + ", ".join("?" if d is None else str(d) for d in dims) + ")"
    if given is not None:
        shape = tuple(int(d) for d in given)
        if any(d < 0 for d in shape):
            return None, f"the shape given for input '{name}' has a negative dimension {shape}"
        if dims is not None:
            if len(dims) != len(shape):
                return None, (f"the shape {shape} given for input '{name}' has rank "
                              f"{len(shape)}, but the model declares rank {len(dims)} {shown}")
            for axis, (d, g) in enumerate(zip(dims, shape)):
                if isinstance(d, int) and d != g and d != 0:
                    return None, (f"the shape {shape} given for input '{name}' conflicts with "
                                  f"the model, which fixes axis {axis} to {d} {shown}")
        return TensorType(shape, dtype), None
    if dims is None or not all(isinstance(d, int) for d in dims):
        example = ",".join(str(d) if isinstance(d, int) else "N" for d in (dims or ["N"]))
        return None, (f"input '{name}' has the dynamic shape {shown}: fix it with "
                      f"--input-shape {name}={example} (input_shapes in Python)")
    return TensorType(tuple(dims), dtype), None  # type: ignore[arg-type]
