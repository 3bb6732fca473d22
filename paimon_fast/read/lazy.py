"""One lazy read of a table, whatever its kind, handed to the Python data stack.

A :class:`LazyRead` is what ``ParquetDataset.read``, ``paimon_fast.paimon.read`` and
``paimon_fast.hudi.read`` return: nothing is planned or read until it is asked for, and then
the rows stream file by file and range by range from the table kind's source of batches (a
:class:`ReadSource`) into what the caller wants::

    r = ds.read("amount > 400", columns=["id", "amount"], limit=1000)
    r.to_arrow()                     # a pyarrow.Table
    r.to_arrow_batch_reader()        # a pyarrow.RecordBatchReader that streams
    r.to_pandas()                    # a pandas DataFrame
    r.to_polars()                    # a Polars DataFrame; to_polars(lazy=True) a LazyFrame over the stream
    r.to_duckdb("t")                 # a DuckDB connection with the stream registered as "t"
    r.count()                        # rows, from the index and the predicate's columns only
    r.report                         # what pruning and reading did so far
    print(r.explain())               # which indexes there are for the predicate, which were used, why not

Memory is bounded by the batches in flight and the index answers, not by the result: only
:meth:`LazyRead.to_arrow`, :meth:`LazyRead.to_pandas` and ``to_polars()`` hold the whole answer.
The read runs on a thread of its own one batch ahead of the consumer (:func:`_prefetched`).
``limit`` stops reading once it has enough rows.  DuckDB pulls batches from the registered
stream as it scans (each query reads the table again; nothing is materialised), and the lazy
Polars frame pushes its projection and row limit into the read.

This module sits in the evaluation layer: every table kind imports it, it imports none of them.
The explain table (:class:`Explain`, one :class:`IndexUse` a row) is filled by each kind.
"""

from __future__ import annotations

import itertools
import queue
import threading
import warnings
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, List, Optional

import pyarrow as pa

__all__ = ["LazyRead", "LegacyTupleRead", "ReadSource", "Explain", "IndexUse"]


# ---------------------------------------------------------------- explain


@dataclass
class IndexUse:
    """One index a table holds on a predicate column, and what it did for this read.

    ``index``: its type (``bloom-filter``, ``bitmap``, ``range-bitmap``, ``bsi``, ``bitmap``
    global index, Hudi's RFC-92 ``bitmap`` ...); ``scope``: ``file`` (one per data file),
    ``global`` (one over the table's row ids) or ``sidecar`` (Hudi's index beside the table);
    ``files``: data files it covers (current and of the column's type); ``used``: it answered
    the predicate's leaves on its column in at least one file; ``files_removed`` /
    ``rows_removed``: what it alone removes from the files it covers (other indexes may remove
    the same files or rows); ``why``: why it was not used, or what limited it (``stale``,
    ``unsupported predicate``, ``fallback budget``, ``search mode``, ``type mismatch`` ...)."""

    index: str
    column: str
    scope: str = "file"
    files: int = 0
    used: bool = False
    files_removed: int = 0
    rows_removed: int = 0
    why: str = ""

    def as_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class Explain:
    """What a read will do with the table's indexes (``str()`` gives a short table).

    ``files_total`` / ``rows_total``: the files and rows the read starts from (after partition
    and statistics pruning where the table kind does that first); ``files_read`` /
    ``rows_to_read``: what every index together leaves to read (rows: before the exact filter);
    ``indexes``: one :class:`IndexUse` per index on a predicate column (what each does alone);
    ``notes``: how the read runs (the path taken, search modes, fallbacks).  ``str()`` ends the
    table with a ``together`` row: :attr:`files_removed` and :attr:`rows_removed`, everything
    together, the figures of the read's report (under an OR over several columns, the only row
    that removes anything)."""

    kind: str
    target: str
    predicate: str = ""
    files_total: int = 0
    files_read: int = 0
    rows_total: int = 0
    rows_to_read: Optional[int] = None
    indexes: List[IndexUse] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)

    @property
    def files_removed(self) -> int:
        """Files the read skips, every index (and partition value) together: the report's figure."""
        return self.files_total - self.files_read

    @property
    def rows_removed(self) -> Optional[int]:
        """Rows the read skips, everything together (None when not known before reading)."""
        return None if self.rows_to_read is None else self.rows_total - self.rows_to_read

    @property
    def used(self) -> List[IndexUse]:
        """The indexes that answered the predicate."""
        return [x for x in self.indexes if x.used]

    @property
    def unused(self) -> List[IndexUse]:
        """The indexes the table holds on the predicate's columns that did not answer it."""
        return [x for x in self.indexes if not x.used]

    def index(self, index: str, column: str, scope: Optional[str] = None) -> IndexUse:
        """The row of one index (KeyError when the table holds no such index)."""
        for x in self.indexes:
            if x.index == index and x.column == column and (scope is None or x.scope == scope):
                return x
        raise KeyError(f"no {index} index on {column!r} in this explain")

    def as_dict(self) -> dict:
        d = dict(self.__dict__)
        d["indexes"] = [x.as_dict() for x in self.indexes]
        d["notes"] = list(self.notes)
        return d

    def __str__(self):
        head = f"{self.kind} {self.target}"
        head += f", where {self.predicate}" if self.predicate else ", no predicate"
        rows = "?" if self.rows_to_read is None else f"{self.rows_to_read:,}"
        lines = [head, f"files {self.files_read:,}/{self.files_total:,} to read, rows {rows}/{self.rows_total:,}"]
        if self.indexes:
            cols = ["index", "column", "scope", "files", "used", "files removed", "rows removed", "why not / note"]
            body = [
                [
                    x.index,
                    x.column,
                    x.scope,
                    f"{x.files:,}",
                    "yes" if x.used else "no",
                    f"{x.files_removed:,}",
                    f"{x.rows_removed:,}",
                    x.why,
                ]
                for x in self.indexes
            ]
            # each row is one index alone; this one is the read's (an OR needs both sides together)
            rows = "?" if self.rows_removed is None else f"{self.rows_removed:,}"
            body.append(
                ["together", "", "", "", "", f"{self.files_removed:,}", rows, "every index: what the read skips"]
            )
            width = [max(len(r[i]) for r in [cols] + body) for i in range(len(cols))]
            fmt = lambda r: "  ".join(c.ljust(w) for c, w in zip(r, width)).rstrip()  # noqa: E731
            lines += [fmt(cols)] + [fmt(r) for r in body]
        else:
            lines.append("no index on the predicate's columns" if self.predicate else "no predicate: nothing to prune")
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)

    def __repr__(self):
        return f"Explain({self.kind} {self.target}: {len(self.used)} of {len(self.indexes)} indexes used)"


# ---------------------------------------------------------------- sources


class ReadSource:
    """A table kind's source of batches, what a :class:`LazyRead` reads from.

    Subclasses (``tables/``, ``paimon/``, ``hudi/``) plan on first need and implement
    :meth:`schema`, :meth:`batches`, :meth:`explain`, :attr:`report`, and where they can do better
    than reading every output column, :meth:`count`; :meth:`project` gives a source of fewer
    columns (pushed down by Polars and :meth:`LazyRead.select`) and :meth:`parts` the picklable
    units a distributed reader (Ray) reads on its workers."""

    kind = "table"

    def schema(self) -> pa.Schema:  # pragma: no cover - abstract
        """The output schema (the projected columns, in order)."""
        raise NotImplementedError

    def batches(self, limit: Optional[int] = None) -> Iterator:
        """Tables or record batches of the answer, streamed; may stop early once ``limit`` rows
        are out (the caller cuts the last batch)."""
        raise NotImplementedError  # pragma: no cover - abstract

    def count(self) -> int:
        """Rows of the answer (the default reads every output column; sources read less)."""
        return sum(b.num_rows for b in self.batches())

    def whole(self, limit: Optional[int] = None) -> Iterator:
        """The answer for a consumer that holds all of it (:meth:`LazyRead.to_arrow`): by default
        :meth:`batches`; sources that read faster in larger steps (the native reader spreads one
        call's files over every thread) read in those."""
        return self.batches(limit)

    def explain(self) -> Explain:  # pragma: no cover - abstract
        raise NotImplementedError

    @property
    def report(self):  # pragma: no cover - abstract
        raise NotImplementedError

    def project(self, columns: List[str]) -> "ReadSource":
        """A source of the same rows with only ``columns`` (a subset of :meth:`schema`'s)."""
        raise NotImplementedError(f"{type(self).__name__} cannot project")  # pragma: no cover

    def parts(self) -> list:
        """Picklable callables, each returning an iterator of tables: the answer split into
        units (files, splits, slices) that other processes can read."""
        raise NotImplementedError(f"{type(self).__name__} cannot be read in parts")  # pragma: no cover

    def describe(self) -> str:
        return self.kind


def _conform(batch, schema: pa.Schema):
    """A record batch of ``schema`` (columns by name, cast when a type differs)."""
    if isinstance(batch, pa.Table):
        raise TypeError("_conform takes record batches")
    if batch.schema.equals(schema):
        return batch
    if batch.schema.names != schema.names:
        batch = pa.RecordBatch.from_arrays([batch.column(n) for n in schema.names], names=schema.names)
    return batch.cast(schema) if not batch.schema.equals(schema) else batch


def _record_batches(items: Iterable, schema: pa.Schema, limit: Optional[int]) -> Iterator[pa.RecordBatch]:
    """The sources' tables and batches as non-empty record batches of ``schema``, cut at ``limit``."""
    left = limit
    if left is not None and left <= 0:
        return
    for item in items:
        parts = item.to_batches() if isinstance(item, pa.Table) else [item]
        for b in parts:
            if not b.num_rows:
                continue
            if left is not None and b.num_rows > left:
                b = b.slice(0, left)
            yield _conform(b, schema)
            if left is not None:
                left -= b.num_rows
                if left <= 0:
                    close = getattr(items, "close", None)
                    if close is not None:
                        close()  # the source's generator ends now: no read past the limit
                    return


_END = object()


def _prefetched(make_items: Callable[[], Iterator]) -> Iterator:
    """The items of ``make_items()``, produced on a thread of their own one item ahead of the
    consumer (a queue of one).  Reading overlaps what the consumer does with the previous batch,
    and every allocation of the read happens on one thread whichever threads consume (DuckDB
    pulls from several: each would otherwise keep its own malloc arena of the read's buffers).
    Closing this iterator (or dropping it) stops the producer after the item it is making."""
    q: "queue.Queue" = queue.Queue(1)
    stop = threading.Event()

    def put(item) -> bool:
        while not stop.is_set():
            try:
                q.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def produce():
        items = None
        try:
            items = make_items()
            for x in items:
                if not put((True, x)) or stop.is_set():
                    return
            put((True, _END))
        except BaseException as e:  # noqa: BLE001 - handed to the consumer, raised there
            put((False, e))
        finally:
            close = getattr(items, "close", None)
            if close is not None:
                close()

    t = threading.Thread(target=produce, name="paimon-fast-read", daemon=True)
    t.start()
    try:
        while True:
            ok, x = q.get()
            if not ok:
                raise x
            if x is _END:
                return
            yield x
    finally:
        stop.set()
        try:  # free the producer if it waits to put
            while True:
                q.get_nowait()
        except queue.Empty:
            pass


def check_limit(limit):
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        from ..errors import InvalidArgumentError

        raise InvalidArgumentError(f"limit must be a non-negative integer or None, got {limit!r}")
    return limit


class LazyRead:
    """A read of a table, lazy until asked for (see the module docstring).

    Every method that returns rows starts a new read: a ``LazyRead`` can be read many times
    (each read sees the table as it is then for tables whose plan is not kept) and hands one
    stream to each consumer."""

    def __init__(self, source: ReadSource, limit: Optional[int] = None):
        self._source = source
        self._limit = check_limit(limit)

    # ------------------------------------------------------------ what it reads
    @property
    def source(self) -> ReadSource:
        return self._source

    @property
    def limit(self) -> Optional[int]:
        return self._limit

    @property
    def schema(self) -> pa.Schema:
        """The Arrow schema of the rows (the projected columns)."""
        return self._source.schema()

    @property
    def columns(self) -> List[str]:
        return list(self.schema.names)

    @property
    def report(self):
        """The table kind's report of what pruning did (planned on first access) and, as the
        rows stream, what was read."""
        return self._source.report

    def explain(self) -> Explain:
        """Which indexes the table holds on the predicate's columns, which were used, the files
        and rows each removed, and why the others were not (``str()`` gives a short table)."""
        return self._source.explain()

    def count(self) -> int:
        """Rows of the answer: from the indexes and the predicate's columns at the rows they
        select (no other column is read); at most ``limit``."""
        n = self._source.count()
        return n if self._limit is None else min(n, self._limit)

    def select(self, columns: List[str]) -> "LazyRead":
        """The same read with only ``columns`` (a subset of :attr:`columns`)."""
        from ..errors import ColumnNotFoundError

        names = self.columns
        for c in columns:
            if c not in names:
                raise ColumnNotFoundError(c, names)
        return LazyRead(self._source.project(list(columns)), self._limit)

    def with_limit(self, limit: Optional[int]) -> "LazyRead":
        """The same read stopping after ``limit`` rows."""
        return LazyRead(self._source, limit)

    # ------------------------------------------------------------ hand-offs
    def _batches(self) -> Iterator[pa.RecordBatch]:
        from ..io.pool import threads

        schema, limit, source = self.schema, self._limit, self._source
        if threads() == 1:  # one thread asked for: no read ahead on a second one
            return _record_batches(source.batches(limit), schema, limit)
        return _prefetched(lambda: _record_batches(source.batches(limit), schema, limit))

    def to_arrow_batch_reader(self) -> pa.RecordBatchReader:
        """A ``pyarrow.RecordBatchReader`` that reads as it is consumed: file by file and, within
        large files, range by range."""
        return pa.RecordBatchReader.from_batches(self.schema, self._batches())

    def __arrow_c_stream__(self, requested_schema=None):
        """The Arrow C stream interface: ``pa.table(read)``, ``polars.from_arrow``, DuckDB's
        ``FROM read`` and other consumers take a new stream of the rows."""
        return self.to_arrow_batch_reader().__arrow_c_stream__(requested_schema)

    def to_arrow(self) -> pa.Table:
        """Every row as one ``pyarrow.Table`` (holds the whole answer, read in the source's
        largest steps: :meth:`ReadSource.whole`)."""
        schema, limit, source = self.schema, self._limit, self._source
        items = source.whole(limit)
        if limit is None:  # (a source's one table of the read's schema is the answer as it is)
            first = next(items, None)
            if first is None:
                return schema.empty_table()
            second = next(items, None)
            if second is None and isinstance(first, pa.Table) and first.schema.equals(schema, check_metadata=True):
                return first
            items = itertools.chain([first] if second is None else [first, second], items)
        return pa.Table.from_batches(list(_record_batches(items, schema, limit)), schema=schema)

    def to_pandas(self, **kwargs):
        """A pandas ``DataFrame`` (``kwargs`` go to ``pyarrow.Table.to_pandas``)."""
        from ..errors import require

        require("pandas", "LazyRead.to_pandas")
        return self.to_arrow().to_pandas(**kwargs)

    def to_polars(self, lazy: bool = False):
        """A Polars ``DataFrame``; with ``lazy=True`` a ``LazyFrame`` over the stream: its
        projection and row limit are pushed into the read, its filters run on the batches as
        they arrive, and each ``collect()`` reads again."""
        from ..errors import require

        pl = require("polars", "LazyRead.to_polars")
        if not lazy:
            return pl.from_arrow(self.to_arrow())
        from polars.io.plugins import register_io_source

        schema = pl.from_arrow(self.schema.empty_table()).schema

        def source(with_columns, predicate, n_rows, batch_size):
            read = self.select(list(with_columns)) if with_columns is not None else self
            if n_rows is not None:
                # n_rows is a slice of the source taken before the predicate: Polars hands both
                # for head(n).filter(p) (for filter(p).head(n) it hands the predicate alone and
                # slices the filtered rows itself), so the limit goes into the read and the
                # predicate filters the first n_rows rows
                read = read.with_limit(n_rows if read.limit is None else min(n_rows, read.limit))
            for b in read._batches():
                df = pl.from_arrow(b)
                if predicate is not None:
                    df = df.filter(predicate)
                if df.height:
                    yield df

        return register_io_source(source, schema=schema)

    def to_duckdb(self, name: str, connection=None):
        """Register the rows as ``name`` in DuckDB (a new in-memory connection unless
        ``connection`` is given) and return the connection.  DuckDB pulls batches from the
        stream as its queries scan ``name`` (each query reads again; nothing is materialised)."""
        from ..errors import require

        duckdb = require("duckdb", "LazyRead.to_duckdb")
        con = connection if connection is not None else duckdb.connect()
        con.register(name, _Stream(self))
        return con

    def to_ray(self, **read_args):
        """A Ray ``Dataset`` whose blocks are read by Ray's workers, one task per unit of the
        answer (a kept file, a split, a file slice); ``limit`` is applied on top.  ``read_args``
        go to ``Dataset.map_batches`` (``concurrency``, ``num_cpus`` ...)."""
        from ..errors import require

        ray = require("ray", "LazyRead.to_ray")
        parts = self._source.parts()
        schema = self.schema
        if not parts:
            return ray.data.from_arrow(schema.empty_table())

        def read(batch):
            for i in batch["id"].to_pylist():
                for t in parts[i]():
                    if t.num_rows:
                        yield t.select(schema.names).cast(schema)

        ds = ray.data.range(len(parts), override_num_blocks=len(parts)).map_batches(
            read, batch_size=1, batch_format="pyarrow", **read_args
        )
        return ds.limit(self._limit) if self._limit is not None else ds

    def __repr__(self):
        lim = f", limit={self._limit}" if self._limit is not None else ""
        return f"{type(self).__name__}({self._source.describe()}{lim})"


class _Stream:
    """What DuckDB registers: each scan takes a new stream of the read."""

    __slots__ = ("_read",)

    def __init__(self, read: LazyRead):
        self._read = read

    def __arrow_c_stream__(self, requested_schema=None):
        return self._read.__arrow_c_stream__(requested_schema)


class LegacyTupleRead(LazyRead):
    """A :class:`LazyRead` returned where a ``(pyarrow.Table, report)`` tuple used to be: unpacking
    it (or indexing it) still gives that tuple, with a ``DeprecationWarning``."""

    def __init__(
        self,
        source: ReadSource,
        limit: Optional[int] = None,
        *,
        what: str = "this call",
        hint: str = "use .to_arrow() and .report",
    ):
        super().__init__(source, limit)
        self._what = what
        self._hint = hint
        self._tuple = None

    def _as_tuple(self):
        warnings.warn(
            f"{self._what} returns a LazyRead: {self._hint} instead of unpacking (table, report)",
            DeprecationWarning,
            stacklevel=3,
        )
        return self._legacy_result()

    def _legacy_result(self):
        if self._tuple is None:
            self._tuple = self._legacy()
        return self._tuple

    def _legacy(self):
        """``(table, report)`` as the former call returned them (subclasses run the former read)."""
        t = self.to_arrow()
        return t, self.report

    def __iter__(self):
        return iter(self._as_tuple())

    def __getitem__(self, i):
        return self._as_tuple()[i]

    def __len__(self):
        return 2
