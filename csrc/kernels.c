/* bcast's compiled loops, written once and compiled per instruction set (see kernels.h).
 *
 * The loops are plain C that the compiler vectorises: one loop per operand pattern
 * (both contiguous, one a repeated scalar, any strides), so that the common patterns get
 * straight-line SIMD code with no stride arithmetic. Results match NumPy's loops:
 * - integers wrap (the file is compiled with -fwrapv), integer Div truncates toward zero
 *   and counts zero divisors (the caller raises), INT_MIN / -1 gives INT_MIN as NumPy's does;
 * - float16 and bfloat16 are computed in float32 and rounded to nearest even once per
 *   element, as NumPy and ml_dtypes do (float16 in converted blocks: see HALF_BINARY);
 *   every other float op is one IEEE operation;
 * - integer pow wraps as C's multiply does, and follows ONNX for negative exponents;
 * - maximum/minimum propagate a NaN of either operand and, on a tie, return the second
 *   operand (the first for float16): NumPy's rules, which decide the sign of a zero result;
 * - sums accumulate float32 in float64 along the contiguous axis (NumPy: pairwise in float32)
 *   and in 16 independent lanes, so they are at least as accurate as NumPy's.
 * Operands must be aligned to their item size (module.c's caller checks).
 */
#include "kernels.h"

#include <math.h>
#include <string.h>
#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#endif

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define FN(name) CAT(name, BC_ISA)
#define IVDEP _Pragma("GCC ivdep")

#if defined(__FLT16_MAX__)
typedef _Float16 f16;
#define HAVE_F16 1
#else
typedef uint16_t f16;
#define HAVE_F16 0
#endif

static inline float bf_load(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static inline uint16_t bf_store(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    /* a NaN stays a quiet NaN of its sign; everything else rounds to nearest, ties to even */
    uint32_t nan = (u & 0x7fffffffu) > 0x7f800000u;
    uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    uint32_t quiet = ((u >> 16) & 0x8000u) | 0x7fc0u;
    return (uint16_t)(nan ? quiet : rounded);
}

#define ID(v) (v)
#define TO_BOOL(v) ((uint8_t)((v) != 0))
#define TRUTH(v) ((v) != 0)

/* one binary loop: T operands, OT output, computed in CT; x and y name the operands in EXPR */
#define BINARY(NAME, T, OT, CT, LOAD, STORE, EXPR)                                                  \
    static bc_int NAME(char *o_, const char *a_, const char *b_, bc_int n, bc_int sa, bc_int sb) { \
        OT *o = (OT *)o_;                                                                         \
        if (sa == (bc_int)sizeof(T) && sb == (bc_int)sizeof(T)) {                                 \
            const T *a = (const T *)a_, *b = (const T *)b_;                                        \
            IVDEP for (bc_int i = 0; i < n; i++) {                                                 \
                CT x = LOAD(a[i]), y = LOAD(b[i]);                                                 \
                o[i] = STORE(EXPR);                                                                \
            }                                                                                      \
        } else if (sa == (bc_int)sizeof(T) && sb == 0) {                                          \
            const T *a = (const T *)a_;                                                            \
            const CT y = LOAD(*(const T *)b_);                                                     \
            IVDEP for (bc_int i = 0; i < n; i++) {                                                 \
                CT x = LOAD(a[i]);                                                                 \
                o[i] = STORE(EXPR);                                                                \
            }                                                                                      \
        } else if (sa == 0 && sb == (bc_int)sizeof(T)) {                                          \
            const T *b = (const T *)b_;                                                            \
            const CT x = LOAD(*(const T *)a_);                                                     \
            IVDEP for (bc_int i = 0; i < n; i++) {                                                 \
                CT y = LOAD(b[i]);                                                                 \
                o[i] = STORE(EXPR);                                                                \
            }                                                                                      \
        } else {                                                                                   \
            for (bc_int i = 0; i < n; i++) {                                                       \
                CT x = LOAD(*(const T *)(a_ + i * sa)), y = LOAD(*(const T *)(b_ + i * sb));       \
                o[i] = STORE(EXPR);                                                                \
            }                                                                                      \
        }                                                                                          \
        return 0;                                                                                  \
    }

/* integer division: truncated toward zero; a zero divisor is counted, and gives 0 */
#define INTDIV(NAME, T, UT, QUOT)                                                                  \
    static bc_int NAME(char *o_, const char *a_, const char *b_, bc_int n, bc_int sa, bc_int sb) { \
        T *o = (T *)o_;                                                                           \
        bc_int zeros = 0;                                                                          \
        for (bc_int i = 0; i < n; i++) {                                                           \
            T x = *(const T *)(a_ + i * sa), y = *(const T *)(b_ + i * sb);                        \
            zeros += (y == 0);                                                                     \
            T d = y == 0 ? (T)1 : y;                                                               \
            o[i] = d == (T)-1 ? (T)((UT)0 - (UT)x) : QUOT(x, d);                                   \
        }                                                                                          \
        return zeros;                                                                              \
    }

#define QC(x, d) ((x) / (d))

INTDIV(div_i32_generic, int32_t, uint32_t, QC)
INTDIV(div_i64, int64_t, uint64_t, QC)

/* int32 division vectorised: contiguous and scalar-divisor runs go through double, where int32
 * quotients are exact (|error| < 1/|d|) and which vectorises where idiv does not; other strides
 * take the generic loop */
static bc_int div_i32(char *o_, const char *a_, const char *b_, bc_int n, bc_int sa, bc_int sb) {
    int32_t *o = (int32_t *)o_;
    bc_int zeros = 0;
    if (sa == 4 && (sb == 4 || sb == 0)) {
        const int32_t *a = (const int32_t *)a_;
        if (sb == 0) {
            int32_t y = *(const int32_t *)b_;
            if (y == 0) return div_i32_generic(o_, a_, b_, n, sa, sb);
            if (y == -1) {
                IVDEP for (bc_int i = 0; i < n; i++) o[i] = (int32_t)(0u - (uint32_t)a[i]);
                return 0;
            }
            const double dy = (double)y;
            IVDEP for (bc_int i = 0; i < n; i++) o[i] = (int32_t)((double)a[i] / dy);
            return 0;
        }
        const int32_t *b = (const int32_t *)b_;
        IVDEP for (bc_int i = 0; i < n; i++) {
            /* branch-free, so that it vectorises: a zero divisor divides by 1 (and is counted) */
            int32_t y = b[i], z = y == 0;
            zeros += z;
            double q = (double)a[i] / (double)(y + z);
            /* INT_MIN / -1 = 2**31: wraps to INT_MIN, as NumPy's does (the cast would be undefined) */
            o[i] = (int32_t)(q >= 2147483648.0 ? -2147483648.0 : q);
        }
        return zeros;
    }
    return div_i32_generic(o_, a_, b_, n, sa, sb);
}

/* maximum and minimum with NumPy's rule: a NaN in x wins, then a NaN in y (the comparison fails), ties give y */
#define FMAX(x, y) (isnan(x) ? (x) : ((x) > (y) ? (x) : (y)))
#define FMIN(x, y) (isnan(x) ? (x) : ((x) < (y) ? (x) : (y)))
/* NumPy's float16 loops keep x on a tie (max(-0, +0) is -0), unlike its float32 and float64 ones */
#define HMAX(x, y) ((isnan(x) || (x) >= (y)) ? (x) : (y))
#define HMIN(x, y) ((isnan(x) || (x) <= (y)) ? (x) : (y))
#define IMAX(x, y) ((x) > (y) ? (x) : (y))
#define IMIN(x, y) ((x) < (y) ? (x) : (y))

/* the arithmetic family of one float type, each op a LOOP (FLOAT_LOOP, or HALF_LOOP for float16); the
 * last argument says whether the expression also computes on vectors of floats (GCC's vector types) */
#define FLOAT_OPS(LOOP, SFX, T, CT, LOAD, STORE, POWF, MAX, MIN)                  \
    LOOP(add_##SFX, T, T, CT, LOAD, STORE, x + y, 1)                              \
    LOOP(sub_##SFX, T, T, CT, LOAD, STORE, x - y, 1)                              \
    LOOP(mul_##SFX, T, T, CT, LOAD, STORE, x * y, 1)                              \
    LOOP(div_##SFX, T, T, CT, LOAD, STORE, x / y, 1)                              \
    LOOP(pow_##SFX, T, T, CT, LOAD, STORE, POWF(x, y), 0)                         \
    LOOP(max_##SFX, T, T, CT, LOAD, STORE, MAX(x, y), 0)                          \
    LOOP(min_##SFX, T, T, CT, LOAD, STORE, MIN(x, y), 0)                          \
    LOOP(gt_##SFX, T, uint8_t, CT, LOAD, (uint8_t), x > y, 0)                     \
    LOOP(ge_##SFX, T, uint8_t, CT, LOAD, (uint8_t), x >= y, 0)                    \
    LOOP(lt_##SFX, T, uint8_t, CT, LOAD, (uint8_t), x < y, 0)                     \
    LOOP(le_##SFX, T, uint8_t, CT, LOAD, (uint8_t), x <= y, 0)                    \
    LOOP(eq_##SFX, T, uint8_t, CT, LOAD, (uint8_t), x == y, 0)
#define FLOAT_LOOP(NAME, T, OT, CT, LOAD, STORE, EXPR, V) BINARY(NAME, T, OT, CT, LOAD, STORE, EXPR)
/* EXPR on vectors where it computes on them (V = 1, the float16 and bfloat16 vector passes); a
 * placeholder never run otherwise */
#define VEC_1(EXPR) (EXPR)
#define VEC_0(EXPR) (x)

#define INT_OPS(SFX, T)                                         \
    BINARY(add_##SFX, T, T, T, ID, ID, x + y)                   \
    BINARY(sub_##SFX, T, T, T, ID, ID, x - y)                   \
    BINARY(mul_##SFX, T, T, T, ID, ID, x * y)                   \
    BINARY(max_##SFX, T, T, T, ID, ID, IMAX(x, y))              \
    BINARY(min_##SFX, T, T, T, ID, ID, IMIN(x, y))              \
    BINARY(gt_##SFX, T, uint8_t, T, ID, (uint8_t), x > y)       \
    BINARY(ge_##SFX, T, uint8_t, T, ID, (uint8_t), x >= y)      \
    BINARY(lt_##SFX, T, uint8_t, T, ID, (uint8_t), x < y)       \
    BINARY(le_##SFX, T, uint8_t, T, ID, (uint8_t), x <= y)      \
    BINARY(eq_##SFX, T, uint8_t, T, ID, (uint8_t), x == y)      \
    BINARY(band_##SFX, T, T, T, ID, ID, x &y)                   \
    BINARY(bor_##SFX, T, T, T, ID, ID, x | y)                   \
    BINARY(bxor_##SFX, T, T, T, ID, ID, x ^ y)

#define POWF32(x, y) powf(x, y)
#define POWF64(x, y) pow(x, y)

FLOAT_OPS(FLOAT_LOOP, f32, float, float, ID, ID, POWF32, FMAX, FMIN)
FLOAT_OPS(FLOAT_LOOP, f64, double, double, ID, ID, POWF64, FMAX, FMIN)

#if HAVE_F16
/* float16 runs through float32 blocks: the compiler does not vectorise _Float16 conversions
 * (one vcvtph2ps per element), so whole blocks are converted with F16C / AVX-512 instructions,
 * computed in float32 by a loop that vectorises, and rounded back (to nearest even) the same way */
#define HB 256

static void h_load(float *d, const char *s, bc_int n, bc_int st) {
    bc_int i = 0;
    if (st == 2) {
#if defined(__AVX512F__)
        for (; i + 16 <= n; i += 16)
            _mm512_storeu_ps(d + i, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(s + 2 * i))));
#elif defined(__F16C__)
        for (; i + 8 <= n; i += 8)
            _mm256_storeu_ps(d + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(s + 2 * i))));
#endif
        for (; i < n; i++) d[i] = (float)((const f16 *)s)[i];
    } else if (st == 0) {
        const float v = (float)*(const f16 *)s;
        for (; i < n; i++) d[i] = v;
    } else {
        for (; i < n; i++) d[i] = (float)*(const f16 *)(s + i * st);
    }
}

/* conversions to half keep their exceptions (overflow, underflow): the caller reports them as NumPy's
 * own conversion does */
static void h_store(f16 *o, const float *r, bc_int n) {
    bc_int i = 0;
#if defined(__AVX512F__)
    for (; i + 16 <= n; i += 16)
        _mm256_storeu_si256((__m256i *)(o + i),
                            _mm512_cvtps_ph(_mm512_loadu_ps(r + i), _MM_FROUND_TO_NEAREST_INT));
#elif defined(__F16C__)
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(o + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(r + i), _MM_FROUND_TO_NEAREST_INT));
#endif
    for (; i < n; i++) o[i] = (f16)r[i];
}

/* Whole vectors of float16 converted in registers (F16C / AVX-512), for the ops whose expression
 * computes on vectors: one pass, where the blocks below take three (measured: 4 MB float16 div
 * column in cache, 0.39 ms in blocks, torch 0.26 ms). The same float32 operations, so the same bits. */
#if defined(__AVX512F__)
#define HV 16
typedef float hvec __attribute__((vector_size(64)));
static inline hvec hv_load(const f16 *p) { return (hvec)_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p)); }
static inline void hv_store(f16 *o, hvec v) {
    _mm256_storeu_si256((__m256i *)o, _mm512_cvtps_ph((__m512)v, _MM_FROUND_TO_NEAREST_INT));
}
#elif defined(__F16C__)
#define HV 8
typedef float hvec __attribute__((vector_size(32)));
static inline hvec hv_load(const f16 *p) { return (hvec)_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p)); }
static inline void hv_store(f16 *o, hvec v) {
    _mm_storeu_si128((__m128i *)o, _mm256_cvtps_ph((__m256)v, _MM_FROUND_TO_NEAREST_INT));
}
#else
#define HV 0
typedef float hvec;
static inline hvec hv_load(const f16 *p) { return (float)*p; }
static inline void hv_store(f16 *o, hvec v) { *o = (f16)v; }
#endif
static inline hvec hv_splat(const char *p) {
    hvec v;
    for (int j = 0; j < (HV ? HV : 1); j++) ((float *)&v)[j] = (float)*(const f16 *)p;
    return v;
}
/* one pass over n elements of float16 operands of strides 2 or 0 (not both 0) */
#define HV_PASS(V, EXPR, SA, SB)                                                                  \
    for (; i + HV <= n; i += HV) {                                                                \
        hvec x = SA ? hv_load(a + i) : xs, y = SB ? hv_load(b + i) : ys;                          \
        hv_store(o + i, VEC_##V(EXPR));                                                           \
    }                                                                                             \
    for (; i < n; i++) {                                                                          \
        float x = (float)a[SA ? i : 0], y = (float)b[SB ? i : 0];                                 \
        o[i] = (f16)(EXPR);                                                                       \
    }

/* one float16 loop; a repeated operand is converted once, into a block that stays filled */
#define HALF_BINARY(NAME, OT, EXPR, V)                                                             \
    static bc_int NAME(char *o_, const char *a_, const char *b_, bc_int n, bc_int sa, bc_int sb) { \
        if (V && HV && (sa == 2 || sa == 0) && (sb == 2 || sb == 0) && (sa | sb)) {               \
            f16 *o = (f16 *)o_;                                                                   \
            const f16 *a = (const f16 *)a_, *b = (const f16 *)b_;                                 \
            const hvec xs = hv_splat(a_), ys = hv_splat(b_);                                      \
            bc_int i = 0;                                                                         \
            if (sa && sb) {                                                                       \
                HV_PASS(V, EXPR, 1, 1)                                                            \
            } else if (sa) {                                                                      \
                HV_PASS(V, EXPR, 1, 0)                                                            \
            } else {                                                                              \
                HV_PASS(V, EXPR, 0, 1)                                                            \
            }                                                                                     \
            return 0;                                                                             \
        }                                                                                         \
        float xa[HB], xb[HB], r[HB];                                                              \
        OT *o = (OT *)o_;                                                                         \
        if (sa == 0) h_load(xa, a_, HB, 0);                                                       \
        if (sb == 0) h_load(xb, b_, HB, 0);                                                       \
        for (bc_int s = 0; s < n; s += HB) {                                                      \
            const bc_int m = n - s < HB ? n - s : HB;                                             \
            if (sa) h_load(xa, a_ + s * sa, m, sa);                                               \
            if (sb) h_load(xb, b_ + s * sb, m, sb);                                               \
            IVDEP for (bc_int i = 0; i < m; i++) {                                                \
                float x = xa[i], y = xb[i];                                                       \
                r[i] = (float)(EXPR);                                                             \
            }                                                                                     \
            HALF_OUT_##OT(o + s, r, m);                                                           \
        }                                                                                         \
        return 0;                                                                                 \
    }
#define HALF_OUT_f16(o, r, m) h_store(o, r, m)
#define HALF_OUT_uint8_t(o, r, m) IVDEP for (bc_int i = 0; i < m; i++)(o)[i] = (uint8_t)((r)[i] != 0.0f)

/* FLOAT_OPS's loop for float16: the operands' type, LOAD and STORE are the blocks' own */
#define HALF_LOOP(NAME, T, OT, CT, LOAD, STORE, EXPR, V) HALF_BINARY(NAME, OT, EXPR, V)

FLOAT_OPS(HALF_LOOP, f16, f16, float, ID, ID, POWF32, HMAX, HMIN)
#endif
/* bfloat16 in whole vectors, without a widening or narrowing instruction: a vector of 32-bit
 * lanes holds two bfloat16 each, the even element in the low half; shifted up (even) or masked
 * (odd) each half is already a float32. An elementwise op computes the even and the odd elements
 * apart, and bf_store's rounding leaves each result in its lane's upper half, where the odd one
 * stays and the even one moves down. Per element the same float32 operation and the same rounding
 * as bf_load / bf_store, so the same bits; on 64 KB in cache, one thread, mul takes 5.4 us where
 * the element loop (which GCC vectorises with widening and narrowing moves) takes 11.4 us, and
 * float16's 5.3 us. */
#if defined(__AVX512F__)
#define BV 64
#elif defined(__AVX2__)
#define BV 32
#else
#define BV 16
#endif
#define BN (BV / 2) /* bfloat16 elements per vector */
typedef uint32_t bvu __attribute__((vector_size(BV)));
typedef int32_t bvi __attribute__((vector_size(BV)));
typedef float bvf __attribute__((vector_size(BV)));

static inline bvu bv_load(const uint16_t *p) {
    bvu v;
    memcpy(&v, p, BV);
    return v;
}
/* bf_store's rounding of every lane that holds no NaN, the result in the lane's upper 16 bits: to
 * nearest even */
static inline bvu bv_round_number(bvf f) {
    const bvu u = (bvu)f;
    return u + 0x7fffu + ((u >> 16) & 1u);
}
/* bf_store's rounding of every lane, a NaN to the quiet NaN of its sign: the select costs as much
 * as the rest of the pass, and one comparison of both halves (bv_any_nan) tells when it is needed */
static inline bvu bv_round(bvf f) {
    const bvu u = (bvu)f;
    const bvu nan = (bvu)((bvi)(u & 0x7fffffffu) > 0x7f800000);
    const bvu quiet = (u & 0x80000000u) | 0x7fc00000u;
    return (bv_round_number(f) & ~nan) | (quiet & nan);
}
static inline int bv_any_nan(bvf a, bvf b) {
#if defined(__AVX512F__)
    return _mm512_cmp_ps_mask((__m512)a, (__m512)b, _CMP_UNORD_Q) != 0;
#elif defined(__AVX__)
    return _mm256_movemask_ps(_mm256_cmp_ps((__m256)a, (__m256)b, _CMP_UNORD_Q)) != 0;
#elif defined(__SSE2__)
    return _mm_movemask_ps(_mm_cmpunord_ps((__m128)a, (__m128)b)) != 0;
#else
    (void)a, (void)b;
    return 1;
#endif
}
/* every lane of value bf_load(h) (adding it to a zero vector would turn -0 into +0) */
static inline bvf bv_splat(uint16_t h) {
    bvf v;
    for (int j = 0; j < BV / 4; j++) v[j] = bf_load(h);
    return v;
}
#define BV_EVEN(v) ((bvf)((v) << 16))
#define BV_ODD(v) ((bvf)((v) & 0xffff0000u))
/* one pass over n elements of bfloat16 operands of strides 2 or 0 (not both 0) */
#define BF_PASS(EXPR, SA, SB)                                                                     \
    for (; i + BN <= n; i += BN) {                                                                \
        const bvu va = SA ? bv_load(a + i) : (bvu){0}, vb = SB ? bv_load(b + i) : (bvu){0};       \
        bvf x = SA ? BV_EVEN(va) : xs, y = SB ? BV_EVEN(vb) : ys;                                 \
        const bvf even = EXPR;                                                                    \
        x = SA ? BV_ODD(va) : xs, y = SB ? BV_ODD(vb) : ys;                                       \
        const bvf odd = EXPR;                                                                     \
        bvu packed;                                                                               \
        if (__builtin_expect(bv_any_nan(even, odd), 0))                                           \
            packed = (bv_round(odd) & 0xffff0000u) | (bv_round(even) >> 16);                      \
        else                                                                                      \
            packed = (bv_round_number(odd) & 0xffff0000u) | (bv_round_number(even) >> 16);        \
        memcpy(o + i, &packed, BV);                                                               \
    }                                                                                             \
    for (; i < n; i++) {                                                                          \
        const float x = bf_load(a[SA ? i : 0]), y = bf_load(b[SB ? i : 0]);                       \
        o[i] = bf_store(EXPR);                                                                    \
    }

/* one bfloat16 loop: contiguous or repeated operands of the ops that compute on vectors (V = 1)
 * take the vector pass, the rest BINARY's loops */
#define BF_LOOP(NAME, T, OT, CT, LOAD, STORE, EXPR, V)                                             \
    BINARY(NAME##_elements, T, OT, CT, LOAD, STORE, EXPR)                                          \
    static bc_int NAME(char *o_, const char *a_, const char *b_, bc_int n, bc_int sa, bc_int sb) { \
        if (!(V && (sa == 2 || sa == 0) && (sb == 2 || sb == 0) && (sa | sb)))                    \
            return NAME##_elements(o_, a_, b_, n, sa, sb);                                        \
        uint16_t *o = (uint16_t *)o_;                                                             \
        const uint16_t *a = (const uint16_t *)a_, *b = (const uint16_t *)b_;                      \
        const bvf xs = bv_splat(*a), ys = bv_splat(*b);                                           \
        bc_int i = 0;                                                                             \
        if (sa && sb) {                                                                           \
            BF_PASS(VEC_##V(EXPR), 1, 1)                                                          \
        } else if (sa) {                                                                          \
            BF_PASS(VEC_##V(EXPR), 1, 0)                                                          \
        } else {                                                                                  \
            BF_PASS(VEC_##V(EXPR), 0, 1)                                                          \
        }                                                                                         \
        return 0;                                                                                 \
    }

FLOAT_OPS(BF_LOOP, bf16, uint16_t, float, bf_load, bf_store, POWF32, FMAX, FMIN)
INT_OPS(i32, int32_t)
INT_OPS(i64, int64_t)

/* integer pow, ONNX's rule: exponents >= 0 by repeated squaring, wrapping like C's multiply (as
 * NumPy's integer power); a negative exponent gives the real power truncated: 1 for x = 1, -1 or 1
 * for x = -1 (odd or even), else 0. 0 to a negative power is counted (the caller raises) and gives 0.
 * Runs of IB elements are squared as many times as their largest exponent has bits, each step a
 * loop over the run that vectorises (integer powers have no SIMD instruction) */
#define IB 256
#define INTPOW(NAME, T, UT)                                                                        \
    static bc_int NAME(char *o_, const char *a_, const char *b_, bc_int n, bc_int sa, bc_int sb) { \
        T *o = (T *)o_;                                                                           \
        UT base[IB], e[IB], r[IB];                                                                \
        if (sb == 0 && *(const T *)b_ >= 0) {                                                     \
            /* one exponent for the whole run (the scalar, column and channel patterns): the      \
             * squarings and products it needs are known, and none of them needs a select */      \
            const UT y = (UT) * (const T *)b_;                                                    \
            for (bc_int s = 0; s < n; s += IB) {                                                  \
                const bc_int m = n - s < IB ? n - s : IB;                                         \
                const char *pa = a_ + s * sa;                                                     \
                if (sa == (bc_int)sizeof(T)) {                                                    \
                    IVDEP for (bc_int i = 0; i < m; i++) base[i] = (UT)((const T *)pa)[i];        \
                } else {                                                                          \
                    for (bc_int i = 0; i < m; i++) base[i] = (UT) * (const T *)(pa + i * sa);     \
                }                                                                                 \
                IVDEP for (bc_int i = 0; i < m; i++) r[i] = 1;                                    \
                for (UT k = y; k; k >>= 1) {                                                      \
                    if (k & 1) IVDEP for (bc_int i = 0; i < m; i++) r[i] *= base[i];              \
                    if (k >> 1) IVDEP for (bc_int i = 0; i < m; i++) base[i] *= base[i];          \
                }                                                                                 \
                IVDEP for (bc_int i = 0; i < m; i++) o[s + i] = (T)r[i];                          \
            }                                                                                     \
            return 0;                                                                             \
        }                                                                                         \
        bc_int bad = 0;                                                                           \
        for (bc_int s = 0; s < n; s += IB) {                                                      \
            const bc_int m = n - s < IB ? n - s : IB;                                             \
            const char *pa = a_ + s * sa, *pb = b_ + s * sb;                                      \
            UT most = 0;                                                                          \
            int negative = 0;                                                                     \
            for (bc_int i = 0; i < m; i++) {                                                      \
                T y = *(const T *)(pb + i * sb);                                                  \
                base[i] = (UT) * (const T *)(pa + i * sa);                                        \
                negative |= y < 0;                                                                \
                e[i] = y < 0 ? 0 : (UT)y;                                                         \
                r[i] = 1;                                                                         \
                most |= e[i];                                                                     \
            }                                                                                     \
            for (; most; most >>= 1) {                                                            \
                IVDEP for (bc_int i = 0; i < m; i++) {                                            \
                    r[i] *= (e[i] & 1) ? base[i] : (UT)1;                                         \
                    base[i] *= base[i];                                                           \
                    e[i] >>= 1;                                                                   \
                }                                                                                 \
            }                                                                                     \
            if (negative) {                                                                       \
                for (bc_int i = 0; i < m; i++) {                                                  \
                    T y = *(const T *)(pb + i * sb), x = *(const T *)(pa + i * sa);               \
                    if (y < 0) {                                                                  \
                        bad += x == 0;                                                            \
                        r[i] = x == 1 ? 1 : x == -1 ? ((y & 1) ? (UT)-1 : 1) : 0;                 \
                    }                                                                             \
                }                                                                                 \
            }                                                                                     \
            IVDEP for (bc_int i = 0; i < m; i++) o[s + i] = (T)r[i];                              \
        }                                                                                         \
        return bad;                                                                               \
    }

INTPOW(pow_i32, int32_t, uint32_t)
INTPOW(pow_i64, int64_t, uint64_t)

/* bools: comparisons by value, logical ops by truth (NumPy reads any nonzero byte as True) */
BINARY(gt_b, uint8_t, uint8_t, int, TRUTH, (uint8_t), x > y)
BINARY(ge_b, uint8_t, uint8_t, int, TRUTH, (uint8_t), x >= y)
BINARY(lt_b, uint8_t, uint8_t, int, TRUTH, (uint8_t), x < y)
BINARY(le_b, uint8_t, uint8_t, int, TRUTH, (uint8_t), x <= y)
BINARY(eq_b, uint8_t, uint8_t, int, TRUTH, (uint8_t), x == y)
BINARY(and_b, uint8_t, uint8_t, int, TRUTH, (uint8_t), x & y)
BINARY(or_b, uint8_t, uint8_t, int, TRUTH, (uint8_t), x | y)
BINARY(xor_b, uint8_t, uint8_t, int, TRUTH, (uint8_t), x ^ y)

/* where: the condition's truth picks x or y; contiguous and scalar runs of x and y vectorise */
#define WHERE(NAME, T)                                                                                      \
    static void NAME(char *o_, const char *c, const char *x_, const char *y_, bc_int n, bc_int sc, bc_int sx, \
                     bc_int sy) {                                                                         \
        T *o = (T *)o_;                                                                                   \
        const bc_int it = (bc_int)sizeof(T);                                                              \
        if (sc == 1 && sx == it && sy == it) {                                                            \
            const T *x = (const T *)x_, *y = (const T *)y_;                                                \
            IVDEP for (bc_int i = 0; i < n; i++) o[i] = c[i] ? x[i] : y[i];                                \
        } else if (sc == 1 && sx == it && sy == 0) {                                                      \
            const T *x = (const T *)x_;                                                                   \
            const T y = *(const T *)y_;                                                                   \
            IVDEP for (bc_int i = 0; i < n; i++) o[i] = c[i] ? x[i] : y;                                   \
        } else if (sc == 1 && sx == 0 && sy == it) {                                                      \
            const T *y = (const T *)y_;                                                                   \
            const T x = *(const T *)x_;                                                                   \
            IVDEP for (bc_int i = 0; i < n; i++) o[i] = c[i] ? x : y[i];                                   \
        } else if (sc == 1 && sx == 0 && sy == 0) {                                                       \
            const T x = *(const T *)x_, y = *(const T *)y_;                                                \
            IVDEP for (bc_int i = 0; i < n; i++) o[i] = c[i] ? x : y;                                      \
        } else if (sc == 0) { /* one condition for the run: a copy of x or of y */                        \
            const char *src = *c ? x_ : y_;                                                               \
            bc_int s = *c ? sx : sy;                                                                      \
            if (s == it) {                                                                                \
                memcpy(o, src, (size_t)(n * it));                                                         \
            } else {                                                                                      \
                for (bc_int i = 0; i < n; i++) o[i] = *(const T *)(src + i * s);                          \
            }                                                                                             \
        } else {                                                                                          \
            for (bc_int i = 0; i < n; i++)                                                                \
                o[i] = c[i * sc] ? *(const T *)(x_ + i * sx) : *(const T *)(y_ + i * sy);                 \
        }                                                                                                 \
    }

WHERE(where1, uint8_t)
WHERE(where2, uint16_t)
WHERE(where4, uint32_t)
WHERE(where8, uint64_t)

#define COPY(NAME, T)                                                       \
    static void NAME(char *o_, const char *a_, bc_int n, bc_int sa) {       \
        T *o = (T *)o_;                                                     \
        if (sa == (bc_int)sizeof(T)) {                                      \
            memcpy(o, a_, (size_t)n * sizeof(T));                           \
        } else if (sa == 0) {                                               \
            const T v = *(const T *)a_;                                     \
            IVDEP for (bc_int i = 0; i < n; i++) o[i] = v;                  \
        } else {                                                            \
            for (bc_int i = 0; i < n; i++) o[i] = *(const T *)(a_ + i * sa); \
        }                                                                   \
    }

COPY(copy1, uint8_t)
COPY(copy2, uint16_t)
COPY(copy4, uint32_t)
COPY(copy8, uint64_t)

/* sums: acc[k] (+)= sum over p, r of g[p*sp + k*sk + r*sr] is split by the caller into calls over
 * p ranges; here g is (nk, nr) at one p, and a row pattern (nr = 1) adds whole rows at once */
#define LANES 16
#define SUM(NAME, T, AT, CT, LOAD)                                                                          \
    static void NAME(char *acc_, const char *g, bc_int nk, bc_int nr, bc_int sk, bc_int sr, int add) {    \
        AT *acc = (AT *)acc_;                                                                             \
        if (nr == 1 && sk == (bc_int)sizeof(T)) { /* the row pattern: one vector add of a row */          \
            const T *row = (const T *)g;                                                                  \
            if (add) {                                                                                    \
                IVDEP for (bc_int k = 0; k < nk; k++) acc[k] = (AT)(acc[k] + (AT)LOAD(row[k]));           \
            } else {                                                                                      \
                IVDEP for (bc_int k = 0; k < nk; k++) acc[k] = (AT)LOAD(row[k]);                          \
            }                                                                                             \
            return;                                                                                       \
        }                                                                                                 \
        for (bc_int k = 0; k < nk; k++) {                                                                 \
            const char *p = g + k * sk;                                                                   \
            CT s = 0;                                                                                     \
            bc_int r = 0;                                                                                 \
            if (sr == (bc_int)sizeof(T) && nr >= LANES) {                                                 \
                const T *v = (const T *)p;                                                                \
                CT lane[LANES] = {0};                                                                     \
                for (; r + LANES <= nr; r += LANES)                                                       \
                    for (int j = 0; j < LANES; j++) lane[j] += (CT)LOAD(v[r + j]);                        \
                for (int w = LANES / 2; w > 0; w /= 2) /* pairwise: each lane holds a similar share */    \
                    for (int j = 0; j < w; j++) lane[j] += lane[j + w];                                   \
                s = lane[0];                                                                              \
            }                                                                                             \
            for (; r < nr; r++) s += (CT)LOAD(*(const T *)(p + r * sr));                                  \
            acc[k] = add ? (AT)(acc[k] + (AT)s) : (AT)s;                                                  \
        }                                                                                                 \
    }

SUM(sum_f32, float, float, double, ID)
SUM(sum_f64, double, double, double, ID)
#if HAVE_F16
/* float16 sums convert blocks (see h_load) and add them in float32 lanes, as SUM does */
static void sum_f16(char *acc_, const char *g, bc_int nk, bc_int nr, bc_int sk, bc_int sr, int add) {
    float *acc = (float *)acc_;
    float v[HB];
    if (nr == 1) { /* the row pattern: rows are added whole */
        for (bc_int k0 = 0; k0 < nk; k0 += HB) {
            const bc_int m = nk - k0 < HB ? nk - k0 : HB;
            h_load(v, g + k0 * sk, m, sk);
            if (add) {
                IVDEP for (bc_int i = 0; i < m; i++) acc[k0 + i] += v[i];
            } else {
                IVDEP for (bc_int i = 0; i < m; i++) acc[k0 + i] = v[i];
            }
        }
        return;
    }
    for (bc_int k = 0; k < nk; k++) {
        const char *p = g + k * sk;
        float lane[LANES] = {0}, tail = 0;
        bc_int start = 0;
#if defined(__AVX512F__)
        if (sr == 2) { /* contiguous rows: converted and added in registers, 64 lanes */
            __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
            for (; start + 64 <= nr; start += 64) {
                const __m256i *q = (const __m256i *)(p + 2 * start);
                s0 = _mm512_add_ps(s0, _mm512_cvtph_ps(_mm256_loadu_si256(q)));
                s1 = _mm512_add_ps(s1, _mm512_cvtph_ps(_mm256_loadu_si256(q + 1)));
                s2 = _mm512_add_ps(s2, _mm512_cvtph_ps(_mm256_loadu_si256(q + 2)));
                s3 = _mm512_add_ps(s3, _mm512_cvtph_ps(_mm256_loadu_si256(q + 3)));
            }
            _mm512_storeu_ps(lane, _mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
        }
#endif
        for (bc_int r0 = start; r0 < nr; r0 += HB) {
            const bc_int m = nr - r0 < HB ? nr - r0 : HB;
            h_load(v, p + r0 * sr, m, sr);
            bc_int r = 0;
            for (; r + LANES <= m; r += LANES)
                for (int j = 0; j < LANES; j++) lane[j] += v[r + j];
            for (; r < m; r++) tail += v[r];
        }
        for (int w = LANES / 2; w > 0; w /= 2)
            for (int j = 0; j < w; j++) lane[j] += lane[j + w];
        acc[k] = add ? acc[k] + (lane[0] + tail) : lane[0] + tail;
    }
}
#endif
SUM(sum_bf16, uint16_t, float, float, bf_load)
/* integer sums wrap in the integer's own width, as NumPy's add.reduce with dtype= the input's */
SUM(sum_i32, int32_t, int32_t, uint32_t, ID)
SUM(sum_i64, int64_t, int64_t, uint64_t, ID)

/* non-temporal stores: the output goes to memory without first being read into the cache */
static void stream(char *dst, const char *src, size_t nb) {
#if defined(__AVX512F__)
    const size_t w = 64;
#elif defined(__AVX__)
    const size_t w = 32;
#elif defined(__SSE2__)
    const size_t w = 16;
#else
    const size_t w = 0;
#endif
    if (w == 0 || nb < 2 * w) {
        memcpy(dst, src, nb);
        return;
    }
    size_t head = (w - ((uintptr_t)dst & (w - 1))) & (w - 1);
    memcpy(dst, src, head);
    dst += head;
    src += head;
    nb -= head;
    for (; nb >= w; nb -= w, dst += w, src += w) {
#if defined(__AVX512F__)
        _mm512_stream_si512((void *)dst, _mm512_loadu_si512((const void *)src));
#elif defined(__AVX__)
        _mm256_stream_si256((__m256i *)dst, _mm256_loadu_si256((const __m256i *)src));
#elif defined(__SSE2__)
        _mm_stream_si128((__m128i *)dst, _mm_loadu_si128((const __m128i *)src));
#endif
    }
    memcpy(dst, src, nb);
}

static void fence(void) {
#if defined(__SSE2__)
    _mm_sfence();
#endif
}

#define SET_FLOAT(t, D, SFX)                                                                              \
    do {                                                                                                  \
        t->binary[BC_ADD][D] = add_##SFX, t->binary[BC_SUB][D] = sub_##SFX, t->binary[BC_MUL][D] = mul_##SFX; \
        t->binary[BC_DIV][D] = div_##SFX, t->binary[BC_POW][D] = pow_##SFX;                               \
        t->binary[BC_MAX][D] = max_##SFX, t->binary[BC_MIN][D] = min_##SFX;                               \
        t->binary[BC_GT][D] = gt_##SFX, t->binary[BC_GE][D] = ge_##SFX, t->binary[BC_LT][D] = lt_##SFX;    \
        t->binary[BC_LE][D] = le_##SFX, t->binary[BC_EQ][D] = eq_##SFX;                                   \
        t->sum[D] = sum_##SFX;                                                                            \
    } while (0)

#define SET_INT(t, D, SFX)                                                                                \
    do {                                                                                                  \
        t->binary[BC_ADD][D] = add_##SFX, t->binary[BC_SUB][D] = sub_##SFX, t->binary[BC_MUL][D] = mul_##SFX; \
        t->binary[BC_DIV][D] = div_##SFX, t->binary[BC_POW][D] = pow_##SFX;                               \
        t->binary[BC_MAX][D] = max_##SFX, t->binary[BC_MIN][D] = min_##SFX;                               \
        t->binary[BC_GT][D] = gt_##SFX, t->binary[BC_GE][D] = ge_##SFX, t->binary[BC_LT][D] = lt_##SFX;    \
        t->binary[BC_LE][D] = le_##SFX, t->binary[BC_EQ][D] = eq_##SFX;                                   \
        t->binary[BC_BAND][D] = band_##SFX, t->binary[BC_BOR][D] = bor_##SFX;                             \
        t->binary[BC_BXOR][D] = bxor_##SFX;                                                               \
        t->sum[D] = sum_##SFX;                                                                            \
    } while (0)

#define STR_(x) #x
#define STR(x) STR_(x)

void FN(bc_table)(bc_table *t) {
    memset(t, 0, sizeof *t);
    t->name = STR(BC_ISA) + 1; /* "_avx2" -> "avx2" */
    SET_FLOAT(t, BC_F32, f32);
    SET_FLOAT(t, BC_F64, f64);
#if HAVE_F16
    SET_FLOAT(t, BC_F16, f16);
#endif
    SET_FLOAT(t, BC_BF16, bf16);
    SET_INT(t, BC_I32, i32);
    SET_INT(t, BC_I64, i64);
    t->binary[BC_GT][BC_BOOL] = gt_b, t->binary[BC_GE][BC_BOOL] = ge_b, t->binary[BC_LT][BC_BOOL] = lt_b;
    t->binary[BC_LE][BC_BOOL] = le_b, t->binary[BC_EQ][BC_BOOL] = eq_b;
    t->binary[BC_AND][BC_BOOL] = and_b, t->binary[BC_OR][BC_BOOL] = or_b, t->binary[BC_XOR][BC_BOOL] = xor_b;
    t->where[0] = where1, t->where[1] = where2, t->where[2] = where4, t->where[3] = where8;
    t->copy[0] = copy1, t->copy[1] = copy2, t->copy[2] = copy4, t->copy[3] = copy8;
    t->stream = stream;
    t->fence = fence;
}
