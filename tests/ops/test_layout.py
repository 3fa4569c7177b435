"""Layout strings and layout_transform, against direct index formulas."""

from __future__ import annotations

import numpy as np
import pytest

from aot.ir.ops.layout import Layout
from aot.ir.types import ANY
from shape_op_helpers import arange, bad_attrs, infer, rejects, run, tt


@pytest.mark.parametrize("text,axes", [
    ("NCHW", (("N", 0), ("C", 0), ("H", 0), ("W", 0))),
    ("NCHW4c", (("N", 0), ("C", 0), ("H", 0), ("W", 0), ("c", 4))),
    ("OIHW4i16o", (("O", 0), ("I", 0), ("H", 0), ("W", 0), ("i", 4), ("o", 16))),
    ("", ()),
])
def test_layout_parse(text, axes):
    layout = Layout.parse(text)
    assert layout.axes == axes
    assert layout.primal == tuple(a for a, f in axes if f == 0)


@pytest.mark.parametrize("text,match", [
    ("NCHWc", "subordinate axis c needs a positive factor"),
    ("NCHW0c", "subordinate axis c needs a positive factor"),
    ("N4CHW", "primal axis C cannot have a factor"),
    ("NCHC", "axis C appears twice"),
    ("NHW4c", "subordinate axis c has no primal axis C"),
    ("NCHW4", "factor 4 is not followed by an axis"),
    ("NC-HW", "unexpected character '-'"),
])
def test_layout_parse_rejects(text, match):
    with pytest.raises(ValueError, match=match):
        Layout.parse(text)


@pytest.mark.parametrize("src,dst,perm", [
    ("NCHW", "NHWC", (0, 2, 3, 1)), ("NHWC", "NCHW", (0, 3, 1, 2)),
    ("OIHW", "OHWI", (0, 2, 3, 1)), ("NCHW", "NCHW", (0, 1, 2, 3)),
])
def test_layout_transform_permutations(src, dst, perm):
    x = arange((2, 3, 4, 5))
    np.testing.assert_array_equal(run("layout_transform", x, src_layout=src, dst_layout=dst),
                                  np.transpose(x, perm))


def test_nchw_to_nchw4c():
    x = arange((2, 8, 3, 5), "int16")
    out = run("layout_transform", x, src_layout="NCHW", dst_layout="NCHW4c")
    assert out.shape == (2, 2, 3, 5, 4)
    for n, cb, h, w, c in np.ndindex(*out.shape):
        assert out[n, cb, h, w, c] == x[n, cb * 4 + c, h, w]
    back = run("layout_transform", out, src_layout="NCHW4c", dst_layout="NCHW")
    np.testing.assert_array_equal(back, x)


def test_oihw_to_oihw4i4o():
    # the corpus program: OIHW -> OIHW4i4o of a (4, 4, 3, 3) weight
    x = arange((4, 8, 3, 3))
    out = run("layout_transform", x, src_layout="OIHW", dst_layout="OIHW4i4o")
    assert out.shape == (1, 2, 3, 3, 4, 4)
    for o, i, h, w, ii, oo in np.ndindex(*out.shape):
        assert out[o, i, h, w, ii, oo] == x[o * 4 + oo, i * 4 + ii, h, w]


def test_reblocking_formula():
    x = arange((2, 3, 2, 5, 4))                    # N C H W 4c, C = 12
    out = run("layout_transform", x, src_layout="NCHW4c", dst_layout="NHWC6c")
    assert out.shape == (2, 2, 5, 2, 6)
    for n, h, w, cb, c in np.ndindex(*out.shape):
        full_c = cb * 6 + c
        assert out[n, h, w, cb, c] == x[n, full_c // 4, h, w, full_c % 4]


def test_layout_transform_types():
    assert infer("layout_transform", [tt((1, 8, ANY, 4))], src_layout="NCHW",
                 dst_layout="NHWC") == tt((1, ANY, 4, 8))
    assert infer("layout_transform", [tt((1, ANY, 2, 2))], src_layout="NCHW",
                 dst_layout="NCHW4c") == tt((1, ANY, 2, 2, 4))


@pytest.mark.parametrize("shape,src,dst,match", [
    ((1, 6, 2, 2), "NCHW", "NCHW4c", "axis C of extent 6 cannot be split into blocks of 4"),
    ((1, 2, 2, 2, 3), "NCHW4c", "NCHW", "axis 4c of layout 'NCHW4c' has extent 3"),
    ((1, 2, 2), "NCHW", "NHWC", "layout 'NCHW' has 4 axes but the data has shape"),
])
def test_layout_transform_rejects(shape, src, dst, match):
    rejects("layout_transform", [tt(shape)], match, src_layout=src, dst_layout=dst)


def test_layout_transform_attrs():
    bad_attrs("layout_transform", "their primal axes differ", src_layout="NCHW",
              dst_layout="NCDHW")
    bad_attrs("layout_transform", "needs a positive factor", src_layout="NCHWc",
              dst_layout="NCHW")
