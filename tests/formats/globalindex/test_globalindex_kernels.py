"""Global index kernels vs their plain-Python twins (hypothesis), and end-to-end
properties of writer + reader against brute force."""

import struct

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyroaring import BitMap64

import paimon_fast as pf
from paimon_fast import globalindex as gi
from paimon_fast._kernels import load
from paimon_fast.globalindex import sst as codec
from paimon_fast.globalindex import format as gformat
from paimon_fast.reference import globalindex as ref

K = load("globalindex")
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

u64 = st.integers(0, 2**64 - 1)
i64 = st.integers(-(2**63), 2**63 - 1)
small_rid = st.integers(0, 70000)
rid_st = st.one_of(small_rid, st.integers(2**32 - 5, 2**32 + 70000), u64)


def eq_arrays(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


@SETTINGS
@given(st.lists(st.tuples(st.integers(-3, 3) | i64, st.integers(0, 2) | u64, rid_st), max_size=200), st.booleans())
def test_sort_group_matches_twin(recs, presort):
    if presort:
        recs = sorted(recs, key=lambda r: r[2])
    hi = np.array([r[0] for r in recs], dtype=np.int64)
    lo = np.array([r[1] for r in recs], dtype=np.uint64)
    rid = np.array([r[2] for r in recs], dtype=np.uint64)
    eq_arrays(K.sort_group(hi, lo, rid, presort), ref.sort_group(hi, lo, rid))
    eq_arrays([K.sort_unique_u64(rid)], [ref.sort_unique_u64(rid)])


@SETTINGS
@given(
    st.lists(st.one_of(st.none(), st.binary(max_size=6), st.sampled_from([b"", b"a", b"\xff", b"ab"])), max_size=120)
)
def test_string_ranks_matches_twin(vals):
    arr = pa.array(vals, type=pa.binary())
    off = np.frombuffer(arr.buffers()[1], dtype=np.int32, count=len(arr) + 1).copy()
    data = np.frombuffer(arr.buffers()[2], dtype=np.uint8).copy() if arr.buffers()[2] else np.zeros(0, np.uint8)
    valid = np.array([v is not None for v in vals], dtype=np.uint8)
    eq_arrays(K.string_ranks(off, data, valid), ref.string_ranks(off, data, valid))
    eq_arrays(K.string_ranks(off, data, None)[1:], ref.string_ranks(off, data, None)[1:])


def test_string_ranks_many_distinct_values_match_twin():
    """Thousands of distinct values with nulls: the table grows (rehashes) in the middle of
    the kernel's blocks of rows, whose slots it looks at ahead of the probes; 32- and 64-bit
    offsets."""
    rng = np.random.default_rng(5)
    vals = [
        None if r % 11 == 0 else f"k{r % 3001}-{'x' * (r % 7)}".encode() for r in rng.integers(0, 10**6, 9000).tolist()
    ]
    for off, data, valid in _string_columns(vals):
        got = K.string_ranks(off, data, valid)
        eq_arrays(got, ref.string_ranks(off, data, valid))
        assert len(got[1]) - 1 == len({v for v in vals if v is not None}) > 2000


def _string_columns(vals):
    """``(offsets, data, valid)`` of ``vals`` as a binary and a large_binary column; the data
    buffer holds exactly the values' bytes (its last keys end at the buffer's end)."""
    for t, w in ((pa.binary(), np.int32), (pa.large_binary(), np.int64)):
        arr = pa.array(vals, type=t)
        off = np.frombuffer(arr.buffers()[1], dtype=w, count=len(arr) + 1).copy()
        size = int(off[-1])
        data = np.frombuffer(arr.buffers()[2], dtype=np.uint8, count=size).copy() if size else np.zeros(0, np.uint8)
        yield off, data, np.array([v is not None for v in vals], dtype=np.uint8)


def test_string_ranks_keys_around_16_bytes_match_twin():
    """Keys of 0 to 40 bytes over the bytes 0, 1 and 255: keys of at most 16 bytes are told
    apart by their words and lengths alone (``b"ab"`` and ``b"ab\\x00"`` share their words),
    longer ones by their bytes; more than 256 distinct keys are ordered by their first 16
    bytes and ties among those (many keys share them) by their bytes."""
    rng = np.random.default_rng(16)
    alphabet = np.array([0, 1, 255], dtype=np.uint8)
    pool = [bytes(alphabet[rng.integers(0, 3, n)]) for n in rng.integers(0, 41, 1500).tolist()]
    pool += [b"", b"\x00", b"ab", b"ab\x00", b"ab\x00\x00", b"x" * 16, b"x" * 16 + b"\x00", b"x" * 17]
    pool += [b"p" * 16 + bytes([k, j]) for k in range(3) for j in range(40)]  # one 16-byte prefix
    vals = [None if r % 13 == 0 else pool[r % len(pool)] for r in rng.integers(0, 10**6, 6000).tolist()]
    vals += pool[-3:]  # the column's last keys end at the data buffer's end
    for off, data, valid in _string_columns(vals):
        got = K.string_ranks(off, data, valid)
        eq_arrays(got, ref.string_ranks(off, data, valid))
        assert len(got[1]) - 1 == len({v for v in vals if v is not None}) > 256


@pytest.mark.parametrize("n", [1, 5, 255, 256, 300])
def test_string_ranks_few_and_many_distinct_keys_match_twin(n):
    """Either side of the 256 keys where the kernel's sort of the distinct keys changes
    method; keys of 1 to 24 bytes that differ only late."""
    keys = [(b"key-%d" % v).rjust(4 + v % 21, b"0") for v in range(n)]
    vals = [keys[k * 7919 % n] for k in range(3 * n)]
    for off, data, valid in _string_columns(vals):
        got = K.string_ranks(off, data, None)
        eq_arrays(got, ref.string_ranks(off, data, None))
        assert len(got[1]) - 1 == n


def _order_keys(kind, draw_vals):
    return draw_vals


@st.composite
def kind_keys(draw):
    kind = draw(st.sampled_from([1, 2, 3, 4, 5, 6, 7, 8, 9]))
    n = draw(st.integers(0, 40))
    los = [0] * n
    if kind == 1:
        his = [draw(st.integers(-128, 127)) for _ in range(n)]
    elif kind == 2:
        his = [draw(st.integers(-(2**15), 2**15 - 1)) for _ in range(n)]
    elif kind == 3:
        his = [draw(st.integers(-(2**31), 2**31 - 1)) for _ in range(n)]
    elif kind == 4:
        his = [draw(i64) for _ in range(n)]
    elif kind == 5:
        his = [draw(st.integers(0, 1)) for _ in range(n)]
    elif kind == 6:
        fs = [draw(st.floats(width=32, allow_nan=True)) for _ in range(n)]
        his = [ref.key_order(6, struct.pack("<f", f))[0] for f in fs]
    elif kind == 7:
        fs = [draw(st.floats(allow_nan=True)) for _ in range(n)]
        his = [ref.key_order(7, struct.pack("<d", f))[0] for f in fs]
    elif kind == 8:
        his = [draw(i64) for _ in range(n)]
        los = [draw(st.integers(0, 999_999)) for _ in range(n)]
    else:
        vs = [draw(st.integers(-(10**38) + 1, 10**38 - 1)) for _ in range(n)]
        his = [v >> 64 for v in vs]
        los = [v & (2**64 - 1) for v in vs]
    return kind, his, los


@SETTINGS
@given(kind_keys())
def test_key_serialization_matches_twin(kk):
    kind, his, los = kk
    hi = np.array(his, dtype=np.int64)
    lo = np.array(los, dtype=np.uint64)
    off, data = K.serialize_keys(kind, hi, lo)
    roff, rdata = ref.serialize_keys(kind, hi, lo)
    eq_arrays((off, data), (roff, rdata))
    # and back: order keys of the bytes are the inputs
    ohi, olo = K.key_orders(kind, data, off[:-1].copy(), np.diff(off))
    np.testing.assert_array_equal(ohi, hi)
    np.testing.assert_array_equal(olo, lo)
    raw = data.tobytes()
    keys = [raw[off[i] : off[i + 1]] for i in range(len(his))]
    for a in keys[:8]:
        for b in keys[:8]:
            want = ref.key_cmp(kind, a, b)
            got = K.compare_to(
                kind, np.frombuffer(a, np.uint8), np.zeros(1, np.int64), np.array([len(a)]), np.frombuffer(b, np.uint8)
            )[0]
            assert got == want
            assert want == ((his[keys.index(a)], los[keys.index(a)]) > (his[keys.index(b)], los[keys.index(b)])) - (
                (his[keys.index(a)], los[keys.index(a)]) < (his[keys.index(b)], los[keys.index(b)])
            )


@SETTINGS
@given(st.lists(st.lists(rid_st, max_size=60), max_size=6), st.booleans())
def test_serialize64_groups_matches_twin(groups, dense):
    if dense:
        groups = [list(range(g[0] % 100000, g[0] % 100000 + 5000)) if g else [] for g in groups]
    groups = [sorted(set(g)) for g in groups]
    rids = np.array([v for g in groups for v in g], dtype=np.uint64)
    bounds = np.cumsum([0] + [len(g) for g in groups]).astype(np.int64)
    blob, sizes = K.serialize64_groups(rids, bounds)
    rblob, rsizes = ref.serialize64_groups(rids, bounds)
    assert blob == rblob
    np.testing.assert_array_equal(sizes, rsizes)
    pos = 0
    for g, s in zip(groups, sizes.tolist()):
        assert K.check64(np.frombuffer(blob[pos : pos + s], np.uint8)) == len(g)
        assert BitMap64.deserialize(blob[pos : pos + s]) == BitMap64(g)
        assert blob[pos : pos + s] == pf.roaring.serialize64(np.array(g, dtype=np.uint64))
        pos += s


@SETTINGS
@given(
    st.lists(st.lists(u64, max_size=30), min_size=1, max_size=4),
    st.lists(st.tuples(st.integers(-1, 4), st.integers(-2, 35), st.integers(-1, 35)), max_size=40),
)
def test_gather_segments_matches_twin(parts, segs):
    parts = [np.array(p, dtype=np.uint64) for p in parts]
    for p in parts:  # the merge reads memory-mapped runs
        p.setflags(write=False)
    part, start, length = (np.array([s[i] for s in segs], dtype=np.int64) for i in range(3))
    try:
        want = ref.gather_segments(parts, part, start, length)
    except ValueError as e:
        with pytest.raises(ValueError, match=str(e)):
            K.gather_segments(parts, part, start, length)
        return
    np.testing.assert_array_equal(K.gather_segments(parts, part, start, length), want)


@SETTINGS
@given(
    st.lists(st.one_of(st.none(), st.sampled_from(["a", "b", "ab", "", "é", "zz"])), min_size=1, max_size=80),
    st.lists(st.integers(0, 80), max_size=4),
    st.sampled_from(["STRING", "INT"]),
)
def test_merged_groups_equal_one_grouping(vals, cuts, dtype):
    """Groupings of consecutive row-id pieces merge into the grouping of the whole (the split
    Spark build's premise), with the non-null row ids carried through."""
    from paimon_fast.globalindex.format import group_column, merge_groups
    from paimon_fast.globalindex.keys import KeyCodec

    codec = KeyCodec(dtype)
    arr = pa.array(
        vals if dtype == "STRING" else [None if v is None else len(v) * 7 - 9 for v in vals],
        pa.string() if dtype == "STRING" else pa.int32(),
    )
    rids = np.arange(3, 3 + len(arr), dtype=np.uint64) * 5
    cuts = sorted({0, len(arr), *(c % (len(arr) + 1) for c in cuts)})
    whole = group_column(codec, arr, rids)
    merged = merge_groups([group_column(codec, arr.slice(a, b - a), rids[a:b]) for a, b in zip(cuts, cuts[1:])])
    for f in ("nulls", "rids", "bounds", "key_off", "key_data", "ghi", "glo", "nonnull"):
        x, y = getattr(whole, f), getattr(merged, f)
        assert (x is None) == (y is None), f
        if x is not None:
            np.testing.assert_array_equal(x, y, err_msg=f)


@pytest.mark.parametrize("dtype,distinct", [("STRING", 7), ("STRING", 5000), ("INT", 40), ("BIGINT", 10**9)])
@pytest.mark.parametrize("threads", [2, 3])
@pytest.mark.parametrize("nulls", [True, False])
def test_parallel_grouping_equals_one_grouping(monkeypatch, dtype, distinct, threads, nulls):
    """The build's grouping in slices side by side, merged, is the one grouping of the column:
    with and without nulls, few or (nearly) all keys distinct, row ids ascending with gaps; row
    ids out of order, and nearly unique columns, take the one grouping."""
    from paimon_fast.globalindex import groups as fmt  # the grouping reads its names there
    from paimon_fast.globalindex.keys import KeyCodec

    monkeypatch.setattr(fmt, "PARALLEL_GROUP_ROWS", 1000)
    rng = np.random.default_rng(distinct + threads)
    n = 20_000
    codes = rng.integers(0, distinct, n)
    mask = rng.random(n) < (0.05 if nulls else 0)
    if dtype == "STRING":
        arr = pa.array(np.char.add("k", codes.astype(str)).astype(object), pa.string(), mask=mask)
    else:
        arr = pa.array(codes.astype(np.int64) - distinct // 2, pa.int32() if dtype == "INT" else pa.int64(), mask=mask)
    codec = KeyCodec(dtype)
    rids = np.cumsum(rng.integers(1, 4, n)).astype(np.uint64)
    calls = []
    monkeypatch.setattr(
        fmt,
        "merge_groups",
        lambda parts, nonnull=None, real=fmt.merge_groups: calls.append(len(parts)) or real(parts, nonnull),
    )
    for r, merged in ((rids, distinct < n), (rng.permutation(rids), False)):
        calls.clear()
        whole = fmt.group_column(codec, arr, r)
        par = fmt.group_column_parallel(codec, arr, r, threads=threads)
        assert calls == ([threads] if merged else [])  # sliced only where it pays and is valid
        for f in ("nulls", "rids", "bounds", "key_off", "key_data", "ghi", "glo", "nonnull"):
            x, y = getattr(whole, f), getattr(par, f)
            assert (x is None) == (y is None), f
            if x is not None:
                np.testing.assert_array_equal(x, y, err_msg=f)


@SETTINGS
@given(
    st.lists(st.tuples(st.binary(max_size=20), st.integers(8, 300)), max_size=80),
    st.integers(1, 400),
    st.sampled_from(["none", "zstd", "lz4"]),
)
def test_pack_and_parse_match_twin(entries, block_size, comp):
    keys = sorted({k for k, _ in entries})
    sizes = np.array([s for _, s in entries][: len(keys)] + [8] * max(0, len(keys) - len(entries)), dtype=np.int64)
    off = np.cumsum([0] + [len(k) for k in keys]).astype(np.int64)
    data = np.frombuffer(b"".join(keys), np.uint8).copy()
    blob = bytes(np.random.default_rng(0).integers(0, 256, int(sizes.sum()), dtype=np.uint8))
    enc = codec.BlockEncoder(codec.compression_type(comp))
    got = K.pack(off, data, blob, sizes, block_size, enc)
    want = ref.pack(off, data, blob, sizes, block_size, enc)
    assert got[0] == want[0]
    eq_arrays(got[1:], want[1:])
    # the layout alone, and the body as parts of the bitmaps cut anywhere between them
    lay = K.pack_blocks(off, data, sizes, block_size, enc)
    tw = ref.pack_blocks(off, data, sizes, block_size, enc)
    assert lay[0] == tw[0]
    eq_arrays(lay[1:], tw[1:])
    eq_arrays(lay[2:], got[1:])
    ends = np.cumsum(sizes).tolist()
    cuts = sorted(set(np.random.default_rng(block_size).choice([0] + ends, size=min(3, len(ends) + 1)).tolist()))
    blobs = [blob[a:b] for a, b in zip([0] + cuts, cuts + [len(blob)])]
    parts = gformat.body_parts(blobs, sizes, lay[1], lay[0])
    assert b"".join(bytes(p) for p in parts) == got[0]
    body = got[0]
    for o, n in zip(got[2].tolist(), got[3].tolist()):
        raw, _ = codec.decode(body[o : o + n + 5], n, o)
        u8 = np.frombuffer(raw, np.uint8)
        pe = K.parse_entries(u8)
        eq_arrays(pe, ref.parse_entries(u8))
        for s, kl in zip(pe[0][:5].tolist(), pe[1][:5].tolist()):
            key = raw[s : s + kl]
            lit = np.frombuffer(key, np.uint8)
            assert K.lookup(10, u8, lit) == ref.lookup(10, u8, lit)
            assert K.search_last_le(10, u8, pe[0], pe[1], lit) == ref.search_last_le(10, u8, pe[0], pe[1], lit)
            for mode in range(3):
                pat = lit[: max(0, len(lit) - 1)]
                np.testing.assert_array_equal(
                    K.match_bytes(mode, u8, pe[0], pe[1], pat), ref.match_bytes(mode, u8, pe[0], pe[1], pat)
                )
            np.testing.assert_array_equal(
                K.compare_to(10, u8, pe[0], pe[1], lit), ref.compare_to(10, u8, pe[0], pe[1], lit)
            )


def test_empty_inputs():
    e64 = np.zeros(0, np.int64)
    eu = np.zeros(0, np.uint64)
    eq_arrays(K.sort_group(e64, eu, eu), ref.sort_group(e64, eu, eu))
    r = K.string_ranks(np.zeros(1, np.int64), np.zeros(0, np.uint8), None)
    assert len(r[0]) == 0 and list(r[1]) == [0]
    blob, sizes = K.serialize64_groups(eu, np.array([0, 0], np.int64))
    assert blob == b"\x00" * 8 == ref.serialize64([])


# ---------------------------------------------------------------- end-to-end properties

TYPES = {
    "INT": st.integers(-(2**31), 2**31 - 1),
    "TINYINT": st.integers(-128, 127),
    "BIGINT": i64,
    "STRING": st.text(alphabet="ab\u00e9\U0001f600%_", max_size=4),
    "DOUBLE": st.floats(allow_nan=True),
    "BOOLEAN": st.booleans(),
    "DECIMAL(30, 2)": st.decimals(
        min_value=-(10**27), max_value=10**27, places=2, allow_nan=False, allow_infinity=False
    ),
}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(sorted(TYPES)),
    st.data(),
    st.sampled_from(["none", "zstd", "lz4"]),
    st.sampled_from(["32b", "64b", "16kb"]),
)
def test_writer_reader_against_brute_force(tname, data, comp, bs):
    vals = data.draw(st.lists(st.one_of(st.none(), TYPES[tname]), max_size=60))
    rids = data.draw(
        st.lists(
            st.one_of(small_rid, st.integers(2**32 - 5, 2**32 + 70000)),
            min_size=len(vals),
            max_size=len(vals),
            unique=True,
        )
    )
    w = gi.writer(tname, {"bitmap-index.compression": comp, "bitmap-index.dictionary-block-size": bs})
    w.write_batch(vals, np.array(rids, dtype=np.uint64))
    blob, meta = w.finish()
    if not vals:
        assert blob is None
        return
    codec_ = gi.KeyCodec(tname)

    def key(v):
        return codec_.literal_bytes(v)

    total = max(rids) + 1
    r = gi.reader(tname, blob, {}, total_row_count=total)
    nonnull = [(key(v), rid) for v, rid in zip(vals, rids) if v is not None]
    nulls = BitMap64([rid for v, rid in zip(vals, rids) if v is None])
    universe = BitMap64()
    universe.add_range(0, total)
    probes = [v for v in vals if v is not None][:5] + data.draw(st.lists(TYPES[tname], max_size=3))
    for p in probes:
        k = key(p)
        eq = BitMap64([rid for kk, rid in nonnull if kk == k])
        assert r.evaluate(pf.field("x").equal(p)) == eq
        assert r.evaluate(pf.field("x").not_equal(p)) == universe - nulls - eq
        lt = BitMap64([rid for kk, rid in nonnull if codec_.compare(kk, k) < 0])
        assert r.evaluate(pf.field("x") < p) == lt
        ge = BitMap64([rid for kk, rid in nonnull if codec_.compare(kk, k) >= 0])
        assert r.evaluate(pf.field("x") >= p) == ge
    assert r.evaluate(pf.field("x").is_null()) == nulls
    assert r.evaluate(pf.field("x").isin(probes + [None])) == BitMap64(
        [rid for kk, rid in nonnull if kk in {key(p) for p in probes}]
    )
    m = gi.SortedIndexFileMeta.deserialize(meta)
    assert m.has_nulls == bool(nulls)
    if nonnull:
        ks = sorted({kk for kk, _ in nonnull}, key=__import__("functools").cmp_to_key(codec_.compare))
        assert (m.first_key, m.last_key) == (ks[0], ks[-1])
    else:
        assert m.only_nulls


def test_like_rules():
    vals = ["", "a", "ab", "abc", "a%b", "a_b", "x\ny", "é", "😀x", None]
    w = gi.writer("STRING", {"bitmap-index.dictionary-block-size": "32b"})
    w.write_batch(vals)
    r = gi.reader("STRING", w.finish()[0], {}, len(vals))

    def rows(p):
        return sorted(r.evaluate(pf.field("x").like(p)))

    assert rows("a%") == [1, 2, 3, 4, 5]
    assert rows("a\\%b") == [4]
    assert rows("a\\_b") == [5]
    assert rows("a_b") == [4, 5]
    assert rows("x_y") == []  # '_' does not match a line terminator (Java's '.')
    assert rows("x%y") == [6]  # '%' does
    assert rows("_") == [1, 7]  # one code point
    assert rows("__") == [2, 8]
    assert rows("") == [0]
    assert rows("%") == list(range(9))
    with pytest.raises(ValueError):
        r.evaluate(pf.field("x").like("a\\"))
    off = gi.reader("STRING", w.finish()[0], {"bitmap-index.fallback-scan-max-size": "0 b"}, len(vals))
    assert off.evaluate(pf.field("x").like("a_b")) is pf.UNSUPPORTED
    assert off.evaluate(pf.field("x").contains("b")) is pf.UNSUPPORTED
    assert off.evaluate(pf.field("x") < "b") is pf.UNSUPPORTED
    assert sorted(off.evaluate(pf.field("x").like("ab%"))) == [2, 3]  # prefix: no scan needed
    assert off.evaluate(pf.field("x").like("ab%") & (pf.field("x") < "b")) is not pf.UNSUPPORTED
    assert off.evaluate(pf.field("x").like("ab%") | (pf.field("x") < "b")) is pf.UNSUPPORTED
    ri = gi.reader("INT", _one_int(), {}, 1)
    assert ri.evaluate(pf.field("x").startswith("1")) is pf.UNSUPPORTED


def _one_int():
    w = gi.writer("INT")
    w.write_batch([1])
    return w.finish()[0]


@SETTINGS
@given(st.lists(st.lists(rid_st, max_size=40), min_size=1, max_size=6), st.booleans())
def test_union64_matches_twin(groups, dense):
    if dense:
        groups = [sorted(set(g + list(range(1000, 7000)))) for g in groups]
    blobs = [pf.roaring.serialize64(np.array(sorted(set(g)), dtype=np.uint64)) for g in groups]
    buf = np.frombuffer(b"".join(blobs), np.uint8)
    offs = np.cumsum([0] + [len(b) for b in blobs[:-1]]).astype(np.int64)
    lens = np.array([len(b) for b in blobs], dtype=np.int64)
    got = K.union64(buf, offs, lens)
    assert got == ref.union64(buf, offs, lens)
    assert BitMap64.deserialize(got) == BitMap64(sorted({v for g in groups for v in g}))
    np.testing.assert_array_equal(
        np.sort(K.decode64_many(buf, offs, lens)), np.sort(ref.decode64_many(buf, offs, lens))
    )


@SETTINGS
@given(kind_keys(), st.booleans())
def test_entries_sorted_matches_twin(kk, do_sort):
    kind, his, los = kk
    pairs = sorted(set(zip(his, los))) if do_sort else list(zip(his, los))
    hi = np.array([p[0] for p in pairs], dtype=np.int64)
    lo = np.array([p[1] for p in pairs], dtype=np.uint64)
    off, data = K.serialize_keys(kind, hi, lo)
    starts, lens = off[:-1].copy(), np.diff(off)
    assert K.entries_sorted(kind, data, starts, lens) == ref.entries_sorted(kind, data, starts, lens)
    if do_sort:
        assert K.entries_sorted(kind, data, starts, lens)


@pytest.mark.parametrize("comp", ["none", "zstd"])
@pytest.mark.parametrize("rows,max_records", [(40, 7), ((1 << 20) + 30_000, 400_000), ((1 << 20) + 30_000, 10**9)])
def test_files_as_chunks_are_the_same_bytes(comp, rows, max_records):
    # a build's files as buffers never joined (the bitmaps of a file of 2^20 rows or more are
    # serialized in two slices; files cut by records, nulls first) are byte for byte the files
    # built as one buffer each
    from paimon_fast.io.fsutil import Chunks

    rng = np.random.default_rng(rows)
    codes = rng.integers(0, 5000, rows)
    vals = pa.array(np.char.add("k", codes.astype(str)).astype(object), mask=rng.random(rows) < 0.01)
    g = gformat.group_column(gi.KeyCodec("STRING"), vals, np.arange(rows, dtype=np.uint64) * 3)
    enc = codec.BlockEncoder(codec.compression_type(comp))
    whole = gformat.files_from_groups(g, 1024, enc, max_records)
    parts = gformat.files_from_groups(g, 1024, enc, max_records, chunks=True)
    assert len(whole) == len(parts) == -(-rows // max_records)
    for (a, ma, na), (b, mb, nb) in zip(whole, parts):
        assert isinstance(a, bytes) and isinstance(b, Chunks)
        assert len(b) == len(a) and bytes(b) == a and (ma, na) == (mb, nb)
    if max_records == 10**9:
        blobs, _ = gformat.serialize_groups(g.rids, g.bounds, join=False)
        assert len(blobs) == 2
