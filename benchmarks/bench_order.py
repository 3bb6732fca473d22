"""Clustering kernels (pytest-benchmark): the gather of a new file's string values, kernel vs its
pure-Python twin and vs Arrow's ``take``, in one run.

An optimize cuts a sorted partition into files and gathers each file's rows from the whole
partition in the new order: rows far apart in memory, one file (200,000 rows by default) at a
time.  Data: PF_BENCH_ROWS strings (default 1,000,000) of 11 to 24 bytes; positions: a random
200,000 of them (a file's share of a column sorted by another, uncorrelated one).

    PYTHONPATH=$PWD python -m pytest benchmarks/bench_order.py --benchmark-only \
        --benchmark-columns=min,median,max,rounds
"""

import os

import numpy as np
import pyarrow as pa
import pytest

from paimon_fast._kernels import load
from paimon_fast.reference import order as twin

k = load("order")
N = int(os.environ.get("PF_BENCH_ROWS", "1000000"))
PICK = min(200_000, N)


@pytest.fixture(scope="module")
def strings():
    rng = np.random.default_rng(11)
    lens = rng.integers(11, 25, N)
    values = [("k%d" % v).ljust(int(n), "x") for v, n in zip(rng.integers(0, 1 << 40, N).tolist(), lens.tolist())]
    arr = pa.array(values, pa.string())
    idx = np.sort(rng.permutation(N)[:PICK])
    rng.shuffle(idx)
    b = arr.buffers()
    offsets = np.frombuffer(b[1], np.int32)[: N + 1]
    data = np.frombuffer(b[2], np.uint8)
    return arr, offsets, data, idx, [v.encode() for v in values]


@pytest.mark.benchmark(group="take_bytes")
def test_take_bytes_kernel(benchmark, strings):
    arr, offsets, data, idx, _ = strings
    new_off, _new = benchmark(k.take_bytes, offsets, data, idx)
    assert len(new_off) == PICK + 1


@pytest.mark.benchmark(group="take_bytes")
def test_take_bytes_twin(benchmark, strings):
    _arr, _o, _d, idx, values = strings
    positions = idx.tolist()
    got = benchmark.pedantic(twin.take_bytes, args=(values, positions), rounds=3, iterations=1)
    assert len(got) == PICK


@pytest.mark.benchmark(group="take_bytes")
def test_take_bytes_arrow(benchmark, strings):
    arr, _o, _d, idx, _v = strings
    benchmark.extra_info["impl"] = "arrow take"
    ia = pa.array(idx, pa.int64())
    got = benchmark(arr.take, ia)
    new_off, new_data = k.take_bytes(*strings[1:4])
    ours = pa.Array.from_buffers(pa.string(), PICK, [None, pa.py_buffer(new_off), pa.py_buffer(new_data)])
    assert ours.equals(got)
