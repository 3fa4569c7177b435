"""The ``#[metadata]`` section of the Relay text format.

Design note
-----------
TVM prints tensors that are not scalars as ``meta[relay.Constant][i]`` and
appends, after ``#[metadata]``, the JSON form of a ``Map<String,
Array<ObjectRef>>`` written by TVM's ``SaveJSON``:

* ``{"root": r, "nodes": [...], "b64ndarrays": [...], "attrs": {...}}``;
* ``nodes[0]`` is the null object (``{"type_key": ""}``); ``root`` is the
  index of the Map node;
* a Map node with string keys is ``{"type_key": "Map", "keys": [k...],
  "data": [node...]}`` (older writers used ``"data": [key_node, value_node,
  ...]`` with ``runtime.String`` key nodes holding ``repr_str``; both are
  read);
* an Array node is ``{"type_key": "Array", "data": [node...]}``;
* a constant is ``{"type_key": "relay.Constant", "attrs": {"data": "k",
  ...}}`` where ``k`` indexes ``b64ndarrays``;
* each ``b64ndarrays`` entry is base64 of TVM's NDArray binary format,
  little endian: ``u64 magic 0xDD5E40F096B4A13F``, ``u64 reserved``,
  ``i32 device_type, i32 device_id``, ``i32 ndim``, ``u8 code, u8 bits,
  u16 lanes`` (code 0 int, 1 uint, 2 float; ``bool`` is uint of 1 bit),
  ``i64 shape[ndim]``, ``i64 data_byte_size``, then the raw data.

:func:`read_metadata` returns ``{type_key: [object, ...]}`` where constants
are :class:`~aot.ir.expr.Constant` nodes and anything else an
:class:`UnsupportedNode` naming its type key; :func:`write_metadata`
writes the same form for a list of constant arrays.  Errors raise
:class:`MetadataError`; the parser turns them into diagnostics.
"""

from __future__ import annotations

import base64
import binascii
import json
import struct
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from .dtype import DType
from .expr import Constant

NDARRAY_MAGIC = 0xDD5E40F096B4A13F
CONSTANT_KEY = "relay.Constant"
TVM_VERSION = "0.18.0"

_KDL_INT, _KDL_UINT, _KDL_FLOAT, _KDL_BFLOAT, _KDL_BOOL = 0, 1, 2, 4, 6
_KDL_CPU = 1


class MetadataError(Exception):
    """The metadata section is malformed.  ``line``/``col`` locate the
    problem inside the JSON text when known (1-based)."""

    def __init__(self, message: str, line: int | None = None, col: int | None = None):
        super().__init__(message)
        self.line = line
        self.col = col


@dataclass(frozen=True, slots=True)
class UnsupportedNode:
    """A metadata object of a kind this compiler does not model."""

    type_key: str


# ------------------------------------------------------------------ ndarray

#: The float8 formats: TVM's DLPack has no codes for all four, so they take
#: codes of the custom range (TVM's ``kCustomBegin`` is 129), aot's own.
_FLOAT8_CODES = {DType.FLOAT8_E4M3FN: 130, DType.FLOAT8_E4M3FNUZ: 131,
                 DType.FLOAT8_E5M2: 132, DType.FLOAT8_E5M2FNUZ: 133}


def _dl_dtype(dtype: DType) -> tuple[int, int]:
    """DLPack's (code, bits) of ``dtype``; int4/uint4 are (int, 4) and
    (uint, 4) and, as in TVM's NDArray, take one byte per element."""
    if dtype is DType.BOOL:
        return _KDL_UINT, 1
    if dtype is DType.BFLOAT16:
        return _KDL_BFLOAT, 16
    if dtype in _FLOAT8_CODES:
        return _FLOAT8_CODES[dtype], 8
    if dtype.is_float:
        return _KDL_FLOAT, dtype.bits
    if dtype.is_unsigned:
        return _KDL_UINT, dtype.bits
    return _KDL_INT, dtype.bits


def _from_dl_dtype(code: int, bits: int, lanes: int) -> DType:
    if lanes != 1:
        raise MetadataError(f"vector dtypes (lanes={lanes}) are not supported")
    if (code == _KDL_UINT and bits == 1) or (code == _KDL_BOOL and bits == 8):
        return DType.BOOL
    names = {_KDL_INT: "int", _KDL_UINT: "uint", _KDL_FLOAT: "float"}
    if code == _KDL_BFLOAT and bits == 16:
        return DType.BFLOAT16
    for d, c in _FLOAT8_CODES.items():
        if code == c and bits == 8:
            return d
    if code not in names:
        raise MetadataError(f"unknown DLPack type code {code}")
    dtype = DType.parse(f"{names[code]}{bits}")
    if dtype is None:
        raise MetadataError(f"unsupported dtype {names[code]}{bits}")
    return dtype


def ndarray_to_bytes(array: np.ndarray) -> bytes:
    """TVM's NDArray serialization of ``array``."""
    arr = np.asarray(array)  # (np.ascontiguousarray would make a 0-d array 1-d)
    dtype = DType.from_numpy(arr.dtype)
    code, bits = _dl_dtype(dtype)
    data = arr.astype(arr.dtype.newbyteorder("<"), copy=False).tobytes(order="C")
    head = struct.pack("<QQiii", NDARRAY_MAGIC, 0, _KDL_CPU, 0, arr.ndim)
    head += struct.pack("<BBH", code, bits, 1)
    head += struct.pack(f"<{arr.ndim}q", *arr.shape)
    head += struct.pack("<q", len(data))
    return head + data


def ndarray_from_bytes(blob: bytes) -> np.ndarray:
    """Inverse of :func:`ndarray_to_bytes` (read-only result)."""
    try:
        magic, _reserved, _dev_type, _dev_id, ndim = struct.unpack_from("<QQiii", blob, 0)
        if magic != NDARRAY_MAGIC:
            raise MetadataError("not a TVM NDArray (bad magic number)")
        if ndim < 0:
            raise MetadataError(f"negative ndim {ndim}")
        code, bits, lanes = struct.unpack_from("<BBH", blob, 28)
        dtype = _from_dl_dtype(code, bits, lanes)
        shape = struct.unpack_from(f"<{ndim}q", blob, 32)
        offset = 32 + 8 * ndim
        (nbytes,) = struct.unpack_from("<q", blob, offset)
    except struct.error:
        raise MetadataError("truncated NDArray header") from None
    offset += 8
    if any(d < 0 for d in shape):
        raise MetadataError(f"negative dimension in shape {shape}")
    count = int(np.prod(shape, dtype=np.int64)) if shape else 1
    if nbytes != count * dtype.itemsize:
        raise MetadataError(f"NDArray of shape {tuple(shape)} and dtype {dtype} should hold "
                            f"{count * dtype.itemsize} bytes, the header says {nbytes}")
    data = blob[offset:offset + nbytes]
    if len(data) != nbytes:
        raise MetadataError("truncated NDArray data")
    arr = np.frombuffer(data, dtype=dtype.np.newbyteorder("<")).astype(dtype.np)
    arr = arr.reshape(shape)
    arr.setflags(write=False)
    return arr


# -------------------------------------------------------------------- JSON

def _node(nodes: list[Any], index: Any) -> dict[str, Any]:
    try:
        i = int(index)
    except (TypeError, ValueError):
        raise MetadataError(f"bad node reference {index!r}") from None
    if not 0 <= i < len(nodes) or not isinstance(nodes[i], dict):
        raise MetadataError(f"node reference {i} is out of range")
    return nodes[i]


def _string_key(nodes: list[Any], index: Any) -> str:
    node = _node(nodes, index)
    if "repr_str" in node:
        return str(node["repr_str"])
    raise MetadataError(f"expected a string key node, found {node.get('type_key')!r}")


def _object(nodes: list[Any], index: Any, arrays: list[str]) -> object:
    node = _node(nodes, index)
    key = node.get("type_key")
    if key != CONSTANT_KEY:
        return UnsupportedNode(str(key))
    attrs = node.get("attrs", {})
    try:
        data_index = int(attrs["data"])
        blob_text = arrays[data_index]
    except (KeyError, ValueError, TypeError, IndexError):
        raise MetadataError("a relay.Constant without valid `data`") from None
    try:
        blob = base64.b64decode(blob_text, validate=True)
    except (binascii.Error, ValueError):
        raise MetadataError(f"b64ndarrays[{data_index}] is not valid base64") from None
    return Constant(ndarray_from_bytes(blob))


def read_metadata(text: str) -> dict[str, list[object]]:
    """Parse a metadata section (the JSON after ``#[metadata]``)."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise MetadataError(f"invalid JSON in the metadata section: {exc.msg}",
                            exc.lineno, exc.colno) from None
    if not isinstance(doc, dict) or "nodes" not in doc or "root" not in doc:
        raise MetadataError("the metadata section must be a JSON object with `root` and "
                            "`nodes`")
    nodes = doc["nodes"]
    arrays = doc.get("b64ndarrays", [])
    if not isinstance(nodes, list) or not isinstance(arrays, list):
        raise MetadataError("`nodes` and `b64ndarrays` must be lists")
    root = _node(nodes, doc["root"])
    if root.get("type_key") != "Map":
        raise MetadataError(f"the metadata root must be a Map, found {root.get('type_key')!r}")
    data = root.get("data", [])
    if "keys" in root:
        pairs = list(zip(root["keys"], data))
    else:
        pairs = [(_string_key(nodes, data[i]), data[i + 1]) for i in range(0, len(data) - 1, 2)]
    table: dict[str, list[object]] = {}
    for key, value_index in pairs:
        array = _node(nodes, value_index)
        if array.get("type_key") != "Array":
            raise MetadataError(f"metadata entry `{key}` must be an Array")
        table[str(key)] = [_object(nodes, i, arrays) for i in array.get("data", [])]
    return table


def write_metadata(constants: Sequence[np.ndarray]) -> str:
    """The metadata JSON for ``constants`` (as ``relay.Constant`` 0..n-1),
    laid out as TVM writes it."""
    nodes: list[dict[str, Any]] = [
        {"type_key": ""},
        {"type_key": "Map", "keys": [CONSTANT_KEY], "data": [2]},
        {"type_key": "Array", "data": [3 + i for i in range(len(constants))]},
    ]
    arrays: list[str] = []
    for i, arr in enumerate(constants):
        nodes.append({"type_key": CONSTANT_KEY,
                      "attrs": {"_checked_type_": "0", "data": str(i), "span": "0"}})
        arrays.append(base64.b64encode(ndarray_to_bytes(np.asarray(arr))).decode("ascii"))
    doc = {"root": 1, "nodes": nodes, "b64ndarrays": arrays,
           "attrs": {"tvm_version": TVM_VERSION}}
    return json.dumps(doc, indent=2)
