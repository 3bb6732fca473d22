/* Deletion vectors held as a plain bit set (uint64 words, bit i of word w =
 * position 64*w + i), converted to and from Java's portable 32-bit roaring
 * bytes.  The container rules (array / bitmap / run, strict "<" for runs) and
 * the layout are roaring32.h's (FORMAT_NOTES.md section 2); this file only
 * adds a source that is a bit set instead of a sorted value list, which is
 * what makes serializing a dense vector a handful of memcpy calls.
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
#include "roaring32.h"

#define PF_CHUNK_WORDS 1024

static inline int pf_popcount64(uint64_t x) { return __builtin_popcountll(x); }

static inline void pf_put64le(uint8_t *p, uint64_t v) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(p, &v, 8);
#else
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
#endif
}

static inline uint64_t pf_get64le(const uint8_t *p) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
#else
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
#endif
}

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
    for (size_t i = 0; i < n; i++) c += (uint64_t)pf_popcount64(w[i]);
    return c;
}

/* cardinality and number of runs of one chunk */
static inline void pf_chunk_stats(const uint64_t *w, uint32_t *card, uint32_t *runs) {
    uint32_t c = 0, r = 0;
    uint64_t carry = 0;
    for (int i = 0; i < PF_CHUNK_WORDS; i++) {
        uint64_t x = w[i];
        c += (uint32_t)pf_popcount64(x);
        r += (uint32_t)pf_popcount64(x & ~((x << 1) | carry));
        carry = x >> 63;
    }
    *card = c;
    *runs = r;
}

/* Serialized size of the bitmap of chunks [0, nchunks) of w (each chunk is
 * container key = its index).  Fills cards[]/runs[] (nchunks entries). */
static int64_t pf_bits_roaring_size(const uint64_t *w, size_t nchunks, uint32_t *cards, uint32_t *runs) {
    size_t size = 0;
    int has_run = 0;
    uint64_t body = 0;
    for (size_t c = 0; c < nchunks; c++) {
        pf_chunk_stats(w + c * PF_CHUNK_WORDS, &cards[c], &runs[c]);
        if (!cards[c]) continue;
        int kind = pf_container_kind(cards[c], runs[c]);
        if (kind == PF_RUN) has_run = 1;
        body += pf_container_bytes(kind, cards[c], runs[c]);
        size++;
    }
    uint64_t head;
    if (has_run) head = 4 + (size + 7) / 8 + 4 * size + (size >= PF_NO_OFFSET_THRESHOLD ? 4 * size : 0);
    else head = 8 + 8 * size;
    return (int64_t)(head + body);
}

/* Write what pf_bits_roaring_size measured (same cards/runs).  Returns bytes written. */
static size_t pf_bits_roaring_write(const uint64_t *w, size_t nchunks, const uint32_t *cards, const uint32_t *runs, uint8_t *out) {
    size_t size = 0;
    int has_run = 0;
    for (size_t c = 0; c < nchunks; c++) {
        if (!cards[c]) continue;
        if (pf_container_kind(cards[c], runs[c]) == PF_RUN) has_run = 1;
        size++;
    }
    uint8_t *p = out, *runflags = NULL;
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
    size_t k = 0;
    for (size_t c = 0; c < nchunks; c++) {
        uint32_t card = cards[c];
        if (!card) continue;
        const uint64_t *cw = w + c * PF_CHUNK_WORDS;
        int kind = pf_container_kind(card, runs[c]);
        pf_put16(desc + 4 * k, (uint16_t)c);
        pf_put16(desc + 4 * k + 2, (uint16_t)(card - 1));
        if (offs) pf_put32(offs + 4 * k, (uint32_t)(p - out));
        if (kind == PF_BITMAP) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            memcpy(p, cw, 8192);
#else
            for (int i = 0; i < PF_CHUNK_WORDS; i++) pf_put64le(p + 8 * i, cw[i]);
#endif
            p += 8192;
        } else if (kind == PF_ARRAY) {
            for (int i = 0; i < PF_CHUNK_WORDS; i++) {
                uint64_t x = cw[i];
                while (x) {
                    int b = __builtin_ctzll(x);
                    pf_put16(p, (uint16_t)(i * 64 + b));
                    p += 2;
                    x &= x - 1;
                }
            }
        } else {
            runflags[k >> 3] |= (uint8_t)(1u << (k & 7));
            pf_put16(p, (uint16_t)runs[c]);
            p += 2;
            /* run starts: set bits whose predecessor is clear; run ends: set bits whose successor is clear */
            uint64_t carry = 0;
            int32_t start = -1;
            for (int i = 0; i < PF_CHUNK_WORDS; i++) {
                uint64_t x = cw[i];
                uint64_t next_low = (i + 1 < PF_CHUNK_WORDS) ? (cw[i + 1] & 1) : 0;
                uint64_t starts = x & ~((x << 1) | carry);
                uint64_t ends = x & ~((x >> 1) | (next_low << 63));
                carry = x >> 63;
                while (starts | ends) {
                    int bs = starts ? __builtin_ctzll(starts) : 64;
                    int be = ends ? __builtin_ctzll(ends) : 64;
                    if (bs <= be && start < 0) {
                        start = i * 64 + bs;
                        starts &= starts - 1;
                    } else {
                        int32_t end = i * 64 + be;
                        pf_put16(p, (uint16_t)start);
                        pf_put16(p + 2, (uint16_t)(end - start));
                        p += 4;
                        start = -1;
                        ends &= ends - 1;
                    }
                }
            }
        }
        k++;
    }
    return (size_t)(p - out);
}

/* Header of a bitmap already accepted by pf_roaring_check. */
typedef struct {
    uint32_t size;
    int has_run;
    const uint8_t *runflags;
    const uint8_t *desc;
    size_t body;   /* offset of the first container */
} pf_rheader;

static void pf_parse_header(const uint8_t *buf, pf_rheader *h) {
    uint32_t cookie = pf_get32(buf);
    size_t p;
    if ((cookie & 0xFFFF) == PF_SERIAL_COOKIE) {
        h->has_run = 1;
        h->size = (cookie >> 16) + 1;
        h->runflags = buf + 4;
        p = 4 + (h->size + 7) / 8;
    } else {
        h->has_run = 0;
        h->size = pf_get32(buf + 4);
        h->runflags = NULL;
        p = 8;
    }
    h->desc = buf + p;
    p += 4 * (size_t)h->size;
    if (!h->has_run || h->size >= PF_NO_OFFSET_THRESHOLD) p += 4 * (size_t)h->size;
    h->body = p;
}

/* Highest container key of a validated bitmap, -1 when empty. */
static int32_t pf_roaring_last_key(const uint8_t *buf) {
    pf_rheader h;
    pf_parse_header(buf, &h);
    if (!h.size) return -1;
    return (int32_t)pf_get16(h.desc + 4 * (h.size - 1));
}

/* OR the validated bitmap into bit set w, container key k landing on chunk
 * (chunk0 + k).  The caller guarantees w holds every such chunk. */
static void pf_roaring_or_into_bits(const uint8_t *buf, uint64_t *w, uint64_t chunk0) {
    pf_rheader h;
    pf_parse_header(buf, &h);
    size_t p = h.body;
    for (uint32_t c = 0; c < h.size; c++) {
        uint32_t key = pf_get16(h.desc + 4 * c);
        uint32_t card = (uint32_t)pf_get16(h.desc + 4 * c + 2) + 1;
        uint64_t *cw = w + (chunk0 + key) * PF_CHUNK_WORDS;
        int is_run = h.has_run && ((h.runflags[c >> 3] >> (c & 7)) & 1);
        if (is_run) {
            uint32_t nruns = pf_get16(buf + p);
            p += 2;
            for (uint32_t r = 0; r < nruns; r++) {
                uint32_t s = pf_get16(buf + p), l = pf_get16(buf + p + 2);
                uint32_t e = s + l; /* inclusive */
                p += 4;
                uint32_t ws = s >> 6, we = e >> 6;
                uint64_t ms = ~UINT64_C(0) << (s & 63);
                uint64_t me = ~UINT64_C(0) >> (63 - (e & 63));
                if (ws == we) {
                    cw[ws] |= ms & me;
                } else {
                    cw[ws] |= ms;
                    for (uint32_t i = ws + 1; i < we; i++) cw[i] = ~UINT64_C(0);
                    cw[we] |= me;
                }
            }
        } else if (card > PF_ARRAY_MAX) {
            for (int i = 0; i < PF_CHUNK_WORDS; i++) cw[i] |= pf_get64le(buf + p + 8 * i);
            p += 8192;
        } else {
            for (uint32_t i = 0; i < card; i++) {
                uint32_t v = pf_get16(buf + p + 2 * i);
                cw[v >> 6] |= UINT64_C(1) << (v & 63);
            }
            p += 2 * (size_t)card;
        }
    }
}

/* Append the validated bitmap's values as (high << 32 | value) to out (ascending). */
static size_t pf_roaring_to_sorted(const uint8_t *buf, uint64_t high, uint64_t *out) {
    pf_rheader h;
    pf_parse_header(buf, &h);
    size_t p = h.body, n = 0;
    uint64_t base_hi = high << 32;
    for (uint32_t c = 0; c < h.size; c++) {
        uint64_t key = pf_get16(h.desc + 4 * c);
        uint32_t card = (uint32_t)pf_get16(h.desc + 4 * c + 2) + 1;
        uint64_t base = base_hi | (key << 16);
        int is_run = h.has_run && ((h.runflags[c >> 3] >> (c & 7)) & 1);
        if (is_run) {
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
#endif

/* ---- one-pass validated decode into a bit set ----
 * pf_roaring_scan checks the header and every container's extent (no content
 * checks) and returns the serialized size, the header cardinality and the last
 * container key.  pf_roaring_fill_bits then validates the content (keys
 * increasing, arrays strictly increasing, runs ordered, cardinalities equal to
 * the content) while ORing it into the bit set, so the bytes are read once. */
static int64_t pf_roaring_scan(const uint8_t *buf, size_t len, const char **err, size_t *err_at,
                               uint64_t *card_out, int32_t *last_key) {
    size_t p;
    uint32_t size;
    int has_run;
    const uint8_t *runflags = NULL;
    *card_out = 0;
    *last_key = -1;
    if (len < 4) { *err = "roaring bitmap truncated (cookie)"; *err_at = 0; return -1; }
    uint32_t cookie = pf_get32(buf);
    if ((cookie & 0xFFFF) == PF_SERIAL_COOKIE) {
        has_run = 1;
        size = (cookie >> 16) + 1;
        p = 4;
        if (len - p < (size + 7) / 8) { *err = "roaring bitmap truncated (run flags)"; *err_at = p; return -1; }
        runflags = buf + p;
        p += (size + 7) / 8;
    } else if (cookie == PF_SERIAL_COOKIE_NO_RUN) {
        has_run = 0;
        if (len < 8) { *err = "roaring bitmap truncated (container count)"; *err_at = 4; return -1; }
        size = pf_get32(buf + 4);
        if (size > 65536) { *err = "roaring bitmap claims more than 65536 containers"; *err_at = 4; return -1; }
        p = 8;
    } else {
        *err = "not a portable roaring bitmap (bad cookie)"; *err_at = 0; return -1;
    }
    if ((uint64_t)(len - p) < 4ull * size) { *err = "roaring bitmap truncated (container headers)"; *err_at = p; return -1; }
    const uint8_t *desc = buf + p;
    p += 4 * (size_t)size;
    if (!has_run || size >= PF_NO_OFFSET_THRESHOLD) {
        if ((uint64_t)(len - p) < 4ull * size) { *err = "roaring bitmap truncated (container offsets)"; *err_at = p; return -1; }
        p += 4 * (size_t)size;
    }
    uint64_t total = 0;
    for (uint32_t c = 0; c < size; c++) {
        uint32_t card = (uint32_t)pf_get16(desc + 4 * c + 2) + 1;
        int is_run = has_run && (runflags[c >> 3] >> (c & 7)) & 1;
        if (is_run) {
            if (len - p < 2) { *err = "roaring run container truncated"; *err_at = p; return -1; }
            uint32_t nruns = pf_get16(buf + p);
            p += 2;
            if ((uint64_t)(len - p) < 4ull * nruns) { *err = "roaring run container truncated"; *err_at = p; return -1; }
            p += 4 * (size_t)nruns;
        } else if (card > PF_ARRAY_MAX) {
            if (len - p < 8192) { *err = "roaring bitmap container truncated"; *err_at = p; return -1; }
            p += 8192;
        } else {
            if ((uint64_t)(len - p) < 2ull * card) { *err = "roaring array container truncated"; *err_at = p; return -1; }
            p += 2 * (size_t)card;
        }
        total += card;
    }
    if (size) *last_key = (int32_t)pf_get16(desc + 4 * (size - 1));
    *card_out = total;
    return (int64_t)p;
}

/* Requires a successful pf_roaring_scan of buf; w must hold chunks
 * chunk0 .. chunk0 + last_key.  Returns 0, or -1 with *err / *err_at. */
static int pf_roaring_fill_bits(const uint8_t *buf, uint64_t *w, uint64_t chunk0, const char **err, size_t *err_at) {
    pf_rheader h;
    pf_parse_header(buf, &h);
    size_t p = h.body;
    int32_t prev_key = -1;
    /* the caller sized w by the last key: no key may exceed it (checked before writing) */
    uint32_t max_key = h.size ? pf_get16(h.desc + 4 * (h.size - 1)) : 0;
    for (uint32_t c = 0; c < h.size; c++) {
        uint32_t key = pf_get16(h.desc + 4 * c);
        uint32_t card = (uint32_t)pf_get16(h.desc + 4 * c + 2) + 1;
        if ((int32_t)key <= prev_key || key > max_key) { *err = "roaring container keys not increasing"; *err_at = (size_t)(h.desc - buf) + 4 * c; return -1; }
        prev_key = (int32_t)key;
        uint64_t *cw = w + (chunk0 + key) * PF_CHUNK_WORDS;
        int is_run = h.has_run && ((h.runflags[c >> 3] >> (c & 7)) & 1);
        if (is_run) {
            uint32_t nruns = pf_get16(buf + p);
            p += 2;
            int64_t last_end = -1;
            uint64_t rc = 0;
            for (uint32_t r = 0; r < nruns; r++) {
                uint32_t s = pf_get16(buf + p), l = pf_get16(buf + p + 2);
                if ((int64_t)s <= last_end || s + l > 0xFFFF) { *err = "roaring run container has overlapping or overflowing runs"; *err_at = p; return -1; }
                uint32_t e = s + l;
                last_end = e;
                rc += l + 1;
                p += 4;
                uint32_t ws = s >> 6, we = e >> 6;
                uint64_t ms = ~UINT64_C(0) << (s & 63);
                uint64_t me = ~UINT64_C(0) >> (63 - (e & 63));
                if (ws == we) {
                    cw[ws] |= ms & me;
                } else {
                    cw[ws] |= ms;
                    for (uint32_t i = ws + 1; i < we; i++) cw[i] = ~UINT64_C(0);
                    cw[we] |= me;
                }
            }
            if (rc != card) { *err = "roaring run container cardinality mismatch"; *err_at = p; return -1; }
        } else if (card > PF_ARRAY_MAX) {
            uint64_t bc = 0;
            for (int i = 0; i < PF_CHUNK_WORDS; i++) {
                uint64_t x = pf_get64le(buf + p + 8 * i);
                cw[i] |= x;
                bc += (uint64_t)pf_popcount64(x);
            }
            if (bc != card) { *err = "roaring bitmap container cardinality mismatch"; *err_at = p; return -1; }
            p += 8192;
        } else {
            int32_t last = -1;
            for (uint32_t i = 0; i < card; i++) {
                int32_t v = pf_get16(buf + p + 2 * i);
                if (v <= last) { *err = "roaring array container not strictly increasing"; *err_at = p + 2 * i; return -1; }
                last = v;
                cw[v >> 6] |= UINT64_C(1) << (v & 63);
            }
            p += 2 * (size_t)card;
        }
    }
    return 0;
}
