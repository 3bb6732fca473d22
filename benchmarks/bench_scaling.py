"""Build and query kernels against N (time vs size), and peak memory of the builds.

For N in ``PF_BENCH_SCALING_NS`` (default ``100000,1000000,10000000``):

* builds: bloom filter (BIGINT, items = N, fpp 0.01), bitmap file index V2 (INT, 1,000
  distinct), range bitmap and BSI (INT in [0, 300,000), 10% nulls), bitmap global index
  (INT, 1,000 distinct, row ids 0..N-1);
* queries, each against the no-index alternative on the same column in the same run
  (``pyarrow_compute``: ``pc.equal`` / ``pc.less`` + ``indices_nonzero``, i.e. scanning the
  column): bloom probe of N values (anchor: ``pc.is_in`` against the added values, a hash set), bitmap and
  global index cold open + equality, range bitmap and BSI cold open + ``x < 30,000``;
* ``test_peak_rss``: one build of each index at ``PF_BENCH_PEAK_ROWS`` (default 1e7) rows in a
  fresh process: growth of the peak RSS (VmHWM reset just before the build) and the input size.

    PYTHONPATH=. pytest benchmarks/bench_scaling.py --benchmark-only -p no:cacheprovider
"""

import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import paimon_fast as pf
from paimon_fast import globalindex as gi
from paimon_fast.core.predicate import Leaf

NS = [int(float(x)) for x in os.environ.get("PF_BENCH_SCALING_NS", "100000,1000000,10000000").split(",") if x]
PEAK_ROWS = int(float(os.environ.get("PF_BENCH_PEAK_ROWS", "10000000")))
BOUND = 300_000
LIT = BOUND // 10
_DATA = {}
_DIR = tempfile.mkdtemp(prefix="pf-bench-scaling-")


def column(kind, n):
    """Seeded input columns: 'ints' (int64 for bloom), 'codes' (INT, 1,000 distinct), 'range' (INT, 10% nulls)."""
    key = (kind, n)
    if key not in _DATA:
        rng = np.random.default_rng(99)
        if kind == "ints":
            _DATA[key] = rng.integers(-(2**62), 2**62, n)
        elif kind == "codes":
            _DATA[key] = pa.array((rng.integers(0, 1000, n) * 7919 - 400_000).astype(np.int32))
        else:
            _DATA[key] = pa.array(rng.integers(0, BOUND, n, dtype=np.int32), mask=rng.random(n) < 0.1)
    return _DATA[key]


def build(index, n):
    """Serialized index over the column of size n (a path for the global index)."""
    if index == "bloom":
        w = pf.fileindex.writer("bloom-filter", "BIGINT", {"items": str(n), "fpp": "0.01"})
        w.write_batch(column("ints", n))
        return w.finish()
    if index == "bitmap":
        w = pf.fileindex.writer("bitmap", "INT", {})
        w.write_batch(column("codes", n))
        return w.finish()
    if index in ("range-bitmap", "bsi"):
        w = pf.fileindex.writer(index, "INT", {})
        w.write_batch(column("range", n))
        return w.finish()
    if index == "global":
        w = gi.writer("INT")
        w.write_batch(column("codes", n), np.arange(n, dtype=np.uint64))
        return w.finish()
    raise ValueError(index)


_BUILT = {}


def built(index, n):
    if (index, n) not in _BUILT:
        out = build(index, n)
        if index == "global":
            path = os.path.join(_DIR, f"global-{n}.index")
            with open(path, "wb") as f:
                f.write(out[0])
            out = path
        _BUILT[(index, n)] = out
    return _BUILT[(index, n)]


BUDGET = float(os.environ.get("PF_BENCH_SCALING_BUDGET", "0.5"))


def _timed(benchmark, fn, args=()):
    """One untimed call, then as many rounds (3..20) as fit in BUDGET seconds."""
    t0 = time.perf_counter()
    fn(*args)
    once = time.perf_counter() - t0
    rounds = max(3, min(20, int(BUDGET / max(once, 1e-9))))
    return benchmark.pedantic(fn, args=args, rounds=rounds, iterations=1, warmup_rounds=0)


INDEXES = ["bloom", "bitmap", "range-bitmap", "bsi", "global"]


@pytest.mark.parametrize("n", NS)
@pytest.mark.parametrize("index", INDEXES)
def test_build_kernel(benchmark, index, n):
    benchmark.group = f"scaling build {index}"
    column({"bloom": "ints", "bitmap": "codes", "global": "codes"}.get(index, "range"), n)
    _timed(benchmark, build, (index, n))
    benchmark.extra_info.update(rows=n)


def _query(index, n):
    """(our cold query, the column scan that answers the same question, expected row count or None)."""
    if index == "bloom":
        data, probes = built(index, n), column("ints", n)
        return (
            lambda: pf.fileindex.reader("bloom-filter", "BIGINT", data).might_contain_batch(probes),
            lambda: pc.is_in(probes, value_set=pa.array(probes)),
            None,
        )
    if index == "bitmap":
        data, col = built(index, n), column("codes", n)
        lit = col[0].as_py()
        return (
            lambda: pf.fileindex.reader("bitmap", "INT", data).evaluate(pf.field("x") == lit).bitmap,
            lambda: pc.indices_nonzero(pc.equal(col, lit)),
            lit,
        )
    if index in ("range-bitmap", "bsi"):
        data, col = built(index, n), column("range", n)
        leaf = Leaf("less_than", "x", (LIT,))
        return (
            lambda: pf.fileindex.reader(index, "INT", data).evaluate(leaf).bitmap,
            lambda: pc.indices_nonzero(pc.fill_null(pc.less(col, LIT), False)),
            None,
        )
    path, col = built(index, n), column("codes", n)
    lit = col[0].as_py()

    def run():
        r = gi.reader("INT", path)
        out = r.evaluate(pf.field("x") == lit)
        r.close()
        return out

    return run, lambda: pc.indices_nonzero(pc.equal(col, lit)), lit


@pytest.mark.parametrize("n", NS)
@pytest.mark.parametrize("index", INDEXES)
@pytest.mark.parametrize("impl", ["kernel", "pyarrow_compute"])
def test_query(benchmark, index, n, impl):
    benchmark.group = f"scaling query {index}"
    ours, scan, _ = _query(index, n)
    if impl == "pyarrow_compute":
        benchmark.extra_info["impl"] = "pyarrow_compute"
        out = _timed(benchmark, scan)
    else:
        out = _timed(benchmark, ours)
        if index == "bloom":
            assert np.asarray(out).all()  # every added value is found
        else:
            want = np.asarray(scan()).astype(np.uint64)
            assert np.array_equal(np.fromiter(out, np.uint64, len(out)), want)
    benchmark.extra_info.update(rows=n)


_PEAK_CHILD = r"""
import json, sys
sys.path.insert(0, sys.argv[3])
import bench_scaling as b

def vm(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024

index, n = sys.argv[1], int(sys.argv[2])
col = b.column({"bloom": "ints", "bitmap": "codes", "global": "codes"}.get(index, "range"), n)
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")                          # VmHWM := current RSS
rss0 = vm("VmRSS")
out = b.build(index, n)
size = len(out[0]) if isinstance(out, tuple) else len(out)
print(json.dumps({"rss_peak_growth": vm("VmHWM") - rss0, "input_bytes": col.nbytes, "index_bytes": size}))
"""


@pytest.mark.parametrize("index", INDEXES)
def test_peak_rss(benchmark, index):
    """Peak RSS growth of one build at PEAK_ROWS rows, in a fresh process (Linux /proc)."""
    if not os.path.exists("/proc/self/clear_refs"):
        pytest.skip("needs Linux /proc/self/clear_refs to reset the peak RSS")
    benchmark.group = "peak RSS of one build"
    benchmark.extra_info["impl"] = "kernel"
    here = os.path.dirname(os.path.abspath(__file__))
    # the child imports the paimon_fast this process runs (installed, or the checkout's when
    # installed in editable mode), never the checkout's sources in its place
    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(pf.__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([package_parent, os.environ.get("PYTHONPATH", "")]))
    res = benchmark.pedantic(
        lambda: subprocess.run(
            [sys.executable, "-c", _PEAK_CHILD, index, str(PEAK_ROWS), here],
            capture_output=True,
            text=True,
            env=env,
        ),
        rounds=1,
        iterations=1,
    )
    if res.returncode:
        last = (res.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"the measuring process failed: {last}")
    info = json.loads(res.stdout.strip().splitlines()[-1])
    info["rows"] = PEAK_ROWS
    benchmark.extra_info.update(info)
    assert info["index_bytes"] > 0
