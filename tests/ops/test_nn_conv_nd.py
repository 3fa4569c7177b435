"""nn.conv3d, nn.conv1d_transpose and nn.conv3d_transpose
(aot/ir/ops/nn_conv_nd.py) against
direct loop references (one output element, or one input element's
scatter, at a time), and relations rejecting bad input."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import aot
from aot.ir.registry import RelationError
from cases import conv_nd as table
from cases.common import attr_text
from nn_helpers import T, infer


def _expand(v, n):
    return list(v) * n if len(v) == 1 else list(v)


def _setup3d(x, w, attrs, kernel_layout):
    """x in NCDHW and w in ``kernel_layout`` as float64, strides, dilations,
    the six paddings, groups."""
    dl, kl = attrs.get("data_layout", "NCDHW"), attrs.get("kernel_layout", kernel_layout)
    x = np.transpose(x, [dl.index(c) for c in "NCDHW"]).astype(np.float64)
    w = np.transpose(w, [kl.index(c) for c in kernel_layout]).astype(np.float64)
    s, d = _expand(attrs.get("strides", [1]), 3), _expand(attrs.get("dilation", [1]), 3)
    p = list(attrs.get("padding", [0]))
    p = p * 6 if len(p) == 1 else p * 2 if len(p) == 3 else p
    return x, w, s, d, p, attrs.get("groups", 1)


def conv3d_ref(x, w, attrs):
    x, w, s, d, p, g = _setup3d(x, w, attrs, "OIDHW")
    n, c, *size = x.shape
    o, cg, *k = w.shape
    outs = [(size[i] + p[i] + p[i + 3] - (k[i] - 1) * d[i] - 1) // s[i] + 1 for i in range(3)]
    res = np.zeros((n, o, *outs))
    for b, oc, *pos in itertools.product(range(n), range(o), *map(range, outs)):
        grp = oc // (o // g)
        total = 0.0
        for ic, *t in itertools.product(range(cg), *map(range, k)):
            at = [pos[i] * s[i] - p[i] + t[i] * d[i] for i in range(3)]
            if all(0 <= at[i] < size[i] for i in range(3)):
                total += x[(b, grp * cg + ic, *at)] * w[(oc, ic, *t)]
        res[(b, oc, *pos)] = total
    ol = attrs.get("data_layout", "NCDHW")
    return np.transpose(res, ["NCDHW".index(c) for c in ol])


def conv1d_transpose_ref(x, w, attrs):
    dl, kl = attrs.get("data_layout", "NCW"), attrs.get("kernel_layout", "IOW")
    x = np.transpose(x, [dl.index(c) for c in "NCW"]).astype(np.float64)
    w = np.transpose(w, [kl.index(c) for c in "IOW"]).astype(np.float64)
    s, d = attrs.get("strides", [1])[0], attrs.get("dilation", [1])[0]
    p = list(attrs.get("padding", [0]))
    left, right = (p[0], p[0]) if len(p) == 1 else p
    op = attrs.get("output_padding", [0])[0]
    g = attrs.get("groups", 1)
    n, c, size = x.shape
    _, og, k = w.shape
    cg = c // g
    full = (size - 1) * s + (k - 1) * d + 1 + op
    res = np.zeros((n, og * g, full))
    for b, ic, i, oc, t in itertools.product(range(n), range(c), range(size), range(og),
                                             range(k)):
        res[b, (ic // cg) * og + oc, i * s + t * d] += x[b, ic, i] * w[ic, oc, t]
    res = res[:, :, left:full - right]
    return np.transpose(res, ["NCW".index(c) for c in dl])


def conv3d_transpose_ref(x, w, attrs):
    x, w, s, d, p, g = _setup3d(x, w, attrs, "IODHW")
    op = _expand(attrs.get("output_padding", [0]), 3)
    n, c, *size = x.shape
    _, og, *k = w.shape
    cg = c // g
    full = [(size[i] - 1) * s[i] + (k[i] - 1) * d[i] + 1 + op[i] for i in range(3)]
    res = np.zeros((n, og * g, *full))
    for b, ic, *rest in itertools.product(range(n), range(c), *map(range, size), range(og),
                                          *map(range, k)):
        i, oc, t = rest[:3], rest[3], rest[4:]
        at = tuple(i[a] * s[a] + t[a] * d[a] for a in range(3))
        res[(b, (ic // cg) * og + oc, *at)] += x[(b, ic, *i)] * w[(ic, oc, *t)]
    res = res[(slice(None), slice(None)) + tuple(slice(p[a], full[a] - p[a + 3])
                                                 for a in range(3))]
    return np.transpose(res, ["NCDHW".index(c) for c in attrs.get("data_layout", "NCDHW")])


def _run(op, xs, ws, dtype, attrs):
    rng = np.random.default_rng(len(xs) * 7 + len(ws))
    x, w = ((rng.integers(-20, 20, shp) if dtype != "float32" else rng.standard_normal(shp))
            .astype(dtype) for shp in (xs, ws))
    text = (f"def @main(%x: Tensor[({', '.join(map(str, xs))}), {dtype}], "
            f"%w: Tensor[({', '.join(map(str, ws))}), {dtype}]) {{ {op}(%x, %w, "
            f"{attr_text(attrs)}) }}")
    return x, w, aot.interpret(aot.parse(text), x, w)


#: (operator, its case table, its loop reference)
REFERENCES = [("nn.conv3d", table.CONV3D, conv3d_ref),
              ("nn.conv1d_transpose", table.TRANSPOSE1D, conv1d_transpose_ref),
              ("nn.conv3d_transpose", table.TRANSPOSE3D, conv3d_transpose_ref)]


@pytest.mark.parametrize("op,xs,ws,attrs,ref", [
    pytest.param(op, xs, ws, attrs, ref, id=f"{op}-{i}")
    for op, cases, ref in REFERENCES for i, (xs, ws, attrs) in enumerate(cases)])
@pytest.mark.parametrize("dtype,out_dtype", table.DTYPES)
def test_against_the_loop_reference(op, xs, ws, attrs, ref, dtype, out_dtype):
    a = dict(attrs, out_dtype=out_dtype) if out_dtype else attrs
    x, w, got = _run(op, xs, ws, dtype, a)
    assert got.dtype == np.dtype(out_dtype or dtype)
    np.testing.assert_allclose(got, ref(x, w, attrs), rtol=1e-5, atol=1e-5)


def test_conv3d_skips_padding_taps_of_non_finite_weights():
    x = np.ones((1, 1, 1, 1, 1), np.float32)
    w = np.full((1, 1, 3, 3, 3), np.inf, np.float32)
    text = ("def @main(%x: Tensor[(1, 1, 1, 1, 1), float32], %w: Tensor[(1, 1, 3, 3, 3), "
            "float32]) { nn.conv3d(%x, %w, padding=[1]) }")
    assert aot.interpret(aot.parse(text), x, w).reshape(()) == np.inf


@pytest.mark.parametrize("name,types,attrs,message", [
    ("nn.conv3d", [T((1, 2, 3, 3, 3)), T((4, 3, 1, 1, 1))], {}, "input channels"),
    ("nn.conv3d", [T((1, 2, 3, 3, 3)), T((4, 2, 4, 1, 1))], {}, "empty along D"),
    ("nn.conv1d_transpose", [T((1, 2, 3)), T((3, 2, 2))], {}, "input channels"),
    ("nn.conv3d_transpose", [T((1, 2, 3, 3, 3)), T((3, 2, 1, 1, 1))], {}, "input channels"),
    ("nn.conv3d_transpose", [T((1, 2, 1, 3, 3)), T((2, 2, 1, 1, 1))],
     {"padding": [1, 0, 0]}, "empty along D"),
])
def test_relations_reject(name, types, attrs, message):
    with pytest.raises(RelationError, match=message):
        infer(name, types, **attrs)
