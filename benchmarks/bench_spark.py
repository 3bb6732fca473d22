"""The Spark pipeline at 1e7 rows on local[2] (BIGINT + short STRING columns).

    pytest benchmarks/bench_spark.py --benchmark-only --benchmark-columns=min,median,max,rounds -s

(a) ``build``: bloom-filter indexes on both columns, built on the executors (one task
    per file, the file read with pyarrow), against the plain ``mapInArrow`` pass over
    the same columns: Spark reads them with one task per file and a Python function
    only counts rows (``trivial``).  Target: the build costs at most 1.5x that pass.
    Also measured: ``pyarrow_pass``, the same tasks reading the columns with pyarrow and
    counting rows (the build's own read; build / pyarrow_pass is what indexing adds).
(b) ``point lookup``: ``id = X`` on the high-cardinality BIGINT column (ids in
    random order, so Parquet min/max statistics cannot prune), with the index
    (``paimon_fast.spark.read``) and as a plain Spark scan.  Targets: >= 5x
    fewer rows read, >= 3x faster end to end.

``PF_BENCH_ROWS`` / ``PF_BENCH_FILES`` change the size (default 1e7 rows, 20
files); the data is generated once under ``$TMPDIR/paimon-fast-bench-spark-*``.
A summary with min / median, the load and the ratios prints at the end (``-s``);
``PF_BENCH_PROFILE=<dir>`` also profiles one build on the executors
(``spark_profile.py``) and writes the report there.
"""

import os
import tempfile

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytest.importorskip("pyspark")

from _summary import loadavg, record, write_section  # noqa: E402
from spark_profile import maybe_profile  # noqa: E402

ROWS = int(float(os.environ.get("PF_BENCH_ROWS", "1e7")))
FILES = int(os.environ.get("PF_BENCH_FILES", "20"))
OPTIONS = {
    "file-index.bloom-filter.columns": "id,code",
    "file-index.bloom-filter.id.items": str(ROWS // FILES),
    "file-index.bloom-filter.id.fpp": "0.01",
    "file-index.bloom-filter.code.items": str(ROWS // FILES),
    "file-index.bloom-filter.code.fpp": "0.01",
}
_RESULTS = {}
_STATS = {}


def _generate(root):
    rng = np.random.default_rng(7)
    ids = rng.permutation(ROWS).astype(np.int64)
    vocab = pa.array([f"c{v:07x}" for v in range(1 << 16)])
    per = ROWS // FILES
    for i in range(FILES):
        n = per if i < FILES - 1 else ROWS - per * (FILES - 1)
        sl = ids[i * per : i * per + n]
        t = pa.table({"id": sl, "code": vocab.take(pa.array(rng.integers(0, len(vocab), n)))})
        pq.write_table(t, os.path.join(root, f"part-{i:05d}.parquet"))


@pytest.fixture(scope="module")
def data():
    root = os.path.join(tempfile.gettempdir(), f"paimon-fast-bench-spark-{ROWS}-{FILES}")
    if not os.path.exists(os.path.join(root, "_done")):
        os.makedirs(root, exist_ok=True)
        _generate(root)
        open(os.path.join(root, "_done"), "w").close()
    return root


@pytest.fixture(scope="module")
def spark():
    from paimon_fast import spark as pfs

    s = pfs.session("local[2]")
    yield s


@pytest.fixture(scope="module", autouse=True)
def summary(request):
    yield
    write_section(
        request,
        f"bench_spark: {ROWS:,} rows, {FILES} files, local[2]",
        _STATS,
        [("build", "trivial", 1.5), ("build", "pyarrow_pass", None)],
    )
    tr = request.config.pluginmanager.get_plugin("terminalreporter")
    i, q = _RESULTS.get("lookup_index"), _RESULTS.get("lookup_plain")
    if i and q and tr is not None:
        ri, rq = _RESULTS["rows_index"], _RESULTS["rows_plain"]
        tr.write_line(
            f"(b) point lookup: index {i:.2f}s / plain {q:.2f}s = {q / i:.1f}x faster (target >= 3x); "
            f"rows read {ri:,} vs {rq:,} = {rq / max(ri, 1):.1f}x fewer (target >= 5x)"
        )


def _median(benchmark):
    return benchmark.stats.stats.median


class _OneFilePerTask:
    """Spark SQL confs under which a file scan makes exactly one task per file (the build's
    tasks): splits no smaller than the largest file, and an open cost so large that no two
    files share a task."""

    KEYS = ("spark.sql.files.maxPartitionBytes", "spark.sql.files.openCostInBytes")

    def __init__(self, spark, largest: int):
        self.spark = spark
        self.value = str(max(largest + 1, 128 << 20))

    def __enter__(self):
        self.saved = {k: self.spark.conf.get(k, None) for k in self.KEYS}
        for k in self.KEYS:
            self.spark.conf.set(k, self.value)

    def __exit__(self, *exc):
        for k, v in self.saved.items():
            if v is None:
                self.spark.conf.unset(k)
            else:
                self.spark.conf.set(k, v)


ROUNDS = int(os.environ.get("PF_BENCH_ROUNDS", "5"))


@pytest.mark.benchmark(group="spark-build")
def test_build_trivial_pass(benchmark, spark, data):
    """The issue's baseline: Spark reads the indexed columns (one task per file) and a
    ``mapInArrow`` function counts the rows of every batch."""
    from paimon_fast.tables import ParquetDataset

    files = [f.abs_path for f in ParquetDataset(data).files()]

    def count(batches):
        n = 0
        for b in batches:
            n += b.num_rows
        yield pa.RecordBatch.from_pydict({"n": [n]})

    def run():
        df = spark.read.parquet(*files).select("id", "code")
        with _OneFilePerTask(spark, max(os.path.getsize(f) for f in files)):
            return sum(r.n for r in df.mapInArrow(count, "n long").collect())

    assert run() == ROWS  # warm-up: JVM, Python workers
    load = loadavg()
    assert benchmark.pedantic(run, rounds=ROUNDS, iterations=1) == ROWS
    record(_STATS, "trivial", benchmark, load)


@pytest.mark.benchmark(group="spark-build")
def test_build_pyarrow_pass(benchmark, spark, data):
    """The build's own read without the indexes: one task per file (largest first) reads the
    indexed columns with pyarrow and counts rows."""
    from paimon_fast.tables import ParquetDataset

    files = [f.abs_path for f in sorted(ParquetDataset(data).files(), key=lambda f: -f.size)]

    def count(paths):
        import pyarrow.parquet as pq_

        for p in paths:
            yield sum(b.num_rows for b in pq_.ParquetFile(p).iter_batches(batch_size=1 << 17, columns=["id", "code"]))

    def run():
        return sum(spark.sparkContext.parallelize(files, len(files)).mapPartitions(count).collect())

    assert run() == ROWS
    load = loadavg()
    assert benchmark.pedantic(run, rounds=ROUNDS, iterations=1) == ROWS
    record(_STATS, "pyarrow_pass", benchmark, load)


@pytest.mark.benchmark(group="spark-build")
def test_build_index(benchmark, spark, data):
    from paimon_fast import spark as pfs

    def run():
        return pfs.build(spark, data, OPTIONS, force=True)

    run()  # warm-up
    load = loadavg()
    rep = benchmark.pedantic(run, rounds=ROUNDS, iterations=1)
    assert rep.files_built == FILES and rep.rows == ROWS
    benchmark.extra_info["index_bytes"] = rep.index_bytes
    record(_STATS, "build", benchmark, load)
    text = maybe_profile(spark, "spark_file_index_build", run)
    if text:
        print(text)


def _lookup_value(data):
    t = pq.read_table(os.path.join(data, f"part-{FILES // 2:05d}.parquet"), columns=["id"])
    return t.column(0)[1234].as_py()


@pytest.mark.benchmark(group="spark-point-lookup")
def test_point_lookup_index(benchmark, spark, data):
    from paimon_fast import spark as pfs

    pfs.build(spark, data, OPTIONS)  # no-op when test_build_index ran
    where = f"id = {_lookup_value(data)}"
    state = {}

    def run():
        df = pfs.read(spark, data, where)
        state["report"] = df.report
        return df.count()

    assert run() == 1
    assert benchmark.pedantic(run, rounds=5, iterations=1) == 1
    rep = state["report"]
    benchmark.extra_info.update(files_read=rep.files_read, rows_read=rep.rows_read)
    _RESULTS["lookup_index"] = _median(benchmark)
    _RESULTS["rows_index"] = rep.rows_read


@pytest.mark.benchmark(group="spark-point-lookup")
def test_point_lookup_plain(benchmark, spark, data):
    where = f"id = {_lookup_value(data)}"

    def run():
        return spark.read.parquet(data).where(where).count()

    assert run() == 1
    assert benchmark.pedantic(run, rounds=5, iterations=1) == 1
    _RESULTS["lookup_plain"] = _median(benchmark)
    _RESULTS["rows_plain"] = ROWS
