"""Constant tables as C99 initialisers that compilers parse fast.

Design note
-----------
A model's weights are its largest part: 0.8 MB for MobileNetV1 0.25, 47 MB
for ResNet-18, millions of elements.  Both the text and its spelling cost:

* **gcc and clang pay per initialiser element**, about 1.2 to 2 us each
  whatever its spelling (gcc 12, ``-fsyntax-only``, 10^6 float32 values:
  1.25 s as hexadecimal floating constants, 1.5 s as decimal integers with a
  ``u`` suffix, 2.0 s without the suffix, 1.9 s as ``0x``-prefixed hex
  integers; clang 14: 0.88, 0.58, -, 0.83 s).  Fewer elements would need
  a string literal or two floats per integer, both of which depend on the
  target's byte order, which portable C99 cannot ask; so one element per
  value, in the cheapest spelling for both compilers: decimal, ``u``.
* **Python paid more than the compilers**: ``float.hex`` and a line
  packer per element, 3 to 4 us each.  Here every table is formatted by
  NumPy, a column at a time: items are right-aligned to the table's widest
  (spaces are free for a C lexer), so each line holds a fixed number of
  them and the whole initialiser is one ``bytes`` built by array
  operations (about 0.05 us per element).

**Floating-point tables are bit patterns.**  A float32 table is a union of
a ``uint32_t`` array, which the initialiser fills with the IEEE-754
binary32 bit pattern of every element, and a ``float`` array of the same
length, which the kernels read::

    static const union {
        uint32_t bits[3];
        float values[3];
    } net_c0_bits = {{
        1065353216u, 3212836864u, 2143289344u,
    }};
    #define net_c0 (net_c0_bits.values)

This is exact for every value, NaN payloads included (a hexadecimal
constant cannot spell a NaN at all; the old tables used a macro that kept
its sign only), and it is strictly conforming C99 given its stated
assumption:

* reading a union member other than the one last stored reinterprets
  the stored bytes as the member read (C99 TC3 6.5.2.3p3 and its footnote
  82, "type punning"; 6.2.6.1);
* the kernels read elements of ``values`` through ``const float *``
  pointers: the lvalue type is the element type of the member that
  occupies those bytes, which 6.5p7 (effective type) allows -- no pointer
  cast, no access of one type's object as another's, so it is valid under
  the strictest aliasing rules, with or without ``-fno-strict-aliasing``;
* the assumption: ``float`` is IEEE-754 binary32 (``double`` binary64) with
  the byte order of ``uint32_t`` (``uint64_t``).  The file checks the format
  with the preprocessor (``FLT_RADIX``, ``FLT_MANT_DIG``, ``FLT_MAX_EXP``,
  ``FLT_MIN_EXP`` of ``<float.h>``: an ``#error`` otherwise) and the size with
  a typedef whose array length is negative otherwise; the byte order of
  floats and integers agrees on every architecture with binary32 floats
  (the last exception was the double of the old ARM FPA).  float16 tables
  were already ``uint16_t`` bit patterns the kernels convert.

**Large tables are also spelled as one string.**  One element per value
still costs the compilers 1.5 to 2 us each (ResNet-18's 11.7 M weights: 43
CPU-s of gcc -O2), while a string literal is one token: the same table as
the bytes of a string (an ``unsigned char`` member of the union) takes gcc
0.3 s per million floats instead of 2.2 s, clang 0.09 s.  A string holds
bytes, so its meaning depends on the target's byte order, which C99 cannot
ask; so a table of :data:`BYTES_FORM_MIN` bytes or more is written twice,
the string in the model's source and the integers in a file beside it
(:func:`integers_file`) that the source includes after its tables::

    #if NET_TABLES_AS_BYTES
    static const union { unsigned char bytes[4800]; float values[1200]; } net_c0_bits = {
        "\315\314L>..."
    };
    #endif
    #define net_c0 (net_c0_bits.values)
    ...
    #if !NET_TABLES_AS_BYTES
    #include "net_tables.inc"     // static const union { uint32_t bits[1200]; ...
    #endif

``<NAME>_TABLES_AS_BYTES`` is 1 only where the compiler says the byte order
is little-endian (gcc's and clang's predefined ``__BYTE_ORDER__``; both run
on every core we target) and 0 elsewhere, where the portable integers are
compiled.  A compiler that takes the string form never opens the integers'
file: skipping them inside the source cost the preprocessor 0.06 s per 13
MB, 3.4 s of ResNet-18's compile (:func:`split_declaration`;
:func:`declaration` is the one-piece form, ``#if``/``#else``).  The
string fills the table exactly, without its terminating null (C99 6.7.8p14
initialises an array with the null only "if there is room"), so the table
takes the same flash in both forms; gcc 15's ``-Wextra`` warns about such
strings (``-Wunterminated-string-initialization``), and a string longer than
the 4,095 characters C99 promises to every compiler (5.2.4.1) draws
``-Woverlength-strings``: the fast branch turns both off with gcc's and
clang's own pragma (after ``-Wpragmas`` and ``-Wunknown-warning-option``, so
that compilers that do not know the newer warning say nothing either).
Bytes are written as themselves when printable and as three-digit octal
escapes otherwise (``"``, ``\\`` and ``?``, which
could begin a trigraph, always escaped): an escape never takes more than
three digits, so no byte can run into the next.

Integers are decimal as before (``INT32_MIN`` and 64-bit values through
:func:`~aot.emit.c.printer.format_int`).  Output is a pure function of
the dtype and the values: identical input, identical bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ...ir.dtype import DType, to_storage
from .printer import format_int
from .types import c_storage_type

__all__ = ["Table", "table", "declaration", "split_declaration", "BITS_TYPES",
           "BYTES_FORM_MIN", "representation_checks", "bytes_form_macro", "integers_file"]

#: The unsigned integer each float dtype's table stores its bit patterns in.
BITS_TYPES: dict[DType, str] = {DType.FLOAT32: "uint32_t", DType.FLOAT64: "uint64_t"}
#: Tables of at least this many bytes are also written as a string.
BYTES_FORM_MIN = 1024
#: Lines are at most this long (the indentation included).
LINE_WIDTH = 100
INDENT = "    "

_SPACE, _COMMA, _NEWLINE, _MINUS, _ZERO = (ord(c) for c in " ,\n-0")


@dataclass(frozen=True, slots=True)
class Table:
    """One constant table's initialiser."""

    c_type: str               # the element type the kernels read
    bits_type: str | None     # the type of the stored bit patterns (float tables)
    length: int               # declared length (>= 1: C has no zero-size arrays)
    body: str                 # the initialiser's lines, indented, each ending in "\n"
    #: the table's bytes (little-endian) as string lines, for large tables
    bytes_body: str | None = None
    nbytes: int = 0


def table(dtype: DType, values: np.ndarray) -> Table:
    """The initialiser of a table of ``values`` (flat, the dtype's storage)."""
    flat = np.ascontiguousarray(values, dtype=dtype.np).reshape(-1)
    bits_type = BITS_TYPES.get(dtype)
    if flat.size == 0:                       # one padding element
        return Table(c_storage_type(dtype), bits_type, 1, INDENT + "0\n")
    if dtype.packed or (dtype.is_narrow_float and dtype is not DType.FLOAT16):
        # bytes of packed 4-bit integers; bfloat16 and float8 bit patterns
        flat = to_storage(flat, dtype)
        digits = 2 * flat.itemsize
        items = _strings([f"0x{b:0{digits}x}" for b in flat.tolist()])
        raw = flat.astype(flat.dtype.newbyteorder("<"), copy=False).tobytes()
        bytes_body = _string_lines(raw) if len(raw) >= BYTES_FORM_MIN else None
        return Table(c_storage_type(dtype), None, int(flat.size), _lines(items),
                     bytes_body, len(raw))
    if dtype is DType.FLOAT32:
        items = _decimal(flat.view(np.uint32).astype(np.int64), "u")
    elif dtype is DType.FLOAT64:
        items = _strings([f"UINT64_C({v})" for v in flat.view(np.uint64).tolist()])
    elif dtype is DType.FLOAT16:
        items = _strings([f"0x{b:04x}" for b in flat.view(np.uint16).tolist()])
    elif dtype is DType.BOOL:
        items = _decimal(flat.astype(np.int64), "")
    elif dtype in (DType.INT8, DType.INT16, DType.UINT8, DType.UINT16):
        items = _decimal(flat.astype(np.int64), "")
    elif dtype is DType.INT32 and not (flat == np.iinfo(np.int32).min).any():
        items = _decimal(flat.astype(np.int64), "")
    elif dtype is DType.UINT32:
        items = _decimal(flat.astype(np.int64), "u")
    else:                                    # INT32_MIN, 64-bit integers
        spelled: dict[int, str] = {}
        texts = []
        for v in flat.tolist():
            text = spelled.get(v)
            if text is None:
                text = spelled[v] = format_int(v, dtype).text
            texts.append(text)
        items = _strings(texts)
    raw = flat.astype(flat.dtype.newbyteorder("<"), copy=False).tobytes()
    bytes_body = _string_lines(raw) if len(raw) >= BYTES_FORM_MIN else None
    return Table(c_storage_type(dtype), bits_type, int(flat.size), _lines(items),
                 bytes_body, len(raw))


def integers_file(prefix: str) -> str:
    """The file (beside the model's source) of its large tables' integer
    form (see the note)."""
    return f"{prefix}_tables.inc"


def bytes_form_macro(prefix: str) -> str:
    """The macro that chooses a large table's string form (see the note)."""
    return f"{prefix.upper()}_TABLES_AS_BYTES"


def declaration(c_name: str, rendered: Table, prefix: str) -> str:
    """The C declaration(s) of table ``c_name``: a float table's union and
    the ``#define`` the kernels use; a large table in both forms."""
    main, integers = split_declaration(c_name, rendered, prefix)
    if not integers:
        return main
    string, _, define = main.partition("#endif\n")
    return f"{string}#else\n{integers}#endif\n{define}"


def split_declaration(c_name: str, rendered: Table, prefix: str) -> tuple[str, str]:
    """:func:`declaration` in two parts: what the model's source holds (a
    large table's string form under ``#if <PREFIX>_TABLES_AS_BYTES``, the
    ``#define``), and the large table's portable integer form, for the
    file the source includes where the string form is not compiled (empty
    for a small table: the source holds all of it)."""
    if rendered.bits_type is not None:
        integers = _union(c_name, rendered, f"{rendered.bits_type} bits[{rendered.length}]",
                          "{{\n" + rendered.body + "}};\n")
    elif rendered.bytes_body is not None:
        integers = _union(c_name, rendered, f"{rendered.c_type} bits[{rendered.length}]",
                          "{{\n" + rendered.body + "}};\n")
    else:
        return (f"static const {rendered.c_type} {c_name}[{rendered.length}] = {{\n"
                f"{rendered.body}}};\n"), ""
    define = f"#define {c_name} ({c_name}_bits.values)\n"
    if rendered.bytes_body is None:
        return integers + define, ""
    string = _union(c_name, rendered, f"unsigned char bytes[{rendered.nbytes}]",
                    "{\n" + rendered.bytes_body + "};\n")
    return f"#if {bytes_form_macro(prefix)}\n{string}#endif\n{define}", integers


def _union(c_name: str, rendered: Table, first: str, initialiser: str) -> str:
    return (f"static const union {{\n    {first};\n"
            f"    {rendered.c_type} values[{rendered.length}];\n}} {c_name}_bits = "
            + initialiser)


def representation_checks(prefix: str, dtypes: Sequence[DType],
                          bytes_form: bool = False) -> tuple[str, ...]:
    """The lines that refuse to compile where a float table's bit patterns
    would not mean its values (see the module note), and with ``bytes_form``
    the definition of :func:`bytes_form_macro`; none without either."""
    lines: list[str] = []
    if bytes_form:
        macro = bytes_form_macro(prefix)
        lines += ["#if defined(__GNUC__) && defined(__BYTE_ORDER__) && "
                  "defined(__ORDER_LITTLE_ENDIAN__) && \\",
                  "    __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__",
                  f"#define {macro} 1",
                  '#pragma GCC diagnostic ignored "-Woverlength-strings"',
                  '#pragma GCC diagnostic ignored "-Wpragmas"',
                  '#pragma GCC diagnostic ignored "-Wunknown-warning-option"',
                  '#pragma GCC diagnostic ignored "-Wunterminated-string-initialization"',
                  "#else",
                  f"#define {macro} 0",
                  "#endif"]
    if DType.FLOAT32 in dtypes:
        lines += ["#if FLT_RADIX != 2 || FLT_MANT_DIG != 24 || FLT_MAX_EXP != 128 || "
                  "FLT_MIN_EXP != -125",
                  '#error "float constant tables hold IEEE-754 binary32 bit patterns"',
                  "#endif",
                  f"typedef char {prefix}_float_is_32_bits"
                  "[(sizeof(float) == sizeof(uint32_t)) ? 1 : -1];"]
    if DType.FLOAT64 in dtypes:
        lines += ["#if FLT_RADIX != 2 || DBL_MANT_DIG != 53 || DBL_MAX_EXP != 1024 || "
                  "DBL_MIN_EXP != -1021",
                  '#error "double constant tables hold IEEE-754 binary64 bit patterns"',
                  "#endif",
                  f"typedef char {prefix}_double_is_64_bits"
                  "[(sizeof(double) == sizeof(uint64_t)) ? 1 : -1];"]
    return tuple(lines)


def _byte_spellings() -> np.ndarray:
    """(256, 4) uint8: each byte as it appears in a string literal, padded
    with zeros (removed afterwards)."""
    table = np.zeros((256, 4), dtype=np.uint8)
    for b in range(256):
        text = chr(b) if 32 <= b < 127 and chr(b) not in '"\\?' else f"\\{b:03o}"
        table[b, :len(text)] = list(text.encode("ascii"))
    return table


_SPELLINGS = _byte_spellings()
#: bytes per string line: at most 4 characters each, the line within LINE_WIDTH
_STRING_BYTES_PER_LINE = (LINE_WIDTH - len(INDENT) - 2) // 4


def _string_lines(raw: bytes) -> str:
    """``raw`` as indented string literals, :data:`_STRING_BYTES_PER_LINE`
    bytes each (adjacent literals are concatenated: C99 5.1.1.2)."""
    data = np.frombuffer(raw, dtype=np.uint8)
    per = _STRING_BYTES_PER_LINE
    rows = -(-data.size // per)
    cells = np.zeros((rows, per, 4), dtype=np.uint8)
    cells.reshape(-1, 4)[:data.size] = _SPELLINGS[data]
    lead = np.frombuffer((INDENT + '"').encode(), dtype=np.uint8)
    trail = np.frombuffer(b'"\n', dtype=np.uint8)
    block = np.concatenate([np.broadcast_to(lead, (rows, lead.size)),
                            cells.reshape(rows, per * 4),
                            np.broadcast_to(trail, (rows, trail.size))], axis=1).reshape(-1)
    return block[block != 0].tobytes().decode("ascii")


def _decimal(values: np.ndarray, suffix: str) -> np.ndarray:
    """Right-aligned decimal literals of int64 ``values`` (none is
    INT64_MIN) with ``suffix`` and a comma: an (n, width) uint8 array."""
    negative = values < 0
    magnitude = np.abs(values)
    digits = np.ones(values.shape, dtype=np.int64)
    power = 10
    while power <= int(magnitude.max()):
        digits += magnitude >= power
        power *= 10
    width = int((digits + negative).max())
    tail = suffix + ","
    out = np.full((values.size, width + len(tail)), _SPACE, dtype=np.uint8)
    rest = magnitude.copy()
    for place in range(width):                # place 0: the units column
        column = width - 1 - place
        digit = (rest % 10).astype(np.uint8) + _ZERO
        out[:, column] = np.where(place < digits, digit, _SPACE)
        rest //= 10
    rows = np.nonzero(negative)[0]
    out[rows, width - 1 - digits[rows]] = _MINUS
    for k, ch in enumerate(tail):
        out[:, width + k] = ord(ch)
    return out


def _strings(texts: list[str]) -> np.ndarray:
    """``texts`` right-aligned to the longest, each with a comma."""
    width = max(len(t) for t in texts)
    data = "".join(t.rjust(width) + "," for t in texts).encode("ascii")
    return np.frombuffer(data, dtype=np.uint8).reshape(len(texts), width + 1)


def _lines(items: np.ndarray) -> str:
    """Items (rows of equal width, each ending in a comma) as indented
    lines of as many items as fit in :data:`LINE_WIDTH`, one space apart."""
    count, width = items.shape
    per_line = max(1, (LINE_WIDTH - len(INDENT) + 1) // (width + 1))
    chunks = []
    full = count // per_line
    for start, rows, n in ((0, full, per_line), (full * per_line, 1, count - full * per_line)):
        if rows == 0 or n == 0:
            continue
        block = np.full((rows, len(INDENT) + n * (width + 1)), _SPACE, dtype=np.uint8)
        cells = block[:, len(INDENT):].reshape(rows, n, width + 1)
        cells[:, :, :width] = items[start:start + rows * n].reshape(rows, n, width)
        block[:, -1] = _NEWLINE
        chunks.append(block.tobytes())
    return b"".join(chunks).decode("ascii")
