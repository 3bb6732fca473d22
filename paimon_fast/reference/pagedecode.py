"""Pure-Python twin of ``paimon_fast/_kernels/pagedecode.pyx`` (the same functions, the same
answers and errors, one Python step per encoded value): the oracle of the kernel's tests
and the baseline of its benchmark."""

from __future__ import annotations

import numpy as np

from ..errors import IndexFormatError


def _fail(what: str, msg: str, at):
    raise IndexFormatError(f"Parquet {what}: {msg}", at)


def _varint(buf, pos: int, end: int):
    """``(value, position after it)`` of the unsigned LEB128 varint at ``pos``, or
    ``(None, "truncated" | "too long")``."""
    v = shift = 0
    while True:
        if pos >= end:
            return None, "truncated"
        if shift > 63:
            return None, "too long"
        c = buf[pos]
        pos += 1
        v |= (c & 0x7F) << shift
        if not c & 0x80:
            return v & ((1 << 64) - 1), pos
        shift += 7


def _runs(buf, pos: int, end: int, bw: int, what: str):
    """Yield ``(position after the header, count, packed, value, data start)`` per run."""
    while pos < end:
        h, after = _varint(buf, pos, end)
        if h is None:
            _fail(
                what,
                "a run runs past the end of the encoded data"
                if after == "truncated"
                else "a run header longer than 10 bytes",
                pos,
            )
        pos = after
        if h & 1:
            groups = h >> 1
            nbytes = groups * bw
            if (bw and groups > end - pos) or groups > 1 << 59 or nbytes > end - pos:
                _fail(what, "a run runs past the end of the encoded data", pos)
            yield pos + nbytes, groups * 8, True, 0, pos
            pos += nbytes
        else:
            vb = (bw + 7) >> 3
            if vb > end - pos or (h >> 1) > 1 << 62:
                _fail(what, "a run runs past the end of the encoded data", pos)
            value = int.from_bytes(bytes(buf[pos : pos + vb]), "little")
            pos += vb
            yield pos, h >> 1, False, value, 0


def _bits(buf, data: int, k: int, bw: int) -> int:
    if not bw:
        return 0
    bit = k * bw
    need = ((bit & 7) + bw + 7) >> 3
    v = int.from_bytes(bytes(buf[data + (bit >> 3) : data + (bit >> 3) + need]), "little")
    return (v >> (bit & 7)) & ((1 << bw) - 1)


def _check(buf, start, end, what):
    if start < 0 or end > len(buf) or start > end:
        raise IndexFormatError(f"Parquet {what}: range outside the page", start)


def _walk(buf, start: int, end: int, bw: int, nvals: int, wanted, what: str):
    """Yield ``(i, wanted value, its run's first value, count, packed, value, data)`` for each
    wanted value, reading runs as far as the last one needs (nothing is materialized: a run
    may claim up to 2^62 values)."""
    runs = _runs(buf, start, end, bw, what)
    base, count, run = 0, 0, None
    for i, w in enumerate(int(w) for w in wanted):
        if w < 0 or w >= nvals:
            _fail(what, f"value {w} asked for, past the page's values", None)
        while run is None or w >= base + count:
            if run is not None:
                base += count
            run = next(runs, None)
            if run is None:
                _fail(what, f"the runs end before value {w}", end)
            count = min(run[1], nvals - base)
            yield None, None, base, count, run[2], run[3], run[4]  # a new run: for running totals
        yield i, w, base, count, run[2], run[3], run[4]


def def_levels(buf, start: int, end: int, nvals: int, wanted):
    buf = memoryview(buf).cast("B")
    what = "definition levels"
    _check(buf, start, end, what)
    valid = np.zeros(len(wanted), dtype=np.uint8)
    index = np.zeros(len(wanted), dtype=np.int64)
    ones = 0  # level-1 rows in the runs before the current one
    prev = None  # (count, ones) of the current run
    for i, w, base, count, packed, value, data in _walk(buf, start, end, 1, nvals, wanted, what):
        if i is None:
            if prev is not None:
                ones += prev
            if not packed and value > 1:
                _fail(what, f"a definition level of {value} (the maximum is 1)", None)
            if packed:  # the run's levels and running counts (bounded by its bytes)
                levels = [_bits(buf, data, k, 1) for k in range(count)]
                before = [0]
                for lv in levels:
                    before.append(before[-1] + lv)
                prev = before[-1]
            else:
                prev = value * count
            continue
        k = w - base
        if packed:
            valid[i] = levels[k]
            index[i] = ones + before[k]
        else:
            valid[i] = value
            index[i] = ones + value * k
    return valid, index


def hybrid_gather(buf, start: int, end: int, bit_width: int, nvals: int, wanted):
    buf = memoryview(buf).cast("B")
    what = "RLE / bit-packed data"
    if bit_width < 0 or bit_width > 32:
        raise IndexFormatError(f"Parquet RLE / bit-packed data with a bit width of {bit_width}", start)
    _check(buf, start, end, what)
    out = np.zeros(len(wanted), dtype=np.uint32)
    for i, w, base, count, packed, value, data in _walk(buf, start, end, bit_width, nvals, wanted, what):
        if i is not None:
            out[i] = _bits(buf, data, w - base, bit_width) if packed else value & 0xFFFFFFFF
    return out


def ba_walk(buf, start: int, end: int, nvals: int, wanted):
    buf = memoryview(buf).cast("B")
    what = "BYTE_ARRAY values"
    _check(buf, start, end, what)
    starts = np.zeros(len(wanted), dtype=np.int64)
    lens = np.zeros(len(wanted), dtype=np.int64)
    where = []  # (start, length) of every value up to the last wanted one
    pos = start
    for i, w in enumerate(int(w) for w in wanted):
        if w < 0 or w >= nvals:
            _fail(what, f"value {w} asked for, past the page's values", None)
        while len(where) <= w:
            if end - pos < 4:
                _fail(what, f"the runs end before value {len(where)}", pos)
            n = int.from_bytes(bytes(buf[pos : pos + 4]), "little")
            if n > end - pos - 4:
                _fail(what, f"a value length of {n} runs past the end of the page", pos)
            where.append((pos + 4, n))
            pos += 4 + n
        starts[i], lens[i] = where[w]
    return starts, lens


def gather(buf, starts, lens, idx):
    buf = bytes(memoryview(buf).cast("B"))
    m = len(starts)
    if len(lens) != m:
        raise ValueError("starts and lens differ in length")
    parts = []
    offsets = [0]
    for k in (int(k) for k in idx):
        if k >= m or k < -1:
            raise IndexFormatError(f"Parquet dictionary index {k} out of range (a dictionary of {m} values)", None)
        if k >= 0:
            s, n = int(starts[k]), int(lens[k])
            if s < 0 or n < 0 or s > len(buf) or n > len(buf) - s:
                raise IndexFormatError(f"byte range of value {k} outside the {len(buf)}-byte buffer", s)
            parts.append(buf[s : s + n])
            offsets.append(offsets[-1] + n)
        else:
            offsets.append(offsets[-1])
    return np.asarray(offsets, dtype=np.int64), b"".join(parts)


def snappy_prefix(src, n: int):
    src = bytes(memoryview(src).cast("B"))
    if n < 0:
        raise ValueError("negative prefix")
    total, pos = _varint(src, 0, len(src))
    if total is None or total > 1 << 32:
        raise IndexFormatError("Snappy data: bad uncompressed length", 0)
    want = min(n, total)
    out = bytearray()
    while len(out) < want:
        if pos >= len(src):
            raise IndexFormatError("Snappy data: ends before its uncompressed length", pos)
        tag = src[pos]
        pos += 1
        kind = tag & 3
        if kind == 0:
            ln = tag >> 2
            if ln >= 60:
                extra = ln - 59
                if len(src) - pos < extra:
                    raise IndexFormatError("Snappy data: ends before its uncompressed length", pos)
                ln = int.from_bytes(src[pos : pos + extra], "little")
                pos += extra
            ln += 1
            if ln > len(src) - pos:
                raise IndexFormatError("Snappy data: ends before its uncompressed length", pos)
            out += src[pos : pos + min(ln, want - len(out))]
            pos += ln
            continue
        need = {1: 1, 2: 2, 3: 4}[kind]
        if len(src) - pos < need:
            raise IndexFormatError("Snappy data: ends before its uncompressed length", pos)
        if kind == 1:
            ln = 4 + ((tag >> 2) & 7)
            off = ((tag >> 5) << 8) | src[pos]
        else:
            ln = 1 + (tag >> 2)
            off = int.from_bytes(src[pos : pos + need], "little")
        pos += need
        if off <= 0 or off > len(out):
            raise IndexFormatError(f"Snappy data: a copy from {off} bytes back at output byte {len(out)}", pos)
        for _ in range(min(ln, want - len(out))):
            out.append(out[-off])
    return bytes(out), total
