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
writes ``<data file>.index`` next to the data file (a temporary name and an
atomic rename locally): the step the in-process
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
:func:`build_global_index`, whose row ids are mapped back to files and rows), then applies the whole predicate so the answer
equals a plain scan.  Predicates are :mod:`paimon_fast.predicate` objects or
SQL-like text (:func:`paimon_fast.sqlpredicate.parse_predicate`), OR and NOT
included.

**Delete** (:func:`delete`): rows matching a predicate are marked deleted with
Paimon deletion vectors (one new deletion file per commit, then an atomic
catalog rewrite; :mod:`paimon_fast.tables.deletes`); :func:`read` and the Data
Source never return deleted rows.

**Data Source** (:mod:`paimon_fast.spark.datasource`, Spark 4.1+):
``spark.read.format("paimon-fast").load(path)``.  Spark pushes only an AND-list
of simple filters (``=``, ``<``..., ``IN``, ``IS [NOT] NULL``, ``<>``, ``NOT IN``,
string prefix / suffix / contains) into a Python Data Source; a
disjunction (``a = 1 OR b = 2``) is not pushed and prunes nothing.  Use
:func:`read` or the source's ``where`` option for OR predicates.
"""
from __future__ import annotations

import os
import sys
import threading
import time
from typing import Callable, Mapping, Optional

from ..tables.parquet import BuildReport, ParquetDataset, ScanReport, local_path
from .columns import filter_to_predicate, to_spark_column

__all__ = ["session", "register", "build", "build_global_index", "read", "delete", "top_n", "to_spark_column",
           "filter_to_predicate",
           "DATA_SOURCE_NAME"]

DATA_SOURCE_NAME = "paimon-fast"


def default_master() -> str:
    return os.environ.get("SPARK_MASTER") or "local[*]"


def session(master: Optional[str] = None, app_name: str = "paimon-fast", conf: Optional[Mapping] = None):
    """A SparkSession set up for paimon-fast (workers run this Python, Data Source
    filter pushdown on, ``paimon-fast`` registered).  ``master`` defaults to
    ``$SPARK_MASTER`` or ``local[*]`` (every core of this machine).  Without pyspark,
    Java 17+, or the pandas / pyarrow pyspark's Arrow UDFs need, raises
    :class:`~paimon_fast.errors.MissingDependencyError` naming what to install."""
    from .env import check_spark_environment

    check_spark_environment()  # Java, pandas, pyarrow: one clear error instead of a py4j traceback
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    b = (SparkSession.builder.master(master or default_master()).appName(app_name)
         .config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false")
         .config("spark.sql.shuffle.partitions", "8")
         .config("spark.sql.python.filterPushdown.enabled", "true"))
    for k, v in dict(conf or {}).items():
        b = b.config(k, str(v))
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    return spark


def register(spark) -> None:
    """Register the ``paimon-fast`` Python Data Source and turn on filter pushdown."""
    from .datasource import PaimonFastDataSource

    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    spark.dataSource.register(PaimonFastDataSource)


# ---------------------------------------------------------------- build

def _progress_thread(spark, total: int, report: Callable[[int, int], None], stop: threading.Event):
    tracker = spark.sparkContext.statusTracker()

    def loop():
        done_before = 0
        while not stop.wait(0.5):
            done = done_before
            for sid in tracker.getActiveStageIds():
                info = tracker.getStageInfo(sid)
                if info is not None:
                    done = max(done, info.numCompletedTasks)
            done_before = done
            report(min(done, total), total)

    t = threading.Thread(target=loop, daemon=True)
    t.start()
    return t


def build(spark, path: str, options: Mapping, *, force: bool = False,
          progress: Optional[Callable[[int, int], None]] = None, _fault: Optional[dict] = None,
          filesystem=None) -> BuildReport:
    """Build the file indexes of the Parquet dataset at ``path`` on Spark's executors.

    ``options`` are Paimon table options (``file-index.bloom-filter.columns``,
    ``file-index.bloom-filter.<col>.fpp`` / ``.items``, ``file-index.bitmap.columns``,
    ``file-index.in-manifest-threshold``...).  Files whose index is current are
    skipped (``force=True`` rebuilds all).  ``progress(done_files, total_files)``
    is called about twice a second while the job runs.  Returns a
    :class:`~paimon_fast.tables.parquet.BuildReport`.
    """
    t0 = time.perf_counter()
    ds = ParquetDataset(path, filesystem)
    spec = ds.index_spec(options)
    ds.clean_temp_files()
    todo, current = ds.files_to_build(spec, force)
    rep = BuildReport(files_total=len(todo) + len(current), files_current=len(current))
    results = []
    row_type = ds.row_type()
    cols = [c for c in spec.columns if c in row_type]
    if todo:
        from . import remote

        # one task per file, largest first, each reading its file with pyarrow on the executor
        todo = sorted(todo, key=lambda f: -f.size)
        stop = threading.Event()
        th = _progress_thread(spark, len(todo), progress, stop) if progress else None
        try:
            results = remote.build_files(spark, ds, todo, row_type, {c: spec.columns[c] for c in cols},
                                         spec.threshold, spec.digest, spec.types, _fault, parallelism=len(todo))
        finally:
            stop.set()
            if th is not None:
                th.join()
        if progress:
            progress(len(todo), len(todo))
        missing = {f.path for f in todo} - {r["path"] for r in results}
        if missing:
            raise RuntimeError(f"the build job returned no index for {sorted(missing)[:5]}")
    rep.index_bytes = ds.commit_build(spec, results)
    rep.files_built = len(results)
    rep.rows = sum(int(r["rows"]) for r in results)
    rep.inline = sum("inline" in r["file_index"] for r in results)
    rep.built = sorted(r["path"] for r in results)
    rep.seconds = time.perf_counter() - t0
    return rep


def build_global_index(spark, path: str, column: str, options: Optional[Mapping] = None, dtype: Optional[str] = None,
                       filesystem=None):
    """Build the bitmap global index of ``column`` over the dataset at ``path`` on Spark
    (:func:`paimon_fast.tables.globalindex_spark.build_global_index`; options
    ``bitmap-index.*``, ``sorted-index.records-per-range``,
    ``sorted-index.build.max-parallelism``).  Returns the listing written to
    ``<path>/_global_index/<column>/index.json``.  :func:`read`,
    :meth:`ParquetDataset.scan <paimon_fast.tables.parquet.ParquetDataset.scan>` and the Data
    Source then prune with it while it is current (no data file added, removed or changed
    since the build); a stale index is ignored."""
    from ..tables.globalindex_spark import build_global_index as _build

    return _build(spark, path, column, options, dtype, filesystem)


# ---------------------------------------------------------------- read

class ReadReport(ScanReport):
    """:class:`ScanReport` of one :func:`read` (``str()`` gives a one-line summary)."""


_SCHEMAS: dict = {}


def spark_schema(spark, ds: ParquetDataset):
    """The dataset's Spark schema as Spark infers it (data columns, then partition columns);
    cached while the dataset's file listing is unchanged."""
    key = (id(spark), ds.uri, tuple((f.path, f.size, f.mtime_ns) for f in ds.files()))
    s = _SCHEMAS.get(key)
    if s is None and not ds.store.local:
        from .remote import spark_schema as remote_schema

        s = _SCHEMAS[key] = remote_schema(ds)
    if s is None:
        s = spark.read.option("pathGlobFilter", "*.parquet").parquet(ds.root).schema
        if len(_SCHEMAS) > 64:
            _SCHEMAS.clear()
        _SCHEMAS[key] = s
    return s


def _bitmap_filter_udf(specs: Mapping[str, tuple]):
    """mapInArrow function keeping, per file (by ``_metadata.file_path``), only the rows
    whose position is in the file's bitmap (``("keep", roaring bytes)``) or not in its
    deletion vector (``("delete", Paimon deletion vector bin)``)."""

    def run(batches):
        import numpy as np
        import pyarrow as pa
        from pyroaring import BitMap

        from ..tableindex import DeletionVector

        cache = {}
        for batch in batches:
            n = batch.num_rows
            if n == 0:
                continue
            names = batch.schema.names
            fp = batch.column(names.index("__pf_file"))
            ri = batch.column(names.index("__pf_row")).to_numpy(zero_copy_only=False)
            keep = np.zeros(n, dtype=bool)
            uris = fp.unique().to_pylist()
            for uri in uris:
                if uri not in cache:
                    spec = specs.get(local_path(uri))
                    if spec is None:
                        cache[uri] = None
                    elif spec[0] == "keep":
                        cache[uri] = ("keep", np.asarray(BitMap.deserialize(spec[1]).to_array(), np.int64))
                    else:
                        cache[uri] = ("delete", DeletionVector.deserialize(spec[1]))
                how = cache[uri]
                sel = (fp.to_numpy(zero_copy_only=False) == uri) if len(uris) > 1 else np.ones(n, bool)
                if how is None:
                    keep |= sel
                elif how[0] == "keep":
                    keep |= sel & np.isin(ri, how[1], assume_unique=False)
                else:
                    keep |= sel & ~how[1].is_deleted_batch(ri)
            yield batch.filter(pa.array(keep))

    return run


def _row_filter_spec(p) -> Optional[tuple]:
    """How the rows of a kept file are filtered by position: its index bitmap (deleted
    rows already removed by the plan), else its deletion vector, else not at all."""
    if p.bitmap is not None:
        return ("keep", p.bitmap.serialize())
    if p.deletion_vector is not None:
        return ("delete", p.deletion_vector.serialize())
    return None


def _planned_frame(spark, ds: ParquetDataset, plan, positions: bool = False):
    """The rows of ``plan``'s kept files minus the rows outside index bitmaps and the
    deleted rows (before the predicate is applied).  ``positions=True`` keeps the
    ``__pf_file`` / ``__pf_row`` columns (``_metadata.file_path`` / ``row_index``)."""
    from pyspark.sql import functions as F

    if not ds.store.local:  # executors read with pyarrow (see paimon_fast.spark.remote)
        from .remote import planned_frame

        return planned_frame(spark, ds, plan, positions)
    schema = spark_schema(spark, ds)
    reader = spark.read.schema(schema).option("basePath", ds.root)
    meta = [F.col("_metadata.file_path").alias("__pf_file"), F.col("_metadata.row_index").alias("__pf_row")]
    specs = {p.file.abs_path: _row_filter_spec(p) for p in plan.kept}
    whole = [path for path, spec in specs.items() if spec is None]
    partial = {path: spec for path, spec in specs.items() if spec is not None}
    parts = []
    if whole:
        d = reader.parquet(*whole)
        parts.append(d.select("*", *meta) if positions else d)
    if partial:
        d = reader.parquet(*partial).select("*", *meta)
        d = d.mapInArrow(_bitmap_filter_udf(partial), d.schema)
        parts.append(d if positions else d.drop("__pf_file", "__pf_row"))
    if not parts:
        # nothing can match: a scan Spark's optimizer turns into an empty relation
        df = reader.parquet(ds.files()[0].abs_path)
        df = (df.select("*", *meta) if positions else df).where(F.lit(False))
    else:
        df = parts[0]
        for p in parts[1:]:
            df = df.unionByName(p)
    return df


def top_n(spark, path: str, column: str, k: int, **kw):
    """Exact top-N of a dataset, per-file work on executors: see :func:`paimon_fast.spark.topn.top_n`."""
    from .topn import top_n as _impl

    return _impl(spark, path, column, k, **kw)


def read(spark, path: str, where=None, columns=None, use_index: bool = True, filesystem=None):
    """Rows of the dataset at ``path`` where ``where`` holds, pruned by the file indexes.

    ``where`` is a predicate object or SQL-like text (``"country = 'DE' AND
    (score > 90 OR id IN (1, 2))"``).  The DataFrame's answer equals a plain
    Spark scan with the same filter; its ``report`` attribute
    (:class:`ReadReport`) says files total / skipped, rows skipped by whole
    files and by row bitmaps, and the index evaluation time.  ``use_index=False``
    reads every file (the baseline).  Rows deleted with :func:`delete` never
    come back (the dataset's deletion vectors apply with or without the index).
    """
    from ..sqlpredicate import parse_predicate

    ds = ParquetDataset(path, filesystem)
    pred = None if where is None else parse_predicate(where)
    plan = ds.plan(pred if use_index else None)
    if pred is not None and not use_index:
        plan.predicate = pred
    df = _planned_frame(spark, ds, plan)
    if plan.predicate is not None:
        df = df.where(to_spark_column(plan.predicate, ds.schema()))
    if columns:
        df = df.select(*columns)
    rep = ReadReport(**plan.report.__dict__)
    try:
        df.report = rep
    except AttributeError:  # pragma: no cover - a DataFrame class that refuses attributes
        pass
    return df


# ---------------------------------------------------------------- delete

def _positions_udf():
    """mapInArrow function: ``(__pf_file, __pf_row)`` batches -> one row per file and
    batch with its positions as little-endian int64 bytes (no Python object per row)."""

    def run(batches):
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        schema = pa.schema([("path", pa.string()), ("positions", pa.binary())])
        for batch in batches:
            if batch.num_rows == 0:
                continue
            fp = batch.column(0)
            ri = batch.column(1).to_numpy(zero_copy_only=False).astype("<i8")
            uris = fp.unique()
            if len(uris) == 1:
                groups = [(uris[0].as_py(), ri)]
            else:
                groups = [(u.as_py(), ri[pc.equal(fp, u).to_numpy(zero_copy_only=False)]) for u in uris]
            yield pa.RecordBatch.from_pydict(
                {"path": [local_path(u) for u, _ in groups],
                 "positions": [np.unique(r).tobytes() for _, r in groups]}, schema=schema)

    return run


def delete(spark, path: str, where, *, bitmap64: Optional[bool] = None, _fault: Optional[str] = None,
           filesystem=None):
    """Mark the rows of the dataset at ``path`` where ``where`` holds deleted, without
    rewriting any Parquet file.

    The driver prunes files with the indexes (and skips rows already deleted);
    executors read the remaining files with Spark, apply the exact predicate and
    send back each matching row's ``(_metadata.file_path, _metadata.row_index)``,
    grouped per file by a ``mapInArrow`` UDF.  The new positions are merged with
    each file's deletion vector, ONE new Paimon deletion file is written
    (temporary name + atomic rename) and the catalog is rewritten atomically;
    deletion files the new catalog no longer references are removed after that
    (see :mod:`paimon_fast.tables.deletes`).  Every read (:func:`read`, the
    Data Source, :class:`~paimon_fast.tables.ParquetDataset`) honours the
    vectors.  Returns a :class:`~paimon_fast.tables.deletes.DeleteReport` (rows
    deleted, files touched, the deletion file).
    """
    import numpy as np

    from ..sqlpredicate import parse_predicate
    from ..tables.deletes import DeleteReport, commit_deletions

    if where is None:
        raise ValueError("delete needs a predicate")
    t0 = time.perf_counter()
    ds = ParquetDataset(path, filesystem)
    plan = ds.plan(parse_predicate(where))
    rep = DeleteReport(files_scanned=len(plan.kept), files_skipped=plan.report.files_skipped,
                       predicate=plan.report.predicate)
    positions = {}
    if plan.kept:
        df = _planned_frame(spark, ds, plan, positions=True)
        df = df.where(to_spark_column(plan.predicate, ds.schema())).select("__pf_file", "__pf_row")
        for r in df.mapInArrow(_positions_udf(), "path string, positions binary").collect():
            rel = os.path.relpath(r["path"], ds.root).replace(os.sep, "/")
            positions.setdefault(rel, []).append(np.frombuffer(r["positions"], "<i8"))
    positions = {k: np.concatenate(v) for k, v in positions.items()}
    rep.seconds = time.perf_counter() - t0
    return commit_deletions(ds, positions, bitmap64=bitmap64, report=rep, _fault=_fault)
