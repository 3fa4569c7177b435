"""ONNX element types and the IR's dtypes."""

from __future__ import annotations

import onnx

from ...ir.dtype import DType

_TP = onnx.TensorProto

ONNX_TO_DTYPE: dict[int, DType] = {
    _TP.FLOAT: DType.FLOAT32,
    _TP.DOUBLE: DType.FLOAT64,
    _TP.FLOAT16: DType.FLOAT16,
    _TP.INT8: DType.INT8,
    _TP.INT16: DType.INT16,
    _TP.INT32: DType.INT32,
    _TP.INT64: DType.INT64,
    _TP.UINT8: DType.UINT8,
    _TP.UINT16: DType.UINT16,
    _TP.UINT32: DType.UINT32,
    _TP.UINT64: DType.UINT64,
    _TP.BOOL: DType.BOOL,
    _TP.BFLOAT16: DType.BFLOAT16,
    _TP.FLOAT8E4M3FN: DType.FLOAT8_E4M3FN,
    _TP.FLOAT8E4M3FNUZ: DType.FLOAT8_E4M3FNUZ,
    _TP.FLOAT8E5M2: DType.FLOAT8_E5M2,
    _TP.FLOAT8E5M2FNUZ: DType.FLOAT8_E5M2FNUZ,
    _TP.INT4: DType.INT4,
    _TP.UINT4: DType.UINT4,
}

DTYPE_TO_ONNX: dict[DType, int] = {v: k for k, v in ONNX_TO_DTYPE.items()}


def onnx_type_name(elem_type: int) -> str:
    """``float``, ``bfloat16``, ``string`` ... (the ONNX spelling)."""
    try:
        return onnx.helper.tensor_dtype_to_string(elem_type).removeprefix("TensorProto.").lower()
    except (ValueError, KeyError):
        return f"element type {elem_type}"


def to_dtype(elem_type: int) -> DType | None:
    """The IR dtype of an ONNX element type; None when the IR has none."""
    return ONNX_TO_DTYPE.get(elem_type)
