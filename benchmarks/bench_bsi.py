"""BSI file index benchmarks (pytest-benchmark): kernel vs pure-Python twin in one run.

INT with 10% nulls, uniform in [0, bound) for bound = 3,000 / 300,000 / 3,000,000
(PF_BENCH_ROWS rows, default 1,000,000): build, cold open + range predicate
(~10% of rows) and the same predicate with the index open.

    PYTHONPATH=$PWD python -m pytest benchmarks/bench_bsi.py --benchmark-only
"""

import os

import numpy as np
import pyarrow as pa
import pytest

import paimon_fast as pf
from paimon_fast._kernels import load
from paimon_fast.core.predicate import Leaf
from paimon_fast.reference import bitslice as twin

k = load("bitslice")
N = int(os.environ.get("PF_BENCH_ROWS", "1000000"))
BOUNDS = [3000, 300000, 3000000]
_CACHE = {}


def built(bound):
    if bound not in _CACHE:
        rng = np.random.default_rng(11)
        arr = pa.array(rng.integers(0, bound, N, dtype=np.int32), mask=rng.random(N) < 0.1)
        w = pf.fileindex.writer("bsi", "INT", {})
        w.write_batch(arr)
        _CACHE[bound] = (arr, w.finish())
    return _CACHE[bound]


@pytest.mark.benchmark(group="bsi build")
@pytest.mark.parametrize("bound", BOUNDS)
def test_build_kernel(benchmark, bound):
    arr, _ = built(bound)

    def run():
        w = pf.fileindex.writer("bsi", "INT", {})
        w.write_batch(arr)
        return w.finish()

    data = benchmark.pedantic(run, rounds=5, iterations=1)
    benchmark.extra_info.update(rows=N, file_bytes=len(data))


@pytest.mark.skipif(N > 1_000_000, reason="twin only at <= 1e6 rows")
@pytest.mark.benchmark(group="bsi build")
@pytest.mark.parametrize("bound", BOUNDS[:1])
def test_build_twin(benchmark, bound):
    """The twin of the one-pass writer kernel (plain Python per row and slice)."""
    arr, data = built(bound)
    v = np.asarray(arr.fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int32)
    bits = np.frombuffer(arr.buffers()[0], dtype=np.uint8)
    got = benchmark.pedantic(lambda: twin.bsi_build(v, bits, arr.offset), rounds=1, iterations=1)
    assert got == data


@pytest.mark.parametrize("bound", BOUNDS)
def test_cold_open_range_kernel(benchmark, bound):
    _, data = built(bound)
    leaf = Leaf("less_than", "x", (bound // 10,))
    bm = benchmark(lambda: pf.fileindex.reader("bsi", "INT", data).evaluate(leaf).bitmap)
    benchmark.extra_info.update(rows=N, result_rows=len(bm))


@pytest.mark.benchmark(group="bsi open range")
@pytest.mark.parametrize("bound", BOUNDS)
def test_open_range_kernel(benchmark, bound):
    _, data = built(bound)
    r = pf.fileindex.reader("bsi", "INT", data)
    r.positive
    leaf = Leaf("less_than", "x", (bound // 10,))
    benchmark(lambda: r.evaluate(leaf).bitmap)


@pytest.mark.benchmark(group="bsi open range")
@pytest.mark.parametrize("bound", BOUNDS)
def test_open_range_twin(benchmark, bound):
    _, data = built(bound)
    r = pf.fileindex.reader("bsi", "INT", data)
    p = r.positive
    got = benchmark.pedantic(lambda: twin.compare(p.slices, p.ebm, "lt", bound // 10), rounds=3, iterations=1)
    assert np.array_equal(got, k.compare(p.slices, p.ebm, "lt", bound // 10))
