"""How each dtype is spelled in C: storage and value types, helper suffixes.

``bool`` is a ``uint8_t`` holding 0 or 1 (one byte, as NumPy; no
``stdbool.h``); integers are ``<stdint.h>`` types; the narrow floats are
stored as their bits and computed as ``float``: ``float16`` and
``bfloat16`` as ``uint16_t``, the float8 formats as ``uint8_t``;
``int4``/``uint4`` are stored packed two per byte in ``uint8_t`` arrays
and computed as ``int8_t``/``uint8_t``.
"""

from __future__ import annotations

from ...ir.dtype import DType

__all__ = ["c_storage_type", "c_value_type", "helper_suffix", "narrow_float_suffix"]

_STORAGE = {
    DType.BOOL: "uint8_t", DType.INT8: "int8_t", DType.INT16: "int16_t",
    DType.INT32: "int32_t", DType.INT64: "int64_t", DType.UINT8: "uint8_t",
    DType.UINT16: "uint16_t", DType.UINT32: "uint32_t", DType.UINT64: "uint64_t",
    DType.FLOAT16: "uint16_t", DType.FLOAT32: "float", DType.FLOAT64: "double",
    DType.BFLOAT16: "uint16_t", DType.FLOAT8_E4M3FN: "uint8_t",
    DType.FLOAT8_E4M3FNUZ: "uint8_t", DType.FLOAT8_E5M2: "uint8_t",
    DType.FLOAT8_E5M2FNUZ: "uint8_t", DType.INT4: "uint8_t", DType.UINT4: "uint8_t",
}

_VALUE = {DType.INT4: "int8_t", DType.UINT4: "uint8_t"}

_SUFFIX = {
    DType.BOOL: "u8", DType.INT8: "i8", DType.INT16: "i16", DType.INT32: "i32",
    DType.INT64: "i64", DType.UINT8: "u8", DType.UINT16: "u16", DType.UINT32: "u32",
    DType.UINT64: "u64", DType.FLOAT32: "f32", DType.FLOAT64: "f64",
    DType.INT4: "i8", DType.UINT4: "u8",
}

#: the name of each narrow float in its conversion helpers
#: (``aot_bf16_to_f32``, ``aot_f32_to_bf16``, ``aot_round_bf16``)
_NARROW = {
    DType.FLOAT16: "f16", DType.BFLOAT16: "bf16", DType.FLOAT8_E4M3FN: "e4m3fn",
    DType.FLOAT8_E4M3FNUZ: "e4m3fnuz", DType.FLOAT8_E5M2: "e5m2",
    DType.FLOAT8_E5M2FNUZ: "e5m2fnuz",
}


def c_storage_type(dtype: DType) -> str:
    """The C type of a buffer element (for int4/uint4: of a byte holding two)."""
    return _STORAGE[dtype]


def c_value_type(dtype: DType) -> str:
    """The C type of a scalar value (the narrow floats are computed as float)."""
    if dtype.is_narrow_float:
        return "float"
    return _VALUE.get(dtype) or _STORAGE[dtype]


def helper_suffix(dtype: DType) -> str:
    """The suffix naming ``dtype`` in runtime helper names (``aot_div_i32``):
    the narrow floats compute as float32, int4/uint4 as int8/uint8 and bool
    is a uint8_t."""
    return "f32" if dtype.is_narrow_float else _SUFFIX[dtype]


def narrow_float_suffix(dtype: DType) -> str:
    """The name of a narrow float in its conversion helpers."""
    return _NARROW[dtype]
