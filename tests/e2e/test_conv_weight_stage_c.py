"""Convolutions whose weight is computed as it is read (a cast of int8
weights, a layout change: a fused prologue, as a weight-only quantized
model's DequantizeLinear) stage each channel tile's weights in a local
array once (aot/emit/lower/ops/nn_conv_wstage.py).  One program holds
every geometry the staging must handle -- 2-d and 1-d, channels-last
layouts, depthwise and grouped, a remainder channel tile, pointwise, a
pair of channels whose weights exceed the budget by one -- and
one too large to stage; it is built staged and with staging switched off,
and the two must agree bit for bit (the staging changes where a weight is
converted, never a product or a sum) and match the interpreter."""

from __future__ import annotations

from test_ops_c import case
from wstage_check import check_staged

F, I8 = "float32", "int8"


def _conv(name, xs, ws, attrs, op="nn.conv2d", prologue='cast(%w, dtype="float32")', wt=I8):
    return case(f"{op}:{name}", [("x", xs, F), ("w", ws, wt)],
                f"{op}(%x, {prologue}, {attrs})", lo=-8, hi=8)


CASES = [
    _conv("3x3", (1, 4, 7, 6), (6, 4, 3, 3), "padding=[1, 1]"),
    _conv("pointwise-remainder", (2, 3, 5, 5), (5, 3, 1, 1), "channels=5"),
    _conv("depthwise", (1, 4, 7, 7), (4, 1, 3, 3), "groups=4, strides=[2, 2], padding=[1, 1]"),
    _conv("grouped-dilated", (1, 4, 8, 8), (4, 2, 3, 3), "groups=2, dilation=[2, 2]"),
    _conv("nhwc-hwio", (1, 6, 5, 4), (3, 3, 4, 6),
          'padding=[1, 0, 1, 1], data_layout="NHWC", kernel_layout="HWIO"'),
    _conv("layout", (1, 4, 6, 6), (3, 3, 4, 5), "padding=[1, 1]",
          prologue='layout_transform(%w, src_layout="HWIO", dst_layout="OIHW")', wt=F),
    _conv("1d", (1, 3, 10), (4, 3, 3), "strides=[2], padding=[1, 1]", op="nn.conv1d"),
    # 1,152 bytes a channel: only one fits the budget, two are staged
    _conv("channel-pair", (1, 32, 4, 5), (4, 32, 3, 3), "padding=[1, 1]"),
    _conv("too-large", (1, 64, 3, 3), (2, 64, 3, 3), "padding=[1, 1]"),
]
#: the cases whose weights are staged: not "layout" (a float32 weight only
#: re-indexed: one load per read, nothing to convert) nor the last (64*3*3
#: float32 weights of one channel exceed WEIGHT_STAGE_BYTES)
STAGED = len(CASES) - 2


def test_staged_weights_are_bit_identical(monkeypatch):
    check_staged(monkeypatch, CASES, "wst", STAGED)
