"""The ONNX importer itself: the module's shape (parameters, constants,
outputs), names, input shapes, schema versions, determinism, the text
round trip, and every diagnostic (rendered text asserted)."""

from __future__ import annotations

import re

import pytest

onnx = pytest.importorskip("onnx")

import numpy as np  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402

import aot  # noqa: E402
from aot.diagnostics import DiagnosticError  # noqa: E402
from aot.frontend.onnx.graph import MIN_OPSET, sanitize_names  # noqa: E402
from aot.frontend.onnx.registry import all_converters  # noqa: E402
from aot.ir.dtype import DType  # noqa: E402
from aot.ir.expr import Constant, Tuple  # noqa: E402
from aot.ir.structural import structural_equal  # noqa: E402
from aot.ir.types import TensorType, TupleType  # noqa: E402
from onnx_helpers import model, node, rand  # noqa: E402


def render(exc: pytest.ExceptionInfo) -> str:
    return exc.value.render()


def import_error(m, **kwargs) -> str:
    with pytest.raises(DiagnosticError) as exc:
        aot.from_onnx(m, source_name="m.onnx", **kwargs)
    return render(exc)


def small_net(opset: int = 13) -> onnx.ModelProto:
    nodes = [node("Conv", ["input.1", "w"], ["c"], name="conv1", pads=[1, 1, 1, 1]),
             node("Relu", ["c"], ["r"], name="relu1"),
             node("Add", ["r", "0"], ["sum"]),
             node("Flatten", ["sum"], ["flat"])]
    return model(nodes, {"input.1": (np.float32, ["N", 2, 4, 4]),
                         "0": (np.float32, [1, 3, 4, 4])},
                 ["flat", "r"], {"w": rand((3, 2, 3, 3), seed=1)}, opset=opset)


# ------------------------------------------------------------------ structure

def test_module_structure():
    mod = aot.from_onnx(small_net(), input_shapes={"input.1": (1, 2, 4, 4)})
    main = mod["main"]
    assert [p.name_hint for p in main.params] == ["input_1", "_0"]
    f32 = DType.FLOAT32
    assert [p.checked_type for p in main.params] == [TensorType((1, 2, 4, 4), f32),
                                                     TensorType((1, 3, 4, 4), f32)]
    assert isinstance(main.body, Tuple) and len(main.body.fields) == 2
    assert main.checked_type.ret_type == TupleType((TensorType((1, 48), f32),
                                                    TensorType((1, 3, 4, 4), f32)))
    x = rand((1, 2, 4, 4))
    y = rand((1, 3, 4, 4), seed=2)
    flat, r = aot.interpret(mod, x, y)
    assert flat.shape == (1, 48) and r.shape == (1, 3, 4, 4)
    np.testing.assert_allclose(flat, (r + y).reshape(1, 48), rtol=1e-6)


def test_initializer_listed_as_input_is_a_constant():
    m = model([node("Add", ["x", "w"], ["y"])], {"x": rand((2,)), "w": rand((2,))}, ["y"],
              {"w": np.asarray([1.0, 2.0], np.float32)})
    mod = aot.from_onnx(m)
    assert [p.name_hint for p in mod["main"].params] == ["x"]
    body = mod["main"].body
    assert isinstance(body.args[1], Constant)
    np.testing.assert_array_equal(aot.interpret(mod, np.zeros(2, np.float32)), [1.0, 2.0])


def test_single_output_is_not_a_tuple():
    m = model([node("Relu", ["x"], ["y"])], {"x": rand((2,))}, ["y"])
    assert isinstance(aot.from_onnx(m)["main"].checked_type.ret_type, TensorType)


def test_graph_input_passed_through_to_output():
    m = model([node("Relu", ["x"], ["y"])], {"x": rand((2,))}, ["y", "x"])
    mod = aot.from_onnx(m)
    out = aot.interpret(mod, np.asarray([-1.0, 2.0], np.float32))
    np.testing.assert_array_equal(out[1], [-1.0, 2.0])


@pytest.mark.parametrize("names,expected", [
    (["input.1", "0", "x", "x", "a-b", ""], ["input_1", "_0", "x", "x_1", "a_b", "input"]),
    (["a_b", "a-b", "a.b"], ["a_b", "a_b_1", "a_b_2"]),
    (["_", "9lives", "Ünï"], ["_", "_9lives", "_n_"]),
])
def test_sanitize_names(names, expected):
    assert sanitize_names(names) == expected


def test_same_model_gives_structurally_equal_modules():
    m = small_net()
    a = aot.from_onnx(m, input_shapes={"input.1": (1, 2, 4, 4)})
    b = aot.from_onnx(m.SerializeToString(), input_shapes={"input.1": (1, 2, 4, 4)})
    assert structural_equal(a["main"], b["main"])
    assert str(a) == str(b)


def test_text_round_trip():
    mod = aot.from_onnx(small_net(), input_shapes={"input.1": (1, 2, 4, 4)})
    text = str(mod)
    again = aot.infer_types(aot.parse(text, source_name="roundtrip.relay"))
    assert structural_equal(mod["main"], again["main"])
    assert str(again) == text


def test_loads_from_a_path(tmp_path):
    path = tmp_path / "net.onnx"
    onnx.save(small_net(), str(path))
    mod = aot.from_onnx(path, input_shapes={"input.1": (1, 2, 4, 4)})
    assert mod["main"].params[0].name_hint == "input_1"
    with pytest.raises(DiagnosticError) as exc:
        aot.from_onnx(str(path))
    assert render(exc).startswith(f"{path}: error: input 'input.1' has the dynamic shape")


def test_import_does_not_load_onnx():
    import subprocess
    import sys
    code = "import aot, sys; assert 'onnx' not in sys.modules, 'onnx imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


# -------------------------------------------------------------- input shapes

def test_input_shapes_fix_symbolic_dims():
    m = model([node("Relu", ["x"], ["y"])], {"x": (np.float32, ["batch", 3, None])}, ["y"])
    mod = aot.from_onnx(m, input_shapes={"x": (2, 3, 5)})
    assert mod["main"].params[0].checked_type.shape == (2, 3, 5)


def test_input_shape_may_override_a_zero_dimension():
    m = model([node("Relu", ["x"], ["y"])], {"x": (np.float32, [0, 3])}, ["y"])
    assert aot.from_onnx(m)["main"].params[0].checked_type.shape == (0, 3)
    mod = aot.from_onnx(m, input_shapes={"x": (4, 3)})
    assert mod["main"].params[0].checked_type.shape == (4, 3)


INPUT_SHAPE_ERRORS = [
    (None, "m.onnx: error: input 'x' has the dynamic shape (batch, 3, ?): fix it with "
           "--input-shape x=N,3,N (input_shapes in Python)"),
    ({"x": (2, 3)}, "m.onnx: error: the shape (2, 3) given for input 'x' has rank 2, but the "
                    "model declares rank 3 (batch, 3, ?)"),
    ({"x": (2, 4, 5)}, "m.onnx: error: the shape (2, 4, 5) given for input 'x' conflicts with "
                       "the model, which fixes axis 1 to 3 (batch, 3, ?)"),
    ({"x": (2, 3, 5), "z": (1,)}, "m.onnx: error: a shape is given for 'z', which is not a "
                                  "graph input (inputs: 'x')"),
    ({"x": (2, -3, 5)}, "m.onnx: error: the shape given for input 'x' has a negative "
                        "dimension (2, -3, 5)"),
]


@pytest.mark.parametrize("shapes,message", INPUT_SHAPE_ERRORS)
def test_input_shape_errors(shapes, message):
    m = model([node("Relu", ["x"], ["y"])], {"x": (np.float32, ["batch", 3, None])}, ["y"])
    assert import_error(m, input_shapes=shapes) == message


# ---------------------------------------------------------- schema versions

def _schema_versions() -> dict[str, set[int]]:
    out: dict[str, set[int]] = {}
    for s in onnx.defs.get_all_schemas_with_history():
        if s.domain == "":
            out.setdefault(s.name, set()).add(s.since_version)
    return out


def test_declared_versions_cover_opsets_11_to_21():
    versions = _schema_versions()
    for conv in all_converters():
        assert conv.op_type in versions, conv
        assert set(conv.versions) <= versions[conv.op_type], conv
        for opset in range(max(MIN_OPSET, min(versions[conv.op_type])), 22):
            selected = onnx.defs.get_schema(conv.op_type, opset, "").since_version
            assert selected in conv.versions, (conv.op_type, opset, selected)


def test_later_schema_versions_are_declared_only_where_checked():
    # every declared version above 21 is one of these (checked by hand)
    checked = {22, 23, 24, 25, 27}
    for conv in all_converters():
        assert {v for v in conv.versions if v > 21} <= checked, conv


def test_undeclared_newer_version_is_refused():
    from aot.frontend.onnx import registry
    with registry.CONVERTERS.scratch():
        conv = registry.CONVERTERS.unregister(("", "Relu"))
        registry.register(registry.Converter("Relu", (6, 13), conv.convert))
        m = model([node("Relu", ["x"], ["y"], name="r")], {"x": rand((2,))}, ["y"], opset=14)
        assert import_error(m) == ("m.onnx: error: node 'r' (Relu): Relu version 14 (selected "
                                   "by opset 14) is not supported; supported versions: 6, 13")


def test_newer_opset_with_type_widening_only_is_accepted():
    x = rand((1, 2, 5, 5))
    m = model([node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])], {"x": x}, ["y"],
              {"w": rand((3, 2, 3, 3), seed=1)}, opset=23)
    assert aot.interpret(aot.from_onnx(m), x).shape == (1, 3, 5, 5)


# ---------------------------------------------------------------- diagnostics

def test_unsupported_operators_are_all_reported():
    nodes = [node("Relu", ["x"], ["a"]),
             node("Det", ["a"], ["b"], name="det1"),
             node("Relu", ["b"], ["c"]),
             node("Hardmax", ["c"], ["y"])]
    m = model(nodes, {"x": rand((2, 3, 3))}, ["y"])
    assert import_error(m) == (
        "m.onnx: error: node 'det1' (Det): unsupported operator Det\n"
        "m.onnx: error: node #3 (Hardmax) producing 'y': unsupported operator Hardmax")


def test_unsupported_attribute_value():
    m = model([node("MaxPool", ["x"], ["y"], name="pool1", auto_pad="SAME_LOWER",
                    kernel_shape=[3, 3], dilations=[2, 2])], {"x": rand((1, 2, 8, 8))}, ["y"])
    assert import_error(m) == ("m.onnx: error: node 'pool1' (MaxPool): auto_pad=SAME_LOWER with "
                               "dilations is not supported")


def test_unsupported_attribute_value_of_mode():
    m = model([node("Resize", ["x", "", "s"], ["y"], name="up",
                    coordinate_transformation_mode="half_pixel_symmetric")],
              {"x": rand((1, 1, 3, 3))}, ["y"], {"s": np.asarray([1, 1, 2, 2], np.float32)},
              opset=19)
    assert import_error(m) == ("m.onnx: error: node 'up' (Resize): coordinate_transformation_mode"
                               "=half_pixel_symmetric is not supported")


def test_integer_linear_resize_is_refused():
    m = model([node("Resize", ["x", "", "", "s"], ["y"], name="up", mode="linear")],
              {"x": rand((1, 1, 3, 3), np.uint8)}, ["y"],
              {"s": np.asarray([1, 1, 6, 6], np.int64)})
    assert import_error(m) == ("m.onnx: error: node 'up' (Resize): mode=linear on uint8 tensors "
                               "is not supported (ONNX does not say how interpolated integers "
                               "round)")


def test_unsupported_input_dtype():
    m = model([node("Identity", ["x"], ["y"])], {}, ["y"], infer=False)
    m.graph.input.append(helper.make_tensor_value_info("x", TensorProto.FLOAT4E2M1, [2]))
    m.graph.output[0].CopyFrom(helper.make_tensor_value_info("y", TensorProto.FLOAT4E2M1, [2]))
    assert import_error(m) == ("m.onnx: error: input 'x' has element type float4e2m1, which is "
                               "not supported")


def test_unsupported_cast_target():
    m = model([node("Cast", ["x"], ["y"], name="c", to=TensorProto.INT2)],
              {"x": rand((2,))}, ["y"])
    assert import_error(m) == "m.onnx: error: node 'c' (Cast): casting to int2 is not supported"


def test_unsupported_initializer_dtype():
    m = model([node("Identity", ["x"], ["y"])], {"x": rand((2,))}, ["y"])
    m.graph.initializer.append(helper.make_tensor("s", TensorProto.STRING, [1], [b"a"]))
    assert import_error(m) == ("m.onnx: error: initializer 's' has element type string, which "
                               "is not supported")


def test_required_constant_input_that_is_not_constant():
    m = model([node("Reshape", ["x", "s"], ["y"], name="reshape")],
              {"x": rand((2, 3)), "s": (np.int64, [2])}, ["y"], infer=False)
    m.graph.output[0].CopyFrom(helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 2]))
    assert import_error(m) == (
        "m.onnx: error: node 'reshape' (Reshape): the shape (input 's') must be a constant: an "
        "initializer, a Constant node or computed from them")


def test_constant_input_computed_from_a_graph_input_is_not_constant():
    nodes = [node("Shape", ["x"], ["s"]), node("Cast", ["x"], ["xi"], to=TensorProto.INT64),
             node("Add", ["s", "xi"], ["s2"]),
             node("Reshape", ["x", "s2"], ["y"], name="reshape")]
    m = model(nodes, {"x": rand((2,))}, ["y"], infer=False)
    m.graph.output[0].CopyFrom(helper.make_tensor_value_info("y", TensorProto.FLOAT, [2]))
    assert "(input 's2') must be a constant" in import_error(m)


def test_unknown_domain():
    m = model([node("Relu", ["x"], ["a"])], {"x": rand((2,))}, ["a"], infer=False)
    m.graph.node.append(helper.make_node("FusedGemm", ["a"], ["y"], name="fg",
                                         domain="com.microsoft"))
    m.graph.output[0].CopyFrom(helper.make_tensor_value_info("y", TensorProto.FLOAT, [2]))
    m.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    assert import_error(m) == ("m.onnx: error: node 'fg' (FusedGemm): operators of domain "
                               "'com.microsoft' are not supported (only the default ONNX "
                               "domain is)")


def test_old_opset():
    m = model([node("Relu", ["x"], ["y"])], {"x": rand((2,))}, ["y"], opset=10)
    assert import_error(m) == (
        "m.onnx: error: the model uses opset 10; the importer supports opset 11 and later "
        "(convert it with onnx.version_converter.convert_version)")


def test_unreadable_bytes():
    with pytest.raises(DiagnosticError) as exc:
        aot.from_onnx(b"\x08\x07garbage", source_name="m.onnx")
    assert render(exc).startswith("m.onnx: error: cannot read the ONNX model: ")


def test_missing_file(tmp_path):
    path = tmp_path / "missing.onnx"
    with pytest.raises(DiagnosticError) as exc:
        aot.from_onnx(path)
    assert render(exc) == f"{path}: error: cannot read: No such file or directory"


def test_checker_failure():
    m = model([node("Relu", ["nowhere"], ["y"])], {"x": rand((2,))}, ["y"], infer=False)
    m.graph.output[0].CopyFrom(helper.make_tensor_value_info("y", TensorProto.FLOAT, [2]))
    text = import_error(m)
    assert text.startswith("m.onnx: error: the model is not valid ONNX: ")
    assert "nowhere" in text


def test_shapes_that_do_not_broadcast():
    m = model([node("Add", ["a", "b"], ["y"], name="add")], {"a": rand((2, 3)),
                                                              "b": rand((4,))}, ["y"],
              infer=False)
    m.graph.output[0].CopyFrom(helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3]))
    assert import_error(m) == ("m.onnx: error: node 'add' (Add): add: shapes (2, 3) and (4,) "
                               "do not broadcast (dimension 3 vs 4)")


def test_unsupported_optional_output():
    m = model([node("MaxPool", ["x"], ["y", "i"], name="mp", kernel_shape=[2, 2])],
              {"x": rand((1, 1, 4, 4))}, ["y", "i"])
    assert import_error(m) == "m.onnx: error: node 'mp' (MaxPool): the Indices output is not supported"


def test_diagnostic_without_source_name():
    m = model([node("Det", ["x"], ["y"])], {"x": rand((2, 2))}, ["y"])
    with pytest.raises(DiagnosticError) as exc:
        aot.from_onnx(m)
    assert render(exc) == "<onnx>: error: node #0 (Det) producing 'y': unsupported operator Det"


def test_gather_with_a_constant_index_out_of_range_is_refused():
    """ONNX refuses it (onnxruntime too); `take` would wrap it silently."""
    from onnx import numpy_helper
    g = helper.make_graph([helper.make_node("Gather", ["x", "i"], ["y"], axis=1)], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
                          [numpy_helper.from_array(np.array(7, np.int64), "i")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    assert "index 7 is out of range for axis 1 of extent 5" in import_error(m)


def _relu_declared(elem_type: int, shape: list) -> onnx.ModelProto:
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3])],
                          [helper.make_tensor_value_info("y", elem_type, shape)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


@pytest.mark.parametrize("declared, message", [
    ((TensorProto.INT32, [1, 3]), "declared with element type int32, the graph computes float32"),
    ((TensorProto.FLOAT, [1, 3, 1]), "declared with shape [1, 3, 1], the graph computes [1, 3]"),
])
def test_a_graph_output_declared_unlike_what_it_computes_is_refused(declared, message):
    assert message in import_error(_relu_declared(*declared))


def test_other_declared_output_dimensions_are_a_warning():
    """As onnxruntime: the computed shape wins (ONNX's own shape inference
    has declared wrong pooling shapes)."""
    from aot.diagnostics import AotWarning
    with pytest.warns(AotWarning, match=re.escape(
            "m.onnx: warning: graph output 'y' is declared with shape [1, 5], the graph "
            "computes [1, 3]")):
        mod = aot.from_onnx(_relu_declared(TensorProto.FLOAT, [1, 5]), source_name="m.onnx")
    assert mod["main"].checked_type.ret_type.shape == (1, 3)


def test_symbolic_output_dimensions_are_not_compared():
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 0])])
    aot.from_onnx(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]))
