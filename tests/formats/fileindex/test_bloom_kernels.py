"""Bloom kernels vs the pure-Python twin (hypothesis), XXH64 vs the xxhash package."""

import math
import struct

import numpy as np
import pyarrow as pa
import pytest
import xxhash
from hypothesis import given, settings, strategies as st

import paimon_fast as pf
from paimon_fast._kernels import load
from paimon_fast.fileindex.bloom import bloom_sizing, hash_values
from paimon_fast.reference import bloom as twin

K = load("bloom")


def _xxh(data: bytes) -> int:
    off = np.array([0, len(data)], dtype=np.int64)
    return int(K.xxh64_hash(off, np.frombuffer(data, dtype=np.uint8)).view(np.uint64)[0])


@pytest.mark.parametrize("n", range(0, 1025))
def test_xxh64_every_length(n):
    data = np.random.default_rng(n).integers(0, 256, n, dtype=np.uint8).tobytes()
    assert _xxh(data) == xxhash.xxh64_intdigest(data, seed=0)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_xxh64_random(data):
    assert _xxh(data) == xxhash.xxh64_intdigest(data)


def test_xxh64_with_seed_and_offsets_int32():
    vals = [b"", b"a", b"hello world", bytes(range(200))]
    arr = pa.array(vals, type=pa.binary())
    off = np.frombuffer(arr.buffers()[1], dtype=np.int32)
    data = np.frombuffer(arr.buffers()[2], dtype=np.uint8)
    got = K.xxh64_hash(off, data, 12345).view(np.uint64).tolist()
    assert got == [xxhash.xxh64_intdigest(v, seed=12345) for v in vals]


@pytest.mark.parametrize("offset_type", [np.int32, np.int64])
def test_xxh64_runs_of_equal_lengths(offset_type):
    """Blocks of equal-length values take the straight-line path per length (0..31): every
    length, runs crossing block boundaries, a block broken by one odd length, and a
    non-zero first offset, all against the xxhash package."""
    rng = np.random.default_rng(7)
    for length in list(range(0, 34)) + [40, 64]:
        vals = [rng.integers(0, 256, length, dtype=np.uint8).tobytes() for _ in range(700)]
        if length % 3 == 0:
            vals[300] = vals[300] + b"x"  # the second block is mixed
        blob = b"pad" + b"".join(vals)
        off = np.concatenate([[0], np.cumsum([len(v) for v in vals])]).astype(offset_type) + 3
        got = K.xxh64_hash(off, np.frombuffer(blob, dtype=np.uint8)).view(np.uint64).tolist()
        assert got == [xxhash.xxh64_intdigest(v) for v in vals], length


@pytest.mark.parametrize("large", [False, True])
def test_bloom_add_probe_fixed_width_strings_with_nulls_equal_twin(large):
    """Fixed-width keys (the run path) with nulls spread over several hash blocks."""
    rng = np.random.default_rng(11)
    vals = [None if rng.random() < 0.1 else f"{x:012d}" for x in rng.integers(0, 10**12, 2000)]
    w = pf.fileindex.writer("bloom-filter", "STRING", {"items": "2000", "fpp": "0.01"})
    w.write_batch(pa.array(vals, type=pa.large_string() if large else pa.string()))
    bits = bytearray(w.num_bits // 8)
    twin.add(bits, w.num_hash_functions, twin.hash_bytes([v.encode() for v in vals if v is not None]))
    assert w.finish()[4:] == bytes(bits)
    r = pf.fileindex.reader("bloom-filter", "STRING", w.finish())
    probe = [f"{x:012d}" for x in rng.integers(0, 10**12, 1000)] + [v for v in vals[:1000] if v]
    want = twin.test(bits, w.num_hash_functions, twin.hash_bytes([v.encode() for v in probe]))
    assert r.might_contain_batch(pa.array(probe)).tolist() == want


LONG = st.integers(-(2**63), 2**63 - 1)


@settings(max_examples=200, deadline=None)
@given(st.lists(LONG, max_size=200))
def test_wang_hash_kernel_equals_twin(values):
    got = K.wang_hash(np.array(values, dtype=np.int64)).tolist()
    assert got == [twin.wang_hash(v) for v in values]


@pytest.mark.parametrize("dtype,width", [("TINYINT", np.int8), ("SMALLINT", np.int16), ("INT", np.int32)])
def test_narrow_ints_are_sign_extended(dtype, width):
    info = np.iinfo(width)
    vals = np.array([info.min, -1, 0, 1, info.max], dtype=width)
    assert hash_values(vals, dtype).tolist() == [twin.wang_hash(int(v)) for v in vals]


def _filter_params():
    return st.tuples(st.integers(1, 5000), st.sampled_from([0.5, 0.1, 0.01, 0.0001]))


@settings(max_examples=120, deadline=None)
@given(st.lists(st.one_of(st.none(), LONG), max_size=300), _filter_params(), st.lists(LONG, max_size=100))
def test_bloom_add_probe_longs_kernel_equals_twin(values, params, probes):
    items, fpp = params
    w = pf.fileindex.writer("bloom-filter", "BIGINT", {"items": str(items), "fpp": str(fpp)})
    w.write_batch(pa.array(values, type=pa.int64()))
    data = w.finish()
    bits = bytearray(w.num_bits // 8)
    twin.add(bits, w.num_hash_functions, twin.hash_longs([v for v in values if v is not None]))
    assert data == struct.pack(">i", w.num_hash_functions) + bytes(bits)
    r = pf.fileindex.reader("bloom-filter", "BIGINT", data)
    allp = probes + [v for v in values if v is not None]
    assert r.might_contain_batch(np.array(allp, dtype=np.int64)).tolist() == twin.test(
        bits, w.num_hash_functions, twin.hash_longs(allp)
    )
    # every added value is found (no false negatives)
    assert all(r.might_contain_batch(np.array([v for v in values if v is not None], dtype=np.int64)))


TEXT = st.text(alphabet=st.characters(codec="utf-8"), max_size=20)


@settings(max_examples=120, deadline=None)
@given(st.lists(st.one_of(st.none(), TEXT), max_size=200), _filter_params(), st.booleans())
def test_bloom_add_probe_strings_kernel_equals_twin(values, params, large):
    items, fpp = params
    w = pf.fileindex.writer("bloom-filter", "STRING", {"items": str(items), "fpp": str(fpp)})
    w.write_batch(pa.array(values, type=pa.large_string() if large else pa.string()))
    bits = bytearray(w.num_bits // 8)
    enc = [v.encode() for v in values if v is not None]
    twin.add(bits, w.num_hash_functions, twin.hash_bytes(enc))
    assert w.finish()[4:] == bytes(bits)
    r = pf.fileindex.reader("bloom-filter", "STRING", w.finish())
    probe = values + ["", "zz", "\u00e9\u6587"]
    want = [
        True if v is None else t
        for v, t in zip(
            probe, twin.test(bits, w.num_hash_functions, twin.hash_bytes([(v or "").encode() for v in probe]))
        )
    ]
    assert r.might_contain_batch(pa.array(probe, type=pa.string())).tolist() == want


def test_float_specials_hash_by_canonical_bits():
    vals = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 1.5], dtype=np.float64)
    weird_nan = np.array([0x7FF8000000000001], dtype=np.uint64).view(np.float64)
    got = hash_values(np.concatenate([vals, weird_nan]), "DOUBLE").tolist()
    bits = [struct.unpack(">q", struct.pack(">d", v))[0] for v in vals]
    bits[2] = 0x7FF8000000000000  # canonical NaN
    assert got == [twin.wang_hash(b) for b in bits] + [twin.wang_hash(0x7FF8000000000000)]
    f32 = np.array([-0.0, np.nan], dtype=np.float32)
    assert hash_values(f32, "FLOAT").tolist() == [twin.wang_hash(-(2**31)), twin.wang_hash(0x7FC00000)]


def test_empty_all_null_one_row():
    for vals in ([], [None, None], [7]):
        w = pf.fileindex.writer("bloom-filter", "INT", {"items": "10", "fpp": "0.1"})
        w.write_batch(pa.array(vals, type=pa.int32()))
        r = pf.fileindex.reader("bloom-filter", "INT", w.finish())
        assert r.evaluate(pf.field("x") == 7).remain == (vals == [7])


def test_sizing_matches_java_formula():
    # Java: nb = (int)(-n ln p / ln2^2); bits = nb + 8 - nb % 8; k = max(1, round(bits / n * ln 2))
    for n, p in [(1000, 0.01), (1, 0.9), (64, 0.0001), (1_000_000, 0.1)]:
        nb = int(-n * math.log(p) / (math.log(2) ** 2))
        bits = nb + 8 - nb % 8
        assert bloom_sizing(n, p) == (bits, max(1, math.floor(bits / n * math.log(2) + 0.5)))


def test_probe_memo_keeps_negative_zero_apart():
    """Probe literals are memoised across files; -0.0 == 0.0 in Python, but Java hashes
    their bits, so probing 0.0 first must not answer for -0.0 (a wrong SKIP)."""
    w = pf.fileindex.writer("bloom-filter", "DOUBLE", {"items": "100"})
    w.write_batch(pa.array([-0.0, 1.5]))
    r = pf.fileindex.reader("bloom-filter", "DOUBLE", w.finish())
    assert r.might_contain_batch([0.0]).tolist() == [False]
    assert r.might_contain_batch([-0.0]).tolist() == [True]
    assert r.might_contain_batch([1.5]).tolist() == [True]


def _edge_hashes(nbits, rng):
    """h2 = 0 makes every c equal h1: put c at multiples of nbits and one either side
    (where a quotient taken in floating point is off by one), negatives, and random hashes."""
    cs = set()
    for m in list(range(0, 40)) + [(2**31 - 1) // nbits - j for j in range(3)]:
        for d in (-1, 0, 1):
            c = m * nbits + d
            if 0 <= c < 2**31:
                cs.update((c, ~c))
    cs.update((2**31 - 1, -(2**31)))
    edge = [c & 0xFFFFFFFF for c in cs]
    rand = rng.integers(-(2**63), 2**63 - 1, 200, dtype=np.int64, endpoint=True).tolist()
    return np.array(edge, dtype=np.uint64).view(np.int64).tolist() + rand


@pytest.mark.parametrize("simd", [0, 1, 2, -1])
def test_bit_positions_every_path_equals_twin(simd):
    rng = np.random.default_rng(7)
    sizes = (
        [8, 64, 9585064, 2**30 - 8, 2**30, 2**31 - 8, 2**31]
        + (rng.integers(1, 2**27, 40) * 8).tolist()
        + rng.integers(1, 2**31, 10).tolist()
    )
    for nbits in sizes:
        hashes = _edge_hashes(nbits, rng)
        for k in (1, 7, 8):
            got = K._positions(np.array(hashes, dtype=np.int64), k, nbits, simd)
            want = [list(twin.bit_positions(h, k, nbits)) for h in hashes]
            assert got.tolist() == want, (nbits, k)


@pytest.mark.parametrize("simd", [0, 1, 2, -1])
def test_wang_hash_every_block_path_equals_twin(simd):
    """The block hash (scalar, AVX2 with its emulated arithmetic shift, AVX-512) on values
    whose shifted-in sign bits matter: negatives, the extremes, and lengths with tails."""
    rng = np.random.default_rng(11)
    edge = [-(2**63), -(2**63) + 1, -1, 0, 1, 2**63 - 1, 2**62, -(2**62)] + [-(1 << s) for s in range(64)]
    for n in (0, 1, 3, 4, 5, 8, 67):
        vals = np.array(
            edge + rng.integers(-(2**63), 2**63 - 1, n, dtype=np.int64, endpoint=True).tolist(), dtype=np.int64
        )[: len(edge) + n - (n % 3)]
        assert K._wang(vals, simd).tolist() == [twin.wang_hash(int(v)) for v in vals], n


@pytest.mark.parametrize("nbits", [32, 40, 48, 56, 64, 72, 80, 8 * 1001])
def test_add_into_small_bit_sets_equals_twin(nbits):
    """Bit sets of a few words: where the byte count is not a multiple of 4, the last
    bytes are set one by one, never through a word reaching past the end."""
    rng = np.random.default_rng(nbits)
    hashes = rng.integers(-(2**63), 2**63 - 1, 300, dtype=np.int64, endpoint=True)
    for k in (1, 3, 8):
        got = np.zeros(nbits // 8, dtype=np.uint8)
        K.add_hashes(got, k, hashes)
        want = bytearray(nbits // 8)
        twin.add(want, k, hashes.tolist())
        assert got.tobytes() == bytes(want), (nbits, k)


@pytest.mark.parametrize("nbits", [32, 40, 48, 56, 64, 72, 8 * 1001, 9585064])
def test_add_into_word_padded_buffers_equals_twin(nbits):
    """A buffer padded to whole words (as the writer allocates) with the filter's size
    given: the same bits as the twin for every k (each unrolled case and the general
    loop), and the padding is never written."""
    rng = np.random.default_rng(nbits + 1)
    hashes = rng.integers(-(2**63), 2**63 - 1, 500, dtype=np.int64, endpoint=True)
    nbytes = nbits // 8
    for k in range(1, 11):
        buf = np.zeros(-(-nbytes // 4) * 4 + 4, np.uint8)
        K.add_hashes(buf, k, hashes, nbits)
        want = bytearray(nbytes)
        twin.add(want, k, hashes.tolist())
        assert buf[:nbytes].tobytes() == bytes(want), (nbits, k)
        assert not buf[nbytes:].any(), (nbits, k)


def test_filter_size_is_checked_against_the_buffer():
    buf = np.zeros(12, np.uint8)
    for nbits in (0, 12, 104, 8 * 13):
        with pytest.raises(ValueError, match="out of range"):
            K.add_hashes(buf, 3, np.arange(4, dtype=np.int64), nbits)
    with pytest.raises(ValueError, match="hash functions"):
        K.add_longs(buf, 0, np.arange(4, dtype=np.int64))


@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 63, 64, 65, 200, 1000])
def test_add_and_probe_int64_without_nulls_equal_twin(n):
    """The no-null int64 path hashes whole blocks with the vector hash."""
    rng = np.random.default_rng(n)
    vals = np.concatenate(
        [
            rng.integers(-(2**63), 2**63 - 1, n, dtype=np.int64, endpoint=True),
            np.array([-(2**63), -1, 0, 2**63 - 1], dtype=np.int64),
        ]
    )
    bits = np.zeros(1 << 12, np.uint8)
    K.add_longs(bits, 7, vals)
    want = bytearray(len(bits))
    twin.add(want, 7, twin.hash_longs(vals.tolist()))
    assert bits.tobytes() == bytes(want)
    probes = np.concatenate([vals, rng.integers(-(2**63), 2**63 - 1, 50, dtype=np.int64)])
    assert K.test_longs(bits, 7, probes).tolist() == twin.test(want, 7, twin.hash_longs(probes.tolist()))
