"""Java-exact roaring serialization: kernel == twin, CRoaring agrees on sets
built by adding values, 64-bit layout, and validation of corrupt bytes."""

import struct

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from pyroaring import BitMap, BitMap64

from paimon_fast.core import roaring
from paimon_fast.errors import IndexFormatError
from paimon_fast.reference import roaring as twin


def _interesting_sets():
    # dense runs, sparse values, > 4096 per container, boundaries of containers and of 2^32
    small = st.integers(0, 200)
    values = st.one_of(
        st.lists(st.integers(0, 2**32 - 1), max_size=300),
        st.lists(st.integers(65530, 65550), max_size=40),
        st.builds(lambda a, n: list(range(a, a + n)), st.integers(0, 2**32 - 10000), st.integers(0, 9000)),
        st.builds(
            lambda a, n, s: list(range(a, a + n * s, s)), st.integers(0, 2**20), st.integers(0, 5000), st.integers(1, 3)
        ),
        st.lists(small, max_size=200),
    )
    return values


@settings(max_examples=300, deadline=None)
@given(_interesting_sets())
def test_kernel_equals_twin_and_roundtrips(values):
    data = roaring.serialize32(np.array(values, dtype=np.int64))
    assert data == twin.serialize(values)
    assert twin.deserialize(data) == sorted(set(values))
    bm = roaring.deserialize32(data)
    assert bm == BitMap(values)
    assert roaring.check32(data) == (len(data), len(set(values)))


@settings(max_examples=200, deadline=None)
@given(_interesting_sets())
def test_croaring_agrees_on_sets_built_by_adding(values):
    # CRoaring applies the same container/run rules to a set built value by value
    bm = BitMap()
    bm.update(values)
    bm.run_optimize()
    assert roaring.serialize32(bm) == bm.serialize()


@pytest.mark.parametrize("start", [1, 65536 - 70, 2**32 - 65536 * 2 - 3])
@pytest.mark.parametrize("length", [64, 65, 200, 4097, 65536, 65536 * 2 + 7])
def test_long_runs_and_one_gap_equal_the_twin(start, length):
    # a container of more than 64 values that is one unbroken run is measured without visiting
    # its values: unbroken, and broken by one missing value at the places a shortcut could miss
    run = list(range(start, min(start + length, 2**32)))
    sets = [run]
    for gap in {1, 63, 64, 65, len(run) // 2, len(run) - 2}:
        if 0 < gap < len(run) - 1:
            sets.append(run[:gap] + run[gap + 1 :])
    sets.append(run[:-1] + [run[-1] + 2] if run[-1] + 2 < 2**32 else run[1:])
    for values in sets:
        data = roaring.serialize32(np.array(values, dtype=np.int64))
        assert data == twin.serialize(values), (start, length, len(values))
        assert roaring.deserialize32(data) == BitMap(values)
    v64 = np.array(run, dtype=np.uint64) + np.uint64(3 << 32)
    assert roaring.serialize64(v64) == b"".join([struct.pack("<QI", 1, 3), twin.serialize(run)])


def test_run_rule_tie_stays_array():
    # {1,2,3}: 2*card == 2 + 4*runs, Java keeps the array container
    data = roaring.serialize32([1, 2, 3])
    assert data == bytes.fromhex("3a300000010000000000020010000000010002000300")
    assert roaring.serialize32([]) == roaring.EMPTY32


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 2**64 - 1), max_size=200))
def test_serialize64_roundtrip(values):
    data = roaring.serialize64(np.array(values, dtype=np.uint64))
    assert roaring.deserialize64(data) == BitMap64(values)
    (n,) = struct.unpack_from("<Q", data)
    assert n == len({v >> 32 for v in values})


def test_serialize64_java_longs_sort_unsigned():
    data = roaring.serialize64(np.array([-1, 5, 2**40], dtype=np.int64))
    bm = roaring.deserialize64(data)
    assert list(bm) == [5, 2**40, 2**64 - 1]


@pytest.mark.parametrize(
    "bad,what",
    [
        (b"", "truncated"),
        (b"\x3a\x30\x00\x00", "truncated"),
        (b"\x00\x00\x00\x00\x00\x00\x00\x00", "cookie"),
        (struct.pack("<II", 12346, 70000), "65536"),
        (struct.pack("<II", 12346, 1) + struct.pack("<HH", 0, 9), "truncated"),
    ],
)
def test_check_rejects_corrupt(bad, what):
    with pytest.raises(IndexFormatError, match=what):
        roaring.deserialize32(bad)


def test_check_rejects_unsorted_array_and_bad_runs():
    good = roaring.serialize32([1, 5, 9])
    broken = bytearray(good)
    broken[-2:] = struct.pack("<H", 2)  # last value 9 -> 2: not increasing
    with pytest.raises(IndexFormatError, match="increasing"):
        roaring.deserialize32(bytes(broken))
    run = bytearray(roaring.serialize32(list(range(100, 200))))
    run[-2:] = struct.pack("<H", 0xFFF0)  # run length past 65535
    with pytest.raises(IndexFormatError, match="run"):
        roaring.deserialize32(bytes(run))


def test_check_rejects_adjacent_runs():
    # two runs [10, 12] and [13, 15] should have been one: CRoaring rejects them, so must we
    data = struct.pack("<IB", 12347, 1) + struct.pack("<HH", 0, 5) + struct.pack("<HHHHH", 2, 10, 2, 13, 2)
    with pytest.raises(IndexFormatError, match="adjacent"):
        roaring.deserialize32(data)


def test_check64_rejects_huge_bucket_count():
    with pytest.raises(IndexFormatError, match="buckets"):
        roaring.deserialize64(struct.pack("<Q", 2**40) + b"\x00" * 16)


def test_mutations_only_raise_index_format_error():
    rng = np.random.default_rng(7)
    seeds = [
        roaring.serialize32(v)
        for v in ([1, 2, 3, 1000], list(range(0, 70000, 3)), list(range(5, 9000)), [0, 65535, 65536, 2**32 - 1])
    ]
    for _ in range(3000):
        b = bytearray(seeds[rng.integers(len(seeds))])
        for _ in range(rng.integers(1, 4)):
            b[rng.integers(len(b))] = rng.integers(256)
        if rng.random() < 0.3:
            b = b[: rng.integers(len(b) + 1)]
        try:
            bm = roaring.deserialize32(bytes(b))
        except IndexFormatError:
            continue
        assert isinstance(bm, BitMap)


@settings(max_examples=150, deadline=None)
@given(st.lists(_interesting_sets(), max_size=12), st.binary(max_size=13), st.binary(max_size=9))
def test_groups_b64_kernel_equals_python_base64_of_the_twin(groups, prefix, empty):
    """Every group's text is the standard Base64 (padding included) of ``prefix`` + the twin's
    bytes of its bitmap, or of ``empty`` for a group without values; offsets delimit them."""
    import base64

    gs = [np.array(sorted(set(g)), dtype=np.uint32) for g in groups]
    pos = np.concatenate(gs) if gs else np.zeros(0, np.uint32)
    bounds = np.concatenate([[0], np.cumsum([len(g) for g in gs])]).astype(np.int64)
    off, data = roaring.serialize_groups_b64(pos, bounds, prefix, empty)
    assert off.tolist()[0] == 0 and off.tolist()[-1] == len(data) and len(off) == len(gs) + 1
    want = [base64.b64encode(prefix + twin.serialize(g.tolist()) if len(g) else empty) for g in gs]
    assert [data[a:b] for a, b in zip(off.tolist(), off.tolist()[1:])] == want


def test_groups_b64_all_empty_with_a_longer_prefix():
    """Only empty groups and a prefix longer than the empty text: the kernel's scratch buffer
    still takes the prefix (it overflowed by the difference; the sanitizer job caught it)."""
    import base64

    off, data = roaring.serialize_groups_b64(np.zeros(0, np.uint32), np.zeros(4, np.int64), b"p" * 40, b"e")
    assert off.tolist() == [0, 4, 8, 12] and data == base64.b64encode(b"e") * 3


def test_groups_b64_rejects_bad_groups():
    v = np.array([1, 5, 9], np.uint32)
    for bounds in ([], [0, 4], [-1, 3], [0, 2, 1]):
        with pytest.raises(ValueError):
            roaring.serialize_groups_b64(v, np.array(bounds, np.int64), b"", b"")
    with pytest.raises(ValueError, match="not strictly increasing"):
        roaring.serialize_groups_b64(np.array([3, 3], np.uint32), np.array([0, 2], np.int64), b"", b"")
