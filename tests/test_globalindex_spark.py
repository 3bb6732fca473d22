"""Sorted bitmap global index build on Spark (local[2]): range files, metadata, row ids."""
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyroaring import BitMap64

import paimon_fast as pf

pyspark = pytest.importorskip("pyspark", reason="pyspark (the 'spark' extra) is not installed")
pytestmark = pytest.mark.spark


@pytest.fixture(scope="session")
def gi_spark():
    import sys

    from pyspark.sql import SparkSession

    # Python workers must run this interpreter and find this checkout of paimon_fast
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    root = os.path.dirname(os.path.dirname(os.path.abspath(pf.__file__)))
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
    spark = (SparkSession.builder.master("local[2]").appName("paimon-fast-globalindex-tests")
             .config("spark.sql.shuffle.partitions", "4").config("spark.ui.enabled", "false")
             .getOrCreate())
    yield spark


def _dataset(tmp_path):
    rng = np.random.default_rng(11)
    frames = []
    layout = [("a/part-0.parquet", 700), ("a/part-1.parquet", 500), ("b.parquet", 900), ("c/d/e.parquet", 300)]
    for rel, n in layout:
        tags = [None if rng.random() < 0.04 else f"t{int(rng.integers(0, 60)):02d}" for _ in range(n)]
        nums = [None if rng.random() < 0.04 else int(rng.integers(-500, 500)) for _ in range(n)]
        t = pa.table({"tag": pa.array(tags, pa.string()), "num": pa.array(nums, pa.int32())})
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(t, str(p), row_group_size=256)
        frames.append((rel, t))
    frames.sort(key=lambda x: x[0])          # the stable order: sorted relative POSIX paths
    tags = sum((t.column("tag").to_pylist() for _, t in frames), [])
    nums = sum((t.column("num").to_pylist() for _, t in frames), [])
    return tags, nums


@pytest.mark.parametrize("column", ["tag", "num"])
def test_build_global_index_on_spark(gi_spark, tmp_path, column):
    from paimon_fast.globalindex import spark_build as sb

    tags, nums = _dataset(tmp_path)
    values = tags if column == "tag" else nums
    listing = sb.build_global_index(gi_spark, str(tmp_path), column,
                                    {"sorted-index.records-per-range": "600",
                                     "bitmap-index.dictionary-block-size": "64b"})
    assert listing["total_row_count"] == len(values) == 2400
    assert listing["ranges"] == 4 and 1 <= len(listing["files"]) <= 4
    assert sum(f["row_count"] for f in listing["files"]) == len(values)
    d = sb.index_dir(str(tmp_path), column)
    assert sorted(os.listdir(d)) == sorted([f["file"] for f in listing["files"]] + ["index.json"])
    idx = sb.load_global_index(str(tmp_path), column)
    f = pf.field("x")
    probe = "t07" if column == "tag" else 17
    want = BitMap64([i for i, v in enumerate(values) if v == probe])
    assert len(want) > 0
    assert idx.evaluate(f == probe) == want
    opened = sum(1 for x in idx.files if x._reader is not None)
    assert opened <= 2, "range files must be pruned by their key ranges"
    assert idx.evaluate(f.is_null()) == BitMap64([i for i, v in enumerate(values) if v is None])
    lo, hi = ("t10", "t20") if column == "tag" else (-100, 100)
    assert idx.evaluate(f.between(lo, hi)) == BitMap64(
        [i for i, v in enumerate(values) if v is not None and lo <= v <= hi])
    assert idx.evaluate(f != probe) == BitMap64([i for i, v in enumerate(values) if v is not None and v != probe])
    # row ids back to files and rows
    rows = sb.row_ids_to_file_rows(want, listing)
    got = []
    for rel, ix in rows.items():
        col = pq.read_table(os.path.join(str(tmp_path), rel)).column(column).to_pylist()
        got += [col[i] for i in ix.tolist()]
    assert got == [probe] * len(want)
    if column != "tag":
        return
    # a rebuild replaces the files of the earlier build
    listing2 = sb.build_global_index(gi_spark, str(tmp_path), column, {"sorted-index.records-per-range": "5000"})
    assert len(listing2["files"]) == 1
    assert sorted(os.listdir(d)) == sorted([listing2["files"][0]["file"], "index.json"])
    assert sb.load_global_index(str(tmp_path), column).evaluate(f == probe) == want
