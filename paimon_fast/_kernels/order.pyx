# cython: language_level=3
"""Clustering kernels (csrc/order.h): the stable radix argsort of multi-word keys, bit interleaving
(z-order), the Hilbert index, the first bytes of strings as words, and the gather of
variable-width values into a new file's order.

Keys are C-contiguous ``uint64`` arrays of shape ``(words, rows)``, word 0 the most significant.
Every function releases the GIL; the twins are in :mod:`paimon_fast.reference.order`.
"""
from libc.stdint cimport uint8_t, int32_t, int64_t, uint64_t
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy
import numpy as np

cdef extern from "order.h":
    int pf_radix_argsort(const uint64_t *const *words, int nw, int64_t n, int64_t *perm) nogil
    void pf_interleave(const uint64_t *const *cols, int nc, int64_t n, uint64_t *const *out) nogil
    int pf_hilbert(const uint64_t *const *cols, int nd, int64_t n, uint64_t *const *out) nogil
    void pf_first_bytes(const int64_t *offsets, const uint8_t *data, const uint8_t *valid, int64_t n, int width,
                        int right, uint64_t null_word, uint64_t *out) nogil


cdef const uint64_t **_rows(const uint64_t[:, ::1] a) except NULL:
    cdef Py_ssize_t w, nw = a.shape[0]
    cdef const uint64_t **p = <const uint64_t **>malloc(max(nw, 1) * sizeof(uint64_t *))
    if p == NULL:
        raise MemoryError()
    for w in range(nw):
        p[w] = &a[w, 0] if a.shape[1] else NULL
    return p


def radix_argsort(keys):
    """The stable permutation (int64) sorting the keys ``(words, rows)`` ascending."""
    cdef const uint64_t[:, ::1] k = np.ascontiguousarray(keys, dtype=np.uint64)
    cdef Py_ssize_t n = k.shape[1]
    out = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] o = out
    if n == 0:
        return out
    cdef const uint64_t **p = _rows(k)
    cdef int rc
    try:
        with nogil:
            rc = pf_radix_argsort(p, <int>k.shape[0], n, &o[0])
    finally:
        free(p)
    if rc != 0:
        raise MemoryError("radix argsort: out of memory")
    return out


def interleave(cols):
    """``(c, rows)`` words -> ``(c, rows)`` words: their bits interleaved, most significant first."""
    cdef const uint64_t[:, ::1] k = np.ascontiguousarray(cols, dtype=np.uint64)
    cdef Py_ssize_t nc = k.shape[0], n = k.shape[1]
    out = np.zeros((nc, n), dtype=np.uint64)
    if n == 0 or nc == 0:
        return out
    cdef uint64_t[:, ::1] o = out
    cdef const uint64_t **p = _rows(k)
    cdef uint64_t **q = <uint64_t **>malloc(nc * sizeof(uint64_t *))
    cdef Py_ssize_t c
    if q == NULL:
        free(p)
        raise MemoryError()
    for c in range(nc):
        q[c] = &o[c, 0]
    try:
        with nogil:
            pf_interleave(p, <int>nc, n, q)
    finally:
        free(p)
        free(q)
    return out


def hilbert(cols):
    """``(d, rows)`` coordinates (their low 63 bits) -> ``(d, rows)`` words: the Hilbert index of
    63 * d bits, most significant first, left-aligned."""
    cdef const uint64_t[:, ::1] k = np.ascontiguousarray(cols, dtype=np.uint64)
    cdef Py_ssize_t nd = k.shape[0], n = k.shape[1]
    if nd < 1:
        raise ValueError("the Hilbert index needs at least one dimension")
    trans = np.zeros((nd, n), dtype=np.uint64)
    if n == 0:
        return trans
    cdef uint64_t[:, ::1] t = trans
    cdef const uint64_t **p = _rows(k)
    cdef uint64_t **q = <uint64_t **>malloc(nd * sizeof(uint64_t *))
    cdef Py_ssize_t c
    cdef int rc
    if q == NULL:
        free(p)
        raise MemoryError()
    for c in range(nd):
        q[c] = &t[c, 0]
    try:
        with nogil:
            rc = pf_hilbert(p, <int>nd, n, q)
    finally:
        free(p)
        free(q)
    if rc != 0:
        raise MemoryError()
    return interleave(trans)


def first_bytes(offsets, data, valid, Py_ssize_t n, int width, bint right, uint64_t null_word):
    """Each value's first ``width`` (<= 8) bytes as a big-endian word, left-aligned (``right``
    False) or right-aligned; nulls (``valid`` 0, or None: none) are ``null_word``."""
    if width < 0 or width > 8:
        raise ValueError("width must be in [0, 8]")
    cdef const int64_t[::1] off = np.ascontiguousarray(offsets, dtype=np.int64)
    cdef const uint8_t[::1] d = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(1, np.uint8)
    cdef const uint8_t[::1] v
    cdef const uint8_t *vp = NULL
    if off.shape[0] < n + 1:
        raise ValueError("offsets shorter than rows + 1")
    if n and (off[0] < 0 or off[n] > d.shape[0]):
        raise ValueError("offsets outside the data")
    cdef Py_ssize_t i
    for i in range(n):
        if off[i + 1] < off[i]:
            raise ValueError("offsets decrease")
    if valid is not None:
        v = np.ascontiguousarray(valid, dtype=np.uint8)
        if v.shape[0] < n:
            raise ValueError("validity shorter than rows")
        if n:
            vp = &v[0]
    out = np.empty(n, dtype=np.uint64)
    cdef uint64_t[::1] o = out
    if n == 0:
        return out
    with nogil:
        pf_first_bytes(&off[0], &d[0], vp, n, width, right, null_word, &o[0])
    return out


cdef extern from *:
    void __builtin_prefetch(const void *addr) nogil

# how far ahead the gather asks for the cache lines it will read (rows)
cdef enum:
    PREFETCH = 16


ctypedef fused offset_t:
    int32_t
    int64_t


def take_bytes(const offset_t[::1] offsets, const uint8_t[::1] data, const int64_t[::1] idx):
    """Variable-width values gathered: ``(new offsets, new data)`` of the values ``idx`` picks
    (repeats allowed) from the ``len(offsets) - 1`` values that ``offsets`` (int32 or int64, as
    Arrow's) delimit in ``data``.  The new offsets have the old ones' type and start at 0; None
    when int32 offsets cannot hold the new data (over 2 GiB: the caller takes the large type).
    IndexError for a position outside the values, ValueError for offsets that decrease or leave
    the data.  Arrow's ``take`` of a string column costs ~115 ns a row on this layout, most of it
    in two passes of per-value calls; this is one pass over the offsets, one copy a value."""
    cdef Py_ssize_t n = offsets.shape[0] - 1, m = idx.shape[0], i, dlen = data.shape[0]
    cdef int64_t k, a, b, total = 0
    cdef int bad = 0
    if n < 0:
        raise ValueError("offsets must hold at least one entry")
    starts = np.empty(m, dtype=np.int64)
    at = np.empty(m + 1, dtype=np.int64)  # each value's new offset
    cdef int64_t[::1] st = starts, nw = at
    with nogil:
        for i in range(m):
            if i + PREFETCH < m and 0 <= idx[i + PREFETCH] < n:
                __builtin_prefetch(&offsets[idx[i + PREFETCH]])
            k = idx[i]
            if k < 0 or k >= n:
                bad = 1
                break
            a = offsets[k]
            b = offsets[k + 1]
            if a < 0 or b < a or b > dlen:
                bad = 2
                break
            st[i] = a
            nw[i] = total
            total += b - a
        nw[m] = total
    if bad == 1:
        raise IndexError(f"position {idx[i]} outside {n} values")
    if bad == 2:
        raise ValueError(f"offsets of value {idx[i]} ({offsets[idx[i]]}, {offsets[idx[i] + 1]}) leave the data")
    if offset_t is int32_t:
        if total > 0x7FFFFFFF:
            return None
        new_off = at.astype(np.int32)
    else:
        new_off = at
    out = np.empty(total, dtype=np.uint8)
    cdef uint8_t[::1] o = out
    if total:
        with nogil:
            for i in range(m):
                if i + PREFETCH < m:
                    __builtin_prefetch(&data[st[i + PREFETCH]])
                if nw[i + 1] > nw[i]:
                    memcpy(&o[nw[i]], &data[st[i]], <size_t>(nw[i + 1] - nw[i]))
    return new_off, out
