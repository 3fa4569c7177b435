"""nn pooling against a direct loop reference (TOPI's definition written
out per output element), over layouts, strides, padding, dilation,
ceil_mode and count_include_pad; relations accepting and rejecting."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from aot.ir.attrs import AttrError
from aot.ir.registry import PatternKind, RelationError
from aot.ir.types import ANY
from cases import pool as pool_table
from nn_helpers import T, assert_close, get, infer, run, sample

RNG = np.random.default_rng(3)


def pool_ref(x, kind, pool, strides, padding, dilation, ceil_mode, include_pad):
    """NCHW, one output element at a time."""
    n, c, h, w = x.shape
    p = list(padding)
    top, left, bottom, right = (p * 4 if len(p) == 1 else
                                [p[0], p[1], p[0], p[1]] if len(p) == 2 else p)

    def out_size(size, k, s, d, before, after):
        span = size + before + after - (k - 1) * d - 1
        return (math.ceil(span / s) if ceil_mode else span // s) + 1

    oh = out_size(h, pool[0], strides[0], dilation[0], top, bottom)
    ow = out_size(w, pool[1], strides[1], dilation[1], left, right)
    is_int = x.dtype.kind in "iu"
    out = np.zeros((n, c, oh, ow), dtype=x.dtype)
    for b, ch, y, xx in itertools.product(range(n), range(c), range(oh), range(ow)):
        vals, counted = [], 0
        for i, j in itertools.product(range(pool[0]), range(pool[1])):
            iy = y * strides[0] - top + i * dilation[0]
            ix = xx * strides[1] - left + j * dilation[1]
            inside = 0 <= iy < h and 0 <= ix < w
            in_padded = -top <= iy < h + bottom and -left <= ix < w + right
            if inside:
                vals.append(x[b, ch, iy, ix])
            if inside or (include_pad and in_padded):
                counted += 1
        if kind == "max":
            lowest = -np.inf if not is_int else np.iinfo(x.dtype).min
            out[b, ch, y, xx] = max(vals) if vals else lowest
        else:
            total = sum(int(v) for v in vals) if is_int else sum(float(v) for v in vals)
            counted = max(counted, 1)
            if is_int:
                q = abs(total) // counted
                out[b, ch, y, xx] = -q if total < 0 else q
            else:
                out[b, ch, y, xx] = total / counted
    return out


@pytest.mark.parametrize("shape,pool,strides,padding,dilation,ceil_mode", pool_table.POOLS)
@pytest.mark.parametrize("dtype", pool_table.MAX_DTYPES)
def test_max_pool2d(shape, pool, strides, padding, dilation, ceil_mode, dtype):
    x = sample(RNG, shape, dtype)
    got = run("nn.max_pool2d", x,
              **pool_table.pool_attrs(pool, strides, padding, dilation, ceil_mode))
    assert_close(got, pool_ref(x, "max", pool, strides, padding, dilation, ceil_mode, False))


@pytest.mark.parametrize("shape,pool,strides,padding,dilation,ceil_mode", pool_table.POOLS)
@pytest.mark.parametrize("include_pad", [False, True])
@pytest.mark.parametrize("dtype", pool_table.AVG_DTYPES)
def test_avg_pool2d(shape, pool, strides, padding, dilation, ceil_mode, include_pad, dtype):
    x = sample(RNG, shape, dtype)
    got = run("nn.avg_pool2d", x, **pool_table.pool_attrs(pool, strides, padding, dilation,
                                                          ceil_mode,
                                                          count_include_pad=include_pad))
    expected = pool_ref(x, "avg", pool, strides, padding, dilation, ceil_mode, include_pad)
    assert_close(got, expected)


def test_avg_pool2d_int8_does_not_overflow():
    x = np.full((1, 1, 4, 4), 120, np.int8)
    got = run("nn.avg_pool2d", x, pool_size=[4, 4])
    assert got.tolist() == [[[[120]]]]
    x = np.array([[[[-3, -4], [0, 0]]]], np.int8)  # -7 / 4 truncates to -1
    assert run("nn.avg_pool2d", x, pool_size=[2, 2]).tolist() == [[[[-1]]]]


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pool_nhwc_agrees_with_nchw(kind):
    x = sample(RNG, (2, 3, 7, 6), "float32")
    attrs = dict(pool_size=[3, 2], strides=[2, 1], padding=[1, 1, 0, 0])
    name = f"nn.{kind}_pool2d"
    nchw = run(name, x, **attrs)
    nhwc = run(name, np.transpose(x, (0, 2, 3, 1)), layout="NHWC", **attrs)
    assert_close(nhwc, np.transpose(nchw, (0, 2, 3, 1)))


@pytest.mark.parametrize("layout", ["NCHW", "NHWC", "HWNC"])
@pytest.mark.parametrize("dtype", ["float32", "int16"])
def test_global_pools(layout, dtype):
    x = sample(RNG, (2, 3, 5, 4), dtype)  # NCHW
    xl = np.transpose(x, ["NCHW".index(c) for c in layout])
    gmax = run("nn.global_max_pool2d", xl, layout=layout)
    gavg = run("nn.global_avg_pool2d", xl, layout=layout)
    back = ["NCHW".index(c) for c in layout]
    exp_max = x.max(axis=(2, 3), keepdims=True)
    if dtype == "int16":
        total = x.astype(np.int64).sum(axis=(2, 3), keepdims=True)
        exp_avg = (np.sign(total) * (np.abs(total) // 20)).astype(dtype)
    else:
        exp_avg = x.astype(np.float64).mean(axis=(2, 3), keepdims=True).astype(dtype)
    assert_close(gmax, np.transpose(exp_max, back))
    assert_close(gavg, np.transpose(exp_avg, back))


# ------------------------------------------------------------ relations

@pytest.mark.parametrize("data,raw,out", [
    (T((1, 3, 32, 32)), {"pool_size": [2, 2], "strides": [2, 2]}, T((1, 3, 16, 16))),
    (T((1, 3, 7, 7)), {"pool_size": [3, 3], "strides": [2, 2], "ceil_mode": True},
     T((1, 3, 3, 3))),
    (T((1, 3, 8, 8)), {"pool_size": [3, 3], "strides": [2, 2], "ceil_mode": True},
     T((1, 3, 4, 4))),
    (T((1, 3, 8, 8)), {"pool_size": [3, 3], "strides": [2, 2]}, T((1, 3, 3, 3))),
    (T((1, 3, 112, 112)), {"pool_size": [3, 3], "strides": [2, 2], "padding": [1, 1, 1, 1]},
     T((1, 3, 56, 56))),
    (T((ANY, 3, ANY, 9), "int8"), {"pool_size": [3, 3]}, T((ANY, 3, ANY, 7), "int8")),
    (T((2, 9, 9, 4)), {"pool_size": [3, 3], "layout": "NHWC", "dilation": [2, 2]},
     T((2, 5, 5, 4))),
])
def test_pool_relation_accepts(data, raw, out):
    assert infer("nn.max_pool2d", [data], **raw) == out
    assert infer("nn.avg_pool2d", [data], **raw) == out


@pytest.mark.parametrize("data,raw,match", [
    (T((1, 3, 2, 8)), {"pool_size": [3, 3]}, "empty along H: input size 2, pool_size 3"),
    (T((1, 3, 8)), {"pool_size": [3, 3]}, "rank 3 .* layout='NCHW' needs rank 4"),
    (T((1, 3, 8, 8), "bool"), {}, "bool"),
])
def test_pool_relation_rejects(data, raw, match):
    with pytest.raises(RelationError, match=match):
        infer("nn.max_pool2d", [data], **raw)


def test_global_pool_relation():
    assert infer("nn.global_avg_pool2d", [T((ANY, 8, 7, 7))]) == T((ANY, 8, 1, 1))
    assert infer("nn.global_max_pool2d", [T((1, 7, 7, 8))], layout="NHWC") == T((1, 1, 1, 8))
    with pytest.raises(RelationError, match="layout='NCHW' needs rank 4"):
        infer("nn.global_max_pool2d", [T((1, 7, 7))])


@pytest.mark.parametrize("raw,match", [
    ({"pool_size": [0, 2]}, "pool_size values must be >= 1"),
    ({"layout": "NCH"}, "containing H and W"),
    ({"layout": "NCHW16c"}, "packed layouts"),
    ({"out_layout": "NHWC"}, "out_layout must be empty or equal"),
    ({"padding": [1, 2, 3]}, "padding needs"),
])
def test_pool_attrs_reject(raw, match):
    with pytest.raises(AttrError, match=match):
        get("nn.avg_pool2d").attrs_type.from_raw(raw)


@pytest.mark.parametrize("name", ["nn.max_pool2d", "nn.avg_pool2d", "nn.global_max_pool2d",
                                  "nn.global_avg_pool2d"])
def test_pool_pattern_is_relays(name):
    assert get(name).pattern is PatternKind.OUT_ELEMWISE_FUSABLE


def test_pool_attrs_round_trip():
    cls = get("nn.max_pool2d").attrs_type
    raw = {"pool_size": [3, 3], "strides": [2, 2], "padding": [1, 1, 1, 1], "ceil_mode": True}
    assert cls.from_raw(raw).to_raw() == raw
