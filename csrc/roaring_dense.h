/* Java's portable 32-bit roaring bytes <-> dense bit sets (bit i of 64-bit
 * word i>>6 = value i): the one shared set of primitives used by the bitmap
 * index (bitmap.pyx), deletion vectors (dv.pyx / dvbits.h) and the bit-sliced
 * indexes (bitslice.pyx / bitslice.h).  Container choice, run rule and layout
 * are exactly those of roaring32.h (which it reuses); a hypothesis test checks
 * the bytes against pf_roaring_write.
 *
 * A "chunk" is 65536 bits = 1024 words = one roaring container.
 *  - pf_dense_stats / pf_dense_stats_n: cardinality and runs of one chunk;
 *  - pf_dense_measure / pf_dense_emit: encoder, containers given either as
 *    contiguous words (key = chunk index, the last chunk may be short) or as
 *    an array of per-container pointers with their keys;
 *  - pf_roaring_decode: validated decoder into dense words (OR into them, or
 *    fill zeroed words without recounting bitmap containers). */
#ifndef PF_ROARING_DENSE_H
#define PF_ROARING_DENSE_H
#include "roaring32.h"

#define PF_CHUNK_WORDS 1024

/* cardinality and number of runs of the first nw (<= 1024) words of a chunk */
#define PF_DENSE_STATS_BODY(POPC)                                   \
    uint64_t carry = 0;                                             \
    uint32_t c = 0, r = 0;                                          \
    for (int64_t j = 0; j < nw; j++) {                              \
        uint64_t x = w[j];                                          \
        if (x) {                                                    \
            c += (uint32_t)POPC(x);                                 \
            r += (uint32_t)POPC(x & ~((x << 1) | carry));           \
        }                                                           \
        carry = x >> 63;                                            \
    }                                                               \
    *card = c;                                                      \
    *nruns = r;

static void pf_dense_stats_generic(const uint64_t *w, int64_t nw, uint32_t *card, uint32_t *nruns) {
    PF_DENSE_STATS_BODY(pf_popc64)
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__POPCNT__)
/* the hardware instruction where the CPU has it (chosen once at run time) */
__attribute__((target("popcnt"))) static void pf_dense_stats_hw(const uint64_t *w, int64_t nw, uint32_t *card,
                                                                uint32_t *nruns) {
    PF_DENSE_STATS_BODY(__builtin_popcountll)
}
static inline void pf_dense_stats_n(const uint64_t *w, int64_t nw, uint32_t *card, uint32_t *nruns) {
    static int hw = -1;
    if (hw < 0) hw = __builtin_cpu_supports("popcnt") ? 1 : 0;
    if (hw) pf_dense_stats_hw(w, nw, card, nruns);
    else pf_dense_stats_generic(w, nw, card, nruns);
}
#else
static inline void pf_dense_stats_n(const uint64_t *w, int64_t nw, uint32_t *card, uint32_t *nruns) {
    pf_dense_stats_generic(w, nw, card, nruns);
}
#endif

static inline void pf_dense_stats(const uint64_t *w, uint32_t *card, uint32_t *nruns) {
    pf_dense_stats_n(w, PF_CHUNK_WORDS, card, nruns);
}

/* Body of one container of the given kind from nw (<= 1024) words; returns the end. */
static inline uint8_t *pf_dense_put_container(uint8_t *p, const uint64_t *cw, int64_t nw, int kind, uint32_t nruns) {
    if (kind == PF_RUN) {
        pf_put16(p, (uint16_t)nruns);
        p += 2;
        /* run starts: set bits whose predecessor is clear; ends: set bits whose successor is clear */
        uint64_t carry = 0;
        uint32_t s = 0;
        for (int64_t j = 0; j < nw; j++) {
            uint64_t x = cw[j];
            uint64_t next_lo = (j + 1 < nw) ? (cw[j + 1] & 1) : 0;
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
        memcpy(p, cw, 8 * (size_t)nw);  /* the container is the bit set's words in little-endian */
#else
        for (int64_t j = 0; j < nw; j++)
            for (int k = 0; k < 8; k++) p[8 * j + k] = (uint8_t)(cw[j] >> (8 * k));
#endif
        if (nw < PF_CHUNK_WORDS) memset(p + 8 * nw, 0, 8 * (size_t)(PF_CHUNK_WORDS - nw));
        p += 8192;
    } else {
        for (int64_t j = 0; j < nw; j++) {
            uint64_t x = cw[j];
            while (x) {
                pf_put16(p, (uint16_t)(((uint32_t)j << 6) | (uint32_t)__builtin_ctzll(x)));
                p += 2;
                x &= x - 1;
            }
        }
    }
    return p;
}

/* Where the containers of one bitmap come from: either cws[ch] (1024 words
 * each, key keys[ch]) or, when cws is NULL, the contiguous words[0..nwords)
 * cut into n = ceil(nwords / 1024) chunks with key = chunk index.  plain:
 * array / bitmap containers only (no run containers; not Java's choice). */
typedef struct {
    const uint64_t *words;
    int64_t nwords;
    const uint64_t *const *cws;
    const uint32_t *keys;
    size_t n;
    int plain;
} pf_dense_src;

static inline pf_dense_src pf_dense_src_words(const uint64_t *words, int64_t nwords, int plain) {
    pf_dense_src s = {words, nwords, NULL, NULL, (size_t)((nwords + PF_CHUNK_WORDS - 1) / PF_CHUNK_WORDS), plain};
    return s;
}

static inline pf_dense_src pf_dense_src_chunks(const uint64_t *const *cws, const uint32_t *keys, size_t n) {
    pf_dense_src s = {NULL, 0, cws, keys, n, 0};
    return s;
}

static inline const uint64_t *pf_dense_chunk(const pf_dense_src *s, size_t ch, int64_t *nw, uint32_t *key) {
    if (s->cws) {
        *nw = PF_CHUNK_WORDS;
        if (key) *key = s->keys[ch];
        return s->cws[ch];
    }
    int64_t left = s->nwords - (int64_t)ch * PF_CHUNK_WORDS;
    *nw = left < PF_CHUNK_WORDS ? left : PF_CHUNK_WORDS;
    if (key) *key = (uint32_t)ch;
    return s->words + ch * PF_CHUNK_WORDS;
}

static inline int pf_dense_kind(const pf_dense_src *s, uint32_t card, uint32_t nruns) {
    if (s->plain) return card > PF_ARRAY_MAX ? PF_BITMAP : PF_ARRAY;
    return pf_container_kind(card, nruns);
}

/* Fills card[]/nruns[] (s->n entries each) and returns the serialized size. */
static int64_t pf_dense_measure(const pf_dense_src *s, uint32_t *card, uint32_t *nruns) {
    size_t size = 0;
    int has_run = 0;
    uint64_t body = 0;
    for (size_t ch = 0; ch < s->n; ch++) {
        int64_t nw;
        const uint64_t *cw = pf_dense_chunk(s, ch, &nw, NULL);
        pf_dense_stats_n(cw, nw, &card[ch], &nruns[ch]);
        if (!card[ch]) continue;
        int kind = pf_dense_kind(s, card[ch], nruns[ch]);
        if (kind == PF_RUN) has_run = 1;
        body += pf_container_bytes(kind, card[ch], nruns[ch]);
        size++;
    }
    return (int64_t)(pf_roaring_head_bytes(size, has_run) + body);
}

/* Writes exactly what pf_dense_measure measured (same card/nruns); returns bytes written. */
static size_t pf_dense_emit(const pf_dense_src *s, const uint32_t *card, const uint32_t *nruns, uint8_t *out) {
    size_t size = 0;
    int has_run = 0;
    for (size_t ch = 0; ch < s->n; ch++) {
        if (!card[ch]) continue;
        if (pf_dense_kind(s, card[ch], nruns[ch]) == PF_RUN) has_run = 1;
        size++;
    }
    uint8_t *desc, *offs, *runflags;
    uint8_t *p = pf_roaring_put_head(out, size, has_run, &desc, &offs, &runflags);
    size_t c = 0;
    for (size_t ch = 0; ch < s->n; ch++) {
        if (!card[ch]) continue;
        int64_t nw;
        uint32_t key;
        const uint64_t *cw = pf_dense_chunk(s, ch, &nw, &key);
        int kind = pf_dense_kind(s, card[ch], nruns[ch]);
        pf_put16(desc + 4 * c, (uint16_t)key);
        pf_put16(desc + 4 * c + 2, (uint16_t)(card[ch] - 1));
        if (offs) pf_put32(offs + 4 * c, (uint32_t)(p - out));
        if (kind == PF_RUN) runflags[c >> 3] |= (uint8_t)(1u << (c & 7));
        p = pf_dense_put_container(p, cw, nw, kind, nruns[ch]);
        c++;
    }
    return (size_t)(p - out);
}

/* Containers given as pointers to 1024-word bit sets with their keys
 * (ascending); empty ones are skipped.  pf_dense_size fills card/nruns and
 * returns the serialized size; pf_dense_write writes exactly that many bytes. */
static int64_t pf_dense_size(const uint64_t *const *cw, size_t n, uint32_t *card, uint32_t *nruns) {
    pf_dense_src s = pf_dense_src_chunks(cw, NULL, n);
    return pf_dense_measure(&s, card, nruns);
}

static size_t pf_dense_write(const uint64_t *const *cws, const uint32_t *keys, size_t n, const uint32_t *card,
                             const uint32_t *nruns, uint8_t *out) {
    pf_dense_src s = pf_dense_src_chunks(cws, keys, n);
    return pf_dense_emit(&s, card, nruns, out);
}

/* Contiguous words (key = chunk index; nwords need not be a whole number of
 * chunks).  card/nruns hold ceil(nwords / 1024) entries. */
static int64_t pf_words_size(const uint64_t *words, int64_t nwords, int plain, uint32_t *card, uint32_t *nruns) {
    pf_dense_src s = pf_dense_src_words(words, nwords, plain);
    return pf_dense_measure(&s, card, nruns);
}

static size_t pf_words_write(const uint64_t *words, int64_t nwords, int plain, const uint32_t *card,
                             const uint32_t *nruns, uint8_t *out) {
    pf_dense_src s = pf_dense_src_words(words, nwords, plain);
    return pf_dense_emit(&s, card, nruns, out);
}

/* Validate buf[0..len) completely (see pf_roaring_walk) while decoding it
 * into words: value v sets bit v.  Values must be < nbits (words holds at
 * least ceil(nbits / 64) words).  Returns the serialized size, or -1 with
 * *err / *err_at (and *bad = the offending value for a value >= nbits, else
 * -1).  On error words may be partly written. */
static int64_t pf_roaring_decode(const uint8_t *buf, size_t len, uint64_t *words, int64_t nbits, int flags,
                                 const char **err, size_t *err_at, int64_t *bad) {
    uint64_t card;
    int32_t last_key;
    return pf_roaring_walk(buf, len, words, nbits, flags, &card, &last_key, err, err_at, bad);
}

#endif
