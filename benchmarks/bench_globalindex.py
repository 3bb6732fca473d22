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

from _summary import loadavg, record, write_section  # noqa: E402
from spark_profile import maybe_profile  # noqa: E402

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
    return LazyFilteredBitmapReader(
        create_serializer(AtomicType(t)),
        LocalFileIO(),
        d,
        [GlobalIndexIOMeta(os.path.basename(path), os.path.getsize(path), meta)],
        _EXEC,
        256 << 20,
    )


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
        out = benchmark.pedantic(
            lambda: _pp_reader("STRING", path, meta).visit_contains(fr, "777").result(), rounds=3, iterations=1
        )
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
#
# PF_BENCH_SPARK_ROWS=10000000 pytest benchmarks/bench_globalindex.py -k spark --benchmark-only -s
#
# 8 files, a STRING column of 1,000 distinct values, 4 ranges (records-per-range = rows / 4),
# local[2].  The sorted build (``spark_build``) against the work any sorted build does on
# Spark: read the column with its row positions, range-partition it into the same number of
# ranges, sort within them and pass every batch through ``mapInArrow`` (``range_sort``;
# target: the build within 1.5x of it); and against a pass that only reads the column
# through ``mapInArrow`` (``trivial``).  ``PF_BENCH_PROFILE=<dir>`` also profiles one build
# on the executors (``spark_profile.py``).

SPARK_ROWS = int(float(os.environ.get("PF_BENCH_SPARK_ROWS", 0)))
SPARK_ROUNDS = int(os.environ.get("PF_BENCH_ROUNDS", "3"))
SPARK_RANGES = 4
_SPARK_STATS = {}


@pytest.fixture(scope="module")
def spark_dataset(request):
    if not SPARK_ROWS:
        pytest.skip("set PF_BENCH_SPARK_ROWS (e.g. 10000000) to run the Spark build benchmark")
    import sys

    import pyarrow.parquet as pq
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    root = os.path.dirname(os.path.dirname(os.path.abspath(pf.__file__)))
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    d = os.path.join(_DIR, "spark-ds")
    rng = np.random.default_rng(1)
    per = SPARK_ROWS // 8
    os.makedirs(d, exist_ok=True)
    for i in range(8):
        codes = rng.integers(0, 1000, per)
        pq.write_table(
            pa.table({"tag": pa.array(np.char.add("tag-", codes.astype(str)).astype(object))}),
            os.path.join(d, f"part-{i:02d}.parquet"),
        )
    yield spark, d
    write_section(
        request,
        f"Spark sorted global-index build: {per * 8:,} rows, 8 files, {SPARK_RANGES} ranges, local[2]",
        _SPARK_STATS,
        [("spark_build", "range_sort", 1.5), ("spark_build", "trivial", None)],
    )


def _spark_rounds(benchmark, key, run, expect):
    assert expect(run())  # warm-up
    load = loadavg()
    got = benchmark.pedantic(run, rounds=SPARK_ROUNDS, iterations=1)
    assert expect(got)
    record(_SPARK_STATS, key, benchmark, load)
    return got


@pytest.mark.benchmark(group="spark_gi_build")
def test_spark_build(benchmark, spark_dataset):
    from paimon_fast.tables.globalindex_spark import build_global_index

    spark, d = spark_dataset
    rows = SPARK_ROWS // 8 * 8

    def run():
        opts = {"sorted-index.records-per-range": str(max(1, rows // SPARK_RANGES))}
        return build_global_index(spark, d, "tag", opts)

    listing = _spark_rounds(benchmark, "spark_build", run, lambda got: got["total_row_count"] == rows)
    benchmark.extra_info.update(impl="kernel", rows=rows, files=len(listing["files"]))
    text = maybe_profile(spark, "spark_sorted_global_index_build", run)
    if text:
        print(text)


@pytest.mark.benchmark(group="spark_gi_build")
def test_spark_range_sort_map_in_arrow(benchmark, spark_dataset):
    """Baseline: read the column and its row positions, range-partition by the column into the
    build's number of ranges, sort within the ranges by (column, position), and pass every
    batch through mapInArrow (the Python side counts rows)."""
    from pyspark.sql import functions as F

    spark, d = spark_dataset

    def count(it):
        n = 0
        for b in it:
            n += b.num_rows
        yield pa.RecordBatch.from_pydict({"n": [n]})

    def run():
        df = (
            spark.read.parquet(d)
            .select(F.col("tag").alias("k"), F.col("_metadata.row_index").alias("rid"))
            .repartitionByRange(SPARK_RANGES, F.col("k").asc_nulls_first())
            .sortWithinPartitions("k", "rid")
        )
        return sum(r.n for r in df.mapInArrow(count, "n long").collect())

    _spark_rounds(benchmark, "range_sort", run, lambda n: n == SPARK_ROWS // 8 * 8)
    benchmark.extra_info["impl"] = "range_sort"


@pytest.mark.benchmark(group="spark_gi_build")
def test_spark_trivial_map_in_arrow(benchmark, spark_dataset):
    """Reference: read the column and pass every batch through mapInArrow unchanged."""
    spark, d = spark_dataset

    def ident(it):
        yield from it

    def run():
        df = spark.read.parquet(d).select("tag")
        return df.mapInArrow(ident, df.schema).count()

    _spark_rounds(benchmark, "trivial", run, lambda n: n == SPARK_ROWS // 8 * 8)
    benchmark.extra_info["impl"] = "trivial"
