"""Bitmap global index vs Java Paimon HEAD golden vectors (tests/data/global_bitmap).

* compression none: our writer produces the identical file and SortedIndexFileMeta bytes;
* lz4 / zstd / lzo: Java's compressed payloads depend on the codec library, so we check that
  every block we build is exactly the block Java compressed (by substituting Java's stored
  payload for each of our raw blocks, the whole file becomes byte-identical), and that our
  own compressed file answers every predicate like Java;
* every predicate answer of Java's reader (10,023 of them, row ids above 2^32 included).
"""

import pytest
from pyroaring import BitMap64

import paimon_fast as pf
from paimon_fast import globalindex as gi
from paimon_fast.globalindex import sst as codec
from tests.support.vectorlib import (
    case_leaf,
    case_names,
    compressed_case,
    decode_rows,
    load_bin,
    load_case,
    manifest,
    row_ids,
    write_case,
)

FMT = "global_bitmap"
NAMES = case_names(FMT)


class JavaPayloads:
    """Encoder returning Java's stored block (payload + trailer) for each raw block Java wrote."""

    def __init__(self, java_file: bytes, dtype):
        f = gi.BitmapIndexFile(gi.KeyCodec(dtype), java_file)
        self.by_raw = {}
        ft = f.footer
        blocks = [(ft.index_offset, ft.index_length)]
        _, _, _, of, ln = f.index()
        blocks += list(zip(of.tolist(), ln.tolist()))
        for o, n in blocks:
            stored = java_file[o : o + n + codec.TRAILER]
            raw, _ = codec.decode(stored, n, o)
            self.by_raw[bytes(raw)] = stored
        self.misses = 0

    def __call__(self, raw):
        if raw not in self.by_raw:
            self.misses += 1
            return codec.BlockEncoder()(raw)
        return self.by_raw[raw]


def test_all_cases_present():
    assert len(NAMES) == 69
    assert sum(1 for n in NAMES if load_case(FMT, n)["file"]) == 68


@pytest.mark.parametrize("name", NAMES)
def test_writer_matches_java(name):
    c, comp = compressed_case(FMT, name)
    data, meta = write_case(c, "bitmap", batches=3)
    if c["file"] is None:
        assert data is None and meta is None and c["result_entries"] == 0
        return
    want = load_bin(FMT, c["file"])
    assert meta.hex() == c["result_entry_meta_hex"]
    if comp == "none":
        assert data == want
    else:
        enc = JavaPayloads(want, c["type"])
        data2, meta2 = write_case(c, "bitmap", encoder=enc)
        assert enc.misses == 0, "a block we built differs from every block Java compressed"
        assert data2 == want and meta2 == meta


def _uncompressed_small():
    out = []
    for n in NAMES:
        c = load_case(FMT, n)
        if c["file"] and c["row_count"] <= 3000 and c["options"].get("bitmap-index.compression", "none") == "none":
            out.append(n)
    return out


@pytest.mark.parametrize("name", _uncompressed_small())
def test_writer_input_order_does_not_matter(name):
    c, comp = compressed_case(FMT, name)
    data, meta = write_case(c, "bitmap", batches=4, shuffle_seed=7)
    assert data == load_bin(FMT, c["file"])
    assert meta.hex() == c["result_entry_meta_hex"]


def _check_answers(c, data):
    r = gi.reader(c["type"], data, c["options"], c["reader_total_row_count"])
    n = 0
    for p in c["predicates"]:
        got = r.evaluate(case_leaf(p, r.dtype))
        res = p["result"]
        if not res.get("supported", True):
            assert got is pf.UNSUPPORTED, p
            continue
        assert got is not pf.UNSUPPORTED, p
        assert got == decode_rows(res, bits64=True), p
        n += 1
    return n


@pytest.mark.parametrize("name", [n for n in NAMES if load_case(FMT, n)["file"]])
def test_reader_answers_like_java(name):
    c, comp = compressed_case(FMT, name)
    assert _check_answers(c, load_bin(FMT, c["file"])) == len(c["predicates"])


@pytest.mark.parametrize(
    "name", [n for n in NAMES if load_case(FMT, n)["options"].get("bitmap-index.compression", "none") != "none"]
)
def test_our_compressed_files_answer_like_java(name):
    c, comp = compressed_case(FMT, name)
    data, _ = write_case(c, "bitmap")
    f = gi.BitmapIndexFile(gi.KeyCodec(c["type"]), data)
    kinds = f.describe()["block_compression"]
    if name.startswith("gb_string_prefixed"):
        assert kinds.get(comp, 0) > 0, "compressible blocks should be stored compressed"
    _check_answers(c, data)


def test_row_ids_above_2_pow_32():
    c = load_case(FMT, "gb_int_rowids_cross_2pow32")
    rids = row_ids(c)
    assert rids.max() > 2**32 > rids.min()
    r = gi.reader(c["type"], load_bin(FMT, c["file"]), c["options"], c["reader_total_row_count"])
    assert r.evaluate(pf.field("x").is_null()) | r.evaluate(pf.field("x").is_not_null()) >= BitMap64(rids.tolist())


def test_zero_rows_writes_nothing():
    w = gi.writer("INT")
    assert w.finish() == (None, None)


def test_unsupported_binary_types():
    for t in ("BYTES", "BINARY(4)", "VARBINARY(8)"):
        with pytest.raises(pf.UnsupportedTypeError):
            gi.writer(t)


def test_manifest_producer_is_head():
    assert "HEAD" in manifest(FMT)["producer"]
