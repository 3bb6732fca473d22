"""Corrupt / truncated global index files: only IndexFormatError or a valid answer.

Mutations of real Java files: random byte flips anywhere, truncations, flips inside
dictionary / index blocks (caught by the CRC), and flips inside compressed payloads
with the CRC recomputed so the codec itself sees garbage.
"""

import struct
import zlib

import numpy as np
import pytest
from pyroaring import BitMap64

import paimon_fast as pf
from paimon_fast import globalindex as gi
from paimon_fast.globalindex import sst as codec
from tests.support.vectorlib import HAS_LZO, LZO_SKIP, load_bin, load_case

FMT = "global_bitmap"
CASES = [
    "gb_string_n400_none_block64b",
    "gb_int_n3000_lz4_block256b",
    "gb_string_n3000_zstd_block256b",
    "gb_string_unicode_prefixes",
    "gb_timestamp9_n400_none_block64b",
    "gb_decimal30_5_n400_none_block64b",
    "gb_double_specials",
    "gb_int_rowids_cross_2pow32",
    "gb_string_prefixed_n6000_lzo_block1kb",
    "gb_string_prefixed_n6000_zstd_block1kb",
]


def _preds(c):
    vals = [v for v in c["values"] if v is not None][:3]
    from tests.support.vectorlib import decode_literal

    lits = [decode_literal(v, gi.KeyCodec(c["type"]).dtype) for v in vals] or [None]
    f = pf.field("x")
    ps = [f.is_null(), f.is_not_null(), f.isin(lits), f.notin(lits)]
    for v in lits[:2]:
        ps += [f.equal(v), f.not_equal(v)]
        if v is not None:
            ps += [f < v, f >= v, f.between(v, v)]
    if gi.KeyCodec(c["type"]).is_string:
        ps += [f.startswith("a"), f.contains("b"), f.endswith("c"), f.like("a_%"), f.like("%b%c")]
    return ps


def _evaluate_all(c, data, preds):
    try:
        # the universe of complements: the file's own rows (a 2^32-row range would dominate the run time)
        r = gi.reader(c["type"], data, {}, None)
    except pf.IndexFormatError:
        return
    for p in preds:
        try:
            res = r.evaluate(p)
        except pf.IndexFormatError:
            continue
        assert res is pf.UNSUPPORTED or isinstance(res, BitMap64)


def _read_all_blocks(f):
    """Decode (CRC-check) every dictionary block of a BitmapIndexFile."""
    for i in range(f.block_count()):
        f.raw_block(i)


def _blocks(c, data):
    f = gi.BitmapIndexFile(gi.KeyCodec(c["type"]), data)
    ft = f.footer
    _, _, _, of, ln = f.index()
    return [(ft.index_offset, ft.index_length)] + list(zip(of.tolist(), ln.tolist()))


@pytest.mark.parametrize("name", CASES)
def test_fuzz_mutations(name, seed_offset=0):
    c = load_case(FMT, name)
    if "lzo" in name and not HAS_LZO:
        pytest.skip(LZO_SKIP)
    orig = load_bin(FMT, c["file"])
    preds = _preds(c)
    blocks = _blocks(c, orig)
    rng = np.random.default_rng(zlib.crc32(name.encode()) + seed_offset)
    n = len(orig)
    rounds = 120 if c["row_count"] > 3000 else 300
    must_fail = caught = 0  # mutations no reader may accept silently: a dropped footer, a block byte the CRC covers
    for i in range(rounds):
        b = bytearray(orig)
        kind = i % 4
        if kind == 0:  # random flips anywhere (footer included)
            for _ in range(rng.integers(1, 4)):
                b[rng.integers(0, n)] ^= 1 << int(rng.integers(0, 8))
        elif kind == 1:  # truncation (drops the footer) or a cut-off prefix with a footer copy
            cut = int(rng.integers(0, n))
            dropped = rng.random() < 0.5
            b = b[:cut] if dropped else b[:cut] + b[-48:]
        elif kind == 2:  # flip inside a block: the CRC must catch it
            o, ln = blocks[int(rng.integers(0, len(blocks)))]
            if ln:
                b[o + int(rng.integers(0, ln))] ^= 0xFF
                must_fail += 1
                try:
                    f = gi.BitmapIndexFile(gi.KeyCodec(c["type"]), bytes(b))
                    f.index()
                    _read_all_blocks(f)
                except pf.IndexFormatError:
                    caught += 1
        else:  # flip inside a block and recompute the CRC: the payload/codec sees garbage
            o, ln = blocks[int(rng.integers(0, len(blocks)))]
            if ln:
                for _ in range(rng.integers(1, 3)):
                    b[o + int(rng.integers(0, ln))] = int(rng.integers(0, 256))
                b[o + ln : o + ln + 5] = codec.trailer(bytes(b[o : o + ln]), b[o + ln] if b[o + ln] < 4 else 0)
        if kind == 1 and dropped:
            must_fail += 1
            try:
                gi.reader(c["type"], bytes(b))
            except pf.IndexFormatError:
                caught += 1
        _evaluate_all(c, bytes(b), preds)  # IndexFormatError or an answer of the right kind, nothing else
    # every mutation no reader may accept (a dropped footer, a flipped byte under a block's CRC) was refused
    assert must_fail > 0 and caught == must_fail


def test_bad_crc_is_reported():
    c = load_case(FMT, "gb_string_n400_none_block64b")
    data = bytearray(load_bin(FMT, c["file"]))
    o, ln = _blocks(c, bytes(data))[1]
    data[o] ^= 0x55
    r = gi.reader(c["type"], bytes(data), {}, 400)
    with pytest.raises(pf.IndexFormatError, match="CRC"):
        r.evaluate(pf.field("x").contains("a"))


def test_bad_codec_payload_is_reported():
    c = load_case(FMT, "gb_string_prefixed_n6000_zstd_block1kb")
    data = bytearray(load_bin(FMT, c["file"]))
    f = gi.BitmapIndexFile(gi.KeyCodec(c["type"]), bytes(data))
    for o, ln in zip(f.index()[3].tolist(), f.index()[4].tolist()):
        if data[o + ln] == codec.ZSTD:
            break
    else:
        pytest.fail("no zstd block in the vector")
    for k in range(4, min(ln, 40)):
        data[o + k] ^= 0xA5
    data[o + ln : o + ln + 5] = codec.trailer(bytes(data[o : o + ln]), codec.ZSTD)
    r = gi.reader(c["type"], bytes(data), {}, c["reader_total_row_count"])
    with pytest.raises(pf.IndexFormatError):
        r.evaluate(pf.field("x").contains("a"))


def test_truncated_and_foreign_files():
    with pytest.raises(pf.IndexFormatError, match="shorter than its footer"):
        gi.reader("INT", b"\x00" * 10)
    with pytest.raises(pf.IndexFormatError, match="magic"):
        gi.reader("INT", b"\x00" * 100)
    c = load_case(FMT, "gb_int_n400_none_default")
    data = bytearray(load_bin(FMT, c["file"]))
    data[-48:-40] = struct.pack(">q", len(data) * 4)  # null bitmap offset beyond the file
    with pytest.raises(pf.IndexFormatError, match="outside"):
        gi.reader("INT", bytes(data))


def test_fuzz_large_bitmaps():
    """Bitmaps above 4 KB are validated by pyroaring's safe deserialization alone: mutations
    must give IndexFormatError or a bitmap, never a crash."""
    import paimon_fast.core.roaring as R
    from paimon_fast.globalindex.format import _deserialize64

    rng = np.random.default_rng(0)
    blobs = [
        R.serialize64(np.unique(rng.integers(0, 3 * 10**6, 100000).astype(np.uint64))),
        R.serialize64(np.arange(0, 10**6, 2, dtype=np.uint64)),
        R.serialize64(np.arange(2**32 - 70000, 2**32 + 70000, dtype=np.uint64)),
    ]
    errors = 0
    for b0 in blobs:
        for i in range(700):
            b = bytearray(b0)
            if i % 3 == 0:
                for _ in range(rng.integers(1, 5)):
                    b[rng.integers(0, len(b))] ^= 1 << int(rng.integers(0, 8))
            elif i % 3 == 1:
                b = b[: rng.integers(0, len(b))]
            else:
                b[rng.integers(0, 64)] = int(rng.integers(0, 256))
            try:
                assert isinstance(_deserialize64(bytes(b), 0), BitMap64)
            except pf.IndexFormatError:
                errors += 1
    assert errors > 0
