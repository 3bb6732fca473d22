"""Bitmap file index (V2, default options): build, cold open + equality, cold open + IN(5).

N = 1e6 rows, INT and 12-character strings, 10 / 1,000 / 100,000 distinct
values drawn uniformly (seeded).  Builds run the compiled kernels and the
pure-Python twin (``paimon_fast/reference/bitmap.py``, same orchestration) in
the same run; the query benchmarks also run the reader with the twin's
search functions.  "Cold" = a new reader over the index bytes each time (header
and directory parsed, one block searched, the bitmaps read and
deserialized); ``..._file`` variants read from a file with ``pread``.

Java Paimon on this machine (medians of 3 JVM launches, same data shape):

=====================  ============  ==============  ================
                        10 distinct   1,000 distinct  100,000 distinct
=====================  ============  ==============  ================
0.9.0 V1 build          11 ms         43 ms           398 ms
0.9.0 open + equality   246 us        121 us          9.9 ms
HEAD V2 build           24 ms         67 ms           601 ms
HEAD open + equality    65 us         97 us           141 us
HEAD open + IN(5)       209 us        134 us          789 us
=====================  ============  ==============  ================

Our writer is byte-identical to Java's (``tests/formats/fileindex/test_bitmap_vectors.py``), so
the index sizes printed by ``test_index_sizes`` are Java's sizes too.

    pytest benchmarks/bench_bitmap.py --benchmark-only --benchmark-columns=median,iqr,rounds -s
"""

import os

import numpy as np
import pyarrow as pa
import pytest

import paimon_fast as pf
from paimon_fast.fileindex.bitmap import BitmapReader, BitmapWriter
from paimon_fast.fileindex.options import Options
from paimon_fast.reference import bitmap as twin
from paimon_fast.io.source import as_source
from paimon_fast.core.types import DataType

N = 1_000_000
DISTINCT = [10, 1000, 100_000]
KINDS = ["INT", "STRING"]
JAVA_HEAD = {  # (build ms, open+eq us, open+in5 us)
    10: (24, 65, 209),
    1000: (67, 97, 134),
    100_000: (601, 141, 789),
}
_DATA = {}


def column(kind, k):
    key = (kind, k)
    if key not in _DATA:
        rng = np.random.default_rng(20261122 + k)
        codes = rng.integers(0, k, N)
        if kind == "INT":
            pool = rng.choice(2**31 - 1, k, replace=False).astype(np.int32)
            arr = pa.array(pool[codes])
            probes = [int(x) for x in pool[rng.integers(0, k, 5)]]
        else:
            pool = np.array([f"{x:012d}" for x in rng.choice(10**12, k, replace=False)], dtype=object)
            arr = pa.array(pool[codes], type=pa.string())
            probes = [str(x) for x in pool[rng.integers(0, k, 5)]]
        w = pf.fileindex.writer("bitmap", kind, {})
        w.write_batch(arr)
        _DATA[key] = (arr, w.finish(), probes)
    return _DATA[key]


def _build(kind, arr, kernels=None):
    w = BitmapWriter(DataType.parse(kind), Options({}), kernels=kernels)
    w.write_batch(arr)
    return w.finish()


PARAMS = [(kind, k) for kind in KINDS for k in DISTINCT]
IDS = [f"{kind}-{k}" for kind, k in PARAMS]


@pytest.mark.parametrize("kind,k", PARAMS, ids=IDS)
@pytest.mark.benchmark(group="bitmap build 1e6")
def test_build_kernel(benchmark, kind, k):
    arr, data, _ = column(kind, k)
    benchmark.extra_info["java_head_ms"] = JAVA_HEAD[k][0]
    out = benchmark.pedantic(_build, args=(kind, arr), rounds=7, iterations=1, warmup_rounds=1)
    assert out == data


@pytest.mark.parametrize("kind,k", PARAMS, ids=IDS)
@pytest.mark.benchmark(group="bitmap build 1e6")
def test_build_twin(benchmark, kind, k):
    arr, data, _ = column(kind, k)
    out = benchmark.pedantic(_build, args=(kind, arr, twin), rounds=1, iterations=1)
    assert out == data


def _open_eq(kind, src, probe):
    r = pf.fileindex.reader("bitmap", kind, src)
    return r.evaluate(pf.field("x") == probe).bitmap


def _open_in(kind, src, probes):
    r = pf.fileindex.reader("bitmap", kind, src)
    return r.evaluate(pf.field("x").isin(probes)).bitmap


def _twin_reader(kind, data):
    return BitmapReader(kind, as_source(data), Options({}), kernels=twin)


def _open_eq_twin(kind, data, probe):
    return _twin_reader(kind, data).evaluate(pf.field("x") == probe).bitmap


def _open_in_twin(kind, data, probes):
    return _twin_reader(kind, data).evaluate(pf.field("x").isin(probes)).bitmap


@pytest.mark.parametrize("kind,k", PARAMS, ids=IDS)
@pytest.mark.benchmark(group="bitmap cold open + equality")
def test_open_equal_kernel(benchmark, kind, k):
    arr, data, probes = column(kind, k)
    dt = DataType.parse(kind)
    benchmark.extra_info["java_head_us"] = JAVA_HEAD[k][1]
    bm = benchmark.pedantic(_open_eq, args=(dt, data, probes[0]), rounds=2000, iterations=1, warmup_rounds=20)
    assert len(bm) > 0


@pytest.mark.parametrize("kind,k", PARAMS, ids=IDS)
@pytest.mark.benchmark(group="bitmap cold open + equality")
def test_open_equal_twin(benchmark, kind, k):
    arr, data, probes = column(kind, k)
    bm = benchmark.pedantic(_open_eq_twin, args=(DataType.parse(kind), data, probes[0]), rounds=20, iterations=1)
    assert bm == _open_eq(DataType.parse(kind), data, probes[0])


@pytest.mark.parametrize("kind,k", PARAMS, ids=IDS)
@pytest.mark.benchmark(group="bitmap cold open + equality (file)")
def test_open_equal_file_kernel(benchmark, kind, k, tmp_path):
    arr, data, probes = column(kind, k)
    p = tmp_path / "x.bitmap"
    p.write_bytes(data)
    dt = DataType.parse(kind)

    def run():
        with open(p, "rb", buffering=0) as f:
            return _open_eq(dt, f, probes[0])

    bm = benchmark.pedantic(run, rounds=1000, iterations=1, warmup_rounds=20)
    assert len(bm) > 0


@pytest.mark.parametrize("kind,k", PARAMS, ids=IDS)
@pytest.mark.benchmark(group="bitmap cold open + IN(5)")
def test_open_in5_kernel(benchmark, kind, k):
    arr, data, probes = column(kind, k)
    dt = DataType.parse(kind)
    benchmark.extra_info["java_head_us"] = JAVA_HEAD[k][2]
    bm = benchmark.pedantic(_open_in, args=(dt, data, probes), rounds=1000, iterations=1, warmup_rounds=20)
    assert len(bm) > 0


@pytest.mark.parametrize("kind,k", PARAMS, ids=IDS)
@pytest.mark.benchmark(group="bitmap cold open + IN(5)")
def test_open_in5_twin(benchmark, kind, k):
    arr, data, probes = column(kind, k)
    bm = benchmark.pedantic(_open_in_twin, args=(DataType.parse(kind), data, probes), rounds=20, iterations=1)
    assert bm == _open_in(DataType.parse(kind), data, probes)


_PEAK_CHILD = r"""
import json, sys, tracemalloc
sys.path.insert(0, sys.argv[2])
import bench_bitmap as b

def vm(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024

kind = sys.argv[1]
arr, data, _ = b.column(kind, 100_000)   # input data and a first build, then measure a second one
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")                          # VmHWM := current RSS
rss0 = vm("VmRSS")
tracemalloc.start()
out = b._build(kind, arr)
traced = tracemalloc.get_traced_memory()[1]
tracemalloc.stop()
print(json.dumps({"rss_peak_growth": vm("VmHWM") - rss0, "tracemalloc_peak": traced, "index_bytes": len(out),
                  "input_bytes": arr.nbytes, "identical": out == data}))
"""


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.benchmark(group="bitmap build peak memory, 100k distinct")
def test_peak_memory_100k_kernel(benchmark, kind):
    """Peak memory of one 1e6-row, 100k-distinct build, in a fresh process: growth of the
    peak RSS (VmHWM reset just before the build; counts the kernels' C allocations) and
    the tracemalloc peak (Python and numpy allocations)."""
    import json
    import subprocess
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(here), os.environ.get("PYTHONPATH", "")]))
    res = benchmark.pedantic(
        lambda: subprocess.run(
            [sys.executable, "-c", _PEAK_CHILD, kind, here], capture_output=True, text=True, check=True, env=env
        ),
        rounds=1,
        iterations=1,
    )
    info = json.loads(res.stdout.strip().splitlines()[-1])
    benchmark.extra_info.update(info)
    mib = 2**20
    print(
        f"\n[{kind} 1e6 rows, 100k distinct] input {info['input_bytes'] / mib:.1f} MiB, index "
        f"{info['index_bytes'] / mib:.1f} MiB, peak RSS growth {info['rss_peak_growth'] / mib:.1f} MiB, "
        f"tracemalloc peak {info['tracemalloc_peak'] / mib:.1f} MiB"
    )
    assert info["identical"]


@pytest.mark.benchmark(group="bitmap index sizes")
def test_index_sizes(benchmark):
    """Index sizes (bytes) per case; identical to Java's because the bytes are."""
    sizes = {f"{kind}-{k}": len(column(kind, k)[1]) for kind, k in PARAMS}
    benchmark.extra_info.update(sizes)
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)
    print("\n" + ", ".join(f"{c}: {s / 2**20:.2f} MiB" for c, s in sizes.items()))
