"""The TFLite importer: ``from_tflite(model) -> IRModule``.

::

    mod = from_tflite("model.tflite")

``@main`` has one parameter per input tensor of the model's main subgraph
(in order, names sanitized to IR identifiers), constant tensors become
constants, and it returns the single output tensor or a tuple of the
outputs in order.  Tensors keep TFLite's layouts: activations are NHWC,
convolutions import as ``nn.conv2d``/``qnn.conv2d`` with
``data_layout="NHWC"`` and ``kernel_layout="OHWI"`` (a depthwise kernel
``1HWO`` is the same bytes as ``HWOI`` with ``I = 1``), so nothing is
transposed.

Float32 models import as the float operators.  Quantized (int8, and
uint8 where TFLite has uint8 kernels) operators import as the IR's qnn
operators with TFLite's fixed-point arithmetic; those the IR has only in
float import as ``qnn.dequantize -> float operator -> qnn.quantize`` (the
"float fallback"; see :mod:`.ops.util` for the list and the
rounding differences it brings).

Every problem is a :class:`~aot.diagnostics.DiagnosticError` naming the
file and, where there is one, the operator and its index
(``model.tflite: error: operator #3 (SIN): unsupported operator SIN``),
never a traceback.  This package imports ``tflite`` (an optional
dependency, the official schema's generated reader); ``import aot`` does
not import it.
"""

from __future__ import annotations

import os
from typing import Union

from ...ir.module import IRModule
from ..errors import file_error
from .graph import import_model
from .reader import read_model

ModelLike = Union[str, "os.PathLike[str]", bytes]

__all__ = ["from_tflite"]


def from_tflite(model: ModelLike, *, source_name: str | None = None) -> IRModule:
    """Import a TFLite model (a path or the file's bytes) as a typed module."""
    from ...ir.type_infer import infer_types
    if isinstance(model, (bytes, bytearray)):
        source = source_name or "<tflite>"
        data = bytes(model)
    elif isinstance(model, (str, os.PathLike)):
        source = source_name or os.fspath(model)
        try:
            with open(os.fspath(model), "rb") as f:
                data = f.read()
        except OSError as exc:
            raise file_error(source, f"cannot read: {exc.strerror or exc}") from None
    else:
        raise TypeError(f"from_tflite expects a path or bytes, got {type(model).__name__}")
    return infer_types(import_model(read_model(data, source), source))
