"""LpPool, GlobalLpPool, 1-d/3-d pools, 3-d Conv and 1-d/3-d ConvTranspose
imported from ONNX (aot/frontend/onnx/ops/pool.py, conv.py) against
onnxruntime, through the interpreter (the C kernels are compared with the
interpreter in tests/e2e/test_ops_c_nd.py).  GlobalLpPool has no ONNX node
test; the others' node tests run in test_onnx_node_conformance.py."""

from __future__ import annotations

import pytest

import aot
from onnx_helpers import check, model, node, rand


def test_global_lp_pool_every_rank_and_order():
    feeds = {"a": rand((2, 3, 5)), "b": rand((1, 2, 3, 4), seed=1),
             "c": rand((1, 2, 2, 3, 2), seed=2)}
    nodes = [node("GlobalLpPool", ["a"], ["y0"], p=1), node("GlobalLpPool", ["b"], ["y1"]),
             node("GlobalLpPool", ["c"], ["y2"], p=3)]
    check(model(nodes, feeds, ["y0", "y1", "y2"], opset=18), feeds, rtol=1e-5)


def test_lp_pool_windows():
    feeds = {"a": rand((1, 2, 7, 6)), "b": rand((1, 2, 3, 4, 5), seed=1),
             "c": rand((2, 3, 9), seed=2)}
    nodes = [node("LpPool", ["a"], ["y0"], kernel_shape=[3, 2], strides=[2, 2], pads=[1, 0, 0, 0],
                  ceil_mode=1, p=3),
             node("LpPool", ["a"], ["y1"], kernel_shape=[2, 2], dilations=[2, 1], p=1),
             node("LpPool", ["b"], ["y2"], kernel_shape=[2, 2, 3], pads=[1, 0, 1, 0, 1, 1]),
             node("LpPool", ["c"], ["y3"], kernel_shape=[3], strides=[2], auto_pad="SAME_UPPER")]
    check(model(nodes, feeds, ["y0", "y1", "y2", "y3"], opset=18), feeds, rtol=1e-5)


def test_pools_and_convolutions_3d_and_1d():
    feeds = {"x": rand((1, 4, 4, 5, 6)), "s": rand((1, 4, 7), seed=1)}
    inits = {"w3": rand((6, 2, 2, 3, 2), seed=3), "b3": rand((6,), seed=4),
             "wt": rand((4, 3, 3), seed=5)}
    nodes = [node("MaxPool", ["x"], ["y0"], kernel_shape=[2, 3, 2], strides=[2, 2, 2],
                  pads=[1, 1, 1, 0, 1, 1], ceil_mode=1),
             node("AveragePool", ["x"], ["y1"], kernel_shape=[3, 2, 2], pads=[1, 0, 1, 1, 1, 0],
                  count_include_pad=1),
             node("Conv", ["x", "w3", "b3"], ["y2"], group=2, strides=[1, 2, 1],
                  pads=[1, 0, 1, 0, 1, 1]),
             node("ConvTranspose", ["s", "wt"], ["y3"], group=2, strides=[2], pads=[1, 0],
                  output_padding=[1]),
             node("MaxPool", ["s"], ["y4"], kernel_shape=[3], strides=[2], pads=[1, 1])]
    check(model(nodes, feeds, ["y0", "y1", "y2", "y3", "y4"], inits, opset=18), feeds,
          rtol=1e-5)


@pytest.mark.parametrize("p", [0, 2.5])
def test_lp_pool_order_must_be_a_positive_integer(p):
    feeds = {"a": rand((1, 1, 4, 4))}
    m = model([node("GlobalLpPool", ["a"], ["y"], p=p)], feeds, ["y"], opset=18, infer=False)
    with pytest.raises(aot.DiagnosticError, match="p"):
        aot.from_onnx(m)


def test_conv_transpose_3d():
    """Groups, bias, strides with dilations, output_padding, explicit
    pads, output_shape and auto_pad (the node test covers only the
    defaults)."""
    feeds = {"x": rand((1, 4, 2, 3, 3))}
    inits = {"w": rand((4, 3, 2, 3, 2), seed=1), "b": rand((6,), seed=2),
             "v": rand((4, 2, 2, 2, 2), seed=3)}
    nodes = [node("ConvTranspose", ["x", "w", "b"], ["y0"], group=2, strides=[2, 1, 3],
                  dilations=[1, 2, 2], pads=[1, 0, 1, 0, 1, 2], output_padding=[1, 0, 2]),
             node("ConvTranspose", ["x", "v"], ["y1"], strides=[2, 2, 2],
                  output_shape=[5, 6, 7]),
             node("ConvTranspose", ["x", "v"], ["y2"], strides=[1, 2, 2],
                  auto_pad="SAME_UPPER")]
    check(model(nodes, feeds, ["y0", "y1", "y2"], inits, opset=13), feeds, rtol=1e-5)


def test_conv_transpose_4d_refused():
    feeds = {"x": rand((1, 2, 2, 2, 2, 2))}
    m = model([node("ConvTranspose", ["x", "w"], ["y"])], feeds, ["y"],
              {"w": rand((2, 2, 1, 1, 1, 1))}, opset=13)
    with pytest.raises(aot.DiagnosticError, match="only 1-d, 2-d and 3-d"):
        aot.from_onnx(m)
