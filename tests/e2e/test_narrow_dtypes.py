"""bfloat16, the float8 formats and int4/uint4: casts both ways and
arithmetic, in the interpreter and in C.

The interpreter's conversions are ml_dtypes' (round to nearest even, no
saturation: overflow gives infinity where the format has one, else NaN);
``test_interpreter_casts_by_hand`` pins them to bit patterns worked out
from the formats' definitions (ties, the largest finite value and the tie
just above it, subnormals and the half of the smallest one, signed zeros,
NaN, infinities).  ``test_c_matches_interpreter`` builds ONE program with
every conversion between float32/float16 and each narrow type over
exhaustive or edge inputs (all 65,536 half/bfloat16 codes, all 256 codes of
each float8 format, every bfloat16-truncated float32 with the low half
0, a tie and either side of it) plus a few arithmetic kernels, and compares
the C with the interpreter bit for bit (any NaN matches any NaN).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import aot
from aot.ir.dtype import DType, from_storage, to_storage

from c_harness import compile_and_load, flatten, pack

F8 = ("float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz")
NARROW = ("bfloat16",) + F8


def _cast_program(src: str, dst: str, n: int) -> str:
    return (f"def @main(%x: Tensor[({n}), {src}]) -> Tensor[({n}), {dst}] "
            f"{{ cast(%x, dtype=\"{dst}\") }}")


def _bits(a: np.ndarray) -> np.ndarray:
    units = to_storage(a, DType.from_numpy(a.dtype))
    return units.view(f"u{units.itemsize}").astype(np.int64)


def _interpret_cast(values: np.ndarray, dst: str) -> np.ndarray:
    src = DType.from_numpy(values.dtype).value
    return np.asarray(aot.interpret(aot.parse(_cast_program(src, dst, values.size)), values))


# value -> expected bits, per format (from the formats' definitions)
BY_HAND = {
    "float8_e4m3fn": [
        (448.0, 0x7E), (464.0, 0x7E),          # the largest; the tie above rounds to even (down)
        (465.0, 0x7F), (-465.0, 0xFF),         # beyond: NaN, signed
        (np.inf, 0x7F), (-np.inf, 0xFF), (np.nan, 0x7F),
        (2.0 ** -9, 0x01), (2.0 ** -10, 0x00),  # smallest subnormal; half of it ties to 0
        (1.5 * 2.0 ** -10, 0x01), (3 * 2.0 ** -10, 0x02),   # 1.5 quanta ties to even
        (1.0625, 0x38), (1.1875, 0x3A),        # ties to even mantissas
        (-0.0, 0x80), (0.0, 0x00), (-1.0, 0xB8),
    ],
    "float8_e4m3fnuz": [
        (240.0, 0x7F), (248.0, 0x80),          # the tie above the largest rounds up: NaN
        (np.inf, 0x80), (-np.inf, 0x80), (np.nan, 0x80),
        (-0.0, 0x00), (-(2.0 ** -11), 0x00),   # no negative zero
        (2.0 ** -10, 0x01), (-1.0, 0xC0), (1.0, 0x40),
    ],
    "float8_e5m2": [
        (57344.0, 0x7B), (61440.0, 0x7C),      # the tie above the largest rounds to infinity
        (np.inf, 0x7C), (-np.inf, 0xFC), (np.nan, 0x7E),
        (2.0 ** -16, 0x01), (2.0 ** -17, 0x00), (-0.0, 0x80), (1.0, 0x3C), (1.25, 0x3D),
        (1.125, 0x3C), (1.375, 0x3E),
    ],
    "float8_e5m2fnuz": [
        (57344.0, 0x7F), (61440.0, 0x80), (np.inf, 0x80), (np.nan, 0x80),
        (2.0 ** -17, 0x01), (2.0 ** -18, 0x00), (-0.0, 0x00), (1.0, 0x40),
    ],
    "bfloat16": [
        (1.0 + 2.0 ** -8, 0x3F80), (1.0 + 3 * 2.0 ** -8, 0x3F82),   # ties to even
        (float(np.finfo(np.float32).max), 0x7F80),                   # rounds up to infinity
        (2.0 ** -133, 0x0001), (2.0 ** -134, 0x0000), (2.0 ** -149, 0x0000),
        (np.nan, 0x7FC0), (-np.inf, 0xFF80), (-0.0, 0x8000),
    ],
}


@pytest.mark.parametrize("fmt", NARROW)
def test_interpreter_casts_by_hand(fmt: str) -> None:
    values = np.array([v for v, _ in BY_HAND[fmt]], np.float32)
    got = _bits(_interpret_cast(values, fmt))
    want = np.array([b for _, b in BY_HAND[fmt]])
    assert got.tolist() == want.tolist(), [(float(v), hex(g), hex(w))
                                           for v, g, w in zip(values, got, want) if g != w]


def test_interpreter_int4_casts() -> None:
    x = np.arange(-20, 21, dtype=np.int32)
    got = _interpret_cast(x, "int4").astype(np.int32)
    assert got.tolist() == (((x + 8) % 16) - 8).tolist()      # integers wrap
    got = _interpret_cast(x, "uint4").astype(np.int32)
    assert got.tolist() == (x % 16).tolist()
    f = np.array([-9.5, -8.5, -0.9, 0.9, 6.99, 7.5, 1e9, np.nan, -np.inf], np.float32)
    assert _interpret_cast(f, "int4").astype(np.int32).tolist() == [-8, -8, 0, 0, 6, 7, 7, 0, -8]
    assert _interpret_cast(f, "uint4").astype(np.int32).tolist() == [0, 0, 0, 0, 6, 7, 15, 0, 0]


def test_storage_round_trip() -> None:
    """The C storage of each narrow type (what the loader passes) and back."""
    x = np.array([-8, 7, -1, 0, 3], np.int8).astype(ml_dtypes.int4)
    packed = to_storage(x, DType.INT4)
    assert packed.tolist() == [0x78, 0x0F, 0x03]              # element 2k in the low nibble
    assert from_storage(packed, DType.INT4, (5,)).astype(np.int8).tolist() == [-8, 7, -1, 0, 3]
    u = np.array([15, 1, 2], np.uint8).astype(ml_dtypes.uint4)
    assert to_storage(u, DType.UINT4).tolist() == [0x1F, 0x02]
    b = np.array([1.0, -2.0], ml_dtypes.bfloat16)
    assert to_storage(b, DType.BFLOAT16).tolist() == [0x3F80, 0xC000]


def _edges32() -> np.ndarray:
    """Every float32 whose low half is 0, 0x8000 (a bfloat16 tie) or either
    side of it, and all float16 values: every rounding case of every format."""
    top = np.arange(1 << 16, dtype=np.uint32) << 16
    words = np.concatenate([top, top | 0x7FFF, top | 0x8000, top | 0x8001])
    halves = np.arange(1 << 16, dtype=np.uint16).view(np.float16).astype(np.float32)
    return np.concatenate([words.view(np.float32), halves])


def _all_codes(fmt: str) -> np.ndarray:
    bits = np.uint16 if fmt in ("bfloat16", "float16") else np.uint8
    return np.arange(np.iinfo(bits).max + 1, dtype=np.int64).astype(bits).view(
        np.dtype(getattr(ml_dtypes, fmt) if fmt != "float16" else np.float16))


def _cases() -> list[tuple[str, str, np.ndarray]]:
    """(name, program, input) of every C case."""
    edges = _edges32()
    cases = []
    for fmt in NARROW:
        cases.append((f"f32->{fmt}", _cast_program("float32", fmt, edges.size), edges))
        codes = _all_codes(fmt)
        cases.append((f"{fmt}->f32", _cast_program(fmt, "float32", codes.size), codes))
        halves = _all_codes("float16")
        cases.append((f"f16->{fmt}", _cast_program("float16", fmt, halves.size), halves))
        cases.append((f"{fmt}->f16", _cast_program(fmt, "float16", codes.size), codes))
    for fmt in F8:   # float8 -> float8 and -> bfloat16 (exact or rounded once)
        codes = _all_codes(fmt)
        for dst in [d for d in NARROW if d != fmt]:
            cases.append((f"{fmt}->{dst}", _cast_program(fmt, dst, codes.size), codes))
    ints = np.arange(-40, 41, dtype=np.int32)
    floats = np.array([-9.5, -8.5, -0.9, 0.9, 6.99, 7.5, 15.5, 1e9, np.nan, -np.inf], np.float32)
    for dst in ("int4", "uint4"):
        cases.append((f"i32->{dst}", _cast_program("int32", dst, ints.size), ints))
        cases.append((f"f32->{dst}", _cast_program("float32", dst, floats.size), floats))
    odd = np.array([-8, 7, -1, 0, 3, 5, -3], np.int8).astype(ml_dtypes.int4)   # 7: a tail
    for dst in ("int32", "float32", "float16", "uint4"):
        cases.append((f"int4->{dst}", _cast_program("int4", dst, 7), odd))
    uodd = np.array([15, 0, 1, 8, 7, 9, 14], np.uint8).astype(ml_dtypes.uint4)
    cases.append(("uint4->int8", _cast_program("uint4", "int8", 7), uodd))
    # arithmetic in the wider type, rounded (or wrapped) back after each operation
    rng = np.random.default_rng(19)
    a = rng.normal(0, 100, 257).astype(ml_dtypes.bfloat16)
    cases.append(("bf16 arithmetic",
                  "def @main(%a: Tensor[(257), bfloat16]) -> Tensor[(257), bfloat16] "
                  "{ divide(add(multiply(%a, %a), %a), maximum(sqrt(abs(%a)), %a)) }", a))
    e = rng.normal(0, 30, 64).astype(ml_dtypes.float8_e4m3fn)
    cases.append(("e4m3fn arithmetic",
                  "def @main(%a: Tensor[(64), float8_e4m3fn]) -> Tensor[(64), float8_e4m3fn] "
                  "{ subtract(multiply(%a, %a), %a) }", e))
    i4 = np.array([-8, 7, -1, 3, 5, -3, 2], np.int8).astype(ml_dtypes.int4)
    cases.append(("int4 arithmetic",
                  "def @main(%a: Tensor[(7), int4]) -> (Tensor[(7), int4], Tensor[(7), int4]) "
                  "{ (add(%a, %a), divide(%a, negative(ones_like(%a)))) }", i4))
    # reductions and pools start from the type's lowest value: -inf, or the
    # most negative finite value of a format without infinities
    for fmt, values in (("float8_e4m3fn", [-448.0, -3.0, 1.5, 448.0]),
                        ("float8_e4m3fnuz", [-240.0, -0.5, 2.0, 3.0]),
                        ("bfloat16", [-np.inf, -1.0, 0.5, 7.0]), ("int4", [-8, -1, 3, 7])):
        v = np.array(values * 4, np.float32).reshape(4, 4).T.copy().astype(
            getattr(ml_dtypes, fmt))
        cases.append((f"{fmt} max/argmax/pool/transpose",
                      f"def @main(%x: Tensor[(4, 4), {fmt}]) {{ (max(%x, axis=[1]), "
                      "argmax(%x, axis=[0]), nn.max_pool2d(expand_dims(expand_dims(%x, axis=0), "
                      "axis=0), pool_size=[2, 2]), concatenate((transpose(%x), %x), axis=1)) }", v))
    return cases


def _same(got: np.ndarray, want: np.ndarray, what: str) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape, what
    gb, wb = _bits(got), _bits(want)
    if DType.from_numpy(want.dtype).is_float:
        nan = np.isnan(want.astype(np.float32))
        assert (np.isnan(got.astype(np.float32)) == nan).all(), what
        gb, wb = gb[~nan.reshape(-1)], wb[~nan.reshape(-1)]
    bad = np.flatnonzero(gb != wb)
    assert bad.size == 0, (f"{what}: {bad.size} differ, e.g. C {hex(int(gb[bad[0]]))} "
                           f"interpreter {hex(int(wb[bad[0]]))}")


def test_c_matches_interpreter() -> None:
    cases = _cases()
    texts = [text for _, text, _ in cases]
    mod = pack([_Text(t) for t in texts])
    fn = compile_and_load(mod, name="narrow")
    results = fn(*[x for _, _, x in cases])
    for (name, text, x), got in zip(cases, results):
        want = aot.interpret(aot.parse(text), x)
        for g, w in zip(flatten(got), flatten(want)):
            _same(g, w, name)


class _Text:
    """What :func:`pack` reads of a case."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.args = ()
        self.params: dict = {}


def test_loader_refuses_other_dtypes() -> None:
    """The loader takes exactly the input's ml_dtypes type, as for NumPy's."""
    fn = compile_and_load(aot.parse(_cast_program("bfloat16", "float32", 2)), name="bfin")
    assert fn(np.array([1.5, -2.0], ml_dtypes.bfloat16)).tolist() == [1.5, -2.0]
    with pytest.raises(aot.DiagnosticError, match="bfloat16"):
        fn(np.array([1.5, -2.0], np.float32))
    assert fn([1.5, -2]).tolist() == [1.5, -2.0]      # Python numbers convert exactly
