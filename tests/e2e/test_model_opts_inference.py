"""SimplifyInference on a real model: what it changes in the generated C.

DS-CNN (MLPerf Tiny keyword spotting) has a batch norm after every
convolution.  Without SimplifyInference each is an ``nn.batch_norm``
kernel epilogue reading four per-channel tables (mean, variance, gamma,
beta) and computing ``1 / sqrt(var + eps)`` per element; with it the batch
norm is a multiply and an add that FoldScaleAxis then folds into the
convolution weights and bias: no batch_norm left, fewer constant bytes, a
smaller arena.  Both compiled programs compute the same within the
tolerance of tests/e2e/test_mlperf_tiny.py.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

import aot  # noqa: E402
from aot.passes.manager import PassContext  # noqa: E402

MODELS_PY = Path(__file__).resolve().parents[2] / "examples" / "mlperf_tiny" / "models.py"


def _models():
    spec = importlib.util.spec_from_file_location("mlperf_tiny_models_inference", MODELS_PY)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _ops(art) -> set[str]:
    return {op for k in art.metadata["kernels"] for op in k["ops"]}


def test_simplify_inference_on_ds_cnn(tmp_path):
    mod = aot.from_onnx(_models().ds_cnn())
    with PassContext(disabled=["SimplifyInference"]):
        plain = aot.compile(mod, tmp_path / "plain", name="plain")
    simplified = aot.compile(mod, tmp_path / "simplified", name="simplified")
    assert "nn.batch_norm" in _ops(plain)
    assert "nn.batch_norm" not in _ops(simplified)
    assert simplified.metadata["constant_bytes"] < plain.metadata["constant_bytes"]
    assert simplified.metadata["arena_bytes"] <= plain.metadata["arena_bytes"]
    x = np.random.default_rng(0).standard_normal((1, 1, 49, 10)).astype(np.float32)
    want, got = aot.load(plain)(x), aot.load(simplified)(x)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
