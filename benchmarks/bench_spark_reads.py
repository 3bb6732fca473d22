"""Indexed Spark reads against a plain Spark scan: ``pfs.read(spark, path, q)`` against
``spark.read.parquet(path).where(q)``, each with ``count()`` and with ``collect()``.

    pytest benchmarks/bench_spark_reads.py --benchmark-only --benchmark-columns=min,median,max,rounds -s

Two datasets, written by the demo's generator (``paimon_fast.spark.demo.generate_sample``:
``region=`` partitions, ``id`` BIGINT, ``user_id`` / ``country`` / ``status`` STRING,
``amount`` DOUBLE, ``qty`` INT) and indexed as the demo indexes them (bloom filters on ``id``,
``user_id``, ``country``; a bitmap on ``status``, a range bitmap on ``amount``, a bit-slice
index on ``qty``; a bitmap global index on ``country``):

* ``1e6``: the demo's own dataset (1,000,000 rows, 20 files) and its eight predicates;
* ``1e7``: 10,000,000 rows in 50 files, predicates from a point lookup to 5% of the rows.

Every (predicate, action) is measured on both sides in the same run, warm (one untimed round
first), ``PF_BENCH_ROUNDS`` rounds (default 3); which side runs first alternates from one
predicate to the next.  The plain side reuses one ``spark.read.parquet(path)`` (listed and its
schema read once, untimed); the indexed side plans every time.  The summary at the end gives
each pair's medians, the speed-up, the share of rows selected and the issue's targets: at 1e6
every predicate at least as fast as the plain scan; at 1e7 one selecting at most 0.01% of the
rows >= 5x, at most 1% >= 2x, none slower.  ``test_driver_read_memory`` measures the peak
memory of the largest driver-local read of the 1e7 predicates in a fresh process (pyarrow's
pool and RSS), against ``paimon-fast.read.driver-max-bytes``.

``PF_BENCH_READ_SIZES=1e6`` (or ``1e7``) limits the sizes; the data is generated and indexed once
under ``$TMPDIR/paimon-fast-bench-reads-<rows>-<files>``.
"""

import json
import os
import subprocess
import sys
import tempfile

import pytest

pytest.importorskip("pyspark")

from _summary import loadavg  # noqa: E402

ROUNDS = int(os.environ.get("PF_BENCH_ROUNDS", "3"))
SIZES = {"1e6": (1_000_000, 20), "1e7": (10_000_000, 50)}
WANTED = os.environ.get("PF_BENCH_READ_SIZES", "1e6,1e7").split(",")
_RESULTS = {}  # (size, predicate, action, side) -> median seconds
_ROWS = {}  # (size, predicate) -> matching rows
_WHERE = {}  # (size, predicate) -> where the indexed read read the rows


def _dataset(size):
    from paimon_fast.spark.demo import demo_options, generate_sample

    rows, files = SIZES[size]
    root = os.path.join(tempfile.gettempdir(), f"paimon-fast-bench-reads-{rows}-{files}")
    if not os.path.exists(os.path.join(root, "_done")):
        os.makedirs(root, exist_ok=True)
        generate_sample(root, rows, files)
        from paimon_fast.tables import ParquetDataset
        from paimon_fast.tables.globalindex import build_global_index_local

        ParquetDataset(root).build(demo_options(rows, files))
        build_global_index_local(root, "country")
        open(os.path.join(root, "_done"), "w").close()
    return root


def _predicates(size):
    """The demo's predicates at 1e6; at 1e7 a point lookup, ranges of 0.01% to 1%, a BSI +
    bitmap conjunction and 5% of the rows."""
    import pyarrow.parquet as pq

    rows, files = SIZES[size]
    root = _dataset(size)
    last = sorted(
        os.path.join(d, f)
        for d, _, fs in os.walk(root)
        for f in fs
        if f.endswith(".parquet") and "_file_index" not in d
    )[-1]
    users = pq.read_table(last, columns=["user_id"]).column(0)
    user = users[len(users) // 2].as_py()
    if size == "1e6":
        return [
            f"id = {rows // 2}",
            f"user_id = '{user}'",
            "country = 'NO'",
            "country = 'XX'",
            f"region = 'us' AND id IN (5, {rows // 2}, {rows - 1})",
            "status = 'returned' AND country = 'NO'",
            "amount > 450",
            "qty = 7 AND country IN ('JP', 'KR')",
        ]
    return [
        f"id = {rows // 2}",
        f"user_id = '{user}'",
        "amount > 360",
        "amount > 300",
        "qty = 7 AND country IN ('JP', 'KR')",
        "amount > 200",
        "status = 'returned' AND country = 'NO'",
        "country = 'NO'",
    ]


def _cases():
    out = []
    for size in ("1e6", "1e7"):
        if size not in WANTED:
            continue
        for i, q in enumerate(_predicates(size)):
            for action in ("count", "collect"):
                sides = ("index", "plain") if (i + (action == "collect")) % 2 == 0 else ("plain", "index")
                out += [pytest.param(size, q, action, side, id=f"{size}-{q}-{action}-{side}") for side in sides]
    return out


@pytest.fixture(scope="module")
def spark():
    from paimon_fast import spark as pfs

    yield pfs.session("local[2]")


@pytest.fixture(scope="module")
def plain_frames(spark):
    return {size: spark.read.parquet(_dataset(size)) for size in WANTED if size in SIZES}


@pytest.fixture(scope="module", autouse=True)
def summary(request):
    yield
    tr = request.config.pluginmanager.get_plugin("terminalreporter")
    if tr is None or not _RESULTS:
        return
    tr.section("bench_spark_reads: indexed read / plain Spark scan, medians")
    for (size, q), n in _ROWS.items():
        total = SIZES[size][0]
        share = n / total
        for action in ("count", "collect"):
            i, p = _RESULTS.get((size, q, action, "index")), _RESULTS.get((size, q, action, "plain"))
            if i is None or p is None:
                continue
            x = p / i
            if size == "1e6":
                target, ok = ">= 1x", x >= 1
            elif share <= 0.0001:
                target, ok = ">= 5x", x >= 5
            elif share <= 0.01:
                target, ok = ">= 2x", x >= 2
            else:
                target, ok = ">= 1x", x >= 1
            tr.write_line(
                f"{size} {q!r} ({n:,} rows, {share:.4%}, read on the {_WHERE[(size, q)]}) {action}: "
                f"{i:.3f} s / {p:.3f} s = {x:.1f}x (target {target}: {'met' if ok else 'NOT met'})"
            )


@pytest.mark.benchmark(group="spark-reads", min_rounds=1)
@pytest.mark.parametrize("size,where,action,side", _cases())
def test_read(benchmark, spark, plain_frames, size, where, action, side):
    from paimon_fast import spark as pfs

    root = _dataset(size)

    def frame():
        return pfs.read(spark, root, where) if side == "index" else plain_frames[size].where(where)

    def run():
        df = frame()
        return df.count() if action == "count" else len(df.collect())

    n = run()  # warm
    load = loadavg()
    assert benchmark.pedantic(run, rounds=ROUNDS, iterations=1) == n
    benchmark.extra_info.update(rows=n, loadavg_before=load, loadavg_after=loadavg())
    _RESULTS[(size, where, action, side)] = benchmark.stats.stats.median
    _ROWS[(size, where)] = n
    if side == "index":
        rep = pfs.read(spark, root, where).report
        _WHERE[(size, where)] = rep.read_on
        benchmark.extra_info.update(read_on=rep.read_on, why=rep.why, estimated_bytes=rep.estimated_bytes)


_PEAK = r"""
import json, resource, sys
import pyarrow as pa
from paimon_fast.tables import ParquetDataset
from paimon_fast.spark.read_job import _read_on_driver
root, where, limit = sys.argv[1], sys.argv[2], int(sys.argv[3])
ds = ParquetDataset(root)
plan = ds.plan(where)
cols = ds.schema().names
est = ds.read_cost(plan, cols)
rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
pool0 = pa.default_memory_pool().max_memory()
t = _read_on_driver(ds, plan, cols, limit)
rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"estimated": est, "table_bytes": None if t is None else t.nbytes,
                  "arrow_peak": pa.default_memory_pool().max_memory() - pool0, "rss_growth": (rss1 - rss0) * 1024}))
"""


@pytest.mark.benchmark(group="spark-reads-memory", min_rounds=1)
def test_driver_read_memory(benchmark):
    """Peak memory of the largest driver-local read among the 1e7 predicates, in a fresh process:
    pyarrow's pool peak and the RSS growth while the rows are read, against the threshold."""
    from paimon_fast.spark.frames import DEFAULT_DRIVER_MAX_BYTES
    from paimon_fast.tables import ParquetDataset

    if "1e7" not in WANTED:
        pytest.skip("PF_BENCH_READ_SIZES leaves out 1e7")
    root = _dataset("1e7")
    ds = ParquetDataset(root)
    best = None
    for q in _predicates("1e7"):
        plan = ds.plan(q)
        est = ds.read_cost(plan, ds.schema().names)
        if est <= DEFAULT_DRIVER_MAX_BYTES and (best is None or est > best[1]):
            best = (q, est)
    assert best is not None
    out = {}

    def run():
        r = subprocess.run(
            [sys.executable, "-c", _PEAK, root, best[0], str(DEFAULT_DRIVER_MAX_BYTES)],
            capture_output=True,
            text=True,
            check=True,
        )
        out.update(json.loads(r.stdout.strip().splitlines()[-1]))

    benchmark.pedantic(run, rounds=1, iterations=1)
    benchmark.extra_info.update(where=best[0], threshold=DEFAULT_DRIVER_MAX_BYTES, **out)
    print(
        f"\ndriver-local read of {best[0]!r}: estimated {out['estimated']:,} B, table {out['table_bytes']:,} B, "
        f"pyarrow peak {out['arrow_peak']:,} B, RSS growth {out['rss_growth']:,} B; threshold "
        f"{DEFAULT_DRIVER_MAX_BYTES:,} B"
    )
