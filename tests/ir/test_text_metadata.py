"""The ``#[metadata]`` section: TVM's NDArray binary format and the
SaveJSON form of the constant table."""

from __future__ import annotations

import base64
import json
import struct

import numpy as np
import pytest

from aot.ir import Constant
from aot.ir.metadata import (MetadataError, UnsupportedNode, ndarray_from_bytes,
                             ndarray_to_bytes, read_metadata, write_metadata)

# The serialized form TVM 0.8 wrote for a float32 array [[1, 2, 3], [4, 5, 6]]
# (a public interoperability vector: magic, reserved, CPU device, ndim 2,
# dtype float/32/1, shape (2, 3), 24 data bytes).
TVM_BLOB = ("P6G0lvBAXt0AAAAAAAAAAAEAAAAAAAAAAgAAAAIgAQACAAAAAAAAAAMAAAAAAAAAGAAAAAAAAAAAAIA/"
            "AAAAQAAAQEAAAIBAAACgQAAAwEA=")


def test_reads_a_tvm_ndarray():
    arr = ndarray_from_bytes(base64.b64decode(TVM_BLOB))
    assert arr.dtype == np.float32 and arr.shape == (2, 3)
    assert arr.tolist() == [[1, 2, 3], [4, 5, 6]]


def test_writes_what_tvm_writes():
    arr = np.arange(1, 7, dtype=np.float32).reshape(2, 3)
    assert base64.b64encode(ndarray_to_bytes(arr)).decode() == TVM_BLOB


def test_header_layout():
    blob = ndarray_to_bytes(np.array([[7]], dtype=np.int16))
    magic, reserved, dev_type, dev_id, ndim = struct.unpack_from("<QQiii", blob)
    assert (magic, reserved, dev_type, dev_id, ndim) == (0xDD5E40F096B4A13F, 0, 1, 0, 2)
    assert struct.unpack_from("<BBH", blob, 28) == (0, 16, 1)
    assert struct.unpack_from("<qqq", blob, 32) == (1, 1, 2)
    assert blob[56:] == struct.pack("<h", 7)


@pytest.mark.parametrize("dtype, code_bits", [
    ("bool", (1, 1)), ("int8", (0, 8)), ("int16", (0, 16)), ("int32", (0, 32)),
    ("int64", (0, 64)), ("uint8", (1, 8)), ("uint16", (1, 16)), ("uint32", (1, 32)),
    ("uint64", (1, 64)), ("float16", (2, 16)), ("float32", (2, 32)), ("float64", (2, 64)),
])
@pytest.mark.parametrize("shape", [(), (0,), (3,), (2, 1, 4)])
def test_ndarray_round_trip(dtype, code_bits, shape):
    rng = np.random.default_rng(0)
    arr = (rng.standard_normal(shape) * 50).astype(dtype)
    blob = ndarray_to_bytes(arr)
    assert struct.unpack_from("<BB", blob, 28) == code_bits
    back = ndarray_from_bytes(blob)
    assert back.dtype == arr.dtype and back.shape == arr.shape
    assert back.tobytes() == arr.tobytes()
    assert not back.flags.writeable


def test_reads_dlpack_bool_code():
    blob = bytearray(ndarray_to_bytes(np.array([True, False])))
    struct.pack_into("<BBH", blob, 28, 6, 8, 1)  # kDLBool
    assert ndarray_from_bytes(bytes(blob)).tolist() == [True, False]


@pytest.mark.parametrize("mutate, message", [
    (lambda b: b"\0" * 8 + b[8:], "bad magic"),
    (lambda b: b[:20], "truncated NDArray header"),
    (lambda b: b[:-1], "truncated NDArray data"),
    (lambda b: b[:28] + struct.pack("<BBH", 4, 8, 1) + b[32:], "unknown DLPack type code 4"),
    (lambda b: b[:28] + struct.pack("<BBH", 2, 32, 4) + b[32:], "lanes=4"),
    (lambda b: b[:48] + struct.pack("<q", 5) + b[56:], "should hold 24 bytes"),
])
def test_bad_ndarrays(mutate, message):
    blob = ndarray_to_bytes(np.arange(6, dtype=np.float32).reshape(2, 3))
    with pytest.raises(MetadataError, match=message):
        ndarray_from_bytes(mutate(blob))


@pytest.mark.parametrize("dtype", ["bfloat16", "float8_e4m3fn", "float8_e4m3fnuz",
                                   "float8_e5m2", "float8_e5m2fnuz", "int4", "uint4"])
def test_narrow_ndarray_round_trip(dtype):
    """bfloat16 is DLPack's kDLBfloat, int4/uint4 one byte per element (as
    TVM's NDArray), the float8 formats codes of aot's own."""
    import ml_dtypes
    a = np.array([-3, 0, 2, 7], np.int8).astype(getattr(ml_dtypes, dtype)) if "int" in dtype \
        else np.array([-3.5, 0.0, 0.25, np.nan], np.float32).astype(getattr(ml_dtypes, dtype))
    b = ndarray_from_bytes(ndarray_to_bytes(a))
    assert b.dtype == a.dtype and b.tobytes() == a.tobytes()


def test_metadata_round_trip():
    arrays = [np.arange(6, dtype=np.float32).reshape(2, 3), np.array(3, dtype=np.int64),
              np.array([True])]
    table = read_metadata(write_metadata(arrays))
    assert list(table) == ["relay.Constant"]
    consts = table["relay.Constant"]
    assert all(isinstance(c, Constant) for c in consts)
    for c, a in zip(consts, arrays):
        assert c.data.dtype == a.dtype and c.data.tobytes() == a.tobytes()


def test_written_json_has_tvm_layout():
    doc = json.loads(write_metadata([np.zeros(2, np.float32)]))
    assert doc["root"] == 1 and doc["nodes"][0] == {"type_key": ""}
    assert doc["nodes"][1] == {"type_key": "Map", "keys": ["relay.Constant"], "data": [2]}
    assert doc["nodes"][2] == {"type_key": "Array", "data": [3]}
    assert doc["nodes"][3]["type_key"] == "relay.Constant"
    assert doc["nodes"][3]["attrs"]["data"] == "0"
    assert len(doc["b64ndarrays"]) == 1 and "tvm_version" in doc["attrs"]


def test_reads_the_older_map_layout_and_other_kinds():
    doc = {
        "root": 1,
        "nodes": [
            {"type_key": ""},
            {"type_key": "Map", "data": [2, 3, 5, 6]},
            {"type_key": "runtime.String", "repr_str": "relay.Constant"},
            {"type_key": "Array", "data": [4]},
            {"type_key": "relay.Constant", "attrs": {"data": "0", "span": "0"}},
            {"type_key": "runtime.String", "repr_str": "VirtualDevice"},
            {"type_key": "Array", "data": [7]},
            {"type_key": "VirtualDevice", "attrs": {}},
        ],
        "b64ndarrays": [TVM_BLOB],
        "attrs": {"tvm_version": "0.7.0"},
    }
    table = read_metadata(json.dumps(doc))
    assert table["relay.Constant"][0].data.shape == (2, 3)
    assert table["VirtualDevice"] == [UnsupportedNode("VirtualDevice")]


@pytest.mark.parametrize("text, message", [
    ("{", "invalid JSON"),
    ("[]", "must be a JSON object"),
    ('{"root": 1, "nodes": [{"type_key": ""}, {"type_key": "Array"}]}', "must be a Map"),
    ('{"root": 7, "nodes": []}', "out of range"),
    ('{"root": 1, "nodes": [{}, {"type_key": "Map", "keys": ["relay.Constant"], "data": [2]},'
     ' {"type_key": "Array", "data": [3]}, {"type_key": "relay.Constant", "attrs": {"data": "0"}}],'
     ' "b64ndarrays": ["!!!"]}', "not valid base64"),
    ('{"root": 1, "nodes": [{}, {"type_key": "Map", "keys": ["relay.Constant"], "data": [2]},'
     ' {"type_key": "Array", "data": [3]}, {"type_key": "relay.Constant", "attrs": {}}]}',
     "without valid `data`"),
])
def test_bad_metadata(text, message):
    with pytest.raises(MetadataError, match=message):
        read_metadata(text)


def test_json_errors_carry_a_position():
    with pytest.raises(MetadataError) as info:
        read_metadata('{\n  "root": 1,\n  "nodes": [,]\n}')
    assert (info.value.line, info.value.col) == (3, 13)
