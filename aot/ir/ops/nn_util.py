"""Helpers shared by the ``nn``, ``image`` and ``qnn`` operator families:
data layouts, padding conventions, window geometry (dilated kernels,
output sizes, strided windows), dimension arithmetic with ``?``, dtype
rules for products (dense, convolutions) and float-to-integer casts.

Layouts are strings of distinct upper-case letters naming the axes, as in
Relay (``NCHW``, ``NHWC``, ``OIHW``, ``HWIO``, ``HWOI``, ``OHWI`` ...).  We
support every permutation of the canonical letters; Relay's packed layouts
(``NCHW4c``) are not supported and are rejected when the attributes are
built.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ..attrs import attrs_class
from ..attrs import Attrs, RawValue
from ..dtype import DType
from ..registry import RelationError
from ..types import ANY, Dim, TensorType
from .common import float_to_int
from ..dtype import np_kind

# --------------------------------------------------------------- attributes

#: attribute names whose empty-string value means "not set" (Relay prints
#: ``out_dtype=""`` for a null DataType).
_BLANK_AS_NONE = frozenset({"out_dtype"})


@attrs_class
class NNAttrs(Attrs):
    """Base of attribute classes with an optional ``out_dtype``: the text
    format's ``out_dtype=""`` (Relay's null dtype) reads as ``None``."""

    @classmethod
    def from_raw(cls, raw: dict[str, RawValue]) -> Attrs:
        cleaned = {k: (None if k in _BLANK_AS_NONE and v == "" else v) for k, v in raw.items()}
        return Attrs.from_raw.__func__(cls, cleaned)  # type: ignore[attr-defined]


def check_layout(value: str, letters: str, field: str, allow_empty: bool = False) -> None:
    """Raise ValueError unless ``value`` is a permutation of ``letters``."""
    if allow_empty and value == "":
        return
    if sorted(value) != sorted(letters):
        raise ValueError(f"{field} must be a permutation of {letters!r} "
                         f"(packed layouts are not supported), got {value!r}")


def check_spatial_layout(value: str, field: str, allow_empty: bool = False) -> None:
    """A pooling/resize layout: distinct upper-case letters containing H and W."""
    if allow_empty and value == "":
        return
    if not value.isalpha() or not value.isupper() or len(set(value)) != len(value) \
            or "H" not in value or "W" not in value:
        raise ValueError(f"{field} must be distinct upper-case axis letters containing H and W "
                         f"(packed layouts are not supported), got {value!r}")


def _check_values(values: Sequence[int], field: str, count: tuple[int, ...],
                  minimum: int) -> None:
    """Raise ValueError unless ``values`` has one of the lengths ``count``
    and every value is at least ``minimum``."""
    if len(values) not in count:
        want = " or ".join(str(c) for c in count)
        raise ValueError(f"{field} needs {want} values, got {list(values)}")
    if any(v < minimum for v in values):
        raise ValueError(f"{field} values must be >= {minimum}, got {list(values)}")


def check_positive(values: Sequence[int], field: str, count: tuple[int, ...]) -> None:
    """Strides, dilations, kernel and pool sizes: ``count`` values >= 1."""
    _check_values(values, field, count, 1)


def check_padding(values: Sequence[int], field: str, count: tuple[int, ...]) -> None:
    """Paddings: ``count`` values >= 0."""
    _check_values(values, field, count, 0)


def expand(values: Sequence[int], n: int) -> tuple[int, ...]:
    """One value stands for all ``n`` (``strides=[2]`` is ``[2, 2]``)."""
    return tuple(values) * n if len(values) == 1 else tuple(values)


def pair(values: Sequence[int]) -> tuple[int, int]:
    """Two values from one or two (``[2]`` is ``(2, 2)``)."""
    if len(values) == 1:
        return (values[0], values[0])
    assert len(values) == 2, values
    return (values[0], values[1])


def padding_2d(p: Sequence[int]) -> tuple[int, int, int, int]:
    """Relay's normalisation: 1 value everywhere, 2 values (vertical,
    horizontal), 4 values (top, left, bottom, right)."""
    if len(p) == 1:
        return (p[0], p[0], p[0], p[0])
    if len(p) == 2:
        return (p[0], p[1], p[0], p[1])
    assert len(p) == 4, p
    return (p[0], p[1], p[2], p[3])


def padding_1d(p: Sequence[int]) -> tuple[int, int]:
    """(left, right) from 1 or 2 values."""
    if len(p) == 1:
        return (p[0], p[0])
    assert len(p) == 2, p
    return (p[0], p[1])


# --------------------------------------------------------- window geometry

def dilated_extent(kernel: int, dilation: int) -> int:
    """How many input elements a kernel of ``kernel`` taps, ``dilation``
    apart, spans."""
    return (kernel - 1) * dilation + 1


def window_count(size: int, extent: int, stride: int) -> int:
    """How many windows of ``extent`` elements, ``stride`` apart, fit in
    ``size`` (already padded) elements; less than 1 when none fits."""
    return (size - extent) // stride + 1


def strided_windows(xp: np.ndarray, kernel: tuple[int, int], strides: tuple[int, int],
                    dilation: tuple[int, int]) -> np.ndarray:
    """The (..., OH, OW, KH, KW) windows over the last two axes of the
    (already padded) array ``xp``: windows ``strides`` apart whose
    ``kernel`` taps are ``dilation`` apart.  A view, not a copy."""
    extent = (dilated_extent(kernel[0], dilation[0]), dilated_extent(kernel[1], dilation[1]))
    oh = window_count(xp.shape[-2], extent[0], strides[0])
    ow = window_count(xp.shape[-1], extent[1], strides[1])
    win = sliding_window_view(xp, extent, axis=(-2, -1))
    return win[..., :(oh - 1) * strides[0] + 1:strides[0], :(ow - 1) * strides[1] + 1:strides[1],
               ::dilation[0], ::dilation[1]]


# ----------------------------------------------------------------- layouts

def to_canonical(shape: Sequence, layout: str, canonical: str) -> tuple:
    """Reorder ``shape`` (given in ``layout``) into ``canonical`` order."""
    return tuple(shape[layout.index(c)] for c in canonical)


def from_canonical(shape: Sequence, layout: str, canonical: str) -> tuple:
    """Reorder a canonical-order ``shape`` into ``layout`` order."""
    return tuple(shape[canonical.index(c)] for c in layout)


def array_to_canonical(x: np.ndarray, layout: str, canonical: str) -> np.ndarray:
    return np.transpose(x, [layout.index(c) for c in canonical])


def array_from_canonical(x: np.ndarray, layout: str, canonical: str) -> np.ndarray:
    return np.transpose(x, [canonical.index(c) for c in layout])


def check_rank(t: TensorType, layout: str, what: str, attr: str) -> None:
    if t.ndim != len(layout):
        raise RelationError(f"{what} has rank {t.ndim} ({t}) but {attr}={layout!r} needs rank "
                            f"{len(layout)}")


# -------------------------------------------------------------- dimensions

def compatible(a: Dim, b: Dim) -> bool:
    return a is ANY or b is ANY or a == b


def div_dim(a: Dim, b: int) -> Dim:
    return ANY if a is ANY else a // b  # type: ignore[operator]


def mul_dim(a: Dim, b: Dim) -> Dim:
    return ANY if a is ANY or b is ANY else a * b  # type: ignore[operator]


# ------------------------------------------------------------------ dtypes

def check_product_dtypes(a: DType, b: DType, a_what: str, b_what: str) -> None:
    """Operands of a product (dense, convolution): two integer types of any
    width and signedness (``uint8 x int8 -> int32``), or two floats; never
    bool, never an integer with a float."""
    if a.is_bool or b.is_bool:
        raise RelationError(f"does not accept bool operands ({a_what} is {a}, {b_what} is {b})")
    if a.is_float != b.is_float:
        raise RelationError(f"cannot mix integer and floating-point operands "
                            f"({a_what} is {a}, {b_what} is {b})")


def check_out_dtype(out: DType, operand: DType) -> None:
    if out.is_bool:
        raise RelationError("out_dtype=bool is not supported")
    if out.is_int and operand.is_float:
        raise RelationError(f"out_dtype={out} is an integer type but the operands are {operand}")


def require_float(t: TensorType, what: str = "data") -> None:
    if not t.dtype.is_float:
        raise RelationError(f"needs a floating-point {what}, got {t.dtype}")


def accumulator(dtype: DType) -> type:
    """NumPy accumulation type of a reduction producing ``dtype``: integers
    accumulate exactly in int64 (the final cast wraps, exactly as wrapping
    accumulation in the output type would), floats in float64."""
    return np.int64 if dtype.is_int else np.float64


def cast_result(x: np.ndarray, dtype: DType) -> np.ndarray:
    """Cast an accumulator (int64 or float64) to the output dtype: integers
    wrap, floats round to nearest, float -> integer truncates and
    saturates."""
    if dtype.is_int and np_kind(x.dtype) == "f":
        return float_to_int(x, dtype.np)
    return np.asarray(x).astype(dtype.np)


def trunc_div_int(total: np.ndarray, count: np.ndarray) -> np.ndarray:
    """Integer division truncating toward zero (C semantics), ``count > 0``."""
    q = np.abs(total) // count
    return np.where(total < 0, -q, q)
