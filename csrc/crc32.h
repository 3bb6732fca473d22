/* CRC-32 (zlib / IEEE 802.3, reflected polynomial 0xEDB88320), the value zlib.crc32 gives.
 *
 * pf_crc32(crc, p, n) continues a CRC the way zlib's crc32(crc, p, n) does (start with 0).
 * On x86-64 CPUs with PCLMULQDQ the bulk is folded 64 bytes at a time with carry-less
 * multiplications (the folding / Barrett reduction method of Intel's white paper "Fast CRC
 * Computation for Generic Polynomials Using PCLMULQDQ"); elsewhere, and for the head and
 * tail bytes, a slice-by-8 table loop.  pf_crc32_portable is the table loop alone (tests
 * compare both with zlib).
 */
#ifndef PF_CRC32_H
#define PF_CRC32_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static uint32_t pf_crc_table[8][256];
static int pf_crc_ready = 0;

static void pf_crc_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ 0xEDB88320u : c >> 1;
        pf_crc_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            pf_crc_table[t][i] = (pf_crc_table[t - 1][i] >> 8) ^ pf_crc_table[0][pf_crc_table[t - 1][i] & 0xFF];
    pf_crc_ready = 1;
}

/* raw state (not inverted) over bytes, slice-by-8 */
static uint32_t pf_crc_raw_table(uint32_t c, const uint8_t *p, size_t n) {
    while (n && ((uintptr_t)p & 7)) { c = pf_crc_table[0][(c ^ *p++) & 0xFF] ^ (c >> 8); n--; }
    while (n >= 8) {
        uint32_t a, b;
        memcpy(&a, p, 4);
        memcpy(&b, p + 4, 4);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        a = __builtin_bswap32(a);
        b = __builtin_bswap32(b);
#endif
        a ^= c;
        c = pf_crc_table[7][a & 0xFF] ^ pf_crc_table[6][(a >> 8) & 0xFF] ^ pf_crc_table[5][(a >> 16) & 0xFF] ^
            pf_crc_table[4][a >> 24] ^ pf_crc_table[3][b & 0xFF] ^ pf_crc_table[2][(b >> 8) & 0xFF] ^
            pf_crc_table[1][(b >> 16) & 0xFF] ^ pf_crc_table[0][b >> 24];
        p += 8;
        n -= 8;
    }
    while (n--) c = pf_crc_table[0][(c ^ *p++) & 0xFF] ^ (c >> 8);
    return c;
}

static inline uint32_t pf_crc32_portable(uint32_t crc, const uint8_t *p, size_t n) {
    if (!pf_crc_ready) pf_crc_init();
    return ~pf_crc_raw_table(~crc, p, n);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define PF_CRC_CLMUL 1

/* raw state over n bytes, n >= 64 and a multiple of 16 */
__attribute__((target("pclmul,sse4.1")))
static uint32_t pf_crc_raw_clmul(uint32_t c, const uint8_t *p, size_t n) {
    const __m128i k1k2 = _mm_set_epi64x(0x01c6e41596LL, 0x0154442bd4LL);
    const __m128i k3k4 = _mm_set_epi64x(0x00ccaa009eLL, 0x01751997d0LL);
    const __m128i k5 = _mm_set_epi64x(0, 0x0163cd6124LL);
    const __m128i poly = _mm_set_epi64x(0x01f7011641LL, 0x01db710641LL);
    const __m128i mask32 = _mm_setr_epi32(~0, 0, ~0, 0);
    __m128i x1 = _mm_loadu_si128((const __m128i *)(p + 0x00));
    __m128i x2 = _mm_loadu_si128((const __m128i *)(p + 0x10));
    __m128i x3 = _mm_loadu_si128((const __m128i *)(p + 0x20));
    __m128i x4 = _mm_loadu_si128((const __m128i *)(p + 0x30));
    __m128i x5, x6, x7, x8, y;
    x1 = _mm_xor_si128(x1, _mm_cvtsi32_si128((int)c));
    p += 64;
    n -= 64;
    while (n >= 64) {
        x5 = _mm_clmulepi64_si128(x1, k1k2, 0x00);
        x6 = _mm_clmulepi64_si128(x2, k1k2, 0x00);
        x7 = _mm_clmulepi64_si128(x3, k1k2, 0x00);
        x8 = _mm_clmulepi64_si128(x4, k1k2, 0x00);
        x1 = _mm_clmulepi64_si128(x1, k1k2, 0x11);
        x2 = _mm_clmulepi64_si128(x2, k1k2, 0x11);
        x3 = _mm_clmulepi64_si128(x3, k1k2, 0x11);
        x4 = _mm_clmulepi64_si128(x4, k1k2, 0x11);
        x1 = _mm_xor_si128(_mm_xor_si128(x1, x5), _mm_loadu_si128((const __m128i *)(p + 0x00)));
        x2 = _mm_xor_si128(_mm_xor_si128(x2, x6), _mm_loadu_si128((const __m128i *)(p + 0x10)));
        x3 = _mm_xor_si128(_mm_xor_si128(x3, x7), _mm_loadu_si128((const __m128i *)(p + 0x20)));
        x4 = _mm_xor_si128(_mm_xor_si128(x4, x8), _mm_loadu_si128((const __m128i *)(p + 0x30)));
        p += 64;
        n -= 64;
    }
    /* fold the four lanes into one */
    x5 = _mm_clmulepi64_si128(x1, k3k4, 0x00);
    x1 = _mm_clmulepi64_si128(x1, k3k4, 0x11);
    x1 = _mm_xor_si128(_mm_xor_si128(x1, x2), x5);
    x5 = _mm_clmulepi64_si128(x1, k3k4, 0x00);
    x1 = _mm_clmulepi64_si128(x1, k3k4, 0x11);
    x1 = _mm_xor_si128(_mm_xor_si128(x1, x3), x5);
    x5 = _mm_clmulepi64_si128(x1, k3k4, 0x00);
    x1 = _mm_clmulepi64_si128(x1, k3k4, 0x11);
    x1 = _mm_xor_si128(_mm_xor_si128(x1, x4), x5);
    while (n >= 16) {
        y = _mm_loadu_si128((const __m128i *)p);
        x5 = _mm_clmulepi64_si128(x1, k3k4, 0x00);
        x1 = _mm_clmulepi64_si128(x1, k3k4, 0x11);
        x1 = _mm_xor_si128(_mm_xor_si128(x1, y), x5);
        p += 16;
        n -= 16;
    }
    /* 128 -> 64 bits */
    x2 = _mm_clmulepi64_si128(x1, k3k4, 0x10);
    x1 = _mm_xor_si128(_mm_srli_si128(x1, 8), x2);
    x2 = _mm_srli_si128(x1, 4);
    x1 = _mm_and_si128(x1, mask32);
    x1 = _mm_clmulepi64_si128(x1, k5, 0x00);
    x1 = _mm_xor_si128(x1, x2);
    /* Barrett reduction to 32 bits */
    x2 = _mm_and_si128(x1, mask32);
    x2 = _mm_clmulepi64_si128(x2, poly, 0x10);
    x2 = _mm_and_si128(x2, mask32);
    x2 = _mm_clmulepi64_si128(x2, poly, 0x00);
    x1 = _mm_xor_si128(x1, x2);
    return (uint32_t)_mm_extract_epi32(x1, 1);
}

static int pf_crc_has_clmul = -1;
#endif

/* fill the tables and probe the CPU once (the kernel module calls it at import, so the lazy
 * checks below never race) */
static void pf_crc_setup(void) {
    if (!pf_crc_ready) pf_crc_init();
#ifdef PF_CRC_CLMUL
    if (pf_crc_has_clmul < 0) {
        __builtin_cpu_init();
        pf_crc_has_clmul = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
    }
#endif
}

static inline uint32_t pf_crc32(uint32_t crc, const uint8_t *p, size_t n) {
    if (!pf_crc_ready) pf_crc_setup();
    uint32_t c = ~crc;
#ifdef PF_CRC_CLMUL
    if (pf_crc_has_clmul > 0 && n >= 128) {
        size_t bulk = n & ~(size_t)15;
        c = pf_crc_raw_clmul(c, p, bulk);
        p += bulk;
        n -= bulk;
    }
#endif
    return ~pf_crc_raw_table(c, p, n);
}

#endif
