"""ONNX tensor converters (shape manipulation, indexing, constants, casts,
padding, resizing) against onnxruntime, through the reference
interpreter."""

from __future__ import annotations

import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

import numpy as np  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from onnx_helpers import check, check_single, model, node, rand  # noqa: E402


def i64(values) -> np.ndarray:
    return np.asarray(values, dtype=np.int64)


# ------------------------------------------------------------------- shapes

@pytest.mark.parametrize("shape,target,allowzero", [
    ((2, 3, 4), [6, 4], 0), ((2, 3, 4), [0, -1], 0), ((2, 3, 4), [-1], 0),
    ((2, 3, 4), [2, 0, 2, 2], 0), ((1, 6), [3, -1, 1], 0)])
def test_reshape(shape, target, allowzero):
    check_single("Reshape", {"x": rand(shape)}, opset=14, inits={"s": i64(target)},
                 allowzero=allowzero)


def test_reshape_allowzero_literal_zero():
    # a zero-size constant reshaped with allowzero: 0 is a literal extent
    m = model([node("Reshape", ["z", "s"], ["r"], allowzero=1), node("Shape", ["r"], ["y"])],
              {"x": rand((1,))}, ["y"], {"z": np.zeros((2, 0, 4), np.float32),
                                         "s": i64([0, 4, 0])}, opset=14)
    check(m, {"x": rand((1,))})


@pytest.mark.parametrize("axis", [0, 1, 2, 3, -1, -3])
def test_flatten(axis):
    check_single("Flatten", {"x": rand((2, 3, 4))}, axis=axis)


@pytest.mark.parametrize("perm", [None, [0, 2, 1], [2, 0, 1], [0, 1, 2]])
def test_transpose(perm):
    attrs = {} if perm is None else {"perm": perm}
    check_single("Transpose", {"x": rand((2, 3, 4))}, **attrs)


@pytest.mark.parametrize("opset", [11, 13])
@pytest.mark.parametrize("axes", [None, [1], [-1, 1]])
def test_squeeze(opset, axes):
    x = rand((2, 1, 3, 1))
    if axes is None:
        check_single("Squeeze", {"x": x}, opset=opset)
    elif opset == 11:
        check_single("Squeeze", {"x": x}, opset=opset, axes=axes)
    else:
        check_single("Squeeze", {"x": x}, opset=opset, inits={"a": i64(axes)})


@pytest.mark.parametrize("opset", [11, 13])
@pytest.mark.parametrize("axes", [[0], [1, 3], [-1], [0, -1]])
def test_unsqueeze(opset, axes):
    x = rand((2, 3))
    if opset == 11:
        check_single("Unsqueeze", {"x": x}, opset=opset, axes=axes)
    else:
        check_single("Unsqueeze", {"x": x}, opset=opset, inits={"a": i64(axes)})


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concat(axis):
    check_single("Concat", {"a": rand((2, 3)), "b": rand((2, 3), seed=1)},
                 inits={"c": rand((2, 3), seed=2)}, axis=axis)


def test_concat_single_input():
    check_single("Concat", {"a": rand((2, 3))}, axis=0)


@pytest.mark.parametrize("opset,split,n_out,attrs", [
    (11, None, 3, {"axis": 1}), (11, [1, 2, 3], 3, {"axis": 1}), (13, [4, 2], 2, {"axis": 1}),
    (13, None, 2, {"axis": 0}), (18, None, 4, {"axis": 0, "num_outputs": 4}),
    (18, None, 3, {"axis": 1, "num_outputs": 3}), (18, [5, 1], 2, {"axis": -1})])
def test_split(opset, split, n_out, attrs):
    x = rand((4, 6))
    if split is None:
        check_single("Split", {"x": x}, opset=opset, n_outputs=n_out, **attrs)
    elif opset == 11:
        check_single("Split", {"x": x}, opset=opset, n_outputs=n_out, split=split, **attrs)
    else:
        check_single("Split", {"x": x}, opset=opset, n_outputs=n_out,
                     inits={"s": i64(split)}, **attrs)


def test_split_uneven_num_outputs():
    # opset 18: the last chunk is smaller
    check_single("Split", {"x": rand((2, 7))}, opset=18, n_outputs=3, axis=1, num_outputs=3)


@pytest.mark.parametrize("shape,target", [((3, 1), [2, 3, 4]), ((3, 1), [3, 1]),
                                          ((1,), [2, 2]), ((2, 1, 4), [1, 3, 1])])
def test_expand(shape, target):
    check_single("Expand", {"x": rand(shape)}, inits={"s": i64(target)})


@pytest.mark.parametrize("reps", [[1, 1], [2, 3], [1, 0]])
def test_tile(reps):
    check_single("Tile", {"x": rand((2, 3))}, inits={"r": i64(reps)})


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
def test_depth_to_space(mode):
    check_single("DepthToSpace", {"x": rand((1, 8, 2, 3))}, blocksize=2, mode=mode)


def test_space_to_depth():
    check_single("SpaceToDepth", {"x": rand((1, 2, 4, 6))}, blocksize=2)


def test_identity():
    check_single("Identity", {"x": rand((2, 3))})


# ------------------------------------------------------------------ indexing

SLICE_CASES = [
    ([1], [3], None, None),
    ([0, 1], [2, -1], [0, 1], None),
    ([-1], [-1000], [1], [-1]),                        # reversed, through element 0
    ([10], [-100], [0], [-2]),                         # start clamped to dim-1
    ([-100], [100], [1], [2]),
    ([3], [1], [1], [1]),                              # empty
    ([0, 0], [9223372036854775807, 9223372036854775807], [0, 1], [1, 1]),
    ([4, 1], [0, 3], [1, 0], [-1, 1]),
    ([2], [-9223372036854775808], [1], [-1]),
]


@pytest.mark.parametrize("starts,ends,axes,steps", SLICE_CASES)
def test_slice(starts, ends, axes, steps):
    inits = {"st": i64(starts), "en": i64(ends)}
    if axes is not None:
        inits["ax"] = i64(axes)
    if steps is not None:
        inits["sp"] = i64(steps)
    check_single("Slice", {"x": rand((4, 5))}, inits=inits)


@pytest.mark.parametrize("indices,axis", [
    (i64([0, 2, -1]), 0), (i64([[1, -2], [0, 0]]), 1), (np.asarray(-1, np.int64), 0),
    (np.asarray([3, 0], np.int32), 1)])
def test_gather(indices, axis):
    check_single("Gather", {"x": rand((3, 4))}, inits={"i": indices}, axis=axis)


def test_gather_dynamic_indices():
    check_single("Gather", {"x": rand((3, 4)), "i": i64([2, -3, 1])}, axis=0)


@pytest.mark.parametrize("axis", [0, 1])
def test_gather_elements(axis):
    idx = i64([[0, -1, 1], [2, 0, -2]]) if axis == 1 else i64([[0, -1, 1, 0], [1, 0, -2, 1]])
    check_single("GatherElements", {"x": rand((3, 4)), "i": idx}, axis=axis)


@pytest.mark.parametrize("axis,opset", [(-1, 11), (0, 11), (1, 13)])
def test_one_hot(axis, opset):
    idx = i64([[0, 2], [-1, 1]])
    check_single("OneHot", {"i": idx}, opset=opset,
                 inits={"d": np.asarray(3, np.int64), "v": np.asarray([-1.0, 5.0], np.float32)},
                 axis=axis)


@pytest.mark.parametrize("op_type", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("attrs", [{}, {"axis": 1, "keepdims": 0},
                                   {"axis": -1, "select_last_index": 1}])
def test_arg(op_type, attrs):
    x = np.asarray([[1, 3, 3, 0], [2, 2, 0, 0], [5, 1, 5, 1]], np.float32)
    check_single(op_type, {"x": x}, **attrs)


@pytest.mark.parametrize("attrs", [{}, {"largest": 0}, {"axis": 0}, {"sorted": 1}])
def test_topk(attrs):
    x = np.asarray([[1, 3, 3, 0], [2, 2, 0, 0], [5, 1, 5, 1]], np.float32)
    check_single("TopK", {"x": x}, inits={"k": i64([2])}, n_outputs=2, **attrs)


# ------------------------------------------------------- values and types

@pytest.mark.parametrize("attr,value", [
    ("value", numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3))),
    ("value_float", 2.5), ("value_floats", [1.0, 2.0]), ("value_int", 7),
    ("value_ints", [1, 2, 3]),
    ("value", numpy_helper.from_array(np.asarray([True, False])))])
def test_constant(attr, value):
    m = model([node("Constant", [], ["c"], **{attr: value}),
               node("Identity", ["c"], ["y"])], {"x": rand((1,))}, ["y", "x"][:1])
    check(m, {"x": rand((1,))})


@pytest.mark.parametrize("value", [None, numpy_helper.from_array(np.asarray([3], np.int32)),
                                   numpy_helper.from_array(np.asarray([1.5], np.float32))])
def test_constant_of_shape(value):
    attrs = {} if value is None else {"value": value}
    m = model([node("ConstantOfShape", ["s"], ["c"], **attrs), node("Add", ["c", "c"], ["y"])],
              {"x": rand((1,))}, ["y"], {"s": i64([2, 3])})
    check(m, {"x": rand((1,))})


@pytest.mark.parametrize("attrs", [{}, {"start": 1}, {"end": -1}, {"start": -2, "end": 10}])
def test_shape(attrs):
    check_single("Shape", {"x": rand((2, 3, 4))}, opset=15, **attrs)


def test_size():
    check_single("Size", {"x": rand((2, 3, 4))})


def _range_model(start, limit, delta, dtype, opset=13):
    return model([node("Range", ["a", "b", "c"], ["r"]), node("Identity", ["r"], ["y"])],
                 {"x": rand((1,))}, ["y"],
                 {"a": np.asarray(start, dtype), "b": np.asarray(limit, dtype),
                  "c": np.asarray(delta, dtype)}, opset=opset)


@pytest.mark.parametrize("start,limit,delta,dtype", [
    (0, 5, 1, np.int64), (10, 2, -3, np.int32), (0.5, 2.0, 0.25, np.float32),
    (1.0, 1.0, 1.0, np.float32)])
def test_range(start, limit, delta, dtype):
    check(_range_model(start, limit, delta, dtype), {"x": rand((1,))}, rtol=0, atol=0)


def test_range_is_start_plus_i_times_delta():
    """The specification's formula, which the ONNX test suite follows
    (onnxruntime accumulates the delta instead: 0.5 + 0.1 + 0.1 ...)."""
    import aot
    got = aot.interpret(aot.from_onnx(_range_model(0.5, 2.0, 0.1, np.float32)), rand((1,)))
    want = np.float32(0.5) + np.arange(15, dtype=np.float32) * np.float32(0.1)
    np.testing.assert_array_equal(got, want)


CASTS = [(np.float32, TensorProto.INT32), (np.float32, TensorProto.UINT8),
         (np.float32, TensorProto.BOOL), (np.int32, TensorProto.FLOAT),
         (np.int64, TensorProto.INT8), (np.bool_, TensorProto.FLOAT),
         (np.float32, TensorProto.DOUBLE), (np.float32, TensorProto.FLOAT16),
         (np.float32, TensorProto.FLOAT)]


@pytest.mark.parametrize("src,to", CASTS)
def test_cast(src, to):
    x = rand((3, 4), src, low=-100, high=100) if np.dtype(src).kind != "b" else \
        rand((3, 4), src)
    if to == TensorProto.UINT8:
        x = np.abs(x)
    check_single("Cast", {"x": x}, to=to)


def test_cast_like():
    check_single("CastLike", {"x": rand((3,), np.float32, low=-9, high=9)},
                 opset=15, inits={"t": np.zeros((1,), np.int32)})


# ---------------------------------------------------------------------- pad

PAD_CASES = [
    ("constant", [1, 2, 0, 1], None, None),
    ("constant", [1, 0, 2, 3], np.float32(1.5), None),
    ("edge", [2, 1, 1, 2], None, None),
    ("reflect", [1, 2, 2, 1], None, None),
    ("constant", [-1, 1, 0, -2], None, None),
    ("constant", [1, 2], np.float32(-3.0), [1]),
    ("reflect", [2, 1], None, [-2]),
    ("wrap", [1, 2, 3, 1], None, None),
    ("wrap", [5, 0, 0, 9], None, None),            # wider than the axis
    ("wrap", [-1, 2, 1, -2], None, None),
]


@pytest.mark.parametrize("mode,pads,value,axes", PAD_CASES)
def test_pad(mode, pads, value, axes):
    opset = 19 if mode == "wrap" else 18 if axes is not None else 13
    inits = {"p": i64(pads)}
    if value is not None or axes is not None:
        inits["v"] = None if value is None else np.asarray(value)
    if axes is not None:
        inits["a"] = i64(axes)
    check_single("Pad", {"x": rand((3, 4))}, opset=opset, inits=inits, mode=mode)


def test_pad_dynamic_value():
    m = model([node("Pad", ["x", "p", "v"], ["y"])], {"x": rand((2, 2)), "v": rand(())},
              ["y"], {"p": i64([1, 1, 1, 1])})
    check(m, {"x": rand((2, 2)), "v": rand((), seed=5)})


# ------------------------------------------------------------------- resize

RESIZE_CASES = [
    ({"mode": "nearest"}, [1, 1, 2, 2], None),
    ({"mode": "nearest", "coordinate_transformation_mode": "asymmetric",
      "nearest_mode": "floor"}, [1, 1, 2, 3], None),
    ({"mode": "nearest", "nearest_mode": "round_prefer_ceil"}, None, [1, 2, 7, 5]),
    ({"mode": "nearest", "coordinate_transformation_mode": "align_corners",
      "nearest_mode": "ceil"}, None, [1, 2, 5, 9]),
    ({"mode": "linear"}, [1, 1, 2, 2], None),
    ({"mode": "linear", "coordinate_transformation_mode": "align_corners"}, None, [1, 2, 7, 5]),
    ({"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"}, None,
     [1, 2, 1, 5]),
    ({"mode": "linear", "coordinate_transformation_mode": "asymmetric"}, None, [1, 2, 3, 2]),
    ({"mode": "cubic"}, [1, 1, 2, 2], None),
    ({"mode": "cubic", "exclude_outside": 1, "cubic_coeff_a": -0.5}, None, [1, 2, 6, 3]),
    ({"mode": "linear"}, None, [1, 2, 2, 2]),                        # downsampling
]


@pytest.mark.parametrize("attrs,scales,sizes", RESIZE_CASES)
def test_resize(attrs, scales, sizes):
    inits = {"roi": np.zeros((0,), np.float32)}
    inits["scales"] = np.asarray(scales, np.float32) if scales is not None else None
    if sizes is not None:
        inits["sizes"] = i64(sizes)
    check_single("Resize", {"x": rand((1, 2, 4, 3))}, opset=13, inits=inits, **attrs)


def test_resize_tf_crop_and_resize():
    inits = {"roi": np.asarray([0, 0, 0.2, 0.1, 1, 1, 0.9, 0.8], np.float32), "scales": None,
             "sizes": i64([1, 2, 5, 4])}
    check_single("Resize", {"x": rand((1, 2, 4, 3))}, opset=13, inits=inits, mode="linear",
                 coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=-1.0)


def test_resize_opset18_axes():
    inits = {"roi": None, "scales": None, "sizes": i64([6, 9])}
    check_single("Resize", {"x": rand((1, 2, 3, 3))}, opset=18, inits=inits, mode="linear",
                 axes=[2, 3])


def test_resize_opset11():
    inits = {"roi": np.zeros((0,), np.float32), "scales": np.asarray([1, 1, 2, 2], np.float32)}
    check_single("Resize", {"x": rand((1, 2, 3, 3))}, opset=11, inits=inits, mode="nearest")


def test_helper_make_tensor_value():
    # a constant given as a raw TensorProto built by helper.make_tensor
    t = helper.make_tensor("t", TensorProto.INT32, [2], [4, 5])
    m = model([node("Constant", [], ["c"], value=t), node("Identity", ["c"], ["y"])],
              {"x": rand((1,))}, ["y"])
    check(m, {"x": rand((1,))})


def test_range_float16_at_opset_27():
    import aot
    m = _range_model(1000, 1010, 0.7, np.float16, opset=27)
    got = aot.interpret(aot.from_onnx(m), rand((1,)))
    a, c = np.float32(np.float16(1000)), np.float32(np.float16(0.7))
    want = (a + np.arange(15, dtype=np.float32) * c).astype(np.float16)
    np.testing.assert_array_equal(got, want)


def test_resize_nearest_uint8():
    inits = {"roi": np.zeros((0,), np.float32), "scales": None, "sizes": i64([1, 2, 7, 5])}
    check_single("Resize", {"x": rand((1, 2, 3, 3), np.uint8, low=0, high=255)}, opset=13,
                 inits=inits, mode="nearest")
