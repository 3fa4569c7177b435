"""The MLPerf Tiny ResNet-8 quantized by onnxruntime's static quantizer
(QDQ, int8, per-channel weights; tests/cases/quantized_models.py) compiles
to integer C whose logits (the int8 tensor before the final
DequantizeLinear -> Softmax) equal the *exact* QDQ program: every
dequantize, convolution, addition and average in real arithmetic, every
QuantizeLinear rounding half to even (a float64 numpy evaluation here,
:func:`exact_logits`).  Three operators matter:

* convolutions: the exact int32 accumulation, one fixed-point
  requantization (the accumulator's scale is the float32 product
  ``fl(s_x * s_w)``, the bias's own scale: 2**-24 relative away from the
  exact product on the convolution part, which moves a value lying within
  about 1e-6 of a step from a rounding boundary to its other side;
  measured 35 of 819,200 values of one layer on 100 inputs, none on the
  logits of the inputs sampled here);
* the residual additions: ``qnn.add`` (TFLite's fixed-point add), which
  on this model equals the exact float addition on every value measured;
* the 8x8 average pool: ties (``S / 64`` exactly half-way) are rounded to
  even like ONNX's QuantizeLinear (FakeQuantizationToInteger's ONNX
  average; TFLite's rounding away from zero gave 9 of 1,280 values off).

onnxruntime's default session is not exact: it runs six convolutions as
float Conv between DequantizeLinear and QuantizeLinear and the others as
QLinearConv with a float32 requantization, so values within about 2e-5 of
a step of a rounding boundary land on either side (two identical values
of one channel are rounded both ways), and the first such value moves
everything after it.  Measured on 100 inputs (seeds 1000..1099): our
logits equal the exact ones on 997 of 1000 values, onnxruntime's on 972,
ours equal onnxruntime's on 975 (max one step); README, "Quantized
models"."""

from __future__ import annotations

import re

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
pytest.importorskip("onnxruntime.quantization")

import aot  # noqa: E402
from cases.quantized_models import ort_quantized  # noqa: E402
from onnx import numpy_helper  # noqa: E402
from test_quantized_c import tables  # noqa: E402

SEEDS = range(1000, 1008)
FLOAT_C = re.compile(r"\bfloat\b|\bdouble\b|\b\d+\.\d*(?:[eE][-+]?\d+)?f?\b|\b[a-z]+f\(")


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """(model with the logits as a second output, its initializers, the
    logits' name, the integer artifact)."""
    original, _ = ort_quantized("resnet8")
    qmodel = onnx.ModelProto()
    qmodel.CopyFrom(original)
    softmax = next(n for n in qmodel.graph.node if n.op_type == "Softmax")
    dq = next(n for n in qmodel.graph.node if n.output[0] == softmax.input[0])
    logits = dq.input[0]
    qmodel.graph.output.append(onnx.helper.make_tensor_value_info(
        logits, onnx.TensorProto.INT8, [1, 10]))
    art = aot.compile(aot.from_onnx(qmodel), tmp_path_factory.mktemp("art") / "int",
                      name="resnet8_int")
    inits = {t.name: numpy_helper.to_array(t) for t in qmodel.graph.initializer}
    return qmodel, inits, logits, art


def _attr(node, name, default):
    for a in node.attribute:
        if a.name == name:
            return onnx.helper.get_attribute_value(a)
    return default


def _conv(x: np.ndarray, w: np.ndarray, b: np.ndarray, node) -> np.ndarray:
    assert _attr(node, "group", 1) == 1 and _attr(node, "dilations", [1, 1]) == [1, 1]
    top, left, bottom, right = _attr(node, "pads", [0, 0, 0, 0])
    sh, sw = _attr(node, "strides", [1, 1])
    x = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)))
    _, _, kh, kw = w.shape
    h, wd = (x.shape[2] - kh) // sh + 1, (x.shape[3] - kw) // sw + 1
    out = np.zeros((x.shape[0], w.shape[0], h, wd))
    for i in range(kh):
        for j in range(kw):
            patch = x[:, :, i:i + sh * h:sh, j:j + sw * wd:sw]
            out += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j])
    return out + b.reshape(1, -1, 1, 1)


def _along(v: np.ndarray, ndim: int, axis: int) -> np.ndarray:
    v = np.asarray(v, np.float64)
    if v.ndim == 0:
        return v
    shape = [1] * ndim
    shape[axis] = v.size
    return v.reshape(shape)


def exact_logits(qmodel, inits: dict, logits: str, x: np.ndarray) -> np.ndarray:
    """The QDQ graph in float64 (exact for these sizes up to 2**-40 of a
    step) with QuantizeLinear rounding half to even."""
    values: dict[str, np.ndarray] = {qmodel.graph.input[0].name: x.astype(np.float64)}
    values.update({k: v.astype(np.float64) for k, v in inits.items()})
    for node in qmodel.graph.node:
        if any(i not in values for i in node.input if i):
            continue                        # after the softmax
        a = [values[i] for i in node.input if i]
        op = node.op_type
        if op == "QuantizeLinear":
            r = np.clip(np.round(a[0] / _along(a[1], a[0].ndim, _attr(node, "axis", 1)))
                        + _along(a[2], a[0].ndim, _attr(node, "axis", 1)), -128, 127)
        elif op == "DequantizeLinear":
            axis = _attr(node, "axis", 1)
            r = (a[0] - _along(a[2], a[0].ndim, axis)) * _along(a[1], a[0].ndim, axis)
        elif op == "Conv":
            r = _conv(a[0], a[1], a[2], node)
        elif op == "Add":
            r = a[0] + a[1]
        elif op == "AveragePool":
            assert _attr(node, "kernel_shape", None) == list(a[0].shape[2:])
            r = a[0].mean(axis=(2, 3), keepdims=True)
        elif op == "Flatten":
            r = a[0].reshape(a[0].shape[0], -1)
        elif op == "Gemm":
            r = a[0] @ (a[1].T if _attr(node, "transB", 0) else a[1]) + a[2]
        elif op == "Softmax":
            continue
        else:
            raise AssertionError(f"no reference for {op}")
        values[node.output[0]] = r
    return values[logits]


def test_kernels_are_integer(model):
    art = model[3]
    assert {c["dtype"] for c in art.metadata["constants"]} <= {"int8", "int32", "uint32"}
    text = "".join(p.read_text() for p in sorted((art.root / "src").glob("*.c")))
    # no float table, in either of the forms tables are printed in
    assert {c_type for c_type, _ in tables(text).values()} <= {"int8_t", "int32_t", "uint32_t"}
    floating, boundary = set(), []
    for k in art.metadata["kernels"]:
        body = re.search(rf"^static void {k['name']}\(.*?^}}$", text, re.S | re.M)
        assert body, k["name"]
        signature, code = body.group(0).split("{", 1)
        if "float" in signature:           # the model's float input and outputs
            boundary.append(k["ops"])
        elif FLOAT_C.search(code):
            floating.add(k["name"])
    assert not floating, floating
    assert boundary == [["divide", "round", "clip", "cast"],        # QuantizeLinear
                        ["qnn.softmax", "qnn.dequantize"]], boundary
    anchors = [k["anchor"] for k in art.metadata["kernels"]]
    assert anchors.count("qnn.conv2d") == 10 and "nn.conv2d" not in anchors, anchors
    assert anchors.count("qnn.dense") == 1
    (pool,) = [k for k in art.metadata["kernels"] if "floor_divide" in k["ops"]]
    assert "qnn.avg_pool2d" not in pool["ops"] and "qnn.requantize" not in pool["ops"]


def test_logits_equal_the_exact_qdq_program(model):
    qmodel, inits, logits, art = model
    run = aot.load(art)
    session = ort.InferenceSession(qmodel.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    feed = qmodel.graph.input[0].name
    shape = [d.dim_value for d in qmodel.graph.input[0].type.tensor_type.shape.dim]
    step = float(inits[next(n for n in qmodel.graph.node
                            if n.op_type == "DequantizeLinear"
                            and n.output[0] == qmodel.graph.output[0].name).input[1]])
    same_ort = total = 0
    for seed in SEEDS:
        x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
        probs, got = run(x)
        np.testing.assert_array_equal(got, exact_logits(qmodel, inits, logits, x).reshape(got.shape))
        want_probs, want = session.run(None, {feed: x})
        assert np.abs(got.astype(int) - want.astype(int)).max() <= 1
        assert np.abs(probs.astype(np.float64) - want_probs).max() <= 3 * step + 1e-6
        same_ort += int((got == want).sum())
        total += got.size
    assert same_ort >= 0.9 * total
