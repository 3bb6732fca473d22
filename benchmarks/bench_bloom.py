"""Bloom filter add / probe: compiled kernel vs the pure-Python twin.

N = 1e6 BIGINT and 12-character strings, fpp 0.01, items = N (Java Paimon
0.9.0 on this machine, same data: add BIGINT 19 ms, add strings 26 ms,
probe BIGINT 28 ms, probe strings ~70 ms).

    pytest benchmarks/bench_bloom.py --benchmark-only --benchmark-columns=median,iqr,rounds
"""
import numpy as np
import pyarrow as pa
import pytest

import paimon_fast as pf
from paimon_fast.reference import bloom as twin

N = 1_000_000
OPTS = {"items": str(N), "fpp": "0.01"}
_rng = np.random.default_rng(20261122)
INTS = _rng.integers(-(2**62), 2**62, N)
INT_PROBES = np.concatenate([INTS[: N // 2], _rng.integers(-(2**62), 2**62, N // 2)])
STRS = pa.array([f"{x:012d}" for x in _rng.integers(0, 10**12, N)])
STR_PROBES = pa.array([f"{x:012d}" for x in _rng.integers(0, 10**12, N)])


def _add(dtype, values):
    w = pf.fileindex.writer("bloom-filter", dtype, OPTS)
    w.write_batch(values)
    return w


def _twin_add(hashes, w):
    bits = bytearray(w.num_bits // 8)
    twin.add(bits, w.num_hash_functions, hashes)
    return bits


@pytest.fixture(scope="module")
def filters():
    wi, ws = _add("BIGINT", INTS), _add("STRING", STRS)
    return (pf.fileindex.reader("bloom-filter", "BIGINT", wi.finish()),
            pf.fileindex.reader("bloom-filter", "STRING", ws.finish()), wi, ws)


@pytest.mark.benchmark(group="bloom add BIGINT 1e6")
def test_add_bigint_kernel(benchmark):
    benchmark(_add, "BIGINT", INTS)


@pytest.mark.benchmark(group="bloom add BIGINT 1e6")
def test_add_bigint_twin(benchmark, filters):
    vals = INTS.tolist()
    benchmark.pedantic(lambda: _twin_add(twin.hash_longs(vals), filters[2]), rounds=1, iterations=1)


@pytest.mark.benchmark(group="bloom add STRING(12) 1e6")
def test_add_string_kernel(benchmark):
    benchmark(_add, "STRING", STRS)


@pytest.mark.benchmark(group="bloom add STRING(12) 1e6")
def test_add_string_twin(benchmark, filters):
    vals = [s.encode() for s in STRS.to_pylist()]
    benchmark.pedantic(lambda: _twin_add(twin.hash_bytes(vals), filters[3]), rounds=1, iterations=1)


@pytest.mark.benchmark(group="bloom probe BIGINT 1e6")
def test_probe_bigint_kernel(benchmark, filters):
    mask = benchmark(filters[0].might_contain_batch, INT_PROBES)
    assert mask[: N // 2].all()


@pytest.mark.benchmark(group="bloom probe BIGINT 1e6")
def test_probe_bigint_twin(benchmark, filters):
    r = filters[0]
    bits, vals = bytes(r.bits), INT_PROBES.tolist()
    benchmark.pedantic(lambda: twin.test(bits, r.num_hash_functions, twin.hash_longs(vals)), rounds=1, iterations=1)


@pytest.mark.benchmark(group="bloom probe STRING(12) 1e6")
def test_probe_string_kernel(benchmark, filters):
    benchmark(filters[1].might_contain_batch, STR_PROBES)


@pytest.mark.benchmark(group="bloom probe STRING(12) 1e6")
def test_probe_string_twin(benchmark, filters):
    r = filters[1]
    bits, vals = bytes(r.bits), [s.encode() for s in STR_PROBES.to_pylist()]
    benchmark.pedantic(lambda: twin.test(bits, r.num_hash_functions, twin.hash_bytes(vals)), rounds=1, iterations=1)
