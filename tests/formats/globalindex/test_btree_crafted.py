"""BTree global index files crafted to break a reader's bounds (each made with valid CRCs, so
only the reader's own checks stand between the bytes and the answer): every one raises
IndexFormatError, quickly and without allocating what the file claims.

- a block handle whose var-int offset is near 2**63 (offset + size wrapped in int64: the cold
  ``=`` kernel read far outside its buffer);
- a zstd block whose frame declares (or, undeclared, inflates to) far more than the block's raw
  length (zstandard sizes its output by the frame header);
- a bloom filter no writer makes (more bits than Java's int counts, millions of probes a key);
- an index block whose handles point at one data block again and again (a range scan would read
  it once per handle and hold every copy of its row ids).
"""

import struct
import time

import numpy as np
import pytest

import paimon_fast as pf
from paimon_fast import globalindex as gi
from paimon_fast.globalindex import sst
from paimon_fast.io.serde import encode_varint

FOOTER = struct.Struct("<qiqqiqiii")
MAGIC = 0x50425449


def _block(entries):
    """An unaligned SST block of ``(key, value)`` entries."""
    body, starts = bytearray(), []
    for k, v in entries:
        starts.append(len(body))
        body += encode_varint(len(k)) + k + encode_varint(len(v)) + v
    for s in starts:
        body += struct.pack("<i", s)
    return bytes(body + struct.pack("<i", len(entries)) + b"\x01")


def _rids(*ids):
    return encode_varint(len(ids)) + b"".join(encode_varint(i) for i in ids)


def _int(x):
    return struct.pack("<i", x)


def _file(stored_blocks, index_entries, bloom=(0, 0, 0), tail=b""):
    """Stored data blocks (bytes with their trailer), ``tail`` bytes after them, an index block of
    ``(last key, (offset, size))`` and the footer."""
    out = bytearray()
    for b in stored_blocks:
        out += b
    out += tail
    ib = _block([(k, encode_varint(o) + encode_varint(s)) for k, (o, s) in index_entries])
    io = len(out)
    out += ib + sst.trailer(ib, 0)
    out += FOOTER.pack(bloom[0], bloom[1], bloom[2], io, len(ib), 0, 0, 1, MAGIC)
    return bytes(out)


def _plain(raw):
    return raw + sst.trailer(raw, 0)


RAW = _block([(_int(1), _rids(0)), (_int(2), _rids(1, 2))])


def _reader(data, tmp_path, as_path):
    if as_path:
        p = tmp_path / "crafted.index"
        p.write_bytes(data)
        data = str(p)
    return gi.reader("INT", data, {}, None, index_type="btree")


def test_the_crafted_layout_reads():
    """The helpers above make a file the reader answers from: the crafted files below differ
    from it only where they say."""
    r = gi.reader("INT", _file([_plain(RAW)], [(_int(2), (0, len(RAW)))]), {}, None, index_type="btree")
    x = pf.field("x")
    assert sorted(r.evaluate(x.equal(2))) == [1, 2]
    assert sorted(r.evaluate(x.is_not_null())) == [0, 1, 2]


@pytest.mark.parametrize("as_path", [False, True], ids=["bytes", "path"])
@pytest.mark.parametrize("offset", [2**63 - 1, 2**63 - 8, 2**62])
@pytest.mark.parametrize("size", [0, 100, 2**31 - 1])
def test_a_handle_offset_near_2_pow_63(tmp_path, as_path, offset, size):
    data = _file([_plain(RAW)], [(_int(5), (offset, size))])
    x = pf.field("x")
    for pred in (x.equal(5), x.isin([5, 7]), x.not_equal(3), (x > 0)):
        r = _reader(data, tmp_path, as_path)  # a fresh reader: the cold = path first
        with pytest.raises(pf.IndexFormatError, match="outside the file body"):
            r.evaluate(pred)


@pytest.mark.parametrize("declared", [True, False], ids=["size declared", "size not declared"])
def test_a_zstd_block_that_inflates_past_its_raw_length(declared):
    zstandard = pytest.importorskip("zstandard", reason="the codecs extra: zstd blocks")
    big = 64 << 20  # 64 MiB of zeros: a few KB compressed
    co = zstandard.ZstdCompressor(level=1, write_content_size=declared)
    frame = co.compress(b"\0" * big) if declared else b"".join(co.read_to_iter(_Zeros(big)))
    stored = encode_varint(len(RAW)) + frame
    data = _file([stored + sst.trailer(stored, 1)], [(_int(2), (0, len(stored)))])
    r = gi.reader("INT", data, {}, None, index_type="btree")
    import tracemalloc

    tracemalloc.start()
    try:
        with pytest.raises(pf.IndexFormatError, match="zstd block"):
            r.evaluate(pf.field("x").equal(2))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 << 20, peak  # not the 64 MiB the frame holds


class _Zeros:
    """A readable stream of ``n`` zero bytes (a frame compressed without a declared size)."""

    def __init__(self, n):
        self.left = n

    def read(self, size=-1):
        size = self.left if size < 0 else min(size, self.left)
        self.left -= size
        return b"\0" * size


def test_a_bloom_filter_with_millions_of_probes():
    bits = b"\xff" * (64 << 10)  # 524,288 bits for one expected key: 363,409 probes a key
    stored = _plain(RAW)
    data = _file([stored], [(_int(2), (0, len(RAW)))], bloom=(len(stored), len(bits), 1), tail=bits)
    r = gi.reader("INT", data, {}, None, index_type="btree")
    t = time.perf_counter()
    with pytest.raises(pf.IndexFormatError, match="bloom filter"):
        r.evaluate(pf.field("x").equal(2))
    assert time.perf_counter() - t < 5


def test_a_bloom_filter_larger_than_java_counts(tmp_path):
    size = (256 << 20) + 8  # more bits than an int holds
    p = tmp_path / "sparse.index"
    with open(p, "wb") as f:
        f.write(_plain(RAW))
        f.truncate(4096 + size)  # sparse: nothing is written there
        f.seek(4096 + size)
        ib = _block([(_int(2), encode_varint(0) + encode_varint(len(RAW)))])
        f.write(ib + sst.trailer(ib, 0))
        f.write(FOOTER.pack(4096, size, 1000, 4096 + size, len(ib), 0, 0, 1, MAGIC))
    r = gi.reader("INT", str(p), {}, None, index_type="btree")
    with pytest.raises(pf.IndexFormatError, match="bloom filter"):
        r.evaluate(pf.field("x").equal(2))


@pytest.mark.parametrize("how", ["the same block", "overlapping", "going back"])
def test_handles_that_repeat_or_overlap(how):
    a = _block([(_int(1), _rids(*range(100)))])
    b = _block([(_int(2), _rids(*range(100, 200)))])
    blocks = [_plain(a), _plain(b)]
    sa, sb = len(blocks[0]), len(blocks[1])
    handles = {
        "the same block": [(0, len(a))] * 3,
        "overlapping": [(0, len(a)), (sa - 3, len(b))],
        "going back": [(sa, len(b)), (0, len(a))],
    }[how]
    assert sb  # (the second block is there: only the handles are wrong)
    keys = [_int(1 + i) for i in range(len(handles))]
    data = _file(blocks, list(zip(keys, handles)))
    r = gi.reader("INT", data, {}, None, index_type="btree")
    x = pf.field("x")
    # the scans that walk the index refuse it (a lookup of one key reads the one block its
    # entry names, as Java's does, and may answer from it)
    for pred in (x.is_not_null(), (x > 0), x.between(0, 5)):
        with pytest.raises(pf.IndexFormatError, match="overlaps or precedes"):
            r.evaluate(pred)


def test_handles_one_after_another_are_accepted():
    a = _block([(_int(1), _rids(*range(100)))])
    b = _block([(_int(2), _rids(*range(100, 200)))])
    blocks = [_plain(a), _plain(b)]
    data = _file(blocks, [(_int(1), (0, len(a))), (_int(2), (len(blocks[0]), len(b)))])
    r = gi.reader("INT", data, {}, None, index_type="btree")
    got = r.evaluate((pf.field("x") > 0))
    assert np.array_equal(np.array(sorted(got)), np.arange(200))
