"""pfs.read on a real local SparkSession, every way it can read: on the driver (a local relation),
on the executors (Spark's reader for whole files, the page-level reader in Arrow tasks for files
read at rows), and the driver read that gives up past its threshold.  Every answer, and every
count(), equals an oracle that shares no code with the product's filter: pyarrow's plain read of
the directory, minus the rows the deletes matched, filtered by ``tests/support/sql_oracle.py``."""

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pyspark = pytest.importorskip("pyspark")

from tests.support import sql_oracle  # noqa: E402
from paimon_fast.core.sqlpredicate import parse_predicate  # noqa: E402
from paimon_fast.tables import ParquetDataset  # noqa: E402
from tests.support.spark_support import COLS, answers_in_one_job, write_dataset  # noqa: E402

pytestmark = pytest.mark.spark

OPTIONS = {
    "file-index.bloom-filter.columns": "name",
    "file-index.bloom-filter.name.items": "64",
    "file-index.bloom-filter.name.fpp": "0.01",
    "file-index.bitmap.columns": "status",
    "file-index.range-bitmap.columns": "score",
    "file-index.bsi.columns": "id",
}
DELETES = ["id IN (7, 1502, 4444, 8999)", "name LIKE 'us4-3%' AND score > 40", "status = 'sent' AND id < 300"]


def _leaf(rng):
    kind = rng.integers(0, 14)
    i = int(rng.integers(0, 9000))
    if kind == 0:
        return f"id = {i}"
    if kind == 1:
        return f"id IN ({i}, {i + 1}, {int(rng.integers(0, 9000))}, -4)"
    if kind == 2:
        return f"id BETWEEN {i} AND {i + int(rng.integers(0, 400))}"
    if kind == 3:
        return f"id >= {i}"
    if kind == 4:
        return f"name = '{['eu', 'us'][i % 2]}{i % 6}-{i % 9}'"
    if kind == 5:
        return f"name LIKE '{['eu', 'us'][i % 2]}{i % 6}%'"
    if kind == 6:
        return "name IS NULL"
    if kind == 7:
        return f"score > {round(float(rng.uniform(80, 100)), 1)}"
    if kind == 8:
        lo = round(float(rng.uniform(0, 100)), 1)
        return f"score BETWEEN {lo} AND {lo + 0.5}"
    if kind == 9:
        return f"status = '{['new', 'paid', 'sent'][i % 3]}'"
    if kind == 10:
        return "status IS NULL"
    if kind == 11:
        return "status NOT IN ('new', 'sent')"
    if kind == 12:
        return f"region = '{['eu', 'us'][i % 2]}'"
    return f"name != 'eu0-{i % 9}'"


def predicates(n, seed=11):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        shape = rng.integers(0, 5)
        a, b, c = _leaf(rng), _leaf(rng), _leaf(rng)
        out.append([a, f"{a} AND {b}", f"{a} OR {b}", f"({a} OR {b}) AND {c}", f"NOT ({a}) AND {b}"][shape])
    return out


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """6 files of 1,500 rows under region= partitions: every file index kind, a bitmap global
    index on name, and deletion vectors from three deletes; and the oracle's rows."""
    from paimon_fast.tables.globalindex import build_global_index_local

    root = write_dataset(tmp_path_factory.mktemp("reads"))
    ds = ParquetDataset(root)
    ds.build(OPTIONS)
    build_global_index_local(root, "name")
    # the oracle's rows: pyarrow's plain read of the directory (hive partitions), minus the rows
    # each delete predicate matches there
    t = pq.read_table(root)
    t = t.set_column(t.schema.get_field_index("region"), "region", t.column("region").cast(pa.string()))
    rows = t.select(COLS).to_pylist()
    for where in DELETES:
        assert ds.delete(where).rows_deleted > 0
        pred = parse_predicate(where)
        rows = [r for r in rows if not sql_oracle.holds(pred, r)]
    return root, rows


def oracle(rows, text, columns=COLS):
    pred = parse_predicate(text)
    return sorted(tuple(r[c] for c in columns) for r in rows if sql_oracle.holds(pred, r))


PREDICATES = predicates(20)


@pytest.mark.parametrize(
    "way", ["driver", "executors", "executors-by-tasks", "driver-gives-up", "data-source", "data-source-per-file"]
)
def test_every_way_gives_the_oracle_rows_and_counts(spark, dataset, way, monkeypatch):
    from paimon_fast import spark as pfs
    from paimon_fast.spark import read_job

    root, rows = dataset
    limit = None
    if way == "executors":
        limit = 0
    elif way == "executors-by-tasks":  # every file an index answered with rows read at its rows
        limit = 0
        monkeypatch.setattr(read_job, "WHOLE_SHARE", 1.0)
    elif way == "driver-gives-up":  # the estimate says yes, the rows read pass the threshold
        limit = 1
        monkeypatch.setattr(ParquetDataset, "read_cost", lambda *a, **k: 0)
    if way.startswith("data-source"):  # spark.read.format("paimon-fast"): one task, or one per file
        src = spark.read.format("paimon-fast")
        if way == "data-source-per-file":
            src = src.option("paimon-fast.read.driver-max-bytes", "0")
        qs = PREDICATES[:8]  # each load() plans in a Python worker of its own: fewer of them
        got = answers_in_one_job([src.option("where", q).load(root) for q in qs])
        for q, g in zip(qs, got):
            assert g == oracle(rows, q), (way, q)
        return
    dfs = [pfs.read(spark, root, q, driver_max_bytes=limit) for q in PREDICATES]
    got = answers_in_one_job(dfs)
    for i, (q, df, g) in enumerate(zip(PREDICATES, dfs, got)):
        want = oracle(rows, q)
        assert g == want, (way, q)
        if way == "driver" or i % 4 == 0:  # an executor count is a Spark job: a quarter of them
            assert df.count() == len(want), (way, q)
            # collect() of the frame itself: Rows built from Arrow (on the driver, or fetched with
            # toArrow from the executors), as Spark's collect() gives them
            rows_back = df.collect()
            assert sorted(tuple(r) for r in rows_back) == want and all(r.__fields__ == COLS for r in rows_back)
    reads = [df.report.read_on for df in dfs]
    if way == "driver":
        assert set(reads) <= {"driver", "nothing to read"} and "driver" in reads
    else:
        assert set(reads) <= {"executors", "nothing to read"} and "executors" in reads
        if way == "executors-by-tasks":
            assert sum(df.report.files_at_rows for df in dfs) > sum(df.report.files_whole for df in dfs) > 0
    assert sum(len(oracle(rows, q)) for q in PREDICATES) > 300
    assert sum(df.report.rows_skipped_by_bitmap for df in dfs) > 0 and sum(df.report.files_skipped for df in dfs) > 0


def test_projection_and_count_read_only_what_they_need(spark, dataset):
    from paimon_fast import spark as pfs
    from paimon_fast.io.parquet import PageReadStats

    root, rows = dataset
    q = "status = 'paid' AND score > 60"
    for limit in (None, 0):
        df = pfs.read(spark, root, q, columns=["id", "region"], driver_max_bytes=limit)
        assert df.columns == ["id", "region"]
        assert sorted(tuple(r) for r in df.collect()) == oracle(rows, q, ["id", "region"])
        assert df.count() == len(oracle(rows, q))
    # count() of a driver-local answer reads the predicate's columns at the selected rows only
    ds = ParquetDataset(root)
    plan = ds.plan(q)
    seen = []
    real = ParquetDataset.read_kept_many

    def spy(self, parts, columns, predicate=None, schema=None, positions=False, stats=None, threads=None):
        seen.append(list(columns))
        return real(self, parts, columns, predicate, schema, positions, stats, threads)

    try:
        ParquetDataset.read_kept_many = spy
        df = pfs.read(spark, root, q)
        assert df.report.read_on == "driver" and not seen  # nothing read before Spark needs it
        # every leaf answered exactly (a bitmap, a range bitmap with no NaN): counted, nothing read
        assert df.count() == len(oracle(rows, q)) and not seen
        assert len(df.collect()) == df.count()
        assert any(c == list(df.columns) for c in seen)
        seen.clear()
        inexact = "name LIKE 'us%' AND score > 60"  # LIKE: only a bloom filter, the rows are filtered
        df = pfs.read(spark, root, inexact)
        assert df.count() == len(oracle(rows, inexact)) and seen and all(c == [] for c in seen)
    finally:
        ParquetDataset.read_kept_many = real
    st = PageReadStats()
    n = sum(ds.read_kept(p, [], plan.predicate, stats=st).num_rows for p in plan.kept)
    assert n == len(oracle(rows, q)) and st.rows < sum(p.rows for p in plan.kept)


def test_report_says_where_and_why(spark, dataset):
    from paimon_fast import spark as pfs

    root, _ = dataset
    df = pfs.read(spark, root, "id = 4321")
    rep = df.report
    assert rep.read_on == "driver" and "at most 32.0 MB" in rep.why and 0 < rep.estimated_bytes <= 32 << 20
    assert "read on the driver" in str(rep)
    spark.conf.set("paimon-fast.read.driver-max-bytes", "0")
    try:
        rep = pfs.read(spark, root, "id = 4321").report
        assert rep.read_on == "executors" and "off" in rep.why
    finally:
        spark.conf.unset("paimon-fast.read.driver-max-bytes")
    rep = pfs.read(spark, root, "score > 10", driver_max_bytes="1kb").report
    assert rep.read_on == "executors" and "more than" in rep.why
    rep = pfs.read(spark, root, "id = -1").report
    assert rep.read_on == "nothing to read"
    with pytest.raises(ValueError, match="driver-max-bytes"):
        pfs.read(spark, root, "id = 1", driver_max_bytes="lots")
    from paimon_fast.errors import ColumnNotFoundError

    with pytest.raises(ColumnNotFoundError):
        pfs.read(spark, root, "id = 1", columns=["nope"])


def test_plain_spark_reader_still_reads_the_directory(spark, dataset):
    """After every build above (file indexes, a global index, deletion vectors) Spark's own reader
    reads the directory as plain Parquet: every row, deleted ones included (they are deleted for
    paimon-fast's readers only)."""
    root, rows = dataset
    assert spark.read.parquet(root).count() == 9000
    assert sorted(os.listdir(root)) == [
        "_commits",
        "_deletion_vectors",
        "_file_index",
        "_global_index",
        "_paimon_fast_catalog.json",
        "region=eu",
        "region=us",
    ]


def test_driver_rows_are_what_spark_collect_returns(spark):
    """collect() of a driver-local answer builds its rows from Arrow without the JVM: for every
    flat type (nulls, NaN, -0.0, time zones, dates before 1970, decimals, unicode) the rows equal
    Spark's own collect() of the same Arrow table; other types are left to Spark."""
    import datetime as dt
    from decimal import Decimal

    from pyspark.sql.pandas.types import from_arrow_schema

    from paimon_fast.spark.frames import arrow_rows, local_frame

    t = pa.table(
        {
            "b": pa.array([True, None, False, True]),
            "i8": pa.array([-128, 127, None, 0], pa.int8()),
            "i16": pa.array([-1, None, 32767, 5], pa.int16()),
            "i32": pa.array([None, -(2**31), 2**31 - 1, 7], pa.int32()),
            "i64": pa.array([2**63 - 1, -(2**63), None, 0], pa.int64()),
            "f32": pa.array([0.1, float("nan"), None, -0.0], pa.float32()),
            "f64": pa.array([float("inf"), -0.0, None, 1e-300]),
            "s": pa.array(["x", None, "é\u4e2d", ""]),
            "d": pa.array([dt.date(1969, 12, 31), None, dt.date(2024, 2, 29), dt.date(1, 1, 1)]),
            "ts": pa.array(
                [
                    dt.datetime(2020, 1, 1, 12, 30, 0, 5),
                    None,
                    dt.datetime(1960, 6, 1),
                    dt.datetime(2038, 1, 19, 3, 14, 8),
                ],
                pa.timestamp("us", tz="UTC"),
            ),
            "ntz": pa.array(
                [dt.datetime(2001, 2, 3, 4, 5, 6, 7), dt.datetime(1900, 1, 1), None, dt.datetime(2100, 12, 31)],
                pa.timestamp("us"),
            ),
            "dec": pa.array([Decimal("1.50"), None, Decimal("-99999999.99"), Decimal("0.01")], pa.decimal128(10, 2)),
        }
    )
    schema = from_arrow_schema(t.schema, prefer_timestamp_ntz=True)
    mine = arrow_rows(t, schema)
    theirs = local_frame(spark, t, schema).collect()
    assert [r.asDict() for r in mine] == [r.asDict() for r in theirs] or repr(mine) == repr(
        theirs
    )  # NaN != NaN: compare their text too
    assert repr(mine) == repr(theirs) and [r.__fields__ for r in mine] == [r.__fields__ for r in theirs]
    nested = pa.table({"l": pa.array([[1], None]), "bin": pa.array([b"a", None])})
    assert arrow_rows(nested, from_arrow_schema(nested.schema)) is None


# ---------------------------------------------------------------- what Spark reads that we must read the same


def _rows(df):
    """The rows as sortable tuples (NaN as a string: NaN != NaN)."""
    return sorted(tuple("NaN" if isinstance(v, float) and v != v else v for v in r) for r in df.collect())


@pytest.mark.parametrize("max_bytes", [None, 0], ids=["driver", "executors"])
def test_a_hive_null_partition(spark, tmp_path, max_bytes):
    """``h=__HIVE_DEFAULT_PARTITION__`` (a null partition value): files kept whole are read as
    one file each, never through pyarrow's partition discovery of their path."""
    from paimon_fast import spark as pfs

    root = tmp_path / "hive"
    for i, h in enumerate(["7", "10", "__HIVE_DEFAULT_PARTITION__"]):
        (root / f"h={h}").mkdir(parents=True)
        pq.write_table(pa.table({"id": list(range(i * 4, i * 4 + 4))}), root / f"h={h}" / "part-0.parquet")
    plain = spark.read.parquet(str(root))
    for where in ("id >= 3", "h IS NULL", "h = 10 OR id = 9"):
        got = pfs.read(spark, str(root), where, driver_max_bytes=max_bytes)
        assert _rows(got) == _rows(plain.where(where)), where
        assert got.count() == plain.where(where).count(), where


@pytest.mark.parametrize("max_bytes", [None, 0], ids=["driver", "executors"])
def test_a_column_asked_for_twice(spark, dataset, max_bytes):
    from paimon_fast import spark as pfs

    dataset, rows = dataset
    where = "status = 'sent' AND id < 3000"
    got = pfs.read(spark, dataset, where, columns=["id", "name", "id"], driver_max_bytes=max_bytes)
    assert got.columns == ["id", "name", "id"]
    want = oracle(rows, where, ["id", "name", "id"])  # (the dataset has deletion vectors)
    assert want and _rows(got) == want
    assert got.count() == len(want) and got.report.files_total


def test_data_source_leaves_float_filters_to_spark(spark, tmp_path):
    """Spark SQL orders NaN above every number: the Data Source must keep the NaN rows a pushed
    ``x > 1`` would drop under IEEE rules."""
    from paimon_fast.tables import ParquetDataset

    root = tmp_path / "nan"
    root.mkdir()
    x = [1.0, float("nan"), None, 3.0, 0.5, 2.0]
    for i in range(2):
        pq.write_table(pa.table({"id": list(range(i * 6, i * 6 + 6)), "x": x}), root / f"part-{i}.parquet")
    ParquetDataset(str(root)).build({"file-index.range-bitmap.columns": "x"})
    plain = spark.read.parquet(str(root))
    for where in ("x > 1", "x >= 1", "NOT (x <= 1)", "x = 3.0", "x IN (0.5, 2.0)", "id > 3 OR x > 1"):
        got = spark.read.format("paimon-fast").load(str(root)).where(where)
        assert _rows(got) == _rows(plain.where(where)), where
