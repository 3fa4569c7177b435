"""Quantized TFLite SOFTMAX (``qnn.softmax``) bit-exact against LiteRT's
reference kernels (``OpResolverType.BUILTIN_REF``) over input scales,
beta and the three dtypes, on models written in memory; and the
parameters TFLite refuses are refused here.  The committed models
(``softmax_i8``, ``softmax_u8``, ``softmax_i16``, ``softmax_i16_beta``)
are also run in C by tests/frontend/test_tflite.py."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tflite")
litert = pytest.importorskip("ai_edge_litert.interpreter")

import aot  # noqa: E402
from aot.diagnostics import DiagnosticError  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent / "tflite_models"))
from writer import ModelWriter  # noqa: E402

#: (dtype, shape, input scale, input zero point, output scale, output zero point, beta)
CASES = [
    ("int8", (16, 10), 0.1, 3, 1 / 256, -128, 1.0),
    ("int8", (16, 7), 0.02, -5, 1 / 256, -128, 1.0),
    ("int8", (8, 33), 0.5, 0, 1 / 256, -128, 0.7),
    ("int8", (16, 10), 0.003, 0, 1 / 256, -128, 1.0),
    ("int8", (4, 3, 12), 1.7, 10, 1 / 256 * 1.0005, -128, 1.0),   # within TFLite's 0.1%
    ("uint8", (16, 10), 0.05, 128, 1 / 256, 0, 1.0),
    ("uint8", (16, 10), 0.2, 100, 0.01, 7, 1.3),   # LiteRT ignores uint8 output params
    ("int16", (16, 10), 0.001, 0, 1 / 32768, 0, 1.0),
    ("int16", (16, 10), 1e-4, 0, 1 / 32768, 0, 1.0),
    ("int16", (4, 5, 9), 3e-4, 0, 1 / 32768, 0, 2.5),
    ("int16", (16, 40), 2 ** -12, 0, 1 / 32768, 0, 0.25),
]


def softmax_model(dtype, shape, si, zi, so, zo, beta) -> bytes:
    w = ModelWriter()
    x = w.tensor("x", shape, dtype, scale=si, zero_point=zi)
    y = w.tensor("y", shape, dtype, scale=so, zero_point=zo)
    w.op("SOFTMAX", [x], [y], ("SoftmaxOptions", {"beta": beta}))
    return w.to_bytes([x], [y])


def run_litert(path: Path, x: np.ndarray) -> np.ndarray:
    it = litert.Interpreter(model_path=str(path),
                            experimental_op_resolver_type=litert.OpResolverType.BUILTIN_REF)
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    return it.get_tensor(it.get_output_details()[0]["index"])


@pytest.mark.parametrize("row", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_bit_exact_with_litert(row, tmp_path):
    dtype, shape = row[0], row[1]
    path = tmp_path / "softmax.tflite"
    path.write_bytes(softmax_model(*row))
    mod = aot.from_tflite(path)
    assert "qnn.softmax" in str(mod)
    rng = np.random.default_rng(len(shape) * 100 + shape[-1])
    info = np.iinfo(dtype)
    for _ in range(4):
        x = rng.integers(int(info.min), int(info.max) + 1, shape).astype(dtype)
        x.reshape(-1, shape[-1])[0] = x.reshape(-1)[0]          # a row of equal values
        np.testing.assert_array_equal(np.asarray(aot.interpret(mod, x)), run_litert(path, x))


@pytest.mark.parametrize("row, message", [
    (("int8", (2, 5), 0.1, 0, 1 / 256, -127, 1.0), "zero point -128"),
    (("int8", (2, 5), 0.1, 0, 1 / 250, -128, 1.0), "1/256"),
    (("int16", (2, 5), 0.001, 0, 1 / 30000, 0, 1.0), "1/32768"),
    (("int16", (2, 5), 0.001, 4, 1 / 32768, 0, 1.0), "input zero point 0"),
])
def test_parameters_tflite_refuses(row, message, tmp_path):
    path = tmp_path / "bad.tflite"
    path.write_bytes(softmax_model(*row))
    with pytest.raises(DiagnosticError, match=message):
        aot.from_tflite(path)
