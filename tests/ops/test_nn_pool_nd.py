"""1-d, 3-d and adaptive pooling (aot/ir/ops/nn_pool_nd.py,
nn_pool_adaptive.py) against a direct loop reference written out per
output element (TOPI's definitions), and relations rejecting bad input."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import aot
from aot.ir.attrs import AttrError
from cases import pool_nd as table
from cases.common import attr_text
from aot.ir.registry import RelationError
from nn_helpers import T, infer


def _padding(padding: list[int], n: int) -> tuple[list[int], list[int]]:
    p = list(padding)
    if len(p) == 1:
        p = p * 2 * n
    elif len(p) == n and n > 1:
        p = p * 2
    return p[:n], p[n:]


def window_ref(x: np.ndarray, kind: str, layout: str, letters: str, attrs: dict) -> np.ndarray:
    """Canonical per-element loops over the spatial ``letters``."""
    n = len(letters)
    perm = [layout.index(c) for c in layout if c not in letters] + \
        [layout.index(c) for c in letters]
    xc = np.transpose(x, perm)
    def rep(v):
        return list(v) * n if len(v) == 1 else list(v)
    k, s, d = rep(attrs["pool_size"]), rep(attrs.get("strides", [1])), \
        rep(attrs.get("dilation", [1]))
    before, after = _padding(attrs.get("padding", [0]), n)
    ceil = attrs.get("ceil_mode", False)
    include = attrs.get("count_include_pad", False)
    sizes = xc.shape[-n:]
    outs = []
    for i in range(n):
        span = sizes[i] + before[i] + after[i] - (k[i] - 1) * d[i] - 1
        outs.append((math.ceil(span / s[i]) if ceil else span // s[i]) + 1)
    lead = xc.shape[:-n]
    res = np.zeros(lead + tuple(outs), dtype=x.dtype)
    is_int = x.dtype.kind in "iu"
    for pre in itertools.product(*map(range, lead)):
        for o in itertools.product(*map(range, outs)):
            vals, counted = [], 0
            for t in itertools.product(*map(range, k)):
                pos = [o[i] * s[i] - before[i] + t[i] * d[i] for i in range(n)]
                inside = all(0 <= pos[i] < sizes[i] for i in range(n))
                padded = all(-before[i] <= pos[i] < sizes[i] + after[i] for i in range(n))
                if inside:
                    vals.append(xc[pre + tuple(pos)])
                counted += inside or (include and padded)
            if kind == "max":
                res[pre + o] = max(vals) if vals else (np.iinfo(x.dtype).min if is_int else -np.inf)
            elif is_int:
                total = sum(int(v) for v in vals)
                q = abs(total) // max(counted, 1)
                res[pre + o] = -q if total < 0 else q
            else:
                res[pre + o] = sum(float(v) for v in vals) / max(counted, 1)
    return np.transpose(res, np.argsort(perm))


def adaptive_ref(x: np.ndarray, kind: str, layout: str, letters: str, attrs: dict) -> np.ndarray:
    size = attrs.get("output_size", [])
    axes = [layout.index(c) for c in letters]
    outs = [x.shape[a] for a in axes] if not size else \
        (list(size) * len(letters) if len(size) == 1 else list(size))
    shape = list(x.shape)
    for a, m in zip(axes, outs):
        shape[a] = m
    res = np.zeros(shape, dtype=x.dtype)
    for idx in itertools.product(*map(range, shape)):
        sl = list(idx)
        for a, m in zip(axes, outs):
            i = idx[a]
            sl[a] = slice(math.floor(i * x.shape[a] / m), math.ceil((i + 1) * x.shape[a] / m))
        win = x[tuple(sl)].astype(np.float64 if x.dtype.kind == "f" else np.int64)
        if kind == "max":
            res[idx] = win.max()
        elif x.dtype.kind in "iu":
            q = abs(int(win.sum())) // win.size
            res[idx] = -q if win.sum() < 0 else q
        else:
            res[idx] = win.sum() / win.size
    return res


def run(op: str, shape: tuple, dtype: str, attrs: dict) -> tuple[np.ndarray, np.ndarray]:
    dims = ", ".join(map(str, shape))
    body = f"{op}(%x, {attr_text(attrs)})" if attrs else f"{op}(%x)"
    mod = aot.parse(f"def @main(%x: Tensor[({dims}), {dtype}]) {{ {body} }}")
    rng = np.random.default_rng(len(op) + len(shape))
    x = (rng.integers(-100, 100, shape) if dtype != "float32"
         else rng.standard_normal(shape)).astype(dtype)
    return x, aot.interpret(mod, x)


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("suffix,shape,attrs", table.WINDOWS)
@pytest.mark.parametrize("dtype", table.DTYPES)
def test_window_pools(kind, suffix, shape, attrs, dtype):
    op, attrs = table.window_op(kind, suffix, attrs)
    x, got = run(op, shape, dtype, attrs)
    layout = attrs.get("layout", "NCW" if suffix == "1d" else "NCDHW")
    want = window_ref(x, kind, layout, "W" if suffix == "1d" else "DHW", attrs)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("suffix,shape,attrs", table.ADAPTIVE)
@pytest.mark.parametrize("dtype", table.DTYPES)
def test_adaptive_pools(kind, suffix, shape, attrs, dtype):
    x, got = run(f"nn.adaptive_{kind}_pool{suffix}", shape, dtype, attrs)
    letters, default = table.ADAPTIVE_AXES[suffix]
    want = adaptive_ref(x, kind, attrs.get("layout", default), letters, attrs)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name,attrs,message", [
    ("nn.max_pool1d", dict(pool_size=[9]), "empty along W"),
    ("nn.avg_pool3d", dict(pool_size=[2, 2, 2]), "rank 3"),
    ("nn.adaptive_avg_pool2d", dict(output_size=[2]), "rank 3"),
    ("nn.adaptive_max_pool3d", dict(output_size=[2]), "rank 3"),
])
def test_relations_reject(name, attrs, message):
    with pytest.raises(RelationError, match=message):
        infer(name, [T((1, 2, 5), "float32")], **attrs)


@pytest.mark.parametrize("text", [
    'nn.max_pool1d(%x, pool_size=[2], layout="NCH")',
    "nn.avg_pool3d(%x, pool_size=[2, 2])",
    "nn.adaptive_max_pool1d(%x, output_size=[0])",
    "nn.adaptive_avg_pool3d(%x, output_size=[1, 2])",
])
def test_attributes_reject(text):
    with pytest.raises((aot.DiagnosticError, AttrError, ValueError)):
        aot.parse(f"def @main(%x: Tensor[(1, 2, 5), float32]) {{ {text} }}")
