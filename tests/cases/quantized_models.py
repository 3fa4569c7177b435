"""The MLPerf Tiny models (examples/mlperf_tiny/models.py) quantized by
onnxruntime's static quantizer, shared by the FakeQuantizationToInteger
tests (tests/passes) and the integer C tests (tests/e2e).

:func:`ort_quantized` is ``models.quantize_int8`` (pre-processed, QDQ,
int8 activations, per-channel int8 weights, int32 biases, calibrated on
four seeded standard-normal inputs; deterministic for one onnxruntime
version).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

MODELS_PY = Path(__file__).resolve().parents[2] / "examples" / "mlperf_tiny" / "models.py"


def mlperf_models() -> ModuleType:
    """examples/mlperf_tiny/models.py as a module."""
    spec = importlib.util.spec_from_file_location("mlperf_tiny_models_quantized", MODELS_PY)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def ort_quantized(name: str) -> tuple[Any, tuple[int, ...]]:
    """The QDQ int8 form of MLPerf Tiny model ``name`` (an
    ``onnx.ModelProto``, :func:`models.quantize_int8`) and its input shape."""
    models = mlperf_models()
    model = models.build(name)
    return models.quantize_int8(model), tuple(models.input_shape(model))
