# cython: language_level=3
"""Bloom filter kernels: Paimon FastHash (Thomas Wang / XXH64) and BloomFilter64
add / probe over whole columns, GIL released, no Python object per value.

Bit layout (BitSet over bytes): bit i is bit (i & 7) of byte (i >> 3).
Positions: h1 = (int) hash, h2 = (int)(hash >>> 32); for i in 1..k,
c = h1 + i*h2 (32-bit wrap), c = ~c if negative, bit c % numBits.
"""
from libc.stdint cimport uint8_t, int8_t, int16_t, int32_t, int64_t, uint32_t, uint64_t
import numpy as np
cimport numpy as cnp

cdef extern from "xxh64.h":
    uint64_t pf_xxh64(const uint8_t *p, size_t length, uint64_t seed) nogil

cdef extern from "pfhash.h":
    int64_t pf_wang64(int64_t key) nogil
    uint64_t pf_fastmod_m(uint32_t d) nogil
    uint32_t pf_fastmod(uint32_t a, uint64_t M, uint32_t d) nogil

ctypedef fused intlike:
    int8_t
    int16_t
    int32_t
    int64_t

ctypedef fused offset_t:
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


cdef inline void _check_filter(uint8_t[::1] bits, int k) except *:
    if bits.shape[0] == 0 or bits.shape[0] > (1 << 28):
        raise ValueError(f"bloom filter bit set of {bits.shape[0]} bytes is out of range")
    if k < 1:
        raise ValueError(f"number of hash functions {k} must be >= 1")


def wang_hash(const intlike[::1] values):
    """Thomas Wang 64-bit hash of each value sign-extended to a Java long (int64 array)."""
    cdef Py_ssize_t i, n = values.shape[0]
    out = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] o = out
    with nogil:
        for i in range(n):
            o[i] = pf_wang64(<int64_t> values[i])
    return out


def xxh64_hash(const offset_t[::1] offsets, const uint8_t[::1] data, uint64_t seed=0):
    """XXH64 of each variable-width value ``data[offsets[i]:offsets[i+1]]`` (int64 array)."""
    cdef Py_ssize_t i, n = offsets.shape[0] - 1
    if n < 0:
        raise ValueError("offsets needs at least one element")
    _check_offsets(offsets, data.shape[0])
    out = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] o = out
    cdef const uint8_t *d = &data[0] if data.shape[0] else <const uint8_t *> ""
    with nogil:
        for i in range(n):
            o[i] = <int64_t> pf_xxh64(d + offsets[i], offsets[i + 1] - offsets[i], seed)
    return out


cdef _check_offsets(const offset_t[::1] offsets, Py_ssize_t data_len):
    cdef Py_ssize_t i, n = offsets.shape[0]
    cdef bint bad = False
    with nogil:
        if n and offsets[0] < 0:
            bad = True
        for i in range(1, n):
            if offsets[i] < offsets[i - 1]:
                bad = True
                break
        if n and offsets[n - 1] > data_len:
            bad = True
    if bad:
        raise ValueError("variable-width offsets are negative, decreasing or past the data buffer")


def add_longs(uint8_t[::1] bits, int k, const intlike[::1] values, const uint8_t[::1] valid=None):
    """Add Wang-hashed values (rows where ``valid`` is 0 are skipped)."""
    _check_filter(bits, k)
    cdef Py_ssize_t i, n = values.shape[0]
    cdef uint32_t nbits = <uint32_t> (bits.shape[0] * 8)
    cdef uint64_t M = pf_fastmod_m(nbits)
    cdef bint has_valid = valid is not None
    if has_valid and valid.shape[0] != n:
        raise ValueError("validity mask length differs from values")
    with nogil:
        for i in range(n):
            if has_valid and not valid[i]:
                continue
            _set_bits(&bits[0], nbits, M, k, pf_wang64(<int64_t> values[i]))


def add_binary(uint8_t[::1] bits, int k, const offset_t[::1] offsets, const uint8_t[::1] data,
               const uint8_t[::1] valid=None):
    """Add XXH64-hashed variable-width values."""
    _check_filter(bits, k)
    cdef Py_ssize_t i, n = offsets.shape[0] - 1
    if n < 0:
        raise ValueError("offsets needs at least one element")
    _check_offsets(offsets, data.shape[0])
    cdef uint32_t nbits = <uint32_t> (bits.shape[0] * 8)
    cdef uint64_t M = pf_fastmod_m(nbits)
    cdef bint has_valid = valid is not None
    if has_valid and valid.shape[0] != n:
        raise ValueError("validity mask length differs from values")
    cdef const uint8_t *d = &data[0] if data.shape[0] else <const uint8_t *> ""
    with nogil:
        for i in range(n):
            if has_valid and not valid[i]:
                continue
            _set_bits(&bits[0], nbits, M, k, <int64_t> pf_xxh64(d + offsets[i], offsets[i + 1] - offsets[i], 0))


def add_hashes(uint8_t[::1] bits, int k, const int64_t[::1] hashes):
    """Add precomputed 64-bit hashes."""
    _check_filter(bits, k)
    cdef Py_ssize_t i, n = hashes.shape[0]
    cdef uint32_t nbits = <uint32_t> (bits.shape[0] * 8)
    cdef uint64_t M = pf_fastmod_m(nbits)
    with nogil:
        for i in range(n):
            _set_bits(&bits[0], nbits, M, k, hashes[i])


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
    with nogil:
        for i in range(n):
            if has_valid and not valid[i]:
                o[i] = 1
            else:
                o[i] = _test_bits(&bits[0], nbits, M, k, pf_wang64(<int64_t> values[i]))
    return out


def test_binary(const uint8_t[::1] bits, int k, const offset_t[::1] offsets, const uint8_t[::1] data,
                const uint8_t[::1] valid=None):
    """may-contain mask for variable-width values; null rows give True."""
    if bits.shape[0] == 0 or k < 1:
        raise ValueError("empty bloom filter or no hash functions")
    cdef Py_ssize_t i, n = offsets.shape[0] - 1
    if n < 0:
        raise ValueError("offsets needs at least one element")
    _check_offsets(offsets, data.shape[0])
    cdef uint32_t nbits = <uint32_t> (bits.shape[0] * 8)
    cdef uint64_t M = pf_fastmod_m(nbits)
    cdef bint has_valid = valid is not None
    if has_valid and valid.shape[0] != n:
        raise ValueError("validity mask length differs from values")
    out = np.empty(n, dtype=np.bool_)
    cdef uint8_t[::1] o = out.view(np.uint8)
    cdef const uint8_t *d = &data[0] if data.shape[0] else <const uint8_t *> ""
    with nogil:
        for i in range(n):
            if has_valid and not valid[i]:
                o[i] = 1
            else:
                o[i] = _test_bits(&bits[0], nbits, M, k,
                                  <int64_t> pf_xxh64(d + offsets[i], offsets[i + 1] - offsets[i], 0))
    return out


def test_hashes(const uint8_t[::1] bits, int k, const int64_t[::1] hashes):
    """may-contain mask for precomputed hashes."""
    if bits.shape[0] == 0 or k < 1:
        raise ValueError("empty bloom filter or no hash functions")
    cdef Py_ssize_t i, n = hashes.shape[0]
    cdef uint32_t nbits = <uint32_t> (bits.shape[0] * 8)
    cdef uint64_t M = pf_fastmod_m(nbits)
    out = np.empty(n, dtype=np.bool_)
    cdef uint8_t[::1] o = out.view(np.uint8)
    with nogil:
        for i in range(n):
            o[i] = _test_bits(&bits[0], nbits, M, k, hashes[i])
    return out
