"""ONNX NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss against
onnxruntime where the node tests do not reach: the mean over the kept
elements with ``ignore_index`` -1 and no weights (ONNX's reference divides
by all elements there), integer targets of int32, and the diagnostics."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

import aot
from onnx_helpers import check_single, model, node, rand


TARGETS = np.array([[2, -1, 0], [-1, 1, 3]], np.int64)          # -1 ignored


@pytest.mark.parametrize("op", ["NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_ignored_targets_without_weights(op, reduction):
    check_single(op, {"x": rand((2, 4, 3)), "t": TARGETS}, ignore_index=-1,
                 reduction=reduction)


def test_weighted_mean_with_int32_targets():
    check_single("SoftmaxCrossEntropyLoss", {"x": rand((3, 5), seed=2),
                                             "t": np.array([4, 0, 2], np.int32)},
                 inits={"w": rand((5,), seed=3, low=0.1, high=2)}, n_outputs=2)


def test_targets_of_the_wrong_shape_are_a_diagnostic():
    m = model([node("NegativeLogLikelihoodLoss", ["x", "t"], ["y"])],
              {"x": rand((2, 4, 3)), "t": np.zeros((2, 4), np.int64)}, ["y"], {}, infer=False)
    m.graph.output[0].CopyFrom(helper.make_tensor_value_info("y", TensorProto.FLOAT, []))
    with pytest.raises(aot.DiagnosticError, match="do not fit"):
        aot.from_onnx(m.SerializeToString())
