"""The dataset of the Spark pipeline tests (test_spark_pipeline.py, test_spark_deletes.py,
test_spark_reads.py): 9,000 rows in two ``region=`` partitions of three files, the file index
options they are built with (the test-only ``test-positions`` type included) and plain Spark's
answers to compare with, each set of answers collected in one Spark job."""

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import tests.support.toy_index  # noqa: F401  (registers the test-only "test-positions" index type of OPTIONS)

OPTIONS = {
    "file-index.bloom-filter.columns": "id,name,score",
    "file-index.bloom-filter.id.items": "2000",
    "file-index.bloom-filter.id.fpp": "0.01",
    "file-index.bloom-filter.name.items": "64",
    "file-index.bloom-filter.name.fpp": "0.01",
    "file-index.bloom-filter.score.items": "2000",
    "file-index.test-positions.columns": "status",
}


def write_dataset(root, rows=1500, seed=3):
    rng = np.random.default_rng(seed)
    i = 0
    for region in ("eu", "us"):
        d = root / f"region={region}"
        d.mkdir(parents=True, exist_ok=True)
        for k in range(3):
            ids = np.arange(i * rows, (i + 1) * rows, dtype=np.int64)
            names = [None if j % 41 == 0 else f"{region}{i}-{j % 9}" for j in range(rows)]
            pq.write_table(
                pa.table(
                    {
                        "id": ids,
                        "name": pa.array(names, pa.string()),
                        "score": np.round(rng.uniform(0, 100, rows), 1),
                        "status": pa.array([["new", "paid", "sent", None][(j * (i + 1)) % 4] for j in range(rows)]),
                    }
                ),
                d / f"part-{k}.parquet",
                row_group_size=500,
            )
            i += 1
    return str(root)


def plain(spark, root, recursive=False):
    """Spark's own reader of the directory, as any user reads it: the indexes beside the data
    (under _file_index/, the catalog, the global index) must not disturb it.  ``recursive``: every
    file below ``root``, for a dataset whose directories are not partitions."""
    reader = spark.read.option("recursiveFileLookup", "true") if recursive else spark.read
    return reader.parquet(root)


COLS = ["id", "name", "score", "status", "region"]


def answers_in_one_job(dfs, columns=COLS, key=None):
    """``[rows of df for df in dfs]`` with a single Spark job (a tagged union): tuples of
    ``columns``, sorted (by ``key``, e.g. ``repr`` where a column's values do not order)."""
    from functools import reduce

    from pyspark.sql import functions as F

    tagged = [df.select(F.lit(i).alias("__q"), *columns) for i, df in enumerate(dfs)]
    out = [[] for _ in dfs]
    for r in reduce(lambda x, y: x.unionByName(y), tagged).collect():
        out[r["__q"]].append(tuple(r)[1:])
    return [sorted(x, key=key) for x in out]


def rows_kept_in_one_job(df, columns, conditions, key=None):
    """For each Spark column of ``conditions``, the rows ``df.filter(condition)`` keeps as sorted
    tuples of ``columns`` (by ``key``, as :func:`answers_in_one_job`), from one Spark job: a
    boolean column per condition (a NULL condition keeps no row, as in a filter)."""
    from pyspark.sql import functions as F

    rows = df.select(
        *columns, *[F.coalesce(c, F.lit(False)).alias(f"__p{i}") for i, c in enumerate(conditions)]
    ).collect()
    n = len(columns)
    return [sorted((tuple(r)[:n] for r in rows if r[f"__p{i}"]), key=key) for i in range(len(conditions))]


def kept_in_one_job(df, key, conditions):
    """:func:`rows_kept_in_one_job` of the one column ``key``: its sorted values per condition."""
    return [[r[0] for r in kept] for kept in rows_kept_in_one_job(df, [key], conditions)]


def full_scan_answers(spark, root, predicates, columns=COLS, key=None, recursive=False):
    """Plain Spark's answer to every SQL predicate, in one job (:func:`rows_kept_in_one_job`);
    ``columns``, ``key`` as :func:`answers_in_one_job`, ``recursive`` as :func:`plain`."""
    from pyspark.sql import functions as F

    return rows_kept_in_one_job(plain(spark, root, recursive), columns, [F.expr(t) for t in predicates], key)
