"""A Hudi table's rows as a stream, in this process: the source of batches behind
``paimon_fast.hudi.read(path, where, columns, limit)`` and ``read_arrow``.

The bitmap index prunes once, on first need (:func:`.prune.prune`: candidate file slices and, for
base-file positions, their rows); each candidate slice is then read with :func:`.slices.iter_slice`
(base files row group by row group, or at their candidate positions in chunks; slices with log
files through the ``hudi`` file-group reader), filtered exactly by the predicate.  Only the
projected columns and the predicate's are read.  The report (a dict, :func:`.prune.prune`'s) gains
``rows_returned``, ``bytes_read`` and ``decoded`` as slices are read.
"""

from __future__ import annotations

from typing import Iterator, List, Optional

import pyarrow as pa

from ..io.fs import IOCounter
from ..read.lazy import LazyRead, LegacyTupleRead, ReadSource
from .prune import _IO, bind_to_state, as_predicate, prune
from .slices import _report, _run_task, _tasks, iter_slice, task_slice
from .table import table_state


class _Shared:
    """One read's pruning, shared by its projections."""

    def __init__(self, path, where, state=None):
        self.path = path
        self.pred = as_predicate(where)
        self._state = state
        self.pruned = None  # (state, PruneResult, tasks, report, IOCounter, PageReadStats)

    def state(self):
        if self._state is None:
            self._state = table_state(self.path, listing=False)  # prune reuses the index's listing when current
        return self._state

    def planned(self):
        if self.pruned is None:
            from ..io.parquet.rows import PageReadStats

            io = IOCounter()  # report["bytes_read"]: index segments and base files read
            token = _IO.set(io)
            try:
                state = self.state()
                self.pred = bind_to_state(self.pred, state)  # once: prune and every slice take it bound
                pr = prune(state.path, self.pred, state=state)
            finally:
                _IO.reset(token)
            decoded = PageReadStats()
            rep = _report(pr, {"rows_returned": 0, "bytes_read": io.bytes, "decoded": decoded.as_dict()})
            self.pruned = (state, pr, _tasks(pr), rep, io, decoded)
        return self.pruned


class HudiSource(ReadSource):
    """The rows of the Hudi table at ``path`` where ``where`` holds, with ``columns``."""

    kind = "Hudi table"

    def __init__(
        self, path, where=None, columns: Optional[List[str]] = None, *, state=None, _shared: Optional[_Shared] = None
    ):
        self._shared = _shared or _Shared(path, where, state)
        self._columns = None if columns is None else list(columns)

    def _table_schema(self) -> pa.Schema:
        return pa.schema([f.with_nullable(True) for f in self._shared.state().schema])

    def schema(self) -> pa.Schema:
        full = self._table_schema()
        if self._columns is None:
            return full
        from ..errors import ColumnNotFoundError

        for c in self._columns:
            if c not in full.names:
                raise ColumnNotFoundError(c, full.names)
        return pa.schema([full.field(c) for c in self._columns])

    def project(self, columns: List[str]) -> "HudiSource":
        return HudiSource(None, columns=columns, _shared=self._shared)

    @property
    def report(self) -> dict:
        return self._shared.planned()[3]

    def describe(self) -> str:
        p = self._shared.pred
        return f"{self.kind} {self._shared.path}" + (f" where {p!r}" if p is not None else "")

    def _read_schema(self, columns: List[str]) -> pa.Schema:
        """The columns read: ``columns`` and the predicate's (in the table's order)."""
        full = self._table_schema()
        pred = self._shared.pred
        need = set(columns) | (pred.fields() if pred is not None else set())
        return pa.schema([f for f in full if f.name in need])

    def _read(self, columns: List[str], limit: Optional[int], counting: bool = False) -> Iterator[pa.Table]:
        state, pr, tasks, rep, io, decoded = self._shared.planned()
        pred = self._shared.pred
        schema = self._read_schema(columns)
        out = 0
        for task in tasks:
            ref, pos = task_slice(task)
            it = iter_slice(state.path, ref, schema, pos, pred, decoded)
            while True:
                token = _IO.set(io)  # set and reset around each range: the consumer may be another thread
                try:
                    t = next(it, None)
                finally:
                    _IO.reset(token)
                rep["bytes_read"] = io.bytes
                rep["decoded"] = decoded.as_dict()
                if t is None:
                    break
                t = t.select(columns)
                if limit is not None and out + t.num_rows > limit:
                    t = t.slice(0, limit - out)  # the report counts the rows handed out
                out += t.num_rows
                if not counting:
                    rep["rows_returned"] += t.num_rows
                yield t
                if limit is not None and out >= limit:
                    return

    def batches(self, limit: Optional[int] = None) -> Iterator[pa.Table]:
        return self._read(self.schema().names, limit)

    def count(self) -> int:
        """Rows where the predicate holds, reading the predicate's columns only (every row of the
        candidate slices without a predicate: their row counts where the index knows them)."""
        state, pr, tasks, rep, io, decoded = self._shared.planned()
        if self._shared.pred is None and all(
            c.rows_to_read is not None and not c.slice.log_files for c in pr.candidates
        ):
            return sum(c.rows_to_read for c in pr.candidates)
        return sum(t.num_rows for t in self._read([], None, counting=True))

    def explain(self):
        from .explain import explain_hudi

        state, pr, tasks, rep, io, decoded = self._shared.planned()
        return explain_hudi(state, self._shared.pred, pr)

    def parts(self) -> list:
        state, pr, tasks, rep, io, decoded = self._shared.planned()
        cols = self.schema().names
        return [_SlicePart(state.path, t, self._read_schema(cols), cols, self._shared.pred) for t in tasks]


class _SlicePart:
    """One candidate slice read in another process (:meth:`HudiSource.parts`)."""

    def __init__(self, path, task, schema, columns, pred):
        self.path, self.task, self.schema, self.columns, self.pred = path, task, schema, columns, pred

    def __call__(self):
        ref, pos = task_slice(self.task)
        for t in iter_slice(self.path, ref, self.schema, pos, self.pred):
            yield t.select(self.columns)


def read_table(
    path: str, where=None, columns: Optional[List[str]] = None, limit: Optional[int] = None, *, state=None
) -> LazyRead:
    """The rows of the Hudi table at ``path`` where ``where`` (a predicate or SQL text) holds, with
    ``columns``: a :class:`~paimon_fast.read.lazy.LazyRead` (pruned on first need, streamed slice by
    slice); ``limit`` stops reading once that many rows are out.  ``state``: a
    :func:`.table.table_state` to reuse."""
    return LazyRead(HudiSource(path, where, columns, state=state), limit)


class ArrowRead(LegacyTupleRead):
    """Result of :func:`read_arrow`: the read object of :func:`read_table`, with ``table`` (the whole
    answer as a ``pyarrow.Table``, read once, at first access) and ``report`` (dict) as before.

    Unpacking it as the former ``(table, report)`` tuple still works and warns
    (DeprecationWarning): use ``.table`` and ``.report``."""

    def __init__(self, source: HudiSource):
        super().__init__(source, what="read_arrow", hint="use .table and .report")

    def _legacy(self):
        """The former eager read: every candidate slice read whole, filtered, concatenated."""
        src = self._source
        state, pr, tasks, rep, io, decoded = src._shared.planned()
        schema = src._table_schema()
        token = _IO.set(io)
        try:
            parts = [_run_task(state.path, t, schema, src._shared.pred, decoded) for t in tasks]
        finally:
            _IO.reset(token)
        tbl = pa.concat_tables(parts) if parts else schema.empty_table()
        rep.update(rows_returned=tbl.num_rows, bytes_read=io.bytes, decoded=decoded.as_dict())
        return tbl, rep

    @property
    def table(self) -> pa.Table:
        return self._legacy_result()[0]

    @property
    def report(self) -> dict:
        return self._legacy_result()[1]

    def __repr__(self):
        return f"ArrowRead(rows={self.table.num_rows}, report={self.report!r})"


def read_arrow(table_path: str, where=None, *, state=None) -> ArrowRead:
    """In-process pruned read: an :class:`ArrowRead` (``.table``, a ``pyarrow.Table`` whose rows
    equal a snapshot read filtered by ``where``, and ``.report``); no Spark needed.  It is also the
    read object of :func:`read_table` (``to_arrow_batch_reader()``, ``to_duckdb()`` ...).  The
    index prunes when it is called."""
    src = HudiSource(table_path, where, state=state)
    src._shared.planned()
    return ArrowRead(src)
