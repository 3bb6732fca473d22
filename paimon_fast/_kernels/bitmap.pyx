# cython: language_level=3
"""Bitmap file index kernels (format V1 / V2, ``fileindex/bitmap.py``).

Writer side, over a whole column at once, no Python object per row:

* :func:`group_fixed` / :func:`group_binary`: dictionary-encode a column
  (codes per row, first row, count and Java ``hashCode()`` per distinct value,
  in first-appearance order);
* :func:`java_order`: the iteration order of the ``java.util.HashMap`` Java's
  writer fills with ``computeIfAbsent`` once per non-null row
  (FORMAT_NOTES.md section 8);
* :func:`scatter_positions`: row positions of every multi-row value, grouped
  in that order (ready for ``roaring.serialize_groups32``);
* :func:`v2_layout`: V2 index-block packing; :func:`pack_fixed` /
  :func:`pack_binary`: big-endian (key, i32...) entry tables.

Reader side: :func:`search_fixed` / :func:`search_binary` binary-search a
directory or an index block in place, exactly as Java's
``Collections.binarySearch`` probes it, checking every offset first.
"""
from libc.stdint cimport INT64_MAX, INT64_MIN, uint8_t, int8_t, int16_t, int32_t, int64_t, uint32_t, uint64_t
from libc.stdlib cimport malloc, realloc, free, calloc
from libc.string cimport memcmp, memcpy, memset
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING
import numpy as np

from paimon_fast._kernels._common cimport check_offsets, offset_t

ctypedef fused intlike:
    int8_t
    int16_t
    int32_t
    int64_t


# Java hashCode() of the boxed key
HASH_INT = 0     # Byte / Short / Integer / Float (floatToIntBits): the value itself
HASH_LONG = 1    # Long / Double (doubleToLongBits): (int)(v ^ (v >>> 32))
HASH_BOOL = 2    # Boolean: 1231 / 1237

# key comparison of V2 (Java comparator of the key class)
CMP_SIGNED = 0   # integers, booleans (false < true)
CMP_FLOAT = 1    # Float.compare on floatToIntBits
CMP_DOUBLE = 2   # Double.compare on doubleToLongBits

cdef extern from "roaring_dense.h":
    int64_t pf_dense_size(const uint64_t *const *cw, size_t n, uint32_t *card, uint32_t *nruns) nogil
    size_t pf_dense_write(const uint64_t *const *cw, const uint32_t *keys, size_t n, const uint32_t *card,
                          const uint32_t *nruns, uint8_t *out) nogil


cdef int64_t _D_EXP = (<int64_t> 0x7FF) << 52
cdef int64_t _D_MANT = ((<int64_t> 1) << 52) - 1
cdef int64_t _D_NAN = (<int64_t> 0xFFF) << 51

cdef enum:
    TREEIFY_THRESHOLD = 8
    MIN_TREEIFY_CAPACITY = 64


cdef inline uint64_t _mix64(uint64_t x) noexcept nogil:
    x ^= x >> 33
    x *= 0xff51afd7ed558ccdULL
    x ^= x >> 33
    x *= 0xc4ceb9fe1a85ec53ULL
    x ^= x >> 33
    return x


cdef inline int32_t _java_hash(int64_t v, int mode) noexcept nogil:
    if mode == 0:
        return <int32_t> v
    if mode == 1:
        return <int32_t> (<uint64_t> v ^ (<uint64_t> v >> 32))
    return 1231 if v != 0 else 1237


cdef inline uint32_t _rotl32(uint32_t x, int r) noexcept nogil:
    return (x << r) | (x >> (32 - r))


cdef inline uint32_t _mix_k1(uint32_t k1) noexcept nogil:
    k1 *= 0xcc9e2d51u
    k1 = _rotl32(k1, 15)
    k1 *= 0x1b873593u
    return k1


cdef inline uint32_t _mix_h1(uint32_t h1, uint32_t k1) noexcept nogil:
    h1 ^= k1
    h1 = _rotl32(h1, 13)
    return h1 * 5u + 0xe6546b64u


cdef inline int32_t java_string_hash(const uint8_t *p, Py_ssize_t n) noexcept nogil:
    """``BinaryString.hashCode()``: Paimon's murmur3_32 variant, seed 42, LE words,
    tail bytes sign-extended and mixed one by one, then ``h ^= length`` + fmix."""
    cdef uint32_t h1 = 42, k1
    cdef Py_ssize_t i, aligned = n - (n & 3)
    i = 0
    while i < aligned:
        k1 = <uint32_t> p[i] | (<uint32_t> p[i + 1] << 8) | (<uint32_t> p[i + 2] << 16) | (<uint32_t> p[i + 3] << 24)
        h1 = _mix_h1(h1, _mix_k1(k1))
        i += 4
    while i < n:
        h1 = _mix_h1(h1, _mix_k1(<uint32_t> <int32_t> <int8_t> p[i]))
        i += 1
    h1 ^= <uint32_t> n
    h1 ^= h1 >> 16
    h1 *= 0x85ebca6bu
    h1 ^= h1 >> 13
    h1 *= 0xc2b2ae35u
    h1 ^= h1 >> 16
    return <int32_t> h1


def string_hashes(const offset_t[::1] offsets, const uint8_t[::1] data):
    """Java ``BinaryString.hashCode()`` of each value (int32 array)."""
    cdef Py_ssize_t i, n = offsets.shape[0] - 1
    if n < 0:
        raise ValueError("offsets needs at least one element")
    check_offsets(offsets, data.shape[0])
    out = np.empty(n, dtype=np.int32)
    cdef int32_t[::1] o = out
    cdef const uint8_t *d = &data[0] if data.shape[0] else <const uint8_t *> ""
    with nogil:
        for i in range(n):
            o[i] = java_string_hash(d + offsets[i], offsets[i + 1] - offsets[i])
    return out


# ---------------------------------------------------------------- growable per-value arrays

cdef struct Slot:
    int64_t key          # fixed: the value; binary: a 64-bit fingerprint of the bytes
    int64_t id           # -1 = empty


cdef struct Dict:
    Slot *slots          # open addressing, linear probing; key and id on one cache line
    int64_t cap          # power of two
    int64_t n            # distinct values so far
    int64_t room         # allocated length of the arrays below
    int64_t *keys        # per id: the value (fixed) or the fingerprint (binary)
    int64_t *first_row
    int64_t *counts
    int32_t *jhash
    # binary keys: each distinct value's bytes copied into one arena, so that
    # confirming a match reads hot memory instead of a random row of the column
    int64_t *kpos
    int64_t *klen
    uint8_t *arena
    int64_t arena_len
    int64_t arena_cap


cdef int _dict_init(Dict *d) noexcept nogil:
    cdef int64_t i
    d.cap = 1024
    d.n = 0
    d.room = 256
    d.slots = <Slot *> malloc(d.cap * sizeof(Slot))
    d.keys = <int64_t *> malloc(d.room * sizeof(int64_t))
    d.first_row = <int64_t *> malloc(d.room * sizeof(int64_t))
    d.counts = <int64_t *> malloc(d.room * sizeof(int64_t))
    d.jhash = <int32_t *> malloc(d.room * sizeof(int32_t))
    d.kpos = <int64_t *> malloc(d.room * sizeof(int64_t))
    d.klen = <int64_t *> malloc(d.room * sizeof(int64_t))
    d.arena_len = 0
    d.arena_cap = 4096
    d.arena = <uint8_t *> malloc(d.arena_cap)
    if d.slots == NULL or d.first_row == NULL or d.counts == NULL or d.jhash == NULL or d.keys == NULL or \
            d.kpos == NULL or d.klen == NULL or d.arena == NULL:
        return -1
    for i in range(d.cap):
        d.slots[i].id = -1
    return 0


cdef void _dict_free(Dict *d) noexcept nogil:
    free(d.slots)
    free(d.keys)
    free(d.first_row)
    free(d.counts)
    free(d.jhash)
    free(d.kpos)
    free(d.klen)
    free(d.arena)


cdef int _dict_grow_arrays(Dict *d) noexcept nogil:
    cdef int64_t room = d.room * 2
    cdef void *p
    p = realloc(d.keys, room * sizeof(int64_t))
    if p == NULL:
        return -1
    d.keys = <int64_t *> p
    p = realloc(d.first_row, room * sizeof(int64_t))
    if p == NULL:
        return -1
    d.first_row = <int64_t *> p
    p = realloc(d.counts, room * sizeof(int64_t))
    if p == NULL:
        return -1
    d.counts = <int64_t *> p
    p = realloc(d.jhash, room * sizeof(int32_t))
    if p == NULL:
        return -1
    d.jhash = <int32_t *> p
    p = realloc(d.kpos, room * sizeof(int64_t))
    if p == NULL:
        return -1
    d.kpos = <int64_t *> p
    p = realloc(d.klen, room * sizeof(int64_t))
    if p == NULL:
        return -1
    d.klen = <int64_t *> p
    d.room = room
    return 0


cdef int _arena_add(Dict *d, int64_t idx, const uint8_t *p, int64_t n) noexcept nogil:
    cdef int64_t cap = d.arena_cap
    cdef void *q
    if d.arena_len + n > cap:
        while d.arena_len + n > cap:
            cap *= 2
        q = realloc(d.arena, cap)
        if q == NULL:
            return -1
        d.arena = <uint8_t *> q
        d.arena_cap = cap
    if n:
        memcpy(d.arena + d.arena_len, p, n)
    d.kpos[idx] = d.arena_len
    d.klen[idx] = n
    d.arena_len += n
    return 0


cdef inline uint64_t _load_tail(const uint8_t *p, Py_ssize_t n) noexcept nogil:
    """Up to 8 bytes as a little-endian word (no library call)."""
    cdef uint64_t w = 0
    cdef Py_ssize_t k
    for k in range(n):
        w |= (<uint64_t> p[k]) << (8 * k)
    return w


cdef inline bint _same_bytes(const uint8_t *a, const uint8_t *b, Py_ssize_t n) noexcept nogil:
    cdef uint64_t x, y, x2, y2
    if n >= 8 and n <= 16:  # two overlapping word compares
        memcpy(&x, a, 8)
        memcpy(&y, b, 8)
        memcpy(&x2, a + n - 8, 8)
        memcpy(&y2, b + n - 8, 8)
        return x == y and x2 == y2
    if n < 8:
        return _load_tail(a, n) == _load_tail(b, n)
    return memcmp(a, b, n) == 0


cdef int _dict_rehash(Dict *d) noexcept nogil:
    """Double the slot table (keys are values or fingerprints, both hashed with _mix64)."""
    cdef int64_t cap = d.cap * 2, mask = cap - 1, i, s
    cdef Slot *slots = <Slot *> malloc(cap * sizeof(Slot))
    if slots == NULL:
        return -1
    for i in range(cap):
        slots[i].id = -1
    for i in range(d.n):
        s = <int64_t> (_mix64(<uint64_t> d.keys[i]) & <uint64_t> mask)
        while slots[s].id >= 0:
            s = (s + 1) & mask
        slots[s].key = d.keys[i]
        slots[s].id = i
    free(d.slots)
    d.slots = slots
    d.cap = cap
    return 0


cdef inline uint64_t _fingerprint(const uint8_t *p, Py_ssize_t n) noexcept nogil:
    """A fast 64-bit hash of a byte string (table placement only; equality is
    always confirmed on the bytes)."""
    cdef uint64_t h = 0x9E3779B97F4A7C15ULL ^ (<uint64_t> n * 0xff51afd7ed558ccdULL), w
    cdef Py_ssize_t i = 0
    while i + 8 <= n:
        memcpy(&w, p + i, 8)
        h = (h ^ _mix64(w)) * 0x9E3779B97F4A7C15ULL
        i += 8
    if i < n:
        h = (h ^ _mix64(_load_tail(p + i, n - i) + 1)) * 0x9E3779B97F4A7C15ULL
    return _mix64(h)


cdef object _dict_result(Dict *d, codes):
    cdef int64_t D = d.n, i
    first = np.empty(D, dtype=np.int64)
    counts = np.empty(D, dtype=np.int64)
    jh = np.empty(D, dtype=np.int32)
    cdef int64_t[::1] f = first
    cdef int64_t[::1] c = counts
    cdef int32_t[::1] j = jh
    for i in range(D):
        f[i] = d.first_row[i]
        c[i] = d.counts[i]
        j[i] = d.jhash[i]
    return codes, first, counts, jh


def group_fixed(const intlike[::1] keys, const uint8_t[::1] valid=None, int hash_mode=HASH_INT):
    """Dictionary-encode a fixed-width key column.

    Returns ``(codes, first_row, counts, java_hash)``: ``codes[i]`` is the
    value id of row i (-1 for a null row, i.e. ``valid[i] == 0``); ids are
    given in first-appearance order; ``first_row``/``counts`` (int64) and the
    Java ``hashCode()`` (int32, per ``hash_mode``) are per id.
    """
    cdef Py_ssize_t i, n = keys.shape[0]
    cdef bint has_valid = valid is not None
    if has_valid and valid.shape[0] != n:
        raise ValueError("validity mask length differs from keys")
    if n >= 2**31:
        raise ValueError("a bitmap index holds at most 2^31 - 1 rows")
    codes = np.empty(n, dtype=np.int32)
    cdef int32_t[::1] co = codes
    cdef Dict d
    cdef int err = _dict_init(&d)
    cdef int64_t v, s, mask, idx, vmin = INT64_MAX, vmax = INT64_MIN, t
    cdef uint64_t span = 0
    cdef int32_t id_
    cdef int32_t *table = NULL
    cdef bint direct = False, any_valid = False
    try:
        if err:
            raise MemoryError()
        with nogil:
            # small value range (dates, codes, ids): a direct lookup table instead of hashing
            for i in range(n):
                if has_valid and not valid[i]:
                    continue
                any_valid = True
                v = <int64_t> keys[i]
                if v < vmin:
                    vmin = v
                if v > vmax:
                    vmax = v
            if any_valid:
                span = <uint64_t> vmax - <uint64_t> vmin
                if span < (1 << 26) and span < <uint64_t> max(1 << 16, 2 * n):
                    table = <int32_t *> malloc((span + 1) * sizeof(int32_t))
                    if table != NULL:
                        memset(table, 0xFF, (span + 1) * sizeof(int32_t))
                        direct = True
            if direct:
                for i in range(n):
                    if has_valid and not valid[i]:
                        co[i] = -1
                        continue
                    v = <int64_t> keys[i]
                    t = <int64_t> (<uint64_t> v - <uint64_t> vmin)
                    id_ = table[t]
                    if id_ < 0:
                        idx = d.n
                        if idx == d.room and _dict_grow_arrays(&d):
                            err = -1
                            break
                        d.keys[idx] = v
                        d.first_row[idx] = i
                        d.counts[idx] = 1
                        d.jhash[idx] = _java_hash(v, hash_mode)
                        d.n = idx + 1
                        id_ = <int32_t> idx
                        table[t] = id_
                    else:
                        d.counts[id_] += 1
                    co[i] = id_
            else:
                mask = d.cap - 1
                for i in range(n):
                    if has_valid and not valid[i]:
                        co[i] = -1
                        continue
                    v = <int64_t> keys[i]
                    s = <int64_t> (_mix64(<uint64_t> v) & <uint64_t> mask)
                    while True:
                        id_ = <int32_t> d.slots[s].id
                        if id_ < 0:
                            idx = d.n
                            if idx == d.room and _dict_grow_arrays(&d):
                                err = -1
                                break
                            d.keys[idx] = v
                            d.first_row[idx] = i
                            d.counts[idx] = 1
                            d.jhash[idx] = _java_hash(v, hash_mode)
                            d.slots[s].key = v
                            d.slots[s].id = idx
                            d.n = idx + 1
                            id_ = <int32_t> idx
                            if d.n * (4 if d.cap <= 65536 else 2) > d.cap:
                                if _dict_rehash(&d):
                                    err = -1
                                    break
                                mask = d.cap - 1
                            break
                        if d.slots[s].key == v:
                            d.counts[id_] += 1
                            break
                        s = (s + 1) & mask
                    if err:
                        break
                    co[i] = id_
        if err:
            raise MemoryError()
        return _dict_result(&d, codes)
    finally:
        free(table)
        _dict_free(&d)


def group_binary(const offset_t[::1] offsets, const uint8_t[::1] data, const uint8_t[::1] valid=None):
    """Dictionary-encode a string column given as Arrow offsets + data.

    Same result as :func:`group_fixed`; the Java hash is ``BinaryString.hashCode()``.
    """
    cdef Py_ssize_t i, n = offsets.shape[0] - 1
    if n < 0:
        raise ValueError("offsets needs at least one element")
    check_offsets(offsets, data.shape[0])
    cdef bint has_valid = valid is not None
    if has_valid and valid.shape[0] != n:
        raise ValueError("validity mask length differs from values")
    if n >= 2**31:
        raise ValueError("a bitmap index holds at most 2^31 - 1 rows")
    codes = np.empty(n, dtype=np.int32)
    cdef int32_t[::1] co = codes
    cdef const uint8_t *dp = &data[0] if data.shape[0] else <const uint8_t *> ""
    cdef Dict d
    cdef int err = _dict_init(&d)
    cdef int64_t s, mask, idx, a, ln, fp
    cdef int32_t id_
    try:
        if err:
            raise MemoryError()
        with nogil:
            mask = d.cap - 1
            for i in range(n):
                if has_valid and not valid[i]:
                    co[i] = -1
                    continue
                a = offsets[i]
                ln = offsets[i + 1] - a
                fp = <int64_t> _fingerprint(dp + a, ln)
                s = <int64_t> (_mix64(<uint64_t> fp) & <uint64_t> mask)
                while True:
                    id_ = <int32_t> d.slots[s].id
                    if id_ < 0:
                        idx = d.n
                        if idx == d.room and _dict_grow_arrays(&d):
                            err = -1
                            break
                        if _arena_add(&d, idx, dp + a, ln):
                            err = -1
                            break
                        d.keys[idx] = fp
                        d.first_row[idx] = i
                        d.counts[idx] = 1
                        d.jhash[idx] = java_string_hash(dp + a, ln)  # once per distinct value
                        d.slots[s].key = fp
                        d.slots[s].id = idx
                        d.n = idx + 1
                        id_ = <int32_t> idx
                        if d.n * (4 if d.cap <= 65536 else 2) > d.cap:
                            if _dict_rehash(&d):
                                err = -1
                                break
                            mask = d.cap - 1
                        break
                    if d.slots[s].key == fp and d.klen[id_] == ln and _same_bytes(dp + a, d.arena + d.kpos[id_], ln):
                        d.counts[id_] += 1
                        break
                    s = (s + 1) & mask
                if err:
                    break
                co[i] = id_
        if err:
            raise MemoryError()
        return _dict_result(&d, codes)
    finally:
        _dict_free(&d)


# ---------------------------------------------------------------- Java HashMap order

cdef inline int64_t _bucket(int32_t h, int64_t table) noexcept nogil:
    cdef uint32_t u = <uint32_t> h
    return <int64_t> ((u ^ (u >> 16)) & <uint32_t> (table - 1))


cdef int _recount(int32_t *cnt, const int32_t[::1] jhash, int64_t upto, int64_t table) noexcept nogil:
    cdef int64_t k
    memset(cnt, 0, table * sizeof(int32_t))
    for k in range(upto):
        cnt[_bucket(jhash[k], table)] += 1
    return 0


def java_order(const int32_t[::1] jhash, bint trailing_call):
    """Iteration order of the writer's ``java.util.HashMap``.

    ``jhash`` holds the ``hashCode()`` of each distinct key in insertion
    (first-appearance) order; ``trailing_call`` says whether any
    ``computeIfAbsent`` call came after the last insertion (i.e. the last
    non-null row repeats an earlier value).  Replays the table growth (16
    buckets, load 0.75, a resize at the start of a call once ``size >
    threshold``, and the extra resize ``treeifyBin`` does for a bin of 8 in a
    table smaller than 64), then orders keys by final bucket, and inside a
    bucket by reverse insertion (``computeIfAbsent`` links new nodes at the
    head; resizes keep relative order).

    Returns ``(order, table_size, tree_bins)``: ids in iteration order, the
    final table length, and how many times a bin of >= 8 keys would have been
    turned into a red-black tree (not modelled: the order inside such a bin
    may then differ from Java's; 0 in all realistic data).
    """
    cdef int64_t D = jhash.shape[0], k, b, table = 16, thr = 12, tree_bins = 0
    order = np.empty(D, dtype=np.int64)
    cdef int64_t[::1] o = order
    cdef int32_t *cnt = NULL
    cdef int64_t cnt_room = 0
    cdef int err = 0
    if D == 0:
        return order, 0, 0
    cdef int64_t *start = NULL
    try:
        with nogil:
            cnt_room = 16
            cnt = <int32_t *> calloc(cnt_room, sizeof(int32_t))
            if cnt == NULL:
                err = 1
            k = 0
            while not err and k < D:
                if k > thr:
                    table *= 2
                    thr *= 2
                    if table > cnt_room:
                        free(cnt)
                        cnt_room = table
                        cnt = <int32_t *> malloc(cnt_room * sizeof(int32_t))
                        if cnt == NULL:
                            err = 1
                            break
                    _recount(cnt, jhash, k, table)
                b = _bucket(jhash[k], table)
                cnt[b] += 1
                if cnt[b] >= TREEIFY_THRESHOLD:
                    if table < MIN_TREEIFY_CAPACITY:
                        table *= 2
                        thr *= 2
                        if table > cnt_room:
                            free(cnt)
                            cnt_room = table
                            cnt = <int32_t *> malloc(cnt_room * sizeof(int32_t))
                            if cnt == NULL:
                                err = 1
                                break
                        _recount(cnt, jhash, k + 1, table)
                    else:
                        tree_bins += 1
                k += 1
            if not err:
                if trailing_call and D > thr:
                    table *= 2
                    thr *= 2
                # counting sort by final bucket, reverse insertion inside a bucket
                start = <int64_t *> calloc(table + 1, sizeof(int64_t))
                if start == NULL:
                    err = 1
            if not err:
                for k in range(D):
                    start[_bucket(jhash[k], table) + 1] += 1
                for b in range(table):
                    start[b + 1] += start[b]
                k = D - 1
                while k >= 0:
                    b = _bucket(jhash[k], table)
                    o[start[b]] = k
                    start[b] += 1
                    k -= 1
        if err:
            raise MemoryError()
        return order, table, tree_bins
    finally:
        free(cnt)
        free(start)


def scatter_positions(const int32_t[::1] codes, const int64_t[::1] order, const int64_t[::1] counts):
    """Row positions of every value seen in >= 2 rows, grouped in ``order``.

    Returns ``(positions uint32, bounds int64[G+1], multi_ids int64[G])``:
    group g (value ``multi_ids[g]``) owns ``positions[bounds[g]:bounds[g+1]]``,
    ascending.  Single-row values are left out (Java stores them as
    ``-1 - row`` without a bitmap).
    """
    cdef Py_ssize_t n = codes.shape[0], D = order.shape[0], i, g = 0
    if counts.shape[0] != D:
        raise ValueError("order and counts differ in length")
    cursor_arr = np.full(D, -1, dtype=np.int64)
    cdef int64_t[::1] cursor = cursor_arr
    cdef int64_t acc = 0, G = 0, id_
    cdef bint bad = False
    for i in range(D):
        id_ = order[i]
        if id_ < 0 or id_ >= D:
            raise ValueError("order holds an id outside [0, D)")
        if counts[id_] >= 2:
            G += 1
    bounds_arr = np.empty(G + 1, dtype=np.int64)
    multi_arr = np.empty(G, dtype=np.int64)
    cdef int64_t[::1] bounds = bounds_arr
    cdef int64_t[::1] multi = multi_arr
    bounds[0] = 0
    for i in range(D):
        id_ = order[i]
        if counts[id_] >= 2:
            cursor[id_] = acc
            acc += counts[id_]
            multi[g] = id_
            g += 1
            bounds[g] = acc
    pos_arr = np.empty(acc, dtype=np.uint32)
    cdef uint32_t[::1] pos = pos_arr
    cdef int32_t c
    with nogil:
        for i in range(n):
            c = codes[i]
            if c >= 0:
                if c >= D:
                    bad = True
                    break
                if cursor[c] >= 0:
                    if cursor[c] >= acc:
                        bad = True
                        break
                    pos[cursor[c]] = <uint32_t> i
                    cursor[c] += 1
    if bad:
        raise ValueError("codes do not match counts")
    return pos_arr, bounds_arr, multi_arr


def group_dense_fixed(const intlike[::1] keys, const uint8_t[::1] valid=None, int hash_mode=HASH_INT,
                      int max_values=16):
    """One pass for few distinct values: dictionary-encode and set each row's
    bit in its value's bit set at once (no per-row codes array, no second pass).

    Returns ``(first_row, counts, java_hash, bits)`` with ``bits`` a
    ``(D, words)`` uint64 array (one bit set per value, ids in first-appearance
    order, each 65536-row container = 1024 words), or ``None`` as soon as
    more than ``max_values`` distinct values appear (use :func:`group_fixed`).
    """
    cdef Py_ssize_t i, n = keys.shape[0]
    cdef bint has_valid = valid is not None
    if has_valid and valid.shape[0] != n:
        raise ValueError("validity mask length differs from keys")
    if n >= 2**31:
        raise ValueError("a bitmap index holds at most 2^31 - 1 rows")
    if max_values < 1 or max_values > 256:
        raise ValueError("max_values must be in [1, 256]")
    cdef Py_ssize_t words = ((n + 65535) >> 16) * 1024
    bits_arr = np.zeros((max_values, max(words, 1024)), dtype=np.uint64)
    cdef uint64_t[:, ::1] bits = bits_arr
    first = np.empty(max_values, dtype=np.int64)
    counts = np.zeros(max_values, dtype=np.int64)
    jh = np.empty(max_values, dtype=np.int32)
    cdef int64_t[::1] fr = first
    cdef int64_t[::1] cn = counts
    cdef int32_t[::1] jv = jh
    cdef int64_t ukeys[256]
    cdef int32_t slot_id[1024]
    cdef int64_t slot_key[1024]
    cdef int64_t v, s, D = 0
    cdef int32_t id_
    cdef bint over = False
    for i in range(1024):
        slot_id[i] = -1
    with nogil:
        for i in range(n):
            if has_valid and not valid[i]:
                continue
            v = <int64_t> keys[i]
            s = <int64_t> (_mix64(<uint64_t> v) & 1023)
            while True:
                id_ = slot_id[s]
                if id_ < 0:
                    if D == max_values:
                        over = True
                        break
                    id_ = <int32_t> D
                    slot_id[s] = id_
                    slot_key[s] = v
                    ukeys[D] = v
                    fr[D] = i
                    jv[D] = _java_hash(v, hash_mode)
                    D += 1
                    break
                if slot_key[s] == v:
                    break
                s = (s + 1) & 1023
            if over:
                break
            cn[id_] += 1
            bits[id_, i >> 6] |= (<uint64_t> 1) << (i & 63)
    if over:
        return None
    return first[:D].copy(), counts[:D].copy(), jh[:D].copy(), bits_arr[:D]


def dense_from_bits(const uint64_t[:, ::1] bits, const int64_t[::1] order, const int64_t[::1] counts):
    """Like :func:`dense_serialize` from the bit sets of :func:`group_dense_fixed`:
    ``(blob, sizes, multi_ids)`` for the values of >= 2 rows, in ``order``."""
    cdef Py_ssize_t D = order.shape[0], i, g
    if counts.shape[0] != D or bits.shape[0] != D:
        raise ValueError("bits, order and counts differ in length")
    if bits.shape[1] % 1024:
        raise ValueError("bit sets must be whole 1024-word containers")
    cdef size_t nchunks = bits.shape[1] // 1024
    cdef int64_t G = 0, id_
    for i in range(D):
        id_ = order[i]
        if id_ < 0 or id_ >= D:
            raise ValueError("order holds an id outside [0, D)")
        if counts[id_] >= 2:
            G += 1
    multi_arr = np.empty(G, dtype=np.int64)
    sizes_arr = np.empty(G, dtype=np.int64)
    cdef int64_t[::1] multi = multi_arr
    cdef int64_t[::1] sizes = sizes_arr
    g = 0
    for i in range(D):
        id_ = order[i]
        if counts[id_] >= 2:
            multi[g] = id_
            g += 1
    if G == 0:
        return b"", sizes_arr, multi_arr
    cdef uint32_t *card = <uint32_t *> malloc(G * nchunks * sizeof(uint32_t))
    cdef uint32_t *nruns = <uint32_t *> malloc(G * nchunks * sizeof(uint32_t))
    cdef const uint64_t **cw = <const uint64_t **> malloc(G * nchunks * sizeof(uint64_t *))
    cdef uint32_t *keys = <uint32_t *> malloc(nchunks * sizeof(uint32_t))
    cdef int64_t total = 0
    cdef uint8_t *op
    cdef size_t ch
    try:
        if card == NULL or nruns == NULL or cw == NULL or keys == NULL:
            raise MemoryError()
        with nogil:
            for ch in range(nchunks):
                keys[ch] = <uint32_t> ch
            for g in range(G):
                for ch in range(nchunks):
                    cw[g * nchunks + ch] = &bits[multi[g], ch * 1024]
                sizes[g] = pf_dense_size(cw + g * nchunks, nchunks, card + g * nchunks, nruns + g * nchunks)
                total += sizes[g]
        out = PyBytes_FromStringAndSize(NULL, total)
        op = <uint8_t *> PyBytes_AS_STRING(out)
        with nogil:
            for g in range(G):
                op += pf_dense_write(cw + g * nchunks, keys, nchunks, card + g * nchunks, nruns + g * nchunks, op)
        return out, sizes_arr, multi_arr
    finally:
        free(card)
        free(nruns)
        free(cw)
        free(keys)


def dense_serialize(const int32_t[::1] codes, const int64_t[::1] order, const int64_t[::1] counts):
    """:func:`scatter_positions` + ``roaring.serialize_groups32`` in one step for
    few values: one bit set per multi-row value (a single pass over the rows),
    then Java's portable bytes straight from the bit sets.

    Returns ``(blob, sizes, multi_ids)`` exactly as the two-step path.  Memory:
    ``groups * ceil(rows / 65536) * 8 KiB``; the caller decides when it pays.
    """
    cdef Py_ssize_t n = codes.shape[0], D = order.shape[0], i, g = 0
    if counts.shape[0] != D:
        raise ValueError("order and counts differ in length")
    rank_arr = np.full(D, -1, dtype=np.int32)
    cdef int32_t[::1] rank = rank_arr
    cdef int64_t G = 0, id_
    for i in range(D):
        id_ = order[i]
        if id_ < 0 or id_ >= D:
            raise ValueError("order holds an id outside [0, D)")
        if counts[id_] >= 2:
            rank[id_] = <int32_t> G
            G += 1
    multi_arr = np.empty(G, dtype=np.int64)
    cdef int64_t[::1] multi = multi_arr
    for i in range(D):
        id_ = order[i]
        if rank[id_] >= 0:
            multi[rank[id_]] = id_
    cdef size_t nchunks = (n + 65535) >> 16
    cdef size_t words = nchunks * 1024
    sizes_arr = np.empty(G, dtype=np.int64)
    cdef int64_t[::1] sizes = sizes_arr
    if G == 0:
        return b"", sizes_arr, multi_arr
    cdef uint64_t *bits = <uint64_t *> calloc(G * words, sizeof(uint64_t))
    cdef uint32_t *card = <uint32_t *> malloc(G * nchunks * sizeof(uint32_t))
    cdef uint32_t *nruns = <uint32_t *> malloc(G * nchunks * sizeof(uint32_t))
    cdef const uint64_t **cw = <const uint64_t **> malloc(G * nchunks * sizeof(uint64_t *))
    cdef uint32_t *keys = <uint32_t *> malloc(nchunks * sizeof(uint32_t))
    cdef int32_t c, r
    cdef int64_t total = 0
    cdef bint bad = False
    cdef uint8_t *op
    cdef size_t ch
    try:
        if bits == NULL or card == NULL or nruns == NULL or cw == NULL or keys == NULL:
            raise MemoryError()
        with nogil:
            for ch in range(nchunks):
                keys[ch] = <uint32_t> ch
            for ch in range(G * nchunks):
                cw[ch] = bits + ch * 1024
            for i in range(n):
                c = codes[i]
                if c >= 0:
                    if c >= D:
                        bad = True
                        break
                    r = rank[c]
                    if r >= 0:
                        bits[r * words + (i >> 6)] |= (<uint64_t> 1) << (i & 63)
            if not bad:
                for g in range(G):
                    sizes[g] = pf_dense_size(cw + g * nchunks, nchunks, card + g * nchunks, nruns + g * nchunks)
                    total += sizes[g]
        if bad:
            raise ValueError("codes do not match counts")
        out = PyBytes_FromStringAndSize(NULL, total)
        op = <uint8_t *> PyBytes_AS_STRING(out)
        with nogil:
            for g in range(G):
                op += pf_dense_write(cw + g * nchunks, keys, nchunks, card + g * nchunks, nruns + g * nchunks, op)
        return out, sizes_arr, multi_arr
    finally:
        free(bits)
        free(card)
        free(nruns)
        free(cw)
        free(keys)


# ---------------------------------------------------------------- V2 layout and packing

def v2_layout(const int64_t[::1] entry_bytes, int64_t limit):
    """Pack key-sorted entries into V2 index blocks.

    ``entry_bytes[i]`` = serialized size of entry i (key + 8).  A block is
    ``4 + sum(entry bytes)``; an entry opens a new block when adding it would
    make the current one larger than ``limit`` (Java's ``tryAdd``).  Java
    throws when one entry alone does not fit (Paimon issue 9613); here such an
    entry gets a block of its own (larger than the limit), which Java's reader
    handles like any other block.

    Returns ``(bounds int64[B+1], offsets int32[B], total_bytes, oversize)``.
    """
    cdef Py_ssize_t D = entry_bytes.shape[0], i
    cdef int64_t cur = 4, count = 0, off = 0, B = 0, oversize = 0, e
    bounds_arr = np.empty(D + 1, dtype=np.int64)
    offs_arr = np.empty(max(D, 1), dtype=np.int64)
    cdef int64_t[::1] bounds = bounds_arr
    cdef int64_t[::1] offs = offs_arr
    if D == 0:
        return bounds_arr[:1] * 0, np.zeros(0, np.int32), 0, 0
    with nogil:
        bounds[0] = 0
        offs[0] = 0
        B = 1
        for i in range(D):
            e = entry_bytes[i]
            if cur + e <= limit:
                cur += e
                count += 1
            elif count == 0:
                cur += e
                count += 1
                oversize += 1
            else:
                off += cur
                offs[B] = off
                bounds[B] = i
                B += 1
                cur = 4 + e
                count = 1
                if cur > limit:
                    oversize += 1
        bounds[B] = D
        off += cur
    if off >= 2**31:
        raise ValueError("V2 index blocks exceed 2 GiB")
    return bounds_arr[:B + 1].copy(), offs_arr[:B].astype(np.int32), off, oversize


cdef inline void _put_be(uint8_t *p, int64_t v, int width) noexcept nogil:
    cdef int k
    for k in range(width):
        p[k] = <uint8_t> (v >> (8 * (width - 1 - k)))


def pack_fixed(const int64_t[::1] keys, int width, const int32_t[::1] a, const int32_t[::1] b=None,
               const int64_t[::1] blocks=None):
    """Big-endian entries ``key(width bytes), i32 a[i] [, i32 b[i]]``.

    With ``blocks`` (bounds, as from :func:`v2_layout`) each block starts
    with its ``i32`` entry count.
    """
    cdef Py_ssize_t n = keys.shape[0], i, g, nb
    if a.shape[0] != n or (b is not None and b.shape[0] != n):
        raise ValueError("entry columns differ in length")
    if width not in (1, 2, 4, 8):
        raise ValueError("key width must be 1, 2, 4 or 8")
    cdef bint has_b = b is not None
    cdef bint has_blocks = blocks is not None
    nb = blocks.shape[0] - 1 if has_blocks else 0
    cdef Py_ssize_t esize = width + 4 + (4 if has_b else 0)
    out = PyBytes_FromStringAndSize(NULL, n * esize + 4 * nb)
    cdef uint8_t *p = <uint8_t *> PyBytes_AS_STRING(out)
    if has_blocks:
        if blocks[0] != 0 or blocks[nb] != n:
            raise ValueError("block bounds do not cover the entries")
        for g in range(nb):
            if blocks[g + 1] < blocks[g]:
                raise ValueError("block bounds must be non-decreasing")
    with nogil:
        g = 0
        for i in range(n):
            if has_blocks:
                while g < nb and blocks[g] == i:
                    _put_be(p, blocks[g + 1] - blocks[g], 4)
                    p += 4
                    g += 1
            _put_be(p, keys[i], width)
            p += width
            _put_be(p, a[i], 4)
            p += 4
            if has_b:
                _put_be(p, b[i], 4)
                p += 4
        while has_blocks and g < nb:
            _put_be(p, blocks[g + 1] - blocks[g], 4)
            p += 4
            g += 1
    return out


def pack_binary(const offset_t[::1] offsets, const uint8_t[::1] data, const int64_t[::1] rows,
                const int32_t[::1] a, const int32_t[::1] b=None, const int64_t[::1] blocks=None):
    """Like :func:`pack_fixed` with keys ``i32 length + bytes`` of value ``rows[i]``."""
    cdef Py_ssize_t n = rows.shape[0], i, g, nb, nv = offsets.shape[0] - 1
    if a.shape[0] != n or (b is not None and b.shape[0] != n):
        raise ValueError("entry columns differ in length")
    check_offsets(offsets, data.shape[0])
    cdef bint has_b = b is not None
    cdef bint has_blocks = blocks is not None
    nb = blocks.shape[0] - 1 if has_blocks else 0
    cdef int64_t total = 4 * nb, r, ln
    for i in range(n):
        r = rows[i]
        if r < 0 or r >= nv:
            raise ValueError("row index outside the values")
        total += 8 + (4 if has_b else 0) + (offsets[r + 1] - offsets[r])
    if has_blocks:
        if blocks[0] != 0 or blocks[nb] != n:
            raise ValueError("block bounds do not cover the entries")
        for g in range(nb):
            if blocks[g + 1] < blocks[g]:
                raise ValueError("block bounds must be non-decreasing")
    out = PyBytes_FromStringAndSize(NULL, total)
    cdef uint8_t *p = <uint8_t *> PyBytes_AS_STRING(out)
    cdef const uint8_t *dp = &data[0] if data.shape[0] else <const uint8_t *> ""
    cdef Py_ssize_t k
    with nogil:
        g = 0
        for i in range(n):
            if has_blocks:
                while g < nb and blocks[g] == i:
                    _put_be(p, blocks[g + 1] - blocks[g], 4)
                    p += 4
                    g += 1
            r = rows[i]
            ln = offsets[r + 1] - offsets[r]
            _put_be(p, ln, 4)
            p += 4
            for k in range(ln):
                p[k] = dp[offsets[r] + k]
            p += ln
            _put_be(p, a[i], 4)
            p += 4
            if has_b:
                _put_be(p, b[i], 4)
                p += 4
        while has_blocks and g < nb:
            _put_be(p, blocks[g + 1] - blocks[g], 4)
            p += 4
            g += 1
    return out


# ---------------------------------------------------------------- reader: in-place binary search

cdef inline int64_t _get_be(const uint8_t *p, int width) noexcept nogil:
    cdef uint64_t v = 0
    cdef int k
    for k in range(width):
        v = (v << 8) | p[k]
    if width < 8 and (v >> (8 * width - 1)) & 1:
        v |= (~<uint64_t> 0) << (8 * width)
    return <int64_t> v


cdef inline int64_t _order_key(int64_t v, int mode) noexcept nogil:
    """Map a stored key to an int64 whose signed order is the Java comparator's."""
    cdef int32_t f
    if mode == 1:   # Float.compare: NaNs canonical and largest, -0.0 < 0.0
        f = <int32_t> v
        if (f & 0x7F800000) == 0x7F800000 and (f & 0x007FFFFF) != 0:
            f = 0x7FC00000
        return <int64_t> (f ^ 0x7FFFFFFF) if f < 0 else <int64_t> f
    if mode == 2:
        if (v & _D_EXP) == _D_EXP and (v & _D_MANT) != 0:
            v = _D_NAN
        return v ^ INT64_MAX if v < 0 else v
    if mode == 3:   # Boolean: any non-zero byte reads as true
        return 1 if v != 0 else 0
    return v


def order_key(int64_t v, int mode):
    """The comparator key of one stored value (see :func:`search_fixed`)."""
    return _order_key(v, mode)


def search_fixed(const uint8_t[::1] buf, Py_ssize_t pos, Py_ssize_t count, Py_ssize_t stride, int width,
                 int64_t key, int mode, bint exact):
    """Binary-search ``count`` fixed-width big-endian keys at ``buf[pos + i*stride]``.

    ``key`` is the probe already mapped with :func:`order_key`; ``mode`` is
    0 signed, 1 float bits, 2 double bits, 3 boolean.  Follows Java's
    ``Collections.binarySearch``: with ``exact`` returns the matching index
    or -1; otherwise the index of the last key <= probe (-1 if none), as
    ``BitmapFileIndexMetaV2.findBlock``.
    """
    if pos < 0 or count < 0 or stride < width or width not in (1, 2, 4, 8):
        raise ValueError("bad search window")
    if count and pos + (count - 1) * stride + width > buf.shape[0]:
        raise ValueError("search window outside the buffer")
    cdef Py_ssize_t lo = 0, hi = count - 1, mid, found = -1
    cdef int64_t v
    cdef const uint8_t *p = &buf[0] if buf.shape[0] else <const uint8_t *> ""
    with nogil:
        while lo <= hi:
            mid = (lo + hi) >> 1
            v = _order_key(_get_be(p + pos + mid * stride, width), mode)
            if v < key:
                lo = mid + 1
            elif v > key:
                hi = mid - 1
            else:
                found = mid
                break
    if found >= 0:
        return found
    return -1 if exact else lo - 1


cdef inline int _cmp_bytes(const uint8_t *a, Py_ssize_t na, const uint8_t *b, Py_ssize_t nb) noexcept nogil:
    cdef Py_ssize_t m = na if na < nb else nb
    cdef int c = memcmp(a, b, m) if m else 0
    if c != 0:
        return c
    return -1 if na < nb else (1 if na > nb else 0)


def search_binary(const uint8_t[::1] buf, Py_ssize_t pos, Py_ssize_t end, Py_ssize_t count, int n_ints,
                  const uint8_t[::1] key, bint exact):
    """Binary-search ``count`` entries ``(i32 len, bytes, n_ints x i32)`` in ``buf[pos:end]``.

    Keys compare as unsigned bytes, shorter prefix first
    (``BinaryString.compareTo``).  Returns ``(index, ints_pos)``: the index
    as :func:`search_fixed` and the position of the entry's first int (-1
    when not found).  Raises ValueError if the entries overrun ``end``.
    """
    if pos < 0 or end > buf.shape[0] or pos > end or count < 0 or n_ints < 0:
        raise ValueError("bad search window")
    cdef Py_ssize_t min_entry = 4 + 4 * n_ints
    if count > (end - pos) // min_entry:
        raise ValueError(f"{count} entries cannot fit in {end - pos} bytes")
    cdef Py_ssize_t *starts = <Py_ssize_t *> malloc((count + 1) * sizeof(Py_ssize_t))
    if starts == NULL:
        raise MemoryError()
    cdef const uint8_t *p = &buf[0] if buf.shape[0] else <const uint8_t *> ""
    cdef const uint8_t *kp = &key[0] if key.shape[0] else <const uint8_t *> ""
    cdef Py_ssize_t nk = key.shape[0], i, q = pos, lo = 0, hi = count - 1, mid, ln, found = -2
    cdef int64_t l64
    cdef int c
    cdef bint bad = False
    try:
        with nogil:
            for i in range(count):
                if end - q < 4:
                    bad = True
                    break
                l64 = _get_be(p + q, 4)
                if l64 < 0 or l64 > end - q - 4 - 4 * n_ints:
                    bad = True
                    break
                starts[i] = q
                q += 4 + l64 + 4 * n_ints
            if not bad:
                while lo <= hi:
                    mid = (lo + hi) >> 1
                    ln = <Py_ssize_t> _get_be(p + starts[mid], 4)
                    c = _cmp_bytes(p + starts[mid] + 4, ln, kp, nk)
                    if c < 0:
                        lo = mid + 1
                    elif c > 0:
                        hi = mid - 1
                    else:
                        found = mid
                        break
        if bad:
            raise ValueError(f"entry {i} overruns its window at offset {q}")
        if found >= 0:
            return found, starts[found] + 4 + <Py_ssize_t> _get_be(p + starts[found], 4)
        if exact:
            return -1, -1
        if lo - 1 < 0:
            return -1, -1
        i = lo - 1
        return i, starts[i] + 4 + <Py_ssize_t> _get_be(p + starts[i], 4)
    finally:
        free(starts)


def scan_binary(const uint8_t[::1] buf, Py_ssize_t pos, Py_ssize_t end, Py_ssize_t count, int n_ints):
    """Walk ``count`` entries ``(i32 len, bytes, n_ints x i32)``.

    Returns ``(key_starts int64, key_lens int64, ints int32[count, n_ints], end_pos)``
    or ``None`` when the entries run past ``end`` (the caller may read more).
    Negative key lengths raise ValueError.
    """
    if pos < 0 or end > buf.shape[0] or pos > end or count < 0 or n_ints < 0:
        raise ValueError("bad scan window")
    cdef Py_ssize_t min_entry = 4 + 4 * n_ints
    if count > (end - pos) // min_entry:
        return None
    ks = np.empty(count, dtype=np.int64)
    kl = np.empty(count, dtype=np.int64)
    ints = np.empty((count, n_ints), dtype=np.int32)
    cdef int64_t[::1] ksv = ks
    cdef int64_t[::1] klv = kl
    cdef int32_t[:, ::1] iv = ints
    cdef const uint8_t *p = &buf[0] if buf.shape[0] else <const uint8_t *> ""
    cdef Py_ssize_t i, q = pos, j
    cdef int64_t l64
    cdef int state = 0
    with nogil:
        for i in range(count):
            if end - q < 4:
                state = 1
                break
            l64 = _get_be(p + q, 4)
            if l64 < 0:
                state = 2
                break
            if l64 > end - q - 4 - 4 * n_ints:
                state = 1
                break
            ksv[i] = q + 4
            klv[i] = l64
            q += 4 + l64
            for j in range(n_ints):
                iv[i, j] = <int32_t> _get_be(p + q, 4)
                q += 4
    if state == 1:
        return None
    if state == 2:
        raise ValueError(f"negative key length at offset {q}")
    return ks, kl, ints, q


# ---------------------------------------------------------------- V2 key order

def sort_fixed(const int64_t[::1] keys, int mode):
    """Indices that sort distinct fixed-width keys by the V2 comparator
    (``mode`` as :func:`search_fixed`).  A counting table when the keys span
    a small range, else an LSD radix sort (16-bit digits); no comparisons."""
    cdef Py_ssize_t D = keys.shape[0], i
    out = np.empty(D, dtype=np.int64)
    cdef int64_t[::1] o = out
    if D == 0:
        return out
    cdef uint64_t *u = <uint64_t *> malloc(D * sizeof(uint64_t))
    cdef uint64_t *u2 = NULL
    cdef int64_t *idx2 = NULL
    cdef int64_t *tab = NULL
    cdef uint64_t umin = 0xFFFFFFFFFFFFFFFFULL, umax = 0, span, c
    cdef int64_t *cnt = NULL
    cdef int shift, err = 0
    cdef Py_ssize_t d
    if u == NULL:
        raise MemoryError()
    try:
        with nogil:
            for i in range(D):
                # signed order -> unsigned order by flipping the sign bit
                u[i] = <uint64_t> _order_key(keys[i], mode) ^ 0x8000000000000000ULL
                if u[i] < umin:
                    umin = u[i]
                if u[i] > umax:
                    umax = u[i]
            span = umax - umin
            if span < <uint64_t> (4 * D + 65536):
                tab = <int64_t *> malloc((span + 1) * sizeof(int64_t))
                if tab == NULL:
                    err = 1
                else:
                    memset(tab, 0xFF, (span + 1) * sizeof(int64_t))
                    for i in range(D):
                        tab[u[i] - umin] = i
                    d = 0
                    for c in range(span + 1):
                        if tab[c] >= 0:
                            o[d] = tab[c]
                            d += 1
            else:
                u2 = <uint64_t *> malloc(D * sizeof(uint64_t))
                idx2 = <int64_t *> malloc(D * sizeof(int64_t))
                cnt = <int64_t *> malloc(65537 * sizeof(int64_t))
                if u2 == NULL or idx2 == NULL or cnt == NULL:
                    err = 1
                else:
                    for i in range(D):
                        o[i] = i
                    for shift in range(0, 64, 16):
                        if ((umin ^ umax) >> shift) == 0:
                            break  # the remaining digits are equal for every key
                        memset(cnt, 0, 65537 * sizeof(int64_t))
                        for i in range(D):
                            cnt[((u[i] >> shift) & 0xFFFF) + 1] += 1
                        for c in range(65536):
                            cnt[c + 1] += cnt[c]
                        for i in range(D):
                            c = (u[i] >> shift) & 0xFFFF
                            u2[cnt[c]] = u[i]
                            idx2[cnt[c]] = o[i]
                            cnt[c] += 1
                        for i in range(D):
                            u[i] = u2[i]
                            o[i] = idx2[i]
        if err:
            raise MemoryError()
        return out
    finally:
        free(u)
        free(u2)
        free(idx2)
        free(tab)
        free(cnt)
