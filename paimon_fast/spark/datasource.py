"""``spark.read.format("paimon-fast")``: a Python Data Source (Spark 4.1+) that prunes with the file indexes.

    pfs.register(spark)            # done by paimon_fast.spark.session()
    df = spark.read.format("paimon-fast").load("/data/events").where("user_id = 42 AND country = 'DE'")
    df = spark.read.format("paimon-fast").option("where", "a = 1 OR b = 2").load("/data/events")

A relative path is resolved on the driver (against the directory it started in, as Spark's own
readers resolve one) and the absolute path travels to the executors.

**What is pushed.**  Spark hands a Python Data Source only an AND-list of
simple filters: ``=``, ``<``, ``<=``, ``>``, ``>=``, ``IN``, ``IS [NOT] NULL``,
``NOT (=)`` / ``NOT IN``, and LIKE shapes as string prefix / suffix / contains,
each on one top-level column.  A disjunction such as ``a = 1 OR b = 2`` is not
pushed at all, so it prunes nothing here: pass it in the ``where`` option
(SQL-like text, any shape :func:`paimon_fast.core.sqlpredicate.parse_predicate`
reads) or use :func:`paimon_fast.spark.read`.  Pushdown needs
``spark.sql.python.filterPushdown.enabled=true`` (``register`` sets it).

Every pushed filter is also handed back to Spark, which re-applies it after
the scan: pruning only ever removes files and rows that cannot match, and the
answer never depends on this source's own row filter.  Filters on FLOAT / DOUBLE columns are
left to Spark (Spark SQL orders NaN above every number; the indexes compare as IEEE).  The ``where`` option
is applied here, exactly (Arrow compute, SQL null semantics).

**Known Spark issue (4.1-4.3).**  Spark stores the partitions planned during
filter pushdown on the relation a ``load()`` created, and a later query on
the same DataFrame that pushes no filter (no ``where``, or only an ``OR``)
reuses them instead of planning again: it would read only the files the
earlier query kept.  Call ``load()`` once per query (``pfs.read`` is not
affected).  Newer Spark keeps that state per scan.

One input partition per file that may match (one for all of them when the rows they select
are few: ``paimon-fast.read.driver-max-bytes``, as for ``pfs.read``); each file is read on an
executor by :meth:`~paimon_fast.tables.parquet.ParquetDataset.read_kept`: the predicate's
columns at the rows the plan selects (only the pages holding them where an index answered with
rows), then the other columns only where the predicate holds, never a row the file's deletion
vector deletes (the plan travels with the partition).
"""

from __future__ import annotations

import os
from typing import List, Optional

from ..errors import require

require("pyspark", "the paimon-fast Spark Data Source")  # MissingDependencyError naming the extra
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition  # noqa: E402

from ..core.predicate import And  # noqa: E402


class _FilePartition(InputPartition):
    def __init__(self, files: List[tuple]):
        super().__init__(len(files))
        self.files = files  # read_job.ship() of each kept file's plan


class PaimonFastDataSource(DataSource):
    """``format("paimon-fast")``; options: ``path`` (the dataset directory), ``where`` (optional
    predicate text), ``paimon-fast.read.driver-max-bytes`` (the rows' size up to which one task
    reads every kept file; default 32 MB)."""

    @classmethod
    def name(cls):
        return "paimon-fast"

    def _path(self):
        """The dataset's path as the executors must see it: a relative local path made absolute
        here, on the driver (Spark plans a Python Data Source there: against the driver's working
        directory, as ``spark.read.parquet`` resolves one), not left to each executor's own."""
        p = self.options.get("path")
        if not p:
            raise ValueError('paimon-fast needs a path: spark.read.format("paimon-fast").load(PATH)')
        from ..io.fs import is_uri

        return p if is_uri(p) else os.path.abspath(p)

    def schema(self):
        from pyspark.sql.pandas.types import from_arrow_schema

        from ..tables.parquet import ParquetDataset

        return from_arrow_schema(ParquetDataset(self._path()).schema())

    def reader(self, schema):
        from .frames import DRIVER_MAX_BYTES

        return PaimonFastReader(self._path(), schema, self.options.get("where"), self.options.get(DRIVER_MAX_BYTES))


class PaimonFastReader(DataSourceReader):
    def __init__(self, path: str, schema, where: Optional[str], max_bytes: Optional[str] = None):
        self.path = path
        self.schema = schema
        self.where = where
        self.max_bytes = max_bytes
        self.pushed: List = []

    def pushFilters(self, filters):
        from .columns import filter_to_predicate

        # Spark orders NaN above every number and makes NaN = NaN; our filters compare floats as
        # IEEE (NaN matches nothing): a pushed filter on a FLOAT / DOUBLE column would drop NaN
        # rows Spark keeps, which Spark's own re-check cannot bring back.  Those stay Spark's.
        floats = {fl.name for fl in self.schema.fields if fl.dataType.typeName() in ("float", "double")}
        for f in filters:
            p = filter_to_predicate(f)
            if p is not None and not (p.fields() & floats):
                self.pushed.append(p)
            yield f  # Spark re-checks every filter (see the module docstring)

    def _predicates(self):
        from ..core.sqlpredicate import parse_predicate

        where = parse_predicate(self.where) if self.where else None
        pushed = And.of(*self.pushed) if self.pushed else None
        both = [p for p in (pushed, where) if p is not None]
        full = And.of(*both) if both else None
        return full, where

    def partitions(self):
        from ..tables.parquet import ParquetDataset
        from .frames import driver_max_bytes
        from .read_job import ship

        full, _ = self._predicates()
        ds = ParquetDataset(self.path).snapshot()  # the plan and its cost from one listing and catalog version
        plan = ds.plan(full)
        shipped = [ship(p) for p in plan.kept]
        if not shipped:
            return [_FilePartition([])]
        # planning runs in a Python worker, where the session's conf is not at hand: the option
        limit = driver_max_bytes(None, self.max_bytes)
        if len(shipped) > 1 and limit > 0 and ds.read_cost(plan, list(self.schema.names)) <= limit:
            return [_FilePartition(shipped)]  # few rows: one task reads them all
        return [_FilePartition([s]) for s in shipped]

    def read(self, partition):
        if not partition.files:
            return
        from ..tables.parquet import ParquetDataset
        from .frames import arrow_schema
        from .read_job import unship

        ds = ParquetDataset(self.path)
        full, _ = self._predicates()
        schema = arrow_schema(self.schema)
        # the pushed filters are re-applied by Spark; filtering here too only saves transfer
        for shipped in partition.files:
            table = ds.read_kept(unship(shipped), list(schema.names), full, ds.schema())
            for b in table.cast(schema).to_batches(max_chunksize=1 << 16):
                if b.num_rows:
                    yield b
