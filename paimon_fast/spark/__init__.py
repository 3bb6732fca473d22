"""The PySpark pipeline: build Paimon file indexes on executors, prune at query time.

    from paimon_fast import spark as pfs
    spark = pfs.session()                                   # local[*] or $SPARK_MASTER
    pfs.build(spark, "/data/events", {"file-index.bloom-filter.columns": "user_id",
                                      "file-index.bloom-filter.user_id.items": "500000"})
    df = pfs.read(spark, "/data/events", "country = 'DE' AND (score > 90 OR id IN (1, 2))")
    print(df.report)                                        # files / rows skipped, evaluation time
    print(pfs.delete(spark, "/data/events", "status = 'returned'"))   # deletion vectors, no rewrite

    spark.read.format("paimon-fast").load("/data/events").where("user_id = 42")   # Data Source

**Build** (:func:`build`): one Spark task per data file whose index is missing
or stale (largest files first).  The task reads the file's indexed columns with
pyarrow, in row order, on the executor, feeds them to the index writers
registered under the Paimon names in the options (``bloom-filter`` today;
``bitmap``, ``range-bitmap``, ``bsi`` and any other registered type by name) and
writes ``_file_index/<data file>.index`` under the dataset's root, a name every
Parquet reader skips (a temporary name and an atomic rename locally): the step the in-process
:meth:`~paimon_fast.tables.parquet.ParquetDataset.build` runs, so both give the
same bytes.  Only the catalog entries travel back; the driver records them in
the dataset catalog (see :mod:`paimon_fast.tables.parquet`).  Reading with
pyarrow rather than Spark's Parquet reader skips the conversion of every row to
Spark's format and back to Arrow, which cost most of the build's time.  A local
dataset path must be one every executor sees at the same path (a shared mount);
datasets on object stores or HDFS (``s3://``, ``gs://``, ``abfs://``, ``hdfs://``
URIs) are read and written by the executors through pyarrow's filesystems (the
driver hands out paths, :mod:`paimon_fast.spark.remote`), so no Hadoop connector
jars are needed.

**Read** (:func:`read`): the driver evaluates every file's index (threads),
reads only the files that may match (Spark's own Parquet reader), drops rows
outside an index's row bitmap where one answers with exact positions (bitmap
/ BSI / range-bitmap indexes, and a current bitmap global index built with
:func:`build_global_index`, whose row ids are mapped back to files and rows), then applies the whole
predicate so the answer
equals a plain scan.  Predicates are :mod:`paimon_fast.core.predicate` objects or
SQL-like text (:func:`paimon_fast.core.sqlpredicate.parse_predicate`), OR and NOT
included.

**Delete** (:func:`delete`): rows matching a predicate are marked deleted with Paimon deletion
vectors (one new deletion file per commit, then an atomic catalog rewrite;
:mod:`paimon_fast.tables.deletes`); :func:`read` and the Data Source never return deleted rows.

**Optimize** (:func:`optimize`): the dataset's rows clustered by columns (order, z-order,
Hilbert) across its files, read, ordered and written on the executors, committed by the driver
in one catalog commit (:mod:`paimon_fast.spark.optimize_job`, :mod:`paimon_fast.tables.optimize`).

**Data Source** (:mod:`paimon_fast.spark.datasource`, Spark 4.1+):
``spark.read.format("paimon-fast").load(path)``.  Spark pushes only an AND-list
of simple filters (``=``, ``<``..., ``IN``, ``IS [NOT] NULL``, ``<>``, ``NOT IN``,
string prefix / suffix / contains) into a Python Data Source; a
disjunction (``a = 1 OR b = 2``) is not pushed and prunes nothing.  Use
:func:`read` or the source's ``where`` option for OR predicates.
"""

from .build_job import build, build_global_index
from .columns import filter_to_predicate, to_spark_column
from .delete_job import delete
from .optimize_job import optimize
from .read_job import ReadReport, read, spark_schema, top_n
from .session import DATA_SOURCE_NAME, default_master, register, session

__all__ = [
    "session",
    "register",
    "build",
    "build_global_index",
    "read",
    "delete",
    "optimize",
    "top_n",
    "to_spark_column",
    "filter_to_predicate",
    "DATA_SOURCE_NAME",
    "default_master",
    "ReadReport",
    "spark_schema",
]
