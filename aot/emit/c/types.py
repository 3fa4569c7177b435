"""How each dtype is spelled in C: storage and value types, helper suffixes.

``bool`` is a ``uint8_t`` holding 0 or 1 (one byte, as NumPy; no
``stdbool.h``); integers are ``<stdint.h>`` types; ``float16`` is stored as
``uint16_t`` bits and computed as ``float``.
"""

from __future__ import annotations

from ...ir.dtype import DType

__all__ = ["c_storage_type", "c_value_type", "helper_suffix"]

_STORAGE = {
    DType.BOOL: "uint8_t", DType.INT8: "int8_t", DType.INT16: "int16_t",
    DType.INT32: "int32_t", DType.INT64: "int64_t", DType.UINT8: "uint8_t",
    DType.UINT16: "uint16_t", DType.UINT32: "uint32_t", DType.UINT64: "uint64_t",
    DType.FLOAT16: "uint16_t", DType.FLOAT32: "float", DType.FLOAT64: "double",
}

_SUFFIX = {
    DType.BOOL: "u8", DType.INT8: "i8", DType.INT16: "i16", DType.INT32: "i32",
    DType.INT64: "i64", DType.UINT8: "u8", DType.UINT16: "u16", DType.UINT32: "u32",
    DType.UINT64: "u64", DType.FLOAT16: "f32", DType.FLOAT32: "f32", DType.FLOAT64: "f64",
}


def c_storage_type(dtype: DType) -> str:
    """The C type of a buffer element."""
    return _STORAGE[dtype]


def c_value_type(dtype: DType) -> str:
    """The C type of a scalar value (float16 is computed as float)."""
    return "float" if dtype is DType.FLOAT16 else _STORAGE[dtype]


def helper_suffix(dtype: DType) -> str:
    """The suffix naming ``dtype`` in runtime helper names (``aot_div_i32``):
    float16 computes as float32 and bool is a uint8_t."""
    return _SUFFIX[dtype]
