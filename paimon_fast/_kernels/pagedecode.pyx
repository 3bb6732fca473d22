# cython: language_level=3
"""Parquet data-page kernels: only the wanted values of one decompressed page.

Used by :mod:`paimon_fast.parquet.pages` (flat columns).  Each function walks the
page's encoded bytes in ``buf[start:end]`` up to the last wanted value and no
further, checks every length and offset it reads against ``end`` and raises
:class:`~paimon_fast.errors.IndexFormatError` (what, and the offset in ``buf``)
for bytes that are not a valid encoding.  ``wanted`` is a sorted (non-decreasing,
repeats allowed) int64 array of value numbers inside the page.  The pure-Python
twin with the same functions is :mod:`paimon_fast.reference.pagedecode`.

* :func:`def_levels`: definition levels (RLE / bit-packed hybrid, bit width 1,
  max level 1) -> for each wanted row, is it non-null, and how many non-null
  values come before it (its index among the page's values);
* :func:`hybrid_gather`: the values at wanted indexes of an RLE / bit-packed hybrid
  run sequence (dictionary indexes, RLE booleans);
* :func:`ba_walk`: where the wanted values of a PLAIN BYTE_ARRAY sequence are
  (walking the 4-byte length prefixes);
* :func:`gather`: the byte strings ``buf[starts[i]:starts[i] + lens[i]]`` picked by an
  index array (-1: an empty string for a null), as Arrow offsets and data.
"""
from libc.stdint cimport uint8_t, uint32_t, int64_t, uint64_t
from libc.string cimport memcpy
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING
import numpy as np

from paimon_fast.errors import IndexFormatError

cdef extern from *:
    int __builtin_popcount(unsigned int) nogil

cdef enum:
    OK = 0
    E_TRUNC = 1      # a run header or its data runs past the end
    E_VARINT = 2     # a run header varint longer than 10 bytes
    E_SHORT = 3      # the runs end before the wanted value
    E_LEVEL = 4      # a definition level above the maximum
    E_WANTED = 5     # a wanted value past the page's values
    E_LEN = 6        # a byte-array length past the end


cdef inline int _varint(const uint8_t *b, Py_ssize_t *pos, Py_ssize_t end, uint64_t *out) noexcept nogil:
    cdef uint64_t v = 0
    cdef int shift = 0
    cdef uint8_t c
    while True:
        if pos[0] >= end:
            return E_TRUNC
        if shift > 63:
            return E_VARINT
        c = b[pos[0]]
        pos[0] += 1
        v |= (<uint64_t>(c & 0x7F)) << shift
        if not (c & 0x80):
            break
        shift += 7
    out[0] = v
    return OK


cdef inline int _run(const uint8_t *b, Py_ssize_t *pos, Py_ssize_t end, int bw, int64_t *count,
                     bint *packed, uint64_t *value, Py_ssize_t *data) noexcept nogil:
    """One run header at ``pos``: its value count, kind, RLE value or bit-packed data start;
    ``pos`` moves past the run."""
    cdef uint64_t h, groups, nbytes
    cdef int e = _varint(b, pos, end, &h)
    cdef int k, vb
    if e:
        return e
    if h & 1:
        groups = h >> 1
        nbytes = groups * <uint64_t>bw
        if (bw and groups > <uint64_t>(end - pos[0])) or groups > (<uint64_t>1 << 59) \
                or nbytes > <uint64_t>(end - pos[0]):
            return E_TRUNC
        packed[0] = True
        count[0] = <int64_t>(groups * 8)
        data[0] = pos[0]
        pos[0] += <Py_ssize_t>nbytes
    else:
        vb = (bw + 7) >> 3
        if vb > end - pos[0]:
            return E_TRUNC
        if (h >> 1) > (<uint64_t>1 << 62):
            return E_TRUNC
        packed[0] = False
        count[0] = <int64_t>(h >> 1)
        value[0] = 0
        for k in range(vb):
            value[0] |= (<uint64_t>b[pos[0] + k]) << (8 * k)
        pos[0] += vb
    return OK


cdef inline uint64_t _bits(const uint8_t *b, Py_ssize_t data, int64_t k, int bw) noexcept nogil:
    """Value ``k`` of a bit-packed run starting at ``data`` (LSB first)."""
    cdef uint64_t bit = <uint64_t>k * <uint64_t>bw
    cdef Py_ssize_t at = data + <Py_ssize_t>(bit >> 3)
    cdef int sh = <int>(bit & 7)
    cdef int need = (sh + bw + 7) >> 3
    cdef uint64_t v = 0
    cdef int i
    for i in range(need):
        v |= (<uint64_t>b[at + i]) << (8 * i)
    v >>= sh
    if bw < 64:
        v &= ((<uint64_t>1) << bw) - 1
    return v


cdef inline int _next_run(const uint8_t *b, Py_ssize_t *pos, Py_ssize_t end, int bw, int64_t w, int64_t nvals,
                          int64_t base, int64_t *count, bint *packed, uint64_t *value, Py_ssize_t *data,
                          int64_t *detail) noexcept nogil:
    """The run holding wanted row ``w`` onwards (rows ``base..`` of ``nvals``): checks ``w``, reads
    the run's header (its count clamped to the rows left); an error code, ``detail`` what failed."""
    if w < 0 or w >= nvals:
        detail[0] = w
        return E_WANTED
    if pos[0] >= end:
        detail[0] = w
        return E_SHORT
    cdef int e = _run(b, pos, end, bw, count, packed, value, data)
    if e:
        return e
    if count[0] > nvals - base:
        count[0] = nvals - base
    return OK


def _fail(int e, str what, Py_ssize_t at, int64_t detail):
    msg = {E_TRUNC: "a run runs past the end of the encoded data",
           E_VARINT: "a run header longer than 10 bytes",
           E_SHORT: f"the runs end before value {detail}",
           E_LEVEL: f"a definition level of {detail} (the maximum is 1)",
           E_WANTED: f"value {detail} asked for, past the page's values",
           E_LEN: f"a value length of {detail} runs past the end of the page"}[e]
    raise IndexFormatError(f"Parquet {what}: {msg}", at)


def def_levels(const uint8_t[::1] buf, Py_ssize_t start, Py_ssize_t end, int64_t nvals,
               const int64_t[::1] wanted):
    """``(valid uint8[n], index int64[n])`` for the wanted rows of definition levels (bit width 1)
    in ``buf[start:end]`` covering ``nvals`` rows: the row's level is 1, and how many rows
    before it have level 1."""
    cdef Py_ssize_t n = wanted.shape[0]
    valid_a = np.zeros(n, dtype=np.uint8)
    index_a = np.zeros(n, dtype=np.int64)
    cdef uint8_t[::1] valid = valid_a
    cdef int64_t[::1] index = index_a
    if start < 0 or end > buf.shape[0] or start > end:
        raise IndexFormatError("Parquet definition levels: range outside the page", start)
    cdef const uint8_t *b = &buf[0] if buf.shape[0] else NULL
    cdef Py_ssize_t pos = start, data = 0, i = 0
    cdef int64_t base = 0, ones = 0, count, cur, cur_ones, k
    cdef uint64_t value = 0
    cdef bint packed = False
    cdef int e = OK
    cdef int64_t detail = 0
    with nogil:
        while i < n:
            e = _next_run(b, &pos, end, 1, wanted[i], nvals, base, &count, &packed, &value, &data, &detail)
            if e:
                break
            if not packed:
                if value > 1:
                    e, detail = E_LEVEL, <int64_t>value
                    break
                while i < n and wanted[i] < base + count:
                    valid[i] = <uint8_t>value
                    index[i] = ones + (wanted[i] - base if value else 0)
                    i += 1
                if value:
                    ones += count
            else:
                cur = 0
                cur_ones = 0
                while True:
                    # the next stop: a wanted row in this run, or the run's end
                    if i < n and wanted[i] < base + count:
                        k = wanted[i] - base
                    else:
                        k = count
                    while cur < k and (cur & 7):
                        cur_ones += (b[data + (cur >> 3)] >> (cur & 7)) & 1
                        cur += 1
                    while cur + 8 <= k:
                        cur_ones += __builtin_popcount(b[data + (cur >> 3)])
                        cur += 8
                    while cur < k:
                        cur_ones += (b[data + (cur >> 3)] >> (cur & 7)) & 1
                        cur += 1
                    if k == count:
                        break
                    valid[i] = (b[data + (k >> 3)] >> (k & 7)) & 1
                    index[i] = ones + cur_ones
                    i += 1
                ones += cur_ones
            base += count
    if e:
        _fail(e, "definition levels", pos, detail)
    return valid_a, index_a


def hybrid_gather(const uint8_t[::1] buf, Py_ssize_t start, Py_ssize_t end, int bit_width, int64_t nvals,
                  const int64_t[::1] wanted):
    """uint32 values at the wanted indexes (< ``nvals``) of the RLE / bit-packed hybrid runs of
    ``bit_width`` (0..32) bits in ``buf[start:end]``."""
    cdef Py_ssize_t n = wanted.shape[0]
    out_a = np.zeros(n, dtype=np.uint32)
    cdef uint32_t[::1] out = out_a
    if bit_width < 0 or bit_width > 32:
        raise IndexFormatError(f"Parquet RLE / bit-packed data with a bit width of {bit_width}", start)
    if start < 0 or end > buf.shape[0] or start > end:
        raise IndexFormatError("Parquet RLE / bit-packed data: range outside the page", start)
    cdef const uint8_t *b = &buf[0] if buf.shape[0] else NULL
    cdef Py_ssize_t pos = start, data = 0, i = 0
    cdef int64_t base = 0, count
    cdef uint64_t value = 0
    cdef bint packed = False
    cdef int e = OK
    cdef int64_t detail = 0
    with nogil:
        while i < n:
            e = _next_run(b, &pos, end, bit_width, wanted[i], nvals, base, &count, &packed, &value, &data, &detail)
            if e:
                break
            if packed:
                while i < n and wanted[i] < base + count:
                    out[i] = <uint32_t>_bits(b, data, wanted[i] - base, bit_width)
                    i += 1
            else:
                while i < n and wanted[i] < base + count:
                    out[i] = <uint32_t>value
                    i += 1
            base += count
    if e:
        _fail(e, "RLE / bit-packed data", pos, detail)
    return out_a


def ba_walk(const uint8_t[::1] buf, Py_ssize_t start, Py_ssize_t end, int64_t nvals, const int64_t[::1] wanted):
    """``(starts int64[n], lens int64[n])`` of the wanted values (< ``nvals``) of PLAIN BYTE_ARRAY
    values (4-byte little-endian length, then the bytes) in ``buf[start:end]``."""
    cdef Py_ssize_t n = wanted.shape[0]
    starts_a = np.zeros(n, dtype=np.int64)
    lens_a = np.zeros(n, dtype=np.int64)
    cdef int64_t[::1] starts = starts_a
    cdef int64_t[::1] lens = lens_a
    if start < 0 or end > buf.shape[0] or start > end:
        raise IndexFormatError("Parquet BYTE_ARRAY values: range outside the page", start)
    cdef const uint8_t *b = &buf[0] if buf.shape[0] else NULL
    cdef Py_ssize_t pos = start, i = 0
    cdef int64_t idx = 0, w = 0
    cdef uint64_t ln = 0
    cdef int e = OK
    cdef int64_t detail = 0
    with nogil:
        while i < n:
            w = wanted[i]
            if w < 0 or w >= nvals:
                e, detail = E_WANTED, w
                break
            while True:
                if end - pos < 4:
                    e, detail = E_SHORT, idx
                    break
                ln = (<uint64_t>b[pos]) | (<uint64_t>b[pos + 1] << 8) | (<uint64_t>b[pos + 2] << 16) | \
                     (<uint64_t>b[pos + 3] << 24)
                if ln > <uint64_t>(end - pos - 4):
                    e, detail = E_LEN, <int64_t>ln
                    break
                if idx == w:
                    break
                pos += 4 + <Py_ssize_t>ln
                idx += 1
            if e:
                break
            starts[i] = pos + 4
            lens[i] = <int64_t>ln
            i += 1
    if e:
        _fail(e, "BYTE_ARRAY values", pos, detail)
    return starts_a, lens_a


def gather(const uint8_t[::1] buf, const int64_t[::1] starts, const int64_t[::1] lens, const int64_t[::1] idx):
    """``(offsets int64[n + 1], data bytes)``: value ``i`` is ``buf[starts[idx[i]]:][:lens[idx[i]]]``,
    empty where ``idx[i]`` is -1."""
    cdef Py_ssize_t n = idx.shape[0], m = starts.shape[0], j
    cdef Py_ssize_t size = buf.shape[0]
    if lens.shape[0] != m:
        raise ValueError("starts and lens differ in length")
    offsets_a = np.zeros(n + 1, dtype=np.int64)
    cdef int64_t[::1] offsets = offsets_a
    cdef int64_t total = 0, k = 0
    cdef int err = 0
    with nogil:
        for j in range(n):
            k = idx[j]
            if k >= m or k < -1:
                err = 1
                break
            if k >= 0:
                if starts[k] < 0 or lens[k] < 0 or starts[k] > size or lens[k] > size - starts[k]:
                    err = 2
                    break
                total += lens[k]
            offsets[j + 1] = total
    if err == 1:
        raise IndexFormatError(f"Parquet dictionary index {k} out of range (a dictionary of {m} values)", None)
    if err == 2:
        raise IndexFormatError(f"byte range of value {k} outside the {size}-byte buffer", starts[k])
    out = PyBytes_FromStringAndSize(NULL, total)
    cdef char *o = PyBytes_AS_STRING(out)
    cdef const uint8_t *b = &buf[0] if size else NULL
    with nogil:
        for j in range(n):
            k = idx[j]
            if k >= 0 and lens[k]:
                memcpy(o + offsets[j], b + starts[k], <size_t>lens[k])
    return offsets_a, out


def snappy_prefix(const uint8_t[::1] src, Py_ssize_t n):
    """``(first min(n, total) uncompressed bytes, total)`` of a raw Snappy block (a page's
    Snappy data), decoding only as many elements as that prefix needs."""
    cdef Py_ssize_t size = src.shape[0], pos = 0, out_n = 0, ln = 0, off = 0, k, want
    cdef uint64_t total = 0
    cdef int e = OK
    cdef const uint8_t *s = &src[0] if size else NULL
    if n < 0:
        raise ValueError("negative prefix")
    with nogil:
        e = _varint(s, &pos, size, &total)
    if e or total > (<uint64_t>1 << 32):
        raise IndexFormatError("Snappy data: bad uncompressed length", 0)
    want = n if <uint64_t>n < total else <Py_ssize_t>total
    out = PyBytes_FromStringAndSize(NULL, want)
    cdef uint8_t *o = <uint8_t *>PyBytes_AS_STRING(out)
    cdef uint8_t tag
    cdef int kind, extra
    with nogil:
        while out_n < want:
            if pos >= size:
                e = E_TRUNC
                break
            tag = s[pos]
            pos += 1
            kind = tag & 3
            if kind == 0:
                ln = tag >> 2
                if ln >= 60:
                    extra = <int>ln - 59
                    if size - pos < extra:
                        e = E_TRUNC
                        break
                    ln = 0
                    for k in range(extra):
                        ln |= (<Py_ssize_t>s[pos + k]) << (8 * k)
                    pos += extra
                ln += 1
                if ln > size - pos:
                    e = E_TRUNC
                    break
                k = ln if ln < want - out_n else want - out_n
                memcpy(o + out_n, s + pos, <size_t>k)
                out_n += k
                pos += ln
                continue
            if kind == 1:
                if pos >= size:
                    e = E_TRUNC
                    break
                ln = 4 + ((tag >> 2) & 7)
                off = ((<Py_ssize_t>(tag >> 5)) << 8) | s[pos]
                pos += 1
            elif kind == 2:
                if size - pos < 2:
                    e = E_TRUNC
                    break
                ln = 1 + (tag >> 2)
                off = s[pos] | (<Py_ssize_t>s[pos + 1] << 8)
                pos += 2
            else:
                if size - pos < 4:
                    e = E_TRUNC
                    break
                ln = 1 + (tag >> 2)
                off = s[pos] | (<Py_ssize_t>s[pos + 1] << 8) | (<Py_ssize_t>s[pos + 2] << 16) | \
                    (<Py_ssize_t>s[pos + 3] << 24)
                pos += 4
            if off <= 0 or off > out_n:
                e = E_LEN
                break
            if ln > want - out_n:
                ln = want - out_n
            for k in range(ln):  # may overlap its own output
                o[out_n + k] = o[out_n - off + k]
            out_n += ln
    if e == E_LEN:
        raise IndexFormatError(f"Snappy data: a copy from {off} bytes back at output byte {out_n}", pos)
    if e:
        raise IndexFormatError("Snappy data: ends before its uncompressed length", pos)
    return out, total
