"""ONNX Scan as a loop (a tail-recursive local function): against
onnxruntime through the reference interpreter, the ONNX node tests' Scan
models at opset 11, and compiled to C over the static arena (no pool)."""

from __future__ import annotations

import tempfile

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import aot  # noqa: E402
from aot.compiler import plan  # noqa: E402
from aot.diagnostics import DiagnosticError  # noqa: E402
from onnx_helpers import check, model, node, run_aot, run_ort  # noqa: E402

F = TensorProto.FLOAT
RNG = np.random.default_rng(11)


def vi(name: str, shape: list[int]) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, F, shape)


def f32(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def scan_model(*, in_dirs: tuple[int, int] = (0, 0), in_axes: tuple[int, int] = (0, 0),
               out_dirs: tuple[int, int] = (0, 0), out_axes: tuple[int, int] = (0, 0),
               opset: int = 16) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """Two states (a running sum, a running product-ish mix), two scan
    inputs of 4 steps, two scan outputs."""
    body = helper.make_graph(
        [node("Add", ["s", "a"], ["s2"]), node("Mul", ["a", "b"], ["ab"]),
         node("Add", ["t", "ab"], ["t2"]), node("Tanh", ["t2"], ["t3"]),
         node("Sub", ["s2", "b"], ["y0"]), node("Mul", ["t3", "s2"], ["y1"])],
        "body", [vi("s", [3]), vi("t", [3]), vi("a", [3]), vi("b", [3])],
        [vi("s2", [3]), vi("t3", [3]), vi("y0", [3]), vi("y1", [3])])
    shape_a = [4, 3] if in_axes[0] in (0, -2) else [3, 4]
    shape_b = [4, 3] if in_axes[1] in (0, -2) else [3, 4]
    feeds = {"s0": f32(3), "t0": f32(3), "xa": f32(*shape_a), "xb": f32(*shape_b)}
    n = node("Scan", ["s0", "t0", "xa", "xb"], ["sf", "tf", "ya", "yb"], body=body,
             num_scan_inputs=2, scan_input_directions=list(in_dirs),
             scan_input_axes=list(in_axes), scan_output_directions=list(out_dirs),
             scan_output_axes=list(out_axes))
    return model([n], feeds, ["sf", "tf", "ya", "yb"], opset=opset), feeds


CASES = {"forward": {}, "reversed_input": {"in_dirs": (1, 0)},
         "input_axis_1": {"in_axes": (1, -1), "in_dirs": (0, 1)},
         "prepended_output": {"out_dirs": (1, 0)},
         "output_axis_1": {"out_axes": (1, -1), "out_dirs": (0, 1)}}


@pytest.mark.parametrize("case", CASES)
def test_scan_matches_onnxruntime(case: str) -> None:
    m, feeds = scan_model(**CASES[case])   # type: ignore[arg-type]
    check(m, feeds)


def test_scan_compiles_over_the_static_arena() -> None:
    m, feeds = scan_model(in_dirs=(1, 0), out_axes=(1, 0))
    mod = aot.from_onnx(m)
    p = plan(mod, "scan_c")
    assert p.program is None and p.pool_bytes == 0 and len(p.loops) == 1
    fn = aot.load(aot.compile(mod, tempfile.mkdtemp(), name="scan_c"))
    for g, w in zip(fn(*feeds.values()), run_ort(m, feeds)):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("test", ["test_scan9_sum", "test_scan9_multi_state",
                                  "test_scan9_scalar"])
def test_node_test_models_at_opset_11(test: str) -> None:
    """The ONNX node tests' Scan models are opset 9 (below the importer's
    11); Scan's meaning is the same at 11: run them there."""
    from pathlib import Path
    folder = Path(onnx.__file__).parent / "backend" / "test" / "data" / "node" / test
    if not folder.is_dir():
        pytest.skip("the ONNX node tests are not installed as files")
    m = onnx.load(str(folder / "model.onnx"))
    m.opset_import[0].version = 11

    def tensors(kind: str) -> list[np.ndarray]:
        out = []
        for f in sorted(folder.glob(f"test_data_set_0/{kind}_*.pb")):
            proto = onnx.TensorProto()
            proto.ParseFromString(f.read_bytes())
            out.append(numpy_helper.to_array(proto))
        return out
    feeds = dict(zip([i.name for i in m.graph.input], tensors("input")))
    for g, w in zip(run_aot(m, feeds), tensors("output")):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_scan_inputs_of_different_lengths_are_refused() -> None:
    m, _ = scan_model()
    m.graph.input[3].type.tensor_type.shape.dim[0].dim_value = 5
    with pytest.raises(DiagnosticError, match="different lengths"):
        aot.from_onnx(m)


def test_bad_direction_is_refused() -> None:
    m, _ = scan_model()
    for a in m.graph.node[0].attribute:
        if a.name == "scan_input_directions":
            a.ints[0] = 2
    with pytest.raises(DiagnosticError, match="forward.*reverse"):
        aot.from_onnx(m)
