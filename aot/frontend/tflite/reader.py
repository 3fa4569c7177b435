"""Reading a .tflite flatbuffer into plain Python data.

The file is read with the ``tflite`` package (the official schema's
generated Python code) in one place, eagerly: every tensor, buffer,
operator and builtin option the importer needs is copied into the frozen
records below.  A flatbuffer is read lazily by offsets, so a truncated or
corrupt file fails wherever an offset points outside the bytes; reading
everything here turns every such failure into one diagnostic
(``model.tflite: error: the file is truncated or corrupt ...``) instead of
a traceback from deep inside a converter.

Subgraph 0 is the model's main function; every subgraph is read (IF
and WHILE refer to the others by index: :attr:`ModelData.subgraphs`).
Builtin options become a dict keyed by the schema's field names in snake
case (``stride_w``, ``fused_activation_function``);
vector fields become lists.
"""

from __future__ import annotations

import importlib
import inspect
import re
import struct
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import tflite
from tflite.BuiltinOptions import BuiltinOptions
from tflite.TensorType import TensorType
from tflite.utils import BUILTIN_OPCODE2NAME

from ...diagnostics import DiagnosticError
from ...ir.dtype import DType
from ..errors import file_error

#: the schema version the importer reads (the only one TFLite writes)
SCHEMA_VERSION = 3
_IDENTIFIER = b"TFL3"

_TYPES: dict[int, DType] = {
    TensorType.FLOAT32: DType.FLOAT32, TensorType.FLOAT16: DType.FLOAT16,
    TensorType.FLOAT64: DType.FLOAT64, TensorType.INT8: DType.INT8,
    TensorType.UINT8: DType.UINT8, TensorType.INT16: DType.INT16,
    TensorType.UINT16: DType.UINT16, TensorType.INT32: DType.INT32,
    TensorType.UINT32: DType.UINT32, TensorType.INT64: DType.INT64,
    TensorType.UINT64: DType.UINT64, TensorType.BOOL: DType.BOOL,
}
_TYPE_NAMES = {v: k.lower() for k, v in vars(TensorType).items() if not k.startswith("_")}
_OPTION_NAMES = {v: k for k, v in vars(BuiltinOptions).items() if not k.startswith("_")}
_CUSTOM = 32


@dataclass(frozen=True, slots=True)
class QuantInfo:
    """Affine quantization: ``real = scale * (q - zero_point)``, per tensor
    (one value) or per index of ``axis`` (TFLite's quantized_dimension)."""

    scale: np.ndarray          # float32, 1-D
    zero_point: np.ndarray     # int64, 1-D, as long as scale
    axis: int

    @property
    def per_channel(self) -> bool:
        return self.scale.size > 1


@dataclass(frozen=True, slots=True)
class TensorInfo:
    index: int
    name: str
    shape: tuple[int, ...]
    #: shape_signature (-1 for a dynamic extent), None when absent
    signature: tuple[int, ...] | None
    #: None for a type the IR does not have (``type_name`` says which)
    dtype: DType | None
    type_name: str
    #: the constant value, None for activations and graph inputs
    data: np.ndarray | None
    quant: QuantInfo | None

    @property
    def is_dynamic(self) -> bool:
        return self.signature is not None and any(d < 0 for d in self.signature)


@dataclass(frozen=True, slots=True)
class OperatorInfo:
    index: int
    #: the builtin operator's name (``CONV_2D``), ``CUSTOM`` for custom ones
    name: str
    custom_code: str | None
    version: int
    #: tensor indices; -1 marks an omitted optional input
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """How diagnostics name the operator: ``operator #3 (CONV_2D)``."""
        what = f"CUSTOM '{self.custom_code}'" if self.custom_code is not None else self.name
        return f"operator #{self.index} ({what})"


@dataclass(frozen=True, slots=True)
class ModelData:
    tensors: tuple[TensorInfo, ...]
    operators: tuple[OperatorInfo, ...]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    #: every subgraph of the file by index (the main one's record only;
    #: each of these has no subgraphs of its own)
    subgraphs: tuple["ModelData", ...] = ()


def read_model(buf: bytes, source: str) -> ModelData:
    """The main subgraph of a .tflite file's bytes; DiagnosticError for
    anything that is not a readable TFLite model of schema version 3."""
    if len(buf) < 8 or buf[4:8] != _IDENTIFIER:
        raise file_error(source, "not a TFLite model (the file does not carry the TFL3 "
                         "flatbuffer identifier)")
    try:
        return _read(buf, source)
    except DiagnosticError:
        raise
    except (IndexError, ValueError, TypeError, struct.error, UnicodeDecodeError,
            OverflowError) as exc:
        raise file_error(source, f"the file is truncated or corrupt; the TFLite flatbuffer "
                         f"cannot be read ({type(exc).__name__}: {exc})") from None


def _read(buf: bytes, source: str) -> ModelData:
    model = tflite.Model.GetRootAs(buf, 0)
    version = model.Version()
    if version != SCHEMA_VERSION:
        raise file_error(source, f"the model has TFLite schema version {version}; only version "
                         f"{SCHEMA_VERSION} is supported")
    if model.SubgraphsLength() < 1:
        raise file_error(source, "the model has no subgraph")
    opcodes = [model.OperatorCodes(i) for i in range(model.OperatorCodesLength())]
    graphs = tuple(_subgraph(buf, model, model.Subgraphs(k), opcodes, source)
                   for k in range(model.SubgraphsLength()))
    main = graphs[0]
    return ModelData(main.tensors, main.operators, main.inputs, main.outputs,
                     graphs if len(graphs) > 1 else ())


def _subgraph(buf: bytes, model: Any, graph: Any, opcodes: list[Any], source: str) -> ModelData:
    tensors = tuple(_tensor(buf, model, graph.Tensors(i), i, source)
                    for i in range(graph.TensorsLength()))
    operators = tuple(_operator(graph.Operators(i), i, opcodes, source)
                      for i in range(graph.OperatorsLength()))
    return ModelData(tensors, operators, tuple(int(i) for i in _ints(graph, "Inputs")),
                     tuple(int(i) for i in _ints(graph, "Outputs")))


def _ints(obj: Any, name: str) -> list[int]:
    """A vector field as a list (the generated ``...AsNumpy`` gives 0 when
    the field is absent)."""
    if getattr(obj, f"{name}IsNone")():
        return []
    return [int(v) for v in getattr(obj, f"{name}AsNumpy")()]


def _tensor(buf: bytes, model: Any, t: Any, index: int, source: str) -> TensorInfo:
    name = (t.Name() or b"").decode("utf-8", errors="replace") or f"tensor{index}"
    shape = tuple(_ints(t, "Shape"))
    signature = tuple(_ints(t, "ShapeSignature")) if not t.ShapeSignatureIsNone() else None
    code = t.Type()
    dtype = _TYPES.get(code)
    data = _buffer(buf, model, t.Buffer(), dtype, shape, name, source)
    return TensorInfo(index, name, shape, signature, dtype,
                      _TYPE_NAMES.get(code, f"type {code}"), data, _quant(t.Quantization()))


def _buffer(buf: bytes, model: Any, index: int, dtype: DType | None, shape: tuple[int, ...],
            name: str, source: str) -> np.ndarray | None:
    if index == 0 or index >= model.BuffersLength():
        return None
    b = model.Buffers(index)
    if b.Offset() > 1:      # data stored after the flatbuffer (models over 2 GB)
        raw = buf[b.Offset():b.Offset() + b.Size()]
    elif b.DataIsNone():
        return None
    else:
        raw = b.DataAsNumpy().tobytes()
    if not raw:
        return None
    if dtype is None:
        raise file_error(source, f"the constant tensor '{name}' has a type the importer "
                         "does not support")
    want = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype.np).itemsize
    if len(raw) != want:
        raise file_error(source, f"the constant tensor '{name}' has {len(raw)} bytes of data; "
                         f"its shape {list(shape)} and type {dtype} need {want}")
    return np.frombuffer(raw, dtype=np.dtype(dtype.np).newbyteorder("<")) \
        .astype(dtype.np).reshape(shape)


def _quant(q: Any) -> QuantInfo | None:
    if q is None or q.ScaleIsNone() or q.ScaleLength() == 0:
        return None
    scale = np.asarray(q.ScaleAsNumpy(), np.float32).reshape(-1)
    zp = np.asarray(q.ZeroPointAsNumpy(), np.int64).reshape(-1) if not q.ZeroPointIsNone() \
        else np.zeros(0, np.int64)
    if zp.size == 0:
        zp = np.zeros(scale.size, np.int64)
    elif zp.size == 1 and scale.size > 1:
        zp = np.repeat(zp, scale.size)
    if zp.size != scale.size:
        raise ValueError(f"{scale.size} scales but {zp.size} zero points")
    return QuantInfo(scale, zp, int(q.QuantizedDimension()))


def _operator(op: Any, index: int, opcodes: list[Any], source: str) -> OperatorInfo:
    k = op.OpcodeIndex()
    if k >= len(opcodes):
        raise file_error(source, f"operator #{index} refers to operator code {k}, but the "
                         f"model has {len(opcodes)}")
    code = opcodes[k]
    builtin = max(int(code.BuiltinCode()), int(code.DeprecatedBuiltinCode()))
    name = BUILTIN_OPCODE2NAME.get(builtin, f"operator code {builtin}")
    custom = None
    if builtin == _CUSTOM:
        custom = (code.CustomCode() or b"").decode("utf-8", errors="replace")
    return OperatorInfo(index, name, custom, int(code.Version()), tuple(_ints(op, "Inputs")),
                        tuple(_ints(op, "Outputs")), _options(op))


_SKIP = re.compile(r"^(Init|GetRootAs.*|.*BufferHasIdentifier|.*Length|.*IsNone|.*AsNumpy)$")


def _options(op: Any) -> dict[str, Any]:
    """The builtin options table as ``{snake_case_field: value}``."""
    kind = _OPTION_NAMES.get(op.BuiltinOptionsType())
    table = op.BuiltinOptions()
    if kind is None or kind == "NONE" or table is None:
        return {}
    cls = getattr(importlib.import_module(f"tflite.{kind}"), kind)
    opts = cls()
    opts.Init(table.Bytes, table.Pos)
    out: dict[str, Any] = {}
    for attr, fn in vars(cls).items():
        if not callable(fn) or attr.startswith("_") or _SKIP.match(attr):
            continue
        key = re.sub(r"(?<!^)(?=[A-Z])", "_", attr).lower()
        if hasattr(cls, f"{attr}AsNumpy"):
            out[key] = _ints(opts, attr)
        elif len(inspect.signature(fn).parameters) == 1:
            out[key] = getattr(opts, attr)()
    return out
