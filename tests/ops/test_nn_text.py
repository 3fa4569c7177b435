"""The nn and image operators through the text format, type inference and
the interpreter: each call with attributes parses, prints and re-parses to
the same text; weights given as unannotated parameters get their types
from the attributes; small networks evaluate like their NumPy composition;
bad calls give a diagnostic with a position."""

from __future__ import annotations

import re

import numpy as np
import pytest

import aot
from aot.ir.types import TensorType
from nn_helpers import assert_close
from op_helpers import program

RNG = np.random.default_rng(5)

#: (parameter list, body) per operator; every attribute kind is exercised.
CALLS = [
    ("%x: Tensor[(2, 3), float32]", "nn.relu(%x)"),
    ("%x: Tensor[(2, 3), float32]", "nn.leaky_relu(%x, alpha=0f)"),
    ("%x: Tensor[(2, 3), float32], %a", "nn.prelu(%x, %a)"),
    ("%x: Tensor[(2, 3, 4), float32]", "nn.softmax(%x, axis=1)"),
    ("%x: Tensor[(2, 3), float32]", "nn.log_softmax(%x)"),
    ("%x: Tensor[(2, 3), float32], %w", "nn.dense(%x, %w, units=5)"),
    ("%x: Tensor[(2, 3), int8], %w: Tensor[(5, 3), int8]",
     'nn.dense(%x, %w, units=5, out_dtype="int32")'),
    ("%x: Tensor[(3, 2), float32], %w", "nn.matmul(%x, %w, units=4, transpose_a=True)"),
    ("%x: Tensor[(2, 3, 4), float32], %y: Tensor[(2, 5, 4), float32]",
     'nn.batch_matmul(%x, %y, out_dtype="float32", transpose_b=True)'),
    ("%x: Tensor[(2, 3, 4, 4), float32], %b", "nn.bias_add(%x, %b)"),
    ("%x: Tensor[(2, 3, 4, 4), float32], %g, %b, %m, %v",
     "nn.batch_norm(%x, %g, %b, %m, %v, axis=1, epsilon=0.001f, center=False)"),
    ("%x: Tensor[(2, 3, 4), float32], %g, %b", "nn.layer_norm(%x, %g, %b, epsilon=1e-06f)"),
    ("%x: Tensor[(2, 3), float32]", "nn.dropout(%x, rate=0.2f)"),
    ("%x: Tensor[(2, 3, 4), float32]", "nn.batch_flatten(%x)"),
    ("%x: Tensor[(1, 3, 8, 8), float32], %w",
     "nn.conv2d(%x, %w, strides=[2, 2], padding=[1, 1, 1, 1], channels=6, kernel_size=[3, 3])"),
    ("%x: Tensor[(1, 8, 8, 4), int16], %w",
     'nn.conv2d(%x, %w, padding=[1, 1, 1, 1], groups=4, channels=4, kernel_size=[3, 3], '
     'data_layout="NHWC", kernel_layout="HWOI", out_dtype="int32")'),
    ("%x: Tensor[(1, 3, 10), float32], %w",
     "nn.conv1d(%x, %w, padding=[1, 1], dilation=[2], channels=4, kernel_size=[3])"),
    ("%x: Tensor[(1, 4, 5, 5), float32], %w",
     "nn.conv2d_transpose(%x, %w, channels=2, kernel_size=[3, 3], strides=[2, 2], "
     "output_padding=[1, 1])"),
    ("%x: Tensor[(1, 3, 9, 9), float32]",
     "nn.max_pool2d(%x, pool_size=[3, 3], strides=[2, 2], padding=[1, 1], ceil_mode=True)"),
    ("%x: Tensor[(1, 9, 9, 3), float32]",
     'nn.avg_pool2d(%x, pool_size=[2, 2], layout="NHWC", count_include_pad=True)'),
    ("%x: Tensor[(1, 3, 9, 9), float32]", "nn.global_avg_pool2d(%x)"),
    ("%x: Tensor[(1, 9, 9, 3), float32]", 'nn.global_max_pool2d(%x, layout="NHWC")'),
    ("%x: Tensor[(1, 3, 4, 4), float32]",
     'nn.pad(%x, 0f, pad_width=[[0, 0], [0, 0], [2, 2], [1, 1]], pad_mode="reflect")'),
    ("%x: Tensor[(1, 3, 4, 4), float32]",
     'nn.upsampling(%x, scale_h=2f, scale_w=2f, method="bilinear", align_corners=True)'),
    ("%x: Tensor[(1, 3, 4, 4), float32]",
     'image.resize2d(%x, size=[8, 6], method="nearest_neighbor", '
     'coordinate_transformation_mode="asymmetric", rounding_method="floor")'),
]


@pytest.mark.parametrize("params,body", CALLS, ids=[b.split("(")[0] for _, b in CALLS])
def test_print_parse_round_trip(params, body):
    mod = aot.parse(program(params, body))
    printed = str(mod)
    again = aot.parse(printed)
    assert str(again) == printed
    # the attributes survive printing, and they are the ones written
    assert again["main"].body.attrs == mod["main"].body.attrs
    for key in re.findall(r"(\w+)=", body):
        assert hasattr(mod["main"].body.attrs, key), key


@pytest.mark.parametrize("params,body", CALLS, ids=[b.split("(")[0] for _, b in CALLS])
def test_every_call_type_checks_and_types_its_parameters(params, body):
    mod = aot.infer_types(aot.parse(program(params, body)))
    for p in mod["main"].params:
        t = p.checked_type
        assert isinstance(t, TensorType) and t.is_static, (p.name_hint, t)
    printed = str(mod)
    assert str(aot.parse(printed)) == printed


def param_types(text: str) -> dict[str, TensorType]:
    mod = aot.infer_types(aot.parse(text))
    return {p.name_hint: p.checked_type for p in mod["main"].params}


def test_weights_are_inferred_from_attributes_through_a_network():
    text = program(
        "%x: Tensor[(1, 3, 8, 8), float32], %w, %b, %g, %be, %m, %v, %wd",
        "%0 = nn.conv2d(%x, %w, padding=[1, 1], channels=4, kernel_size=[3, 3]);\n"
        "  %1 = nn.bias_add(%0, %b);\n"
        "  %2 = nn.batch_norm(%1, %g, %be, %m, %v);\n"
        "  %3 = nn.global_avg_pool2d(%2.0);\n"
        "  nn.dense(nn.batch_flatten(%3), %wd, units=10)")
    types = param_types(text)
    f32 = lambda *s: TensorType(s, aot.ir.dtype.DType.FLOAT32)  # noqa: E731
    assert types["w"] == f32(4, 3, 3, 3)
    assert all(types[k] == f32(4) for k in ("b", "g", "be", "m", "v"))
    assert types["wd"] == f32(10, 4)


def test_small_network_evaluates_like_numpy():
    text = program(
        "%x: Tensor[(1, 2, 6, 6), float32], %w: Tensor[(3, 2, 3, 3), float32], "
        "%b: Tensor[(3), float32], %wd: Tensor[(4, 3), float32]",
        "%0 = nn.conv2d(%x, %w, padding=[1, 1]);\n"
        "  %1 = nn.relu(nn.bias_add(%0, %b));\n"
        "  %2 = nn.max_pool2d(%1, pool_size=[2, 2], strides=[2, 2]);\n"
        "  %3 = nn.global_avg_pool2d(%2);\n"
        "  nn.softmax(nn.dense(nn.batch_flatten(%3), %wd))")
    x = RNG.standard_normal((1, 2, 6, 6)).astype(np.float32)
    w = RNG.standard_normal((3, 2, 3, 3)).astype(np.float32)
    b = RNG.standard_normal(3).astype(np.float32)
    wd = RNG.standard_normal((4, 3)).astype(np.float32)
    got = aot.interpret(aot.parse(text), x, w, b, wd)
    # NumPy composition, written independently
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    conv = np.zeros((1, 3, 6, 6))
    for i in range(3):
        for j in range(3):
            conv += np.einsum("nchw,oc->nohw", xp[:, :, i:i + 6, j:j + 6], w[:, :, i, j])
    act = np.maximum(conv + b[None, :, None, None], 0)
    pooled = act.reshape(1, 3, 3, 2, 3, 2).max(axis=(3, 5))
    feat = pooled.mean(axis=(2, 3))
    logits = feat @ wd.T.astype(np.float64)
    e = np.exp(logits - logits.max())
    assert_close(got, (e / e.sum()).astype(np.float32))


def test_int8_network_is_exact():
    text = program(
        "%x: Tensor[(1, 2, 5, 5), uint8], %w: Tensor[(4, 2, 3, 3), int8]",
        '%0 = nn.conv2d(%x, %w, padding=[1, 1], channels=4, kernel_size=[3, 3], '
        'out_dtype="int32");\n'
        "  nn.max_pool2d(%0, pool_size=[3, 3])")
    x = RNG.integers(0, 256, (1, 2, 5, 5)).astype(np.uint8)
    w = RNG.integers(-128, 128, (4, 2, 3, 3)).astype(np.int8)
    got = aot.interpret(aot.parse(text), x, w)
    xp = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    conv = np.zeros((1, 4, 5, 5), np.int64)
    for i in range(3):
        for j in range(3):
            conv += np.einsum("nchw,oc->nohw", xp[:, :, i:i + 5, j:j + 5],
                              w[:, :, i, j].astype(np.int64))
    windows = np.lib.stride_tricks.sliding_window_view(conv, (3, 3), axis=(2, 3))
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, windows.max(axis=(-2, -1)).astype(np.int32))


def test_dropout_tuple_projects():
    text = program("%x: Tensor[(2, 3), float32]", "%0 = nn.dropout(%x);\n  %0.0")
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    np.testing.assert_array_equal(aot.interpret(aot.parse(text), x), x)


@pytest.mark.parametrize("params,body,message", [
    ("%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 2, 3, 3), float32]",
     "nn.conv2d(%x, %w)", "`nn.conv2d`: the data's 3 input channels divided by groups=1"),
    ("%x: Tensor[(8, 16), float32], %w: Tensor[(4, 15), float32]", "nn.dense(%x, %w)",
     "`nn.dense`: the reduced dimension of data (8, 16) is 16"),
    ("%x: Tensor[(1, 3, 2, 2), float32]", "nn.max_pool2d(%x, pool_size=[3, 3])",
     "`nn.max_pool2d`: the output would be empty along H"),
    ("%x: Tensor[(2, 3), int32]", "nn.softmax(%x)", "`nn.softmax`: needs a floating-point"),
])
def test_type_errors_are_diagnostics_with_positions(params, body, message):
    with pytest.raises(aot.DiagnosticError) as info:
        aot.infer_types(aot.parse(program(params, body), "model.relay"))
    text = str(info.value)
    assert "model.relay:3:3: error:" in text and message in text


@pytest.mark.parametrize("body,message", [
    ("nn.conv2d(%x, %x, data_layout=\"NCHW4c\")", "packed layouts are not supported"),
    ("nn.max_pool2d(%x, pool_size=[0, 1])", "pool_size values must be >= 1"),
    ("image.resize2d(%x, size=[4, 4], method=\"area\")", "expected one of"),
    ("nn.conv2d(%x, %x, bogus=1)", "unknown attribute `bogus`"),
])
def test_bad_attributes_are_parse_diagnostics(body, message):
    with pytest.raises(aot.DiagnosticError) as info:
        aot.parse(program("%x: Tensor[(1, 3, 8, 8), float32]", body), "model.relay")
    assert message in str(info.value) and "model.relay:3:" in str(info.value)
