"""Patterns the real torch exporters write that ``bench/torch_exports.py``
found refused or wrong, rebuilt with ``onnx.helper`` (no torch needed) and
compared with onnxruntime."""

from __future__ import annotations

import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

import numpy as np  # noqa: E402
from onnx_helpers import check_single, model, node, rand, run_aot  # noqa: E402


def i64(values) -> np.ndarray:
    return np.asarray(values, np.int64)


@pytest.mark.parametrize("attrs,scales,sizes", [
    # F.interpolate(x, scale_factor=2.0) on NCW, as both exporters write it
    ({"mode": "nearest", "coordinate_transformation_mode": "asymmetric",
      "nearest_mode": "floor"}, [1, 1, 2], None),
    ({"mode": "linear", "coordinate_transformation_mode": "half_pixel"}, [1, 1, 2], None),
    ({"mode": "linear", "coordinate_transformation_mode": "align_corners"}, None, [1, 2, 7]),
    ({"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"}, None,
     [1, 2, 3]),
])
def test_resize_1d(attrs, scales, sizes):
    inits = {"roi": None,
             "scales": np.asarray(scales, np.float32) if scales is not None else None}
    if sizes is not None:
        inits["sizes"] = i64(sizes)
    check_single("Resize", {"x": rand((1, 2, 5))}, opset=13, inits=inits, **attrs)


def test_resize_1d_crop_and_resize():
    inits = {"roi": np.asarray([0, 0, 0.2, 1, 1, 0.9], np.float32), "scales": None,
             "sizes": i64([1, 2, 6])}
    check_single("Resize", {"x": rand((1, 2, 5))}, opset=13, inits=inits, mode="linear",
                 coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=-1.0)


def test_celu():
    # nn.CELU as the classic exporter writes it
    check_single("Celu", {"x": rand((2, 3, 4))}, opset=12, alpha=0.7)


def test_mish():
    # nn.Mish as the dynamo exporter writes it
    check_single("Mish", {"x": rand((2, 3, 4), low=-25, high=25)}, opset=18)


def test_conv_same_upper_dilated():
    """nn.Conv2d(padding="same", dilation=2): the classic exporter writes
    auto_pad=SAME_UPPER with dilations, which onnxruntime refuses; ONNX's
    reference implementation (and torch) pad for the dilated kernel."""
    from onnx.reference import ReferenceEvaluator
    x, w = rand((1, 2, 9, 8)), rand((3, 2, 3, 2), seed=1)
    m = model([node("Conv", ["x", "w"], ["y"], auto_pad="SAME_UPPER", dilations=[2, 3],
                    strides=[2, 1], kernel_shape=[3, 2])], {"x": x}, ["y"], {"w": w})
    want = ReferenceEvaluator(m).run(None, {"x": x})[0]
    got = run_aot(m, {"x": x})[0]
    assert got.shape == want.shape == (1, 3, 5, 8)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
