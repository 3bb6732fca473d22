/* Java RoaringBitmap's portable 32-bit format, exactly as Paimon writes it
 * (runOptimize() then serialize()): container choice, run conversion rule and
 * layout follow FORMAT_NOTES.md section 2.  Input: strictly increasing uint32.
 * pf_roaring_check validates untrusted bytes without trusting any count. */
#ifndef PF_ROARING32_H
#define PF_ROARING32_H
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define PF_SERIAL_COOKIE_NO_RUN 12346u
#define PF_SERIAL_COOKIE 12347u
#define PF_NO_OFFSET_THRESHOLD 4
#define PF_ARRAY_MAX 4096

static inline void pf_put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static inline void pf_put32(uint8_t *p, uint32_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24); }
static inline uint16_t pf_get16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline uint32_t pf_get32(const uint8_t *p) { return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24); }

/* container kinds */
enum { PF_ARRAY = 0, PF_BITMAP = 1, PF_RUN = 2 };

static inline int pf_container_kind(uint32_t card, uint32_t nruns) {
    if (card > PF_ARRAY_MAX) return (2 + 4 * (uint64_t)nruns < 8192) ? PF_RUN : PF_BITMAP;
    return (2 + 4 * (uint64_t)nruns < 2 * (uint64_t)card) ? PF_RUN : PF_ARRAY;
}

static inline uint32_t pf_container_bytes(int kind, uint32_t card, uint32_t nruns) {
    return kind == PF_RUN ? 2 + 4 * nruns : (kind == PF_BITMAP ? 8192 : 2 * card);
}

/* Scan one container starting at v[i] (strictly increasing values); returns the index
 * after it.  A container whose values are one unbroken run (a row range's rows) is found by
 * a binary search for its end and one subtraction, without visiting its values. */
static inline size_t pf_scan_container(const uint32_t *v, size_t n, size_t i, uint32_t *card, uint32_t *nruns) {
    uint32_t key = v[i] >> 16;
    if (n - i > 64 && (v[i + 64] >> 16) == key) {   /* more than 64 values: worth a search */
        size_t lo = i + 65, hi = n - i > 65536 ? i + 65536 : n;   /* the end lies in [lo, hi] */
        while (lo < hi) {   /* the first index in [lo, hi) whose key differs, else hi */
            size_t mid = lo + (hi - lo) / 2;
            if ((v[mid] >> 16) == key) lo = mid + 1;
            else hi = mid;
        }
        if (v[lo - 1] - v[i] == (uint32_t)(lo - 1 - i)) {   /* increasing: no gap anywhere */
            *card = (uint32_t)(lo - i);
            *nruns = 1;
            return lo;
        }
    }
    size_t j = i + 1;
    uint32_t runs = 1;
    while (j < n && (v[j] >> 16) == key) {
        if (v[j] != v[j - 1] + 1) runs++;
        j++;
    }
    *card = (uint32_t)(j - i);
    *nruns = runs;
    return j;
}

/* Bytes before the first container of a bitmap of `size` containers. */
static inline uint64_t pf_roaring_head_bytes(uint64_t size, int has_run) {
    if (has_run) return 4 + (size + 7) / 8 + 4 * size + (size >= PF_NO_OFFSET_THRESHOLD ? 4 * size : 0);
    return 8 + 8 * size;
}

/* Write the cookie (and run flags, zeroed); returns where the containers go
 * and sets the descriptor / offset (NULL when absent) / run-flag pointers. */
static inline uint8_t *pf_roaring_put_head(uint8_t *out, size_t size, int has_run, uint8_t **desc, uint8_t **offs,
                                           uint8_t **runflags) {
    uint8_t *p = out;
    *runflags = NULL;
    if (has_run) {
        pf_put32(p, PF_SERIAL_COOKIE | ((uint32_t)(size - 1) << 16));
        p += 4;
        *runflags = p;
        memset(p, 0, (size + 7) / 8);
        p += (size + 7) / 8;
    } else {
        pf_put32(p, PF_SERIAL_COOKIE_NO_RUN);
        pf_put32(p + 4, (uint32_t)size);
        p += 8;
    }
    *desc = p;
    p += 4 * size;
    *offs = NULL;
    if (!has_run || size >= PF_NO_OFFSET_THRESHOLD) {
        *offs = p;
        p += 4 * size;
    }
    return p;
}

/* Parsed header of portable bytes. */
typedef struct {
    uint32_t size;
    int has_run;
    const uint8_t *runflags;
    const uint8_t *desc;
    size_t body;   /* offset of the first container */
} pf_rheader;

static inline int pf_is_run(const pf_rheader *h, uint32_t c) {
    return h->has_run && ((h->runflags[c >> 3] >> (c & 7)) & 1);
}

/* Parse and bounds-check the header of buf[0..len) (pass len = SIZE_MAX for
 * bytes already validated).  Returns 0, or -1 with *err / *err_at. */
static int pf_roaring_head(const uint8_t *buf, size_t len, pf_rheader *h, const char **err, size_t *err_at) {
    size_t p;
    h->runflags = NULL;
    if (len < 4) { *err = "roaring bitmap truncated (cookie)"; *err_at = 0; return -1; }
    uint32_t cookie = pf_get32(buf);
    if ((cookie & 0xFFFF) == PF_SERIAL_COOKIE) {
        h->has_run = 1;
        h->size = (cookie >> 16) + 1;
        p = 4;
        if (len - p < (h->size + 7) / 8) { *err = "roaring bitmap truncated (run flags)"; *err_at = p; return -1; }
        h->runflags = buf + p;
        p += (h->size + 7) / 8;
    } else if (cookie == PF_SERIAL_COOKIE_NO_RUN) {
        h->has_run = 0;
        if (len < 8) { *err = "roaring bitmap truncated (container count)"; *err_at = 4; return -1; }
        h->size = pf_get32(buf + 4);
        if (h->size > 65536) { *err = "roaring bitmap claims more than 65536 containers"; *err_at = 4; return -1; }
        p = 8;
    } else {
        *err = "not a portable roaring bitmap (bad cookie)"; *err_at = 0; return -1;
    }
    if ((uint64_t)(len - p) < 4ull * h->size) { *err = "roaring bitmap truncated (container headers)"; *err_at = p; return -1; }
    h->desc = buf + p;
    p += 4 * (size_t)h->size;
    if (!h->has_run || h->size >= PF_NO_OFFSET_THRESHOLD) {
        if ((uint64_t)(len - p) < 4ull * h->size) { *err = "roaring bitmap truncated (container offsets)"; *err_at = p; return -1; }
        p += 4 * (size_t)h->size;
    }
    h->body = p;
    return 0;
}

/* -1 if not strictly increasing, else the serialized size. */
static int64_t pf_roaring_size(const uint32_t *v, size_t n) {
    size_t i = 0, size = 0;
    int has_run = 0;
    uint64_t body = 0;
    for (size_t k = 1; k < n; k++) if (v[k] <= v[k - 1]) return -1;
    while (i < n) {
        uint32_t card, nruns;
        i = pf_scan_container(v, n, i, &card, &nruns);
        int kind = pf_container_kind(card, nruns);
        if (kind == PF_RUN) has_run = 1;
        body += pf_container_bytes(kind, card, nruns);
        size++;
    }
    uint64_t head = pf_roaring_head_bytes(size, has_run);
    return (int64_t)(head + body);
}

/* Writes the serialized bitmap into out (pf_roaring_size bytes); returns bytes written. */
static size_t pf_roaring_write(const uint32_t *v, size_t n, uint8_t *out) {
    /* pass 1: container count and run presence */
    size_t i = 0, size = 0;
    int has_run = 0;
    while (i < n) {
        uint32_t card, nruns;
        i = pf_scan_container(v, n, i, &card, &nruns);
        if (pf_container_kind(card, nruns) == PF_RUN) has_run = 1;
        size++;
    }
    uint8_t *desc, *offs, *runflags;
    uint8_t *p = pf_roaring_put_head(out, size, has_run, &desc, &offs, &runflags);
    /* pass 2: containers */
    i = 0;
    size_t c = 0;
    while (i < n) {
        uint32_t card, nruns;
        size_t j = pf_scan_container(v, n, i, &card, &nruns);
        int kind = pf_container_kind(card, nruns);
        pf_put16(desc + 4 * c, (uint16_t)(v[i] >> 16));
        pf_put16(desc + 4 * c + 2, (uint16_t)(card - 1));
        if (offs) pf_put32(offs + 4 * c, (uint32_t)(p - out));
        if (kind == PF_RUN) {
            runflags[c >> 3] |= (uint8_t)(1u << (c & 7));
            pf_put16(p, (uint16_t)nruns);
            p += 2;
            size_t k = i;
            if (nruns == 1) {   /* one run: its start and length are known */
                pf_put16(p, (uint16_t)(v[i] & 0xFFFF));
                pf_put16(p + 2, (uint16_t)(j - i - 1));
                p += 4;
                k = j;
            }
            while (k < j) {
                size_t e = k + 1;
                while (e < j && v[e] == v[e - 1] + 1) e++;
                pf_put16(p, (uint16_t)(v[k] & 0xFFFF));
                pf_put16(p + 2, (uint16_t)(e - k - 1));
                p += 4;
                k = e;
            }
        } else if (kind == PF_BITMAP) {
            memset(p, 0, 8192);
            for (size_t k = i; k < j; k++) {
                uint32_t lo = v[k] & 0xFFFF;
                p[lo >> 3] |= (uint8_t)(1u << (lo & 7));
            }
            p += 8192;
        } else {
            for (size_t k = i; k < j; k++) { pf_put16(p, (uint16_t)(v[k] & 0xFFFF)); p += 2; }
        }
        c++;
        i = j;
    }
    return (size_t)(p - out);
}

/* Without -mpopcnt (or a "popcnt" target pragma before this header),
 * __builtin_popcountll is a libgcc call; SWAR is faster then. */
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

/* pf_roaring_walk flags */
#define PF_DEC_OR 0          /* OR into words; bitmap containers' cardinality recounted */
#define PF_DEC_NO_RECOUNT 2  /* do not recount bitmap containers (bytes already validated,
                              * or the cardinality field does not matter to the caller) */
#define PF_DEC_FILL 3        /* words are zero where the bitmap goes: bitmap containers
                              * are copied (implies PF_DEC_NO_RECOUNT) */

#define PF_WALK_EXTENTS 4    /* check the header and container extents only (no content) */
#define PF_DEC_CLEAR 8       /* with PF_DEC_FILL: words need not be zero beforehand; every word
                              * in [0, ceil(nbits / 64)) is written (a gap between containers and
                              * an array or run container's words are cleared first) */

/* The one walk over portable bytes buf[0..len) that validates them without
 * trusting any count: header, container extents and (unless PF_WALK_EXTENTS)
 * keys increasing, arrays strictly increasing, runs ordered and inside the
 * container, run and bitmap cardinalities equal to the header's.  When words
 * is not NULL the values are also decoded into it (value v sets bit v; values
 * must be < nbits, container keys <= the last key).  Returns the serialized
 * size (*card_out = total cardinality, *last_key = last container key or -1),
 * or -1 with *err / *err_at (and *bad = the offending value for a value >=
 * nbits, else -1).  Nothing is allocated.  Always inlined so that every
 * caller gets a loop specialised for its constant arguments. */
static inline __attribute__((always_inline)) int64_t
pf_roaring_walk(const uint8_t *buf, size_t len, uint64_t *words, int64_t nbits, int flags, uint64_t *card_out,
                int32_t *last_key, const char **err, size_t *err_at, int64_t *bad) {
    static const char *const beyond = "roaring bitmap holds a row beyond the index's rows";
    pf_rheader h;
    *bad = -1;
    *card_out = 0;
    *last_key = -1;
    if (pf_roaring_head(buf, len, &h, err, err_at) < 0) return -1;
    const int content = !(flags & PF_WALK_EXTENTS);
    size_t p = h.body;
    int64_t nwb = (nbits + 63) >> 6;  /* words that may hold values */
    int32_t prev_key = -1;
    uint32_t max_key = h.size ? pf_get16(h.desc + 4 * (h.size - 1)) : 0;
    uint64_t total = 0;
    int64_t cleared = 0; /* PF_DEC_CLEAR: words [0, cleared) are written or cleared */
    for (uint32_t c = 0; c < h.size; c++) {
        uint32_t key = pf_get16(h.desc + 4 * c);
        uint32_t card = (uint32_t)pf_get16(h.desc + 4 * c + 2) + 1;
        if (content && ((int32_t)key <= prev_key || (words && key > max_key))) {
            *err = "roaring container keys not increasing"; *err_at = (size_t)(h.desc - buf) + 4 * c; return -1;
        }
        prev_key = (int32_t)key;
        int64_t base = (int64_t)key << 16;
        if (words && content && (flags & PF_DEC_CLEAR)) {
            int64_t w0 = base >> 6, w1 = w0 + 1024;
            if (w0 > nwb) w0 = nwb;
            if (w1 > nwb) w1 = nwb;
            if (w0 > cleared) memset(words + cleared, 0, 8 * (size_t)(w0 - cleared));
            /* a bitmap container copies all its words in; the others set bits in cleared ones */
            if ((pf_is_run(&h, c) || card <= PF_ARRAY_MAX) && w1 > w0) memset(words + w0, 0, 8 * (size_t)(w1 - w0));
            if (w1 > cleared) cleared = w1;
        }
        if (pf_is_run(&h, c)) {
            if (len - p < 2) { *err = "roaring run container truncated"; *err_at = p; return -1; }
            uint32_t nruns = pf_get16(buf + p);
            p += 2;
            if ((uint64_t)(len - p) < 4ull * nruns) { *err = "roaring run container truncated"; *err_at = p; return -1; }
            if (content) {
                int64_t last_end = -2; /* so a first run may start at 0 */
                uint64_t rc = 0;
                for (uint32_t r = 0; r < nruns; r++) {
                    size_t q = p + 4 * (size_t)r;
                    uint32_t s0 = pf_get16(buf + q), l = pf_get16(buf + q + 2);
                    /* runs are maximal: a run touching the previous one (s0 == last_end + 1) is malformed too */
                    if ((int64_t)s0 <= last_end + 1 || s0 + l > 0xFFFF) { *err = "roaring run container has overlapping, adjacent or overflowing runs"; *err_at = q; return -1; }
                    last_end = s0 + l;
                    rc += l + 1;
                    if (words) {
                        int64_t s = base + s0, e = s + l;  /* inclusive */
                        if (e >= nbits) { *err = beyond; *err_at = q; *bad = e; return -1; }
                        int64_t ws = s >> 6, we = e >> 6;
                        uint64_t ms = ~UINT64_C(0) << (s & 63), me = ~UINT64_C(0) >> (63 - (e & 63));
                        if (ws == we) {
                            words[ws] |= ms & me;
                        } else {
                            words[ws] |= ms;
                            for (int64_t i = ws + 1; i < we; i++) words[i] = ~UINT64_C(0);
                            words[we] |= me;
                        }
                    }
                }
                if (rc != card) { *err = "roaring run container cardinality mismatch"; *err_at = p - 2; return -1; }
            }
            p += 4 * (size_t)nruns;
        } else if (card > PF_ARRAY_MAX) {
            if (len - p < 8192) { *err = "roaring bitmap container truncated"; *err_at = p; return -1; }
            if (content && words) {
                int64_t w0 = base >> 6;
                int64_t m = nwb - w0;  /* words of this container inside [0, nbits) */
                if (m > 1024) m = 1024;
                if (m < 0) m = 0;
                for (int64_t i = m; i < 1024; i++) {
                    uint64_t x = pf_get64le(buf + p + 8 * i);
                    if (x) { *err = beyond; *err_at = p + 8 * i; *bad = ((w0 + i) << 6) + 63 - __builtin_clzll(x); return -1; }
                }
                if (m > 0 && w0 + m == nwb && (nbits & 63)) {
                    uint64_t x = pf_get64le(buf + p + 8 * (m - 1));
                    if (x >> (nbits & 63)) { *err = beyond; *err_at = p + 8 * (m - 1); *bad = ((nwb - 1) << 6) + 63 - __builtin_clzll(x); return -1; }
                }
                uint64_t *cw = words + w0;
                if ((flags & PF_DEC_FILL) == PF_DEC_FILL) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
                    if (m > 0) memcpy(cw, buf + p, 8 * (size_t)m);
#else
                    for (int64_t i = 0; i < m; i++) cw[i] = pf_get64le(buf + p + 8 * i);
#endif
                } else if (flags & PF_DEC_NO_RECOUNT) {
                    for (int64_t i = 0; i < m; i++) cw[i] |= pf_get64le(buf + p + 8 * i);
                } else {
                    uint64_t bc = 0;
                    for (int64_t i = 0; i < m; i++) {
                        uint64_t x = pf_get64le(buf + p + 8 * i);
                        cw[i] |= x;
                        bc += (uint64_t)pf_popc64(x);
                    }
                    if (bc != card) { *err = "roaring bitmap container cardinality mismatch"; *err_at = p; return -1; }
                }
            } else if (content && !(flags & PF_DEC_NO_RECOUNT)) {
                uint64_t bc = 0;
                for (int i = 0; i < 1024; i++) bc += (uint64_t)pf_popc64(pf_get64le(buf + p + 8 * i));
                if (bc != card) { *err = "roaring bitmap container cardinality mismatch"; *err_at = p; return -1; }
            }
            p += 8192;
        } else {
            if ((uint64_t)(len - p) < 2ull * card) { *err = "roaring array container truncated"; *err_at = p; return -1; }
            if (content) {
                int32_t last = -1;
                for (uint32_t i = 0; i < card; i++) {
                    int32_t lo = pf_get16(buf + p + 2 * i);
                    if (lo <= last) { *err = "roaring array container not strictly increasing"; *err_at = p + 2 * i; return -1; }
                    last = lo;
                    if (words) {
                        int64_t v = base + lo;
                        if (v >= nbits) { *err = beyond; *err_at = p + 2 * i; *bad = v; return -1; }
                        words[v >> 6] |= UINT64_C(1) << (v & 63);
                    }
                }
            }
            p += 2 * (size_t)card;
        }
        total += card;
    }
    if (words && content && (flags & PF_DEC_CLEAR) && nwb > cleared) memset(words + cleared, 0, 8 * (size_t)(nwb - cleared));
    if (h.size) *last_key = (int32_t)max_key;
    *card_out = total;
    return (int64_t)p;
}

/* Validate portable bytes buf[0..len). Returns the serialized size (>= 8), or -1
 * with *err set to a static message and *err_at to the offset of the problem.
 * *card_out receives the total cardinality. Nothing is allocated. */
static int64_t pf_roaring_check(const uint8_t *buf, size_t len, const char **err, size_t *err_at, uint64_t *card_out) {
    int32_t last_key;
    int64_t bad;
    return pf_roaring_walk(buf, len, NULL, 0, 0, card_out, &last_key, err, err_at, &bad);
}
#endif
