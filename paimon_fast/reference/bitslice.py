"""Plain-Python twin of ``paimon_fast._kernels.bitslice``.

Row sets are Python ints used as bit sets (row r = bit r); the public
functions take and return the same numpy word arrays as the kernels so tests
and benchmarks can swap them.  Comparisons follow O'Neil-Quass slice by slice,
top-k follows the same slice-by-slice refinement, written plainly.
"""

from __future__ import annotations

import struct

import numpy as np

from ..errors import IndexFormatError

OPS = ("eq", "neq", "lt", "lte", "gt", "gte")


def to_int(words) -> int:
    a = np.asarray(words)
    if a.dtype == np.uint8:  # little-endian word bytes (a slice read in place)
        return int.from_bytes(a.tobytes(), "little")
    return int.from_bytes(np.ascontiguousarray(a, dtype="<u8").tobytes(), "little")


def to_words(x: int, nw: int) -> np.ndarray:
    return np.frombuffer(x.to_bytes(nw * 8, "little"), dtype="<u8").astype(np.uint64)


def nwords(nbits):
    return (nbits + 63) >> 6


def compare(slices, base, op, value):
    """Rows of ``base`` whose sliced value ``op`` ``value``."""
    nw = len(base)
    e = to_int(base)
    sl = [to_int(s) for s in slices]
    S = len(sl)
    gt = lt = 0
    eq = e
    if S < 64 and value >> S:
        lt, eq = e, 0
    else:
        for i in range(S - 1, -1, -1):
            s = sl[i]
            if (value >> i) & 1:
                lt |= eq & ~s
                eq &= s
            else:
                gt |= eq & s
                eq &= ~s
    r = {"eq": eq, "neq": e & ~eq, "lt": lt, "lte": lt | eq, "gt": gt, "gte": gt | eq}[op]
    return to_words(r & e, nw)


def between(slices, base, lo, hi):
    if lo > hi:
        return np.zeros(len(base), np.uint64)
    a = to_int(compare(slices, base, "gte", lo))
    b = to_int(compare(slices, base, "lte", hi))
    return to_words(a & b, len(base))


def topk(slices, base, k, largest, strict):
    """k largest / smallest rows of ``base`` with Java's tie rules."""
    nw = len(base)
    if k < 0:
        raise ValueError("k must be >= 0")
    if k == 0:
        return np.zeros(nw, np.uint64)
    e = to_int(base)
    if e.bit_count() <= k:
        return to_words(e, nw)
    full = (1 << (nw * 64)) - 1
    g = 0
    for s in reversed([to_int(s) for s in slices]):
        sel = s if largest else full & ~s
        x = g | (e & sel)
        n = x.bit_count()
        if n > k:
            e &= sel
        elif n < k:
            g = x
            e &= ~sel
        else:
            e &= sel
            break
    f = g | e
    if strict:
        drop = f.bit_count() - k
        while drop > 0:  # drop the lowest rows of the tie group
            low = e & -e
            f &= ~low
            e &= ~low
            drop -= 1
    return to_words(f, nw)


def limit(words, k):
    x = to_int(words)
    out = 0
    r = 0
    while k > 0 and x >> r:
        if (x >> r) & 1:
            out |= 1 << r
            k -= 1
        r += 1
    return to_words(out, len(words))


def popcount(words):
    return to_int(words).bit_count()


def to_positions(words):
    x = to_int(words)
    return np.array([r for r in range(x.bit_length()) if (x >> r) & 1], dtype=np.uint32)


def from_positions(pos, nbits):
    x = 0
    for p in pos:
        if p < nbits:
            x |= 1 << int(p)
    return to_words(x, nwords(nbits))


def range_words(start, end, nbits):
    end = min(end, nbits)
    x = ((1 << end) - 1) & ~((1 << start) - 1) if end > start else 0
    return to_words(x, nwords(nbits))


def build_slices(values, sel, S):
    """``(ebm, slices)`` from per-row values, row by row (one bytearray bit set per slice)."""
    n = len(values)
    nw = nwords(n)
    ebm = bytearray(nw * 8)
    sl = [bytearray(nw * 8) for _ in range(S)]
    for r in range(n):
        if sel[r]:
            byte, bit = r >> 3, 1 << (r & 7)
            ebm[byte] |= bit
            v = int(values[r])
            if v < 0 or v >> S:
                raise ValueError("a value is negative or needs more than the given slices")
            i = 0
            while v:
                if v & 1:
                    sl[i][byte] |= bit
                v >>= 1
                i += 1
    slices = np.zeros((S, nw), np.uint64)
    for i in range(S):
        slices[i] = np.frombuffer(bytes(sl[i]), dtype="<u8")
    return np.frombuffer(bytes(ebm), dtype="<u8").astype(np.uint64), slices


def dense_codes(keys, valid, lo, hi):
    """Dictionary codes by sorting the distinct keys."""
    uniq = sorted({int(k) for k, v in zip(keys, valid) if v})
    rank = {k: i for i, k in enumerate(uniq)}
    codes = np.array([rank[int(k)] if v else -1 for k, v in zip(keys, valid)], dtype=np.int32)
    return np.array(uniq, dtype=np.int64), codes


# ---------------------------------------------------------------- roaring


def encode(words):
    """Java-exact portable bytes: per 2^16 block choose array / bitmap / run
    as ``runOptimize()`` does (run when 2 + 4*runs < the other size)."""
    x = to_int(words)
    nw = len(words)
    conts = []
    for key in range((nw + 1023) // 1024):
        block = (x >> (key << 16)) & ((1 << 65536) - 1)
        if not block:
            continue
        raw = block.to_bytes(8192, "little")  # bit i of the block is bit i % 8 of byte i // 8
        vals = [8 * j + b for j, byte in enumerate(raw) if byte for b in range(8) if (byte >> b) & 1]
        runs = []
        for v in vals:
            if runs and runs[-1][1] == v - 1:
                runs[-1][1] = v
            else:
                runs.append([v, v])
        card = len(vals)
        size = 8192 if card > 4096 else 2 * card
        kind = "run" if 2 + 4 * len(runs) < size else ("bitmap" if card > 4096 else "array")
        conts.append((key, card, kind, vals, runs, block))
    has_run = any(c[2] == "run" for c in conts)
    n = len(conts)
    out = bytearray()
    if has_run:
        out += struct.pack("<I", 12347 | ((n - 1) << 16))
        flags = bytearray((n + 7) // 8)
        for i, c in enumerate(conts):
            if c[2] == "run":
                flags[i >> 3] |= 1 << (i & 7)
        out += flags
    else:
        out += struct.pack("<II", 12346, n)
    for c in conts:
        out += struct.pack("<HH", c[0], c[1] - 1)
    bodies = []
    for key, card, kind, vals, runs, block in conts:
        if kind == "run":
            b = struct.pack("<H", len(runs)) + b"".join(struct.pack("<HH", s, e - s) for s, e in runs)
        elif kind == "bitmap":
            b = block.to_bytes(8192, "little")
        else:
            b = b"".join(struct.pack("<H", v) for v in vals)
        bodies.append(b)
    if not has_run or n >= 4:
        pos = len(out) + 4 * n
        for b in bodies:
            out += struct.pack("<I", pos)
            pos += len(b)
    for b in bodies:
        out += b
    return bytes(out)


def decode_into(buf, offset, limit, words, nbits, base=0):
    """Parse a portable bitmap at ``buf[offset:limit]`` and OR it into ``words``."""
    x, p, card_total = parse(buf, offset, limit, base)
    if x >> nbits:
        raise IndexFormatError(
            f"roaring bitmap holds row {x.bit_length() - 1}, beyond the {nbits} rows of the index", base + offset
        )
    cur = to_int(words) | x
    words[:] = to_words(cur, len(words))
    return p, card_total


def parse(buf, offset, limit, base=0):
    """``(bit set as int, serialized size, cardinality)`` of the portable bitmap at ``buf[offset:limit]``."""
    buf = bytes(buf)
    if limit < 0 or limit > len(buf):
        limit = len(buf)
    data = buf[offset:limit]

    def need(p, n, what):
        if p + n > len(data):
            raise IndexFormatError(f"roaring bitmap truncated ({what})", base + offset + p)

    need(0, 4, "cookie")
    (cookie,) = struct.unpack_from("<I", data, 0)
    if cookie & 0xFFFF == 12347:
        n = (cookie >> 16) + 1
        need(4, (n + 7) // 8, "run flags")
        flags = data[4 : 4 + (n + 7) // 8]
        p = 4 + (n + 7) // 8
        has_run = True
    elif cookie == 12346:
        need(4, 4, "container count")
        (n,) = struct.unpack_from("<I", data, 4)
        if n > 65536:
            raise IndexFormatError("roaring bitmap claims more than 65536 containers", base + offset + 4)
        flags = b""
        p = 8
        has_run = False
    else:
        raise IndexFormatError("not a portable roaring bitmap (bad cookie)", base + offset)
    need(p, 4 * n, "container headers")
    desc = [struct.unpack_from("<HH", data, p + 4 * i) for i in range(n)]
    p += 4 * n
    if not has_run or n >= 4:
        need(p, 4 * n, "container offsets")
        p += 4 * n
    x = 0
    card_total = 0
    prev = -1
    for i, (key, c1) in enumerate(desc):
        card = c1 + 1
        if key <= prev:
            raise IndexFormatError("roaring container keys not increasing", base + offset)
        prev = key
        hi = key << 16
        if has_run and (flags[i >> 3] >> (i & 7)) & 1:
            need(p, 2, "run container")
            (nr,) = struct.unpack_from("<H", data, p)
            p += 2
            need(p, 4 * nr, "run container")
            rc = 0
            last = -1
            for r in range(nr):
                s, ln = struct.unpack_from("<HH", data, p + 4 * r)
                if s <= last or s + ln > 0xFFFF:
                    raise IndexFormatError(
                        "roaring run container has overlapping or overflowing runs", base + offset + p
                    )
                last = s + ln
                rc += ln + 1
                x |= ((1 << (ln + 1)) - 1) << (hi + s)
            if rc != card:
                raise IndexFormatError("roaring run container cardinality mismatch", base + offset + p)
            p += 4 * nr
        elif card > 4096:
            need(p, 8192, "bitmap container")
            block = int.from_bytes(data[p : p + 8192], "little")
            if block.bit_count() != card:
                raise IndexFormatError("roaring bitmap container cardinality mismatch", base + offset + p)
            x |= block << hi
            p += 8192
        else:
            need(p, 2 * card, "array container")
            last = -1
            for j in range(card):
                (v,) = struct.unpack_from("<H", data, p + 2 * j)
                if v <= last:
                    raise IndexFormatError("roaring array container not strictly increasing", base + offset + p)
                last = v
                x |= 1 << (hi + v)
            p += 2 * card
        card_total += card
    return x, p, card_total


def decode_fast(buf, offset, limit, words, nbits, base=0):
    """Twin of the one-pass decoder: same bits as :func:`decode_into`, returns the size."""
    size, _ = decode_into(buf, offset, limit, words, nbits, base)
    return size


def check_last(buf, offset, limit, base=0):
    """``(size, cardinality, largest value or -1)`` of a portable bitmap."""
    x, size, card = parse(buf, offset, limit, base)
    return size, card, x.bit_length() - 1


def minmax_valid(keys, valid):
    present = [int(k) for k, v in zip(keys, valid) if v]
    return (len(present), min(present), max(present)) if present else (0, 0, 0)


def topk_positions(slices, base, k, largest, strict, words=None):
    """Positions of :func:`topk` (``words`` only restricts the search, never the answer)."""
    return to_positions(topk(slices, base, k, largest, strict))


def block_maxmin(slices, base, bw):
    """Per block of ``bw`` words the largest / smallest value of its rows (-1 when empty)."""
    nw = len(base)
    e = to_int(base)
    sl = [to_int(s) for s in slices]
    out_max, out_min = [], []
    for b in range((nw + bw - 1) // bw):
        lo, hi = b * bw * 64, min(nw, (b + 1) * bw) * 64
        vals = []
        for r in range(lo, hi):
            if (e >> r) & 1:
                vals.append(sum(1 << i for i, s in enumerate(sl) if (s >> r) & 1))
        out_max.append(max(vals) if vals else -1)
        out_min.append(min(vals) if vals else -1)
    return np.array(out_max, np.int64), np.array(out_min, np.int64)


def bsi_build(values, vbits, voff=0):
    """The ``bsi`` payload row by row: split the valid rows into values >= 0 and
    magnitudes of values < 0, slice each part and encode it plainly."""
    n = len(values)
    pos_v, neg_v = [0] * n, [0] * n
    pos_s, neg_s = np.zeros(n, np.uint8), np.zeros(n, np.uint8)
    for r in range(n):
        if vbits is not None and not (vbits[(voff + r) >> 3] >> ((voff + r) & 7)) & 1:
            continue
        x = int(values[r])
        if x == -(1 << 63):
            raise ValueError("BSI cannot store Long.MIN_VALUE (Java fails too)")
        if x < 0:
            neg_v[r], neg_s[r] = -x, 1
        else:
            pos_v[r], pos_s[r] = x, 1
    out = [struct.pack(">Bi", 1, n)]
    for vals, sel in ((pos_v, pos_s), (neg_v, neg_s)):
        if not sel.any():
            out.append(b"\x00")
            continue
        mx = max(v for v, s in zip(vals, sel) if s)
        S = mx.bit_length()
        ebm, slices = build_slices(np.array(vals, dtype=np.uint64), sel, S)
        out.append(b"\x01" + struct.pack(">Bqq", 1, 0, mx) + encode(ebm) + struct.pack(">i", S))
        out.extend(encode(s) for s in slices)
    return b"".join(out)


def bitmap_view(buf, offset, limit, nw):
    """Absolute offset of ``nw`` little-endian words readable in place when the
    bitmap at ``buf[offset:limit]`` is made of bitmap containers with keys
    0..m-1 laid out back to back (m = ceil(nw / 1024)); else -1."""
    buf = bytes(buf)
    if limit < 0 or limit > len(buf):
        limit = len(buf)
    if offset < 0 or offset >= limit or nw <= 0:
        return -1
    b = buf[offset:limit]
    if len(b) < 8:
        return -1
    cookie, m = struct.unpack_from("<II", b, 0)
    if cookie != 12346 or m != (nw + 1023) // 1024:
        return -1
    start = 8 + 8 * m
    if len(b) < start + 8192 * m:
        return -1
    for c in range(m):
        key, card1 = struct.unpack_from("<HH", b, 8 + 4 * c)
        (off,) = struct.unpack_from("<I", b, 8 + 4 * m + 4 * c)
        if key != c or card1 + 1 <= 4096 or off != start + 8192 * c:
            return -1
    return offset + start


def slice_layout(buf, idx_at, S, sbase, nw, base=0):
    """``(S, 3)`` int64 rows ``(absolute start, length, in-place view or -1)``
    read from the big-endian ``S x (offset, length)`` slice table."""
    buf = bytes(buf)
    if S < 0 or idx_at < 0 or idx_at + 8 * S > len(buf):
        raise IndexFormatError("range bitmap slice table outside the data", base + idx_at)
    out = np.empty((S, 3), np.int64)
    for i in range(S):
        off, ln = struct.unpack_from(">ii", buf, idx_at + 8 * i)
        if off < 0 or ln < 0 or sbase + off + ln > len(buf):
            raise IndexFormatError(f"range bitmap slice {i} range out of bounds", base + idx_at + 8 * i)
        view = bitmap_view(buf, sbase + off, sbase + off + ln, nw) if ln > 0 else -1
        out[i] = (sbase + off, ln, view)
    return out


def encode_sliced(ebm, slices):
    """The range bitmap's bit-sliced section: header, slice table, then the
    existence bitmap and every slice encoded plainly."""
    ebm_b = encode(ebm)
    parts = [encode(s) for s in slices]
    idx = b""
    off = 0
    for p in parts:
        idx += struct.pack(">ii", off, len(p))
        off += len(p)
    header = struct.pack(">BBii", 1, len(parts), len(ebm_b), 8 * len(parts)) + idx
    return struct.pack(">i", len(header)) + header + ebm_b + b"".join(parts)


def decode_slices(buf, layout, rows, nbits, base=0):
    """Twin: each slice of ``layout`` not read in place, decoded into the next row of ``rows``
    (cleared first)."""
    k = 0
    for at, ln, view in np.asarray(layout).tolist():
        if view >= 0:
            continue
        if k >= len(rows):
            raise ValueError("rows has too few rows for the layout")
        if ln < 4:
            raise IndexFormatError("roaring bitmap truncated (cookie)", base + at)
        rows[k][:] = 0
        decode_fast(buf, at, at + ln, rows[k], nbits, base)
        k += 1
    if k != len(rows):
        raise ValueError(f"rows has {len(rows)} rows, the layout decodes {k} slices")


def float_sort_keys(buf, width):
    """Twin: big-endian IEEE floats -> int64 keys in Java's Float / Double.compare order."""
    out = []
    for (u,) in struct.iter_unpack(">Q" if width == 8 else ">I", bytes(buf)[: len(buf) // width * width]):
        if width == 8:
            if (u & 0x7FF0000000000000) == 0x7FF0000000000000 and u & 0x000FFFFFFFFFFFFF:
                u = 0x7FF8000000000000
            s = u - (1 << 64) if u >> 63 else u
            out.append(s ^ ((s >> 63) & 0x7FFFFFFFFFFFFFFF))
        else:
            if (u & 0x7F800000) == 0x7F800000 and u & 0x007FFFFF:
                u = 0x7FC00000
            s = u - (1 << 32) if u >> 31 else u
            out.append(s ^ ((s >> 31) & 0x7FFFFFFF))
    return np.array(out, dtype=np.int64)
