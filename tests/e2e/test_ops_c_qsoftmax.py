"""qnn.softmax compiled to C against the interpreter (the reference,
TFLite's integer arithmetic), bit-exact: every row of
``tests/cases/qnn.py``'s ``SOFTMAX_CASES`` (int8, uint8, int16; TFLite's
output parameters and others; several axes and beta) on random inputs
over the whole dtype range plus rows of equal values and rows with one
dominant value, all in one C build."""

from __future__ import annotations

import numpy as np
import pytest

from c_harness import check_cases
from cases import qnn as qnn_cases
from test_ops_c import case, rng_for


def softmax_data(name: str, shape, dtype: str) -> np.ndarray:
    rng = rng_for(name)
    info = np.iinfo(dtype)
    x = rng.integers(int(info.min), int(info.max) + 1, shape).astype(np.int64)
    flat = x.reshape(-1, shape[-1]) if len(shape) > 1 else x.reshape(1, -1)
    flat[0] = int(info.max)                       # a row of equal values
    if flat.shape[0] > 1:
        flat[1] = int(info.min)                   # one dominant value
        flat[1, 0] = int(info.max)
    if flat.shape[0] > 2:                         # a narrow spread
        flat[2] = rng.integers(-3, 4, flat.shape[1])
    return x.astype(dtype)


def softmax_cases():
    out = []
    for i, (dt, shape, axis, si, zi, so, zo, beta) in enumerate(qnn_cases.SOFTMAX_CASES):
        name = f"qnn.softmax:{i}-{dt}"
        body = (f"qnn.softmax(%x, {si!r}f, {zi}, {so!r}f, {zo}, axis={axis}, "
                f"beta={beta!r}f)")
        out.append(case(name, [("x", shape, dt)], body, [softmax_data(name, shape, dt)]))
    return out


def all_cases():
    return softmax_cases()


def test_softmax_c_matches_reference():
    check_cases(all_cases(), "qnn_softmax")


def test_run_time_scale_is_a_diagnostic(tmp_path):
    """The prepare-time constants need constant scales: a run-time one is
    refused with a diagnostic (the interpreter accepts it)."""
    import aot
    from aot.diagnostics import DiagnosticError
    mod = aot.parse('#[version = "0.0.5"]\n'
                    'def @main(%x: Tensor[(2, 5), int8], %s: float32) {\n'
                    '  qnn.softmax(%x, %s, 0, 0.00390625f, -128)\n}')
    with pytest.raises(DiagnosticError, match="input_scale must be a compile-time constant"):
        aot.compile(mod, tmp_path, name="rt")
