# cython: language_level=3
"""Dynamic bucket hash index kernels.

* ``binary_row_hash``: Java ``BinaryRow.hashCode()`` of many key rows at once
  (the BinaryRow bytes are streamed into Paimon's murmur3 variant: 4-byte LE
  words, seed 42, ``h ^= length`` before fmix), FORMAT_NOTES.md section 13.
* ``int_set_order``: the iteration order of fastutil ``IntOpenHashSet`` after
  adding values in order (what ``IntFileUtils.writeInts`` writes).
"""
from libc.stdint cimport uint8_t, uint16_t, uint32_t, int32_t, int64_t, uint64_t
from libc.stdlib cimport calloc, free
from libc.string cimport memcpy
import numpy as np
cimport numpy as cnp

cnp.import_array()

# field kinds (as the dynamic bucket hash index module of tableindex names them)
cdef enum:
    K_FIXED = 0      # slot = raw value of ``width`` bytes at data, zero-extended (width 1/2/4/8)
    K_VAR = 1        # string / binary: offsets in a (int64, n+1) or a32 (int32), bytes in data
    K_DEC_BIG = 2    # decimal precision > 18: (lo, hi) of the 128-bit unscaled value in a / b
    K_TS_BIG = 3     # timestamp precision > 3: millis in a, nano-of-millisecond in b

ctypedef struct Field:
    int kind
    int width
    const int64_t *a
    const int32_t *a32
    const int64_t *b
    const uint8_t *data
    const uint8_t *nulls    # 1 = null, or NULL when no nulls


cdef inline uint32_t rotl32(uint32_t x, int r) noexcept nogil:
    return (x << r) | (x >> (32 - r))


cdef inline uint32_t mix(uint32_t h, uint32_t k) noexcept nogil:
    k *= 0xcc9e2d51u
    k = rotl32(k, 15)
    k *= 0x1b873593u
    h ^= k
    h = rotl32(h, 13)
    return h * 5u + 0xe6546b64u


cdef inline uint32_t fmix(uint32_t h, uint32_t length) noexcept nogil:
    h ^= length
    h ^= h >> 16
    h *= 0x85ebca6bu
    h ^= h >> 13
    h *= 0xc2b2ae35u
    h ^= h >> 16
    return h


cdef inline uint32_t mix64(uint32_t h, uint64_t v) noexcept nogil:
    h = mix(h, <uint32_t> v)
    return mix(h, <uint32_t> (v >> 32))


cdef inline uint32_t load32(const uint8_t *p) noexcept nogil:
    cdef uint32_t v
    memcpy(&v, p, 4)     # little-endian hosts only (checked at import)
    return v


cdef inline uint64_t load_fixed(const Field *fd, Py_ssize_t r) noexcept nogil:
    cdef uint64_t v = 0
    if fd.width == 8:
        memcpy(&v, fd.data + 8 * r, 8)
    elif fd.width == 4:
        v = (<const uint32_t *> fd.data)[r]
    elif fd.width == 2:
        v = (<const uint16_t *> fd.data)[r]
    else:
        v = fd.data[r]
    return v


cdef inline uint32_t mix_bytes_padded(uint32_t h, const uint8_t *p, int64_t n) noexcept nogil:
    """Hash n bytes followed by zero padding up to a multiple of 8."""
    cdef int64_t i = 0, r
    cdef int64_t padded = (n + 7) & ~(<int64_t> 7)
    cdef uint32_t w
    cdef int j
    while i + 4 <= n:
        h = mix(h, load32(p + i))
        i += 4
    r = n - i
    if r > 0:
        w = 0
        for j in range(r):
            w |= (<uint32_t> p[i + j]) << (8 * j)
        h = mix(h, w)
        i += 4
    if i < padded:
        h = mix(h, 0)
    return h


cdef inline int dec_bytes(int64_t lo, int64_t hi, uint8_t *out) noexcept nogil:
    """BigInteger.toByteArray() of the 128-bit value (hi:lo): minimal big-endian
    two's complement; returns its length (1..16)."""
    cdef uint64_t ulo = <uint64_t> lo, uhi = <uint64_t> hi
    cdef int bitlen, nbytes, i
    if hi < 0:
        ulo = ~ulo
        uhi = ~uhi
    if uhi:
        bitlen = 128 - __builtin_clzll(uhi)
    elif ulo:
        bitlen = 64 - __builtin_clzll(ulo)
    else:
        bitlen = 0
    nbytes = bitlen // 8 + 1
    for i in range(nbytes):
        # byte i from the end (little-endian index nbytes-1-i)
        if nbytes - 1 - i < 8:
            out[i] = <uint8_t> ((<uint64_t> lo) >> (8 * (nbytes - 1 - i)))
        else:
            out[i] = <uint8_t> ((<uint64_t> hi) >> (8 * (nbytes - 1 - i - 8)))
    return nbytes


cdef extern from *:
    int __builtin_clzll(unsigned long long) nogil


cdef inline void var_range(const Field *fd, Py_ssize_t r, int64_t *start, int64_t *ln) noexcept nogil:
    if fd.a32 != NULL:
        start[0] = fd.a32[r]
        ln[0] = <int64_t> fd.a32[r + 1] - start[0]
    else:
        start[0] = fd.a[r]
        ln[0] = fd.a[r + 1] - start[0]


cdef void hash_rows(const Field *fields, int nf, Py_ssize_t n, int32_t *out) noexcept nogil:
    cdef int null_words = (nf + 63 + 8) // 64
    cdef int64_t fixed = null_words * 8 + 8 * nf
    cdef uint64_t *hdr = <uint64_t *> calloc(null_words, 8)
    cdef bint any_nulls = False
    cdef Py_ssize_t r
    cdef int f, j, bit, L
    cdef int64_t cursor, start, ln
    cdef uint32_t h
    cdef uint64_t s
    cdef uint8_t dec[16]
    cdef const Field *fd
    for f in range(nf):
        if fields[f].nulls != NULL:
            any_nulls = True
    for r in range(n):
        h = 42
        # header word(s): row kind 0 + null bits
        if any_nulls:
            for j in range(null_words):
                hdr[j] = 0
            for f in range(nf):
                if fields[f].nulls != NULL and fields[f].nulls[r]:
                    bit = f + 8
                    hdr[bit >> 6] |= (<uint64_t> 1) << (bit & 63)
            for j in range(null_words):
                h = mix64(h, hdr[j])
        else:
            for j in range(null_words):  # no-cython-lint (a count: the index is not needed)
                h = mix(h, 0)
                h = mix(h, 0)
        # fixed slots, hashed as they are computed
        cursor = fixed
        for f in range(nf):
            fd = &fields[f]
            if fd.nulls != NULL and fd.nulls[r]:
                if fd.kind == K_DEC_BIG:
                    s = (<uint64_t> cursor) << 32
                    cursor += 16
                elif fd.kind == K_TS_BIG:
                    s = (<uint64_t> cursor) << 32
                    cursor += 8
                else:
                    s = 0
            elif fd.kind == K_FIXED:
                s = load_fixed(fd, r)
            elif fd.kind == K_VAR:
                var_range(fd, r, &start, &ln)
                if ln <= 7:
                    s = 0
                    for j in range(ln):
                        s |= (<uint64_t> fd.data[start + j]) << (8 * j)
                    s |= (<uint64_t> (0x80 | ln)) << 56
                else:
                    s = ((<uint64_t> cursor) << 32) | <uint64_t> ln
                    cursor += (ln + 7) & ~(<int64_t> 7)
            elif fd.kind == K_DEC_BIG:
                L = dec_bytes(fd.a[r], fd.b[r], dec)
                s = ((<uint64_t> cursor) << 32) | <uint64_t> L
                cursor += 16
            else:  # K_TS_BIG
                s = ((<uint64_t> cursor) << 32) | <uint64_t> (<uint32_t> fd.b[r])
                cursor += 8
            h = mix64(h, s)
        # variable-length part, in field order
        if cursor != fixed:
            for f in range(nf):
                fd = &fields[f]
                if fd.kind == K_FIXED:
                    continue
                if fd.nulls != NULL and fd.nulls[r]:
                    if fd.kind == K_DEC_BIG:
                        for j in range(4):  # no-cython-lint (a count: the index is not needed)
                            h = mix(h, 0)
                    elif fd.kind == K_TS_BIG:
                        h = mix(h, 0)
                        h = mix(h, 0)
                    continue
                if fd.kind == K_VAR:
                    var_range(fd, r, &start, &ln)
                    if ln > 7:
                        h = mix_bytes_padded(h, fd.data + start, ln)
                elif fd.kind == K_DEC_BIG:
                    L = dec_bytes(fd.a[r], fd.b[r], dec)
                    for j in range(L, 16):
                        dec[j] = 0
                    for j in range(4):
                        h = mix(h, load32(dec + 4 * j))
                else:
                    h = mix64(h, <uint64_t> fd.a[r])
        out[r] = <int32_t> fmix(h, <uint32_t> cursor)
    free(hdr)


cdef bint offsets_ok(const Field *fd, Py_ssize_t n, Py_ssize_t data_len) noexcept nogil:
    cdef Py_ssize_t r
    cdef int64_t prev, cur
    if fd.a32 != NULL:
        prev = fd.a32[0]
        if prev < 0:
            return False
        for r in range(1, n + 1):
            cur = fd.a32[r]
            if cur < prev:
                return False
            prev = cur
    else:
        prev = fd.a[0]
        if prev < 0:
            return False
        for r in range(1, n + 1):
            cur = fd.a[r]
            if cur < prev:
                return False
            prev = cur
    return prev <= data_len


cdef extern from *:
    """
    static int pf_little_endian(void) { const uint16_t x = 1; return *(const uint8_t *)&x == 1; }
    """
    int pf_little_endian()

if not pf_little_endian():
    raise ImportError("paimon_fast._kernels.hashindex assumes a little-endian CPU")


def binary_row_hash(Py_ssize_t n, list specs):
    """Hash ``n`` rows.  ``specs``: per key field ``(kind, width, a, b, data, nulls)``
    with contiguous numpy arrays (``a`` int64 or int32 offsets, ``b`` int64,
    ``data``/``nulls`` uint8; unused ones None).  Lengths and string offsets
    are checked here before any row is read."""
    cdef int nf = len(specs), f
    cdef Field *fields = <Field *> calloc(nf if nf else 1, sizeof(Field))
    if fields == NULL:
        raise MemoryError()
    out_arr = np.empty(n, dtype=np.int32)
    cdef int32_t[::1] out = out_arr
    cdef cnp.ndarray arr
    cdef Py_ssize_t need
    cdef bint ok
    try:
        for f in range(nf):
            kind, width, a, b, data, nulls = specs[f]
            fields[f].kind = kind
            fields[f].width = width
            for x in (a, b, data, nulls):
                if x is not None and not (<cnp.ndarray> x).flags.c_contiguous:
                    raise ValueError("kernel arrays must be C-contiguous")
            if kind == K_FIXED:
                if width not in (1, 2, 4, 8) or data is None or (<cnp.ndarray> data).nbytes < width * n:
                    raise ValueError("fixed-width key column shorter than the row count")
                fields[f].data = <const uint8_t *> cnp.PyArray_DATA(data)
            elif kind == K_VAR:
                arr = a
                if arr.shape[0] < n + 1 or arr.dtype not in (np.int32, np.int64):
                    raise ValueError("string offsets shorter than the row count")
                if arr.dtype == np.int32:
                    fields[f].a32 = <const int32_t *> cnp.PyArray_DATA(arr)
                else:
                    fields[f].a = <const int64_t *> cnp.PyArray_DATA(arr)
                fields[f].data = <const uint8_t *> cnp.PyArray_DATA(data)
                need = (<cnp.ndarray> data).nbytes
                with nogil:
                    ok = offsets_ok(&fields[f], n, need)
                if not ok:
                    raise ValueError("string offsets are not increasing or run past the data buffer")
            else:
                if (<cnp.ndarray> a).shape[0] < n or (<cnp.ndarray> b).shape[0] < n:
                    raise ValueError("key column shorter than the row count")
                fields[f].a = <const int64_t *> cnp.PyArray_DATA(a)
                fields[f].b = <const int64_t *> cnp.PyArray_DATA(b)
            if nulls is not None:
                if (<cnp.ndarray> nulls).shape[0] < n:
                    raise ValueError("null mask shorter than the row count")
                fields[f].nulls = <const uint8_t *> cnp.PyArray_DATA(nulls)
        if n:
            with nogil:
                hash_rows(fields, nf, n, &out[0])
    finally:
        free(fields)
    return out_arr


# ---------------------------------------------------------------- fastutil IntOpenHashSet

cdef inline uint32_t phi_mix(int32_t x) noexcept nogil:
    cdef uint32_t h = (<uint32_t> x) * 0x9E3779B9u
    return h ^ (h >> 16)


cdef int64_t array_size(int64_t expected) noexcept nogil:
    """fastutil HashCommon.arraySize(expected, 0.75): max(2, nextPow2(ceil(expected / 0.75)))."""
    cdef int64_t need = (expected * 4 + 2) // 3      # ceil(expected / 0.75)
    cdef int64_t s = 1
    while s < need:
        s <<= 1
    return s if s > 2 else 2


cdef inline int64_t max_fill(int64_t n) noexcept nogil:
    """min(ceil(n * 0.75), n - 1)."""
    cdef int64_t m = (n * 3 + 3) // 4
    return m if m < n - 1 else n - 1


def int_set_order(const int32_t[::1] values, Py_ssize_t expected=16):
    """Iteration order of ``new IntOpenHashSet(expected)`` after ``add`` of each
    value in order: 0 first (if present), then table slots from high to low."""
    cdef Py_ssize_t n = values.shape[0], i, j
    if expected < 0:
        raise ValueError("expected size must be >= 0")
    cdef int64_t cap = array_size(expected)
    if cap > (1 << 30) or n > (1 << 30):
        raise ValueError("too many values for a Java IntOpenHashSet")
    cdef int32_t *key = <int32_t *> calloc(cap, 4)
    cdef int32_t *nk
    cdef int64_t mask = cap - 1, mf = max_fill(cap), size = 0, pos, newcap, k
    cdef bint has_zero = False, failed = False
    cdef int32_t v
    if key == NULL:
        raise MemoryError()
    with nogil:
        for i in range(n):
            v = values[i]
            if v == 0:
                if has_zero:
                    continue
                has_zero = True
            else:
                pos = phi_mix(v) & mask
                while key[pos] != 0 and key[pos] != v:
                    pos = (pos + 1) & mask
                if key[pos] == v:
                    continue
                key[pos] = v
            size += 1
            if size - 1 >= mf:
                newcap = array_size(size + 1)
                nk = <int32_t *> calloc(newcap, 4)
                if nk == NULL:
                    failed = True
                    break
                # re-insert from the highest old slot down (fastutil rehash)
                j = cap
                for k in range(size - (1 if has_zero else 0)):  # no-cython-lint (a count: the index is not needed)
                    j -= 1
                    while key[j] == 0:
                        j -= 1
                    pos = phi_mix(key[j]) & (newcap - 1)
                    while nk[pos] != 0:
                        pos = (pos + 1) & (newcap - 1)
                    nk[pos] = key[j]
                free(key)
                key = nk
                cap = newcap
                mask = cap - 1
                mf = max_fill(cap)
    if failed:
        free(key)
        raise MemoryError()
    out_arr = np.empty(size, dtype=np.int32)
    cdef int32_t[::1] out = out_arr
    cdef Py_ssize_t o = 0
    with nogil:
        if has_zero:
            out[0] = 0
            o = 1
        j = cap
        while j > 0:
            j -= 1
            if key[j] != 0:
                out[o] = key[j]
                o += 1
    free(key)
    return out_arr
