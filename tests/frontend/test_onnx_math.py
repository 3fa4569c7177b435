"""ONNX elementwise math, comparison, logic and reduction converters against
onnxruntime, through the reference interpreter."""

from __future__ import annotations

import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

import numpy as np  # noqa: E402

from onnx_helpers import check_single, rand  # noqa: E402

BINARY = ["Add", "Sub", "Mul", "Div"]
SHAPES = [((2, 3), (2, 3)), ((2, 3), (3,)), ((2, 1, 4), (3, 1)), ((), (2, 2))]


@pytest.mark.parametrize("op_type", BINARY)
@pytest.mark.parametrize("a_shape,b_shape", SHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int64, np.uint8])
def test_arithmetic(op_type, a_shape, b_shape, dtype):
    low = 0 if np.dtype(dtype).kind == "u" else -20
    a = rand(a_shape, dtype, low=low, high=20)
    b = rand(b_shape, dtype, seed=1, low=low, high=20)
    if op_type == "Div":
        b = np.where(b == 0, 3, b).astype(dtype)
    check_single(op_type, {"a": a, "b": b}, opset=14)


def test_integer_division_truncates():
    a = np.array([7, -7, 7, -7, 0], np.int32)
    b = np.array([2, 2, -2, -2, 5], np.int32)
    check_single("Div", {"a": a, "b": b})


@pytest.mark.parametrize("fmod,dtype", [(0, np.int32), (1, np.int32), (1, np.float32),
                                        (0, np.int64)])
def test_mod(fmod, dtype):
    a = np.array([7, -7, 7, -7, 5, 0], dtype)
    b = np.array([3, 3, -3, -3, 5, 4], dtype)
    check_single("Mod", {"a": a, "b": b}, fmod=fmod)


@pytest.mark.parametrize("x_dtype,y_dtype", [(np.float32, np.float32), (np.float32, np.int64),
                                             (np.int32, np.int32), (np.int64, np.float32)])
def test_pow(x_dtype, y_dtype):
    x = np.array([[1, 2, 3], [4, 5, 2]], x_dtype)
    y = np.array([2, 3, 0], y_dtype)
    check_single("Pow", {"x": x, "y": y}, opset=15)


@pytest.mark.parametrize("op_type", ["Max", "Min", "Sum", "Mean"])
@pytest.mark.parametrize("n", [1, 2, 3])
def test_variadic(op_type, n):
    inputs = {f"x{i}": rand((2, 3) if i != 1 else (3,), seed=i) for i in range(n)}
    check_single(op_type, inputs)


def test_max_int():
    check_single("Max", {"a": rand((4,), np.int32), "b": rand((4,), np.int32, seed=1)})


UNARY = ["Neg", "Abs", "Sqrt", "Reciprocal", "Exp", "Log", "Floor", "Ceil", "Round", "Sign",
         "Erf", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh"]


@pytest.mark.parametrize("op_type", UNARY)
def test_unary(op_type):
    x = rand((3, 5), low=-2, high=2)
    if op_type in ("Sqrt", "Log"):
        x = np.abs(x) + 0.1
    if op_type in ("Asin", "Acos"):
        x = x / 2.5
    if op_type == "Round":
        x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 1.2, -2.7], np.float32)
    check_single(op_type, {"x": x}, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("op_type", ["Neg", "Abs", "Sign"])
def test_unary_int(op_type):
    check_single(op_type, {"x": rand((7,), np.int32, low=-5, high=5)})


@pytest.mark.parametrize("op_type,opset", [("Equal", 13), ("Less", 13), ("Greater", 13),
                                           ("LessOrEqual", 16), ("GreaterOrEqual", 16)])
@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_compare(op_type, opset, dtype):
    a = rand((3, 4), dtype, low=-2, high=2)
    b = rand((4,), dtype, seed=1, low=-2, high=2)
    check_single(op_type, {"a": a, "b": b}, opset=opset)


@pytest.mark.parametrize("op_type", ["And", "Or", "Xor"])
def test_logic(op_type):
    check_single(op_type, {"a": rand((3, 4), np.bool_), "b": rand((4,), np.bool_, seed=1)})


def test_not():
    check_single("Not", {"a": rand((3, 4), np.bool_)})


def test_isnan_isinf():
    x = np.array([1.0, np.nan, np.inf, -np.inf, 0.0], np.float32)
    check_single("IsNaN", {"x": x})
    for neg, pos in [(1, 1), (0, 1), (1, 0), (0, 0)]:
        check_single("IsInf", {"x": x}, detect_negative=neg, detect_positive=pos)


def test_where():
    check_single("Where", {"c": rand((3, 1), np.bool_), "x": rand((3, 4)),
                           "y": rand((4,), seed=1)})


# ---------------------------------------------------------------- reductions

REDUCE = ["ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
          "ReduceL2", "ReduceLogSumExp", "ReduceSumSquare", "ReduceLogSum"]
AXES = [None, [1], [0, 2], [-1]]


def _axes_input_version(op_type: str) -> int:
    return 13 if op_type == "ReduceSum" else 18


@pytest.mark.parametrize("op_type", REDUCE)
@pytest.mark.parametrize("axes", AXES)
@pytest.mark.parametrize("keepdims", [0, 1])
@pytest.mark.parametrize("opset", [11, 18])
def test_reduce(op_type, axes, keepdims, opset):
    x = rand((2, 3, 4), low=0.1, high=2)
    if opset >= _axes_input_version(op_type):
        inits = {} if axes is None else {"axes": np.asarray(axes, np.int64)}
        check_single(op_type, {"x": x}, opset=opset, inits=inits, keepdims=keepdims,
                     rtol=1e-5, atol=1e-5)
    else:
        attrs = {} if axes is None else {"axes": axes}
        check_single(op_type, {"x": x}, opset=opset, keepdims=keepdims, rtol=1e-5, atol=1e-5,
                     **attrs)


@pytest.mark.parametrize("op_type", ["ReduceSum", "ReduceMean", "ReduceMax"])
def test_reduce_noop_with_empty_axes(op_type):
    x = rand((2, 3))
    check_single(op_type, {"x": x}, opset=18, noop_with_empty_axes=1)
    check_single(op_type, {"x": x}, opset=18, inits={"axes": np.zeros((0,), np.int64)},
                 noop_with_empty_axes=1)
    check_single(op_type, {"x": x}, opset=18, inits={"axes": np.zeros((0,), np.int64)})


@pytest.mark.parametrize("op_type", ["ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd"])
def test_reduce_int(op_type):
    x = rand((3, 4), np.int32, low=-4, high=4)
    if op_type == "ReduceSum":
        check_single(op_type, {"x": x}, opset=13, inits={"axes": np.asarray([1], np.int64)})
    else:
        check_single(op_type, {"x": x}, opset=13, axes=[1])


def test_reduce_max_bool():
    check_single("ReduceMax", {"x": rand((3, 4), np.bool_)}, opset=20,
                 inits={"axes": np.asarray([1], np.int64)})
