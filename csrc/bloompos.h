/* Bloom filter bit positions for whole blocks of hashes, 8 slots per hash
 * (k <= 8 uses the first k).  Paimon's rule: h1 = (int)h, h2 = (int)(h>>>32),
 * c = h1 + i*h2 (32-bit wrap), c = ~c if negative, position = c % numBits.
 *
 * The AVX2 path does the modulo in double precision: c and numBits are below
 * 2^31, q = floor(c / numBits) may be off by one, r = c - q*numBits is exact
 * (every intermediate is an integer below 2^33) and one correction step each
 * way makes it exact.  Chosen at run time; the scalar path is Lemire's fastmod. */
#ifndef PF_BLOOMPOS_H
#define PF_BLOOMPOS_H
#include <stdint.h>
#include <stddef.h>
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
__attribute__((target("avx2")))
static void pf_bloom_positions_avx2(const int64_t *h, size_t n, uint32_t nbits, uint32_t *out) {
    const __m256i idx = _mm256_setr_epi32(1, 2, 3, 4, 5, 6, 7, 8);
    const __m256d dn = _mm256_set1_pd((double)nbits);
    const __m256d inv = _mm256_set1_pd(1.0 / (double)nbits);
    const __m256d zero = _mm256_setzero_pd();
    for (size_t i = 0; i < n; i++) {
        __m256i h1 = _mm256_set1_epi32((int32_t)h[i]);
        __m256i h2 = _mm256_set1_epi32((int32_t)((uint64_t)h[i] >> 32));
        __m256i c = _mm256_add_epi32(h1, _mm256_mullo_epi32(idx, h2));
        c = _mm256_xor_si256(c, _mm256_srai_epi32(c, 31)); /* ~c when negative */
        __m128i halves[2] = {_mm256_castsi256_si128(c), _mm256_extracti128_si256(c, 1)};
        __m128i res[2];
        for (int half = 0; half < 2; half++) {
            __m256d d = _mm256_cvtepi32_pd(halves[half]);
            __m256d q = _mm256_floor_pd(_mm256_mul_pd(d, inv));
            __m256d r = _mm256_sub_pd(d, _mm256_mul_pd(q, dn));
            r = _mm256_add_pd(r, _mm256_and_pd(_mm256_cmp_pd(r, zero, _CMP_LT_OQ), dn));
            r = _mm256_sub_pd(r, _mm256_and_pd(_mm256_cmp_pd(r, dn, _CMP_GE_OQ), dn));
            res[half] = _mm256_cvttpd_epi32(r);
        }
        _mm256_storeu_si256((__m256i *)(out + i * 8), _mm256_set_m128i(res[1], res[0]));
    }
}
#endif

static int pf_bloom_avx2 = -1;

/* out must hold n*8 entries */
static inline void pf_bloom_positions(const int64_t *h, size_t n, int k, uint32_t nbits, uint32_t *out) {
#ifdef PF_HAVE_AVX2_PATH
    if (pf_bloom_avx2 < 0) pf_bloom_avx2 = __builtin_cpu_supports("avx2") ? 1 : 0;
    if (pf_bloom_avx2 && k <= 8) { pf_bloom_positions_avx2(h, n, nbits, out); return; }
#endif
    pf_bloom_positions_scalar(h, n, k < 8 ? k : 8, nbits, out);
}
#endif
