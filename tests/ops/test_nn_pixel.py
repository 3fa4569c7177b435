"""nn.depth_to_space and nn.space_to_depth (aot/ir/ops/nn_pixel.py):
the references against element formulas written independently (ONNX's
definition of the channel orders), relations accepting and rejecting."""

from __future__ import annotations

import numpy as np
import pytest

from aot.ir.registry import RelationError
from nn_helpers import T, infer, run

RNG = np.random.default_rng(7)


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
def test_depth_to_space_elements(mode):
    x = RNG.standard_normal((2, 12, 2, 3)).astype(np.float32)
    b, c = 2, 3
    got = run("nn.depth_to_space", x, block_size=b, mode=mode)
    assert got.shape == (2, 3, 4, 6)
    for n, k, h, w in np.ndindex(*got.shape):
        block = (h % b) * b + w % b
        ch = block * c + k if mode == "DCR" else k * b * b + block
        assert got[n, k, h, w] == x[n, ch, h // b, w // b]


def test_space_to_depth_inverts_dcr_and_nhwc_moves_channels_last():
    x = RNG.standard_normal((1, 3, 4, 6)).astype(np.float32)
    y = run("nn.space_to_depth", x, block_size=2)
    assert y.shape == (1, 12, 2, 3)
    assert y[0, (1 * 2 + 0) * 3 + 2, 1, 2] == x[0, 2, 3, 4]
    np.testing.assert_array_equal(run("nn.depth_to_space", y, block_size=2), x)
    nhwc = run("nn.space_to_depth", x.transpose(0, 2, 3, 1), block_size=2, layout="NHWC")
    np.testing.assert_array_equal(nhwc, y.transpose(0, 2, 3, 1))


@pytest.mark.parametrize("op,shape,attrs,message", [
    ("nn.depth_to_space", (1, 6, 2, 2), {"block_size": 2}, "not divisible"),
    ("nn.space_to_depth", (1, 6, 3, 2), {"block_size": 2}, "height 3"),
    ("nn.space_to_depth", (1, 4, 2, 2), {"block_size": 2, "mode": "CRD"}, "mode"),
    ("nn.depth_to_space", (4, 2, 2), {"block_size": 2}, "4-d"),
    ("nn.depth_to_space", (1, 4, 2, 2), {"block_size": 0}, "positive"),
    ("nn.depth_to_space", (1, 4, 2, 2), {"block_size": 2, "layout": "HWCN"}, "layout"),
])
def test_relation_rejects(op, shape, attrs, message):
    with pytest.raises(RelationError, match=message):
        infer(op, [T(shape)], **attrs)


def test_relation_nhwc():
    assert infer("nn.depth_to_space", [T((1, 2, 3, 8))], block_size=2, layout="NHWC") == \
        T((1, 4, 6, 2))
