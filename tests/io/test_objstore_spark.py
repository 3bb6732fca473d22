"""Datasets on S3 (a moto server on 127.0.0.1) built and read on local Spark: the
executors read and write through pyarrow's S3 filesystem (no Hadoop S3 connector
is on this Spark's classpath), and every answer equals the same run on local files."""

import pytest

pyspark = pytest.importorskip("pyspark")

from paimon_fast.tables import ParquetDataset  # noqa: E402
from tests.support.objstore_support import (  # noqa: E402
    OPTIONS,
    PREDICATES,
    no_statistics,  # noqa: F401  (an autouse fixture)
    oracle,
    paimon_catalog,
    write_dataset,
)

pytestmark = pytest.mark.spark


def _ids(df):
    return sorted(r["id"] for r in df.select("id").collect())


def test_spark_build_read_delete_global_index_on_s3_equal_local(spark, tmp_path, s3_server):
    from paimon_fast import spark as pfs

    local = write_dataset(str(tmp_path / "local"))
    bucket = s3_server.new_bucket()
    s3_server.upload_dir(local, bucket, "events")
    uri = s3_server.uri(bucket, "events")
    with pytest.raises(Exception):  # no Hadoop S3 connector here: Spark itself cannot read the dataset
        spark.read.parquet(f"s3a://{bucket}/events").count()

    got = {}
    for where, root in (("local", local), ("s3", uri)):
        rep = pfs.build(spark, root, OPTIONS)
        assert rep.files_built == 6
        answers = {}
        for w in PREDICATES[:3]:
            df = pfs.read(spark, root, w)
            # the same on the executors (Arrow tasks reading through the pickled store) as on the driver
            on_executors = pfs.read(spark, root, w, driver_max_bytes=0)
            assert (df.report.read_on, on_executors.report.read_on) == ("driver", "executors"), w
            assert _ids(on_executors) == _ids(df) and on_executors.count() == df.count(), w
            answers[w] = (_ids(df), df.report.files_skipped, df.report.rows_read)
        drep = pfs.delete(spark, root, "status = 'sent'", driver_max_bytes=0)
        gl = pfs.build_global_index(spark, root, "name", {"sorted-index.records-per-range": "2000"})
        df = pfs.read(spark, root, "name = 'us4-2'")
        got[where] = (
            answers,
            drep.rows_deleted,
            _ids(df),
            df.report.global_index_used,
            sum(f["row_count"] for f in gl["files"]),
            gl["total_row_count"],
            sorted(ParquetDataset(root).scan("status = 'paid' AND id < 900")[0].column("id").to_pylist()),
        )
    assert got["s3"] == got["local"]
    answers = got["s3"][0]
    for w in PREDICATES[:3]:
        assert answers[w][0] == oracle(local, w)
    sent = set(oracle(local, "status = 'sent'"))
    assert got["s3"][1] == len(sent) and got["s3"][3] == ["name"]
    assert got["s3"][2] == [i for i in oracle(local, "name = 'us4-2'") if i not in sent]
    assert got["s3"][4] == got["s3"][5] == 4800  # every row indexed, in range files
    # the Data Source and the top-N read on the executors through the same store
    df = spark.read.format("paimon-fast").load(uri).where("id = 1234")
    assert _ids(df) == oracle(local, "id = 1234")
    top = pfs.top_n(spark, uri, "score", 7, columns=["id", "score"], driver_max_bytes=0)
    assert top.to_pylist() == ParquetDataset(local).top_n("score", 7, columns=["id", "score"]).to_pylist()
    keys = s3_server.keys(bucket, "events/_global_index/name/")
    assert len([k for k in keys if k.endswith(".index")]) >= 2


def test_paimon_global_index_built_on_spark_on_s3(spark, s3_server):
    """create_global_index(spark=...) on a pypaimon table on S3: executors read the row
    ranges' Parquet files and write the index files through pypaimon's pickled S3
    filesystem; the driver commits; lookups equal the in-process build's."""
    pytest.importorskip("pypaimon")
    import paimon_fast as pf
    from paimon_fast.paimon import create_global_index, read_with_index
    from tests.support.paimon_helpers import create_sample_table

    opts = {"row-tracking.enabled": "true", "data-evolution.enabled": "true"}
    got = []
    for use_spark in (False, True):
        bucket = s3_server.new_bucket()
        sc = paimon_catalog(s3_server, bucket)
        create_sample_table.__globals__["catalog"], saved = (lambda wh: sc), create_sample_table.__globals__["catalog"]
        try:
            create_sample_table("S3", options=opts, files=3, n=500)
        finally:
            create_sample_table.__globals__["catalog"] = saved
        n = create_global_index(sc.get_table("db.t"), "name", spark=spark if use_spark else None)
        t = sc.get_table("db.t")
        answers = []
        for pred in (pf.field("name") == "name-777", pf.field("name").isin(["name-3", "name-1499", "zzz"])):
            a, rep = read_with_index(t, pred)
            assert rep.global_indexes
            answers.append(sorted(a.column("id").to_pylist()))
        got.append((n > 0, answers))
    assert got[0] == got[1] and got[1][1] == [[777], [3, 1499]]


def test_hudi_build_on_spark_on_s3(spark, tmp_path, s3_server):
    """The Hudi sidecar built on Spark executors for a Java Hudi table copied to the S3
    server (executors read base files and write segments through pyarrow's S3
    filesystem); pruned reads equal the in-process build on local files."""
    import paimon_fast.hudi as ph
    from tests.support.hudi_support import battery, indexable, require_tables, row_multiset, snapshot, unzip_table

    require_tables()
    local = unzip_table("sample_table/cow/v9_txns_simple_nometa.zip", str(tmp_path / "t"))
    bucket = s3_server.new_bucket()
    s3_server.upload_dir(local, bucket, "tbl")
    uri = s3_server.uri(bucket, "tbl")
    snap = snapshot(local)
    cols = indexable(snap.schema)
    ph.build_index(None, local, cols)
    rep = ph.build_index(spark, uri, cols, driver_max_slices=0)
    assert rep["indexed_on"] == "executors" and rep["slices_indexed"] > 0
    for p in battery(snap, cols, snap.schema, max_single=2)[:6]:
        res = ph.read(spark, uri, p)
        assert row_multiset(res.df.toArrow().to_pylist()) == row_multiset(ph.read_arrow(local, p).table.to_pylist()), p
