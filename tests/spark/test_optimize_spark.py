"""paimon_fast.spark.optimize on a local SparkSession (paimon_fast/spark/optimize_job.py): the same
commit as the in-process run with the rows read, clustered and written on the executors; Spark's
own reader reads the same rows before and after; the ``paimon-fast optimize`` command in-process
and with --spark.  Answers are compared with the oracle of optimize_support.py."""

import io
from contextlib import redirect_stderr, redirect_stdout

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pyspark = pytest.importorskip("pyspark")

from paimon_fast import spark as pfs  # noqa: E402
from paimon_fast.tables import ParquetDataset  # noqa: E402
from tests.support.optimize_support import WRITE, Place, answers, expected, plain_ids, ready  # noqa: E402

pytestmark = pytest.mark.spark


def _spark_ids(spark, path):
    return sorted(r[0] for r in spark.read.parquet(path).select("id").collect())


@pytest.mark.parametrize("strategy,by", [("order", ["x"]), ("zorder", ["x", "y"])])
def test_spark_optimize(spark, tmp_path, strategy, by):
    place = Place(str(tmp_path / "ds"))
    deleted = ready(place)
    want = expected(place, deleted)
    kept = sorted(ParquetDataset(place.uri).read(None).to_arrow().column("id").to_pylist())
    spark_before = _spark_ids(spark, place.path)
    rep = pfs.optimize(spark, place.uri, by, strategy, **WRITE)
    assert rep.files_before == 6 and rep.rows == len(kept) and rep.global_indexes == ["c"] and "spark" in rep.phases
    assert answers(place.uri) == want
    assert plain_ids(place) == kept
    assert _spark_ids(spark, place.path) == kept and len(spark_before) == len(kept) + len(deleted)
    if strategy == "order":  # each partition sorted across its files, as Paimon's Spark OrderSorter sorts
        for p in ("a", "b"):
            xs = []
            for rel in [f for f in place.data_files() if f.startswith(f"p={p}/")]:
                xs += place.read(rel).column("x").to_pylist()
            n = sum(v is None for v in xs)
            assert xs[:n] == [None] * n and xs[n:] == sorted(xs[n:])
    for rel in place.data_files():
        md = place.metadata(rel)
        assert md.row_group(0).column(0).has_offset_index and md.num_rows <= 1024
    r = ParquetDataset(place.uri).read("c = 'c3'").report
    assert r.files_without_index == 0 and r.global_index_used == ["c"]
    assert pfs.optimize(spark, place.uri, by, strategy, **WRITE).files_before == 0  # clustered already


def test_a_failed_spark_job_leaves_nothing(spark, tmp_path, monkeypatch):
    # the write job fails after the cut job shuffled every row through the staging directory:
    # nothing of the run is visible, its directory is gone, and the next run does the work
    import os

    from paimon_fast.spark import frames

    place = Place(str(tmp_path / "ds"))
    deleted = ready(place)
    want = expected(place, deleted)
    files_before, plain_before = sorted(place.data_files()), plain_ids(place)
    catalog_before = ParquetDataset(place.uri).read_catalog()
    real, calls = frames.task_frame, []

    def failing(spark_, n, fn, schema, parallelism=None):
        calls.append(fn.__name__)
        if fn.__name__ == "write_task":
            assert os.listdir(os.path.join(place.path, "_optimize"))  # (the shuffle is staged)
            raise RuntimeError("a lost executor")
        return real(spark_, n, fn, schema, parallelism)

    monkeypatch.setattr(frames, "task_frame", failing)
    with pytest.raises(RuntimeError, match="lost executor"):
        pfs.optimize(spark, place.uri, "x", **WRITE)
    assert calls == ["sample_task", "cut_task", "write_task"]
    assert sorted(place.data_files()) == files_before and plain_ids(place) == plain_before
    assert ParquetDataset(place.uri).read_catalog() == catalog_before
    assert [n for n in os.listdir(os.path.join(place.path, "_optimize")) if n != "retired"] == []
    assert answers(place.uri) == want
    monkeypatch.setattr(frames, "task_frame", real)
    assert pfs.optimize(spark, place.uri, "x", **WRITE).files_before == 6
    assert answers(place.uri) == want


def test_spark_optimize_on_s3(spark, s3_server):
    # the executors shuffle through the run's directory on the object store (LZ4 IPC files),
    # which is gone after the commit; the answers are the oracle's
    b = s3_server.new_bucket()
    place = Place(s3_server.uri(b, "ds"), s3_server.filesystem(), f"{b}/ds")
    deleted = ready(place)
    want = expected(place, deleted)
    kept = sorted(ParquetDataset(place.uri).read(None).to_arrow().column("id").to_pylist())
    rep = pfs.optimize(spark, place.uri, "x", **WRITE)
    assert rep.files_before == 6 and rep.rows == len(kept) and rep.files_after > 2
    assert answers(place.uri) == want
    assert plain_ids(place) == kept
    left = [k for k in s3_server.keys(b, "ds/_optimize/") if not k.endswith("/") and "/retired/" not in k]
    assert left == []


def test_spark_optimize_cuts_a_range_of_ties(spark, tmp_path):
    # every row has the same key: the sample gives no bound, so one range holds everything; it
    # is written as several files of about the planned size, not one file of all the rows
    d = tmp_path / "ties"
    d.mkdir()
    for k in range(3):
        ids = list(range(k * 2000, (k + 1) * 2000))
        pq.write_table(pa.table({"id": ids, "x": [7] * 2000, "s": [f"v{i}" for i in ids]}), str(d / f"f{k}.parquet"))
    rep = pfs.optimize(spark, str(d), "x", target_file_size=8_000, row_group_rows=512, page_rows=64)
    assert rep.rows == 6000 and rep.files_after >= 3
    sizes = [pq.ParquetFile(str(f)).metadata.num_rows for f in sorted(d.glob("*.parquet"))]
    assert len(sizes) == rep.files_after and max(sizes) - min(sizes) <= 1
    assert sorted(pq.read_table(str(d)).column("id").to_pylist()) == list(range(6000))


def test_spark_keeps_types_spark_rows_would_change(spark, tmp_path):
    # the rows never become Spark rows: unsigned integers, nanoseconds, times of day and
    # dictionary columns come back with the files' own types and values
    import datetime

    d = tmp_path / "u"
    d.mkdir()
    n = 50
    t = pa.table(
        {
            "id": pa.array(range(n), pa.uint32()),
            "x": pa.array([(i * 37) % n for i in range(n)], pa.uint64()),
            "ts": pa.array([1_700_000_000_123_456_789 + i for i in range(n)], pa.timestamp("ns")),
            "tod": pa.array([datetime.time(0, 0, i % 60) for i in range(n)], pa.time64("us")),
            "cat": pa.array([f"c{i % 3}" for i in range(n)]).dictionary_encode(),
        }
    )
    pq.write_table(t.slice(0, 20), str(d / "a.parquet"))
    pq.write_table(t.slice(20), str(d / "b.parquet"))
    before = pq.read_table(str(d)).schema
    rep = pfs.optimize(spark, str(d), "x")
    assert rep.files_before == 2 and rep.rows == n
    after = pq.read_table(str(d))
    assert after.schema == before
    assert after.column("x").to_pylist() == sorted(range(n))  # one file, sorted by x
    back = after.sort_by("id")
    for c in ("id", "ts", "tod"):
        assert back.column(c).to_pylist() == t.column(c).to_pylist()
    assert back.column("cat").cast(pa.string()).to_pylist() == t.column("cat").cast(pa.string()).to_pylist()


def test_cli(spark, tmp_path):
    from paimon_fast.cli import main

    place = Place(str(tmp_path / "ds"))
    deleted = ready(place)
    want = expected(place, deleted)
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        assert main(["optimize", place.uri, "--cluster-by", "x,y", "--strategy", "zorder", "--page-rows", "64"]) == 0
    assert "zorder by x, y: 2 partition(s), 6 files" in out.getvalue() and "files written" in err.getvalue()
    assert answers(place.uri) == want
    err = io.StringIO()
    with redirect_stderr(err):  # the option reaches the writer's check
        assert main(["optimize", place.uri, "--cluster-by", "x", "--min-compression-saving", "1.5"]) == 2
    assert "min_compression_saving must be a number in [0, 1), got 1.5" in err.getvalue()
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["optimize", place.uri, "--cluster-by", "x", "--spark", "--master", "local[2]", "--json"]) == 0
    assert '"files_before": 2' in out.getvalue()  # one file a partition at the default target size
    assert answers(place.uri) == want and plain_ids(place) == want[None]


def test_spark_reads_the_delta_encoded_files(spark, tmp_path):
    """Files as optimize writes columns without a dictionary (strings DELTA_LENGTH_BYTE_ARRAY, ids
    DELTA_BINARY_PACKED, nulls among them): Spark's own reader reads the same rows."""
    import numpy as np

    from paimon_fast.tables.writer import WriteOptions, write_file

    n = 40_000
    rng = np.random.default_rng(3)
    t = pa.table(
        {
            "id": rng.permutation(n).astype(np.int64),
            "s": pa.array([f"k{v:016x}" for v in rng.integers(0, 1 << 60, n)], mask=rng.random(n) < 0.1),
            "b": pa.array([rng.bytes(int(k)) for k in rng.integers(0, 30, n)], pa.binary()),
        }
    )
    path = tmp_path / "d.parquet"
    write_file(str(path), t, WriteOptions().check())
    rg = pq.ParquetFile(path).metadata.row_group(0)
    assert [rg.column(i).encodings[-1] for i in range(3)] == [
        "DELTA_BINARY_PACKED",
        "DELTA_LENGTH_BYTE_ARRAY",
        "DELTA_LENGTH_BYTE_ARRAY",
    ]
    got = sorted((r["id"], r["s"], bytes(r["b"])) for r in spark.read.parquet(str(path)).collect())
    assert got == sorted(zip(t.column("id").to_pylist(), t.column("s").to_pylist(), t.column("b").to_pylist()))
