"""Write the small .tflite models of the TFLite importer tests.

    python tests/frontend/tflite_models/make_models.py [OUT_DIR]

Deterministic (one seeded generator per model, the flatbuffer writer of
:mod:`writer`): the same script writes the same bytes, which
``test_tflite_models_are_reproducible`` checks against the committed
files, so CI needs neither TensorFlow nor a converter.  Needs ``tflite``,
``flatbuffers`` and NumPy.

Models: one per operator and dtype (``<op>_f32``, ``<op>_i8``; int8 where
TFLite Micro has an int8 kernel), three small networks (``cnn_f32``,
``cnn_i8`` with per-channel weights and int8 I/O, ``cnn_qdq`` with float
I/O and QUANTIZE/DEQUANTIZE, ``cnn_u8io`` with uint8 I/O), and bad inputs
(``bad_*``: an unsupported operator, a custom operator, a dynamic shape,
schema version 2).  Activation quantization parameters are chosen by hand so
that outputs use most of the int8 range with a little saturation; the
fixed-output-range kernels (softmax, logistic, tanh) get the parameters
TFLite requires.
"""

from __future__ import annotations

import sys
import zlib
from pathlib import Path
from typing import Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from writer import ModelWriter  # noqa: E402

OUT = Path(__file__).resolve().parent

# activation functions of the options (ActivationFunctionType)
NONE, RELU, RELU_N1_TO_1, RELU6 = 0, 1, 2, 3
SAME, VALID = 0, 1

MODELS: dict[str, Callable[[], bytes]] = {}


def model(fn: Callable[[np.random.Generator], bytes]) -> Callable[[np.random.Generator], bytes]:
    """Register a model; its generator is seeded from its name (adding a
    model does not change the others)."""
    seed = zlib.crc32(fn.__name__.encode())
    MODELS[fn.__name__] = lambda: fn(np.random.default_rng(seed))
    return fn


def per_channel_weights(rng: np.random.Generator, shape: tuple[int, ...], axis: int) -> \
        tuple[np.ndarray, np.ndarray]:
    """Symmetric int8 weights (zero point 0) with one scale per index of
    ``axis``: int8 values in [-127, 127] and scales in [0.004, 0.02]."""
    q = rng.integers(-127, 128, size=shape).astype(np.int8)
    scales = rng.uniform(0.004, 0.02, size=shape[axis]).astype(np.float32)
    return q, scales


# ============================================================ single op: float

def _unary_f32(op: str, shape: tuple[int, ...], options=None) -> bytes:
    w = ModelWriter()
    x = w.tensor("x", shape, "float32")
    y = w.tensor("y", shape, "float32")
    w.op(op, [x], [y], options)
    return w.to_bytes([x], [y])


def _binary_f32(op: str, a_shape, b_shape, out_shape, options=None) -> bytes:
    w = ModelWriter()
    a = w.tensor("a", a_shape, "float32")
    b = w.tensor("b", b_shape, "float32")
    y = w.tensor("y", out_shape, "float32")
    w.op(op, [a, b], [y], options)
    return w.to_bytes([a, b], [y])


def _conv_f32(rng, depthwise: bool, padding: int, stride: int, dilation: int, act: int,
              mult: int = 1) -> bytes:
    w = ModelWriter()
    n, h, wd, c = 1, 7, 6, 3
    kh, kw = 3, 2
    o = c * mult if depthwise else 4
    x = w.tensor("x", (n, h, wd, c), "float32")
    wshape = (1, kh, kw, o) if depthwise else (o, kh, kw, c)
    wt = w.tensor("w", wshape, "float32", rng.normal(0, 0.5, wshape).astype(np.float32))
    bias = w.tensor("b", (o,), "float32", rng.normal(0, 0.2, o).astype(np.float32))
    ekh, ekw = (kh - 1) * dilation + 1, (kw - 1) * dilation + 1
    if padding == SAME:
        oh, ow = -(-h // stride), -(-wd // stride)
    else:
        oh, ow = (h - ekh) // stride + 1, (wd - ekw) // stride + 1
    y = w.tensor("y", (n, oh, ow, o), "float32")
    common = {"padding": padding, "stride_w": stride, "stride_h": stride,
              "fused_activation_function": act, "dilation_w_factor": dilation,
              "dilation_h_factor": dilation}
    if depthwise:
        w.op("DEPTHWISE_CONV_2D", [x, wt, bias], [y],
             ("DepthwiseConv2DOptions", {**common, "depth_multiplier": mult}))
    else:
        w.op("CONV_2D", [x, wt, bias], [y], ("Conv2DOptions", common))
    return w.to_bytes([x], [y])


@model
def conv2d_f32(rng):
    return _conv_f32(rng, False, SAME, 1, 1, RELU)


@model
def conv2d_valid_f32(rng):
    return _conv_f32(rng, False, VALID, 2, 1, RELU6)


@model
def conv2d_dilated_f32(rng):
    return _conv_f32(rng, False, SAME, 1, 2, RELU_N1_TO_1)


@model
def depthwise_conv2d_f32(rng):
    return _conv_f32(rng, True, SAME, 2, 1, RELU6, mult=2)


@model
def depthwise_conv2d_valid_f32(rng):
    return _conv_f32(rng, True, VALID, 1, 1, NONE)


@model
def fully_connected_f32(rng):
    w = ModelWriter()
    x = w.tensor("x", (2, 10), "float32")
    wt = w.tensor("w", (5, 10), "float32", rng.normal(0, 0.4, (5, 10)).astype(np.float32))
    b = w.tensor("b", (5,), "float32", rng.normal(0, 0.2, 5).astype(np.float32))
    y = w.tensor("y", (2, 5), "float32")
    w.op("FULLY_CONNECTED", [x, wt, b], [y],
         ("FullyConnectedOptions", {"fused_activation_function": RELU}))
    return w.to_bytes([x], [y])


@model
def fully_connected_nobias_f32(rng):
    w = ModelWriter()
    x = w.tensor("x", (1, 2, 2, 3), "float32")
    wt = w.tensor("w", (4, 12), "float32", rng.normal(0, 0.4, (4, 12)).astype(np.float32))
    y = w.tensor("y", (1, 4), "float32")
    w.op("FULLY_CONNECTED", [x, wt, -1], [y], ("FullyConnectedOptions", {}))
    return w.to_bytes([x], [y])


@model
def transpose_conv_f32(rng):
    w = ModelWriter()
    shape = w.tensor("shape", (4,), "int32", np.array([1, 8, 5, 2], np.int32))
    wt = w.tensor("w", (2, 3, 3, 3), "float32", rng.normal(0, 0.5, (2, 3, 3, 3)).astype(np.float32))
    x = w.tensor("x", (1, 4, 3, 3), "float32")
    b = w.tensor("b", (2,), "float32", rng.normal(0, 0.2, 2).astype(np.float32))
    y = w.tensor("y", (1, 8, 5, 2), "float32")
    w.op("TRANSPOSE_CONV", [shape, wt, x, b], [y], ("TransposeConvOptions", {
        "padding": SAME, "stride_w": 2, "stride_h": 2, "fused_activation_function": RELU}))
    return w.to_bytes([x], [y])


@model
def batch_matmul_f32(rng):
    return _binary_f32("BATCH_MATMUL", (2, 4, 3), (1, 5, 4), (2, 3, 5),
                       ("BatchMatMulOptions", {"adj_x": True, "adj_y": True}))


def _pool(op: str, dtype: str, padding: int, act: int, q=None) -> bytes:
    w = ModelWriter()
    x = w.tensor("x", (1, 7, 6, 3), dtype, **_q(q))
    oh, ow = (4, 3) if padding == SAME else (3, 2)
    y = w.tensor("y", (1, oh, ow, 3), dtype, **_q(q))
    w.op(op, [x], [y], ("Pool2DOptions", {"padding": padding, "stride_w": 2, "stride_h": 2,
                                          "filter_width": 3, "filter_height": 2,
                                          "fused_activation_function": act}))
    return w.to_bytes([x], [y])


def _q(q):
    return {} if q is None else {"scale": q[0], "zero_point": q[1]}


@model
def average_pool_2d_f32(rng):
    return _pool("AVERAGE_POOL_2D", "float32", SAME, NONE)


@model
def average_pool_2d_valid_f32(rng):
    return _pool("AVERAGE_POOL_2D", "float32", VALID, RELU)


@model
def max_pool_2d_f32(rng):
    return _pool("MAX_POOL_2D", "float32", SAME, RELU6)


@model
def mean_f32(rng):
    w = ModelWriter()
    x = w.tensor("x", (1, 4, 5, 3), "float32")
    axes = w.tensor("axes", (2,), "int32", np.array([1, 2], np.int32))
    y = w.tensor("y", (1, 1, 1, 3), "float32")
    w.op("MEAN", [x, axes], [y], ("ReducerOptions", {"keep_dims": True}))
    return w.to_bytes([x], [y])


@model
def mean_nokeep_f32(rng):
    w = ModelWriter()
    x = w.tensor("x", (2, 4, 3), "float32")
    axes = w.tensor("axes", (1,), "int32", np.array([-1], np.int32))
    y = w.tensor("y", (2, 4), "float32")
    w.op("MEAN", [x, axes], [y], ("ReducerOptions", {"keep_dims": False}))
    return w.to_bytes([x], [y])


@model
def add_f32(rng):
    return _binary_f32("ADD", (1, 3, 4, 2), (4, 2), (1, 3, 4, 2),
                       ("AddOptions", {"fused_activation_function": RELU}))


@model
def sub_f32(rng):
    return _binary_f32("SUB", (2, 3), (2, 3), (2, 3),
                       ("SubOptions", {"fused_activation_function": RELU6}))


@model
def mul_f32(rng):
    return _binary_f32("MUL", (2, 1, 3), (4, 1), (2, 4, 3),
                       ("MulOptions", {"fused_activation_function": NONE}))


@model
def maximum_f32(rng):
    return _binary_f32("MAXIMUM", (2, 3), (3,), (2, 3))


@model
def minimum_f32(rng):
    return _binary_f32("MINIMUM", (2, 3), (2, 3), (2, 3))


@model
def reshape_f32(rng):
    w = ModelWriter()
    x = w.tensor("x", (1, 2, 3, 4), "float32")
    shape = w.tensor("shape", (2,), "int32", np.array([-1, 12], np.int32))
    y = w.tensor("y", (2, 12), "float32")
    w.op("RESHAPE", [x, shape], [y], ("ReshapeOptions", {"new_shape": [-1, 12]}))
    return w.to_bytes([x], [y])


@model
def squeeze_f32(rng):
    w = ModelWriter()
    x = w.tensor("x", (1, 3, 1, 2), "float32")
    y = w.tensor("y", (3, 2), "float32")
    w.op("SQUEEZE", [x], [y], ("SqueezeOptions", {"squeeze_dims": [0, 2]}))
    return w.to_bytes([x], [y])


@model
def expand_dims_f32(rng):
    w = ModelWriter()
    x = w.tensor("x", (3, 2), "float32")
    axis = w.tensor("axis", (1,), "int32", np.array([-2], np.int32))
    y = w.tensor("y", (3, 1, 2), "float32")
    w.op("EXPAND_DIMS", [x, axis], [y])
    return w.to_bytes([x], [y])


@model
def softmax_f32(rng):
    return _unary_f32("SOFTMAX", (2, 7), ("SoftmaxOptions", {"beta": 0.75}))


@model
def logistic_f32(rng):
    return _unary_f32("LOGISTIC", (3, 5))


@model
def tanh_f32(rng):
    return _unary_f32("TANH", (3, 5))


@model
def relu_f32(rng):
    return _unary_f32("RELU", (3, 5))


@model
def relu6_f32(rng):
    return _unary_f32("RELU6", (3, 5))


@model
def leaky_relu_f32(rng):
    return _unary_f32("LEAKY_RELU", (3, 5), ("LeakyReluOptions", {"alpha": 0.2}))


@model
def hard_swish_f32(rng):
    return _unary_f32("HARD_SWISH", (3, 5))


def _concat(dtype: str, q=None) -> bytes:
    w = ModelWriter()
    a = w.tensor("a", (1, 2, 3), dtype, **_q(q))
    b = w.tensor("b", (1, 2, 2), dtype, **_q(q))
    y = w.tensor("y", (1, 2, 5), dtype, **_q(q))
    # LiteRT's reference kernel refuses a fused activation on CONCATENATION
    w.op("CONCATENATION", [a, b], [y], ("ConcatenationOptions", {"axis": -1}))
    return w.to_bytes([a, b], [y])


@model
def concatenation_f32(rng):
    return _concat("float32")


def _pad(op: str, dtype: str, q=None, value=None) -> bytes:
    w = ModelWriter()
    x = w.tensor("x", (1, 2, 3, 2), dtype, **_q(q))
    pads = w.tensor("pads", (4, 2), "int32", np.array([[0, 0], [1, 2], [0, 1], [0, 0]],
                                                      np.int32))
    y = w.tensor("y", (1, 5, 4, 2), dtype, **_q(q))
    inputs = [x, pads]
    if value is not None:
        inputs.append(w.tensor("value", (), dtype, np.asarray(value, dtype), **_q(q)))
    w.op(op, inputs, [y])
    return w.to_bytes([x], [y])


@model
def pad_f32(rng):
    return _pad("PAD", "float32")


@model
def padv2_f32(rng):
    return _pad("PADV2", "float32", value=-1.5)


def _transpose(dtype: str, q=None) -> bytes:
    w = ModelWriter()
    x = w.tensor("x", (2, 3, 4), dtype, **_q(q))
    perm = w.tensor("perm", (3,), "int32", np.array([2, 0, 1], np.int32))
    y = w.tensor("y", (4, 2, 3), dtype, **_q(q))
    w.op("TRANSPOSE", [x, perm], [y])
    return w.to_bytes([x], [y])


@model
def transpose_f32(rng):
    return _transpose("float32")


def _strided_slice(dtype: str, q=None, shrink: int = 0) -> bytes:
    w = ModelWriter()
    x = w.tensor("x", (3, 6, 4), dtype, **_q(q))
    begin = w.tensor("begin", (3,), "int32", np.array([1, 5, 0], np.int32))
    end = w.tensor("end", (3,), "int32", np.array([2, 0, 3], np.int32))
    strides = w.tensor("strides", (3,), "int32", np.array([1, -2, 2], np.int32))
    out = (3, 2) if shrink else (1, 3, 2)
    y = w.tensor("y", out, dtype, **_q(q))
    w.op("STRIDED_SLICE", [x, begin, end, strides], [y], ("StridedSliceOptions", {
        "begin_mask": 4, "end_mask": 0, "shrink_axis_mask": shrink}))
    return w.to_bytes([x], [y])


@model
def strided_slice_f32(rng):
    return _strided_slice("float32")


@model
def strided_slice_shrink_f32(rng):
    return _strided_slice("float32", shrink=1)


def _split(dtype: str, q=None) -> bytes:
    w = ModelWriter()
    axis = w.tensor("axis", (), "int32", np.asarray(1, np.int32))
    x = w.tensor("x", (2, 6, 2), dtype, **_q(q))
    ys = [w.tensor(f"y{i}", (2, 2, 2), dtype, **_q(q)) for i in range(3)]
    w.op("SPLIT", [axis, x], ys, ("SplitOptions", {"num_splits": 3}))
    return w.to_bytes([x], ys)


@model
def split_f32(rng):
    return _split("float32")


# ============================================================= single op: int8

Q_IN = (0.04, 3)          # input activations: reals in about [-5.2, 5.0]


def _conv_i8(rng, depthwise: bool, padding: int, stride: int, act: int, out_q) -> bytes:
    w = ModelWriter()
    h, wd, c = 6, 5, 3
    kh, kw = 3, 3
    o = c * 2 if depthwise else 4
    x = w.tensor("x", (1, h, wd, c), "int8", **_q(Q_IN))
    wshape = (1, kh, kw, o) if depthwise else (o, kh, kw, c)
    axis = 3 if depthwise else 0
    wq, ws = per_channel_weights(rng, wshape, axis)
    wt = w.tensor("w", wshape, "int8", wq, scale=ws, zero_point=0, axis=axis)
    bias_scale = (np.float32(Q_IN[0]) * ws).astype(np.float32)
    bias = w.tensor("b", (o,), "int32", rng.integers(-2000, 2000, o).astype(np.int32),
                    scale=bias_scale, zero_point=0)
    oh, ow = (-(-h // stride), -(-wd // stride)) if padding == SAME else \
        ((h - kh) // stride + 1, (wd - kw) // stride + 1)
    y = w.tensor("y", (1, oh, ow, o), "int8", **_q(out_q))
    common = {"padding": padding, "stride_w": stride, "stride_h": stride,
              "fused_activation_function": act}
    if depthwise:
        w.op("DEPTHWISE_CONV_2D", [x, wt, bias], [y],
             ("DepthwiseConv2DOptions", {**common, "depth_multiplier": 2}))
    else:
        w.op("CONV_2D", [x, wt, bias], [y], ("Conv2DOptions", common))
    return w.to_bytes([x], [y])


@model
def conv2d_i8(rng):
    return _conv_i8(rng, False, SAME, 1, RELU, (0.06, -100))


@model
def conv2d_valid_i8(rng):
    return _conv_i8(rng, False, VALID, 2, NONE, (0.08, 7))


@model
def depthwise_conv2d_i8(rng):
    return _conv_i8(rng, True, SAME, 2, RELU6, (0.03, -110))


@model
def fully_connected_i8(rng):
    w = ModelWriter()
    x = w.tensor("x", (2, 12), "int8", **_q(Q_IN))
    wq = rng.integers(-127, 128, (5, 12)).astype(np.int8)
    wt = w.tensor("w", (5, 12), "int8", wq, scale=0.01, zero_point=0)
    b = w.tensor("b", (5,), "int32", rng.integers(-3000, 3000, 5).astype(np.int32),
                 scale=np.float32(Q_IN[0]) * np.float32(0.01), zero_point=0)
    y = w.tensor("y", (2, 5), "int8", **_q((0.05, -5)))
    w.op("FULLY_CONNECTED", [x, wt, b], [y],
         ("FullyConnectedOptions", {"fused_activation_function": RELU}))
    return w.to_bytes([x], [y])


@model
def average_pool_2d_i8(rng):
    return _pool("AVERAGE_POOL_2D", "int8", SAME, NONE, Q_IN)


@model
def max_pool_2d_i8(rng):
    return _pool("MAX_POOL_2D", "int8", VALID, RELU, Q_IN)


@model
def mean_i8(rng):
    w = ModelWriter()
    x = w.tensor("x", (1, 4, 5, 3), "int8", **_q(Q_IN))
    axes = w.tensor("axes", (2,), "int32", np.array([1, 2], np.int32))
    y = w.tensor("y", (1, 1, 1, 3), "int8", **_q((0.01, -2)))
    w.op("MEAN", [x, axes], [y], ("ReducerOptions", {"keep_dims": True}))
    return w.to_bytes([x], [y])


def _mean_q(dtype: str, shape, axes, keep: bool, q_in, q_out) -> bytes:
    w = ModelWriter()
    x = w.tensor("x", shape, dtype, **_q(q_in))
    a = w.tensor("axes", (len(axes),), "int32", np.array(axes, np.int32))
    rank = len(shape)
    reduced = {ax % rank for ax in axes}
    out = tuple(1 if i in reduced else d for i, d in enumerate(shape)) if keep else \
        tuple(d for i, d in enumerate(shape) if i not in reduced)
    y = w.tensor("y", out, dtype, **_q(q_out))
    w.op("MEAN", [x, a], [y], ("ReducerOptions", {"keep_dims": keep}))
    return w.to_bytes([x], [y])


@model
def mean_nokeep_i8(rng):
    return _mean_q("int8", (2, 4, 3), [-1], False, Q_IN, (0.04, 9))


@model
def mean_axes02_i8(rng):
    return _mean_q("int8", (2, 3, 6, 2), [0, 2], True, Q_IN, Q_IN)


@model
def mean_u8(rng):
    return _mean_q("uint8", (1, 5, 4, 3), [1, 2], True, (0.02, 128), (0.015, 120))


@model
def mean_i16(rng):
    return _mean_q("int16", (3, 4, 5), [1], False, (0.001, 0), (0.0004, 0))


def _binary_i8(op: str, a_shape, b_shape, out_shape, qa, qb, qy, options=None) -> bytes:
    w = ModelWriter()
    a = w.tensor("a", a_shape, "int8", **_q(qa))
    b = w.tensor("b", b_shape, "int8", **_q(qb))
    y = w.tensor("y", out_shape, "int8", **_q(qy))
    w.op(op, [a, b], [y], options)
    return w.to_bytes([a, b], [y])


@model
def add_i8(rng):
    return _binary_i8("ADD", (1, 3, 4, 2), (4, 2), (1, 3, 4, 2), Q_IN, (0.03, -7),
                      (0.06, -20), ("AddOptions", {"fused_activation_function": RELU6}))


@model
def sub_i8(rng):
    return _binary_i8("SUB", (2, 3, 2), (2, 3, 2), (2, 3, 2), Q_IN, (0.03, -7), (0.07, 4),
                      ("SubOptions", {"fused_activation_function": NONE}))


@model
def mul_i8(rng):
    return _binary_i8("MUL", (2, 1, 3), (4, 1), (2, 4, 3), Q_IN, (0.03, -7), (0.1, 1),
                      ("MulOptions", {"fused_activation_function": RELU}))


@model
def maximum_i8(rng):
    return _binary_i8("MAXIMUM", (2, 3), (3,), (2, 3), Q_IN, Q_IN, Q_IN)


@model
def minimum_i8(rng):
    return _binary_i8("MINIMUM", (2, 3), (2, 3), (2, 3), Q_IN, Q_IN, Q_IN)


def _unary_i8(op: str, shape, q_out, options=None, out_dtype: str = "int8",
              in_dtype: str = "int8", q_in=Q_IN) -> bytes:
    w = ModelWriter()
    x = w.tensor("x", shape, in_dtype, **_q(q_in))
    y = w.tensor("y", shape, out_dtype, **_q(q_out))
    w.op(op, [x], [y], options)
    return w.to_bytes([x], [y])


@model
def reshape_i8(rng):
    w = ModelWriter()
    x = w.tensor("x", (1, 2, 3, 4), "int8", **_q(Q_IN))
    shape = w.tensor("shape", (2,), "int32", np.array([6, 4], np.int32))
    y = w.tensor("y", (6, 4), "int8", **_q(Q_IN))
    w.op("RESHAPE", [x, shape], [y])
    return w.to_bytes([x], [y])


@model
def softmax_i8(rng):
    return _unary_i8("SOFTMAX", (2, 7), (1 / 256, -128), ("SoftmaxOptions", {"beta": 1.0}))


@model
def softmax_u8(rng):
    return _unary_i8("SOFTMAX", (3, 6), (1 / 256, 0), ("SoftmaxOptions", {"beta": 1.0}),
                     out_dtype="uint8", in_dtype="uint8", q_in=(Q_IN[0], Q_IN[1] + 128))


@model
def softmax_i16(rng):
    """16x8 softmax: int16 in and out, zero points 0, output 1/32768."""
    return _unary_i8("SOFTMAX", (2, 9), (1 / 32768, 0), ("SoftmaxOptions", {"beta": 1.0}),
                     out_dtype="int16", in_dtype="int16", q_in=(1 / 4096, 0))


@model
def softmax_i16_beta(rng):
    return _unary_i8("SOFTMAX", (2, 3, 5), (1 / 32768, 0), ("SoftmaxOptions", {"beta": 0.6}),
                     out_dtype="int16", in_dtype="int16", q_in=(3e-4, 0))


@model
def logistic_i8(rng):
    return _unary_i8("LOGISTIC", (3, 5), (1 / 256, -128))


@model
def tanh_i8(rng):
    return _unary_i8("TANH", (3, 5), (1 / 128, 0))


@model
def relu_i8(rng):
    return _unary_i8("RELU", (3, 5), (0.03, -128))


@model
def relu6_i8(rng):
    return _unary_i8("RELU6", (3, 5), Q_IN)


@model
def leaky_relu_i8(rng):
    return _unary_i8("LEAKY_RELU", (3, 5), (0.03, 20), ("LeakyReluOptions", {"alpha": 0.2}))


@model
def hard_swish_i8(rng):
    return _unary_i8("HARD_SWISH", (3, 5), (0.025, -100))


@model
def logistic_u8(rng):
    return _unary_i8("LOGISTIC", (4, 5), (1 / 256, 0), out_dtype="uint8", in_dtype="uint8",
                     q_in=(0.06, 120))


@model
def tanh_u8(rng):
    return _unary_i8("TANH", (4, 5), (1 / 128, 128), out_dtype="uint8", in_dtype="uint8",
                     q_in=(0.03, 140))


@model
def hard_swish_u8(rng):
    return _unary_i8("HARD_SWISH", (4, 5), (0.03, 60), out_dtype="uint8", in_dtype="uint8",
                     q_in=(0.05, 100))


@model
def quantize_f32_i8(rng):
    return _unary_i8("QUANTIZE", (3, 5), (0.05, -4), in_dtype="float32", q_in=None)


@model
def quantize_i8_u8(rng):
    return _unary_i8("QUANTIZE", (3, 5), (0.05, 120), out_dtype="uint8")


@model
def quantize_u8_i8(rng):
    return _unary_i8("QUANTIZE", (3, 5), (0.04, -125), in_dtype="uint8", q_in=(0.04, 3))


@model
def dequantize_i8(rng):
    return _unary_i8("DEQUANTIZE", (3, 5), None, out_dtype="float32")


@model
def concatenation_i8(rng):
    return _concat("int8", Q_IN)


@model
def pad_i8(rng):
    return _pad("PAD", "int8", Q_IN)


@model
def padv2_i8(rng):
    return _pad("PADV2", "int8", Q_IN, value=-20)


@model
def transpose_i8(rng):
    return _transpose("int8", Q_IN)


@model
def strided_slice_i8(rng):
    return _strided_slice("int8", Q_IN)


@model
def split_i8(rng):
    return _split("int8", Q_IN)


@model
def squeeze_i8(rng):
    w = ModelWriter()
    x = w.tensor("x", (1, 3, 1, 2), "int8", **_q(Q_IN))
    y = w.tensor("y", (1, 3, 2), "int8", **_q(Q_IN))
    w.op("SQUEEZE", [x], [y], ("SqueezeOptions", {"squeeze_dims": [2]}))
    return w.to_bytes([x], [y])


@model
def expand_dims_i8(rng):
    w = ModelWriter()
    x = w.tensor("x", (3, 2), "int8", **_q(Q_IN))
    axis = w.tensor("axis", (), "int32", np.asarray(0, np.int32))
    y = w.tensor("y", (1, 3, 2), "int8", **_q(Q_IN))
    w.op("EXPAND_DIMS", [x, axis], [y])
    return w.to_bytes([x], [y])


@model
def batch_matmul_i8(rng):
    w = ModelWriter()
    a = w.tensor("a", (2, 3, 6), "int8", **_q(Q_IN))
    b = w.tensor("b", (1, 5, 6), "int8", **_q((0.03, -7)))
    y = w.tensor("y", (2, 3, 5), "int8", **_q((0.2, 4)))
    w.op("BATCH_MATMUL", [a, b], [y], ("BatchMatMulOptions", {"adj_x": False, "adj_y": True}))
    return w.to_bytes([a, b], [y])


@model
def batch_matmul_adj_x_i8(rng):
    w = ModelWriter()
    a = w.tensor("a", (2, 6, 3), "int8", **_q(Q_IN))
    bq = rng.integers(-127, 128, (6, 4)).astype(np.int8)
    b = w.tensor("b", (6, 4), "int8", bq, scale=0.02, zero_point=0)
    y = w.tensor("y", (2, 3, 4), "int8", **_q((0.15, -3)))
    w.op("BATCH_MATMUL", [a, b], [y], ("BatchMatMulOptions", {"adj_x": True, "adj_y": False}))
    return w.to_bytes([a], [y])


def _transpose_conv(rng, dtype: str, padding: int, stride: int, act: int, in_q, out_q,
                    bias_dtype: str) -> bytes:
    w = ModelWriter()
    n, h, wd, c, o, kh, kw = 1, 4, 3, 3, 4, 3, 2
    oh, ow = (h * stride, wd * stride) if padding == SAME else \
        ((h - 1) * stride + kh, (wd - 1) * stride + kw)
    shape = w.tensor("shape", (4,), "int32", np.array([n, oh, ow, o], np.int32))
    wq, ws = per_channel_weights(rng, (o, kh, kw, c), 0)
    wt = w.tensor("w", (o, kh, kw, c), "int8", wq, scale=ws, zero_point=0, axis=0)
    x = w.tensor("x", (n, h, wd, c), dtype, **_q(in_q))
    bias_scale = (np.float32(in_q[0]) * ws).astype(np.float32)
    span = 2000 if bias_dtype == "int32" else 200000
    bias = w.tensor("b", (o,), bias_dtype, rng.integers(-span, span, o).astype(bias_dtype),
                    scale=bias_scale, zero_point=0)
    y = w.tensor("y", (n, oh, ow, o), dtype, **_q(out_q))
    w.op("TRANSPOSE_CONV", [shape, wt, x, bias], [y], ("TransposeConvOptions", {
        "padding": padding, "stride_w": stride, "stride_h": stride,
        "fused_activation_function": act}))
    return w.to_bytes([x], [y])


@model
def transpose_conv_i8(rng):
    return _transpose_conv(rng, "int8", SAME, 2, RELU, Q_IN, (0.05, -90), "int32")


@model
def transpose_conv_valid_i8(rng):
    return _transpose_conv(rng, "int8", VALID, 1, NONE, Q_IN, (0.08, 5), "int32")


# ========================================================== 16x8: int16 data

Q16_IN = (0.0003, 0)       # int16 activations: zero point 0, reals in about [-9.8, 9.8]


def _conv_16x8(rng, depthwise: bool, padding: int, stride: int, act: int, out_scale) -> bytes:
    w = ModelWriter()
    h, wd, c = 6, 5, 3
    kh, kw = 3, 3
    o = c * 2 if depthwise else 4
    x = w.tensor("x", (1, h, wd, c), "int16", **_q(Q16_IN))
    wshape = (1, kh, kw, o) if depthwise else (o, kh, kw, c)
    axis = 3 if depthwise else 0
    wq, ws = per_channel_weights(rng, wshape, axis)
    wt = w.tensor("w", wshape, "int8", wq, scale=ws, zero_point=0, axis=axis)
    bias_scale = (np.float32(Q16_IN[0]) * ws).astype(np.float32)
    bias = w.tensor("b", (o,), "int64", rng.integers(-300000, 300000, o).astype(np.int64),
                    scale=bias_scale, zero_point=0)
    oh, ow = (-(-h // stride), -(-wd // stride)) if padding == SAME else \
        ((h - kh) // stride + 1, (wd - kw) // stride + 1)
    y = w.tensor("y", (1, oh, ow, o), "int16", **_q((out_scale, 0)))
    common = {"padding": padding, "stride_w": stride, "stride_h": stride,
              "fused_activation_function": act}
    if depthwise:
        w.op("DEPTHWISE_CONV_2D", [x, wt, bias], [y],
             ("DepthwiseConv2DOptions", {**common, "depth_multiplier": 2}))
    else:
        w.op("CONV_2D", [x, wt, bias], [y], ("Conv2DOptions", common))
    return w.to_bytes([x], [y])


@model
def conv2d_16x8(rng):
    return _conv_16x8(rng, False, SAME, 1, RELU, 0.0011)


@model
def conv2d_valid_16x8(rng):
    return _conv_16x8(rng, False, VALID, 2, NONE, 0.0017)


@model
def depthwise_conv2d_16x8(rng):
    return _conv_16x8(rng, True, SAME, 2, RELU6, 0.0004)


@model
def fully_connected_16x8(rng):
    w = ModelWriter()
    x = w.tensor("x", (2, 12), "int16", **_q(Q16_IN))
    wq, ws = per_channel_weights(rng, (5, 12), 0)
    wt = w.tensor("w", (5, 12), "int8", wq, scale=ws, zero_point=0, axis=0)
    b = w.tensor("b", (5,), "int64", rng.integers(-300000, 300000, 5).astype(np.int64),
                 scale=(np.float32(Q16_IN[0]) * ws).astype(np.float32), zero_point=0)
    y = w.tensor("y", (2, 5), "int16", **_q((0.0009, 0)))
    w.op("FULLY_CONNECTED", [x, wt, b], [y],
         ("FullyConnectedOptions", {"fused_activation_function": RELU}))
    return w.to_bytes([x], [y])


@model
def fully_connected_pertensor_16x8(rng):
    w = ModelWriter()
    x = w.tensor("x", (3, 2, 4), "int16", **_q(Q16_IN))
    wq = rng.integers(-127, 128, (6, 8)).astype(np.int8)
    wt = w.tensor("w", (6, 8), "int8", wq, scale=0.013, zero_point=0)
    y = w.tensor("y", (3, 6), "int16", **_q((0.0012, 0)))
    w.op("FULLY_CONNECTED", [x, wt, -1], [y], ("FullyConnectedOptions", {}))
    return w.to_bytes([x], [y])


@model
def transpose_conv_16x8(rng):
    return _transpose_conv(rng, "int16", SAME, 2, NONE, Q16_IN, (0.0006, 0), "int64")


@model
def add_16x8(rng):
    w = ModelWriter()
    a = w.tensor("a", (1, 3, 4, 2), "int16", **_q(Q16_IN))
    b = w.tensor("b", (4, 2), "int16", **_q((0.0002, 0)))
    y = w.tensor("y", (1, 3, 4, 2), "int16", **_q((0.00045, 0)))
    w.op("ADD", [a, b], [y], ("AddOptions", {"fused_activation_function": RELU6,
                                             "pot_scale_int16": False}))
    return w.to_bytes([a, b], [y])


@model
def add_elementwise_16x8(rng):
    w = ModelWriter()
    a = w.tensor("a", (2, 7), "int16", **_q((0.0004, 0)))
    b = w.tensor("b", (2, 7), "int16", **_q(Q16_IN))
    y = w.tensor("y", (2, 7), "int16", **_q((0.0005, 0)))
    w.op("ADD", [a, b], [y], ("AddOptions", {"pot_scale_int16": False}))
    return w.to_bytes([a, b], [y])


# ============================================================ control flow

@model
def while_f32(rng):
    """``for i in 0..5: acc = tanh(acc * x + x * w)`` as WHILE (a counter
    in float: the cond subgraph compares with LESS)."""
    w = ModelWriter()
    x = w.tensor("x", (2, 3), "float32")
    i0 = w.tensor("i0", (), "float32", np.float32(0))
    i_f = w.tensor("i_f", (), "float32")
    acc_f = w.tensor("acc_f", (2, 3), "float32")
    x_f = w.tensor("x_f", (2, 3), "float32")
    cond = w.subgraph()
    ci, ca, cx = (cond.tensor(n, s, "float32") for n, s in
                  (("i", ()), ("acc", (2, 3)), ("x", (2, 3))))
    limit = cond.tensor("limit", (), "float32", np.float32(5))
    go = cond.tensor("go", (), "bool")
    cond.op("LESS", [ci, limit], [go])
    body = w.subgraph()
    bi, ba, bx = (body.tensor(n, s, "float32") for n, s in
                  (("i", ()), ("acc", (2, 3)), ("x", (2, 3))))
    one = body.tensor("one", (), "float32", np.float32(1))
    wt = body.tensor("w", (2, 3), "float32", rng.normal(0, 0.5, (2, 3)).astype(np.float32))
    i2, m, xw, s, a2 = (body.tensor(n, sh, "float32") for n, sh in
                        (("i2", ()), ("m", (2, 3)), ("xw", (2, 3)), ("s", (2, 3)),
                         ("acc2", (2, 3))))
    body.op("ADD", [bi, one], [i2], ("AddOptions", {"fused_activation_function": NONE}))
    body.op("MUL", [ba, bx], [m], ("MulOptions", {"fused_activation_function": NONE}))
    body.op("MUL", [bx, wt], [xw], ("MulOptions", {"fused_activation_function": NONE}))
    body.op("ADD", [m, xw], [s], ("AddOptions", {"fused_activation_function": NONE}))
    body.op("TANH", [s], [a2])
    c = w.add_subgraph(cond, [ci, ca, cx], [go])
    b = w.add_subgraph(body, [bi, ba, bx], [i2, a2, bx])
    w.op("WHILE", [i0, x, x], [i_f, acc_f, x_f],
         ("WhileOptions", {"cond_subgraph_index": c, "body_subgraph_index": b}))
    return w.to_bytes([x], [acc_f])


@model
def if_f32(rng):
    """``y = tanh(x) * 2 if mean(x) > 0 else logistic(x)`` as IF."""
    w = ModelWriter()
    x = w.tensor("x", (2, 3), "float32")
    axes = w.tensor("axes", (2,), "int32", np.array([0, 1], np.int32))
    m = w.tensor("m", (), "float32")
    zero = w.tensor("zero", (), "float32", np.float32(0))
    c = w.tensor("c", (), "bool")
    y = w.tensor("y", (2, 3), "float32")
    w.op("MEAN", [x, axes], [m], ("ReducerOptions", {"keep_dims": False}))
    w.op("GREATER", [m, zero], [c])
    then = w.subgraph()
    tx, tt, ty = (then.tensor(n, (2, 3), "float32") for n in ("x", "t", "y"))
    two = then.tensor("two", (), "float32", np.float32(2))
    then.op("TANH", [tx], [tt])
    then.op("MUL", [tt, two], [ty], ("MulOptions", {"fused_activation_function": NONE}))
    other = w.subgraph()
    ex, ey = (other.tensor(n, (2, 3), "float32") for n in ("x", "y"))
    other.op("LOGISTIC", [ex], [ey])
    ti = w.add_subgraph(then, [tx], [ty])
    ei = w.add_subgraph(other, [ex], [ey])
    w.op("IF", [c, x], [y], ("IfOptions", {"then_subgraph_index": ti,
                                           "else_subgraph_index": ei}))
    return w.to_bytes([x], [y])


# ================================================================ networks

@model
def cnn_f32(rng):
    """conv(relu) -> depthwise(relu6) -> max pool -> 1x1 conv + residual add
    -> mean -> fully connected -> softmax."""
    w = ModelWriter()
    x = w.tensor("input", (1, 8, 8, 2), "float32")

    def const(name, shape, std):
        return w.tensor(name, shape, "float32", rng.normal(0, std, shape).astype(np.float32))

    c1 = w.tensor("conv1", (1, 8, 8, 4), "float32")
    w.op("CONV_2D", [x, const("w1", (4, 3, 3, 2), 0.4), const("b1", (4,), 0.1)], [c1],
         ("Conv2DOptions", {"padding": SAME, "stride_w": 1, "stride_h": 1,
                            "fused_activation_function": RELU}))
    d1 = w.tensor("dw1", (1, 4, 4, 4), "float32")
    w.op("DEPTHWISE_CONV_2D", [c1, const("w2", (1, 3, 3, 4), 0.4), const("b2", (4,), 0.1)],
         [d1], ("DepthwiseConv2DOptions", {"padding": SAME, "stride_w": 2, "stride_h": 2,
                                           "depth_multiplier": 1,
                                           "fused_activation_function": RELU6}))
    p1 = w.tensor("pool1", (1, 2, 2, 4), "float32")
    w.op("MAX_POOL_2D", [d1], [p1], ("Pool2DOptions", {
        "padding": VALID, "stride_w": 2, "stride_h": 2, "filter_width": 2,
        "filter_height": 2}))
    c2 = w.tensor("conv2", (1, 2, 2, 4), "float32")
    w.op("CONV_2D", [p1, const("w3", (4, 1, 1, 4), 0.4), const("b3", (4,), 0.1)], [c2],
         ("Conv2DOptions", {"padding": VALID, "stride_w": 1, "stride_h": 1}))
    r = w.tensor("residual", (1, 2, 2, 4), "float32")
    w.op("ADD", [c2, p1], [r], ("AddOptions", {"fused_activation_function": RELU}))
    m = w.tensor("mean", (1, 4), "float32")
    axes = w.tensor("axes", (2,), "int32", np.array([1, 2], np.int32))
    w.op("MEAN", [r, axes], [m], ("ReducerOptions", {"keep_dims": False}))
    f = w.tensor("logits", (1, 3), "float32")
    w.op("FULLY_CONNECTED", [m, const("w4", (3, 4), 0.5), const("b4", (3,), 0.1)], [f],
         ("FullyConnectedOptions", {}))
    y = w.tensor("probs", (1, 3), "float32")
    w.op("SOFTMAX", [f], [y], ("SoftmaxOptions", {"beta": 1.0}))
    return w.to_bytes([x], [y])


def _cnn_i8_body(rng, w: ModelWriter, x: int) -> int:
    """conv(relu, per-channel) -> depthwise(relu6, per-channel) -> avg pool
    -> reshape -> fully connected; int8 in, int8 logits out."""
    q1, q2, q3 = (0.05, -128), (0.04, -128), (0.1, 10)

    def conv_weights(name, shape, axis, in_scale, n_out):
        wq, ws = per_channel_weights(rng, shape, axis)
        wt = w.tensor(name, shape, "int8", wq, scale=ws, zero_point=0, axis=axis)
        bias = w.tensor(name + "_bias", (n_out,), "int32",
                        rng.integers(-1500, 1500, n_out).astype(np.int32),
                        scale=(np.float32(in_scale) * ws).astype(np.float32), zero_point=0)
        return wt, bias

    c1 = w.tensor("conv1", (1, 6, 6, 4), "int8", **_q(q1))
    w1, b1 = conv_weights("w1", (4, 3, 3, 2), 0, Q_IN[0], 4)
    w.op("CONV_2D", [x, w1, b1], [c1], ("Conv2DOptions", {
        "padding": SAME, "stride_w": 1, "stride_h": 1, "fused_activation_function": RELU}))
    d1 = w.tensor("dw1", (1, 3, 3, 4), "int8", **_q(q2))
    w2, b2 = conv_weights("w2", (1, 3, 3, 4), 3, q1[0], 4)
    w.op("DEPTHWISE_CONV_2D", [c1, w2, b2], [d1], ("DepthwiseConv2DOptions", {
        "padding": SAME, "stride_w": 2, "stride_h": 2, "depth_multiplier": 1,
        "fused_activation_function": RELU6}))
    p1 = w.tensor("pool1", (1, 2, 2, 4), "int8", **_q(q2))
    w.op("MAX_POOL_2D", [d1], [p1], ("Pool2DOptions", {
        "padding": SAME, "stride_w": 2, "stride_h": 2, "filter_width": 2, "filter_height": 2}))
    flat = w.tensor("flat", (1, 16), "int8", **_q(q2))
    shape = w.tensor("shape", (2,), "int32", np.array([1, 16], np.int32))
    w.op("RESHAPE", [p1, shape], [flat])
    wq = rng.integers(-127, 128, (3, 16)).astype(np.int8)
    wf = w.tensor("w3", (3, 16), "int8", wq, scale=0.02, zero_point=0)
    bf = w.tensor("w3_bias", (3,), "int32", rng.integers(-500, 500, 3).astype(np.int32),
                  scale=np.float32(q2[0]) * np.float32(0.02), zero_point=0)
    y = w.tensor("logits", (1, 3), "int8", **_q(q3))
    w.op("FULLY_CONNECTED", [flat, wf, bf], [y], ("FullyConnectedOptions", {}))
    return y


@model
def cnn_i8(rng):
    w = ModelWriter()
    x = w.tensor("input", (1, 6, 6, 2), "int8", **_q(Q_IN))
    y = _cnn_i8_body(rng, w, x)
    return w.to_bytes([x], [y])


@model
def cnn_qdq(rng):
    """Float I/O: QUANTIZE -> the int8 network -> DEQUANTIZE."""
    w = ModelWriter()
    xf = w.tensor("input", (1, 6, 6, 2), "float32")
    x = w.tensor("input_q", (1, 6, 6, 2), "int8", **_q(Q_IN))
    w.op("QUANTIZE", [xf], [x])
    y = _cnn_i8_body(rng, w, x)
    yf = w.tensor("output", (1, 3), "float32")
    w.op("DEQUANTIZE", [y], [yf])
    return w.to_bytes([xf], [yf])


@model
def cnn_u8io(rng):
    """uint8 I/O: QUANTIZE uint8 -> int8, the int8 network, QUANTIZE back."""
    w = ModelWriter()
    xu = w.tensor("input", (1, 6, 6, 2), "uint8", **_q((Q_IN[0], Q_IN[1] + 128)))
    x = w.tensor("input_q", (1, 6, 6, 2), "int8", **_q(Q_IN))
    w.op("QUANTIZE", [xu], [x])
    y = _cnn_i8_body(rng, w, x)
    yu = w.tensor("output", (1, 3), "uint8", **_q((0.1, 138)))
    w.op("QUANTIZE", [y], [yu])
    return w.to_bytes([xu], [yu])


# ============================================================== bad inputs

@model
def bad_unsupported_op(rng):
    w = ModelWriter()
    x = w.tensor("x", (2, 3), "float32")
    y = w.tensor("y", (2, 3), "float32")
    z = w.tensor("z", (2, 3), "float32")
    w.op("RELU", [x], [y])
    w.op("SIN", [y], [z])
    return w.to_bytes([x], [z])


@model
def bad_custom_op(rng):
    w = ModelWriter()
    x = w.tensor("x", (2, 3), "float32")
    y = w.tensor("y", (2, 3), "float32")
    w.op("CUSTOM", [x], [y], custom_code="MyCustomOp")
    return w.to_bytes([x], [y])


@model
def bad_dynamic_shape(rng):
    w = ModelWriter()
    x = w.tensor("x", (1, 3), "float32", signature=(-1, 3))
    y = w.tensor("y", (1, 3), "float32", signature=(-1, 3))
    w.op("RELU", [x], [y])
    return w.to_bytes([x], [y])


@model
def bad_schema_version(rng):
    w = ModelWriter()
    x = w.tensor("x", (2, 3), "float32")
    y = w.tensor("y", (2, 3), "float32")
    w.op("RELU", [x], [y])
    return w.to_bytes([x], [y], version=2)


def write_all(out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, make in MODELS.items():
        path = out / f"{name}.tflite"
        path.write_bytes(make())
        paths.append(path)
    return paths


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else OUT
    written = write_all(target)
    print(f"wrote {len(written)} models to {target}")
