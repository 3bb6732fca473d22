# cython: language_level=3
"""Bit-sliced index kernels over dense 64-bit words (csrc/bitslice.h).

A row set over ``nbits`` rows is a uint64 array of ``ceil(nbits/64)`` words
(row r = bit r&63 of word r>>6).  Slices are a C-contiguous ``(S, words)``
uint64 array; slice i holds the rows whose value has bit i set.
"""
from libc.stdint cimport uint8_t, uint32_t, int8_t, int16_t, int32_t, int64_t, uint64_t
from libc.stdlib cimport malloc, free
from libc.string cimport memset
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING
import numpy as np

from paimon_fast.errors import IndexFormatError

cdef extern from "bitslice.h":
    ctypedef uint64_t pf_u64u
    int64_t pf_roaring_check(const uint8_t *buf, size_t length, const char **err, size_t *err_at, uint64_t *card) nogil
    int64_t pf_roaring_decode(const uint8_t *buf, size_t len, uint64_t *words, int64_t nbits, int flags,
                              const char **err, size_t *err_at, int64_t *bad) nogil
    int PF_DEC_NO_RECOUNT
    int PF_DEC_FILL
    int PF_DEC_CLEAR
    int64_t pf_words_size(const uint64_t *words, int64_t nwords, int plain, uint32_t *card, uint32_t *nruns) nogil
    size_t pf_words_write(const uint64_t *words, int64_t nwords, int plain, const uint32_t *card,
                          const uint32_t *nruns, uint8_t *out) nogil
    int64_t pf_last_value(const uint8_t *buf) nogil
    int64_t pf_compare_plain(const pf_u64u *const *rows, int S, const uint64_t *base, int64_t nw,
                             int op, uint64_t v, int is_between, uint64_t hi, uint8_t *out) nogil
    int pf_radix_sort(uint64_t *ka, uint32_t *ia, uint64_t *kb, uint32_t *ib, int64_t n, int64_t *hist) nogil
    int64_t pf_bitmap_view(const uint8_t *buf, size_t len, int64_t nw) nogil
    int pf_build_slices_u32(const uint32_t *vals, const uint8_t *sel, int64_t n, int S, uint64_t *ebm,
                            uint64_t *slices, int64_t nw) nogil
    int pf_build_slices_u64(const uint64_t *vals, const uint8_t *sel, int64_t n, int S, uint64_t *ebm,
                            uint64_t *slices, int64_t nw) nogil
    int64_t pf_dense_codes(const int64_t *keys, const uint8_t *valid, int64_t n, int64_t lo, int64_t span,
                           uint64_t *bits, int64_t *rank, int32_t *codes, int64_t *uniq_out) nogil
    int64_t pf_dense_codes_i32(const int32_t *keys, const uint8_t *valid, int64_t n, int64_t lo, int64_t span,
                               uint64_t *bits, int64_t *rank, int32_t *codes, int64_t *uniq_out) nogil
    void pf_compare(const pf_u64u *const *rows, int S, const uint64_t *base,
                    int64_t nw, int op, uint64_t v, uint64_t *out) nogil
    void pf_between(const pf_u64u *const *rows, int S, const uint64_t *base,
                    int64_t nw, uint64_t lo, uint64_t hi, uint64_t *out) nogil
    int64_t pf_topk_core(const pf_u64u *const *rows, int S, uint64_t *e, uint64_t *g,
                         int64_t *active, int64_t *gtouch, int64_t *words, int64_t nw, int64_t k,
                         int largest, int64_t *nwords_out, const uint64_t *base, const int64_t *init,
                         int64_t ninit) nogil
    void pf_block_maxmin(const pf_u64u *const *rows, int S, const uint64_t *base, int64_t nw,
                         int64_t bw, int64_t *bmax, int64_t *bmin) nogil
    int64_t pf_topk_emit(const uint64_t *e, const uint64_t *g, int64_t *words, int64_t nwl, int64_t drop,
                         uint32_t *pos) nogil
    void pf_bsi_scan_i8(const int8_t *v, const uint8_t *vb, int64_t vbytes, int64_t voff, int64_t n,
                        uint64_t *pmax, uint64_t *nmax, int64_t *npos, int64_t *nneg) nogil
    void pf_bsi_scan_i16(const int16_t *v, const uint8_t *vb, int64_t vbytes, int64_t voff, int64_t n,
                         uint64_t *pmax, uint64_t *nmax, int64_t *npos, int64_t *nneg) nogil
    void pf_bsi_scan_i32(const int32_t *v, const uint8_t *vb, int64_t vbytes, int64_t voff, int64_t n,
                         uint64_t *pmax, uint64_t *nmax, int64_t *npos, int64_t *nneg) nogil
    void pf_bsi_scan_i64(const int64_t *v, const uint8_t *vb, int64_t vbytes, int64_t voff, int64_t n,
                         uint64_t *pmax, uint64_t *nmax, int64_t *npos, int64_t *nneg) nogil
    void pf_bsi_fill_i8(const int8_t *v, const uint8_t *vb, int64_t vbytes, int64_t voff, int64_t n, int pS, int nS,
                        uint64_t *pebm, uint64_t *nebm, uint64_t *psl, uint64_t *nsl, int64_t nw) nogil
    void pf_bsi_fill_i16(const int16_t *v, const uint8_t *vb, int64_t vbytes, int64_t voff, int64_t n, int pS, int nS,
                         uint64_t *pebm, uint64_t *nebm, uint64_t *psl, uint64_t *nsl, int64_t nw) nogil
    void pf_bsi_fill_i32(const int32_t *v, const uint8_t *vb, int64_t vbytes, int64_t voff, int64_t n, int pS, int nS,
                         uint64_t *pebm, uint64_t *nebm, uint64_t *psl, uint64_t *nsl, int64_t nw) nogil
    void pf_bsi_fill_i64(const int64_t *v, const uint8_t *vb, int64_t vbytes, int64_t voff, int64_t n, int pS, int nS,
                         uint64_t *pebm, uint64_t *nebm, uint64_t *psl, uint64_t *nsl, int64_t nw) nogil
    void pf_bsi_fill_i8_avx2(const int8_t *v, const uint8_t *vb, int64_t vbytes, int64_t voff, int64_t n, int pS,
                             int nS, uint64_t *pebm, uint64_t *nebm, uint64_t *psl, uint64_t *nsl, int64_t nw) nogil
    void pf_bsi_fill_i16_avx2(const int16_t *v, const uint8_t *vb, int64_t vbytes, int64_t voff, int64_t n, int pS,
                              int nS, uint64_t *pebm, uint64_t *nebm, uint64_t *psl, uint64_t *nsl, int64_t nw) nogil
    void pf_bsi_fill_i32_avx2(const int32_t *v, const uint8_t *vb, int64_t vbytes, int64_t voff, int64_t n, int pS,
                              int nS, uint64_t *pebm, uint64_t *nebm, uint64_t *psl, uint64_t *nsl, int64_t nw) nogil
    void pf_bsi_fill_i64_avx2(const int64_t *v, const uint8_t *vb, int64_t vbytes, int64_t voff, int64_t n, int pS,
                              int nS, uint64_t *pebm, uint64_t *nebm, uint64_t *psl, uint64_t *nsl, int64_t nw) nogil
    int pf_has_avx2() nogil
    int pf_simd_off
    int pf_bitlen64(uint64_t x) nogil
    uint8_t *pf_put64be(uint8_t *p, uint64_t x) nogil
    void pf_put32be(uint8_t *p, uint32_t x) nogil

cdef extern from *:
    int __builtin_popcountll(unsigned long long) nogil
    int __builtin_ctzll(unsigned long long) nogil


OPS = {"eq": 0, "neq": 1, "lt": 2, "lte": 3, "gt": 4, "gte": 5}

ctypedef fused code_t:
    int32_t
    int64_t
    uint64_t

ctypedef fused key_t:
    int32_t
    int64_t


cdef class _Rows:
    """Pointers to the S slice rows (each >= nw words), from a 2-D uint64 array
    or a sequence of 1-D arrays (uint64, or uint8 views into index bytes at any
    offset); keeps the arrays alive."""
    cdef const pf_u64u **p
    cdef int S
    cdef object keep

    def __cinit__(self, slices, int64_t nw):
        cdef const uint64_t[:, ::1] two
        cdef const uint8_t[::1] one
        cdef int i
        self.p = NULL
        self.keep = slices
        if isinstance(slices, np.ndarray) and slices.ndim == 2:
            two = slices
            self.S = two.shape[0]
            if self.S and two.shape[1] < nw:
                raise ValueError("slices shorter than base")
            self.p = <const pf_u64u **> malloc(max(self.S, 1) * sizeof(void *))
            for i in range(self.S):
                self.p[i] = <const pf_u64u *> &two[i, 0] if nw else NULL
        else:
            rows = [np.asarray(r) for r in slices]
            self.keep = rows
            self.S = len(rows)
            if self.S > 255:
                raise ValueError("too many slices")
            self.p = <const pf_u64u **> malloc(max(self.S, 1) * sizeof(void *))
            for i in range(self.S):
                r = rows[i]
                if r.ndim != 1 or r.dtype.itemsize != 8 and r.dtype != np.uint8:
                    raise ValueError("slice rows must be 1-D uint64 (or uint8 bytes)")
                one = r.view(np.uint8)
                if one.shape[0] < 8 * nw:
                    raise ValueError("slices shorter than base")
                self.p[i] = <const pf_u64u *> &one[0] if nw else NULL

    def __dealloc__(self):
        if self.p != NULL:
            free(self.p)


def nwords(int64_t nbits):
    return (nbits + 63) >> 6


def decode_into(const uint8_t[::1] buf, Py_ssize_t offset, Py_ssize_t limit, uint64_t[::1] words,
                int64_t nbits, Py_ssize_t base=0):
    """OR the portable roaring bitmap at ``buf[offset:limit]`` into ``words``.

    Validates the bytes first; values >= ``nbits`` are a format error.
    Returns ``(serialized size, cardinality)``; errors raise IndexFormatError
    with the absolute offset (``base + position``).
    """
    cdef Py_ssize_t n = buf.shape[0]
    if limit < 0 or limit > n:
        limit = n
    if offset < 0 or offset > limit:
        raise IndexFormatError("roaring bitmap offset outside the data", base + offset)
    if nbits > <int64_t>words.shape[0] * 64:
        raise ValueError("words array too small for nbits")
    cdef const char *err = NULL
    cdef size_t err_at = 0
    cdef uint64_t card = 0
    cdef int64_t size, bad = 0
    cdef int64_t rc = 0
    cdef const uint8_t *p = &buf[0] + offset if n else NULL
    if limit - offset < 4:
        raise IndexFormatError("roaring bitmap truncated (cookie)", base + offset)
    with nogil:
        size = pf_roaring_check(p, limit - offset, &err, &err_at, &card)
        if size >= 0:  # validated: decode without recounting bitmap containers
            rc = pf_roaring_decode(p, size, &words[0] if words.shape[0] else NULL, nbits, PF_DEC_NO_RECOUNT,
                                   &err, &err_at, &bad)
    if size < 0:
        raise IndexFormatError(err.decode(), base + offset + err_at)
    if rc < 0:
        raise IndexFormatError(f"roaring bitmap holds row {bad}, beyond the {nbits} rows of the index", base + offset)
    return size, card


def decode_fast(const uint8_t[::1] buf, Py_ssize_t offset, Py_ssize_t limit, uint64_t[::1] words,
                int64_t nbits, Py_ssize_t base=0):
    """Like :func:`decode_into` (into zeroed ``words``) with one structural
    pass: bitmap containers are copied, their cardinality is not recounted.
    Returns the serialized size."""
    cdef Py_ssize_t n = buf.shape[0]
    if limit < 0 or limit > n:
        limit = n
    if offset < 0 or offset > limit:
        raise IndexFormatError("roaring bitmap offset outside the data", base + offset)
    cdef int64_t nw = words.shape[0]
    if nbits > nw * 64:
        raise ValueError("words array too small for nbits")
    cdef const char *err = NULL
    cdef size_t err_at = 0
    cdef int64_t size, bad
    cdef const uint8_t *p = &buf[0] + offset if n else NULL
    cdef uint64_t *wp = &words[0] if nw else NULL
    if limit - offset < 4:
        raise IndexFormatError("roaring bitmap truncated (cookie)", base + offset)
    with nogil:
        size = pf_roaring_decode(p, limit - offset, wp, nbits, PF_DEC_FILL, &err, &err_at, &bad)
    if size < 0:
        raise IndexFormatError(err.decode(), base + offset + err_at)
    return size


def bitmap_view(const uint8_t[::1] buf, Py_ssize_t offset, Py_ssize_t limit, int64_t nw):
    """Byte offset (absolute) of ``nw`` words readable in place when the bitmap at
    ``buf[offset:limit]`` is all bitmap containers with keys 0..m-1 back to
    back; -1 otherwise.  Bits at or beyond the row count may be set in such a
    view: callers must mask with the existence bitmap."""
    cdef Py_ssize_t n = buf.shape[0]
    if limit < 0 or limit > n:
        limit = n
    if offset < 0 or offset >= limit:
        return -1
    cdef int64_t r
    with nogil:
        r = pf_bitmap_view(&buf[0] + offset, limit - offset, nw)
    return -1 if r < 0 else offset + r


def check_last(const uint8_t[::1] buf, Py_ssize_t offset, Py_ssize_t limit, Py_ssize_t base=0):
    """Validate the portable bitmap at ``buf[offset:limit]``; returns
    ``(serialized size, cardinality, largest value or -1)``."""
    cdef Py_ssize_t n = buf.shape[0]
    if limit < 0 or limit > n:
        limit = n
    if offset < 0 or offset > limit or limit - offset < 4:
        raise IndexFormatError("roaring bitmap truncated (cookie)", base + offset)
    cdef const char *err = NULL
    cdef size_t err_at = 0
    cdef uint64_t card = 0
    cdef int64_t size, last = -1
    cdef const uint8_t *p = &buf[0] + offset
    with nogil:
        size = pf_roaring_check(p, limit - offset, &err, &err_at, &card)
        if size >= 0:
            last = pf_last_value(p)
    if size < 0:
        raise IndexFormatError(err.decode(), base + offset + err_at)
    return size, card, last


cdef bytes _encode(const uint64_t[::1] words, int plain):
    cdef int64_t nw = words.shape[0]
    cdef const uint64_t *wp = &words[0] if nw else NULL
    cdef int64_t nchunks = (nw + 1023) // 1024
    cdef int64_t size
    cdef uint32_t *card = <uint32_t *> malloc((nchunks + 1) * sizeof(uint32_t))
    cdef uint32_t *nruns = <uint32_t *> malloc((nchunks + 1) * sizeof(uint32_t))
    cdef uint8_t *op
    if card == NULL or nruns == NULL:
        free(card)
        free(nruns)
        raise MemoryError()
    try:
        with nogil:
            size = pf_words_size(wp, nw, plain, card, nruns)
        out = PyBytes_FromStringAndSize(NULL, size)
        op = <uint8_t *> PyBytes_AS_STRING(out)
        with nogil:
            pf_words_write(wp, nw, plain, card, nruns, op)
    finally:
        free(card)
        free(nruns)
    return out


def encode(const uint64_t[::1] words):
    """Java-exact portable roaring bytes of a dense row set (runOptimize rules)."""
    return _encode(words, 0)


def encode_plain(const uint64_t[::1] words):
    """Portable roaring bytes of a dense row set with array / bitmap containers
    only (not Java's run choice): the fast way to hand a result to pyroaring."""
    return _encode(words, 1)


def encode_many(const uint64_t[:, ::1] slices):
    """:func:`encode` of each row of a 2-D word array -> list of bytes."""
    return [encode(slices[i]) for i in range(slices.shape[0])]


def popcount(const uint64_t[::1] words):
    cdef int64_t i, c = 0
    with nogil:
        for i in range(words.shape[0]):
            c += __builtin_popcountll(words[i])
    return c


def to_positions(const uint64_t[::1] words):
    """Set rows of a dense set as a sorted uint32 array."""
    cdef int64_t nw = words.shape[0], w, j = 0
    cdef int64_t total = popcount(words)
    out = np.empty(total, dtype=np.uint32)
    cdef uint32_t[::1] o = out
    cdef uint64_t x
    with nogil:
        for w in range(nw):
            x = words[w]
            while x:
                o[j] = <uint32_t>((w << 6) + __builtin_ctzll(x))
                j += 1
                x &= x - 1
    return out


def from_positions(const uint32_t[::1] pos, int64_t nbits):
    """Dense set of ``ceil(nbits/64)`` words from row positions (positions >= nbits dropped)."""
    out = np.zeros((nbits + 63) >> 6, dtype=np.uint64)
    cdef uint64_t[::1] o = out
    cdef Py_ssize_t i
    cdef uint32_t v
    with nogil:
        for i in range(pos.shape[0]):
            v = pos[i]
            if v < nbits:
                o[v >> 6] |= (<uint64_t>1) << (v & 63)
    return out


def range_words(int64_t start, int64_t end, int64_t nbits):
    """Dense set holding rows [start, end)."""
    out = np.zeros((nbits + 63) >> 6, dtype=np.uint64)
    cdef uint64_t[::1] o = out
    cdef int64_t r
    if end > nbits:
        end = nbits
    with nogil:
        r = start
        while r < end and (r & 63):
            o[r >> 6] |= (<uint64_t>1) << (r & 63)
            r += 1
        while r + 64 <= end:
            o[r >> 6] = ~(<uint64_t>0)
            r += 64
        while r < end:
            o[r >> 6] |= (<uint64_t>1) << (r & 63)
            r += 1
    return out


def limit(const uint64_t[::1] words, int64_t k):
    """The ``k`` lowest rows of a dense set (Java ``RoaringBitmap32.limit``)."""
    out = np.zeros(words.shape[0], dtype=np.uint64)
    cdef uint64_t[::1] o = out
    cdef int64_t w, left = k, c
    cdef uint64_t x
    with nogil:
        for w in range(words.shape[0]):
            if left <= 0:
                break
            x = words[w]
            c = __builtin_popcountll(x)
            if c <= left:
                o[w] = x
                left -= c
            else:
                while left > 0:
                    o[w] |= x & (~x + 1)
                    x &= x - 1
                    left -= 1
    return out


def compare(slices, const uint64_t[::1] base, str op, uint64_t value):
    """Rows of ``base`` whose sliced value ``op`` ``value`` (O'Neil-Quass over all slices).

    ``op`` is one of eq, neq, lt, lte, gt, gte.
    """
    cdef int opc = OPS[op]
    cdef int64_t nw = base.shape[0]
    cdef _Rows rows = _Rows(slices, nw)
    cdef int S = rows.S
    out = np.empty(nw, dtype=np.uint64)
    cdef uint64_t[::1] o = out
    if nw == 0:
        return out
    with nogil:
        pf_compare(rows.p, S, &base[0], nw, opc, value, &o[0])
    return out


def compare_bytes(slices, const uint64_t[::1] base, str op, uint64_t value, between_hi=None):
    """:func:`compare` (or :func:`between` with ``value`` as low bound when
    ``between_hi`` is given) returned directly as portable roaring bytes
    (array / bitmap containers; a uint8 array) without a dense answer."""
    cdef int opc = OPS[op]
    cdef int64_t nw = base.shape[0]
    cdef _Rows rows = _Rows(slices, nw)
    cdef int S = rows.S
    if S > 256:
        raise ValueError("at most 256 slices")
    cdef int64_t nchunks = (nw + 1023) // 1024
    out = np.empty(8 + 8 * nchunks + 8192 * nchunks, dtype=np.uint8)
    cdef uint8_t[::1] o = out
    cdef int isb = between_hi is not None
    cdef uint64_t hi = between_hi if isb else 0
    cdef int64_t size
    if isb and (value > hi or (S < 64 and (value >> S) != 0)):
        nw = 0  # empty answer
        nchunks = 0
    with nogil:
        size = pf_compare_plain(rows.p, S, &base[0] if nw else NULL, nw, opc, value, isb, hi, &o[0])
    return out[:size]


def between(slices, const uint64_t[::1] base, uint64_t lo, uint64_t hi):
    """Rows of ``base`` with ``lo <= value <= hi`` in one pass over the slices."""
    cdef int64_t nw = base.shape[0]
    cdef _Rows rows = _Rows(slices, nw)
    cdef int S = rows.S
    out = np.empty(nw, dtype=np.uint64)
    cdef uint64_t[::1] o = out
    if nw == 0:
        return out
    with nogil:
        pf_between(rows.p, S, &base[0], nw, lo, hi, &o[0])
    return out


def block_maxmin(slices, const uint64_t[::1] base, int64_t bw):
    """``(bmax, bmin)``: per block of ``bw`` (<= 64) words the largest / smallest
    value among the rows of ``base`` (-1 for blocks without rows)."""
    cdef int64_t nw = base.shape[0]
    cdef _Rows rows = _Rows(slices, nw)
    cdef int S = rows.S
    if bw < 1 or bw > 64:
        raise ValueError("bw must be in [1, 64]")
    if S > 62:
        raise ValueError("block_maxmin supports at most 62 slices")
    cdef int64_t nb = (nw + bw - 1) // bw
    mx_arr = np.empty(nb, np.int64)
    mn_arr = np.empty(nb, np.int64)
    cdef int64_t[::1] mx = mx_arr, mn = mn_arr
    if nb:
        with nogil:
            pf_block_maxmin(rows.p, S, &base[0], nw, bw, &mx[0], &mn[0])
    return mx_arr, mn_arr


def topk_positions(slices, const uint64_t[::1] base, int64_t k, bint largest, bint strict,
                   words=None):
    """Rows of ``base`` with the k largest (``largest``) or smallest values, as a
    sorted uint32 array.

    Java's semantics: rows strictly better than the k-th value plus its ties;
    with ``strict`` the ties are trimmed to k rows by dropping the lowest rows.
    Each slice step only visits the words still holding candidates.  ``words``
    (sorted int64 word indices) restricts the search to those words; the caller
    guarantees every answer row lies in them.
    """
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    cdef int64_t nw = base.shape[0]
    cdef _Rows rows = _Rows(slices, nw)
    cdef int S = rows.S
    if k == 0 or nw == 0:
        return np.zeros(0, np.uint32)
    cdef const int64_t[::1] init
    cdef const int64_t *initp = NULL
    cdef int64_t ninit = 0
    if words is not None:
        init = np.ascontiguousarray(words, dtype=np.int64)
        ninit = init.shape[0]
        if ninit and (init[0] < 0 or init[ninit - 1] >= nw):
            raise ValueError("words outside the row set")
        initp = &init[0] if ninit else NULL
        e_arr = np.empty(nw, dtype=np.uint64)
        nact = max(ninit, 1)
    else:
        e_arr = np.array(base, dtype=np.uint64)
        nact = nw
    g_arr = np.zeros(nw, dtype=np.uint64)
    act_arr = np.empty(nact, dtype=np.int64)
    gt_arr = np.empty(nact, dtype=np.int64)
    w_arr = np.empty(2 * nact, dtype=np.int64)
    cdef uint64_t[::1] e = e_arr, g = g_arr
    cdef int64_t[::1] act = act_arr, gtch = gt_arr, wl = w_arr
    cdef int64_t total, nwl = 0, drop = 0, written
    if words is not None and ninit == 0:
        return np.zeros(0, np.uint32)
    with nogil:
        total = pf_topk_core(rows.p, S, &e[0], &g[0], &act[0], &gtch[0], &wl[0],
                             nw, k, largest, &nwl, &base[0], initp, ninit)
    if strict and total > k:
        drop = total - k
    pos_arr = np.empty(total - drop, dtype=np.uint32)
    cdef uint32_t[::1] pos = pos_arr
    with nogil:
        written = pf_topk_emit(&e[0], &g[0], &wl[0], nwl, drop, &pos[0] if total - drop > 0 else NULL)
    assert written == total - drop
    return pos_arr


def topk(slices, const uint64_t[::1] base, int64_t k, bint largest, bint strict):
    """:func:`topk_positions` as a dense row set (same length as ``base``)."""
    pos = topk_positions(slices, base, k, largest, strict)
    out = np.zeros(base.shape[0], dtype=np.uint64)
    cdef uint64_t[::1] o = out
    cdef const uint32_t[::1] p = pos
    cdef Py_ssize_t i
    with nogil:
        for i in range(p.shape[0]):
            o[p[i] >> 6] |= (<uint64_t>1) << (p[i] & 63)
    return out


def build_slices(values, const uint8_t[::1] sel, int S):
    """``(ebm, slices)`` from per-row values (int32 codes or uint64 magnitudes):
    rows with ``sel[r]`` set are present; slice i holds the present rows whose
    value has bit i set.  Values must be >= 0 and fit in S bits."""
    values = np.ascontiguousarray(values)
    cdef int64_t n = values.shape[0]
    if sel.shape[0] != n:
        raise ValueError("values and sel differ in length")
    if S < 0 or S > 64:
        raise ValueError("S must be in [0, 64]")
    cdef int64_t nw = (n + 63) >> 6
    ebm_arr = np.zeros(nw, dtype=np.uint64)
    sl_arr = np.zeros((S, nw), dtype=np.uint64)
    cdef uint64_t[::1] ebm = ebm_arr
    cdef uint64_t[:, ::1] sl = sl_arr
    cdef const uint32_t[::1] v32
    cdef const uint64_t[::1] v64
    cdef int bad = 0
    cdef uint64_t *sp = &sl[0, 0] if (S and nw) else NULL
    cdef const uint8_t *selp = &sel[0] if n else NULL
    if nw == 0:
        return ebm_arr, sl_arr
    if values.dtype.itemsize == 4 and values.dtype.kind in "iu":
        if values.dtype.kind == "i" and n and values.min() < 0 and (np.asarray(sel) != 0)[values < 0].any():
            raise ValueError("a value is negative or needs more than the given slices")
        v32 = values.view(np.uint32)
        with nogil:
            bad = pf_build_slices_u32(&v32[0], selp, n, S, &ebm[0], sp, nw)
    elif values.dtype.itemsize == 8 and values.dtype.kind in "iu":
        v64 = values.view(np.uint64)
        with nogil:
            bad = pf_build_slices_u64(&v64[0], selp, n, S, &ebm[0], sp, nw)
    else:
        raise TypeError("values must be a 32- or 64-bit integer array")
    if bad:
        raise ValueError("a value is negative or needs more than the given slices")
    return ebm_arr, sl_arr


def sort_codes(const int64_t[::1] keys, const uint8_t[::1] valid):
    """Dictionary codes by radix-sorting the valid keys (any range).

    Returns ``(sorted distinct keys, int32 codes)`` with -1 for rows not valid.
    """
    cdef int64_t n = keys.shape[0], r, m = 0, j
    if valid.shape[0] != n:
        raise ValueError("keys and valid differ in length")
    if n >= 2**32:
        raise ValueError("too many rows")
    with nogil:
        for r in range(n):
            m += valid[r] != 0
    ka_arr = np.empty(m, np.uint64)
    kb_arr = np.empty(m, np.uint64)
    ia_arr = np.empty(m, np.uint32)
    ib_arr = np.empty(m, np.uint32)
    hist_arr = np.empty(4 * 65536, np.int64)
    codes_arr = np.empty(n, np.int32)
    cdef uint64_t[::1] ka = ka_arr, kb = kb_arr
    cdef uint32_t[::1] ia = ia_arr, ib = ib_arr
    cdef int64_t[::1] hist = hist_arr
    cdef int32_t[::1] codes = codes_arr
    cdef int which = 0
    cdef uint64_t *ks
    cdef uint32_t *iss
    cdef int64_t c = -1
    cdef uint64_t prev = 0
    if m == 0:
        codes_arr[:] = -1
        return np.zeros(0, np.int64), codes_arr
    with nogil:
        j = 0
        for r in range(n):
            codes[r] = -1
            if valid[r]:
                ka[j] = (<uint64_t>keys[r]) ^ (<uint64_t>1 << 63)
                ia[j] = <uint32_t>r
                j += 1
        which = pf_radix_sort(&ka[0], &ia[0], &kb[0], &ib[0], m, &hist[0])
        ks = &kb[0] if which else &ka[0]
        iss = &ib[0] if which else &ia[0]
        for j in range(m):
            if c < 0 or ks[j] != prev:
                c += 1
                prev = ks[j]
                ks[c] = prev  # distinct keys compacted in place (c <= j)
            codes[iss[j]] = <int32_t>c
    if c + 1 > 2**31 - 1:
        raise ValueError("too many distinct keys")
    src = kb_arr if which else ka_arr
    uniq = (src[:c + 1] ^ np.uint64(1 << 63)).view(np.int64).copy()
    return uniq, codes_arr


def minmax_valid(const key_t[::1] keys, const uint8_t[::1] valid):
    """``(count, min, max)`` of the keys (int64 or int32) whose ``valid`` flag is
    set (min/max 0 when none)."""
    cdef int64_t n = keys.shape[0], r, c = 0
    cdef int64_t lo = 0x7FFFFFFFFFFFFFFF, hi = -0x7FFFFFFFFFFFFFFF - 1, x
    if valid.shape[0] != n:
        raise ValueError("keys and valid differ in length")
    with nogil:
        for r in range(n):
            if valid[r]:
                x = keys[r]
                c += 1
                if x < lo:
                    lo = x
                if x > hi:
                    hi = x
    if c == 0:
        return 0, 0, 0
    return c, lo, hi


def dense_codes(const key_t[::1] keys, const uint8_t[::1] valid, int64_t lo, int64_t hi):
    """Dictionary codes for integer keys (int64 or int32) known to lie in [lo, hi] (moderate range).

    Returns ``(sorted distinct keys, int32 codes)`` (null rows get code -1):
    a presence bit set over the range plus per-word ranks, O(rows + range/64).
    """
    cdef int64_t n = keys.shape[0], span = hi - lo + 1, r
    if span <= 0 or span > (<int64_t>1) << 36:
        raise ValueError("key range too wide for dense_codes")
    if valid.shape[0] != n:
        raise ValueError("keys and valid differ in length")
    cdef bint bad = False
    with nogil:
        for r in range(n):
            if valid[r] and (keys[r] < lo or keys[r] > hi):
                bad = True
                break
    if bad:
        raise ValueError("key outside [lo, hi]")
    cdef int64_t nb = (span + 63) >> 6
    bits_arr = np.zeros(nb, dtype=np.uint64)
    rank_arr = np.empty(nb, dtype=np.int64)
    codes_arr = np.empty(n, dtype=np.int32)
    cdef uint64_t[::1] bits = bits_arr
    cdef int64_t[::1] rank = rank_arr
    cdef int32_t[::1] codes = codes_arr
    cdef int64_t c
    if n == 0:
        return np.zeros(0, np.int64), codes_arr
    with nogil:
        if key_t is int32_t:
            c = pf_dense_codes_i32(&keys[0], &valid[0], n, lo, span, &bits[0], &rank[0], &codes[0], NULL)
        else:
            c = pf_dense_codes(&keys[0], &valid[0], n, lo, span, &bits[0], &rank[0], &codes[0], NULL)
    if c > 2**31 - 1:
        raise ValueError("too many distinct keys")
    uniq_arr = np.empty(c, dtype=np.int64)
    cdef int64_t[::1] uniq = uniq_arr
    cdef int64_t j = 0, w
    cdef uint64_t x
    with nogil:
        for w in range(nb):
            x = bits[w]
            while x:
                uniq[j] = lo + (w << 6) + __builtin_ctzll(x)
                j += 1
                x &= x - 1
    return uniq_arr, codes_arr


cdef uint8_t *_put_bsi_part(uint8_t *q, int64_t present, uint64_t maxv, int64_t i0, int S,
                            const uint64_t *words, int64_t nw, const uint32_t *card,
                            const uint32_t *nruns, int64_t nch) noexcept nogil:
    """One part (positive or negative) of a BSI file: the presence byte, then the
    version, min 0, max, the ebm (bitmap ``i0``), the slice count and the ``S``
    slices (bitmaps ``i0 + 1 ..``).  Returns the end."""
    cdef int64_t i
    q[0] = 1 if present else 0
    q += 1
    if not present:
        return q
    q[0] = 1
    q = pf_put64be(q + 1, 0)
    q = pf_put64be(q, maxv)
    for i in range(i0, i0 + S + 1):
        if i == i0 + 1:
            pf_put32be(q, <uint32_t> S)
            q += 4
        q += pf_words_write(words + i * nw, nw, 0, card + i * nch, nruns + i * nch, q)
    if S == 0:
        pf_put32be(q, 0)
        q += 4
    return q


def bsi_build(values, vbits, int64_t voff=0):
    """The whole ``bsi`` file index payload (Java's BitSliceIndexBitmapFileIndex
    writer) of a column of Java longs, in one pass without Python objects per
    slice.

    ``values``: signed int8/16/32/64 array (one entry per row, null slots hold
    junk); ``vbits``: Arrow validity bit map (uint8, little-endian bits; row r
    at bit ``voff + r``) or None when every row is valid.  Long.MIN_VALUE among
    the valid rows raises ValueError (Java fails too).
    """
    values = np.ascontiguousarray(values)
    if values.dtype.kind != "i":
        values = values.astype(np.int64)
    cdef int64_t n = values.shape[0]
    if n > 2**31 - 1:
        raise ValueError("too many rows for a bsi index")
    cdef int isz = values.dtype.itemsize
    cdef const int8_t[::1] a8
    cdef const int16_t[::1] a16
    cdef const int32_t[::1] a32
    cdef const int64_t[::1] a64
    cdef const void *vp = NULL
    if isz == 1:
        a8 = values
        vp = &a8[0] if n else NULL
    elif isz == 2:
        a16 = values
        vp = &a16[0] if n else NULL
    elif isz == 4:
        a32 = values
        vp = &a32[0] if n else NULL
    else:
        a64 = values
        vp = &a64[0] if n else NULL
    cdef const uint8_t[::1] vbm
    cdef const uint8_t *vb = NULL
    cdef int64_t vbytes = 0
    if vbits is not None:
        vbm = vbits
        vbytes = vbm.shape[0]
        if voff < 0 or (voff + n + 7) // 8 > vbytes:
            raise ValueError("validity bit map shorter than the rows")
        vb = &vbm[0] if vbytes else NULL
    cdef uint64_t pmax = 0, nmax = 0
    cdef int64_t npos = 0, nneg = 0
    with nogil:
        if isz == 1:
            pf_bsi_scan_i8(<const int8_t *> vp, vb, vbytes, voff, n, &pmax, &nmax, &npos, &nneg)
        elif isz == 2:
            pf_bsi_scan_i16(<const int16_t *> vp, vb, vbytes, voff, n, &pmax, &nmax, &npos, &nneg)
        elif isz == 4:
            pf_bsi_scan_i32(<const int32_t *> vp, vb, vbytes, voff, n, &pmax, &nmax, &npos, &nneg)
        else:
            pf_bsi_scan_i64(<const int64_t *> vp, vb, vbytes, voff, n, &pmax, &nmax, &npos, &nneg)
    if nmax >> 63:
        raise ValueError("BSI cannot store Long.MIN_VALUE (Java fails too)")
    cdef int pS = pf_bitlen64(pmax) if npos else 0
    cdef int nS = pf_bitlen64(nmax) if nneg else 0
    cdef int64_t nw = (n + 63) >> 6
    cdef int64_t nch = (nw + 1023) // 1024
    cdef int nb = 2 + pS + nS  # bitmaps: pos ebm, pos slices, neg ebm, neg slices
    cdef uint64_t *words = <uint64_t *> malloc(max(nb * nw, 1) * 8)
    cdef uint32_t *card = <uint32_t *> malloc(max(nb * nch, 1) * 4)
    cdef uint32_t *nruns = <uint32_t *> malloc(max(nb * nch, 1) * 4)
    cdef int64_t *sizes = <int64_t *> malloc(nb * 8)
    cdef uint64_t *pebm
    cdef uint64_t *psl
    cdef uint64_t *nebm
    cdef uint64_t *nsl
    cdef int avx = pf_has_avx2()
    cdef int64_t total = 7, i
    cdef uint8_t *o
    cdef uint8_t *q
    if words == NULL or card == NULL or nruns == NULL or sizes == NULL:
        free(words)
        free(card)
        free(nruns)
        free(sizes)
        raise MemoryError()
    try:
        pebm = words
        psl = words + nw
        nebm = psl + pS * nw
        nsl = nebm + nw
        with nogil:
            if nw:
                if isz == 1:
                    if avx:
                        pf_bsi_fill_i8_avx2(<const int8_t *> vp, vb, vbytes, voff, n, pS, nS, pebm, nebm, psl, nsl, nw)
                    else:
                        pf_bsi_fill_i8(<const int8_t *> vp, vb, vbytes, voff, n, pS, nS, pebm, nebm, psl, nsl, nw)
                elif isz == 2:
                    if avx:
                        pf_bsi_fill_i16_avx2(<const int16_t *> vp, vb, vbytes, voff, n, pS, nS, pebm, nebm, psl,
                                             nsl, nw)
                    else:
                        pf_bsi_fill_i16(<const int16_t *> vp, vb, vbytes, voff, n, pS, nS, pebm, nebm, psl, nsl, nw)
                elif isz == 4:
                    if avx:
                        pf_bsi_fill_i32_avx2(<const int32_t *> vp, vb, vbytes, voff, n, pS, nS, pebm, nebm, psl,
                                             nsl, nw)
                    else:
                        pf_bsi_fill_i32(<const int32_t *> vp, vb, vbytes, voff, n, pS, nS, pebm, nebm, psl, nsl, nw)
                else:
                    if avx:
                        pf_bsi_fill_i64_avx2(<const int64_t *> vp, vb, vbytes, voff, n, pS, nS, pebm, nebm, psl,
                                             nsl, nw)
                    else:
                        pf_bsi_fill_i64(<const int64_t *> vp, vb, vbytes, voff, n, pS, nS, pebm, nebm, psl, nsl, nw)
            # sizes: every bitmap of a part that is written
            for i in range(nb):
                if (i <= pS and npos == 0) or (i > pS and nneg == 0):
                    sizes[i] = 0
                    continue
                sizes[i] = pf_words_size(words + i * nw, nw, 0, card + i * nch, nruns + i * nch)
                total += sizes[i]
        if npos:
            total += 17 + 4
        if nneg:
            total += 17 + 4
        out = PyBytes_FromStringAndSize(NULL, total)
        o = <uint8_t *> PyBytes_AS_STRING(out)
        with nogil:
            q = o
            q[0] = 1
            pf_put32be(q + 1, <uint32_t> n)
            q += 5
            q = _put_bsi_part(q, npos, pmax, 0, pS, words, nw, card, nruns, nch)
            q = _put_bsi_part(q, nneg, nmax, pS + 1, nS, words, nw, card, nruns, nch)
        if q - o != total:
            raise AssertionError("bsi_build size mismatch")
    finally:
        free(words)
        free(card)
        free(nruns)
        free(sizes)
    return out


def slice_layout(const uint8_t[::1] buf, Py_ssize_t idx_at, int S, Py_ssize_t sbase, int64_t nw,
                 Py_ssize_t base=0):
    """Where the S slices of a range bitmap are: reads the ``S x (i32 offset,
    i32 length)`` big-endian table at ``buf[idx_at:]``, checks every slice lies
    in ``buf`` (offsets relative to ``sbase``), and returns ``(starts, views)``
    int64 arrays: each slice's absolute start and length, and the absolute
    offset of its ``nw`` words when the slice can be read in place
    (:func:`bitmap_view`), else -1."""
    cdef Py_ssize_t n = buf.shape[0]
    if S < 0 or idx_at < 0 or idx_at + 8 * <Py_ssize_t>S > n:
        raise IndexFormatError("range bitmap slice table outside the data", base + idx_at)
    out_arr = np.empty((S, 3), dtype=np.int64)
    cdef int64_t[:, ::1] o = out_arr
    cdef int i
    cdef int64_t off, ln, r
    cdef const uint8_t *q
    for i in range(S):
        q = &buf[0] + idx_at + 8 * i
        off = <int32_t>((<uint32_t>q[0] << 24) | (<uint32_t>q[1] << 16) | (<uint32_t>q[2] << 8) | q[3])
        ln = <int32_t>((<uint32_t>q[4] << 24) | (<uint32_t>q[5] << 16) | (<uint32_t>q[6] << 8) | q[7])
        if off < 0 or ln < 0 or sbase + off + ln > n:
            raise IndexFormatError(f"range bitmap slice {i} range out of bounds", base + idx_at + 8 * i)
        o[i, 0] = sbase + off
        o[i, 1] = ln
        r = -1
        if nw > 0 and ln > 0:
            r = pf_bitmap_view(&buf[0] + sbase + off, ln, nw)
        o[i, 2] = -1 if r < 0 else sbase + off + r
    return out_arr


def _set_simd(bint on):
    """Tests: ``False`` runs the portable (non-AVX2) compare and BSI writer
    code paths on an AVX2 machine; returns whether AVX2 is now in use."""
    global pf_simd_off
    pf_simd_off = 0 if on else 1
    return bool(pf_has_avx2())


def encode_sliced(const uint64_t[::1] ebm, const uint64_t[:, ::1] slices):
    """The bit-sliced section of a range bitmap (Java's BitSliceIndexBitmap)
    in one buffer: ``i32 header length | u8 1 | u8 S | i32 ebm length | i32 8*S
    | S x (i32 offset, i32 length) | ebm | slices``, every bitmap Java-exact
    (:func:`encode`), without a Python bytes object per slice."""
    cdef int64_t nw = ebm.shape[0]
    cdef int S = slices.shape[0]
    if S > 255:
        raise ValueError("at most 255 slices")
    if S and slices.shape[1] != nw:
        raise ValueError("slices and ebm differ in length")
    cdef int64_t nch = (nw + 1023) // 1024
    cdef int nb = S + 1
    cdef uint32_t *card = <uint32_t *> malloc(max(nb * nch, 1) * 4)
    cdef uint32_t *nruns = <uint32_t *> malloc(max(nb * nch, 1) * 4)
    cdef int64_t *sizes = <int64_t *> malloc(nb * 8)
    cdef int64_t total, hl = 10 + 8 * S, off = 0
    cdef int i
    cdef const uint64_t *src
    cdef uint8_t *o
    cdef uint8_t *q
    if card == NULL or nruns == NULL or sizes == NULL:
        free(card)
        free(nruns)
        free(sizes)
        raise MemoryError()
    try:
        with nogil:
            total = 4 + hl
            for i in range(nb):
                src = &ebm[0] if i == 0 else &slices[i - 1, 0]
                if nw == 0:
                    src = NULL
                sizes[i] = pf_words_size(src, nw, 0, card + i * nch, nruns + i * nch)
                total += sizes[i]
        if total > 2**31 - 1:
            raise ValueError("bit-sliced section too large")
        out = PyBytes_FromStringAndSize(NULL, total)
        o = <uint8_t *> PyBytes_AS_STRING(out)
        with nogil:
            pf_put32be(o, <uint32_t> hl)
            o[4] = 1
            o[5] = <uint8_t> S
            pf_put32be(o + 6, <uint32_t> sizes[0])
            pf_put32be(o + 10, <uint32_t> (8 * S))
            for i in range(S):
                pf_put32be(o + 14 + 8 * i, <uint32_t> off)
                pf_put32be(o + 18 + 8 * i, <uint32_t> sizes[i + 1])
                off += sizes[i + 1]
            q = o + 4 + hl
            for i in range(nb):
                src = &ebm[0] if i == 0 else &slices[i - 1, 0]
                if nw == 0:
                    src = NULL
                q += pf_words_write(src, nw, 0, card + i * nch, nruns + i * nch, q)
        if q - o != total:
            raise AssertionError("encode_sliced size mismatch")
    finally:
        free(card)
        free(nruns)
        free(sizes)
    return out


def decode_slices(const uint8_t[::1] buf, const int64_t[:, ::1] layout, uint64_t[:, ::1] rows,
                  int64_t nbits, Py_ssize_t base=0):
    """Decode, in one call, every slice of :func:`slice_layout`'s ``layout`` that cannot be read
    in place (view column -1) into the next row of ``rows`` (one row per such slice, in slice
    order), as :func:`decode_fast` would one by one into zeroed rows.  ``rows`` need not be
    zeroed: every word of a decoded row is written."""
    cdef Py_ssize_t n = buf.shape[0], S = layout.shape[0], i, k = 0, K = rows.shape[0]
    cdef int64_t nw = rows.shape[1], nwb = (nbits + 63) >> 6
    cdef int64_t at, ln, size = 0, bad
    cdef const char *err = NULL
    cdef size_t err_at = 0
    if layout.shape[1] != 3:
        raise ValueError("layout must have 3 columns")
    if nbits > nw * 64:
        raise ValueError("rows too short for nbits")
    for i in range(S):
        if layout[i, 2] < 0:
            at, ln = layout[i, 0], layout[i, 1]
            if at < 0 or ln < 0 or at + ln > n:
                raise IndexFormatError("roaring bitmap offset outside the data", base + at)
            k += 1  # (a slice too short for its cookie is refused in slice order, by the decoder)
    if k != K:
        raise ValueError(f"rows has {K} rows, the layout decodes {k} slices")
    k = 0
    with nogil:
        for i in range(S):
            if layout[i, 2] >= 0:
                continue
            at = layout[i, 0]
            size = pf_roaring_decode(&buf[0] + at, <size_t>layout[i, 1], &rows[k, 0] if nw else NULL, nbits,
                                     PF_DEC_FILL | PF_DEC_CLEAR, &err, &err_at, &bad)
            if size < 0:
                break
            if nwb < nw:  # (words past the rows' bits)
                memset(&rows[k, nwb], 0, 8 * <size_t>(nw - nwb))
            k += 1
    if size < 0:
        raise IndexFormatError(err.decode(), base + at + <Py_ssize_t>err_at)


def float_sort_keys(const uint8_t[::1] buf, int width):
    """Big-endian IEEE floats (``width`` 4 or 8 bytes each) -> int64 keys ordered as Java's
    Float.compare / Double.compare (NaNs made canonical), in one pass."""
    if width != 4 and width != 8:
        raise ValueError("width must be 4 or 8")
    cdef Py_ssize_t n = buf.shape[0] // width, i, j
    out = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] o = out
    cdef uint64_t u
    cdef int64_t s
    cdef int32_t s32
    cdef const uint8_t *q
    with nogil:
        for i in range(n):
            if width == 8:  # (the compiler makes this one load and a byte swap)
                q = &buf[i * 8]
                u = ((<uint64_t>q[0] << 56) | (<uint64_t>q[1] << 48) | (<uint64_t>q[2] << 40) | (<uint64_t>q[3] << 32)
                     | (<uint64_t>q[4] << 24) | (<uint64_t>q[5] << 16) | (<uint64_t>q[6] << 8) | <uint64_t>q[7])
            else:
                u = 0
                for j in range(4):
                    u = (u << 8) | buf[i * 4 + j]
            if width == 8:
                if (u & 0x7FF0000000000000ULL) == 0x7FF0000000000000ULL and (u & 0x000FFFFFFFFFFFFFULL):
                    u = 0x7FF8000000000000ULL
                s = <int64_t>u
                o[i] = s ^ ((s >> 63) & 0x7FFFFFFFFFFFFFFFLL)
            else:
                if (u & 0x7F800000) == 0x7F800000 and (u & 0x007FFFFF):
                    u = 0x7FC00000
                s32 = <int32_t><uint32_t>u
                o[i] = <int64_t>(s32 ^ ((s32 >> 31) & 0x7FFFFFFF))
    return out
