# cython: language_level=3
"""Java-exact portable 32-bit roaring serialization and validation (csrc/roaring32.h)."""
from libc.stdint cimport uint8_t, uint32_t, int64_t, uint64_t
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy
import numpy as np

from paimon_fast.errors import IndexFormatError

cdef extern from "roaring32.h":
    int64_t pf_roaring_size(const uint32_t *v, size_t n) nogil
    size_t pf_roaring_write(const uint32_t *v, size_t n, uint8_t *out) nogil
    int64_t pf_roaring_check(const uint8_t *buf, size_t length, const char **err, size_t *err_at, uint64_t *card) nogil


def serialize_sorted(const uint32_t[::1] values):
    """Bytes of the bitmap holding ``values`` (strictly increasing), as Java writes it."""
    cdef size_t n = values.shape[0]
    cdef int64_t size
    cdef const uint32_t *vp = &values[0] if n else NULL
    with nogil:
        size = pf_roaring_size(vp, n)
    if size < 0:
        raise ValueError("roaring values must be strictly increasing")
    out = PyBytes_FromStringAndSize(NULL, size)
    cdef uint8_t *op = <uint8_t *> PyBytes_AS_STRING(out)
    with nogil:
        pf_roaring_write(vp, n, op)
    return out


cdef Py_ssize_t _group_count(const int64_t[::1] bounds, Py_ssize_t n) except -1:
    """The number of groups ``bounds`` cuts ``n`` values into, after checking the bounds lie
    inside ``[0, n]`` and do not decrease."""
    cdef Py_ssize_t g, ng = bounds.shape[0] - 1
    if ng < 0:
        raise ValueError("bounds needs at least one element")
    if bounds[0] < 0 or bounds[ng] > n:
        raise ValueError("group bounds outside the values array")
    for g in range(ng):
        if bounds[g + 1] < bounds[g]:
            raise ValueError("group bounds must be non-decreasing")
    return ng


def serialize_groups(const uint32_t[::1] values, const int64_t[::1] bounds):
    """Serialize many bitmaps at once.

    Group g holds ``values[bounds[g]:bounds[g+1]]`` (each strictly increasing).
    Returns ``(blob, sizes)``: the concatenated serializations and an int64
    array of their byte sizes.
    """
    cdef Py_ssize_t g, ng = _group_count(bounds, values.shape[0])
    cdef Py_ssize_t n = values.shape[0]
    sizes_arr = np.empty(ng, dtype=np.int64)
    cdef int64_t[::1] sizes = sizes_arr
    cdef int64_t total = 0, s
    cdef const uint32_t *vp = &values[0] if n else NULL
    cdef bint bad = False
    with nogil:
        for g in range(ng):
            s = pf_roaring_size(vp + bounds[g], bounds[g + 1] - bounds[g])
            if s < 0:
                bad = True
                break
            sizes[g] = s
            total += s
    if bad:
        raise ValueError(f"roaring values of group {g} are not strictly increasing")
    out = PyBytes_FromStringAndSize(NULL, total)
    cdef uint8_t *op = <uint8_t *> PyBytes_AS_STRING(out)
    with nogil:
        for g in range(ng):
            op += pf_roaring_write(vp + bounds[g], bounds[g + 1] - bounds[g], op)
    return out, sizes_arr


cdef const char *_B64 = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


cdef inline void _base64(const uint8_t *src, size_t n, uint8_t *out) noexcept nogil:
    """Standard Base64 with ``=`` padding of ``src[:n]`` into ``out`` (4 * ceil(n / 3) bytes)."""
    cdef size_t i = 0
    cdef uint32_t v
    while i + 3 <= n:
        v = (<uint32_t> src[i] << 16) | (<uint32_t> src[i + 1] << 8) | src[i + 2]
        out[0] = _B64[v >> 18]
        out[1] = _B64[(v >> 12) & 63]
        out[2] = _B64[(v >> 6) & 63]
        out[3] = _B64[v & 63]
        out += 4
        i += 3
    if n - i == 1:
        v = <uint32_t> src[i] << 16
        out[0] = _B64[v >> 18]
        out[1] = _B64[(v >> 12) & 63]
        out[2] = 61  # '='
        out[3] = 61
    elif n - i == 2:
        v = (<uint32_t> src[i] << 16) | (<uint32_t> src[i + 1] << 8)
        out[0] = _B64[v >> 18]
        out[1] = _B64[(v >> 12) & 63]
        out[2] = _B64[(v >> 6) & 63]
        out[3] = 61


def serialize_groups_b64(const uint32_t[::1] values, const int64_t[::1] bounds, bytes prefix, bytes empty):
    """Base64 text of many bitmaps at once, as Arrow string buffers.

    Group g holds ``values[bounds[g]:bounds[g+1]]`` (strictly increasing); its text is
    the Base64 of ``prefix`` + its portable bitmap bytes, or of ``empty`` when the group
    holds no value.  Returns ``(offsets, data)``: int64 offsets (``len(bounds)``
    entries) into the concatenated ASCII ``data`` bytes.
    """
    cdef Py_ssize_t g, ng = _group_count(bounds, values.shape[0])
    cdef Py_ssize_t n = values.shape[0]
    cdef size_t plen = len(prefix), elen = len(empty)
    cdef const uint8_t *pp = <const uint8_t *> PyBytes_AS_STRING(prefix)
    cdef const uint8_t *ep = <const uint8_t *> PyBytes_AS_STRING(empty)
    off_arr = np.empty(ng + 1, dtype=np.int64)
    cdef int64_t[::1] off = off_arr
    cdef const uint32_t *vp = &values[0] if n else NULL
    # the scratch buffer always receives the prefix, even when every group is empty
    cdef int64_t s, c, raw, maxraw = <int64_t> (elen if elen > plen else plen)
    cdef bint bad = False
    off[0] = 0
    with nogil:
        for g in range(ng):
            c = bounds[g + 1] - bounds[g]
            if c == 0:
                raw = <int64_t> elen
            else:
                s = pf_roaring_size(vp + bounds[g], c)
                if s < 0:
                    bad = True
                    break
                raw = <int64_t> plen + s
            if raw > maxraw:
                maxraw = raw
            off[g + 1] = off[g] + (raw + 2) // 3 * 4
    if bad:
        raise ValueError(f"roaring values of group {g} are not strictly increasing")
    out = PyBytes_FromStringAndSize(NULL, off[ng])
    cdef uint8_t *op = <uint8_t *> PyBytes_AS_STRING(out)
    cdef uint8_t *scratch = <uint8_t *> malloc(<size_t> maxraw + 1)
    if scratch == NULL:
        raise MemoryError()
    with nogil:
        memcpy(scratch, pp, plen)
        for g in range(ng):
            c = bounds[g + 1] - bounds[g]
            if c == 0:
                _base64(ep, elen, op + off[g])
            else:
                raw = <int64_t> plen + <int64_t> pf_roaring_write(vp + bounds[g], c, scratch + plen)
                _base64(scratch, <size_t> raw, op + off[g])
    free(scratch)
    return off_arr, out


def check(const uint8_t[::1] buf, Py_ssize_t offset=0, Py_ssize_t limit=-1, Py_ssize_t base=0):
    """Validate the portable bitmap at ``buf[offset:limit]``.

    Returns ``(size, cardinality)``. Raises IndexFormatError (offset =
    ``base + offset + where``) for anything malformed or truncated.
    """
    cdef Py_ssize_t n = buf.shape[0]
    if limit < 0 or limit > n:
        limit = n
    if offset < 0 or offset > limit:
        raise IndexFormatError(f"roaring bitmap offset {offset} outside the buffer", base + offset)
    cdef const char *err = NULL
    cdef size_t err_at = 0
    cdef uint64_t card = 0
    cdef int64_t size
    cdef const uint8_t *p = &buf[0] + offset if n else <const uint8_t *> ""
    with nogil:
        size = pf_roaring_check(p, limit - offset, &err, &err_at, &card)
    if size < 0:
        raise IndexFormatError(err.decode(), base + offset + <Py_ssize_t> err_at)
    return size, card
