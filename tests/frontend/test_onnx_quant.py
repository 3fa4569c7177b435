"""ONNX quantization converters (QuantizeLinear, DequantizeLinear,
QLinearConv, QLinearMatMul) and a QDQ graph against onnxruntime with graph
optimisations off, through the reference interpreter.  Results are
compared exactly."""

from __future__ import annotations

import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

import numpy as np  # noqa: E402

from onnx_helpers import check, check_single, model, node, rand  # noqa: E402


def f32(v) -> np.ndarray:
    return np.asarray(v, np.float32)


QUANTIZE_CASES = [
    # (opset, scale, zero point, attrs)
    (13, f32(0.1), np.asarray(128, np.uint8), {}),
    (13, f32(0.05), np.asarray(-3, np.int8), {}),
    (13, f32(0.5), None, {}),
    (13, f32([0.1, 0.2, 0.4]), np.asarray([0, 10, -10], np.int8), {"axis": 1}),
    (19, f32([0.1, 0.3]), np.asarray([5, 250], np.uint8), {"axis": 0}),
    (21, f32(0.01), np.asarray(7, np.int16), {}),
    (21, f32(0.25), None, {"output_dtype": 3}),                        # int8
    (21, f32(np.full((2, 2, 4), 0.5) * np.arange(1, 3)[None, :, None]),
     np.zeros((2, 2, 4), np.int8), {"axis": 1, "block_size": 2}),
]


@pytest.mark.parametrize("opset,scale,zp,attrs", QUANTIZE_CASES)
def test_quantize_linear(opset, scale, zp, attrs):
    x = rand((2, 3, 4), low=-20, high=20)
    x[0, 0, :4] = [0.05, 0.15, -0.25, 2.5]   # ties of x / 0.1 and x / 0.5
    if attrs.get("block_size"):
        x = rand((2, 3, 4), low=-20, high=20)
    inits = {"s": scale, "z": zp}
    check_single("QuantizeLinear", {"x": x}, opset=opset, inits=inits, **attrs)


def test_quantize_rounds_half_to_even_and_saturates():
    x = f32([0.5, 1.5, 2.5, -0.5, -1.5, 1000.0, -1000.0, 127.5, -128.5])
    for zp in (np.asarray(0, np.int8), np.asarray(0, np.uint8)):
        check_single("QuantizeLinear", {"x": x}, inits={"s": f32(1.0), "z": zp})


DEQUANTIZE_CASES = [
    (13, np.uint8, f32(0.1), np.asarray(128, np.uint8), {}),
    (13, np.int8, f32(0.05), np.asarray(-3, np.int8), {}),
    (13, np.int8, f32(0.5), None, {}),
    (13, np.int32, f32(0.01), None, {}),
    (13, np.uint8, f32([0.1, 0.2, 0.4]), np.asarray([0, 10, 200], np.uint8), {"axis": 1}),
    (13, np.int8, f32([0.1, 0.2]), None, {"axis": -3}),
    (21, np.int16, f32(0.001), np.asarray(-100, np.int16), {}),
    (21, np.int8, f32(np.arange(1, 9).reshape(2, 1, 4) * 0.1), np.ones((2, 1, 4), np.int8),
     {"axis": 1, "block_size": 3}),
    (19, np.uint8, np.asarray(0.125, np.float16), np.asarray(3, np.uint8), {}),
]


@pytest.mark.parametrize("opset,dtype,scale,zp,attrs", DEQUANTIZE_CASES)
def test_dequantize_linear(opset, dtype, scale, zp, attrs):
    x = rand((2, 3, 4), dtype, low=-1000, high=1000)
    check_single("DequantizeLinear", {"x": x}, opset=opset, inits={"s": scale, "z": zp},
                 rtol=0, atol=0, **attrs)


QLINEAR_CONV_CASES = [
    # (x dtype, w dtype, per-channel w scale, bias, attrs)
    (np.uint8, np.uint8, False, False, {}),
    (np.uint8, np.int8, True, True, {"pads": [1, 1, 1, 1], "strides": [2, 2]}),
    (np.int8, np.int8, False, True, {"pads": [1, 0, 1, 2], "dilations": [2, 1]}),
    (np.int8, np.int8, True, True, {"group": 4, "pads": [1, 1, 1, 1]}),        # depthwise
    (np.uint8, np.uint8, False, True, {"auto_pad": "SAME_UPPER"}),
]


@pytest.mark.parametrize("x_dtype,w_dtype,per_channel,bias,attrs", QLINEAR_CONV_CASES)
def test_qlinear_conv(x_dtype, w_dtype, per_channel, bias, attrs):
    groups = attrs.get("group", 1)
    c, m = 4, 4 if groups > 1 else 6
    x = rand((1, c, 7, 7), x_dtype, low=-128, high=255)
    w = rand((m, c // groups, 3, 3), w_dtype, seed=1, low=-128, high=255)
    w_scale = f32(np.linspace(0.002, 0.01, m)) if per_channel else f32(0.005)
    x_zp = np.asarray(120 if x_dtype == np.uint8 else -5, x_dtype)
    w_zp = np.zeros((m,) if per_channel else (), w_dtype) if w_dtype == np.int8 else \
        np.asarray(110, w_dtype)
    y_zp = np.asarray(128 if x_dtype == np.uint8 else 3, x_dtype)
    inits = {"xs": f32(0.02), "xz": x_zp, "w": w, "ws": w_scale, "wz": w_zp,
             "ys": f32(0.15), "yz": y_zp}
    if bias:
        inits["b"] = rand((m,), np.int32, seed=2, low=-2000, high=2000)
    check_single("QLinearConv", {"x": x}, inits=inits, rtol=0, atol=0, **attrs)


@pytest.mark.parametrize("a_shape,b_shape,per_column", [
    ((3, 4), (4, 5), False), ((2, 3, 4), (4, 5), True), ((2, 3, 4), (2, 4, 5), False)])
@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_qlinear_matmul(a_shape, b_shape, per_column, dtype):
    a = rand(a_shape, dtype, low=-128, high=255)
    b = rand(b_shape, dtype, seed=1, low=-128, high=255)
    def zp(v):
        return np.asarray(v, dtype)
    b_scale = f32(np.linspace(0.01, 0.03, b_shape[-1])) if per_column else f32(0.02)
    b_zp = np.full((b_shape[-1],) if per_column else (), 3 if dtype == np.uint8 else -2, dtype)
    inits = {"as": f32(0.05), "az": zp(100 if dtype == np.uint8 else 4), "b": b, "bs": b_scale,
             "bz": b_zp, "ys": f32(0.7), "yz": zp(120 if dtype == np.uint8 else -1)}
    check_single("QLinearMatMul", {"a": a}, inits=inits, rtol=0, atol=0)


def test_qdq_graph():
    """DequantizeLinear -> Conv -> Relu -> QuantizeLinear -> DequantizeLinear -> Add ->
    QuantizeLinear: the float computation between the pairs, exactly."""
    rng = np.random.default_rng(3)
    wq = rng.integers(-127, 128, size=(4, 3, 3, 3)).astype(np.int8)
    nodes = [
        node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
        node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
        node("DequantizeLinear", ["wq", "ws"], ["wd"], axis=0),
        node("Conv", ["xd", "wd", "b"], ["c"], pads=[1, 1, 1, 1]),
        node("Relu", ["c"], ["r"]),
        node("QuantizeLinear", ["r", "rs", "rz"], ["rq"]),
        node("DequantizeLinear", ["rq", "rs", "rz"], ["rd"]),
        node("Add", ["rd", "xd2"], ["s"]),
        node("QuantizeLinear", ["s", "ss", "sz"], ["y"]),
    ]
    inits = {"xs": f32(0.02), "xz": np.asarray(128, np.uint8), "wq": wq,
             "ws": f32([0.01, 0.02, 0.015, 0.005]), "b": rand((4,), seed=4),
             "rs": f32(0.04), "rz": np.asarray(0, np.uint8), "xd2": rand((1, 4, 5, 5), seed=5),
             "ss": f32(0.05), "sz": np.asarray(10, np.uint8)}
    x = rand((1, 3, 5, 5), low=-2, high=2)
    check(model(nodes, {"x": x}, ["y"], inits), {"x": x}, rtol=0, atol=0)


def test_qlinear_conv_1d():
    x = rand((1, 3, 9), np.uint8, low=0, high=255)
    inits = {"xs": f32(0.03), "xz": np.asarray(128, np.uint8),
             "w": rand((4, 3, 3), np.uint8, seed=1, low=0, high=255), "ws": f32(0.004),
             "wz": np.asarray(120, np.uint8), "ys": f32(0.2), "yz": np.asarray(100, np.uint8)}
    check_single("QLinearConv", {"x": x}, inits=inits, rtol=0, atol=0, pads=[1, 1],
                 strides=[2])
