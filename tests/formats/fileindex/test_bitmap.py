"""Bitmap index kernels vs their pure-Python twin and a literal java.util.HashMap
replay; query answers vs numpy brute force; oversize values; lazy reads; inspect."""

import io
import json
import struct

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyroaring import BitMap

import paimon_fast as pf
from paimon_fast._kernels import load
from paimon_fast.errors import IndexFormatError, OptionError
from paimon_fast.fileindex.bitmap import BitmapReader, BitmapWriter, KeyCodec
from paimon_fast.fileindex.options import Options
from paimon_fast.reference import bitmap as twin
from paimon_fast.core.roaring import deserialize32
from paimon_fast.io.source import BytesSource
from paimon_fast.core.types import DataType

K = load("bitmap")
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

LIMITS = {
    "TINYINT": (-128, 127),
    "SMALLINT": (-(2**15), 2**15 - 1),
    "INT": (-(2**31), 2**31 - 1),
    "BIGINT": (-(2**63), 2**63 - 1),
}


def _int_column(t):
    lo, hi = LIMITS[t]
    small = st.integers(-3, 3)
    # few distinct values -> duplicates; extremes; values that collide in Java's HashMap buckets
    collide = st.integers(0, 40).map(lambda i: max(lo, min(hi, i << 20)) if t in ("INT", "BIGINT") else i)
    val = st.one_of(small, st.sampled_from([lo, hi, 0, -1]), st.integers(lo, hi), collide)
    return st.lists(st.one_of(st.none(), val), max_size=300)


# ---------------------------------------------------------------- kernel == twin


@SETTINGS
@given(st.sampled_from(sorted(LIMITS)).flatmap(lambda t: st.tuples(st.just(t), _int_column(t))))
def test_group_fixed_and_order_match_twin(tc):
    t, vals = tc
    np_t = {"TINYINT": np.int8, "SMALLINT": np.int16, "INT": np.int32, "BIGINT": np.int64}[t]
    keys = np.array([0 if v is None else v for v in vals], dtype=np_t)
    valid = np.array([v is not None for v in vals], dtype=np.uint8)
    mode = K.HASH_LONG if t == "BIGINT" else K.HASH_INT
    got = K.group_fixed(keys, valid, mode)
    want = twin.group_fixed(keys, valid, mode)
    for a, b in zip(got, want):
        assert np.array_equal(a, b)
    _check_order(vals, got)


def _check_order(vals, grouped, keyfn=lambda v: v):
    codes, first, counts, jh = grouped
    nn = [i for i, v in enumerate(vals) if v is not None]
    trailing = len(first) > 0 and nn[-1] != first[-1]
    order, table, tree = K.java_order(jh, trailing)
    o2, t2, tr2 = twin.java_order(jh, trailing)
    assert np.array_equal(order, o2) and (table, tree) == (t2, tr2)
    # the literal HashMap replay, one computeIfAbsent per non-null row
    m = twin.JavaHashMap()
    ids = {}
    for i in nn:
        k = keyfn(vals[i])
        ids.setdefault(k, int(codes[i]))
        m.compute_if_absent(k, int(jh[codes[i]]))
    assert (m.treeified > 0) == (tree > 0)
    if not tree:
        assert [ids[k] for k in m.keys()] == order.tolist()
        assert (len(m.table) if m.table else 0) == table
    else:  # the writer's fallback: the full model driven by insertions only
        by_id = {v: k for k, v in ids.items()}
        o2, t2 = twin.java_order_exact(jh.tolist(), [by_id[i] for i in range(len(first))], trailing)
        assert [ids[k] for k in m.keys()] == o2.tolist() and len(m.table) == t2
    pos, bounds, multi = K.scatter_positions(codes, order, counts)
    p2, b2, m2 = twin.scatter_positions(codes, order, counts)
    assert np.array_equal(pos, p2) and np.array_equal(bounds, b2) and np.array_equal(multi, m2)
    for g, id_ in enumerate(multi):
        assert pos[bounds[g] : bounds[g + 1]].tolist() == np.flatnonzero(codes == id_).tolist()


def test_treeify_resize_in_small_tables_is_replayed():
    """8 keys in one bucket of a table < 64: Java resizes instead of treeifying."""
    vals = [i << 20 for i in range(40)] * 2 + [None, 7]
    keys = np.array([0 if v is None else v for v in vals], dtype=np.int32)
    valid = np.array([v is not None for v in vals], dtype=np.uint8)
    g = K.group_fixed(keys, valid, K.HASH_INT)
    order, table, tree = K.java_order(g[3], True)
    assert table == 64 and tree > 0  # 41 keys in few buckets: tree bins once the table is 64
    vals = [i << 20 for i in range(9)] + [5]
    keys = np.array(vals, dtype=np.int32)
    g = K.group_fixed(keys, None, K.HASH_INT)
    order, table, tree = K.java_order(g[3], False)
    assert table == 32 and tree == 0  # 16 -> 32 by treeifyBin, not by the load factor
    _check_order(vals, g)


_strings = st.lists(
    st.one_of(
        st.none(), st.sampled_from(["", "a", "ab", "abc", "abcd", "\x00", "é", "😀", "\udcff"]), st.text(max_size=12)
    ),
    max_size=200,
)


@SETTINGS
@given(_strings)
def test_group_binary_and_order_match_twin(vals):
    arr = pa.array([None if v is None else v.encode("utf-8", "surrogatepass") for v in vals], type=pa.binary())
    from paimon_fast.core.types import binary_buffers, validity_mask

    off, data = binary_buffers(arr)
    m = validity_mask(arr)
    valid = None if m is None else m.view(np.uint8)
    got = K.group_binary(off, data, valid)
    want = twin.group_binary(off, data, valid)
    for a, b in zip(got, want):
        assert np.array_equal(a, b)
    assert np.array_equal(K.string_hashes(off, data), twin.string_hashes(off, data))
    _check_order([None if v is None else v.encode("utf-8", "surrogatepass") for v in vals], got)


def test_java_string_hash_known_values():
    # BinaryString.hashCode() values taken from the bitmap vectors' HashMap order are checked by
    # the byte-identical tests; here the twin and kernel agree on tails of every length
    for s in [b"", b"a", b"ab", b"abc", b"abcd", b"abcde", b"\xff\x80\x7f", bytes(range(256))]:
        off = np.array([0, len(s)], dtype=np.int32)
        assert K.string_hashes(off, np.frombuffer(s, np.uint8))[0] == twin.java_string_hash(s)


@SETTINGS
@given(st.lists(st.integers(5, 400), max_size=200), st.integers(1, 2000))
def test_v2_layout_matches_twin(sizes, limit):
    e = np.array(sizes, dtype=np.int64)
    got = K.v2_layout(e, limit)
    want = twin.v2_layout(e, limit)
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1]) and got[2:] == want[2:]
    bounds, offs, total, oversize = got
    # every block holds >= 1 entry and is within the limit unless it is a single oversize entry
    for g in range(len(offs)):
        n = bounds[g + 1] - bounds[g]
        size = 4 + int(e[bounds[g] : bounds[g + 1]].sum())
        assert n >= 1
        assert size <= limit or n == 1
        end = offs[g + 1] if g + 1 < len(offs) else total
        assert end - offs[g] == size
    assert oversize == sum(1 for s in sizes if 4 + s > limit)


@SETTINGS
@given(
    st.lists(st.integers(-(2**63), 2**63 - 1), max_size=50), st.sampled_from([1, 2, 4, 8]), st.booleans(), st.booleans()
)
def test_pack_fixed_matches_twin(keys, width, with_b, with_blocks):
    n = len(keys)
    keys = np.array(keys, dtype=np.int64)
    a = np.arange(n, dtype=np.int32) - 3
    b = (np.arange(n, dtype=np.int32) * 7) if with_b else None
    blocks = np.array(sorted({0, n, n // 3, n // 2}), dtype=np.int64) if with_blocks else None
    assert K.pack_fixed(keys, width, a, b, blocks) == twin.pack_fixed(keys, width, a, b, blocks)


@SETTINGS
@given(
    st.lists(st.integers(-(2**31), 2**31 - 1), min_size=0, max_size=60, unique=True),
    st.integers(-(2**31), 2**31 - 1),
    st.sampled_from([0, 1]),
)
def test_search_fixed_matches_twin_and_bisect(keys, probe, mode):
    keys = sorted({twin.order_key(k, mode): k for k in keys}.values(), key=lambda k: twin.order_key(k, mode))
    buf = b"".join(struct.pack(">ii", k, i) for i, k in enumerate(keys))
    ok = twin.order_key(probe, mode)
    for exact in (True, False):
        got = K.search_fixed(buf, 0, len(keys), 8, 4, ok, mode, exact)
        assert got == twin.search_fixed(buf, 0, len(keys), 8, 4, ok, mode, exact)
        oks = [twin.order_key(k, mode) for k in keys]
        if exact:
            assert got == (oks.index(ok) if ok in oks else -1)
        else:
            assert got == sum(1 for k in oks if k <= ok) - 1


@SETTINGS
@given(st.lists(st.binary(max_size=6), max_size=40, unique=True), st.binary(max_size=6))
def test_search_binary_matches_twin(keys, probe):
    keys = sorted(keys)
    buf = b"".join(struct.pack(">i", len(k)) + k + struct.pack(">ii", i, -i) for i, k in enumerate(keys))
    for exact in (True, False):
        got = K.search_binary(buf, 0, len(buf), len(keys), 2, probe, exact)
        assert got == twin.search_binary(buf, 0, len(buf), len(keys), 2, probe, exact)
        if got[0] >= 0:
            assert struct.unpack_from(">i", buf, got[1])[0] == got[0]
    s1 = K.scan_binary(buf, 0, len(buf), len(keys), 2)
    s2 = twin.scan_binary(buf, 0, len(buf), len(keys), 2)
    assert all(np.array_equal(x, y) for x, y in zip(s1[:3], s2[:3])) and s1[3] == s2[3]
    if keys:
        assert K.scan_binary(buf, 0, len(buf) - 1, len(keys), 2) is None


# ---------------------------------------------------------------- answers vs numpy brute force

TYPES = [
    "TINYINT",
    "SMALLINT",
    "INT",
    "BIGINT",
    "FLOAT",
    "DOUBLE",
    "BOOLEAN",
    "DATE",
    "STRING",
    "TIMESTAMP(3)",
    "TIMESTAMP(6)",
]


def _column(draw, t):
    n = draw(st.integers(0, 250))
    k = draw(st.sampled_from([1, 2, 5, 50, 1000]))
    if t == "BOOLEAN":
        pool = [True, False]
    elif t == "STRING":
        pool = draw(st.lists(st.text(max_size=8), min_size=1, max_size=k, unique=True))
    elif t == "FLOAT":
        pool = [
            float(np.float32(x)) for x in draw(st.lists(st.floats(width=32, allow_nan=True), min_size=1, max_size=k))
        ] + [0.0, -0.0]
    elif t == "DOUBLE":
        pool = draw(st.lists(st.floats(allow_nan=True), min_size=1, max_size=k)) + [float("inf"), -0.0]
    else:
        root = t.split("(")[0]
        lo, hi = LIMITS.get(root, (-(2**31), 2**31 - 1))
        if root == "DATE":
            lo, hi = -100000, 2932896
        if root == "TIMESTAMP":
            lo, hi = -(2**50), 2**50
        pool = draw(st.lists(st.integers(lo, hi), min_size=1, max_size=k)) + [lo, hi]
    null_p = draw(st.sampled_from([0.0, 0.1, 0.5, 1.0]))
    idx = draw(st.lists(st.integers(0, len(pool) - 1), min_size=n, max_size=n))
    nulls = draw(st.lists(st.floats(0, 1), min_size=n, max_size=n))
    return [None if nulls[i] < null_p else pool[idx[i]] for i in range(n)], pool


def _same(a, b, t):
    if t in ("FLOAT", "DOUBLE"):  # Java Float.equals / Double.equals: bit patterns, NaNs equal
        fmt = "<f" if t == "FLOAT" else "<d"
        if a != a and b != b:
            return True
        return struct.pack(fmt, a) == struct.pack(fmt, b)
    return a == b


@st.composite
def _case(draw):
    t = draw(st.sampled_from(TYPES))
    vals, pool = _column(draw, t)
    version = draw(st.sampled_from(["1", "2"]))
    block = draw(st.sampled_from(["16kb", "64b", "32b", "16b"]))
    probes = draw(st.lists(st.sampled_from(pool + [None]), max_size=4))
    return t, vals, version, block, probes


@SETTINGS
@given(_case())
def test_answers_match_bruteforce(case):
    t, vals, version, block, probes = case
    dtype = DataType.parse(t)
    arrow = pa.array(vals, type=dtype.to_arrow())
    w = pf.fileindex.writer("bitmap", t, {"version": version, "index-block-size": block})
    half = len(vals) // 2
    w.write_batch(arrow.slice(0, half))
    w.write_batch(arrow.slice(half))
    data = w.finish()
    tw = BitmapWriter(dtype, Options({"version": version, "index-block-size": block}), kernels=twin)
    tw.write_batch(arrow)
    assert tw.finish() == data
    r = pf.fileindex.reader("bitmap", t, data)
    n = len(vals)
    assert r.row_count == n

    def rows(pred):
        return BitMap([i for i, v in enumerate(vals) if pred(v)])

    x = pf.field("x")
    for p in probes:
        if p is None:
            want = rows(lambda v: v is None)
        else:
            want = rows(lambda v: v is not None and _same(v, p, t))
        assert r.evaluate(x == p).bitmap == want
        assert r.evaluate(x != p).bitmap == want.flip(0, n)
    assert r.evaluate(x.is_null()).bitmap == rows(lambda v: v is None)
    assert r.evaluate(x.is_not_null()).bitmap == rows(lambda v: v is not None)
    want_in = BitMap()
    for p in probes:
        want_in |= rows(lambda v: v is None) if p is None else rows(lambda v: v is not None and _same(v, p, t))
    assert r.evaluate(x.isin(probes)).bitmap == want_in
    assert r.evaluate(x.notin(probes)).bitmap == want_in.flip(0, n)


def test_bruteforce_large_random_int_and_string():
    rng = np.random.default_rng(7)
    n = 20000
    ints = rng.integers(-500, 500, n).astype(np.int32)
    mask = rng.random(n) < 0.05
    arr = pa.array(ints, mask=mask)
    strs = pa.array([f"v{x}" for x in ints.tolist()], mask=mask)
    for t, a, probe in (("INT", arr, 17), ("STRING", strs, "v17")):
        for version in ("1", "2"):
            w = pf.fileindex.writer("bitmap", t, {"version": version, "index-block-size": "256b"})
            w.write_batch(a)
            r = pf.fileindex.reader("bitmap", t, w.finish())
            want = BitMap(np.flatnonzero((ints == 17) & ~mask).astype(np.uint32))
            assert r.evaluate(pf.field("x") == probe).bitmap == want
            assert r.evaluate(pf.field("x").is_null()).bitmap == BitMap(np.flatnonzero(mask).astype(np.uint32))


def test_empty_one_row_all_null_and_literals_out_of_range():
    for vals, probe, want in (([], 1, []), ([5], 5, [0]), ([None, None], None, [0, 1]), ([7] * 5, 7, range(5))):
        for v in ("1", "2"):
            w = pf.fileindex.writer("bitmap", "INT", {"version": v})
            w.write_batch(pa.array(vals, type=pa.int32()))
            r = pf.fileindex.reader("bitmap", "INT", w.finish())
            assert list(r.evaluate(pf.field("x") == probe).bitmap) == list(want)
    w = pf.fileindex.writer("bitmap", "TINYINT", {})
    w.write_batch(pa.array([1, 2, 1], type=pa.int8()))
    r = pf.fileindex.reader("bitmap", "TINYINT", w.finish())
    assert not r.evaluate(pf.field("x") == 1000).remain
    assert list(r.evaluate(pf.field("x") != 1000).bitmap) == [0, 1, 2]


def test_bad_options():
    with pytest.raises(OptionError):
        pf.fileindex.writer("bitmap", "INT", {"version": "3"})
    with pytest.raises(OptionError):
        pf.fileindex.writer("bitmap", "INT", {"index-block-size": "0b"})


# ---------------------------------------------------------------- oversize values (Paimon issue 9613)


def _java_v2_reader_lookup(data: bytes, key: bytes):
    """Java's V2 read path replayed step by step on a stream (BitmapFileIndexMetaV2.deserialize,
    findBlock, BitmapIndexBlock.tryDeserialize/findEntry, Reader.readBitmap), for STRING keys."""
    s = io.BytesIO(data)

    def i32():
        return struct.unpack(">i", s.read(4))[0]

    def key_():
        return s.read(i32())

    assert s.read(1)[0] == 2
    _row_count, _, has_null = i32(), i32(), s.read(1)[0]
    index_block_start = 10
    if has_null:
        i32(), i32()
        index_block_start += 8
    nblocks = i32()
    index_block_start += 4
    blocks = []
    for _ in range(nblocks):
        k = key_()
        blocks.append((k, i32()))
        index_block_start += 4 + len(k) + 4
    body_start = index_block_start + 4 + i32()
    index_block_start += 4

    def bsearch(lst, probe):
        lo, hi = 0, len(lst) - 1
        while lo <= hi:
            mid = (lo + hi) >> 1
            k = lst[mid][0]
            if k < probe:
                lo = mid + 1
            elif k > probe:
                hi = mid - 1
            else:
                return mid
        return -(lo + 1)

    idx = bsearch(blocks, key)
    idx = -2 - idx if idx < 0 else idx
    if idx < 0:
        return BitMap()
    s.seek(index_block_start + blocks[idx][1])
    entries = [(key_(), i32(), i32()) for _ in range(i32())]
    i = bsearch(entries, key)
    if i < 0:
        return BitMap()
    _, off, length = entries[i]
    if off < 0:
        return BitMap([-1 - off])
    return deserialize32(data[body_start + off : body_start + off + length])


@pytest.mark.parametrize("block", ["16kb", "64b", "1b"])
def test_oversize_values_written_and_read_by_java_algorithm(block):
    big = "x" * 20000
    vals = ["a", big, "b", big, None, "a" * 100, "zz", big + "y", "b"]
    w = pf.fileindex.writer("bitmap", "STRING", {"index-block-size": block})
    w.write_batch(pa.array(vals))
    data = w.finish()
    assert w.stats["oversize_entries"] >= 2
    r = pf.fileindex.reader("bitmap", "STRING", data)
    for probe in set(v for v in vals if v is not None) | {"", "c", "x", big + "z"}:
        want = BitMap([i for i, v in enumerate(vals) if v == probe])
        assert r.evaluate(pf.field("x") == probe).bitmap == want
        assert _java_v2_reader_lookup(data, probe.encode()) == want
    # same input without the oversize values: nothing changes for the entries that fit
    blocks = r.block_count
    assert blocks >= 2


def test_oversize_does_not_change_bytes_when_java_would_succeed():
    vals = pa.array(["k%03d" % (i % 37) for i in range(500)])
    for block in ("32b", "64b", "1kb"):
        a = pf.fileindex.writer("bitmap", "STRING", {"index-block-size": block})
        a.write_batch(vals)
        assert a.finish() and a.stats["oversize_entries"] == 0


# ---------------------------------------------------------------- lazy reads


class CountingSource(BytesSource):
    def __init__(self, data):
        super().__init__(data)
        self.reads = []

    def _read(self, offset, length):
        self.reads.append((offset, length))
        return super()._read(offset, length)


def test_v2_equality_reads_one_block_and_one_bitmap():
    rng = np.random.default_rng(1)
    n = 200_000
    vals = rng.integers(0, 20_000, n).astype(np.int32)
    w = pf.fileindex.writer("bitmap", "INT", {})
    w.write_batch(vals)
    data = w.finish()
    src = CountingSource(data)
    r = BitmapReader(DataType.parse("INT"), src, Options({}))
    assert r.block_count > 5
    header_reads = len(src.reads)
    res = r.evaluate(pf.field("x") == int(vals[123]))
    assert res.bitmap == BitMap(np.flatnonzero(vals == vals[123]).astype(np.uint32))
    reads = src.reads[header_reads:]
    blk = 16 * 1024
    # block count (4 bytes) + that block's entries + one bitmap; nothing else
    assert len(reads) == 3
    assert sum(length for _, length in reads) < blk + 1024
    assert sum(length for _, length in src.reads) < len(data) // 10


# ---------------------------------------------------------------- corrupt input


def _fuzz_inputs():
    from tests.support.vectorlib import load_bin, load_case

    out = []
    for fmt, name in (
        ("bitmap_v2", "bm2_int_n300_k20_block64b"),
        ("bitmap_v2", "bm2_string_n300_k20_block128b"),
        ("bitmap_v1", "bm1_string_n300_k20"),
        ("bitmap_v1", "bm1_double_n300_k20"),
        ("bitmap_v2", "bm2_int_one_null_repeated_values_block32b"),
        ("bitmap_v2", "bm2_boolean_with_nulls"),
    ):
        c = load_case(fmt, name)
        out.append((c["type"], load_bin(fmt, c["file"]), c))
    return out


def test_fuzz_corrupt_and_truncated():
    from tests.support.vectorlib import decode_literal

    rng = np.random.default_rng(2024)
    inputs = _fuzz_inputs()
    ok = errors = 0
    for it in range(3000):
        t, data, c = inputs[it % len(inputs)]
        b = bytearray(data)
        kind = rng.integers(0, 4)
        if kind == 0:
            b = b[: rng.integers(0, len(b))]
        else:
            for _ in range(rng.integers(1, 4)):
                p = int(rng.integers(0, len(b)))
                if kind == 1:
                    b[p] = int(rng.integers(0, 256))
                elif kind == 2:
                    b[p] ^= 1 << int(rng.integers(0, 8))
                else:
                    b[p : p + 4] = struct.pack(">i", int(rng.choice([-1, 0, 1, 2**31 - 1, -(2**31), 65536, 300])))
        b = bytes(b)
        try:
            r = pf.fileindex.reader("bitmap", t, b)
            for p in c["predicates"][::7]:
                lits = p.get("literals", [p.get("literal")]) if p["op"] not in ("is_null", "is_not_null") else []
                leaf = pf.core.predicate.Leaf(
                    p["op"],
                    "x",
                    tuple(decode_literal(v, r.dtype) for v in lits)
                    if p["op"] in ("in", "not_in")
                    else tuple(decode_literal(v, r.dtype) for v in lits[:1]),
                )
                bm = r.visit(leaf).bitmap
                assert isinstance(bm, BitMap)
            r.describe()
            ok += 1
        except IndexFormatError:
            errors += 1
    assert ok > 100 and errors > 100


def test_truncated_headers_raise():
    w = pf.fileindex.writer("bitmap", "STRING", {"index-block-size": "64b"})
    w.write_batch(pa.array(["a", "bb", "a", None, None, "ccc", "bb"]))
    data = w.finish()
    for cut in range(len(data)):
        with pytest.raises(IndexFormatError):
            r = pf.fileindex.reader("bitmap", "STRING", data[:cut])
            for v in ("a", "bb", "ccc", None):
                r.bitmap_of(v)
            r.describe()


# ---------------------------------------------------------------- inspect and container


def test_describe_and_cli_inspect(tmp_path, capsys):
    rng = np.random.default_rng(3)
    vals = rng.integers(0, 50, 5000).astype(np.int64)
    mask = rng.random(5000) < 0.1
    w = pf.fileindex.writer("bitmap", "BIGINT", {"index-block-size": "128b"})
    w.write_batch(pa.array(vals, mask=mask))
    payload = w.finish()
    d = pf.fileindex.reader("bitmap", "BIGINT", payload).describe()
    assert d["version"] == 2 and d["rows"] == 5000 and d["null_count"] == int(mask.sum())
    assert d["distinct_values"] == len(np.unique(vals[~mask]))
    assert d["block_count"] == w.stats["blocks"] > 1
    top = d["largest_bitmaps"][0]
    assert top["rows"] == np.bincount(vals[~mask]).max()
    assert top["value"] in np.flatnonzero(np.bincount(vals[~mask]) == top["rows"]).tolist()
    p = tmp_path / "f.index"
    p.write_bytes(pf.FileIndexFormat.write({"c": {"bitmap": payload}}))
    from paimon_fast.cli import main

    main(["inspect", str(p), "--row-type", "c=BIGINT", "--json"])
    out = json.loads(capsys.readouterr().out)
    bm = out["columns"]["c"][0]
    assert bm["index_type"] == "bitmap" and bm["null_count"] == int(mask.sum()) and bm["block_count"] > 1
    v1 = pf.fileindex.writer("bitmap", "STRING", {"version": "1"})
    v1.write_batch(pa.array(["a", "b", "a", None]))
    d1 = pf.fileindex.reader("bitmap", "STRING", v1.finish()).describe()
    assert d1["version"] == 1 and d1["block_count"] is None and d1["largest_bitmaps"][0]["value"] == "a"


def test_container_evaluate_with_bitmap_and_bloom():
    ids = pa.array(np.arange(1000, dtype=np.int32) % 100)
    cat = pa.array([["x", "y", None][i % 3] for i in range(1000)])
    idx = {}
    for col, arr, t in (("id", ids, "INT"), ("cat", cat, "STRING")):
        w = pf.fileindex.writer("bitmap", t, {})
        w.write_batch(arr)
        idx[col] = {"bitmap": w.finish()}
    b = pf.fileindex.writer("bloom-filter", "INT", {"items": "100"})
    b.write_batch(ids)
    idx["id"]["bloom-filter"] = b.finish()
    f = pf.FileIndexFormat.open(pf.FileIndexFormat.write(idx), {"id": "INT", "cat": "STRING"})
    res = f.evaluate((pf.field("id") == 7) & (pf.field("cat") == "y"))
    want = BitMap([i for i in range(1000) if i % 100 == 7 and i % 3 == 1])
    assert isinstance(res, pf.BitmapResult) and res.bitmap == want
    res = f.evaluate((pf.field("id") == 7) | pf.field("cat").is_null())
    assert res.bitmap == BitMap([i for i in range(1000) if i % 100 == 7 or i % 3 == 2])
    assert not f.evaluate(pf.field("id") == 100).remain


def test_codec_literals():
    c = KeyCodec(DataType.parse("TIMESTAMP(6)"))
    import datetime as dt

    assert c.literal_key(dt.datetime(1970, 1, 1, 0, 0, 1)) == 1_000_000
    assert KeyCodec(DataType.parse("TIME(0)")).literal_key(dt.time(0, 0, 2)) == 2000
    assert KeyCodec(DataType.parse("DATE")).literal_key(dt.date(1970, 1, 3)) == 2
    with pytest.raises(TypeError):
        KeyCodec(DataType.parse("STRING")).literal_key(5)


@SETTINGS
@given(
    st.sampled_from([0, 1, 2, 3]).flatmap(
        lambda m: st.tuples(
            st.just(m),
            st.lists(
                st.integers(-(2**31), 2**31 - 1)
                if m == 1
                else st.integers(-3, 3)
                if m == 3
                else st.one_of(st.integers(-(2**63), 2**63 - 1), st.integers(-5, 5), st.integers(2**40, 2**40 + 1000)),
                max_size=300,
            ),
        )
    )
)
def test_sort_fixed_matches_twin(mk):
    mode, keys = mk
    # distinct under the comparator, as the writer's dictionary keys are
    keys = list({twin.order_key(k, mode): k for k in keys}.values())
    a = np.array(keys, dtype=np.int64)
    got = K.sort_fixed(a, mode)
    assert np.array_equal(got, twin.sort_fixed(a, mode))
    ok = [twin.order_key(int(k), mode) for k in a[got]]
    assert ok == sorted(ok)


@settings(max_examples=40, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.integers(1, 12),
    st.sampled_from(["random", "runs", "sorted", "sparse"]),
    st.integers(0, 200_000),
)
def test_dense_serialize_matches_positions_path(seed, k, shape, n):
    """The bit-set path gives the bytes of scatter_positions + the Java-exact roaring writer
    (array, bitmap and run containers, a partial last container)."""
    from paimon_fast.core.roaring import serialize_groups32

    rng = np.random.default_rng(seed)
    if shape == "random":
        v = rng.integers(0, k, n)
    elif shape == "runs":
        v = np.repeat(rng.integers(0, k, n // 500 + 1), 500)[:n]
    elif shape == "sorted":
        v = np.sort(rng.integers(0, k, n))
    else:
        v = np.where(rng.random(n) < 0.001, rng.integers(0, k, n), k)
    keys = np.ascontiguousarray(v, dtype=np.int32)
    valid = (rng.random(n) > 0.05).astype(np.uint8)
    codes, first, counts, jh = K.group_fixed(keys, valid, K.HASH_INT)
    order = K.java_order(jh, True)[0]
    blob, sizes, multi = K.dense_serialize(codes, order, counts)
    pos, bounds, m2 = K.scatter_positions(codes, order, counts)
    b2, s2 = serialize_groups32(pos, bounds)
    assert blob == b2 and np.array_equal(sizes, s2) and np.array_equal(multi, m2)
    if n <= 20_000:
        t = twin.dense_serialize(codes, order, counts)
        assert t[0] == blob and np.array_equal(t[1], sizes) and np.array_equal(t[2], multi)


# ---------------------------------------------------------------- java.util.HashMap order incl. tree bins


def _hm_cases():
    from tests.support.vectorlib import load_json, manifest

    return [load_json("hashmap_order", c["name"] + ".json") for c in manifest("hashmap_order")["cases"]]


@pytest.mark.parametrize("case", _hm_cases(), ids=lambda c: c["name"])
def test_hashmap_model_matches_the_jvm(case):
    """JavaHashMap (the full model, tree bins included) == java.util.HashMap of OpenJDK 17."""
    kind = case["key_type"]

    def h(k):
        if kind == "STRING":
            return twin.java_string_hash(k.encode())
        return twin.java_hash(k, twin.HASH_LONG if kind == "BIGINT" else twin.HASH_INT)

    cmp = (lambda a, b: (a.encode() > b.encode()) - (a.encode() < b.encode())) if kind == "STRING" else None
    m = twin.JavaHashMap(cmp)
    for k in case["calls"]:
        m.compute_if_absent(k, h(k))
    assert m.keys() == case["java_order"]


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 3000), st.integers(0, 3000), st.integers(1, 16), st.booleans())
def test_local_tree_bin_replay_equals_the_whole_map_replay(seed, n_colliding, n_random, spread_vals, trailing):
    """java_order_local (only the bins that were ever trees, replayed under the whole
    map's growth schedule) == java_order_exact (the whole map through the full model).
    Colliding keys share their low 16 spread-hash bits, so tree bins form at every size."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 2**15, n_colliding)
    c = rng.integers(0, spread_vals, n_colliding)
    keys = np.concatenate([(a << 16) | ((a ^ c) & 0xFFFF), rng.integers(-(2**31), 2**31, n_random)])
    keys = np.unique(keys.astype(np.int32))  # distinct keys: insertion order below is a shuffle
    rng.shuffle(keys)
    g = K.group_fixed(np.ascontiguousarray(keys), None, K.HASH_INT)
    jh = g[3]
    order, table, tree = K.java_order(jh, trailing)
    want, want_table = twin.java_order_exact(jh.tolist(), keys.tolist(), trailing)
    got, got_table = twin.java_order_local(jh, lambda i: int(keys[i]), trailing, order, table)
    assert got_table == want_table == table
    assert got.tolist() == want.tolist()
    if tree == 0:
        assert order.tolist() == want.tolist()


@pytest.mark.parametrize("case", [c for c in _hm_cases() if c["key_type"] != "STRING"], ids=lambda c: c["name"])
def test_writer_entry_order_matches_the_jvm(case):
    """The V1 entry order (and so the body order) of our writer on these columns is the JVM's
    HashMap order, tree bins included (kernel detects them, the full model orders them)."""
    t = case["key_type"]
    arr = pa.array(case["calls"], type=pa.int32() if t == "INT" else pa.int64())
    w = pf.fileindex.writer("bitmap", t, {"version": "1"})
    w.write_batch(arr)
    data = w.finish()
    r = pf.fileindex.reader("bitmap", t, data)
    assert [e[0] for e in r.entries()] == case["java_order"]
    tw = BitmapWriter(DataType.parse(t), Options({"version": "1"}), kernels=twin)
    tw.write_batch(arr)
    assert tw.finish() == data
    treeified = any(x > 0 for x in [w.stats["tree_bins"]])
    assert treeified == (
        case["name"] not in ("int_clusters_random_calls", "int_threshold_trailing_call", "int_threshold_no_trailing")
    )


@settings(max_examples=25, deadline=None)
@given(
    st.integers(0, 2**32 - 1), st.integers(1, 40), st.integers(0, 150_000), st.sampled_from([1, 8, 32]), st.booleans()
)
def test_group_dense_fixed_matches_group_fixed(seed, k, n, max_values, nulls):
    rng = np.random.default_rng(seed)
    keys = rng.choice(np.array([-(2**31), 2**31 - 1, 0, -1] + list(range(100, 100 + k)), dtype=np.int32), n)
    valid = (rng.random(n) > 0.1).astype(np.uint8) if nulls else None
    got = K.group_dense_fixed(keys, valid, K.HASH_INT, max_values)
    codes, first, counts, jh = K.group_fixed(keys, valid, K.HASH_INT)
    if len(first) > max_values:
        assert got is None
        return
    f2, c2, j2, bits = got
    assert np.array_equal(f2, first) and np.array_equal(c2, counts) and np.array_equal(j2, jh)
    for id_ in range(len(first)):
        rows = np.flatnonzero(np.unpackbits(bits[id_].view(np.uint8), bitorder="little"))
        assert rows.tolist() == np.flatnonzero(codes == id_).tolist()
    order = K.java_order(jh, True)[0]
    a = K.dense_from_bits(bits, order, counts)
    b = K.dense_serialize(codes, order, counts)
    assert a[0] == b[0] and np.array_equal(a[1], b[1]) and np.array_equal(a[2], b[2])
    if n <= 3000:
        t = twin.group_dense_fixed(keys, valid, twin.HASH_INT, max_values)
        assert all(np.array_equal(x, y) for x, y in zip(t, got))
        tb = twin.dense_from_bits(bits, order, counts)
        assert tb[0] == a[0] and np.array_equal(tb[1], a[1]) and np.array_equal(tb[2], a[2])


def test_writer_paths_give_the_same_bytes(monkeypatch):
    """One-pass bit sets, two-pass bit sets and sorted positions: same index bytes."""
    import paimon_fast.fileindex.bitmap_writer as bmod  # the writer reads _DENSE_MIN_ROWS there

    rng = np.random.default_rng(5)
    n = 300_000
    for k in (3, 12, 40):
        vals = pa.array(
            rng.choice(np.array([7, -9, 2**31 - 1] + list(range(k)), dtype=np.int32), n), mask=rng.random(n) < 0.02
        )
        outs = []
        for min_rows in (2048, 10**9):
            monkeypatch.setattr(bmod, "_DENSE_MIN_ROWS", min_rows)
            w = pf.fileindex.writer("bitmap", "INT", {})
            w.write_batch(vals)
            outs.append(w.finish())
        assert outs[0] == outs[1]
