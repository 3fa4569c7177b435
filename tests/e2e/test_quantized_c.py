"""A quantized model compiles to integer C by default (DESIGN.md, key
decision 8): the MLPerf Tiny DS-CNN quantized by onnxruntime's static
quantizer (QDQ, int8 activations, per-channel int8 weights; see
tests/cases/quantized_models.py), compiled by ``aot.compile`` with no
option, then inspected and run against onnxruntime.

What the artifact must show (FileCheck-style, on metadata.json and the C):

* one kernel per layer: the input's quantize, the nine convolutions
  (identical ones share a C function), the dense layer, the softmax;
* every layer kernel is integer: a ``qnn.conv2d``/``qnn.dense`` anchor,
  the int32 bias add and ``qnn.requantize`` fused into its epilogue,
  int8 in and out, and no float type, float literal or float math
  function in its C body; the softmax is ``qnn.softmax`` (TFLite's
  fixed-point softmax) on the int8 logits, float only in the store of
  the model's float output (its fused dequantize);
* the weights are ``static const int8_t`` tables, the biases and
  requantization multipliers int32; no float32 constant at all;
* ``quantized="float"`` is the documented way back to float: float32
  weights and ``nn.conv2d``/``nn.dense`` kernels.

Results: the integer C equals onnxruntime's float QDQ execution (graph
optimisations off) on every output of the sampled inputs, and
onnxruntime's integer kernels (default session: QLinearConv,
QLinearAveragePool, QGemm; the optimized graph is read to check they are
what it runs) on the logits bit for bit.  The probabilities are where
they may differ: ``qnn.softmax`` is within about 2e-4 of a step of the
exact probability before its final rounding, so it can round the other
way than float arithmetic when the exact value lies that close to a
rounding boundary (about 6 elements in 100,000 on random rows,
tests/frontend/test_onnx_qsoftmax.py; none on these samples); and
onnxruntime's own QLinearSoftmax (a float exp table, the output scale
here 1/255) is one step away from its float QDQ execution on about 7% of
the probabilities (README, "Quantized models").
"""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
pytest.importorskip("onnxruntime.quantization")

import aot  # noqa: E402
from cases.quantized_models import ort_quantized  # noqa: E402

NAME = "ds_cnn"
SEEDS = range(8)
#: the operators an integer layer kernel may hold
INTEGER_OPS = {"qnn.conv2d", "qnn.dense", "qnn.avg_pool2d", "add", "qnn.requantize", "reshape"}
#: C spellings of float arithmetic: types, literals like 1.5f / 2.0, float math
FLOAT_C = re.compile(r"\bfloat\b|\bdouble\b|\b\d+\.\d*(?:[eE][-+]?\d+)?f?\b|\b[a-z]+f\(")
#: a constant table as the kernels read it: a plain array, or the ``values``
#: member of the union a large table (and every float one) is printed as
#: (aot/emit/c/tables.py; the ``#define`` names the member)
PLAIN_TABLE = re.compile(r"^static const (\w+) (\w+)\[(\d+)\] = \{", re.M)
UNION_TABLE = re.compile(r"^    (\w+) values\[(\d+)\];\n\} (\w+)_bits = \{", re.M)
TABLE_DEFINE = re.compile(r"^#define (\w+) \((\w+)_bits\.values\)$", re.M)


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """(quantized ONNX model, the same with the logits' quantize as a second
    output, input shape, integer artifact, float artifact)."""
    original, shape = ort_quantized(NAME)
    qmodel = onnx.ModelProto()
    qmodel.CopyFrom(original)
    softmax = next(n for n in qmodel.graph.node if n.op_type == "Softmax")
    dq = next(n for n in qmodel.graph.node if n.output[0] == softmax.input[0])
    logits = dq.input[0]                        # the QuantizeLinear output before it
    qmodel.graph.output.append(onnx.helper.make_tensor_value_info(
        logits, onnx.TensorProto.INT8, [1, 12]))
    mod = aot.from_onnx(qmodel)
    out = tmp_path_factory.mktemp("art")
    integer = aot.compile(mod, out / "int", name="qdq_int")
    floating = aot.compile(mod, out / "float", name="qdq_float", quantized="float")
    return original, qmodel, shape, integer, floating


#: the C element type of each constant dtype a quantized model may hold
C_TYPES = {"int8": "int8_t", "int32": "int32_t", "uint32": "uint32_t"}


def kernel_body(art, kernel: str) -> str:
    """The C text of ``static void <kernel>(...) { ... }``."""
    text = "".join(p.read_text() for p in sorted((art.root / "src").glob("*.c")))
    match = re.search(rf"^static void {kernel}\(.*?^}}$", text, re.S | re.M)
    assert match, f"no function {kernel} in the C"
    return match.group(0)


def pointer_param(signature: str, c_type: str, name: str) -> bool:
    """Whether ``signature`` has the parameter ``<c_type> *name``, restrict
    or not: an output the arena may overlap with an input drops ``restrict``
    on both (aot/emit/lower/overlap_pairs.py)."""
    return re.search(rf"{re.escape(c_type)} \*(?:restrict )?{name}\b", signature) is not None


def tables(text: str) -> dict[str, tuple[str, int]]:
    """Every constant table of the C ``text``: name -> (element type the
    kernels read, length); a union's types in both its forms must agree."""
    found = {name: (c_type, int(n)) for c_type, name, n in PLAIN_TABLE.findall(text)}
    unions: dict[str, set[tuple[str, int]]] = {}
    for c_type, n, name in UNION_TABLE.findall(text):
        unions.setdefault(name, set()).add((c_type, int(n)))
    assert {a for a, b in TABLE_DEFINE.findall(text) if a == b} == set(unions), \
        "a union table without its #define, or the reverse"
    for name, forms in unions.items():
        assert len(forms) == 1 and name not in found, (name, forms)
        (found[name],) = forms
    return found


def ort_session(qmodel, optimized: bool, path=None):
    options = ort.SessionOptions()
    if not optimized:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    if path:
        options.optimized_model_filepath = str(path)
    return ort.InferenceSession(qmodel.SerializeToString(), options,
                                providers=["CPUExecutionProvider"])


def inputs(shape):
    return [np.random.default_rng(100 + s).standard_normal(shape).astype(np.float32)
            for s in SEEDS]


def test_one_integer_kernel_per_layer(model):
    art = model[3]
    kernels = art.metadata["kernels"]
    anchors = [k["anchor"] for k in kernels]
    # quantize input; conv 10x4; (depthwise 3x3, pointwise 1x1) shared by the
    # four blocks; the global average pool as qnn.avg_pool2d; dense; qnn.softmax
    assert anchors.count("qnn.conv2d") == 3 and anchors.count("qnn.dense") == 1
    assert anchors.count("qnn.avg_pool2d") == 1
    assert len(kernels) == 7
    (softmax,) = [k for k in kernels if k["anchor"] == "qnn.softmax"]
    assert softmax["ops"] == ["qnn.softmax", "qnn.dequantize"], softmax["ops"]
    signature, code = kernel_body(art, softmax["name"]).split("{", 1)
    assert pointer_param(signature, "const int8_t", "p0")
    assert pointer_param(signature, "float", "out")
    floating = [line.strip() for line in code.splitlines() if FLOAT_C.search(line)]
    assert len(floating) == 1 and floating[0].startswith("out["), floating   # the dequantize
    (pool,) = [k for k in kernels if k["anchor"] == "qnn.avg_pool2d"]
    assert set(pool["ops"]) <= INTEGER_OPS, pool["ops"]
    assert not FLOAT_C.findall(kernel_body(art, pool["name"]).split("{", 1)[1])
    layers = [k for k in kernels if k["anchor"] in ("qnn.conv2d", "qnn.dense")]
    for k in layers:
        assert set(k["ops"]) <= INTEGER_OPS, (k["name"], k["ops"])
        assert k["ops"][-1] == "qnn.requantize" or k["ops"][-2:] == ["qnn.requantize",
                                                                     "qnn.dequantize"]
        body = kernel_body(art, k["name"])
        if "qnn.dequantize" in k["ops"]:          # the logits also leave as float
            body = body.split("float *restrict out", 1)[0]
        signature, code = body.split("{", 1)
        assert pointer_param(signature, "const int8_t", "p0"), signature
        assert "int32_t acc" in code                    # int32 accumulators
        assert not FLOAT_C.findall(code), (k["name"], FLOAT_C.findall(code)[:5])


def test_weights_are_int8_tables(model):
    _, qmodel, _, art, floating = model
    consts = art.metadata["constants"]
    # uint32: the words of sign-extended int16 weight pairs of the
    # convolutions' dual 16-bit kernel (aot/emit/lower/ops/qnn_conv_dsp.py)
    assert Counter(c["dtype"] for c in consts).keys() <= {"int8", "int32", "uint32"}
    weights = sum(int(np.prod(t.dims)) for t in qmodel.graph.initializer
                  if t.data_type == onnx.TensorProto.INT8 and len(t.dims) >= 2)
    weight_bytes = sum(c["bytes"] // (2 if c["dtype"] == "uint32" else 1) for c in consts
                       if c["dtype"] in ("int8", "uint32"))
    assert weight_bytes >= weights
    text = (art.root / "src" / "qdq_int.c").read_text()
    # every constant is a table of its integer type, and there is no other table
    assert tables(text) == {c["c_name"]: (C_TYPES[c["dtype"]], c["size"]) for c in consts}
    # the float path, on request: float32 weights and float layers
    float_ops = {op for k in floating.metadata["kernels"] for op in k["ops"]}
    assert {"nn.conv2d", "nn.dense"} <= float_ops and "qnn.conv2d" not in float_ops
    # float32 weights take 4 bytes; the int8 ones 1, or 2 as the int16 pairs
    # of the convolutions' dual 16-bit kernel
    assert floating.metadata["constant_bytes"] > 1.5 * art.metadata["constant_bytes"]


def ort_kernels(qmodel, path) -> Counter:
    """The operators onnxruntime's default session runs for ``qmodel``."""
    ort_session(qmodel, True, path)
    return Counter(n.op_type for n in onnx.load(path).graph.node)


def test_equals_onnxruntime(model, tmp_path):
    """Bit for bit: every output against onnxruntime's float QDQ execution;
    the logits against its integer convolutions (QLinearConv; with the
    logits as an output it keeps the dense layer as DequantizeLinear ->
    Gemm -> QuantizeLinear); the probabilities against its fully integer
    session (QLinearConv, QGemm, QLinearSoftmax) within one step."""
    original, qmodel, shape, art, _ = model
    ran = ort_kernels(original, tmp_path / "all.onnx")
    assert ran["QLinearConv"] == 9 and ran["QGemm"] == 1 and ran["QLinearSoftmax"] == 1
    assert not {"Conv", "Gemm", "Softmax"} & set(ran)
    ran = ort_kernels(qmodel, tmp_path / "logits.onnx")
    assert ran["QLinearConv"] == 9 and "Conv" not in ran
    integer_ort, convs_ort = ort_session(original, True), ort_session(qmodel, True)
    float_ort = ort_session(qmodel, False)
    run = aot.load(art)
    feed = qmodel.graph.input[0].name
    inits = {t.name: onnx.numpy_helper.to_array(t) for t in qmodel.graph.initializer}
    last_dq = [n for n in qmodel.graph.node if n.op_type == "DequantizeLinear"][-1]
    step = float(inits[last_dq.input[1]])       # the probabilities' quantization step
    exact = total = 0
    for x in inputs(shape):
        probs, logits = run(x)
        want_probs, want_logits = float_ort.run(None, {feed: x})
        np.testing.assert_array_equal(probs, want_probs)
        np.testing.assert_array_equal(logits, want_logits)
        np.testing.assert_array_equal(logits, convs_ort.run(None, {feed: x})[1])
        (int_probs,) = integer_ort.run(None, {feed: x})
        diff = np.abs(probs.astype(np.float64) - int_probs) / step
        assert diff.max() <= 1.0001
        exact += int((diff < 1e-3).sum())
        total += diff.size
    assert exact >= 0.8 * total
