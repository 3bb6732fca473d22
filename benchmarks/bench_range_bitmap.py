"""Range bitmap benchmarks (pytest-benchmark): kernel vs pure-Python twin in one run.

Data as Paimon's RangeBitmapIndexBenchmark: INT with 10% nulls, values uniform
in [0, bound) for bound = 3,000 / 300,000 / 3,000,000; plus DOUBLE uniform in
[0, 1) with 10% nulls.  Rows: PF_BENCH_ROWS (default 1,000,000); the twin runs
only when rows <= 2,000,000 (it is plain Python).

    PYTHONPATH=$PWD python -m pytest benchmarks/bench_range_bitmap.py --benchmark-only \
        --benchmark-columns=min,median,max,rounds
    PF_BENCH_ROWS=10000000 PYTHONPATH=$PWD python -m pytest benchmarks/bench_range_bitmap.py ...

Queries: a range predicate selecting about 10% of the rows (``x < bound/10``;
DOUBLE ``x < 0.1``) on a cold reader (open + answer, bytes in memory) and on
an open reader (slices loaded), top-10 and bottom-10 (strict, nulls last).
Open readers read dense slices in place from the index bytes; the first
top-k / bottom-k without a found set builds a per-256-row-block max/min code
summary (``test_cold_top10_kernel`` includes it, ``test_top10_kernel`` reuses it).
The twin of top-k is the plain slice-by-slice algorithm without that summary.
``extra_info`` records the file size and the peak traced memory of a build;
``benchmarks/sizes_range_bitmap.py`` compares the sizes with bsi and bitmap V2
(real writers) and measures the peak RSS of the 1e7-row builds.
"""

import os
import tracemalloc

import numpy as np
import pyarrow as pa
import pytest

import paimon_fast as pf
from paimon_fast._kernels import load
from paimon_fast.core.predicate import Leaf
from paimon_fast.reference import bitslice as twin

k = load("bitslice")
N = int(os.environ.get("PF_BENCH_ROWS", "1000000"))
TWIN = N <= 2_000_000
SHAPES = ["int3000", "int300000", "int3000000", "double"]


def make(shape, n=N, seed=7):
    rng = np.random.default_rng(seed)
    nulls = rng.random(n) < 0.1
    if shape == "double":
        return "DOUBLE", pa.array(rng.random(n), mask=nulls), 0.1
    bound = int(shape[3:])
    return "INT", pa.array(rng.integers(0, bound, n, dtype=np.int32), mask=nulls), bound // 10


_CACHE = {}


def built(shape):
    if shape not in _CACHE:
        t, arr, lit = make(shape)
        w = pf.fileindex.writer("range-bitmap", t, {})
        w.write_batch(arr)
        _CACHE[shape] = (t, arr, lit, w.finish())
    return _CACHE[shape]


@pytest.mark.parametrize("shape", SHAPES)
def test_build_kernel(benchmark, shape):
    t, arr, _, _ = built(shape)

    def run():
        w = pf.fileindex.writer("range-bitmap", t, {})
        w.write_batch(arr)
        return w.finish()

    data = benchmark.pedantic(run, rounds=3, iterations=1, warmup_rounds=0)
    tracemalloc.start()
    run()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    benchmark.extra_info.update(rows=N, file_bytes=len(data), peak_traced_mb=round(peak / 2**20, 1))


@pytest.mark.benchmark(group="range build codes+slices")
@pytest.mark.skipif(not TWIN, reason="twin only at <= 2e6 rows")
@pytest.mark.parametrize("shape", SHAPES[:1])
def test_build_codes_slices_twin(benchmark, shape):
    """The twin of the build's inner loops (dictionary codes + slice building), plain Python."""
    t, arr, _, _ = built(shape)
    keys = np.asarray(arr.fill_null(0), dtype=np.int64)
    valid = (~np.asarray(arr.is_null())).view(np.uint8)

    def run():
        uniq, codes = twin.dense_codes(keys, valid, 0, 0)
        return twin.build_slices(codes, (codes >= 0).view(np.uint8), max(1, (len(uniq) - 1).bit_length()))

    benchmark.pedantic(run, rounds=1, iterations=1)


@pytest.mark.benchmark(group="range build codes+slices")
@pytest.mark.parametrize("shape", SHAPES[:1])
def test_build_codes_slices_kernel(benchmark, shape):
    t, arr, _, _ = built(shape)
    keys = np.asarray(arr.fill_null(0), dtype=np.int64)
    valid = np.ascontiguousarray((~np.asarray(arr.is_null())).view(np.uint8))

    def run():
        uniq, codes = k.dense_codes(keys, valid, int(keys.min()), int(keys.max()))
        return k.build_slices(
            codes, np.ascontiguousarray((codes >= 0).view(np.uint8)), max(1, (len(uniq) - 1).bit_length())
        )

    benchmark(run)


def _range_leaf(lit):
    return Leaf("less_than", "x", (lit,))


@pytest.mark.parametrize("shape", SHAPES)
def test_cold_open_range_kernel(benchmark, shape):
    t, _, lit, data = built(shape)
    leaf = _range_leaf(lit)

    def run():
        return pf.fileindex.reader("range-bitmap", t, data).evaluate(leaf).bitmap

    bm = benchmark(run)
    benchmark.extra_info.update(rows=N, result_rows=len(bm))


def _loaded(shape):
    t, _, lit, data = built(shape)
    r = pf.fileindex.reader("range-bitmap", t, data)
    r.slices
    return r, lit


@pytest.mark.benchmark(group="range open range")
@pytest.mark.parametrize("shape", SHAPES)
def test_open_range_kernel(benchmark, shape):
    r, lit = _loaded(shape)
    leaf = _range_leaf(lit)
    bm = benchmark(lambda: r.evaluate(leaf).bitmap)
    benchmark.extra_info.update(rows=N, result_rows=len(bm))


@pytest.mark.benchmark(group="range open range")
@pytest.mark.skipif(not TWIN, reason="twin only at <= 2e6 rows")
@pytest.mark.parametrize("shape", SHAPES)
def test_open_range_twin(benchmark, shape):
    r, lit = _loaded(shape)
    _, code = r.dictionary.find(r.codec.literal(lit))
    slices, ebm = r.slices, r.ebm
    got = benchmark.pedantic(lambda: twin.compare(slices, ebm, "lt", code), rounds=3, iterations=1)
    assert np.array_equal(got, k.compare(slices, ebm, "lt", code))


@pytest.mark.benchmark(group="range top10")
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("direction", ["top", "bottom"])
def test_top10_kernel(benchmark, shape, direction):
    r, _ = _loaded(shape)
    fn = r.top_k if direction == "top" else r.bottom_k
    bm = benchmark(lambda: fn(10))
    assert len(bm) == 10


@pytest.mark.benchmark(group="range top10")
@pytest.mark.skipif(not TWIN, reason="twin only at <= 2e6 rows")
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("direction", ["top", "bottom"])
def test_top10_twin(benchmark, shape, direction):
    r, _ = _loaded(shape)
    largest = direction == "top"
    got = benchmark.pedantic(lambda: twin.topk(r.slices, r.ebm, 10, largest, True), rounds=3, iterations=1)
    assert np.array_equal(got, k.topk(r.slices, r.ebm, 10, largest, True))


@pytest.mark.parametrize("shape", SHAPES)
def test_cold_top10_kernel(benchmark, shape):
    """Open + first top-10: includes loading the slices and the per-block summary."""
    t, _, _, data = built(shape)
    bm = benchmark.pedantic(lambda: pf.fileindex.reader("range-bitmap", t, data).top_k(10), rounds=5, iterations=1)
    assert len(bm) == 10
