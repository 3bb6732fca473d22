"""Hudi RFC-92 bitmap index benchmarks (issue 11).

    PF_HUDI_BENCH_ROWS=10000000 pytest benchmarks/bench_hudi.py --benchmark-only \\
        --benchmark-columns=median,min,max,rounds

* initial index build on local Spark vs a plain Spark read of the same columns
  (target <= 2x), 100 file groups, columns with 10 and 10,000 distinct values;
* incremental run after a commit touching 5 of the 100 file groups (target <= 10%
  of the initial build);
* pruning 3 predicates over 10,000 file groups (target <= 200 ms);
* a selective query vs a full snapshot read through the same pipeline (targets:
  >= 5x fewer rows read, >= 3x faster).

Tables are written by the copy-on-write test writer (``tests/support/hudi_writer.py``).
A summary prints min / median, the load and the build / read ratio at the end (``-s``);
``PF_BENCH_PROFILE=<dir>`` also profiles one initial build on the executors
(``spark_profile.py``).
Default size is 1,000,000 rows to keep CI short; the issue's figures use 1e7.
"""

import os
import shutil
import sys
import uuid

import numpy as np
import pyarrow as pa
import pytest

sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests.support

import paimon_fast as pf  # noqa: E402
import paimon_fast.hudi as ph  # noqa: E402
from paimon_fast.hudi import storage  # noqa: E402
from paimon_fast.hudi.table import table_state  # noqa: E402

pytest.importorskip("hudi")
from tests.support.hudi_writer import CowTable  # noqa: E402

from _summary import loadavg, record, write_section  # noqa: E402
from spark_profile import maybe_profile  # noqa: E402

ROWS = int(os.environ.get("PF_HUDI_BENCH_ROWS", "1000000"))
# uniform: every file group holds every value of both columns (the index can only skip rows);
# clustered: file group g holds k10k values [100 g, 100 g + 100) (as after clustering by k10k)
LAYOUT = os.environ.get("PF_HUDI_BENCH_LAYOUT", "uniform")
GROUPS = 100
PRUNE_GROUPS = int(os.environ.get("PF_HUDI_BENCH_PRUNE_GROUPS", "10000"))
SCHEMA = pa.schema([("id", pa.int64()), ("k10", pa.string()), ("k10k", pa.int64()), ("payload", pa.float64())])
K10 = pa.array([f"cat-{i}" for i in range(10)])


def _group_table(rng, start, n, group=0):
    if LAYOUT == "clustered":
        k10k = (group % 100) * 100 + rng.integers(0, 100, n)
    else:
        k10k = rng.integers(0, 10_000, n)
    return pa.table(
        {
            "id": np.arange(start, start + n, dtype=np.int64),
            "k10": pa.DictionaryArray.from_arrays(pa.array(rng.integers(0, 10, n).astype(np.int32)), K10).cast(
                pa.string()
            ),
            "k10k": k10k,
            "payload": rng.random(n),
        },
        schema=SCHEMA,
    )


def make_table(path, rows, groups, seed=1):
    shutil.rmtree(path, ignore_errors=True)
    t = CowTable(path, SCHEMA, name="bench")
    rng = np.random.default_rng(seed)
    per = rows // groups
    t.commit({("", f"{uuid.UUID(int=g + 1)}-0"): _group_table(rng, g * per, per, g) for g in range(groups)})
    return t


@pytest.fixture(scope="module")
def spark():
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    return (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    return make_table(str(tmp_path_factory.mktemp("hudi_bench") / "t"), ROWS, GROUPS)


def _base_files(path):
    st = table_state(path)
    return [s.base_path(st.path) for s in st.slices]


ROUNDS = int(os.environ.get("PF_BENCH_ROUNDS", "3"))
_STATS = {}


@pytest.fixture(scope="module", autouse=True)
def summary(request):
    yield
    write_section(
        request,
        f"Hudi index build: {ROWS:,} rows, {GROUPS} file groups, {LAYOUT}, local[2]",
        _STATS,
        [("initial_build", "plain_read", 2.0)],
    )


@pytest.mark.spark
def test_plain_spark_read_same_columns(benchmark, spark, big):
    files = _base_files(big.path)

    def run():
        spark.read.parquet(*files).select("k10", "k10k").write.format("noop").mode("overwrite").save()

    load = loadavg()
    benchmark.pedantic(run, rounds=ROUNDS, iterations=1, warmup_rounds=1)
    record(_STATS, "plain_read", benchmark, load)


@pytest.mark.spark
def test_initial_build_spark(benchmark, spark, big):
    def setup():
        shutil.rmtree(storage.index_dir(big.path), ignore_errors=True)

    reports = []
    load = loadavg()
    benchmark.pedantic(
        lambda: reports.append(ph.build_index(spark, big.path, ["k10", "k10k"])),
        setup=setup,
        rounds=ROUNDS,
        iterations=1,
        warmup_rounds=1,
    )
    assert storage.read_manifest(big.path)["slices"] and reports[-1]["indexed_on"] == "executors"
    benchmark.extra_info.update(phase_seconds=reports[-1]["phase_seconds"])
    record(_STATS, "initial_build", benchmark, load)
    setup()
    text = maybe_profile(spark, f"hudi_index_build_{LAYOUT}", lambda: ph.build_index(spark, big.path, ["k10", "k10k"]))
    if text:
        print(text)


@pytest.mark.spark
@pytest.mark.parametrize("driver_max_slices", [ph.build.DRIVER_MAX_SLICES, 0], ids=["default", "executors-only"])
def test_incremental_build_5_of_100(benchmark, spark, big, driver_max_slices):
    """default: 5 slices are indexed on the driver (below ``driver_max_slices``);
    executors-only: the same run forced through a Spark job."""
    ph.build_index(spark, big.path, ["k10", "k10k"])
    rng = np.random.default_rng(9)
    reports = []

    def setup():
        ph.build_index(None, big.path)  # index current
        groups = sorted(big.groups)[:5]
        big.update(
            lambda tb: _group_table(
                rng, tb.column("id")[0].as_py(), tb.num_rows, tb.column("id")[0].as_py() // tb.num_rows
            ),
            groups=groups,
        )

    def run():
        reports.append(ph.build_index(spark, big.path, driver_max_slices=driver_max_slices))

    benchmark.pedantic(run, setup=setup, rounds=3, iterations=1)
    assert all(r["slices_indexed"] == 5 and r["slices_carried"] == GROUPS - 5 for r in reports)
    benchmark.extra_info.update(phase_seconds=reports[-1]["phase_seconds"], indexed_on=reports[-1]["indexed_on"])


@pytest.fixture(scope="module")
def many(tmp_path_factory):
    t = make_table(str(tmp_path_factory.mktemp("hudi_many") / "t"), PRUNE_GROUPS * 20, PRUNE_GROUPS, seed=3)
    ph.build_index(None, t.path, ["k10", "k10k"])
    return t


PREDS = [
    (pf.field("k10") == "cat-3") & (pf.field("k10k") == 17),
    pf.field("k10k").isin([5, 6, 7]),
    (pf.field("k10") != "cat-1") & (pf.field("k10k") == 99),
]


def test_prune_3_predicates_10k_groups(benchmark, many):
    """The issue's figure: ``prune(table, where)`` as a user calls it; the current slices
    are the manifest's listing after a timeline check (the timeline is unchanged)."""

    def run():
        return [ph.prune(many.path, p) for p in PREDS]

    out = benchmark.pedantic(run, rounds=5, iterations=1, warmup_rounds=1)
    assert out[0].report["slices_pruned"] > 0 and all(r.report["listing"] == "index" for r in out)
    assert out[0].report["slices_total"] == PRUNE_GROUPS


def test_prune_3_predicates_10k_groups_given_state(benchmark, many):
    """Evaluation only: the caller passes a listed table state (coverage computed once)."""
    state = table_state(many.path)
    assert len(state.slices) == PRUNE_GROUPS

    def run():
        return [ph.prune(many.path, p, state=state) for p in PREDS]

    benchmark.pedantic(run, rounds=5, iterations=1, warmup_rounds=1)


def test_prune_3_predicates_10k_groups_with_hudi_listing(benchmark, many):
    """Forced full listing by the hudi package (what prune does when the timeline changed)."""

    def run():
        state = table_state(many.path)  # the hudi package lists the 10,000 file slices
        return [ph.prune(many.path, p, state=state) for p in PREDS]

    benchmark.pedantic(run, rounds=3, iterations=1)


@pytest.mark.spark
@pytest.mark.parametrize("use_index", [True, False], ids=["selective-indexed", "full-snapshot"])
def test_selective_query(benchmark, spark, big, use_index):
    ph.build_index(None, big.path, ["k10", "k10k"])
    pred = (pf.field("k10k") == 4242) & (pf.field("k10") == "cat-2")
    reports = []

    def run():
        res = ph.read(spark, big.path, pred, use_index=use_index)
        reports.append(res.report)
        res.df.write.format("noop").mode("overwrite").save()

    benchmark.pedantic(run, rounds=3, iterations=1, warmup_rounds=1)
    r = reports[-1]
    benchmark.extra_info.update(
        rows_to_read=r["rows_to_read_known"],
        rows_skipped=r["rows_skipped"],
        slices_candidate=r["slices_candidate"],
        layout=LAYOUT,
    )


def _groups(shape):
    """Sorted positions and bounds: the uniform layout's k10k column in one file slice
    (10,000 values of ~10 rows among 100,000) or the k10 column (10 values of 10,000 rows)."""
    rng = np.random.default_rng(4)
    n, per = (10_000, 10) if shape == "10k-of-10" else (10, 10_000)
    codes = rng.integers(0, n, n * per)
    order = np.argsort(codes, kind="stable").astype(np.uint32)
    bounds = np.searchsorted(codes[order], np.arange(n + 1)).astype(np.int64)
    return order, bounds


@pytest.mark.benchmark(group="hudi-encode-bitmaps")
@pytest.mark.parametrize("shape", ["10k-of-10", "10-of-10k"])
@pytest.mark.parametrize("impl", ["kernel", "twin"])
def test_encode_bitmaps(benchmark, shape, impl):
    """One slice's bitmaps to Base64 text: the kernel (``encode_groups_array``, one call)
    against its twin (``encode_groups``: one Python Base64 call per bitmap)."""
    from paimon_fast.hudi import model

    pos, bounds = _groups(shape)
    fn = model.encode_groups_array if impl == "kernel" else model.encode_groups
    got = benchmark(fn, pos, bounds)
    assert len(got) == len(bounds) - 1
