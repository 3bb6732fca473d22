# cython: language_level=3
"""Bitmap global index kernels (csrc/gindex.h, csrc/roaring32.h).

Writer side: string dictionary ranks, radix sort + grouping of (key, row id),
key serialization, many RoaringNavigableMap64 serializations at once, and the
dictionary-block packing (Java's interleaving of bitmaps and blocks).
Reader side: entry parsing of dictionary / index blocks, logical key search and
comparison, byte-pattern matching, 64-bit bitmap validation.  Every offset read
from a file is checked before use; the GIL is released in the loops.
"""
from libc.stdint cimport uint8_t, int8_t, int32_t, int64_t, uint32_t, uint64_t
from libc.stdlib cimport malloc, free, realloc
from libc.string cimport memcpy, memcmp
from libc.errno cimport errno, EINTR
from posix.types cimport off_t
from posix.unistd cimport pread, lseek, close as c_close, SEEK_END
from posix.fcntl cimport open as c_open, O_RDONLY, O_CLOEXEC
from posix.stat cimport fstat, struct_stat
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_SIMPLE
import os
import numpy as np
cimport numpy as cnp

from paimon_fast.errors import IndexFormatError

cdef extern from "gindex.h":
    ctypedef struct pf_rec:
        uint64_t hi
        uint64_t lo
        uint64_t rid
    int pf_varint_size(uint64_t v) nogil
    int pf_put_varint(uint8_t *out, uint64_t v) nogil
    int pf_get_varint(const uint8_t *p, int64_t end, int64_t *pos, int max_bits, uint64_t *out) nogil
    int pf_key_order(int kind, const uint8_t *p, int64_t n, int64_t *hi, uint64_t *lo) nogil
    int pf_key_cmp(int kind, const uint8_t *a, int64_t an, const uint8_t *b, int64_t bn, int *bad) nogil
    int pf_bytes_cmp(const uint8_t *a, int64_t an, const uint8_t *b, int64_t bn) nogil
    int pf_bytes_cmp_inline(const uint8_t *a, int64_t an, const uint8_t *b, int64_t bn) nogil
    int pf_block_scan(int kind, const uint8_t *p, int64_t n, const uint8_t *kp, int64_t kn, int ordered,
                      uint64_t *off, uint64_t *ln, int64_t *at) nogil
    int pf_key_write(int kind, int64_t hi, uint64_t lo, uint8_t *out) nogil
    pf_rec *pf_radix_sort(pf_rec *a, pf_rec *tmp, size_t n, int skip_rid) nogil
    uint64_t *pf_radix_sort_u64(uint64_t *a, uint64_t *tmp, size_t n) nogil
    int pf_sort_keys(int64_t *idx, int64_t *tmp, size_t n, const int64_t *off, const uint8_t *data, size_t dlen) nogil
    int64_t pf_counting_group(const int64_t *hi, const uint64_t *rid, size_t n, int64_t hmin, uint64_t range,
                              int rid_sorted, int64_t *count, uint64_t *out, int64_t *bounds, int64_t *ghi,
                              size_t *m_out) nogil
    size_t pf_roaring_decode(const uint8_t *buf, uint64_t high, uint64_t *out) nogil
    int64_t pf_dict_i64(const int64_t *keys, size_t n, int64_t *ids, int64_t *vals) nogil
    int64_t pf_dict_bytes32(const int32_t *off, const uint8_t *data, size_t dlen, const uint8_t *valid, size_t n,
                            int64_t *ids,
                            int64_t *doff, uint8_t **arena, size_t *arena_cap) nogil
    int64_t pf_dict_bytes64(const int64_t *off, const uint8_t *data, size_t dlen, const uint8_t *valid, size_t n,
                            int64_t *ids,
                            int64_t *doff, uint8_t **arena, size_t *arena_cap) nogil

cdef extern from "crc32.h":
    uint32_t pf_crc32(uint32_t crc, const uint8_t *p, size_t n) nogil
    uint32_t pf_crc32_portable(uint32_t crc, const uint8_t *p, size_t n) nogil
    void pf_crc_setup()

pf_crc_setup()

cdef extern from "xxh64.h":
    uint64_t pf_xxh64(const uint8_t *p, size_t length, uint64_t seed) nogil

cdef extern from "roaring32.h":
    int64_t pf_roaring_size(const uint32_t *v, size_t n) nogil
    size_t pf_roaring_write(const uint32_t *v, size_t n, uint8_t *out) nogil
    int64_t pf_roaring_check(const uint8_t *buf, size_t length, const char **err, size_t *err_at, uint64_t *card) nogil

KINDS = {"I8": 1, "I16": 2, "I32": 3, "I64": 4, "BOOL": 5, "F32": 6, "F64": 7, "TSN": 8, "BIGDEC": 9, "BYTES": 10}

ctypedef fused offset_t:
    int32_t
    int64_t

cdef const uint8_t EMPTY_BYTE = 0
cdef enum:
    KIND_BYTES = 10


# ---------------------------------------------------------------- writer: strings

def string_ranks(const offset_t[::1] offsets, const uint8_t[::1] data, valid):
    """Dictionary-encode a string/binary column and rank the distinct values by bytes.

    Returns ``(rank, key_off, key_data)``: ``rank[i]`` is the position of row i's
    value among the sorted distinct values (-1 for null rows); the sorted
    distinct values are ``key_data[key_off[g]:key_off[g+1]]``.
    """
    cdef Py_ssize_t n = offsets.shape[0] - 1
    if n < 0:
        raise ValueError("offsets must have at least one element")
    cdef const uint8_t[::1] vmask
    cdef bint has_valid = valid is not None
    if has_valid:
        vmask = valid
        if vmask.shape[0] != n:
            raise ValueError("validity length differs from the column length")
    rank_arr = np.empty(max(n, 1), dtype=np.int64)
    cdef int64_t[::1] rank = rank_arr
    doff_arr = np.empty(n + 2, dtype=np.int64)       # distinct id -> arena offset
    cdef int64_t[::1] doff = doff_arr
    cdef Py_ssize_t i
    cdef int64_t nd = 0, d
    cdef const uint8_t *dp = &data[0] if data.shape[0] else &EMPTY_BYTE
    cdef const uint8_t *vp = &vmask[0] if has_valid and n else NULL
    cdef size_t acap = 4096
    cdef uint8_t *arena = <uint8_t *> malloc(acap)
    if arena == NULL:
        raise MemoryError()
    with nogil:
        if offset_t is int32_t:
            nd = pf_dict_bytes32(&offsets[0], dp, <size_t> data.shape[0], vp, <size_t> n, &rank[0], &doff[0],
                                 &arena, &acap)
        else:
            nd = pf_dict_bytes64(&offsets[0], dp, <size_t> data.shape[0], vp, <size_t> n, &rank[0], &doff[0],
                                 &arena, &acap)
    if nd < 0:
        free(arena)
        raise MemoryError()
    rank_arr = rank_arr[:n]
    cdef int64_t total = doff[nd]
    order_arr = np.arange(nd, dtype=np.int64)
    tmp_arr = np.empty(nd, dtype=np.int64)
    cdef int64_t[::1] order = order_arr
    cdef int64_t[::1] tmp = tmp_arr
    inv_arr = np.empty(nd, dtype=np.int64)
    cdef int64_t[::1] inv = inv_arr
    koff_arr = np.empty(nd + 1, dtype=np.int64)
    cdef int64_t[::1] koff = koff_arr
    kdata_arr = np.empty(total, dtype=np.uint8)
    cdef uint8_t[::1] kdata = kdata_arr
    cdef uint8_t *kdp = &kdata[0] if total else <uint8_t *> &EMPTY_BYTE
    cdef int64_t pos = 0, g
    cdef int rc = 0
    with nogil:
        if nd:
            rc = pf_sort_keys(&order[0], &tmp[0], <size_t> nd, &doff[0], arena, <size_t> total)
    if rc < 0:
        free(arena)
        raise MemoryError()
    with nogil:
        for g in range(nd):
            d = order[g]
            inv[d] = g
            koff[g] = pos
            memcpy(kdp + pos, arena + doff[d], <size_t> (doff[d + 1] - doff[d]))
            pos += doff[d + 1] - doff[d]
        koff[nd] = pos
        for i in range(n):
            if rank[i] >= 0:
                rank[i] = inv[rank[i]]
    free(arena)
    return rank_arr, koff_arr, kdata_arr


# ---------------------------------------------------------------- writer: sort + group

def sort_group(const int64_t[::1] hi, const uint64_t[::1] lo, const uint64_t[::1] rid, bint rid_sorted=False):
    """Sort (key, row id) pairs by key (hi signed, lo unsigned) then row id and group them.

    Returns ``(rids, bounds, group_hi, group_lo)``: group g holds the strictly
    increasing row ids ``rids[bounds[g]:bounds[g+1]]`` (duplicates dropped) of
    the key ``(group_hi[g], group_lo[g])``; groups ascend by key.
    ``rid_sorted`` says the input is already in row-id order (skips those passes).
    """
    cdef Py_ssize_t n = hi.shape[0]
    if lo.shape[0] != n or rid.shape[0] != n:
        raise ValueError("hi, lo and rid must have the same length")
    cdef int64_t hmin = 0, hmax = 0
    cdef bint lo_const = True
    cdef Py_ssize_t q
    cdef uint64_t lo0 = lo[0] if n else 0
    with nogil:
        if n:
            hmin = hi[0]
            hmax = hi[0]
        for q in range(n):
            if hi[q] < hmin:
                hmin = hi[q]
            elif hi[q] > hmax:
                hmax = hi[q]
            if lo[q] != lo0:
                lo_const = False
    cdef uint64_t rng = <uint64_t> hmax - <uint64_t> hmin
    if n and lo_const and rng < <uint64_t> max(4 * n, 1 << 16):
        return _counting(hi, lo0, rid, hmin, rng, rid_sorted)
    if n and lo_const:
        # wide key range: dictionary-encode (hash), rank the distinct keys, counting-sort by rank
        ids_arr = np.empty(n, dtype=np.int64)
        vals_arr = np.empty(n, dtype=np.int64)
        ids_mv = ids_arr
        vals_mv = vals_arr
        nd = _dict_i64(hi, ids_mv, vals_mv)
        distinct = vals_arr[:nd]
        order = np.argsort(distinct, kind="stable")
        inv = np.empty(nd, dtype=np.int64)
        inv[order] = np.arange(nd, dtype=np.int64)
        rank = np.ascontiguousarray(inv[ids_arr])
        rids_o, bounds_o, granks, glo_o = _counting(rank, lo0, rid, 0, <uint64_t> (nd - 1), rid_sorted)
        return rids_o, bounds_o, distinct[order][granks], glo_o
    cdef pf_rec *a = <pf_rec *> malloc(max(n, 1) * sizeof(pf_rec))
    cdef pf_rec *t = <pf_rec *> malloc(max(n, 1) * sizeof(pf_rec))
    if a == NULL or t == NULL:
        free(a)
        free(t)
        raise MemoryError()
    rids_arr = np.empty(n, dtype=np.uint64)
    bounds_arr = np.empty(n + 1, dtype=np.int64)
    ghi_arr = np.empty(n, dtype=np.int64)
    glo_arr = np.empty(n, dtype=np.uint64)
    cdef uint64_t[::1] out = rids_arr
    cdef int64_t[::1] bounds = bounds_arr
    cdef int64_t[::1] ghi = ghi_arr
    cdef uint64_t[::1] glo = glo_arr
    cdef Py_ssize_t i, m = 0, ng = 0
    cdef pf_rec *s
    cdef uint64_t SIGN = <uint64_t> 1 << 63
    with nogil:
        for i in range(n):
            a[i].hi = (<uint64_t> hi[i]) ^ SIGN
            a[i].lo = lo[i]
            a[i].rid = rid[i]
        s = pf_radix_sort(a, t, <size_t> n, 1 if rid_sorted else 0)
        if s != NULL:
            for i in range(n):
                if ng == 0 or s[i].hi != s[i - 1].hi or s[i].lo != s[i - 1].lo:
                    bounds[ng] = m
                    ghi[ng] = <int64_t> (s[i].hi ^ SIGN)
                    glo[ng] = s[i].lo
                    ng += 1
                    out[m] = s[i].rid
                    m += 1
                elif s[i].rid != s[i - 1].rid:
                    out[m] = s[i].rid
                    m += 1
            bounds[ng] = m
    free(a)
    free(t)
    if s == NULL:
        raise MemoryError()
    return rids_arr[:m], bounds_arr[:ng + 1], ghi_arr[:ng], glo_arr[:ng]


cdef int64_t _dict_i64(const int64_t[::1] hi, int64_t[::1] ids, int64_t[::1] vals) except -1:
    cdef int64_t nd
    with nogil:
        nd = pf_dict_i64(&hi[0], <size_t> hi.shape[0], &ids[0], &vals[0])
    if nd < 0:
        raise MemoryError()
    return nd


cdef _counting(const int64_t[::1] hi, uint64_t lo0, const uint64_t[::1] rid, int64_t hmin, uint64_t rng,
               bint rid_sorted):
    cdef Py_ssize_t n = hi.shape[0]
    count_arr = np.zeros(rng + 1, dtype=np.int64)
    rids_arr = np.empty(n, dtype=np.uint64)
    bounds_arr = np.empty(min(<Py_ssize_t> rng + 1, n) + 1, dtype=np.int64)
    ghi_arr = np.empty(min(<Py_ssize_t> rng + 1, n), dtype=np.int64)
    cdef int64_t[::1] count = count_arr
    cdef uint64_t[::1] out = rids_arr
    cdef int64_t[::1] bounds = bounds_arr
    cdef int64_t[::1] ghi = ghi_arr
    cdef size_t m = 0
    cdef int64_t ng
    with nogil:
        ng = pf_counting_group(&hi[0], &rid[0], <size_t> n, hmin, rng, 1 if rid_sorted else 0, &count[0], &out[0],
                               &bounds[0], &ghi[0], &m)
    return rids_arr[:m], bounds_arr[:ng + 1], ghi_arr[:ng], np.full(ng, lo0, dtype=np.uint64)


def sort_unique_u64(const uint64_t[::1] values):
    """Sorted distinct copy of a uint64 array (radix sort)."""
    cdef Py_ssize_t n = values.shape[0], i, m = 0
    a_arr = np.array(values, dtype=np.uint64, copy=True)
    t_arr = np.empty(n, dtype=np.uint64)
    cdef uint64_t[::1] a = a_arr
    cdef uint64_t[::1] t = t_arr
    cdef uint64_t *s
    if n == 0:
        return a_arr
    with nogil:
        s = pf_radix_sort_u64(&a[0], &t[0], <size_t> n)
        if s != NULL:
            for i in range(n):
                if i == 0 or s[i] != s[i - 1]:
                    s[m] = s[i]
                    m += 1
    if s == NULL:
        raise MemoryError()
    res = a_arr if s == &a[0] else t_arr
    return res[:m].copy()


def serialize_keys(int kind, const int64_t[::1] hi, const uint64_t[::1] lo):
    """Paimon KeySerializer bytes of many keys given by order key: ``(key_off, key_data)``."""
    cdef Py_ssize_t n = hi.shape[0], i
    if lo.shape[0] != n:
        raise ValueError("hi and lo differ in length")
    if kind < 1 or kind > 9:
        raise ValueError(f"kind {kind} has no fixed serialization")
    off_arr = np.empty(n + 1, dtype=np.int64)
    data_arr = np.empty(max(n * 17, 1), dtype=np.uint8)
    cdef int64_t[::1] off = off_arr
    cdef uint8_t[::1] data = data_arr
    cdef int64_t pos = 0
    with nogil:
        for i in range(n):
            off[i] = pos
            pos += pf_key_write(kind, hi[i], lo[i], &data[pos])
        off[n] = pos
    return off_arr, data_arr[:pos].copy()


def key_orders(int kind, const uint8_t[::1] data, const int64_t[::1] starts, const int64_t[::1] lengths,
               Py_ssize_t base=0):
    """Order keys ``(hi, lo)`` of serialized keys ``data[starts[i]:starts[i]+lengths[i]]``."""
    cdef Py_ssize_t n = starts.shape[0], i
    hi_arr = np.empty(n, dtype=np.int64)
    lo_arr = np.empty(n, dtype=np.uint64)
    cdef int64_t[::1] hi = hi_arr
    cdef uint64_t[::1] lo = lo_arr
    cdef Py_ssize_t bad = -1
    cdef const uint8_t *dp = &data[0] if data.shape[0] else &EMPTY_BYTE
    with nogil:
        for i in range(n):
            if starts[i] < 0 or lengths[i] < 0 or starts[i] + lengths[i] > data.shape[0] or \
                    pf_key_order(kind, dp + starts[i], lengths[i], &hi[i], &lo[i]) != 0:
                bad = i
                break
    if bad >= 0:
        raise IndexFormatError(f"malformed key of {lengths[bad]} bytes for its type", base + starts[bad])
    return hi_arr, lo_arr


# ---------------------------------------------------------------- writer: bitmaps

def serialize64_groups(const uint64_t[::1] rids, const int64_t[::1] bounds):
    """``RoaringNavigableMap64.serialize()`` of many bitmaps: group g = the strictly
    increasing ``rids[bounds[g]:bounds[g+1]]``.  Returns ``(blob, sizes)``."""
    cdef Py_ssize_t ng = bounds.shape[0] - 1, n = rids.shape[0], g, i, j
    if ng < 0:
        raise ValueError("bounds needs at least one element")
    if bounds[0] < 0 or bounds[ng] > n:
        raise ValueError("group bounds outside the row ids")
    for g in range(ng):
        if bounds[g + 1] < bounds[g]:
            raise ValueError("group bounds must be non-decreasing")
    low_arr = np.empty(max(n, 1), dtype=np.uint32)
    cdef uint32_t[::1] low = low_arr
    sizes_arr = np.empty(ng, dtype=np.int64)
    cdef int64_t[::1] sizes = sizes_arr
    cdef int64_t total = 0, s, sz
    cdef bint bad = False
    with nogil:
        for i in range(n):
            low[i] = <uint32_t> rids[i]
        for g in range(ng):
            s = 8
            i = bounds[g]
            while i < bounds[g + 1]:
                j = i + 1
                while j < bounds[g + 1] and (rids[j] >> 32) == (rids[i] >> 32):
                    j += 1
                sz = pf_roaring_size(&low[i], <size_t> (j - i))
                if sz < 0 or (i > bounds[g] and rids[i] <= rids[i - 1]):
                    bad = True
                    break
                s += 4 + sz
                i = j
            if bad:
                break
            sizes[g] = s
            total += s
    if bad:
        raise ValueError(f"row ids of group {g} are not strictly increasing")
    out = PyBytes_FromStringAndSize(NULL, total)
    cdef uint8_t *op = <uint8_t *> PyBytes_AS_STRING(out)
    cdef uint64_t nb
    cdef uint8_t *head
    cdef uint32_t h
    with nogil:
        for g in range(ng):
            head = op
            op += 8
            nb = 0
            i = bounds[g]
            while i < bounds[g + 1]:
                j = i + 1
                while j < bounds[g + 1] and (rids[j] >> 32) == (rids[i] >> 32):
                    j += 1
                h = <uint32_t> (rids[i] >> 32)
                op[0] = <uint8_t> h
                op[1] = <uint8_t> (h >> 8)
                op[2] = <uint8_t> (h >> 16)
                op[3] = <uint8_t> (h >> 24)
                op += 4
                op += pf_roaring_write(&low[i], <size_t> (j - i), op)
                nb += 1
                i = j
            for i in range(8):
                head[i] = <uint8_t> (nb >> (8 * i))
    return out, sizes_arr


def gather_segments(parts, const int64_t[::1] part, const int64_t[::1] start, const int64_t[::1] length):
    """The uint64 arrays ``parts`` cut into segments and laid end to end: segment i is
    ``parts[part[i]][start[i]:start[i] + length[i]]`` (every bound checked)."""
    cdef Py_ssize_t np_ = len(parts), ns = part.shape[0], i
    if start.shape[0] != ns or length.shape[0] != ns:
        raise ValueError("part, start and length must have the same length")
    arrs = [np.ascontiguousarray(a, dtype=np.uint64) for a in parts]
    cdef const uint64_t **ptr = <const uint64_t **> malloc(max(np_, 1) * sizeof(uint64_t *))
    cdef int64_t *lens = <int64_t *> malloc(max(np_, 1) * sizeof(int64_t))
    if ptr == NULL or lens == NULL:
        free(ptr)
        free(lens)
        raise MemoryError()
    cdef const uint64_t[::1] view
    cdef int64_t total = 0
    cdef Py_ssize_t bad = -1
    try:
        for i in range(np_):
            view = arrs[i]
            ptr[i] = &view[0] if view.shape[0] else NULL
            lens[i] = view.shape[0]
        for i in range(ns):
            if part[i] < 0 or part[i] >= np_ or start[i] < 0 or length[i] < 0 or \
                    start[i] + length[i] > lens[part[i]]:
                bad = i
                break
            total += length[i]
        if bad >= 0:
            raise ValueError(f"segment {bad} lies outside its part")
        out_arr = np.empty(total, dtype=np.uint64)
        if total:
            _gather(ptr, part, start, length, out_arr)
    finally:
        free(ptr)
        free(lens)
    return out_arr


cdef void _gather(const uint64_t **ptr, const int64_t[::1] part, const int64_t[::1] start, const int64_t[::1] length,
                  uint64_t[::1] out) noexcept:
    cdef Py_ssize_t i, pos = 0
    with nogil:
        for i in range(part.shape[0]):
            if length[i]:
                memcpy(&out[pos], ptr[part[i]] + start[i], <size_t> length[i] * sizeof(uint64_t))
                pos += length[i]


# ---------------------------------------------------------------- writer: packing

cdef struct _buf:
    uint8_t *p
    int64_t n
    int64_t cap

cdef int _reserve(_buf *b, int64_t extra) except -1:
    cdef int64_t c
    cdef uint8_t *q
    if b.n + extra <= b.cap:
        return 0
    c = max(b.cap * 2, b.n + extra + 1024)
    q = <uint8_t *> realloc(b.p, <size_t> c)
    if q == NULL:
        raise MemoryError()
    b.p = q
    b.cap = c
    return 0


def pack_blocks(const int64_t[::1] key_off, const uint8_t[::1] key_data, const int64_t[::1] bm_sizes,
                int64_t block_size, encode):
    """The layout of value bitmaps and dictionary blocks as Java's StreamingWriter writes
    them, without the bitmaps' bytes.

    For each key (ascending): its bitmap; when the pending dictionary block is
    non-empty and adding this key's entry would make its estimated size exceed
    ``block_size``, the pending block is written right after this key's bitmap
    (before the entry joins a fresh block).  After the last key the last block
    is written.  ``encode(raw) -> stored bytes + 5-byte trailer`` compresses and
    frames a block.  Returns ``(blocks, after, first_key_index, block_offset,
    block_length)``: the stored blocks, each written right after the bitmap of key
    ``after[j]``; offsets are in the body (bitmaps and blocks), lengths exclude the
    trailer.  :func:`pack` lays out the body itself.
    """
    cdef Py_ssize_t nk = bm_sizes.shape[0], k, e
    if key_off.shape[0] != nk + 1:
        raise ValueError("key_off must have one more element than bm_sizes")
    cdef _buf blk
    blk.p = NULL
    blk.n = 0
    blk.cap = 0
    cdef const uint8_t *kd = &key_data[0] if key_data.shape[0] else &EMPTY_BYTE
    cdef int64_t pos = 0, entries_size, est = 0, esize = 0, klen
    # entries of the pending block: (key index, bitmap offset, bitmap length)
    pend_arr = np.empty(max(nk, 1), dtype=np.int64)
    cdef int64_t[::1] pend = pend_arr
    offs_arr = np.empty(max(nk, 1), dtype=np.int64)
    cdef int64_t[::1] offs = offs_arr
    cdef Py_ssize_t npend = 0
    blocks, after, first_keys, block_offs, block_lens = [], [], [], [], []
    entries_size = 0
    try:
        for k in range(nk + 1):
            if k < nk:
                if bm_sizes[k] < 0:
                    raise ValueError(f"negative bitmap size at key {k}")
                offs[k] = pos
                pos += bm_sizes[k]
                klen = key_off[k + 1] - key_off[k]
                esize = (pf_varint_size(<uint64_t> klen) + klen + pf_varint_size(<uint64_t> offs[k])
                         + pf_varint_size(<uint64_t> bm_sizes[k]))
                est = pf_varint_size(<uint64_t> (npend + 1)) + entries_size + esize
            if npend and (k == nk or est > block_size):
                # serialize the pending block
                blk.n = 0
                _reserve(&blk, 10 + entries_size)
                blk.n += pf_put_varint(blk.p + blk.n, <uint64_t> npend)
                for e in range(npend):
                    klen = key_off[pend[e] + 1] - key_off[pend[e]]
                    _reserve(&blk, klen + 30)
                    blk.n += pf_put_varint(blk.p + blk.n, <uint64_t> klen)
                    memcpy(blk.p + blk.n, kd + key_off[pend[e]], <size_t> klen)
                    blk.n += klen
                    blk.n += pf_put_varint(blk.p + blk.n, <uint64_t> offs[pend[e]])
                    blk.n += pf_put_varint(blk.p + blk.n, <uint64_t> bm_sizes[pend[e]])
                stored = encode(PyBytes_FromStringAndSize(<char *> blk.p, blk.n))
                blocks.append(stored)
                after.append(k if k < nk else nk - 1)
                first_keys.append(pend[0])
                block_offs.append(pos)
                block_lens.append(len(stored) - 5)
                pos += len(stored)
                npend = 0
                entries_size = 0
            if k < nk:
                pend[npend] = k
                npend += 1
                entries_size += esize
    finally:
        free(blk.p)
    return (blocks, np.array(after, dtype=np.int64), np.array(first_keys, dtype=np.int64),
            np.array(block_offs, dtype=np.int64), np.array(block_lens, dtype=np.int64))


def pack(const int64_t[::1] key_off, const uint8_t[::1] key_data, bytes bm_blob, const int64_t[::1] bm_sizes,
         int64_t block_size, encode):
    """:func:`pack_blocks` with the body laid out in one buffer: ``bm_blob`` holds the
    bitmaps of ``bm_sizes``, one after another.  Returns ``(body, first_key_index,
    block_offset, block_length)``."""
    cdef Py_ssize_t nk = bm_sizes.shape[0], j, k = 0
    cdef int64_t total = 0, bm_pos = 0, upto, n
    for j in range(nk):
        if bm_sizes[j] < 0:
            raise ValueError(f"negative bitmap size at key {j}")
        total += bm_sizes[j]
    if total != PyBytes_GET_SIZE(bm_blob):
        raise ValueError(f"bitmap sizes add up to {total}, the bitmaps hold {PyBytes_GET_SIZE(bm_blob)} bytes")
    blocks, after, first_keys, block_offs, block_lens = pack_blocks(key_off, key_data, bm_sizes, block_size, encode)
    for b in blocks:
        total += len(b)
    body = PyBytes_FromStringAndSize(NULL, total)
    cdef char *out = PyBytes_AS_STRING(body)
    cdef const char *bm = PyBytes_AS_STRING(bm_blob)
    cdef const int64_t[::1] aft = after
    cdef int64_t pos = 0
    for j in range(len(blocks)):
        upto = bm_pos
        while k <= aft[j]:
            upto += bm_sizes[k]
            k += 1
        memcpy(out + pos, bm + bm_pos, <size_t> (upto - bm_pos))
        pos += upto - bm_pos
        bm_pos = upto
        b = blocks[j]
        n = PyBytes_GET_SIZE(b)
        memcpy(out + pos, PyBytes_AS_STRING(b), <size_t> n)
        pos += n
    memcpy(out + pos, bm + bm_pos, <size_t> (total - pos))
    return body, first_keys, block_offs, block_lens


# ---------------------------------------------------------------- reader

def parse_entries(const uint8_t[::1] raw, Py_ssize_t base=0):
    """Entries of a dictionary or index block: ``varint n`` then n x (``varint keyLen``,
    key, ``varlong offset``, ``varint length``).  Returns int64 arrays
    ``(key_start, key_len, offset, length)``; malformed input raises IndexFormatError
    (``base`` = where ``raw`` starts, for messages; offsets inside decompressed
    blocks are relative to the block)."""
    cdef int64_t n = raw.shape[0]
    cdef const uint8_t *p = &raw[0] if n else &EMPTY_BYTE
    cdef int64_t pos = 0, i, at = 0
    cdef uint64_t cnt, v
    cdef const char *what = NULL
    if pf_get_varint(p, n, &pos, 31, &cnt) != 0:
        raise IndexFormatError("bad or truncated entry count", base)
    if <int64_t> cnt > (n - pos) // 3:
        raise IndexFormatError(f"block claims {cnt} entries, more than its {n} bytes can hold", base)
    ks_arr = np.empty(cnt, dtype=np.int64)
    kl_arr = np.empty(cnt, dtype=np.int64)
    of_arr = np.empty(cnt, dtype=np.int64)
    ln_arr = np.empty(cnt, dtype=np.int64)
    cdef int64_t[::1] ks = ks_arr
    cdef int64_t[::1] kl = kl_arr
    cdef int64_t[::1] of = of_arr
    cdef int64_t[::1] ln = ln_arr
    with nogil:
        for i in range(<int64_t> cnt):
            at = pos
            if pf_get_varint(p, n, &pos, 31, &v) != 0:
                what = "bad or truncated key length"
                break
            if <int64_t> v > n - pos:
                what = "key length exceeds the block"
                break
            ks[i] = pos
            kl[i] = <int64_t> v
            pos += <int64_t> v
            at = pos
            if pf_get_varint(p, n, &pos, 63, &v) != 0:
                what = "bad or truncated offset"
                break
            of[i] = <int64_t> v
            at = pos
            if pf_get_varint(p, n, &pos, 31, &v) != 0:
                what = "bad or truncated length"
                break
            ln[i] = <int64_t> v
    if what != NULL:
        raise IndexFormatError(what.decode(), base + at)
    return ks_arr, kl_arr, of_arr, ln_arr


def search_last_le(int kind, const uint8_t[::1] raw, const int64_t[::1] starts, const int64_t[::1] lengths,
                   const uint8_t[::1] key, Py_ssize_t base=0):
    """Index of the last entry whose key is logically <= ``key`` (binary search), or -1."""
    cdef int64_t lo_i = 0, hi_i = starts.shape[0] - 1, mid
    cdef int c, bad = 0
    cdef const uint8_t *p = &raw[0] if raw.shape[0] else &EMPTY_BYTE
    cdef const uint8_t *kp = &key[0] if key.shape[0] else &EMPTY_BYTE
    with nogil:
        while lo_i <= hi_i:
            mid = (lo_i + hi_i) >> 1
            c = pf_key_cmp(kind, p + starts[mid], lengths[mid], kp, key.shape[0], &bad)
            if bad:
                break
            if c <= 0:
                lo_i = mid + 1
            else:
                hi_i = mid - 1
    if bad:
        raise IndexFormatError("malformed key for its type in the block index", base + starts[mid])
    return hi_i


def lookup(int kind, const uint8_t[::1] raw, const uint8_t[::1] key, Py_ssize_t base=0, bint ordered=False):
    """Scan a raw dictionary block for the entry logically equal to ``key``.

    Returns ``(bitmap offset, bitmap length)`` or ``None``.  Parses as it goes
    (no arrays), so a cold point lookup touches each entry once; with ``ordered``
    it stops at the first greater key, as Java does."""
    cdef int64_t n = raw.shape[0], at = 0
    cdef const uint8_t *p = &raw[0] if n else &EMPTY_BYTE
    cdef const uint8_t *kp = &key[0] if key.shape[0] else &EMPTY_BYTE
    cdef uint64_t off = 0, ln = 0
    cdef int r
    with nogil:
        r = pf_block_scan(kind, p, n, kp, key.shape[0], ordered, &off, &ln, &at)
    if r < 0:
        raise IndexFormatError(_SCAN_ERRORS[-r], base + at)
    return (<int64_t> off, <int64_t> ln) if r else None


_SCAN_ERRORS = (None, "bad or truncated entry count", "bad or truncated key",
                "bad or truncated bitmap offset/length", "malformed key for its type")


def compare_to(int kind, const uint8_t[::1] raw, const int64_t[::1] starts, const int64_t[::1] lengths,
               const uint8_t[::1] key, Py_ssize_t base=0):
    """int8 array: sign of logical compare(entry key, ``key``) for every entry."""
    cdef Py_ssize_t n = starts.shape[0], i
    out_arr = np.empty(n, dtype=np.int8)
    cdef int8_t[::1] out = out_arr
    cdef int bad = 0
    cdef const uint8_t *p = &raw[0] if raw.shape[0] else &EMPTY_BYTE
    cdef const uint8_t *kp = &key[0] if key.shape[0] else &EMPTY_BYTE
    with nogil:
        for i in range(n):
            out[i] = <int8_t> pf_key_cmp(kind, p + starts[i], lengths[i], kp, key.shape[0], &bad)
            if bad:
                break
    if bad:
        raise IndexFormatError("malformed key for its type", base + starts[i])
    return out_arr


def match_bytes(int mode, const uint8_t[::1] raw, const int64_t[::1] starts, const int64_t[::1] lengths,
                const uint8_t[::1] pat):
    """Bool mask: entry key bytes start with (mode 0), end with (1) or contain (2) ``pat``."""
    cdef Py_ssize_t n = starts.shape[0], i
    cdef int64_t m = pat.shape[0], kl, j
    out_arr = np.zeros(n, dtype=np.bool_)
    cdef cnp.npy_bool[::1] out = out_arr
    cdef const uint8_t *p = &raw[0] if raw.shape[0] else &EMPTY_BYTE
    cdef const uint8_t *pp = &pat[0] if m else &EMPTY_BYTE
    cdef const uint8_t *k
    with nogil:
        for i in range(n):
            kl = lengths[i]
            if kl < m:
                continue
            k = p + starts[i]
            if m == 0:
                out[i] = 1
            elif mode == 0:
                out[i] = memcmp(k, pp, <size_t> m) == 0
            elif mode == 1:
                out[i] = memcmp(k + kl - m, pp, <size_t> m) == 0
            else:
                j = 0
                while j <= kl - m:
                    if k[j] == pp[0] and memcmp(k + j, pp, <size_t> m) == 0:
                        out[i] = 1
                        break
                    j += 1
    return out_arr


cdef int64_t _check64(const uint8_t *b, int64_t n, const char **err, size_t *err_at) noexcept nogil:
    """Cardinality of ``b[:n]`` when it is exactly one portable 64-bit roaring bitmap; else -1
    with ``err`` / ``err_at`` set (``err`` NULL: the size is wrong, see :func:`check64`)."""
    cdef int64_t p = 8, size, prev = -1, h
    cdef uint64_t nb = 0, k, card = 0, c
    if n < 8:
        err[0] = "64-bit roaring bitmap truncated (bucket count)"
        err_at[0] = 0
        return -1
    for k in range(8):
        nb |= (<uint64_t> b[k]) << (8 * k)
    if nb > <uint64_t> ((n - 8) // 12):
        err[0] = NULL
        err_at[0] = 0
        return -2
    for k in range(nb):  # no-cython-lint (a count: the index is not needed)
        if n - p < 4:
            err[0] = "64-bit roaring bitmap truncated (bucket key)"
            err_at[0] = p
            return -1
        h = <int64_t> (b[p] | (b[p + 1] << 8) | (b[p + 2] << 16) | (<uint32_t> b[p + 3] << 24))
        if h <= prev:
            err[0] = "64-bit roaring buckets not in increasing order"
            err_at[0] = p
            return -1
        prev = h
        size = pf_roaring_check(b + p + 4, <size_t> (n - p - 4), err, err_at, &c)
        if size < 0:
            err_at[0] += p + 4
            return -1
        p += 4 + size
        card += c
    if p != n:
        err[0] = NULL
        err_at[0] = p
        return -3
    return <int64_t> card


def check64(const uint8_t[::1] buf, Py_ssize_t base=0):
    """Validate that ``buf`` is exactly one portable 64-bit roaring bitmap; returns its cardinality."""
    cdef int64_t n = buf.shape[0], r
    cdef const uint8_t *b = &buf[0] if n else &EMPTY_BYTE
    cdef const char *err = NULL
    cdef size_t err_at = 0
    with nogil:
        r = _check64(b, n, &err, &err_at)
    if r >= 0:
        return r
    if r == -2:
        nb = int.from_bytes(bytes(buf[:8]), "little")
        raise IndexFormatError(f"64-bit roaring bitmap claims {nb} buckets, more than its bytes can hold", base)
    if r == -3:
        raise IndexFormatError(f"64-bit roaring bitmap is {err_at} bytes but its block is {n}", base)
    raise IndexFormatError(err.decode(), base + <Py_ssize_t> err_at)


def decode64_many(const uint8_t[::1] buf, const int64_t[::1] offs, const int64_t[::1] lens, Py_ssize_t base=0):
    """Row ids of many portable 64-bit bitmaps ``buf[offs[i]:offs[i]+lens[i]]`` (each validated
    exactly as :func:`check64`), concatenated (not sorted across bitmaps)."""
    cdef Py_ssize_t m = offs.shape[0], i
    cdef int64_t total = 0, n = buf.shape[0]
    for i in range(m):
        if offs[i] < 0 or lens[i] < 0 or offs[i] + lens[i] > n:
            raise IndexFormatError("bitmap outside the buffer", base + offs[i])
        total += check64(buf[offs[i]:offs[i] + lens[i]], base + offs[i])
    out_arr = np.empty(max(total, 1), dtype=np.uint64)
    cdef uint64_t[::1] out = out_arr
    cdef const uint8_t *b = &buf[0] if n else &EMPTY_BYTE
    cdef size_t w = 0
    cdef int64_t p, nb, k
    cdef uint64_t h
    with nogil:
        for i in range(m):
            p = offs[i]
            nb = 0
            for k in range(8):
                nb |= (<int64_t> b[p + k]) << (8 * k)
            p += 8
            for k in range(nb):  # no-cython-lint (a count: the index is not needed)
                h = <uint64_t> (b[p] | (b[p + 1] << 8) | (b[p + 2] << 16) | (<uint32_t> b[p + 3] << 24))
                p += 4
                w += pf_roaring_decode(b + p, h, &out[w])
                # advance p past this 32-bit bitmap (its size, from the validator)
                p += _size32(b + p, offs[i] + lens[i] - p)
    return out_arr[:w]


cdef inline int64_t _size32(const uint8_t *p, int64_t avail) noexcept nogil:
    cdef const char *err = NULL
    cdef size_t at = 0
    cdef uint64_t card
    return pf_roaring_check(p, <size_t> avail, &err, &at, &card)


def union64(const uint8_t[::1] buf, const int64_t[::1] offs, const int64_t[::1] lens, Py_ssize_t base=0):
    """Portable serialization of the union of many 64-bit bitmaps (validated), ready for
    ``BitMap64.deserialize``."""
    vals = decode64_many(buf, offs, lens, base)
    u = sort_unique_u64(vals)
    blob, _ = serialize64_groups(u, np.array([0, len(u)], dtype=np.int64))
    return blob


def entries_sorted(int kind, const uint8_t[::1] raw, const int64_t[::1] starts, const int64_t[::1] lengths,
                   Py_ssize_t base=0):
    """Are the entry keys strictly increasing in the logical order?"""
    cdef Py_ssize_t n = starts.shape[0], i
    cdef int bad = 0, ok = 1
    cdef const uint8_t *p = &raw[0] if raw.shape[0] else &EMPTY_BYTE
    with nogil:
        for i in range(1, n):
            if pf_key_cmp(kind, p + starts[i - 1], lengths[i - 1], p + starts[i], lengths[i], &bad) >= 0 or bad:
                ok = 0
                break
    if bad:
        raise IndexFormatError("malformed key for its type", base + starts[i])
    return bool(ok)


def index_walk(int kind, const uint8_t[::1] raw, const uint8_t[::1] key, int64_t min_len=0,
               int64_t max_len=0x7FFFFFFF):
    """A cold point lookup's walk over the block index, in place (no arrays): parses every
    entry as :func:`parse_entries` does and returns ``(i, block offset, block length)`` of
    the last entry whose key is logically <= ``key`` (``i = -1``: none).  Returns None when
    the block is malformed, a key length lies outside ``[min_len, max_len]`` or the keys are
    not strictly increasing: the caller then takes the parsing path, which reports the
    first two as :func:`parse_entries` / the codec do and searches unordered indexes its
    own way, so every answer and error stays that path's."""
    cdef int64_t n = raw.shape[0]
    cdef const uint8_t *p = &raw[0] if n else &EMPTY_BYTE
    cdef const uint8_t *kp = &key[0] if key.shape[0] else &EMPTY_BYTE
    cdef int64_t pos = 0, i, ks, kl, pks = 0, pkl = -1, hit = -1
    cdef uint64_t cnt, v, off, ln, hoff = 0, hln = 0
    cdef int bad = 0, ok = 1, c
    if pf_get_varint(p, n, &pos, 31, &cnt) != 0 or <int64_t> cnt > (n - pos) // 3:
        return None
    with nogil:
        for i in range(<int64_t> cnt):
            if pf_get_varint(p, n, &pos, 31, &v) != 0 or <int64_t> v > n - pos:
                ok = 0
                break
            ks = pos
            kl = <int64_t> v
            pos += kl
            if pf_get_varint(p, n, &pos, 63, &off) != 0 or pf_get_varint(p, n, &pos, 31, &ln) != 0 \
                    or kl < min_len or kl > max_len:
                ok = 0
                break
            if pkl >= 0 and (pf_key_cmp(kind, p + pks, pkl, p + ks, kl, &bad) >= 0 or bad):
                ok = 0
                break
            c = pf_key_cmp(kind, p + ks, kl, kp, key.shape[0], &bad)
            if bad:
                ok = 0
                break
            if c <= 0:
                hit = i
                hoff = off
                hln = ln
            pks = ks
            pkl = kl
    if not ok:
        return None
    return hit, <int64_t> hoff, <int64_t> hln


def crc32(data, uint32_t crc=0, bint portable=False):
    """``zlib.crc32(data, crc)`` (any contiguous bytes-like object), folded with carry-less
    multiplications where the CPU has them (csrc/crc32.h); ``portable`` forces the table
    loop (for tests)."""
    cdef Py_buffer view
    cdef uint32_t out
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        with nogil:
            if portable:
                out = pf_crc32_portable(crc, <const uint8_t *> view.buf, <size_t> view.len)
            else:
                out = pf_crc32(crc, <const uint8_t *> view.buf, <size_t> view.len)
    finally:
        PyBuffer_Release(&view)
    return out


def block_trailer(blob, Py_ssize_t length, Py_ssize_t offset=0):
    """Check a stored block's 5-byte trailer: ``blob`` holds ``length`` stored bytes, the
    compression type byte and the ``u32 LE`` CRC-32 of the stored bytes followed by the type
    byte.  Returns the type byte; a wrong size or CRC raises IndexFormatError (``offset`` =
    where the block starts in the file)."""
    cdef Py_buffer view
    cdef uint32_t crc, want
    cdef const uint8_t *b
    cdef int ctype
    PyObject_GetBuffer(blob, &view, PyBUF_SIMPLE)
    try:
        if length < 0 or view.len != length + 5:
            raise IndexFormatError("block truncated", offset)
        b = <const uint8_t *> view.buf
        ctype = b[length]
        crc = (<uint32_t> b[length + 1]) | (<uint32_t> b[length + 2] << 8) | (<uint32_t> b[length + 3] << 16) \
            | (<uint32_t> b[length + 4] << 24)
        with nogil:
            want = pf_crc32(0, b, <size_t> (length + 1))
    finally:
        PyBuffer_Release(&view)
    if crc != want:
        raise IndexFormatError(f"block CRC mismatch: stored 0x{crc:08x}, computed 0x{want:08x}", offset + length + 1)
    return ctype


cdef int _pread_all(int fd, uint8_t *buf, int64_t n, int64_t at) noexcept nogil:
    """1 when all ``n`` bytes at ``at`` of ``fd`` were read into ``buf``; else 0."""
    cdef ssize_t got
    while n > 0:
        got = pread(fd, buf, <size_t> n, <off_t> at)
        if got <= 0:
            if got < 0 and errno == EINTR:
                continue
            return 0
        buf += got
        n -= got
        at += got
    return 1


cdef int64_t _stored_block(const uint8_t *t, int64_t tn, int64_t at, int64_t length) noexcept nogil:
    """1 when the block of ``length`` stored bytes + trailer at ``t[at:]`` lies inside ``t[:tn]``,
    is uncompressed and its CRC matches; else 0."""
    cdef uint32_t crc
    if at < 0 or length < 0 or length > tn - at - 5 or t[at + length] != 0:
        return 0
    crc = (<uint32_t> t[at + length + 1]) | (<uint32_t> t[at + length + 2] << 8) \
        | (<uint32_t> t[at + length + 3] << 16) | (<uint32_t> t[at + length + 4] << 24)
    return 1 if pf_crc32(0, t + at, <size_t> (length + 1)) == crc else 0


def cold_find(int kind, const uint8_t[::1] tail, int64_t tail_at, int64_t index_off, int64_t index_len,
              const uint8_t[::1] key, int64_t min_len=0, int64_t max_len=0x7FFFFFFF, int fd=-1,
              bint bitmap=False, int64_t check_upto=-1):
    """A fresh reader's point lookup over the bytes read at open (``tail``, the file from
    ``tail_at`` on), in one call: the block index's trailer (uncompressed, CRC), the walk of
    :func:`index_walk`, then -- when that dictionary block also lies in ``tail`` and is
    uncompressed with a good CRC -- its ordered scan.  Returns ``(bitmap offset, length)``;
    False when no key matches; ``(i, block offset, block length)`` when dictionary block i
    must be read the usual way; None when the general path must run (the index is not in
    ``tail``, compressed, unordered or anything is malformed: that path reports it).

    ``fd``, the open file ``tail`` ends (its size is ``tail_at + len(tail)``): a dictionary
    block before ``tail`` is read from it here and scanned the same way.  A short read
    returns the block's ``(i, offset, length)``; a block that is compressed or fails its
    CRC returns ``(i, offset, length, bytes read)`` for the usual way to decode (or report)
    without reading it again.

    ``bitmap``: a key found gives its bitmap's bytes instead of ``(offset, length)`` -- copied
    from ``tail`` or read from ``fd`` -- and those of at most ``check_upto`` bytes pass
    :func:`check64` first.  Whatever cannot be given so (outside the file, a short read, a
    failed check) is still ``(offset, length)``: the usual read reports it."""
    cdef int64_t tn = tail.shape[0]
    cdef const uint8_t *t = &tail[0] if tn else &EMPTY_BYTE
    cdef int64_t io = index_off - tail_at
    cdef uint64_t off = 0, ln = 0
    cdef int64_t bo, bl, at = 0
    cdef int r
    if not _stored_block(t, tn, io, index_len):
        return None
    w = index_walk(kind, tail[io:io + index_len], key, min_len, max_len)
    if w is None:
        return None
    i, bo, bl = w
    if i < 0:
        return False
    cdef const uint8_t *kp = &key[0] if key.shape[0] else &EMPTY_BYTE
    cdef uint8_t *buf
    cdef int got, raw
    if _stored_block(t, tn, bo - tail_at, bl):
        with nogil:
            r = pf_block_scan(kind, t + bo - tail_at, bl, kp, key.shape[0], 1, &off, &ln, &at)
    elif fd >= 0 and 0 <= bo < tail_at and 0 <= bl <= tail_at + tn - 5 - bo:   # inside the file
        blob = PyBytes_FromStringAndSize(NULL, bl + 5)
        buf = <uint8_t *> PyBytes_AS_STRING(blob)
        with nogil:
            got = _pread_all(fd, buf, bl + 5, bo)
            raw = got and _stored_block(buf, bl + 5, 0, bl)
            if raw:
                r = pf_block_scan(kind, buf, bl, kp, key.shape[0], 1, &off, &ln, &at)
        if not got:     # a short read: the usual way reads and reports it
            return w
        if not raw:     # compressed (or a bad CRC): the usual way decodes the bytes read here
            return i, bo, bl, blob
    else:
        return w
    if r < 0:
        return w
    if r == 0:
        return False
    if bitmap:
        return _bitmap_bytes(t, tn, tail_at, fd, off, ln, check_upto)
    return <int64_t> off, <int64_t> ln


cdef object _bitmap_bytes(const uint8_t *t, int64_t tn, int64_t tail_at, int fd, uint64_t off, uint64_t ln,
                          int64_t check_upto):
    """The bytes of the bitmap at ``off`` / ``ln`` of the file ``t`` ends (from ``t`` or read from
    ``fd``), checked when at most ``check_upto`` bytes; ``(off, ln)`` when that cannot be."""
    cdef uint64_t size = <uint64_t> (tail_at + tn)
    cdef uint8_t *buf
    cdef int got = 1
    cdef const char *err = NULL
    cdef size_t err_at = 0
    cdef int64_t card = 0
    if off > size or ln > size - off or (off < <uint64_t> tail_at and fd < 0):
        return <int64_t> off, <int64_t> ln
    blob = PyBytes_FromStringAndSize(NULL, <Py_ssize_t> ln)
    buf = <uint8_t *> PyBytes_AS_STRING(blob)
    with nogil:
        if off >= <uint64_t> tail_at:
            memcpy(buf, t + (off - <uint64_t> tail_at), ln)
        else:
            got = _pread_all(fd, buf, <int64_t> ln, <int64_t> off)
        if got and <int64_t> ln <= check_upto:
            card = _check64(buf, <int64_t> ln, &err, &err_at)
    if not got or card < 0:
        return <int64_t> off, <int64_t> ln
    return blob


def open_tail(path, int64_t tail_len):
    """``(fd, size, tail)``: the local file ``path`` opened read-only (close-on-exec, as
    ``os.open`` does) with its last ``min(size, tail_len)`` bytes, in one call -- a cold
    reader's open.  ``tail`` is None when that read came up short (the caller reads again and
    reports it).  A file that cannot be opened raises OSError as ``os.open``."""
    cdef bytes p = os.fsencode(path)
    if b"\0" in p:
        raise ValueError("embedded null byte")   # as os.open: never open a shorter path
    cdef const char *cp = p
    cdef int fd = -1, got = 0, e = 0
    cdef int64_t size = -1, n
    cdef struct_stat st
    cdef uint8_t *buf
    with nogil:
        while True:
            fd = c_open(cp, O_RDONLY | O_CLOEXEC)
            if fd >= 0:
                break
            e = errno
            if e != EINTR:
                break
        if fd >= 0:
            size = lseek(fd, 0, SEEK_END)
            if size < 0:   # cannot seek (a pipe): its size, as the Python source does
                if fstat(fd, &st) == 0:
                    size = st.st_size
                else:
                    e = errno
                    c_close(fd)
    if fd < 0 or size < 0:
        raise OSError(e, os.strerror(e), path)
    n = min(size, max(tail_len, 0))
    try:
        blob = PyBytes_FromStringAndSize(NULL, <Py_ssize_t> n)
    except BaseException:
        c_close(fd)
        raise
    buf = <uint8_t *> PyBytes_AS_STRING(blob)
    with nogil:
        got = _pread_all(fd, buf, n, size - n)
    return fd, size, blob if got else None
