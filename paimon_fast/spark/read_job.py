"""Reads of a Parquet dataset on Spark, pruned by its indexes: :func:`read`, the planned
frame it (and :func:`paimon_fast.spark.delete`) starts from, and :func:`top_n`."""
from __future__ import annotations

from typing import Mapping, Optional

from ..tables.parquet import ParquetDataset, ScanReport, local_path
from .columns import to_spark_column


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
