"""pypaimon's read-builder shape, answered with our indexes.

Code written for pypaimon 2.1 changes one line::

    rb = table.new_read_builder()                      # pypaimon
    rb = paimon_fast.paimon.read_builder(table)        # the same calls, pruned by every index

    rb = rb.with_filter(pb.equal("category", "red")).with_projection(["id", "price"]).with_limit(100)
    splits = rb.new_scan().plan().splits()             # picklable: hand them to your own workers
    read = rb.new_read()
    read.to_arrow(splits)  /  read.to_arrow_batch_reader(splits)  /  read.to_pandas(splits)
    read.to_iterator(splits)  /  read.to_duckdb(splits, "t")  /  read.to_polars(splits)  /  read.to_ray(splits)

``with_filter`` takes a pypaimon predicate (``rb.new_predicate_builder()`` builds them over every
column of the table), ours, or SQL text.  Every row handed back satisfies the filter exactly
(pypaimon's filter is a hint: see the README's "Where we differ").  A split is a
:class:`~.stream.FastSplit` (one data file and the rows its indexes left) or a
:class:`~.stream.PypaimonSplit` (a split of pypaimon's plan, pruned), each carrying its row ranges;
any :class:`TableRead` of the same builder reads them, in any process.
"""

from __future__ import annotations

from typing import List, Optional

from .stream import PaimonSource, SplitReader, SplitsSource


class ReadBuilder:
    """pypaimon's ``ReadBuilder`` (``with_filter``, ``with_projection``, ``with_limit``,
    ``new_scan``, ``new_read``, ``new_predicate_builder``, ``read_type``, ``explain``), planned and
    read by :mod:`paimon_fast.paimon.stream`."""

    def __init__(self, table, **options):
        from .compat import legacy_manifest_table

        if not hasattr(table, "new_read_builder"):
            raise TypeError(f"expected a pypaimon table, got {type(table).__name__}")
        self.table = legacy_manifest_table(table)
        self._predicate = None
        self._projection: Optional[List[str]] = None
        self._limit: Optional[int] = None
        self._options = options

    def with_filter(self, predicate) -> "ReadBuilder":
        """A pypaimon ``Predicate``, ours, or SQL text (None: no filter)."""
        self._predicate = predicate
        return self

    def with_projection(self, projection: Optional[List[str]]) -> "ReadBuilder":
        """Top-level column names, in the order wanted (None: every column)."""
        self._projection = None if projection is None else list(projection)
        return self

    def with_limit(self, limit: Optional[int]) -> "ReadBuilder":
        """Stop reading once ``limit`` rows are out (a split plan is not cut: every split may
        hold the first rows)."""
        from ..read.lazy import check_limit

        self._limit = check_limit(limit)
        return self

    def new_predicate_builder(self):
        """pypaimon's ``PredicateBuilder`` over every column of the table."""
        return self.table.new_read_builder().new_predicate_builder()

    def read_type(self):
        """The projected fields (pypaimon ``DataField`` s)."""
        fields = {f.name: f for f in self.table.fields}
        return list(self.table.fields) if self._projection is None else [fields[c] for c in self._projection]

    def _source(self) -> PaimonSource:
        return PaimonSource(self.table, self._predicate, self._projection, **self._options)

    def new_scan(self) -> "TableScan":
        return TableScan(self._source())

    def new_read(self) -> "TableRead":
        src = self._source()
        return TableRead(src.reader(), self._limit, src.explain)

    def explain(self):
        """Which indexes the table holds for the filter's columns, which were used, why not
        (:class:`~paimon_fast.read.lazy.Explain`; ``str()`` gives a short table)."""
        return self._source().explain()

    def read(self):
        """The whole read as one :class:`~paimon_fast.read.lazy.LazyRead` (plan and read)."""
        from ..read.lazy import LazyRead

        return LazyRead(self._source(), self._limit)


class Plan:
    """pypaimon's ``Plan``: :meth:`splits`; ``report`` says what pruning did."""

    def __init__(self, splits, report):
        self._splits = list(splits)
        self.report = report

    def splits(self) -> list:
        return list(self._splits)


class TableScan:
    """pypaimon's ``TableScan``: :meth:`plan` (the indexes prune files and rows)."""

    def __init__(self, source: PaimonSource):
        self._source = source

    def plan(self) -> Plan:
        splits, report, _ = self._source.plan()
        return Plan(splits, report)


class TableRead:
    """pypaimon's ``TableRead``: reads the splits of a plan (of the same builder) into Arrow,
    pandas, Polars, DuckDB, Ray or rows.  ``report`` (a :class:`~.pruning.PruneReport`) counts
    what its reads decoded and returned."""

    def __init__(self, reader: SplitReader, limit: Optional[int] = None, explain=None):
        from .pruning import PruneReport

        self._reader = reader
        self._limit = limit
        self._explain = explain
        self.report = PruneReport()
        self.report.rows_returned, self.report.read_seconds, self.report.rows_decoded = 0, 0.0, 0

    def _read(self, splits):
        from ..read.lazy import LazyRead
        from ..io.parquet.rows import PageReadStats

        if self.report.decoded is None:
            self.report.decoded = PageReadStats()
        return LazyRead(SplitsSource(self._reader, splits, self.report, self._explain), self._limit)

    def read(self, splits):
        """The splits' rows as one :class:`~paimon_fast.read.lazy.LazyRead`."""
        return self._read(splits)

    def to_arrow(self, splits):
        return self._read(splits).to_arrow()

    def to_arrow_batch_reader(self, splits):
        return self._read(splits).to_arrow_batch_reader()

    def to_pandas(self, splits):
        return self._read(splits).to_pandas()

    def to_polars(self, splits, lazy: bool = False):
        return self._read(splits).to_polars(lazy=lazy)

    def to_duckdb(self, splits, table_name: str, connection=None):
        """Register the splits' rows as ``table_name`` (DuckDB pulls batches from the stream) and
        return the connection."""
        return self._read(splits).to_duckdb(table_name, connection)

    def to_ray(self, splits, **read_args):
        return self._read(splits).to_ray(**read_args)

    def to_iterator(self, splits):
        """The rows as pypaimon ``InternalRow`` s (``get_field(i)``), one batch decoded at a time."""
        from pypaimon.table.row.offset_row import OffsetRow

        reader = self._read(splits).to_arrow_batch_reader()
        for batch in reader:
            cols = [c.to_pylist() for c in batch.columns]
            arity = len(cols)
            for row in zip(*cols):
                yield OffsetRow(row, 0, arity)


def read_builder(table, **options) -> ReadBuilder:
    """pypaimon's read builder for ``table``, planned and read with our indexes (see the module
    docstring).  ``options``: ``max_workers``, ``fast``, ``use_cache`` as for
    :func:`paimon_fast.paimon.read`."""
    return ReadBuilder(table, **options)
