"""Weight-only quantized ONNX models (opset 21): float activations and
DequantizeLinear of constant int4/uint4/int8 weights feeding MatMul and
Conv.  The weights stay narrow tables in C (int4 packed two per byte) and
are dequantized inside the consuming kernel: FoldConstant keeps a
conversion that would widen a constant (aot/passes/fold_constant.py) and
FuseOps lets a contraction take a prologue computed from constants only
(aot/passes/fuse_ops.py).  ONE model holds the four patterns (per-axis
int4 MatMul, per-tensor int8 MatMul, blocked uint4 MatMul, per-axis int4
Conv), so one C build checks them all against onnxruntime (graph
optimisations off: its fused int8 MatMul quantizes activations) and the
interpreter.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import aot
from aot import builder as B
from aot.ir.expr import Call, Op
from aot.ir.visitor import post_order
from aot.passes.fold_constant import fold_constant
from aot.passes.manager import PassContext, run_pass

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto as T, helper as h, numpy_helper  # noqa: E402

K, N, O, C = 32, 16, 8, 4


def _q(name: str, values: np.ndarray, dtype: int) -> onnx.TensorProto:
    if dtype in (T.INT4, T.UINT4):
        return h.make_tensor(name, dtype, values.shape, values.astype(np.int32).flatten().tolist())
    return numpy_helper.from_array(values.astype(np.int8), name)


def _model() -> onnx.ModelProto:
    rng = np.random.default_rng(7)
    f32 = np.float32
    inits = [
        # per axis int4 MatMul weight
        _q("w1", rng.integers(-8, 8, (K, N)), T.INT4),
        numpy_helper.from_array(rng.uniform(0.01, 0.1, N).astype(f32), "s1"),
        _q("z1", rng.integers(-8, 8, N), T.INT4),
        # per tensor int8
        _q("w2", rng.integers(-128, 128, (K, N)), T.INT8),
        numpy_helper.from_array(np.array(0.02, f32), "s2"),
        _q("z2", np.array(3), T.INT8),
        # blocked uint4 (blocks of 8 along K)
        _q("w3", rng.integers(0, 16, (K, N)), T.UINT4),
        numpy_helper.from_array(rng.uniform(0.01, 0.1, (K // 8, N)).astype(f32), "s3"),
        _q("z3", rng.integers(0, 16, (K // 8, N)), T.UINT4),
        # per output channel int4 Conv
        _q("w4", rng.integers(-8, 8, (O, C, 3, 3)), T.INT4),
        numpy_helper.from_array(rng.uniform(0.01, 0.1, O).astype(f32), "s4"),
        _q("z4", rng.integers(-8, 8, O), T.INT4),
        numpy_helper.from_array(rng.standard_normal(O).astype(f32), "b4"),
    ]
    nodes = [
        h.make_node("DequantizeLinear", ["w1", "s1", "z1"], ["f1"], axis=1),
        h.make_node("MatMul", ["x", "f1"], ["y1"]),
        h.make_node("DequantizeLinear", ["w2", "s2", "z2"], ["f2"]),
        h.make_node("MatMul", ["x", "f2"], ["y2"]),
        h.make_node("DequantizeLinear", ["w3", "s3", "z3"], ["f3"], axis=0, block_size=8),
        h.make_node("MatMul", ["x", "f3"], ["y3"]),
        h.make_node("DequantizeLinear", ["w4", "s4", "z4"], ["f4"], axis=0),
        h.make_node("Conv", ["im", "f4", "b4"], ["c4"], pads=[1, 1, 1, 1]),
        h.make_node("Relu", ["c4"], ["y4"]),
    ]
    graph = h.make_graph(
        nodes, "weight_only",
        [h.make_tensor_value_info("x", T.FLOAT, [K, K]),
         h.make_tensor_value_info("im", T.FLOAT, [1, C, 6, 6])],
        [h.make_tensor_value_info(f"y{i}", T.FLOAT, [K, N]) for i in (1, 2, 3)]
        + [h.make_tensor_value_info("y4", T.FLOAT, [1, O, 6, 6])], inits)
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 21)])
    onnx.checker.check_model(model)
    return model


def _one_hot_image() -> np.ndarray:
    """A 1 per channel, far enough apart that no output pixel of the 3x3
    convolution sums two nonzero products."""
    im = np.zeros((1, C, 6, 6), np.float32)
    for c, (r, s) in enumerate([(1, 1), (1, 4), (4, 1), (4, 4)]):
        im[0, c, r, s] = 1.0
    return im


def test_narrow_weights_stay_narrow_and_match(tmp_path):
    model = _model()
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model.SerializeToString(), opts,
                                   providers=["CPUExecutionProvider"])
    mod = aot.from_onnx(model)
    art = aot.compile(mod, tmp_path / "art", name="wq")
    fn = aot.load(art)
    # identity rows and one-hot pixels: every output is one dequantized
    # weight (plus the bias), so C, interpreter and onnxruntime agree bit
    # for bit whatever their summation order
    rng = np.random.default_rng(1)
    exact = (np.eye(K, dtype=np.float32), _one_hot_image())
    noisy = (rng.standard_normal((K, K)).astype(np.float32),
             rng.standard_normal((1, C, 6, 6)).astype(np.float32))
    for inputs, bitwise in ((exact, True), (noisy, False)):
        want = session.run(None, dict(zip(("x", "im"), inputs)))
        got = fn(*inputs)
        interp = aot.interpret(mod, *inputs)
        for g, i, w in zip(got, interp, want):
            if bitwise:
                assert np.array_equal(g, w) and np.array_equal(g, np.asarray(i))
            else:
                np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
                np.testing.assert_allclose(g, np.asarray(i), rtol=1e-5, atol=1e-5)
    meta = art.metadata
    by_dtype: dict[str, int] = {}
    for c in meta["constants"]:
        by_dtype[c["dtype"]] = by_dtype.get(c["dtype"], 0) + c["bytes"]
    # int4/uint4 packed two per byte: 2 x 256 (MatMul) + 144 (Conv)
    assert by_dtype["int4"] + by_dtype["uint4"] >= 2 * K * N // 2 + O * C * 9 // 2
    # the int8 weight is folded as before: one float32 table of weight size
    assert by_dtype.get("int8", 0) < K * N
    assert sum(c["size"] >= K * N // 4 for c in meta["constants"]
               if c["dtype"] == "float32") == 1
    # folded, the 4-bit weights were 2 x 2,048 + 1,152 bytes of float32
    assert meta["constant_bytes"] < K * N * 4 + (2 * K * N + O * C * 9) * 4 // 3
    # every 4-bit dequantize is a prologue of its contraction: nothing in
    # the arena but the operands
    kernels = meta["kernels"]
    assert len(kernels) == 4
    assert all(k["anchor"] in ("nn.matmul", "nn.conv2d", "nn.dense") for k in kernels)
    assert sum("qnn.dequantize" in k["ops"] for k in kernels) == 2


def test_fold_constant_keeps_only_large_widening_conversions_of_storage_types():
    w = np.arange(16 * 32).astype(ml_dtypes.bfloat16).reshape(16, 32)  # 1,024 -> 2,048: kept
    w8 = np.arange(16 * 32).astype(np.int8).reshape(16, 32)   # int8: folded as before
    zp = np.arange(4).astype(ml_dtypes.int4)                  # 2 bytes -> 16: folded
    narrowing = np.arange(64, dtype=np.int32)                 # narrows: folded
    x = B.var("x", B.tensor((1, 32)))
    body = B.tuple_(B.call("nn.dense", x, B.call("cast", B.const(w), dtype="float32")),
                    B.call("nn.dense", x, B.call("cast", B.const(w8), dtype="float32")),
                    B.call("cast", B.const(zp), dtype="int32"),
                    B.call("cast", B.const(narrowing), dtype="int8"))
    folded = fold_constant(aot.infer_types(B.module(main=B.function([x], body))))
    casts = [n for n in post_order(folded["main"])
             if isinstance(n, Call) and isinstance(n.op, Op) and n.op.name == "cast"]
    assert len(casts) == 1 and casts[0].args[0].checked_type.dtype.value == "bfloat16"


def test_keep_narrow_false_folds_as_before():
    x = B.var("x", B.tensor((1, 32)))
    w = np.arange(16 * 32).astype(ml_dtypes.bfloat16).reshape(16, 32)
    mod = aot.infer_types(B.module(main=B.function(
        [x], B.call("nn.dense", x, B.call("cast", B.const(w), dtype="float32")))))
    with PassContext(options={"FoldConstant": {"keep_narrow": False}}):
        folded = run_pass("FoldConstant", mod)
    assert not any(isinstance(n, Call) and isinstance(n.op, Op) and n.op.name == "cast"
                   for n in post_order(folded["main"]))
    assert "cast(" in str(run_pass("FoldConstant", mod))
