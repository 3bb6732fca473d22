# cython: language_level=3
"""Bloom filter kernels: Paimon FastHash (Thomas Wang / XXH64) and BloomFilter64
add / probe over whole columns, GIL released, no Python object per value.

Bit layout (BitSet over bytes): bit i is bit (i & 7) of byte (i >> 3).
Positions: h1 = (int) hash, h2 = (int)(hash >>> 32); for i in 1..k,
c = h1 + i*h2 (32-bit wrap), c = ~c if negative, bit c % numBits.
"""
from libc.stdint cimport uint8_t, int8_t, int16_t, int32_t, int64_t, uint32_t, uint64_t
import numpy as np

from paimon_fast._kernels._common cimport check_offsets, offset_t

cdef extern from "xxh64.h":
    uint64_t pf_xxh64(const uint8_t *p, size_t length, uint64_t seed) nogil
    void pf_xxh64_offsets32(const int32_t *off, const uint8_t *data, size_t m, int64_t *out) nogil
    void pf_xxh64_offsets64(const int64_t *off, const uint8_t *data, size_t m, int64_t *out) nogil

cdef extern from "bloompos.h":
    void pf_bloom_positions(const int64_t *h, size_t n, int k, uint32_t nbits, uint32_t *out) nogil
    void pf_bloom_positions_at(const int64_t *h, size_t n, int k, uint32_t nbits, uint32_t *out, int simd) nogil
    void pf_wang64_block(const int64_t *values, size_t n, int64_t *out) nogil
    void pf_wang64_block_at(const int64_t *values, size_t n, int64_t *out, int simd) nogil
    void pf_bloom_set(uint8_t *bits, uint32_t wbits, uint32_t p) nogil
    void pf_bloom_set_block_words(uint8_t *bits, const uint32_t *pos, size_t m, int k) nogil

cdef extern from "pfhash.h":
    int64_t pf_wang64(int64_t key) nogil
    uint64_t pf_fastmod_m(uint32_t d) nogil
    uint32_t pf_fastmod(uint32_t a, uint64_t M, uint32_t d) nogil

ctypedef fused intlike:
    int8_t
    int16_t
    int32_t
    int64_t


cdef inline void _set_bits(uint8_t *bits, uint32_t nbits, uint64_t M, int k, int64_t h) noexcept nogil:
    cdef int32_t h1 = <int32_t> h
    cdef int32_t h2 = <int32_t> (<uint64_t> h >> 32)
    cdef int32_t c
    cdef uint32_t pos
    cdef int i
    for i in range(1, k + 1):
        c = <int32_t> (<uint32_t> h1 + <uint32_t> i * <uint32_t> h2)
        if c < 0:
            c = ~c
        pos = pf_fastmod(<uint32_t> c, M, nbits)
        bits[pos >> 3] |= <uint8_t> (1 << (pos & 7))


DEF BLOCK = 64
DEF MAXK = 8
# Variable-width values are hashed this many at a time (a run of equal lengths in one
# straight-line loop), then their bits set.
DEF HBLOCK = 256
# Bit sets up to this many bits stay in a core's L2 (1 MiB here) or close to it: their
# random reads and writes overlap in the out-of-order core and software prefetches only
# add instructions (measured 9.9 vs 11.2 ms for 1e6 adds into 1.2 MB); above it, every
# block's lines are prefetched before they are touched (18 vs 57 ms into 12 MB).
DEF PREFETCH_MIN_BITS = 16 * 1024 * 1024

cdef extern from *:
    """
    #define PF_PREFETCH_W(p) __builtin_prefetch((p), 1, 0)
    #define PF_PREFETCH_R(p) __builtin_prefetch((p), 0, 0)
    """
    void PF_PREFETCH_W(const void *p) nogil
    void PF_PREFETCH_R(const void *p) nogil


cdef void _add_block(uint8_t *bits, uint32_t nbits, bint words, uint64_t M, int k, const int64_t *hashes,
                     Py_ssize_t n) noexcept nogil:
    """Set the bits of n hashes: the positions of a block first (vector code), then each
    bit set through its 32-bit word; ``words`` says the buffer holds the whole last word
    (see :func:`_filter_bits`), else bits of a partly held last word are set byte-wise.
    For bit sets beyond the cache the block's lines are prefetched in between.  1e6
    BIGINT adds, k = 7, into 1.2 MB (C loop, minimum of 100 runs): separate (offset,
    mask) arrays 16.0 ms; word and mask taken from the position as it is set 13.4 ms,
    12.1 ms with the tail test marked unlikely, 11.3 ms without any test and with k a
    constant (pf_bloom_set_block_words)."""
    cdef uint32_t pos[BLOCK * 8]
    cdef uint32_t wbits = (nbits >> 5) << 5
    cdef Py_ssize_t start, i, j, m
    if k > MAXK:
        for i in range(n):
            _set_bits(bits, nbits, M, k, hashes[i])
        return
    start = 0
    while start < n:
        m = n - start if n - start < BLOCK else BLOCK
        pf_bloom_positions(hashes + start, m, k, nbits, pos)
        if nbits > PREFETCH_MIN_BITS:
            for i in range(m):
                for j in range(k):
                    PF_PREFETCH_W(&bits[pos[i * 8 + j] >> 3])
        if words:
            pf_bloom_set_block_words(bits, pos, m, k)
        else:
            for i in range(m):
                for j in range(k):
                    pf_bloom_set(bits, wbits, pos[i * 8 + j])
        start += m


cdef void _test_block(const uint8_t *bits, uint32_t nbits, uint64_t M, int k, const int64_t *hashes,
                      Py_ssize_t n, uint8_t *out) noexcept nogil:
    """Probe n hashes into out[0..n): positions of a block first (prefetched for bit
    sets beyond the cache), then tested."""
    cdef uint32_t pos[BLOCK * 8]
    cdef uint32_t p
    cdef Py_ssize_t start, i, j, m
    cdef uint8_t ok
    if k > MAXK:
        for i in range(n):
            out[i] = _test_bits(bits, nbits, M, k, hashes[i])
        return
    start = 0
    while start < n:
        m = n - start if n - start < BLOCK else BLOCK
        pf_bloom_positions(hashes + start, m, k, nbits, pos)
        if nbits > PREFETCH_MIN_BITS:
            for i in range(m):
                for j in range(k):
                    PF_PREFETCH_R(&bits[pos[i * 8 + j] >> 3])
        for i in range(m):
            ok = 1
            for j in range(k):
                p = pos[i * 8 + j]
                ok &= (bits[p >> 3] >> (p & 7)) & 1
            out[start + i] = ok
        start += m


cdef inline bint _test_bits(const uint8_t *bits, uint32_t nbits, uint64_t M, int k, int64_t h) noexcept nogil:
    cdef int32_t h1 = <int32_t> h
    cdef int32_t h2 = <int32_t> (<uint64_t> h >> 32)
    cdef int32_t c
    cdef uint32_t pos
    cdef int i
    for i in range(1, k + 1):
        c = <int32_t> (<uint32_t> h1 + <uint32_t> i * <uint32_t> h2)
        if c < 0:
            c = ~c
        pos = pf_fastmod(<uint32_t> c, M, nbits)
        if not (bits[pos >> 3] >> (pos & 7)) & 1:
            return False
    return True


cdef inline uint32_t _filter_bits(uint8_t[::1] bits, int k, Py_ssize_t nbits, bint *words) except? 0:
    """The filter's size in bits: ``nbits``, or all of ``bits`` when it is -1.  A writer
    may pass a buffer padded past the filter to whole 32-bit words (``words`` is then set:
    every bit is set through a word, with no test for a partly held last word); the
    padding is never written, so the filter's bytes stay ``bits[:nbits // 8]``."""
    if k < 1:
        raise ValueError(f"number of hash functions {k} must be >= 1")
    if nbits < 0:
        nbits = bits.shape[0] * 8
    if nbits == 0 or nbits % 8 or nbits > (1 << 31) or nbits > bits.shape[0] * 8:
        raise ValueError(f"bloom filter of {nbits} bits in a buffer of {bits.shape[0]} bytes is out of range")
    words[0] = (bits.shape[0] >> 2) << 5 >= nbits
    return <uint32_t> nbits


cdef inline Py_ssize_t _hash_binary(const offset_t[::1] offsets, const uint8_t *d, Py_ssize_t start,
                                    Py_ssize_t m, const uint8_t *valid, int64_t *out) noexcept nogil:
    """Seed-0 XXH64 of values start .. start+m-1 into out; with a ``valid`` mask (else
    NULL) only the valid ones are kept, in order.  Returns how many hashes out holds."""
    cdef Py_ssize_t i, j
    if offset_t is int32_t:
        pf_xxh64_offsets32(&offsets[start], d, m, out)
    else:
        pf_xxh64_offsets64(&offsets[start], d, m, out)
    if valid == NULL:
        return m
    j = 0
    for i in range(m):
        if valid[start + i]:
            out[j] = out[i]
            j += 1
    return j


def wang_hash(const intlike[::1] values):
    """Thomas Wang 64-bit hash of each value sign-extended to a Java long (int64 array)."""
    cdef Py_ssize_t i, n = values.shape[0]
    out = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] o = out
    with nogil:
        if intlike is int64_t:
            if n:
                pf_wang64_block(<const int64_t *> &values[0], n, &o[0])
        else:
            for i in range(n):
                o[i] = pf_wang64(<int64_t> values[i])
    return out


def xxh64_hash(const offset_t[::1] offsets, const uint8_t[::1] data, uint64_t seed=0):
    """XXH64 of each variable-width value ``data[offsets[i]:offsets[i+1]]`` (int64 array)."""
    cdef Py_ssize_t i, n = offsets.shape[0] - 1
    if n < 0:
        raise ValueError("offsets needs at least one element")
    check_offsets(offsets, data.shape[0])
    out = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] o = out
    cdef const uint8_t *d = &data[0] if data.shape[0] else <const uint8_t *> ""
    cdef Py_ssize_t s0 = 0
    with nogil:
        if seed == 0:
            while s0 < n:
                i = n - s0 if n - s0 < HBLOCK else HBLOCK
                _hash_binary(offsets, d, s0, i, NULL, &o[s0])
                s0 += i
        else:
            for i in range(n):
                o[i] = <int64_t> pf_xxh64(d + offsets[i], offsets[i + 1] - offsets[i], seed)
    return out


def add_longs(uint8_t[::1] bits, int k, const intlike[::1] values, const uint8_t[::1] valid=None,
              Py_ssize_t nbits=-1):
    """Add Wang-hashed values (rows where ``valid`` is 0 are skipped) to a filter of
    ``nbits`` bits (-1: all of ``bits``; see :func:`_filter_bits`)."""
    cdef bint words
    cdef uint32_t fbits = _filter_bits(bits, k, nbits, &words)
    cdef Py_ssize_t i, n = values.shape[0]
    cdef uint64_t M = pf_fastmod_m(fbits)
    cdef bint has_valid = valid is not None
    if has_valid and valid.shape[0] != n:
        raise ValueError("validity mask length differs from values")
    cdef int64_t hbuf[BLOCK]
    cdef Py_ssize_t m = 0
    with nogil:
        if intlike is int64_t and not has_valid:
            # no nulls: hash whole blocks with the vector hash
            while m < n:
                i = n - m if n - m < BLOCK else BLOCK
                pf_wang64_block(<const int64_t *> &values[m], i, hbuf)
                _add_block(&bits[0], fbits, words, M, k, hbuf, i)
                m += i
        else:
            for i in range(n):
                if has_valid and not valid[i]:
                    continue
                hbuf[m] = pf_wang64(<int64_t> values[i])
                m += 1
                if m == BLOCK:
                    _add_block(&bits[0], fbits, words, M, k, hbuf, m)
                    m = 0
            _add_block(&bits[0], fbits, words, M, k, hbuf, m)


def add_binary(uint8_t[::1] bits, int k, const offset_t[::1] offsets, const uint8_t[::1] data,
               const uint8_t[::1] valid=None, Py_ssize_t nbits=-1):
    """Add XXH64-hashed variable-width values to a filter of ``nbits`` bits (as
    :func:`add_longs`)."""
    cdef bint words
    cdef uint32_t fbits = _filter_bits(bits, k, nbits, &words)
    cdef Py_ssize_t i, n = offsets.shape[0] - 1
    if n < 0:
        raise ValueError("offsets needs at least one element")
    check_offsets(offsets, data.shape[0])
    cdef uint64_t M = pf_fastmod_m(fbits)
    cdef bint has_valid = valid is not None
    if has_valid and valid.shape[0] != n:
        raise ValueError("validity mask length differs from values")
    cdef const uint8_t *d = &data[0] if data.shape[0] else <const uint8_t *> ""
    cdef const uint8_t *vp = &valid[0] if has_valid and n else NULL
    cdef int64_t hbuf[HBLOCK]
    cdef Py_ssize_t s0 = 0, m
    with nogil:
        # hash a block, then set its bits: each loop stays tight
        while s0 < n:
            i = n - s0 if n - s0 < HBLOCK else HBLOCK
            m = _hash_binary(offsets, d, s0, i, vp, hbuf)
            _add_block(&bits[0], fbits, words, M, k, hbuf, m)
            s0 += i


def add_hashes(uint8_t[::1] bits, int k, const int64_t[::1] hashes, Py_ssize_t nbits=-1):
    """Add precomputed 64-bit hashes to a filter of ``nbits`` bits (as :func:`add_longs`)."""
    cdef bint words
    cdef uint32_t fbits = _filter_bits(bits, k, nbits, &words)
    cdef Py_ssize_t n = hashes.shape[0]
    cdef uint64_t M = pf_fastmod_m(fbits)
    with nogil:
        _add_block(&bits[0], fbits, words, M, k, &hashes[0] if n else NULL, n)


def test_longs(const uint8_t[::1] bits, int k, const intlike[::1] values, const uint8_t[::1] valid=None):
    """may-contain mask (numpy bool) for each value; invalid (null) rows give True."""
    if bits.shape[0] == 0 or k < 1:
        raise ValueError("empty bloom filter or no hash functions")
    cdef Py_ssize_t i, n = values.shape[0]
    cdef uint32_t nbits = <uint32_t> (bits.shape[0] * 8)
    cdef uint64_t M = pf_fastmod_m(nbits)
    cdef bint has_valid = valid is not None
    if has_valid and valid.shape[0] != n:
        raise ValueError("validity mask length differs from values")
    out = np.empty(n, dtype=np.bool_)
    cdef uint8_t[::1] o = out.view(np.uint8)
    cdef int64_t hbuf[BLOCK]
    cdef Py_ssize_t s0, m
    with nogil:
        s0 = 0
        while s0 < n:
            m = n - s0 if n - s0 < BLOCK else BLOCK
            if intlike is int64_t:
                pf_wang64_block(<const int64_t *> &values[s0], m, hbuf)
            else:
                for i in range(m):
                    hbuf[i] = pf_wang64(<int64_t> values[s0 + i])
            _test_block(&bits[0], nbits, M, k, hbuf, m, &o[s0])
            if has_valid:
                for i in range(m):
                    if not valid[s0 + i]:
                        o[s0 + i] = 1
            s0 += m
    return out


def test_binary(const uint8_t[::1] bits, int k, const offset_t[::1] offsets, const uint8_t[::1] data,
                const uint8_t[::1] valid=None):
    """may-contain mask for variable-width values; null rows give True."""
    if bits.shape[0] == 0 or k < 1:
        raise ValueError("empty bloom filter or no hash functions")
    cdef Py_ssize_t i, n = offsets.shape[0] - 1
    if n < 0:
        raise ValueError("offsets needs at least one element")
    check_offsets(offsets, data.shape[0])
    cdef uint32_t nbits = <uint32_t> (bits.shape[0] * 8)
    cdef uint64_t M = pf_fastmod_m(nbits)
    cdef bint has_valid = valid is not None
    if has_valid and valid.shape[0] != n:
        raise ValueError("validity mask length differs from values")
    out = np.empty(n, dtype=np.bool_)
    cdef uint8_t[::1] o = out.view(np.uint8)
    cdef const uint8_t *d = &data[0] if data.shape[0] else <const uint8_t *> ""
    cdef int64_t hbuf[HBLOCK]
    cdef Py_ssize_t s0, m
    with nogil:
        s0 = 0
        while s0 < n:
            m = n - s0 if n - s0 < HBLOCK else HBLOCK
            _hash_binary(offsets, d, s0, m, NULL, hbuf)
            _test_block(&bits[0], nbits, M, k, hbuf, m, &o[s0])
            if has_valid:
                for i in range(m):
                    if not valid[s0 + i]:
                        o[s0 + i] = 1
            s0 += m
    return out


def test_hashes(const uint8_t[::1] bits, int k, const int64_t[::1] hashes):
    """may-contain mask for precomputed hashes."""
    if bits.shape[0] == 0 or k < 1:
        raise ValueError("empty bloom filter or no hash functions")
    cdef Py_ssize_t n = hashes.shape[0]
    cdef uint32_t nbits = <uint32_t> (bits.shape[0] * 8)
    cdef uint64_t M = pf_fastmod_m(nbits)
    out = np.empty(n, dtype=np.bool_)
    cdef uint8_t[::1] o = out.view(np.uint8)
    with nogil:
        if n:
            _test_block(&bits[0], nbits, M, k, &hashes[0], n, &o[0])
    return out


def _wang(const int64_t[::1] values, int simd=-1):
    """Wang hashes of int64 values through the block path ``simd`` caps (-1 best available,
    0 scalar, 1 AVX2, 2 AVX-512); for tests."""
    out = np.empty(values.shape[0], dtype=np.int64)
    cdef int64_t[::1] o = out
    if values.shape[0]:
        with nogil:
            pf_wang64_block_at(&values[0], values.shape[0], &o[0], simd)
    return out


def _positions(const int64_t[::1] hashes, int k, uint32_t nbits, int simd=-1):
    """Bit positions of each hash as the add / probe blocks compute them ((n, k) uint32),
    through the path ``simd`` caps (-1 best available, 0 scalar, 1 AVX2, 2 AVX-512); for tests."""
    if k < 1 or k > MAXK or nbits == 0:
        raise ValueError("k must be in [1, 8] and nbits > 0")
    cdef Py_ssize_t n = hashes.shape[0]
    out = np.zeros((n, 8), dtype=np.uint32)
    cdef uint32_t[:, ::1] o = out
    if n:
        with nogil:
            pf_bloom_positions_at(&hashes[0], n, k, nbits, &o[0, 0], simd)
    return out[:, :k]
