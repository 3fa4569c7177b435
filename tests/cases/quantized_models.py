"""The MLPerf Tiny models (examples/mlperf_tiny/models.py) quantized by
onnxruntime's static quantizer, shared by the FakeQuantizationToInteger
tests (tests/passes) and the integer C tests (tests/e2e).

:func:`ort_quantized` pre-processes a model (``quant_pre_process``: batch
norms after convolutions folded) and quantizes it in QDQ format: int8
activations, per-channel int8 weights, int32 biases, calibrated on four
seeded standard-normal inputs.  The result is deterministic for one
onnxruntime version.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

MODELS_PY = Path(__file__).resolve().parents[2] / "examples" / "mlperf_tiny" / "models.py"


def mlperf_models() -> ModuleType:
    """examples/mlperf_tiny/models.py as a module."""
    spec = importlib.util.spec_from_file_location("mlperf_tiny_models_quantized", MODELS_PY)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def ort_quantized(name: str, tmp_path: Path) -> tuple[Any, tuple[int, ...]]:
    """The QDQ int8 form of MLPerf Tiny model ``name`` (an
    ``onnx.ModelProto``) and its input shape; the files go to ``tmp_path``."""
    import onnx
    from onnxruntime import quantization
    from onnxruntime.quantization.shape_inference import quant_pre_process

    models = mlperf_models()
    model = models.build(name)
    shape = tuple(models.input_shape(model))
    feed = model.graph.input[0].name

    class Reader(quantization.CalibrationDataReader):
        def __init__(self) -> None:
            self.batches = iter([{feed: np.random.default_rng(s).standard_normal(shape)
                                  .astype(np.float32)} for s in range(4)])

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self.batches, None)

    float_path, pre_path, q_path = (str(tmp_path / f"{name}_{n}.onnx") for n in ("f", "p", "q"))
    onnx.save(model, float_path)
    # Our models have static shapes: onnx's own shape inference is enough
    # (the symbolic one needs sympy, which onnxruntime no longer installs).
    quant_pre_process(float_path, pre_path, skip_symbolic_shape=True)
    quantization.quantize_static(pre_path, q_path, Reader(),
                                 quant_format=quantization.QuantFormat.QDQ, per_channel=True,
                                 activation_type=quantization.QuantType.QInt8,
                                 weight_type=quantization.QuantType.QInt8)
    return onnx.load(q_path), shape
