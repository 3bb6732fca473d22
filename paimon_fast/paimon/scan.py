"""Index-pruned scans of Paimon tables read with pypaimon.

pypaimon plans every data file and never decodes file indexes.  Here we let
pypaimon plan, then evaluate each planned file's index (the bytes embedded in
the manifest, else the ``<data file>.index`` among its extra files) against
the predicate:

* a file the index proves empty is dropped (``DataSplit.filter_file``);
* an exact row answer (a bitmap of positions) becomes row ranges in an
  ``IndexedSplit``, so pypaimon reads only those rows;
* deletion vectors are intersected with those ranges (and folded into them,
  which is also how 64-bit deletion vectors, which pypaimon cannot parse,
  get read).

It is applied only where Java applies file indexes: append tables, and
primary-key splits that are raw-convertible in a table with deletion
vectors.  Anything uncertain keeps the file or row: an index type we cannot
load, a column missing from or retyped in the file's schema, a split kind we
do not know.

Columns are resolved through the file's schema id and field ids: the
predicate names the table's current columns, the index names the columns as
they were when the file was written.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Dict, Optional, Tuple

from pyroaring import BitMap

from ..errors import PaimonFastError
from ..fileindex.format import FileIndexFormat
from ..core.bind import bind
from ..core.result import REMAIN, BitmapResult, FileIndexResult
from ..io.source import BytesSource
from ..read.arrow_filter import filter_table
from .compat import legacy_manifest_table
from .deletion import is_64bit, read_deletion_vector
from .predicates import as_predicate, for_planning, to_pypaimon
from .pruning import (
    INDEX_SUFFIX,
    PruneReport,
    _bool_opt,
    _CountingSource,
    _opt,  # noqa: F401 (handed on)
    _result_of,  # noqa: F401
    _SchemaResolver,
    index_applicability,
)


class UnsupportedFeatureError(PaimonFastError):
    """A table or split this module cannot read correctly (the message says what and why)."""


# selected rows closer than this are read as one range (see _ranges_of)
DEFAULT_COALESCE_GAP = 2048


def _ranges_of(bm: BitMap, offset: int, deleted=None, gap: int = 0):
    """Row ranges (inclusive, shifted by ``offset``) of a bitmap, as (from, to) pairs.

    Ranges closer than ``gap`` rows are merged when no deleted row lies
    between them: a few unselected rows cost less to read (the residual
    filter drops them) than another batch does in pypaimon's reader.
    """
    import numpy as np

    if not len(bm):
        return []
    a = np.asarray(bm.to_array(), dtype=np.int64)
    g = np.diff(a) - 1
    joined = g == 0
    if gap > 0 and len(a) > 1:
        near = (g > 0) & (g <= gap)
        if deleted is not None and len(deleted):
            d = np.asarray(deleted.to_array(), dtype=np.int64)
            inside = np.searchsorted(d, a[1:], "left") - np.searchsorted(d, a[:-1], "right")
            near &= inside == 0
        joined |= near
    breaks = np.flatnonzero(~joined)
    starts = np.concatenate(([a[0]], a[breaks + 1]))
    ends = np.concatenate((a[breaks], [a[-1]]))
    return list(zip((starts + offset).tolist(), (ends + offset).tolist()))


class IndexPruner:
    """Prunes pypaimon splits of one table with the files' indexes.

    ``predicate`` may be ours or a pypaimon ``Predicate``.  Index bytes are
    read in parallel (``max_workers`` threads), once per file.
    """

    def __init__(
        self,
        table,
        predicate,
        max_workers: int = 8,
        fold_deletion_vectors: str = "auto",
        coalesce_gap: int = DEFAULT_COALESCE_GAP,
        global_index=None,
    ):
        self.table = table
        # a paimon.globalindex.GlobalIndexAnswer (row-tracking tables): its leaf answers are
        # ANDed with the file indexes' inside each file
        self.global_index = global_index if global_index is not None and global_index.has_index else None
        if self.global_index is not None:
            self.global_index.evaluate()  # every leaf answered up front, before the worker threads
        self.coalesce_gap = coalesce_gap
        self.predicate = as_predicate(predicate)
        self.max_workers = max_workers
        self.fold = fold_deletion_vectors
        self.resolver = _SchemaResolver(table)
        self.applicable, self.reason = index_applicability(table)

    # ------------------------------------------------------------ index bytes
    def _evaluate_file(self, f) -> Tuple[FileIndexResult, int]:
        """``(result, index bytes read)``; bytes is -1 when the file has no index.

        A sidecar is read through a seekable stream: only its header and the
        payloads the predicate needs are read."""
        names, types = self.resolver.for_schema(f.schema_id)
        gl = self._global_leaf(f)
        if f.embedded_index:
            data = bytes(f.embedded_index)
            return self._evaluate(BytesSource(data), names, types, gl), len(data)
        for extra in f.extra_files or ():
            if extra.endswith(INDEX_SUFFIX):
                try:
                    stream = self.table.file_io.new_input_stream(f.aligned_file_path(extra))
                except OSError:
                    return REMAIN, 0
                with stream:
                    try:
                        src = _CountingSource(stream)
                    except (OSError, AttributeError, ValueError):  # not seekable: read it whole
                        data = stream.read()
                        return self._evaluate(BytesSource(data), names, types, gl), len(data)
                    return self._evaluate(src, names, types, gl), src.bytes_read
        if gl is not None:
            return _result_of(None, self.predicate, names, gl), -1
        return REMAIN, -1

    def _global_leaf(self, f):
        """The global indexes' leaf answers inside data file ``f`` (None: no global index)."""
        gi = self.global_index
        first = getattr(f, "first_row_id", None)
        if gi is None or first is None or gi.stores_row_ids(f):
            return None
        return lambda leaf: gi.file_leaf_result(leaf, first, f.row_count)

    def _evaluate(self, source, names, types, global_leaf=None) -> FileIndexResult:
        try:
            container = FileIndexFormat.open(source, types)
            res = _result_of(container, self.predicate, names, global_leaf)
            if isinstance(res, BitmapResult):
                res.bitmap  # materialise while the stream is open, in the worker thread
            return res
        except (PaimonFastError, OSError):
            return REMAIN if global_leaf is None else _result_of(None, self.predicate, names, global_leaf)

    def _deletion(self, split, i):
        dfs = getattr(split, "data_deletion_files", None)
        if not dfs or i >= len(dfs):
            return None
        return dfs[i]

    # ------------------------------------------------------------ pruning
    def prune(self, splits, report: Optional[PruneReport] = None):
        """``(new splits, report)``: files proved empty dropped, row ranges where exact."""
        from pypaimon.read.split import DataSplit

        report = report or PruneReport()
        report.splits_planned += len(splits)
        report.applied = self.applicable and self.predicate is not None
        if self.predicate is None:
            report.reason = "no predicate"
        elif not self.applicable:
            report.reason = self.reason
        t0 = time.perf_counter()
        is_pk = getattr(self.table, "is_primary_key_table", False)
        use_index = report.applied
        eligible = set()  # splits Java would read raw (file by file)
        jobs = []  # (split index, file index, file)
        for si, s in enumerate(splits):
            files = list(s.files)
            report.files_planned += len(files)
            report.rows_planned += sum(f.row_count for f in files)
            if not self.applicable or type(s) is not DataSplit or (is_pk and not s.raw_convertible):
                continue
            eligible.add(si)
            if use_index:
                for fi, f in enumerate(files):
                    jobs.append((si, fi, f))
        results: Dict[Tuple[int, int], FileIndexResult] = {}
        if jobs:
            workers = max(1, min(self.max_workers, len(jobs)))
            if workers == 1:
                outs = [self._evaluate_file(f) for _, _, f in jobs]
            else:
                with ThreadPoolExecutor(workers) as ex:
                    outs = list(ex.map(lambda j: self._evaluate_file(j[2]), jobs))
            for (si, fi, _), (res, nbytes) in zip(jobs, outs):
                results[(si, fi)] = res
                if nbytes >= 0:
                    report.files_with_index += 1
                    report.index_bytes_read += nbytes
        out = []
        for si, s in enumerate(splits):
            if si not in eligible:
                out.append(self._with_32bit_dvs(s, report))
                ranges = s.row_ranges() if callable(getattr(s, "row_ranges", None)) else None
                if ranges is not None:  # planned from row ranges (a data-evolution scan's global index)
                    n = sum(r.to - r.from_ + 1 for r in ranges)
                else:
                    n = sum(f.row_count for f in s.files)
                report.rows_selected += n
                report.rows_index_selected += n
                continue
            new = self._prune_split(si, s, results, report)
            if new is not None:
                out.append(new)
        report.rows_skipped = report.rows_planned - report.rows_selected
        report.index_seconds += time.perf_counter() - t0
        return out, report

    def _with_32bit_dvs(self, s, report):
        """A split we do not prune (a merge-read primary-key split) whose 64-bit
        deletion vectors are handed to pypaimon as 32-bit ones: converted in
        memory and served by our FileIO wrapper (:func:`.compat.legacy_file_io`)
        under a virtual path, since pypaimon parses only the 32-bit format."""
        from .compat import register_deletion_blob

        dfs = getattr(s, "data_deletion_files", None)
        if not dfs or not any(df is not None and is_64bit(self.table.file_io, df) for df in dfs):
            return s
        if not getattr(self.table.file_io, "_paimon_fast_legacy_manifests", False):
            raise UnsupportedFeatureError(
                "a merge-read primary-key split has 64-bit deletion vectors, which pypaimon cannot parse, and the "
                "table's FileIO is not paimon_fast's wrapper: pass the table (not a read builder) or "
                "paimon_fast.paimon.legacy_manifest_table(table)"
            )
        from pypaimon.read.split import DataSplit
        from pypaimon.table.source.deletion_file import DeletionFile

        from ..tableindex.deletion import DeletionVector

        new_dfs = []
        for df in dfs:
            if df is None or not is_64bit(self.table.file_io, df):
                new_dfs.append(df)
                continue
            dv = read_deletion_vector(self.table.file_io, df)
            vec = DeletionVector.from_positions(dv.to_array(), bitmap64=False)
            blob = vec.to_blob()
            path = register_deletion_blob(self.table.file_io, blob)
            new_dfs.append(DeletionFile(dv_index_path=path, offset=0, length=vec.meta_length, cardinality=len(dv)))
            report.deletion_vectors_converted += 1
        if type(s) is not DataSplit:
            raise UnsupportedFeatureError(f"64-bit deletion vectors in a {type(s).__name__}: not supported")
        return _split_with_deletion_files(s, new_dfs)

    def _prune_split(self, si, s, results, report):
        from pypaimon.globalindex.indexed_split import IndexedSplit
        from pypaimon.utils.range import Range

        keep = []  # (file, deletion file, selection bitmap or None)
        need_ranges = False
        for fi, f in enumerate(s.files):
            res = results.get((si, fi), REMAIN)
            df = self._deletion(s, fi)
            if not res.remain:
                report.files_skipped += 1
                report.skipped_files.append(f.file_name)
                continue
            sel = None
            if isinstance(res, BitmapResult):
                sel = res.bitmap
                need_ranges = True
            elif df is not None and (
                self.fold == "always" or (self.fold == "auto" and is_64bit(self.table.file_io, df))
            ):
                need_ranges = True
            keep.append((f, df, sel))
        if not keep:
            return None
        if need_ranges:
            # every deletion vector of the split is folded into the ranges, so
            # pypaimon never expands positions in Python nor parses a 64-bit DV
            rows = []
            deleted = {}
            for f, df, sel in keep:
                if sel is None:
                    sel = BitMap()
                    sel.add_range(0, f.row_count)
                else:
                    sel = BitMap(sel)
                    if len(sel) and sel.max() >= f.row_count:
                        sel.remove_range(f.row_count, sel.max() + 1)
                if df is not None:
                    dv = read_deletion_vector(self.table.file_io, df)
                    sel -= dv
                    deleted[f.file_name] = dv
                    report.deletion_vectors_folded += 1
                rows.append((f, sel))
            kept = [(f, sel) for f, sel in rows if len(sel)]
            for f, sel in rows:
                if not len(sel):
                    report.files_skipped += 1
                    report.skipped_files.append(f.file_name)
            if not kept:
                return None
            names = {f.file_name for f, _ in kept}
            base = s.filter_file(lambda m: m.file_name in names)
            base = _split_with_deletion_files(base, None)
            by_name = {f.file_name: sel for f, sel in kept}
            ranges = []
            offset = 0
            row_tracking = _bool_opt(self.table, "row-tracking.enabled", False)
            for f in base.files:
                sel = by_name[f.file_name]
                off = (f.first_row_id or 0) if row_tracking else offset
                file_ranges = _ranges_of(sel, off, deleted.get(f.file_name), self.coalesce_gap)
                report.rows_selected += sum(b - a + 1 for a, b in file_ranges)
                report.rows_index_selected += len(sel)
                ranges.extend(Range(a, b) for a, b in file_ranges)
                offset += f.row_count
            return IndexedSplit(base, ranges)
        if len(keep) == len(s.files):
            new = s
        else:
            names = {f.file_name for f, _, _ in keep}
            new = s.filter_file(lambda m: m.file_name in names)
        for f, _, _ in keep:
            report.rows_selected += f.row_count
            report.rows_index_selected += f.row_count
        return new


def _split_with_deletion_files(s, deletion_files):
    """A copy of the pypaimon ``DataSplit`` ``s`` with other deletion files (None: none)."""
    from pypaimon.read.split import DataSplit

    return DataSplit(
        files=s.files,
        partition=s.partition,
        bucket=s.bucket,
        raw_convertible=s.raw_convertible,
        data_deletion_files=deletion_files,
        snapshot_id=s.snapshot_id,
        is_streaming=s.is_streaming,
        bucket_path=s.bucket_path,
        total_buckets=s.total_buckets,
    )


def _open_table(table):
    """Accept a pypaimon table or read builder; returns (table, read builder or None)."""
    if hasattr(table, "new_read_builder"):
        return legacy_manifest_table(table), None
    if hasattr(table, "table") and hasattr(table, "new_scan"):
        return table.table, table
    raise TypeError(f"expected a pypaimon table or read builder, got {type(table).__name__}")


def _reading_predicate_columns(rb, pred):
    """``(builder, extra)``: the pypaimon read builder ``rb``, or when its projection lacks
    columns of ``pred``, a copy of it that also reads them (``extra``, appended after its own
    columns; the caller filters, then drops them).  Projections of nested fields or with output
    names cannot be widened: such a builder must read the predicate's columns itself."""
    import copy

    if pred is None:
        return rb, []
    names = [f.name for f in rb.read_type()]
    extra = [c for c in sorted(pred.fields()) if c not in names]
    if not extra:
        return rb, []
    proj = getattr(rb, "_output_projection", None)
    if proj is not None and (proj.named or any(len(path) != 1 for _, path in proj.columns)):
        from ..errors import InvalidArgumentError

        raise InvalidArgumentError(
            f"the read builder's projection leaves out the predicate's columns {extra} and projects "
            "nested fields or output names: project the predicate's columns too"
        )
    return copy.copy(rb).with_projection(names + extra), extra


def _scanned_snapshot(table):
    """The snapshot pypaimon's scan of ``table`` reads (its time-travel options and pinned view
    resolved as the scan resolves them), whose index manifest lists the global indexes to use."""
    try:
        from pypaimon.snapshot.time_travel_util import TimeTravelUtil
    except ImportError:  # pragma: no cover - other pypaimon versions: the latest
        return None
    return TimeTravelUtil.resolve_snapshot(table)


def _global_index_answer(table, pred, max_workers):
    """The table's bitmap global indexes for ``pred`` (row-tracking tables), or None."""
    if (
        pred is None
        or not _bool_opt(table, "row-tracking.enabled", False)
        or not _bool_opt(table, "global-index.enabled", True)
    ):
        return None
    from .globalindex import GlobalIndexAnswer

    gi = GlobalIndexAnswer(table, pred, snapshot=_scanned_snapshot(table), max_workers=max_workers)
    if not gi.has_index:
        return None
    if gi.data_evolution and gi.foreign_types:
        return None  # index types we do not read (multi-column ones ...): pypaimon's own scan answers with them
    return gi


def bind_to_table(table, pred):
    """``pred`` bound to the table's schema (:func:`paimon_fast.core.bind.bind`: literals made exact
    values of its column types; nothing to do for a predicate already bound to them); a missing
    column raises ColumnNotFoundError."""
    if pred is None:
        return None
    tbl = getattr(table, "table", None) if not hasattr(table, "fields") else table
    fields = getattr(tbl, "fields", None)
    if not fields:
        return pred
    from pypaimon.schema.data_types import PyarrowFieldParser

    try:
        schema = PyarrowFieldParser.from_paimon_schema(list(fields))
    except Exception:  # a type pypaimon cannot map: leave the literals to pypaimon
        return pred
    return bind(pred, schema)


def plan_with_index(
    table,
    predicate,
    projection=None,
    max_workers: int = 8,
    fold_deletion_vectors: str = "auto",
    coalesce_gap: int = DEFAULT_COALESCE_GAP,
):
    """Plan with pypaimon, then prune with file indexes.

    Returns ``(read_builder, splits, report)``; read with
    ``read_builder.new_read().to_arrow(splits)``.  ``table`` may be a pypaimon
    table (0.9 manifests are handled) or a read builder (its filter is used
    when ``predicate`` is None; a given predicate must be implied by it).
    ``fold_deletion_vectors``: ``"auto"`` (64-bit ones, and all of a split
    that gets row ranges), ``"always"`` or ``"never"``.
    """
    t0 = time.perf_counter()
    table, rb = _open_table(table)
    pred = bind_to_table(table, as_predicate(predicate))
    if rb is None:
        rb = table.new_read_builder()
        planned = for_planning(pred, table)  # leaves pypaimon cannot plan with (ARRAY ops ...) are TRUE
        if planned is not None:
            rb = rb.with_filter(to_pypaimon(planned, table))
        if projection is not None:
            rb = rb.with_projection(list(projection))
    elif pred is None:
        pred = as_predicate(getattr(rb, "_predicate", None))
    gi = _global_index_answer(table, pred, max_workers)
    scan = rb.new_scan()
    mode = ""
    if gi is not None and gi.data_evolution:
        # Java's and pypaimon's data-evolution scan: the row ranges the indexes and the
        # search mode leave (pypaimon would search the bitmap files itself otherwise)
        from pypaimon.utils.range import Range

        ranges = gi.row_ranges()
        if ranges is not None:
            scan = scan.with_row_ranges([Range(a, b) for a, b in ranges])
            mode = gi.mode
        gi = None if ranges is None else gi
        pruner_gi = None
    else:
        pruner_gi = gi
        mode = "full (Java reads no global index without data evolution)" if gi is not None else ""
    splits = scan.plan().splits()
    plan_s = time.perf_counter() - t0
    pruner = IndexPruner(
        table,
        pred,
        max_workers=max_workers,
        fold_deletion_vectors=fold_deletion_vectors,
        coalesce_gap=coalesce_gap,
        global_index=pruner_gi,
    )
    new_splits, report = pruner.prune(splits)
    report.plan_seconds = plan_s
    if gi is not None and gi.used:
        report.global_indexes = list(gi.used)
        report.global_index_search_mode = mode
        report.index_bytes_read += gi.index_bytes_read
        report.index_seconds += gi.seconds
    return rb, new_splits, report


def _read_all(
    table,
    predicate,
    projection=None,
    max_workers: int = 8,
    fold_deletion_vectors: str = "auto",
    coalesce_gap: int = DEFAULT_COALESCE_GAP,
    fast: bool = True,
    use_cache: bool = True,
):
    """Plan, prune with file indexes and read to a ``pyarrow.Table``: the former
    :func:`read_with_index`, what unpacking its result runs.

    Returns ``(arrow table, PruneReport)``.  Rows are filtered by the
    predicate, so the result equals an unpruned read with the same filter.

    With ``fast=True`` (the default) a pypaimon table and a predicate are
    first tried on :mod:`.fastpath` (our own manifest reader and Parquet
    reads; plans cached per snapshot id unless ``use_cache=False``); tables
    and queries it does not cover take pypaimon's planner and reader
    (``report.fast_path`` says which, ``report.fallback_reason`` why).

    On pypaimon's path rows are read without its per-batch residual filter
    (it leaves partition keys out, so an OR / NOT over a partition column
    returned whole partitions; on row ranges it costs a dataset scan per
    range) and filtered once at the end, after any merge, by the exact filter
    (:func:`paimon_fast.read.arrow_filter.filter_table`): every row returned
    satisfies the predicate.  Literals are first normalised to the columns'
    types (:mod:`paimon_fast.core.literals`); a predicate column the table lacks
    raises :class:`~paimon_fast.errors.ColumnNotFoundError`.
    """
    import pyarrow as pa
    from pypaimon.globalindex.indexed_split import IndexedSplit

    fallback_reason = "fast=False"
    if isinstance(predicate, str):
        from ..core.sqlpredicate import parse_predicate

        predicate = parse_predicate(predicate)
    predicate = bind_to_table(table, as_predicate(predicate))
    if fast and hasattr(table, "new_read_builder") and predicate is not None:
        from .fastpath import Fallback, fast_read

        try:
            return fast_read(
                legacy_manifest_table(table), predicate, projection, max_workers=max_workers, use_cache=use_cache
            )
        except Fallback as e:
            fallback_reason = str(e)
    given_builder = not hasattr(table, "new_read_builder")
    rb, splits, report = plan_with_index(table, predicate, projection, max_workers, fold_deletion_vectors, coalesce_gap)
    t0 = time.perf_counter()
    pred = predicate
    if pred is None:
        out = rb.new_read().to_arrow(splits)
    elif given_builder:  # the builder's projection, widened to the predicate's columns
        wide, extra = _reading_predicate_columns(rb, pred)
        out = wide.new_read().to_arrow(splits)
        if out is not None:
            out = filter_table(out, pred)
            if extra:
                out = out.drop_columns(extra)
    else:
        # every row handed back satisfies the predicate: pypaimon's reader leaves partition keys out of
        # its row filter (wrong under OR / NOT) and row-range splits skip it, so rows are read without
        # it and filtered once here, after any merge, by the exact filter
        tbl = rb.table
        cols = list(projection) if projection is not None else list(tbl.field_names)
        extra = [c for c in sorted(pred.fields()) if c not in cols]
        rb2 = tbl.new_read_builder()
        if projection is not None or extra:
            rb2 = rb2.with_projection(cols + extra)
        indexed = [s for s in splits if isinstance(s, IndexedSplit)]
        plain = [s for s in splits if not isinstance(s, IndexedSplit)]
        parts = [rb2.new_read().to_arrow(plain)] if plain or not indexed else []
        if indexed:
            got = None
            if _bool_opt(tbl, "row-tracking.enabled", False):
                from ..io.parquet.rows import PageReadStats
                from .globalindex import read_ranges_direct  # row ranges of local Parquet files, without pypaimon

                report.decoded = report.decoded or PageReadStats()
                got = read_ranges_direct(tbl, indexed, cols + extra, report.decoded)
            parts.append(got if got is not None else rb2.new_read().to_arrow(indexed))
        parts = [x for x in parts if x is not None]
        out = None
        if parts:
            out = (
                parts[0]
                if len(parts) == 1
                else pa.concat_tables([parts[0]] + [x.cast(parts[0].schema) for x in parts[1:]])
            )
        if out is not None:
            out = filter_table(out, pred)
            if extra:
                out = out.select(cols)
    report.read_seconds = time.perf_counter() - t0
    report.rows_returned = out.num_rows if out is not None else 0
    report.fallback_reason = fallback_reason
    return out, report
