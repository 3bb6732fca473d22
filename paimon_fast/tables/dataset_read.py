"""Reading a planned :class:`~paimon_fast.tables.parquet.ParquetDataset` without Spark (a mixin).

One file's rows (:meth:`_ReadMixin.read_file`, :meth:`_ReadMixin.read_rows`), the kept rows of
planned files in one native read (:meth:`_ReadMixin.read_kept_many`, shared by every reader of a
dataset, in this process and on Spark's executors), a read's estimated memory
(:meth:`_ReadMixin.read_cost`), and the lazy :meth:`_ReadMixin.read` / :meth:`_ReadMixin.scan`.
:class:`_ReadMixin` is one of the bases of ``ParquetDataset``; it imports nothing of
:mod:`paimon_fast.tables.parquet`."""

from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyroaring import BitMap

from ..core.predicate import Predicate
from ..read.arrow_filter import count_held, filter_table
from .layout import DataFile
from .plan import FilePlan, ScanPlan

# an inexact read testing at most this many rows reads every asked column with the predicate's
# (one pass), not the predicate's columns first and the others at the rows that hold it
ONE_PASS_ROWS = 1 << 15


class _ReadMixin:
    """ParquetDataset's reads: files, rows at positions, planned files' kept rows, and the lazy read."""

    # ------------------------------------------------------------ reading without Spark
    def read_file(
        self,
        f: DataFile,
        bitmap: Optional[BitMap] = None,
        predicate: Optional[Predicate] = None,
        columns: Optional[List[str]] = None,
        schema: Optional[pa.Schema] = None,
        deletion_vector=None,
        stats=None,
    ) -> pa.Table:
        """One file's rows (data + partition columns), only the bitmap's positions
        when given, without the rows ``deletion_vector`` deletes, filtered by
        ``predicate``; columns in ``schema`` (default: :meth:`schema`).  With a
        bitmap only the pages holding its rows are decoded
        (:func:`paimon_fast.io.parquet.rows.read_rows`, which adds to ``stats``)."""
        from ..io.parquet.rows import file_shape, read_rows

        schema = schema or self.schema()
        if bitmap is not None:

            def at_bitmap(src):
                names, nrows = file_shape(src)
                read_cols = [c for c in schema.names if c in names]
                pos = np.asarray(bitmap.to_array(), dtype=np.int64)
                pos = pos[pos < nrows]
                if deletion_vector is not None:
                    pos = pos[~deletion_vector.is_deleted_batch(pos)]
                return read_rows(src, pos, read_cols, stats=stats), names

            t, names = self._on_input(f, at_bitmap)
            self._read_done(f)
            return filter_table(self._conform(f, t, schema, set(names)), predicate)

        def whole(src):
            names = set(pq.read_schema(src).names)
            return pq.read_table(src, columns=[c for c in schema.names if c in names]), names

        t, data_names = self._on_input(f, whole)
        self._read_done(f)
        if deletion_vector is not None:
            from ..tableindex import apply_deletion_vector

            t = pa.Table.from_batches(
                [apply_deletion_vector(deletion_vector, b, off) for b, off in _with_offsets(t.to_batches())],
                schema=t.schema,
            )
        out = self._conform(f, t, schema, data_names)
        return filter_table(out, predicate)

    @staticmethod
    def _conform(f: DataFile, t: pa.Table, schema: pa.Schema, data_names) -> pa.Table:
        """Rows ``t`` of file ``f`` in ``schema``: data columns cast to the dataset's
        types, partition columns from the file's path, absent columns as nulls."""
        part = dict(f.partition)
        arrays = []
        for fld in schema:
            if fld.name in data_names:
                col = t.column(fld.name)
                arrays.append(col if col.type == fld.type else col.cast(fld.type))
            elif fld.name in part:
                v = part[fld.name]
                arrays.append(pa.array([v] * t.num_rows, pa.string()).cast(fld.type))
            else:
                arrays.append(pa.nulls(t.num_rows, fld.type))
        return pa.Table.from_arrays(arrays, schema=schema)

    def read_rows(
        self,
        f: DataFile,
        positions,
        columns: Sequence[str],
        predicate: Optional[Predicate] = None,
        schema: Optional[pa.Schema] = None,
        stats=None,
    ) -> pa.Table:
        """Rows at ``positions`` (sorted row positions of ``f``) with ``columns`` and a
        ``__pf_pos`` column holding each row's position, filtered by ``predicate``.

        Decodes only the pages holding those positions
        (:func:`paimon_fast.io.parquet.rows.read_rows`, which adds to ``stats``) and
        only the columns asked for plus those ``predicate`` needs."""
        from ..io.parquet.rows import file_shape, read_rows
        from ..read.topn import POS

        schema = schema or self.schema()
        positions = np.asarray(positions, dtype=np.int64)
        need = set(columns) | (predicate.fields() if predicate is not None else set())

        def at_positions(src):
            names = set(file_shape(src).columns)
            return read_rows(src, positions, [c for c in schema.names if c in need and c in names], stats=stats), names

        t, data_names = self._on_input(f, at_positions)
        keep = [fl for fl in schema if fl.name in need]
        out = self._conform(f, t, pa.schema(keep), data_names).append_column(POS, pa.array(positions))
        self._read_done(f)
        return filter_table(out, predicate).select([*columns, POS])

    def read_kept(
        self,
        p: FilePlan,
        columns: Sequence[str],
        predicate: Optional[Predicate] = None,
        schema: Optional[pa.Schema] = None,
        positions: bool = False,
        stats=None,
        rows: Optional[Tuple[int, int]] = None,
    ) -> pa.Table:
        """The rows of the kept file ``p`` where ``predicate`` holds, with ``columns`` (data or
        partition columns of ``schema``, default :meth:`schema`) and, with ``positions``, a
        ``__pf_pos`` column of each row's position in the file: :meth:`read_kept_many` of one
        file (the one read of a planned file that every reader of a dataset shares, in this
        process and on Spark's executors).  ``rows=(start, stop)`` reads only the file's rows
        in that range of positions."""
        t, _ = self.read_kept_many([(p, rows)], columns, predicate, schema, positions=positions, stats=stats)
        return t

    def read_kept_many(
        self,
        parts: Sequence[Tuple[FilePlan, Optional[Tuple[int, int]]]],
        columns: Sequence[str],
        predicate: Optional[Predicate] = None,
        schema: Optional[pa.Schema] = None,
        positions: bool = False,
        stats=None,
        threads: Optional[int] = None,
    ) -> Tuple[pa.Table, np.ndarray]:
        """The rows of kept files where ``predicate`` holds, one file after another, as one table
        (and the rows each part gave): ``parts`` are ``(FilePlan, (start, stop) or None)``, a
        file or a range of its row positions.

        Every file is read at the rows its plan selects (a row bitmap's positions, or every row
        not deleted), in one call of the native Parquet reader
        (:func:`paimon_fast.io.parquet.native.read_files`) across files, column chunks and pages
        on all threads: only the pages holding those rows are read and decoded, and each file
        only at its selected rows (``stats``, a ``PageReadStats``, is added to).  Where a file's
        plan is exact (:attr:`FilePlan.exact`) the predicate is not evaluated and its columns are
        not read unless asked for (none at all for a count); elsewhere the predicate's columns
        are read at the selected rows (only those of what is left of it, when the plans answered
        some leaves of a top-level AND exactly: :attr:`FilePlan.residual`), the predicate applied
        (a count takes the mask's sums, no rows), and the other ``columns`` read only
        at the rows that hold it (or, at most ``ONE_PASS_ROWS`` rows to test, every column read at
        them in one pass and then filtered).  Deleted rows are never read."""
        from ..io.parquet.native import read_files
        from ..io.parquet.rows import no_columns
        from ..read.topn import POS

        schema = schema or self.schema()
        columns = list(columns)
        data_schema = self.data_schema()
        data_list = data_schema.names
        data_names = set(data_list)
        # the tables handed back carry no schema metadata (a file's pandas metadata would mislead)
        bare = data_schema.remove_metadata() if data_schema.metadata else data_schema
        # every data column asked for, no partition column: the reader's table is the answer
        plain = schema is data_schema or schema.equals(data_schema)
        items = []  # per part: (input, positions: ndarray / range / None)
        for p, rows in parts:
            items.append((self._input(p.file), self._kept_positions(p, rows)))
        counts = np.zeros(len(parts), dtype=np.int64)
        if not parts:
            return self._assemble([], [], [], columns, schema, positions), counts
        exact = [predicate is None or p.exact for p, _ in parts]
        pred_cols = predicate.fields() if predicate is not None else set()
        out_tables: List[Optional[pa.Table]] = [None] * len(parts)

        def read(idx, want, pos_list):
            """``want`` columns (data or partition) of parts ``idx`` at ``pos_list``: a table with
            the part's rows in order, and the rows of each part."""
            data = [c for c in want if c in data_names]
            its = [(items[i][0], pos_list[k]) for k, i in enumerate(idx)]
            if data:
                sch = bare if data == data_list else pa.schema([data_schema.field(c) for c in data])
                # an optimize moves the files it replaced away one after another: a file located
                # before its move is not found after it, and is located again (each file moves
                # once, so this ends)
                for attempt in range(len(idx) + 1):
                    try:
                        t, n = read_files(its, data, schema=sch, stats=stats, threads=threads, sorted_positions=True)
                        break
                    except FileNotFoundError:
                        if attempt == len(idx):
                            raise
                        its = [(self._input(parts[i][0].file), pos_list[k]) for k, i in enumerate(idx)]
            else:
                n = np.array([_count(x, parts[i][0]) for x, i in zip(pos_list, idx)], dtype=np.int64)
                t = no_columns(int(n.sum()))
            if not want:  # rows without columns (a count, positions)
                return no_columns(t.num_rows), n
            if plain and data == want == data_list:  # (its schema is the read's: nothing to rebuild)
                return t, n
            arrays = []
            for c in want:
                fld = schema.field(c)
                if c in data_names:
                    col = t.column(c)
                    arrays.append(col if col.type == fld.type else col.cast(fld.type))
                else:
                    arrays.append(_partition_column(fld, [parts[i][0].file for i in idx], n))
            return pa.Table.from_arrays(arrays, schema=pa.schema([schema.field(c) for c in want])), n

        def positions_of(idx, pos_list, n):
            """Each row's position in its file, for parts ``idx`` read at ``pos_list``."""
            out = []
            for x, i, k in zip(pos_list, idx, n):
                if x is None:
                    out.append(np.arange(int(k), dtype=np.int64))
                elif isinstance(x, range):
                    out.append(np.arange(x.start, x.start + int(k), dtype=np.int64))
                else:
                    out.append(np.asarray(x, dtype=np.int64))
            return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)

        # parts whose plan is exact: the columns asked for, at the selected rows
        ex = [i for i in range(len(parts)) if exact[i]]
        if ex:
            t, n = read(ex, columns, [items[i][1] for i in ex])
            if positions:
                t = t.append_column(POS, pa.array(positions_of(ex, [items[i][1] for i in ex], n), pa.int64()))
            _split_into(out_tables, ex, t, n, counts)
        # the others: the predicate's columns at the selected rows, the predicate, then the rest
        inexact = [i for i in range(len(parts)) if not exact[i]]
        # what the selected rows are tested against: the predicate, or what is left of it when every
        # inexact part's plan answered the same leaves of it exactly (those leaves' columns are then
        # not read for the test)
        test, test_cols = predicate, pred_cols
        r0 = parts[inexact[0]][0].residual if inexact else None
        if r0 is not None and r0[0] == predicate and all(parts[i][0].residual == r0 for i in inexact):
            test = r0[1]
            test_cols = test.fields()
        candidates = sum(_count(items[i][1], parts[i][0]) for i in inexact)
        if inexact and candidates <= ONE_PASS_ROWS:
            # few rows to test (a clustered column's boundary pages): every column read at them in
            # one call, then filtered (the rows that fail cost less than a second read would)
            pos_list = [items[i][1] for i in inexact]
            want = [fl.name for fl in schema if fl.name in test_cols or fl.name in columns]
            t, n = read(inexact, want, pos_list)
            if positions:
                t = t.append_column(POS, pa.array(positions_of(inexact, pos_list, n), pa.int64()))
            t = t.append_column("__pf_part", pa.array(np.repeat(np.arange(len(inexact), dtype=np.int32), n)))
            t = filter_table(t, test)
            n = np.bincount(t.column("__pf_part").to_numpy(), minlength=len(inexact)).astype(np.int64)
            names = [*columns, POS] if positions else columns
            t = t.select(names) if names else no_columns(t.num_rows)  # (select([]) keeps no rows)
            _split_into(out_tables, inexact, t, n, counts)
        elif inexact:
            first = [fl.name for fl in schema if fl.name in test_cols]
            pos_list = [items[i][1] for i in inexact]
            t, n = read(inexact, first, pos_list)
            held = count_held(t, test, n) if not columns and not positions else None
            if held is not None:  # a count: how many rows of each part hold (no row is kept)
                _split_into(out_tables, inexact, no_columns(int(held.sum())), held, counts)
            else:
                # each row's number in the read, filtered with the rows: the kept rows' parts and positions
                total = t.num_rows
                t = t.append_column(
                    "__pf_i", pa.array(np.arange(total, dtype=np.int32 if total < 1 << 31 else np.int64))
                )
                t = filter_table(t, test)
                idx = t.column("__pf_i").to_numpy().astype(np.int64)
                t = t.drop_columns(["__pf_i"])
                starts = np.concatenate(([0], np.cumsum(n)))
                part_of = np.searchsorted(starts, idx, side="right") - 1
                pos = positions_of(inexact, pos_list, n)[idx]  # the kept rows' positions in their files
                n = np.bincount(part_of, minlength=len(inexact)).astype(np.int64)
                if positions:
                    t = t.append_column(POS, pa.array(pos, pa.int64()))
                rest = [fl.name for fl in schema if fl.name in columns and fl.name not in test_cols]
                if rest:
                    cuts = np.concatenate(([0], np.cumsum(n)))
                    kept = [pos[cuts[k] : cuts[k + 1]] for k in range(len(inexact))]
                    more, _ = read(inexact, rest, kept)
                    for fl in rest:
                        t = t.append_column(schema.field(fl), more.column(fl))
                names = [*columns, POS] if positions else columns
                t = t.select(names) if names else no_columns(t.num_rows)  # (select([]) keeps no rows)
                _split_into(out_tables, inexact, t, n, counts)
        for f in {id(p.file): p.file for p, _ in parts}.values():
            self._read_done(f)  # what was read is the snapshot's version of each file
        return self._assemble(out_tables, parts, counts, columns, schema, positions), counts

    def _kept_positions(self, p: FilePlan, rows: Optional[Tuple[int, int]]):
        """The positions of file ``p`` to read: a sorted array, a ``range``, or None (every row)."""
        nrows = p.rows
        dv = p.deletion_vector
        bm = p.bitmap
        if bm is not None and not (len(bm) and bm.max() - bm.min() + 1 == len(bm)):
            pos = np.asarray(bm.to_array())  # sorted (a bitmap's); a view, uint32: the reader widens it
            if len(pos) and pos[-1] >= nrows:
                pos = pos[: np.searchsorted(pos, nrows)]
            if rows is not None:
                pos = pos[np.searchsorted(pos, max(0, int(rows[0]))) : np.searchsorted(pos, int(rows[1]))]
        else:
            # every row, or one run of them (a clustered column's answer), within the window: a
            # range, which the reader reads by whole pages and row groups, not row by row
            lo, hi = (0, nrows) if bm is None else (int(bm.min()), min(nrows, int(bm.max()) + 1))
            if rows is not None:
                lo, hi = max(lo, int(rows[0])), min(hi, int(rows[1]))
            pos = None if (lo, hi) == (0, nrows) else range(lo, max(lo, hi))
        if dv is not None:
            if pos is None:
                pos = np.arange(nrows, dtype=np.int64)
            elif isinstance(pos, range):
                pos = np.arange(pos.start, pos.stop, dtype=np.int64)
            else:
                pos = pos.astype(np.int64)
            pos = pos[~dv.is_deleted_batch(pos)]
        return pos

    @staticmethod
    def _assemble(tables, parts, counts, columns, schema, positions) -> pa.Table:
        from ..read.topn import POS

        names = [*columns, POS] if positions else list(columns)
        fields = [schema.field(c) if c != POS else pa.field(POS, pa.int64()) for c in names]
        got = [t for t in tables if t is not None and t.num_rows]
        if not names:  # a count: rows without columns
            from ..io.parquet.rows import no_columns

            return no_columns(sum(t.num_rows for t in got))
        if not got:
            return pa.Table.from_arrays([pa.array([], f.type) for f in fields], schema=pa.schema(fields))
        if len(got) == 1:
            return got[0]
        return pa.concat_tables(got)

    def read_cost(
        self,
        plan: "ScanPlan",
        columns: Sequence[str],
        predicate: Optional[Predicate] = None,
        schema: Optional[pa.Schema] = None,
    ) -> int:
        """Estimated bytes in memory of :meth:`read_kept` of every kept file of ``plan`` with
        ``columns`` (the predicate default: the plan's): the predicate's columns at the rows the
        plan selects, and the other columns at the rows that may match: every selected row of a
        file an index answered with rows (such answers are mostly exact) or without a predicate
        (or one on partition columns only), none of a file kept whole by a partial answer (what
        the predicate keeps there is known only once it is read: a driver read that passes its
        threshold gives up).  Fixed-width columns count their width, the others the file's
        uncompressed column size (at least 12 bytes a value); a file whose plan is exact counts
        only the columns asked for at its selected rows.  Reads the kept files' footers (cached
        for local files)."""
        from ..io.parquet.rows import column_sizes

        schema = schema or self.schema()
        pred = plan.predicate if predicate is None else predicate
        pred_cols = pred.fields() if pred is not None else set()
        part_names = set(self.partition_schema().names)
        exact_whole = pred is None or pred_cols <= part_names
        first = [fl for fl in schema if fl.name in pred_cols]
        rest = [fl for fl in schema if fl.name in set(columns) and fl.name not in pred_cols]
        total = 0
        every = [fl for fl in schema if fl.name in set(columns)]
        for p in plan.kept:
            n = p.rows_to_read
            if n <= 0:
                continue
            part = dict(p.file.partition)
            sizes = []

            def cost(fields, rows):
                out = 0
                for fl in fields:
                    width = _fixed_width(fl.type)
                    if fl.name in part_names:
                        out += rows * (width or 4 + len(part.get(fl.name) or ""))
                    elif width:
                        out += rows * width + rows // 8
                    else:
                        if not sizes:
                            sizes.append(self._on_input(p.file, column_sizes))
                        raw = sizes[0].uncompressed.get(fl.name, 0) * rows // max(1, sizes[0].rows)
                        out += rows * 4 + max(raw, 8 * rows)
                return out

            if p.exact:  # the selected rows are the answer: only the columns asked for, there
                total += cost(every, n)
            else:
                total += cost(first, n) + cost(rest, n if (p.bitmap is not None or exact_whole) else 0)
        return total

    def read(self, where=None, columns: Optional[List[str]] = None, limit: Optional[int] = None):
        """The rows where ``where`` (a predicate or SQL text) holds, with ``columns``: a
        :class:`~paimon_fast.read.lazy.LazyRead`, lazy until asked (``to_arrow()``,
        ``to_arrow_batch_reader()``, ``to_pandas()``, ``to_polars()``, ``to_duckdb(name)``,
        ``count()``, ``explain()``, ``report``).  The indexes prune files and rows once, on first
        need; the kept files stream range by range (:mod:`paimon_fast.tables.stream`); ``limit``
        stops reading once that many rows are out.  A predicate naming a column the dataset lacks
        (or comparing one with a literal of another type) raises here."""
        from ..read.lazy import LazyRead
        from .stream import DatasetSource

        return LazyRead(DatasetSource(self._at(), where, columns).check(), limit)

    def scan(self, predicate=None, columns: Optional[List[str]] = None):
        """Exact answer without Spark, as :meth:`read` (``read(predicate, columns)``, the same
        :class:`~paimon_fast.read.lazy.LazyRead`).  Unpacking it as the former ``(table, report)``
        tuple still works, warned (DeprecationWarning): the indexes prune, whole files or their
        bitmap rows are read and filtered."""
        from .stream import DatasetSource, ScanResult

        return ScanResult(DatasetSource(self._at(), predicate, columns).check())

    def _scan_table(self, plan: ScanPlan, columns: Optional[List[str]] = None) -> pa.Table:
        """The former eager read of :meth:`scan`: every kept file (its bitmap rows only, without
        deleted rows) filtered and concatenated; fills ``plan.report`` (bytes read, decoded)."""
        from ..io.parquet.rows import PageReadStats

        b0 = self.io.snapshot()[0]
        schema = self.schema()
        plan.report.decoded = PageReadStats()
        parts = [
            self.read_file(
                p.file,
                p.bitmap,
                plan.predicate,
                schema=schema,
                deletion_vector=p.deletion_vector,
                stats=plan.report.decoded,
            )
            for p in plan.kept
        ]
        t = pa.concat_tables(parts) if parts else schema.empty_table()
        if columns:
            t = t.select(columns)
        plan.report.bytes_read += self.io.snapshot()[0] - b0
        return t


def _fixed_width(t: pa.DataType) -> int:
    """Bytes a value of a fixed-width Arrow type takes (0: variable width or nested)."""
    try:
        bits = t.bit_width
    except ValueError:
        return 0
    return max(1, bits // 8)


def _with_offsets(batches):
    off = 0
    for b in batches:
        yield b, off
        off += b.num_rows


def _count(x, p: FilePlan) -> int:
    """Rows a part reads: its positions' count, its range's length, or the file's rows."""
    if x is None:
        return p.rows
    return len(x)


def _split_into(out: list, idx: List[int], t: pa.Table, n: np.ndarray, counts: np.ndarray) -> None:
    """``t`` (parts ``idx`` one after another, ``n`` rows each) cut into the parts' slots of ``out``."""
    at = 0
    for i, k in zip(idx, n.tolist()):
        out[i] = t.slice(at, k)
        counts[i] = k
        at += k


def _partition_column(fld: pa.Field, files: List[DataFile], n: np.ndarray) -> pa.Array:
    """A partition column of parts read from ``files`` (``n`` rows each): each file's value from
    its path, repeated."""
    values = [dict(f.partition).get(fld.name) for f in files]
    one = pa.array(values, pa.string()).cast(fld.type)
    return one.take(pa.array(np.repeat(np.arange(len(files), dtype=np.int64), n)))
