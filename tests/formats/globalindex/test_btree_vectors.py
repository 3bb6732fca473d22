"""BTree global index vs Java Paimon HEAD golden vectors (tests/data/global_btree).

* compression none: our writer produces the identical file and SortedIndexFileMeta bytes;
* lz4 / zstd / lzo: compressed bytes depend on the codec library, so every block we build is
  checked to be exactly the block Java compressed (substituting Java's stored payload for each
  of our raw blocks makes the whole file byte-identical), and our own compressed file answers
  every predicate like Java's;
* every predicate answer of Java's reader (its public path, ``LazyFilteredBTreeReader`` over
  the file and its meta), by the reader over files with their metas and by the one-file reader
  (no meta given); where Java throws (an ``IN`` list holding a NULL) the answer is the SQL one,
  from brute force over the case's values; a NULL string pattern is not answered (and SQL's
  filter keeps no row);
* every top-N answer (``visitTopN``: the row ids and the ordered key groups);
* the Java-written pk-btree file from pypaimon's test resources.
"""

import struct

import pyarrow as pa
import pytest
from pyroaring import BitMap64

import paimon_fast as pf
from paimon_fast import globalindex as gi
from paimon_fast.globalindex import sst
from paimon_fast.globalindex.btree import BTreeIndexFile
from paimon_fast.globalindex.keys import KeyCodec
from paimon_fast.core.predicate import STRING_OPS
from paimon_fast.read.arrow_filter import to_arrow_expression
from paimon_fast.core.types import DataType
from tests.support.vectorlib import (
    arrow_values,
    case_leaf,
    case_names,
    compressed_case,
    decode_literal,
    decode_rows,
    load_bin,
    load_case,
    manifest,
    row_ids,
    write_case,
)

FMT = "global_btree"
NAMES = case_names(FMT)
WITH_FILE = [n for n in NAMES if load_case(FMT, n)["file"]]


def _values_table(c):
    return pa.table({"x": arrow_values(c["values"], c["type"])})


def _sql_in(c, literals):
    """Brute force: the rows whose value is one of the non-null literals (keys compared as the
    serialized bytes Java compares logically equal)."""
    codec = KeyCodec(c["type"])
    dtype = DataType.parse(c["type"])
    want = {codec.literal_bytes(decode_literal(v, dtype)) for v in literals if v is not None}
    rids = row_ids(c)
    out = BitMap64()
    for v, r in zip(c["values"], rids.tolist()):
        if v is not None and codec.literal_bytes(decode_literal(v, dtype)) in want:
            out.add(r)
    return out


class JavaPayloads:
    """Encoder returning Java's stored block (payload + trailer) for each raw block Java wrote."""

    def __init__(self, java_file: bytes, dtype):
        f = BTreeIndexFile(KeyCodec(dtype), java_file)
        self.by_raw = {}
        ft = f.footer
        _, _, _, offs, sizes = f.index()
        for o, n in [(ft.index_offset, ft.index_size)] + list(zip(offs.tolist(), sizes.tolist())):
            stored = java_file[o : o + n + sst.TRAILER]
            raw, _ = sst.decode(stored, n, o)
            self.by_raw[bytes(raw)] = stored
        self.ctype = sst.ZSTD  # anything but NONE: the writer then frames blocks through us
        self.misses = 0

    def __call__(self, raw):
        if raw not in self.by_raw:
            self.misses += 1
            return sst.BlockEncoder()(raw)
        return self.by_raw[raw]


def test_all_cases_present():
    assert len(NAMES) == 85
    assert len(WITH_FILE) == 84
    assert "HEAD" in manifest(FMT)["producer"]


@pytest.mark.parametrize("name", [n for n in NAMES if n != "bt_pypaimon_pk_golden_string"])
def test_writer_matches_java(name):
    c, comp = compressed_case(FMT, name)
    data, meta = write_case(c, "btree", batches=3)
    if c["file"] is None:
        assert data is None and meta is None and c["writer_error"]
        return
    want = load_bin(FMT, c["file"])
    assert meta.hex() == c["result_entry_meta_hex"]
    if comp == "none":
        assert data == want
    else:
        enc = JavaPayloads(want, c["type"])
        data2, meta2 = write_case(c, "btree", encoder=enc)
        assert enc.misses == 0, "a block we built differs from every block Java compressed"
        assert data2 == want and meta2 == meta


def test_pypaimon_golden_file_rewritten_byte_for_byte():
    """The Java-written 122-byte pk-btree file of pypaimon's test resources: our writer fed its
    four rows gives the same bytes and meta (as Java's HEAD writer does)."""
    c = load_case(FMT, "bt_pypaimon_pk_golden_string")
    want = load_bin(FMT, c["file"])
    assert len(want) == 122
    data, meta = write_case(c, "btree")
    assert data == want and meta.hex() == c["result_entry_meta_hex"]


def _small_uncompressed():
    return [
        n
        for n in WITH_FILE
        if load_case(FMT, n)["row_count"] <= 3000
        and load_case(FMT, n)["options"].get("btree-index.compression", "none") == "none"
    ]


@pytest.mark.parametrize("name", _small_uncompressed()[::3])
def test_writer_input_order_does_not_matter(name):
    c, _ = compressed_case(FMT, name)
    data, meta = write_case(c, "btree", batches=4, shuffle_seed=7)
    assert data == load_bin(FMT, c["file"])
    assert meta.hex() == c["result_entry_meta_hex"]


def _check_answers(c, data):
    # Java's public path: the file with its meta (files are selected by their metas first)
    r = gi.BTreeGlobalIndex(
        [(data, bytes.fromhex(c["result_entry_meta_hex"]))], c["type"], c["options"], c["reader_total_row_count"]
    )
    # the one-file reader (no meta given) gives the same answers, the scan limit included: it
    # selects the file by the first / last key and nulls the file holds before it applies the limit
    one = gi.reader(c["type"], data, c["options"], c["reader_total_row_count"], index_type="btree")
    n = 0
    for p in c["predicates"]:
        res = p["result"]
        if p["op"] in STRING_OPS and p.get("literal", "") is None:
            # a NULL pattern: Java's index does not answer it, and SQL gives no row
            assert not res.get("supported", True), p
            assert _values_table(c).filter(to_arrow_expression(case_leaf(p, r.dtype))).num_rows == 0, p
        got = r.evaluate(case_leaf(p, r.dtype))
        assert one.evaluate(case_leaf(p, r.dtype)) == got, p
        if "error" in res:  # Java throws (a NULL in an IN list): we give SQL's answer
            assert p["op"] == "in" and None in p["literals"], p
            assert got == _sql_in(c, p["literals"]), p
            n += 1
            continue
        if not res.get("supported", True):
            assert got is pf.UNSUPPORTED, p
            n += 1
            continue
        assert got is not pf.UNSUPPORTED, p
        assert got == decode_rows(res, bits64=True), p
        n += 1
    return n


@pytest.mark.parametrize("name", WITH_FILE)
def test_reader_answers_like_java(name):
    c, _ = compressed_case(FMT, name)
    assert _check_answers(c, load_bin(FMT, c["file"])) == len(c["predicates"]) > 0


def _check_top_n(c, data):
    codec = KeyCodec(c["type"])
    dtype = DataType.parse(c["type"])
    idx = gi.BTreeGlobalIndex(
        [(data, bytes.fromhex(c["result_entry_meta_hex"]))], c["type"], c["options"], c["reader_total_row_count"]
    )
    n = 0
    for t in c["top_n"]:
        rows, groups = idx.top_n(t["limit"], t["direction"] == "DESCENDING", t["null_ordering"] == "NULLS_FIRST")
        assert rows == decode_rows(t["result"], bits64=True), t
        want = [
            (None if g["key"] is None else codec.literal_bytes(decode_literal(g["key"], dtype)), g["row_ids"])
            for g in t["groups"]
        ]
        assert [(k, r.tolist()) for k, r in groups] == want, t
        n += 1
    return n


@pytest.mark.parametrize("name", WITH_FILE)
def test_top_n_like_java(name):
    c, _ = compressed_case(FMT, name)
    assert _check_top_n(c, load_bin(FMT, c["file"])) == len(c["top_n"]) > 0


@pytest.mark.parametrize(
    "name", [n for n in WITH_FILE if load_case(FMT, n)["options"].get("btree-index.compression", "none") != "none"]
)
def test_our_compressed_files_answer_like_java(name):
    c, comp = compressed_case(FMT, name)
    data, _ = write_case(c, "btree")
    kinds = BTreeIndexFile(KeyCodec(c["type"]), data).describe()["block_compression"]
    if "prefixed" in name or "n100000" in name:
        assert kinds.get(comp, 0) > 0, "compressible blocks should be stored compressed"
    _check_answers(c, data)


def test_zero_rows_writes_nothing():
    assert gi.writer("INT", index_type="btree").finish() == (None, None)


def test_unsupported_types_like_java():
    for u in manifest(FMT)["unsupported_types"]:
        t = u["type"]
        if "VECTOR" in t or "VARIANT" in t or "BLOB" in t:
            continue  # types paimon-fast does not parse at all
        with pytest.raises((pf.UnsupportedTypeError, ValueError)):
            gi.writer(t, index_type="btree")


def test_version_other_than_one_is_refused():
    c = load_case(FMT, "bt_int_n400_default")
    data = bytearray(load_bin(FMT, c["file"]))
    struct.pack_into("<i", data, len(data) - 8, 2)
    with pytest.raises(pf.IndexFormatError, match="version 2"):
        gi.reader(c["type"], bytes(data), {}, 400, index_type="btree")


def test_row_ids_above_2_pow_32():
    c = load_case(FMT, "bt_int_rowids_cross_2pow32_block128b")
    rids = row_ids(c)
    assert rids.max() > 2**32 > rids.min()
    r = gi.reader(c["type"], load_bin(FMT, c["file"]), c["options"], c["reader_total_row_count"], index_type="btree")
    assert r.evaluate(pf.field("x").is_null()) | r.file.nonnull_rows() == BitMap64(rids.tolist())


def test_inspect_names_a_btree_file(tmp_path, capsys):
    import json

    from paimon_fast import cli

    c = load_case(FMT, "bt_int_n400_block64b")
    p = tmp_path / "btree-global-index-0.index"
    p.write_bytes(load_bin(FMT, c["file"]))
    assert cli.main(["inspect", str(p), "--row-type", "x=INT", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    nulls = sum(v is None for v in c["values"])
    assert d["format"] == "btree global index" and d["rows"] == 400 and d["null_count"] == nulls
    assert d["distinct_values"] == len({v for v in c["values"] if v is not None})
    assert (d["first_key"], d["last_key"]) == (
        min(v for v in c["values"] if v is not None),
        max(v for v in c["values"] if v is not None),
    )
