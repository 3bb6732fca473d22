/* XXH64 (seed-parameterised), written from the public algorithm description.
 * Paimon hashes CHAR/VARCHAR/STRING/BINARY values with XXH64(bytes, seed 0).
 * Header-only; checked against the `xxhash` package in tests. */
#ifndef PF_XXH64_H
#define PF_XXH64_H
#include <stdint.h>
#include <string.h>
#include <stddef.h>

#define PF_P64_1 0x9E3779B185EBCA87ULL
#define PF_P64_2 0xC2B2AE3D27D4EB4FULL
#define PF_P64_3 0x165667B19E3779F9ULL
#define PF_P64_4 0x85EBCA77C2B2AE63ULL
#define PF_P64_5 0x27D4EB2F165667C5ULL

static inline uint64_t pf_rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

static inline uint64_t pf_read64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; } /* little-endian host */
static inline uint32_t pf_read32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }

static inline uint64_t pf_xxh64_round(uint64_t acc, uint64_t input) {
    acc += input * PF_P64_2;
    acc = pf_rotl64(acc, 31);
    return acc * PF_P64_1;
}

static inline uint64_t pf_xxh64_merge(uint64_t acc, uint64_t val) {
    acc ^= pf_xxh64_round(0, val);
    return acc * PF_P64_1 + PF_P64_4;
}

/* The last < 32 bytes [p, end) mixed into h, and the final avalanche. */
static inline __attribute__((always_inline)) uint64_t pf_xxh64_tail(uint64_t h, const uint8_t *p,
                                                                    const uint8_t *end) {
    while (p + 8 <= end) {
        h ^= pf_xxh64_round(0, pf_read64(p));
        h = pf_rotl64(h, 27) * PF_P64_1 + PF_P64_4;
        p += 8;
    }
    if (p + 4 <= end) {
        h ^= (uint64_t)pf_read32(p) * PF_P64_1;
        h = pf_rotl64(h, 23) * PF_P64_2 + PF_P64_3;
        p += 4;
    }
    while (p < end) {
        h ^= (*p) * PF_P64_5;
        h = pf_rotl64(h, 11) * PF_P64_1;
        p++;
    }
    h ^= h >> 33;
    h *= PF_P64_2;
    h ^= h >> 29;
    h *= PF_P64_3;
    h ^= h >> 32;
    return h;
}

static inline uint64_t pf_xxh64(const uint8_t *p, size_t len, uint64_t seed) {
    const uint8_t *end = p + len;
    uint64_t h;
    if (len >= 32) {
        const uint8_t *limit = end - 32;
        uint64_t v1 = seed + PF_P64_1 + PF_P64_2, v2 = seed + PF_P64_2, v3 = seed, v4 = seed - PF_P64_1;
        do {
            v1 = pf_xxh64_round(v1, pf_read64(p));
            v2 = pf_xxh64_round(v2, pf_read64(p + 8));
            v3 = pf_xxh64_round(v3, pf_read64(p + 16));
            v4 = pf_xxh64_round(v4, pf_read64(p + 24));
            p += 32;
        } while (p <= limit);
        h = pf_rotl64(v1, 1) + pf_rotl64(v2, 7) + pf_rotl64(v3, 12) + pf_rotl64(v4, 18);
        h = pf_xxh64_merge(h, v1);
        h = pf_xxh64_merge(h, v2);
        h = pf_xxh64_merge(h, v3);
        h = pf_xxh64_merge(h, v4);
    } else {
        h = seed + PF_P64_5;
    }
    return pf_xxh64_tail(h + (uint64_t)len, p, end);
}

/* Seed-0 XXH64 of a value shorter than 32 bytes.  Inlined with a constant len
 * (pf_xxh64_seq below), the compiler unrolls it into straight-line code. */
static inline __attribute__((always_inline)) uint64_t pf_xxh64_short(const uint8_t *p, size_t len) {
    return pf_xxh64_tail(PF_P64_5 + (uint64_t)len, p, p + len);
}

/* Seed-0 XXH64 of m values of the same length len < 32 stored back to back from p:
 * one loop per length, so each is straight-line code.  Returns 0 (nothing written)
 * for other lengths. */
#define PF_XXH64_SEQ_CASE(L) \
    case L: for (size_t i = 0; i < m; i++) out[i] = (int64_t)pf_xxh64_short(p + i * L, L); return 1;
static inline int pf_xxh64_seq(const uint8_t *p, size_t len, size_t m, int64_t *out) {
    switch (len) {
        PF_XXH64_SEQ_CASE(0) PF_XXH64_SEQ_CASE(1) PF_XXH64_SEQ_CASE(2) PF_XXH64_SEQ_CASE(3)
        PF_XXH64_SEQ_CASE(4) PF_XXH64_SEQ_CASE(5) PF_XXH64_SEQ_CASE(6) PF_XXH64_SEQ_CASE(7)
        PF_XXH64_SEQ_CASE(8) PF_XXH64_SEQ_CASE(9) PF_XXH64_SEQ_CASE(10) PF_XXH64_SEQ_CASE(11)
        PF_XXH64_SEQ_CASE(12) PF_XXH64_SEQ_CASE(13) PF_XXH64_SEQ_CASE(14) PF_XXH64_SEQ_CASE(15)
        PF_XXH64_SEQ_CASE(16) PF_XXH64_SEQ_CASE(17) PF_XXH64_SEQ_CASE(18) PF_XXH64_SEQ_CASE(19)
        PF_XXH64_SEQ_CASE(20) PF_XXH64_SEQ_CASE(21) PF_XXH64_SEQ_CASE(22) PF_XXH64_SEQ_CASE(23)
        PF_XXH64_SEQ_CASE(24) PF_XXH64_SEQ_CASE(25) PF_XXH64_SEQ_CASE(26) PF_XXH64_SEQ_CASE(27)
        PF_XXH64_SEQ_CASE(28) PF_XXH64_SEQ_CASE(29) PF_XXH64_SEQ_CASE(30) PF_XXH64_SEQ_CASE(31)
        default: return 0;
    }
}

/* Seed-0 XXH64 of values data[off[i]:off[i+1]] for i < m into out (offsets already
 * checked).  A run of equal lengths (a fixed-width key column, the common case) takes
 * pf_xxh64_seq; mixed lengths are hashed one by one. */
#define PF_XXH64_OFFSETS(NAME, OFF_T)                                                     \
static inline void NAME(const OFF_T *off, const uint8_t *data, size_t m, int64_t *out) {  \
    if (m == 0) return;                                                                   \
    OFF_T len = off[1] - off[0];                                                          \
    int same = 1;                                                                         \
    for (size_t i = 1; i < m; i++) same &= (off[i + 1] - off[i]) == len;                  \
    if (same && pf_xxh64_seq(data + off[0], (size_t)len, m, out)) return;                 \
    for (size_t i = 0; i < m; i++)                                                        \
        out[i] = (int64_t)pf_xxh64(data + off[i], (size_t)(off[i + 1] - off[i]), 0);      \
}
PF_XXH64_OFFSETS(pf_xxh64_offsets32, int32_t)
PF_XXH64_OFFSETS(pf_xxh64_offsets64, int64_t)
#endif
