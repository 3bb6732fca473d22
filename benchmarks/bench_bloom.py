"""Bloom filter add / probe: compiled kernel vs the pure-Python twin.

N = 1e6 BIGINT and 12-character strings, fpp 0.01, items = N.  ``test_java_anchor``
runs Java Paimon 0.9.0's BloomFilterFileIndex on the same data in the same run
(``benchmarks/java_anchor.py``; needs a JDK and the bridge jar) and checks it built
the same bytes; the conftest summary and ``benchmarks/report.py`` show its medians
as the ``java`` implementation of each group.

    pytest benchmarks/bench_bloom.py --benchmark-only --benchmark-columns=median,iqr,rounds
"""

import numpy as np
import pyarrow as pa
import pytest

import paimon_fast as pf
from paimon_fast.reference import bloom as twin

import java_anchor

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
    return (
        pf.fileindex.reader("bloom-filter", "BIGINT", wi.finish()),
        pf.fileindex.reader("bloom-filter", "STRING", ws.finish()),
        wi,
        ws,
    )


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


JAVA_GROUPS = {
    "add_bigint": "bloom add BIGINT 1e6",
    "add_string": "bloom add STRING(12) 1e6",
    "probe_bigint": "bloom probe BIGINT 1e6",
    "probe_string": "bloom probe STRING(12) 1e6",
}


@pytest.mark.benchmark(group="bloom Java 0.9 anchor")
def test_java_anchor(benchmark, request, filters):
    """Java 0.9's add / probe medians on the same data (one JVM, JIT warm-up rounds first);
    the timed figure of this test is the whole JVM run and means nothing by itself."""
    why = java_anchor.unavailable()
    if why:
        pytest.skip(why)
    res = {}

    def run():
        res["out"] = java_anchor.bloom(INTS, INT_PROBES, STRS.to_pylist(), STR_PROBES.to_pylist(), N, rounds=15)

    benchmark.pedantic(run, rounds=1, iterations=1)
    java, err = res["out"]
    assert java is not None, err
    # Java built byte-identical filters
    assert java["add_bigint"]["sha256"] == java_anchor.sha256(filters[2].finish())
    assert java["add_string"]["sha256"] == java_anchor.sha256(filters[3].finish())
    benchmark.extra_info["java"] = {JAVA_GROUPS[k]: v for k, v in java.items()}
    record = getattr(request.config, "_pf_record_external", None)
    if record:
        for case, v in java.items():
            record(JAVA_GROUPS[case], "", "java", v["median"])
