/*
 * aot_kernel_helpers.h -- the runtime helpers generated kernels call.
 *
 * Part of the hand-written C99 runtime of `aot` (runtime_c/).  Every
 * artifact carries a copy in DIR/runtime_c/; a model's source includes it
 * only when one of its kernels or constants uses a name defined here.
 *
 * What is here (the catalogue is aot.emit.c.helpers.HELPERS and MACROS;
 * a test checks this header against it, prototype by prototype):
 *
 *   AOT_NAN_F32 AOT_INF_F32        a quiet NaN / +infinity of type float
 *   AOT_NAN_F64 AOT_INF_F64        the same of type double
 *                                  (constant expressions: usable in static
 *                                  initialisers)
 *   aot_div_S  aot_mod_S           integer / and %: truncating, 0 for a zero
 *                                  divisor, MIN / -1 == MIN, MIN % -1 == 0
 *   aot_floordiv_S aot_floormod_S  NumPy's // and % (signed integers, float,
 *                                  double)
 *   aot_min_S  aot_max_S           min / max; on floats NaN-propagating
 *                                  (np.minimum / np.maximum); aot_min_f16 and
 *                                  aot_max_f16 follow NumPy's float16 tie rule
 *   aot_round_even_f32             nearbyintf without the library call:
 *                                  round half to even, exact for every float
 *   aot_pick_S                     c ? a : b, both evaluated (concatenate;
 *                                  S = i32 u32 i64 u64 f32 f64)
 *   aot_clip0_f32                  clip(x, 0, hi), NaN-propagating, for a
 *                                  positive finite hi (ReLU6): on M-profile
 *                                  Arm one integer comparison of x's bits
 *                                  in the common case
 *   aot_pack2_f32 aot_lo_f32       two floats as the 8 bytes of one double and
 *   aot_hi_f32                     back (union type punning): one 8-byte load
 *                                  or store moves both (a Cortex-M4F vldr.64)
 *   aot_quantize_f32               round half to even, add a zero point,
 *                                  clamp, as int32 (QuantizeLinear)
 *   aot_sat_F_I                    float -> integer: truncate toward zero,
 *                                  saturate at the type's limits, NaN -> 0
 *   aot_f16_to_f32 aot_f32_to_f16  IEEE binary16 bits <-> float (exact /
 *   aot_f64_to_f16 aot_round_f16   round to nearest even, as NumPy)
 *   aot_F_to_f32 aot_f32_to_F      the same for F = bf16 (bfloat16) and the
 *   aot_round_F                    float8 formats e4m3fn e4m3fnuz e5m2
 *                                  e5m2fnuz (as ml_dtypes: overflow gives
 *                                  infinity or NaN, no saturation)
 *   aot_load_i4 aot_store_i4       element i of packed int4 / uint4 data
 *   aot_load_u4 aot_store_u4       (two per byte, element 2k in the low
 *                                  nibble of byte k, as ONNX)
 *   aot_sat_F_i4 aot_sat_F_u4      float -> int4 / uint4 as aot_sat_F_I
 *   aot_load4_i8 aot_load4_u8      four bytes p[i..i+3] as one little-endian
 *                                  word (memcpy: one load on a Cortex-M)
 *   aot_sat_i32_S                  int32 -> int8, int16, uint8, uint16,
 *                                  saturating: SSAT / USAT through <arm_acle.h>
 *                                  when __ARM_FEATURE_SAT is defined, else
 *                                  min/max
 *   aot_fast_exp_f32 aot_fast_tanh_f32 aot_fast_erf_f32
 *                                  TOPI's float32 approximations (FastMath)
 *   aot_sxtb16 aot_sxtab16         the Arm DSP extension's SXTB16, SXTAB16
 *   aot_smlad aot_smladx           and SMLAD, SMLADX
 *                                  (dual 16-bit): ACLE intrinsics when
 *                                  __ARM_FEATURE_DSP is defined, else
 *                                  portable C computing the same integers
 *
 * S names the operand type: i8 i16 i32 i64 u8 u16 u32 u64 f32 f64 (bool is
 * a uint8_t, float16 is computed as float).  The semantics are the
 * reference interpreter's (NumPy's); tests compare them with NumPy.
 *
 * Everything is `static inline`: each translation unit gets private copies,
 * so two models (or two versions of this header) can be linked into one
 * program without symbol clashes, and unused helpers cost nothing.
 *
 * Requirements on the C implementation: C99, <stdint.h> with the exact-width
 * types, two's complement integers, IEEE 754 float and double.  No undefined
 * behaviour; warning-free under -std=c99 -Wall -Wextra -Wpedantic with gcc
 * and clang.  Compile with -ffp-contract=off (and without -ffast-math):
 * generated kernels rely on every float operation being rounded on its own
 * to match the reference interpreter bit for bit.
 */
#ifndef AOT_KERNEL_HELPERS_H
#define AOT_KERNEL_HELPERS_H

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

/* ---- special float values ------------------------------------------------ */

#define AOT_NAN_F32 ((float)NAN)
#define AOT_INF_F32 ((float)INFINITY)
#define AOT_NAN_F64 ((double)NAN)
#define AOT_INF_F64 ((double)INFINITY)

/* ---- integer division, modulo, min, max ---------------------------------- */

/* aot_div_S, aot_mod_S, aot_floordiv_S, aot_floormod_S, aot_min_S and
 * aot_max_S for a signed integer type T whose smallest value is MIN.  The
 * guards keep C's undefined cases (b == 0, MIN / -1, MIN % -1) out. */
#define AOT_DEFINE_SIGNED_HELPERS(S, T, MIN)                                  \
    static inline T aot_div_##S(T a, T b)                                     \
    {                                                                         \
        if (b == 0) return 0;                                                 \
        if (a == (MIN) && b == -1) return a;                                  \
        return (T)(a / b);                                                    \
    }                                                                         \
    static inline T aot_mod_##S(T a, T b)                                     \
    {                                                                         \
        if (b == 0 || b == -1) return 0;                                      \
        return (T)(a % b);                                                    \
    }                                                                         \
    static inline T aot_floordiv_##S(T a, T b)                                \
    {                                                                         \
        T q, r;                                                               \
        if (b == 0) return 0;                                                 \
        if (a == (MIN) && b == -1) return a;                                  \
        q = (T)(a / b);                                                       \
        r = (T)(a % b);                                                       \
        if (r != 0 && ((r < 0) != (b < 0))) q = (T)(q - 1);                   \
        return q;                                                             \
    }                                                                         \
    static inline T aot_floormod_##S(T a, T b)                                \
    {                                                                         \
        T r;                                                                  \
        if (b == 0 || b == -1) return 0;                                      \
        r = (T)(a % b);                                                       \
        if (r != 0 && ((r < 0) != (b < 0))) r = (T)(r + b);                   \
        return r;                                                             \
    }                                                                         \
    static inline T aot_min_##S(T a, T b) { return a < b ? a : b; }           \
    static inline T aot_max_##S(T a, T b) { return a > b ? a : b; }

/* aot_div_S, aot_mod_S, aot_min_S and aot_max_S for an unsigned type T
 * (floor division is plain division there). */
#define AOT_DEFINE_UNSIGNED_HELPERS(S, T)                                     \
    static inline T aot_div_##S(T a, T b) { return b == 0 ? 0 : (T)(a / b); } \
    static inline T aot_mod_##S(T a, T b) { return b == 0 ? 0 : (T)(a % b); } \
    static inline T aot_min_##S(T a, T b) { return a < b ? a : b; }           \
    static inline T aot_max_##S(T a, T b) { return a > b ? a : b; }

AOT_DEFINE_SIGNED_HELPERS(i8, int8_t, INT8_MIN)
AOT_DEFINE_SIGNED_HELPERS(i16, int16_t, INT16_MIN)
AOT_DEFINE_SIGNED_HELPERS(i32, int32_t, INT32_MIN)
AOT_DEFINE_SIGNED_HELPERS(i64, int64_t, INT64_MIN)
AOT_DEFINE_UNSIGNED_HELPERS(u8, uint8_t)
AOT_DEFINE_UNSIGNED_HELPERS(u16, uint16_t)
AOT_DEFINE_UNSIGNED_HELPERS(u32, uint32_t)
AOT_DEFINE_UNSIGNED_HELPERS(u64, uint64_t)

/* ---- float min, max, floor division and modulo ---------------------------- */

/* For a float type T with its libm functions FMOD, FLOOR and COPYSIGN:
 *   aot_min_S / aot_max_S   NaN if either operand is NaN (np.minimum /
 *                           np.maximum); b when a == b, so min(0.0, -0.0)
 *                           is -0.0 as in NumPy;
 *   aot_floormod_S          np.mod: the remainder with the sign of b;
 *   aot_floordiv_S          np.floor_divide, including its rounding of
 *                           (a - fmod(a, b)) / b and signed zeros. */
#define AOT_DEFINE_FLOAT_HELPERS(S, T, FMOD, FLOOR, COPYSIGN)                 \
    static inline T aot_min_##S(T a, T b) { return (a < b || a != a) ? a : b; } \
    static inline T aot_max_##S(T a, T b) { return (a > b || a != a) ? a : b; } \
    static inline T aot_floormod_##S(T a, T b)                                \
    {                                                                         \
        T m = FMOD(a, b);                                                     \
        if (b == 0) return m;                                                 \
        if (m != 0) {                                                         \
            if ((b < 0) != (m < 0)) m += b;                                   \
        } else {                                                              \
            m = COPYSIGN((T)0, b);                                            \
        }                                                                     \
        return m;                                                             \
    }                                                                         \
    static inline T aot_floordiv_##S(T a, T b)                                \
    {                                                                         \
        T m, d, f;                                                            \
        if (b == 0) return a / b;                                             \
        m = FMOD(a, b);                                                       \
        d = (a - m) / b;                                                      \
        if (m != 0 && ((b < 0) != (m < 0))) d -= 1;                           \
        if (d != 0) {                                                         \
            f = FLOOR(d);                                                     \
            if (d - f > (T)0.5) f += 1;                                       \
        } else {                                                              \
            f = COPYSIGN((T)0, a / b);                                        \
        }                                                                     \
        return f;                                                             \
    }

AOT_DEFINE_FLOAT_HELPERS(f32, float, fmodf, floorf, copysignf)
AOT_DEFINE_FLOAT_HELPERS(f64, double, fmod, floor, copysign)

/* ---- round half to even ---------------------------------------------------- */

/* nearbyintf(x) in the default rounding mode (np.rint), without the library
 * call it is on a Cortex-M4F (about 50 instructions there).  For |x| < 2^23,
 * |x| + 2^23 lies in [2^23, 2^24), where the floats are exactly the
 * integers: the addition rounds |x| to the nearest integer, ties to even
 * (2^23 is even, so the tie goes where |x|'s would), and subtracting 2^23
 * again is exact; copysignf restores the sign (-0.3 -> -0.0).  From 2^23 up
 * every float is an integer already, and NaN and the infinities fail the
 * test and pass through.  The cast makes the sum a float even where float
 * expressions are evaluated wider (C99 6.3.1.8: a cast drops the extra
 * precision), and an implementation that does not promise FLT_EVAL_METHOD 0
 * keeps the library call. */
#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD == 0
static inline float aot_round_even_f32(float x)
{
    float a = fabsf(x);
    float r = (float)(a + 8388608.0f) - 8388608.0f;
    return a < 8388608.0f ? copysignf(r, x) : x;
}
#else
static inline float aot_round_even_f32(float x) { return nearbyintf(x); }
#endif

/* aot_pick_S(c, a, b): c ? a : b with both a and b evaluated (a function's
 * arguments are).  concatenate's lowering selects between its parts' loads
 * with it, each load at an index clamped into its part: gcc 12.2 at -O3
 * with AVX2 (and AVX-512) vectorises the select of two loads written
 * `c ? x[i] : x[i - 3]` over a 6x2 nest (concatenate((x, x)) of a 3x2
 * tensor) with a masked load whose mask drops lanes that must be read:
 * they come out zero.  The loads as arguments, at indices clamped with
 * aot_min_i32 / aot_max_i32, are vectorised right (every nest of 1 to 13
 * rows and 1 to 4 columns, two and three parts, tried). */
static inline int32_t aot_pick_i32(uint8_t c, int32_t a, int32_t b) { return c ? a : b; }
static inline uint32_t aot_pick_u32(uint8_t c, uint32_t a, uint32_t b) { return c ? a : b; }
static inline int64_t aot_pick_i64(uint8_t c, int64_t a, int64_t b) { return c ? a : b; }
static inline uint64_t aot_pick_u64(uint8_t c, uint64_t a, uint64_t b) { return c ? a : b; }
static inline float aot_pick_f32(uint8_t c, float a, float b) { return c ? a : b; }
static inline double aot_pick_f64(uint8_t c, double a, double b) { return c ? a : b; }

/* clip(x, 0, hi) for a positive finite hi: NaN passes, every number below
 * +0 (-0 included) gives +0, every number above hi gives hi -- the select
 * chain (x <= 0 ? 0 : x) >= hi ? hi : ... that clip's lowering prints
 * otherwise (ReLU6 is clip(x, 0, 6)).  On an M-profile Arm core a float
 * comparison is VCMP, VMRS and a conditional instruction, twice per output;
 * there the bits decide instead: the non-negative floats +0 .. +inf are
 * ordered as their bit patterns read as integers, so one unsigned
 * comparison with hi's bits accepts +0 <= x <= hi (the common case, 4
 * instructions with the store instead of 8); the negative numbers -0 ..
 * -inf are the bit patterns 0x80000000 .. 0xFF800000, as int32 the values
 * <= -2^23 (the negative NaNs are above); what is left is a NaN or above hi.
 * That rare case is tested for, not the negative one: arm-none-eabi-gcc
 * -O2 then lays the negative path out in line, falling through to the
 * store (7 instructions with it, 8 when it branched out and back;
 * MobileNetV1 0.25, half of whose ReLU6 inputs are negative: 12,264,480 ->
 * 12,175,039 instructions).  Elsewhere the comparisons, which compilers
 * vectorise into max and min. */
#if defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M'
static inline float aot_clip0_f32(float x, float hi)
{
    int32_t b, h;
    memcpy(&b, &x, sizeof b);
    memcpy(&h, &hi, sizeof h);
    if ((uint32_t)b <= (uint32_t)h) {
        return x;
    }
    if (b > -8388608) {
        return x != x ? x : hi;
    }
    return 0.0f;
}
#else
static inline float aot_clip0_f32(float x, float hi)
{
    float y = x <= 0.0f ? 0.0f : x;
    return y >= hi ? hi : y;
}
#endif

/* Two floats as one double's bytes (C99 TC3 6.5.2.3p3, footnote 82: a union
 * member read reinterprets the bytes last stored through another member).
 * Register tiles read float pairs from 8-byte aligned double tables and
 * local arrays with them: gcc loads both halves with one vldr.64 / ldrd.
 * A model using them has a float64 table, whose representation check
 * refuses to compile where double is not binary64 (8 bytes). */
static inline double aot_pack2_f32(float a, float b)
{
    union { float f[2]; double d; } u;
    u.f[0] = a;
    u.f[1] = b;
    return u.d;
}
static inline float aot_lo_f32(double d)
{
    union { float f[2]; double d; } u;
    u.d = d;
    return u.f[0];
}
static inline float aot_hi_f32(double d)
{
    union { float f[2]; double d; } u;
    u.d = d;
    return u.f[1];
}

/* QuantizeLinear's tail, cast(clip(round_even(x) + z, lo, hi)), as int32:
 * round half to even, add z, clamp to [lo, hi], NaN -> 0.  Needs lo <= hi
 * and |lo - z|, |hi - z| < 2^22 (the lowering checks).  Clamping x to
 * [lo - z, hi - z] first gives the same integers (rounding is monotonic and
 * keeps integers) and leaves |x| < 2^22, where s = x + 1.5 * 2^23 lies in
 * [2^23, 2^24): s is rint(x) + 1.5 * 2^23 exactly, and its bits are
 * 0x4B400000 + rint(x) (exponent 150, the integer in the mantissa), read
 * with one move instead of a subtraction and a conversion.  The in-range
 * test comes first (two comparisons on the common path); NaN fails both. */
#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD == 0
static inline int32_t aot_quantize_f32(float x, int32_t lo, int32_t hi, int32_t z)
{
    if (x > (float)(lo - z) && x < (float)(hi - z)) {
        float s = (float)(x + 12582912.0f);
        uint32_t bits;
        memcpy(&bits, &s, sizeof bits);
        return (int32_t)bits - 0x4B400000 + z;
    }
    if (x != x) return 0;
    return x <= (float)(lo - z) ? lo : hi;
}
#else
static inline int32_t aot_quantize_f32(float x, int32_t lo, int32_t hi, int32_t z)
{
    if (x > (float)(lo - z) && x < (float)(hi - z)) return (int32_t)nearbyintf(x) + z;
    if (x != x) return 0;
    return x <= (float)(lo - z) ? lo : hi;
}
#endif

/* float16 values computed in float: NumPy's float16 minimum / maximum keep
 * the first operand when the two compare equal (so min(0.0, -0.0) is 0.0). */
static inline float aot_min_f16(float a, float b) { return (a <= b || a != a) ? a : b; }
static inline float aot_max_f16(float a, float b) { return (a >= b || a != a) ? a : b; }

/* ---- packed 8/16-bit integers (int8 kernels) ------------------------------ */

/* Two halfwords in a word: lo = bits 0..15, hi = bits 16..31.  With the
 * Arm DSP extension (Cortex-M4/M7/M33 ..., little-endian) these are one
 * instruction each, through the ACLE intrinsics of <arm_acle.h>; elsewhere
 * the portable C below computes the same integers (tests build both). */
#if defined(__ARM_FEATURE_DSP) && !defined(__ARM_BIG_ENDIAN)
#include <arm_acle.h>
#define AOT_DSP 1
static inline uint32_t aot_load4_i8(const int8_t *p, int32_t i)
{
    uint32_t v;
    memcpy(&v, p + i, sizeof v);
    return v;
}
static inline uint32_t aot_load4_u8(const uint8_t *p, int32_t i)
{
    uint32_t v;
    memcpy(&v, p + i, sizeof v);
    return v;
}
static inline uint32_t aot_sxtab16(uint32_t a, uint32_t b)
{
    return (uint32_t)__sxtab16((int32_t)a, (int32_t)b);
}
static inline uint32_t aot_sxtb16(uint32_t b)
{
    return (uint32_t)__sxtb16((int32_t)b);
}
static inline int32_t aot_smlad(uint32_t a, uint32_t b, int32_t acc)
{
    return __smlad((int32_t)a, (int32_t)b, acc);
}
static inline int32_t aot_smladx(uint32_t a, uint32_t b, int32_t acc)
{
    return __smladx((int32_t)a, (int32_t)b, acc);
}
#else
static inline uint32_t aot_load4_u8(const uint8_t *p, int32_t i)
{
    return (uint32_t)p[i] | (uint32_t)p[i + 1] << 8 | (uint32_t)p[i + 2] << 16
        | (uint32_t)p[i + 3] << 24;
}
static inline uint32_t aot_load4_i8(const int8_t *p, int32_t i)
{
    return (uint32_t)(uint8_t)p[i] | (uint32_t)(uint8_t)p[i + 1] << 8
        | (uint32_t)(uint8_t)p[i + 2] << 16 | (uint32_t)(uint8_t)p[i + 3] << 24;
}
/* sign extension of the low 8 / 16 bits, without implementation-defined
 * conversions */
static inline uint32_t aot_sext8_(uint32_t v) { return ((v & 0xFFu) ^ 0x80u) - 0x80u; }
static inline int32_t aot_sext16_(uint32_t v)
{
    return (int32_t)((v & 0xFFFFu) ^ 0x8000u) - 0x8000;
}
static inline uint32_t aot_sxtab16(uint32_t a, uint32_t b)
{
    uint32_t lo = (a + aot_sext8_(b)) & 0xFFFFu;
    uint32_t hi = ((a >> 16) + aot_sext8_(b >> 16)) & 0xFFFFu;
    return lo | hi << 16;
}
static inline uint32_t aot_sxtb16(uint32_t b) { return aot_sxtab16(0u, b); }
static inline int32_t aot_smlad(uint32_t a, uint32_t b, int32_t acc)
{
    uint32_t lo = (uint32_t)(aot_sext16_(a) * aot_sext16_(b));
    uint32_t hi = (uint32_t)(aot_sext16_(a >> 16) * aot_sext16_(b >> 16));
    uint32_t sum = (uint32_t)acc + lo + hi;
    return sum > 0x7FFFFFFFu ? -(int32_t)(0xFFFFFFFFu - sum) - 1 : (int32_t)sum;
}
static inline int32_t aot_smladx(uint32_t a, uint32_t b, int32_t acc)
{
    return aot_smlad(a, b >> 16 | b << 16, acc);
}
#endif

/* ---- saturating int32 -> 8/16-bit integer -------------------------------- */

/* One SSAT / USAT on cores with the saturation instructions (Cortex-M3 and
 * up): compilers do not always find them from a min/max pair (gcc keeps a
 * bound shared by several clamps in a register and then misses the
 * pattern). */
#if defined(__ARM_FEATURE_SAT)
#include <arm_acle.h>
static inline int8_t aot_sat_i32_i8(int32_t x) { return (int8_t)__ssat(x, 8); }
static inline int16_t aot_sat_i32_i16(int32_t x) { return (int16_t)__ssat(x, 16); }
static inline uint8_t aot_sat_i32_u8(int32_t x) { return (uint8_t)__usat(x, 8); }
static inline uint16_t aot_sat_i32_u16(int32_t x) { return (uint16_t)__usat(x, 16); }
#else
/* the min/max form compilers vectorize (and, alone, turn into SSAT) */
static inline int8_t aot_sat_i32_i8(int32_t x)
{
    return (int8_t)aot_max_i32(aot_min_i32(x, INT8_MAX), INT8_MIN);
}
static inline int16_t aot_sat_i32_i16(int32_t x)
{
    return (int16_t)aot_max_i32(aot_min_i32(x, INT16_MAX), INT16_MIN);
}
static inline uint8_t aot_sat_i32_u8(int32_t x)
{
    return (uint8_t)aot_max_i32(aot_min_i32(x, UINT8_MAX), 0);
}
static inline uint16_t aot_sat_i32_u16(int32_t x)
{
    return (uint16_t)aot_max_i32(aot_min_i32(x, UINT16_MAX), 0);
}
#endif

/* ---- saturating float -> integer ----------------------------------------- */

/* aot_sat_FS_IS: FT -> IT truncating toward zero, saturating at [LO, HI],
 * NaN -> 0 (the reference's cast; C's own conversion is undefined out of
 * range).  The comparisons are against (FT)LO and (FT)HI, which may round
 * up for HI; a value at or beyond the rounded limit saturates. */
#define AOT_DEFINE_SAT_HELPER(FS, FT, IS, IT, LO, HI)                         \
    static inline IT aot_sat_##FS##_##IS(FT x)                                \
    {                                                                         \
        if (x != x) return 0;                                                 \
        if (x <= (FT)(LO)) return LO;                                         \
        if (x >= (FT)(HI)) return HI;                                         \
        return (IT)x;                                                         \
    }

#define AOT_DEFINE_SAT_HELPERS(FS, FT)                                        \
    AOT_DEFINE_SAT_HELPER(FS, FT, i8, int8_t, INT8_MIN, INT8_MAX)             \
    AOT_DEFINE_SAT_HELPER(FS, FT, i16, int16_t, INT16_MIN, INT16_MAX)         \
    AOT_DEFINE_SAT_HELPER(FS, FT, i32, int32_t, INT32_MIN, INT32_MAX)         \
    AOT_DEFINE_SAT_HELPER(FS, FT, i64, int64_t, INT64_MIN, INT64_MAX)         \
    AOT_DEFINE_SAT_HELPER(FS, FT, u8, uint8_t, 0, UINT8_MAX)                  \
    AOT_DEFINE_SAT_HELPER(FS, FT, u16, uint16_t, 0, UINT16_MAX)               \
    AOT_DEFINE_SAT_HELPER(FS, FT, u32, uint32_t, 0, UINT32_MAX)               \
    AOT_DEFINE_SAT_HELPER(FS, FT, u64, uint64_t, 0, UINT64_MAX)

AOT_DEFINE_SAT_HELPERS(f32, float)
AOT_DEFINE_SAT_HELPERS(f64, double)

/* The generator macros are not part of the interface. */
#undef AOT_DEFINE_SIGNED_HELPERS
#undef AOT_DEFINE_UNSIGNED_HELPERS
#undef AOT_DEFINE_FLOAT_HELPERS
#undef AOT_DEFINE_SAT_HELPER
#undef AOT_DEFINE_SAT_HELPERS

/* ---- binary16 (float16) --------------------------------------------------- */

/* binary16 bits -> float, exactly (every half is a float).  Without
 * branches, so that a loop converting halves vectorizes: the exponent and
 * mantissa fields moved to a float's positions read as 2^-112 times the
 * half's magnitude -- for a subnormal half too, as a float subnormal -- and
 * one exact multiply by 2^112 restores it; infinities and NaNs (exponent
 * all ones, payload kept) are selected instead, then the sign is ored in.
 * Relies on float subnormals (IEEE mode, no flush-to-zero), as C does. */
static inline float aot_f16_to_f32(uint16_t h)
{
    uint32_t shifted = (uint32_t)(h & 0x7fffu) << 13;
    uint32_t special = shifted | 0x7f800000u;
    uint32_t bits;
    float f;
    memcpy(&f, &shifted, sizeof f);
    f *= 5.192296858534828e+33f; /* 2^112 */
    memcpy(&bits, &f, sizeof bits);
    bits = (h & 0x7c00u) == 0x7c00u ? special : bits;
    bits |= (uint32_t)(h & 0x8000u) << 16;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* Internal: round to nearest even a magnitude below the binary16 normal
 * range given as m * 2^-shift in units of 2^-24 (shift >= 1). */
static inline uint16_t aot_f16_round_subnormal(uint64_t m, unsigned shift)
{
    uint64_t r = m >> shift;
    uint64_t rem = m & ((UINT64_C(1) << shift) - 1u);
    uint64_t half = UINT64_C(1) << (shift - 1u);
    if (rem > half || (rem == half && (r & 1u))) r += 1u;
    return (uint16_t)r;
}

/* float -> binary16 bits, round to nearest even; overflow gives infinity;
 * a NaN keeps its sign and top payload bits (as NumPy). */
static inline uint16_t aot_f32_to_f16(float x)
{
    uint32_t bits, magnitude, exponent;
    uint16_t sign;
    memcpy(&bits, &x, sizeof bits);
    sign = (uint16_t)((bits >> 16) & 0x8000u);
    magnitude = bits & 0x7fffffffu;
    if (magnitude > 0x7f800000u) { /* NaN: keep the top payload bits, as NumPy */
        uint16_t payload = (uint16_t)(magnitude >> 13 & 0x3ffu);
        return (uint16_t)(sign | 0x7c00u | (payload ? payload : 1u));
    }
    if (magnitude >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* >= 65520 */
    if (magnitude >= 0x38800000u) { /* normal half */
        uint32_t rounded = magnitude + 0xfffu + ((magnitude >> 13) & 1u);
        return (uint16_t)(sign | ((rounded - 0x38000000u) >> 13));
    }
    exponent = magnitude >> 23;
    if (exponent < 102u) return sign; /* below 2^-25: rounds to zero */
    return (uint16_t)(sign | aot_f16_round_subnormal((magnitude & 0x7fffffu) | 0x800000u,
                                                     126u - exponent));
}

/* double -> binary16 bits, rounded once (not through float). */
static inline uint16_t aot_f64_to_f16(double x)
{
    uint64_t bits, magnitude, exponent;
    uint16_t sign;
    memcpy(&bits, &x, sizeof bits);
    sign = (uint16_t)((bits >> 48) & 0x8000u);
    magnitude = bits & UINT64_C(0x7fffffffffffffff);
    if (magnitude > UINT64_C(0x7ff0000000000000)) {
        uint16_t payload = (uint16_t)(magnitude >> 42 & 0x3ffu);
        return (uint16_t)(sign | 0x7c00u | (payload ? payload : 1u));
    }
    if (magnitude >= UINT64_C(0x40effe0000000000)) return (uint16_t)(sign | 0x7c00u);
    if (magnitude >= UINT64_C(0x3f10000000000000)) {
        uint64_t rounded = magnitude + UINT64_C(0x1ffffffffff) + ((magnitude >> 42) & 1u);
        return (uint16_t)(sign | ((rounded - UINT64_C(0x3f00000000000000)) >> 42));
    }
    exponent = magnitude >> 52;
    if (exponent < 998u) return sign;
    return (uint16_t)(sign | aot_f16_round_subnormal(
        (magnitude & UINT64_C(0xfffffffffffff)) | (UINT64_C(1) << 52),
        (unsigned)(1051u - exponent)));
}

/* x rounded to the nearest binary16 value, as a float: how every float16
 * arithmetic result is brought back to half precision. */
static inline float aot_round_f16(float x)
{
    return aot_f16_to_f32(aot_f32_to_f16(x));
}

/* ---- bfloat16 ------------------------------------------------------------- */

/* bfloat16 bits are the top half of a float's. */
static inline float aot_bf16_to_f32(uint16_t b)
{
    uint32_t bits = (uint32_t)b << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* float -> bfloat16 bits, round to nearest even (overflow gives infinity);
 * a NaN stays a quiet NaN with its sign and top payload bits. */
static inline uint16_t aot_f32_to_bf16(float x)
{
    uint32_t bits;
    memcpy(&bits, &x, sizeof bits);
    if ((bits & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((bits >> 16) | 0x0040u);
    return (uint16_t)((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

static inline float aot_round_bf16(float x)
{
    return aot_bf16_to_f32(aot_f32_to_bf16(x));
}

/* ---- float8 (ONNX's four formats) ----------------------------------------- */

/* Internal: float8 bits -> float, exactly.  m mantissa bits, exponent bias
 * `bias`, `sub` = 2^(1 - bias - m) (the subnormal quantum); `nan` tells the
 * NaN codes: 0 e4m3fn (S.1111.111), 1 e5m2 (S.11111.mm, mm != 0; mm == 0
 * is infinity), 2 fnuz (0x80 only; no infinity, no negative zero). */
static inline float aot_f8_to_f32(uint8_t b, unsigned m, unsigned bias, float sub, int nan)
{
    uint32_t mag = b & 0x7fu, e = mag >> m, bits;
    float f;
    if (nan == 2 ? b == 0x80u : nan == 0 ? mag == 0x7fu : mag > 0x7cu) return AOT_NAN_F32;
    if (nan == 1 && mag == 0x7cu) {
        f = AOT_INF_F32;
    } else if (e == 0u) {
        f = (float)mag * sub;
    } else {
        bits = ((e + 127u - bias) << 23) | ((mag & ((1u << m) - 1u)) << (23u - m));
        memcpy(&f, &bits, sizeof f);
    }
    return (b & 0x80u) ? -f : f;
}

/* Internal: float -> float8 bits, round to nearest even (ties to the even
 * code), without saturation: beyond the largest finite code `maxcode` (and
 * for infinities) the result is `overflow`, a NaN gives `nanc`; both get
 * the sign unless `uz` (fnuz formats: no sign on NaN, no negative zero).
 * float32 subnormals are far below every format's subnormals: zero. */
static inline uint8_t aot_f32_to_f8(float x, unsigned m, int bias, uint32_t maxcode,
                                    uint32_t overflow, uint32_t nanc, int uz)
{
    uint32_t bits, mag, sign, sig, r, rem, half, code;
    int e, emin = 1 - bias, drop;
    memcpy(&bits, &x, sizeof bits);
    sign = (bits >> 24) & 0x80u;
    mag = bits & 0x7fffffffu;
    if (mag > 0x7f800000u) return (uint8_t)(uz ? nanc : sign | nanc);
    if (mag >= 0x7f800000u) return (uint8_t)(uz ? overflow : sign | overflow);
    if ((mag >> 23) == 0u) return (uint8_t)(uz ? 0u : sign);
    e = (int)(mag >> 23) - 127;
    sig = (mag & 0x7fffffu) | 0x800000u;
    drop = 23 - (int)m + (e < emin ? emin - e : 0);
    if (drop >= 25) return (uint8_t)(uz ? 0u : sign);
    r = sig >> drop;
    rem = sig & ((1u << drop) - 1u);
    half = 1u << (drop - 1);
    if (rem > half || (rem == half && (r & 1u))) r += 1u;
    code = ((uint32_t)((e < emin ? emin : e) - emin) << m) + r;
    if (code > maxcode) return (uint8_t)(uz ? overflow : sign | overflow);
    if (code == 0u && uz) return 0u;
    return (uint8_t)(sign | code);
}

static inline float aot_e4m3fn_to_f32(uint8_t b)
{
    return aot_f8_to_f32(b, 3u, 7u, 0.001953125f, 0);
}
static inline uint8_t aot_f32_to_e4m3fn(float x)
{
    return aot_f32_to_f8(x, 3u, 7, 0x7eu, 0x7fu, 0x7fu, 0);
}
static inline float aot_round_e4m3fn(float x) { return aot_e4m3fn_to_f32(aot_f32_to_e4m3fn(x)); }

static inline float aot_e4m3fnuz_to_f32(uint8_t b)
{
    return aot_f8_to_f32(b, 3u, 8u, 0.0009765625f, 2);
}
static inline uint8_t aot_f32_to_e4m3fnuz(float x)
{
    return aot_f32_to_f8(x, 3u, 8, 0x7fu, 0x80u, 0x80u, 1);
}
static inline float aot_round_e4m3fnuz(float x)
{
    return aot_e4m3fnuz_to_f32(aot_f32_to_e4m3fnuz(x));
}

static inline float aot_e5m2_to_f32(uint8_t b)
{
    return aot_f8_to_f32(b, 2u, 15u, 1.52587890625e-05f, 1);
}
static inline uint8_t aot_f32_to_e5m2(float x)
{
    return aot_f32_to_f8(x, 2u, 15, 0x7bu, 0x7cu, 0x7eu, 0);
}
static inline float aot_round_e5m2(float x) { return aot_e5m2_to_f32(aot_f32_to_e5m2(x)); }

static inline float aot_e5m2fnuz_to_f32(uint8_t b)
{
    return aot_f8_to_f32(b, 2u, 16u, 7.62939453125e-06f, 2);
}
static inline uint8_t aot_f32_to_e5m2fnuz(float x)
{
    return aot_f32_to_f8(x, 2u, 16, 0x7fu, 0x80u, 0x80u, 1);
}
static inline float aot_round_e5m2fnuz(float x)
{
    return aot_e5m2fnuz_to_f32(aot_f32_to_e5m2fnuz(x));
}

/* ---- int4 / uint4, packed two per byte (element 2k in the low nibble) ---- */

static inline int8_t aot_load_i4(const uint8_t *p, int32_t i)
{
    uint32_t nibble = ((uint32_t)p[i >> 1] >> (((uint32_t)i & 1u) << 2)) & 15u;
    return (int8_t)((int32_t)(nibble ^ 8u) - 8);
}
static inline uint8_t aot_load_u4(const uint8_t *p, int32_t i)
{
    return (uint8_t)(((uint32_t)p[i >> 1] >> (((uint32_t)i & 1u) << 2)) & 15u);
}
static inline void aot_store_u4(uint8_t *p, int32_t i, uint8_t v)
{
    uint32_t shift = ((uint32_t)i & 1u) << 2;
    p[i >> 1] = (uint8_t)(((uint32_t)p[i >> 1] & ~(15u << shift)) | (((uint32_t)v & 15u) << shift));
}
static inline void aot_store_i4(uint8_t *p, int32_t i, int8_t v)
{
    aot_store_u4(p, i, (uint8_t)((uint32_t)v & 15u));
}

/* float -> int4 / uint4: truncate toward zero, saturate, NaN -> 0. */
static inline int8_t aot_sat_f32_i4(float x)
{
    return x != x ? 0 : x <= -8.0f ? -8 : x >= 7.0f ? 7 : (int8_t)x;
}
static inline uint8_t aot_sat_f32_u4(float x)
{
    return x != x ? 0u : x <= 0.0f ? 0u : x >= 15.0f ? 15u : (uint8_t)x;
}
static inline int8_t aot_sat_f64_i4(double x)
{
    return x != x ? 0 : x <= -8.0 ? -8 : x >= 7.0 ? 7 : (int8_t)x;
}
static inline uint8_t aot_sat_f64_u4(double x)
{
    return x != x ? 0u : x <= 0.0 ? 0u : x >= 15.0 ? 15u : (uint8_t)x;
}

/* ---- fast approximations (the FastMath pass) ----------------------------- */

/* TOPI's float32 definitions, operation for operation as the reference
 * interpreter computes them (aot/ir/ops/fast_math.py documents them and
 * their error bounds).  Each rounds every operation on its own (hence
 * -ffp-contract=off). */

/* e^x: the clamp, n = floor(x log2(e) + 1/2), Cephes' polynomial of
 * f = x - n ln(2), 2^n from its bits ((n + 127) << 23; n == -127 gives 0,
 * n == 128 gives +inf), and max(2^n e^f, x). */
static inline float aot_fast_exp_f32(float x)
{
    float xc = aot_max_f32(aot_min_f32(x, 88.37626647949219f), -88.37625885009766f);
    float n = floorf(xc * 1.4426950216293335f + 0.5f);
    float f = xc - n * 0.6931471824645996f;
    float y = ((((((0.00019875691214110702f * f + 0.001398199936375022f) * f + 0.008333452045917511f) * f + 0.04166579619050026f) * f + 0.1666666567325592f) * f + 0.5f)
               * f) * f + f + 1.0f;
    uint32_t bits = (uint32_t)(aot_sat_f32_i32(n) + 127) << 23;
    float ef;
    memcpy(&ef, &bits, sizeof ef);
    return aot_max_f32(ef * y, x);
}

/* tanh: Eigen's rational approximation on x clamped to [-9, 9]. */
static inline float aot_fast_tanh_f32(float x)
{
    float xc = aot_max_f32(-9.0f, aot_min_f32(9.0f, x));
    float x2 = xc * xc;
    float p = x2 * -2.7607683663038313e-16f + 2.0001879384549948e-13f;
    float q = x2 * 1.1982583600911312e-06f + 0.00011853470641653985f;
    p = x2 * p + -8.604671836165423e-11f;
    p = x2 * p + 5.122297253024044e-08f;
    p = x2 * p + 1.4857223504805006e-05f;
    p = x2 * p + 0.0006372619536705315f;
    p = x2 * p + 0.004893524572253227f;
    q = x2 * q + 0.0022684347350150347f;
    q = x2 * q + 0.0048935250379145145f;
    return xc * p / q;
}

/* erf: Eigen's rational approximation on x clamped to [-4, 4]. */
static inline float aot_fast_erf_f32(float x)
{
    float xc = aot_max_f32(aot_min_f32(x, 4.0f), -4.0f);
    float x2 = xc * xc;
    float p = x2 * -2.726142367404094e-10f + 2.7706814620387377e-08f;
    float q = x2 * -1.4566071513399947e-05f + -0.00021337404905352741f;
    p = x2 * p + -2.101023937939317e-06f;
    p = x2 * p + -5.692506238119677e-05f;
    p = x2 * p + -0.0007349906372837722f;
    p = x2 * p + -0.0029545999132096767f;
    p = x2 * p + -0.01609603315591812f;
    q = x2 * q + -0.001682827016338706f;
    q = x2 * q + -0.007373329252004623f;
    q = x2 * q + -0.014264739118516445f;
    return xc * p / q;
}

#endif /* AOT_KERNEL_HELPERS_H */
