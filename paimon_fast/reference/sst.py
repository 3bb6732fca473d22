"""Plain-Python twins of ``paimon_fast/_kernels/sst.pyx``: Paimon's SST blocks (the BTree
global index's data and index blocks) written and read as the kernels do.

Same inputs and outputs as the kernels, written for clarity: the oracle in the
hypothesis tests and the baseline in the benchmarks.  A block is its entries
(``varint key length, key, varint value length, value``) then a tail: ``i32 LE
entry size`` + byte 0 when every entry has the same encoded length ("aligned"),
else one ``i32 LE`` start offset per entry, ``i32 LE`` count and byte 1.
"""

from __future__ import annotations

import struct
import zlib

import numpy as np

from ..errors import IndexFormatError
from .globalindex import get_varint, key_cmp, put_varint, varint_size

ALIGNED, UNALIGNED = 0, 1
TRAILER = 5


def _b(x) -> bytes:
    """Bytes of a bytes-like object or a uint8 array."""
    if isinstance(x, (bytes, bytearray, memoryview)):
        return bytes(x)
    return bytes(np.asarray(x, dtype=np.uint8))


# ---------------------------------------------------------------- writing


def block(entries) -> bytes:
    """A raw block of ``[(key bytes, value bytes), ...]`` (Java's ``BlockWriter.finish``)."""
    out = bytearray()
    positions = []
    sizes = set()
    for k, v in entries:
        positions.append(len(out))
        out += put_varint(len(k)) + k + put_varint(len(v)) + v
        sizes.add(len(out) - positions[-1])
    if entries and len(sizes) == 1:
        out += struct.pack("<i", sizes.pop()) + bytes((ALIGNED,))
    else:
        for p in positions:
            out += struct.pack("<i", p)
        out += struct.pack("<i", len(positions)) + bytes((UNALIGNED,))
    return bytes(out)


def row_id_value(rids) -> bytes:
    """A BTree entry's value: ``varint count`` + one ``varint64`` per row id."""
    return put_varint(len(rids)) + b"".join(put_varint(int(r)) for r in rids)


def btree_blocks(key_off, key_data, rids, bounds, block_size: int, frame: bool):
    """Data blocks of a BTree file from grouped keys (group g: key bytes
    ``key_data[key_off[g]:key_off[g+1]]``, row ids ``rids[bounds[g]:bounds[g+1]]``): a block is
    closed right after the entry that makes its ``memory()`` exceed ``block_size``.  Returns
    ``(body, offsets, sizes, last_group)``: the blocks one after another (each followed by an
    uncompressed trailer when ``frame``), each block's offset in ``body`` and raw size, and the
    index of its last group."""
    kd = _b(key_data)
    body = bytearray()
    offs, sizes, lasts = [], [], []
    pending = []
    nbytes, sizes_seen = 0, set()  # the pending block's entry bytes and entry sizes (Java's BlockWriter.memory())
    ng = len(bounds) - 1

    def close(last):
        raw = block(pending)
        offs.append(len(body))
        sizes.append(len(raw))
        lasts.append(last)
        body.extend(raw)
        if frame:
            body.extend(trailer(raw, 0))

    for g in range(ng):
        key = kd[int(key_off[g]) : int(key_off[g + 1])]
        value = row_id_value(rids[int(bounds[g]) : int(bounds[g + 1])])
        pending.append((key, value))
        esize = varint_size(len(key)) + len(key) + varint_size(len(value)) + len(value)
        nbytes += esize
        sizes_seen.add(esize)
        memory = nbytes + 5 + (0 if len(sizes_seen) == 1 else 4 * len(pending))
        if memory > block_size:
            close(g)
            pending, nbytes, sizes_seen = [], 0, set()
    if pending:
        close(ng - 1)
    return (
        bytes(body),
        np.array(offs, dtype=np.int64),
        np.array(sizes, dtype=np.int64),
        np.array(lasts, dtype=np.int64),
    )


def handle(offset: int, size: int) -> bytes:
    return put_varint(offset) + put_varint(size)


def index_block(key_off, key_data, last_group, offsets, sizes) -> bytes:
    """The raw index block: per data block, its last key and ``varint64 offset, varint32 size``."""
    kd = _b(key_data)
    return block(
        [
            (kd[int(key_off[g]) : int(key_off[g + 1])], handle(int(o), int(n)))
            for g, o, n in zip(last_group, offsets, sizes)
        ]
    )


def trailer(stored: bytes, ctype: int) -> bytes:
    return struct.pack("<BI", ctype, zlib.crc32(bytes((ctype,)), zlib.crc32(stored)))


# ---------------------------------------------------------------- reading


def _tail(b: bytes, base: int):
    n = len(b)
    if n < 5:
        raise IndexFormatError(f"block of {n} bytes is shorter than its tail", base)
    kind = b[n - 1]
    (v,) = struct.unpack_from("<i", b, n - 5)
    if kind == ALIGNED:
        end = n - 5
        if v <= 0 or end % v:
            raise IndexFormatError(f"aligned block entry size {v} does not divide its {end} bytes", base + n - 5)
        return list(range(0, end, v)), end
    if kind == UNALIGNED:
        if v < 0 or 4 * v > n - 5:
            raise IndexFormatError(f"block entry count {v} does not fit its {n} bytes", base + n - 5)
        end = n - 5 - 4 * v
        return [struct.unpack_from("<i", b, end + 4 * i)[0] for i in range(v)], end
    raise IndexFormatError(f"illegal block aligned type {kind}", base + n - 1)


def block_entries(raw, base: int = 0):
    """``(key starts, key lengths, value starts, value lengths)`` of a raw block; the entries
    must lie back to back from 0 to the tail, at the offsets the tail gives."""
    b = _b(raw)
    positions, end = _tail(b, base)
    ks, kl, vs, vl = [], [], [], []
    pos = 0
    for p in positions:
        if p != pos:
            raise IndexFormatError(f"block entry at {p}, expected at {pos}", base + pos)
        klen, pos = _varint(b, pos, end, 31, base)
        if klen > end - pos:
            raise IndexFormatError("block key runs past the entries", base + pos)
        ks.append(pos)
        kl.append(klen)
        pos += klen
        vlen, pos = _varint(b, pos, end, 31, base)
        if vlen > end - pos:
            raise IndexFormatError("block value runs past the entries", base + pos)
        vs.append(pos)
        vl.append(vlen)
        pos += vlen
    if pos != end:
        raise IndexFormatError(f"block entries end at {pos}, its tail at {end}", base + pos)
    return tuple(np.array(x, dtype=np.int64) for x in (ks, kl, vs, vl))


def _varint(b, pos, end, bits, base):
    try:
        v, p = get_varint(b[:end], pos, bits)
    except IndexFormatError:
        raise IndexFormatError("malformed var-int in block", base + pos) from None
    return v, p


def _keys(raw, base):
    b = _b(raw)
    ks, kl, vs, vl = block_entries(raw, base)
    return b, [b[s : s + n] for s, n in zip(ks.tolist(), kl.tolist())], vs, vl


def seek(kind: int, raw, key, base: int = 0) -> int:
    """Index of the first entry whose key is >= ``key`` (Java's ``BlockIterator.seekTo``), -1 if none."""
    key = _b(key)
    _, keys, _, _ = _keys(raw, base)
    for i, k in enumerate(keys):
        if key_cmp(kind, k, key) >= 0:
            return i
    return -1


def seek_handle(kind: int, raw, key, base: int = 0):
    """:func:`seek` with the found entry's handle: ``(i, offset, size)`` or None."""
    i = seek(kind, raw, key, base)
    if i < 0:
        return None
    offs, sizes = handles(raw, base)
    return i, int(offs[i]), int(sizes[i])


def handles(raw, base: int = 0):
    """``(offsets, sizes)`` of an index block's values (``varint64 offset, varint32 size``)."""
    b, _, vs, vl = _keys(raw, base)
    offs, sizes = [], []
    for s, n in zip(vs.tolist(), vl.tolist()):
        o, p = _varint(b, s, s + n, 63, base)
        size, p = _varint(b, p, s + n, 31, base)
        offs.append(o)
        sizes.append(size)
    return np.array(offs, dtype=np.int64), np.array(sizes, dtype=np.int64)


def entry_row_ids(raw, vstart: int, vlen: int, limit: int = -1, base: int = 0):
    """The row ids of one value (at most ``limit`` of them when >= 0)."""
    b = _b(raw)
    end = vstart + vlen
    count, p = _varint(b, vstart, end, 31, base)
    if count == 0:
        raise IndexFormatError("invalid row id count 0", base + vstart)
    take = count if limit < 0 else min(count, limit)
    out = []
    for _ in range(take):
        r, p = _varint(b, p, end, 63, base)
        out.append(r)
    return np.array(out, dtype=np.uint64)


def scan(kind: int, raw, lo, hi, flags: int, base: int = 0):
    """``(row ids, stop)``: the row ids of the block's entries whose key lies between ``lo``
    and ``hi`` (either None for no bound; ``flags`` bit 0: ``lo`` inclusive, bit 1: ``hi``
    inclusive), in entry order; ``stop`` when an entry above ``hi`` was met (later blocks hold
    none)."""
    b, keys, vs, vl = _keys(raw, base)
    lo = None if lo is None else _b(lo)
    hi = None if hi is None else _b(hi)
    out = []
    for k, s, n in zip(keys, vs.tolist(), vl.tolist()):
        if lo is not None:
            c = key_cmp(kind, k, lo)
            if c < 0 or (c == 0 and not flags & 1):
                continue
        if hi is not None:
            c = key_cmp(kind, k, hi)
            if c > 0 or (c == 0 and not flags & 2):
                return np.array(out, dtype=np.uint64), True
        out.extend(entry_row_ids(raw, s, n, -1, base).tolist())
    return np.array(out, dtype=np.uint64), False


# ---------------------------------------------------------------- bloom filter


def _i32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >> 31 else v


def _rotl(v: int, d: int) -> int:
    v &= 0xFFFFFFFF
    return ((v << d) | (v >> (32 - d))) & 0xFFFFFFFF


def murmur(data: bytes) -> int:
    """Java's ``MurmurHashUtils.hashBytes`` (seed 42; the tail bytes mixed one signed byte at a
    time), as a signed 32-bit int."""
    h = 42

    def mix(h, k):
        k = (k * 0xCC9E2D51) & 0xFFFFFFFF
        k = _rotl(k, 15)
        k = (k * 0x1B873593) & 0xFFFFFFFF
        h ^= k
        h = _rotl(h, 13)
        return (h * 5 + 0xE6546B64) & 0xFFFFFFFF

    n = len(data)
    aligned = n - n % 4
    for i in range(0, aligned, 4):
        h = mix(h, struct.unpack_from("<I", data, i)[0])
    for i in range(aligned, n):
        h = mix(h, data[i] - 256 if data[i] >= 128 else data[i])
    h ^= n
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & 0xFFFFFFFF
    h ^= h >> 16
    return _i32(h)


def bloom_hashes(expected: int, nbytes: int) -> int:
    """Java's ``BloomFilter.optimalNumOfHashFunctions`` for a filter of ``nbytes`` bytes."""
    import math

    return max(1, int(math.floor(nbytes * 8 / expected * math.log(2) + 0.5)))


def bloom_test(bits, num_hashes: int, key) -> bool:
    """Java's ``BloomFilter.testHash(hashBytes(key))`` over the filter's bytes with ``num_hashes``
    probes (:func:`bloom_hashes` of the filter's expected entries and size)."""
    bits = _b(bits)
    key = _b(key)
    h1 = murmur(key)
    h2 = (h1 & 0xFFFFFFFF) >> 16
    nbits = len(bits) * 8
    for i in range(1, num_hashes + 1):
        c = _i32(h1 + i * h2)
        if c < 0:
            c = ~c
        pos = c % nbits
        if not bits[pos >> 3] & (1 << (pos & 7)):
            return False
    return True


# ---------------------------------------------------------------- reading a file


def read_block(fd: int, offset: int, size: int, file_body: int):
    """The kernel's one-call block read: ``(stored bytes, compression type)`` from a descriptor,
    the trailer's CRC checked."""
    import os

    if offset < 0 or size < 0 or offset + size + 5 > file_body:
        raise IndexFormatError(f"block [{offset}, {offset + size + 5}) lies outside the file body", offset)
    b = os.pread(fd, size + 5, offset)
    if len(b) != size + 5:
        raise IndexFormatError("block truncated", offset)
    if zlib.crc32(b[: size + 1]) != struct.unpack_from("<I", b, size + 1)[0]:
        raise IndexFormatError("block CRC mismatch", offset + size + 1)
    return b, b[size]


def cold_equal(kind: int, tail, tail_at: int, index_off: int, index_size: int, key, fd: int, file_body: int):
    """The kernel's one-call first ``=``: row ids, or None where it leaves the answer to the
    block-by-block way (see the kernel)."""
    import os

    t = _b(tail)
    key = _b(key)
    if index_off < tail_at or index_size < 0 or index_off + index_size + 5 > tail_at + len(t):
        return None
    ib = t[index_off - tail_at : index_off - tail_at + index_size + 5]
    if ib[index_size] != 0 or zlib.crc32(ib[: index_size + 1]) != struct.unpack_from("<I", ib, index_size + 1)[0]:
        return None
    try:
        got = seek_handle(kind, ib[:index_size], key)
    except IndexFormatError:
        return None
    if got is None:
        return np.zeros(0, dtype=np.uint64)
    _, off, size = got
    if off < 0 or size < 0 or off + size + 5 > file_body:
        raise IndexFormatError(f"data block [{off}, {off + size}) lies outside the file body", index_off)
    if off >= tail_at and off + size + 5 <= tail_at + len(t):
        db = t[off - tail_at : off - tail_at + size + 5]
    elif fd >= 0:
        db = os.pread(fd, size + 5, off)
        if len(db) != size + 5:
            return None
    else:
        return None
    if db[size] != 0 or zlib.crc32(db[: size + 1]) != struct.unpack_from("<I", db, size + 1)[0]:
        return None
    try:
        rids, _ = scan(kind, db[:size], key, key, 3)
    except IndexFormatError:
        return None
    return rids
