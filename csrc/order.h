/* Clustering keys and their sort (paimon_fast/_kernels/order.pyx).
 *
 * A key is a row of unsigned 64-bit words, the first the most significant; keys compare as the
 * unsigned integers they spell (equivalently as their big-endian bytes).
 *
 *   pf_radix_argsort   the stable permutation that sorts n keys (LSD radix, 11-bit digits; a
 *                      digit every key shares costs no pass)
 *   pf_interleave      bit interleaving, most significant bits first, one bit of each column in
 *                      turn (the z-order of Paimon's ZOrderByteUtils.interleaveBits when every
 *                      column gives 8 bytes)
 *   pf_hilbert         the position on the Hilbert curve of 63 bits per dimension (Skilling,
 *                      "Programming the Hilbert curve", 2004), as 63 * dims bits, most significant first
 *   pf_first_bytes     the first bytes of variable-width values as one word (left- or right-aligned)
 */
#ifndef PF_ORDER_H
#define PF_ORDER_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define PF_RADIX_BITS 11
#define PF_RADIX_SIZE (1 << PF_RADIX_BITS)
#define PF_RADIX_DIGITS 6 /* 6 * 11 >= 64 */

/* One word of every key (k, in the order of perm) sorted stably into perm; k2 / p2 are scratch
 * of n entries.  Returns 0, or -1 when memory ran out. */
static int pf_radix_word(uint64_t *k, int64_t *perm, int64_t n, uint64_t *k2, int64_t *p2)
{
    uint64_t *hist = (uint64_t *)calloc((size_t)PF_RADIX_DIGITS * PF_RADIX_SIZE, sizeof(uint64_t));
    if (!hist)
        return -1;
    for (int64_t i = 0; i < n; i++) {
        uint64_t v = k[i];
        for (int d = 0; d < PF_RADIX_DIGITS; d++)
            hist[d * PF_RADIX_SIZE + ((v >> (d * PF_RADIX_BITS)) & (PF_RADIX_SIZE - 1))]++;
    }
    uint64_t *ks = k, *kd = k2;
    int64_t *ps = perm, *pd = p2;
    for (int d = 0; d < PF_RADIX_DIGITS; d++) {
        uint64_t *h = hist + (size_t)d * PF_RADIX_SIZE;
        int shift = d * PF_RADIX_BITS;
        int skip = 0;
        for (int b = 0; b < PF_RADIX_SIZE; b++) {
            if (h[b] == (uint64_t)n) {
                skip = 1; /* every key has this digit: the pass would move nothing */
                break;
            }
            if (h[b])
                break;
        }
        if (skip)
            continue;
        uint64_t at = 0;
        for (int b = 0; b < PF_RADIX_SIZE; b++) {
            uint64_t c = h[b];
            h[b] = at;
            at += c;
        }
        for (int64_t i = 0; i < n; i++) {
            uint64_t v = ks[i];
            uint64_t j = h[(v >> shift) & (PF_RADIX_SIZE - 1)]++;
            kd[j] = v;
            pd[j] = ps[i];
        }
        uint64_t *kt = ks;
        ks = kd;
        kd = kt;
        int64_t *pt = ps;
        ps = pd;
        pd = pt;
    }
    if (ps != perm) {
        memcpy(perm, ps, (size_t)n * sizeof(int64_t));
        memcpy(k, ks, (size_t)n * sizeof(uint64_t));
    }
    free(hist);
    return 0;
}

/* perm: the stable ascending order of n keys of nw words (words[w][i]: word w of key i). */
static int pf_radix_argsort(const uint64_t *const *words, int nw, int64_t n, int64_t *perm)
{
    for (int64_t i = 0; i < n; i++)
        perm[i] = i;
    if (n < 2 || nw < 1)
        return 0;
    uint64_t *k = (uint64_t *)malloc((size_t)n * sizeof(uint64_t));
    uint64_t *k2 = (uint64_t *)malloc((size_t)n * sizeof(uint64_t));
    int64_t *p2 = (int64_t *)malloc((size_t)n * sizeof(int64_t));
    int rc = 0;
    if (!k || !k2 || !p2) {
        rc = -1;
        goto done;
    }
    /* least significant word first: each stable pass keeps the order the later words gave */
    for (int w = nw - 1; w >= 0; w--) {
        const uint64_t *src = words[w];
        if (w == nw - 1)
            memcpy(k, src, (size_t)n * sizeof(uint64_t));
        else
            for (int64_t i = 0; i < n; i++)
                k[i] = src[perm[i]];
        if (pf_radix_word(k, perm, n, k2, p2) != 0) {
            rc = -1;
            goto done;
        }
    }
done:
    free(k);
    free(k2);
    free(p2);
    return rc;
}

/* the 32 bits of x spread to the even bit positions of a word */
static inline uint64_t pf_spread2(uint64_t x)
{
    x &= 0xFFFFFFFFULL;
    x = (x | (x << 16)) & 0x0000FFFF0000FFFFULL;
    x = (x | (x << 8)) & 0x00FF00FF00FF00FFULL;
    x = (x | (x << 4)) & 0x0F0F0F0F0F0F0F0FULL;
    x = (x | (x << 2)) & 0x3333333333333333ULL;
    x = (x | (x << 1)) & 0x5555555555555555ULL;
    return x;
}

/* out[c][i] (nc words a row): the bits of the nc words cols[c][i] interleaved, the most
 * significant bit of column 0 first, then of column 1, ...; then the next bit of each. */
static void pf_interleave(const uint64_t *const *cols, int nc, int64_t n, uint64_t *const *out)
{
    if (nc == 1) {
        memcpy(out[0], cols[0], (size_t)n * sizeof(uint64_t));
        return;
    }
    if (nc == 2) {
        const uint64_t *a = cols[0], *b = cols[1];
        uint64_t *hi = out[0], *lo = out[1];
        for (int64_t i = 0; i < n; i++) {
            uint64_t x = a[i], y = b[i];
            hi[i] = (pf_spread2(x >> 32) << 1) | pf_spread2(y >> 32);
            lo[i] = (pf_spread2(x) << 1) | pf_spread2(y);
        }
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        for (int c = 0; c < nc; c++)
            out[c][i] = 0;
        int o = 0;
        for (int bit = 63; bit >= 0; bit--) {
            for (int c = 0; c < nc; c++, o++) {
                uint64_t v = (cols[c][i] >> bit) & 1ULL;
                out[o >> 6][i] |= v << (63 - (o & 63));
            }
        }
    }
}

/* The Hilbert index of the points (cols[d][i]: coordinate d of point i; its low 63 bits), as
 * 63 * nd bits most significant first, left-aligned in nd words out[w][i] (the last nd bits 0). */
static int pf_hilbert(const uint64_t *const *cols, int nd, int64_t n, uint64_t *const *out)
{
    const int bits = 63;
    const uint64_t M = 1ULL << (bits - 1);
    uint64_t *x = (uint64_t *)malloc((size_t)nd * sizeof(uint64_t));
    uint64_t **t = (uint64_t **)malloc((size_t)nd * sizeof(uint64_t *));
    if (!x || !t) {
        free(x);
        free(t);
        return -1;
    }
    /* the transposed index of each point, shifted so that its bit 62 is bit 63, goes through
     * pf_interleave: 63 bits of each dimension in turn, most significant first */
    for (int d = 0; d < nd; d++)
        t[d] = out[d];
    for (int64_t i = 0; i < n; i++) {
        for (int d = 0; d < nd; d++)
            x[d] = cols[d][i];
        /* inverse undo */
        for (uint64_t q = M; q > 1; q >>= 1) {
            uint64_t p = q - 1;
            for (int d = 0; d < nd; d++) {
                /* branch-free: when bit q of x[d] is set x[0] ^= p, else the low bits of x[0]
                 * and x[d] are exchanged */
                uint64_t set = (uint64_t)0 - ((x[d] & q) != 0);
                uint64_t s = (x[0] ^ x[d]) & p & ~set;
                x[0] ^= (p & set) | s;
                if (d)
                    x[d] ^= s;
            }
        }
        /* Gray encode */
        for (int d = 1; d < nd; d++)
            x[d] ^= x[d - 1];
        uint64_t s = 0;
        for (uint64_t q = M; q > 1; q >>= 1)
            s ^= (q - 1) & ((uint64_t)0 - ((x[nd - 1] & q) != 0));
        for (int d = 0; d < nd; d++)
            t[d][i] = (x[d] ^ s) << 1; /* the low 63 bits, bit 62 first */
    }
    free(x);
    free(t);
    return 0;
}

/* The first `width` (<= 8) bytes of each of n variable-width values (Arrow offsets and data) as
 * a big-endian word: left-aligned (the bytes then zeros: `right` 0) or right-aligned (zeros then
 * the bytes: `right` 1); a null (valid[i] == 0, when valid is given) is `null_word`. */
static void pf_first_bytes(const int64_t *offsets, const uint8_t *data, const uint8_t *valid, int64_t n, int width,
                           int right, uint64_t null_word, uint64_t *out)
{
    for (int64_t i = 0; i < n; i++) {
        if (valid && !valid[i]) {
            out[i] = null_word;
            continue;
        }
        int64_t a = offsets[i], len = offsets[i + 1] - a;
        int m = len < width ? (int)len : width;
        uint64_t w = 0;
        for (int j = 0; j < m; j++)
            w = (w << 8) | data[a + j];
        out[i] = right ? w : (m ? w << (8 * (8 - m)) : 0);
    }
}

#endif
