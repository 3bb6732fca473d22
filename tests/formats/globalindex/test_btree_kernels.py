"""SST / BTree kernels vs their plain-Python twins (hypothesis), the bloom hash vs pypaimon's
independent one, and end-to-end properties of the BTree writer + reader against brute force."""

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
from paimon_fast.errors import IndexFormatError
from paimon_fast.globalindex import sst
from paimon_fast.reference import sst as ref

K = load("sst")
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
I32, I64, BYTES = 3, 4, 10

rid_st = st.one_of(st.integers(0, 300), st.integers(2**32 - 3, 2**32 + 3), st.integers(0, 2**63 - 1))


def _groups(keys, rid_lists):
    """(key_off, key_data, rids, bounds) of groups given as key bytes and row-id lists."""
    key_off = np.concatenate([[0], np.cumsum([len(k) for k in keys])]).astype(np.int64)
    key_data = np.frombuffer(b"".join(keys), np.uint8).copy() if keys else np.zeros(0, np.uint8)
    rids = np.array([r for rl in rid_lists for r in rl], dtype=np.uint64)
    bounds = np.concatenate([[0], np.cumsum([len(rl) for rl in rid_lists])]).astype(np.int64)
    return key_off, key_data, rids, bounds


group_st = st.lists(st.tuples(st.binary(max_size=12), st.lists(rid_st, min_size=1, max_size=6)), max_size=40)


@SETTINGS
@given(group_st, st.integers(1, 300), st.booleans())
def test_btree_blocks_match_twin(groups, block_size, frame):
    args = _groups([k for k, _ in groups], [r for _, r in groups])
    got = K.btree_blocks(*args, block_size, frame)
    want = ref.btree_blocks(*args, block_size, frame)
    assert got[0] == want[0]
    for a, b in zip(got[1:], want[1:]):
        np.testing.assert_array_equal(a, b)
    if len(got[1]):  # and the index block over them
        assert K.index_block(args[0], args[1], got[3], got[1], got[2]) == ref.index_block(
            args[0], args[1], got[3], got[1], got[2]
        )


def test_empty_index_block_is_unaligned():
    z = np.zeros(1, np.int64)
    e = np.zeros(0, np.int64)
    assert K.index_block(z, np.zeros(0, np.uint8), e, e, e) == b"\x00\x00\x00\x00\x01" == ref.block([])


def _key_st(kind):
    if kind == I32:
        return st.integers(-(2**31), 2**31 - 1).map(lambda v: struct.pack("<i", v))
    if kind == I64:
        return st.integers(-(2**63), 2**63 - 1).map(lambda v: struct.pack("<q", v))
    return st.binary(max_size=6)


def _sorted_block(kind, keys, rid_lists):
    from paimon_fast.reference.globalindex import key_cmp
    import functools

    keys = sorted(set(keys), key=functools.cmp_to_key(lambda a, b: key_cmp(kind, a, b)))
    return np.frombuffer(ref.block([(k, ref.row_id_value(r)) for k, r in zip(keys, rid_lists)]), np.uint8), keys


@SETTINGS
@given(
    st.sampled_from([I32, I64, BYTES]).flatmap(
        lambda kind: st.tuples(
            st.just(kind),
            st.lists(_key_st(kind), max_size=30),
            _key_st(kind),
            _key_st(kind),
            st.integers(0, 3),
            st.booleans(),
            st.booleans(),
            st.lists(st.lists(rid_st, min_size=1, max_size=4), min_size=30, max_size=30),
        )
    )
)
def test_block_reads_match_twin(args):
    kind, keys, lo, hi, flags, use_lo, use_hi, rid_lists = args
    raw, keys = _sorted_block(kind, keys, rid_lists)
    for a, b in zip(K.block_entries(raw), ref.block_entries(raw)):
        np.testing.assert_array_equal(a, b)
    assert K.seek(kind, raw, lo) == ref.seek(kind, raw, lo)
    lo_, hi_ = (lo if use_lo else None), (hi if use_hi else None)
    got, stop = K.scan(kind, raw, lo_, hi_, flags)
    want, wstop = ref.scan(kind, raw, lo_, hi_, flags)
    np.testing.assert_array_equal(got, want)
    assert stop == wstop
    ks, kl, vs, vl = K.block_entries(raw)
    for s, n in zip(vs.tolist(), vl.tolist()):
        for limit in (-1, 1, 2):
            np.testing.assert_array_equal(K.entry_row_ids(raw, s, n, limit), ref.entry_row_ids(raw, s, n, limit))


@SETTINGS
@given(
    st.lists(st.tuples(st.binary(max_size=5), st.integers(0, 2**63 - 1), st.integers(0, 2**31 - 1)), max_size=20),
    st.binary(max_size=5),
)
def test_handles_match_twin(entries, key):
    raw = np.frombuffer(ref.block([(k, ref.handle(o, n)) for k, o, n in entries]), np.uint8)
    for a, b in zip(K.handles(raw), ref.handles(raw)):
        np.testing.assert_array_equal(a, b)
    # an index block's keys ascend: the seek and its handle
    raw = np.frombuffer(
        ref.block([(k, ref.handle(o, n)) for k, (_, o, n) in zip(sorted({e[0] for e in entries}), entries)]), np.uint8
    )
    assert K.seek_handle(BYTES, raw, key) == ref.seek_handle(BYTES, raw, key)


def _same_outcome(f_kernel, f_twin):
    """Both raise IndexFormatError, or both give equal results."""
    try:
        want = f_twin()
    except IndexFormatError:
        with pytest.raises(IndexFormatError):
            f_kernel()
        return
    got = f_kernel()
    if isinstance(want, tuple):
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a, b)
    else:
        np.testing.assert_array_equal(got, want)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.tuples(st.binary(max_size=4), st.lists(rid_st, min_size=1, max_size=3)), max_size=8),
    st.lists(st.tuples(st.integers(0, 200), st.integers(0, 255)), max_size=4),
    st.integers(0, 60),
    st.sampled_from([I32, BYTES]),
    st.binary(max_size=4),
)
def test_mutated_blocks_raise_only_index_format_errors_like_the_twin(entries, flips, cut, kind, key):
    """Blocks with bytes changed or cut: the kernels and the twins agree (the same answer, or
    both IndexFormatError), and nothing else is ever raised."""
    if kind == I32:
        entries = [(struct.pack("<i", len(k)), r) for k, r in entries]
        key = struct.pack("<i", len(key))
    b = bytearray(ref.block([(k, ref.row_id_value(r)) for k, r in dict(entries).items()]))
    for at, v in flips:
        if b:
            b[at % len(b)] = v
    if cut and cut < len(b):
        b = b[: len(b) - cut]
    raw = np.frombuffer(bytes(b), np.uint8)
    _same_outcome(lambda: K.block_entries(raw), lambda: ref.block_entries(raw))
    _same_outcome(lambda: K.handles(raw), lambda: ref.handles(raw))
    try:  # seek and scan check what they walk: never a crash, at worst IndexFormatError
        K.seek(kind, raw, key)
        K.scan(kind, raw, key, None, 1)
        K.scan(kind, raw, None, key, 2)
    except IndexFormatError:
        pass


@SETTINGS
@given(st.binary(max_size=40))
def test_murmur_matches_twin_and_pypaimon(data):
    pytest.importorskip("pypaimon")
    from pypaimon.globalindex.btree.bloom_filter import murmur_hash_bytes

    assert K.murmur(data) == ref.murmur(data) == murmur_hash_bytes(data)


def test_bloom_test_matches_pypaimon_filters():
    pytest.importorskip("pypaimon")
    from pypaimon.globalindex.btree.bloom_filter import BloomFilter, murmur_hash_bytes

    rng = np.random.default_rng(3)
    keys = [rng.bytes(int(rng.integers(0, 12))) for _ in range(300)]
    bf = BloomFilter.from_hashes([murmur_hash_bytes(k) for k in keys[:150]], 0.05)
    bits = np.frombuffer(bf.to_bytes(), np.uint8)
    hashes = ref.bloom_hashes(bf.expected_entries, len(bits))
    for k in keys:
        want = bf.test_hash(murmur_hash_bytes(k))
        assert K.bloom_test(bits, hashes, k) == ref.bloom_test(bits, hashes, k) == want
    assert all(K.bloom_test(bits, hashes, k) for k in keys[:150])  # no false negatives


# ---------------------------------------------------------------- writer + reader vs brute force


def _brute(values, rids, fn):
    return BitMap64([r for v, r in zip(values, rids) if v is not None and fn(v)])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.one_of(st.none(), st.integers(-20, 20)), min_size=1, max_size=150),
    st.integers(-22, 22),
    st.integers(-22, 22),
    st.sampled_from(["64 b", "128 b", "64 kb"]),
    st.integers(1, 3),
    st.randoms(),
)
def test_int_answers_match_brute_force(values, a, b, block, nfiles, rnd):
    rids = rnd.sample(range(10**6), len(values))
    cut = sorted(rnd.sample(range(1, len(values)), min(nfiles, len(values)) - 1)) if len(values) > 1 else []
    files = []
    for lo, hi in zip([0] + cut, cut + [len(values)]):
        w = gi.writer("INT", {"btree-index.block-size": block}, index_type="btree")
        w.write_batch(pa.array(values[lo:hi], pa.int32()), np.array(rids[lo:hi], dtype=np.uint64))
        files.append(w.finish())
    idx = gi.BTreeGlobalIndex(files, "INT", {}, total_row_count=10**6)
    f = pf.field("x")
    checks = [
        (f == a, lambda v: v == a),
        (f < a, lambda v: v < a),
        (f <= a, lambda v: v <= a),
        (f > a, lambda v: v > a),
        (f >= a, lambda v: v >= a),
        (f.between(a, b), lambda v: a <= v <= b),
        (f.not_between(a, b), lambda v: v < a or v > b),
        (f.isin([a, b]), lambda v: v in (a, b)),
    ]
    for pred, fn in checks:
        assert idx.evaluate(pred) == _brute(values, rids, fn), pred
    nulls = BitMap64([r for v, r in zip(values, rids) if v is None])
    assert idx.evaluate(f.is_null()) == nulls
    every = BitMap64()
    every.add_range(0, 10**6)
    assert idx.evaluate(f != a) == every - nulls - _brute(values, rids, lambda v: v == a)
    limit = rnd.randint(0, 12)
    for desc in (False, True):
        for nulls_first in (False, True):
            rows, groups = idx.top_n(limit, desc, nulls_first)
            order = sorted(
                zip(values, rids),
                key=lambda t: (
                    (0 if nulls_first else 2) if t[0] is None else 1,
                    0 if t[0] is None else (-t[0] if desc else t[0]),
                    t[1],
                ),
            )
            assert rows == BitMap64([r for _, r in order[:limit]])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.one_of(st.none(), st.text("ab\x00é", max_size=4)), min_size=1, max_size=120),
    st.text("ab\x00é", max_size=3),
    st.sampled_from(["32 b", "64 kb"]),
    st.sampled_from(["none", "zstd", "lz4"]),
)
def test_string_answers_match_brute_force(values, p, block, comp):
    rids = list(range(len(values)))
    w = gi.writer("STRING", {"btree-index.block-size": block, "btree-index.compression": comp}, index_type="btree")
    w.write_batch(pa.array(values, pa.string()), np.array(rids, dtype=np.uint64))
    data, meta = w.finish()
    idx = gi.BTreeGlobalIndex([(data, meta)], "STRING", {}, total_row_count=len(values))
    f = pf.field("x")
    enc = p.encode()
    assert idx.evaluate(f.startswith(p)) == _brute(values, rids, lambda v: v.encode().startswith(enc))
    assert idx.evaluate(f < p) == _brute(values, rids, lambda v: v.encode() < enc)
    assert idx.evaluate(f >= p) == _brute(values, rids, lambda v: v.encode() >= enc)
    assert idx.evaluate(f == p) == _brute(values, rids, lambda v: v == p)
    # non-prefix patterns: every non-null row (Java's superset; the exact filter runs on the rows)
    assert idx.evaluate(f.contains(p)) == _brute(values, rids, lambda v: True)


def test_float_order_is_javas():
    """-0.0 < 0.0 are two keys, every NaN one key above +inf (Java's Double.compare)."""
    vals = [
        0.0,
        -0.0,
        float("nan"),
        float("inf"),
        -1.0,
        None,
        float("-inf"),
        struct.unpack("<d", struct.pack("<Q", 0x7FF8000000000123))[0],
    ]
    w = gi.writer("DOUBLE", {}, index_type="btree")
    w.write_batch(pa.array(vals, pa.float64()), np.arange(len(vals)))
    data, _ = w.finish()
    r = gi.reader("DOUBLE", data, {}, len(vals), index_type="btree")
    f = pf.field("x")
    assert list(r.evaluate(f == -0.0)) == [1] and list(r.evaluate(f == 0.0)) == [0]
    assert list(r.evaluate(f > float("inf"))) == [2, 7]
    assert list(r.evaluate(f < 0.0)) == [1, 4, 6]
    assert r.file.describe()["distinct_values"] == 6


def test_btree_block_size_option_is_checked():
    with pytest.raises(pf.OptionError):
        gi.writer("INT", {"btree-index.block-size": "0 b"}, index_type="btree")
    with pytest.raises(pf.OptionError, match="btree-index.compression"):
        gi.writer("INT", {"btree-index.compression": "snappy"}, index_type="btree")


def test_encoder_frames_like_the_twin():
    raw = bytes(range(200)) * 3
    for ctype in (sst.NONE, sst.ZSTD, sst.LZ4):
        stored = sst.BlockEncoder(ctype)(raw)
        got, _ = sst.decode(stored, len(stored) - sst.TRAILER, 0)
        assert bytes(got) == raw
        assert stored[-5:] == ref.trailer(stored[:-5], stored[-5])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.one_of(st.none(), st.integers(-50, 50)), min_size=1, max_size=300),
    st.integers(-52, 52),
    st.sampled_from([64, 256, 1 << 16]),
    st.booleans(),
    st.integers(0, 40),
)
def test_cold_equal_matches_twin(tmp_path_factory, values, probe, tail_len, use_fd, flip):
    """The one-call first = (index and data block in the bytes read at open or read by the
    descriptor) against its twin, on intact files and on files with a byte changed."""
    w = gi.writer("INT", {"btree-index.block-size": "64 b"}, index_type="btree")
    w.write_batch(pa.array(values, pa.int32()), np.arange(len(values)))
    data = bytearray(w.finish()[0])
    if flip:
        data[flip % len(data)] ^= 0x10
    data = bytes(data)
    tail_at = max(0, len(data) - tail_len)
    foot = struct.unpack_from("<qiqqiqiii", data, len(data) - 52)
    key = struct.pack("<i", probe)
    p = tmp_path_factory.mktemp("cold") / "f.index"
    p.write_bytes(data)
    import os

    fd = os.open(str(p), os.O_RDONLY) if use_fd else -1
    try:
        args = (I32, np.frombuffer(data[tail_at:], np.uint8), tail_at, foot[3], foot[4], key, fd, len(data) - 52)
        _same_outcome(lambda: K.cold_equal(*args), lambda: ref.cold_equal(*args))
        if not flip:
            got = K.cold_equal(*args)
            if got is not None:
                assert BitMap64(got.tolist()) == _brute(values, range(len(values)), lambda v: v == probe)
    finally:
        if fd >= 0:
            os.close(fd)


def test_read_block_matches_twin(tmp_path):
    import os

    w = gi.writer("STRING", {"btree-index.block-size": "128 b"}, index_type="btree")
    w.write_batch(pa.array([f"k{i % 37}" for i in range(500)]), np.arange(500))
    data = w.finish()[0]
    f = gi.BTreeIndexFile(gi.KeyCodec("STRING"), data)
    _, _, _, offs, sizes = f.index()
    body = len(data) - 52
    for variant in (data, data[:100] + bytes([data[100] ^ 1]) + data[101:]):
        p = tmp_path / "f.index"
        p.write_bytes(variant)
        fd = os.open(str(p), os.O_RDONLY)
        try:
            for o, n in list(zip(offs.tolist(), sizes.tolist())) + [(body - 3, 10), (-1, 4)]:
                _same_outcome(lambda: K.read_block(fd, o, n, body)[0], lambda: ref.read_block(fd, o, n, body)[0])
        finally:
            os.close(fd)
