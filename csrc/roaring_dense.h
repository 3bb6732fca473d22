/* Java's portable 32-bit roaring bytes from a dense bit set (bit i of 64-bit
 * word i>>6 = value i), for the bitmap index's low-cardinality path: one bit
 * set per value instead of sorted positions.  Container choice, run rule and
 * layout are exactly those of roaring32.h (which it reuses); a hypothesis
 * test checks the bytes against pf_roaring_write.
 *
 * The bit set covers `nchunks` whole containers of 1024 words each. */
#ifndef PF_ROARING_DENSE_H
#define PF_ROARING_DENSE_H
#include "roaring32.h"

/* Without -mpopcnt, __builtin_popcountll is a libgcc call; SWAR is faster then. */
static inline int pf_popc64(uint64_t x) {
#if defined(__POPCNT__)
    return __builtin_popcountll(x);
#else
    x = x - ((x >> 1) & 0x5555555555555555ULL);
    x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
    return (int)((x * 0x0101010101010101ULL) >> 56);
#endif
}

/* cardinality and number of runs of one 65536-bit container */
#define PF_DENSE_STATS_BODY(POPC)                                   \
    uint64_t carry = 0;                                             \
    uint32_t c = 0, r = 0;                                          \
    for (int j = 0; j < 1024; j++) {                                \
        uint64_t x = w[j];                                          \
        if (x) {                                                    \
            c += (uint32_t)POPC(x);                                 \
            r += (uint32_t)POPC(x & ~((x << 1) | carry));           \
        }                                                           \
        carry = x >> 63;                                            \
    }                                                               \
    *card = c;                                                      \
    *nruns = r;

static void pf_dense_stats_generic(const uint64_t *w, uint32_t *card, uint32_t *nruns) {
    PF_DENSE_STATS_BODY(pf_popc64)
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__POPCNT__)
/* the hardware instruction where the CPU has it (chosen once at run time) */
__attribute__((target("popcnt"))) static void pf_dense_stats_hw(const uint64_t *w, uint32_t *card, uint32_t *nruns) {
    PF_DENSE_STATS_BODY(__builtin_popcountll)
}
static inline void pf_dense_stats(const uint64_t *w, uint32_t *card, uint32_t *nruns) {
    static int hw = -1;
    if (hw < 0) hw = __builtin_cpu_supports("popcnt") ? 1 : 0;
    if (hw) pf_dense_stats_hw(w, card, nruns);
    else pf_dense_stats_generic(w, card, nruns);
}
#else
static inline void pf_dense_stats(const uint64_t *w, uint32_t *card, uint32_t *nruns) {
    pf_dense_stats_generic(w, card, nruns);
}
#endif

/* Containers are given as pointers to 1024-word bit sets with their keys
 * (ascending); empty ones are skipped.  pf_dense_size fills card/nruns and
 * returns the serialized size; pf_dense_write writes exactly that many bytes. */
static int64_t pf_dense_size(const uint64_t *const *cw, size_t n, uint32_t *card, uint32_t *nruns) {
    size_t size = 0;
    int has_run = 0;
    uint64_t body = 0;
    for (size_t ch = 0; ch < n; ch++) {
        pf_dense_stats(cw[ch], &card[ch], &nruns[ch]);
        if (!card[ch]) continue;
        int kind = pf_container_kind(card[ch], nruns[ch]);
        if (kind == PF_RUN) has_run = 1;
        body += pf_container_bytes(kind, card[ch], nruns[ch]);
        size++;
    }
    uint64_t head;
    if (has_run) {
        head = 4 + (size + 7) / 8 + 4 * size + (size >= PF_NO_OFFSET_THRESHOLD ? 4 * size : 0);
    } else {
        head = 8 + 4 * size + 4 * size;
    }
    return (int64_t)(head + body);
}

static size_t pf_dense_write(const uint64_t *const *cws, const uint32_t *keys, size_t n, const uint32_t *card,
                             const uint32_t *nruns, uint8_t *out) {
    size_t size = 0;
    int has_run = 0;
    for (size_t ch = 0; ch < n; ch++) {
        if (!card[ch]) continue;
        if (pf_container_kind(card[ch], nruns[ch]) == PF_RUN) has_run = 1;
        size++;
    }
    uint8_t *p = out;
    uint8_t *runflags = NULL;
    if (has_run) {
        pf_put32(p, PF_SERIAL_COOKIE | ((uint32_t)(size - 1) << 16));
        p += 4;
        runflags = p;
        memset(p, 0, (size + 7) / 8);
        p += (size + 7) / 8;
    } else {
        pf_put32(p, PF_SERIAL_COOKIE_NO_RUN);
        pf_put32(p + 4, (uint32_t)size);
        p += 8;
    }
    uint8_t *desc = p;
    p += 4 * size;
    uint8_t *offs = NULL;
    if (!has_run || size >= PF_NO_OFFSET_THRESHOLD) {
        offs = p;
        p += 4 * size;
    }
    size_t c = 0;
    for (size_t ch = 0; ch < n; ch++) {
        if (!card[ch]) continue;
        const uint64_t *cw = cws[ch];
        int kind = pf_container_kind(card[ch], nruns[ch]);
        pf_put16(desc + 4 * c, (uint16_t)keys[ch]);
        pf_put16(desc + 4 * c + 2, (uint16_t)(card[ch] - 1));
        if (offs) pf_put32(offs + 4 * c, (uint32_t)(p - out));
        if (kind == PF_RUN) {
            runflags[c >> 3] |= (uint8_t)(1u << (c & 7));
            pf_put16(p, (uint16_t)nruns[ch]);
            p += 2;
            uint64_t carry = 0;
            uint32_t s = 0;
            for (int j = 0; j < 1024; j++) {
                uint64_t x = cw[j];
                uint64_t next_lo = (j + 1 < 1024) ? (cw[j + 1] & 1) : 0;
                uint64_t st = x & ~((x << 1) | carry);
                uint64_t en = x & ~((x >> 1) | (next_lo << 63));
                carry = x >> 63;
                while (st | en) {
                    int b = __builtin_ctzll(st | en);
                    uint64_t bit = (uint64_t)1 << b;
                    uint32_t v = ((uint32_t)j << 6) | (uint32_t)b;
                    if (st & bit) { s = v; st &= ~bit; }
                    if (en & bit) {
                        pf_put16(p, (uint16_t)s);
                        pf_put16(p + 2, (uint16_t)(v - s));
                        p += 4;
                        en &= ~bit;
                    }
                }
            }
        } else if (kind == PF_BITMAP) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            memcpy(p, cw, 8192);  /* the container is the bit set's words in little-endian */
            p += 8192;
#else
            for (int j = 0; j < 1024; j++) {
                uint64_t x = cw[j];
                for (int k = 0; k < 8; k++) p[k] = (uint8_t)(x >> (8 * k));
                p += 8;
            }
#endif
        } else {
            for (int j = 0; j < 1024; j++) {
                uint64_t x = cw[j];
                while (x) {
                    int b = __builtin_ctzll(x);
                    pf_put16(p, (uint16_t)(((uint32_t)j << 6) | (uint32_t)b));
                    p += 2;
                    x &= x - 1;
                }
            }
        }
        c++;
    }
    return (size_t)(p - out);
}

#endif
