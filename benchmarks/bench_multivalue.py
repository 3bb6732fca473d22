"""Multivalue (ARRAY) global index: build and cold ``array_contains``, kernels vs plain-Python twins.

    pytest benchmarks/bench_multivalue.py --benchmark-only --benchmark-columns=median,iqr,rounds

N = 1e6 arrays of INT with about 3 elements each (0..6, uniform) drawn from 10,000 distinct
values (row i has id i).
* build: our writer (Arrow flattening + kernels) / the plain-Python twin (per-element Python
  flattening, every kernel swapped for its twin) -- both produce the identical file;
* cold array_contains: open the file (footer only) and answer, every round a new reader; the
  twin run swaps the reader's kernels for their twins.
Set ``PF_BENCH_ROWS`` to shrink N for a quick run.
"""

import os
import tempfile
from contextlib import contextmanager

import numpy as np
import pyarrow as pa
import pytest

import paimon_fast as pf
from paimon_fast import globalindex as gi
from paimon_fast.globalindex import format as gformat
from paimon_fast.reference import globalindex as twin

N = int(os.environ.get("PF_BENCH_ROWS", 1_000_000))
DISTINCT = 10_000
TYPE = "ARRAY<INT>"
_DIR = tempfile.mkdtemp(prefix="pf-bench-mv-")
_DATA = {}


def data():
    """(list array, row ids, file path, meta, literal)."""
    if not _DATA:
        rng = np.random.default_rng(7)
        lengths = rng.integers(0, 7, N)
        values = (rng.integers(0, DISTINCT, int(lengths.sum())) * 7919 - 400_000).astype(np.int32)
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
        arrays = pa.ListArray.from_arrays(pa.array(offsets), pa.array(values))
        rids = np.arange(N, dtype=np.uint64)
        w = gi.writer(TYPE, {}, index_type="multivalue")
        w.write_batch(arrays, rids)
        path = os.path.join(_DIR, "mv.index")
        meta = w.finish_to(path)
        _DATA.update(arrays=arrays, rids=rids, path=path, meta=meta, lit=int(values[0]))
    return _DATA


@contextmanager
def twin_kernels():
    saved = gformat._k
    gformat._k = twin
    try:
        yield
    finally:
        gformat._k = saved


@pytest.mark.benchmark(group="multivalue build")
def test_build_kernel(benchmark):
    d = data()

    def build():
        w = gi.writer(TYPE, {}, index_type="multivalue")
        w.write_batch(d["arrays"], d["rids"])
        return w.finish()

    out = benchmark.pedantic(build, rounds=5, iterations=1, warmup_rounds=1)
    assert out[0] == open(d["path"], "rb").read()
    benchmark.extra_info.update(
        rows=N, elements=len(d["arrays"].values), distinct=DISTINCT, file_bytes=os.path.getsize(d["path"])
    )


@pytest.mark.benchmark(group="multivalue build")
def test_build_twin(benchmark):
    d = data()
    out = benchmark.pedantic(lambda: twin.build_multivalue_file(TYPE, d["arrays"], d["rids"]), rounds=1, iterations=1)
    assert out == (open(d["path"], "rb").read(), d["meta"])


def _cold(benchmark, impl):
    d = data()
    pred = pf.field("tags").array_contains(d["lit"])

    def run():
        r = gi.reader(TYPE, d["path"], index_type="multivalue")
        out = r.evaluate(pred)
        r.close()
        return out

    if impl == "twin":
        with twin_kernels():
            out = benchmark.pedantic(run, rounds=20, iterations=1)
    else:
        out = benchmark.pedantic(run, rounds=300, iterations=1, warmup_rounds=10)
    assert 0 in out


@pytest.mark.benchmark(group="multivalue cold array_contains")
def test_cold_array_contains_kernel(benchmark):
    _cold(benchmark, "kernel")


@pytest.mark.benchmark(group="multivalue cold array_contains")
def test_cold_array_contains_twin(benchmark):
    _cold(benchmark, "twin")
