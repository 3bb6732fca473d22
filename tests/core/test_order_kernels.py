"""The clustering kernels (paimon_fast/_kernels/order.pyx) agree with their twins
(paimon_fast/reference/order.py) on random inputs (hypothesis): the stable radix argsort of
multi-word keys, bit interleaving, the Hilbert index, the first bytes of strings; and the keys of
paimon_fast.core.order are Paimon's (values worked out by hand from ZOrderByteUtils,
HilbertIndexer and ConvertBinaryUtil's rules)."""

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from paimon_fast._kernels import load
from paimon_fast.errors import OptionError, UnsupportedTypeError
from paimon_fast.reference import order as twin
from paimon_fast.core import order

k = load("order")
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
U64 = st.integers(0, (1 << 64) - 1)


@st.composite
def key_words(draw, max_rows=200, max_words=4):
    nw = draw(st.integers(1, max_words))
    n = draw(st.integers(0, max_rows))
    kind = draw(st.sampled_from(["wide", "few", "top", "equal"]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    if kind == "wide":
        w = rng.integers(0, 1 << 64, (nw, n), dtype=np.uint64, endpoint=False)
    elif kind == "few":  # many ties: stability decides
        w = rng.integers(0, 3, (nw, n)).astype(np.uint64)
    elif kind == "top":  # only the high digits differ
        w = rng.integers(0, 4, (nw, n)).astype(np.uint64) << np.uint64(61)
    else:
        w = np.full((nw, n), rng.integers(0, 1 << 63), dtype=np.uint64)
    return w


@SETTINGS
@given(key_words())
def test_radix_argsort_is_the_stable_sort(w):
    got = k.radix_argsort(w)
    assert got.tolist() == twin.radix_argsort(w.tolist())


@SETTINGS
@given(key_words(max_words=5))
def test_interleave(w):
    got = k.interleave(w)
    assert got.tolist() == twin.interleave(w.tolist())


@SETTINGS
@given(key_words(max_rows=60, max_words=4))
def test_hilbert(w):
    got = k.hilbert(w)
    assert got.tolist() == twin.hilbert(w.tolist())


def test_hilbert_is_a_curve():
    """Consecutive positions on the curve are neighbouring cells (2 and 3 dimensions, small
    coordinates in the curve's last bits): the index is a Hilbert curve, not only a bijection."""
    for d, side in ((2, 16), (3, 6)):
        grid = np.stack(np.meshgrid(*[np.arange(side)] * d, indexing="ij")).reshape(d, -1).astype(np.uint64)
        idx = k.hilbert(grid)
        order_ = k.radix_argsort(idx)
        pts = grid[:, order_].astype(np.int64)
        steps = np.abs(np.diff(pts, axis=1)).sum(axis=0)
        # within one 2^k sub-cube every step moves by one cell; the side is not a power of two
        # for d = 3, so jumps happen only where the curve leaves the sampled cube
        if d == 2:
            assert (steps == 1).all()
        else:
            assert (steps == 1).mean() > 0.9
        assert len(np.unique(idx, axis=1)[0]) == grid.shape[1]


@SETTINGS
@given(st.lists(st.one_of(st.none(), st.binary(max_size=12)), max_size=80), st.integers(0, 8), st.booleans())
def test_first_bytes(values, width, right):
    arr = pa.array(values, pa.binary())
    offsets = np.frombuffer(arr.buffers()[1], np.int32)[: len(arr) + 1].astype(np.int64)
    data = arr.buffers()[2] if arr.buffers()[2] is not None else b""
    valid = None if arr.null_count == 0 else np.asarray(arr.is_valid()).astype(np.uint8)
    got = k.first_bytes(offsets, data if len(data) else b"\0", valid, len(arr), width, right, np.uint64(7))
    assert got.tolist() == twin.first_bytes(values, width, right, 7)


def test_first_bytes_refuses_offsets_outside_the_data():
    with pytest.raises(ValueError):
        k.first_bytes(np.array([0, 9], np.int64), b"abc", None, 1, 8, False, np.uint64(0))
    with pytest.raises(ValueError):
        k.first_bytes(np.array([2, 1], np.int64), b"abc", None, 1, 8, False, np.uint64(0))


def test_empty_and_one_row():
    assert k.radix_argsort(np.zeros((1, 0), np.uint64)).tolist() == []
    assert k.radix_argsort(np.array([[5]], np.uint64)).tolist() == [0]
    assert k.interleave(np.zeros((2, 0), np.uint64)).shape == (2, 0)
    assert k.hilbert(np.array([[1], [2]], np.uint64)).tolist() == twin.hilbert([[1], [2]])


# ---------------------------------------------------------------- Paimon's keys


def _be(word) -> bytes:
    return int(word).to_bytes(8, "big")


def test_z_words_are_paimons_ordered_bytes():
    # ints: the sign bit of the 64-bit value flipped (intToOrderedBytes / longToOrderedBytes)
    assert _be(order.z_word(pa.array([-1, 0, 5, None], pa.int32()))[0]) == bytes.fromhex("7fffffffffffffff")
    assert order.z_word(pa.array([-1, 0, 5, None], pa.int32())).tolist() == [
        (1 << 63) - 1,
        1 << 63,
        (1 << 63) + 5,
        0,  # a null: NULL_BYTES
    ]
    # doubles: bits ^ ((bits >> 31) | MIN_VALUE), with Java's arithmetic shift by 31 of the long
    bits = np.array([1.5], np.float64).view(np.int64)[0]
    want = np.int64(bits ^ ((bits >> 31) | np.int64(-(1 << 63)))).view(np.uint64)
    assert order.z_word(pa.array([1.5]))[0] == want
    neg = np.array([-2.0], np.float64).view(np.int64)[0]
    assert order.z_word(pa.array([-2.0]))[0] == np.int64(neg ^ ((neg >> 31) | np.int64(-(1 << 63)))).view(np.uint64)
    # strings: the first 8 bytes, zero-filled; booleans 0x81 / 0
    assert _be(order.z_word(pa.array(["ab", "abcdefghij"]))[0]) == b"ab" + b"\0" * 6
    assert _be(order.z_word(pa.array(["ab", "abcdefghij"]))[1]) == b"abcdefgh"
    assert order.z_word(pa.array([True, False])).tolist() == [0x81 << 56, 0]
    # decimals: the unscaled value's shortest two's complement, left-aligned
    import decimal

    d = pa.array([decimal.Decimal("1.23"), decimal.Decimal("-1.00")], pa.decimal128(5, 2))
    assert _be(order.z_word(d)[0]) == bytes([123]) + b"\0" * 7
    assert _be(order.z_word(d)[1]) == (-100).to_bytes(1, "big", signed=True) + b"\0" * 7


def test_h_words_are_paimons_longs():
    assert order.h_word(pa.array([-1, 7, None], pa.int64())).tolist() == [(1 << 64) - 1, 7, (1 << 63) - 1]
    assert order.h_word(pa.array([-1], pa.int8())).tolist() == [255]  # convertBytesToLong of one byte
    assert order.h_word(pa.array(["ab"])).tolist() == [0x6162]  # shorter strings right-aligned
    assert order.h_word(pa.array(["abcdefghij"])).tolist() == [int.from_bytes(b"abcdefgh", "big")]
    assert order.h_word(pa.array([float("nan")])).tolist() == [0x7FF8000000000000]
    import decimal

    assert order.h_word(pa.array([decimal.Decimal("-7.9")], pa.decimal128(3, 1))).tolist() == [(1 << 64) - 7]


def test_zorder_key_of_two_columns_interleaves_their_bytes():
    t = pa.table({"a": pa.array([3], pa.int64()), "b": pa.array([-3], pa.int64())})
    words = order.cluster_keys(t, ["a", "b"], "zorder")
    a = (3 ^ (1 << 63)) & ((1 << 64) - 1)
    b = (-3 & ((1 << 64) - 1)) ^ (1 << 63)
    assert [int(w[0]) for w in words] == twin.interleave_row([a, b])


def test_sort_permutation_orders():
    t = pa.table({"x": pa.array([3, None, 1, 2, 1]), "s": pa.array(["b", "a", None, "c", "a"])})
    assert order.sort_permutation(t, ["x"], "order").tolist() == [1, 2, 4, 3, 0]  # nulls first, stable
    assert order.sort_permutation(t, ["s", "x"], "order").tolist() == [2, 1, 4, 0, 3]  # ("a", None) first
    f = pa.table({"y": pa.array([0.5, -1.0, float("nan"), -0.0, 2.0])})
    assert order.sort_permutation(f, ["y"], "order").tolist() == [1, 3, 0, 4, 2]  # NaN last
    z = order.sort_permutation(t.drop_null(), ["x", "s"], "zorder")
    assert sorted(z.tolist()) == list(range(3))


def test_strategy_errors():
    t = pa.table({"x": [1, 2], "m": pa.array([{"a": 1}, {"a": 2}])})
    with pytest.raises(OptionError, match="one of"):
        order.sort_permutation(t, ["x"], "spiral")
    with pytest.raises(OptionError, match="two columns"):
        order.sort_permutation(t, ["x"], "hilbert")
    with pytest.raises(UnsupportedTypeError, match="'m'"):
        order.sort_permutation(t, ["m"], "zorder")


def _mixed_table(rows: int, seed: int) -> pa.Table:
    import decimal

    rng = np.random.default_rng(seed)
    pick = rng.integers(0, 10, rows)
    specials = [float("nan"), -0.0, 0.0, float("inf"), -float("inf"), -1.5]
    return pa.table(
        {
            # strings sharing 8-byte prefixes (the key keeps only those), with NULs and nulls
            "s": [None if p == 0 else "prefix\0" + "ab"[p % 2] * int(rng.integers(0, 4)) for p in pick],
            "x": [None if p == 1 else specials[p % 6] if p < 5 else float(rng.uniform(-5, 5)) for p in pick],
            "i": rng.integers(-3, 4, rows).tolist(),
            "d": pa.array(
                [None if p == 2 else decimal.Decimal(int(rng.integers(-999, 999))) / 100 for p in pick],
                pa.decimal128(6, 2),
            ),
        }
    )


@pytest.mark.parametrize(
    "by,strategy",
    [
        (["s", "x"], "order"),
        (["x", "i"], "order"),
        (["i", "x"], "order"),
        (["d", "i"], "order"),
        (["x", "i"], "zorder"),
        (["s", "i"], "hilbert"),
    ],
)
def test_range_keys_never_decrease_along_the_order(by, strategy):
    # the Spark optimize cuts the order by these keys: every range must be contiguous in it
    t = _mixed_table(3000, 5)
    keys = order.range_keys(t, by, strategy)
    ordered = keys[order.sort_permutation(t, by, strategy)]
    assert (ordered[1:] >= ordered[:-1]).all()
    samples = [(order.quantile_sample(keys[a : a + 1000], 60), 1000) for a in (0, 1000, 2000)]
    bounds = order.range_bounds(samples, 6)
    assert 1 <= len(bounds) <= 5 and (bounds[1:] > bounds[:-1]).all()
    dest = np.searchsorted(bounds, ordered, side="right")
    assert (np.diff(dest) >= 0).all()


def test_range_bounds_cut_equal_rows():
    keys = order.range_keys(pa.table({"v": np.arange(100_000)[::-1].copy()}), ["v"])
    samples = [(order.quantile_sample(keys[a : a + 25_000], 200), 25_000) for a in range(0, 100_000, 25_000)]
    dest = np.searchsorted(order.range_bounds(samples, 8), keys, side="right")
    sizes = np.bincount(dest)
    assert len(sizes) == 8 and sizes.min() > 0.95 * 12_500 and sizes.max() < 1.05 * 12_500
    assert len(order.range_bounds([(keys[:1].repeat(5), 5)], 4)) == 0  # one key: nothing to cut
    assert len(order.range_bounds([], 4)) == 0 and len(order.quantile_sample(keys[:0], 3)) == 0


@pytest.mark.parametrize("typ", [pa.float64(), pa.float32()])
def test_float_order_words_sort_as_spark_orders(typ):
    """Float words: ascending words = the numbers ascending, -0.0 before 0.0, every NaN (any
    payload, either sign) after +inf and equal to one another; a null's word is 0.0's."""
    import math

    rng = np.random.default_rng(7)
    nans = np.array([0x7FF8000000000000, 0xFFF8000000000000, 0x7FF0000000000001, 0xFFF0000000000123], np.uint64)
    specials = [-0.0, 0.0, math.inf, -math.inf, 5e-324, -5e-324, 1.5, -1.5, 1e300, -1e300]
    vals = np.concatenate([nans.view(np.float64), specials, rng.normal(size=300), rng.integers(-3, 3, 50)])
    mask = rng.random(len(vals)) < 0.1
    arr = pa.array(vals, pa.float64(), mask=mask).cast(typ)
    words = order._order_words(arr)
    assert len(words) == 2 and np.array_equal(words[0], (~mask).astype(np.uint64))  # nulls first
    w = order._float_words(arr)
    py = arr.to_pylist()

    def rank(v):
        v = 0.0 if v is None else v
        return (1, 0.0, 0) if math.isnan(v) else (0, v, math.copysign(1.0, v) > 0)

    for i in range(len(py)):
        for j in (0, 7, 11, 13, 200, len(py) - 1):
            assert (w[i] < w[j]) == (rank(py[i]) < rank(py[j])), (py[i], py[j])
            assert (w[i] == w[j]) == (rank(py[i]) == rank(py[j])), (py[i], py[j])


@SETTINGS
@given(
    st.lists(st.one_of(st.none(), st.binary(max_size=40)), max_size=60),
    st.lists(st.integers(0, 10**6), max_size=80),
    st.integers(0, 5),
    st.booleans(),
)
def test_take_bytes_kernel_equals_twin(values, picks, cut, large):
    arr = pa.array(values, pa.large_binary() if large else pa.binary()).slice(min(cut, len(values)))
    n = len(arr)
    idx = np.array([p % n for p in picks] if n else [], np.int64)
    b = arr.buffers()
    offsets = np.frombuffer(b[1], np.int64 if large else np.int32)[arr.offset : arr.offset + n + 1]
    data = np.frombuffer(b[2], np.uint8) if b[2] is not None else np.zeros(0, np.uint8)
    new_off, new_data = k.take_bytes(offsets, data, idx)
    assert new_off.dtype == offsets.dtype and new_off[0] == 0 and len(new_off) == len(idx) + 1
    got = [bytes(new_data[new_off[i] : new_off[i + 1]]) for i in range(len(idx))]
    plain = [v or b"" for v in arr.to_pylist()]  # (a null's bytes: its slot's, empty here)
    assert got == twin.take_bytes(plain, idx.tolist())


def test_take_bytes_refuses_bad_positions_and_offsets():
    offsets = np.array([0, 2, 5], np.int32)
    data = np.frombuffer(b"abcde", np.uint8)
    for bad in (2, -1, 99):
        with pytest.raises(IndexError, match="outside 2 values"):
            k.take_bytes(offsets, data, np.array([0, bad], np.int64))
    with pytest.raises(ValueError, match="leave the data"):
        k.take_bytes(np.array([0, 2, 9], np.int32), data, np.array([1], np.int64))
    with pytest.raises(ValueError, match="leave the data"):
        k.take_bytes(np.array([0, 3, 2], np.int32), data, np.array([1], np.int64))
    off, got = k.take_bytes(offsets, data, np.zeros(0, np.int64))
    assert off.tolist() == [0] and len(got) == 0


def test_table_take_equals_arrow_take():
    rng = np.random.default_rng(3)
    n = 5000
    words = ["", "a", "bb", "ccc" * 7, "δδ", None]
    t = pa.table(
        {
            "s": pa.array([words[i] for i in rng.integers(0, 6, n)]),
            "ls": pa.array([words[i] for i in rng.integers(0, 5, n)], pa.large_string()),
            "b": pa.array([None if i % 7 == 0 else bytes([i % 251]) * (i % 9) for i in range(n)], pa.binary()),
            "x": pa.array(rng.normal(size=n)),
            "d": pa.array([words[i] for i in rng.integers(0, 5, n)]).dictionary_encode(),
        }
    ).slice(17, n - 40)  # sliced columns: offsets and validity start mid-buffer
    for order_ in (rng.permutation(t.num_rows), rng.integers(0, t.num_rows, 300), np.zeros(0, np.int64)):
        got = order.take(t, order_)
        want = t.take(pa.array(order_, pa.int64()))
        assert got.schema == want.schema and got.equals(want)
        for c in ("s", "ls", "b"):
            assert got.column(c).null_count == want.column(c).null_count
    chunked = pa.Table.from_batches(t.to_batches(max_chunksize=1000))
    assert order.take(chunked, [5, 1, 4000]).equals(t.take([5, 1, 4000]))


@pytest.mark.parametrize("placement, want", [("at_end", [2, 0, 4, 1, 3]), ("at_start", [1, 3, 2, 0, 4])])
def test_sort_indices_places_nulls_as_asked_without_a_warning(placement, want):
    """``core.types.sort_indices``: one null placement for every key, in the form this pyarrow takes
    (pyarrow 25+ warns at the table-wide option), so a string cluster column sorts silently."""
    import warnings

    from paimon_fast.core.types import sort_indices

    t = pa.table({"s": ["b", None, "a", None, "c"], "n": [2, 1, None, 0, 3]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert sort_indices(t, [("s", "ascending"), ("n", "descending")], placement).to_pylist() == want
        perm = order.sort_permutation(t, ["s"])  # (a string column: Arrow's sort, nulls first)
    assert perm.tolist() == [1, 3, 2, 0, 4]
