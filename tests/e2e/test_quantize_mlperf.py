"""aot.quantize on a float MLPerf Tiny model, compiled to C: the float
DS-CNN (examples/mlperf_tiny/models.py, batch norms folded by the flow's
prerequisites) quantized with 8 calibration inputs and the default
qconfig, then ``aot.compile`` with no option.

What the artifact must show (as tests/e2e/test_quantized_c.py checks for
an onnxruntime-quantized model): the input's quantize, then only integer
layer kernels (``qnn.conv2d``/``qnn.dense`` anchors, int32 accumulators,
no float type, literal or math function in their C) up to the logits'
dequantize, then the float softmax; ``static const int8_t`` weight
tables, no float32 constant.

And how close it stays to the float program, on 20 evaluation inputs
distinct from the calibration ones: the C's top-1 class equals the float
program's on at least 70% of them (measured 80%, 16 of 20; the models'
random weights give nearly flat probabilities, median top-1 margin 0.012,
so this is a strict test: onnxruntime's own static quantizer reaches 90%
with the same calibration), and every output's cosine similarity to the
float one is above 0.999 (measured 0.99955).  README, "Quantizing a float
model", has the figures over 200 inputs.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

import aot  # noqa: E402
from cases.quantized_models import mlperf_models  # noqa: E402
from test_quantized_c import C_TYPES, FLOAT_C, kernel_body, pointer_param, tables  # noqa: E402

#: the output dequantize fused into the last layer: an int8 value times its scale
DEQUANTIZE_STORE = re.compile(r"^\s*out\[[^]]*\] = \(float\)\(int32_t\)aot_sat_i32_i8"
                              r"\(.*\) \* \d+\.\d+(?:e[-+]?\d+)?f;$")
INTEGER_OPS = {"qnn.conv2d", "qnn.dense", "add", "qnn.requantize", "maximum", "reshape"}


@pytest.fixture(scope="module")
def quantized(tmp_path_factory):
    models = mlperf_models()
    model = models.build("ds_cnn")
    shape = tuple(models.input_shape(model))
    mod = aot.from_onnx(model)
    calibration = [[np.random.default_rng(10_000 + i).standard_normal(shape).astype(np.float32)]
                   for i in range(8)]
    qmod = aot.quantize(mod, calibration)
    art = aot.compile(qmod, tmp_path_factory.mktemp("qds") / "art", name="qds")
    return model, mod, shape, art


def test_layers_compute_in_integers(quantized):
    art = quantized[3]
    kernels = art.metadata["kernels"]
    assert kernels[0]["ops"] == ["qnn.quantize"]
    assert kernels[-1]["ops"] == ["nn.softmax"]
    layers = kernels[1:-1]
    anchors = [k["anchor"] for k in layers]
    assert anchors.count("qnn.dense") == 1 and anchors.count("qnn.conv2d") >= 4
    for k in layers:
        ops = k["ops"][:-1] if k["ops"][-1] == "qnn.dequantize" else k["ops"]
        assert set(ops) <= INTEGER_OPS, (k["name"], k["ops"])
        signature, code = kernel_body(art, k["name"]).split("{", 1)
        assert pointer_param(signature, "const int8_t", "p0"), signature
        assert "int32_t acc" in code
        if k["ops"][-1] == "qnn.dequantize":            # the logits leave as float:
            assert k is layers[-1]                      # only their stores convert
            stores = [line for line in code.splitlines() if DEQUANTIZE_STORE.match(line)]
            assert stores and pointer_param(signature, "float", "out")
            code = "\n".join(line for line in code.splitlines() if line not in stores)
        assert not FLOAT_C.findall(code), (k["name"], FLOAT_C.findall(code)[:5])


def test_weights_are_int8_tables(quantized):
    model, _, _, art = quantized
    consts = art.metadata["constants"]
    # uint32: the words of sign-extended int16 weight pairs of the
    # convolutions' dual 16-bit kernel (aot/emit/lower/ops/qnn_conv_dsp.py)
    assert {c["dtype"] for c in consts} <= {"int8", "int32", "uint32"}
    weights = sum(int(np.prod(t.dims)) for t in model.graph.initializer
                  if len(t.dims) >= 2)                  # conv and dense weights
    # identical depthwise/pointwise layers share nothing: each has its own table
    assert sum(c["bytes"] // (2 if c["dtype"] == "uint32" else 1) for c in consts
               if c["dtype"] in ("int8", "uint32")) >= weights
    text = (art.root / "src" / "qds.c").read_text()
    # every constant is a table of its integer type, and there is no other table
    assert tables(text) == {c["c_name"]: (C_TYPES[c["dtype"]], c["size"]) for c in consts}
    assert any(c["dtype"] == "int8" for c in consts)


def test_agrees_with_the_float_program(quantized):
    _, mod, shape, art = quantized
    run = aot.load(art)
    agree, cosines = 0, []
    for seed in range(20):
        x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
        want = np.asarray(aot.interpret(mod, x), np.float64).ravel()
        got = np.asarray(run(x), np.float64).ravel()
        agree += int(want.argmax() == got.argmax())
        cosines.append(want @ got / np.linalg.norm(want) / np.linalg.norm(got))
    assert agree >= 14, f"top-1 agreement {agree}/20"
    assert min(cosines) > 0.999, min(cosines)
