"""Sorting cases (argsort, sort, topk), shared by tests/ops/test_algorithm.py,
tests/emit/test_lower_algorithm.py and tests/e2e/test_ops_c_reduce.py.

Besides the rows, the one input generator every layer feeds them: many
ties, and for floats NaN, signed zeros and infinities among them (the
orders the sorts must keep stable)."""

from __future__ import annotations

from typing import Sequence

import numpy as np

#: the values :func:`tied_values` scatters over a third of a float input
SPECIALS = [np.nan, -0.0, 0.0, np.inf, -np.inf, 1.5, 1.5, -2.0]

SORTS = ["argsort", "sort"]
#: (shape, axis) of argsort / sort, float32, both directions
SHAPES = [((8,), 0), ((2, 8), 1), ((2, 8), -1), ((5, 3), 0), ((2, 5, 3), 1), ((3, 1), 1),
          ((1, 4), 0)]
#: argsort / sort over (3, 7), last axis, both directions
DTYPES = ["float16", "float64", "int8", "uint8", "int64", "uint32", "bool"]
#: row lengths n of argsort over (2, n): merge passes with partial runs, the
#: result in either half of the scratch
ROW_LENGTHS = [1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 33]
#: argsort's index dtype (float32 input (2, 6))
INDEX_DTYPES = ["int64", "int8", "uint16", "float32", "float16"]

RET_TYPES = ["both", "values", "indices"]
#: (shape, attributes) of topk on float32, with every RET_TYPES; row
#: length 8, so k <= 3 selects and k >= 4 merge-sorts
TOPK = [
    ((2, 8), dict(k=1)),
    ((2, 8), dict(k=2)),
    ((2, 8), dict(k=3, is_ascend=True)),
    ((2, 8), dict(k=4)),
    ((2, 8), dict(k=8, is_ascend=True)),
    ((2, 8), dict(k=0)),
    ((2, 8), dict(k=-1, is_ascend=True)),
    ((8, 3), dict(k=2, axis=0)),
    ((8, 3), dict(k=5, axis=-2, is_ascend=True)),
    ((2, 8, 2), dict(k=1, axis=1, is_ascend=True)),
    ((1,), dict(k=1)),
    ((5,), dict(k=1, is_ascend=True)),
]
#: topk on other dtypes (index dtype int64), over a row of 6 or 7
TOPK_DTYPES = ["int8", "uint8", "float64", "float16", "int32", "bool"]


def tied_values(rng: np.random.Generator, shape: Sequence[int], dtype: str) -> np.ndarray:
    """Values in [-3, 3] (unsigned [0, 3], bool half true); for floats a third
    of the elements (at least one) replaced by SPECIALS."""
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.startswith(("int", "uint")):
        return rng.integers(0 if dtype.startswith("u") else -3, 4, shape).astype(dtype)
    x = rng.integers(-3, 4, shape).astype(dtype)
    flat = x.reshape(-1)
    for i in rng.choice(flat.size, size=min(flat.size, max(1, flat.size // 3)), replace=False):
        flat[i] = SPECIALS[int(rng.integers(len(SPECIALS)))]
    return x
