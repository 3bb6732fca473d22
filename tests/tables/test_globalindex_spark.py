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
    frames.sort(key=lambda x: x[0])  # the stable order: sorted relative POSIX paths
    tags = sum((t.column("tag").to_pylist() for _, t in frames), [])
    nums = sum((t.column("num").to_pylist() for _, t in frames), [])
    return tags, nums


@pytest.mark.parametrize("column", ["tag", "num"])
def test_build_global_index_on_spark(spark, tmp_path, column):
    from paimon_fast.tables import globalindex as sb
    from paimon_fast.tables import globalindex_spark as sbs

    tags, nums = _dataset(tmp_path)
    values = tags if column == "tag" else nums
    listing = sbs.build_global_index(
        spark,
        str(tmp_path),
        column,
        {"sorted-index.records-per-range": "600", "bitmap-index.dictionary-block-size": "64b"},
    )
    assert listing["total_row_count"] == len(values) == 2400
    assert listing["ranges"] == 4 and 1 <= len(listing["files"]) <= 4
    assert sum(f["row_count"] for f in listing["files"]) == len(values)
    d = sb.index_dir(str(tmp_path), column)
    assert sorted(os.listdir(d)) == sorted([f["file"] for f in listing["files"]] + ["_commits"])
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
        [i for i, v in enumerate(values) if v is not None and lo <= v <= hi]
    )
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
    # a rebuild replaces the files of the earlier build (gc removes them once no live listing names them)
    listing2 = sbs.build_global_index(spark, str(tmp_path), column, {"sorted-index.records-per-range": "5000"})
    assert len(listing2["files"]) == 1
    from paimon_fast.tables.gc import collect

    collect(str(tmp_path), delete=True, min_age=0)
    assert sorted(os.listdir(d)) == sorted([listing2["files"][0]["file"], "_commits"])
    assert sb.load_global_index(str(tmp_path), column).evaluate(f == probe) == want


def test_spark_range_files_are_the_writers_bytes_for_their_rows(spark, tmp_path):
    """Each file of the Spark build covers one key range, the files partition the row ids, and
    each file's bytes and meta are what the in-process writer makes of exactly its rows (Spark
    does not sort: the writer's kernel orders every range by key and row id)."""
    from paimon_fast.globalindex import format as gformat
    from paimon_fast.tables import globalindex as sb
    from paimon_fast.tables import globalindex_spark as sbs
    from paimon_fast.globalindex import writer
    from paimon_fast.globalindex.keys import KeyCodec

    tags, _ = _dataset(tmp_path)
    opts = {"bitmap-index.dictionary-block-size": "64b"}
    listing = sbs.build_global_index(spark, str(tmp_path), "tag", {"sorted-index.records-per-range": "600", **opts})
    assert len(listing["files"]) >= 2
    d = sb.index_dir(str(tmp_path), "tag")
    seen = BitMap64()
    spans = []
    for f in listing["files"]:
        data = open(os.path.join(d, f["file"]), "rb").read()
        r = gformat.BitmapIndexFile(KeyCodec("STRING"), data)
        rows = r.null_rows() | r.nonnull_rows()
        assert len(rows) == f["row_count"] and not (rows & seen)
        seen |= rows
        ids = np.array(list(rows), dtype=np.uint64)
        w = writer("STRING", opts)
        w.write_batch(pa.array([tags[i] for i in ids.tolist()], pa.string()), ids)
        assert w.finish() == (data, bytes.fromhex(f["meta"])), f["file"]
        keys = sorted({tags[i] for i in ids.tolist() if tags[i] is not None})
        spans.append((len(r.null_rows()), keys[0], keys[-1]))
    assert seen == BitMap64(range(len(tags)))
    assert all(n == 0 for n, _, _ in spans[1:]), "nulls sort first: only the first range holds them"
    assert all(a[2] < b[1] for a, b in zip(spans, spans[1:])), "key ranges ascend without overlap"


def test_spark_build_row_ids_with_awkward_file_names(spark, tmp_path):
    """Row ids map back to the right files and rows whatever the names: directories and
    names with spaces, percent signs, '#', '+', '=' and non-ASCII letters."""
    from paimon_fast.tables import globalindex as sb
    from paimon_fast.tables import globalindex_spark as sbs

    layout = ["a b/p%20q.parquet", "é#x/b;c=d.parquet", "k=v/x+y.parquet", "plain.parquet"]
    values = {}
    for i, rel in enumerate(layout):
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        vals = [f"v{(i * 7 + j) % 5}" for j in range(40 + i)]
        pq.write_table(pa.table({"s": pa.array(vals, pa.string())}), str(p))
        values[rel] = vals
    listing = sbs.build_global_index(spark, str(tmp_path), "s")
    order = [f["path"] for f in listing["data_files"]]
    assert sorted(order) == sorted(layout)
    flat = sum((values[rel] for rel in order), [])
    idx = sb.load_global_index(str(tmp_path), "s")
    for v in ("v0", "v3"):
        want = BitMap64([i for i, x in enumerate(flat) if x == v])
        assert idx.evaluate(pf.field("s") == v) == want
        rows = sb.row_ids_to_file_rows(want, listing)
        assert sorted(rows) == sorted(rel for rel in layout if v in values[rel])
        for rel, ix in rows.items():
            assert [values[rel][i] for i in ix.tolist()] == [v] * len(ix)


def test_spark_build_mostly_nulls_a_file_without_the_column_and_leftovers(spark, tmp_path):
    """Nulls sort first and may fill whole ranges; a file written before the column existed
    counts as all nulls; an exchange directory left by an interrupted build is gc's (once it is older than
    the grace period: a young one may be a running build's)."""
    from paimon_fast.tables import globalindex as sb
    from paimon_fast.tables import globalindex_spark as sbs

    rng = np.random.default_rng(5)
    a = [None if rng.random() < 0.8 else int(rng.integers(-20, 20)) for _ in range(900)]
    c = [int(rng.integers(-20, 20)) for _ in range(600)]
    pq.write_table(pa.table({"v": pa.array(a, pa.int64()), "w": pa.array(range(900))}), str(tmp_path / "a.parquet"))
    pq.write_table(pa.table({"w": pa.array(range(300))}), str(tmp_path / "b.parquet"))
    pq.write_table(pa.table({"v": pa.array(c, pa.int64()), "w": pa.array(range(600))}), str(tmp_path / "c.parquet"))
    values = a + [None] * 300 + c
    stale = os.path.join(sb.index_dir(str(tmp_path), "v"), ".runs-0123456789ab")
    os.makedirs(stale)
    open(os.path.join(stale, "00000000.arrow"), "wb").close()
    listing = sbs.build_global_index(spark, str(tmp_path), "v", {"sorted-index.records-per-range": "300"})
    assert listing["ranges"] == 6 and len(listing["files"]) >= 2
    assert sorted(os.listdir(sb.index_dir(str(tmp_path), "v"))) == sorted(
        [f["file"] for f in listing["files"]] + ["_commits", ".runs-0123456789ab"]
    )
    from paimon_fast.tables.gc import collect

    assert collect(str(tmp_path), delete=True).too_young == 1  # left to its builder, if alive
    collect(str(tmp_path), delete=True, min_age=0)
    assert sorted(os.listdir(sb.index_dir(str(tmp_path), "v"))) == sorted(
        [f["file"] for f in listing["files"]] + ["_commits"]
    )
    idx = sb.load_global_index(str(tmp_path), "v")
    f = pf.field("v")
    assert idx.evaluate(f.is_null()) == BitMap64([i for i, v in enumerate(values) if v is None])
    for probe in (-20, 0, 7, 19):
        assert idx.evaluate(f == probe) == BitMap64([i for i, v in enumerate(values) if v == probe])
    assert idx.evaluate(f > 5) == BitMap64([i for i, v in enumerate(values) if v is not None and v > 5])
