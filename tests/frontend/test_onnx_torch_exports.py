"""Patterns the real torch exporters write that ``bench/torch_exports.py``
found refused or wrong, rebuilt with ``onnx.helper`` (no torch needed) and
compared with onnxruntime."""

from __future__ import annotations

import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

import numpy as np  # noqa: E402
from onnx_helpers import check, check_single, model, node, rand, run_aot, run_ort  # noqa: E402


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


def collect_loop(axis: int, new_axis: int = 1, then_neg: bool = False):
    """A scripted ``for t in range(4): h = tanh(h * w + x); outs.append(h)``
    then ``torch.stack(outs, axis)``, as the classic exporter writes it:
    SequenceEmpty, a Loop carrying the sequence (SequenceInsert in the
    body), ConcatFromSequence."""
    from onnx import TensorProto, helper
    F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
    vi = helper.make_tensor_value_info
    body = helper.make_graph(
        [node("Identity", ["cin"], ["cout"]), node("Mul", ["h", "w"], ["hw"]),
         node("Add", ["hw", "x"], ["pre"]), node("Tanh", ["pre"], ["h2"]),
         node("SequenceInsert", ["s", "h2"], ["s2"])],
        "body", [vi("i", I64, []), vi("cin", B, []), vi("h", F, [1, 3]),
                 helper.make_tensor_sequence_value_info("s", F, None)],
        [vi("cout", B, []), vi("h2", F, [1, 3]),
         helper.make_tensor_sequence_value_info("s2", F, None)])
    m = model([node("SequenceEmpty", [], ["s0"], dtype=F),
               node("Loop", ["M", "", "h0", "s0"], ["hf", "sf"], body=body),
               node("ConcatFromSequence", ["sf"], ["y"], axis=axis, new_axis=new_axis),
               *([node("Neg", ["y"], ["z"])] if then_neg else [])],
              {"x": rand((1, 3))}, ["z" if then_neg else "y", "hf"],
              {"M": np.int64(4), "h0": np.zeros((1, 3), np.float32),
               "w": rand((1, 3), seed=1)}, infer=False)
    shape = [[4, 1, 3], [1, 4, 3], [1, 3, 4]][axis] if new_axis else [4, 3]
    for out, want in zip(m.graph.output, (vi("z" if then_neg else "y", F, shape),
                                          vi("hf", F, [1, 3]))):
        out.CopyFrom(want)
    return m


@pytest.mark.parametrize("axis,then_neg", [(0, False), (1, False), (-1, False), (-1, True)])
def test_list_append_then_stack_in_a_loop_is_a_scan_output(axis, then_neg):
    # then_neg: the stacked tensor is no graph output, its rank is the
    # appended tensor's plus one (as in torch's exports)
    check(collect_loop(axis, then_neg=then_neg), {"x": rand((1, 3), seed=2)})


def test_list_append_then_stack_compiles_on_the_arena(tmp_path):
    import aot
    m, x = collect_loop(1), rand((1, 3), seed=2)
    art = aot.compile(aot.from_onnx(m), tmp_path, name="collect")
    assert art.metadata["pool_bytes"] == 0 and art.metadata["loops"]
    got = aot.load(art)(x)
    for g, w in zip(got, run_ort(m, {"x": x})):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def test_a_sequence_concatenated_not_stacked_stays_refused():
    import aot
    with pytest.raises(aot.DiagnosticError, match="unsupported operator SequenceEmpty"):
        aot.from_onnx(collect_loop(0, new_axis=0))
