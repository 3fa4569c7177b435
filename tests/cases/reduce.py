"""Reduction cases (sum, prod, mean, max, min, all, any; argmax, argmin;
variance, std; logsumexp), shared by tests/ops/test_reduce.py,
tests/emit/test_lower_reduce.py and tests/e2e/test_ops_c_reduce.py.

Attributes are written as keyword dicts: tests/ops passes them to the
operator record, the other layers spell them with
:func:`cases.common.attr_text`."""

from __future__ import annotations

REDUCERS = ["sum", "prod", "mean", "max", "min", "all", "any"]

#: (input shape, attributes): every axis form -- none, lists, negative
#: axes, keepdims, exclude, an empty list, 0-d and empty tensors
AXES = [
    ((2, 3, 4), {}),
    ((2, 3, 4), dict(axis=[1])),
    ((2, 3, 4), dict(axis=[-1])),
    ((2, 3, 4), dict(axis=[0, 2], keepdims=True)),
    ((2, 3, 4), dict(axis=[-3, 1])),
    ((2, 3, 4), dict(axis=[1], exclude=True)),
    ((2, 3, 4), dict(axis=[0, 1, 2], exclude=True)),
    ((2, 3, 4), dict(axis=[], keepdims=True)),
    ((5,), dict(axis=[0])),
    ((), {}),
    ((), dict(keepdims=True)),
    ((0, 3), dict(axis=[0])),
    ((3, 0), dict(axis=[1], keepdims=True)),
]

#: the dtypes each reducer runs with beyond float32 (on DTYPE_AXES)
DTYPES = {
    "sum": ["float16", "float64", "int8", "int16", "int32", "int64", "uint8", "uint64"],
    "prod": ["float16", "float64", "int8", "int32", "uint16", "int64", "uint64"],
    "mean": ["float16", "float64", "int8", "int32", "uint8", "int64", "uint64"],
    "max": ["float16", "float64", "int8", "uint32", "int64", "bool"],
    "min": ["float16", "float64", "int16", "uint8", "uint64", "bool"],
    "all": ["float64", "int8", "uint16", "bool"],
    "any": ["float16", "int32", "uint8", "bool"],
}
DTYPE_AXES = [((3, 5), dict(axis=[1])), ((4, 2, 3), dict(axis=[0, 2]))]

ARG_REDUCERS = ["argmax", "argmin"]
#: argmax / argmin run on every non-0-d AXES row (int8, many ties) and on
#: these dtypes over (3, 6), axis=[-1]
ARG_DTYPES = ["float16", "float32", "uint16", "int64", "bool"]

STATISTICS = ["variance", "std"]
FLOATS = ["float16", "float32", "float64"]
#: (data shape, attributes, mean shape) of variance / std, each with
#: unbiased False and True
VARIANCE_AXES = [
    ((2, 3, 4), dict(axis=[1]), (2, 1, 4)),
    ((2, 3, 4), dict(axis=[-1], keepdims=True), (2, 3, 1)),
    ((2, 3, 4), {}, (1, 1, 1)),
    ((2, 3, 4), dict(axis=[0], exclude=True), (2, 1, 1)),
    ((2, 3, 4), dict(axis=[1]), (2, 3, 4)),      # a mean varying along the reduced axis
    ((4, 1), dict(axis=[1]), (4, 1)),            # one element: unbiased divides by 0
    ((0, 2), dict(axis=[0]), (1, 2)),            # empty
]

#: (shape, attributes) of logsumexp, on every float dtype
LOGSUMEXP_AXES = [((3, 4), dict(axis=[1])), ((3, 4), dict(axis=[0], keepdims=True)),
                  ((2, 3, 2), {}), ((0, 2), dict(axis=[0]))]


def nonscalar(axes: list) -> list:
    """The rows of an axis table whose input is not 0-d (argmax and argmin
    need rank >= 1)."""
    return [row for row in axes if row[0] != ()]
