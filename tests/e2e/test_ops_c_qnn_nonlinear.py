"""qnn.sigmoid, qnn.tanh, qnn.hardswish and qnn.mean compiled to C
against the interpreter (TFLite's reference arithmetic), bit-exact: every
code of the dtype for the activations, random data for the mean, over the
parameters of tests/cases/qnn_nonlinear.py, all in one build."""

from __future__ import annotations

import numpy as np

from c_harness import check_cases
from cases.qnn_nonlinear import ACTIVATIONS, MEANS
from test_ops_c import case, rng_for


def _all_codes(dtype: str) -> np.ndarray:
    info = np.iinfo(dtype)
    return np.arange(int(info.min), int(info.max) + 1).astype(dtype).reshape(16, -1)


def activation_cases():
    out = []
    for k, (op, dt, si, zi, so, zo) in enumerate(ACTIVATIONS):
        out.append(case(f"{op}:{dt}-{k}", [("x", (16, 16), dt)],
                        f"{op}(%x, {si!r}f, {zi}, {so!r}f, {zo})", [_all_codes(dt)]))
    return out


def mean_cases():
    out = []
    for k, (dt, shape, axis, keep, excl, si, zi, so, zo) in enumerate(MEANS):
        info = np.iinfo(dt)
        x = rng_for(f"qmean{k}").integers(int(info.min), int(info.max) + 1, shape).astype(dt)
        ax = "" if axis is None else f", axis={list(axis)}"
        out.append(case(f"qnn.mean:{dt}-{k}", [("x", shape, dt)],
                        f"qnn.mean(%x, {si!r}f, {zi}, {so!r}f, {zo}{ax}, keepdims={keep}, "
                        f"exclude={excl})", [x]))
    out.append(case("qnn.mean:empty", [("x", (0, 3), "int8")],
                    "qnn.mean(%x, 0.1f, 2, 0.1f, 4, axis=[0])", [np.zeros((0, 3), np.int8)]))
    return out


def all_cases():
    return activation_cases() + mean_cases()


def test_nonlinear_and_mean():
    check_cases(all_cases(), "qnn_nonlin")
