"""nn.conv1d / nn.conv2d / nn.conv2d_transpose against a direct loop
reference, over layouts, strides, padding, dilation and groups; relations
accepting, solving the weight from attributes, and rejecting."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aot.ir.attrs import AttrError
from aot.ir.dtype import DType
from aot.ir.registry import PatternKind, RelationError, Solved
from aot.ir.types import ANY, IncompleteType
from cases import conv
from nn_helpers import T, assert_close, get, infer, run, sample

RNG = np.random.default_rng(2)


def pads4(padding):
    p = list(padding)
    if len(p) == 1:
        return p * 4
    if len(p) == 2:
        return [p[0], p[1], p[0], p[1]]
    return p


def conv2d_ref(x, w, strides, padding, dilation, groups, out_dtype):
    """Direct definition, NCHW x OIHW, one output element at a time, in
    Python integers or float64."""
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    top, left, bottom, right = pads4(padding)
    oh = (h + top + bottom - (kh - 1) * dilation[0] - 1) // strides[0] + 1
    ow = (wd + left + right - (kw - 1) * dilation[1] - 1) // strides[1] + 1
    is_float = np.dtype(out_dtype).kind == "f"
    xs = x.astype(np.float64) if is_float else x.astype(object)
    ws = w.astype(np.float64) if is_float else w.astype(object)
    out = np.zeros((n, o, oh, ow), dtype=np.float64 if is_float else object)
    og = o // groups
    for b, oc, y, xx in itertools.product(range(n), range(o), range(oh), range(ow)):
        g = oc // og
        acc = 0
        for ic, i, j in itertools.product(range(cg), range(kh), range(kw)):
            iy = y * strides[0] - top + i * dilation[0]
            ix = xx * strides[1] - left + j * dilation[1]
            if 0 <= iy < h and 0 <= ix < wd:
                acc += xs[b, g * cg + ic, iy, ix] * ws[oc, ic, i, j]
        out[b, oc, y, xx] = acc
    return wrap(out, out_dtype)


def wrap(out, out_dtype):
    dt = np.dtype(out_dtype)
    if dt.kind == "f":
        return out.astype(np.float64).astype(dt)
    bits = dt.itemsize * 8
    flat = [int(v) % (1 << bits) for v in out.flat]
    if dt.kind == "i":
        flat = [v - (1 << bits) if v >= (1 << (bits - 1)) else v for v in flat]
    return np.array(flat, dtype=dt).reshape(out.shape)


def conv2d_transpose_ref(x, w, strides, padding, output_padding, dilation, groups, out_dtype):
    """Scatter definition, NCHW x IOHW."""
    n, c, h, wd = x.shape
    _, og, kh, kw = w.shape
    top, left, bottom, right = pads4(padding)
    oh = (h - 1) * strides[0] + (kh - 1) * dilation[0] + 1 - top - bottom + output_padding[0]
    ow = (wd - 1) * strides[1] + (kw - 1) * dilation[1] + 1 - left - right + output_padding[1]
    is_float = np.dtype(out_dtype).kind == "f"
    out = np.zeros((n, og * groups, oh, ow), dtype=np.float64 if is_float else object)
    cg = c // groups
    for b, ic, y, xx, oc, i, j in itertools.product(range(n), range(c), range(h), range(wd),
                                                     range(og), range(kh), range(kw)):
        g = ic // cg
        oy = y * strides[0] + i * dilation[0] - top
        ox = xx * strides[1] + j * dilation[1] - left
        if 0 <= oy < oh and 0 <= ox < ow:
            xv, wv = x[b, ic, y, xx], w[ic, oc, i, j]
            out[b, g * og + oc, oy, ox] += float(xv) * float(wv) if is_float else int(xv) * int(wv)
    return wrap(out, out_dtype)


@pytest.mark.parametrize("xs,ws,strides,padding,dilation,groups", conv.CONV2D)
@pytest.mark.parametrize("dtypes", conv.DTYPES)
def test_conv2d_nchw(xs, ws, strides, padding, dilation, groups, dtypes):
    dt, wdt, out = dtypes
    x = sample(RNG, xs, dt, -128, 127)
    w = sample(RNG, ws, wdt, -128, 127)
    attrs = dict(strides=list(strides), padding=list(padding), dilation=list(dilation),
                 groups=groups)
    if out:
        attrs["out_dtype"] = out
    got = run("nn.conv2d", x, w, **attrs)
    assert_close(got, conv2d_ref(x, w, strides, padding, dilation, groups, out or dt))


def test_conv2d_int8_accumulation_wraps_in_the_output_type():
    x = np.full((1, 8, 3, 3), 127, np.int8)
    w = np.full((1, 8, 3, 3), 127, np.int8)
    got = run("nn.conv2d", x, w)  # out dtype int8: the sum 8*9*127*127 wraps
    assert got.dtype == np.int8
    assert int(got[0, 0, 0, 0]) == wrap(np.array([8 * 9 * 127 * 127], dtype=object), "int8")[0]
    got32 = run("nn.conv2d", x, w, out_dtype="int32")
    assert int(got32[0, 0, 0, 0]) == 8 * 9 * 127 * 127


@pytest.mark.parametrize("data_layout,kernel_layout", conv.LAYOUTS)
@pytest.mark.parametrize("out_layout", conv.OUT_LAYOUTS)
def test_conv2d_layouts_agree_with_nchw(data_layout, kernel_layout, out_layout):
    x = sample(RNG, (2, 4, 6, 5), "float32")
    w = sample(RNG, (6, 2, 3, 2), "float32")
    kwargs = dict(strides=[2, 1], padding=[1, 0, 0, 1], groups=2)
    expected = conv2d_ref(x, w, (2, 1), (1, 0, 0, 1), (1, 1), 2, "float32")
    xl = np.transpose(x, ["NCHW".index(c) for c in data_layout])
    wl = np.transpose(w, ["OIHW".index(c) for c in kernel_layout])
    got = run("nn.conv2d", xl, wl, data_layout=data_layout, kernel_layout=kernel_layout,
              out_layout=out_layout, **kwargs)
    layout = out_layout or data_layout
    assert_close(got, np.transpose(expected, ["NCHW".index(c) for c in layout]))


def test_conv2d_depthwise_nhwc_hwoi():
    # the corpus' int16 depthwise convolution: NHWC data, HWOI weight (kh, kw, C, 1)
    x = sample(RNG, (1, 5, 5, 4), "int16")
    w = sample(RNG, (3, 3, 4, 1), "int16")
    got = run("nn.conv2d", x, w, padding=[1, 1, 1, 1], groups=4, channels=4,
              kernel_size=[3, 3], data_layout="NHWC", kernel_layout="HWOI", out_dtype="int32")
    expected = conv2d_ref(np.transpose(x, (0, 3, 1, 2)), np.transpose(w, (2, 3, 0, 1)),
                          (1, 1), (1, 1), (1, 1), 4, "int32")
    assert_close(got, np.transpose(expected, (0, 2, 3, 1)))


@pytest.mark.parametrize("xs,ws,stride,padding,dilation,groups", conv.CONV1D)
@pytest.mark.parametrize("layout", ["NCW", "NWC"])
def test_conv1d(xs, ws, stride, padding, dilation, groups, layout):
    x = sample(RNG, xs, "float32")
    w = sample(RNG, ws, "float32")
    p = padding * 2 if len(padding) == 1 else padding
    expected = conv2d_ref(x[:, :, None, :], w[:, :, None, :], (1, stride), (0, p[0], 0, p[1]),
                          (1, dilation), groups, "float32")[:, :, 0, :]
    xl = x if layout == "NCW" else np.transpose(x, (0, 2, 1))
    got = run("nn.conv1d", xl, w, strides=[stride], padding=list(padding), dilation=[dilation],
              groups=groups, data_layout=layout)
    assert_close(got, expected if layout == "NCW" else np.transpose(expected, (0, 2, 1)))


@pytest.mark.parametrize("xs,ws,strides,padding,output_padding,dilation,groups",
                         conv.TRANSPOSE)
@pytest.mark.parametrize("dtype,out", [("float32", None), ("int8", "int32")])
def test_conv2d_transpose(xs, ws, strides, padding, output_padding, dilation, groups, dtype, out):
    x = sample(RNG, xs, dtype)
    w = sample(RNG, ws, dtype)
    attrs = dict(strides=list(strides), padding=list(padding),
                 output_padding=list(output_padding), dilation=list(dilation), groups=groups)
    if out:
        attrs["out_dtype"] = out
    got = run("nn.conv2d_transpose", x, w, **attrs)
    assert_close(got, conv2d_transpose_ref(x, w, strides, padding, output_padding, dilation,
                                           groups, out or dtype))


def test_conv2d_transpose_is_the_adjoint_of_conv2d():
    # <conv(x, w), y> == <x, conv_transpose(y, w)> for the same weight
    x = sample(RNG, (1, 3, 7, 7), "float64")
    w = sample(RNG, (4, 3, 3, 3), "float64")   # OIHW for conv2d == IOHW (in=4) for transpose
    y = sample(RNG, (1, 4, 3, 3), "float64")
    cx = run("nn.conv2d", x, w, strides=[2, 2])
    ty = run("nn.conv2d_transpose", y, w, strides=[2, 2])
    np.testing.assert_allclose(np.sum(cx * y), np.sum(x * ty), rtol=1e-10)


# ------------------------------------------------------------ relations

def test_conv2d_relation_solves_the_weight_from_channels_and_kernel_size():
    op = get("nn.conv2d")
    at = op.attrs_type.from_raw({"padding": [1, 1], "channels": 16, "kernel_size": [3, 3]})
    assert op.rel([T((1, 3, 32, 32)), IncompleteType()], at) == \
        Solved(T((1, 16, 32, 32)), (None, T((16, 3, 3, 3))))


@pytest.mark.parametrize("data,raw,weight", [
    # grouped and depthwise weights are inferred too
    (T((1, 64, 8, 8)), {"groups": 32, "channels": 128, "kernel_size": [3, 3]},
     T((128, 2, 3, 3))),
    (T((1, 8, 8, 8), "int16"), {"groups": 8, "channels": 8, "kernel_size": [3, 3],
                                "data_layout": "NHWC", "kernel_layout": "HWOI"},
     T((3, 3, 8, 1), "int16")),
    (T((1, 8, 8, 3)), {"channels": 4, "kernel_size": [1, 2], "data_layout": "NHWC",
                       "kernel_layout": "HWIO"}, T((1, 2, 3, 4))),
    (T((2, 3, 10)), {"channels": 5, "kernel_size": [3]}, T((5, 3, 3))),
])
def test_conv_relation_weight_inference(data, raw, weight):
    name = "nn.conv1d" if data.ndim == 3 else "nn.conv2d"
    op = get(name)
    r = op.rel([data, IncompleteType()], op.attrs_type.from_raw(raw))
    assert isinstance(r, Solved) and r.args == (None, weight)


@pytest.mark.parametrize("args,raw,out", [
    ([T((1, 3, 32, 32)), T((8, 3, 5, 5))], {"strides": [2, 2], "padding": [2, 2]},
     T((1, 8, 16, 16))),
    ([T((1, 3, 32, 32)), T((8, 3, 5, 5))], {"padding": [1, 2, 3, 4], "dilation": [2, 1]},
     T((1, 8, 28, 34))),
    ([T((1, 3, 32, 32), "int8"), T((8, 3, 3, 3), "int8")], {"out_dtype": "int32"},
     T((1, 8, 30, 30), "int32")),
    ([T((ANY, 3, ANY, 32)), T((8, 3, 3, 3))], {}, T((ANY, 8, ANY, 30))),
    ([T((1, 32, 32, 3)), T((3, 3, 3, 8))], {"data_layout": "NHWC", "kernel_layout": "HWIO"},
     T((1, 30, 30, 8))),
    ([T((1, 32, 32, 3)), T((3, 3, 3, 8))], {"data_layout": "NHWC", "kernel_layout": "HWIO",
                                            "out_layout": "NCHW"}, T((1, 8, 30, 30))),
    ([T((1, 3, 32, 32)), T((8, 3, 3, 3))], {"channels": 8, "kernel_size": [3, 3]},
     T((1, 8, 30, 30))),
    ([T((1, 3, 32, 32)), T((8, ANY, 3, 3))], {}, T((1, 8, 30, 30))),
])
def test_conv2d_relation_accepts(args, raw, out):
    assert infer("nn.conv2d", args, **raw) == out


@pytest.mark.parametrize("args,raw,match", [
    ([T((1, 3, 8, 8)), T((4, 4, 3, 3))], {},
     "3 input channels divided by groups=1 must match the weight's 4"),
    ([T((1, 4, 8, 8)), T((4, 4, 3, 3))], {"groups": 2},
     "4 input channels divided by groups=2 must match the weight's 4"),
    ([T((1, 3, 8, 8)), T((4, 3, 3, 3))], {"groups": 2}, "3 input channels are not divisible"),
    ([T((1, 3, 8, 8)), T((4, 3, 3, 3))], {"channels": 5}, "channels=5 does not match"),
    ([T((1, 3, 8, 8)), T((4, 3, 3, 3))], {"kernel_size": [5, 5]},
     r"kernel_size=\[5, 5\] does not match"),
    ([T((1, 3, 8, 8)), T((4, 3, 3, 3))], {"channels": 4, "kernel_size": [3, 2]},
     r"weight must have shape \(4, 3, 3, 2\)"),
    ([T((1, 3, 2, 8)), T((4, 3, 3, 3))], {}, "empty along H: input size 2, kernel 3"),
    ([T((1, 3, 8)), T((4, 3, 3, 3))], {}, "rank 3 .* data_layout='NCHW' needs rank 4"),
    ([T((1, 3, 8, 8)), T((4, 3, 3))], {}, "kernel_layout='OIHW' needs rank 4"),
    ([T((1, 3, 8, 8), "int8"), T((4, 3, 3, 3))], {}, "cannot mix integer and floating-point"),
])
def test_conv2d_relation_rejects(args, raw, match):
    with pytest.raises(RelationError, match=match):
        infer("nn.conv2d", args, **raw)


def test_conv2d_relation_waits_for_data_or_an_unknown_weight():
    op = get("nn.conv2d")
    assert op.rel([IncompleteType(), T((4, 3, 3, 3))], op.attrs_type()) is None
    assert op.rel([T((1, 3, 8, 8)), IncompleteType()], op.attrs_type()) is None


@pytest.mark.parametrize("args,raw,out,weight", [
    ([T((1, 3, 4, 4)), IncompleteType()], {"channels": 6, "kernel_size": [3, 3],
                                           "strides": [2, 2], "padding": [1, 1],
                                           "output_padding": [1, 1]},
     T((1, 6, 8, 8)), T((3, 6, 3, 3))),
    ([T((1, 4, 4, 4)), IncompleteType()], {"channels": 6, "kernel_size": [2, 2], "groups": 2},
     T((1, 6, 5, 5)), T((4, 3, 2, 2))),
    ([T((1, 4, 4, 4)), T((4, 3, 2, 2))], {"groups": 2}, T((1, 6, 5, 5)), None),
    ([T((1, 4, 4, 4)), T((2, 2, 4, 3))], {"kernel_layout": "HWIO", "groups": 2},
     T((1, 6, 5, 5)), None),
])
def test_conv2d_transpose_relation(args, raw, out, weight):
    op = get("nn.conv2d_transpose")
    r = op.rel(args, op.attrs_type.from_raw(raw))
    if weight is None:
        assert r == out
    else:
        assert r == Solved(out, (None, weight))


def test_conv2d_transpose_relation_rejects_channel_mismatch():
    with pytest.raises(RelationError, match="data has 3 input channels but the weight"):
        infer("nn.conv2d_transpose", [T((1, 3, 4, 4)), T((4, 2, 3, 3))])
    with pytest.raises(RelationError, match="channels=5 does not match"):
        infer("nn.conv2d_transpose", [T((1, 4, 4, 4)), T((4, 2, 3, 3))], channels=5)


def test_conv2d_transpose_default_kernel_layout_is_iohw():
    assert get("nn.conv2d_transpose").attrs_type().kernel_layout == "IOHW"


@pytest.mark.parametrize("raw,match", [
    ({"data_layout": "NCHW4c"}, "packed layouts are not supported"),
    ({"kernel_layout": "OIHH"}, "kernel_layout must be a permutation"),
    ({"strides": [1, 1, 1]}, "strides needs 1 or 2 values"),
    ({"padding": [1, 1, 1]}, "padding needs 1 or 2 or 4 values"),
    ({"padding": [-1, 0]}, "padding values must be >= 0"),
    ({"dilation": [0, 1]}, "dilation values must be >= 1"),
    ({"groups": 0}, "groups must be >= 1"),
    ({"channels": 6, "groups": 4}, "channels=6 is not divisible by groups=4"),
    ({"out_dtype": "int"}, None),
])
def test_conv2d_attrs_validation(raw, match):
    cls = get("nn.conv2d").attrs_type
    if match is None:
        assert cls.from_raw(raw).out_dtype is DType.INT32
        return
    with pytest.raises(AttrError, match=match):
        cls.from_raw(raw)


@pytest.mark.parametrize("raw", [
    {"padding": [0, 0, 0, 0], "channels": 256, "kernel_size": [1, 1]},
    {"strides": [2, 2], "padding": [3, 3, 3, 3], "channels": 64, "kernel_size": [7, 7]},
    {"padding": [1, 1, 1, 1], "groups": 32, "channels": 512, "kernel_size": [3, 3]},
    {"padding": [1, 1], "channels": 32, "kernel_size": [3, 3], "data_layout": "NHWC",
     "kernel_layout": "OHWI", "out_dtype": "float32"},
])
def test_conv2d_attrs_round_trip(raw):
    cls = get("nn.conv2d").attrs_type
    assert cls.from_raw(raw).to_raw() == raw


@pytest.mark.parametrize("name", ["nn.conv1d", "nn.conv2d", "nn.conv2d_transpose"])
def test_conv_pattern_is_out_elemwise_fusable(name):
    assert get(name).pattern is PatternKind.OUT_ELEMWISE_FUSABLE
    assert get(name).arity == 2


@st.composite
def conv_configs(draw):
    groups = draw(st.integers(1, 3))
    cin = groups * draw(st.integers(1, 2))
    cout = groups * draw(st.integers(1, 2))
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    dil = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    pad = tuple(draw(st.integers(0, 2)) for _ in range(4))
    strides = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    # input large enough for a non-empty output
    h = draw(st.integers(max(1, (kh - 1) * dil[0] + 1 - pad[0] - pad[2]), 7))
    w = draw(st.integers(max(1, (kw - 1) * dil[1] + 1 - pad[1] - pad[3]), 7))
    return (1, cin, h, w), (cout, cin // groups, kh, kw), strides, pad, dil, groups


@settings(max_examples=40, deadline=None)
@given(conv_configs())
def test_conv2d_random_configurations_match_the_direct_definition(cfg):
    xs, ws, strides, pad, dil, groups = cfg
    x = sample(RNG, xs, "int8")
    w = sample(RNG, ws, "int8")
    got = run("nn.conv2d", x, w, strides=list(strides), padding=list(pad), dilation=list(dil),
              groups=groups, out_dtype="int32")
    assert_close(got, conv2d_ref(x, w, strides, pad, dil, groups, "int32"))
