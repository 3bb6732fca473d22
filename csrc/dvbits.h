/* Deletion vectors held as a plain bit set (uint64 words, bit i of word w =
 * position 64*w + i).  Conversion to and from Java's portable 32-bit roaring
 * bytes is roaring_dense.h's (shared with the bitmap and bit-sliced indexes);
 * this file adds the deletion-vector specific pieces: setting / probing bits,
 * the extent scan that sizes the bit set before decoding, and the sorted
 * 64-bit value output.
 *
 * A "chunk" is 65536 bits = 1024 words = one roaring container.  Bit sets are
 * always a whole number of chunks long. */
#ifndef PF_DVBITS_H
#define PF_DVBITS_H
#include <stdint.h>
#include <string.h>
/* This translation unit uses the POPCNT instruction (x86-64-v2, every x86-64
 * CPU since 2008); the kernel checks the CPU at import (pf_cpu_ok). */
#if defined(__x86_64__) && defined(__GNUC__)
#pragma GCC target("popcnt")
static inline int pf_cpu_ok(void) { __builtin_cpu_init(); return __builtin_cpu_supports("popcnt"); }
#else
static inline int pf_cpu_ok(void) { return 1; }
#endif
#pragma GCC diagnostic ignored "-Wunused-function"
#include "roaring_dense.h"

/* Set bit pos[i] for every i (positions checked by the caller).  Prefetching
 * a few positions ahead hides most cache misses of random positions. */
#define PF_PREFETCH_AHEAD 16
static void pf_set_bits(const int64_t *pos, size_t n, uint64_t *w) {
    size_t i = 0;
    for (; i + PF_PREFETCH_AHEAD < n; i++) {
        __builtin_prefetch(&w[(uint64_t)pos[i + PF_PREFETCH_AHEAD] >> 6], 1, 0);
        uint64_t p = (uint64_t)pos[i];
        w[p >> 6] |= UINT64_C(1) << (p & 63);
    }
    for (; i < n; i++) {
        uint64_t p = (uint64_t)pos[i];
        w[p >> 6] |= UINT64_C(1) << (p & 63);
    }
}

/* out[i] = bit probes[i] of w (0 when outside [0, nbits)). */
static void pf_test_bits(const uint64_t *w, uint64_t nbits, const int64_t *probes, size_t n, uint8_t *out) {
    for (size_t i = 0; i < n; i++) {
        if (i + PF_PREFETCH_AHEAD < n) {
            uint64_t q = (uint64_t)probes[i + PF_PREFETCH_AHEAD];
            if (q < nbits) __builtin_prefetch(&w[q >> 6], 0, 0);
        }
        uint64_t p = (uint64_t)probes[i];
        out[i] = p < nbits ? (uint8_t)((w[p >> 6] >> (p & 63)) & 1) : 0;
    }
}

static uint64_t pf_popcount_words(const uint64_t *w, size_t n) {
    uint64_t c = 0;
    for (size_t i = 0; i < n; i++) c += (uint64_t)pf_popc64(w[i]);
    return c;
}

/* Highest container key of a validated bitmap, -1 when empty. */
static int32_t pf_roaring_last_key(const uint8_t *buf) {
    pf_rheader h;
    const char *err;
    size_t at;
    pf_roaring_head(buf, SIZE_MAX, &h, &err, &at);
    if (!h.size) return -1;
    return (int32_t)pf_get16(h.desc + 4 * (h.size - 1));
}

/* Append the validated bitmap's values as (high << 32 | value) to out (ascending). */
static size_t pf_roaring_to_sorted(const uint8_t *buf, uint64_t high, uint64_t *out) {
    pf_rheader h;
    const char *err;
    size_t at;
    pf_roaring_head(buf, SIZE_MAX, &h, &err, &at);
    size_t p = h.body, n = 0;
    uint64_t base_hi = high << 32;
    for (uint32_t c = 0; c < h.size; c++) {
        uint64_t key = pf_get16(h.desc + 4 * c);
        uint32_t card = (uint32_t)pf_get16(h.desc + 4 * c + 2) + 1;
        uint64_t base = base_hi | (key << 16);
        if (pf_is_run(&h, c)) {
            uint32_t nruns = pf_get16(buf + p);
            p += 2;
            for (uint32_t r = 0; r < nruns; r++) {
                uint32_t s = pf_get16(buf + p), l = pf_get16(buf + p + 2);
                p += 4;
                for (uint32_t v = s; v <= s + l; v++) out[n++] = base | v;
            }
        } else if (card > PF_ARRAY_MAX) {
            for (int i = 0; i < PF_CHUNK_WORDS; i++) {
                uint64_t x = pf_get64le(buf + p + 8 * i);
                while (x) {
                    out[n++] = base | (uint64_t)(i * 64 + __builtin_ctzll(x));
                    x &= x - 1;
                }
            }
            p += 8192;
        } else {
            for (uint32_t i = 0; i < card; i++) out[n++] = base | pf_get16(buf + p + 2 * i);
            p += 2 * (size_t)card;
        }
    }
    return n;
}

/* One-pass validated decode into a bit set: pf_roaring_scan checks the header
 * and every container's extent (no content checks) and returns the serialized
 * size, the header cardinality and the last container key, which sizes the
 * bit set; pf_roaring_decode (roaring_dense.h) then validates the content
 * while ORing it into the bit set, so the bytes are read once. */
static int64_t pf_roaring_scan(const uint8_t *buf, size_t len, const char **err, size_t *err_at,
                               uint64_t *card_out, int32_t *last_key) {
    int64_t bad;
    return pf_roaring_walk(buf, len, NULL, 0, PF_WALK_EXTENTS, card_out, last_key, err, err_at, &bad);
}
#endif
