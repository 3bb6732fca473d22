"""The Spark pipeline with a bitmap global index (local[2]): ``paimon_fast.spark.build_global_index``,
pruned ``read`` / Data Source answers equal to plain Spark scans, a stale index ignored, and
``paimon-fast build --global-index``."""

import io
import os
import shutil
from contextlib import redirect_stdout

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pyspark = pytest.importorskip("pyspark", reason="pyspark (the 'spark' extra) is not installed")

from tests.support.globalindex_support import FILE_OPTIONS, write_dataset  # noqa: E402
from tests.support.spark_support import answers_in_one_job, full_scan_answers, plain  # noqa: E402

pytestmark = pytest.mark.spark

COLS = ["id", "tag", "num", "status"]
PREDICATES = [
    "tag = 't07'",
    "tag IN ('t01', 't33', 'zz')",
    "tag != 't07' AND num > 400",
    "tag BETWEEN 't10' AND 't12'",
    "tag IS NULL",
    "tag LIKE 't1%'",
    "tag LIKE 't_5'",
    "tag = 't07' OR id = 1500",
    "(tag = 't03' OR tag = 't04') AND status = 'new'",
    "tag = 'nope'",
]


@pytest.fixture(scope="module")
def gi_dataset(spark, tmp_path_factory):
    from paimon_fast import spark as pfs
    from paimon_fast.tables import ParquetDataset

    root = write_dataset(tmp_path_factory.mktemp("gis"))
    ParquetDataset(root).build(FILE_OPTIONS)  # file indexes in-process (their Spark build is tested elsewhere)
    listing = pfs.build_global_index(
        spark, root, "tag", {"sorted-index.records-per-range": "800", "bitmap-index.compression": "lz4"}
    )
    assert len(listing["files"]) >= 2 and listing["total_row_count"] == 2400
    return root


def test_pruned_read_with_global_index_equals_full_scan(spark, gi_dataset):
    from paimon_fast import spark as pfs

    spark = spark
    assert len(plain(spark, gi_dataset, recursive=True).inputFiles()) == 4
    pruned = [pfs.read(spark, gi_dataset, t) for t in PREDICATES]
    # the Data Source plans with the same dataset plan (Spark pushes the AND-list; `where` carries OR)
    source = [spark.read.format("paimon-fast").option("where", t).load(gi_dataset) for t in PREDICATES[:2]]
    n = len(PREDICATES)
    got = answers_in_one_job(pruned + source, COLS, key=repr)
    got[n:n] = full_scan_answers(spark, gi_dataset, PREDICATES, COLS, key=repr, recursive=True)
    assert sum(map(len, got[n : 2 * n])) > 100
    for i, t in enumerate(PREDICATES):
        assert got[i] == got[n + i], t
        rep = pruned[i].report
        assert rep.global_index_used == ["tag"], (t, str(rep))
        assert "global index on tag" in str(rep)
        if t != "tag != 't07' AND num > 400":
            assert rep.rows_read < rep.rows_total, (t, str(rep))
    for i in range(len(source)):
        assert got[2 * n + i] == got[n + i], PREDICATES[i]
    assert got[0] and not got[n - 1]
    # equality is exact: only the matching rows are read
    assert pruned[0].report.rows_read == len(got[n])


def test_stale_global_index_is_ignored_by_read(spark, gi_dataset, tmp_path):
    from paimon_fast import spark as pfs

    spark = spark
    root = str(tmp_path / "copy")
    shutil.copytree(gi_dataset, root)
    # a new file after the build: row ids of the listing no longer describe the dataset
    t = pq.read_table(os.path.join(root, "b.parquet"))
    t = t.set_column(0, "id", pa.array(np.arange(10**6, 10**6 + t.num_rows)))
    t = t.set_column(t.schema.get_field_index("tag"), "tag", pa.array(["t07"] * t.num_rows))
    pq.write_table(t, os.path.join(root, "a/part-00.parquet"))
    df = pfs.read(spark, root, "tag = 't07'")
    assert df.report.global_index_used == [] and df.report.global_index_stale == ["tag"]
    (got,) = answers_in_one_job([df], COLS, key=repr)
    (want,) = full_scan_answers(spark, root, ["tag = 't07'"], COLS, key=repr, recursive=True)
    assert got == want and len(got) > t.num_rows


def test_cli_build_global_index(spark, tmp_path):
    from paimon_fast.cli import main
    from paimon_fast.tables import ParquetDataset

    root = write_dataset(tmp_path / "cli")
    out = io.StringIO()
    with redirect_stdout(out):
        assert (
            main(
                [
                    "build",
                    root,
                    "--global-index",
                    "num",
                    "--options",
                    "sorted-index.records-per-range=1000",
                    "bitmap-index.compression=zstd",
                    "--master",
                    "local[2]",
                ]
            )
            == 0
        )
    text = out.getvalue()
    assert "global index on num: 3 files, 2,400 rows" in text, text
    rep = ParquetDataset(root).plan("num = 17").report
    assert rep.global_index_used == ["num"] and rep.rows_read < 20
