"""The catalogue of runtime helpers and macros printed kernels may use.

:data:`HELPERS` maps each helper name to its C prototype and a one-line
contract; :data:`MACROS` does the same for the constant macros.  The
runtime header must provide every one of them (a test checks that the
reference header defines each); :mod:`aot.emit.c.printer` spells only
names listed here, and :func:`~aot.emit.c.printer.kernel_helpers` reports
which ones a kernel uses.  Helper names end in the operand dtype's
:func:`~aot.emit.c.types.helper_suffix`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from ...ir.dtype import DType
from .types import c_storage_type, helper_suffix, narrow_float_suffix

__all__ = ["HelperSpec", "HELPERS", "MACROS"]

#: the dtypes with an ``aot_pick_S`` (those AVX2's masked loads move)
_PICK_DTYPES = (DType.INT32, DType.UINT32, DType.INT64, DType.UINT64, DType.FLOAT32,
                DType.FLOAT64)


@dataclass(frozen=True, slots=True)
class HelperSpec:
    prototype: str
    doc: str


def _pick_helpers() -> dict[str, HelperSpec]:
    h = {}
    for d in _PICK_DTYPES:
        s, t = helper_suffix(d), c_storage_type(d)
        h[f"aot_pick_{s}"] = HelperSpec(f"{t} aot_pick_{s}(uint8_t c, {t} a, {t} b)",
                                        "c ? a : b, both arguments evaluated")
    return h


def _build_helpers() -> dict[str, HelperSpec]:
    h: dict[str, HelperSpec] = {}
    ints = [d for d in DType if d.is_int and not d.packed]    # int4 computes as int8
    for d in ints:
        s, t = helper_suffix(d), c_storage_type(d)
        h[f"aot_div_{s}"] = HelperSpec(
            f"{t} aot_div_{s}({t} a, {t} b)",
            "a / b truncating toward zero; 0 when b == 0; MIN / -1 == MIN")
        h[f"aot_mod_{s}"] = HelperSpec(
            f"{t} aot_mod_{s}({t} a, {t} b)",
            "a % b with the sign of a; 0 when b == 0; MIN % -1 == 0")
        if d.is_signed:
            h[f"aot_floordiv_{s}"] = HelperSpec(
                f"{t} aot_floordiv_{s}({t} a, {t} b)",
                "floor(a / b); 0 when b == 0; MIN / -1 == MIN")
            h[f"aot_floormod_{s}"] = HelperSpec(
                f"{t} aot_floormod_{s}({t} a, {t} b)",
                "a - floor(a / b) * b (sign of b); 0 when b == 0")
    for d in ints + [DType.FLOAT32, DType.FLOAT64]:
        s, t = helper_suffix(d), c_storage_type(d)
        nan = "; NaN if either is NaN; b when a == b (so min(0.0, -0.0) is -0.0)" \
            if d.is_float else ""
        h[f"aot_min_{s}"] = HelperSpec(f"{t} aot_min_{s}({t} a, {t} b)", f"min(a, b){nan}")
        h[f"aot_max_{s}"] = HelperSpec(f"{t} aot_max_{s}({t} a, {t} b)", f"max(a, b){nan}")
    h["aot_min_f16"] = HelperSpec("float aot_min_f16(float a, float b)",
                                  "min of two binary16 values held in floats; NaN if either "
                                  "is NaN; a when a == b (NumPy's float16 tie rule)")
    h["aot_max_f16"] = HelperSpec("float aot_max_f16(float a, float b)",
                                  "max of two binary16 values held in floats; NaN if either "
                                  "is NaN; a when a == b (NumPy's float16 tie rule)")
    for f in (DType.FLOAT32, DType.FLOAT64):
        s, t = helper_suffix(f), c_storage_type(f)
        h[f"aot_floordiv_{s}"] = HelperSpec(f"{t} aot_floordiv_{s}({t} a, {t} b)",
                                            "NumPy floor_divide on floats")
        h[f"aot_floormod_{s}"] = HelperSpec(f"{t} aot_floormod_{s}({t} a, {t} b)",
                                            "NumPy mod (remainder with the sign of b) on floats")
        for d in ints:
            name = f"aot_sat_{s}_{helper_suffix(d)}"
            h[name] = HelperSpec(f"{c_storage_type(d)} {name}({t} x)",
                                 "truncate toward zero, saturate at the type's limits, NaN -> 0")
    h["aot_round_even_f32"] = HelperSpec("float aot_round_even_f32(float x)",
                                         "nearbyintf(x) in the default rounding mode: "
                                         "half to even, -0.0 kept, NaN and inf pass")
    h.update(_pick_helpers())
    h["aot_clip0_f32"] = HelperSpec("float aot_clip0_f32(float x, float hi)",
                                    "clip(x, 0, hi) for a positive finite hi: NaN passes, "
                                    "x <= 0 gives +0, x >= hi gives hi")
    h["aot_quantize_f32"] = HelperSpec(
        "int32_t aot_quantize_f32(float x, int32_t lo, int32_t hi, int32_t z)",
        "clamp(rint(x) + z, lo, hi), NaN -> 0 (|lo - z|, |hi - z| < 2^22)")
    h["aot_f16_to_f32"] = HelperSpec("float aot_f16_to_f32(uint16_t h)",
                                     "binary16 bits -> float (exact)")
    h["aot_f32_to_f16"] = HelperSpec("uint16_t aot_f32_to_f16(float x)",
                                     "float -> binary16 bits, round to nearest even")
    h["aot_f64_to_f16"] = HelperSpec("uint16_t aot_f64_to_f16(double x)",
                                     "double -> binary16 bits, round to nearest even (once)")
    h["aot_round_f16"] = HelperSpec("float aot_round_f16(float x)",
                                    "x rounded to the nearest binary16 value, as a float")
    for d in (DType.BFLOAT16, *(d for d in DType if d.is_float8)):
        nf, t = narrow_float_suffix(d), c_storage_type(d)
        h[f"aot_{nf}_to_f32"] = HelperSpec(f"float aot_{nf}_to_f32({t} b)",
                                          f"{d} bits -> float (exact)")
        h[f"aot_f32_to_{nf}"] = HelperSpec(
            f"{t} aot_f32_to_{nf}(float x)",
            f"float -> {d} bits, round to nearest even; overflow and NaN as ml_dtypes")
        h[f"aot_round_{nf}"] = HelperSpec(f"float aot_round_{nf}(float x)",
                                         f"x rounded to the nearest {d} value, as a float")
    for name, t in (("i4", "int8_t"), ("u4", "uint8_t")):
        h[f"aot_load_{name}"] = HelperSpec(
            f"{t} aot_load_{name}(const uint8_t *p, int32_t i)",
            "element i of packed 4-bit data (low nibble first)")
        h[f"aot_store_{name}"] = HelperSpec(
            f"void aot_store_{name}(uint8_t *p, int32_t i, {t} v)",
            "element i of packed 4-bit data := the low 4 bits of v")
        for src, ft in (("f32", "float"), ("f64", "double")):
            h[f"aot_sat_{src}_{name}"] = HelperSpec(
                f"{t} aot_sat_{src}_{name}({ft} x)",
                "truncate toward zero, saturate at the 4-bit type's limits, NaN -> 0")
    for d in (DType.INT8, DType.UINT8):
        s, t = helper_suffix(d), c_storage_type(d)
        h[f"aot_load4_{s}"] = HelperSpec(
            f"uint32_t aot_load4_{s}(const {t} *p, int32_t i)",
            "p[i..i+3] as one little-endian word (byte k in bits 8k..8k+7)")
    for d in (DType.INT8, DType.INT16, DType.UINT8, DType.UINT16):
        s, t = helper_suffix(d), c_storage_type(d)
        h[f"aot_sat_i32_{s}"] = HelperSpec(
            f"{t} aot_sat_i32_{s}(int32_t x)",
            "x clamped to the type's limits (SSAT / USAT)")
    for fn in ("exp", "tanh", "erf"):
        h[f"aot_fast_{fn}_f32"] = HelperSpec(
            f"float aot_fast_{fn}_f32(float x)",
            f"TOPI's float32 fast_{fn}, as aot.ir.ops.fast_math.fast_{fn}_f32")
    h["aot_sxtab16"] = HelperSpec(
        "uint32_t aot_sxtab16(uint32_t a, uint32_t b)",
        "halfwords of a plus bytes 0 and 2 of b sign-extended, each mod 2^16 (SXTAB16)")
    h["aot_sxtb16"] = HelperSpec(
        "uint32_t aot_sxtb16(uint32_t b)",
        "bytes 0 and 2 of b sign-extended into the two halfwords (SXTB16)")
    h["aot_smlad"] = HelperSpec(
        "int32_t aot_smlad(uint32_t a, uint32_t b, int32_t acc)",
        "acc + lo(a)*lo(b) + hi(a)*hi(b) of the signed halfwords, mod 2^32 (SMLAD)")
    h["aot_smladx"] = HelperSpec(
        "int32_t aot_smladx(uint32_t a, uint32_t b, int32_t acc)",
        "acc + lo(a)*hi(b) + hi(a)*lo(b) of the signed halfwords, mod 2^32 (SMLADX)")
    h["aot_pack2_f32"] = HelperSpec(
        "double aot_pack2_f32(float a, float b)",
        "the 8 bytes of the floats a, b (in that order in memory) as one double "
        "(union type punning), so that one 8-byte load or store moves both")
    h["aot_lo_f32"] = HelperSpec(
        "float aot_lo_f32(double d)", "the float in the first 4 bytes of d (aot_pack2_f32's a)")
    h["aot_hi_f32"] = HelperSpec(
        "float aot_hi_f32(double d)", "the float in the last 4 bytes of d (aot_pack2_f32's b)")
    return dict(sorted(h.items()))


HELPERS: Mapping[str, HelperSpec] = _build_helpers()

MACROS: Mapping[str, str] = {
    "AOT_NAN_F32": "a quiet NaN of type float (e.g. ((float)NAN))",
    "AOT_INF_F32": "positive infinity of type float (e.g. ((float)INFINITY))",
    "AOT_NAN_F64": "a quiet NaN of type double (e.g. ((double)NAN))",
    "AOT_INF_F64": "positive infinity of type double (e.g. ((double)INFINITY))",
}
