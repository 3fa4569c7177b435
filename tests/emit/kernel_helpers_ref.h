/*
 * Reference implementation of the runtime helpers printed kernels call
 * (aot.emit.cprint.HELPERS and MACROS), for the printer's tests only.
 *
 * The real definitions belong in runtime_c/; this file pins down their
 * semantics (NumPy's, as the interpreter defines them) and is tested
 * against NumPy in tests/emit/test_cprint.py.  C99, no UB, warning-free
 * under -std=c99 -Wall -Wextra -Wpedantic.
 */
#ifndef AOT_KERNEL_HELPERS_REF_H
#define AOT_KERNEL_HELPERS_REF_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#define AOT_NAN_F32 ((float)NAN)
#define AOT_INF_F32 ((float)INFINITY)
#define AOT_NAN_F64 ((double)NAN)
#define AOT_INF_F64 ((double)INFINITY)

/* ---- integer division, modulo, min, max -------------------------------- */

#define AOT_REF_SIGNED(S, T, MIN)                                             \
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

#define AOT_REF_UNSIGNED(S, T)                                                \
    static inline T aot_div_##S(T a, T b) { return b == 0 ? 0 : (T)(a / b); } \
    static inline T aot_mod_##S(T a, T b) { return b == 0 ? 0 : (T)(a % b); } \
    static inline T aot_min_##S(T a, T b) { return a < b ? a : b; }           \
    static inline T aot_max_##S(T a, T b) { return a > b ? a : b; }

AOT_REF_SIGNED(i8, int8_t, INT8_MIN)
AOT_REF_SIGNED(i16, int16_t, INT16_MIN)
AOT_REF_SIGNED(i32, int32_t, INT32_MIN)
AOT_REF_SIGNED(i64, int64_t, INT64_MIN)
AOT_REF_UNSIGNED(u8, uint8_t)
AOT_REF_UNSIGNED(u16, uint16_t)
AOT_REF_UNSIGNED(u32, uint32_t)
AOT_REF_UNSIGNED(u64, uint64_t)

/* ---- float min, max (NaN-propagating, np.minimum / np.maximum, whose tie
 * rule differs for float16), floor division and modulo (NumPy's) ---------- */

#define AOT_REF_FLOAT(S, T, FMOD, FLOOR, COPYSIGN)                            \
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

AOT_REF_FLOAT(f32, float, fmodf, floorf, copysignf)
static inline float aot_min_f16(float a, float b) { return (a <= b || a != a) ? a : b; }
static inline float aot_max_f16(float a, float b) { return (a >= b || a != a) ? a : b; }
AOT_REF_FLOAT(f64, double, fmod, floor, copysign)

/* ---- saturating float -> integer --------------------------------------- */

#define AOT_REF_SAT(FS, FT, IS, IT, LO, HI)                                   \
    static inline IT aot_sat_##FS##_##IS(FT x)                                \
    {                                                                         \
        if (x != x) return 0;                                                 \
        if (x <= (FT)(LO)) return LO;                                         \
        if (x >= (FT)(HI)) return HI;                                         \
        return (IT)x;                                                         \
    }

#define AOT_REF_SAT_ALL(FS, FT)                                               \
    AOT_REF_SAT(FS, FT, i8, int8_t, INT8_MIN, INT8_MAX)                       \
    AOT_REF_SAT(FS, FT, i16, int16_t, INT16_MIN, INT16_MAX)                   \
    AOT_REF_SAT(FS, FT, i32, int32_t, INT32_MIN, INT32_MAX)                   \
    AOT_REF_SAT(FS, FT, i64, int64_t, INT64_MIN, INT64_MAX)                   \
    AOT_REF_SAT(FS, FT, u8, uint8_t, 0, UINT8_MAX)                            \
    AOT_REF_SAT(FS, FT, u16, uint16_t, 0, UINT16_MAX)                         \
    AOT_REF_SAT(FS, FT, u32, uint32_t, 0, UINT32_MAX)                         \
    AOT_REF_SAT(FS, FT, u64, uint64_t, 0, UINT64_MAX)

AOT_REF_SAT_ALL(f32, float)
AOT_REF_SAT_ALL(f64, double)

/* ---- binary16 ------------------------------------------------------------ */

static inline float aot_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exponent = (uint32_t)(h >> 10) & 0x1fu;
    uint32_t mantissa = (uint32_t)h & 0x3ffu;
    uint32_t bits;
    float f;
    if (exponent == 0x1fu) {
        bits = sign | 0x7f800000u | (mantissa << 13);
    } else if (exponent == 0) {
        f = (float)mantissa * 5.9604644775390625e-08f; /* exact: m * 2^-24 */
        memcpy(&bits, &f, sizeof bits);
        bits |= sign;
    } else {
        bits = sign | ((exponent + 112u) << 23) | (mantissa << 13);
    }
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* Round to nearest even a magnitude below the binary16 normal range:
 * value = m * 2^-shift in units of 2^-24. */
static inline uint16_t aot_ref_f16_subnormal(uint64_t m, unsigned shift)
{
    uint64_t r = m >> shift;
    uint64_t rem = m & ((UINT64_C(1) << shift) - 1u);
    uint64_t half = UINT64_C(1) << (shift - 1u);
    if (rem > half || (rem == half && (r & 1u))) r += 1u;
    return (uint16_t)r;
}

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
    return (uint16_t)(sign | aot_ref_f16_subnormal((magnitude & 0x7fffffu) | 0x800000u,
                                                   126u - exponent));
}

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
    return (uint16_t)(sign | aot_ref_f16_subnormal(
        (magnitude & UINT64_C(0xfffffffffffff)) | (UINT64_C(1) << 52),
        (unsigned)(1051u - exponent)));
}

static inline float aot_round_f16(float x)
{
    return aot_f16_to_f32(aot_f32_to_f16(x));
}

#endif
