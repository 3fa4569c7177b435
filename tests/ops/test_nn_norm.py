"""nn.instance_norm, nn.group_norm and nn.l2_normalize (aot/ir/ops/nn_norm.py):
references against NumPy formulas written independently of the records,
relations accepting and rejecting, and SimplifyInference's expansion
computing what the records compute."""

from __future__ import annotations

import numpy as np
import pytest

import aot
from aot.ir.registry import RelationError, Solved
from aot.ir.types import IncompleteType
from nn_helpers import T, assert_close, get, infer, run, sample

RNG = np.random.default_rng(7)
FLOATS = ["float16", "float32", "float64"]


def _affine(y: np.ndarray, gamma: np.ndarray, beta: np.ndarray, axis: int) -> np.ndarray:
    shape = [1] * y.ndim
    shape[axis] = y.shape[axis]
    return y * gamma.astype(np.float64).reshape(shape) + beta.astype(np.float64).reshape(shape)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,axis", [((2, 3, 5), 1), ((2, 3, 4, 4), 1), ((2, 4, 3), 2)])
def test_instance_norm(dtype, shape, axis):
    x = sample(RNG, shape, dtype)
    gamma, beta = sample(RNG, (shape[axis],), dtype), sample(RNG, (shape[axis],), dtype)
    xf = x.astype(np.float64)
    want = np.empty_like(xf)
    for n in range(shape[0]):                 # one instance, one channel at a time
        for c in range(shape[axis]):
            sl = np.take(xf[n], c, axis=axis - 1)
            z = (sl - sl.mean()) / np.sqrt(sl.var() + 1e-3)
            idx = [n] + [slice(None)] * (len(shape) - 1)
            idx[axis] = c
            want[tuple(idx)] = z
    want = _affine(want, gamma, beta, axis)
    assert_close(run("nn.instance_norm", x, gamma, beta, axis=axis, epsilon=1e-3),
                 want.astype(dtype))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,groups", [((2, 6, 5), 3), ((1, 4, 3, 3), 2), ((3, 4), 4),
                                          ((1, 4, 2), 1)])
def test_group_norm(dtype, shape, groups):
    x = sample(RNG, shape, dtype)
    c = shape[1]
    gamma, beta = sample(RNG, (c,), dtype), sample(RNG, (c,), dtype)
    xf = x.astype(np.float64)
    want = np.empty_like(xf)
    per = c // groups
    for n in range(shape[0]):
        for g in range(groups):
            block = xf[n, g * per:(g + 1) * per]
            want[n, g * per:(g + 1) * per] = (block - block.mean()) / np.sqrt(block.var() + 1e-5)
    want = _affine(want, gamma, beta, 1)
    assert_close(run("nn.group_norm", x, gamma, beta, num_groups=groups), want.astype(dtype))


def test_group_norm_without_scale_and_center_ignores_gamma_and_beta():
    x = sample(RNG, (2, 4, 3), "float64")
    junk = np.full(4, np.nan)
    y = run("nn.group_norm", x, junk, junk, num_groups=2, scale=False, center=False)
    assert np.isfinite(y).all()


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,axis", [((3, 5), (1,)), ((2, 3, 4), (0, 2)), ((4, 2), None)])
def test_l2_normalize(dtype, shape, axis):
    x = sample(RNG, shape, dtype)
    xf = x.astype(np.float64)
    norm = np.sqrt(np.sum(xf ** 2, axis=axis, keepdims=True))
    want = xf / np.maximum(norm, np.sqrt(1e-4))
    attrs = {"eps": 1e-4} if axis is None else {"eps": 1e-4, "axis": axis}
    assert_close(run("nn.l2_normalize", x, **attrs), want.astype(dtype))


def test_l2_normalize_of_zero_is_zero_with_eps_and_nan_without():
    x = np.zeros((2, 3), np.float32)
    assert (run("nn.l2_normalize", x, eps=1e-6, axis=(1,)) == 0).all()
    assert np.isnan(run("nn.l2_normalize", x, eps=0.0, axis=(1,))).all()


def test_relations_solve_gamma_and_beta():
    for name, attrs in (("nn.instance_norm", {}), ("nn.group_norm", {"num_groups": 3})):
        op = get(name)
        r = op.rel([T((2, 6, 4)), IncompleteType(), IncompleteType()], op.attrs_type(**attrs))
        assert r == Solved(T((2, 6, 4)), (None, T((6,)), T((6,))))


@pytest.mark.parametrize("name,args,attrs,message", [
    ("nn.instance_norm", [T((2, 3)), T((3,)), T((3,))], {}, "rank 3 or more"),
    ("nn.instance_norm", [T((2, 3, 4), "int8"), T((3,), "int8"), T((3,), "int8")], {},
     "floating-point"),
    ("nn.instance_norm", [T((2, 3, 4)), T((4,)), T((3,))], {}, "gamma must have shape"),
    ("nn.group_norm", [T((2, 6, 4)), T((6,)), T((6,))], {"num_groups": 4}, "does not divide"),
    ("nn.group_norm", [T((2, 6, 4)), T((6,)), T((6,))], {"num_groups": 0}, "at least 1"),
    ("nn.l2_normalize", [T((2, 3))], {"axis": (1, -1)}, "names an axis twice"),
    ("nn.l2_normalize", [T((2, 3))], {"axis": (2,)}, "out of range"),
])
def test_relations_reject(name, args, attrs, message):
    with pytest.raises(RelationError, match=message):
        infer(name, args, **attrs)


def test_simplify_inference_expands_them_into_what_they_compute():
    """After SimplifyInference no normalisation call is left and the
    interpreter computes the same (in the data's dtype instead of float64)."""
    text = """
    def @main(%x: Tensor[(2, 4, 3), float32], %g: Tensor[(4), float32], %b: Tensor[(4), float32]) {
      (nn.instance_norm(%x, %g, %b), nn.group_norm(%x, %g, %b, num_groups=2, center=False),
       nn.l2_normalize(%x, eps=1e-3f, axis=[1, 2]))
    }"""
    mod = aot.infer_types(aot.parse(text))
    from aot.passes.simplify_inference import simplify_inference
    from aot.ir.printer import print_module
    simple = simplify_inference(mod)
    printed = print_module(simple)
    for name in ("instance_norm", "group_norm", "l2_normalize"):
        assert name not in printed
    args = [sample(RNG, (2, 4, 3), "float32"), sample(RNG, (4,), "float32"),
            sample(RNG, (4,), "float32")]
    for want, got in zip(aot.interpret(mod, *args), aot.interpret(simple, *args)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
