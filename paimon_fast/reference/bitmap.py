"""Pure-Python twin of ``_kernels/bitmap.pyx`` (same functions, same results).

Plain loops and dicts; the test oracle and the benchmark baseline.  It also
hands on :class:`JavaHashMap` (from :mod:`paimon_fast.fileindex.java_hashmap`),
a literal replay of ``java.util.HashMap``'s ``computeIfAbsent`` (bucket lists,
resize at the start of a call, insertion at the bucket head, order-preserving
splits, ``treeifyBin``'s resize for small tables) that the tests use to check
the shortcut :func:`java_order` takes.
"""

from __future__ import annotations

import struct

import numpy as np

# the HashMap model lives beside the bitmap writer that needs it; the twin hands it on
from ..fileindex.java_hashmap import M32, JavaHashMap, s32, java_order_exact, java_order_local  # noqa: F401

HASH_INT, HASH_LONG, HASH_BOOL = 0, 1, 2
CMP_SIGNED, CMP_FLOAT, CMP_DOUBLE, CMP_BOOL = 0, 1, 2, 3


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & M32


def java_string_hash(b: bytes) -> int:
    """``BinaryString.hashCode()`` (Paimon ``MurmurHashUtils.hashBytes``, seed 42)."""
    h1 = 42
    n = len(b)
    aligned = n - n % 4

    def mix(h1, k1):
        k1 = (k1 * 0xCC9E2D51) & M32
        k1 = _rotl(k1, 15)
        k1 = (k1 * 0x1B873593) & M32
        h1 ^= k1
        h1 = _rotl(h1, 13)
        return (h1 * 5 + 0xE6546B64) & M32

    for i in range(0, aligned, 4):
        h1 = mix(h1, int.from_bytes(b[i : i + 4], "little"))
    for i in range(aligned, n):
        h1 = mix(h1, (b[i] - 256 if b[i] >= 128 else b[i]) & M32)
    h1 ^= n
    h1 ^= h1 >> 16
    h1 = (h1 * 0x85EBCA6B) & M32
    h1 ^= h1 >> 13
    h1 = (h1 * 0xC2B2AE35) & M32
    h1 ^= h1 >> 16
    return s32(h1)


def java_hash(v: int, mode: int) -> int:
    """``hashCode()`` of a boxed Byte/Short/Integer/Float-bits (0), Long/Double-bits (1), Boolean (2)."""
    if mode == HASH_INT:
        return s32(v)
    if mode == HASH_LONG:
        u = v & 0xFFFFFFFFFFFFFFFF
        return s32(u ^ (u >> 32))
    return 1231 if v else 1237


def string_hashes(offsets, data):
    data = bytes(np.asarray(data, dtype=np.uint8))
    offs = [int(x) for x in offsets]
    return np.array([java_string_hash(data[offs[i] : offs[i + 1]]) for i in range(len(offs) - 1)], dtype=np.int32)


def _group(keys, valid, hasher):
    codes = []
    ids = {}
    first, counts, jh = [], [], []
    for i, k in enumerate(keys):
        if valid is not None and not valid[i]:
            codes.append(-1)
            continue
        j = ids.get(k)
        if j is None:
            j = ids[k] = len(first)
            first.append(i)
            counts.append(0)
            jh.append(hasher(k))
        counts[j] += 1
        codes.append(j)
    return (
        np.array(codes, dtype=np.int32),
        np.array(first, dtype=np.int64),
        np.array(counts, dtype=np.int64),
        np.array(jh, dtype=np.int32),
    )


def group_fixed(keys, valid=None, hash_mode=HASH_INT):
    """Twin of the kernel's ``group_fixed``."""
    return _group([int(k) for k in keys], valid, lambda k: java_hash(k, hash_mode))


def group_binary(offsets, data, valid=None):
    """Twin of the kernel's ``group_binary``."""
    data = bytes(np.asarray(data, dtype=np.uint8))
    offs = [int(x) for x in offsets]
    vals = [data[offs[i] : offs[i + 1]] for i in range(len(offs) - 1)]
    return _group(vals, valid, java_string_hash)


def _bucket(h: int, table: int) -> int:
    u = h & M32
    return (u ^ (u >> 16)) & (table - 1)


def java_order(jhash, trailing_call):
    """Twin of the kernel's ``java_order``: ``(order, table_size, tree_bins)``."""
    jhash = [int(h) for h in jhash]
    D = len(jhash)
    if D == 0:
        return np.zeros(0, np.int64), 0, 0
    table, thr, tree = 16, 12, 0
    bins = {}

    def recount(upto):
        bins.clear()
        for k in range(upto):
            b = _bucket(jhash[k], table)
            bins[b] = bins.get(b, 0) + 1

    for k in range(D):
        if k > thr:
            table, thr = table * 2, thr * 2
            recount(k)
        b = _bucket(jhash[k], table)
        bins[b] = bins.get(b, 0) + 1
        if bins[b] >= 8:
            if table < 64:
                table, thr = table * 2, thr * 2
                recount(k + 1)
            else:
                tree += 1
    if trailing_call and D > thr:
        table *= 2
    order = sorted(range(D), key=lambda k: (_bucket(jhash[k], table), -k))
    return np.array(order, dtype=np.int64), table, tree


def scatter_positions(codes, order, counts):
    """Twin of the kernel's ``scatter_positions``."""
    rows = {}
    for i, c in enumerate(codes):
        if c >= 0:
            rows.setdefault(int(c), []).append(i)
    pos, bounds, multi = [], [0], []
    for id_ in order:
        id_ = int(id_)
        if counts[id_] >= 2:
            pos.extend(rows[id_])
            bounds.append(len(pos))
            multi.append(id_)
    return np.array(pos, dtype=np.uint32), np.array(bounds, dtype=np.int64), np.array(multi, dtype=np.int64)


def dense_serialize(codes, order, counts):
    """Twin of the kernel's ``dense_serialize``: positions per value, then one
    bitmap at a time with the (Java-exact) roaring serializer."""
    from ..core.roaring import serialize32

    pos, bounds, multi = scatter_positions(codes, order, counts)
    blobs = [serialize32(pos[bounds[g] : bounds[g + 1]]) for g in range(len(multi))]
    return b"".join(blobs), np.array([len(b) for b in blobs], dtype=np.int64), multi


def group_dense_fixed(keys, valid=None, hash_mode=HASH_INT, max_values=16):
    """Twin of the kernel's ``group_dense_fixed``."""
    n = len(keys)
    words = max(((n + 65535) >> 16) * 1024, 1024)
    codes, first, counts, jh = group_fixed(keys, valid, hash_mode)
    if len(first) > max_values:
        return None
    bits = np.zeros((len(first), words), dtype=np.uint64)
    for i, c in enumerate(codes):
        if c >= 0:
            bits[c, i >> 6] |= np.uint64(1) << np.uint64(i & 63)
    return first, counts, jh, bits


def dense_from_bits(bits, order, counts):
    """Twin of the kernel's ``dense_from_bits``."""
    from ..core.roaring import serialize32

    blobs, multi = [], []
    for id_ in order:
        id_ = int(id_)
        if counts[id_] >= 2:
            rows = np.flatnonzero(np.unpackbits(bits[id_].view(np.uint8), bitorder="little"))
            blobs.append(serialize32(rows.astype(np.uint32)))
            multi.append(id_)
    return b"".join(blobs), np.array([len(b) for b in blobs], dtype=np.int64), np.array(multi, dtype=np.int64)


def v2_layout(entry_bytes, limit):
    """Twin of the kernel's ``v2_layout``: Java's ``BitmapIndexBlock.tryAdd``
    packing, an entry that fits no block getting one of its own."""
    entry_bytes = [int(e) for e in entry_bytes]
    if not entry_bytes:
        return np.zeros(1, np.int64), np.zeros(0, np.int32), 0, 0
    blocks = [[0, 4, []]]  # offset, serialized bytes, entries
    oversize = 0
    for i, e in enumerate(entry_bytes):
        last = blocks[-1]
        if last[1] + e <= limit:
            last[1] += e
            last[2].append(i)
            continue
        if not last[2]:
            oversize += 1
            last[1] += e
            last[2].append(i)
            continue
        nxt = [last[0] + last[1], 4, []]
        blocks.append(nxt)
        if nxt[1] + e > limit:
            oversize += 1
        nxt[1] += e
        nxt[2].append(i)
    bounds = [0]
    for b in blocks:
        bounds.append(bounds[-1] + len(b[2]))
    total = blocks[-1][0] + blocks[-1][1]
    return (np.array(bounds, dtype=np.int64), np.array([b[0] for b in blocks], dtype=np.int32), total, oversize)


def _be(v: int, width: int) -> bytes:
    return (v & ((1 << (8 * width)) - 1)).to_bytes(width, "big")


def _pack(keys_bytes, a, b, blocks):
    n = len(keys_bytes)
    out = bytearray()
    starts = {}
    if blocks is not None:
        for g in range(len(blocks) - 1):
            starts.setdefault(int(blocks[g]), []).append(int(blocks[g + 1] - blocks[g]))
    for i in range(n):
        for cnt in starts.get(i, ()):
            out += struct.pack(">i", cnt)
        out += keys_bytes[i]
        out += struct.pack(">i", int(a[i]))
        if b is not None:
            out += struct.pack(">i", int(b[i]))
    for cnt in starts.get(n, ()):
        out += struct.pack(">i", cnt)
    return bytes(out)


def pack_fixed(keys, width, a, b=None, blocks=None):
    """Twin of the kernel's ``pack_fixed``."""
    return _pack([_be(int(k), width) for k in keys], a, b, blocks)


def pack_binary(offsets, data, rows, a, b=None, blocks=None):
    """Twin of the kernel's ``pack_binary``."""
    data = bytes(np.asarray(data, dtype=np.uint8))
    ks = []
    for r in rows:
        r = int(r)
        v = data[int(offsets[r]) : int(offsets[r + 1])]
        ks.append(struct.pack(">i", len(v)) + v)
    return _pack(ks, a, b, blocks)


def order_key(v: int, mode: int) -> int:
    """Twin of the kernel's ``order_key``."""
    if mode == CMP_FLOAT:
        f = s32(v)
        if (f & 0x7F800000) == 0x7F800000 and (f & 0x007FFFFF):
            f = 0x7FC00000
        return f ^ 0x7FFFFFFF if f < 0 else f
    if mode == CMP_DOUBLE:
        if (v & 0x7FF0000000000000) == 0x7FF0000000000000 and (v & 0x000FFFFFFFFFFFFF):
            v = 0x7FF8000000000000
        return v ^ 0x7FFFFFFFFFFFFFFF if v < 0 else v
    if mode == CMP_BOOL:
        return 1 if v else 0
    return v


def _binary_search(n, cmp_at, exact):
    """``Collections.binarySearch`` loop; cmp_at(i) = compare(element i, probe)."""
    lo, hi = 0, n - 1
    while lo <= hi:
        mid = (lo + hi) >> 1
        c = cmp_at(mid)
        if c < 0:
            lo = mid + 1
        elif c > 0:
            hi = mid - 1
        else:
            return mid
    return -1 if exact else lo - 1


def search_fixed(buf, pos, count, stride, width, key, mode, exact):
    """Twin of the kernel's ``search_fixed``."""
    buf = bytes(buf)
    if count and pos + (count - 1) * stride + width > len(buf):
        raise ValueError("search window outside the buffer")

    def cmp_at(i):
        v = int.from_bytes(buf[pos + i * stride : pos + i * stride + width], "big", signed=True)
        v = order_key(v, mode)
        return (v > key) - (v < key)

    return _binary_search(count, cmp_at, exact)


def _entries(buf, pos, end, count, n_ints):
    out = []
    q = pos
    for _ in range(count):
        if end - q < 4:
            return None, q
        ln = int.from_bytes(buf[q : q + 4], "big", signed=True)
        if ln < 0:
            raise ValueError(f"negative key length at offset {q}")
        if ln > end - q - 4 - 4 * n_ints:
            return None, q
        out.append((q + 4, ln))
        q += 4 + ln + 4 * n_ints
    return out, q


def search_binary(buf, pos, end, count, n_ints, key, exact):
    """Twin of the kernel's ``search_binary``."""
    buf = bytes(buf)
    key = bytes(key)
    if count > (end - pos) // (4 + 4 * n_ints):
        raise ValueError(f"{count} entries cannot fit in {end - pos} bytes")
    ents, q = _entries(buf, pos, end, count, n_ints)
    if ents is None:
        raise ValueError(f"entries overrun their window at offset {q}")

    def cmp_at(i):
        s, ln = ents[i]
        k = buf[s : s + ln]
        return (k > key) - (k < key)

    i = _binary_search(count, cmp_at, exact)
    if i < 0:
        return -1, -1
    return i, ents[i][0] + ents[i][1]


def scan_binary(buf, pos, end, count, n_ints):
    """Twin of the kernel's ``scan_binary``."""
    buf = bytes(buf)
    if count > (end - pos) // (4 + 4 * n_ints):
        return None
    ents, q = _entries(buf, pos, end, count, n_ints)
    if ents is None:
        return None
    ints = np.array(
        [
            [int.from_bytes(buf[s + ln + 4 * j : s + ln + 4 * j + 4], "big", signed=True) for j in range(n_ints)]
            for s, ln in ents
        ],
        dtype=np.int32,
    ).reshape(count, n_ints)
    return (np.array([s for s, _ in ents], dtype=np.int64), np.array([ln for _, ln in ents], dtype=np.int64), ints, q)


def sort_fixed(keys, mode):
    """Twin of the kernel's ``sort_fixed``."""
    keys = [int(k) for k in keys]
    return np.array(sorted(range(len(keys)), key=lambda i: order_key(keys[i], mode)), dtype=np.int64)
