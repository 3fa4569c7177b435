"""nn activations, dense layers, normalisation, dropout, flatten and pad:
references against NumPy formulas, relations accepting and rejecting."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aot.ir.attrs import AttrError
from aot.ir.dtype import DType
from aot.ir.registry import PatternKind, RelationError, Solved
from aot.ir.types import ANY, IncompleteType, TupleType
from cases import nn as table
from nn_helpers import T, assert_close, get, infer, run, sample

RNG = np.random.default_rng(1)
FLOATS = ["float16", "float32", "float64"]


# ------------------------------------------------------------ activations

@pytest.mark.parametrize("dtype", FLOATS + ["int8", "int32", "uint8"])
@pytest.mark.parametrize("shape", [(), (5,), (2, 3, 4)])
def test_relu(dtype, shape):
    x = sample(RNG, shape, dtype)
    assert_close(run("nn.relu", x), np.where(x > 0, x, 0).astype(dtype))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("alpha", [0.0, 0.01, 0.25, 1.5])
def test_leaky_relu_float(dtype, alpha):
    x = sample(RNG, (3, 7), dtype)
    expected = np.where(x > 0, x.astype(np.float64), alpha * x.astype(np.float64))
    assert_close(run("nn.leaky_relu", x, alpha=alpha), expected.astype(dtype))


def test_leaky_relu_integer_alpha_is_converted_to_the_dtype():
    x = np.array([-5, -1, 0, 3], dtype=np.int32)
    # alpha 2.7 -> 2 on int32 data (TOPI converts alpha to the data dtype)
    assert_close(run("nn.leaky_relu", x, alpha=2.7), np.array([-10, -2, 0, 3], np.int32))
    assert_close(run("nn.leaky_relu", x, alpha=0.5), np.array([0, 0, 0, 3], np.int32))


def test_leaky_relu_default_alpha_is_relays():
    assert get("nn.leaky_relu").attrs_type().alpha == 0.25


@pytest.mark.parametrize("shape,axis", [((2, 3, 4, 4), 1), ((2, 5), 1), ((4, 6, 3), -1),
                                        ((3, 2, 2), 0)])
def test_prelu(shape, axis):
    x = sample(RNG, shape, "float32")
    alpha = sample(RNG, (shape[axis],), "float32")
    bshape = [1] * len(shape)
    bshape[axis] = shape[axis]
    expected = np.where(x > 0, x, x * alpha.reshape(bshape))
    assert_close(run("nn.prelu", x, alpha, axis=axis), expected)


def np_softmax(x, axis):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,axis", [((5,), 0), ((2, 7), -1), ((2, 3, 4), 1),
                                        ((1, 2, 3, 4), 3)])
def test_softmax_and_log_softmax(dtype, shape, axis):
    x = sample(RNG, shape, dtype) * 4
    s = run("nn.softmax", x, axis=axis)
    assert_close(s, np_softmax(x, axis).astype(dtype))
    assert_close(run("nn.log_softmax", x, axis=axis), np.log(np_softmax(x, axis)).astype(dtype))


def test_softmax_is_stable_for_large_inputs():
    x = np.array([[1000.0, 1000.0, -1000.0]], dtype=np.float32)
    assert_close(run("nn.softmax", x), np.array([[0.5, 0.5, 0.0]], np.float32))
    assert np.isfinite(run("nn.log_softmax", x)[0, :2]).all()


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=4), st.data())
def test_softmax_sums_to_one_along_any_axis(shape, data):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    x = RNG.standard_normal(shape).astype(np.float32)
    s = run("nn.softmax", x, axis=axis)
    np.testing.assert_allclose(s.sum(axis=axis), 1.0, rtol=1e-5)


def test_softmax_rejects_bad_axis_and_integers():
    with pytest.raises(RelationError, match="axis=3 is out of range .* rank 3"):
        infer("nn.softmax", [T((2, 3, 4))], axis=3)
    with pytest.raises(RelationError, match="floating-point .* int32"):
        infer("nn.log_softmax", [T((2, 3), DType.INT32)])


# --------------------------------------------------------- dense / matmul

def dense_ref(x, w, out_dtype):
    """Direct sum over k in Python integers / float64."""
    out = np.zeros(x.shape[:-1] + (w.shape[0],), dtype=object)
    for idx in np.ndindex(*x.shape[:-1]):
        for u in range(w.shape[0]):
            if np.dtype(out_dtype).kind == "f":
                out[idx + (u,)] = float(np.dot(x[idx].astype(np.float64), w[u].astype(np.float64)))
            else:
                out[idx + (u,)] = sum(int(a) * int(b) for a, b in zip(x[idx], w[u]))
    if np.dtype(out_dtype).kind == "f":
        return out.astype(np.float64).astype(out_dtype)
    bits = np.dtype(out_dtype).itemsize * 8
    wrapped = [(int(v) + (1 << (bits - 1))) % (1 << bits) - (1 << (bits - 1)) for v in out.flat]
    if np.dtype(out_dtype).kind == "u":
        wrapped = [int(v) % (1 << bits) for v in out.flat]
    return np.array(wrapped, dtype=out_dtype).reshape(out.shape)


@pytest.mark.parametrize("shape,units,dt,wdt,out", table.DENSE)
def test_dense(shape, units, dt, wdt, out):
    x = sample(RNG, shape, dt, -128, 127)
    w = sample(RNG, (units, shape[-1]), wdt, -128, 127)
    attrs = {"units": units} if out is None else {"units": units, "out_dtype": out}
    got = run("nn.dense", x, w, **attrs)
    assert_close(got, dense_ref(x, w, out or dt))


def test_dense_int8_is_exact_for_extreme_values():
    x = np.full((1, 64), -128, np.int8)
    w = np.full((2, 64), -128, np.int8)
    got = run("nn.dense", x, w, out_dtype="int32")
    assert got.tolist() == [[64 * 128 * 128] * 2]


@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_matmul_transposes(ta, tb):
    a = sample(RNG, (4, 3) if ta else (3, 4), "float32")
    b = sample(RNG, (5, 4) if tb else (4, 5), "float32")
    expected = (a.T if ta else a).astype(np.float64) @ (b.T if tb else b).astype(np.float64)
    assert_close(run("nn.matmul", a, b, transpose_a=ta, transpose_b=tb),
                 expected.astype(np.float32))


def test_matmul_integer():
    a = sample(RNG, (2, 3), "int32")
    b = sample(RNG, (3, 4), "int32")
    assert_close(run("nn.matmul", a, b), a.astype(np.int64) @ b.astype(np.int64)
                 .astype(np.int32))


@pytest.mark.parametrize("xs,ys,ta,tb", table.BATCH_MATMUL)
@pytest.mark.parametrize("dtype", table.BATCH_MATMUL_DTYPES)
def test_batch_matmul(xs, ys, ta, tb, dtype):
    x = sample(RNG, xs, dtype)
    y = sample(RNG, ys, dtype)
    out = "int32" if dtype == "int8" else None
    attrs = {"transpose_a": ta, "transpose_b": tb}
    if out:
        attrs["out_dtype"] = out
    got = run("nn.batch_matmul", x, y, **attrs)
    xx = np.swapaxes(x, 1, 2) if ta else x
    yy = np.swapaxes(y, 1, 2) if tb else y
    acc = np.float64 if np.dtype(dtype).kind == "f" else np.int64
    expected = np.matmul(xx.astype(acc), yy.astype(acc)).astype(out or dtype)
    assert_close(got, expected)


def test_batch_matmul_defaults():
    """The text format's default is Relay's C++ one (no transpose); the
    builder's is Relay's Python API's (``transpose_b=True``)."""
    op = get("nn.batch_matmul")
    assert op.attrs_type().transpose_b is False
    assert op.builder_defaults().transpose_b is True
    assert infer("nn.batch_matmul", [T((2, 3, 4)), T((2, 4, 5))]) == T((2, 3, 5))
    assert infer("nn.batch_matmul", [T((2, 3, 4)), T((2, 5, 4))], transpose_b=True) \
        == T((2, 3, 5))


# ----------------------------------------------------- dense relations

def test_dense_relation_infers_the_weight_from_units():
    op = get("nn.dense")
    r = op.rel([T((8, 16)), IncompleteType()], op.attrs_type.from_raw({"units": 4}))
    assert r == Solved(T((8, 4)), (None, T((4, 16))))


def test_dense_relation_waits_for_the_weight_without_units():
    op = get("nn.dense")
    assert op.rel([T((8, 16)), IncompleteType()], op.attrs_type()) is None
    assert op.rel([IncompleteType(), T((4, 16))], op.attrs_type()) is None


@pytest.mark.parametrize("args,attrs,out", [
    ([T((8, 16)), T((4, 16))], {}, T((8, 4))),
    ([T((2, 3, 16)), T((4, 16))], {"units": 4}, T((2, 3, 4))),
    ([T((ANY, 16)), T((4, 16))], {}, T((ANY, 4))),
    ([T((8, ANY)), T((4, 16))], {}, T((8, 4))),
    ([T((8, 16), "int8"), T((4, 16), "int8")], {"out_dtype": "int32"}, T((8, 4), "int32")),
    ([T((8, 16), "uint8"), T((4, 16), "int8")], {"out_dtype": "int32"}, T((8, 4), "int32")),
    ([T((8, 16), "float16"), T((4, 16), "float16")], {"out_dtype": ""}, T((8, 4), "float16")),
])
def test_dense_relation_accepts(args, attrs, out):
    assert infer("nn.dense", args, **attrs) == out


@pytest.mark.parametrize("args,attrs,match", [
    ([T((8, 16)), T((4, 15))], {}, "reduced dimension of data .* is 16 .* has 15"),
    ([T((8, 16)), T((4, 16))], {"units": 5}, r"weight must have shape \(5, 16\)"),
    ([T((8, 16)), T((4, 16, 1))], {}, "rank 2"),
    ([T(()), T((4, 16))], {}, "rank >= 1"),
    ([T((8, 16), "int8"), T((4, 16))], {}, "cannot mix integer and floating-point"),
    ([T((8, 16)), T((4, 16))], {"out_dtype": "int32"}, "out_dtype=int32 .* float32"),
    ([T((8, 16), "bool"), T((4, 16), "bool")], {}, "bool"),
    ([TupleType(()), T((4, 16))], {}, "expects a tensor as its data"),
])
def test_dense_relation_rejects(args, attrs, match):
    with pytest.raises(RelationError, match=match):
        infer("nn.dense", args, **attrs)


def test_matmul_relation_with_transpose_and_units():
    op = get("nn.matmul")
    at = op.attrs_type.from_raw({"units": 6, "transpose_a": True})
    r = op.rel([T((16, 8)), IncompleteType()], at)
    assert r == Solved(T((8, 6)), (None, T((16, 6))))
    with pytest.raises(RelationError, match="rank >= 2"):
        op.rel([T((16,)), IncompleteType()], at)


@pytest.mark.parametrize("args,match", [
    ([T((2, 3, 4)), T((3, 5, 4))], "batch dimensions 2 and 3"),
    ([T((2, 3, 4)), T((2, 3, 5))], "reduced dimensions 4 and 3"),
    ([T((3, 4)), T((2, 5, 4))], "rank-3"),
])
def test_batch_matmul_relation_rejects(args, match):
    with pytest.raises(RelationError, match=match):
        infer("nn.batch_matmul", args)


def test_batch_matmul_relation_dynamic_batch():
    assert infer("nn.batch_matmul", [T((ANY, 3, 4)), T((1, 4, 5))]) == T((ANY, 3, 5))
    assert infer("nn.batch_matmul", [T((2, 3, 4)), T((2, 4, 5))], out_dtype="float16") \
        == T((2, 3, 5), "float16")


# ------------------------------------------------------------- bias_add

@pytest.mark.parametrize("shape,axis", [((2, 3, 4, 5), 1), ((2, 3), 1), ((2, 3, 4), -1),
                                        ((4,), 0)])
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_bias_add(shape, axis, dtype):
    x = sample(RNG, shape, dtype)
    b = sample(RNG, (shape[axis],), dtype)
    bshape = [1] * len(shape)
    bshape[axis] = shape[axis]
    assert_close(run("nn.bias_add", x, b, axis=axis), x + b.reshape(bshape))


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(1, 5), min_size=1, max_size=4), st.data())
def test_bias_add_relation_solves_the_bias_for_any_axis(shape, data):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    op = get("nn.bias_add")
    r = op.rel([T(shape), IncompleteType()], op.attrs_type.from_raw({"axis": axis}))
    assert r == Solved(T(shape), (None, T((shape[axis],))))


@pytest.mark.parametrize("args,attrs,match", [
    ([T((2, 3)), T((2,))], {}, r"bias must have shape \(3,\) .* got \(2,\)"),
    ([T((2, 3)), T((3,), "float16")], {}, "bias has dtype float16 but the data is float32"),
    ([T((2, 3)), T((3,))], {"axis": 2}, "axis=2 is out of range"),
])
def test_bias_add_relation_rejects(args, attrs, match):
    with pytest.raises(RelationError, match=match):
        infer("nn.bias_add", args, **attrs)


# -------------------------------------------------------- normalisation

@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,axis", [((2, 3, 4, 4), 1), ((5, 3), 1), ((2, 4, 3), -1)])
@pytest.mark.parametrize("center,scale", [(True, True), (False, True), (True, False)])
def test_batch_norm(dtype, shape, axis, center, scale):
    c = shape[axis]
    x = sample(RNG, shape, dtype)
    gamma, beta, mean = (sample(RNG, (c,), dtype) for _ in range(3))
    var = (np.abs(sample(RNG, (c,), dtype)) + 0.5).astype(dtype)
    bshape = [1] * len(shape)
    bshape[axis] = c
    f = {k: v.astype(np.float64).reshape(bshape)
         for k, v in dict(g=gamma, b=beta, m=mean, v=var).items()}
    y = (x.astype(np.float64) - f["m"]) / np.sqrt(f["v"] + 1e-3)
    y = y * f["g"] if scale else y
    y = y + f["b"] if center else y
    out, m2, v2 = run("nn.batch_norm", x, gamma, beta, mean, var, axis=axis, epsilon=1e-3,
                      center=center, scale=scale)
    assert_close(out, y.astype(dtype))
    assert_close(m2, mean)
    assert_close(v2, var)


def test_batch_norm_relation_solves_all_four_vectors():
    op = get("nn.batch_norm")
    holes = [IncompleteType() for _ in range(4)]
    r = op.rel([T((1, 8, 5, 5)), *holes], op.attrs_type())
    vec = T((8,))
    assert r == Solved(TupleType((T((1, 8, 5, 5)), vec, vec)), (None, vec, vec, vec, vec))
    # partially known: only the holes are refined
    r = op.rel([T((1, 8, 5, 5)), vec, holes[1], vec, holes[3]], op.attrs_type())
    assert r.args == (None, None, vec, None, vec)


@pytest.mark.parametrize("args,match", [
    ([T((1, 8, 5, 5)), T((7,)), T((8,)), T((8,)), T((8,))], r"gamma must have shape \(8,\)"),
    ([T((1, 8, 5, 5)), T((8,)), T((8,)), T((8,)), T((8, 1))], "moving_var must have shape"),
    ([T((1, 8), "int32")] + [T((8,), "int32")] * 4, "floating-point"),
])
def test_batch_norm_relation_rejects(args, match):
    with pytest.raises(RelationError, match=match):
        infer("nn.batch_norm", args)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,axis", [((2, 5), -1), ((2, 3, 6), 2), ((4, 3, 2), 1)])
def test_layer_norm(dtype, shape, axis):
    x = sample(RNG, shape, dtype)
    gamma, beta = sample(RNG, (shape[axis],), dtype), sample(RNG, (shape[axis],), dtype)
    xf = x.astype(np.float64)
    mu = xf.mean(axis=axis, keepdims=True)
    sd = np.sqrt(xf.var(axis=axis, keepdims=True) + 1e-5)
    bshape = [1] * len(shape)
    bshape[axis] = shape[axis]
    y = (xf - mu) / sd * gamma.astype(np.float64).reshape(bshape) \
        + beta.astype(np.float64).reshape(bshape)
    assert_close(run("nn.layer_norm", x, gamma, beta, axis=axis), y.astype(dtype))


def test_layer_norm_relation_solves_gamma_and_beta():
    op = get("nn.layer_norm")
    r = op.rel([T((2, 3, 6)), IncompleteType(), IncompleteType()], op.attrs_type())
    assert r == Solved(T((2, 3, 6)), (None, T((6,)), T((6,))))


def test_dropout_is_identity_with_a_ones_mask():
    x = sample(RNG, (3, 4), "float32")
    out, mask = run("nn.dropout", x, rate=0.3)
    assert_close(out, x)
    assert_close(mask, np.ones_like(x))
    assert infer("nn.dropout", [T((3, 4))]) == TupleType((T((3, 4)), T((3, 4))))
    with pytest.raises(AttrError, match="rate"):
        get("nn.dropout").attrs_type.from_raw({"rate": 1.5})


@pytest.mark.parametrize("shape", [(2,), (2, 3), (2, 3, 4, 5), (1, 1, 1)])
def test_batch_flatten(shape):
    x = sample(RNG, shape, "int16")
    assert_close(run("nn.batch_flatten", x), x.reshape(shape[0], -1))


def test_batch_flatten_relation():
    assert infer("nn.batch_flatten", [T((ANY, 3, 4))]) == T((ANY, 12))
    assert infer("nn.batch_flatten", [T((2, ANY, 4))]) == T((2, ANY))
    with pytest.raises(RelationError, match="rank >= 1"):
        infer("nn.batch_flatten", [T(())])


# ------------------------------------------------------------------- pad

def pad_ref(x, widths, mode, value):
    """Index-by-index reference: each output index maps back to the input."""
    out_shape = tuple(d + a + b for d, (a, b) in zip(x.shape, widths))
    out = np.empty(out_shape, dtype=x.dtype)
    for idx in np.ndindex(*out_shape):
        src = []
        inside = True
        for i, (a, _) in zip(idx, widths):
            j = i - a
            n = x.shape[len(src)]
            if 0 <= j < n:
                src.append(j)
                continue
            inside = False
            if mode == "edge":
                src.append(min(max(j, 0), n - 1))
            elif mode == "reflect":
                src.append(-j if j < 0 else 2 * (n - 1) - j)
            else:
                src.append(0)
        out[idx] = x[tuple(src)] if inside or mode != "constant" else value
    return out


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect"])
@pytest.mark.parametrize("shape,widths", [
    ((4,), [[1, 2]]),
    ((3, 4), [[0, 0], [2, 1]]),
    ((1, 2, 3, 4), [[0, 0], [0, 0], [2, 2], [1, 3]]),
])
@pytest.mark.parametrize("dtype", ["float32", "int8"])
def test_pad(mode, shape, widths, dtype):
    x = sample(RNG, shape, dtype)
    value = np.array(7.9, dtype=np.float32)
    got = run("nn.pad", x, value, pad_width=widths, pad_mode=mode)
    fill = np.array(7.9 if dtype == "float32" else 7, dtype=dtype)
    assert_close(got, pad_ref(x, widths, mode, fill))


def test_pad_relation():
    op = get("nn.pad")
    at = op.attrs_type.from_raw({"pad_width": [[1, 1], [0, 2]]})
    assert op.rel([T((2, 3)), T(())], at) == T((4, 5))
    assert op.rel([T((ANY, 3)), T((), "int32")], at) == T((ANY, 5))
    assert op.rel([T((2, 3)), IncompleteType()], at) == Solved(T((4, 5)), (None, T(())))
    with pytest.raises(RelationError, match="pad_width has 2 pairs but the data has rank 3"):
        op.rel([T((2, 3, 4)), T(())], at)
    with pytest.raises(RelationError, match="pad value must be a scalar"):
        op.rel([T((2, 3)), T((1,))], at)
    refl = op.attrs_type.from_raw({"pad_width": [[0, 0], [3, 0]], "pad_mode": "reflect"})
    with pytest.raises(RelationError, match="reflect padding of axis 1 by \\[3, 0\\]"):
        op.rel([T((2, 3)), T(())], refl)


@pytest.mark.parametrize("raw,match", [
    ({"pad_width": [[1, -1]]}, "non-negative"),
    ({"pad_width": [[1, 2, 3]]}, "pair"),
    ({"pad_mode": "wrap"}, "'constant', 'edge', 'reflect'"),
])
def test_pad_attrs_reject(raw, match):
    with pytest.raises(AttrError, match=match):
        get("nn.pad").attrs_type.from_raw(raw)


# ------------------------------------------------------- registry columns

PATTERNS = {
    "nn.relu": PatternKind.ELEMWISE, "nn.leaky_relu": PatternKind.ELEMWISE,
    "nn.prelu": PatternKind.BROADCAST, "nn.bias_add": PatternKind.BROADCAST,
    "nn.softmax": PatternKind.OUT_ELEMWISE_FUSABLE,
    "nn.log_softmax": PatternKind.OUT_ELEMWISE_FUSABLE,
    "nn.dense": PatternKind.OUT_ELEMWISE_FUSABLE, "nn.matmul": PatternKind.OUT_ELEMWISE_FUSABLE,
    "nn.batch_matmul": PatternKind.OUT_ELEMWISE_FUSABLE,
    "nn.batch_norm": PatternKind.OUT_ELEMWISE_FUSABLE, "nn.layer_norm": PatternKind.OPAQUE,
    "nn.dropout": PatternKind.OPAQUE, "nn.batch_flatten": PatternKind.INJECTIVE,
    "nn.pad": PatternKind.INJECTIVE,
}


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_pattern_kind_is_relays(name):
    assert get(name).pattern is PATTERNS[name]


ARITY = {"nn.relu": 1, "nn.prelu": 2, "nn.dense": 2, "nn.batch_norm": 5, "nn.layer_norm": 3,
         "nn.pad": 2, "nn.dropout": 1, "nn.bias_add": 2}


@pytest.mark.parametrize("name", sorted(ARITY))
def test_arity(name):
    assert get(name).arity == ARITY[name]


@pytest.mark.parametrize("name,raw", [
    ("nn.dense", {"units": 768, "out_dtype": "int32"}),
    ("nn.matmul", {"units": 3, "transpose_a": True, "transpose_b": True}),
    ("nn.batch_matmul", {"out_dtype": "float16", "transpose_b": True}),
    ("nn.softmax", {"axis": 3}),
    ("nn.leaky_relu", {"alpha": 0.0}),
    ("nn.batch_norm", {"axis": 3, "epsilon": 0.001, "center": False}),
    ("nn.pad", {"pad_width": [[0, 0], [2, 2]], "pad_mode": "edge"}),
])
def test_attrs_round_trip_through_raw(name, raw):
    cls = get(name).attrs_type
    attrs = cls.from_raw(raw)
    assert attrs.to_raw() == raw
    assert cls.from_raw(attrs.to_raw()) == attrs


def test_blank_out_dtype_reads_as_unset():
    attrs = get("nn.dense").attrs_type.from_raw({"out_dtype": ""})
    assert attrs.out_dtype is None and attrs.to_raw() == {}
