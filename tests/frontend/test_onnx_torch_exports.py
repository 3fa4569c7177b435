"""Patterns the real torch exporters write that ``bench/torch_exports.py``
found refused or wrong, rebuilt with ``onnx.helper`` (no torch needed) and
compared with onnxruntime."""

from __future__ import annotations

import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

import numpy as np  # noqa: E402
from onnx_helpers import check_single, rand  # noqa: E402


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
