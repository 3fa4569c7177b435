"""ONNX Attention against onnxruntime where the node tests do not reach: a
boolean mask together with ``is_causal`` (ONNX's reference turns the kept
positions into NaN there: ``0 * -inf``), grouped-query heads with a past,
and the diagnostics."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

import aot
from onnx_helpers import check_single, model, node, rand


def test_boolean_mask_with_causal():
    mask = np.array([[True, True, False, True, True, True],
                     [True, False, True, True, True, True],
                     [True, True, True, True, False, True],
                     [True, True, True, True, True, True]])
    check_single("Attention", {"q": rand((1, 2, 4, 8)), "k": rand((1, 2, 6, 8), seed=1),
                               "v": rand((1, 2, 6, 5), seed=2), "m": mask},
                 opset=23, is_causal=1, rtol=1e-4, atol=1e-5)


def test_grouped_heads_3d_with_past_and_softcap():
    check_single("Attention", {"q": rand((2, 3, 12)), "k": rand((2, 3, 4), seed=1),
                               "v": rand((2, 3, 6), seed=2), "m": rand((3, 5), seed=3),
                               "pk": rand((2, 2, 2, 2), seed=4),
                               "pv": rand((2, 2, 2, 3), seed=5)},
                 opset=23, n_outputs=3, q_num_heads=6, kv_num_heads=2, softcap=1.5,
                 scale=0.3, rtol=1e-4, atol=1e-5)


def test_3d_inputs_without_head_counts_are_a_diagnostic():
    m = model([node("Attention", ["q", "k", "v"], ["y"])],
              {"q": rand((1, 2, 4)), "k": rand((1, 2, 4)), "v": rand((1, 2, 4))}, ["y"],
              opset=23, infer=False)
    m.graph.output[0].CopyFrom(helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 4]))
    with pytest.raises(aot.DiagnosticError, match="q_num_heads"):
        aot.from_onnx(m.SerializeToString())
