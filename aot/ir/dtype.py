"""Element types of tensors.

Design note: the narrow types
-----------------------------
Besides NumPy's own dtypes the IR has ``bfloat16``, the four ONNX float8
formats (``float8_e4m3fn``, ``float8_e4m3fnuz``, ``float8_e5m2``,
``float8_e5m2fnuz``) and the 4-bit integers ``int4`` and ``uint4``.  NumPy
has none of them; the interpreter represents them with the ``ml_dtypes``
extension types of the same names (the package ONNX itself depends on for
them), whose arithmetic computes in float32 (floats) or wraps (4-bit
integers) and rounds each result back -- the semantics the generated C
follows:

* ``bfloat16`` and the float8 formats are *narrow floats*
  (:attr:`DType.is_narrow_float`, as ``float16``): stored as their bits
  (``uint16_t`` / ``uint8_t``), computed in float32, every arithmetic
  result rounded to nearest even back to the type (overflow: infinity
  where the format has one, else NaN; ``*fnuz`` formats have no negative
  zero).
* ``int4``/``uint4`` are computed in ``int8_t``/``uint8_t`` values and
  stored *packed*, two elements per byte, element ``2k`` in the low nibble
  and ``2k+1`` in the high nibble of byte ``k`` (ONNX's layout):
  :meth:`DType.nbytes` gives the storage size.
"""

from __future__ import annotations

import enum

import ml_dtypes
import numpy as np


class DType(enum.Enum):
    #: members are singletons compared by identity: the identity hash (C)
    #: instead of Enum's hash of the name (Python, 1 us: 50,000 calls a compile)
    __hash__ = object.__hash__

    BOOL = "bool"
    INT8 = "int8"
    INT16 = "int16"
    INT32 = "int32"
    INT64 = "int64"
    UINT8 = "uint8"
    UINT16 = "uint16"
    UINT32 = "uint32"
    UINT64 = "uint64"
    FLOAT16 = "float16"
    FLOAT32 = "float32"
    FLOAT64 = "float64"
    BFLOAT16 = "bfloat16"
    FLOAT8_E4M3FN = "float8_e4m3fn"
    FLOAT8_E4M3FNUZ = "float8_e4m3fnuz"
    FLOAT8_E5M2 = "float8_e5m2"
    FLOAT8_E5M2FNUZ = "float8_e5m2fnuz"
    INT4 = "int4"
    UINT4 = "uint4"

    def __str__(self) -> str:
        return self._value_

    def __repr__(self) -> str:
        return f"DType.{self.name}"

    @property
    def np(self) -> np.dtype:
        return _NP[self]

    @property
    def bits(self) -> int:
        if self is DType.BOOL:
            return 8
        return 4 if self.packed else self.np.itemsize * 8

    @property
    def itemsize(self) -> int:
        """Bytes of one element in the interpreter's NumPy representation
        (1 for the 4-bit integers, which C stores packed: see :meth:`nbytes`)."""
        return self.np.itemsize

    @property
    def packed(self) -> bool:
        """Two elements per byte in C storage (``int4``, ``uint4``)."""
        return self in (DType.INT4, DType.UINT4)

    def nbytes(self, count: int) -> int:
        """Bytes of C storage of ``count`` elements."""
        return (count + 1) // 2 if self.packed else count * self.itemsize

    @property
    def is_float(self) -> bool:
        return self._value_.startswith(("float", "bfloat"))

    @property
    def is_narrow_float(self) -> bool:
        """A float type stored as its bits and computed in float32
        (float16, bfloat16, the float8 formats)."""
        return self.is_float and self.bits < 32

    @property
    def is_float8(self) -> bool:
        return self._value_.startswith("float8")

    @property
    def has_inf(self) -> bool:
        """A float type with infinities (all but three float8 formats)."""
        return self.is_float and (not self.is_float8 or self is DType.FLOAT8_E5M2)

    @property
    def lowest(self) -> int | float:
        """The identity of max: -inf, the most negative finite value of a
        float format without infinities, an integer type's minimum."""
        if self is DType.BOOL:
            return 0
        return -float("inf") if self.has_inf else self.min

    @property
    def is_int(self) -> bool:
        """Signed or unsigned integer (not bool)."""
        return self._value_.startswith(("int", "uint"))

    @property
    def is_signed(self) -> bool:
        return self._value_.startswith("int") or self.is_float

    @property
    def is_unsigned(self) -> bool:
        return self._value_.startswith("uint")

    @property
    def is_bool(self) -> bool:
        return self is DType.BOOL

    @property
    def min(self) -> int | float:
        """The smallest value (integers) or the most negative finite value."""
        if self is DType.BOOL:
            return 0
        return int(ml_dtypes.iinfo(self.np).min) if self.is_int \
            else float(ml_dtypes.finfo(self.np).min)

    @property
    def max(self) -> int | float:
        """The largest value (integers) or the largest finite value."""
        if self is DType.BOOL:
            return 1
        return int(ml_dtypes.iinfo(self.np).max) if self.is_int \
            else float(ml_dtypes.finfo(self.np).max)

    @classmethod
    def from_numpy(cls, dtype: np.dtype | type) -> DType:
        name = np.dtype(dtype).name
        try:
            return cls(name)
        except ValueError:
            raise ValueError(f"unsupported numpy dtype {name}") from None

    @classmethod
    def parse(cls, text: str) -> DType | None:
        """Parse a Relay dtype name (``int`` and ``float`` mean 32 bits);
        ``None`` when ``text`` names no dtype."""
        text = _ALIASES.get(text, text)
        try:
            return cls(text)
        except ValueError:
            return None


_ALIASES = {"int": "int32", "float": "float32", "uint": "uint32", "double": "float64",
            # TVM's spellings of the float8 formats
            "e4m3_float8": "float8_e4m3fn", "e5m2_float8": "float8_e5m2"}

_NP: dict[DType, np.dtype] = {
    d: np.dtype(getattr(ml_dtypes, d.value)) if hasattr(ml_dtypes, d.value)
    and d.value not in ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64")
    else np.dtype(d.value)
    for d in DType}


def to_storage(values: np.ndarray, dtype: DType) -> np.ndarray:
    """``values`` of ``dtype`` as the flat array of their C storage units:
    the bits of a narrow float (``uint16``/``uint8``), bytes of packed
    4-bit integers (element ``2k`` in the low nibble of byte ``k``, a last
    odd element's high nibble 0), ``uint8`` 0/1 for bool, else the values."""
    flat = np.ascontiguousarray(values, dtype=dtype.np).reshape(-1)
    if dtype.packed:
        nibbles = flat.view(np.uint8) & 0x0F
        if nibbles.size % 2:
            nibbles = np.concatenate([nibbles, np.zeros(1, np.uint8)])
        return (nibbles[0::2] | (nibbles[1::2] << 4)).astype(np.uint8)
    if dtype.is_narrow_float:
        return flat.view(np.uint16 if dtype.bits == 16 else np.uint8)
    if dtype is DType.BOOL:
        return flat.view(np.uint8)
    return flat


def from_storage(raw: np.ndarray, dtype: DType, shape: tuple[int, ...]) -> np.ndarray:
    """The inverse of :func:`to_storage`: an array of ``dtype`` and ``shape``."""
    count = int(np.prod(shape, dtype=np.int64))
    raw = np.ascontiguousarray(raw).reshape(-1)
    if dtype.packed:
        data = raw.view(np.uint8)
        nibbles = np.empty(2 * data.size, np.uint8)
        nibbles[0::2], nibbles[1::2] = data & 0x0F, data >> 4
        nibbles = nibbles[:count]
        if dtype is DType.INT4:     # sign-extend into the byte ml_dtypes reads
            nibbles = ((nibbles ^ 8).astype(np.int16) - 8).astype(np.int8).view(np.uint8)
        return nibbles.view(dtype.np).reshape(shape)
    return raw.view(dtype.np)[:count].reshape(shape)


def np_kind(dtype: np.dtype) -> str:
    """NumPy's ``dtype.kind``, with ml_dtypes' types (kind ``V``, or ``f``
    for float8_e5m2) given the kind of what they are: ``f`` for bfloat16
    and the float8 formats, ``i``/``u`` for int4/uint4."""
    dtype = np.dtype(dtype)
    if dtype.kind not in "V":
        return dtype.kind
    try:
        d = DType.from_numpy(dtype)
    except ValueError:
        return dtype.kind
    return "f" if d.is_float else "i" if d.is_signed else "u"
