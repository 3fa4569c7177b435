"""Transform cases (aot/ir/ops/transform*.py, layout.py): reshape's special
values, strided_slice's attribute forms, take's index dtypes and modes,
gather, one_hot, cast pairs, clip bounds and layout_transform, shared by
tests/ops/test_transform*.py, tests/emit/test_lower_transform*.py and
tests/e2e/test_ops_c_transform.py.

The edge values the conversions run on (:func:`edge_values`) and the
out-of-range indices take runs on (:func:`index_values`) are here too:
tests/emit and tests/e2e feed both the same; tests/ops runs the cast pairs
on them against its own scalar reference.

Attributes are written as keyword dicts (see :mod:`cases.reduce`); the
layers that parse programs spell them with :func:`cases.common.attr_text`."""

from __future__ import annotations

import math

import numpy as np

# =================================================================== reshape

#: (input shape, newshape, result shape): Relay's special values 0, -1,
#: -2, -3, -4.  A row with an empty input dimension reshapes with
#: allowzero=True (a 0 in newshape is then a 0, not a copy).
RESHAPES = [
    ((2, 3, 4), [4, 0, 2], (4, 3, 2)),
    ((2, 3, 4), [6, 1, -1], (6, 1, 4)),
    ((2, 3, 4), [3, -1, 8], (3, 1, 8)),
    ((2, 3, 4), [-1], (24,)),
    ((2, 3, 4), [-2, 1, 1], (2, 3, 4, 1, 1)),
    ((2, 3, 4), [-3, 4], (6, 4)),
    ((2, 3, 4), [0, -3], (2, 12)),
    ((2, 3, 4), [-4, 1, 2, -2], (1, 2, 3, 4)),
    ((2, 3, 4), [2, -4, -1, 3, -2], (2, 1, 3, 4)),
    ((6,), [-4, 2, -1], (2, 3)),
    ((24,), [2, -1, 4], (2, 3, 4)),
    ((), [1, 1], (1, 1)),
    ((1, 1), [], ()),
    ((4, 6), [3, 8], (3, 8)),
    ((2, 1, 6), [3, 1, 4], (3, 1, 4)),
    ((0, 3), [3, 0], (3, 0)),
    ((2, 3, 4), [2, 0, 0], (2, 3, 4)),
    ((2, 3, 4), [-2], (2, 3, 4)),
    ((2, 3, 4), [2, -2], (2, 3, 4)),
    ((2, 3, 4, 5), [-3, -3], (6, 20)),
    ((2, 3, 4), [-3, -2], (6, 4)),
    ((2, 3, 4), [-2, -1], (2, 3, 4, 1)),
    ((50, 32, 2304), [50, 32, 3, 768], (50, 32, 3, 768)),    # BERT's qkv split
]

#: (dtype, newshape) of reshape on a (2, 3, 4) tensor beyond float32
RESHAPE_DTYPES = [("int8", [4, 6]), ("bool", [8, 3]), ("float16", [4, 6]), ("uint8", [4, 6]),
                  ("bool", [4, 6])]


def reshape_allows_zero(shape: tuple[int, ...]) -> bool:
    """Whether a RESHAPES row reshapes with allowzero=True."""
    return 0 in shape


def labelled_dtypes(rows: list[tuple[str, list[int]]]) -> list[tuple[str, str, list[int]]]:
    """(label, dtype, newshape) of RESHAPE_DTYPES: the label is the dtype,
    and for a dtype's second row the dtype and the new shape (``bool-4x6``)."""
    seen: set[str] = set()
    out = []
    for dt, newshape in rows:
        label = dt if dt not in seen else f"{dt}-{'x'.join(map(str, newshape))}"
        seen.add(dt)
        out.append((label, dt, newshape))
    return out


def small(rows: list[tuple], limit: int = 4096) -> list[tuple]:
    """The rows whose input (field 0, a shape) has at most ``limit``
    elements: the layers that run a row element by element (the kernel-IR
    evaluator) or pack every row into one C build leave the big ones to
    tests/ops."""
    return [row for row in rows if math.prod(row[0]) <= limit]


# ============================================================= strided_slice

#: strided_slice attributes on a (4, 5, 6) tensor: negative and out-of-range
#: bounds, negative strides, fewer entries than axes, ``axes``, size mode,
#: an end before its begin (empty, as NumPy; Relay rejects it)
SLICES = [
    dict(begin=[1], end=[3]),
    dict(begin=[-3], end=[-1]),
    dict(begin=[3], end=[0], strides=[-1]),
    dict(begin=[-1], end=[-6], strides=[-1]),
    dict(begin=[-100], end=[100]),
    dict(begin=[0, 0, 0], end=[4, 5, 6], strides=[2, 2, 4]),
    dict(begin=[0, 1], end=[2, 4]),
    dict(begin=[1], end=[3], strides=[1, 2]),
    dict(begin=[], end=[], strides=[1, -1]),
    dict(begin=[1], end=[4], axes=[2]),
    dict(begin=[4, 0], end=[0, 3], strides=[-2, 1], axes=[-1, 0]),
    dict(begin=[1, 0], end=[2, -1], slice_mode="size"),
    dict(begin=[-2], end=[2], slice_mode="size", strides=[5]),
    dict(begin=[1], end=[2], axes=[1], strides=[9], slice_mode="size"),
    dict(begin=[3], end=[1]),
    dict(begin=[1], end=[3], strides=[-1]),
    dict(begin=[2, 4, 5], end=[-100, -100, -100], strides=[-1, -2, -3]),
    dict(begin=[0, 0, 5], end=[4, 5, 0], strides=[3, 4, -5]),
]
SLICE_SHAPE = (4, 5, 6)

# ====================================================== take, gather, one_hot

INDEX_DTYPES = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]
TAKE_MODES = ["clip", "wrap", "fast"]


def index_values(dtype: str) -> np.ndarray:
    """Indices for take on an axis of extent 5: in range, negative and out
    of range both ways, as far as the dtype reaches (at most 8)."""
    raw = [0, 1, 4, -1, -5, 7, 13, -200, 300, 2**40, -2**40, 2**64 - 1, 2**63]
    info = np.iinfo(dtype)
    kept = [v for v in raw if info.min <= v <= info.max]
    return np.array(kept[:8], dtype=dtype)


#: (axis, index shape) of gather on a (4, 5, 6) tensor, each with GATHER_DTYPES
GATHERS = [(0, (3, 5, 6)), (1, (4, 2, 6)), (-1, (4, 5, 9))]
GATHER_DTYPES = ["int32", "uint8", "int64"]

#: (axis, index dtype, output dtype) of one_hot(depth=4, on 5, off -1) on
#: (2, 3) indices
ONE_HOTS = [(-1, "int32", "float32"), (0, "int64", "int8"), (1, "uint8", "uint16"),
            (2, "int8", "float16"), (1, "uint64", "bool")]


def one_hot_indices(dtype: str) -> np.ndarray:
    """(2, 3) indices for depth 4: in range, and out of range (negative
    for the signed dtypes)."""
    if dtype.startswith("u"):
        return np.array([[0, 3, 4], [1, 2, 1]], dtype)
    return np.array([[0, 3, -1], [4, 2, -4]], dtype)


# ===================================================== cast, clip and layout

#: (source dtype, destination dtype), each run on :func:`edge_values`
CAST_PAIRS = [
    ("float32", "int8"), ("float32", "uint8"), ("float32", "int32"), ("float32", "uint32"),
    ("float32", "int64"), ("float32", "uint64"), ("float32", "bool"), ("float32", "float16"),
    ("float32", "float64"), ("float64", "float32"), ("float64", "int16"), ("float16", "int8"),
    ("float16", "float32"), ("int32", "int8"), ("int32", "uint8"), ("int64", "int16"),
    ("uint64", "int32"), ("int8", "uint64"), ("int64", "float32"), ("uint32", "float16"),
    ("int16", "bool"), ("bool", "float32"), ("bool", "int8"), ("uint8", "int8"),
    ("float64", "float16"), ("uint64", "float64"), ("int64", "float16"), ("float16", "uint64"),
]

FLOAT_EDGES = np.array([0.0, -0.0, 1.5, -1.5, 2.7, -2.7, 127.9, 128.5, -129.0, 255.9, 256.0,
                        65535.5, 3e9, -3e9, 1e20, -1e20, np.inf, -np.inf, np.nan, 0.49],
                       np.float64)
INT_EDGES = np.array([0, 1, -1, 127, -128, 255, 256, 32767, -32768, 65535, 2**31 - 1,
                      -2**31, 2**40, -2**40], np.int64)


def edge_values(dtype: str) -> np.ndarray:
    """A 1-D tensor of ``dtype`` on the conversion edges: for floats
    FLOAT_EDGES (saturating to infinity in float16), for integers the
    INT_EDGES it holds and its min and max, for bool both values."""
    dt = np.dtype(dtype)
    if dt.kind == "f":
        with np.errstate(over="ignore"):
            return FLOAT_EDGES.astype(dt)
    if dt.kind == "b":
        return np.array([True, False, True, True], bool)
    info = np.iinfo(dt)
    kept = INT_EDGES[(INT_EDGES >= int(info.min)) & (INT_EDGES <= int(info.max))]
    return np.concatenate([kept.astype(dt), np.array([info.min, info.max], dt)])


#: (label, dtype, clip bounds as Relay text), each run on :func:`edge_values`
CLIPS = [
    ("f32", "float32", "a_min=-1.5f, a_max=2f"),
    ("f32-open", "float32", "a_min=-inff, a_max=0f"),
    ("f32-inf-inf", "float32", "a_min=inff, a_max=inff"),
    ("f16", "float16", "a_min=-100000f, a_max=0.1f"),
    ("f64-zero", "float64", "a_min=-0f, a_max=0f"),
    ("int8", "int8", "a_min=-1000f, a_max=5.9f"),
    ("uint8", "uint8", "a_min=-3f, a_max=200.5f"),
    ("int32", "int32", "a_min=-2.5f, a_max=3e10f"),
    ("uint64", "uint64", "a_min=2f, a_max=1e30f"),
]

#: (input shape, source layout, destination layout) of layout_transform:
#: plain permutations, blocking, unblocking, reblocking by a factor that
#: does not divide, weights, and identity
LAYOUTS = [
    ((1, 8, 2, 3), "NCHW", "NHWC"),
    ((1, 2, 3, 8), "NHWC", "NCHW"),
    ((2, 8, 2, 2), "NCHW", "NCHW4c"),
    ((2, 2, 2, 2, 4), "NCHW4c", "NCHW"),
    ((1, 2, 2, 3, 4), "NCHW4c", "NHWC"),
    ((1, 2, 3, 8), "NHWC", "NCHW4c"),
    ((1, 1, 2, 2, 8), "NCHW8c", "NCHW4c"),
    ((1, 4, 2, 2, 2), "NCHW2c", "NCHW4c"),
    ((1, 3, 2, 2, 2), "NCHW2c", "NCHW3c"),
    ((8, 4, 3, 3), "OIHW", "OIHW4i4o"),
    ((2, 1, 3, 3, 4, 4), "OIHW4i4o", "OIHW"),
    ((2, 1, 3, 3, 4, 4), "OIHW4i4o", "HWIO"),
    ((4, 6), "NC", "CN"),
    ((4, 6), "NC", "NC"),
    ((1, 2, 2, 3, 4), "NCHW4c", "NHWC4c"),
]
