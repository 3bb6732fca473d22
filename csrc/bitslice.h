/* Dense 64-bit word bit sets (row r = bit r&63 of word r>>6) and the
 * bit-sliced index algorithms of paimon-fast's range bitmap / BSI readers:
 *  - portable 32-bit roaring bytes <-> dense words come from roaring_dense.h
 *    (shared with the bitmap index and deletion vectors); here only the
 *    in-place view of all-bitmap slices and the largest value;
 *  - O'Neil-Quass slice comparisons; Rinfret / O'Neil top-k over slices.
 * All functions are pure C without allocation unless stated, safe to call
 * without the GIL. */
#ifndef PF_BITSLICE_H
#define PF_BITSLICE_H
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
/* hardware popcount (every x86-64 CPU since 2008); without it GCC calls libgcc */
#pragma GCC target("popcnt")
#endif
#include <stdint.h>
#include <string.h>
#include "roaring_dense.h"
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "bitslice.h copies little-endian roaring words directly; big-endian hosts are not supported"
#endif

/* A slice row may be a view into the index bytes at any byte offset: read it
 * through an alignment-1 type so the compiler never assumes 8-byte alignment. */
typedef uint64_t pf_u64u __attribute__((aligned(1), may_alias));

/* If buf[0..len) is a bitmap made only of bitmap containers with keys 0..m-1
 * (m = ceil(nw/1024)), laid out back to back (what Java writes for a dense
 * slice), return the byte offset of the first container's words, so the
 * slice can be read in place as nw little-endian words; else -1. */
static int64_t pf_bitmap_view(const uint8_t *buf, size_t len, int64_t nw) {
    if (len < 8 || nw <= 0) return -1;
    if (pf_get32(buf) != PF_SERIAL_COOKIE_NO_RUN) return -1;
    uint32_t m = pf_get32(buf + 4);
    if ((int64_t)m != (nw + 1023) / 1024) return -1;
    size_t start = 8 + 8 * (size_t)m;
    if (len < start + 8192 * (size_t)m) return -1;
    for (uint32_t c = 0; c < m; c++) {
        if (pf_get16(buf + 8 + 4 * c) != c) return -1;
        if ((uint32_t)pf_get16(buf + 8 + 4 * c + 2) + 1 <= PF_ARRAY_MAX) return -1;
        if (pf_get32(buf + 8 + 4 * (size_t)m + 4 * c) != start + 8192 * (size_t)c) return -1;
    }
    return (int64_t)start;
}

/* Largest value of validated portable bytes, -1 when empty. */
static int64_t pf_last_value(const uint8_t *buf) {
    pf_rheader h;
    const char *err;
    size_t at;
    pf_roaring_head(buf, SIZE_MAX, &h, &err, &at);
    uint32_t size = h.size;
    if (size == 0) return -1;
    const uint8_t *desc = h.desc;
    size_t p = h.body;
    int64_t last = -1;
    for (uint32_t c = 0; c < size; c++) {
        uint32_t key = pf_get16(desc + 4 * c);
        uint32_t card = (uint32_t)pf_get16(desc + 4 * c + 2) + 1;
        int64_t base = (int64_t)key << 16;
        if (pf_is_run(&h, c)) {
            uint32_t nruns = pf_get16(buf + p);
            p += 2;
            if (nruns) last = base + pf_get16(buf + p + 4 * (nruns - 1)) + pf_get16(buf + p + 4 * (nruns - 1) + 2);
            p += 4 * (size_t)nruns;
        } else if (card > PF_ARRAY_MAX) {
            for (int w = 1023; w >= 0; w--) {
                uint64_t x;
                memcpy(&x, buf + p + 8 * w, 8);
                if (x) { last = base + 64 * w + 63 - __builtin_clzll(x); break; }
            }
            p += 8192;
        } else {
            last = base + pf_get16(buf + p + 2 * (card - 1));
            p += 2 * (size_t)card;
        }
    }
    return last;
}

/* ops */
enum { PF_EQ = 0, PF_NEQ = 1, PF_LT = 2, PF_LTE = 3, PF_GT = 4, PF_GTE = 5 };

#define PF_BLK 1024

/* O'Neil-Quass comparisons, register-blocked: 8 words (512 rows) at a time
 * walk the slices from the top with the running state in registers, so each
 * slice word is loaded once and nothing else touches memory.  Every op is
 * one of two cores:
 *   lt(v):  rows < v; slices below the lowest set bit of v cannot change
 *           the answer and are skipped;
 *   eq(v):  rows == v;
 * with lte(v) = lt(v + 1), gte = base & ~lt, gt = base & ~lte, neq = base & ~eq. */
typedef uint64_t pf_v4 __attribute__((vector_size(32)));

static inline __attribute__((always_inline)) pf_v4 pf_ld4(const void *p) { pf_v4 x; memcpy(&x, p, 32); return x; }
static inline __attribute__((always_inline)) void pf_st4(void *p, pf_v4 x) { memcpy(p, &x, 32); }

/* out = (LT ? rows < v : rows == v) among base, complemented within base
 * when inv.  Requires v < 2^S (callers handle v beyond every value).  8
 * words (two 4-word vectors) per group; no early exit (a data-dependent
 * branch per slice costs more than the loads it saves). */
#define PF_CORE_BODY(LT)                                                                      \
    int stop = 0;                                                                             \
    if (LT) stop = v ? __builtin_ctzll(v) : S; /* nothing is < 0 */                           \
    int64_t j = 0;                                                                            \
    for (; j + 8 <= nw; j += 8) {                                                             \
        pf_v4 b0 = pf_ld4(base + j), b1 = pf_ld4(base + j + 4);                               \
        pf_v4 e0 = b0, e1 = b1, a0 = {0, 0, 0, 0}, a1 = {0, 0, 0, 0};                         \
        for (int i = S - 1; i >= stop; i--) {                                                 \
            pf_v4 s0 = pf_ld4(rows[i] + j), s1 = pf_ld4(rows[i] + j + 4);                     \
            if ((v >> i) & 1) {                                                               \
                if (LT) { a0 |= e0 & ~s0; a1 |= e1 & ~s1; }                                   \
                e0 &= s0; e1 &= s1;                                                           \
            } else { e0 &= ~s0; e1 &= ~s1; }                                                  \
        }                                                                                     \
        pf_v4 r0 = LT ? a0 : e0, r1 = LT ? a1 : e1;                                           \
        if (inv) { r0 = b0 & ~r0; r1 = b1 & ~r1; }                                            \
        pf_st4(out + j, r0);                                                                  \
        pf_st4(out + j + 4, r1);                                                              \
    }                                                                                         \
    for (; j < nw; j++) {                                                                     \
        uint64_t b = base[j], eq = b, acc = 0;                                                \
        for (int i = S - 1; i >= stop; i--) {                                                 \
            uint64_t s = rows[i][j];                                                          \
            if ((v >> i) & 1) { acc |= eq & ~s; eq &= s; }                                    \
            else eq &= ~s;                                                                    \
        }                                                                                     \
        uint64_t r = LT ? acc : eq;                                                           \
        out[j] = inv ? (b & ~r) : r;                                                          \
    }

#define PF_DEF_CORE(NAME, ATTR, LT)                                                           \
ATTR static void NAME(const pf_u64u *const *rows, int S, const uint64_t *base, int64_t nw,    \
                      int inv, uint64_t v, uint64_t *out) {                                   \
    PF_CORE_BODY(LT)                                                                          \
}
PF_DEF_CORE(pf_core_lt_base, , 1)
PF_DEF_CORE(pf_core_eq_base, , 0)
#if defined(__x86_64__) && defined(__GNUC__)
PF_DEF_CORE(pf_core_lt_avx2, __attribute__((target("avx2"))), 1)
PF_DEF_CORE(pf_core_eq_avx2, __attribute__((target("avx2"))), 0)
#endif

/* set by tests to run the portable versions on an AVX2 machine */
static int pf_simd_off = 0;

static int pf_cpu_avx2(void) {
#if defined(__x86_64__) && defined(__GNUC__)
    static int hw = -1;
    if (hw < 0) hw = __builtin_cpu_supports("avx2") ? 1 : 0;
    return hw && !pf_simd_off;
#else
    return 0;
#endif
}

static void pf_core(const pf_u64u *const *rows, int S, const uint64_t *base,
                    int64_t nw, int lt, int inv, uint64_t v, uint64_t *out) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (pf_cpu_avx2()) {
        if (lt) pf_core_lt_avx2(rows, S, base, nw, inv, v, out);
        else pf_core_eq_avx2(rows, S, base, nw, inv, v, out);
        return;
    }
#endif
    if (lt) pf_core_lt_base(rows, S, base, nw, inv, v, out);
    else pf_core_eq_base(rows, S, base, nw, inv, v, out);
}

/* 1 if v exceeds every value S slices can hold */
static inline int pf_above(int S, uint64_t v) { return S < 64 && (v >> S) != 0; }

/* Rows of base whose slice value compares to v by op (PF_EQ .. PF_GTE). */
static void pf_compare(const pf_u64u *const *rows, int S, const uint64_t *base,
                       int64_t nw, int op, uint64_t v, uint64_t *out) {
    if (op == PF_EQ || op == PF_NEQ) {
        if (pf_above(S, v)) {  /* nothing equal */
            if (op == PF_EQ) memset(out, 0, 8 * (size_t)nw);
            else if (out != base) memcpy(out, base, 8 * (size_t)nw);
            return;
        }
        pf_core(rows, S, base, nw, 0, op == PF_NEQ, v, out);
        return;
    }
    int inv = (op == PF_GTE || op == PF_GT);
    if (op == PF_LTE || op == PF_GT) {  /* <= v is < v + 1 */
        if (v == UINT64_MAX || pf_above(S, v + 1)) {  /* every row is <= v */
            if (inv) memset(out, 0, 8 * (size_t)nw);
            else if (out != base) memcpy(out, base, 8 * (size_t)nw);
            return;
        }
        v += 1;
    }
    if (pf_above(S, v)) {  /* every row is < v */
        if (inv) memset(out, 0, 8 * (size_t)nw);
        else if (out != base) memcpy(out, base, 8 * (size_t)nw);
        return;
    }
    pf_core(rows, S, base, nw, 1, inv, v, out);
}

/* lo <= value <= hi: base & ~lt(lo) & lte(hi). */
static void pf_between(const pf_u64u *const *rows, int S, const uint64_t *base,
                       int64_t nw, uint64_t lo, uint64_t hi, uint64_t *out) {
    if (lo > hi || pf_above(S, lo)) { memset(out, 0, 8 * (size_t)nw); return; }
    pf_compare(rows, S, base, nw, PF_LTE, hi, out);  /* out = base & value <= hi */
    pf_compare(rows, S, out, nw, PF_GTE, lo, out);   /* in place: each group reads out before writing it */
}

/* Bit-transpose 64 rows at a time: ebm and S slices (stride nw) from per-row
 * values (vals[r] used when sel[r]). Returns 1 if a selected value does not
 * fit in S bits. Branch-free inner loops. */
#define PF_DEF_BUILD(NAME, T) \
static int NAME(const T *vals, const uint8_t *sel, int64_t n, int S, uint64_t *ebm, uint64_t *slices, int64_t nw) { \
    uint64_t bad = 0; \
    uint64_t buf[64]; \
    for (int64_t w = 0; w < nw; w++) { \
        int64_t r0 = w << 6; \
        int64_t lim = n - r0 < 64 ? n - r0 : 64; \
        uint64_t e = 0; \
        for (int64_t j = 0; j < lim; j++) { \
            uint64_t s = sel[r0 + j] != 0; \
            buf[j] = (uint64_t)vals[r0 + j] & (0 - s); \
            e |= s << j; \
        } \
        for (int64_t j = lim; j < 64; j++) buf[j] = 0; \
        if (S < 64) { for (int j = 0; j < 64; j++) bad |= buf[j] >> S; } \
        ebm[w] = e; \
        for (int i = 0; i < S; i++) { \
            uint64_t acc = 0; \
            for (int j = 0; j < 64; j++) acc |= ((buf[j] >> i) & 1) << j; \
            slices[(int64_t)i * nw + w] = acc; \
        } \
    } \
    return bad != 0; \
}
PF_DEF_BUILD(pf_build_slices_u32_generic, uint32_t)
PF_DEF_BUILD(pf_build_slices_u64, uint64_t)

#if defined(__SSE2__)
#include <emmintrin.h>
/* 32-bit values (S <= 32): shift bit i to the sign and collect 4 rows per movemask. */
static int pf_build_slices_u32(const uint32_t *vals, const uint8_t *sel, int64_t n, int S, uint64_t *ebm, uint64_t *slices, int64_t nw) {
    if (S > 32) return pf_build_slices_u32_generic(vals, sel, n, S, ebm, slices, nw);
    uint32_t buf[64] __attribute__((aligned(16)));
    uint32_t bad = 0;
    for (int64_t w = 0; w < nw; w++) {
        int64_t r0 = w << 6;
        int64_t lim = n - r0 < 64 ? n - r0 : 64;
        uint64_t e = 0;
        for (int64_t j = 0; j < lim; j++) {
            uint32_t s = sel[r0 + j] != 0;
            buf[j] = vals[r0 + j] & (0u - s);
            e |= (uint64_t)s << j;
        }
        for (int64_t j = lim; j < 64; j++) buf[j] = 0;
        if (S < 32) { for (int j = 0; j < 64; j++) bad |= buf[j] >> S; }
        ebm[w] = e;
        for (int i = 0; i < S; i++) {
            __m128i sh = _mm_cvtsi32_si128(31 - i);
            uint64_t acc = 0;
            for (int q = 0; q < 16; q++) {
                __m128i t = _mm_sll_epi32(_mm_load_si128((const __m128i *)(buf + 4 * q)), sh);
                acc |= (uint64_t)_mm_movemask_ps(_mm_castsi128_ps(t)) << (4 * q);
            }
            slices[(int64_t)i * nw + w] = acc;
        }
    }
    return bad != 0;
}
#else
#define pf_build_slices_u32 pf_build_slices_u32_generic
#endif

/* Dictionary codes of keys in [lo, lo + span) via a presence bit set and
 * per-word ranks (cache friendly for spans of millions). bits: zeroed
 * (span+63)/64 words; rank: same count of int64. Returns number of distinct
 * keys; codes[r] = -1 for rows not selected.  Keys as int64 or int32. */
#define PF_DEF_DENSE_CODES(NAME, KT)                                                          \
static int64_t NAME(const KT *keys, const uint8_t *valid, int64_t n, int64_t lo, int64_t span,   \
                    uint64_t *bits, int64_t *rank, int32_t *codes, int64_t *uniq_out) {      \
    int64_t nb = (span + 63) >> 6;                                                        \
    for (int64_t r = 0; r < n; r++) {                                                     \
        if (valid[r]) { uint64_t x = (uint64_t)((int64_t)keys[r] - lo); bits[x >> 6] |= 1ULL << (x & 63); } \
    }                                                                                     \
    int64_t c = 0;                                                                        \
    for (int64_t w = 0; w < nb; w++) { rank[w] = c; c += pf_popc64(bits[w]); }            \
    for (int64_t r = 0; r < n; r++) {                                                     \
        if (valid[r]) {                                                                   \
            uint64_t x = (uint64_t)((int64_t)keys[r] - lo);                               \
            codes[r] = (int32_t)(rank[x >> 6] + pf_popc64(bits[x >> 6] & ((1ULL << (x & 63)) - 1))); \
        } else codes[r] = -1;                                                             \
    }                                                                                     \
    if (uniq_out) {                                                                       \
        int64_t j = 0;                                                                    \
        for (int64_t w = 0; w < nb; w++) {                                                \
            uint64_t x = bits[w];                                                         \
            while (x) { uniq_out[j++] = lo + (w << 6) + __builtin_ctzll(x); x &= x - 1; } \
        }                                                                                 \
    }                                                                                     \
    return c;                                                                             \
}
PF_DEF_DENSE_CODES(pf_dense_codes, int64_t)
PF_DEF_DENSE_CODES(pf_dense_codes_i32, int32_t)

/* compare / between fused with the plain (array / bitmap containers)
 * portable serialization of the answer, one 65536-row container at a time,
 * so the dense answer never goes to memory. out needs
 * 8 + 8*nchunks + 8192*nchunks bytes (nchunks = ceil(nw/1024)); returns the
 * serialized size. S <= 256. */
static int64_t pf_compare_plain(const pf_u64u *const *rows, int S, const uint64_t *base, int64_t nw,
                                int op, uint64_t v, int is_between, uint64_t hi, uint8_t *out) {
    int64_t nchunks = (nw + 1023) / 1024;
    uint64_t blk[1024];
    const pf_u64u *sub[256];
    uint8_t *desc = out + 8;
    uint8_t *toffs = out + 8 + 4 * nchunks;      /* temporary place of the offsets */
    uint8_t *body = out + 8 + 8 * nchunks;
    uint8_t *p = body;
    int64_t count = 0;
    for (int64_t c = 0; c < nchunks; c++) {
        int64_t w0 = c * 1024, m = nw - w0 < 1024 ? nw - w0 : 1024;
        for (int i = 0; i < S; i++) sub[i] = rows[i] + w0;
        if (is_between) pf_between(sub, S, base + w0, m, v, hi, blk);
        else pf_compare(sub, S, base + w0, m, op, v, blk);
        uint64_t card = 0;
        for (int64_t j = 0; j < m; j++) card += pf_popc64(blk[j]);
        if (!card) continue;
        pf_put16(desc + 4 * count, (uint16_t)c);
        pf_put16(desc + 4 * count + 2, (uint16_t)(card - 1));
        pf_put32(toffs + 4 * count, (uint32_t)(p - body));
        p = pf_dense_put_container(p, blk, m, card > PF_ARRAY_MAX ? PF_BITMAP : PF_ARRAY, 0);
        count++;
    }
    int64_t head = 8 + 8 * count;
    uint8_t *offs = out + 8 + 4 * count;
    memmove(offs, toffs, 4 * (size_t)count);
    memmove(out + head, body, (size_t)(p - body));
    for (int64_t i = 0; i < count; i++) pf_put32(offs + 4 * i, pf_get32(offs + 4 * i) + (uint32_t)head);
    pf_put32(out, PF_SERIAL_COOKIE_NO_RUN);
    pf_put32(out + 4, (uint32_t)count);
    return head + (int64_t)(p - body);
}

/* Sort (key, row) pairs by key with an LSD radix sort (11-bit digits, digits
 * equal in every key skipped), keys as order-preserving uint64 (sign flipped).
 * ka/kb and ia/ib are n-entry buffers; the sorted pairs end in ka/ia
 * (returns 0) or kb/ib (returns 1). */
static int pf_radix_sort(uint64_t *ka, uint32_t *ia, uint64_t *kb, uint32_t *ib, int64_t n, int64_t *hist /* 4*65536 */) {
    const int BITS = 16, NB = 1 << 16, PASSES = 4;
    memset(hist, 0, sizeof(int64_t) * NB * PASSES);
    for (int64_t r = 0; r < n; r++) {
        uint64_t k = ka[r];
        for (int p = 0; p < PASSES; p++) hist[p * NB + ((k >> (p * BITS)) & (NB - 1))]++;
    }
    int cur = 0;
    for (int p = 0; p < PASSES; p++) {
        int64_t *h = hist + p * NB;
        int constant = 0;
        for (int d = 0; d < NB; d++) { if (h[d] == n) { constant = 1; break; } if (h[d]) break; }
        if (!constant) { for (int d = 0; d < NB; d++) if (h[d] == n) { constant = 1; break; } }
        if (constant) continue;
        int64_t sum = 0;
        for (int d = 0; d < NB; d++) { int64_t c = h[d]; h[d] = sum; sum += c; }
        uint64_t *ks = cur ? kb : ka, *kd = cur ? ka : kb;
        uint32_t *is = cur ? ib : ia, *id = cur ? ia : ib;
        for (int64_t r = 0; r < n; r++) {
            uint64_t k = ks[r];
            int64_t at = h[(k >> (p * BITS)) & (NB - 1)]++;
            kd[at] = k;
            id[at] = is[r];
        }
        cur ^= 1;
    }
    return cur;
}

/* Top-k (largest) / bottom-k (smallest) over the rows of e (modified in
 * place; on return it holds the tie group), g must be zeroed scratch, active
 * and gtouch int64 scratch of nw entries. Only words still holding candidates
 * are visited, so later slices cost little. On return words[0..*nwords) lists
 * (sorted, unique) the words of the answer g | e; the return value is |g | e|
 * before strict trimming. */
static int64_t pf_topk_core(const pf_u64u *const *rows, int S, uint64_t *e, uint64_t *g,
                            int64_t *active, int64_t *gtouch, int64_t *words, int64_t nw, int64_t k,
                            int largest, int64_t *nwords_out, const uint64_t *base, const int64_t *init, int64_t ninit) {
    int64_t na = 0, ng = 0, ecount = 0;
    if (init) {  /* only these words (sorted, in range) can hold answers: e is filled from base */
        for (int64_t a = 0; a < ninit; a++) {
            int64_t w = init[a];
            uint64_t x = base[w];
            e[w] = x;
            if (x) { active[na++] = w; ecount += pf_popc64(x); }
        }
    } else {
        for (int64_t w = 0; w < nw; w++) {
            if (e[w]) { active[na++] = w; ecount += pf_popc64(e[w]); }
        }
    }
    int64_t gcount = 0;
    if (ecount > k) {
        uint64_t flip = largest ? 0 : ~0ULL;
        for (int i = S - 1; i >= 0; i--) {
            const pf_u64u *s = rows[i];
            int64_t cnt = 0;
            for (int64_t a = 0; a < na; a++) {
                int64_t w = active[a];
                cnt += pf_popc64(e[w] & (s[w] ^ flip));
            }
            int64_t n = gcount + cnt;
            int64_t m = 0;
            if (n >= k) {
                for (int64_t a = 0; a < na; a++) {
                    int64_t w = active[a];
                    uint64_t x = e[w] & (s[w] ^ flip);
                    e[w] = x;
                    if (x) active[m++] = w;
                }
                na = m;
                ecount = cnt;
                if (n == k) break;
            } else {
                for (int64_t a = 0; a < na; a++) {
                    int64_t w = active[a];
                    uint64_t sel = s[w] ^ flip;
                    uint64_t add = e[w] & sel;
                    if (add) {
                        if (!g[w]) gtouch[ng++] = w;
                        g[w] |= add;
                    }
                    uint64_t x = e[w] & ~sel;
                    e[w] = x;
                    if (x) active[m++] = w;
                }
                na = m;
                gcount = n;
                ecount -= cnt;
            }
        }
    }
    /* merge the two word lists (each made of ascending runs: sort them) */
    int64_t nwl = 0;
    for (int64_t a = 0; a < na; a++) words[nwl++] = active[a];
    for (int64_t a = 0; a < ng; a++) words[nwl++] = gtouch[a];
    *nwords_out = nwl;
    return gcount + ecount;
}

/* Per block of bw words: the largest and smallest slice value among the rows
 * of base (-1 / -1 for a block without rows). */
static void pf_block_maxmin(const pf_u64u *const *rows, int S, const uint64_t *base, int64_t nw,
                            int64_t bw, int64_t *bmax, int64_t *bmin) {
    uint64_t cand[64];
    if (bw > 64) bw = 64;
    int64_t nb = (nw + bw - 1) / bw;
    for (int64_t b = 0; b < nb; b++) {
        int64_t w0 = b * bw, m = nw - w0 < bw ? nw - w0 : bw;
        uint64_t any = 0;
        for (int64_t j = 0; j < m; j++) { cand[j] = base[w0 + j]; any |= cand[j]; }
        if (!any) { bmax[b] = -1; bmin[b] = -1; continue; }
        int64_t mx = 0;
        for (int i = S - 1; i >= 0; i--) {
            const pf_u64u *sl = rows[i] + w0;
            uint64_t hit = 0;
            for (int64_t j = 0; j < m; j++) hit |= cand[j] & sl[j];
            if (hit) { for (int64_t j = 0; j < m; j++) cand[j] &= sl[j]; mx |= (int64_t)1 << i; }
        }
        for (int64_t j = 0; j < m; j++) cand[j] = base[w0 + j];
        int64_t mn = 0;
        for (int i = S - 1; i >= 0; i--) {
            const pf_u64u *sl = rows[i] + w0;
            uint64_t hit = 0;
            for (int64_t j = 0; j < m; j++) hit |= cand[j] & ~sl[j];
            if (hit) { for (int64_t j = 0; j < m; j++) cand[j] &= ~sl[j]; }
            else mn |= (int64_t)1 << i;
        }
        bmax[b] = mx;
        bmin[b] = mn;
    }
}

static int pf_cmp_i64(const void *x, const void *y) {
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return (a > b) - (a < b);
}

/* Sort + dedupe the word list, then write the answer's positions (dropping
 * the lowest `drop` rows of the tie group e). Returns the count written. */
static int64_t pf_topk_emit(const uint64_t *e, const uint64_t *g, int64_t *words, int64_t nwl, int64_t drop,
                            uint32_t *pos) {
    qsort(words, (size_t)nwl, sizeof(int64_t), pf_cmp_i64);
    int64_t j = 0, prev = -1;
    for (int64_t a = 0; a < nwl; a++) {
        int64_t w = words[a];
        if (w == prev) continue;
        prev = w;
        uint64_t ew = e[w];
        uint64_t x = g[w] | ew;
        while (drop > 0 && ew) {
            uint64_t b = ew & (~ew + 1);
            x &= ~b;
            ew &= ew - 1;
            drop--;
        }
        while (x) {
            pos[j++] = (uint32_t)((w << 6) + __builtin_ctzll(x));
            x &= x - 1;
        }
    }
    return j;
}


/* ---- BSI writer: one pass from a column to the dense words of both parts ----
 * Values are Java longs given as int8/16/32/64 rows; validity as Arrow's
 * little-endian bit map (vb, vbytes bytes, row r at bit voff + r) or NULL
 * (all valid).  Positive part: rows with value >= 0, slices of the value;
 * negative part: rows < 0, slices of |value|. */

/* 64 bits of an Arrow validity bit map starting at bit pos (bytes past the
 * end read as 0). */
static inline uint64_t pf_vbits64(const uint8_t *b, int64_t nbytes, int64_t pos) {
    int64_t at = pos >> 3;
    int sh = (int)(pos & 7);
    uint64_t lo = 0, hi = 0;
    if (at + 9 <= nbytes) {
        memcpy(&lo, b + at, 8);
        hi = b[at + 8];
    } else {
        for (int k = 0; k < 8 && at + k < nbytes; k++) lo |= (uint64_t)b[at + k] << (8 * k);
        if (at + 8 < nbytes) hi = b[at + 8];
    }
    return sh ? (lo >> sh) | (hi << (64 - sh)) : lo;
}

/* One row of a BSI column: ``ok`` / ``ng`` all-ones when the row is valid / negative,
 * ``a`` its magnitude when valid and >= 0, ``b`` when valid and < 0 (2^63 for
 * Long.MIN_VALUE), else 0.  Branch-free. */
static inline void pf_bsi_split(int64_t x, uint64_t valid, uint64_t *ok, uint64_t *ng, uint64_t *a, uint64_t *b) {
    uint64_t o = 0 - valid, n = 0 - (uint64_t)(x < 0);
    uint64_t mag = ((uint64_t)x ^ n) - n;
    *ok = o;
    *ng = n;
    *a = mag & o & ~n;
    *b = mag & o & n;
}

/* Pass 1: largest magnitude among the valid rows >= 0 (pmax) and < 0 (nmax,
 * as |v|, 2^63 for Long.MIN_VALUE), and how many rows each part holds. */
#define PF_DEF_BSI_SCAN(NAME, T)                                                                  \
static void NAME(const T *v, const uint8_t *vb, int64_t vbytes, int64_t voff, int64_t n,          \
                 uint64_t *pmax, uint64_t *nmax, int64_t *npos, int64_t *nneg) {                  \
    uint64_t pm = 0, nm = 0;                                                                      \
    int64_t cp = 0, cn = 0;                                                                       \
    for (int64_t r0 = 0; r0 < n; r0 += 64) {                                                      \
        int64_t lim = n - r0 < 64 ? n - r0 : 64;                                                  \
        uint64_t vw = vb ? pf_vbits64(vb, vbytes, voff + r0) : ~(uint64_t)0;                      \
        uint64_t nw_ = 0;                                                                         \
        for (int64_t j = 0; j < lim; j++) {                                                       \
            uint64_t ok, ng, a, b;                                                                \
            pf_bsi_split((int64_t)v[r0 + j], (vw >> j) & 1, &ok, &ng, &a, &b);                    \
            pm = a > pm ? a : pm;                                                                 \
            nm = b > nm ? b : nm;                                                                 \
            nw_ |= (ok & ng & 1) << j;                                                            \
        }                                                                                         \
        if (lim < 64) vw &= (((uint64_t)1) << lim) - 1;                                           \
        int64_t cv = pf_popc64(vw), c = pf_popc64(nw_);                                           \
        cn += c;                                                                                  \
        cp += cv - c;                                                                             \
    }                                                                                             \
    *pmax = pm; *nmax = nm; *npos = cp; *nneg = cn;                                               \
}
PF_DEF_BSI_SCAN(pf_bsi_scan_i8, int8_t)
PF_DEF_BSI_SCAN(pf_bsi_scan_i16, int16_t)
PF_DEF_BSI_SCAN(pf_bsi_scan_i32, int32_t)
PF_DEF_BSI_SCAN(pf_bsi_scan_i64, int64_t)

/* Transposers: slice i of word w gets bit i of buf[j] at bit j (64 rows). */
static inline void pf_transpose64(const uint64_t *buf, int S, uint64_t *slices, int64_t nw, int64_t w) {
    for (int i = 0; i < S; i++) {
        uint64_t acc = 0;
        for (int j = 0; j < 64; j++) acc |= ((buf[j] >> i) & 1) << j;
        slices[(int64_t)i * nw + w] = acc;
    }
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
/* 32-bit values (S <= 32), 8 rows per AVX2 movemask */
__attribute__((target("avx2"))) static inline void pf_transpose32_avx2(const uint32_t *buf, int S, uint64_t *slices,
                                                                         int64_t nw, int64_t w) {
    __m256i r[8];
    for (int q = 0; q < 8; q++) r[q] = _mm256_loadu_si256((const __m256i *)(buf + 8 * q));
    for (int i = 0; i < S; i++) {
        __m128i sh = _mm_cvtsi32_si128(31 - i);
        uint64_t acc = 0;
        for (int q = 0; q < 8; q++)
            acc |= (uint64_t)(uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_sll_epi32(r[q], sh))) << (8 * q);
        slices[(int64_t)i * nw + w] = acc;
    }
}
#endif

/* Pass 2 for one row type: ebm words of both parts and their slices (pS /
 * nS rows of nw words each; magnitudes must fit: callers size S from pass 1).
 * AVX2 selects the 32-bit transposer when both parts need <= 32 slices. */
#define PF_DEF_BSI_FILL(NAME, T, ATTR, WIDE)                                                      \
ATTR static void NAME(const T *v, const uint8_t *vb, int64_t vbytes, int64_t voff, int64_t n,     \
                      int pS, int nS, uint64_t *pebm, uint64_t *nebm, uint64_t *psl, uint64_t *nsl,\
                      int64_t nw) {                                                               \
    uint64_t bp64[64], bn64[64];                                                                  \
    uint32_t bp32[64] __attribute__((aligned(32))), bn32[64] __attribute__((aligned(32)));        \
    int narrow = !(WIDE) && pS <= 32 && nS <= 32;                                                 \
    for (int64_t w = 0; w < nw; w++) {                                                            \
        int64_t r0 = w << 6;                                                                      \
        int64_t lim = n - r0 < 64 ? n - r0 : 64;                                                  \
        uint64_t vw = vb ? pf_vbits64(vb, vbytes, voff + r0) : ~(uint64_t)0;                      \
        if (lim < 64) vw &= (((uint64_t)1) << lim) - 1;                                           \
        uint64_t ne = 0;                                                                          \
        for (int64_t j = 0; j < lim; j++) {                                                       \
            uint64_t ok, ng, a, b;                                                                \
            pf_bsi_split((int64_t)v[r0 + j], (vw >> j) & 1, &ok, &ng, &a, &b);                    \
            ne |= (ok & ng & 1) << j;                                                             \
            if (narrow) { bp32[j] = (uint32_t)a; bn32[j] = (uint32_t)b; }                         \
            else { bp64[j] = a; bn64[j] = b; }                                                    \
        }                                                                                         \
        for (int64_t j = lim; j < 64; j++) { bp32[j] = bn32[j] = 0; bp64[j] = bn64[j] = 0; }     \
        pebm[w] = vw & ~ne;                                                                       \
        nebm[w] = ne;                                                                             \
        if (narrow) {                                                                             \
            PF_T32(bp32, pS, psl, nw, w);                                                         \
            if (nS) PF_T32(bn32, nS, nsl, nw, w);                                                 \
        } else {                                                                                  \
            pf_transpose64(bp64, pS, psl, nw, w);                                                 \
            if (nS) pf_transpose64(bn64, nS, nsl, nw, w);                                         \
        }                                                                                         \
    }                                                                                             \
}

/* generic 32-bit transposer (no AVX2) */
static inline void pf_transpose32(const uint32_t *buf, int S, uint64_t *slices, int64_t nw, int64_t w) {
    for (int i = 0; i < S; i++) {
        uint64_t acc = 0;
        for (int j = 0; j < 64; j++) acc |= (uint64_t)((buf[j] >> i) & 1) << j;
        slices[(int64_t)i * nw + w] = acc;
    }
}

#define PF_T32 pf_transpose32
PF_DEF_BSI_FILL(pf_bsi_fill_i8, int8_t, , 0)
PF_DEF_BSI_FILL(pf_bsi_fill_i16, int16_t, , 0)
PF_DEF_BSI_FILL(pf_bsi_fill_i32, int32_t, , 0)
PF_DEF_BSI_FILL(pf_bsi_fill_i64, int64_t, , 0)
#undef PF_T32
#if defined(__x86_64__) && defined(__GNUC__)
#define PF_HAVE_BSI_AVX2 1
#define PF_T32 pf_transpose32_avx2
PF_DEF_BSI_FILL(pf_bsi_fill_i8_avx2, int8_t, __attribute__((target("avx2"))), 0)
PF_DEF_BSI_FILL(pf_bsi_fill_i16_avx2, int16_t, __attribute__((target("avx2"))), 0)
PF_DEF_BSI_FILL(pf_bsi_fill_i32_avx2, int32_t, __attribute__((target("avx2"))), 0)
PF_DEF_BSI_FILL(pf_bsi_fill_i64_avx2, int64_t, __attribute__((target("avx2"))), 0)
#undef PF_T32
#endif
static int pf_has_avx2(void) { return pf_cpu_avx2(); }

static inline int pf_bitlen64(uint64_t x) { return x ? 64 - __builtin_clzll(x) : 0; }

static inline void pf_put32be(uint8_t *p, uint32_t x) {
    p[0] = (uint8_t)(x >> 24); p[1] = (uint8_t)(x >> 16); p[2] = (uint8_t)(x >> 8); p[3] = (uint8_t)x;
}

static inline uint8_t *pf_put64be(uint8_t *p, uint64_t x) {
    for (int k = 7; k >= 0; k--) *p++ = (uint8_t)(x >> (8 * k));
    return p;
}

#endif
