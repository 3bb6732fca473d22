/* Bloom filter bit positions for whole blocks of hashes, 8 slots per hash
 * (k <= 8 uses the first k).  Paimon's rule: h1 = (int)h, h2 = (int)(h>>>32),
 * c = h1 + i*h2 (32-bit wrap), c = ~c if negative, position = c % numBits.
 *
 * The vector paths (AVX-512 or AVX2, chosen at run time, numBits < 2^30) take
 * the quotient from double precision: q = trunc(c * (1/numBits)) is within one
 * of floor(c / numBits) (the product's error is below 2^-21 for c < 2^31), so
 * r = c - q*numBits, computed in 32-bit lanes (the true value lies in
 * [-numBits, 2*numBits), which fits), is exact after one correction each way.
 * The scalar path is Lemire's fastmod. */
#ifndef PF_BLOOMPOS_H
#define PF_BLOOMPOS_H
#include <stdint.h>
#include <stddef.h>
#include <string.h>
#include "pfhash.h"

static void pf_bloom_positions_scalar(const int64_t *h, size_t n, int k, uint32_t nbits, uint32_t *out) {
    uint64_t M = pf_fastmod_m(nbits);
    for (size_t i = 0; i < n; i++) {
        int32_t h1 = (int32_t)h[i], h2 = (int32_t)((uint64_t)h[i] >> 32);
        for (int j = 0; j < k; j++) {
            int32_t c = (int32_t)((uint32_t)h1 + (uint32_t)(j + 1) * (uint32_t)h2);
            if (c < 0) c = ~c;
            out[i * 8 + j] = pf_fastmod((uint32_t)c, M, nbits);
        }
    }
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define PF_HAVE_AVX2_PATH 1
#define PF_BLOOM_VEC_BODY(QUOTIENT, STORE)                                              \
    const __m256i idx = _mm256_setr_epi32(1, 2, 3, 4, 5, 6, 7, 8);                      \
    const __m256i vn = _mm256_set1_epi32((int32_t)nbits);                               \
    const __m256i zero = _mm256_setzero_si256();                                        \
    for (size_t i = 0; i < n; i++) {                                                    \
        __m256i h1 = _mm256_set1_epi32((int32_t)h[i]);                                  \
        __m256i h2 = _mm256_set1_epi32((int32_t)((uint64_t)h[i] >> 32));                \
        __m256i c = _mm256_add_epi32(h1, _mm256_mullo_epi32(idx, h2));                  \
        c = _mm256_xor_si256(c, _mm256_srai_epi32(c, 31)); /* ~c when negative */      \
        __m256i q = QUOTIENT;                                                           \
        __m256i r = _mm256_sub_epi32(c, _mm256_mullo_epi32(q, vn));                     \
        r = _mm256_add_epi32(r, _mm256_and_si256(_mm256_cmpgt_epi32(zero, r), vn));     \
        r = _mm256_sub_epi32(r, _mm256_andnot_si256(_mm256_cmpgt_epi32(vn, r), vn));    \
        STORE;                                                                          \
    }

#define PF_AVX2_QUOTIENT _mm256_set_m128i(                                                       \
        _mm256_cvttpd_epi32(_mm256_mul_pd(_mm256_cvtepi32_pd(_mm256_extracti128_si256(c, 1)), inv)), \
        _mm256_cvttpd_epi32(_mm256_mul_pd(_mm256_cvtepi32_pd(_mm256_castsi256_si128(c)), inv)))
#define PF_AVX512_QUOTIENT _mm512_cvttpd_epi32(_mm512_mul_pd(_mm512_cvtepi32_pd(c), inv))

__attribute__((target("avx2")))
static void pf_bloom_positions_avx2(const int64_t *h, size_t n, uint32_t nbits, uint32_t *out) {
    const __m256d inv = _mm256_set1_pd(1.0 / (double)nbits);
    PF_BLOOM_VEC_BODY(PF_AVX2_QUOTIENT, _mm256_storeu_si256((__m256i *)(out + i * 8), r))
}

__attribute__((target("avx512f,avx512vl,avx2")))
static void pf_bloom_positions_avx512(const int64_t *h, size_t n, uint32_t nbits, uint32_t *out) {
    const __m512d inv = _mm512_set1_pd(1.0 / (double)nbits);
    PF_BLOOM_VEC_BODY(PF_AVX512_QUOTIENT, _mm256_storeu_si256((__m256i *)(out + i * 8), r))
}

#endif

static int pf_bloom_simd = -1; /* 0 scalar, 1 AVX2, 2 AVX-512 */

static inline int pf_bloom_simd_level(void) {
#ifdef PF_HAVE_AVX2_PATH
    if (pf_bloom_simd < 0) {
        __builtin_cpu_init();
        pf_bloom_simd = (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl")) ? 2
                        : __builtin_cpu_supports("avx2") ? 1 : 0;
    }
    return pf_bloom_simd;
#else
    return 0;
#endif
}

/* out must hold n*8 entries; simd caps the path (-1 = best available, 0 = scalar) */
static inline void pf_bloom_positions_at(const int64_t *h, size_t n, int k, uint32_t nbits, uint32_t *out, int simd) {
#ifdef PF_HAVE_AVX2_PATH
    int level = pf_bloom_simd_level();
    if (simd >= 0 && simd < level) level = simd;
    if (k <= 8 && nbits < (UINT32_C(1) << 30)) {
        if (level == 2) { pf_bloom_positions_avx512(h, n, nbits, out); return; }
        if (level == 1) { pf_bloom_positions_avx2(h, n, nbits, out); return; }
    }
#else
    (void)simd;
#endif
    pf_bloom_positions_scalar(h, n, k < 8 ? k : 8, nbits, out);
}

static inline void pf_bloom_positions(const int64_t *h, size_t n, int k, uint32_t nbits, uint32_t *out) {
    pf_bloom_positions_at(h, n, k, nbits, out, -1);
}

/* Set bit p through the little-endian 32-bit word holding it: one load, OR and store
 * per random access, whose misses overlap better than a byte's shift-and-or.  The
 * buffer must hold that whole word. */
static inline void pf_bloom_set_word(uint8_t *bits, uint32_t p) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint32_t v;
    uint8_t *w = bits + (size_t)(p >> 5) * 4;
    memcpy(&v, w, 4);
    v |= UINT32_C(1) << (p & 31);
    memcpy(w, &v, 4);
#else
    bits[p >> 3] |= (uint8_t)(1u << (p & 7));
#endif
}

/* Set the bits of m hashes' positions (8 slots each, the first k used) through words.
 * The number of bits per hash is a constant in each case so that the compiler unrolls
 * the inner loop: 11.3 against 13.4 ms for 1e6 adds, k = 7, into 1.2 MB. */
#define PF_BLOOM_SET_K(K)                                                                \
    case K:                                                                              \
        for (size_t i = 0; i < m; i++)                                                   \
            for (int j = 0; j < K; j++) pf_bloom_set_word(bits, pos[i * 8 + j]);         \
        return;

static inline void pf_bloom_set_block_words(uint8_t *bits, const uint32_t *pos, size_t m, int k) {
    switch (k) {
        PF_BLOOM_SET_K(1) PF_BLOOM_SET_K(2) PF_BLOOM_SET_K(3) PF_BLOOM_SET_K(4)
        PF_BLOOM_SET_K(5) PF_BLOOM_SET_K(6) PF_BLOOM_SET_K(7) PF_BLOOM_SET_K(8)
        default:
            for (size_t i = 0; i < m; i++)
                for (int j = 0; j < k && j < 8; j++) pf_bloom_set_word(bits, pos[i * 8 + j]);
    }
}
#undef PF_BLOOM_SET_K

/* The same where the buffer may end inside the last word: bits at or past wbits (the
 * bits in whole words) are set byte-wise. */
static inline void pf_bloom_set(uint8_t *bits, uint32_t wbits, uint32_t p) {
    if (__builtin_expect(p < wbits, 1)) pf_bloom_set_word(bits, p);
    else bits[p >> 3] |= (uint8_t)(1u << (p & 7));
}

/* Thomas Wang's 64-bit hash (pf_wang64) of n values into out, 8 lanes at a time with
 * AVX-512 where the CPU has it (same arithmetic: wrapping adds, arithmetic right shifts). */
#ifdef PF_HAVE_AVX2_PATH
__attribute__((target("avx512f")))
static void pf_wang64_block_avx512(const int64_t *in, size_t n, int64_t *out) {
    size_t i = 0;
    const __m512i ones = _mm512_set1_epi64(-1);
    for (; i + 8 <= n; i += 8) {
        __m512i k = _mm512_loadu_si512((const void *)(in + i));
        k = _mm512_add_epi64(_mm512_xor_si512(k, ones), _mm512_slli_epi64(k, 21));
        k = _mm512_xor_si512(k, _mm512_srai_epi64(k, 24));
        k = _mm512_add_epi64(_mm512_add_epi64(k, _mm512_slli_epi64(k, 3)), _mm512_slli_epi64(k, 8));
        k = _mm512_xor_si512(k, _mm512_srai_epi64(k, 14));
        k = _mm512_add_epi64(_mm512_add_epi64(k, _mm512_slli_epi64(k, 2)), _mm512_slli_epi64(k, 4));
        k = _mm512_xor_si512(k, _mm512_srai_epi64(k, 28));
        k = _mm512_add_epi64(k, _mm512_slli_epi64(k, 31));
        _mm512_storeu_si512((void *)(out + i), k);
    }
    for (; i < n; i++) out[i] = pf_wang64(in[i]);
}

/* AVX2 has no 64-bit arithmetic right shift: the logical shift, with the sign's copies
 * shifted in from the left */
__attribute__((target("avx2")))
static inline __m256i pf_srai64_avx2(__m256i k, int n) {
    __m256i sign = _mm256_cmpgt_epi64(_mm256_setzero_si256(), k);
    return _mm256_or_si256(_mm256_srli_epi64(k, n), _mm256_slli_epi64(sign, 64 - n));
}

__attribute__((target("avx2")))
static void pf_wang64_block_avx2(const int64_t *in, size_t n, int64_t *out) {
    size_t i = 0;
    const __m256i ones = _mm256_set1_epi64x(-1);
    for (; i + 4 <= n; i += 4) {
        __m256i k = _mm256_loadu_si256((const __m256i *)(in + i));
        k = _mm256_add_epi64(_mm256_xor_si256(k, ones), _mm256_slli_epi64(k, 21));
        k = _mm256_xor_si256(k, pf_srai64_avx2(k, 24));
        k = _mm256_add_epi64(_mm256_add_epi64(k, _mm256_slli_epi64(k, 3)), _mm256_slli_epi64(k, 8));
        k = _mm256_xor_si256(k, pf_srai64_avx2(k, 14));
        k = _mm256_add_epi64(_mm256_add_epi64(k, _mm256_slli_epi64(k, 2)), _mm256_slli_epi64(k, 4));
        k = _mm256_xor_si256(k, pf_srai64_avx2(k, 28));
        k = _mm256_add_epi64(k, _mm256_slli_epi64(k, 31));
        _mm256_storeu_si256((__m256i *)(out + i), k);
    }
    for (; i < n; i++) out[i] = pf_wang64(in[i]);
}
#endif

/* simd caps the path as for the positions (-1 = best available, 0 = scalar) */
static inline void pf_wang64_block_at(const int64_t *in, size_t n, int64_t *out, int simd) {
#ifdef PF_HAVE_AVX2_PATH
    int level = pf_bloom_simd_level();
    if (simd >= 0 && simd < level) level = simd;
    if (level == 2) { pf_wang64_block_avx512(in, n, out); return; }
    if (level == 1) { pf_wang64_block_avx2(in, n, out); return; }
#else
    (void)simd;
#endif
    for (size_t i = 0; i < n; i++) out[i] = pf_wang64(in[i]);
}

static inline void pf_wang64_block(const int64_t *in, size_t n, int64_t *out) {
    pf_wang64_block_at(in, n, out, -1);
}
#endif

