"""A small writer of TFLite flatbuffers for the test models, on the
generated builder functions of the ``tflite`` package (the official schema's
Python code) and ``flatbuffers``.

::

    w = ModelWriter()
    x = w.tensor("x", (1, 4), "float32")
    y = w.tensor("y", (1, 4), "float32")
    w.op("RELU", [x], [y])
    data = w.to_bytes([x], [y])

Options are given as ``("Conv2DOptions", {"padding": 0, "stride_w": 1})``:
each key is the schema's field name (``stride_w`` -> ``Conv2DOptionsAddStrideW``);
a list value becomes an int32 vector.  The output is deterministic: the
same calls give the same bytes.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Sequence

import flatbuffers
import numpy as np
import tflite
from tflite.BuiltinOperator import BuiltinOperator
from tflite.BuiltinOptions import BuiltinOptions
from tflite.TensorType import TensorType

DTYPES = {"float32": TensorType.FLOAT32, "int8": TensorType.INT8, "uint8": TensorType.UINT8,
          "bool": TensorType.BOOL,
          "int32": TensorType.INT32, "int64": TensorType.INT64, "int16": TensorType.INT16}

#: alignment of constant buffers (TFLite's converter aligns them to 16)
_BUFFER_ALIGN = 16


@dataclass
class _Tensor:
    name: str
    shape: tuple[int, ...]
    dtype: str
    buffer: int
    scale: np.ndarray | None
    zero_point: np.ndarray | None
    axis: int
    signature: tuple[int, ...] | None


@dataclass
class _Op:
    opcode: int
    inputs: list[int]
    outputs: list[int]
    options: tuple[str, dict[str, Any]] | None


@dataclass
class ModelWriter:
    tensors: list[_Tensor] = field(default_factory=list)
    ops: list[_Op] = field(default_factory=list)
    buffers: list[bytes] = field(default_factory=lambda: [b""])
    #: (builtin code, custom code)
    opcodes: list[tuple[int, str | None]] = field(default_factory=list)
    #: the other subgraphs (IF branches, WHILE condition and body), index 1 on:
    #: (writer of its tensors and operators, inputs, outputs)
    subgraphs: list[tuple["ModelWriter", list[int], list[int]]] = field(default_factory=list)

    def subgraph(self) -> "ModelWriter":
        """A writer for the tensors and operators of another subgraph
        (sharing this model's buffers and operator codes)."""
        return ModelWriter(buffers=self.buffers, opcodes=self.opcodes)

    def add_subgraph(self, sub: "ModelWriter", inputs: Sequence[int],
                     outputs: Sequence[int]) -> int:
        """Add ``sub`` (from :meth:`subgraph`) as a subgraph; its index."""
        self.subgraphs.append((sub, list(inputs), list(outputs)))
        return len(self.subgraphs)

    def tensor(self, name: str, shape: Sequence[int], dtype: str, data: np.ndarray | None = None,
               scale: Sequence[float] | float | None = None,
               zero_point: Sequence[int] | int | None = None, axis: int = 0,
               signature: Sequence[int] | None = None) -> int:
        """A tensor (a constant when ``data`` is given); its index."""
        buffer = 0
        if data is not None:
            arr = np.array(data, dtype=np.dtype(dtype), order="C")
            assert arr.shape == tuple(shape), (name, arr.shape, shape)
            self.buffers.append(arr.astype(arr.dtype.newbyteorder("<")).tobytes())
            buffer = len(self.buffers) - 1
        s = None if scale is None else np.atleast_1d(np.asarray(scale, np.float32))
        z = None if scale is None else np.atleast_1d(np.asarray(
            0 if zero_point is None else zero_point, np.int64))
        if s is not None and z is not None and z.size == 1 and s.size > 1:
            z = np.repeat(z, s.size)
        self.tensors.append(_Tensor(name, tuple(int(d) for d in shape), dtype, buffer, s, z,
                                    axis, None if signature is None else tuple(signature)))
        return len(self.tensors) - 1

    def op(self, name: str, inputs: Sequence[int], outputs: Sequence[int],
           options: tuple[str, dict[str, Any]] | None = None,
           custom_code: str | None = None) -> None:
        key = (getattr(BuiltinOperator, name), custom_code)
        if key not in self.opcodes:
            self.opcodes.append(key)
        self.ops.append(_Op(self.opcodes.index(key), list(inputs), list(outputs), options))

    # ------------------------------------------------------------ output
    def to_bytes(self, inputs: Sequence[int], outputs: Sequence[int], version: int = 3) -> bytes:
        b = flatbuffers.Builder(1024)
        buffers = [self._buffer(b, data) for data in self.buffers]
        graphs = []
        for w, ins, outs in [(self, list(inputs), list(outputs)), *self.subgraphs]:
            tensors = [self._tensor(b, t) for t in w.tensors]
            ops = [w._op(b, op) for op in w.ops]
            graphs.append(self._subgraph(b, tensors, ops, ins, outs))
        opcodes = [self._opcode(b, code, custom) for code, custom in self.opcodes]
        description = b.CreateString("aot test model")
        opcode_vec = _offsets(b, tflite.ModelStartOperatorCodesVector, opcodes)
        subgraph_vec = _offsets(b, tflite.ModelStartSubgraphsVector, graphs)
        buffer_vec = _offsets(b, tflite.ModelStartBuffersVector, buffers)
        tflite.ModelStart(b)
        tflite.ModelAddVersion(b, version)
        tflite.ModelAddOperatorCodes(b, opcode_vec)
        tflite.ModelAddSubgraphs(b, subgraph_vec)
        tflite.ModelAddDescription(b, description)
        tflite.ModelAddBuffers(b, buffer_vec)
        b.Finish(tflite.ModelEnd(b), file_identifier=b"TFL3")
        return bytes(b.Output())

    @staticmethod
    def _buffer(b: flatbuffers.Builder, data: bytes) -> int:
        vec = None
        if data:
            b.StartVector(1, len(data), _BUFFER_ALIGN)
            b.head -= len(data)
            b.Bytes[b.head:b.head + len(data)] = data
            vec = b.EndVector()
        tflite.BufferStart(b)
        if vec is not None:
            tflite.BufferAddData(b, vec)
        return tflite.BufferEnd(b)

    @staticmethod
    def _tensor(b: flatbuffers.Builder, t: _Tensor) -> int:
        name = b.CreateString(t.name)
        shape = b.CreateNumpyVector(np.asarray(t.shape, np.int32))
        signature = None if t.signature is None else \
            b.CreateNumpyVector(np.asarray(t.signature, np.int32))
        quant = None
        if t.scale is not None:
            scale = b.CreateNumpyVector(t.scale)
            zp = b.CreateNumpyVector(t.zero_point)
            tflite.QuantizationParametersStart(b)
            tflite.QuantizationParametersAddScale(b, scale)
            tflite.QuantizationParametersAddZeroPoint(b, zp)
            tflite.QuantizationParametersAddQuantizedDimension(b, t.axis)
            quant = tflite.QuantizationParametersEnd(b)
        tflite.TensorStart(b)
        tflite.TensorAddShape(b, shape)
        if signature is not None:
            tflite.TensorAddShapeSignature(b, signature)
        tflite.TensorAddType(b, DTYPES[t.dtype])
        tflite.TensorAddBuffer(b, t.buffer)
        tflite.TensorAddName(b, name)
        if quant is not None:
            tflite.TensorAddQuantization(b, quant)
        return tflite.TensorEnd(b)

    @staticmethod
    def _options(b: flatbuffers.Builder, kind: str, fields: dict[str, Any]) -> int:
        module = importlib.import_module(f"tflite.{kind}")
        vectors = {k: b.CreateNumpyVector(np.asarray(v, np.int32))
                   for k, v in fields.items() if isinstance(v, (list, tuple))}
        getattr(module, f"{kind}Start")(b)
        for key, value in fields.items():
            camel = "".join(part.capitalize() for part in key.split("_"))
            getattr(module, f"{kind}Add{camel}")(b, vectors.get(key, value))
        return getattr(module, f"{kind}End")(b)

    def _op(self, b: flatbuffers.Builder, op: _Op) -> int:
        options = None if op.options is None else self._options(b, *op.options)
        inputs = b.CreateNumpyVector(np.asarray(op.inputs, np.int32))
        outputs = b.CreateNumpyVector(np.asarray(op.outputs, np.int32))
        tflite.OperatorStart(b)
        tflite.OperatorAddOpcodeIndex(b, op.opcode)
        tflite.OperatorAddInputs(b, inputs)
        tflite.OperatorAddOutputs(b, outputs)
        if options is not None:
            tflite.OperatorAddBuiltinOptionsType(b, getattr(BuiltinOptions, op.options[0]))
            tflite.OperatorAddBuiltinOptions(b, options)
        return tflite.OperatorEnd(b)

    @staticmethod
    def _subgraph(b: flatbuffers.Builder, tensors: list[int], ops: list[int],
                  inputs: Sequence[int], outputs: Sequence[int]) -> int:
        tensor_vec = _offsets(b, tflite.SubGraphStartTensorsVector, tensors)
        op_vec = _offsets(b, tflite.SubGraphStartOperatorsVector, ops)
        in_vec = b.CreateNumpyVector(np.asarray(inputs, np.int32))
        out_vec = b.CreateNumpyVector(np.asarray(outputs, np.int32))
        name = b.CreateString("main")
        tflite.SubGraphStart(b)
        tflite.SubGraphAddTensors(b, tensor_vec)
        tflite.SubGraphAddInputs(b, in_vec)
        tflite.SubGraphAddOutputs(b, out_vec)
        tflite.SubGraphAddOperators(b, op_vec)
        tflite.SubGraphAddName(b, name)
        return tflite.SubGraphEnd(b)

    @staticmethod
    def _opcode(b: flatbuffers.Builder, code: int, custom: str | None) -> int:
        custom_vec = None if custom is None else b.CreateString(custom)
        tflite.OperatorCodeStart(b)
        # readers take max(builtin_code, deprecated_builtin_code); the
        # deprecated int8 field saturates at 127 (PLACEHOLDER_FOR_GREATER_OP_CODES)
        tflite.OperatorCodeAddDeprecatedBuiltinCode(b, min(code, 127))
        tflite.OperatorCodeAddBuiltinCode(b, code)
        tflite.OperatorCodeAddVersion(b, 1)
        if custom_vec is not None:
            tflite.OperatorCodeAddCustomCode(b, custom_vec)
        return tflite.OperatorCodeEnd(b)


def _offsets(b: flatbuffers.Builder, start: Any, items: list[int]) -> int:
    start(b, len(items))
    for item in reversed(items):
        b.PrependUOffsetTRelative(item)
    return b.EndVector()
