"""The multivalue (ARRAY) global index: Java master's ``MultiValueGlobalIndexer`` layout byte for
byte, ``MultiValueBitmapIndexReader``'s answers, and the array predicates everywhere else.

Expected bytes are derived independently of the multivalue writer:
* from Java's own bitmap global index vectors (tests/data/global_bitmap): arrays holding one
  element each index exactly the postings of Java's file, so the multivalue file is Java's file
  with its null-rows and non-null-rows bitmaps replaced by empty ones (footer offsets moved) and
  its meta's has-nulls false;
* for general arrays: the bitmap global index writer (byte-exact against those vectors) fed the
  distinct (element, row id) postings, with the same two bitmaps emptied.
Answers are checked against a plain-Python oracle over the JSON values of the vectors.
"""

import json
import struct

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from pyroaring import BitMap64

import paimon_fast as pf
from paimon_fast import globalindex as gi
from paimon_fast.globalindex.meta import SortedIndexFileMeta
from paimon_fast.reference import globalindex as twin
from tests.support.vectorlib import arrow_values, case_names, decode_literal, load_bin, load_case, row_ids

FMT = "global_bitmap"
FOOTER = struct.Struct(">qiqiqiiii")
EMPTY = b"\x00" * 8
MAGIC = 0x42474958
TYPES = sorted({n.rsplit("_n400", 1)[0] for n in case_names(FMT) if "_n400_" in n})
NONE_CASES = [n for n in case_names(FMT) if "_none_" in n or n.endswith(("specials", "2pow32", "prefixes"))]


def as_multivalue(bitmap_file: bytes, bitmap_meta: bytes):
    """A bitmap global index file (and meta) -> the multivalue file of the same postings:
    empty null-rows / non-null-rows bitmaps, the index block and footer moved, has-nulls false."""
    (null_off, null_len, nn_off, nn_len, idx_off, idx_len, count, version, magic) = FOOTER.unpack(bitmap_file[-48:])
    assert version == 1 and magic == MAGIC
    assert null_off + null_len == nn_off and nn_off + nn_len == idx_off
    assert idx_off + idx_len + 5 == len(bitmap_file) - 48
    body = bitmap_file[:null_off]
    index = bitmap_file[idx_off : idx_off + idx_len + 5]
    pos = len(body)
    data = body + EMPTY + EMPTY + index + FOOTER.pack(pos, 8, pos + 8, 8, pos + 16, idx_len, count, 1, MAGIC)
    m = SortedIndexFileMeta.deserialize(bitmap_meta)
    return data, SortedIndexFileMeta(m.first_key, m.last_key, False).serialize()


def _lists(elems: pa.Array, lengths, null_rows=()):
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    mask = np.zeros(len(lengths), bool)
    mask[list(null_rows)] = True
    return pa.ListArray.from_arrays(pa.array(offsets), elems, mask=pa.array(mask))


MV_OPTS = {
    "bitmap-index.dictionary-block-size": "multivalue-index.dictionary-block-size",
    "bitmap-index.compression": "multivalue-index.compression",
    "bitmap-index.compression-level": "multivalue-index.compression-level",
}


def _mv_options(opts):
    return {MV_OPTS[k]: v for k, v in opts.items()}


# ---------------------------------------------------------------- bytes: Java's vectors


@pytest.mark.parametrize("name", NONE_CASES)
def test_single_element_arrays_match_java_vectors(name):
    c = load_case(FMT, name)
    java = load_bin(FMT, c["file"])
    if c["result_entries"] == 0:
        pytest.skip("no file for zero rows (covered by test_zero_rows_and_element_less_rows)")
    want = as_multivalue(java, bytes.fromhex(c["result_entry_meta_hex"]))
    vals = arrow_values(c["values"], c["type"])
    rids = row_ids(c)
    # a null value becomes, in turn, a null array, an array of one null and an empty array
    valid = np.asarray(vals.is_valid().to_numpy(zero_copy_only=False), bool)
    kind = np.cumsum(~valid) % 3
    lengths = np.where(valid, 1, np.where(kind == 1, 1, 0))
    elems = vals.filter(pa.array(valid | (kind == 1)))
    null_rows = np.flatnonzero(~valid & (kind == 0))
    arrays = _lists(elems, lengths, null_rows)
    w = gi.writer(f"ARRAY<{c['type']}>", _mv_options(c["options"]), index_type="multivalue")
    half = len(arrays) // 2  # two batches, the second first: input order does not matter
    w.write_batch(arrays.slice(half), rids[half:])
    w.write_batch(arrays.slice(0, half), rids[:half])
    assert w.finish() == want


# ---------------------------------------------------------------- bytes: general arrays


def _pool(t):
    c = load_case(FMT, f"{t}_n400_none_default")
    return c, arrow_values(c["values"], c["type"])


def _random_arrays(pool: pa.Array, n, seed, max_len=5, from_first=300):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, max_len, n)
    idx = rng.integers(0, min(from_first, len(pool)), int(lengths.sum()))
    dup = rng.random(len(idx)) < 0.15  # repeat an earlier element of the same array
    idx[1:][dup[1:]] = idx[:-1][dup[1:]]
    null_rows = np.flatnonzero(rng.random(n) < 0.1)
    lengths[null_rows] = 0
    return _lists(pool.take(pa.array(idx)), lengths, null_rows), idx, lengths, null_rows


def _expected_via_bitmap_writer(dtype, arrays, rids, options):
    """Distinct (element, row id) postings -> the bitmap writer -> emptied row bitmaps."""
    flat = pa.concat_arrays([arrays.flatten()]) if len(arrays) else None
    # lengths from Arrow, not to_pylist(): pyarrow 14 without pandas cannot make Python values of ns timestamps
    lengths = pc.fill_null(pc.list_value_length(arrays), 0).to_numpy(zero_copy_only=False)
    parents = np.repeat(np.arange(len(arrays)), lengths)
    keep = np.asarray(flat.is_valid().to_numpy(zero_copy_only=False), bool)
    elems, erids = flat.filter(pa.array(keep)), rids[parents[keep]]
    if len(elems) == 0:
        return None
    w = gi.writer(dtype, options)
    w.write_batch(elems, erids)
    # the postings repeat row ids (one per element), which the bitmap writer's finish() refuses:
    # build its file from the same keys and row ids directly
    from paimon_fast.globalindex.format import build_file

    return as_multivalue(*build_file(w.codec, w._keys[0], w._rids[0], w.block_size, w.encoder))


@pytest.mark.parametrize("t", TYPES)
@pytest.mark.parametrize("opts", [{}, {"bitmap-index.dictionary-block-size": "64b"}], ids=["default", "block64b"])
def test_arrays_match_bitmap_writer_postings(t, opts):
    c, pool = _pool(t)
    arrays, _, _, _ = _random_arrays(pool, 500, seed=len(t))
    rids = np.arange(500, dtype=np.uint64) * 3 + 7
    want = _expected_via_bitmap_writer(c["type"], arrays, rids, opts)
    w = gi.writer(f"ARRAY<{c['type']}>", _mv_options(opts), index_type="multivalue")
    w.write_batch(arrays, rids)
    got = w.finish()
    assert got == want
    # the plain-Python twin agrees byte for byte
    assert twin.build_multivalue_file(f"ARRAY<{c['type']}>", arrays, rids, _mv_options(opts)) == want
    # several dictionary blocks with 64-byte blocks (BOOLEAN has two keys: one block)
    if opts and t != "gb_boolean":
        assert gi.reader(f"ARRAY<{c['type']}>", got[0], index_type="multivalue").describe()["dictionary_blocks"] > 1


@pytest.mark.parametrize("comp", ["lz4", "zstd"])
@pytest.mark.parametrize("t", ["gb_int", "gb_string", "gb_decimal30_5"])
def test_compression_matches_bitmap_writer(t, comp):
    c, pool = _pool(t)
    arrays, _, _, _ = _random_arrays(pool, 800, seed=3)
    rids = np.arange(800, dtype=np.uint64)
    opts = {
        "bitmap-index.compression": comp,
        "bitmap-index.dictionary-block-size": "256b",
        "bitmap-index.compression-level": "3",
    }
    want = _expected_via_bitmap_writer(c["type"], arrays, rids, opts)
    w = gi.writer(f"ARRAY<{c['type']}>", _mv_options(opts), index_type="multivalue")
    w.write_batch(arrays, rids)
    assert w.finish() == want


def test_bitmap_index_options_do_not_apply():
    arrays = pa.array([[i % 50, i % 7] for i in range(400)], pa.list_(pa.int32()))
    base = gi.writer("ARRAY<INT>", {}, index_type="multivalue")
    base.write_batch(arrays)
    other = gi.writer(
        "ARRAY<INT>",
        {"bitmap-index.dictionary-block-size": "64b", "bitmap-index.compression": "zstd"},
        index_type="multivalue",
    )
    other.write_batch(arrays)
    small = gi.writer("ARRAY<INT>", {"multivalue-index.dictionary-block-size": "64b"}, index_type="multivalue")
    small.write_batch(arrays)
    assert base.finish() == other.finish() != small.finish()


def test_hand_checked_small_file():
    # rows: [5, 5, null], null, [], [-1]   -> keys -1 {3}, 5 {0}
    w = gi.writer("ARRAY<INT>", None, index_type="multivalue")
    w.write_batch(pa.array([[5, 5, None], None, [], [-1]], pa.list_(pa.int32())), np.arange(4))
    data, meta = w.finish()
    null_off, null_len, nn_off, nn_len, idx_off, idx_len, count, version, magic = FOOTER.unpack(data[-48:])
    assert (null_len, nn_len, count, version, magic) == (8, 8, 2, 1, MAGIC)
    assert data[null_off : null_off + 16] == EMPTY + EMPTY and nn_off == null_off + 8 and idx_off == nn_off + 8
    # Paimon's INT key: 4 bytes little-endian; meta: i32 LE lengths, keys, has-nulls 0, version 1, no null flags
    assert meta == (
        struct.pack("<i", 4) + struct.pack("<i", -1) + struct.pack("<i", 4) + struct.pack("<i", 5) + b"\x00\x01\x00"
    )
    r = gi.reader("ARRAY<INT>", data, index_type="multivalue")
    assert r.evaluate(pf.field("t").array_contains(5)) == BitMap64([0])
    assert r.evaluate(pf.field("t").array_contains(-1)) == BitMap64([3])
    # one posting per distinct element: the row bitmap {0} is the portable 64-bit serialization
    assert bytes(BitMap64([0]).serialize()) in data


def test_zero_rows_and_element_less_rows():
    w = gi.writer("ARRAY<STRING>", {}, index_type="multivalue")
    assert w.finish() == (None, None)
    w = gi.writer("ARRAY<STRING>", {}, index_type="multivalue")
    w.write_batch(pa.array([None, [], [None, None]], pa.list_(pa.string())), np.array([4, 9, 2]))
    data, meta = w.finish()
    # no dictionary block: index block = varint 0 + 5-byte trailer; two empty bitmaps; footer
    assert data[:16] == EMPTY + EMPTY
    assert FOOTER.unpack(data[-48:]) == (0, 8, 8, 8, 16, 1, 0, 1, MAGIC)
    assert len(data) == 16 + 1 + 5 + 48 and data[16] == 0
    assert meta == b"\x00\x00\x00\x00" + b"\x00\x00\x00\x00" + b"\x00\x01\x03"
    r = gi.reader("ARRAY<STRING>", data, index_type="multivalue")
    assert r.describe()["dictionary_blocks"] == 0
    assert r.evaluate(pf.field("t").array_contains("a")) == BitMap64()
    assert twin.build_multivalue_file("ARRAY<STRING>", [None, [], [None, None]], [4, 9, 2]) == (data, meta)


def test_non_array_types_and_values_are_refused():
    with pytest.raises(pf.UnsupportedTypeError):
        gi.writer("INT", {}, index_type="multivalue")
    with pytest.raises(ValueError):
        gi.writer("ARRAY<INT>", {}, index_type="nope")
    w = gi.writer("ARRAY<INT>", {}, index_type="multivalue")
    with pytest.raises(TypeError):
        w.write_batch(pa.array([1, 2]))
    with pytest.raises(pf.UnsupportedTypeError):
        gi.writer("ARRAY<BYTES>", {}, index_type="multivalue")


def test_sliced_and_chunked_inputs_and_large_lists():
    full = pa.array([[1, 2], None, [3], [2, 2, 4], [], [None, 1]], pa.list_(pa.int64()))
    rids = np.arange(6)
    w = gi.writer("ARRAY<BIGINT>", {}, index_type="multivalue")
    w.write_batch(full, rids)
    want = w.finish()
    w = gi.writer("ARRAY<BIGINT>", {}, index_type="multivalue")
    w.write_batch(pa.chunked_array([full.slice(0, 2), full.slice(2)]).cast(pa.large_list(pa.int64())), rids)
    assert w.finish() == want
    w = gi.writer("ARRAY<BIGINT>", {}, index_type="multivalue")
    w.write_batch(full.slice(3), rids[3:])
    w.write_batch(full.to_pylist()[:3], rids[:3])  # Python lists too
    assert w.finish() == want
    # a null array whose offsets still span values indexes nothing
    odd = pa.ListArray.from_arrays(
        pa.array([0, 2, 4], pa.int32()), pa.array([7, 8, 9, 10], pa.int64()), mask=pa.array([False, True])
    )
    w = gi.writer("ARRAY<BIGINT>", {}, index_type="multivalue")
    w.write_batch(odd, np.arange(2))
    r = gi.reader("ARRAY<BIGINT>", w.finish()[0], index_type="multivalue")
    assert r.evaluate(pf.field("t").arrays_overlap([7, 8, 9, 10])) == BitMap64([0])


# ---------------------------------------------------------------- answers vs a plain-Python oracle


def _ident(v):
    return json.dumps(v, sort_keys=True)


def _oracle(rows, op, lits):
    """rows: list of None | list of JSON identities (None = null element)."""
    out = []
    for i, arr in enumerate(rows):
        if arr is None:
            continue
        present = {e for e in arr if e is not None}
        if op == "array_contains":
            ok = lits[0] is not None and lits[0] in present
        elif op == "arrays_overlap":
            ok = any(l is not None and l in present for l in lits)
        else:
            ok = all(l is not None and l in present for l in lits)
        if ok:
            out.append(i)
    return out


@pytest.mark.parametrize("t", TYPES)
def test_array_predicates_against_oracle(t):
    c, pool = _pool(t)
    raw = c["values"]
    arrays, idx, lengths, null_rows = _random_arrays(pool, 600, seed=11, from_first=300)
    rids = np.arange(600, dtype=np.uint64)
    # the oracle sees the JSON identities of the elements only
    rows, pos = [], 0
    for i, k in enumerate(lengths.tolist()):
        rows.append(
            None
            if i in set(null_rows.tolist())
            else [None if raw[j] is None else _ident(raw[j]) for j in idx[pos : pos + k]]
        )
        pos += k
    w = gi.writer(f"ARRAY<{c['type']}>", {"multivalue-index.dictionary-block-size": "128b"}, index_type="multivalue")
    w.write_batch(arrays, rids)
    data, meta = w.finish()
    r = gi.reader(f"ARRAY<{c['type']}>", data, total_row_count=600, index_type="multivalue")
    dtype = gi.KeyCodec(c["type"]).dtype
    used = {_ident(raw[j]) for j in idx if raw[j] is not None}
    first_of = {}
    for j in idx.tolist():
        if raw[j] is not None:
            first_of.setdefault(_ident(raw[j]), j)
    present = list(first_of.values())[:6]  # distinct elements the arrays hold
    present += present[:1] * (3 - len(present))  # BOOLEAN has two
    absent = [j for j in range(300, len(raw)) if raw[j] is not None and _ident(raw[j]) not in used][:3]
    lit_sets = [
        [present[0]],
        [absent[0]] if absent else [],
        [present[1], present[1]],
        present[:3],
        present[:2] + absent[:1],
        [None],
        [present[0], None],
        [],
    ]
    f = pf.field("t")
    for js in lit_sets:
        lits = [None if j is None else decode_literal(raw[j], dtype) for j in js]
        ids = [None if j is None else _ident(raw[j]) for j in js]
        preds = [("arrays_overlap", f.arrays_overlap(lits)), ("array_contains_all", f.array_contains_all(lits))]
        if len(lits) == 1:
            preds.append(("array_contains", f.array_contains(lits[0])))
        for op, p in preds:
            got = r.evaluate(p)
            if op == "array_contains_all" and not lits:
                assert got is pf.UNSUPPORTED  # Java: no index answer for an empty list
                continue
            assert sorted(got) == _oracle(rows, op, ids), (p, js)
    # every other predicate is not answered by a multivalue index
    lit = decode_literal(raw[present[0]], dtype)
    for p in [
        f == lit,
        f != lit,
        f.isin([lit]),
        f.notin([lit]),
        f.is_null(),
        f.is_not_null(),
        f < lit,
        f.between(lit, lit),
        f == None,
    ]:  # noqa: E711
        assert r.evaluate(p) is pf.UNSUPPORTED, p
    # AND with an unanswered child narrows by the answered one; OR with one is unanswered
    a = f.array_contains(lit)
    assert r.evaluate(a & (f == lit)) == r.evaluate(a)
    assert r.evaluate(a | (f == lit)) is pf.UNSUPPORTED


def test_multi_file_index_prunes_by_meta_and_unions():
    rng = np.random.default_rng(5)
    n = 3000
    arrays = pa.array(
        [[int(x) for x in rng.integers(0, 40, rng.integers(0, 4))] + ([None] if i % 9 == 0 else []) for i in range(n)],
        pa.list_(pa.int32()),
    )
    rows = arrays.to_pylist()
    files = []
    for a, b in ((0, 1000), (1000, 2000), (2000, 3000)):
        w = gi.writer("ARRAY<INT>", {"multivalue-index.dictionary-block-size": "64b"}, index_type="multivalue")
        w.write_batch(arrays.slice(a, b - a), np.arange(a, b))
        files.append(w.finish())
    idx = gi.MultiValueGlobalIndex(files, "ARRAY<INT>", {}, total_row_count=n)
    f = pf.field("t")
    for lits in ([3], [41], [0, 39], [5, 6, None], []):
        want = [i for i, a in enumerate(rows) if a and any(l is not None and l in a for l in lits)]
        assert sorted(idx.evaluate(f.arrays_overlap(lits))) == want
        want_all = [i for i, a in enumerate(rows) if a is not None and all(l is not None and l in a for l in lits)]
        if lits:
            assert sorted(idx.evaluate(f.array_contains_all(lits))) == want_all
    # a key outside every file's [first, last] opens no file
    idx2 = gi.MultiValueGlobalIndex(files, "ARRAY<INT>", {}, total_row_count=n)
    assert idx2.evaluate(f.array_contains(1000)) == BitMap64()
    assert all(x._reader is None for x in idx2.files)


# ---------------------------------------------------------------- corrupt files


def test_corrupt_multivalue_files_raise_index_format_error():
    c, pool = _pool("gb_string")
    arrays, _, _, _ = _random_arrays(pool, 300, seed=2)
    w = gi.writer("ARRAY<STRING>", {"multivalue-index.dictionary-block-size": "64b"}, index_type="multivalue")
    w.write_batch(arrays, np.arange(300))
    orig, _ = w.finish()
    lits = [v for v in arrays.flatten().to_pylist() if v is not None][:3]
    f = pf.field("t")
    preds = [f.array_contains(lits[0]), f.arrays_overlap(lits), f.array_contains_all(lits[:2])]
    rng = np.random.default_rng(7)
    outcomes = {"error": 0, "answer": 0}
    for trial in range(400):
        data = bytearray(orig)
        if trial % 4 == 0:
            data = data[: int(rng.integers(0, len(data)))]
        else:
            for _ in range(int(rng.integers(1, 4))):
                data[int(rng.integers(0, len(data)))] ^= int(rng.integers(1, 256))
        try:
            r = gi.reader("ARRAY<STRING>", bytes(data), index_type="multivalue")
            for p in preds:
                res = r.evaluate(p)
                assert isinstance(res, BitMap64)
            outcomes["answer"] += 1
        except pf.IndexFormatError:
            outcomes["error"] += 1
    assert outcomes["error"] > 100
    # a footer naming another version is refused, naming it
    bad = bytearray(orig)
    bad[-8:-4] = struct.pack(">i", 2)
    with pytest.raises(pf.IndexFormatError, match="version 2"):
        gi.reader("ARRAY<STRING>", bytes(bad), index_type="multivalue")
