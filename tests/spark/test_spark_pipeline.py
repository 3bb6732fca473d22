"""The Spark pipeline on a real local SparkSession (local[2]): executor-side
builds, idempotent re-runs, killed tasks, pruned reads equal to full scans,
and the paimon-fast Data Source."""

import io
import os
from contextlib import redirect_stdout

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pyspark = pytest.importorskip("pyspark")

import tests.support.toy_index  # noqa: E402,F401  (registers the test-only "test-positions" index type)
from paimon_fast.tables import CATALOG_NAME, ParquetDataset  # noqa: E402
from tests.support.spark_support import (  # noqa: E402
    COLS,
    OPTIONS,
    answers_in_one_job,
    full_scan_answers,
    plain,
    write_dataset,
)

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def dataset(spark, tmp_path_factory):
    from paimon_fast import spark as pfs

    root = write_dataset(tmp_path_factory.mktemp("ds"))
    progress = []
    rep = pfs.build(spark, root, OPTIONS, progress=lambda d, t: progress.append((d, t)))
    assert rep.files_built == 6 and rep.rows == 9000
    assert progress[-1] == (6, 6)
    return root


def rows_of(df):
    return sorted(tuple(r) for r in df.select(*COLS).collect())


def index_of(root, rel):
    """Where the dataset at ``root`` keeps the file index container of its data file ``rel`` (the
    current catalog names it: ``_file_index/<rel>.<content hash>.index``)."""
    fi = ParquetDataset(str(root)).read_catalog()["files"][rel]["file_index"]
    return os.path.join(str(root), *fi["path"].split("/"))


def test_build_on_executors_matches_in_process_build(spark, dataset, tmp_path):
    ds = ParquetDataset(dataset)
    cat = ds.read_catalog()
    assert sorted(cat["files"]) == [f.path for f in ds.files()]
    # the same dataset indexed in-process gives byte-identical containers
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(dataset, copy, ignore=shutil.ignore_patterns("_file_index", "_commits", CATALOG_NAME))
    ParquetDataset(str(copy)).build(OPTIONS)
    here = ParquetDataset(str(copy)).read_catalog()["files"]
    for f in ds.files():
        assert open(index_of(dataset, f.path), "rb").read() == open(index_of(copy, f.path), "rb").read(), f.path
        assert cat["files"][f.path]["rows"] == 1500
        # the indexed columns' statistics travel back from the executors as they are kept here
        assert cat["files"][f.path]["stats"] == here[f.path]["stats"] and cat["files"][f.path]["stats"]
        assert (
            cat["files"][f.path]["row_groups"]
            == here[f.path]["row_groups"]
            == pq.ParquetFile(os.path.join(dataset, f.path)).metadata.num_row_groups
        )


def test_rerun_is_idempotent_and_rebuilds_stale_files(spark, dataset, tmp_path):
    from paimon_fast import spark as pfs

    ds = ParquetDataset(dataset)
    before = {f.path: os.stat(index_of(dataset, f.path)).st_mtime_ns for f in ds.files()}
    rep = pfs.build(spark, dataset, OPTIONS)
    assert rep.files_built == 0 and rep.files_current == 6
    assert before == {f.path: os.stat(index_of(dataset, f.path)).st_mtime_ns for f in ds.files(refresh=True)}
    # a data file touched after the build has another identity: its index still answers (its bytes
    # are the same, its witness says so) but not as exact, and only it is rebuilt, to the same bytes
    stale = ds.files()[4]
    old_bytes = open(index_of(dataset, stale.path), "rb").read()
    st = os.stat(stale.abs_path)
    os.utime(stale.abs_path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    view = ParquetDataset(dataset).snapshot()
    entries = view.read_catalog()["files"]
    assert {f.path: view.trust(f, entries[f.path]) for f in view.files()} == {
        f.path: "copied" if f.path == stale.path else "verified" for f in view.files()
    }
    assert view.plan("id = 1").report.files_without_index == 0
    rep = pfs.build(spark, dataset, OPTIONS)
    assert rep.built == [stale.path] and rep.files_current == 5
    assert open(index_of(dataset, stale.path), "rb").read() == old_bytes


def test_killed_task_leaves_no_index_and_retry_completes(spark, tmp_path):
    from paimon_fast import spark as pfs

    root = write_dataset(tmp_path / "k", rows=300)
    victim = "region=us/part-1.parquet"
    with pytest.raises(Exception):
        pfs.build(spark, root, OPTIONS, _fault={"file": victim, "mode": "exit"})  # worker dies mid-write
    victims = os.path.join(root, "_file_index", "region=us")
    assert not [n for n in os.listdir(victims) if n.startswith("part-1.parquet") and n.endswith(".index")]
    assert ParquetDataset(root).read_catalog().commit_version is None  # nothing committed
    ds = ParquetDataset(root)
    assert ds.temp_files(), "a killed writer leaves its temporary file (never the .index)"
    rep = pfs.build(spark, root, OPTIONS)  # the retry
    assert rep.files_built == 6
    assert os.path.exists(index_of(root, victim))
    assert ds.temp_files(), "young: the retry cannot tell a dead writer's file from a running one's"
    from paimon_fast.tables.gc import collect

    collect(root, delete=True, min_age=0)
    assert ds.temp_files() == []
    assert pfs.read(spark, root, "id = 1000").count() == 1


def test_file_lacking_an_indexed_column(spark, tmp_path):
    """A file written before a column existed: both builds leave that column out of its index,
    byte for byte alike, and a query on the column still reads the file (its rows are null there)."""
    import shutil

    from paimon_fast import spark as pfs
    from paimon_fast.fileindex import FileIndexFormat

    root = tmp_path / "evolved"
    root.mkdir()
    pq.write_table(
        pa.table({"id": np.arange(0, 200, dtype=np.int64), "name": pa.array([f"n{i % 7}" for i in range(200)])}),
        root / "a.parquet",
    )
    pq.write_table(pa.table({"id": np.arange(200, 300, dtype=np.int64)}), root / "b.parquet")
    opts = {
        "file-index.bloom-filter.columns": "id,name",
        "file-index.bloom-filter.id.items": "300",
        "file-index.bloom-filter.name.items": "10",
        "file-index.in-manifest-threshold": "1 b",
    }
    copy = tmp_path / "copy"
    shutil.copytree(root, copy)
    rep = pfs.build(spark, str(root), opts)
    assert rep.files_built == 2 and rep.rows == 300
    ParquetDataset(str(copy)).build(opts)
    for name in ("a.parquet", "b.parquet"):
        assert open(index_of(root, name), "rb").read() == open(index_of(copy, name), "rb").read()
    assert FileIndexFormat.open(index_of(root, "b.parquet")).columns() == ["id"]
    plan = ParquetDataset(str(root)).plan("name = 'n3'")
    assert [p.file.path for p in plan.kept] == ["a.parquet", "b.parquet"]
    plan = ParquetDataset(str(root)).plan("id = 250")
    assert [p.file.path for p in plan.kept] == ["b.parquet"]


PREDICATES = [
    "id = 4321",
    "id = -5",
    "id IN (1, 1600, 8999, 123456)",
    "id NOT IN (1, 2, 3) AND id < 10",
    "id BETWEEN 2990 AND 3010",
    "name = 'eu1-3'",
    "name = 'nope'",
    "name IN ('us4-0', 'eu0-8')",
    "name IS NULL",
    "name != 'eu0-1' AND id < 100",
    "name LIKE 'us5%'",
    "name LIKE '%-7' AND region = 'eu'",
    "region = 'us' AND id < 4600",
    "region = 'eu' OR name = 'us5-2'",
    "score = 50.5",
    "score > 99.5 OR id = 17",
    "status = 'paid' AND id < 3020",
    "status IN ('new', 'sent') AND region = 'us'",
    "status IS NULL AND name = 'eu2-4'",
    "NOT (status = 'paid' OR id > 30)",
    "name = 'eu1-3' AND (score > 90 OR id IN (1501, 1502))",
]


def test_pruned_read_equals_full_scan(spark, dataset):
    from paimon_fast import spark as pfs

    want = full_scan_answers(spark, dataset, PREDICATES)
    dfs = [pfs.read(spark, dataset, text) for text in PREDICATES]
    got = answers_in_one_job(dfs)
    for text, g, w in zip(PREDICATES, got, want):
        assert g == w, text
    assert sum(len(w) for w in want) > 500
    assert sum(df.report.files_skipped for df in dfs) >= 30
    assert sum(df.report.rows_skipped_by_bitmap for df in dfs) > 0
    rep = dfs[0].report  # id = 4321
    assert rep.files_read == 1 and rep.rows_read == 1500 and rep.files_total == 6


def test_read_without_index_and_with_predicate_objects(spark, dataset):
    from paimon_fast import field
    from paimon_fast import spark as pfs

    p = (field("name") == "us3-4") | field("id").isin([0, 8999])
    df = pfs.read(spark, dataset, p)
    assert df.report.files_skipped > 0
    base = pfs.read(spark, dataset, p, use_index=False)
    assert base.report.files_skipped == 0
    assert rows_of(df) == rows_of(base) == rows_of(plain(spark, dataset).where("name = 'us3-4' OR id IN (0, 8999)"))


DS_PREDICATES = [
    "id = 4321",
    "status = 'paid' AND region = 'us' AND name = 'us4-2'",
    "id IN (5, 7000) AND name LIKE 'us%'",
    "name <> 'eu0-1' AND id < 40 AND name IS NOT NULL",
    "name = 'us4-1' OR id = 3",
]


def test_data_source_equals_explicit_read(spark, dataset):
    from paimon_fast import spark as pfs

    def src():
        # one load() per query: Spark 4.1-4.3 reuse a relation's last pushed-down plan (see datasource.py)
        return spark.read.format("paimon-fast").load(dataset)

    assert sorted(src().columns) == sorted(COLS)
    explicit = [pfs.read(spark, dataset, t) for t in DS_PREDICATES]
    via_source = [src().where(t) for t in DS_PREDICATES]
    # OR is not pushed by Spark: the `where` option carries it
    via_option = spark.read.format("paimon-fast").option("where", DS_PREDICATES[-1]).load(dataset)
    got = answers_in_one_job(explicit + via_source + [via_option])
    n = len(DS_PREDICATES)
    for i, text in enumerate(DS_PREDICATES):
        assert got[n + i] == got[i], text
    assert got[-1] == got[n - 1]
    assert got[0] and got[n - 1]


def test_data_source_reader_prunes_pushed_filters(dataset):
    from pyspark.sql.datasource import EqualTo, GreaterThan, In, Not

    from paimon_fast.spark.datasource import PaimonFastDataSource

    src = PaimonFastDataSource({"path": dataset})
    schema = src.schema()
    r = src.reader(schema)
    filters = [EqualTo(("id",), 4321), GreaterThan(("score",), 1.0), Not(In(("name",), ("x",)))]
    assert list(r.pushFilters(filters)) == filters  # all handed back: Spark re-checks them
    parts = r.partitions()
    assert len(parts) == 1
    rows = [row for b in r.read(parts[0]) for row in b.to_pylist()]
    assert [x["id"] for x in rows] == [4321] or rows == []


def test_data_source_resolves_a_relative_path_on_the_driver(dataset, tmp_path, monkeypatch):
    """A relative path is made absolute where Spark plans the read (the driver), so executors in
    other working directories (a cluster's workers) read the same dataset; then read from
    elsewhere, as an executor would."""
    import pickle

    from paimon_fast.spark.datasource import PaimonFastDataSource

    monkeypatch.chdir(os.path.dirname(dataset))
    src = PaimonFastDataSource({"path": os.path.basename(dataset), "where": "id = 4321"})
    r = src.reader(src.schema())
    assert r.path == dataset and os.path.isabs(r.path)
    parts = r.partitions()
    shipped = pickle.loads(pickle.dumps(r))  # what an executor receives
    monkeypatch.chdir(tmp_path)  # an executor's own working directory
    rows = [row for p in parts for b in shipped.read(p) for row in b.to_pylist()]
    assert [x["id"] for x in rows] == [4321]
    assert PaimonFastDataSource({"path": "s3://bucket/events"})._path() == "s3://bucket/events"


def test_cli_build_and_query(spark, tmp_path):
    from paimon_fast.cli import main

    root = write_dataset(tmp_path / "c", rows=200)
    out = io.StringIO()
    with redirect_stdout(out):
        assert (
            main(
                [
                    "build",
                    root,
                    "--options",
                    "file-index.bloom-filter.columns=id",
                    "file-index.bloom-filter.id.items=200",
                    "file-index.bloom-filter.id.fpp=0.0001",
                ]
            )
            == 0
        )
        assert main(["query", root, "--where", "id = 250", "--show", "0", "--compare"]) == 0
    text = out.getvalue()
    assert "6 of 6 files indexed" in text
    assert "1 matching rows" in text and "files 1/6 read" in text and "same rows" in text
    assert "DIFFERENT" not in text and "count() " in text and "collect() " in text


def test_cli_relative_path_is_this_process_cwd_not_the_jvms(spark, tmp_path, monkeypatch):
    """The session's JVM started in another directory: a relative path on the command line still
    names the dataset under the process's working directory (the --compare scan included)."""
    from paimon_fast.cli import main

    write_dataset(tmp_path / "rel", rows=200)
    monkeypatch.chdir(tmp_path)
    assert spark.sparkContext._jvm.System.getProperty("user.dir") != str(tmp_path)
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["query", "rel", "--where", "id = 250", "--show", "0", "--compare"]) == 0
    assert "1 matching rows" in out.getvalue() and "same rows" in out.getvalue()


REAL_OPTIONS = {
    "file-index.bitmap.columns": "status,name",
    "file-index.range-bitmap.columns": "score",
    "file-index.bsi.columns": "id",
}
REAL_PREDICATES = [
    "id = 4321",
    "id < 40.5",
    "id = 40.5",
    "id <> 40.5",
    "id BETWEEN 10.5 AND 20.5",
    "score >= 99.95",
    "score < 0.55 AND region = 'eu'",
    "status = 'paid' AND id > 8990",
    "status IN ('new', 'sent') AND score BETWEEN 10 AND 10.5",
    "name = 'us4-1' OR id <= 3.9",
    "status IS NULL AND id < 100",
    "NOT (status = 'paid') AND id < 20",
]


@pytest.fixture(scope="module")
def real_dataset(spark, tmp_path_factory):
    from paimon_fast import spark as pfs

    root = write_dataset(tmp_path_factory.mktemp("ds_real"))
    rep = pfs.build(spark, root, REAL_OPTIONS)
    assert rep.files_built == 6
    return root


def test_real_indexes_pruned_read_equals_full_scan(spark, real_dataset):
    """The pipeline with the real bitmap, range-bitmap and BSI indexes (not the toy one),
    fractional literals included, against plain Spark SQL's answer."""
    from paimon_fast import spark as pfs

    want = full_scan_answers(spark, real_dataset, REAL_PREDICATES)
    dfs = [pfs.read(spark, real_dataset, text) for text in REAL_PREDICATES]
    got = answers_in_one_job(dfs)
    for text, g, w in zip(REAL_PREDICATES, got, want):
        assert g == w, text
    assert sum(df.report.files_skipped for df in dfs) > 0
    assert sum(df.report.rows_skipped_by_bitmap for df in dfs) > 0


def test_to_spark_column_normalises_with_a_schema(spark):
    from pyspark.sql import functions as F

    from paimon_fast import field
    from paimon_fast.errors import LiteralTypeError
    from paimon_fast.spark import to_spark_column

    df = spark.range(20).select(F.col("id").cast("int").alias("x"))
    schema = {"x": pa.int32()}
    cases = [
        (field("x") < 5.5, 6),
        (field("x") == 5.5, 0),
        (field("x") != 5.5, 20),
        (field("x") < 2**70, 20),
        (field("x").isin([5.5, 7]), 1),
    ]
    counts = df.select(
        *[F.sum(to_spark_column(p, schema).cast("int")).alias(f"c{i}") for i, (p, _) in enumerate(cases)]
    ).collect()[0]
    assert [counts[f"c{i}"] or 0 for i in range(len(cases))] == [n for _, n in cases]
    with pytest.raises(LiteralTypeError):
        to_spark_column(field("x") == "a", schema)
