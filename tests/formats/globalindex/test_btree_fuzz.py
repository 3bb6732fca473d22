"""Corrupt / truncated BTree global index files: only IndexFormatError or a valid answer.

Mutations of real Java files: random byte flips anywhere (footer included), truncations,
flips inside data / index blocks (the CRC must catch them), and bytes changed inside blocks
and the null bitmap with every CRC made right again, so the block parsers, the row-id
lists and the codecs see the garbage themselves.
"""

import struct
import zlib

import numpy as np
import pytest
from pyroaring import BitMap64

import paimon_fast as pf
from paimon_fast import globalindex as gi
from paimon_fast.globalindex.btree import BTreeIndexFile
from paimon_fast.globalindex.keys import KeyCodec
from tests.support.fuzz_scale import recrc_btree
from tests.support.vectorlib import HAS_LZO, LZO_SKIP, decode_literal, load_bin, load_case

FMT = "global_btree"
CASES = [
    "bt_string_n400_block64b",
    "bt_int_clustered_n3000_zstd_block1kb",
    "bt_string_prefixed_n3000_lz4_block1kb",
    "bt_timestamp9_n400_block64b",
    "bt_decimal30_5_n400_block64b",
    "bt_double_specials_block32b",
    "bt_int_rowids_cross_2pow32_block128b",
    "bt_bigint_one_key_n5000_block64b",
    "bt_string_long_keys_block64b",
    "bt_int_one_null_n20",
    "bt_string_prefixed_n3000_lzo_block1kb",
]


def _preds(c):
    dtype = KeyCodec(c["type"]).dtype
    lits = [decode_literal(v, dtype) for v in [v for v in c["values"] if v is not None][:3]] or [None]
    f = pf.field("x")
    ps = [f.is_null(), f.is_not_null(), f.isin(lits), f.notin(lits)]
    for v in lits[:2]:
        ps += [f.equal(v), f.not_equal(v)]
        if v is not None:
            ps += [f < v, f >= v, f.between(v, v), f.not_between(v, v)]
    if KeyCodec(c["type"]).is_string:
        ps += [f.startswith("c"), f.contains("b"), f.like("c%"), f.like("a_%")]
    return ps


def _evaluate_all(c, data, preds):
    try:
        r = gi.reader(c["type"], data, {}, None, index_type="btree")
    except pf.IndexFormatError:
        return 0
    answered = 0
    for p in preds:
        try:
            res = r.evaluate(p)
        except pf.IndexFormatError:
            continue
        assert res is pf.UNSUPPORTED or isinstance(res, BitMap64)
        answered += 1
    try:
        rows, groups = r.top_n(7, desc=True, nulls_first=False)
        assert isinstance(rows, BitMap64) and len(rows) <= 7
    except pf.IndexFormatError:
        pass
    return answered


def _blocks(c, data):
    f = BTreeIndexFile(KeyCodec(c["type"]), data)
    ft = f.footer
    _, _, _, offs, sizes = f.index()
    return [(ft.index_offset, ft.index_size)] + list(zip(offs.tolist(), sizes.tolist()))


def _read_everything(c, data):
    f = BTreeIndexFile(KeyCodec(c["type"]), data)
    f.index()
    for i in range(f.block_count()):
        f.block(i)
    f.null_rows()


@pytest.mark.parametrize("name", CASES)
def test_fuzz_mutations(name):
    c = load_case(FMT, name)
    if "lzo" in name and not HAS_LZO:
        pytest.skip(LZO_SKIP)
    orig = load_bin(FMT, c["file"])
    preds = _preds(c)
    blocks = _blocks(c, orig)
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    n = len(orig)
    rounds = 60 if c["row_count"] > 3000 else 160
    must_fail = caught = garbage_answers = 0
    for i in range(rounds):
        b = bytearray(orig)
        kind = i % 4
        if kind == 0:  # random flips anywhere (footer included)
            for _ in range(rng.integers(1, 4)):
                b[rng.integers(0, n)] ^= 1 << int(rng.integers(0, 8))
        elif kind == 1:  # truncation: the footer is gone, or a cut body under a copy of it
            cut = int(rng.integers(0, n))
            dropped = rng.random() < 0.5
            b = b[:cut] if dropped else b[:cut] + b[-52:]
            if dropped:
                must_fail += 1
                try:
                    gi.reader(c["type"], bytes(b), index_type="btree")
                except pf.IndexFormatError:
                    caught += 1
        elif kind == 2:  # flip inside a block: the CRC must catch it
            o, ln = blocks[int(rng.integers(0, len(blocks)))]
            if ln:
                b[o + int(rng.integers(0, ln))] ^= 0xFF
                must_fail += 1
                try:
                    _read_everything(c, bytes(b))
                except pf.IndexFormatError:
                    caught += 1
        else:  # garbage inside a block with the CRCs made right: the parsers see it
            o, ln = blocks[int(rng.integers(0, len(blocks)))]
            if ln:
                for _ in range(rng.integers(1, 3)):
                    b[o + int(rng.integers(0, ln))] = int(rng.integers(0, 256))
            b = bytearray(recrc_btree(bytes(b)))
        garbage_answers += _evaluate_all(c, bytes(b), preds)
    # every mutation no reader may accept (a dropped footer, a flipped byte under a CRC) was refused
    assert must_fail > 0 and caught == must_fail
    assert garbage_answers > 0


def test_bad_crc_is_reported_with_where():
    c = load_case(FMT, "bt_string_n400_block64b")
    data = bytearray(load_bin(FMT, c["file"]))
    o, ln = _blocks(c, bytes(data))[1]
    data[o] ^= 0x55
    r = gi.reader(c["type"], bytes(data), {}, 400, index_type="btree")
    with pytest.raises(pf.IndexFormatError, match="CRC") as ei:
        r.evaluate(pf.field("x").contains("a"))  # every non-null row: every data block read
    assert ei.value.offset is not None


def test_null_bitmap_crc_is_checked():
    c = load_case(FMT, "bt_int_one_null_n20")
    data = bytearray(load_bin(FMT, c["file"]))
    no, ns = struct.unpack_from("<qi", data, len(data) - 52 + 32)
    data[no + 1] ^= 1
    r = gi.reader(c["type"], bytes(data), {}, 20, index_type="btree")
    with pytest.raises(pf.IndexFormatError, match="null bitmap CRC"):
        r.evaluate(pf.field("x").is_null())


def test_footer_handles_outside_the_file_are_refused():
    c = load_case(FMT, "bt_int_n400_default")
    orig = load_bin(FMT, c["file"])
    for at, value, fmt in [(20, 10**9, "<q"), (28, -1, "<i"), (32, 10**9, "<q"), (0, 10**9, "<q"), (44, 0, "<i")]:
        data = bytearray(orig)
        struct.pack_into(fmt, data, len(data) - 52 + at, value)
        with pytest.raises(pf.IndexFormatError):
            gi.reader(c["type"], bytes(data), index_type="btree")
    with pytest.raises(pf.IndexFormatError, match="shorter than its footer"):
        gi.reader(c["type"], orig[-51:], index_type="btree")


def test_a_row_id_count_past_its_entry_is_refused():
    """A data entry claiming more row ids than its value holds (CRCs made right)."""
    c = load_case(FMT, "bt_int_n1")
    data = bytearray(load_bin(FMT, c["file"]))
    # the only entry: varint 4, key (4 bytes), varint value length, varint count
    assert data[0] == 4
    data[6] = 0x7F
    data = recrc_btree(bytes(data))
    r = gi.reader(c["type"], data, {}, 1, index_type="btree")
    with pytest.raises(pf.IndexFormatError, match="row id"):
        r.file.nonnull_rows()


def test_cold_lookup_from_a_path_equals_the_block_walk(tmp_path):
    """A fresh reader's first = on a local file (the one-call kernel: index from the bytes read
    at open, the data block read by the descriptor) gives the block-by-block walk's rows, and a
    data block with a bad CRC is still refused."""
    c = load_case(FMT, "bt_string_n100000_zstd_block1kb")
    w = gi.writer(c["type"], {"btree-index.block-size": "4kb"}, index_type="btree")
    from tests.support.vectorlib import arrow_values

    w.write_batch(arrow_values(c["values"], c["type"]), np.arange(c["row_count"], dtype=np.uint64))
    data, _ = w.finish()
    p = tmp_path / "f.index"
    p.write_bytes(data)
    walk = BTreeIndexFile(KeyCodec(c["type"]), data)
    walk.index()  # parsed: the block-by-block way
    for v in [c["values"][i] for i in (0, 7, 99, 5000, 77777)] + ["no such value", ""]:
        if v is None:
            continue
        cold = gi.reader(c["type"], str(p), {}, c["row_count"], index_type="btree")
        assert cold.evaluate(pf.field("x") == v) == walk.equal(v.encode()), v
    u8, ks, kl, offs, sizes = walk.index()
    key = u8[ks[3] : ks[3] + kl[3]].tobytes()  # the last key of data block 3
    bad = bytearray(data)
    bad[int(offs[3]) + 1] ^= 0x40
    p.write_bytes(bytes(bad))
    r = gi.reader(c["type"], str(p), {}, c["row_count"], index_type="btree")
    with pytest.raises(pf.IndexFormatError, match="CRC"):
        r.evaluate(pf.field("x") == key.decode())
