"""Key ranges of the sorted global-index build on Spark (``tables.globalindex_spark``): the
bounds picked from weighted samples and the range of every row, against plain-Python
oracles over the keys in Java's order (no Spark needed)."""

import decimal

import numpy as np
import pyarrow as pa
import pytest

from paimon_fast.tables import globalindex_spark as sb
from paimon_fast.globalindex.keys import KeyCodec


CASES = [
    (
        "STRING",
        lambda rng, n: [
            None if rng.random() < 0.1 else f"k{int(rng.integers(0, 40)):03d}é"[: rng.integers(1, 6)] for _ in range(n)
        ],
        pa.string(),
    ),
    ("INT", lambda rng, n: [None if rng.random() < 0.1 else int(rng.integers(-50, 50)) for _ in range(n)], pa.int32()),
    (
        "DOUBLE",
        lambda rng, n: [
            None if rng.random() < 0.1 else float(rng.choice([-2.5, -0.0, 0.0, 1.5, 7.25, 1e300])) for _ in range(n)
        ],
        pa.float64(),
    ),
    (
        "TIMESTAMP(9)",
        lambda rng, n: [
            None if rng.random() < 0.1 else int(rng.integers(0, 3)) * 1_000_000 + int(rng.integers(0, 4))
            for _ in range(n)
        ],
        pa.timestamp("ns"),
    ),
    (
        "DECIMAL(38, 2)",
        lambda rng, n: [
            None
            if rng.random() < 0.1
            else decimal.Decimal(int(rng.choice([-1, 1])) * int(rng.integers(0, 3)) * 2**64 + int(rng.integers(0, 5)))
            / 100
            for _ in range(n)
        ],
        pa.decimal128(38, 2),
    ),
]


@pytest.mark.parametrize("dtype,gen,atype", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_range_ids_match_the_order_of_the_values(dtype, gen, atype, seed):
    rng = np.random.default_rng(seed)
    values = gen(rng, 400)
    arr = pa.array(values, atype)
    codec = KeyCodec(dtype)
    keys = sb._order_keys(codec, arr)
    # the order keys sort like the values (for DOUBLE, Java's order puts -0.0 before 0.0)
    nonnull = [i for i, v in enumerate(values) if v is not None]
    by_key = [values[i] for i in sorted(nonnull, key=lambda i: keys[i])]
    assert by_key == sorted(values[i] for i in nonnull)
    if dtype == "DOUBLE":
        zeros = [str(v) for v in by_key if v == 0]
        assert zeros == sorted(zeros, key=lambda z: z != "-0.0")
    assert [k is None for k in keys] == [v is None for v in values]
    # bounds drawn from the keys themselves, sometimes with the null key first
    for trial in range(4):
        picks = sorted({keys[i] for i in rng.choice(nonnull, size=int(rng.integers(1, 6)))})
        bounds = ([None] if trial % 2 else []) + picks
        got = sb._range_ids(codec, arr, bounds).tolist()
        want = []
        for i, k in enumerate(keys):
            want.append(0 if k is None else sum(1 for b in bounds if b is None or b < k))
        assert got == want, (dtype, bounds)


def test_range_ids_rank_equal_keys_with_their_bound():
    codec = KeyCodec("STRING")
    arr = pa.array(["b", "a", "c", None, "b", "d"])
    assert sb._range_ids(codec, arr, [b"b"]).tolist() == [0, 0, 1, 0, 0, 1]
    assert sb._range_ids(codec, arr, [None, b"b", b"c"]).tolist() == [1, 1, 2, 0, 1, 3]
    assert sb._range_ids(codec, arr, []).tolist() == [0] * 6
    for empty in (pa.array([None, None], pa.string()), pa.array([], pa.string())):  # no key at all
        assert sb._range_ids(codec, empty, [b"b"]).tolist() == [0] * len(empty)
    assert sb._range_ids(KeyCodec("INT"), pa.array([None, None], pa.int32()), [(3, 0)]).tolist() == [0, 0]


def test_bounds_cut_equal_weights_and_never_repeat_a_key():
    # 1,000 samples of 10 keys, weights 1: 4 ranges cut at the quartiles
    samples = [(bytes([48 + i % 10]), 1.0) for i in range(1000)]
    assert sb._bounds(samples, 4) == [b"2", b"4", b"7"]
    # one key holds most of the weight: it ends one range and is not repeated
    samples = [(b"a", 1.0)] * 5 + [(b"m", 1.0)] * 90 + [(b"z", 1.0)] * 5
    assert sb._bounds(samples, 4) == [b"m", b"z"]
    # weights count, not sample counts; nulls sort first
    samples = [(None, 60.0), ((5, 0), 10.0), ((7, 0), 10.0), ((9, 0), 20.0)]
    assert sb._bounds(samples, 2) == [None]
    assert sb._bounds(samples, 5) == [None, (5, 0), (7, 0), (9, 0)]  # one step per bound, as Spark
    assert sb._bounds([], 4) == []
    assert sb._bounds(samples, 1) == []


def test_pack_balances_files_into_tasks():
    jobs = [(i, f"f{i}", 0, 10) for i in range(7)]
    sizes = [70, 10, 10, 10, 30, 30, 40]
    tasks = sb._pack(jobs, sizes, 2)
    assert sorted(j for t in tasks for j in t) == sorted(jobs)
    assert len(tasks) == 4
    loads = sorted(sum(sizes[j[0]] for j in t) for t in tasks)
    assert loads == [40, 40, 50, 70]  # largest first into the lightest task
    assert sb._pack(jobs[:1], sizes[:1], 8) == [[jobs[0]]]
