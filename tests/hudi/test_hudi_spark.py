"""Spark side of the Hudi bitmap index: bitmap bytes checked in the JVM against
RoaringBitmap's own ``Roaring64NavigableMap.serializePortable`` (the jar ships
with pyspark), index builds on executors, pruned reads through ``mapInArrow``."""

import os
import shutil

import numpy as np
import pyarrow as pa
import pytest

import paimon_fast as pf
import paimon_fast.hudi as ph
from paimon_fast.hudi import model, storage
from paimon_fast.hudi.table import table_state

from tests.support.hudi_support import battery, indexable, oracle_rows, row_multiset, snapshot, table_zips, unzip_table

pyspark = pytest.importorskip("pyspark")
pytestmark = pytest.mark.spark


def _java_portable64(spark, positions):
    jvm = spark.sparkContext._jvm
    gw = spark.sparkContext._gateway
    raw = np.asarray(positions, dtype="<i8").tobytes()
    buf = jvm.java.nio.ByteBuffer.wrap(bytearray(raw)).order(jvm.java.nio.ByteOrder.LITTLE_ENDIAN).asLongBuffer()
    arr = gw.new_array(jvm.long, len(positions))
    buf.get(arr)
    m = jvm.org.roaringbitmap.longlong.Roaring64NavigableMap.bitmapOf(arr)
    m.runOptimize()
    bos = jvm.java.io.ByteArrayOutputStream()
    m.serializePortable(jvm.java.io.DataOutputStream(bos))
    return bytes(bos.toByteArray())


def test_bitmap_bytes_match_java_roaring64(spark):
    import base64

    rng = np.random.default_rng(7)
    cases = [
        [],
        [0],
        [0, 1, 2],
        list(range(0, 200_000, 3)),
        list(range(70_000)),
        sorted(set(rng.integers(0, 1 << 20, 5000).tolist())),
        list(range(100)) + list(range(4096, 9000)) + [65535, 65536, 1 << 24],
    ]
    for pos in cases:
        java = _java_portable64(spark, pos)
        assert base64.b64decode(model.encode_bitmap(pos)) == java
        # the grouped writer used by index builds produces the same bytes
        a = np.asarray(pos, np.uint32)
        got = model.encode_groups(a, np.array([0, len(a)], np.int64))[0]
        assert base64.b64decode(got) == java
        assert list(model.decode_bitmap(got)) == pos


pytest.importorskip("hudi", reason="the `hudi` package (paimon-fast[tables]) is not installed")
ZIPS = table_zips()
SPARK_TABLES = [
    z
    for z in ZIPS
    if any(
        k in z
        for k in (
            "cow/v9_txns_simple_nometa",
            "cow/v6_simplekeygen_hivestyle_no_metafields",
            "avro/v9_txns_complex_meta",
            "parquet/v6_nonpartitioned_rollback",
            "cow/v8_empty",
        )
    )
]


@pytest.fixture(scope="module")
def spark_tables(tmp_path_factory):
    if not SPARK_TABLES:
        pytest.skip("real Hudi tables not found at <repo>/../shared/hudi-tables")
    root = tmp_path_factory.mktemp("hudi_spark")
    return {z: unzip_table(z, str(root / f"s{i}")) for i, z in enumerate(SPARK_TABLES)}


def _records(path):
    m = storage.read_manifest(path)
    t = pa.concat_tables([storage.RECORD_SCHEMA.empty_table()] + [storage.read_segment(path, s) for s in m["segments"]])
    return sorted(zip(t.column("key").to_pylist(), t.column("bitmap").to_pylist())), sorted(
        (e["file_id"], e["base_file"], e["row_count"], e["positions"]) for e in m["slices"]
    )


@pytest.mark.parametrize("zip_rel", SPARK_TABLES)
def test_spark_build_and_read(spark, spark_tables, zip_rel, tmp_path):
    path = spark_tables[zip_rel]
    cols = indexable(table_state(path).schema)
    rep = ph.build_index(spark, path, cols, driver_max_slices=0)
    assert rep["slices_indexed"] == len(table_state(path).slices)
    assert rep["indexed_on"] == ("executors" if rep["slices_indexed"] else None)
    local = str(tmp_path / "local")
    shutil.copytree(path, local)
    shutil.rmtree(os.path.join(local, storage.INDEX_DIR))
    ph.build_index(None, local, cols)
    assert _records(path) == _records(local)  # executors write what the in-process build writes
    snap = snapshot(path)
    preds = battery(snap, cols, table_state(path).schema)
    for pred, limit in ((preds[0], None), (preds[-1], None), (preds[-1], 0)):
        res = ph.read(spark, path, pred, driver_max_bytes=limit)
        got = res.df.toArrow().to_pylist()
        want = oracle_rows(snap, pred)
        names = [f.name for f in table_state(path).schema]
        assert row_multiset(got, names) == row_multiset(want, names), (pred, res.report)
        assert res.df.count() == len(want)
        assert res.report["slices_candidate"] + res.report["slices_pruned"] == res.report["slices_total"]
        if limit == 0:
            assert res.report["read_on"] == "executors"


def test_spark_read_reports_skipping(spark, spark_tables):
    z = [z for z in SPARK_TABLES if "cow/v9_txns_simple_nometa" in z]
    if not z:
        pytest.skip("table not available")
    path = spark_tables[z[0]]
    ph.build_index(None, path, ["region", "currency", "txn_type"])
    snap = snapshot(path)
    pred = (pf.field("region") == "us") & (pf.field("currency") == "USD")
    res = ph.read(spark, path, pred)
    assert res.report["slices_pruned"] >= 2 and res.report["rows_skipped"] > 0
    assert res.report["read_on"] == "driver", res.report  # few candidate rows: no scan job
    want = row_multiset(oracle_rows(snap, pred))
    assert res.df.count() == len(want)
    assert row_multiset(res.df.toArrow().to_pylist()) == want
