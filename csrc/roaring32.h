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

/* Scan one container starting at v[i]; returns the index after it. */
static inline size_t pf_scan_container(const uint32_t *v, size_t n, size_t i, uint32_t *card, uint32_t *nruns) {
    uint32_t key = v[i] >> 16;
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

/* Validate portable bytes buf[0..len). Returns the serialized size (>= 8), or -1
 * with *err set to a static message and *err_at to the offset of the problem.
 * *card_out receives the total cardinality. Nothing is allocated. */
static int64_t pf_roaring_check(const uint8_t *buf, size_t len, const char **err, size_t *err_at, uint64_t *card_out) {
    pf_rheader h;
    *card_out = 0;
    if (pf_roaring_head(buf, len, &h, err, err_at) < 0) return -1;
    uint32_t size = h.size;
    const uint8_t *desc = h.desc;
    size_t p = h.body;
    int32_t prev_key = -1;
    uint64_t total = 0;
    for (uint32_t c = 0; c < size; c++) {
        uint32_t key = pf_get16(desc + 4 * c);
        uint32_t card = (uint32_t)pf_get16(desc + 4 * c + 2) + 1;
        if ((int32_t)key <= prev_key) { *err = "roaring container keys not increasing"; *err_at = (size_t)(desc - buf) + 4 * c; return -1; }
        prev_key = (int32_t)key;
        if (pf_is_run(&h, c)) {
            if (len - p < 2) { *err = "roaring run container truncated"; *err_at = p; return -1; }
            uint32_t nruns = pf_get16(buf + p);
            p += 2;
            if ((uint64_t)(len - p) < 4ull * nruns) { *err = "roaring run container truncated"; *err_at = p; return -1; }
            int64_t last_end = -1;
            uint64_t rc = 0;
            for (uint32_t r = 0; r < nruns; r++) {
                uint32_t s = pf_get16(buf + p + 4 * r), l = pf_get16(buf + p + 4 * r + 2);
                if ((int64_t)s <= last_end || s + l > 0xFFFF) { *err = "roaring run container has overlapping or overflowing runs"; *err_at = p + 4 * r; return -1; }
                last_end = s + l;
                rc += l + 1;
            }
            if (rc != card) { *err = "roaring run container cardinality mismatch"; *err_at = p - 2; return -1; }
            p += 4 * (size_t)nruns;
        } else if (card > PF_ARRAY_MAX) {
            if (len - p < 8192) { *err = "roaring bitmap container truncated"; *err_at = p; return -1; }
            uint64_t bc = 0;
            for (int w = 0; w < 1024; w++) { uint64_t x; memcpy(&x, buf + p + 8 * w, 8); bc += (uint64_t)__builtin_popcountll(x); }
            if (bc != card) { *err = "roaring bitmap container cardinality mismatch"; *err_at = p; return -1; }
            p += 8192;
        } else {
            if ((uint64_t)(len - p) < 2ull * card) { *err = "roaring array container truncated"; *err_at = p; return -1; }
            int32_t last = -1;
            for (uint32_t k = 0; k < card; k++) {
                int32_t x = pf_get16(buf + p + 2 * k);
                if (x <= last) { *err = "roaring array container not strictly increasing"; *err_at = p + 2 * k; return -1; }
                last = x;
            }
            p += 2 * (size_t)card;
        }
        total += card;
    }
    *card_out = total;
    return (int64_t)p;
}
#endif
