"""Constant tables (aot/emit/c/tables.py): every element round-trips
exactly, in Python (the text parsed back) and in C (one strict build of
all the tables, read back through the float view the kernels use)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from aot.emit.build.extension import load_library
from aot.emit.build.library import build_static_library, write_sources
from aot.emit.c.tables import (BYTES_FORM_MIN, LINE_WIDTH, declaration,
                               representation_checks, table)
from aot.ir.dtype import DType

RNG = np.random.default_rng(16)

FLOAT32_EDGES = np.array([0x00000000, 0x80000000, 0x7F800000, 0xFF800000,   # +-0, +-inf
                          0x7FC00000, 0xFFC00000, 0x7FA00001, 0xFFB12345,   # NaN payloads
                          0x00000001, 0x807FFFFF, 0x00800000, 0x7F7FFFFF,   # denormals, extremes
                          0x3F800000, 0xBDCCCCCD], dtype=np.uint32)
FLOAT64_EDGES = np.array([0, 1 << 63, 0x7FF0000000000000, 0xFFF0000000000000,
                          0x7FF8000000000001, 0xFFF4000000000000, 1, 0x800FFFFFFFFFFFFF,
                          0x3FF0000000000000], dtype=np.uint64)

CASES = {
    "f32": (DType.FLOAT32, np.concatenate(
        [FLOAT32_EDGES, RNG.integers(0, 2 ** 32, 200, dtype=np.uint64).astype(np.uint32)]
    ).view(np.float32)),
    "f64": (DType.FLOAT64, FLOAT64_EDGES.view(np.float64)),
    "f16": (DType.FLOAT16, np.array([0x0000, 0x8000, 0x7C00, 0x7E01, 0x0001, 0x3C00],
                                    dtype=np.uint16).view(np.float16)),
    "i8": (DType.INT8, np.array([-128, -1, 0, 1, 127, -5, 42], dtype=np.int8)),
    "u8": (DType.UINT8, np.array([0, 1, 255, 7], dtype=np.uint8)),
    "i16": (DType.INT16, np.array([-32768, 32767, -300, 0], dtype=np.int16)),
    "i32": (DType.INT32, np.array([-2147483648, 2147483647, -1, 0, 12345], dtype=np.int32)),
    "i32b": (DType.INT32, RNG.integers(-2 ** 31 + 1, 2 ** 31, 100).astype(np.int32)),
    "u32": (DType.UINT32, np.array([0, 4294967295, 2147483648, 9], dtype=np.uint32)),
    "i64": (DType.INT64, np.array([-2 ** 63, 2 ** 63 - 1, -7], dtype=np.int64)),
    "u64": (DType.UINT64, np.array([0, 2 ** 64 - 1], dtype=np.uint64)),
    "b": (DType.BOOL, np.array([True, False, True])),
    # large enough for the string form too: every byte value, edges included
    "f32big": (DType.FLOAT32, np.concatenate(
        [FLOAT32_EDGES, RNG.integers(0, 2 ** 32, 700, dtype=np.uint64).astype(np.uint32),
         np.arange(256, dtype=np.uint32) * 0x01010101]).view(np.float32)),
    "f64big": (DType.FLOAT64, np.concatenate(
        [FLOAT64_EDGES, RNG.integers(0, 2 ** 63, 200, dtype=np.uint64)]).view(np.float64)),
    "i8big": (DType.INT8, np.arange(-128, 128, dtype=np.int8).repeat(5)),
    "i32big": (DType.INT32, RNG.integers(-2 ** 31 + 1, 2 ** 31, 400).astype(np.int32)),
}


def _python_value(text: str) -> int:
    text = text.strip()
    text = re.sub(r"U?INT64_C\((\d+)\)", r"\1", text)
    if text == "(-2147483647 - 1)":
        return -2 ** 31
    if text == "(-INT64_C(9223372036854775807) - 1)" or text == "(-9223372036854775807 - 1)":
        return -2 ** 63
    return int(text.rstrip("u"), 0)


@pytest.mark.parametrize("case", sorted(CASES))
def test_table_text_parses_back_exactly(case):
    dtype, values = CASES[case]
    rendered = table(dtype, values)
    assert rendered.length == values.size
    lines = rendered.body.split("\n")
    assert lines[-1] == "" and all(len(line) <= LINE_WIDTH for line in lines)
    assert not any(line.endswith(" ") for line in lines)
    items = [t for t in re.split(r",(?![^(]*\))", rendered.body) if t.strip()]
    got = [_python_value(t) for t in items]
    if dtype in (DType.FLOAT32, DType.FLOAT64, DType.FLOAT16):
        bits = values.view({4: np.uint32, 8: np.uint64, 2: np.uint16}[values.itemsize])
        assert got == [int(b) for b in bits.tolist()]
    else:
        assert got == [int(v) for v in values.tolist()]
    assert table(dtype, values).body == rendered.body          # deterministic


def test_empty_table_is_one_padding_element():
    rendered = table(DType.FLOAT32, np.zeros(0, np.float32))
    assert rendered.length == 1 and rendered.body.strip() == "0"


def test_large_tables_have_both_forms():
    assert table(DType.FLOAT32, CASES["f32big"][1]).bytes_body is not None
    assert table(DType.FLOAT32, CASES["f32"][1]).bytes_body is None
    assert CASES["f32"][1].nbytes < BYTES_FORM_MIN <= CASES["i8big"][1].nbytes
    text = declaration("tab_x", table(*CASES["i8big"]), "tab")
    assert text.startswith("#if TAB_TABLES_AS_BYTES\n") and "#else\n" in text
    assert all(len(line) <= LINE_WIDTH for line in text.splitlines())


@pytest.mark.parametrize("form, flags", [("bytes", ()), ("integers", ("-U__BYTE_ORDER__",))])
def test_tables_round_trip_exactly_in_c(tmp_path, form, flags):
    """One library: each table as the template declares it, and a function
    that copies it out through the pointer type the kernels read; built as
    gcc and clang build it on a little-endian host (the string form of the
    large tables) and with the byte order unknown (the portable integers)."""
    lines = ['#include "tab.h"', "#include <float.h>", "#include <string.h>",
             *representation_checks("tab", [DType.FLOAT32, DType.FLOAT64], bytes_form=True),
             "typedef char tab_form[TAB_TABLES_AS_BYTES == %d ? 1 : -1];" % (form == "bytes")]
    protos = []
    for case, (dtype, values) in sorted(CASES.items()):
        rendered = table(dtype, values)
        name = f"tab_{case}"
        lines.append(declaration(name, rendered, "tab"))
        proto = f"void {name}_get({rendered.c_type} *out)"
        protos.append(proto + ";")
        lines += [proto, "{", f"    const {rendered.c_type} *p = {name};",
                  f"    memcpy(out, p, sizeof({name}));", "}"]
    header = "#ifndef TAB_H\n#define TAB_H\n#include <stdint.h>\n" + "\n".join(protos) + \
        "\n#endif\n"
    write_sources(tmp_path, {"include/tab.h": header, "src/tab.c": "\n".join(lines) + "\n"})
    build_static_library(tmp_path, "tab", extra_flags=flags)
    ffi, lib = load_library(tmp_path, "tab", "\n".join(protos) + "\n")
    for case, (dtype, values) in sorted(CASES.items()):
        out = np.zeros(values.size, dtype=values.dtype)
        ctype = {DType.BOOL: "uint8_t"}.get(dtype, table(dtype, values).c_type)
        getattr(lib, f"tab_{case}_get")(ffi.from_buffer(f"{ctype}[]", out))
        assert out.tobytes() == values.tobytes(), case
