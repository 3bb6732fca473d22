"""Plain-Python twins of ``paimon_fast/_kernels/globalindex.pyx``.

Same inputs and outputs as the kernels, written for clarity: the oracle in the
hypothesis tests and the baseline in the benchmarks.
"""

from __future__ import annotations

import struct

import numpy as np

from ..errors import IndexFormatError
from . import roaring as _roaring_twin

I8, I16, I32, I64, BOOL, F32, F64, TSN, BIGDEC, BYTES = range(1, 11)
_SIGN = 1 << 63


# ---------------------------------------------------------------- var-ints


def varint_size(v: int) -> int:
    n = 1
    while v >= 0x80:
        v >>= 7
        n += 1
    return n


def put_varint(v: int) -> bytes:
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def get_varint(b: bytes, pos: int, max_bits: int):
    v, shift = 0, 0
    while True:
        if pos >= len(b):
            raise IndexFormatError("truncated var-int", pos)
        x = b[pos]
        pos += 1
        v |= (x & 0x7F) << shift
        if not x & 0x80:
            break
        shift += 7
        if shift > 63:
            raise IndexFormatError("var-int too long", pos)
    if v >> max_bits:
        raise IndexFormatError("var-int out of range", pos)
    return v, pos


# ---------------------------------------------------------------- keys


def _signed(v: int, bits: int) -> int:
    return v - (1 << bits) if v >> (bits - 1) else v


def key_order(kind: int, k: bytes):
    """Order key (hi, lo) of serialized key bytes (kernel: pf_key_order)."""
    n = len(k)
    if kind == I8 and n == 1:
        return _signed(k[0], 8), 0
    if kind == I16 and n == 2:
        return struct.unpack("<h", k)[0], 0
    if kind == I32 and n == 4:
        return struct.unpack("<i", k)[0], 0
    if kind == I64 and n == 8:
        return struct.unpack("<q", k)[0], 0
    if kind == BOOL and n == 1:
        return int(k[0] == 1), 0
    if kind == F32 and n == 4:
        b = struct.unpack("<i", k)[0]
        if (b & 0x7F800000) == 0x7F800000 and b & 0x007FFFFF:
            b = 0x7FC00000
        return b ^ ((b >> 31) & 0x7FFFFFFF), 0
    if kind == F64 and n == 8:
        b = struct.unpack("<q", k)[0]
        if (b & 0x7FF0000000000000) == 0x7FF0000000000000 and b & 0x000FFFFFFFFFFFFF:
            b = 0x7FF8000000000000
        return b ^ ((b >> 63) & 0x7FFFFFFFFFFFFFFF), 0
    if kind == TSN and n >= 9:
        nanos, pos = get_varint(k, 8, 31)
        if pos != n:
            raise IndexFormatError("trailing bytes in timestamp key", 0)
        return struct.unpack_from("<q", k)[0], nanos
    if kind == BIGDEC and 1 <= n <= 16:
        v = int.from_bytes(k, "big", signed=True)
        return v >> 64, v & ((1 << 64) - 1)
    raise IndexFormatError(f"malformed key of {n} bytes for its type", 0)


def key_cmp(kind: int, a: bytes, b: bytes) -> int:
    if kind == BYTES:
        return (a > b) - (a < b)
    x, y = key_order(kind, a), key_order(kind, b)
    return (x > y) - (x < y)


def key_write(kind: int, hi: int, lo: int) -> bytes:
    if kind in (I8, BOOL):
        return struct.pack("<B", hi & 0xFF)
    if kind == I16:
        return struct.pack("<h", hi)
    if kind == I32:
        return struct.pack("<i", hi)
    if kind == I64:
        return struct.pack("<q", hi)
    if kind == F32:
        return struct.pack("<i", hi ^ ((hi >> 31) & 0x7FFFFFFF))
    if kind == F64:
        return struct.pack("<q", hi ^ ((hi >> 63) & 0x7FFFFFFFFFFFFFFF))
    if kind == TSN:
        return struct.pack("<q", hi) + put_varint(lo)
    if kind == BIGDEC:
        v = (hi << 64) | lo
        n = ((v if v >= 0 else ~v).bit_length() + 8) // 8
        return v.to_bytes(n, "big", signed=True)
    raise ValueError(f"kind {kind} has no fixed serialization")


# ---------------------------------------------------------------- writer twins


def string_ranks(offsets, data, valid):
    offsets = [int(x) for x in offsets]
    data = bytes(np.asarray(data, dtype=np.uint8))
    n = len(offsets) - 1
    vals = [None if valid is not None and not valid[i] else data[offsets[i] : offsets[i + 1]] for i in range(n)]
    distinct = sorted({v for v in vals if v is not None})
    rank_of = {v: i for i, v in enumerate(distinct)}
    rank = np.array([-1 if v is None else rank_of[v] for v in vals], dtype=np.int64)
    key_off = np.zeros(len(distinct) + 1, dtype=np.int64)
    for i, v in enumerate(distinct):
        key_off[i + 1] = key_off[i] + len(v)
    return rank, key_off, np.frombuffer(b"".join(distinct), dtype=np.uint8).copy()


def sort_group(hi, lo, rid, rid_sorted=False):
    recs = sorted(set(zip((int(x) for x in hi), (int(x) for x in lo), (int(x) for x in rid))))
    rids, bounds, ghi, glo = [], [], [], []
    for h, l, r in recs:
        if not ghi or ghi[-1] != h or glo[-1] != l:
            bounds.append(len(rids))
            ghi.append(h)
            glo.append(l)
        rids.append(r)
    bounds.append(len(rids))
    return (
        np.array(rids, dtype=np.uint64),
        np.array(bounds, dtype=np.int64),
        np.array(ghi, dtype=np.int64),
        np.array(glo, dtype=np.uint64),
    )


def sort_unique_u64(values):
    return np.array(sorted(set(int(v) for v in values)), dtype=np.uint64)


def serialize_keys(kind, hi, lo):
    parts = [key_write(kind, int(h), int(l)) for h, l in zip(hi, lo)]
    off = np.zeros(len(parts) + 1, dtype=np.int64)
    for i, p in enumerate(parts):
        off[i + 1] = off[i] + len(p)
    return off, np.frombuffer(b"".join(parts), dtype=np.uint8).copy()


def serialize32(values) -> bytes:
    """Portable 32-bit roaring as Java writes it after runOptimize() (the roaring twin)."""
    return _roaring_twin.serialize(values)


def serialize64(values) -> bytes:
    buckets = {}
    for v in sorted(set(int(x) for x in values)):
        buckets.setdefault(v >> 32, []).append(v & 0xFFFFFFFF)
    out = bytearray(struct.pack("<Q", len(buckets)))
    for h in sorted(buckets):
        out += struct.pack("<I", h) + serialize32(buckets[h])
    return bytes(out)


def serialize64_groups(rids, bounds):
    parts = [serialize64(rids[bounds[g] : bounds[g + 1]]) for g in range(len(bounds) - 1)]
    return b"".join(parts), np.array([len(p) for p in parts], dtype=np.int64)


def gather_segments(parts, part, start, length):
    if not (len(part) == len(start) == len(length)):
        raise ValueError("part, start and length must have the same length")
    out = []
    for i, (p, s, n) in enumerate(zip(part, start, length)):
        if not (0 <= p < len(parts)) or s < 0 or n < 0 or s + n > len(parts[p]):
            raise ValueError(f"segment {i} lies outside its part")
        out.extend(int(v) for v in parts[p][s : s + n])
    return np.array(out, dtype=np.uint64)


def pack(key_off, key_data, bm_blob, bm_sizes, block_size, encode):
    kd = bytes(np.asarray(key_data, dtype=np.uint8))
    keys = [kd[key_off[i] : key_off[i + 1]] for i in range(len(bm_sizes))]
    body = bytearray()
    pos = bm_pos = 0
    pending, entries_size = [], 0
    firsts, offs, lens = [], [], []

    def flush():
        raw = put_varint(len(pending)) + b"".join(
            put_varint(len(keys[k])) + keys[k] + put_varint(o) + put_varint(n) for k, o, n in pending
        )
        stored = encode(raw)
        firsts.append(pending[0][0])
        offs.append(len(body))
        lens.append(len(stored) - 5)
        body.extend(stored)

    for k, size in enumerate(int(s) for s in bm_sizes):
        off = len(body)
        body.extend(bm_blob[bm_pos : bm_pos + size])
        bm_pos += size
        esize = varint_size(len(keys[k])) + len(keys[k]) + varint_size(off) + varint_size(size)
        if pending and varint_size(len(pending) + 1) + entries_size + esize > block_size:
            flush()
            pending, entries_size = [], 0
        pending.append((k, off, size))
        entries_size += esize
    if pending:
        flush()
    del pos
    return (
        bytes(body),
        np.array(firsts, dtype=np.int64),
        np.array(offs, dtype=np.int64),
        np.array(lens, dtype=np.int64),
    )


def pack_blocks(key_off, key_data, bm_sizes, block_size, encode):
    """:func:`pack`'s layout without the bitmaps: (blocks, after, firsts, offsets, lengths)."""
    sizes = [int(x) for x in bm_sizes]
    body, firsts, offs, lens = pack(key_off, key_data, bytes(sum(sizes)), sizes, block_size, encode)
    blocks = [bytes(body[o : o + n + 5]) for o, n in zip(offs.tolist(), lens.tolist())]
    after, pos, k = [], 0, 0
    for o, n in zip(offs.tolist(), lens.tolist()):
        while pos < o:  # the bitmaps before this block
            pos += sizes[k]
            k += 1
        after.append(k - 1)
        pos += n + 5
    return blocks, np.array(after, dtype=np.int64), firsts, offs, lens


# ---------------------------------------------------------------- reader twins


def parse_entries(raw, base=0):
    b = bytes(np.asarray(raw, dtype=np.uint8))
    n, pos = get_varint(b, 0, 31)
    if n > (len(b) - pos) // 3:
        raise IndexFormatError("too many entries", base)
    ks, kl, of, ln = [], [], [], []
    for _ in range(n):
        klen, pos = get_varint(b, pos, 31)
        if klen > len(b) - pos:
            raise IndexFormatError("key length exceeds the block", base + pos)
        ks.append(pos)
        kl.append(klen)
        pos += klen
        o, pos = get_varint(b, pos, 63)
        length, pos = get_varint(b, pos, 31)
        of.append(o)
        ln.append(length)
    return tuple(np.array(x, dtype=np.int64) for x in (ks, kl, of, ln))


def _key(raw, s, n):
    return bytes(np.asarray(raw, dtype=np.uint8)[s : s + n])


def search_last_le(kind, raw, starts, lengths, key, base=0):
    key = bytes(np.asarray(key, dtype=np.uint8))
    lo, hi = 0, len(starts) - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        if key_cmp(kind, _key(raw, starts[mid], lengths[mid]), key) <= 0:
            lo = mid + 1
        else:
            hi = mid - 1
    return hi


def lookup(kind, raw, key, base=0, ordered=False):
    ks, kl, of, ln = parse_entries(raw, base)
    key = bytes(np.asarray(key, dtype=np.uint8))
    for s, n, o, length in zip(ks, kl, of, ln):
        c = key_cmp(kind, _key(raw, s, n), key)
        if c == 0:
            return int(o), int(length)
        if ordered and c > 0:
            return None
    return None


def key_orders(kind, data, starts, lengths, base=0):
    his, los = [], []
    for s, n in zip(starts, lengths):
        h, l = key_order(kind, _key(data, s, n))
        his.append(h)
        los.append(l)
    return np.array(his, dtype=np.int64), np.array(los, dtype=np.uint64)


def compare_to(kind, raw, starts, lengths, key, base=0):
    key = bytes(np.asarray(key, dtype=np.uint8))
    return np.array([key_cmp(kind, _key(raw, s, n), key) for s, n in zip(starts, lengths)], dtype=np.int8)


def match_bytes(mode, raw, starts, lengths, pat):
    pat = bytes(np.asarray(pat, dtype=np.uint8))
    keys = [_key(raw, s, n) for s, n in zip(starts, lengths)]
    f = (lambda k: k.startswith(pat), lambda k: k.endswith(pat), lambda k: pat in k)[mode]
    return np.array([f(k) for k in keys], dtype=bool)


def check64(buf, base=0):
    """Cardinality of exactly one portable 64-bit bitmap (structure checks only)."""
    from pyroaring import BitMap64

    b = bytes(np.asarray(buf, dtype=np.uint8))
    if len(b) < 8:
        raise IndexFormatError("64-bit roaring bitmap truncated", base)
    try:
        bm = BitMap64.deserialize(b)
    except Exception:
        raise IndexFormatError("not a 64-bit roaring bitmap", base) from None
    if serialize64(bm) != b and len(BitMap64.deserialize(b).serialize()) != len(b):
        raise IndexFormatError("64-bit roaring bitmap size mismatch", base)
    return len(bm)


def build_file(dtype, values, rids, options=None):
    """The whole writer with every kernel replaced by its twin (benchmark baseline)."""
    from ..globalindex.format import DEFAULT_BLOCK_SIZE, OPT_BLOCK_SIZE, OPT_COMPRESSION, OPT_LEVEL
    from ..globalindex.keys import KeyCodec

    codec = KeyCodec(dtype)
    arr, valid = codec.column(values)
    return _build(
        codec,
        arr,
        np.asarray(rids, dtype=np.uint64),
        valid,
        options,
        (OPT_BLOCK_SIZE, OPT_COMPRESSION, OPT_LEVEL, DEFAULT_BLOCK_SIZE),
        False,
    )


def flatten_lists(values, rids):
    """Plain-Python twin of the multivalue flattening: ``(elements, row ids)`` of every
    non-null element of every non-null array, in input order."""
    import pyarrow as pa

    elem_type = None
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        vt = values.type.value_type
        if pa.types.is_timestamp(vt) and vt.unit == "ns":
            # Python has no nanosecond datetimes (pyarrow needs pandas for them): walk the
            # integers and hand the elements back as an Arrow array of the element type
            elem_type = vt
            values = values.cast(
                pa.list_(pa.int64()) if not pa.types.is_large_list(values.type) else pa.large_list(pa.int64())
            )
        values = values.to_pylist()
    elems, out = [], []
    for arr, rid in zip(values, list(rids)):
        if arr is None:
            continue
        for e in arr:
            if e is not None:
                elems.append(e)
                out.append(int(rid))
    if elem_type is not None:
        elems = pa.array(elems, pa.int64()).cast(elem_type)
    return elems, out


def build_multivalue_file(array_dtype, values, rids, options=None):
    """The multivalue writer (``ARRAY<T>`` lists and their row ids) with Python flattening
    and every kernel replaced by its twin: the oracle and the benchmark baseline."""
    from ..globalindex.format import (
        DEFAULT_BLOCK_SIZE,
        OPT_MV_BLOCK_SIZE,
        OPT_MV_COMPRESSION,
        OPT_MV_LEVEL,
        element_type,
    )
    from ..globalindex.keys import KeyCodec

    codec = KeyCodec(element_type(array_dtype))
    rids = list(np.asarray(rids, dtype=np.uint64)) if rids is not None else range(len(values))
    if len(values) == 0:
        return None, None
    elems, erids = flatten_lists(values, rids)
    arr, _ = codec.column(elems)
    return _build(
        codec,
        arr,
        np.array(erids, dtype=np.uint64),
        None,
        options,
        (OPT_MV_BLOCK_SIZE, OPT_MV_COMPRESSION, OPT_MV_LEVEL, DEFAULT_BLOCK_SIZE),
        True,
    )


def _build(codec, arr, rids, valid, options, names, multivalue):
    from ..fileindex.options import Options
    from ..globalindex.sst import BlockEncoder, compression_type
    from ..globalindex.format import FOOTER_STRUCT, MAGIC, VERSION
    from ..globalindex.meta import SortedIndexFileMeta
    from ..core.types import binary_buffers

    opt_block, opt_comp, opt_level, default_block = names
    opts = Options(options)
    block_size = opts.get_memory_size(opt_block, default_block)
    enc = BlockEncoder(compression_type(opts.get(opt_comp, "none")), opts.get_int(opt_level, 1))
    vmask = np.ones(len(arr), bool) if valid is None else valid
    if codec.is_string:
        off, data = binary_buffers(arr)
        rank, key_off, key_data = string_ranks(off, data, vmask)
        hi, lo = rank[vmask], np.zeros(int(vmask.sum()), np.uint64)
        g_rids, bounds, _, _ = sort_group(hi, lo, rids[vmask])
    else:
        hi, lo = codec.order_keys(arr)
        g_rids, bounds, ghi, glo = sort_group(hi[vmask], lo[vmask], rids[vmask])
        key_off, key_data = serialize_keys(codec.kind, ghi, glo)
    blob, sizes = serialize64_groups(g_rids, bounds)
    body, firsts, boffs, blens = pack(key_off, key_data, blob, sizes, block_size, enc)
    if multivalue:  # null arrays and null elements index nothing: both row bitmaps are empty
        null_bm = nn_bm = serialize64([])
    else:
        null_bm = serialize64(rids[~vmask])
        nn_bm = serialize64(rids[vmask])
    kd = bytes(key_data)
    idx = put_varint(len(firsts)) + b"".join(
        put_varint(int(key_off[g + 1] - key_off[g]))
        + kd[key_off[g] : key_off[g + 1]]
        + put_varint(int(o))
        + put_varint(int(n))
        for g, o, n in zip(firsts, boffs, blens)
    )
    stored = enc(idx)
    pos = len(body)
    footer = FOOTER_STRUCT.pack(
        pos,
        len(null_bm),
        pos + len(null_bm),
        len(nn_bm),
        pos + len(null_bm) + len(nn_bm),
        len(stored) - 5,
        len(sizes),
        VERSION,
        MAGIC,
    )
    ng = len(sizes)
    meta = SortedIndexFileMeta(
        kd[key_off[0] : key_off[1]] if ng else None,
        kd[key_off[ng - 1] : key_off[ng]] if ng else None,
        bool((~vmask).any()) and not multivalue,
    ).serialize()
    return body + null_bm + nn_bm + stored + footer, meta


def decode64_many(buf, offs, lens, base=0):
    """Row ids of many portable 64-bit bitmaps, concatenated (twin of the kernel)."""
    from pyroaring import BitMap64

    b = bytes(np.asarray(buf, dtype=np.uint8))
    out = []
    for o, n in zip(offs, lens):
        check64(np.frombuffer(b[o : o + n], np.uint8), base + o)
        out.extend(BitMap64.deserialize(b[o : o + n]))
    return np.array(out, dtype=np.uint64)


def union64(buf, offs, lens, base=0):
    return serialize64(decode64_many(buf, offs, lens, base))


def entries_sorted(kind, raw, starts, lengths, base=0):
    keys = [_key(raw, s, n) for s, n in zip(starts, lengths)]
    return all(key_cmp(kind, a, b) < 0 for a, b in zip(keys, keys[1:]))
