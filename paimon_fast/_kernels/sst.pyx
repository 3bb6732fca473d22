# cython: language_level=3
"""Kernels of Paimon's SST blocks, the data and index blocks of the BTree global index.

A block is its entries (``varint key length, key, varint value length, value``) and a
tail: ``i32 LE entry size`` + byte 0 when every entry has the same encoded length
("aligned"), else one ``i32 LE`` start offset per entry, ``i32 LE`` count and byte 1.
A BTree data entry's value is ``varint count`` + ``count`` x ``varint64 row id``; an
index entry's key is the last key of a data block and its value ``varint64 offset,
varint32 size``.  Writers lay out many blocks in one call; readers walk one block per
call, check every offset, var-int and length against the block before using it
(a malformed block raises IndexFormatError with where) and release the GIL in the loops.
Twins: ``paimon_fast/reference/sst.py``.
"""
from libc.stdint cimport uint8_t, int32_t, int64_t, uint32_t, uint64_t
from libc.string cimport memcpy
from libc.stdlib cimport malloc, free
from libc.errno cimport errno, EINTR
from posix.types cimport off_t
from posix.unistd cimport pread
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING
import numpy as np
cimport numpy as cnp

cnp.import_array()

from paimon_fast.errors import IndexFormatError

cdef extern from "gindex.h":
    int pf_varint_size(uint64_t v) nogil
    int pf_put_varint(uint8_t *out, uint64_t v) nogil
    int pf_get_varint(const uint8_t *p, int64_t end, int64_t *pos, int max_bits, uint64_t *out) nogil
    int pf_key_cmp(int kind, const uint8_t *a, int64_t an, const uint8_t *b, int64_t bn, int *bad) nogil

cdef extern from "crc32.h":
    uint32_t pf_crc32(uint32_t crc, const uint8_t *p, size_t n) nogil
    void pf_crc_setup()

pf_crc_setup()

cdef const uint8_t EMPTY = 0

# error codes of the block walks (messages in _raise)
cdef enum:
    E_SHORT = 1        # shorter than the tail
    E_TYPE = 2         # unknown aligned type
    E_ASIZE = 3        # aligned entry size does not divide the entries
    E_COUNT = 4        # unaligned count does not fit
    E_POS = 5          # an entry is not where the tail says
    E_KEY = 6          # key length var-int malformed or past the entries
    E_VAL = 7          # value length var-int malformed or past the entries
    E_END = 8          # entries do not end at the tail
    E_KEYKIND = 9      # a key malformed for the column type
    E_RIDCOUNT = 10    # row id count malformed or 0
    E_RID = 11         # row id var-int malformed or past the value
    E_HANDLE = 12      # block handle malformed


cdef struct blk:
    const uint8_t *p
    int64_t n        # block bytes
    int64_t end      # where the entries end (the tail starts)
    int64_t count    # entries
    int64_t esize    # > 0: aligned entry size
    int64_t pos_at   # unaligned: where the entry offsets are


cdef inline int32_t _le32(const uint8_t *p) noexcept nogil:
    return <int32_t> ((<uint32_t> p[0]) | (<uint32_t> p[1] << 8) | (<uint32_t> p[2] << 16) | (<uint32_t> p[3] << 24))


cdef inline void _put32(uint8_t *p, uint32_t v) noexcept nogil:
    p[0] = v & 0xFF
    p[1] = (v >> 8) & 0xFF
    p[2] = (v >> 16) & 0xFF
    p[3] = (v >> 24) & 0xFF


cdef int _tail(const uint8_t *p, int64_t n, blk *b, int64_t *at) noexcept nogil:
    """Parse a block's tail; 0 or an error code (*at = where)."""
    cdef int32_t v
    b.p = p
    b.n = n
    if n < 5:
        at[0] = 0
        return E_SHORT
    v = _le32(p + n - 5)
    if p[n - 1] == 0:
        b.end = n - 5
        if v <= 0 or b.end % v:
            at[0] = n - 5
            return E_ASIZE
        b.esize = v
        b.count = b.end // v
        b.pos_at = -1
        return 0
    if p[n - 1] == 1:
        if v < 0 or <int64_t> v * 4 > n - 5:
            at[0] = n - 5
            return E_COUNT
        b.count = v
        b.end = n - 5 - <int64_t> v * 4
        b.pos_at = b.end
        b.esize = 0
        return 0
    at[0] = n - 1
    return E_TYPE


cdef inline int64_t _pos(const blk *b, int64_t i) noexcept nogil:
    """Where entry i starts (unchecked against the entries: the entry read checks it)."""
    if b.esize:
        return i * b.esize
    return _le32(b.p + b.pos_at + 4 * i)


cdef inline int _entry(const blk *b, int64_t pos, int64_t *ks, int64_t *kl, int64_t *vs, int64_t *vl,
                       int64_t *at) noexcept nogil:
    """Read the entry at pos (bounds-checked); 0 or an error code."""
    cdef uint64_t v
    cdef int64_t p = pos
    at[0] = pos
    if pos < 0 or pos >= b.end:
        return E_POS
    if pf_get_varint(b.p, b.end, &p, 31, &v) != 0 or <int64_t> v > b.end - p:
        return E_KEY
    ks[0] = p
    kl[0] = <int64_t> v
    p += <int64_t> v
    at[0] = p
    if pf_get_varint(b.p, b.end, &p, 31, &v) != 0 or <int64_t> v > b.end - p:
        return E_VAL
    vs[0] = p
    vl[0] = <int64_t> v
    return 0


cdef inline int _cmp(int kind, const blk *b, int64_t ks, int64_t kl, const uint8_t *key, int64_t kn,
                     int *err) noexcept nogil:
    cdef int bad = 0
    cdef int c = pf_key_cmp(kind, b.p + ks, kl, key, kn, &bad)
    if bad:
        err[0] = E_KEYKIND
    return c


cdef int64_t _seek(int kind, const blk *b, const uint8_t *key, int64_t kn, int *err, int64_t *at) noexcept nogil:
    """Java's BlockIterator.seekTo: index of the first entry >= key, -1 if none; *err set on a
    malformed entry."""
    cdef int64_t left = 0, right = b.count - 1, mid, found = -1, ks, kl, vs, vl
    cdef int c, e
    while left <= right:
        mid = left + (right - left) // 2
        e = _entry(b, _pos(b, mid), &ks, &kl, &vs, &vl, at)
        if e:
            err[0] = e
            return -1
        c = _cmp(kind, b, ks, kl, key, kn, err)
        if err[0]:
            at[0] = ks
            return -1
        if c == 0:
            return mid
        if c > 0:
            found = mid
            right = mid - 1
        else:
            left = mid + 1
    return found


_MESSAGES = {
    E_SHORT: "block is shorter than its 5-byte tail",
    E_TYPE: "illegal block aligned type",
    E_ASIZE: "aligned block entry size does not divide its entries",
    E_COUNT: "block entry count does not fit the block",
    E_POS: "block entry is not where the block's tail says",
    E_KEY: "block key length is malformed or runs past the entries",
    E_VAL: "block value length is malformed or runs past the entries",
    E_END: "block entries do not end where its tail starts",
    E_KEYKIND: "block key is malformed for the column type",
    E_RIDCOUNT: "row id count is malformed or 0",
    E_RID: "row id is malformed or runs past its entry",
    E_HANDLE: "block handle is malformed",
}


cdef int _raise(int code, int64_t at, Py_ssize_t base) except -1:
    raise IndexFormatError(_MESSAGES.get(code, f"malformed block ({code})"), base + at)


cdef int _open(const uint8_t[::1] raw, blk *b, Py_ssize_t base) except -1:
    cdef int64_t at = 0
    cdef int e
    cdef const uint8_t *p = &raw[0] if raw.shape[0] else &EMPTY
    e = _tail(p, raw.shape[0], b, &at)
    if e:
        _raise(e, at, base)
    return 0


# ---------------------------------------------------------------- reading

def block_entries(const uint8_t[::1] raw, Py_ssize_t base=0):
    """``(key starts, key lengths, value starts, value lengths)`` (int64 arrays) of a raw
    block; its entries must lie back to back from 0 to its tail, at the offsets the tail
    gives.  ``base``: where the block starts in the file (for messages)."""
    cdef blk b
    _open(raw, &b, base)
    ks_a = np.empty(b.count, dtype=np.int64)
    kl_a = np.empty(b.count, dtype=np.int64)
    vs_a = np.empty(b.count, dtype=np.int64)
    vl_a = np.empty(b.count, dtype=np.int64)
    cdef int64_t[::1] ks = ks_a, kl = kl_a, vs = vs_a, vl = vl_a
    cdef int64_t i, pos = 0, at = 0
    cdef int e = 0
    with nogil:
        for i in range(b.count):
            if _pos(&b, i) != pos:
                e = E_POS
                at = pos
                break
            e = _entry(&b, pos, &ks[i], &kl[i], &vs[i], &vl[i], &at)
            if e:
                break
            pos = vs[i] + vl[i]
        if not e and pos != b.end:
            e = E_END
            at = pos
    if e:
        _raise(e, at, base)
    return ks_a, kl_a, vs_a, vl_a


def seek(int kind, const uint8_t[::1] raw, const uint8_t[::1] key, Py_ssize_t base=0):
    """Index of the block's first entry whose key is >= ``key`` by the column's logical order
    (Java's ``BlockIterator.seekTo``, a binary search), -1 if none."""
    cdef blk b
    _open(raw, &b, base)
    cdef int err = 0
    cdef int64_t at = 0, got
    cdef const uint8_t *kp = &key[0] if key.shape[0] else &EMPTY
    with nogil:
        got = _seek(kind, &b, kp, key.shape[0], &err, &at)
    if err:
        _raise(err, at, base)
    return got


def seek_handle(int kind, const uint8_t[::1] raw, const uint8_t[::1] key, Py_ssize_t base=0):
    """:func:`seek` in an index block, with the found entry's handle: ``(i, offset, size)``,
    or None when every key is below ``key`` (a cold lookup reads nothing else of the index)."""
    cdef blk b
    _open(raw, &b, base)
    cdef int err = 0
    cdef int64_t at = 0, i, ks, kl, vs, vl, pos
    cdef uint64_t off = 0, size = 0
    cdef const uint8_t *kp = &key[0] if key.shape[0] else &EMPTY
    with nogil:
        i = _seek(kind, &b, kp, key.shape[0], &err, &at)
        if not err and i >= 0:
            err = _entry(&b, _pos(&b, i), &ks, &kl, &vs, &vl, &at)
            if not err:
                pos = vs
                if (pf_get_varint(b.p, vs + vl, &pos, 63, &off) != 0
                        or pf_get_varint(b.p, vs + vl, &pos, 31, &size) != 0):
                    err = E_HANDLE
                    at = vs
    if err:
        _raise(err, at, base)
    if i < 0:
        return None
    return i, <int64_t> off, <int64_t> size


def handles(const uint8_t[::1] raw, Py_ssize_t base=0):
    """``(offsets, sizes)`` (int64) of an index block's values (``varint64 offset,
    varint32 size``), every entry checked as :func:`block_entries` does."""
    _ks, _kl, vs_a, vl_a = block_entries(raw, base)
    cdef Py_ssize_t n = vs_a.shape[0], i
    offs_a = np.empty(n, dtype=np.int64)
    sizes_a = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] vs = vs_a, vl = vl_a, offs = offs_a, sizes = sizes_a
    cdef const uint8_t *p = &raw[0] if raw.shape[0] else &EMPTY
    cdef int64_t pos, end, at = -1
    cdef uint64_t v
    with nogil:
        for i in range(n):
            pos = vs[i]
            end = vs[i] + vl[i]
            if pf_get_varint(p, end, &pos, 63, &v) != 0:
                at = vs[i]
                break
            offs[i] = <int64_t> v
            if pf_get_varint(p, end, &pos, 31, &v) != 0:
                at = vs[i]
                break
            sizes[i] = <int64_t> v
    if at >= 0:
        _raise(E_HANDLE, at, base)
    return offs_a, sizes_a


cdef int _count(const uint8_t *p, int64_t vs, int64_t vl, uint64_t *cnt, int64_t *pos) noexcept nogil:
    pos[0] = vs
    if pf_get_varint(p, vs + vl, pos, 31, cnt) != 0 or cnt[0] == 0 or <int64_t> cnt[0] > vs + vl - pos[0]:
        return E_RIDCOUNT
    return 0


cdef int _rids(const uint8_t *p, int64_t pos, int64_t end, int64_t take, uint64_t *out, int64_t *at) noexcept nogil:
    cdef int64_t j
    for j in range(take):
        if pf_get_varint(p, end, &pos, 63, &out[j]) != 0:
            at[0] = pos
            return E_RID
    return 0


def entry_row_ids(const uint8_t[::1] raw, int64_t vstart, int64_t vlen, int64_t limit=-1, Py_ssize_t base=0):
    """The row ids (uint64) of the value at ``raw[vstart:vstart + vlen]``: ``varint count``
    (> 0) then the row ids; at most ``limit`` of them when ``limit >= 0``."""
    if vstart < 0 or vlen < 0 or vstart + vlen > raw.shape[0]:
        raise IndexFormatError("row id list lies outside its block", base + max(vstart, 0))
    cdef const uint8_t *p = &raw[0] if raw.shape[0] else &EMPTY
    cdef uint64_t cnt
    cdef int64_t pos, at = vstart, take
    cdef int e = _count(p, vstart, vlen, &cnt, &pos)
    if e:
        _raise(e, vstart, base)
    take = <int64_t> cnt if limit < 0 or limit > <int64_t> cnt else limit
    out_a = np.empty(take, dtype=np.uint64)
    cdef uint64_t[::1] out = out_a
    with nogil:
        e = _rids(p, pos, vstart + vlen, take, &out[0] if take else NULL, &at)
    if e:
        _raise(e, at, base)
    return out_a


cdef struct span:
    int64_t first    # first entry in range (-1: none)
    int64_t last
    int64_t total    # row ids in range
    bint stop        # an entry above the upper bound was met


cdef int _scan_plan(int kind, const blk *b, const uint8_t *lp, int64_t ln, const uint8_t *hp, int64_t hn,
                    int flags, span *sp, int64_t *at) noexcept nogil:
    """Pass 1 of a range walk over one block: which entries are in range (each entry walked
    is checked: its place, key, value, row id count); 0 or an error code."""
    cdef int err = 0, c
    cdef int64_t start = 0, i, pos, ks, kl, vs, vl, rp
    cdef uint64_t cnt
    sp.first = -1
    sp.last = -1
    sp.total = 0
    sp.stop = False
    if lp != NULL:
        start = _seek(kind, b, lp, ln, &err, at)
        if err:
            return err
        if start < 0:
            start = b.count
    if start >= b.count:
        return 0
    pos = _pos(b, start)
    i = start
    while i < b.count:
        if _pos(b, i) != pos:
            at[0] = pos
            return E_POS
        err = _entry(b, pos, &ks, &kl, &vs, &vl, at)
        if err:
            return err
        pos = vs + vl
        if lp != NULL and not (flags & 1):
            c = _cmp(kind, b, ks, kl, lp, ln, &err)
            if err:
                at[0] = ks
                return err
            if c == 0:
                i += 1
                continue
        if hp != NULL:
            c = _cmp(kind, b, ks, kl, hp, hn, &err)
            if err:
                at[0] = ks
                return err
            if c > 0 or (c == 0 and not (flags & 2)):
                sp.stop = True
                return 0
        err = _count(b.p, vs, vl, &cnt, &rp)
        if err:
            at[0] = vs
            return err
        if sp.first < 0:
            sp.first = i
        sp.last = i
        sp.total += <int64_t> cnt
        i += 1
    if pos != b.end:
        at[0] = pos
        return E_END
    return 0


cdef int _scan_fill(int kind, const blk *b, const uint8_t *lp, int64_t ln, int flags, const span *sp,
                    uint64_t *out, int64_t *at) noexcept nogil:
    """Pass 2: the row ids of the entries pass 1 found, into ``out`` (``sp.total`` of them)."""
    cdef int err = 0
    cdef int64_t i, k = 0, ks, kl, vs, vl, rp
    cdef uint64_t cnt
    if sp.total == 0:
        return 0
    for i in range(sp.first, sp.last + 1):
        _entry(b, _pos(b, i), &ks, &kl, &vs, &vl, at)
        if lp != NULL and not (flags & 1) and _cmp(kind, b, ks, kl, lp, ln, &err) == 0:
            continue
        _count(b.p, vs, vl, &cnt, &rp)
        err = _rids(b.p, rp, vs + vl, <int64_t> cnt, out + k, at)
        if err:
            return err
        k += <int64_t> cnt
    return 0


def scan(int kind, const uint8_t[::1] raw, lo, hi, int flags, Py_ssize_t base=0):
    """``(row ids, stop)`` of one data block: the row ids (uint64, entry order) of the entries
    whose key lies between ``lo`` and ``hi`` (bytes-like, or None: no bound; ``flags`` bit 0:
    ``lo`` inclusive, bit 1: ``hi`` inclusive), found as Java's range query walks (seek to
    ``lo``, then forward); ``stop`` when an entry above ``hi`` was met, so later blocks hold
    none.  Every entry walked is checked (its place, key, value, row ids)."""
    cdef blk b
    _open(raw, &b, base)
    cdef const uint8_t[::1] lo_v, hi_v
    cdef const uint8_t *lp = NULL
    cdef const uint8_t *hp = NULL
    cdef int64_t ln = 0, hn = 0, at = 0
    if lo is not None:
        lo_v = lo
        ln = lo_v.shape[0]
        lp = &lo_v[0] if ln else &EMPTY
    if hi is not None:
        hi_v = hi
        hn = hi_v.shape[0]
        hp = &hi_v[0] if hn else &EMPTY
    cdef int err
    cdef span sp
    with nogil:
        err = _scan_plan(kind, &b, lp, ln, hp, hn, flags, &sp, &at)
    if err:
        _raise(err, at, base)
    out_a = np.empty(sp.total, dtype=np.uint64)
    cdef uint64_t[::1] out = out_a
    if sp.total:
        with nogil:
            err = _scan_fill(kind, &b, lp, ln, flags, &sp, &out[0], &at)
        if err:
            _raise(err, at, base)
    return out_a, bool(sp.stop)


cdef int _pread_all(int fd, uint8_t *p, int64_t n, int64_t at) noexcept nogil:
    """0, a positive errno, or -1 for a short read."""
    cdef int64_t got = 0, r
    while got < n:
        r = pread(fd, p + got, <size_t> (n - got), <off_t> (at + got))
        if r < 0:
            if errno == EINTR:
                continue
            return errno
        if r == 0:
            return -1
        got += r
    return 0


cdef inline bint _crc_ok(const uint8_t *p, int64_t size) noexcept nogil:
    return pf_crc32(0, p, <size_t> (size + 1)) == <uint32_t> _le32(p + size + 1)


def cold_equal(int kind, const uint8_t[::1] tail, int64_t tail_at, int64_t index_off, int64_t index_size,
               const uint8_t[::1] key, int fd, int64_t file_body):
    """A fresh reader's first ``=``, in one call: the index block (in ``tail``, the bytes read at
    open, which start at file offset ``tail_at``) checked and seeked, the data block it points
    to read from ``tail`` or the file descriptor ``fd`` and checked, and the key's row ids
    (uint64) taken from it.  None when the walk cannot vouch for the answer alone (an index
    block outside ``tail`` or compressed, a compressed data block, no descriptor): the caller
    then takes the block-by-block way, which answers and reports as ever.  A CRC mismatch or a
    malformed entry on the way is left to that way too; a handle outside the body raises."""
    cdef int64_t tn = tail.shape[0]
    cdef const uint8_t *t = &tail[0] if tn else &EMPTY
    cdef const uint8_t *kp = &key[0] if key.shape[0] else &EMPTY
    cdef int64_t kn = key.shape[0], at = 0, i, ks, kl, vs, vl, pos, off, size
    cdef uint64_t v1, v2
    cdef blk ib, db
    cdef int err = 0, r = 0
    cdef span sp
    cdef uint8_t *buf = NULL
    cdef const uint8_t *dp
    # every bound compared with what is left (a var-int of 63 bits plus a size wraps int64)
    if index_off < tail_at or index_size < 0 or index_off - tail_at > tn or index_size > tn - 5 - (index_off - tail_at):
        return None
    cdef const uint8_t *ip = t + (index_off - tail_at)
    if ip[index_size] != 0 or not _crc_ok(ip, index_size):
        return None
    if _tail(ip, index_size, &ib, &at):
        return None
    with nogil:
        i = _seek(kind, &ib, kp, kn, &err, &at)
        if not err and i >= 0:
            err = _entry(&ib, _pos(&ib, i), &ks, &kl, &vs, &vl, &at)
            if not err:
                pos = vs
                if pf_get_varint(ib.p, vs + vl, &pos, 63, &v1) != 0 or pf_get_varint(ib.p, vs + vl, &pos, 31, &v2) != 0:
                    err = E_HANDLE
    if err:
        return None
    if i < 0:
        return np.empty(0, dtype=np.uint64)
    off, size = <int64_t> v1, <int64_t> v2
    if off < 0 or size < 0 or off > file_body or size > file_body - 5 - off:
        raise IndexFormatError(f"data block {i} [{off}, {off + size}) lies outside the file body", index_off)
    if off >= tail_at and off + size + 5 <= tail_at + tn:  # (no wrap: off + size + 5 <= file_body)
        dp = t + (off - tail_at)
    elif fd >= 0:
        buf = <uint8_t *> malloc(<size_t> (size + 5))
        if buf == NULL:
            raise MemoryError()
        with nogil:
            r = _pread_all(fd, buf, size + 5, off)
        if r:
            free(buf)
            return None
        dp = buf
    else:
        return None
    try:
        if dp[size] != 0 or not _crc_ok(dp, size) or _tail(dp, size, &db, &at):
            return None
        with nogil:
            err = _scan_plan(kind, &db, kp, kn, kp, kn, 3, &sp, &at)
        if err:
            return None
        out_a = np.empty(sp.total, dtype=np.uint64)
        if sp.total:
            err = _scan_fill(kind, &db, kp, kn, 3, &sp, <uint64_t *> cnp.PyArray_DATA(out_a), &at)
            if err:
                return None
        return out_a
    finally:
        if buf != NULL:
            free(buf)


# ---------------------------------------------------------------- reading a local file

def read_block(int fd, int64_t offset, int64_t size, int64_t file_body):
    """Read a stored block and its 5-byte trailer from a local file descriptor and check them
    (the trailer's CRC-32 over the stored bytes and the type byte), the GIL released: ``(stored
    bytes, compression type)``.  ``file_body``: where the file's footer starts (the block must
    end before it).  A short read, a bad CRC or a block outside the body raises
    IndexFormatError; an uncompressed block's stored bytes are its raw bytes."""
    if offset < 0 or size < 0 or offset > file_body or size > file_body - 5 - offset:
        raise IndexFormatError(f"block [{offset}, {offset + size + 5}) lies outside the file body", offset)
    out = PyBytes_FromStringAndSize(NULL, size + 5)
    cdef uint8_t *p = <uint8_t *> PyBytes_AS_STRING(out)
    cdef int64_t got = 0, n
    cdef uint32_t crc = 0, want
    cdef int err = 0
    with nogil:
        while got < size + 5:
            n = pread(fd, p + got, <size_t> (size + 5 - got), <off_t> (offset + got))
            if n < 0:
                if errno == EINTR:
                    continue
                err = errno
                break
            if n == 0:
                break
            got += n
        if got == size + 5:
            crc = pf_crc32(0, p, <size_t> (size + 1))
    if err:
        raise OSError(err, "cannot read the index file")
    if got != size + 5:
        raise IndexFormatError("block truncated", offset)
    want = <uint32_t> _le32(p + size + 1)
    if crc != want:
        raise IndexFormatError(f"block CRC mismatch: stored 0x{want:08x}, computed 0x{crc:08x}", offset + size + 1)
    return out, p[size]


# ---------------------------------------------------------------- writing

cdef inline int64_t _blk_size(int64_t nbytes, int64_t nent, bint aligned) noexcept nogil:
    return nbytes + 5 + (0 if aligned else 4 * nent)


def btree_blocks(const int64_t[::1] key_off, const uint8_t[::1] key_data, const uint64_t[::1] rids,
                 const int64_t[::1] bounds, int64_t block_size, bint frame):
    """The data blocks of a BTree file, as Java's ``SstFileWriter`` cuts them, from grouped
    keys: group g has key bytes ``key_data[key_off[g]:key_off[g+1]]`` and row ids
    ``rids[bounds[g]:bounds[g+1]]`` (one entry each: ``varint count`` + the row ids as
    var-longs).  A block is closed right after the entry that makes ``entry bytes + 5 (+ 4
    per entry when not aligned)`` exceed ``block_size``.  Returns ``(body, offsets, sizes,
    last_group)``: the blocks one after another (each followed by its uncompressed 5-byte
    trailer when ``frame``), each block's offset in ``body`` and raw size, and the index of
    its last group."""
    cdef Py_ssize_t ng = bounds.shape[0] - 1, g, r
    if ng < 0 or key_off.shape[0] != ng + 1:
        raise ValueError("key_off and bounds must both have one more element than the groups")
    if ng and (bounds[0] != 0 or bounds[ng] != rids.shape[0] or key_off[0] < 0 or key_off[ng] > key_data.shape[0]):
        raise ValueError("bounds or key offsets do not match the row ids and key bytes")
    for g in range(ng):
        if bounds[g + 1] <= bounds[g] or key_off[g + 1] < key_off[g]:
            raise ValueError(f"group {g} has no row id or a negative key length")
    esize_a = np.empty(max(ng, 1), dtype=np.int64)
    vlen_a = np.empty(max(ng, 1), dtype=np.int64)
    cdef int64_t[::1] esize = esize_a, vlen = vlen_a
    cdef int64_t cur = 0, nent = 0, asize = 0, v, total = 0, klen
    cdef bint aligned = True
    # pass 1: entry sizes and the block cuts
    cut_a = np.empty(max(ng, 1), dtype=np.int64)
    raw_a = np.empty(max(ng, 1), dtype=np.int64)
    cdef int64_t[::1] cut = cut_a, rawsz = raw_a
    cdef Py_ssize_t nb = 0
    with nogil:
        for g in range(ng):
            v = pf_varint_size(<uint64_t> (bounds[g + 1] - bounds[g]))
            for r in range(bounds[g], bounds[g + 1]):
                v += pf_varint_size(rids[r])
            vlen[g] = v
            klen = key_off[g + 1] - key_off[g]
            esize[g] = pf_varint_size(<uint64_t> klen) + klen + pf_varint_size(<uint64_t> v) + v
            cur += esize[g]
            nent += 1
            if aligned:
                if asize == 0:
                    asize = esize[g]
                elif asize != esize[g]:
                    aligned = False
            if _blk_size(cur, nent, aligned) > block_size or g == ng - 1:
                cut[nb] = g + 1
                rawsz[nb] = _blk_size(cur, nent, aligned)
                total += rawsz[nb] + (5 if frame else 0)
                nb += 1
                cur = 0
                nent = 0
                asize = 0
                aligned = True
    body = PyBytes_FromStringAndSize(NULL, total)
    cdef uint8_t *out = <uint8_t *> PyBytes_AS_STRING(body)
    offs_a = np.empty(nb, dtype=np.int64)
    sizes_a = np.empty(nb, dtype=np.int64)
    last_a = np.empty(nb, dtype=np.int64)
    cdef int64_t[::1] offs = offs_a, sizes = sizes_a, last = last_a
    cdef const uint8_t *kd = &key_data[0] if key_data.shape[0] else &EMPTY
    cdef Py_ssize_t j
    cdef int64_t pos = 0, start, g0 = 0, epos
    cdef uint32_t crc
    with nogil:
        for j in range(nb):
            start = pos
            for g in range(g0, cut[j]):
                klen = key_off[g + 1] - key_off[g]
                pos += pf_put_varint(out + pos, <uint64_t> klen)
                memcpy(out + pos, kd + key_off[g], <size_t> klen)
                pos += klen
                pos += pf_put_varint(out + pos, <uint64_t> vlen[g])
                pos += pf_put_varint(out + pos, <uint64_t> (bounds[g + 1] - bounds[g]))
                for r in range(bounds[g], bounds[g + 1]):
                    pos += pf_put_varint(out + pos, rids[r])
            if rawsz[j] == pos - start + 5 and (cut[j] - g0 == 1 or _all_same(&esize[0], g0, cut[j])):
                _put32(out + pos, <uint32_t> esize[g0])
                out[pos + 4] = 0
                pos += 5
            else:
                epos = 0
                for g in range(g0, cut[j]):
                    _put32(out + pos, <uint32_t> epos)
                    pos += 4
                    epos += esize[g]
                _put32(out + pos, <uint32_t> (cut[j] - g0))
                out[pos + 4] = 1
                pos += 5
            offs[j] = start
            sizes[j] = pos - start
            last[j] = cut[j] - 1
            if frame:
                crc = pf_crc32(0, out + start, <size_t> (pos - start))
                out[pos] = 0
                crc = pf_crc32(crc, out + pos, 1)
                _put32(out + pos + 1, crc)
                pos += 5
            g0 = cut[j]
    if pos != total:
        raise AssertionError(f"btree_blocks wrote {pos} bytes, planned {total}")
    return body, offs_a, sizes_a, last_a


cdef inline bint _all_same(const int64_t *e, int64_t a, int64_t b) noexcept nogil:
    cdef int64_t i
    for i in range(a + 1, b):
        if e[i] != e[a]:
            return False
    return True


def index_block(const int64_t[::1] key_off, const uint8_t[::1] key_data, const int64_t[::1] last_group,
                const int64_t[::1] offsets, const int64_t[::1] sizes):
    """The raw index block: per data block j, the key of group ``last_group[j]`` and the
    handle ``varint64 offsets[j], varint32 sizes[j]``; aligned or not as Java's
    ``BlockWriter`` decides (an empty block is never aligned)."""
    cdef Py_ssize_t nb = last_group.shape[0], j
    if offsets.shape[0] != nb or sizes.shape[0] != nb:
        raise ValueError("one offset and size per block")
    for j in range(nb):
        if last_group[j] < 0 or last_group[j] + 1 >= key_off.shape[0] or offsets[j] < 0 or sizes[j] < 0:
            raise ValueError(f"block {j}: bad group or handle")
    es_a = np.empty(max(nb, 1), dtype=np.int64)
    cdef int64_t[::1] es = es_a
    cdef int64_t total = 0, klen, hlen
    cdef bint aligned = nb > 0
    for j in range(nb):
        klen = key_off[last_group[j] + 1] - key_off[last_group[j]]
        hlen = pf_varint_size(<uint64_t> offsets[j]) + pf_varint_size(<uint64_t> sizes[j])
        es[j] = pf_varint_size(<uint64_t> klen) + klen + pf_varint_size(<uint64_t> hlen) + hlen
        total += es[j]
        if es[j] != es[0]:
            aligned = False
    total += 5 if aligned else 5 + 4 * nb
    out_b = PyBytes_FromStringAndSize(NULL, total)
    cdef uint8_t *out = <uint8_t *> PyBytes_AS_STRING(out_b)
    cdef const uint8_t *kd = &key_data[0] if key_data.shape[0] else &EMPTY
    cdef int64_t pos = 0, epos = 0
    for j in range(nb):
        klen = key_off[last_group[j] + 1] - key_off[last_group[j]]
        pos += pf_put_varint(out + pos, <uint64_t> klen)
        memcpy(out + pos, kd + key_off[last_group[j]], <size_t> klen)
        pos += klen
        hlen = pf_varint_size(<uint64_t> offsets[j]) + pf_varint_size(<uint64_t> sizes[j])
        pos += pf_put_varint(out + pos, <uint64_t> hlen)
        pos += pf_put_varint(out + pos, <uint64_t> offsets[j])
        pos += pf_put_varint(out + pos, <uint64_t> sizes[j])
    if aligned:
        _put32(out + pos, <uint32_t> es[0])
        out[pos + 4] = 0
    else:
        for j in range(nb):
            _put32(out + pos, <uint32_t> epos)
            pos += 4
            epos += es[j]
        _put32(out + pos, <uint32_t> nb)
        out[pos + 4] = 1
    return out_b


# ---------------------------------------------------------------- bloom filter

cdef inline uint32_t _rotl(uint32_t v, int d) noexcept nogil:
    return (v << d) | (v >> (32 - d))


cdef inline uint32_t _mix(uint32_t h, uint32_t k) noexcept nogil:
    k *= 0xCC9E2D51u
    k = _rotl(k, 15)
    k *= 0x1B873593u
    h ^= k
    h = _rotl(h, 13)
    return h * 5 + 0xE6546B64u


cdef int32_t _murmur(const uint8_t *p, int64_t n) noexcept nogil:
    cdef uint32_t h = 42
    cdef int64_t i, aligned = n - n % 4
    for i in range(0, aligned, 4):
        h = _mix(h, <uint32_t> _le32(p + i))
    for i in range(aligned, n):
        h = _mix(h, <uint32_t> <int32_t> (<signed char> p[i]))
    h ^= <uint32_t> n
    h ^= h >> 16
    h *= 0x85EBCA6Bu
    h ^= h >> 13
    h *= 0xC2B2AE35u
    h ^= h >> 16
    return <int32_t> h


def murmur(const uint8_t[::1] data):
    """Java's ``MurmurHashUtils.hashBytes`` (seed 42) as a signed 32-bit int."""
    return _murmur(&data[0] if data.shape[0] else &EMPTY, data.shape[0])


def bloom_test(const uint8_t[::1] bits, int64_t num_hashes, const uint8_t[::1] key):
    """Java's ``BloomFilter.testHash(hashBytes(key))`` over the filter's bytes (bit j of the
    filter: byte ``j >> 3``, bit ``j & 7``) with ``num_hashes`` probes."""
    cdef int64_t nbits = bits.shape[0] * 8, i, pos
    if nbits == 0 or nbits > 0x7FFFFFFF:
        raise ValueError("bloom filter size out of range")
    cdef int32_t h1 = _murmur(&key[0] if key.shape[0] else &EMPTY, key.shape[0])
    cdef int32_t h2 = <int32_t> ((<uint32_t> h1) >> 16), c
    for i in range(1, num_hashes + 1):
        c = <int32_t> (<uint32_t> h1 + <uint32_t> i * <uint32_t> h2)
        if c < 0:
            c = ~c
        pos = c % nbits
        if not (bits[pos >> 3] & (1 << (pos & 7))):
            return False
    return True
