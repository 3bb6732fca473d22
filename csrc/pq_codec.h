/* Page decompression for the native Parquet reader (csrc/pq_read.h).
 *
 * Snappy and LZ4_RAW are decoded here, resumably: a page body is decompressed only as far as
 * its wanted values reach (pq_body_need), and the decoder carries on from there when more is
 * wanted.  ZSTD, GZIP and BROTLI go to the system's shared libraries, loaded once with dlopen
 * (libzstd.so.1, libz.so.1, libbrotlidec.so.1: no headers are needed to build, and a machine
 * without one of them reads that codec's pages through pyarrow instead: pq_codec_available).
 * ZSTD pages stream through ZSTD_decompressStream, so they too stop at the wanted prefix.
 *
 * Every length read from a page is checked against the page's bytes and its declared
 * uncompressed size; output buffers carry PQ_SLACK bytes past their size, which the fast
 * copies may overwrite.
 */
#ifndef PF_PQ_CODEC_H
#define PF_PQ_CODEC_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#if !defined(_WIN32)
#include <dlfcn.h>
#endif

#define PQ_SLACK 128

/* parquet.thrift CompressionCodec */
enum { PQ_UNCOMPRESSED = 0, PQ_SNAPPY = 1, PQ_GZIP = 2, PQ_LZO = 3, PQ_BROTLI = 4, PQ_LZ4 = 5, PQ_ZSTD = 6,
       PQ_LZ4_RAW = 7 };

/* result codes */
enum { PQ_OK = 0, PQ_CORRUPT = 1, PQ_UNSUPPORTED = 2, PQ_NOMEM = 3, PQ_IO = 4 };

static inline uint32_t pq_le32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static inline uint64_t pq_le64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static inline uint16_t pq_le16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline void pq_copy8(uint8_t *d, const uint8_t *s) { uint64_t v; memcpy(&v, s, 8); memcpy(d, &v, 8); }
static inline void pq_copy16(uint8_t *d, const uint8_t *s) {
    uint64_t a, b;
    memcpy(&a, s, 8);
    memcpy(&b, s + 8, 8);
    memcpy(d, &a, 8);
    memcpy(d + 8, &b, 8);
}

/* ------------------------------------------------------------------ shared libraries */
typedef struct { const void *src; size_t size; size_t pos; } pq_zin;
typedef struct { void *dst; size_t size; size_t pos; } pq_zout;

typedef struct {  /* zlib's z_stream (its layout has been stable since zlib 1.0) */
    const uint8_t *next_in; unsigned avail_in; unsigned long total_in;
    uint8_t *next_out; unsigned avail_out; unsigned long total_out;
    const char *msg; void *state; void *zalloc; void *zfree; void *opaque;
    int data_type; unsigned long adler; unsigned long reserved;
} pq_zstream;

static struct {
    int loaded;
    void *(*zstd_create)(void);
    size_t (*zstd_free)(void *);
    size_t (*zstd_stream)(void *, pq_zout *, pq_zin *);
    size_t (*zstd_reset)(void *, int);
    unsigned (*zstd_iserror)(size_t);
    const char *(*zlib_version)(void);
    int (*inflate_init2)(pq_zstream *, int, const char *, int);
    int (*inflate)(pq_zstream *, int);
    int (*inflate_end)(pq_zstream *);
    int (*brotli)(size_t, const uint8_t *, size_t *, uint8_t *);
} pq_libs;
static pthread_once_t pq_libs_once = PTHREAD_ONCE_INIT;

static void *pq_dlopen_any(const char *const *names) {
#if defined(_WIN32)
    (void)names;
    return NULL;
#else
    for (; *names; names++) {
        void *h = dlopen(*names, RTLD_NOW | RTLD_LOCAL);
        if (h) return h;
    }
    return NULL;
#endif
}

static void pq_load_libs(void) {
#if !defined(_WIN32)
    static const char *const zstd_names[] = {"libzstd.so.1", "libzstd.so", "libzstd.1.dylib", "libzstd.dylib", NULL};
    static const char *const zlib_names[] = {"libz.so.1", "libz.so", "libz.1.dylib", "libz.dylib", NULL};
    static const char *const brotli_names[] = {"libbrotlidec.so.1", "libbrotlidec.so", "libbrotlidec.1.dylib",
                                               "libbrotlidec.dylib", NULL};
    void *h = pq_dlopen_any(zstd_names);
    if (h) {
        *(void **)&pq_libs.zstd_create = dlsym(h, "ZSTD_createDCtx");
        *(void **)&pq_libs.zstd_free = dlsym(h, "ZSTD_freeDCtx");
        *(void **)&pq_libs.zstd_stream = dlsym(h, "ZSTD_decompressStream");
        *(void **)&pq_libs.zstd_reset = dlsym(h, "ZSTD_DCtx_reset");
        *(void **)&pq_libs.zstd_iserror = dlsym(h, "ZSTD_isError");
        if (!pq_libs.zstd_create || !pq_libs.zstd_free || !pq_libs.zstd_stream || !pq_libs.zstd_reset ||
            !pq_libs.zstd_iserror)
            pq_libs.zstd_create = NULL;
    }
    h = pq_dlopen_any(zlib_names);
    if (h) {
        *(void **)&pq_libs.zlib_version = dlsym(h, "zlibVersion");
        *(void **)&pq_libs.inflate_init2 = dlsym(h, "inflateInit2_");
        *(void **)&pq_libs.inflate = dlsym(h, "inflate");
        *(void **)&pq_libs.inflate_end = dlsym(h, "inflateEnd");
        if (!pq_libs.zlib_version || !pq_libs.inflate_init2 || !pq_libs.inflate || !pq_libs.inflate_end)
            pq_libs.inflate = NULL;
    }
    h = pq_dlopen_any(brotli_names);
    if (h) *(void **)&pq_libs.brotli = dlsym(h, "BrotliDecoderDecompress");
#endif
    pq_libs.loaded = 1;
}

/* Can this process decompress pages of this codec here? */
static int pq_codec_available(int codec) {
    pthread_once(&pq_libs_once, pq_load_libs);
    switch (codec) {
    case PQ_UNCOMPRESSED: case PQ_SNAPPY: case PQ_LZ4_RAW: return 1;
    case PQ_ZSTD: return pq_libs.zstd_create != NULL;
    case PQ_GZIP: return pq_libs.inflate != NULL;
    case PQ_BROTLI: return pq_libs.brotli != NULL;
    default: return 0;
    }
}

/* ------------------------------------------------------------------ Snappy */
/* Per tag byte: the element's length in the low 8 bits (literals: up to 60; longer ones have their
 * length after the tag) and, for a 1-byte-offset copy, its offset's bits 8-10 in bits 24-26 (so that
 * `entry >> 16` adds them to the offset byte). */
static uint32_t pq_snappy_tags[256];
static pthread_once_t pq_snappy_once = PTHREAD_ONCE_INIT;
static void pq_snappy_init(void) {
    for (uint32_t t = 0; t < 256; t++)
        pq_snappy_tags[t] = (t & 3) == 1 ? ((t >> 2) & 7) + 4 + ((t >> 5) << 24) : (t >> 2) + 1;
}

/* Decode elements until at least `target` bytes are out (or the whole output).  Returns PQ_OK or
 * PQ_CORRUPT.  dst holds dstlen + PQ_SLACK bytes.
 *
 * Pages of short values are mostly elements of 2 to 8 bytes, so the time goes per element, not per
 * byte.  While 69 input bytes are left (a tag, 4 offset bytes, a 64-byte literal), an element is
 * decoded without a branch on its kind: the tag table gives its length, the next tag's position
 * is computed, and its first 16 bytes are copied from the literal or the earlier output alike.
 * Longer elements and copies that overlap their own output (from fewer bytes back than their
 * length) take a branch.  Sorted doubles and increasing integers are mostly copies of 4-7 bytes
 * from 8 bytes back, between short literals: those take the common path.  The last bytes of the
 * input go through the checked loop below it.  Every element's length is checked against the
 * output left and every copy's offset against the output written, in both loops. */
static int pq_snappy_to(const uint8_t *src, size_t srclen, size_t *ipos, uint8_t *dst, size_t dstlen, size_t *opos,
                        size_t target) {
    const uint8_t *ip = src + *ipos, *const ie = src + srclen;
    uint8_t *op = dst + *opos, *const oe = dst + dstlen;
    uint8_t *const ot = dst + (target < dstlen ? target : dstlen);
    uint8_t *const wide = oe + PQ_SLACK - 80; /* below this, 80 bytes may be written past op */
    static const uint32_t mask[4] = {0, 0xFFu, 0xFFFFu, 0xFFFFFFFFu};  /* a copy's offset, by its kind */
    static const uint32_t lmask[5] = {0, 0xFFu, 0xFFFFu, 0xFFFFFFu, 0xFFFFFFFFu}; /* a literal's length bytes */
    pthread_once(&pq_snappy_once, pq_snappy_init);
    if (srclen >= 69) {
        const uint8_t *const ifast = ie - 69;
        /* op < oe here, so the copies of up to 64 + 8 bytes stay inside dst's PQ_SLACK */
        while (op < ot && ip <= ifast) {
            uint32_t tag = ip[0], type = tag & 3, e = pq_snappy_tags[tag];
            size_t len = e & 0xFF, adv = type == 0 ? (tag >> 2) + 2 : type + 1 + (type == 3);
            size_t off = (pq_le32(ip + 1) & mask[type]) + (e >> 16);
            int lit = type == 0;
            if (__builtin_expect(lit && len > 60, 0)) { /* its length is in the next 1-4 bytes */
                size_t nb = len - 60;
                len = (size_t)(pq_le32(ip + 1) & lmask[nb]) + 1;
                ip += 1 + nb;
                if (len > (size_t)(ie - ip) || len > (size_t)(oe - op)) return PQ_CORRUPT;
                memcpy(op, ip, len);
                op += len;
                ip += len;
                continue;
            }
            if (__builtin_expect(len > (size_t)(oe - op) || (!lit && off - 1 >= (size_t)(op - dst)), 0))
                return PQ_CORRUPT;
            const uint8_t *from = lit ? ip + 1 : op - off; /* (off checked above) */
            if (__builtin_expect(lit && len <= 16, 1)) {
                pq_copy16(op, from);
            } else if (__builtin_expect(len <= 16 && len >= 4 && off >= len, 1)) {
                /* exactly len bytes, in two loads that may overlap: a wider load would span
                 * bytes stored by the elements just before it, which the processor cannot
                 * forward from its stores (it waits for them to reach the cache) */
                if (len <= 8) {
                    uint32_t a = pq_le32(from), z = pq_le32(from + len - 4);
                    memcpy(op, &a, 4);
                    memcpy(op + len - 4, &z, 4);
                } else {
                    uint64_t a, z;
                    memcpy(&a, from, 8);
                    memcpy(&z, from + len - 8, 8);
                    memcpy(op, &a, 8);
                    memcpy(op + len - 8, &z, 8);
                }
            } else if (lit || off >= 16) {
                pq_copy16(op, from);
                pq_copy16(op + 16, from + 16);
                pq_copy16(op + 32, from + 32);
                pq_copy16(op + 48, from + 48);
            } else { /* a repeat of a pattern under 16 bytes: widen it to 8+ bytes, then 8 at a time */
                uint8_t *d = op;
                while ((size_t)(d - from) < 8) {
                    pq_copy8(d, from);
                    d += d - from;
                }
                const size_t step = (size_t)(d - from);
                for (; d < op + len; d += 8) pq_copy8(d, d - step);
            }
            op += len;
            ip += adv;
        }
    }
    while (op < ot) {
        if (ip >= ie) return PQ_CORRUPT;
        uint32_t tag = *ip++;
        if ((tag & 3) == 0) {
            size_t len = (tag >> 2) + 1;
            if (len <= 16 && ie - ip >= 16 && op <= wide) {
                if (len > (size_t)(oe - op)) return PQ_CORRUPT;
                pq_copy16(op, ip);
                op += len;
                ip += len;
                continue;
            }
            if (len > 60) {
                size_t nb = len - 60, v = 0, k;
                if ((size_t)(ie - ip) < nb) return PQ_CORRUPT;
                for (k = 0; k < nb; k++) v |= (size_t)ip[k] << (8 * k);
                ip += nb;
                len = v + 1;
            }
            if (len > (size_t)(ie - ip) || len > (size_t)(oe - op)) return PQ_CORRUPT;
            memcpy(op, ip, len);
            op += len;
            ip += len;
            continue;
        }
        size_t len, off;
        if ((tag & 3) == 1) {
            if (ip >= ie) return PQ_CORRUPT;
            len = ((tag >> 2) & 7) + 4;
            off = ((size_t)(tag >> 5) << 8) | *ip++;
        } else if ((tag & 3) == 2) {
            if (ie - ip < 2) return PQ_CORRUPT;
            len = (tag >> 2) + 1;
            off = pq_le16(ip);
            ip += 2;
        } else {
            if (ie - ip < 4) return PQ_CORRUPT;
            len = (tag >> 2) + 1;
            off = pq_le32(ip);
            ip += 4;
        }
        if (off == 0 || off > (size_t)(op - dst) || len > (size_t)(oe - op)) return PQ_CORRUPT;
        const uint8_t *from = op - off;
        if (off >= 16 && op <= wide) {
            pq_copy16(op, from);
            if (len > 16) {
                pq_copy16(op + 16, from + 16);
                if (len > 32) {
                    pq_copy16(op + 32, from + 32);
                    pq_copy16(op + 48, from + 48);
                }
            }
        } else if (off >= 8 && op <= wide) {
            size_t i;
            for (i = 0; i < len; i += 8) pq_copy8(op + i, from + i);
        } else {
            size_t i;
            for (i = 0; i < len; i++) op[i] = from[i];
        }
        op += len;
    }
    *ipos = (size_t)(ip - src);
    *opos = (size_t)(op - dst);
    if (op == oe && ip != ie) return PQ_CORRUPT; /* bytes after the whole output */
    return PQ_OK;
}

/* The uncompressed length Snappy's preamble states, and where its elements start. */
static int pq_snappy_head(const uint8_t *src, size_t srclen, size_t *len, size_t *start) {
    uint64_t v = 0;
    size_t i;
    for (i = 0; i < 5 && i < srclen; i++) {
        v |= (uint64_t)(src[i] & 0x7F) << (7 * i);
        if (!(src[i] & 0x80)) {
            *len = (size_t)v;
            *start = i + 1;
            return v <= 0xFFFFFFFFull ? PQ_OK : PQ_CORRUPT;
        }
    }
    return PQ_CORRUPT;
}

/* ------------------------------------------------------------------ LZ4 raw blocks */
static int pq_lz4_to(const uint8_t *src, size_t srclen, size_t *ipos, uint8_t *dst, size_t dstlen, size_t *opos,
                     size_t target) {
    const uint8_t *ip = src + *ipos, *const ie = src + srclen;
    uint8_t *op = dst + *opos, *const oe = dst + dstlen;
    uint8_t *const ot = dst + (target < dstlen ? target : dstlen);
    while (op < ot) {
        if (ip >= ie) return PQ_CORRUPT;
        unsigned token = *ip++;
        size_t lit = token >> 4;
        if (lit == 15) {
            unsigned b;
            do {
                if (ip >= ie) return PQ_CORRUPT;
                b = *ip++;
                lit += b;
            } while (b == 255 && lit < ((size_t)1 << 40));
        }
        if (lit > (size_t)(ie - ip) || lit > (size_t)(oe - op)) return PQ_CORRUPT;
        memcpy(op, ip, lit);
        op += lit;
        ip += lit;
        if (ip == ie) break; /* the last sequence: literals only */
        if (ie - ip < 2) return PQ_CORRUPT;
        size_t off = pq_le16(ip);
        ip += 2;
        size_t len = (token & 15) + 4;
        if ((token & 15) == 15) {
            unsigned b;
            do {
                if (ip >= ie) return PQ_CORRUPT;
                b = *ip++;
                len += b;
            } while (b == 255 && len < ((size_t)1 << 40));
        }
        if (off == 0 || off > (size_t)(op - dst) || len > (size_t)(oe - op)) return PQ_CORRUPT;
        const uint8_t *from = op - off;
        if (off >= 8) {
            size_t i = 0;
            if (op + len + 8 <= oe + PQ_SLACK)
                for (; i < len; i += 8) pq_copy8(op + i, from + i);
            else
                for (; i < len; i++) op[i] = from[i];
        } else {
            size_t i;
            for (i = 0; i < len; i++) op[i] = from[i];
        }
        op += len;
    }
    *ipos = (size_t)(ip - src);
    *opos = (size_t)(op - dst);
    return PQ_OK;
}

/* ------------------------------------------------------------------ sizes a page may claim */
/* Can csize bytes of this codec decompress to usize bytes?  Checked before a buffer of usize bytes
 * is allocated: a damaged page header must not make the reader allocate what it claims.  The
 * bounds are the codecs' largest expansion (Snappy: 64 bytes from a 3-byte copy; LZ4: 255 from a
 * length byte; deflate: about 1032; ZSTD and BROTLI: far more for runs of one byte, bounded here
 * at 32768 a byte, beyond anything a Parquet writer emits). */
static int pq_usize_plausible(int codec, const uint8_t *src, size_t csize, size_t usize) {
    switch (codec) {
    case PQ_UNCOMPRESSED: return usize == csize;
    case PQ_SNAPPY: {
        size_t len, start;
        return pq_snappy_head(src, csize, &len, &start) == PQ_OK && len == usize && usize / 22 <= csize + 64;
    }
    case PQ_LZ4_RAW: return usize / 256 <= csize + 64;
    case PQ_GZIP: return usize / 1100 <= csize + 1024;
    default: return usize / 32768 <= csize + 64;
    }
}

/* ------------------------------------------------------------------ a page body, decompressed on demand */
typedef struct {
    int codec;
    const uint8_t *src; /* compressed bytes */
    size_t srclen;
    const uint8_t *out; /* the uncompressed bytes: dst, or src itself when uncompressed */
    uint8_t *dst;       /* holds usize + PQ_SLACK bytes */
    size_t usize;       /* uncompressed size the page header states */
    size_t done;        /* bytes of out ready */
    size_t ipos;        /* resumable decoders: input consumed */
    void *zstd;         /* ZSTD_DCtx of this thread (borrowed) */
    pq_zin zin;
} pq_body;

/* Set up a body.  dst must hold usize + PQ_SLACK bytes (unused when uncompressed). */
static int pq_body_init(pq_body *b, int codec, const uint8_t *src, size_t srclen, uint8_t *dst, size_t usize,
                        void *zstd) {
    memset(b, 0, sizeof(*b));
    b->codec = codec;
    b->src = src;
    b->srclen = srclen;
    b->usize = usize;
    b->zstd = zstd;
    if (codec == PQ_UNCOMPRESSED) {
        if (srclen != usize) return PQ_CORRUPT;
        b->out = src;
        b->done = usize;
        return PQ_OK;
    }
    b->dst = dst;
    b->out = dst;
    if (codec == PQ_SNAPPY) {
        size_t len, start;
        if (pq_snappy_head(src, srclen, &len, &start) != PQ_OK || len != usize) return PQ_CORRUPT;
        b->ipos = start;
    } else if (codec == PQ_ZSTD) {
        if (!zstd) return PQ_UNSUPPORTED;
        pq_libs.zstd_reset(zstd, 1); /* ZSTD_reset_session_only */
        b->zin.src = src;
        b->zin.size = srclen;
        b->zin.pos = 0;
    } else if (codec != PQ_LZ4_RAW && codec != PQ_GZIP && codec != PQ_BROTLI) {
        return PQ_UNSUPPORTED;
    }
    return PQ_OK;
}

static int pq_inflate_all(pq_body *b) {
    pq_zstream z;
    memset(&z, 0, sizeof(z));
    if (pq_libs.inflate_init2(&z, 15 + 32, pq_libs.zlib_version(), (int)sizeof(z)) != 0) return PQ_NOMEM;
    int rc = PQ_OK;
    size_t in_left = b->srclen, out_left = b->usize;
    z.next_in = b->src;
    z.next_out = b->dst;
    for (;;) {
        unsigned ain = in_left > 0x40000000u ? 0x40000000u : (unsigned)in_left;
        unsigned aout = out_left > 0x40000000u ? 0x40000000u : (unsigned)out_left;
        z.avail_in = ain;
        z.avail_out = aout;
        int r = pq_libs.inflate(&z, 0);
        in_left -= ain - z.avail_in;
        out_left -= aout - z.avail_out;
        if (r == 1) { /* Z_STREAM_END: GZIP members may follow one another */
            if (in_left == 0) break;
            if (pq_libs.inflate_end(&z) != 0 ||
                pq_libs.inflate_init2(&z, 15 + 32, pq_libs.zlib_version(), (int)sizeof(z)) != 0) {
                rc = PQ_CORRUPT;
                break;
            }
            continue;
        }
        if (r != 0 || (ain == z.avail_in && aout == z.avail_out)) { /* an error, or no progress */
            rc = PQ_CORRUPT;
            break;
        }
    }
    pq_libs.inflate_end(&z);
    if (rc == PQ_OK && out_left != 0) rc = PQ_CORRUPT;
    return rc;
}

/* pq_body_need past what is ready: decompress further. */
static int pq_body_more(pq_body *b, size_t n) {
    if (n > b->usize) return PQ_CORRUPT; /* past the page's stated size */
    int rc = PQ_OK;
    size_t want;
    switch (b->codec) {
    case PQ_SNAPPY:
        /* decode a little past what is asked: the next ask is likely just after */
        want = n + (n >> 2) + 4096;
        rc = pq_snappy_to(b->src, b->srclen, &b->ipos, b->dst, b->usize, &b->done, want);
        break;
    case PQ_LZ4_RAW:
        want = n + (n >> 2) + 4096;
        rc = pq_lz4_to(b->src, b->srclen, &b->ipos, b->dst, b->usize, &b->done, want);
        if (rc == PQ_OK && b->done < n) rc = PQ_CORRUPT;
        if (rc == PQ_OK && b->ipos == b->srclen && b->done != b->usize) rc = PQ_CORRUPT;
        break;
    case PQ_ZSTD: {
        want = n + (n >> 2) + 65536;
        if (want > b->usize) want = b->usize;
        pq_zout zo = {b->dst, want, b->done};
        while (zo.pos < n) {
            size_t before_in = b->zin.pos, before_out = zo.pos;
            size_t r = pq_libs.zstd_stream(b->zstd, &zo, &b->zin);
            if (pq_libs.zstd_iserror(r)) {
                rc = PQ_CORRUPT;
                break;
            }
            if (zo.pos == before_out && b->zin.pos == before_in) { /* no progress: the input ended early */
                rc = PQ_CORRUPT;
                break;
            }
        }
        b->done = zo.pos;
        break;
    }
    case PQ_GZIP:
        rc = pq_inflate_all(b);
        if (rc == PQ_OK) b->done = b->usize;
        break;
    case PQ_BROTLI: {
        size_t got = b->usize;
        if (pq_libs.brotli(b->srclen, b->src, &got, b->dst) != 1 || got != b->usize) rc = PQ_CORRUPT;
        else b->done = b->usize;
        break;
    }
    default:
        rc = PQ_UNSUPPORTED;
    }
    if (rc == PQ_OK && b->done < n) rc = PQ_CORRUPT;
    return rc;
}

/* Make at least the first n bytes of the body ready (all of them when n >= usize).  The test is
 * inline: the value loops ask once a value, and mostly for bytes already there. */
static inline int pq_body_need(pq_body *b, size_t n) {
    return n <= b->done ? PQ_OK : pq_body_more(b, n);
}

#endif
