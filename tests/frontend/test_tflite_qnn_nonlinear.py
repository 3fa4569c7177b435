"""LOGISTIC, TANH, HARD_SWISH and MEAN on quantized tensors against
LiteRT's reference kernels (``BUILTIN_REF``) over many quantization
parameters: single-operator models written in memory with the
``tflite_models`` writer, imported as ``qnn.sigmoid`` / ``qnn.tanh`` /
``qnn.hardswish`` / ``qnn.mean``, run by the interpreter on every input
code (activations) or random data (mean), required bit-exact.  Also
TFLite's prepare-time refusals, which the importer reports."""

from __future__ import annotations

import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tflite")
litert = pytest.importorskip("ai_edge_litert.interpreter")

import aot  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent / "tflite_models"))
from writer import ModelWriter  # noqa: E402

QNN = {"LOGISTIC": "qnn.sigmoid", "TANH": "qnn.tanh", "HARD_SWISH": "qnn.hardswish"}


def unary_model(op: str, dtype: str, shape, q_in, q_out) -> bytes:
    w = ModelWriter()
    x = w.tensor("x", shape, dtype, scale=q_in[0], zero_point=q_in[1])
    y = w.tensor("y", shape, dtype, scale=q_out[0], zero_point=q_out[1])
    w.op(op, [x], [y])
    return w.to_bytes([x], [y])


def mean_model(dtype: str, shape, axes, keep: bool, q_in, q_out) -> bytes:
    w = ModelWriter()
    x = w.tensor("x", shape, dtype, scale=q_in[0], zero_point=q_in[1])
    a = w.tensor("axes", (len(axes),), "int32", np.array(axes, np.int32))
    reduced = {ax % len(shape) for ax in axes}
    out = tuple(1 if i in reduced else d for i, d in enumerate(shape)) if keep else \
        tuple(d for i, d in enumerate(shape) if i not in reduced)
    y = w.tensor("y", out, dtype, scale=q_out[0], zero_point=q_out[1])
    w.op("MEAN", [x, a], [y], ("ReducerOptions", {"keep_dims": keep}))
    return w.to_bytes([x], [y])


def litert_run(model: bytes, x: np.ndarray) -> np.ndarray:
    it = litert.Interpreter(model_content=model,
                            experimental_op_resolver_type=litert.OpResolverType.BUILTIN_REF)
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    return it.get_tensor(it.get_output_details()[0]["index"])


def ours(model: bytes, x: np.ndarray, tmp_path: Path, op: str) -> np.ndarray:
    path = tmp_path / "m.tflite"
    path.write_bytes(model)
    mod = aot.from_tflite(path)
    assert f"{op}(" in str(mod), f"{op} not in the imported program:\n{mod}"
    return np.asarray(aot.interpret(mod, x))


def activation_params(seed: int):
    """(op, dtype, q_in, q_out) rows: random scales and zero points, the
    output parameters TFLite requires for LOGISTIC."""
    rng = np.random.default_rng(seed)
    rows = []
    for op in QNN:
        for dtype in ("int8", "uint8"):
            lo, hi = np.iinfo(dtype).min, np.iinfo(dtype).max
            q_in = (float(np.float32(rng.uniform(0.004, 0.3))), int(rng.integers(lo, hi + 1)))
            if op == "LOGISTIC":
                q_out = (1 / 256, int(lo))
            elif op == "TANH":
                q_out = (float(np.float32(rng.uniform(0.004, 0.02))),
                         int(rng.integers(lo + 40, hi - 39)))
            else:
                q_out = (float(np.float32(rng.uniform(0.01, 0.1))), int(rng.integers(lo, hi + 1)))
            rows.append((op, dtype, q_in, q_out))
    return rows


@pytest.mark.parametrize("seed", range(4))
def test_activations_match_litert(seed, tmp_path):
    for op, dtype, q_in, q_out in activation_params(seed):
        info = np.iinfo(dtype)
        codes = np.arange(int(info.min), int(info.max) + 1).astype(dtype)
        model = unary_model(op, dtype, (256,), q_in, q_out)
        want = litert_run(model, codes)
        got = ours(model, codes, tmp_path, QNN[op])
        differ = np.count_nonzero(got.astype(np.int64) != want.astype(np.int64))
        assert differ == 0, f"{op} {dtype} {q_in} -> {q_out}: {differ} of 256 codes differ"


#: (dtype, shape, axes, keep_dims)
MEAN_SHAPES = [
    ("int8", (1, 4, 5, 3), [1, 2], True), ("int8", (1, 4, 5, 3), [2, 1], False),
    ("int8", (2, 4, 3), [-1], False), ("uint8", (2, 4, 3), [0, 2], True),
    ("uint8", (3, 7), [0], True), ("int16", (2, 3, 4, 5), [1, 3], False),
    ("int16", (1, 9, 9, 8), [1, 2], True), ("int8", (2, 5), [0, 1, 1], False),
]


@pytest.mark.parametrize("dtype,shape,axes,keep", MEAN_SHAPES)
def test_mean_matches_litert(dtype, shape, axes, keep, tmp_path):
    rng = np.random.default_rng(zlib.crc32(repr((dtype, shape, axes, keep)).encode()))
    lo, hi = int(np.iinfo(dtype).min), int(np.iinfo(dtype).max)
    for trial in range(4):
        s_in = float(np.float32(rng.uniform(0.005, 0.2)))
        s_out = s_in if trial == 0 else float(np.float32(s_in * rng.uniform(0.3, 3)))
        z_in = 0 if dtype == "int16" else int(rng.integers(max(lo, -100), min(hi, 200)))
        z_out = z_in if trial == 0 or dtype == "int16" else \
            int(rng.integers(max(lo, -100), min(hi, 200)))
        model = mean_model(dtype, shape, axes, keep, (s_in, z_in), (s_out, z_out))
        x = rng.integers(lo, hi + 1, shape).astype(dtype)
        want = litert_run(model, x)
        got = ours(model, x, tmp_path, "qnn.mean")
        assert got.shape == want.shape
        differ = np.count_nonzero(got.astype(np.int64) != want.astype(np.int64))
        assert differ == 0, f"trial {trial}: {differ} of {want.size} elements differ"


@pytest.mark.parametrize("model,message", [
    (lambda: unary_model("LOGISTIC", "int8", (3,), (0.1, 0), (0.01, -128)),
     "output scale 1/256"),
    (lambda: unary_model("HARD_SWISH", "int8", (3,), (1.0, 0), (1e-5, 0)),
     "HardSwishPrepare"),
    (lambda: mean_model("int16", (2, 3), [1], False, (0.01, 3), (0.01, 0)),
     "zero points 0"),
])
def test_prepare_refusals_are_diagnostics(model, message, tmp_path):
    path = tmp_path / "bad.tflite"
    path.write_bytes(model())
    with pytest.raises(aot.DiagnosticError, match=message):
        aot.from_tflite(path)
