/* The native Parquet reader: chosen rows of flat columns of many files, in parallel, straight
 * into Arrow buffers.  Driven by paimon_fast/_kernels/pqread.pyx; the Python side
 * (paimon_fast/io/parquet/native.py) reads the footers, decides the Arrow type of each column and
 * allocates the output buffers.
 *
 * A job is a set of column chunks (one row group's column of one file) with, per chunk, the rows
 * of its row group that are wanted (sorted; or every row) and the output slot of its first
 * wanted row.  It runs in three phases, each spread over `nthreads` threads (no Python, no GIL):
 *
 *   A  per chunk: where its data pages are (the OffsetIndex when the file has one, else the page
 *      headers walked from the chunk's start), and which of them hold wanted rows;
 *   B  per selected page: read it (pread, or from memory), decompress it as far as its last
 *      wanted value (csrc/pq_codec.h), walk its definition levels and values to the wanted rows
 *      and write them into the column's output at their slots (fixed-width values, booleans and
 *      validity as bytes; byte arrays into a buffer of the page's own); a chunk's dictionary page
 *      is decoded once, by the first page that needs it;
 *   C  per byte-array column: the pages' bytes copied into one data buffer, lengths made offsets.
 *      A page whose values all go out keeps its decompressed body from B, and a page of a
 *      dictionary-encoded chunk keeps the dictionary indexes of its values (the chunk keeps its
 *      dictionary until C): their bytes are copied once, in C, not into a buffer of the page's own
 *      first.
 *
 * Handled: data pages V1 and V2; PLAIN, PLAIN_DICTIONARY / RLE_DICTIONARY, RLE (booleans),
 * DELTA_BINARY_PACKED (INT32, INT64) and DELTA_LENGTH_BYTE_ARRAY;
 * REQUIRED and OPTIONAL flat columns (max definition level 0 or 1); every physical type, with
 * the conversions pq_conv names; codecs of csrc/pq_codec.h.  Anything else marks the chunk
 * PQ_UNSUPPORTED (the caller reads it another way); bytes that are not valid Parquet mark it
 * PQ_CORRUPT with what and the file offset.  Every offset and length read from the file is
 * checked before it is used.
 */
#ifndef PF_PQ_READ_H
#define PF_PQ_READ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <errno.h>
#if !defined(_WIN32)
#include <unistd.h>
#endif
#include <time.h>
#include "pq_codec.h"

/* parquet.thrift Type, Encoding, PageType */
enum { PT_BOOLEAN = 0, PT_INT32 = 1, PT_INT64 = 2, PT_INT96 = 3, PT_FLOAT = 4, PT_DOUBLE = 5, PT_BYTE_ARRAY = 6,
       PT_FLBA = 7 };
enum { EN_PLAIN = 0, EN_PLAIN_DICT = 2, EN_RLE = 3, EN_BIT_PACKED = 4, EN_DELTA_BINARY = 5, EN_DELTA_LENGTH = 6,
       EN_RLE_DICT = 8 };
enum { PG_DATA = 0, PG_INDEX = 1, PG_DICT = 2, PG_DATA_V2 = 3 };

/* output kinds and conversions from the physical value */
enum { OUT_FIXED = 0, OUT_BOOL = 1, OUT_BYTES = 2, OUT_LBYTES = 3 };
enum { CV_COPY = 0,     /* the physical value as it is (width = physical width) */
       CV_I32_1 = 1,    /* INT32 -> 1 byte (int8 / uint8) */
       CV_I32_2 = 2,    /* INT32 -> 2 bytes */
       CV_INT96_NS = 3, /* INT96 (Julian day, nanoseconds of day) -> int64 ns since the epoch */
       CV_DEC_I32 = 4,  /* INT32 -> decimal128 */
       CV_DEC_I64 = 5,  /* INT64 -> decimal128 */
       CV_DEC_BE = 6,   /* FIXED_LEN_BYTE_ARRAY big-endian two's complement -> decimal128 */
       CV_I32_I64 = 7,  /* INT32 -> int64 (signed) */
       CV_U32_I64 = 8,  /* INT32 read unsigned -> int64 */
       CV_F32_F64 = 9,  /* FLOAT -> double */
       CV_NULL = 10 };  /* the column is not in this file: nulls */

#define PQ_MAX_PAGE ((int64_t)1 << 31)  /* larger pages (header sizes) are corrupt */
#define PQ_MAX_INDEX ((int64_t)64 << 20)  /* offset indexes read here */
#define PQ_MAX_HEADER ((int64_t)16 << 20)

typedef struct {
    int fd;                        /* >= 0: the file, read with pread */
    int nseg;                      /* else: its bytes in memory, as segments (ascending offsets) */
    const int64_t *seg_off, *seg_len;
    const uint8_t *const *seg_ptr;
    int64_t size;
    int mapped;                    /* its one segment is the file mapped into memory (see pq_guard) */
} pq_file;

typedef struct {
    int32_t kind, width;
    int64_t n;
    uint8_t *values;   /* OUT_FIXED: n * width bytes; OUT_BOOL: n bytes */
    uint8_t *valid;    /* n bytes, or NULL */
    void *offsets;     /* byte arrays: n + 1 (int32 or int64); every slot of the job's chunks is
                        * written (the caller sets offsets[0] and the slots no chunk covers) */
    uint8_t *data;     /* byte arrays: the reader's (the caller frees it with pq_bfree(data, data_cap)) */
    int64_t data_len;
    size_t data_cap;
    int32_t overflow;  /* int32 offsets would overflow */
} pq_col;

typedef struct {
    int64_t off;        /* first byte of the page (its header) */
    int64_t size;       /* header + body */
    int64_t first_row;
    int64_t nrows;
    int64_t k0, k1;     /* its wanted rows: chunk rows [k0, k1) */
    int32_t chunk;
    int32_t zero;       /* a unit of a chunk that failed: its byte arrays are empty */
    int32_t mode;       /* byte arrays: what data holds (PM_*) */
    uint8_t *data;      /* byte arrays: see mode; owned (or NULL) */
    size_t data_cap;
    int64_t data_len;   /* the bytes of its values in the column's data */
    int64_t data_off;   /* where they go in the column's data */
    const uint8_t *src, *src_end; /* PM_BODY: the first value's length prefix, the body's end */
    int64_t nsrc;       /* PM_BODY: its values; PM_DICT: its indexes */
} pq_page;

/* what a byte-array page holds between phases B and C */
enum { PM_BYTES = 0, /* data: the wanted values' bytes, in order */
       PM_BODY = 1,  /* every value of the page: nsrc PLAIN values from src (in data, or in the file's memory) */
       PM_DICT = 2,  /* data: nsrc uint32 indexes into the chunk's dictionary (kept until C) */
       PM_SPAN = 3   /* the wanted values' bytes, in order: data_len bytes from src (a DELTA_LENGTH_BYTE_ARRAY
                      * body, in data or in the file's memory) */
};
/* a chunk keeps a dictionary of byte arrays up to this size from B to C (larger ones: PM_BYTES),
 * when at least a quarter of its row group's rows are wanted.  Otherwise its few values are copied
 * in B, at little cost, and the dictionary is freed with the chunk's last page, so that the next
 * chunk's dictionary reuses the buffer (a sparse read of 50 files kept 150 dictionaries, ~100 of
 * them 1 MB, until C: more than the buffer cache keeps of one class, so each read faulted ~30 MB
 * in afresh).  Tests set the size (pq_set_keep_dict_max) to read both ways. */
static int64_t pq_keep_dict_max = (int64_t)16 << 20;
static void pq_set_keep_dict_max(int64_t v) { pq_keep_dict_max = v; }
/* whether a page whose values all go out keeps its body until C (PM_BODY); tests clear it */
static int pq_keep_bodies = 1;
static void pq_set_keep_bodies(int v) { pq_keep_bodies = v; }

typedef struct {
    int64_t n;
    uint8_t *buf;        /* the decompressed page */
    size_t buf_cap;
    uint8_t *fixed;      /* fixed-width values in the output width: buf, or conv */
    uint8_t *conv;       /* the converted values (when the output is not the physical value) */
    size_t conv_cap;
    uint32_t *offs;      /* byte arrays: value i is buf[offs[i] + 4, offs[i + 1]) */
    size_t offs_cap;
    int state;           /* 0 not read, 1 ready, 2 failed */
    pthread_mutex_t lock;
} pq_dict;

enum { CK_FILE, CK_COL, CK_PHYSICAL, CK_TYPE_LEN, CK_CODEC, CK_MAX_DEF, CK_CONV, CK_START, CK_LEN, CK_OI_OFF,
       CK_OI_LEN, CK_RG_ROWS, CK_NUM_VALUES, CK_ROWS_OFF, CK_NSEL, CK_ALL, CK_OUT_AT, CK_FIELDS };
/* CK_ALL: which rows of the row group a chunk wants.  CK_POSITIONS: the CK_NSEL sorted positions
 * at job->rows + CK_ROWS_OFF; CK_EVERY: all of them (CK_NSEL == the group's rows); CK_RANGE: the
 * CK_NSEL rows from the group's row CK_ROWS_OFF on (a clustered read's rows: no positions). */
enum { CK_POSITIONS = 0, CK_EVERY = 1, CK_RANGE = 2 };

/* The group's row of a chunk's first wanted row when it wants a range of rows (CK_EVERY: 0). */
#define PQ_RANGE_LO(c) ((c)->f[CK_ALL] == CK_RANGE ? (c)->f[CK_ROWS_OFF] : 0)

typedef struct {
    int64_t f[CK_FIELDS];  /* the inputs, in the order above */
    /* results */
    int32_t status;
    int64_t err_at;
    char err[160];
    int64_t pages_total, pages_read, bytes_read;
    int64_t nulls;                /* slots of the output it made null (its validity 0) */
    /* work */
    pq_page *pages;
    int64_t npages;
    int64_t left;                 /* pages not yet decoded: the last one frees the dictionary */
    int64_t dict_off, dict_size;  /* the dictionary page, or -1 */
    pq_dict dict;
    int32_t keep_dict;            /* byte arrays: the dictionary stays until phase C (PM_DICT pages) */
    pthread_mutex_t fail_lock;
} pq_chunk;

typedef struct {
    uint8_t *in;  size_t incap;
    uint8_t *out; size_t outcap;
    int64_t *vidx; size_t vcap;
    uint32_t *idx; size_t icap;
    int64_t *dbp; size_t dcap;  /* values decoded from DELTA_BINARY_PACKED (lengths, integers) */
    void *zstd;       /* ZSTD_DCtx of the data page being decoded */
    void *zstd_dict;  /* and of a dictionary page decoded meanwhile (the page's stream stays open) */
} pq_scratch;

typedef struct {
    int nfiles; pq_file *files;
    int ncols; pq_col *cols;
    int64_t nchunks; pq_chunk *chunks;
    const int64_t *rows;
    int nthreads;
    /* work */
    pq_page **units; int64_t nunits;
    pq_scratch *scratch;
    int64_t next;      /* the next item of the running phase */
    int phase;
    int oom;
    int guard;         /* a file is mapped: items run under pq_guard */
    int pooled;        /* its phases run on the pool (1), on threads of their own (-1), not yet asked (0) */
} pq_job;

/* pq_guard's state (see "mapped files that shrink") */
#if !defined(_WIN32)
#include <setjmp.h>
#include <signal.h>
/* initial-exec: the handler reads them without a TLS allocation (not async-signal-safe) */
#define PQ_TLS __thread __attribute__((tls_model("initial-exec")))
static PQ_TLS sigjmp_buf *pq_guard_jump; /* set while this thread runs a guarded item */
static PQ_TLS pq_dict *pq_guard_dict;     /* the dictionary this thread loads under its lock */
static struct sigaction pq_guard_prev;
static pthread_mutex_t pq_guard_lock = PTHREAD_MUTEX_INITIALIZER;
#endif

static void pq_fail(pq_chunk *c, int status, int64_t at, const char *what) {
    pthread_mutex_lock(&c->fail_lock); /* pages of one chunk fail on several threads */
    if (c->status == PQ_OK) { /* the first failure is reported */
        __atomic_store_n(&c->status, status, __ATOMIC_RELAXED);
        c->err_at = at;
        snprintf(c->err, sizeof(c->err), "%s", what);
    }
    pthread_mutex_unlock(&c->fail_lock);
}

static int pq_bgrow(uint8_t **p, size_t *cap, size_t need, size_t len);

/* ------------------------------------------------------------------ bytes of a file */
/* The bytes [off, off + len) of the file: a pointer into memory, or read into *buf (grown). */
static const uint8_t *pq_fetch(const pq_file *f, int64_t off, int64_t len, uint8_t **buf, size_t *cap, int *rc) {
    if (off < 0 || len < 0 || off > f->size || len > f->size - off) {
        *rc = PQ_CORRUPT;
        return NULL;
    }
    if (f->fd < 0) {
        int i;
        for (i = 0; i < f->nseg; i++) {
            if (off >= f->seg_off[i] && off + len <= f->seg_off[i] + f->seg_len[i])
                return f->seg_ptr[i] + (off - f->seg_off[i]);
        }
        *rc = PQ_UNSUPPORTED; /* not fetched: the caller reads it another way */
        return NULL;
    }
    if ((size_t)len > *cap || !*buf) {
        if (pq_bgrow(buf, cap, (size_t)len, 0) != PQ_OK) {
            *rc = PQ_NOMEM;
            return NULL;
        }
    }
#if defined(_WIN32)
    *rc = PQ_IO;
    return NULL;
#else
    int64_t got = 0;
    while (got < len) {
        ssize_t r = pread(f->fd, *buf + got, (size_t)(len - got), (off_t)(off + got));
        if (r < 0) {
            if (errno == EINTR) continue;
            *rc = PQ_IO;
            return NULL;
        }
        if (r == 0) { /* the file is shorter than it was */
            *rc = PQ_IO;
            return NULL;
        }
        got += r;
    }
    return *buf;
#endif
}

static int pq_grow(void **p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return PQ_OK;
    size_t ncap = need < *cap * 2 ? *cap * 2 : need;
    void *np_ = realloc(*p, ncap * elem + PQ_SLACK);
    if (!np_) return PQ_NOMEM;
    *p = np_;
    *cap = ncap;
    return PQ_OK;
}

/* ------------------------------------------------------------------ large buffers, kept between uses */
/* A buffer's pages cost a fault and a clearing each the first time they are touched: for a
 * dictionary page decoded per column chunk that cost more than decoding it, and for a read of
 * millions of rows the pages' byte-array buffers and the outputs' bytes are hundreds of MB.
 * Buffers of 64 KiB and more come in power-of-two classes and go back to a free list when done
 * (an output's bytes too, when Arrow lets go of them), so that the next buffer of the class reuses
 * warm pages.  At most pq_cache_max bytes are kept (the Python side sets it from the machine's
 * memory before each read: paimon_fast/io/parquet/buffercache.py), the rest is freed; a kept buffer not taken again
 * within pq_cache_decay_ns is freed at the next use of the cache after that (a process idle
 * since its last read keeps them until pq_release).  Smaller buffers are plain malloc. */
#define PQ_CLASS_MIN 16
#define PQ_CLASSES 12 /* 64 KiB .. 128 MiB (larger ones: exactly their size, not kept) */
#define PQ_CLASS_KEEP 64
static pthread_mutex_t pq_cache_lock = PTHREAD_MUTEX_INITIALIZER;
static void *pq_cache_list[PQ_CLASSES][PQ_CLASS_KEEP]; /* per class, oldest first */
static int64_t pq_cache_when[PQ_CLASSES][PQ_CLASS_KEEP]; /* when each was kept (monotonic ns) */
static int pq_cache_n[PQ_CLASSES];
static size_t pq_cache_bytes;
static size_t pq_cache_max = (size_t)128 << 20;
static int64_t pq_cache_decay_ns = (int64_t)10 * 1000000000;
static int64_t pq_cache_swept; /* when the cache was last swept for buffers past their decay */

static int64_t pq_now_ns(void) {
#if !defined(_WIN32)
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
#else
    return (int64_t)time(NULL) * 1000000000;
#endif
}

static int pq_class(size_t n) {
    int k = PQ_CLASS_MIN;
    while (k < PQ_CLASS_MIN + PQ_CLASSES && ((size_t)1 << k) < n) k++;
    return k < PQ_CLASS_MIN + PQ_CLASSES ? k - PQ_CLASS_MIN : -1;
}

/* Under pq_cache_lock: take out of the cache every buffer kept before `before` (all of them for
 * INT64_MAX) into out[] (room for PQ_CLASSES * PQ_CLASS_KEEP); returns how many. */
static int pq_cache_take_old(int64_t before, void **out) {
    int k, n = 0;
    for (k = 0; k < PQ_CLASSES; k++) {
        int old = 0;
        while (old < pq_cache_n[k] && pq_cache_when[k][old] < before) out[n++] = pq_cache_list[k][old++];
        if (!old) continue;
        memmove(pq_cache_list[k], pq_cache_list[k] + old, (size_t)(pq_cache_n[k] - old) * sizeof(void *));
        memmove(pq_cache_when[k], pq_cache_when[k] + old, (size_t)(pq_cache_n[k] - old) * sizeof(int64_t));
        pq_cache_n[k] -= old;
        pq_cache_bytes -= (size_t)old << (k + PQ_CLASS_MIN);
    }
    return n;
}

/* Free the buffers kept longer than the decay; looked at most once a second. */
static void pq_cache_sweep(void) {
    void *drop[PQ_CLASSES * PQ_CLASS_KEEP];
    int64_t now = pq_now_ns();
    int n = 0, i;
    if (__atomic_load_n(&pq_cache_swept, __ATOMIC_RELAXED) > now - 1000000000) return;
    pthread_mutex_lock(&pq_cache_lock);
    if (pq_cache_swept <= now - 1000000000) {
        __atomic_store_n(&pq_cache_swept, now, __ATOMIC_RELAXED);
        n = pq_cache_take_old(now - pq_cache_decay_ns, drop);
    }
    pthread_mutex_unlock(&pq_cache_lock);
    for (i = 0; i < n; i++) free(drop[i]);
}

/* A buffer of at least n bytes (+ PQ_SLACK); *cap: its usable size. */
static void *pq_balloc(size_t n, size_t *cap) {
    size_t want = n + PQ_SLACK;
    int k = want >= ((size_t)1 << PQ_CLASS_MIN) ? pq_class(want) : -1;
    void *p = NULL;
    if (k < 0) {
        p = malloc(want);
        *cap = p ? n : 0;
        return p;
    }
    pq_cache_sweep();
    pthread_mutex_lock(&pq_cache_lock);
    if (pq_cache_n[k] > 0) { /* the one kept last: its pages are the likeliest to be warm */
        p = pq_cache_list[k][--pq_cache_n[k]];
        pq_cache_bytes -= (size_t)1 << (k + PQ_CLASS_MIN);
    }
    pthread_mutex_unlock(&pq_cache_lock);
    if (!p) p = malloc((size_t)1 << (k + PQ_CLASS_MIN));
    *cap = p ? ((size_t)1 << (k + PQ_CLASS_MIN)) - PQ_SLACK : 0;
    return p;
}

static void pq_bfree(void *p, size_t cap) {
    if (!p) return;
    size_t whole = cap + PQ_SLACK;
    int k = whole >= ((size_t)1 << PQ_CLASS_MIN) ? pq_class(whole) : -1;
    if (k >= 0 && ((size_t)1 << (k + PQ_CLASS_MIN)) == whole) {
        int kept = 0;
        int64_t now = pq_now_ns();
        pthread_mutex_lock(&pq_cache_lock);
        if (pq_cache_n[k] < PQ_CLASS_KEEP && pq_cache_bytes + whole <= pq_cache_max) {
            pq_cache_when[k][pq_cache_n[k]] = now;
            pq_cache_list[k][pq_cache_n[k]++] = p;
            pq_cache_bytes += whole;
            kept = 1;
        }
        pthread_mutex_unlock(&pq_cache_lock);
        if (kept) return;
    }
    free(p);
}

/* Grow a buffer to at least need bytes, keeping its first len bytes. */
static int pq_bgrow(uint8_t **p, size_t *cap, size_t need, size_t len) {
    if (need <= *cap && *p) return PQ_OK;
    size_t ask = need < *cap * 2 ? *cap * 2 : need;
    size_t ncap;
    uint8_t *np_ = (uint8_t *)pq_balloc(ask, &ncap);
    if (!np_) return PQ_NOMEM;
    if (len && *p) memcpy(np_, *p, len);
    pq_bfree(*p, *cap);
    *p = np_;
    *cap = ncap;
    return PQ_OK;
}

/* Free every kept buffer (release_memory, and a smaller cap). */
static void pq_cache_clear(void) {
    void *drop[PQ_CLASSES * PQ_CLASS_KEEP];
    int n, i;
    pthread_mutex_lock(&pq_cache_lock);
    n = pq_cache_take_old(INT64_MAX, drop);
    pthread_mutex_unlock(&pq_cache_lock);
    for (i = 0; i < n; i++) free(drop[i]);
}

/* The most bytes kept (0: none; what is kept beyond it is freed) and how long a kept buffer may
 * wait to be taken again (ns). */
static void pq_set_cache(size_t max, int64_t decay_ns) {
    pthread_mutex_lock(&pq_cache_lock);
    pq_cache_max = max;
    pq_cache_decay_ns = decay_ns;
    size_t held = pq_cache_bytes;
    pthread_mutex_unlock(&pq_cache_lock);
    if (held > max) pq_cache_clear();
}

/* Bytes and buffers kept now. */
static void pq_cache_state(size_t *bytes, int64_t *count) {
    int k;
    pthread_mutex_lock(&pq_cache_lock);
    *bytes = pq_cache_bytes;
    *count = 0;
    for (k = 0; k < PQ_CLASSES; k++) *count += pq_cache_n[k];
    pthread_mutex_unlock(&pq_cache_lock);
}

/* ------------------------------------------------------------------ Thrift compact */
typedef struct { const uint8_t *p, *end; int bad, trunc; } pq_tc;

static inline uint64_t tc_varint(pq_tc *t) {
    uint64_t v = 0;
    int s = 0;
    while (t->p < t->end) {
        uint8_t c = *t->p++;
        v |= (uint64_t)(c & 0x7F) << s;
        if (!(c & 0x80)) return v;
        s += 7;
        if (s > 63) {
            t->bad = 1;
            return 0;
        }
    }
    t->bad = t->trunc = 1;
    return 0;
}
static inline int64_t tc_zz(pq_tc *t) {
    uint64_t v = tc_varint(t);
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}
static void tc_skip(pq_tc *t, int type, int depth);
static void tc_skip_struct(pq_tc *t, int depth) {
    if (depth > 32) {
        t->bad = 1;
        return;
    }
    while (!t->bad) {
        if (t->p >= t->end) {
            t->bad = t->trunc = 1;
            return;
        }
        uint8_t h = *t->p++;
        int type = h & 15;
        if (type == 0) return;
        if (!(h >> 4)) tc_zz(t);
        tc_skip(t, type, depth + 1);
    }
}
static void tc_skip(pq_tc *t, int type, int depth) {
    uint64_t n, i;
    if (depth > 32) {
        t->bad = 1;
        return;
    }
    switch (type) {
    case 1: case 2: return; /* booleans in a field header */
    case 3:
        if (t->p >= t->end) t->bad = t->trunc = 1;
        else t->p++;
        return;
    case 4: case 5: case 6: tc_varint(t); return;
    case 7:
        if (t->end - t->p < 8) t->bad = t->trunc = 1;
        else t->p += 8;
        return;
    case 8:
        n = tc_varint(t);
        if (t->bad) return;
        if (n > (uint64_t)(t->end - t->p)) t->bad = t->trunc = 1;
        else t->p += n;
        return;
    case 9: case 10: {
        if (t->p >= t->end) {
            t->bad = t->trunc = 1;
            return;
        }
        uint8_t h = *t->p++;
        int et = h & 15;
        n = h >> 4;
        if (n == 15) n = tc_varint(t);
        if (n > (uint64_t)(t->end - t->p) + 1) { /* every element takes a byte at least (but bools of 1) */
            t->bad = t->trunc = 1;
            return;
        }
        for (i = 0; i < n && !t->bad; i++) {
            if (et == 1 || et == 2) { /* booleans in a list: one byte each */
                if (t->p >= t->end) t->bad = t->trunc = 1;
                else t->p++;
            } else {
                tc_skip(t, et, depth + 1);
            }
        }
        return;
    }
    case 11: {
        n = tc_varint(t);
        if (t->bad || n == 0) return;
        if (t->p >= t->end) {
            t->bad = t->trunc = 1;
            return;
        }
        uint8_t kv = *t->p++;
        if (n > (uint64_t)(t->end - t->p)) {
            t->bad = t->trunc = 1;
            return;
        }
        for (i = 0; i < n && !t->bad; i++) {
            tc_skip(t, kv >> 4, depth + 1);
            tc_skip(t, kv & 15, depth + 1);
        }
        return;
    }
    case 12: tc_skip_struct(t, depth + 1); return;
    default: t->bad = 1; return;
    }
}
/* A field header: its type (0 at the struct's end), *fid updated. */
static inline int tc_field(pq_tc *t, int *fid) {
    if (t->p >= t->end) {
        t->bad = t->trunc = 1;
        return 0;
    }
    uint8_t h = *t->p++;
    int type = h & 15;
    if (type == 0) return 0;
    if (h >> 4) *fid += h >> 4;
    else *fid = (int)tc_zz(t);
    return type;
}
static inline int64_t tc_int(pq_tc *t, int type) {
    if (type == 4 || type == 5 || type == 6) return tc_zz(t);
    if (type == 3) {
        if (t->p >= t->end) {
            t->bad = t->trunc = 1;
            return 0;
        }
        return (int8_t)*t->p++;
    }
    t->bad = 1;
    return 0;
}

typedef struct {
    int type;
    int64_t usize, csize, hlen;
    int64_t nvalues, nnulls, nrows;
    int encoding, def_enc;
    int64_t def_len, rep_len;
    int is_compressed;
} pq_ph;

/* A PageHeader at [p, end): PQ_OK, PQ_CORRUPT, or (when more bytes may help) PQ_IO. */
static int pq_page_header(const uint8_t *p, const uint8_t *end, pq_ph *h) {
    pq_tc t = {p, end, 0, 0};
    int fid = 0, type;
    memset(h, 0, sizeof(*h));
    h->type = -1;
    h->usize = h->csize = -1;
    h->nvalues = h->nrows = -1;
    h->encoding = -1;
    h->is_compressed = 1;
    while ((type = tc_field(&t, &fid)) != 0 && !t.bad) {
        if (fid == 1 && type == 5) h->type = (int)tc_zz(&t);
        else if (fid == 2 && type == 5) h->usize = tc_zz(&t);
        else if (fid == 3 && type == 5) h->csize = tc_zz(&t);
        else if ((fid == 5 || fid == 7 || fid == 8) && type == 12) {
            int sf = 0, st;
            while ((st = tc_field(&t, &sf)) != 0 && !t.bad) {
                if (fid == 5) { /* DataPageHeader */
                    if (sf == 1) h->nvalues = tc_int(&t, st);
                    else if (sf == 2) h->encoding = (int)tc_int(&t, st);
                    else if (sf == 3) h->def_enc = (int)tc_int(&t, st);
                    else tc_skip(&t, st, 1);
                } else if (fid == 7) { /* DictionaryPageHeader */
                    if (sf == 1) h->nvalues = tc_int(&t, st);
                    else if (sf == 2) h->encoding = (int)tc_int(&t, st);
                    else tc_skip(&t, st, 1);
                } else { /* DataPageHeaderV2 */
                    if (sf == 1) h->nvalues = tc_int(&t, st);
                    else if (sf == 2) h->nnulls = tc_int(&t, st);
                    else if (sf == 3) h->nrows = tc_int(&t, st);
                    else if (sf == 4) h->encoding = (int)tc_int(&t, st);
                    else if (sf == 5) h->def_len = tc_int(&t, st);
                    else if (sf == 6) h->rep_len = tc_int(&t, st);
                    else if (sf == 7 && (st == 1 || st == 2)) h->is_compressed = st == 1;
                    else tc_skip(&t, st, 1);
                }
            }
        } else tc_skip(&t, type, 0);
    }
    if (t.bad) return t.trunc ? PQ_IO : PQ_CORRUPT;
    h->hlen = t.p - p;
    if (h->type < 0 || h->usize < 0 || h->csize < 0 || h->usize >= PQ_MAX_PAGE || h->csize >= PQ_MAX_PAGE)
        return PQ_CORRUPT;
    if (h->type == PG_DATA || h->type == PG_DICT) {
        if (h->nvalues < 0 || h->encoding < 0) return PQ_CORRUPT;
    } else if (h->type == PG_DATA_V2) {
        if (h->nvalues < 0 || h->nrows < 0 || h->encoding < 0 || h->def_len < 0 || h->rep_len < 0 ||
            h->def_len > h->csize || h->rep_len > h->csize - h->def_len || h->def_len > h->usize ||
            h->rep_len > h->usize - h->def_len)
            return PQ_CORRUPT;
    }
    return PQ_OK;
}

/* The page header at file offset off (header bytes read as needed, at most end - off). */
static int pq_read_header(const pq_file *f, int64_t off, int64_t end, uint8_t **buf, size_t *cap, pq_ph *h) {
    int64_t probe = 256;
    for (;;) {
        int64_t n = probe < end - off ? probe : end - off;
        int rc = PQ_OK;
        if (n <= 0) return PQ_CORRUPT;
        const uint8_t *p = pq_fetch(f, off, n, buf, cap, &rc);
        if (!p) return rc;
        rc = pq_page_header(p, p + n, h);
        if (rc != PQ_IO) return rc;
        if (n >= end - off || probe >= PQ_MAX_HEADER) return PQ_CORRUPT;
        probe *= 16;
    }
}

/* ------------------------------------------------------------------ RLE / bit-packed hybrid */
static inline uint64_t pq_bits(const uint8_t *d, int64_t k, int bw, const uint8_t *dend) {
    uint64_t bit = (uint64_t)k * (uint64_t)bw;
    const uint8_t *at = d + (bit >> 3);
    int sh = (int)(bit & 7);
    uint64_t v;
    if (at + 8 <= dend) {
        memcpy(&v, at, 8);
    } else {
        int i, need = (sh + bw + 7) >> 3;
        v = 0;
        for (i = 0; i < need; i++) v |= (uint64_t)at[i] << (8 * i);
    }
    v >>= sh;
    return bw < 64 ? v & (((uint64_t)1 << bw) - 1) : v;
}

typedef struct {
    pq_body *b;
    size_t pos, end;   /* the runs' bytes in the body */
    int bw;
} pq_hyb;

/* The next run header: *count values, packed (data at *data) or repeated *value. */
static int hyb_run(pq_hyb *h, int64_t *count, int *packed, uint64_t *value, size_t *data) {
    size_t want = h->pos + 10 < h->end ? h->pos + 10 : h->end;
    if (pq_body_need(h->b, want) != PQ_OK) return PQ_CORRUPT;
    const uint8_t *o = h->b->out;
    uint64_t v = 0;
    int s = 0;
    for (;;) {
        if (h->pos >= h->end || s > 63) return PQ_CORRUPT;
        uint8_t c = o[h->pos++];
        v |= (uint64_t)(c & 0x7F) << s;
        if (!(c & 0x80)) break;
        s += 7;
    }
    if (v & 1) {
        uint64_t groups = v >> 1;
        if (groups > (uint64_t)(h->end - h->pos) || groups * (uint64_t)h->bw > (uint64_t)(h->end - h->pos))
            return PQ_CORRUPT;
        *packed = 1;
        *count = (int64_t)(groups * 8);
        *data = h->pos;
        h->pos += (size_t)(groups * (uint64_t)h->bw);
    } else {
        int vb = (h->bw + 7) >> 3, k;
        if ((size_t)vb > h->end - h->pos || (v >> 1) > ((uint64_t)1 << 40)) return PQ_CORRUPT;
        if (pq_body_need(h->b, h->pos + vb) != PQ_OK) return PQ_CORRUPT;
        o = h->b->out;
        *packed = 0;
        *count = (int64_t)(v >> 1);
        *value = 0;
        for (k = 0; k < vb; k++) *value |= (uint64_t)o[h->pos + k] << (8 * k);
        if (h->bw < 64 && (*value >> h->bw)) return PQ_CORRUPT; /* a value wider than the bit width */
        h->pos += vb;
    }
    return PQ_OK;
}

/* out[i] = the value at sorted index idx[i] (i < n) of the runs holding `count` values. */
static int hyb_gather(pq_hyb *h, int64_t count, const int64_t *idx, int64_t n, uint32_t *out) {
    int64_t base = 0, i = 0;
    while (i < n) {
        int64_t c;
        int packed;
        uint64_t value = 0;
        size_t data = 0;
        if (idx[i] >= count || idx[i] < base) return PQ_CORRUPT;
        if (hyb_run(h, &c, &packed, &value, &data) != PQ_OK) return PQ_CORRUPT;
        int64_t stop = base + c;
        int64_t j = i;
        while (j < n && idx[j] < stop) j++;
        if (j > i) {
            if (packed) {
                size_t last = data + (size_t)((((uint64_t)(idx[j - 1] - base) + 1) * h->bw + 7) >> 3);
                if (pq_body_need(h->b, last) != PQ_OK) return PQ_CORRUPT;
                const uint8_t *d = h->b->out + data, *dend = h->b->out + last;
                for (; i < j; i++) out[i] = (uint32_t)pq_bits(d, idx[i] - base, h->bw, dend);
            } else {
                for (; i < j; i++) out[i] = (uint32_t)value;
            }
        }
        base = stop;
    }
    return PQ_OK;
}

/* out[0..count) = every value of the runs. */
static int hyb_all(pq_hyb *h, int64_t count, uint32_t *out) {
    int64_t base = 0;
    while (base < count) {
        int64_t c;
        int packed;
        uint64_t value = 0;
        size_t data = 0;
        if (hyb_run(h, &c, &packed, &value, &data) != PQ_OK) return PQ_CORRUPT;
        int64_t m = c < count - base ? c : count - base;
        if (packed) {
            size_t last = data + (size_t)(((uint64_t)m * h->bw + 7) >> 3);
            if (pq_body_need(h->b, last) != PQ_OK) return PQ_CORRUPT;
            const uint8_t *d = h->b->out + data, *dend = h->b->out + last;
            int64_t k = 0;
            if (h->bw == 1) {
                for (; k + 8 <= m; k += 8) {
                    uint8_t by = d[k >> 3];
                    int q;
                    for (q = 0; q < 8; q++) out[base + k + q] = (by >> q) & 1;
                }
            }
            for (; k < m; k++) out[base + k] = (uint32_t)pq_bits(d, k, h->bw, dend);
        } else {
            int64_t k;
            for (k = 0; k < m; k++) out[base + k] = (uint32_t)value;
        }
        base += m;
    }
    return PQ_OK;
}

/* Definition levels (bit width 1) of a page's rows: for the page-local rows lr[i] - shift, i in
 * [0, n) (sorted; lr NULL: the rows i - shift, a range), vidx[i] = the row's value number, or -1
 * for a null.  *nvals: values up to the last wanted one. */
static int pq_levels(pq_hyb *h, int64_t nrows, const int64_t *lr, int64_t shift, int64_t n, int64_t *vidx,
                     int64_t *nvals) {
    int64_t base = 0, ones = 0, i = 0;
    while (i < n) {
        int64_t c;
        int packed;
        uint64_t value = 0;
        size_t data = 0;
        int64_t want = lr ? lr[i] - shift : i - shift;
        if (want >= nrows || want < base) return PQ_CORRUPT;
        if (hyb_run(h, &c, &packed, &value, &data) != PQ_OK) return PQ_CORRUPT;
        if (value > 1) return PQ_CORRUPT;
        int64_t stop = base + c;
        if (stop > nrows) stop = nrows;
        if (packed) {
            int64_t upto = stop - base; /* bits of this run that are rows */
            size_t nbytes = (size_t)((upto + 7) >> 3);
            if (pq_body_need(h->b, data + nbytes) != PQ_OK) return PQ_CORRUPT;
            const uint8_t *d = h->b->out + data;
            int64_t cur = 0, cones = ones;
            for (; i < n; i++) {
                int64_t w = lr ? lr[i] - shift : i - shift;
                if (w >= stop) break;
                int64_t b = w - base;
                while (cur < b) {
                    if ((cur & 7) == 0 && cur + 8 <= b) {
                        cones += __builtin_popcount(d[cur >> 3]);
                        cur += 8;
                    } else {
                        cones += (d[cur >> 3] >> (cur & 7)) & 1;
                        cur++;
                    }
                }
                vidx[i] = (d[b >> 3] >> (b & 7)) & 1 ? cones : -1;
            }
            while (cur < upto) {
                if ((cur & 7) == 0 && cur + 8 <= upto) {
                    cones += __builtin_popcount(d[cur >> 3]);
                    cur += 8;
                } else {
                    cones += (d[cur >> 3] >> (cur & 7)) & 1;
                    cur++;
                }
            }
            ones = cones;
        } else {
            for (; i < n; i++) {
                int64_t w = lr ? lr[i] - shift : i - shift;
                if (w >= stop) break;
                vidx[i] = value ? ones + (w - base) : -1;
            }
            if (value) ones += stop - base;
        }
        base = stop;
    }
    *nvals = 0;
    for (i = n - 1; i >= 0; i--)
        if (vidx[i] >= 0) {
            *nvals = vidx[i] + 1;
            break;
        }
    return PQ_OK;
}

/* Do the levels start with one run of ones covering the page's rows (no null in it)? */
static int pq_levels_all_one(const pq_hyb *h, int64_t nrows) {
    pq_hyb peek = *h;
    int64_t c;
    int packed;
    uint64_t value = 0;
    size_t data = 0;
    if (hyb_run(&peek, &c, &packed, &value, &data) != PQ_OK) return 0; /* pq_levels reports it */
    return !packed && value == 1 && c >= nrows;
}

/* ------------------------------------------------------------------ values */
static inline int pq_phys_width(int physical, int type_len) {
    switch (physical) {
    case PT_INT32: case PT_FLOAT: return 4;
    case PT_INT64: case PT_DOUBLE: return 8;
    case PT_INT96: return 12;
    case PT_FLBA: return type_len;
    default: return 0;
    }
}

/* One physical value -> its output bytes. */
static inline void pq_emit(int conv, uint8_t *dst, const uint8_t *src, int pw, int ow) {
    switch (conv) {
    case CV_COPY: memcpy(dst, src, (size_t)ow); return;
    case CV_I32_1: dst[0] = src[0]; return;
    case CV_I32_2: dst[0] = src[0]; dst[1] = src[1]; return;
    case CV_INT96_NS: {
        uint64_t nanos;
        uint32_t day;
        memcpy(&nanos, src, 8);
        memcpy(&day, src + 8, 4);
        /* wrapping arithmetic, as pyarrow's conversion (a day far from the epoch overflows) */
        int64_t v = (int64_t)((uint64_t)((int64_t)day - 2440588) * 86400000000000ULL + nanos);
        memcpy(dst, &v, 8);
        return;
    }
    case CV_DEC_I32: {
        int32_t x;
        memcpy(&x, src, 4);
        int64_t lo = x, hi = x < 0 ? -1 : 0;
        memcpy(dst, &lo, 8);
        memcpy(dst + 8, &hi, 8);
        return;
    }
    case CV_DEC_I64: {
        int64_t lo, hi;
        memcpy(&lo, src, 8);
        hi = lo < 0 ? -1 : 0;
        memcpy(dst, &lo, 8);
        memcpy(dst + 8, &hi, 8);
        return;
    }
    case CV_DEC_BE: {
        int k;
        uint8_t fill = (pw > 0 && (src[0] & 0x80)) ? 0xFF : 0;
        for (k = 0; k < ow; k++) dst[k] = k < pw ? src[pw - 1 - k] : fill;
        return;
    }
    case CV_I32_I64: {
        int32_t x;
        memcpy(&x, src, 4);
        int64_t v = x;
        memcpy(dst, &v, 8);
        return;
    }
    case CV_U32_I64: {
        uint32_t x;
        memcpy(&x, src, 4);
        int64_t v = x;
        memcpy(dst, &v, 8);
        return;
    }
    case CV_F32_F64: {
        float x;
        memcpy(&x, src, 4);
        double v = x;
        memcpy(dst, &v, 8);
        return;
    }
    default: memset(dst, 0, (size_t)ow); return;
    }
}

/* ------------------------------------------------------------------ phase A: a chunk's pages */
static int pq_add_page(pq_chunk *c, size_t *cap, int64_t off, int64_t size, int64_t first, int64_t rows) {
    if ((size_t)c->npages >= *cap) {
        size_t ncap = *cap ? *cap * 2 : 16;
        pq_page *np_ = (pq_page *)realloc(c->pages, ncap * sizeof(pq_page));
        if (!np_) return PQ_NOMEM;
        c->pages = np_;
        *cap = ncap;
    }
    pq_page *p = &c->pages[c->npages++];
    memset(p, 0, sizeof(*p));
    p->off = off;
    p->size = size;
    p->first_row = first;
    p->nrows = rows;
    return PQ_OK;
}

static inline int64_t pq_clamp(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

static int64_t pq_lower(const int64_t *a, int64_t lo, int64_t hi, int64_t v) {
    while (lo < hi) {
        int64_t m = lo + ((hi - lo) >> 1);
        if (a[m] < v) lo = m + 1;
        else hi = m;
    }
    return lo;
}

/* The wanted rows of each page (k0, k1), and drop the pages holding none. */
static void pq_select_pages(pq_job *job, pq_chunk *c) {
    int64_t nsel = c->f[CK_NSEL], i, w = 0, k = 0;
    int all = c->f[CK_ALL] != CK_POSITIONS;
    const int64_t *rows = all ? NULL : job->rows + c->f[CK_ROWS_OFF];
    const int64_t lo = PQ_RANGE_LO(c); /* a range: wanted row k is the group's row lo + k */
    for (i = 0; i < c->npages; i++) {
        pq_page *p = &c->pages[i];
        int64_t end = p->first_row + p->nrows;
        int64_t k1 = all ? pq_clamp(end - lo, 0, nsel) : pq_lower(rows, k, nsel, end);
        int64_t k0 = all ? pq_clamp(p->first_row - lo, 0, nsel) : k;
        if (k1 > k0) {
            p->k0 = k0;
            p->k1 = k1;
            c->pages[w++] = *p;
        }
        k = k1;
    }
    c->pages_total = c->npages;
    c->npages = w;
}

static void pq_chunk_pages(pq_job *job, pq_chunk *c, pq_scratch *s) {
    const pq_file *f = &job->files[c->f[CK_FILE]];
    int64_t start = c->f[CK_START], len = c->f[CK_LEN], end = start + len, rg_rows = c->f[CK_RG_ROWS];
    size_t cap = 0;
    int rc = PQ_OK;
    pq_col *col = &job->cols[c->f[CK_COL]];
    int physical = (int)c->f[CK_PHYSICAL], conv = (int)c->f[CK_CONV];
    c->dict_off = -1;
    if (conv == CV_NULL) {
        if (!col->valid) pq_fail(c, PQ_UNSUPPORTED, start, "no validity for a column of nulls");
        return;
    }
    if (c->f[CK_MAX_DEF] > 1 || (c->f[CK_MAX_DEF] == 1 && !col->valid)) {
        pq_fail(c, PQ_UNSUPPORTED, start, "definition levels not handled");
        return;
    }
    if ((physical == PT_BYTE_ARRAY) != (col->kind >= OUT_BYTES) || (physical == PT_BOOLEAN) != (col->kind == OUT_BOOL) ||
        (col->kind == OUT_FIXED && (pq_phys_width(physical, (int)c->f[CK_TYPE_LEN]) <= 0 || col->width <= 0 ||
                                    (conv == CV_COPY && col->width != pq_phys_width(physical, (int)c->f[CK_TYPE_LEN]))))) {
        pq_fail(c, PQ_UNSUPPORTED, start, "output type does not fit the physical type");
        return;
    }
    {
        int pw0 = pq_phys_width(physical, (int)c->f[CK_TYPE_LEN]), ow = col->width, ok = 1;
        switch (conv) {
        case CV_I32_1: ok = physical == PT_INT32 && ow == 1; break;
        case CV_I32_2: ok = physical == PT_INT32 && ow == 2; break;
        case CV_INT96_NS: ok = physical == PT_INT96 && ow == 8; break;
        case CV_DEC_I32: ok = physical == PT_INT32 && ow == 16; break;
        case CV_DEC_I64: ok = physical == PT_INT64 && ow == 16; break;
        case CV_DEC_BE: ok = physical == PT_FLBA && ow >= pw0 && (ow == 16 || ow == 32); break;
        case CV_I32_I64: case CV_U32_I64: ok = physical == PT_INT32 && ow == 8; break;
        case CV_F32_F64: ok = physical == PT_FLOAT && ow == 8; break;
        case CV_COPY: break;
        default: ok = 0;
        }
        int64_t all = c->f[CK_ALL], nsel = c->f[CK_NSEL], lo = c->f[CK_ROWS_OFF];
        if (all == CK_EVERY) ok = ok && nsel == rg_rows;
        else if (all == CK_RANGE) ok = ok && lo >= 0 && nsel >= 0 && lo <= rg_rows - nsel;
        else if (all != CK_POSITIONS) ok = 0;
        if (!ok) {
            pq_fail(c, PQ_UNSUPPORTED, start, "conversion does not fit the column");
            return;
        }
    }
    if (!pq_codec_available((int)c->f[CK_CODEC])) {
        pq_fail(c, PQ_UNSUPPORTED, start, "codec not available to the native reader");
        return;
    }
    if (start < 4 || len <= 0 || end > f->size) {
        pq_fail(c, PQ_CORRUPT, start, "column chunk outside the file");
        return;
    }
    if (c->f[CK_OI_OFF] >= 0) {
        int64_t ooff = c->f[CK_OI_OFF], olen = c->f[CK_OI_LEN];
        if (olen <= 0 || olen > PQ_MAX_INDEX) {
            pq_fail(c, PQ_UNSUPPORTED, ooff, "offset index size");
            return;
        }
        const uint8_t *p = pq_fetch(f, ooff, olen, &s->in, &s->incap, &rc);
        if (!p) {
            pq_fail(c, rc == PQ_CORRUPT ? PQ_UNSUPPORTED : rc, ooff, "offset index not readable");
            return;
        }
        pq_tc t = {p, p + olen, 0, 0};
        int fid = 0, type, got = 0;
        while ((type = tc_field(&t, &fid)) != 0 && !t.bad) {
            if (fid == 1 && type == 9 && !got) {
                uint8_t hb;
                if (t.p >= t.end) {
                    t.bad = 1;
                    break;
                }
                hb = *t.p++;
                uint64_t n = hb >> 4;
                if (n == 15) n = tc_varint(&t);
                if ((hb & 15) != 12 || n > (uint64_t)(t.end - t.p) || n == 0) {
                    t.bad = 1;
                    break;
                }
                uint64_t i;
                for (i = 0; i < n && !t.bad; i++) {
                    int sf = 0, st;
                    int64_t po = -1, ps = -1, pf = -1;
                    while ((st = tc_field(&t, &sf)) != 0 && !t.bad) {
                        if (sf == 1) po = tc_int(&t, st);
                        else if (sf == 2) ps = tc_int(&t, st);
                        else if (sf == 3) pf = tc_int(&t, st);
                        else tc_skip(&t, st, 1);
                    }
                    if (t.bad) break;
                    if (po < 0 || ps <= 0 || pf < 0) {
                        t.bad = 1;
                        break;
                    }
                    if (pq_add_page(c, &cap, po, ps, pf, 0) != PQ_OK) {
                        pq_fail(c, PQ_NOMEM, start, "out of memory");
                        return;
                    }
                }
                got = 1;
            } else tc_skip(&t, type, 0);
        }
        int64_t i;
        int ok = !t.bad && got && c->npages > 0 && c->pages[0].first_row == 0 && c->pages[0].off >= start;
        for (i = 0; ok && i < c->npages; i++) {
            pq_page *p = &c->pages[i];
            int64_t next = i + 1 < c->npages ? c->pages[i + 1].first_row : rg_rows;
            if (next <= p->first_row || p->off > end || p->size > end - p->off ||
                (i + 1 < c->npages && (c->pages[i + 1].off < p->off || c->pages[i + 1].off - p->off < p->size)))
                ok = 0;
            else p->nrows = next - p->first_row;
        }
        if (!ok) { /* pyarrow ignores a page index it cannot use: walk the pages instead */
            free(c->pages);
            c->pages = NULL;
            c->npages = 0;
            cap = 0;
        } else {
            if (c->pages[0].off > start) {
                c->dict_off = start;
                c->dict_size = c->pages[0].off - start;
            }
            pq_select_pages(job, c);
            return;
        }
    }
    /* walk the page headers */
    int64_t pos = start, row = 0;
    while (pos < end) {
        pq_ph h;
        rc = pq_read_header(f, pos, end, &s->in, &s->incap, &h);
        if (rc != PQ_OK) {
            pq_fail(c, rc == PQ_IO ? PQ_IO : PQ_CORRUPT, pos, "page header not readable");
            return;
        }
        int64_t size = h.hlen + h.csize;
        if (size > end - pos) {
            pq_fail(c, PQ_CORRUPT, pos, "page runs past its column chunk");
            return;
        }
        if (h.type == PG_DICT) {
            if (c->npages || c->dict_off >= 0) {
                pq_fail(c, PQ_UNSUPPORTED, pos, "dictionary page after data pages");
                return;
            }
            c->dict_off = pos;
            c->dict_size = size;
        } else if (h.type == PG_DATA || h.type == PG_DATA_V2) {
            int64_t r = h.type == PG_DATA_V2 ? h.nrows : h.nvalues;
            if (r > 0) {
                if (r > rg_rows - row) {
                    pq_fail(c, PQ_CORRUPT, pos, "pages hold more rows than the row group");
                    return;
                }
                if (pq_add_page(c, &cap, pos, size, row, r) != PQ_OK) {
                    pq_fail(c, PQ_NOMEM, pos, "out of memory");
                    return;
                }
                row += r;
            }
        } else if (h.type != PG_INDEX) {
            pq_fail(c, PQ_CORRUPT, pos, "page of an unknown type");
            return;
        }
        pos += size;
    }
    if (row != rg_rows) {
        pq_fail(c, PQ_CORRUPT, start, "the pages' rows are not the row group's");
        return;
    }
    pq_select_pages(job, c);
}

/* ------------------------------------------------------------------ dictionaries */
static int pq_dict_load(pq_job *job, pq_chunk *c, pq_scratch *s) {
    pq_dict *d = &c->dict;
    const pq_file *f = &job->files[c->f[CK_FILE]];
    int physical = (int)c->f[CK_PHYSICAL], conv = (int)c->f[CK_CONV];
    pq_col *col = &job->cols[c->f[CK_COL]];
    int rc = PQ_OK;
    uint8_t *tmp = NULL; /* not the scratch's: the page that asks holds it */
    size_t tcap = 0;
    if (c->dict_off < 0) return PQ_UNSUPPORTED;
    tmp = (uint8_t *)pq_balloc(65536, &tcap);
    if (!tmp) return PQ_NOMEM;
    int64_t pos = c->dict_off, end = c->dict_off + c->dict_size;
    pq_ph h;
    for (;;) { /* an index page may come first */
        rc = pq_read_header(f, pos, end, &tmp, &tcap, &h);
        if (rc != PQ_OK || (h.type != PG_DICT && (h.type != PG_INDEX || h.hlen + h.csize > end - pos))) {
            pq_bfree(tmp, tcap);
            return rc == PQ_NOMEM ? rc : PQ_CORRUPT;
        }
        if (h.type == PG_DICT) break;
        pos += h.hlen + h.csize;
    }
    if (h.hlen + h.csize > end - pos) rc = PQ_CORRUPT;
    else if (h.encoding != EN_PLAIN && h.encoding != EN_PLAIN_DICT) rc = PQ_UNSUPPORTED;
    const uint8_t *p = rc == PQ_OK ? pq_fetch(f, pos + h.hlen, h.csize, &tmp, &tcap, &rc) : NULL;
    if (p && !pq_usize_plausible((int)c->f[CK_CODEC], p, (size_t)h.csize, (size_t)h.usize)) {
        p = NULL;
        rc = PQ_CORRUPT;
    }
    if (p) {
        d->buf = (uint8_t *)pq_balloc((size_t)h.usize, &d->buf_cap);
        if (!d->buf) rc = PQ_NOMEM;
    }
    if (p && rc == PQ_OK) {
        pq_body b;
        __atomic_fetch_add(&c->bytes_read, h.hlen + h.csize, __ATOMIC_RELAXED);
        rc = pq_body_init(&b, (int)c->f[CK_CODEC], p, (size_t)h.csize, d->buf, (size_t)h.usize, s->zstd_dict);
        if (rc == PQ_OK) rc = pq_body_need(&b, (size_t)h.usize);
        if (rc == PQ_OK && b.out != d->buf) memcpy(d->buf, b.out, (size_t)h.usize); /* it was not compressed */
    }
    pq_bfree(tmp, tcap);
    if (rc != PQ_OK) return rc;
    int64_t n = h.nvalues, i;
    d->n = n;
    if (physical == PT_BYTE_ARRAY) {
        if (n > h.usize / 4) return PQ_CORRUPT;
        d->offs = (uint32_t *)pq_balloc((size_t)(n + 1) * sizeof(uint32_t), &d->offs_cap);
        if (!d->offs) return PQ_NOMEM;
        int64_t at = 0;
        for (i = 0; i < n; i++) {
            if (h.usize - at < 4) return PQ_CORRUPT;
            uint32_t l = pq_le32(d->buf + at);
            if ((int64_t)l > h.usize - at - 4) return PQ_CORRUPT;
            d->offs[i] = (uint32_t)at;
            at += 4 + (int64_t)l;
        }
        d->offs[n] = (uint32_t)at;
    } else if (physical == PT_BOOLEAN) {
        return PQ_UNSUPPORTED;
    } else {
        int pw = pq_phys_width(physical, (int)c->f[CK_TYPE_LEN]);
        int ow = col->width;
        if (pw <= 0 || n > h.usize / pw) return PQ_CORRUPT;
        if (conv == CV_COPY) {
            d->fixed = d->buf; /* the values as they are */
        } else {
            d->conv = (uint8_t *)pq_balloc((size_t)n * (size_t)ow, &d->conv_cap);
            if (!d->conv) return PQ_NOMEM;
            for (i = 0; i < n; i++) pq_emit(conv, d->conv + i * ow, d->buf + i * pw, pw, ow);
            d->fixed = d->conv;
        }
    }
    return PQ_OK;
}

static void pq_dict_free(pq_dict *d) {
    pq_bfree(d->buf, d->buf_cap);
    pq_bfree(d->conv, d->conv_cap);
    pq_bfree(d->offs, d->offs_cap);
    d->buf = d->conv = d->fixed = NULL;
    d->offs = NULL;
}

static int pq_dict_get(pq_job *job, pq_chunk *c, pq_scratch *s) {
    pq_dict *d = &c->dict;
    pthread_mutex_lock(&d->lock);
    if (d->state == 0) {
#if !defined(_WIN32)
        pq_guard_dict = d; /* a fault while loading: the guard unlocks it */
#endif
        int rc = pq_dict_load(job, c, s);
#if !defined(_WIN32)
        pq_guard_dict = NULL;
#endif
        d->state = rc == PQ_OK ? 1 : 2;
        /* pages of byte arrays leave their bytes in the dictionary until phase C (read under d->lock) */
        if (rc == PQ_OK && c->f[CK_PHYSICAL] == PT_BYTE_ARRAY && (int64_t)d->buf_cap <= pq_keep_dict_max &&
            c->f[CK_NSEL] * 4 >= c->f[CK_RG_ROWS])
            c->keep_dict = 1;
        if (rc != PQ_OK) {
            pthread_mutex_unlock(&d->lock);
            return rc;
        }
    }
    int ok = d->state == 1;
    pthread_mutex_unlock(&d->lock);
    return ok ? PQ_OK : PQ_CORRUPT;
}

/* ------------------------------------------------------------------ phase B: one page */
static int pq_scratch_need(pq_scratch *s, int64_t rows, int64_t out_bytes) {
    if (pq_grow((void **)&s->vidx, &s->vcap, (size_t)rows, sizeof(int64_t)) != PQ_OK) return PQ_NOMEM;
    if (pq_grow((void **)&s->idx, &s->icap, (size_t)rows, sizeof(uint32_t)) != PQ_OK) return PQ_NOMEM;
    /* (from the class cache: a page that takes the body gives it back there, pq_page_run) */
    if (pq_bgrow(&s->out, &s->outcap, (size_t)out_bytes, 0) != PQ_OK) return PQ_NOMEM;
    return PQ_OK;
}

/* append n bytes to the page's data */
static inline int pq_page_put(pq_page *pg, const uint8_t *src, size_t n) {
    if ((size_t)pg->data_len + n > pg->data_cap || !pg->data) {
        size_t need = (size_t)pg->data_len + n;
        if (need < 4096) need = 4096;
        if (pq_bgrow(&pg->data, &pg->data_cap, need, (size_t)pg->data_len) != PQ_OK) return PQ_NOMEM;
    }
    memcpy(pg->data + pg->data_len, src, n);
    pg->data_len += (int64_t)n;
    return PQ_OK;
}

static inline void pq_set_len(pq_col *col, int64_t slot, int64_t len) {
    if (col->kind == OUT_LBYTES) ((int64_t *)col->offsets)[slot + 1] = len;
    else ((int32_t *)col->offsets)[slot + 1] = (int32_t)len;
}

/* ------------------------------------------------------------------ DELTA_BINARY_PACKED */
/* An unsigned LEB128 varint at *pos of the body (at most 10 bytes). */
static int pq_body_varint(pq_body *b, size_t *pos, uint64_t *v) {
    uint64_t r = 0;
    int sh;
    for (sh = 0; sh < 70; sh += 7) {
        if (pq_body_need(b, *pos + 1) != PQ_OK) return PQ_CORRUPT;
        uint8_t x = b->out[(*pos)++];
        if (sh == 63 && (x & 0x7E)) return PQ_CORRUPT; /* past 64 bits */
        r |= (uint64_t)(x & 0x7F) << sh;
        if (!(x & 0x80)) {
            *v = r;
            return PQ_OK;
        }
    }
    return PQ_CORRUPT;
}

static inline int64_t pq_unzigzag(uint64_t u) { return (int64_t)((u >> 1) ^ (~(u & 1) + 1)); }

/* Decode the first `want` values of the DELTA_BINARY_PACKED run at *pos of the body into out
 * (each as int64; w32: its arithmetic wraps in 32 bits, as an INT32 column's does), its stated
 * number of values into *total and, when end is not NULL, where the run ends (its remaining
 * blocks walked, not unpacked) into *end.  The header is <block size> <miniblocks a block>
 * <values> <first value, zigzag>; a block is <its least delta, zigzag>, a bit width byte per
 * miniblock and the miniblocks' deltas above the least, bit-packed (little-endian); a miniblock
 * past the last value is not stored, the last one is padded to its full size.  Every size is
 * checked against the body before it is used; sizes a writer cannot write are corrupt. */
static int pq_dbp(pq_body *b, size_t *pos, int64_t want, int64_t *out, int w32, int64_t *total, size_t *end) {
    uint64_t bs, nmb, cnt, first, md;
    size_t p = *pos;
    if (pq_body_varint(b, &p, &bs) != PQ_OK || pq_body_varint(b, &p, &nmb) != PQ_OK ||
        pq_body_varint(b, &p, &cnt) != PQ_OK || pq_body_varint(b, &p, &first) != PQ_OK)
        return PQ_CORRUPT;
    if (bs == 0 || bs % 128 || bs > ((uint64_t)1 << 20) || nmb == 0 || bs % nmb || (bs / nmb) % 32)
        return PQ_CORRUPT;
    if (cnt > 0x7FFFFFFF || (uint64_t)want > cnt) return PQ_CORRUPT; /* (a page's values: an i32) */
    const int64_t per = (int64_t)(bs / nmb);
    const int maxbw = w32 ? 32 : 64;
    uint64_t v = (uint64_t)pq_unzigzag(first);
    if (w32) v = (uint64_t)(int64_t)(int32_t)(uint32_t)v;
    int64_t got = 0, left = (int64_t)cnt;
    if (left > 0) {
        if (got < want) out[got++] = (int64_t)v;
        left--;
    }
    while (left > 0) {
        if (got >= want && !end) break;
        if (pq_body_varint(b, &p, &md) != PQ_OK) return PQ_CORRUPT;
        const uint64_t mind = (uint64_t)pq_unzigzag(md);
        if (pq_body_need(b, p + (size_t)nmb) != PQ_OK) return PQ_CORRUPT;
        const size_t widths = p;
        p += (size_t)nmb;
        uint64_t mb;
        for (mb = 0; mb < nmb && left > 0; mb++) {
            int bw = b->out[widths + mb];
            if (bw > maxbw) return PQ_CORRUPT;
            size_t bytes = (size_t)per * (size_t)bw / 8;
            int64_t m = left < per ? left : per; /* values of this miniblock */
            if (got >= want) { /* past the wanted values: only where the run ends */
                p += bytes;
                left -= m;
                continue;
            }
            if (pq_body_need(b, p + bytes) != PQ_OK) return PQ_CORRUPT;
            const uint8_t *src = b->out + p;
            int64_t j;
            if (bw == 0) {
                for (j = 0; j < m && got < want; j++) {
                    v += mind;
                    if (w32) v = (uint64_t)(int64_t)(int32_t)(uint32_t)v;
                    out[got++] = (int64_t)v;
                }
            } else {
                const uint64_t mask = bw == 64 ? ~(uint64_t)0 : ((uint64_t)1 << bw) - 1;
                uint8_t grp[72]; /* 8 values: bw bytes, read with 8-byte loads */
                memset(grp, 0, sizeof(grp));
                for (j = 0; j < m && got < want; j += 8) {
                    memcpy(grp, src + (size_t)(j / 8) * (size_t)bw, (size_t)bw);
                    int64_t k, kn = m - j < 8 ? m - j : 8;
                    for (k = 0; k < kn && got < want; k++) {
                        size_t bit = (size_t)k * (size_t)bw, at = bit >> 3;
                        unsigned sh = (unsigned)(bit & 7);
                        uint64_t d = pq_le64(grp + at) >> sh;
                        if (sh && (int)sh + bw > 64) d |= (uint64_t)grp[at + 8] << (64 - sh);
                        v += mind + (d & mask);
                        if (w32) v = (uint64_t)(int64_t)(int32_t)(uint32_t)v;
                        out[got++] = (int64_t)v;
                    }
                }
            }
            p += bytes;
            left -= m;
        }
    }
    if (got < want) return PQ_CORRUPT;
    if (end) {
        if (p > b->usize) return PQ_CORRUPT;
        *end = p;
    }
    *total = (int64_t)cnt;
    *pos = p;
    return PQ_OK;
}

static int pq_dbp_room(pq_scratch *s, int64_t n) {
    return pq_grow((void **)&s->dbp, &s->dcap, (size_t)(n > 0 ? n : 1), sizeof(int64_t));
}

static void pq_null_unit(pq_job *job, pq_page *u) {
    pq_chunk *c = &job->chunks[u->chunk];
    pq_col *col = &job->cols[c->f[CK_COL]];
    int64_t a = c->f[CK_OUT_AT] + u->k0, n = u->k1 - u->k0;
    if (col->valid) {
        memset(col->valid + a, 0, (size_t)n);
        __atomic_fetch_add(&c->nulls, n, __ATOMIC_RELAXED);
    }
    if (col->kind == OUT_FIXED) memset(col->values + a * col->width, 0, (size_t)(n * col->width));
    else if (col->kind == OUT_BOOL) memset(col->values + a, 0, (size_t)n);
    else if (col->kind == OUT_LBYTES) memset((int64_t *)col->offsets + a + 1, 0, (size_t)n * sizeof(int64_t));
    else memset((int32_t *)col->offsets + a + 1, 0, (size_t)n * sizeof(int32_t)); /* lengths 0 */
}

/* A page that keeps its body until phase C (PM_BODY, PM_SPAN) takes the buffer holding it: the
 * decompressed body (a buffer of the class cache, back there after phase C; the next page grows a
 * new one), or uncompressed, the read buffer; a body in the file's memory outlives the job. */
static void pq_page_take_body(pq_page *pg, pq_scratch *s, const pq_file *f, const uint8_t *bo) {
    if (bo == s->out) {
        pg->data = s->out;
        pg->data_cap = s->outcap;
        s->out = NULL;
        s->outcap = 0;
    } else if (f->fd >= 0) {
        pg->data = s->in;
        pg->data_cap = s->incap;
        s->in = NULL;
        s->incap = 0;
    }
}

static void pq_page_run(pq_job *job, pq_page *pg, pq_scratch *s) {
    pq_chunk *c = &job->chunks[pg->chunk];
    if (__atomic_load_n(&c->status, __ATOMIC_RELAXED) != PQ_OK) return;
    if (c->f[CK_CONV] == CV_NULL) {
        pq_null_unit(job, pg);
        return;
    }
    const pq_file *f = &job->files[c->f[CK_FILE]];
    pq_col *col = &job->cols[c->f[CK_COL]];
    int physical = (int)c->f[CK_PHYSICAL], conv = (int)c->f[CK_CONV], max_def = (int)c->f[CK_MAX_DEF];
    int pw = pq_phys_width(physical, (int)c->f[CK_TYPE_LEN]);
    int ow = col->width;
    int rc = PQ_OK;
    int64_t n = pg->k1 - pg->k0;                         /* wanted rows of the page */
    int64_t slot0 = c->f[CK_OUT_AT] + pg->k0;            /* the output slot of the first */
    const int64_t *rows = c->f[CK_ALL] != CK_POSITIONS ? NULL : job->rows + c->f[CK_ROWS_OFF] + pg->k0;
    /* without positions: the wanted rows are the page's rows from `from` on, n of them */
    const int64_t from = rows ? 0 : PQ_RANGE_LO(c) + pg->k0 - pg->first_row;
    /* every row of the page, once each (repeated positions can number as many as the page's rows) */
    int dense = rows == NULL ? from == 0 && n == pg->nrows : n == pg->nrows;
    if (rows && dense) { /* the ends first; then every row, in a loop without an exit (vectorised) */
        int64_t k, base = pg->first_row, diff = 0;
        dense = n == 0 || (rows[0] == base && rows[n - 1] == base + n - 1);
        if (dense && n) {
            for (k = 0; k < n; k++) diff |= rows[k] ^ (base + k);
            dense = diff == 0;
        }
    }
    pq_ph h;

    const uint8_t *raw = pq_fetch(f, pg->off, pg->size, &s->in, &s->incap, &rc);
    if (!raw) {
        pq_fail(c, rc, pg->off, "data page not readable");
        return;
    }
    rc = pq_page_header(raw, raw + pg->size, &h);
    if (rc != PQ_OK || (h.type != PG_DATA && h.type != PG_DATA_V2) || h.hlen + h.csize != pg->size ||
        (h.type == PG_DATA ? h.nvalues : h.nrows) != pg->nrows) {
        pq_fail(c, PQ_CORRUPT, pg->off, "data page disagrees with its column chunk's page locations");
        return;
    }
    {
        size_t lv = h.type == PG_DATA_V2 ? (size_t)(h.rep_len + h.def_len) : 0;
        int codec = h.type == PG_DATA_V2 && !h.is_compressed ? PQ_UNCOMPRESSED : (int)c->f[CK_CODEC];
        if (!pq_usize_plausible(codec, raw + h.hlen + lv, (size_t)h.csize - lv, (size_t)h.usize - lv)) {
            pq_fail(c, PQ_CORRUPT, pg->off, "data page claims more bytes than its body can hold");
            return;
        }
    }
    if (pq_scratch_need(s, n > pg->nrows ? n : pg->nrows, h.usize) != PQ_OK) {
        pq_fail(c, PQ_NOMEM, pg->off, "out of memory");
        return;
    }
    /* the levels and the values' body */
    pq_body lev, body;
    const uint8_t *bodysrc = raw + h.hlen;
    size_t vat = 0;                /* where the values start in `body` */
    int has_levels = max_def > 0;
    pq_hyb lh;
    if (h.type == PG_DATA) {
        rc = pq_body_init(&body, (int)c->f[CK_CODEC], bodysrc, (size_t)h.csize, s->out, (size_t)h.usize, s->zstd);
        if (rc != PQ_OK) goto bad;
        if (has_levels) {
            if (h.def_enc != EN_RLE) {
                pq_fail(c, PQ_UNSUPPORTED, pg->off, "definition levels not RLE-encoded");
                return;
            }
            if (pq_body_need(&body, 4) != PQ_OK) goto corrupt;
            uint32_t ll = pq_le32(body.out);
            if ((size_t)ll > h.usize - 4) goto corrupt;
            lh.b = &body;
            lh.pos = 4;
            lh.end = 4 + (size_t)ll;
            lh.bw = 1;
            vat = 4 + (size_t)ll;
        }
    } else {
        size_t lv = (size_t)(h.rep_len + h.def_len);
        if (h.rep_len != 0) goto corrupt; /* a flat column has no repetition levels */
        rc = pq_body_init(&lev, PQ_UNCOMPRESSED, bodysrc, lv, NULL, lv, NULL);
        if (rc != PQ_OK) goto corrupt;
        int codec = h.is_compressed ? (int)c->f[CK_CODEC] : PQ_UNCOMPRESSED;
        rc = pq_body_init(&body, codec, bodysrc + lv, (size_t)h.csize - lv, s->out, (size_t)h.usize - lv, s->zstd);
        if (rc != PQ_OK) goto bad;
        if (has_levels) {
            lh.b = &lev;
            lh.pos = 0;
            lh.end = (size_t)h.def_len;
            lh.bw = 1;
        }
        if (max_def == 0 && h.def_len != 0) goto corrupt;
    }
    /* value numbers of the wanted rows */
    int64_t *vidx = s->vidx, nvals = 0, i;
    int identity = 0;  /* vidx[i] == i for every wanted row */
    if (has_levels && pq_levels_all_one(&lh, pg->nrows))
        has_levels = 0; /* no null in the page (one run of ones): as if it had no levels */
    if (has_levels) {
        rc = pq_levels(&lh, pg->nrows, rows, rows ? pg->first_row : -from, n, vidx, &nvals);
        if (rc != PQ_OK) goto corrupt;
    } else if (rows && !dense) {
        for (i = 0; i < n; i++) vidx[i] = rows[i] - pg->first_row;
        nvals = n ? vidx[n - 1] + 1 : 0;
    } else if (!dense) { /* a range of rows that starts or ends inside the page */
        for (i = 0; i < n; i++) vidx[i] = from + i;
        nvals = from + n;
    } else {
        nvals = n;
        identity = 1;
    }
    if (nvals > h.nvalues) goto corrupt;
    if (col->valid) {
        if (has_levels) {
            int64_t nn = 0;
            for (i = 0; i < n; i++) {
                col->valid[slot0 + i] = vidx[i] >= 0;
                nn += vidx[i] < 0;
            }
            if (nn) __atomic_fetch_add(&c->nulls, nn, __ATOMIC_RELAXED);
        } else memset(col->valid + slot0, 1, (size_t)n);
    }
    __atomic_fetch_add(&c->pages_read, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&c->bytes_read, pg->size, __ATOMIC_RELAXED);

    int enc = h.encoding;
    if (enc == EN_PLAIN && physical != PT_BYTE_ARRAY && physical != PT_BOOLEAN) {
        if (pq_body_need(&body, vat + (size_t)nvals * (size_t)pw) != PQ_OK) goto corrupt;
        const uint8_t *v = body.out + vat;
        uint8_t *out = col->values + slot0 * ow;
        if (identity && conv == CV_COPY) {
            memcpy(out, v, (size_t)(n * ow));
        } else if (conv == CV_COPY && ow == 8) {
            for (i = 0; i < n; i++) {
                if (vidx[i] >= 0) memcpy(out + i * 8, v + vidx[i] * 8, 8);
                else memset(out + i * 8, 0, 8);
            }
        } else if (conv == CV_COPY && ow == 4) {
            for (i = 0; i < n; i++) {
                if (vidx[i] >= 0) memcpy(out + i * 4, v + vidx[i] * 4, 4);
                else memset(out + i * 4, 0, 4);
            }
        } else {
            for (i = 0; i < n; i++) {
                int64_t k = identity ? i : vidx[i];
                if (k >= 0) pq_emit(conv, out + i * ow, v + k * pw, pw, ow);
                else memset(out + i * ow, 0, (size_t)ow);
            }
        }
        return;
    }
    if (enc == EN_PLAIN && physical == PT_BOOLEAN) {
        if (pq_body_need(&body, vat + (size_t)((nvals + 7) >> 3)) != PQ_OK) goto corrupt;
        const uint8_t *v = body.out + vat;
        uint8_t *out = col->values + slot0;
        for (i = 0; i < n; i++) {
            int64_t k = identity ? i : vidx[i];
            out[i] = k >= 0 ? (v[k >> 3] >> (k & 7)) & 1 : 0;
        }
        return;
    }
    if (enc == EN_RLE && physical == PT_BOOLEAN) {
        if (pq_body_need(&body, vat + 4) != PQ_OK) goto corrupt;
        uint32_t ll = pq_le32(body.out + vat);
        if ((size_t)ll > body.usize - vat - 4) goto corrupt;
        pq_hyb vh = {&body, vat + 4, vat + 4 + ll, 1};
        int64_t m = 0;
        for (i = 0; i < n; i++) /* the wanted values, compacted in place (m <= i) */
            if (identity || vidx[i] >= 0) vidx[m++] = identity ? i : vidx[i];
        if (hyb_gather(&vh, h.nvalues, vidx, m, s->idx) != PQ_OK) goto corrupt;
        uint8_t *out = col->values + slot0;
        const uint8_t *valid = has_levels ? col->valid + slot0 : NULL;
        int64_t q = 0;
        for (i = 0; i < n; i++) out[i] = (valid && !valid[i]) ? 0 : (uint8_t)s->idx[q++];
        return;
    }
    if (enc == EN_PLAIN && physical == PT_BYTE_ARRAY && identity && pq_keep_bodies) {
        /* every value of the page, in order: the lengths now, the bytes in phase C from the body */
        size_t at = vat;
        int64_t total = 0;
        if (pq_body_need(&body, body.usize) != PQ_OK) goto corrupt;
        const uint8_t *bo = body.out;
        for (i = 0; i < n; i++) {
            if (body.usize - at < 4) goto corrupt;
            uint32_t l = pq_le32(bo + at);
            if ((size_t)l > body.usize - at - 4) goto corrupt;
            pq_set_len(col, slot0 + i, l);
            total += l;
            at += 4 + (size_t)l;
        }
        pg->mode = PM_BODY;
        pg->src = bo + vat;
        pg->src_end = bo + at;
        pg->nsrc = n;
        pg->data_len = total;
        pq_page_take_body(pg, s, f, bo);
        return;
    }
    if (enc == EN_PLAIN && physical == PT_BYTE_ARRAY) {
        size_t at = vat;
        if (identity && body.usize > vat && pq_bgrow(&pg->data, &pg->data_cap, body.usize - vat, 0) != PQ_OK)
            goto nomem; /* every value of the page (bodies not kept): at most its bytes */
        int64_t k = 0, want_i = 0;
        /* the first value each wanted row needs */
        for (want_i = 0; want_i < n; want_i++) {
            int64_t want = identity ? want_i : vidx[want_i];
            if (want < 0) {
                pq_set_len(col, slot0 + want_i, 0);
                continue;
            }
            for (;;) {
                if (pq_body_need(&body, at + 4) != PQ_OK) goto corrupt;
                uint32_t l = pq_le32(body.out + at);
                if ((size_t)l > body.usize - at - 4) goto corrupt;
                if (k == want) {
                    if (pq_body_need(&body, at + 4 + l) != PQ_OK) goto corrupt;
                    if (pq_page_put(pg, body.out + at + 4, l) != PQ_OK) goto nomem;
                    pq_set_len(col, slot0 + want_i, l);
                    break; /* the same value may be wanted again: k and at stay */
                }
                at += 4 + (size_t)l;
                k++;
            }
        }
        return;
    }
    if (enc == EN_DELTA_BINARY && (physical == PT_INT32 || physical == PT_INT64)) {
        size_t at = vat;
        int64_t total;
        if (pq_dbp_room(s, nvals) != PQ_OK) goto nomem;
        if (pq_dbp(&body, &at, nvals, s->dbp, physical == PT_INT32, &total, NULL) != PQ_OK) goto corrupt;
        if (total > h.nvalues) goto corrupt;
        const int64_t *v = s->dbp;
        uint8_t *out = col->values + slot0 * ow;
        for (i = 0; i < n; i++) {
            int64_t k = identity ? i : vidx[i];
            if (k < 0) {
                memset(out + i * ow, 0, (size_t)ow);
            } else if (conv == CV_COPY) { /* (a little-endian host: the value's low bytes) */
                memcpy(out + i * ow, &v[k], (size_t)ow);
            } else {
                uint8_t b8[8];
                memcpy(b8, &v[k], 8);
                pq_emit(conv, out + i * ow, b8, pw, ow);
            }
        }
        return;
    }
    if (enc == EN_DELTA_LENGTH && physical == PT_BYTE_ARRAY) {
        /* the lengths (DELTA_BINARY_PACKED), then the values' bytes one after another */
        size_t at = vat, bat = 0, pos = 0;
        int64_t total, k = 0;
        if (pq_dbp_room(s, nvals) != PQ_OK) goto nomem;
        if (pq_dbp(&body, &at, nvals, s->dbp, 1, &total, &bat) != PQ_OK) goto corrupt;
        if (total > h.nvalues) goto corrupt;
        const int64_t *L = s->dbp;
        const size_t avail = body.usize - bat;
        if (identity) { /* every value of the page: one run of bytes */
            for (i = 0; i < n; i++) {
                if (L[i] < 0 || (size_t)L[i] > avail - pos) goto corrupt;
                pos += (size_t)L[i];
                pq_set_len(col, slot0 + i, L[i]);
            }
            if (pq_body_need(&body, bat + pos) != PQ_OK) goto corrupt;
            if (pq_keep_bodies) { /* its bytes are copied once, in phase C, from the body */
                pg->mode = PM_SPAN;
                pg->src = body.out + bat;
                pg->src_end = body.out + bat + pos;
                pg->data_len = (int64_t)pos;
                pq_page_take_body(pg, s, f, body.out);
            } else if (pos && pq_page_put(pg, body.out + bat, pos) != PQ_OK) {
                goto nomem;
            }
            return;
        }
        for (i = 0; i < n; i++) {
            int64_t want = vidx[i];
            if (want < 0) {
                pq_set_len(col, slot0 + i, 0);
                continue;
            }
            if (want < k) goto corrupt; /* (wanted rows are sorted) */
            for (; k < want; k++) { /* pos: where value k starts */
                if (L[k] < 0 || (size_t)L[k] > avail - pos) goto corrupt;
                pos += (size_t)L[k];
            }
            if (L[k] < 0 || (size_t)L[k] > avail - pos) goto corrupt;
            if (pq_body_need(&body, bat + pos + (size_t)L[k]) != PQ_OK) goto corrupt;
            if (pq_page_put(pg, body.out + bat + pos, (size_t)L[k]) != PQ_OK) goto nomem;
            pq_set_len(col, slot0 + i, L[k]); /* (the same value may be wanted again: k stays) */
        }
        return;
    }
    if (enc == EN_RLE_DICT || enc == EN_PLAIN_DICT) {
        rc = pq_dict_get(job, c, s);
        if (rc != PQ_OK) {
            pq_fail(c, rc == PQ_UNSUPPORTED ? PQ_UNSUPPORTED : rc == PQ_NOMEM ? PQ_NOMEM : PQ_CORRUPT, c->dict_off,
                    rc == PQ_UNSUPPORTED ? "dictionary page not handled" : "dictionary page not readable");
            return;
        }
        pq_dict *d = &c->dict;
        if (pq_body_need(&body, vat + 1) != PQ_OK) goto corrupt;
        int bw = body.out[vat];
        if (bw > 32) goto corrupt;
        pq_hyb vh = {&body, vat + 1, body.usize, bw};
        int64_t m = 0;
        uint32_t *ix = s->idx;
        if (identity) {
            if (hyb_all(&vh, n, ix) != PQ_OK) goto corrupt;
            m = n;
        } else {
            for (i = 0; i < n; i++) /* compacted in place (m <= i) */
                if (vidx[i] >= 0) vidx[m++] = vidx[i];
            if (hyb_gather(&vh, h.nvalues, vidx, m, ix) != PQ_OK) goto corrupt;
        }
        for (i = 0; i < m; i++)
            if ((int64_t)ix[i] >= d->n) goto corrupt;
        /* ix holds the m non-null values in order; nulls are where valid is 0 */
        const uint8_t *valid = has_levels ? col->valid + slot0 : NULL;
        int64_t q = 0;
        if (physical == PT_BYTE_ARRAY && c->keep_dict) {
            /* the indexes now, the bytes in phase C from the dictionary */
            int64_t total = 0;
            if (m && pq_bgrow(&pg->data, &pg->data_cap, (size_t)m * sizeof(uint32_t), 0) != PQ_OK) goto nomem;
            if (m) memcpy(pg->data, ix, (size_t)m * sizeof(uint32_t));
            for (i = 0; i < n; i++) {
                if (valid && !valid[i]) {
                    pq_set_len(col, slot0 + i, 0);
                    continue;
                }
                uint32_t v = ix[q++];
                uint32_t l = d->offs[v + 1] - d->offs[v] - 4;
                pq_set_len(col, slot0 + i, l);
                total += l;
            }
            pg->mode = PM_DICT;
            pg->nsrc = m;
            pg->data_len = total;
        } else if (physical == PT_BYTE_ARRAY) {
            size_t bytes = 0; /* the page's values in one allocation */
            for (i = 0; i < m; i++) bytes += d->offs[ix[i] + 1] - d->offs[ix[i]] - 4;
            if (bytes && pq_bgrow(&pg->data, &pg->data_cap, bytes, 0) != PQ_OK) goto nomem;
            for (i = 0; i < n; i++) {
                if (valid && !valid[i]) {
                    pq_set_len(col, slot0 + i, 0);
                    continue;
                }
                uint32_t v = ix[q++];
                uint32_t at = d->offs[v] + 4, l = d->offs[v + 1] - at;
                if (pq_page_put(pg, d->buf + at, (size_t)l) != PQ_OK) goto nomem;
                pq_set_len(col, slot0 + i, l);
            }
        } else {
            uint8_t *out = col->values + slot0 * ow;
            if (ow == 8) {
                for (i = 0; i < n; i++) {
                    if (valid && !valid[i]) memset(out + i * 8, 0, 8);
                    else memcpy(out + i * 8, d->fixed + (size_t)ix[q++] * 8, 8);
                }
            } else if (ow == 4) {
                for (i = 0; i < n; i++) {
                    if (valid && !valid[i]) memset(out + i * 4, 0, 4);
                    else memcpy(out + i * 4, d->fixed + (size_t)ix[q++] * 4, 4);
                }
            } else {
                for (i = 0; i < n; i++) {
                    if (valid && !valid[i]) memset(out + i * ow, 0, (size_t)ow);
                    else memcpy(out + i * ow, d->fixed + (size_t)ix[q++] * ow, (size_t)ow);
                }
            }
        }
        return;
    }
    pq_fail(c, PQ_UNSUPPORTED, pg->off, "page encoding not handled by the native reader");
    return;
bad:
    if (rc == PQ_UNSUPPORTED) {
        pq_fail(c, PQ_UNSUPPORTED, pg->off, "codec not available to the native reader");
        return;
    }
corrupt:
    pq_fail(c, PQ_CORRUPT, pg->off, "data page not decodable");
    return;
nomem:
    pq_fail(c, PQ_NOMEM, pg->off, "out of memory");
}

/* ------------------------------------------------------------------ threads */
typedef struct { pq_job *job; int tid; } pq_worker;

static int pq_cmp_units(const void *a, const void *b) {
    const pq_page *x = *(pq_page *const *)a, *y = *(pq_page *const *)b;
    return x->data_off < y->data_off ? -1 : x->data_off > y->data_off;
}

/* n bytes from src to dst, where dst may take bytes up to dend and src may give them up to send:
 * a short value is one or two 16-byte moves (other threads write past dend) */
static inline void pq_copy_value(uint8_t *dst, const uint8_t *src, size_t n, const uint8_t *dend,
                                 const uint8_t *send) {
    if (n <= 16 && dst + 16 <= dend && src + 16 <= send) {
        memcpy(dst, src, 16);
    } else if (n <= 32 && dst + 32 <= dend && src + 32 <= send) {
        memcpy(dst, src, 16);
        memcpy(dst + 16, src + 16, 16);
    } else {
        memcpy(dst, src, n);
    }
}

/* Phase C: a unit's data_len bytes into its place in the column's data (checked in phase B). */
static void pq_unit_bytes(pq_chunk *c, const pq_col *col, pq_page *u, uint8_t *dst) {
    uint8_t *dend = dst + u->data_len;
    int64_t k;
    if (u->mode == PM_BYTES) {
        memcpy(dst, u->data, (size_t)u->data_len);
    } else if (u->mode == PM_SPAN) {
        memcpy(dst, u->src, (size_t)u->data_len);
    } else if (u->mode == PM_BODY) {
        /* The lengths phase B took from the body are in the column's offsets (not yet summed):
         * value k's bytes follow k + 1 length prefixes and the values before it.  So where a value
         * is does not wait for the load of the length before it, and the copies overlap. */
        const uint8_t *const src = u->src, *const send = u->src_end;
        const int64_t at = c->f[CK_OUT_AT] + u->k0 + 1;
        const int32_t *l32 = (const int32_t *)col->offsets + at;
        const int64_t *l64 = (const int64_t *)col->offsets + at;
        const int wide = col->kind == OUT_LBYTES;
        size_t before = 0; /* bytes of the values before k */
        for (k = 0; k < u->nsrc; k++) {
            size_t l = wide ? (size_t)l64[k] : (size_t)(uint32_t)l32[k];
            size_t from = 4 * (size_t)(k + 1) + before;
            /* (not after phase B's checks) */
            if ((size_t)(dend - dst) < l || (size_t)(send - src) < from || (size_t)(send - src) - from < l) break;
            pq_copy_value(dst, src + from, l, dend, send);
            dst += l;
            before += l;
        }
    } else {
        const pq_dict *d = &c->dict;
        const uint32_t *ix = (const uint32_t *)u->data;
        const uint8_t *send = d->buf + d->offs[d->n];
        for (k = 0; k < u->nsrc; k++) {
            uint32_t at = d->offs[ix[k]] + 4, l = d->offs[ix[k] + 1] - at;
            if ((size_t)(dend - dst) < l) break; /* not after phase B's checks */
            pq_copy_value(dst, d->buf + at, l, dend, send);
            dst += l;
        }
    }
}

/* ------------------------------------------------------------------ mapped files that shrink */
/* A file mapped into memory (paimon_fast/io/parquet/filemap.py) that is truncated while it is read
 * makes the next touch of a page past its new end raise SIGBUS, which would kill the process.
 * While a worker runs an item of a job with a mapped file, the handler below jumps back out of the
 * item instead: the item's chunk fails with PQ_IO ("changed or shrank while it was read", as a
 * short pread does), and a dictionary being loaded under its lock (a truncation racing the page
 * that asked for it) is marked failed and unlocked.
 * A SIGBUS anywhere else goes to the handler that was there before (the default kills, Python's
 * faulthandler prints the stacks).  The handler is put back at the start of every job with a
 * mapped file if someone replaced it meanwhile. */
#if !defined(_WIN32)

static void pq_guard_on_bus(int sig, siginfo_t *info, void *ctx) {
    sigjmp_buf *jump = pq_guard_jump;
    if (jump) {
        pq_guard_jump = NULL;
        siglongjmp(*jump, 1);
    }
    if ((pq_guard_prev.sa_flags & SA_SIGINFO) && pq_guard_prev.sa_sigaction &&
        pq_guard_prev.sa_sigaction != pq_guard_on_bus) {
        pq_guard_prev.sa_sigaction(sig, info, ctx);
    } else if (!(pq_guard_prev.sa_flags & SA_SIGINFO) && pq_guard_prev.sa_handler != SIG_DFL &&
               pq_guard_prev.sa_handler != SIG_IGN) {
        pq_guard_prev.sa_handler(sig);
    } else {
        signal(SIGBUS, SIG_DFL); /* returning re-runs the faulting access: the default action */
    }
}

/* Tests: truncate a file to some size just before a phase's items run (a file that shrinks while
 * it is read, at a known point); one job only (pq_set_shrink). */
static char pq_shrink_path[4096];
static int64_t pq_shrink_size;
static int pq_shrink_phase = -1;
static void pq_set_shrink(const char *path, int64_t size, int phase) {
    snprintf(pq_shrink_path, sizeof(pq_shrink_path), "%s", path ? path : "");
    pq_shrink_size = size;
    pq_shrink_phase = path ? phase : -1;
}
static void pq_shrink_now(int phase) {
    if (phase != pq_shrink_phase) return;
    pq_shrink_phase = -1;
    if (truncate(pq_shrink_path, (off_t)pq_shrink_size) != 0) pq_shrink_path[0] = 0;
}

static void pq_guard_install(void) {
    struct sigaction now, mine;
    pthread_mutex_lock(&pq_guard_lock);
    if (sigaction(SIGBUS, NULL, &now) == 0 &&
        !((now.sa_flags & SA_SIGINFO) && now.sa_sigaction == pq_guard_on_bus)) {
        memset(&mine, 0, sizeof(mine));
        mine.sa_sigaction = pq_guard_on_bus;
        mine.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
        sigemptyset(&mine.sa_mask);
        sigaction(SIGBUS, &mine, &pq_guard_prev);
    }
    pthread_mutex_unlock(&pq_guard_lock);
}
#endif

static void pq_phase_item(pq_job *job, int tid, int64_t i) {
    pq_scratch *s = &job->scratch[tid];
    if (job->phase == 0) {
        pq_chunk_pages(job, &job->chunks[i], s);
    } else if (job->phase == 1) {
        pq_page *u = job->units[i];
        pq_chunk *c = &job->chunks[u->chunk];
        pq_page_run(job, u, s);
        if (__atomic_sub_fetch(&c->left, 1, __ATOMIC_ACQ_REL) == 0 && !c->keep_dict)
            pq_dict_free(&c->dict); /* its last page */
    } else { /* phase 2: copy a page's bytes into its column's data, lengths -> offsets */
        pq_page *u = job->units[i];
        pq_chunk *c = &job->chunks[u->chunk];
        pq_col *col = &job->cols[c->f[CK_COL]];
        int64_t a = c->f[CK_OUT_AT] + u->k0, m = u->k1 - u->k0, k;
        int64_t run = u->data_off;
        if (u->data_len && col->data) pq_unit_bytes(c, col, u, col->data + u->data_off);
        if (u->zero) {
            if (col->kind == OUT_LBYTES)
                for (k = 0; k < m; k++) ((int64_t *)col->offsets)[a + k + 1] = run;
            else
                for (k = 0; k < m; k++) ((int32_t *)col->offsets)[a + k + 1] = (int32_t)run;
        } else if (col->kind == OUT_LBYTES) {
            int64_t *o = (int64_t *)col->offsets;
            for (k = 0; k < m; k++) {
                run += o[a + k + 1];
                o[a + k + 1] = run;
            }
        } else {
            int32_t *o = (int32_t *)col->offsets;
            for (k = 0; k < m; k++) {
                run += o[a + k + 1];
                o[a + k + 1] = (int32_t)run;
            }
        }
    }
}

/* An item of the running phase, under pq_guard when the job has a mapped file. */
static void pq_guarded_item(pq_job *job, int tid, int64_t i) {
#if !defined(_WIN32)
    if (job->guard) {
        sigjmp_buf jump;
        if (sigsetjmp(jump, 0) == 0) {
            pq_guard_jump = &jump;
            pq_phase_item(job, tid, i);
            pq_guard_jump = NULL;
            return;
        }
        /* the item touched a page of a mapped file past its end: the file shrank */
        pq_guard_jump = NULL;
        pq_chunk *c = job->phase == 0 ? &job->chunks[i] : &job->chunks[job->units[i]->chunk];
        if (pq_guard_dict) {
            pq_guard_dict->state = 2;
            pthread_mutex_unlock(&pq_guard_dict->lock);
            pq_guard_dict = NULL;
        }
        pq_fail(c, PQ_IO, -1, "a mapped page past its new end");
        return;
    }
#endif
    pq_phase_item(job, tid, i);
}

static void *pq_worker_main(void *arg) {
    pq_worker *w = (pq_worker *)arg;
    pq_job *job = w->job;
    int64_t n = job->phase == 0 ? job->nchunks : job->nunits;
    for (;;) {
        int64_t i = __atomic_fetch_add(&job->next, 1, __ATOMIC_RELAXED);
        if (i >= n) break;
        pq_guarded_item(job, w->tid, i);
    }
    return NULL;
}

/* A phase with less work than this (bytes to read, decompress or copy, about) runs on the calling
 * thread alone: starting and joining a thread costs 20-80 us, more than a small read's decoding
 * (a clustered column's few pages).  Tests lower it to 0 (pq_set_parallel_min). */
static int64_t pq_parallel_min = (int64_t)256 << 10;
static void pq_set_parallel_min(int64_t v) { pq_parallel_min = v; }
static void pq_set_pool(int on, int64_t spin_ns);

/* Worker threads kept between phases and reads (the pool).
 *
 * Starting a thread per phase and joining it cost more than the thread itself on a small read: three
 * phases a read, and on a virtual machine every wait put a processor to sleep that then took time to
 * wake (a read of 100,000 rows went from 5 to 8 ms after the process had slept a second).  So a
 * phase is handed to threads that stay: each waits for the next phase spinning for pq_pool_spin_ns,
 * then asleep on a condition variable; the calling thread waits for them the same way.  One job has
 * the pool at a time (pq_pool_busy); a second job meanwhile (another Python thread reading) starts
 * threads of its own as before.  A forked child starts with no pool (its threads are the parent's).
 *
 * A phase is published like a seqlock: pq_pool_seq is odd while job and want are written, and a
 * worker takes the phase only when it read the same even value before and after reading them. */
#define PQ_POOL_MAX 255
static pthread_mutex_t pq_pool_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pq_pool_wake = PTHREAD_COND_INITIALIZER;  /* a new phase, for sleeping workers */
static pthread_cond_t pq_pool_idle = PTHREAD_COND_INITIALIZER;  /* the phase's workers are done */
static int pq_pool_busy;                 /* a job has the pool (under pq_pool_mu) */
static int pq_pool_n;                    /* workers started (tids 1..n) */
static uint64_t pq_pool_seq;             /* even: a phase is published; bumped by 2 a phase */
static pq_job *pq_pool_job;              /* the published phase's job */
static int pq_pool_want;                 /* its workers: tids 1..want */
static int pq_pool_done;                 /* how many of them have finished it */
static int pq_pool_sleepers;             /* workers asleep on pq_pool_wake */
static int pq_pool_waiting;              /* the caller asleep on pq_pool_idle */
static int64_t pq_pool_spin_ns = 200000; /* spin this long before sleeping (0: sleep at once) */
static int pq_pool_on = 1;               /* tests and benchmarks turn the pool off */

static inline void pq_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* A spinning wait's clock: called once a turn, true once the wait has spun pq_pool_spin_ns (the
 * time is read every 64th turn; *t0 0 starts the wait). */
static inline int pq_spun_out(unsigned *k, int64_t *t0) {
    if ((++*k & 63) != 0) return 0;
    int64_t t = pq_now_ns();
    if (!*t0) {
        *t0 = t;
        return 0;
    }
    return t - *t0 >= pq_pool_spin_ns;
}

typedef struct {
    int tid;
    uint64_t seen; /* the last phase published before the thread was started (it has none of it) */
} pq_pool_start;

static void *pq_pool_main(void *arg) {
    int tid = ((pq_pool_start *)arg)->tid;
    uint64_t seen = ((pq_pool_start *)arg)->seen;
    free(arg);
    for (;;) {
        uint64_t a;
        pq_job *job;
        int want;
        int64_t t0 = 0;
        unsigned k = 0;
        for (;;) { /* the next phase: spin a while, then sleep */
            a = __atomic_load_n(&pq_pool_seq, __ATOMIC_SEQ_CST);
            if (!(a & 1) && a != seen) {
                job = __atomic_load_n(&pq_pool_job, __ATOMIC_ACQUIRE);
                want = __atomic_load_n(&pq_pool_want, __ATOMIC_ACQUIRE);
                if (__atomic_load_n(&pq_pool_seq, __ATOMIC_SEQ_CST) == a) break;
                continue;
            }
            if (pq_spun_out(&k, &t0)) {
                pthread_mutex_lock(&pq_pool_mu);
                __atomic_add_fetch(&pq_pool_sleepers, 1, __ATOMIC_SEQ_CST);
                while (__atomic_load_n(&pq_pool_seq, __ATOMIC_SEQ_CST) == a)
                    pthread_cond_wait(&pq_pool_wake, &pq_pool_mu);
                __atomic_sub_fetch(&pq_pool_sleepers, 1, __ATOMIC_SEQ_CST);
                pthread_mutex_unlock(&pq_pool_mu);
                t0 = 0;
            }
            pq_relax();
        }
        seen = a;
        if (tid > want) continue; /* a phase with fewer threads than the pool has */
        pq_worker w = {job, tid};
        pq_worker_main(&w);
        __atomic_add_fetch(&pq_pool_done, 1, __ATOMIC_SEQ_CST);
        if (__atomic_load_n(&pq_pool_waiting, __ATOMIC_SEQ_CST)) {
            pthread_mutex_lock(&pq_pool_mu);
            pthread_cond_broadcast(&pq_pool_idle);
            pthread_mutex_unlock(&pq_pool_mu);
        }
    }
    return NULL;
}

/* In a child after fork: no worker of the pool exists there, and its locks may have been held. */
static void pq_pool_forget(void) {
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t c1 = PTHREAD_COND_INITIALIZER, c2 = PTHREAD_COND_INITIALIZER;
    pq_pool_mu = mu;
    pq_pool_wake = c1;
    pq_pool_idle = c2;
    pq_pool_busy = pq_pool_n = pq_pool_done = pq_pool_sleepers = pq_pool_waiting = 0;
    pq_pool_seq = 0;
    pq_pool_job = NULL;
}

/* Take the pool for a job that runs phases of nt threads (the caller and nt - 1 workers, started as
 * needed); 0 when another job has it or no worker could be started. */
static int pq_pool_take(int nt) {
    if (!pq_pool_on || nt - 1 > PQ_POOL_MAX) return 0;
    pthread_mutex_lock(&pq_pool_mu);
    if (pq_pool_busy) {
        pthread_mutex_unlock(&pq_pool_mu);
        return 0;
    }
    pq_pool_busy = 1;
    while (pq_pool_n < nt - 1) {
        pthread_t th;
        pthread_attr_t at;
        pq_pool_start *st = (pq_pool_start *)malloc(sizeof(pq_pool_start));
        if (!st) break;
        st->tid = pq_pool_n + 1;
        st->seen = __atomic_load_n(&pq_pool_seq, __ATOMIC_SEQ_CST); /* (even: no phase is being published) */
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&at, (size_t)2 << 20); /* (kept for good: 2 MiB, not the default 8) */
        int rc = pthread_create(&th, &at, pq_pool_main, st);
        pthread_attr_destroy(&at);
        if (rc != 0) {
            free(st);
            break;
        }
        pq_pool_n++;
    }
    int ok = pq_pool_n >= nt - 1;
    if (!ok) pq_pool_busy = 0;
    pthread_mutex_unlock(&pq_pool_mu);
    return ok;
}

static void pq_pool_give(void) {
    pthread_mutex_lock(&pq_pool_mu);
    pq_pool_busy = 0;
    pthread_mutex_unlock(&pq_pool_mu);
}

/* Run the current phase of `job` on the caller and workers 1..nt-1 of the pool (which it has). */
static void pq_pool_run(pq_job *job, int nt) {
    __atomic_store_n(&pq_pool_done, 0, __ATOMIC_SEQ_CST);
    __atomic_add_fetch(&pq_pool_seq, 1, __ATOMIC_SEQ_CST); /* odd: being written */
    __atomic_store_n(&pq_pool_job, job, __ATOMIC_RELEASE);
    __atomic_store_n(&pq_pool_want, nt - 1, __ATOMIC_RELEASE);
    __atomic_add_fetch(&pq_pool_seq, 1, __ATOMIC_SEQ_CST); /* even: published */
    if (__atomic_load_n(&pq_pool_sleepers, __ATOMIC_SEQ_CST)) {
        pthread_mutex_lock(&pq_pool_mu);
        pthread_cond_broadcast(&pq_pool_wake);
        pthread_mutex_unlock(&pq_pool_mu);
    }
    pq_worker w0 = {job, 0};
    pq_worker_main(&w0);
    int64_t t0 = 0;
    unsigned k = 0;
    while (__atomic_load_n(&pq_pool_done, __ATOMIC_SEQ_CST) < nt - 1) {
        if (pq_spun_out(&k, &t0)) {
            pthread_mutex_lock(&pq_pool_mu);
            __atomic_store_n(&pq_pool_waiting, 1, __ATOMIC_SEQ_CST);
            while (__atomic_load_n(&pq_pool_done, __ATOMIC_SEQ_CST) < nt - 1)
                pthread_cond_wait(&pq_pool_idle, &pq_pool_mu);
            __atomic_store_n(&pq_pool_waiting, 0, __ATOMIC_SEQ_CST);
            pthread_mutex_unlock(&pq_pool_mu);
            break;
        }
        pq_relax();
    }
}

/* Tests and benchmarks: the pool on or off, and how long its threads spin before they sleep. */
static void pq_set_pool(int on, int64_t spin_ns) {
    pq_pool_on = on;
    if (spin_ns >= 0) pq_pool_spin_ns = spin_ns;
}

/* Run the current phase's items on up to job->nthreads threads (this one included); one thread
 * when the phase's work (about ``work`` bytes) is below pq_parallel_min.  The job's phases run on
 * the pool when it has it (job->pooled), else on threads started for the phase. */
static void pq_parallel(pq_job *job, int64_t nitems, int64_t work) {
    int nt = job->nthreads;
    if (work < pq_parallel_min) nt = 1;
    if (nt > nitems) nt = (int)nitems;
    if (nt < 1) nt = 1;
    job->next = 0;
#if !defined(_WIN32)
    pq_shrink_now(job->phase);
#endif
    if (nt > 1 && job->pooled == 0) job->pooled = pq_pool_take(job->nthreads) ? 1 : -1;
    if (nt > 1 && job->pooled == 1) {
        pq_pool_run(job, nt);
        return;
    }
    pthread_t th[256];
    pq_worker w[256];
    int started = 0, t;
    if (nt > 256) nt = 256;
    for (t = 1; t < nt; t++) {
        w[t].job = job;
        w[t].tid = t;
        if (pthread_create(&th[t], NULL, pq_worker_main, &w[t]) != 0) break;
        started++;
    }
    w[0].job = job;
    w[0].tid = 0;
    pq_worker_main(&w[0]);
    for (t = 1; t <= started; t++) pthread_join(th[t], NULL);
}

/* Scratch buffers kept between jobs (a new buffer's pages cost a fault and a clearing each on
 * first touch); at most PQ_KEEP of them, each at most PQ_KEEP_BYTES, forgotten in a forked child. */
#define PQ_KEEP 16
#define PQ_KEEP_BYTES ((size_t)32 << 20)
static pthread_mutex_t pq_keep_lock = PTHREAD_MUTEX_INITIALIZER;
static pq_scratch pq_kept[PQ_KEEP];
static int pq_nkept;
static pthread_once_t pq_atfork_once = PTHREAD_ONCE_INIT;

static void pq_forget_kept(void) { /* in a child after fork: the locks may have been held */
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER, fresh2 = PTHREAD_MUTEX_INITIALIZER;
    pq_keep_lock = fresh;
    pq_nkept = 0;
    /* the kept buffers stay the parent's (copy-on-write, never touched here); the lists may have
     * been changing when the process forked */
    pq_cache_lock = fresh2;
    memset(pq_cache_n, 0, sizeof(pq_cache_n));
    pq_cache_bytes = 0;
}
static void pq_forget_in_child(void) {
    pq_forget_kept();
    pq_pool_forget();
}
static void pq_atfork(void) { pthread_atfork(NULL, NULL, pq_forget_in_child); }

static void pq_scratch_free(pq_scratch *s) {
    pq_bfree(s->in, s->incap);
    pq_bfree(s->out, s->outcap);
    free(s->vidx);
    free(s->idx);
    free(s->dbp);
    if (s->zstd) pq_libs.zstd_free(s->zstd);
    if (s->zstd_dict) pq_libs.zstd_free(s->zstd_dict);
    memset(s, 0, sizeof(*s));
}

static void pq_scratch_take(pq_scratch *s) {
    pthread_mutex_lock(&pq_keep_lock);
    if (pq_nkept > 0) *s = pq_kept[--pq_nkept];
    else memset(s, 0, sizeof(*s));
    pthread_mutex_unlock(&pq_keep_lock);
    if (!s->zstd && pq_libs.zstd_create) s->zstd = pq_libs.zstd_create();
    if (!s->zstd_dict && pq_libs.zstd_create) s->zstd_dict = pq_libs.zstd_create();
}

static void pq_scratch_give(pq_scratch *s) {
    size_t bytes = s->incap + s->outcap + s->vcap * sizeof(int64_t) + s->icap * sizeof(uint32_t);
    int kept = 0;
    if (bytes <= PQ_KEEP_BYTES) {
        pthread_mutex_lock(&pq_keep_lock);
        if (pq_nkept < PQ_KEEP) {
            pq_kept[pq_nkept++] = *s;
            kept = 1;
        }
        pthread_mutex_unlock(&pq_keep_lock);
    }
    if (!kept) pq_scratch_free(s);
}

/* Free the buffers kept between reads. */
static void pq_release(void) {
    pthread_mutex_lock(&pq_keep_lock);
    while (pq_nkept > 0) pq_scratch_free(&pq_kept[--pq_nkept]);
    pthread_mutex_unlock(&pq_keep_lock);
    pq_cache_clear();
}

/* Run a job.  PQ_OK, or PQ_NOMEM when the job's own bookkeeping could not be allocated; each
 * chunk's status says how it went. */
static int pq_run(pq_job *job) {
    int64_t i, j;
    int t, rc = PQ_OK;
    pq_page *fails = NULL; /* per failed chunk of byte arrays: one empty unit over its slots */
    if (job->nthreads < 1) job->nthreads = 1;
    if (job->nthreads > 256) job->nthreads = 256;
    job->scratch = (pq_scratch *)calloc((size_t)job->nthreads, sizeof(pq_scratch));
    if (!job->scratch) return PQ_NOMEM;
    pthread_once(&pq_libs_once, pq_load_libs);
    pthread_once(&pq_atfork_once, pq_atfork);
    job->guard = 0;
    job->pooled = 0;
    for (i = 0; i < job->nfiles; i++)
        if (job->files[i].mapped) job->guard = 1;
#if !defined(_WIN32)
    if (job->guard) pq_guard_install();
#endif
    for (t = 0; t < job->nthreads; t++) pq_scratch_take(&job->scratch[t]);
    for (i = 0; i < job->nchunks; i++) {
        pq_chunk *c = &job->chunks[i];
        c->status = PQ_OK;
        c->err[0] = 0;
        c->pages = NULL;
        c->npages = 0;
        c->pages_total = c->pages_read = c->bytes_read = c->nulls = 0;
        memset(&c->dict, 0, sizeof(c->dict));
        c->keep_dict = 0;
        pthread_mutex_init(&c->dict.lock, NULL);
        pthread_mutex_init(&c->fail_lock, NULL);
    }
    /* A: pages (from the OffsetIndex, else a walk over the page headers: a header every 16 KB
     * of the chunk, about, costs what a read of those bytes would) */
    int64_t work = 0;
    for (i = 0; i < job->nchunks; i++) {
        const int64_t *f = job->chunks[i].f;
        work += f[CK_OI_OFF] >= 0 ? f[CK_OI_LEN] : f[CK_LEN] / 16;
    }
    job->phase = 0;
    pq_parallel(job, job->nchunks, work);
    /* the units of B: every selected page, and one unit for each chunk of nulls */
    int64_t nu = 0;
    for (i = 0; i < job->nchunks; i++) {
        pq_chunk *c = &job->chunks[i];
        if (c->status != PQ_OK) continue;
        if (c->f[CK_CONV] == CV_NULL) {
            size_t cap = 0;
            if (c->f[CK_NSEL] > 0) {
                if (pq_add_page(c, &cap, 0, 0, 0, c->f[CK_NSEL]) != PQ_OK) {
                    rc = PQ_NOMEM;
                    goto done;
                }
                c->pages[0].k0 = 0;
                c->pages[0].k1 = c->f[CK_NSEL];
            }
        }
        nu += c->npages;
    }
    job->units = (pq_page **)malloc((size_t)(nu + job->nchunks + 1) * sizeof(pq_page *));
    fails = (pq_page *)calloc((size_t)job->nchunks + 1, sizeof(pq_page));
    if (!fails) {
        rc = PQ_NOMEM;
        goto done;
    }
    if (!job->units) {
        rc = PQ_NOMEM;
        goto done;
    }
    job->nunits = 0;
    for (i = 0; i < job->nchunks; i++) {
        pq_chunk *c = &job->chunks[i];
        if (c->status != PQ_OK) continue;
        c->left = c->npages;
        for (j = 0; j < c->npages; j++) {
            c->pages[j].chunk = (int32_t)i;
            job->units[job->nunits++] = &c->pages[j];
        }
    }
    /* B: pages */
    work = 0;
    for (i = 0; i < job->nunits; i++) work += job->units[i]->size;
    job->phase = 1;
    pq_parallel(job, job->nunits, work);
    /* C: byte arrays: each unit's place in its column's data */
    int any = 0;
    for (i = 0; i < job->nunits; i++) {
        pq_page *u = job->units[i];
        pq_chunk *c = &job->chunks[u->chunk];
        u->data_off = c->f[CK_OUT_AT] + u->k0; /* sort key: the slot */
        if (job->cols[c->f[CK_COL]].kind >= OUT_BYTES) any = 1;
    }
    for (i = 0; i < job->nchunks; i++)
        if (job->cols[job->chunks[i].f[CK_COL]].kind >= OUT_BYTES) any = 1;
    if (any) {
        int64_t m = 0;
        for (i = 0; i < job->nunits; i++) {
            pq_page *u = job->units[i];
            pq_chunk *c = &job->chunks[u->chunk];
            if (job->cols[c->f[CK_COL]].kind >= OUT_BYTES && c->status == PQ_OK) job->units[m++] = u;
        }
        for (i = 0; i < job->nchunks; i++) {
            pq_chunk *c = &job->chunks[i];
            if (c->status == PQ_OK || job->cols[c->f[CK_COL]].kind < OUT_BYTES || c->f[CK_NSEL] <= 0) continue;
            pq_page *u = &fails[i];
            memset(u, 0, sizeof(*u));
            u->chunk = (int32_t)i;
            u->zero = 1;
            u->k0 = 0;
            u->k1 = c->f[CK_NSEL];
            u->data_off = c->f[CK_OUT_AT];
            job->units[m++] = u;
        }
        job->nunits = m;
        qsort(job->units, (size_t)m, sizeof(pq_page *), pq_cmp_units);
        int64_t *total = (int64_t *)calloc((size_t)job->ncols, sizeof(int64_t));
        if (!total) {
            rc = PQ_NOMEM;
            goto done;
        }
        for (i = 0; i < m; i++) { /* in slot order within each column */
            pq_page *u = job->units[i];
            int cc = (int)job->chunks[u->chunk].f[CK_COL];
            u->data_off = total[cc];
            total[cc] += u->data_len;
        }
        for (t = 0; t < job->ncols; t++) {
            pq_col *col = &job->cols[t];
            if (col->kind < OUT_BYTES) continue;
            col->data_len = total[t];
            if (col->kind == OUT_BYTES && total[t] > 0x7FFFFFFF) col->overflow = 1;
            col->data = (uint8_t *)pq_balloc((size_t)total[t] + 1, &col->data_cap);
            if (!col->data) {
                free(total);
                rc = PQ_NOMEM;
                goto done;
            }
        }
        free(total);
        work = 0;
        for (i = 0; i < m; i++) work += job->units[i]->data_len + 4 * (job->units[i]->k1 - job->units[i]->k0);
        job->phase = 2;
        pq_parallel(job, job->nunits, work);
    }
done:
    for (i = 0; i < job->nchunks; i++) {
        pq_chunk *c = &job->chunks[i];
        for (j = 0; j < c->npages; j++) pq_bfree(c->pages[j].data, c->pages[j].data_cap);
        free(c->pages);
        c->pages = NULL;
        pq_dict_free(&c->dict);
        pthread_mutex_destroy(&c->dict.lock);
        pthread_mutex_destroy(&c->fail_lock);
    }
    free(job->units);
    job->units = NULL;
    free(fails);
    if (job->pooled == 1) pq_pool_give();
    job->pooled = 0;
    for (t = 0; t < job->nthreads; t++) pq_scratch_give(&job->scratch[t]);
    free(job->scratch);
    job->scratch = NULL;
    return rc;
}

#endif
