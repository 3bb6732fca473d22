"""``spark.read.format("paimon-fast")``: a Python Data Source (Spark 4.1+) that prunes with the file indexes.

    pfs.register(spark)            # done by paimon_fast.spark.session()
    df = spark.read.format("paimon-fast").load("/data/events").where("user_id = 42 AND country = 'DE'")
    df = spark.read.format("paimon-fast").option("where", "a = 1 OR b = 2").load("/data/events")

**What is pushed.**  Spark hands a Python Data Source only an AND-list of
simple filters: ``=``, ``<``, ``<=``, ``>``, ``>=``, ``IN``, ``IS [NOT] NULL``,
``NOT (=)`` / ``NOT IN``, and LIKE shapes as string prefix / suffix / contains,
each on one top-level column.  A disjunction such as ``a = 1 OR b = 2`` is not
pushed at all, so it prunes nothing here: pass it in the ``where`` option
(SQL-like text, any shape :func:`paimon_fast.sqlpredicate.parse_predicate`
reads) or use :func:`paimon_fast.spark.read`.  Pushdown needs
``spark.sql.python.filterPushdown.enabled=true`` (``register`` sets it).

Every pushed filter is also handed back to Spark, which re-applies it after
the scan: pruning only ever removes files and rows that cannot match, and the
answer never depends on this source's own row filter.  The ``where`` option
is applied here, exactly (Arrow compute, SQL null semantics).

**Known Spark issue (4.1-4.3).**  Spark stores the partitions planned during
filter pushdown on the relation a ``load()`` created, and a later query on
the same DataFrame that pushes no filter (no ``where``, or only an ``OR``)
reuses them instead of planning again: it would read only the files the
earlier query kept.  Call ``load()`` once per query (``pfs.read`` is not
affected).  Newer Spark keeps that state per scan.

One input partition per file that may match; each is read with pyarrow on
an executor, keeping only the positions of the file's row bitmap when an index
answered with one, and never the rows its deletion vector deletes (the
vector planned on the driver travels with the partition).
"""
from __future__ import annotations

from typing import List, Optional

from ..errors import require

require("pyspark", "the paimon-fast Spark Data Source")  # MissingDependencyError naming the extra
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition  # noqa: E402

from ..predicate import And  # noqa: E402


class _FilePartition(InputPartition):
    def __init__(self, path: Optional[str], bitmap: Optional[bytes], deletion_vector: Optional[bytes] = None):
        super().__init__(path)
        self.path = path
        self.bitmap = bitmap
        self.deletion_vector = deletion_vector  # the file's vector as planned (Paimon bin), or None


class PaimonFastDataSource(DataSource):
    """``format("paimon-fast")``; options: ``path`` (the dataset directory), ``where`` (optional predicate text)."""

    @classmethod
    def name(cls):
        return "paimon-fast"

    def _path(self):
        p = self.options.get("path")
        if not p:
            raise ValueError('paimon-fast needs a path: spark.read.format("paimon-fast").load(PATH)')
        return p

    def schema(self):
        from pyspark.sql.pandas.types import from_arrow_schema

        from ..tables.parquet import ParquetDataset

        return from_arrow_schema(ParquetDataset(self._path()).schema())

    def reader(self, schema):
        return PaimonFastReader(self._path(), schema, self.options.get("where"))


class PaimonFastReader(DataSourceReader):
    def __init__(self, path: str, schema, where: Optional[str]):
        self.path = path
        self.schema = schema
        self.where = where
        self.pushed: List = []

    def pushFilters(self, filters):
        from .columns import filter_to_predicate

        for f in filters:
            p = filter_to_predicate(f)
            if p is not None:
                self.pushed.append(p)
            yield f  # Spark re-checks every filter (see the module docstring)

    def _predicates(self):
        from ..sqlpredicate import parse_predicate

        where = parse_predicate(self.where) if self.where else None
        pushed = And.of(*self.pushed) if self.pushed else None
        both = [p for p in (pushed, where) if p is not None]
        full = And.of(*both) if both else None
        return full, where

    def partitions(self):
        from ..tables.parquet import ParquetDataset

        full, _ = self._predicates()
        plan = ParquetDataset(self.path).plan(full)
        parts = [_FilePartition(p.file.path, None if p.bitmap is None else p.bitmap.serialize(),
                                None if p.deletion_vector is None else p.deletion_vector.serialize())
                 for p in plan.kept]
        return parts or [_FilePartition(None, None)]

    def read(self, partition):
        if partition.path is None:
            return
        from pyroaring import BitMap
        from pyspark.sql.pandas.types import to_arrow_schema

        from ..tableindex import DeletionVector
        from ..tables.parquet import ParquetDataset

        ds = ParquetDataset(self.path)
        f = next(x for x in ds.files() if x.path == partition.path)
        full, where = self._predicates()
        bitmap = None if partition.bitmap is None else BitMap.deserialize(partition.bitmap)
        schema = to_arrow_schema(self.schema)
        # the pushed filters are re-applied by Spark; filtering here too only saves transfer
        dv = None if partition.deletion_vector is None else DeletionVector.deserialize(partition.deletion_vector)
        table = ds.read_file(f, bitmap, full, schema=schema, deletion_vector=dv)
        yield from table.to_batches(max_chunksize=1 << 16)
