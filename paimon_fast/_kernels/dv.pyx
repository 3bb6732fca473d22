# cython: language_level=3
"""Deletion-vector kernels: bit-set build / probe / keep-mask and Java-exact
roaring (de)serialization straight from / into a bit set (csrc/dvbits.h on the
shared csrc/roaring_dense.h).

Two in-memory forms are used by ``paimon_fast.tableindex``: a bit set
(uint64 words, whole 65536-bit chunks) for dense vectors and a sorted unique
uint64 position array for sparse ones.  Every function here takes contiguous
arrays, releases the GIL and allocates nothing per row.
"""
from libc.stdint cimport uint8_t, uint16_t, uint32_t, int32_t, int64_t, uint64_t
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy, memset
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING
import numpy as np

cdef extern from "dvbits.h":
    int64_t pf_words_size(const uint64_t *words, int64_t nwords, int plain, uint32_t *card, uint32_t *nruns) nogil
    size_t pf_words_write(const uint64_t *words, int64_t nwords, int plain, const uint32_t *card,
                          const uint32_t *nruns, uint8_t *out) nogil
    int64_t pf_roaring_decode(const uint8_t *buf, size_t len, uint64_t *words, int64_t nbits, int flags,
                              const char **err, size_t *err_at, int64_t *bad) nogil
    int PF_DEC_OR
    int32_t pf_roaring_last_key(const uint8_t *buf) nogil
    size_t pf_roaring_to_sorted(const uint8_t *buf, uint64_t high, uint64_t *out) nogil
    int pf_cpu_ok()
    int64_t pf_roaring_scan(const uint8_t *buf, size_t len, const char **err, size_t *err_at, uint64_t *card_out,
                            int32_t *last_key) nogil
    void pf_set_bits(const int64_t *pos, size_t n, uint64_t *w) nogil
    void pf_test_bits(const uint64_t *w, uint64_t nbits, const int64_t *probes, size_t n, uint8_t *out) nogil
    uint64_t pf_popcount_words(const uint64_t *w, size_t n) nogil
    int64_t pf_roaring_check(const uint8_t *buf, size_t length, const char **err, size_t *err_at, uint64_t *card) nogil

from paimon_fast.errors import IndexFormatError

if not pf_cpu_ok():
    raise ImportError("paimon_fast._kernels.dv needs a CPU with the POPCNT instruction")

cdef extern from *:
    int __builtin_popcountll(unsigned long long) nogil
    int __builtin_ctzll(unsigned long long) nogil


cdef enum:
    CHUNK_WORDS = 1024


def minmax(const int64_t[::1] pos):
    """(min, max) of a non-empty array in one pass."""
    cdef Py_ssize_t i, n = pos.shape[0]
    if n == 0:
        raise ValueError("empty array")
    cdef int64_t lo = pos[0], hi = pos[0], v
    with nogil:
        for i in range(1, n):
            v = pos[i]
            if v < lo:
                lo = v
            if v > hi:
                hi = v
    return lo, hi


def scan32(const uint8_t[::1] buf, Py_ssize_t offset=0, Py_ssize_t base=0):
    """Extent of the portable bitmap at ``buf[offset:]`` (header and container
    bounds checked, content not): (size, header cardinality, last container key)."""
    cdef Py_ssize_t n = buf.shape[0]
    if offset < 0 or offset > n:
        raise IndexFormatError(f"roaring bitmap offset {offset} outside the buffer", base + offset)
    cdef const char *err = NULL
    cdef size_t err_at = 0
    cdef uint64_t card = 0
    cdef int32_t last = -1
    cdef int64_t size
    cdef const uint8_t *p = &buf[0] + offset if n else <const uint8_t *> ""
    with nogil:
        size = pf_roaring_scan(p, n - offset, &err, &err_at, &card, &last)
    if size < 0:
        raise IndexFormatError(err.decode(), base + offset + <Py_ssize_t> err_at)
    return size, card, last


def fill_bits(const uint8_t[::1] buf, Py_ssize_t offset, uint64_t[::1] w, Py_ssize_t chunk0, Py_ssize_t last_key,
              Py_ssize_t base=0):
    """Validate the content of a bitmap accepted by :func:`scan32` while ORing it
    into bit set ``w`` at chunk ``chunk0`` (+ container key)."""
    if last_key < 0:
        return
    if chunk0 < 0 or (chunk0 + last_key + 1) * CHUNK_WORDS > w.shape[0]:
        raise ValueError("bit set too small for the bitmap")
    cdef const char *err = NULL
    cdef size_t err_at = 0
    cdef int64_t rc, bad
    if offset < 0 or offset > buf.shape[0]:
        raise IndexFormatError(f"roaring bitmap offset {offset} outside the buffer", base + offset)
    with nogil:
        rc = pf_roaring_decode(&buf[offset], buf.shape[0] - offset, &w[0] + chunk0 * CHUNK_WORDS,
                               (last_key + 1) * CHUNK_WORDS * 64, PF_DEC_OR, &err, &err_at, &bad)
    if rc < 0:
        raise IndexFormatError(err.decode(), base + offset + <Py_ssize_t> err_at)


def build_bits(const int64_t[::1] pos, Py_ssize_t nwords):
    """A bit set of ``nwords`` words with every position set (0 <= pos < 64*nwords,
    checked by the caller). Returns (words, cardinality)."""
    words_arr = np.zeros(nwords, dtype=np.uint64)
    cdef uint64_t[::1] w = words_arr
    cdef Py_ssize_t n = pos.shape[0]
    cdef uint64_t card = 0
    if nwords == 0:
        return words_arr, 0
    with nogil:
        if n:
            pf_set_bits(&pos[0], n, &w[0])
        card = pf_popcount_words(&w[0], nwords)
    return words_arr, card


def popcount(const uint64_t[::1] w):
    cdef Py_ssize_t n = w.shape[0]
    cdef uint64_t card = 0
    if n == 0:
        return 0
    with nogil:
        card = pf_popcount_words(&w[0], n)
    return card


def bits_serialize(const uint64_t[::1] w, Py_ssize_t chunk_start, Py_ssize_t nchunks, bytes header=b""):
    """Java bytes of the 32-bit bitmap formed by chunks [chunk_start, chunk_start+nchunks),
    preceded by ``header`` (e.g. the deletion-vector magic)."""
    cdef Py_ssize_t hl = len(header)
    if chunk_start < 0 or nchunks < 0 or (chunk_start + nchunks) * CHUNK_WORDS > w.shape[0]:
        raise ValueError("chunk range outside the bit set")
    cdef uint32_t *cards = <uint32_t *> malloc((nchunks + 1) * sizeof(uint32_t))
    cdef uint32_t *runs = <uint32_t *> malloc((nchunks + 1) * sizeof(uint32_t))
    if cards == NULL or runs == NULL:
        free(cards)
        free(runs)
        raise MemoryError()
    cdef const uint64_t *base = &w[0] + chunk_start * CHUNK_WORDS if w.shape[0] else NULL
    cdef int64_t size
    cdef uint8_t *op
    try:
        with nogil:
            size = pf_words_size(base, nchunks * CHUNK_WORDS, 0, cards, runs)
        out = PyBytes_FromStringAndSize(NULL, size + hl)
        op = <uint8_t *> PyBytes_AS_STRING(out)
        memcpy(op, <const char *> header, hl)
        op += hl
        with nogil:
            pf_words_write(base, nchunks * CHUNK_WORDS, 0, cards, runs, op)
    finally:
        free(cards)
        free(runs)
    return out


def bits_to_sorted(const uint64_t[::1] w, Py_ssize_t card):
    """The set positions of a bit set, ascending, as uint64 (``card`` = popcount)."""
    out_arr = np.empty(card, dtype=np.uint64)
    cdef uint64_t[::1] out = out_arr
    cdef Py_ssize_t i, k = 0, n = w.shape[0]
    cdef uint64_t x
    with nogil:
        for i in range(n):
            x = w[i]
            while x:
                if k < card:
                    out[k] = (<uint64_t> i << 6) | <uint64_t> __builtin_ctzll(x)
                k += 1
                x &= x - 1
    if k != card:
        raise ValueError("cardinality does not match the bit set")
    return out_arr


def roaring_last_key(const uint8_t[::1] buf, Py_ssize_t offset):
    """Highest container key of a bitmap validated by roaring.check32 (-1 if empty)."""
    return pf_roaring_last_key(&buf[offset])


def roaring_or_into(const uint8_t[::1] buf, Py_ssize_t offset, uint64_t[::1] w, Py_ssize_t chunk0, Py_ssize_t last_key):
    """OR a validated bitmap into bit set ``w`` at chunk ``chunk0`` (+ container key)."""
    if chunk0 < 0 or (chunk0 + last_key + 1) * CHUNK_WORDS > w.shape[0]:
        raise ValueError("bit set too small for the bitmap")
    if last_key < 0:
        return
    cdef const char *err = NULL
    cdef size_t err_at = 0
    cdef int64_t rc, bad
    with nogil:
        rc = pf_roaring_decode(&buf[offset], buf.shape[0] - offset, &w[0] + chunk0 * CHUNK_WORDS,
                               (last_key + 1) * CHUNK_WORDS * 64, PF_DEC_OR, &err, &err_at, &bad)
    if rc < 0:
        raise IndexFormatError(err.decode(), offset + <Py_ssize_t> err_at)


def roaring_to_sorted(const uint8_t[::1] buf, Py_ssize_t offset, uint64_t high, uint64_t[::1] out, Py_ssize_t at,
                      Py_ssize_t card):
    """Write the ``card`` values of a validated bitmap (| high << 32) to out[at:]."""
    if at < 0 or at + card > out.shape[0]:
        raise ValueError("output too small")
    cdef size_t n
    if card == 0:
        return 0
    with nogil:
        n = pf_roaring_to_sorted(&buf[offset], high, &out[at])
    return n


def contains_bits(const uint64_t[::1] w, const int64_t[::1] probes):
    """uint8 mask: probe i is set in the bit set (out of range -> 0)."""
    cdef Py_ssize_t n = probes.shape[0]
    cdef uint64_t nbits = <uint64_t> w.shape[0] * 64
    out_arr = np.empty(n, dtype=np.uint8)
    cdef uint8_t[::1] out = out_arr
    if n == 0:
        return out_arr
    with nogil:
        # negatives wrap to huge unsigned values: out of range -> 0
        pf_test_bits(&w[0] if nbits else NULL, nbits, &probes[0], n, &out[0])
    return out_arr


def contains_sorted(const uint64_t[::1] values, const int64_t[::1] probes):
    """uint8 mask: probe i is in the sorted unique array (negatives -> 0)."""
    cdef Py_ssize_t i, n = probes.shape[0], m = values.shape[0]
    cdef Py_ssize_t lo, hi, mid
    cdef int64_t p
    cdef uint64_t q
    out_arr = np.zeros(n, dtype=np.uint8)
    cdef uint8_t[::1] out = out_arr
    if m == 0:
        return out_arr
    with nogil:
        for i in range(n):
            p = probes[i]
            if p < 0:
                continue
            q = <uint64_t> p
            lo = 0
            hi = m
            while lo < hi:
                mid = (lo + hi) >> 1
                if values[mid] < q:
                    lo = mid + 1
                else:
                    hi = mid
            if lo < m and values[lo] == q:
                out[i] = 1
    return out_arr


def keep_mask_bits(const uint64_t[::1] w, uint64_t start, Py_ssize_t n):
    """Bool array: row ``start + i`` is NOT deleted, for i in [0, n)."""
    out_arr = np.ones(n, dtype=np.bool_)
    cdef uint8_t[::1] out = out_arr.view(np.uint8)
    cdef uint64_t nbits = <uint64_t> w.shape[0] * 64
    cdef uint64_t p, end, x
    cdef Py_ssize_t i, lim
    if n <= 0 or start >= nbits:
        return out_arr
    end = start + <uint64_t> n
    if end > nbits or end < start:
        end = nbits
    lim = <Py_ssize_t> (end - start)
    with nogil:
        i = 0
        # unaligned head
        while i < lim and ((start + <uint64_t> i) & 63) != 0:
            p = start + <uint64_t> i
            out[i] = 1 - ((w[p >> 6] >> (p & 63)) & 1)
            i += 1
        # whole words: skip all-zero words quickly
        while i + 64 <= lim:
            x = w[(start + <uint64_t> i) >> 6]
            while x:
                out[i + __builtin_ctzll(x)] = 0
                x &= x - 1
            i += 64
        while i < lim:
            p = start + <uint64_t> i
            out[i] = 1 - ((w[p >> 6] >> (p & 63)) & 1)
            i += 1
    return out_arr


def keep_mask_sorted(const uint64_t[::1] values, uint64_t start, Py_ssize_t n):
    """Bool array: row ``start + i`` is NOT in the sorted unique array."""
    out_arr = np.ones(n, dtype=np.bool_)
    cdef uint8_t[::1] out = out_arr.view(np.uint8)
    cdef Py_ssize_t m = values.shape[0], lo = 0, hi = m, mid
    cdef uint64_t end = start + <uint64_t> n
    if n <= 0 or m == 0:
        return out_arr
    with nogil:
        while lo < hi:
            mid = (lo + hi) >> 1
            if values[mid] < start:
                lo = mid + 1
            else:
                hi = mid
        while lo < m and values[lo] < end:
            out[values[lo] - start] = 0
            lo += 1
    return out_arr


def unique_sorted_inplace(uint64_t[::1] a):
    """Drop duplicates from a sorted array in place; returns the new length."""
    cdef Py_ssize_t i, k = 0, n = a.shape[0]
    if n == 0:
        return 0
    with nogil:
        k = 1
        for i in range(1, n):
            if a[i] != a[k - 1]:
                a[k] = a[i]
                k += 1
    return k


# ---------------------------------------------------------------- filtering Arrow buffers by a keep mask
# Outputs are written into caller-provided buffers (the caller allocates them
# from Arrow's memory pool, which keeps freed pages for reuse).

def count_kept(const uint8_t[::1] keep):
    cdef Py_ssize_t i, n = keep.shape[0], total = 0
    with nogil:
        for i in range(n):
            total += keep[i] != 0
    return total


def filter_fixed(const uint8_t[::1] src, Py_ssize_t width, const uint8_t[::1] keep, Py_ssize_t nkeep, uint8_t[::1] out):
    """Values of the kept rows of a fixed-width buffer (``src`` = n*width bytes)
    into ``out`` (>= (nkeep + 1) * width bytes; the last slot is scratch).
    Branch-free compaction; ``nkeep`` must be the number of non-zero keep bytes."""
    cdef Py_ssize_t n = keep.shape[0], i, j = 0
    if width <= 0 or src.shape[0] < n * width:
        raise ValueError("value buffer shorter than the mask")
    if out.shape[0] < (nkeep + 1) * width or count_kept(keep) != nkeep:
        raise ValueError("output buffer / nkeep do not match the mask")
    cdef uint8_t *o = &out[0]
    cdef const uint8_t *s = &src[0] if n else NULL
    with nogil:
        if width == 8:
            for i in range(n):
                (<uint64_t *> o)[j] = (<const uint64_t *> s)[i]
                j += keep[i] != 0
        elif width == 4:
            for i in range(n):
                (<uint32_t *> o)[j] = (<const uint32_t *> s)[i]
                j += keep[i] != 0
        elif width == 2:
            for i in range(n):
                (<uint16_t *> o)[j] = (<const uint16_t *> s)[i]
                j += keep[i] != 0
        elif width == 1:
            for i in range(n):
                o[j] = s[i]
                j += keep[i] != 0
        else:
            for i in range(n):
                memcpy(o + j * width, s + i * width, width)
                j += keep[i] != 0


def filter_bits(const uint8_t[::1] src, Py_ssize_t bit_offset, const uint8_t[::1] keep, Py_ssize_t nkeep,
                uint8_t[::1] out):
    """Bits (LSB first, from ``bit_offset``) of the kept rows, packed from bit 0
    into ``out`` (>= nkeep // 8 + 1 bytes)."""
    cdef Py_ssize_t n = keep.shape[0], i, j = 0, p
    if bit_offset < 0 or src.shape[0] * 8 < bit_offset + n:
        raise ValueError("bit buffer shorter than the mask")
    if out.shape[0] < nkeep // 8 + 1:
        raise ValueError("output buffer too small")
    cdef uint8_t bit, k
    cdef Py_ssize_t lim = out.shape[0] * 8
    with nogil:
        memset(&out[0], 0, out.shape[0])
        for i in range(n):
            p = bit_offset + i
            k = keep[i] != 0
            bit = ((src[p >> 3] >> (p & 7)) & 1) & k
            if j < lim:
                out[j >> 3] |= bit << (j & 7)
            j += k


def var_kept_bytes(const int64_t[::1] off, Py_ssize_t data_len, const uint8_t[::1] keep):
    """Total bytes of the kept rows of a string/binary array; checks the offsets."""
    cdef Py_ssize_t n = keep.shape[0], i
    cdef int64_t total = 0, a, b
    cdef bint bad = False
    if off.shape[0] < n + 1:
        raise ValueError("offsets shorter than the mask")
    with nogil:
        for i in range(n):
            a = off[i]
            b = off[i + 1]
            if a < 0 or b < a or b > data_len:
                bad = True
                break
            if keep[i]:
                total += b - a
    if bad:
        raise ValueError("corrupt Arrow offsets")
    return total


def filter_var(const int64_t[::1] off, const uint8_t[::1] data, const uint8_t[::1] keep, Py_ssize_t nkeep,
               uint8_t[::1] out_off, int offset_width, uint8_t[::1] out_data):
    """Kept rows of a string/binary array (offsets checked by var_kept_bytes):
    new offsets (int32 or int64 per ``offset_width``) and bytes."""
    cdef Py_ssize_t n = keep.shape[0], i, j = 0
    cdef int64_t a, b, pos = 0
    cdef int64_t total = var_kept_bytes(off, data.shape[0], keep)
    if out_off.shape[0] < (nkeep + 1) * offset_width or out_data.shape[0] < total or count_kept(keep) != nkeep:
        raise ValueError("output buffers do not match the mask")
    if offset_width == 4 and total > 2**31 - 1:
        raise ValueError("filtered data too large for int32 offsets")
    cdef int32_t *o32 = <int32_t *> &out_off[0]
    cdef int64_t *o64 = <int64_t *> &out_off[0]
    cdef uint8_t *nd = &out_data[0] if out_data.shape[0] else NULL
    with nogil:
        if offset_width == 4:
            o32[0] = 0
        else:
            o64[0] = 0
        for i in range(n):
            if keep[i]:
                a = off[i]
                b = off[i + 1]
                if b > a:
                    memcpy(nd + pos, &data[a], b - a)
                pos += b - a
                j += 1
                if offset_width == 4:
                    o32[j] = <int32_t> pos
                else:
                    o64[j] = pos
