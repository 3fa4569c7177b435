"""QDQ Sigmoid, Tanh, HardSwish and ReduceMean (ONNX, int8) through
FakeQuantizationToInteger against onnxruntime (CPU, default graph
optimisations, which fuse QDQ groups into its QLinear kernels where it has
them), on every input code (activations) or random data (mean) over
random quantization parameters; and, for comparison, TFLite's integer
arithmetic (``qnn.sigmoid`` / ``qnn.tanh`` / ``qnn.hardswish`` /
``qnn.mean``) on the same data.

Why FakeQuantizationToInteger does not use the TFLite operators for ONNX:
its integer forms are exact for the float QDQ program -- a 256-entry table
of the dequantize -> activation -> quantize region evaluated by the
interpreter (sigmoid, tanh, hard swish), an int32 sum requantized by
``s / n`` with one rounding (mean) -- and that is what onnxruntime
computes.  TFLite's kernels round differently: ``qnn.hardswish`` is a
16-bit fixed-point approximation (measured: 3067 of 3072 codes equal to
onnxruntime, 99.84%, the rest one step away) and ``qnn.mean`` rounds
through a multiplier with ``1/n`` folded in (its 31-bit truncation) and
TFLite's double rounding (740 of 768 means equal, 96.4%, the rest one
step); ``qnn.sigmoid`` /
``qnn.tanh`` are float32 tables like onnxruntime's but round ties half
away from zero where QuantizeLinear rounds half to even (no tie among the
measured codes: 3072 of 3072 equal).  FakeQuantizationToInteger's
forms: all 3072 codes and 768 means equal.  The bounds below fail if
either side changes."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import aot  # noqa: E402
from aot.ir.dtype import DType  # noqa: E402
from aot.ir.ops.qnn_nonlinear import hard_swish, hard_swish_params, lookup_table  # noqa: E402
from aot.ir.ops.qnn_reduce import quantized_mean  # noqa: E402
from aot.passes.fake_quantization_to_integer import fake_quantization_to_integer  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "frontend"))
from onnx_helpers import model, node  # noqa: E402

TRIALS = 12
#: op -> (FakeQuantizationToInteger's min fraction exact, TFLite arithmetic's)
BOUNDS = {"Sigmoid": (0.999, 0.99), "Tanh": (0.999, 0.99), "HardSwish": (0.999, 0.99),
          "ReduceMean": (0.999, 0.95)}


def ort_run(m, x: np.ndarray) -> np.ndarray:
    sess = ort.InferenceSession(m.SerializeToString(), ort.SessionOptions(),
                                providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


def qdq_case(op: str, rng: np.random.Generator):
    si = np.float32(rng.uniform(0.01, 0.2))
    zi = np.int8(rng.integers(-60, 60))
    if op == "Sigmoid":
        so, zo = np.float32(1 / 256), np.int8(-128)
    elif op == "Tanh":
        so, zo = np.float32(1 / 128), np.int8(0)
    else:
        so, zo = np.float32(si * rng.uniform(0.5, 1.5)), np.int8(rng.integers(-60, 60))
    if op == "ReduceMean":
        x = rng.integers(-128, 128, (4, 8, 7, 16)).astype(np.int8)
        body = node("ReduceMean", ["d"], ["m"], axes=[1, 2], keepdims=1)
    else:
        x = np.arange(-128, 128).astype(np.int8).reshape(16, 16)
        body = node(op, ["d"], ["m"])
    nodes = [node("DequantizeLinear", ["x", "si", "zi"], ["d"]), body,
             node("QuantizeLinear", ["m", "so", "zo"], ["y"])]
    m = model(nodes, {"x": x}, ["y"], {"si": si, "zi": zi, "so": so, "zo": zo}, opset=14)
    return m, x, (float(si), int(zi), float(so), int(zo))


def tflite_arithmetic(op: str, x: np.ndarray, params) -> np.ndarray:
    si, zi, so, zo = params
    if op == "ReduceMean":
        return quantized_mean(x, (1, 2), True, si, zi, so, zo)
    if op == "HardSwish":
        return hard_swish(x.astype(np.int64), zi, zo, hard_swish_params(si, so), DType.INT8)
    name = "qnn.sigmoid" if op == "Sigmoid" else "qnn.tanh"
    return lookup_table(name, si, zi, so, zo, DType.INT8)[x.astype(np.int64) + 128]


@pytest.mark.parametrize("op", sorted(BOUNDS))
def test_agreement_with_onnxruntime(op):
    rng = np.random.default_rng(sum(map(ord, op)))
    counts = {"fq2i": [0, 0, 0], "tflite": [0, 0, 0]}
    for _ in range(TRIALS):
        m, x, params = qdq_case(op, rng)
        want = ort_run(m, x).astype(np.int64)
        integer = fake_quantization_to_integer(aot.from_onnx(m))
        text = str(integer)
        assert "qnn.quantize" not in text and "qnn.dequantize" not in text, text
        got = {"fq2i": np.asarray(aot.interpret(integer, x)),
               "tflite": tflite_arithmetic(op, x, params)}
        for name, v in got.items():
            diff = np.abs(np.asarray(v, np.int64).reshape(want.shape) - want)
            c = counts[name]
            c[0] += int(np.count_nonzero(diff == 0))
            c[1] += diff.size
            c[2] = max(c[2], int(diff.max()))
    for name, bound in zip(("fq2i", "tflite"), BOUNDS[op]):
        exact, total, worst = counts[name]
        assert worst <= 1, f"{op} {name}: {worst} steps from onnxruntime"
        assert exact / total >= bound, f"{op} {name}: {exact / total:.4f} exact"
