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
from paimon_fast.errors import UnsupportedTypeError  # noqa: E402
from paimon_fast.tables import ParquetDataset  # noqa: E402
from optimize_support import WRITE, Place, answers, expected, plain_ids, ready  # noqa: E402
from test_spark_pipeline import spark  # noqa: E402,F401

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


def test_spark_refuses_types_it_would_change(spark, tmp_path):
    d = tmp_path / "u"
    d.mkdir()
    pq.write_table(pa.table({"id": pa.array([1, 2], pa.uint32()), "x": [2, 1]}), str(d / "a.parquet"))
    with pytest.raises(UnsupportedTypeError, match="in-process"):
        pfs.optimize(spark, str(d), "x")
    assert ParquetDataset(str(d)).optimize("x").files_after == 1  # in-process it is fine


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
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["optimize", place.uri, "--cluster-by", "x", "--spark", "--master", "local[2]", "--json"]) == 0
    assert '"files_before": 2' in out.getvalue()  # one file a partition at the default target size
    assert answers(place.uri) == want and plain_ids(place) == want[None]
