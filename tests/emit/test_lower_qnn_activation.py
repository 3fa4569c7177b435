"""Lowering of qnn.leaky_relu (aot/emit/lower/ops/qnn_activation.py)
against the interpreter: constant scales (literal multipliers, no float in
the kernel) and run-time ones, int8/uint8/int16, and fusion after
qnn.conv2d's requantize."""

from __future__ import annotations

import numpy as np
import pytest

from test_lower_qnn import check, f32, i32, kernel_dtypes


def data(dtype: str, n: int = 40, seed: int = 0) -> np.ndarray:
    info = np.iinfo(dtype)
    x = np.random.default_rng(seed).integers(info.min, info.max + 1, n).astype(dtype)
    x[:4] = [info.min, info.max, 0, 1]
    return x


PARAMS = [(0.5, 0, 0.25, 0, 0.25), (0.1, 3, 0.07, -5, 0.1), (0.02, -7, 0.5, 9, 0.0),
          (1.5, 0, 0.001, 0, 1.0)]


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16"])
@pytest.mark.parametrize("params", PARAMS)
@pytest.mark.parametrize("where", ["literal", "runtime"])
def test_leaky_relu(dtype: str, params: tuple, where: str) -> None:
    si, zi, so, zo, alpha = params
    consts = {"si": f32(si), "zi": i32(zi), "so": f32(so), "zo": i32(zo)}
    body = f"qnn.leaky_relu(%x, %si, %zi, %so, %zo, alpha={alpha!r}f)"
    if where == "literal":
        group = check({"x": data(dtype)}, body, consts)
        assert not any(d.is_float for d in kernel_dtypes(group))
    else:
        check({"x": data(dtype), **consts}, body)


def test_leaky_relu_after_requantize() -> None:
    x = np.random.default_rng(2).integers(-5000, 5000, 30).astype(np.int32)
    check({"x": x}, '%0 = qnn.requantize(%x, 0.01f, 0, 0.1f, 3, out_dtype="int8");\n'
                    '  qnn.leaky_relu(%0, 0.1f, 3, 0.05f, -1, alpha=0.125f)')
