"""Bitmap global index: build and cold-query speed, kernels vs plain-Python twins vs pypaimon 2.1.

    pytest benchmarks/bench_globalindex.py --benchmark-only \
        --benchmark-columns=median,iqr,rounds --benchmark-group-by=param:case

N = 1e6 rows of STRING and INT with 10 / 1,000 / 100,000 distinct values (row i has id i).
* build: our writer (kernels) / the same writer with every kernel swapped for its twin /
  pypaimon's ``BitmapIndexWriter`` (one ``write`` per row, as its API takes rows);
* cold equality and IN(5): open the file (footer only) and answer, every round a new reader;
* ``contains`` over 100,000 distinct keys (fallback dictionary scan), cold;
* file sizes go to ``extra_info`` (ours, pypaimon's, and bitmap V2's when that index type is
  available in this checkout).
Set ``PF_BENCH_ROWS`` to shrink N for a quick run.
"""
import os
import tempfile
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import numpy as np
import pyarrow as pa
import pytest

import paimon_fast as pf
from paimon_fast import globalindex as gi
from paimon_fast.globalindex import format as gformat
from paimon_fast.reference import globalindex as twin

N = int(os.environ.get("PF_BENCH_ROWS", 1_000_000))
CASES = [(t, d) for t in ("STRING", "INT") for d in (10, 1000, 100_000)]
IDS = [f"{t}-{d}" for t, d in CASES]
_DIR = tempfile.mkdtemp(prefix="pf-bench-gi-")
_DATA = {}

try:
    from pypaimon.filesystem.local_file_io import LocalFileIO
    from pypaimon.globalindex.bitmap import BitmapIndexWriter, LazyFilteredBitmapReader
    from pypaimon.globalindex.global_index_meta import GlobalIndexIOMeta
    from pypaimon.globalindex.global_index_reader import FieldRef
    from pypaimon.globalindex.key_serializer import create_serializer
    from pypaimon.schema.data_types import AtomicType
    HAS_PYPAIMON = True
except ImportError:  # pragma: no cover
    HAS_PYPAIMON = False


def data(case):
    """(arrow values, python values, our file path, meta, literal, 5 literals)."""
    if case not in _DATA:
        t, d = case
        rng = np.random.default_rng(42)
        codes = rng.integers(0, d, N)
        if t == "STRING":
            vals = pa.array(np.char.add("tag-", codes.astype(str)).astype(object))
        else:
            vals = pa.array((codes * 7919 - 400_000).astype(np.int32))
        w = gi.writer(t)
        w.write_batch(vals, np.arange(N, dtype=np.uint64))
        path = os.path.join(_DIR, f"{t}-{d}.index")
        meta = w.finish_to(path)
        lits = [vals[i].as_py() for i in range(5)]
        _DATA[case] = (vals, path, meta, lits)
    return _DATA[case]


@contextmanager
def twin_kernels():
    """Run the reader with every kernel replaced by its plain-Python twin."""
    saved = gformat._k
    gformat._k = twin
    try:
        yield
    finally:
        gformat._k = saved


def _sizes(case, benchmark, pp_path=None):
    t, d = case
    vals, path, _, _ = data(case)
    info = {"rows": N, "distinct": d, "bytes_ours": os.path.getsize(path)}
    if pp_path:
        info["bytes_pypaimon"] = os.path.getsize(pp_path)
    try:
        w = pf.fileindex.writer("bitmap", t, {})
        w.write_batch(vals)
        info["bytes_bitmap_v2_file_index"] = len(w.finish())
    except (pf.UnknownIndexTypeError, pf.UnsupportedTypeError):
        info["bytes_bitmap_v2_file_index"] = "n/a (bitmap file index not in this checkout)"
    benchmark.extra_info.update(info)


# ---------------------------------------------------------------- build

@pytest.mark.benchmark(group="global index build")
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_build_kernel(benchmark, case):
    t, d = case
    vals, _, _, _ = data(case)
    rids = np.arange(N, dtype=np.uint64)

    def build():
        w = gi.writer(t)
        w.write_batch(vals, rids)
        return w.finish()
    out = benchmark.pedantic(build, rounds=5, iterations=1, warmup_rounds=1)
    assert out[0] == open(data(case)[1], "rb").read()
    _sizes(case, benchmark)


@pytest.mark.benchmark(group="global index build")
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_build_twin(benchmark, case):
    t, d = case
    vals, path, meta, _ = data(case)
    rids = np.arange(N, dtype=np.uint64)
    out = benchmark.pedantic(lambda: twin.build_file(t, vals, rids), rounds=1, iterations=1)
    assert out == (open(path, "rb").read(), meta)


@pytest.mark.benchmark(group="global index build")
@pytest.mark.skipif(not HAS_PYPAIMON, reason="pypaimon is not installed")
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_build_pypaimon(benchmark, case):
    t, d = case
    vals, _, _, _ = data(case)
    pyvals = vals.to_pylist()
    ser = create_serializer(AtomicType(t))
    out_dir = os.path.join(_DIR, "pp")
    res = {}

    def build():
        w = BitmapIndexWriter(LocalFileIO(), out_dir, ser)
        for i, v in enumerate(pyvals):
            w.write(v, i)
        res["entry"] = w.finish()[0]
    benchmark.pedantic(build, rounds=1, iterations=1)
    _sizes(case, benchmark, os.path.join(out_dir, res["entry"].file_name))


# ---------------------------------------------------------------- cold queries

def _cold(t, path, pred):
    def run():
        r = gi.reader(t, path)
        out = r.evaluate(pred)
        r.close()
        return out
    return run


@pytest.mark.benchmark(group="global index cold open + equality")
@pytest.mark.parametrize("case", CASES, ids=IDS)
@pytest.mark.parametrize("impl", ["kernel", "twin"])
def test_cold_equal(benchmark, case, impl):
    t, _ = case
    vals, path, _, lits = data(case)
    run = _cold(t, path, pf.field("x") == lits[0])
    if impl == "twin":
        with twin_kernels():
            out = benchmark.pedantic(run, rounds=20, iterations=1)
    else:
        out = benchmark.pedantic(run, rounds=300, iterations=1, warmup_rounds=10)
    assert 0 in out


@pytest.mark.benchmark(group="global index cold open + IN(5)")
@pytest.mark.parametrize("case", CASES, ids=IDS)
@pytest.mark.parametrize("impl", ["kernel", "twin"])
def test_cold_in5(benchmark, case, impl):
    t, _ = case
    vals, path, _, lits = data(case)
    run = _cold(t, path, pf.field("x").isin(lits))
    if impl == "twin":
        with twin_kernels():
            out = benchmark.pedantic(run, rounds=10, iterations=1)
    else:
        out = benchmark.pedantic(run, rounds=200, iterations=1, warmup_rounds=10)
    assert all(i in out for i in range(5))


def _pp_reader(t, path, meta):
    d = os.path.dirname(path)
    return LazyFilteredBitmapReader(create_serializer(AtomicType(t)), LocalFileIO(), d,
                                    [GlobalIndexIOMeta(os.path.basename(path), os.path.getsize(path), meta)],
                                    _EXEC, 256 << 20)


_EXEC = ThreadPoolExecutor(1)


def _cold_pypaimon(benchmark, case, query):
    """pypaimon's reader on our STRING files (its integer lookups are wrong on Java-ordered files)."""
    t, _ = case
    vals, path, meta, lits = data(case)
    fr = FieldRef(0, "x", t)

    def run():
        r = _pp_reader(t, path, meta)
        if query == "equal":
            return r.visit_equal(fr, lits[0]).result()
        return r.visit_in(fr, lits).result()
    out = benchmark.pedantic(run, rounds=50, iterations=1, warmup_rounds=2)
    assert 0 in out.results().to_list()


_STRING_CASES = [c for c in CASES if c[0] == "STRING"]
_STRING_IDS = [i for i in IDS if "STRING" in i]


@pytest.mark.benchmark(group="global index cold open + equality")
@pytest.mark.skipif(not HAS_PYPAIMON, reason="pypaimon is not installed")
@pytest.mark.parametrize("case", _STRING_CASES, ids=_STRING_IDS)
def test_cold_equal_pypaimon(benchmark, case):
    _cold_pypaimon(benchmark, case, "equal")


@pytest.mark.benchmark(group="global index cold open + IN(5)")
@pytest.mark.skipif(not HAS_PYPAIMON, reason="pypaimon is not installed")
@pytest.mark.parametrize("case", _STRING_CASES, ids=_STRING_IDS)
def test_cold_in5_pypaimon(benchmark, case):
    _cold_pypaimon(benchmark, case, "in5")


@pytest.mark.benchmark(group="global index cold contains('777'), 100k keys")
@pytest.mark.parametrize("impl", ["kernel", "twin", "pypaimon"])
def test_contains_100k_keys(benchmark, impl):
    case = ("STRING", 100_000)
    vals, path, meta, _ = data(case)
    pred = pf.field("x").contains("777")
    if impl == "pypaimon":
        if not HAS_PYPAIMON:
            pytest.skip("pypaimon is not installed")
        fr = FieldRef(0, "x", "STRING")
        out = benchmark.pedantic(lambda: _pp_reader("STRING", path, meta).visit_contains(fr, "777").result(),
                                 rounds=3, iterations=1)
        assert len(out.results().to_list()) > 0
        return
    run = _cold("STRING", path, pred)
    if impl == "twin":
        with twin_kernels():
            out = benchmark.pedantic(run, rounds=3, iterations=1)
    else:
        out = benchmark.pedantic(run, rounds=20, iterations=1, warmup_rounds=1)
    assert len(out) > 0
    benchmark.extra_info["matching_rows"] = len(out)


# ---------------------------------------------------------------- Spark build

SPARK_ROWS = int(os.environ.get("PF_BENCH_SPARK_ROWS", 0))


@pytest.fixture(scope="module")
def spark_dataset():
    if not SPARK_ROWS:
        pytest.skip("set PF_BENCH_SPARK_ROWS (e.g. 10000000) to run the Spark build benchmark")
    import sys

    import pyarrow.parquet as pq
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    root = os.path.dirname(os.path.dirname(os.path.abspath(pf.__file__)))
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "4").getOrCreate())
    d = os.path.join(_DIR, "spark-ds")
    rng = np.random.default_rng(1)
    per = SPARK_ROWS // 8
    os.makedirs(d, exist_ok=True)
    for i in range(8):
        codes = rng.integers(0, 1000, per)
        pq.write_table(pa.table({"tag": pa.array(np.char.add("tag-", codes.astype(str)).astype(object))}),
                       os.path.join(d, f"part-{i:02d}.parquet"))
    return spark, d


def test_spark_build(benchmark, spark_dataset):
    from paimon_fast.globalindex.spark_build import build_global_index

    spark, d = spark_dataset
    listing = benchmark.pedantic(lambda: build_global_index(spark, d, "tag", {
        "sorted-index.records-per-range": str(max(1, SPARK_ROWS // 4))}), rounds=1, iterations=1)
    assert listing["total_row_count"] == SPARK_ROWS // 8 * 8
    benchmark.extra_info["rows"] = listing["total_row_count"]
    benchmark.extra_info["files"] = len(listing["files"])


def test_spark_trivial_map_in_arrow(benchmark, spark_dataset):
    """Baseline: read the column and pass every batch through mapInArrow unchanged."""
    spark, d = spark_dataset
    df = spark.read.parquet(d).select("tag")

    def ident(it):
        yield from it
    n = benchmark.pedantic(lambda: df.mapInArrow(ident, df.schema).count(), rounds=1, iterations=1)
    assert n == SPARK_ROWS // 8 * 8
