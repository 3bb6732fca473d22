/* Bitmap global index helpers: key kinds and their logical order, var-ints,
 * an LSD radix sort of (key, row id) records and a byte-string sort.
 * Header-only; included by paimon_fast/_kernels/globalindex.pyx.
 *
 * Serialized keys follow Paimon's KeySerializer (little-endian fixed-width
 * integers, floatToIntBits / doubleToLongBits, millis [+ var-int nanos] for
 * timestamps, BigInteger.toByteArray for wide decimals, raw UTF-8 for strings).
 * Their *logical* order is what the dictionary is sorted by; it is captured by
 * an order key (hi: signed 64, lo: unsigned 64) compared lexicographically.
 */
#ifndef PF_GINDEX_H
#define PF_GINDEX_H
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "xxh64.h"

#define GK_I8 1
#define GK_I16 2
#define GK_I32 3
#define GK_I64 4
#define GK_BOOL 5
#define GK_F32 6
#define GK_F64 7
#define GK_TSN 8    /* i64 millis + var-int nano-of-millisecond */
#define GK_BIGDEC 9 /* big-endian two's complement, 1..16 bytes */
#define GK_BYTES 10 /* unsigned lexicographic */

/* ------------------------------------------------------------ var-ints */

static inline int pf_varint_size(uint64_t v) {
    int n = 1;
    while (v >= 0x80) { v >>= 7; n++; }
    return n;
}

static inline int pf_put_varint(uint8_t *out, uint64_t v) {
    int n = 0;
    while (v >= 0x80) { out[n++] = (uint8_t)((v & 0x7F) | 0x80); v >>= 7; }
    out[n++] = (uint8_t)v;
    return n;
}

/* Reads an unsigned LEB128 at p[*pos] (limit = end); returns 0 on success.
 * max_bits = 31 for Java ints (non-negative), 63 for longs. */
static inline int pf_get_varint(const uint8_t *p, int64_t end, int64_t *pos, int max_bits, uint64_t *out) {
    uint64_t v = 0;
    int shift = 0;
    int64_t i = *pos;
    if (end - i >= 4) { /* up to 4 bytes (< 2^28, valid for any max_bits): the common case */
        uint32_t b0 = p[i], b1, b2, b3;
        if (b0 < 0x80) { *pos = i + 1; *out = b0; return 0; }
        b1 = p[i + 1];
        if (b1 < 0x80) { *pos = i + 2; *out = (b0 & 0x7F) | (b1 << 7); return 0; }
        b2 = p[i + 2];
        if (b2 < 0x80) { *pos = i + 3; *out = (b0 & 0x7F) | ((b1 & 0x7F) << 7) | (b2 << 14); return 0; }
        b3 = p[i + 3];
        if (b3 < 0x80) {
            *pos = i + 4;
            *out = (b0 & 0x7F) | ((b1 & 0x7F) << 7) | ((b2 & 0x7F) << 14) | (b3 << 21);
            return 0;
        }
    } else if (i < end && p[i] < 0x80) {
        *pos = i + 1;
        *out = p[i];
        return 0;
    }
    for (;;) {
        if (i >= end) return -1;
        uint8_t b = p[i++];
        if (shift >= 63 && (b & 0x7E)) return -2;
        v |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80)) break;
        shift += 7;
        if (shift > 63) return -2;
    }
    if (max_bits < 64 && (v >> max_bits) != 0) return -2;
    *pos = i;
    *out = v;
    return 0;
}

/* ------------------------------------------------------------ order keys */

static inline int64_t pf_f32_order(int32_t bits) { return (int64_t)(bits ^ ((bits >> 31) & 0x7FFFFFFF)); }
static inline int64_t pf_f64_order(int64_t bits) { return bits ^ ((bits >> 63) & 0x7FFFFFFFFFFFFFFFLL); }

static inline int64_t pf_le_signed(const uint8_t *p, int w) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (w == 8) { int64_t x; memcpy(&x, p, 8); return x; }   /* BIGINT and INT keys: one load */
    if (w == 4) { int32_t x; memcpy(&x, p, 4); return x; }
#endif
    uint64_t v = 0;
    for (int i = w - 1; i >= 0; i--) v = (v << 8) | p[i];
    if (w < 8) {
        int sh = 64 - 8 * w;
        return ((int64_t)(v << sh)) >> sh;
    }
    return (int64_t)v;
}

/* Order key of one serialized key; 0 = ok, -1 = malformed for the kind. */
static inline int pf_key_order(int kind, const uint8_t *p, int64_t n, int64_t *hi, uint64_t *lo) {
    *lo = 0;
    switch (kind) {
    case GK_I8: if (n != 1) return -1; *hi = (int8_t)p[0]; return 0;
    case GK_I16: if (n != 2) return -1; *hi = pf_le_signed(p, 2); return 0;
    case GK_I32: if (n != 4) return -1; *hi = pf_le_signed(p, 4); return 0;
    case GK_I64: if (n != 8) return -1; *hi = pf_le_signed(p, 8); return 0;
    case GK_BOOL: if (n != 1) return -1; *hi = p[0] == 1; return 0;
    case GK_F32: {
        if (n != 4) return -1;
        int32_t b = (int32_t)pf_le_signed(p, 4);
        if ((b & 0x7F800000) == 0x7F800000 && (b & 0x007FFFFF)) b = 0x7FC00000; /* NaN: Float.compare */
        *hi = pf_f32_order(b); return 0;
    }
    case GK_F64: {
        if (n != 8) return -1;
        int64_t b = pf_le_signed(p, 8);
        if ((b & 0x7FF0000000000000LL) == 0x7FF0000000000000LL && (b & 0x000FFFFFFFFFFFFFLL)) b = 0x7FF8000000000000LL;
        *hi = pf_f64_order(b); return 0;
    }
    case GK_TSN: {
        if (n < 9) return -1;
        int64_t pos = 8;
        uint64_t nanos;
        if (pf_get_varint(p, n, &pos, 31, &nanos) != 0 || pos != n) return -1;
        *hi = pf_le_signed(p, 8);
        *lo = nanos;
        return 0;
    }
    case GK_BIGDEC: {
        if (n < 1 || n > 16) return -1;
        /* sign-extend to 128 bits, big-endian */
        uint8_t buf[16];
        uint8_t fill = (p[0] & 0x80) ? 0xFF : 0x00;
        memset(buf, fill, 16 - n);
        memcpy(buf + 16 - n, p, n);
        uint64_t h = 0, l = 0;
        for (int i = 0; i < 8; i++) h = (h << 8) | buf[i];
        for (int i = 8; i < 16; i++) l = (l << 8) | buf[i];
        *hi = (int64_t)h; *lo = l;
        return 0;
    }
    default:
        return -1;
    }
}

static inline int pf_bytes_cmp(const uint8_t *a, int64_t an, const uint8_t *b, int64_t bn) {
    int64_t m = an < bn ? an : bn;
    int c = m ? memcmp(a, b, (size_t)m) : 0;
    if (c) return c < 0 ? -1 : 1;
    return an < bn ? -1 : (an > bn ? 1 : 0);
}

/* pf_bytes_cmp without a memcmp call: 8 bytes at a time (keys are short; point lookups
 * compare a literal with many dictionary keys) */
static inline int pf_bytes_cmp_inline(const uint8_t *a, int64_t an, const uint8_t *b, int64_t bn) {
    int64_t m = an < bn ? an : bn, i = 0;
    for (; i + 8 <= m; i += 8) {
        uint64_t x, y;
        memcpy(&x, a + i, 8);
        memcpy(&y, b + i, 8);
        if (x != y) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            x = __builtin_bswap64(x);
            y = __builtin_bswap64(y);
#endif
            return x < y ? -1 : 1;
        }
    }
    if (i + 4 <= m) {
        uint32_t x, y;
        memcpy(&x, a + i, 4);
        memcpy(&y, b + i, 4);
        if (x != y) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            x = __builtin_bswap32(x);
            y = __builtin_bswap32(y);
#endif
            return x < y ? -1 : 1;
        }
        i += 4;
    }
    for (; i < m; i++)
        if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
    return an < bn ? -1 : (an > bn ? 1 : 0);
}

/* A key's first 16 bytes as two little-endian words, zero past its end (little-endian host).
 * Two 8-byte loads and masks when 16 bytes can be read from p without passing `end`; else a
 * copy through a zeroed buffer. */
static inline void pf_key16(const uint8_t *p, size_t len, const uint8_t *end, uint64_t *a, uint64_t *b) {
    if (end - p >= 16) {
        uint64_t w0 = pf_read64(p), w1 = pf_read64(p + 8);
        size_t l0 = len < 8 ? len : 8, l1 = len <= 8 ? 0 : (len < 16 ? len - 8 : 8);
        *a = l0 == 8 ? w0 : (w0 & ((1ULL << (8 * l0)) - 1));
        *b = l1 == 8 ? w1 : (w1 & ((1ULL << (8 * l1)) - 1));
        return;
    }
    uint8_t buf[16] = {0};
    if (len) memcpy(buf, p, len < 16 ? len : 16);
    *a = pf_read64(buf);
    *b = pf_read64(buf + 8);
}

/* A key of at most 8 bytes as a number whose order is the bytes' (big-endian, left-aligned,
 * zero-padded): compared with pf_bytes_cmp_word, a dictionary scan needs no byte loop. */
static inline uint64_t pf_key_word(const uint8_t *k, int64_t kn) {
    uint64_t a, b;
    pf_key16(k, (size_t)kn, k + kn, &a, &b);
    return __builtin_bswap64(a);
}

/* pf_bytes_cmp(a, an, key, kn) for an <= 8 and kn <= 8, where 8 bytes at a are readable
 * (the bytes past an are ignored) and kw = pf_key_word(key, kn): no branch on the lengths. */
static inline int pf_bytes_cmp_word(const uint8_t *a, int64_t an, uint64_t kw, int64_t kn) {
    uint64_t x;
    int64_t m = an < kn ? an : kn;
    memcpy(&x, a, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    x = __builtin_bswap64(x);
#endif
    /* the first m bytes only: m = 0 keeps nothing (a shift by 64 is undefined: two steps) */
    uint64_t mask = m ? ~(uint64_t)0 << (8 * (8 - m)) : 0;
    x &= mask;
    kw &= mask;
    if (x != kw) return x < kw ? -1 : 1;
    return (an > kn) - (an < kn);
}

/* Logical comparison of two serialized keys; sets *bad when one is malformed. */
static inline int pf_key_cmp(int kind, const uint8_t *a, int64_t an, const uint8_t *b, int64_t bn, int *bad) {
    if (kind == GK_BYTES) return pf_bytes_cmp(a, an, b, bn);
    int64_t ah, bh; uint64_t al, bl;
    if (pf_key_order(kind, a, an, &ah, &al) || pf_key_order(kind, b, bn, &bh, &bl)) { *bad = 1; return 0; }
    if (ah != bh) return ah < bh ? -1 : 1;
    if (al != bl) return al < bl ? -1 : 1;
    return 0;
}

/* Scan one dictionary block (a varint entry count, then per entry: varint key length, key,
 * varint bitmap offset, varint bitmap length) for the entry logically equal to the key; with
 * ordered, stop at the first greater one.  Returns 1 found (*off, *ln), 0 absent, or an
 * error: -1 bad entry count, -2 bad or truncated key, -3 bad offset / length, -4 key
 * malformed for its kind; *at is then where. */
static inline int pf_block_scan(int kind, const uint8_t *p, int64_t n, const uint8_t *kp, int64_t kn,
                                int ordered, uint64_t *off, uint64_t *ln, int64_t *at) {
    int64_t pos = 0, ks, kl;
    uint64_t cnt, v;
    int bad = 0, c;
    int word = kind == GK_BYTES && kn <= 8;
    uint64_t kw = word ? pf_key_word(kp, kn) : 0;
    /* INT / BIGINT keys: the literal decoded once, each entry's key loaded as it is */
    int64_t lit = 0, width = kind == GK_I32 ? 4 : kind == GK_I64 ? 8 : 0;
    uint64_t unused;
    if (width && pf_key_order(kind, kp, kn, &lit, &unused) != 0) width = 0;
    *at = 0;
    if (pf_get_varint(p, n, &pos, 31, &cnt) != 0) return -1;
    for (uint64_t i = 0; i < cnt; i++) {
        *at = pos;
        if (pf_get_varint(p, n, &pos, 31, &v) != 0 || (int64_t)v > n - pos) return -2;
        ks = pos;
        kl = (int64_t)v;
        pos += kl;
        *at = pos;
        if (pf_get_varint(p, n, &pos, 63, off) != 0 || pf_get_varint(p, n, &pos, 31, ln) != 0) return -3;
        if (width) {
            if (kl != width) { *at = ks; return -4; }
            int64_t x = pf_le_signed(p + ks, (int)width);
            c = (x > lit) - (x < lit);
        } else if (kind == GK_BYTES) {
            /* the entry is followed by at least its two varints: 8 bytes at ks are usually there */
            if (word && kl <= 8 && n - ks >= 8) c = pf_bytes_cmp_word(p + ks, kl, kw, kn);
            else c = pf_bytes_cmp_inline(p + ks, kl, kp, kn);
        } else {
            c = pf_key_cmp(kind, p + ks, kl, kp, kn, &bad);
            if (bad) { *at = ks; return -4; }
        }
        if (c == 0) return 1;
        if (ordered && c > 0) return 0;
    }
    return 0;
}

/* Serialize one order key; returns bytes written (<= 17). */
static inline int pf_key_write(int kind, int64_t hi, uint64_t lo, uint8_t *out) {
    switch (kind) {
    case GK_I8: case GK_BOOL: out[0] = (uint8_t)hi; return 1;
    case GK_I16: for (int i = 0; i < 2; i++) out[i] = (uint8_t)((uint64_t)hi >> (8 * i)); return 2;
    case GK_I32: for (int i = 0; i < 4; i++) out[i] = (uint8_t)((uint64_t)hi >> (8 * i)); return 4;
    case GK_I64: for (int i = 0; i < 8; i++) out[i] = (uint8_t)((uint64_t)hi >> (8 * i)); return 8;
    case GK_F32: { /* invert the order transform back to the (canonical) bits */
        int32_t o = (int32_t)hi;
        int32_t b = o ^ ((o >> 31) & 0x7FFFFFFF);
        for (int i = 0; i < 4; i++) out[i] = (uint8_t)((uint32_t)b >> (8 * i));
        return 4;
    }
    case GK_F64: {
        int64_t b = hi ^ ((hi >> 63) & 0x7FFFFFFFFFFFFFFFLL);
        for (int i = 0; i < 8; i++) out[i] = (uint8_t)((uint64_t)b >> (8 * i));
        return 8;
    }
    case GK_TSN:
        for (int i = 0; i < 8; i++) out[i] = (uint8_t)((uint64_t)hi >> (8 * i));
        return 8 + pf_put_varint(out + 8, lo);
    case GK_BIGDEC: { /* minimal two's complement, as BigInteger.toByteArray */
        uint8_t buf[16];
        for (int i = 0; i < 8; i++) buf[i] = (uint8_t)((uint64_t)hi >> (56 - 8 * i));
        for (int i = 0; i < 8; i++) buf[8 + i] = (uint8_t)(lo >> (56 - 8 * i));
        int s = 0;
        while (s < 15) {
            if (buf[s] == 0x00 && !(buf[s + 1] & 0x80)) s++;
            else if (buf[s] == 0xFF && (buf[s + 1] & 0x80)) s++;
            else break;
        }
        memcpy(out, buf + s, 16 - s);
        return 16 - s;
    }
    default:
        return 0;
    }
}

/* ------------------------------------------------------------ radix sort */

typedef struct { uint64_t hi; uint64_t lo; uint64_t rid; } pf_rec;

/* Stable LSD radix sort of records by (hi as signed, lo, rid) ascending.
 * hi is stored sign-flipped by the caller (hi ^ 2^63) so all passes are
 * unsigned.  Passes whose byte is constant are skipped; rid passes are skipped
 * when skip_rid (input already in row-id order).  Returns a pointer to the
 * sorted buffer (a or tmp), or NULL when out of memory. */
static pf_rec *pf_radix_sort(pf_rec *a, pf_rec *tmp, size_t n, int skip_rid) {
    size_t (*hist)[256] = (size_t (*)[256])calloc(24 * 256, sizeof(size_t));
    if (!hist) return NULL;
    for (size_t i = 0; i < n; i++) {
        const pf_rec *r = &a[i];
        for (int b = 0; b < 8; b++) {
            hist[b][(r->rid >> (8 * b)) & 0xFF]++;
            hist[8 + b][(r->lo >> (8 * b)) & 0xFF]++;
            hist[16 + b][(r->hi >> (8 * b)) & 0xFF]++;
        }
    }
    pf_rec *src = a, *dst = tmp;
    for (int pass = skip_rid ? 8 : 0; pass < 24; pass++) {
        size_t *h = hist[pass];
        int trivial = 0;
        for (int v = 0; v < 256; v++) if (h[v] == n) { trivial = 1; break; }
        if (trivial || n == 0) continue;
        size_t off[256], s = 0;
        for (int v = 0; v < 256; v++) { off[v] = s; s += h[v]; }
        int word = pass / 8, sh = 8 * (pass % 8);
        for (size_t i = 0; i < n; i++) {
            uint64_t k = word == 0 ? src[i].rid : (word == 1 ? src[i].lo : src[i].hi);
            dst[off[(k >> sh) & 0xFF]++] = src[i];
        }
        pf_rec *t = src; src = dst; dst = t;
    }
    free(hist);
    return src;
}

/* LSD radix sort of plain uint64 values (stable; constant bytes skipped). */
static uint64_t *pf_radix_sort_u64(uint64_t *a, uint64_t *tmp, size_t n) {
    size_t (*hist)[256] = (size_t (*)[256])calloc(8 * 256, sizeof(size_t));
    if (!hist) return NULL;
    for (size_t i = 0; i < n; i++)
        for (int b = 0; b < 8; b++) hist[b][(a[i] >> (8 * b)) & 0xFF]++;
    uint64_t *src = a, *dst = tmp;
    for (int pass = 0; pass < 8; pass++) {
        size_t *h = hist[pass];
        int trivial = 0;
        for (int v = 0; v < 256; v++) if (h[v] == n) { trivial = 1; break; }
        if (trivial || n == 0) continue;
        size_t off[256], s = 0;
        for (int v = 0; v < 256; v++) { off[v] = s; s += h[v]; }
        int sh = 8 * pass;
        for (size_t i = 0; i < n; i++) dst[off[(src[i] >> sh) & 0xFF]++] = src[i];
        uint64_t *t = src; src = dst; dst = t;
    }
    free(hist);
    return src;
}

/* ------------------------------------------------------------ byte-string sort */

/* Merge sort of indices idx[0..n) by the byte strings data[off[i]:off[i+1]]. */
static void pf_sort_strings(int64_t *idx, int64_t *tmp, size_t n, const int64_t *off, const uint8_t *data) {
    if (n < 2) return;
    /* bottom-up: insertion sort runs of 16, then merge */
    const size_t RUN = 16;
    for (size_t s = 0; s < n; s += RUN) {
        size_t e = s + RUN < n ? s + RUN : n;
        for (size_t i = s + 1; i < e; i++) {
            int64_t x = idx[i];
            size_t j = i;
            while (j > s) {
                int64_t y = idx[j - 1];
                if (pf_bytes_cmp(data + off[y], off[y + 1] - off[y], data + off[x], off[x + 1] - off[x]) <= 0) break;
                idx[j] = y;
                j--;
            }
            idx[j] = x;
        }
    }
    int64_t *src = idx, *dst = tmp;
    for (size_t w = RUN; w < n; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) {
                int64_t x = src[i], y = src[j];
                if (pf_bytes_cmp(data + off[y], off[y + 1] - off[y], data + off[x], off[x + 1] - off[x]) < 0) dst[k++] = src[j++];
                else dst[k++] = src[i++];
            }
            while (i < mid) dst[k++] = src[i++];
            while (j < hi) dst[k++] = src[j++];
        }
        int64_t *t = src; src = dst; dst = t;
    }
    if (src != idx) memcpy(idx, src, n * sizeof(int64_t));
}


/* ------------------------------------------------------------ counting sort path */

static int pf_cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : (x > y);
}

/* Group (key, row id) pairs whose keys lie in [hmin, hmin + range] with a stable
 * counting sort: rids come out per key in input order (sorted per group when
 * !rid_sorted), duplicates within a key dropped.  count must hold range + 1
 * zeroed slots.  Returns the number of groups (written to bounds / ghi), and
 * the number of row ids kept in *m_out. */
static int64_t pf_counting_group(const int64_t *hi, const uint64_t *rid, size_t n, int64_t hmin, uint64_t range,
                                 int rid_sorted, int64_t *count, uint64_t *out, int64_t *bounds, int64_t *ghi,
                                 size_t *m_out) {
    for (size_t i = 0; i < n; i++) count[(uint64_t)(hi[i] - hmin)]++;
    int64_t s = 0;
    for (uint64_t k = 0; k <= range; k++) { int64_t c = count[k]; count[k] = s; s += c; }
    for (size_t i = 0; i < n; i++) out[count[(uint64_t)(hi[i] - hmin)]++] = rid[i];
    /* count[k] is now the end of key k's run */
    int64_t ng = 0, start = 0;
    size_t m = 0;
    for (uint64_t k = 0; k <= range; k++) {
        int64_t end = count[k];
        if (end == start) continue;
        if (!rid_sorted) qsort(out + start, (size_t)(end - start), sizeof(uint64_t), pf_cmp_u64);
        bounds[ng] = (int64_t)m;
        ghi[ng] = hmin + (int64_t)k;
        ng++;
        for (int64_t j = start; j < end; j++)
            if (j == start || out[j] != out[j - 1]) out[m++] = out[j];
        start = end;
    }
    bounds[ng] = (int64_t)m;
    *m_out = m;
    return ng;
}

/* ------------------------------------------------------------ hash dictionaries */

typedef struct { uint64_t h; int64_t id; } pf_slot;

static inline uint64_t pf_mix64(uint64_t x) {
    x ^= x >> 33; x *= 0xff51afd7ed558ccdULL; x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ULL; x ^= x >> 33;
    return x;
}

/* Distinct ids of int64 keys (first-seen order): ids[i] per row, distinct values in vals
 * (capacity n).  Returns the number of distinct keys, or -1 when out of memory. */
static int64_t pf_dict_i64(const int64_t *keys, size_t n, int64_t *ids, int64_t *vals) {
    size_t cap = 1024, mask = cap - 1;
    int64_t nd = 0;
    pf_slot *t = (pf_slot *)malloc(cap * sizeof(pf_slot));
    if (!t) return -1;
    for (size_t s = 0; s < cap; s++) t[s].id = -1;
    for (size_t i = 0; i < n; i++) {
        int64_t k = keys[i];
        uint64_t h = pf_mix64((uint64_t)k);
        size_t s = h & mask;
        for (;;) {
            if (t[s].id < 0) { t[s].h = (uint64_t)k; t[s].id = nd; vals[nd] = k; ids[i] = nd; nd++; break; }
            if (t[s].h == (uint64_t)k) { ids[i] = t[s].id; break; }
            s = (s + 1) & mask;
        }
        if ((size_t)nd * 2 > cap) {
            size_t ncap = cap * 2, nmask = ncap - 1;
            pf_slot *nt = (pf_slot *)malloc(ncap * sizeof(pf_slot));
            if (!nt) { free(t); return -1; }
            for (size_t q = 0; q < ncap; q++) nt[q].id = -1;
            for (size_t q = 0; q < cap; q++) if (t[q].id >= 0) {
                size_t r = pf_mix64(t[q].h) & nmask;
                while (nt[r].id >= 0) r = (r + 1) & nmask;
                nt[r] = t[q];
            }
            free(t); t = nt; cap = ncap; mask = nmask;
        }
    }
    free(t);
    return nd;
}

#define PF_KEY_LONG 0x80000000u
#define PF_KSLOT_EMPTY 0xFFFFFFFFu

/* A dictionary slot (24 bytes): the key's first 16 bytes (a, b) and x = its length when it has
 * at most 16 bytes (then a, b and x are the key), else PF_KEY_LONG | 31 bits of its XXH64 (equal
 * slots are then compared with the key's bytes); id PF_KSLOT_EMPTY when empty (so at most
 * 2^32 - 2 distinct keys). */
typedef struct { uint64_t a, b; uint32_t x, id; } pf_kslot;

static inline uint64_t pf_kmix(uint64_t a, uint64_t b, uint32_t x) {
    __uint128_t m = (__uint128_t)(a ^ 0x9E3779B97F4A7C15ULL) * (b ^ x ^ 0xD6E8FEB86659FD93ULL);
    return pf_mix64((uint64_t)m ^ (uint64_t)(m >> 64) ^ x);
}

/* Distinct ids of byte strings data[off[i]:off[i+1]] (rows with valid[i] == 0 get -1), in
 * first-seen order.  `dlen` is the length of data.  The distinct values are appended to an
 * arena (*arena, capacity *arena_cap, grown with realloc) with doff[d] = start of distinct d
 * (capacity n + 1).  A key of at most 16 bytes is found by its slot alone (its words and
 * length are in the slot: no byte compare, no second cache line); a longer one is compared
 * with its bytes in the arena when its prefix and hash match.
 * Rows go in blocks of PF_DICT_BLOCK: their words and hashes first, each slot prefetched;
 * then the probes, in row order (a prefetch only warms the cache: the answers are the
 * one-row-at-a-time ones).  A table of 100,000 distinct values outgrows the core's caches
 * and a probe waiting on its miss cost more than the rest of the row.  The table holds 2 to 4
 * slots of 24 bytes per distinct key (1e7 distinct: 805 MB; it was 16-byte slots, 537 MB,
 * before the words moved into the slot).
 * Returns nd, or -1 when out of memory (or past 2^32 - 2 distinct keys). */
#define PF_DICT_BLOCK 32
#define PF_DICT_BYTES(NAME, OFF_T) \
static int64_t NAME(const OFF_T *off, const uint8_t *data, size_t dlen, const uint8_t *valid, size_t n, \
                    int64_t *ids, int64_t *doff, uint8_t **arena, size_t *arena_cap) { \
    size_t cap = 1024, mask = cap - 1, used = 0; \
    int64_t nd = 0; \
    uint64_t ka[PF_DICT_BLOCK], kb[PF_DICT_BLOCK], kh[PF_DICT_BLOCK]; \
    uint32_t kx[PF_DICT_BLOCK]; \
    const uint8_t *dend = data + dlen; \
    pf_kslot *t = (pf_kslot *)malloc(cap * sizeof(pf_kslot)); \
    if (!t) return -1; \
    for (size_t s = 0; s < cap; s++) t[s].id = PF_KSLOT_EMPTY; \
    doff[0] = 0; \
    for (size_t b0 = 0; b0 < n; b0 += PF_DICT_BLOCK) { \
        size_t m = n - b0 < PF_DICT_BLOCK ? n - b0 : PF_DICT_BLOCK; \
        for (size_t j = 0; j < m; j++) { \
            size_t i = b0 + j; \
            if (valid && !valid[i]) continue; \
            const uint8_t *p = data + off[i]; \
            size_t len = (size_t)(off[i + 1] - off[i]); \
            pf_key16(p, len, dend, &ka[j], &kb[j]); \
            kx[j] = len <= 16 ? (uint32_t)len : (PF_KEY_LONG | (uint32_t)(pf_xxh64(p, len, 0) >> 33)); \
            kh[j] = pf_kmix(ka[j], kb[j], kx[j]); \
            __builtin_prefetch(&t[kh[j] & mask], 0, 3); \
        } \
        for (size_t j = 0; j < m; j++) { \
            size_t i = b0 + j; \
            if (valid && !valid[i]) { ids[i] = -1; continue; } \
            uint64_t a = ka[j], b = kb[j]; \
            uint32_t x = kx[j]; \
            size_t s = kh[j] & mask; \
            for (;;) { \
                uint32_t d = t[s].id; \
                if (d == PF_KSLOT_EMPTY) { \
                    if ((uint64_t)nd >= PF_KSLOT_EMPTY - 1) { free(t); return -1; } \
                    const uint8_t *p = data + off[i]; \
                    size_t len = (size_t)(off[i + 1] - off[i]); \
                    if (used + len > *arena_cap) { \
                        size_t nc = (*arena_cap * 2 > used + len) ? *arena_cap * 2 : used + len + 1024; \
                        uint8_t *na = (uint8_t *)realloc(*arena, nc); \
                        if (!na) { free(t); return -1; } \
                        *arena = na; *arena_cap = nc; \
                    } \
                    if (len) memcpy(*arena + used, p, len); \
                    used += len; \
                    t[s].a = a; t[s].b = b; t[s].x = x; t[s].id = (uint32_t)nd; ids[i] = nd; nd++; \
                    doff[nd] = (int64_t)used; \
                    break; \
                } \
                if (t[s].a == a && t[s].b == b && t[s].x == x) { \
                    if (!(x & PF_KEY_LONG)) { ids[i] = d; break; } \
                    size_t len = (size_t)(off[i + 1] - off[i]); \
                    if ((size_t)(doff[d + 1] - doff[d]) == len && memcmp(*arena + doff[d], data + off[i], len) == 0) { \
                        ids[i] = d; break; \
                    } \
                } \
                s = (s + 1) & mask; \
            } \
            if ((size_t)nd * 2 > cap) { \
                size_t ncap = cap * 2, nmask = ncap - 1; \
                pf_kslot *nt = (pf_kslot *)malloc(ncap * sizeof(pf_kslot)); \
                if (!nt) { free(t); return -1; } \
                for (size_t q = 0; q < ncap; q++) nt[q].id = PF_KSLOT_EMPTY; \
                for (size_t q = 0; q < cap; q++) if (t[q].id != PF_KSLOT_EMPTY) { \
                    size_t r = pf_kmix(t[q].a, t[q].b, t[q].x) & nmask; \
                    while (nt[r].id != PF_KSLOT_EMPTY) r = (r + 1) & nmask; \
                    nt[r] = t[q]; \
                } \
                free(t); t = nt; cap = ncap; mask = nmask; \
            } \
        } \
    } \
    free(t); \
    return nd; \
}

PF_DICT_BYTES(pf_dict_bytes32, int32_t)
PF_DICT_BYTES(pf_dict_bytes64, int64_t)

/* idx[0..n) = 0..n-1 ordered by the byte strings data[off[d]:off[d+1]] (`dlen` bytes of data).
 * Few keys: pf_sort_strings.  Else the keys' first 16 bytes, big-endian and zero-padded (whose
 * order is the keys' order wherever they differ), sorted by pf_radix_sort, and each run of
 * keys with the same 16 bytes ordered by pf_sort_strings.  0, or -1 when out of memory. */
static int pf_sort_keys(int64_t *idx, int64_t *tmp, size_t n, const int64_t *off, const uint8_t *data, size_t dlen) {
    if (n < 256) {
        for (size_t d = 0; d < n; d++) idx[d] = (int64_t)d;
        pf_sort_strings(idx, tmp, n, off, data);
        return 0;
    }
    pf_rec *r = (pf_rec *)malloc(2 * n * sizeof(pf_rec));
    if (!r) return -1;
    for (size_t d = 0; d < n; d++) {
        uint64_t a, b;
        pf_key16(data + off[d], (size_t)(off[d + 1] - off[d]), data + dlen, &a, &b);
        r[d].hi = __builtin_bswap64(a);
        r[d].lo = __builtin_bswap64(b);
        r[d].rid = (uint64_t)d;
    }
    pf_rec *s = pf_radix_sort(r, r + n, n, 1);
    if (!s) { free(r); return -1; }
    for (size_t g = 0; g < n; g++) idx[g] = (int64_t)s[g].rid;
    for (size_t g = 0; g < n;) {
        size_t e = g + 1;
        while (e < n && s[e].hi == s[g].hi && s[e].lo == s[g].lo) e++;
        if (e - g > 1) pf_sort_strings(idx + g, tmp, e - g, off, data);
        g = e;
    }
    free(r);
    return 0;
}

#endif

/* ------------------------------------------------------------ roaring decode */

/* Append the values of one validated portable 32-bit bitmap (high bits `high`) to out;
 * returns the number written.  The caller has validated buf with pf_roaring_check. */
static size_t pf_roaring_decode(const uint8_t *buf, uint64_t high, uint64_t *out) {
    size_t p, n = 0;
    uint32_t size;
    int has_run;
    const uint8_t *runflags = NULL;
    uint32_t cookie = (uint32_t)buf[0] | ((uint32_t)buf[1] << 8) | ((uint32_t)buf[2] << 16) | ((uint32_t)buf[3] << 24);
    if ((cookie & 0xFFFF) == 12347) {
        has_run = 1; size = (cookie >> 16) + 1; p = 4; runflags = buf + p; p += (size + 7) / 8;
    } else {
        has_run = 0; size = (uint32_t)buf[4] | ((uint32_t)buf[5] << 8) | ((uint32_t)buf[6] << 16) | ((uint32_t)buf[7] << 24); p = 8;
    }
    const uint8_t *desc = buf + p;
    p += 4 * (size_t)size;
    if (!has_run || size >= 4) p += 4 * (size_t)size;
    for (uint32_t c = 0; c < size; c++) {
        uint64_t key = (uint64_t)(desc[4 * c] | (desc[4 * c + 1] << 8));
        uint32_t card = (uint32_t)(desc[4 * c + 2] | (desc[4 * c + 3] << 8)) + 1;
        uint64_t base = (high << 32) | (key << 16);
        int is_run = has_run && ((runflags[c >> 3] >> (c & 7)) & 1);
        if (is_run) {
            uint32_t nruns = (uint32_t)(buf[p] | (buf[p + 1] << 8));
            p += 2;
            for (uint32_t r = 0; r < nruns; r++) {
                uint32_t s = (uint32_t)(buf[p] | (buf[p + 1] << 8)), l = (uint32_t)(buf[p + 2] | (buf[p + 3] << 8));
                for (uint32_t v = s; v <= s + l; v++) out[n++] = base | v;
                p += 4;
            }
        } else if (card > 4096) {
            for (int w = 0; w < 1024; w++) {
                uint64_t x;
                memcpy(&x, buf + p + 8 * w, 8);
                while (x) {
                    int b = __builtin_ctzll(x);
                    out[n++] = base | (uint64_t)(w * 64 + b);
                    x &= x - 1;
                }
            }
            p += 8192;
        } else {
            for (uint32_t k = 0; k < card; k++) out[n++] = base | (uint64_t)(buf[p + 2 * k] | (buf[p + 2 * k + 1] << 8));
            p += 2 * (size_t)card;
        }
    }
    return n;
}
