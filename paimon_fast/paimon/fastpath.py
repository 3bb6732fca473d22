"""A planning and reading path of our own for the common case.

:func:`paimon_fast.paimon.read_with_index` first tries this path and falls
back to pypaimon's planner and reader (:mod:`.scan`) whenever the table or
the query is outside what it handles.  It does what pypaimon's scan does for
an append table, without building pypaimon's split objects:

1. the latest snapshot (pypaimon's own snapshot manager), its base and delta
   manifest lists and every data manifest are read with a lean Avro reader
   (:mod:`.avro`; each file's own writer schema, so Paimon 0.9 manifests without
   ``_VALUE_STATS_COLS`` read as they are); ADD entries cancelled by DELETE
   entries are dropped, with pypaimon's identifier; deletion vectors come
   from the snapshot's index manifest (pypaimon's reader);
2. every file's index (embedded bytes, else its ``.index`` sidecar) is
   evaluated once with our readers, columns resolved through the file's
   schema id and field ids;
3. the surviving Parquet files are read with pyarrow datasets: files with
   candidate rows (an exact index answer, a deletion vector) are read whole
   and taken at those rows; files the index could only call "maybe" are read
   late-materialised (the predicate's columns first, the other columns only
   for files with a match, at the matching rows).  The predicate is then
   applied exactly.  Columns are mapped by field id (renamed columns read
   under their old name, added ones read as nulls) and cast to pypaimon's
   output schema; string columns with a bitmap index are decoded as
   dictionaries.

Before the indexes, files are pruned as pypaimon's planner prunes them: the
partition predicate, and min/max/null-count stats (pypaimon's own stats
decoding, schema evolution and predicate test).  Local work runs in the
calling thread (it is GIL-bound; threads measured slower); manifests and
indexes on remote storage are read by ``max_workers`` threads.

What it covers, and so falls back on anything else: append tables (with or
without deletion vectors, partitioned or not, any bucket mode) on the main
branch, read at the latest snapshot, Parquet data files, no data evolution
or row tracking, columns of atomic types whose type did not change across
the schemas of the files read.

Caching: the planned file list of a table (manifest entries, deletion
files, bucket directories, and the parsed headers of index containers once
read) is kept per ``(table path, snapshot id, its manifest lists and time)``; every
query reads the latest snapshot id first, so a new commit is always seen.
``clear_plan_cache()`` drops it; ``use_cache=False`` bypasses it.

What keeps a cold plan (the first query of a snapshot) cheap: the files of a
table share a few Avro headers and index container headers, so each distinct
header is parsed and validated once and later files are matched against it
by their exact bytes (and, for containers, their size); once a container's
header is known, its indexes are evaluated without building the container
object (:func:`_lean_result`: the same readers, the same AND over a column's
indexes, the same errors kept as REMAIN); local sidecars are read with
``os.pread`` (their first 4 KB in one read).  ``clear_plan_cache()`` clears
these header caches too, so a "cold" measurement pays what a fresh process
pays, imports aside.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Dict, List, Optional, Tuple

import numpy as np
from pyroaring import BitMap

from ..errors import PaimonFastError
from ..errors import UnknownIndexTypeError, UnsupportedTypeError
from ..fileindex import EmptyFileIndexReader, evaluate_tree, get_factory
from ..fileindex.format import EMPTY_INDEX_FLAG as _EMPTY_INDEX, MAGIC as _CONTAINER_MAGIC, FileIndexFile
from ..fileindex.options import Options
from ..io.parquet.native import read_files
from ..io.parquet.rows import PageReadStats, clear_cache as _clear_row_cache
from ..core.predicate import Leaf
from ..core.types import DataType
from ..core.result import REMAIN, BitmapResult
from ..core.roaring import bitmap_of
from ..io.source import BytesSource, FileSource
from ..read.arrow_filter import to_arrow_expression
from .avro import _HEADER_CACHE, _SCHEMA_CACHE, _SCHEMA_LOCK
from .avro import read_avro  # noqa: F401  (handed on at this path)
from .deletion import read_deletion_vector
from .plan import _PLAN_CACHE, _PLAN_LOCK, _File, _is_local, _is_true, _options, _Plan, _split, check_table, get_plan
from .predicates import for_planning, to_pypaimon
from .pruning import Fallback, PruneReport, _CountingSource, _result_of, index_applicability


# ---------------------------------------------------------------- caches
def clear_plan_cache():
    """Forget every cached plan (keyed by table path and snapshot: id, manifest lists, time), the
    parsed Avro and index container headers and the data files' parsed footers and decoded
    dictionary pages and the global index manifests read, so the next query pays what a first
    query in a fresh process pays (short of imports)."""
    from .globalindex import clear_index_entries

    clear_index_entries()
    with _PLAN_LOCK:
        _PLAN_CACHE.clear()
        _HEADERS.clear()
    with _SCHEMA_LOCK:
        _SCHEMA_CACHE.clear()
        _HEADER_CACHE.clear()
    _clear_row_cache()  # data files' footers, page locations and dictionary pages


# ---------------------------------------------------------------- schemas
class _Schemas:
    """Per schema id: current field name -> (name in the file, same type?)."""

    def __init__(self, table, plan: _Plan):
        self.table = table
        self.plan = plan
        self.current = list(table.fields)
        self._maps: Dict[int, Dict[str, Tuple[Optional[str], bool]]] = {}
        self._views: Dict[int, tuple] = {}

    def schema(self, sid):
        s = self.plan.schemas.get(sid)
        if s is None:
            s = (
                self.table.table_schema
                if sid == self.table.table_schema.id
                else self.table.schema_manager.get_schema(sid)
            )
            self.plan.schemas[sid] = s
        return s

    def mapping(self, sid):
        m = self._maps.get(sid)
        if m is None:
            by_id = {f.id: f for f in self.schema(sid).fields}
            m = {}
            for cur in self.current:
                old = by_id.get(cur.id)
                if old is None:
                    m[cur.name] = (None, True)
                else:
                    same = str(old.type).replace(" NOT NULL", "") == str(cur.type).replace(" NOT NULL", "")
                    m[cur.name] = (old.name, same)
            self._maps[sid] = m
        return m

    def index_view(self, sid):
        """(current name -> file name, file name -> type) for columns an index may answer."""
        got = self._views.get(sid)
        if got is None:
            got = self._views[sid] = self._index_view(sid)
        return got

    def _index_view(self, sid):
        names, types = {}, {}
        olds = {f.name: f for f in self.schema(sid).fields}
        for cur, (old, same) in self.mapping(sid).items():
            if old is not None and same:
                names[cur] = old
                types[old] = str(olds[old].type)
        return names, types


# ---------------------------------------------------------------- value stats
class _StatsFilter:
    """pypaimon's min/max/null-count file filter (``FileScanner._filter_manifest_entry``
    for append tables), applied to our manifest records with pypaimon's own
    stats decoding, schema evolution and predicate test."""

    def __init__(self, table, predicate, schemas: "_Schemas"):
        from pypaimon.manifest.manifest_file_manager import ManifestFileManager
        from pypaimon.manifest.simple_stats_evolutions import SimpleStatsEvolutions
        from pypaimon.read.push_down_utils import exclude_predicate_with_fields
        from pypaimon.table.special_fields import SpecialFields

        predicate = for_planning(predicate, table)  # leaves pypaimon cannot test (ARRAY ops ...) are TRUE here
        pred = None if predicate is None else to_pypaimon(predicate, table)
        pred = exclude_predicate_with_fields(pred, SpecialFields.SYSTEM_FIELD_NAMES)
        self.pred = exclude_predicate_with_fields(pred, set(table.partition_keys))
        self.schemas = schemas
        self.evolutions = SimpleStatsEvolutions(lambda sid: schemas.schema(sid).fields, table.table_schema.id)
        self.fields_of = ManifestFileManager(table)._get_value_stats_fields

        self.partition_pred = None
        self.partition_fields = table.partition_keys_fields
        if table.partition_keys and predicate is not None:
            from pypaimon.read.push_down_utils import trim_and_transform_predicate

            self.partition_pred = trim_and_transform_predicate(
                to_pypaimon(predicate, table), table.field_names, table.partition_keys
            )
        self._partition_ok: Dict[bytes, bool] = {}

    def keep(self, f: "_File") -> bool:
        if self.partition_pred is not None:
            ok = self._partition_ok.get(f.partition)
            if ok is None:
                from pypaimon.table.row.generic_row import GenericRowDeserializer

                row = GenericRowDeserializer.from_bytes(f.partition, self.partition_fields)
                ok = self._partition_ok[f.partition] = bool(self.partition_pred.test(row))
            if not ok:
                return False
        if self.pred is None:
            return True
        from pypaimon.manifest.schema.simple_stats import SimpleStats
        from pypaimon.table.row.binary_row import BinaryRow

        d = dict(f.raw)
        d.setdefault("_VALUE_STATS_COLS", None)  # Paimon 0.9: absent == null == every column
        fields = self.fields_of(d, self.schemas.schema(f.schema_id))
        v = d["_VALUE_STATS"]
        stats = SimpleStats(
            min_values=BinaryRow(v["_MIN_VALUES"], fields),
            max_values=BinaryRow(v["_MAX_VALUES"], fields),
            null_counts=v["_NULL_COUNTS"],
        )
        cols = (
            d.get("_WRITE_COLS")
            if d["_VALUE_STATS_COLS"] is None and d.get("_WRITE_COLS") is not None
            else d["_VALUE_STATS_COLS"]
        )
        evolved = self.evolutions.get_or_create(f.schema_id).evolution(stats, f.rows, cols)
        return bool(self.pred.test_by_simple_stats(evolved, f.rows))


def _open_stream(file_io, fspath):
    """A seekable binary stream of a filesystem path (a plain file when local: cheaper to open)."""
    if _is_local(file_io):
        return open(fspath, "rb")
    return file_io.filesystem.open_input_file(fspath)


def _physical_schema(schema_obj):
    """The Arrow schema of a Paimon schema's columns as its data files hold them."""
    from pypaimon.schema.data_types import PyarrowFieldParser

    return PyarrowFieldParser.from_paimon_schema(list(schema_obj.fields))


def _read_native(table, items, columns: List[str], phys, stats, threads: Optional[int] = None):
    """``columns`` (physical names) of data files at their rows, one after another: ``items`` are
    ``(file, positions or None for every row)``, read in one call of the native Parquet reader
    (:func:`paimon_fast.io.parquet.native.read_files`: every file, column chunk and page on all
    threads, at most ``threads``).  Each file's row count is checked against its manifest entry.
    ``(table, rows of each file)``."""
    import pyarrow as pa

    schema = pa.schema([phys.field(c) for c in columns])
    local = _is_local(table.file_io)
    opened = []
    try:
        srcs = []
        for f, _ in items:
            path = f"{f.fsdir}/{f.name}"
            if local:  # by path: footers are cached per file
                srcs.append(path)
            else:
                h = table.file_io.filesystem.open_input_file(path)
                opened.append(h)
                srcs.append(h)
        return read_files(
            [(src, pos) for src, (_, pos) in zip(srcs, items)],
            columns,
            schema=schema,
            stats=stats,
            expect_rows=[f.rows for f, _ in items],
            threads=threads,
        )
    finally:
        for h in opened:
            h.close()


def _current_columns(tbl, names: List[str], mapping, schema, n_rows: int):
    """Arrays of the current-named ``names`` from a physical table (nulls for absent columns)."""
    import pyarrow as pa

    arrays = []
    for n in names:
        old, _ = mapping[n]
        typ = schema.field(n).type
        if old is None:
            arrays.append(pa.nulls(n_rows, typ))
        else:
            col = tbl.column(old)
            arrays.append(col.cast(typ) if col.type != typ else col)
    return arrays


def _read_rows(table, f: _File, positions, columns: List[str], phys, stats):
    """Columns of data file ``f`` at sorted ``positions``: only the pages holding them are
    decoded (the native reader); the file's row count is checked against its manifest entry."""
    t, _ = _read_native(table, [(f, positions)], columns, phys, stats)
    return t


def _read_group(
    table, jobs, schema_obj, mapping, pred_expr, pred_cols, out_cols, read_schema, stats, threads: Optional[int] = None
):
    """Matching rows of files of one schema id: ``[(arrow table or None, rows decoded)]``.

    Files with candidate rows from an index (or a deletion vector) are read at those rows only,
    then filtered.  Files without (an index that could only say "maybe") are read
    late-materialised: the predicate's columns first, the other columns only for files with a
    match, at the matching rows.  Each step is one call of the native reader over every file
    concerned (all threads); the predicate runs once per kind over the files' rows together.
    ``stats`` (a ``PageReadStats``) counts what the reads decoded; ``threads``: at most this many
    of the reader's threads (None: :func:`paimon_fast.threads`)."""
    import pyarrow as pa

    phys = _physical_schema(schema_obj)
    all_cols = list(dict.fromkeys(list(pred_cols) + list(out_cols)))
    out_schema = pa.schema([read_schema.field(n) for n in out_cols])
    out = []

    def physical(names):
        return list(dict.fromkeys(mapping[c][0] for c in names if mapping[c][0] is not None))

    def current(t, names):
        return pa.Table.from_arrays(
            _current_columns(t, names, mapping, read_schema, t.num_rows),
            schema=pa.schema([read_schema.field(c) for c in names]),
        )

    whole = [(f, np.asarray(cand.to_array(), dtype=np.int64)) for f, cand in jobs if cand is not None]
    late = [f for f, cand in jobs if cand is None]
    if whole:
        before = stats.rows_decoded
        t, _ = _read_native(table, whole, physical(all_cols), phys, stats, threads)
        hit = current(t, all_cols).filter(pred_expr)
        out.append((hit.select(list(out_cols)) if hit.num_rows else None, stats.rows_decoded - before))
    if late:
        # (whole files: counted in the rows decoded below, not in stats, which counts reads at known rows)
        t, n = _read_native(table, [(f, None) for f in late], physical(pred_cols), phys, None, threads)
        ct = current(t, list(pred_cols))
        ct = ct.append_column("__pf_file", pa.array(np.repeat(np.arange(len(late), dtype=np.int32), n)))
        pos = np.concatenate([np.arange(k, dtype=np.int64) for k in n.tolist()]) if len(n) else np.zeros(0, np.int64)
        hit = ct.append_column("__pf_pos", pa.array(pos)).filter(pred_expr)
        decoded = sum(f.rows for f in late)
        if hit.num_rows:
            fidx = hit.column("__pf_file").to_numpy()
            pos = hit.column("__pf_pos").to_numpy()
            cols = {c: hit.column(c) for c in pred_cols}
            rest = [c for c in out_cols if c not in pred_cols]
            rest_phys = physical(rest)
            if rest:  # the other columns at the matching rows only, every file with a match in one read
                with_hits = np.flatnonzero(np.bincount(fidx, minlength=len(late)))
                rt = None
                if rest_phys:
                    rt, _ = _read_native(
                        table, [(late[k], pos[fidx == k]) for k in with_hits], rest_phys, phys, stats, threads
                    )
                cols.update(zip(rest, _current_columns(rt, rest, mapping, read_schema, hit.num_rows)))
            out.append((pa.Table.from_arrays([cols[c] for c in out_cols], schema=out_schema), 0))
        out.append((None, decoded))
    return out


class FastPlan:
    """What :func:`fast_plan` decided: the files to read (``jobs``: ``(file, candidate rows or
    None)``), how their columns map, the exact filter; :func:`read_planned` reads them all, the
    streaming read (:mod:`.stream`) one file or range at a time with :func:`_read_group`."""

    def __init__(self, **kw):
        self.__dict__.update(kw)


def fast_read(table, predicate, projection=None, max_workers: int = 2, use_cache: bool = True, report=None):
    """``(arrow table, report)`` or raises :class:`Fallback`."""
    return read_planned(fast_plan(table, predicate, projection, max_workers, use_cache, report))


def fast_plan(table, predicate, projection=None, max_workers: int = 2, use_cache: bool = True, report=None) -> FastPlan:
    """The fast path's plan of a read (a :class:`FastPlan`: files pruned by partition, value stats,
    file and global indexes; nothing read but manifests and indexes) or raises :class:`Fallback`."""
    import pyarrow as pa
    from pypaimon.schema.data_types import PyarrowFieldParser

    t0 = time.perf_counter()
    check_table(table)
    if predicate is None:
        raise Fallback("no predicate")
    applicable, why = index_applicability(table)
    row_tracking = _is_true(_options(table), "row-tracking.enabled")
    workers = max(1, max_workers)  # threads for remote storage; local work stays in this thread
    plan, cached = get_plan(table, use_cache, workers)
    fields = {f.name: f for f in table.fields}
    out_cols = list(projection) if projection is not None else [f.name for f in table.fields]
    for c in out_cols:
        if c not in fields:
            raise Fallback(f"projected column {c} is not in the table")
    pred_cols = sorted(predicate.fields())
    for c in pred_cols:
        if c not in fields:
            raise Fallback(f"predicate column {c} is not in the table")
    schemas = _Schemas(table, plan)
    for sid in {f.schema_id for f in plan.files}:
        m = schemas.mapping(sid)
        for c in set(out_cols) | set(pred_cols):
            old, same = m[c]
            if old is not None and not same:
                raise Fallback(f"column {c} changed type since schema {sid}")
    rep = report or PruneReport()
    rep.splits_planned = 0
    # ---- value stats (min/max/null counts), as pypaimon's planner does
    stats = _StatsFilter(table, predicate, schemas)
    files = [f for f in plan.files if stats.keep(f)]
    rep.files_pruned_by_stats = len(plan.files) - len(files)  # partition predicate or value stats
    rep.files_planned = len(files)
    rep.rows_planned = sum(f.rows for f in files)
    rep.applied = applicable
    rep.reason = "" if applicable else why
    rep.fast_path = True
    rep.plan_cached = cached
    rep.plan_seconds = time.perf_counter() - t0

    # ---- indexes
    t1 = time.perf_counter()
    results = [REMAIN] * len(files)
    if applicable:

        def eval_chunk(idx):
            return [_evaluate(table, files[i], schemas, predicate) for i in idx]

        ids = list(range(len(files)))
        # local indexes are evaluated in this thread: the work is CPU-bound under the
        # GIL and threads measured slower; remote reads are overlapped
        if workers > 1 and len(ids) > 16 and not _is_local(table.file_io):
            with ThreadPoolExecutor(workers) as ex:
                outs = list(ex.map(eval_chunk, _split(ids, workers)))
            flat = [r for part in outs for r in part]
        else:
            flat = eval_chunk(ids)
        for i, (res, nbytes) in enumerate(flat):
            results[i] = res
            if nbytes >= 0:
                rep.files_with_index += 1
                rep.index_bytes_read += nbytes
    # ---- global indexes (row-tracking tables): ANDed with the file indexes' answers
    if row_tracking and any(f.write_cols for f in files):
        raise Fallback("data-evolution column groups (files holding some columns only)")
    if row_tracking:
        gres = _global_results(table, predicate, files, rep, plan.snapshot)
        if gres is not None:
            results = [r.and_(g) if g is not None else r for r, g in zip(results, gres)]
    jobs = []
    for f, res in zip(files, results):
        if not res.remain:
            rep.files_skipped += 1
            rep.skipped_files.append(f.name)
            continue
        cand = file_candidates(table, f, res)
        rep.deletion_vectors_folded += f.deletion is not None
        if cand is not None and not len(cand):
            rep.files_skipped += 1
            rep.skipped_files.append(f.name)
            continue
        rep.rows_index_selected += f.rows if cand is None else len(cand)
        jobs.append((f, cand))
    rep.index_seconds = time.perf_counter() - t1

    # ---- read
    t2 = time.perf_counter()
    out_schema = PyarrowFieldParser.from_paimon_schema([fields[c] for c in out_cols])
    full_schema = PyarrowFieldParser.from_paimon_schema(list(table.fields))
    read_schema = pa.schema([full_schema.field(c) for c in dict.fromkeys(out_cols + pred_cols)])
    # our exact filter's expression (SQL three-valued logic, NOT BETWEEN keeps NaN rows), the one every
    # other path applies, rather than pypaimon's translation
    pred_expr = to_arrow_expression(predicate, pa.schema([read_schema.field(c) for c in pred_cols]))
    read_cols = list(dict.fromkeys(out_cols + pred_cols))
    return FastPlan(
        table=table,
        report=rep,
        jobs=jobs,
        schemas=schemas,
        out_cols=out_cols,
        pred_cols=pred_cols,
        read_cols=read_cols,
        read_schema=read_schema,
        out_schema=out_schema,
        pred_expr=pred_expr,
        workers=workers,
        predicate=predicate,
        t_read=t2,
    )


def read_planned(fp: FastPlan):
    """``(arrow table, report)``: every file of the plan read (files of one schema id together)."""
    import pyarrow as pa

    from ..io.pool import threads

    table, rep, jobs, schemas, workers = fp.table, fp.report, fp.jobs, fp.schemas, fp.workers
    pred_expr, pred_cols, read_cols, read_schema = fp.pred_expr, fp.pred_cols, fp.read_cols, fp.read_schema
    out_cols, out_schema, t2 = fp.out_cols, fp.out_schema, fp.t_read
    groups: Dict[int, list] = {}
    for f, cand in jobs:
        groups.setdefault(f.schema_id, []).append((f, cand))
    got = []
    rep.decoded = PageReadStats()
    for sid, g in groups.items():
        got.extend(
            _read_group(
                table,
                g,
                schemas.schema(sid),
                schemas.mapping(sid),
                pred_expr,
                pred_cols,
                read_cols,
                read_schema,
                rep.decoded,
                max(1, min(workers, threads())),
            )
        )
    parts = []
    rep.rows_selected = rep.rows_index_selected  # rows taken from the files (index and deletions applied)
    rep.rows_decoded = 0
    for tbl, decoded in got:
        rep.rows_decoded += decoded
        if tbl is not None:
            parts.append(tbl.select(out_cols) if read_cols != out_cols else tbl)
    rep.rows_skipped = rep.rows_planned - rep.rows_selected
    if parts:
        out = pa.concat_tables(parts)
    else:
        out = pa.Table.from_arrays([pa.array([], type=f.type) for f in out_schema], schema=out_schema)
    if out.schema != out_schema:
        out = out.cast(out_schema)
    rep.read_seconds = time.perf_counter() - t2
    rep.rows_returned = out.num_rows
    return out, rep


def _stores_row_ids(table, f: _File) -> bool:
    """Does the data file carry a physical ``_ROW_ID`` column (then row id != first row id +
    position)?  Read from the Parquet footer once per file."""
    if f.stored_row_ids is None:
        import pyarrow.parquet as pq

        with table.file_io.filesystem.open_input_file(f"{f.fsdir}/{f.name}") as fh:
            f.stored_row_ids = "_ROW_ID" in pq.read_schema(fh).names
    return f.stored_row_ids


def _global_results(table, predicate, files, rep, snapshot=None):
    """Per file, the global indexes' rows as a ``BitmapResult`` of positions (None: no answer
    for that file), or None when no global index answers the predicate.  Data-evolution
    tables follow the search mode (``fast``: rows outside the indexed ranges are not read);
    on other row-tracking tables, which Java reads without global indexes, rows no index
    covers are always kept.  ``snapshot``: the one planned (default: the latest)."""
    from pyroaring import BitMap64

    if not _is_true(_options(table), "global-index.enabled", True):
        return None
    from .globalindex import GlobalIndexAnswer

    gi = GlobalIndexAnswer(table, predicate, snapshot)
    if gi.data_evolution and gi.foreign_types:
        raise Fallback(f"global index types paimon-fast does not read: {', '.join(gi.foreign_types)}")
    if not gi.has_index:
        return None
    part = gi.evaluate()
    if not len(part.cover):
        return None
    only_indexed = gi.data_evolution and gi.mode == "fast"
    out = []
    for f in files:
        if f.first_row_id is None or f.write_cols:
            raise Fallback(f"data file {f.name}: no first row id or a column group")
        lo, hi = f.first_row_id, f.first_row_id + f.rows
        covered = part.cover.range_cardinality(lo, hi)
        if not covered and not only_indexed:
            out.append(None)  # nothing indexed here: the file index (or a read) decides
            continue
        if _stores_row_ids(table, f):
            raise Fallback(f"data file {f.name} stores _ROW_ID")
        r = BitMap64()
        r.add_range(lo, hi)
        sel = r & part.rows
        if not only_indexed and covered < f.rows:
            sel |= r - part.cover
        out.append(BitmapResult(bitmap_of(np.asarray(sel.to_array(), dtype=np.int64) - lo)))
    rep.global_indexes = list(gi.used)
    rep.index_bytes_read += gi.index_bytes_read
    rep.global_index_search_mode = (
        gi.mode if gi.data_evolution else "full (Java reads no global index without data evolution)"
    )
    return out


def file_candidates(table, f: _File, res) -> Optional[BitMap]:
    """The rows of ``f`` left to read after its index answer ``res`` (an exact bitmap, clipped to
    the file) and its deletion vector; None when every row is (no exact answer, nothing deleted)."""
    cand = None
    if isinstance(res, BitmapResult):
        cand = BitMap(res.bitmap)
        if len(cand) and cand.max() >= f.rows:
            cand.remove_range(f.rows, cand.max() + 1)
    if f.deletion is not None:
        dv = read_deletion_vector(table.file_io, f.deletion)
        if cand is None:
            cand = BitMap()
            cand.add_range(0, f.rows)
        cand -= dv
    return cand


def _evaluate(table, f: _File, schemas: _Schemas, predicate):
    """``(result, index bytes read)`` of one file; bytes -1 when it has no index."""
    names, types = schemas.index_view(f.schema_id)
    try:
        if f.embedded:
            data = bytes(f.embedded)
            return _container_result(f, BytesSource(data), names, types, predicate), len(data)
        for extra in f.extra:
            if extra.endswith(".index"):
                path = f"{f.fsdir}/{extra}"
                if _is_local(table.file_io):
                    try:
                        src = _PreadSource(path)
                    except OSError:
                        return REMAIN, 0
                    with src:
                        return _container_result(f, src, names, types, predicate), src.bytes_read
                try:
                    stream = _open_stream(table.file_io, path)
                except OSError:
                    return REMAIN, 0
                with stream:
                    src = _CountingSource(stream)
                    return _container_result(f, src, names, types, predicate), src.bytes_read
    except (PaimonFastError, OSError):
        return REMAIN, 0
    return REMAIN, -1


class _PreadSource(FileSource):
    """A local index file read with ``os.pread`` (no buffered stream), counting the bytes read."""

    _FIRST = 4096  # the container header and the start of the first index: one read

    def __init__(self, path):
        super().__init__(path)
        self._first = b""
        self.bytes_read = 0

    def _read(self, offset, length):
        end = offset + length
        first = self._first
        if end <= len(first):
            return first[offset:end]
        if offset == 0 and not first and length <= self._FIRST:
            first = self._first = super()._read(0, min(self.size, self._FIRST))
            self.bytes_read += len(first)
            return first[:length]
        self.bytes_read += length
        return super()._read(offset, length)


# Parsed container headers by their exact bytes and the container's size.  The files
# of one table usually share one header (same columns, index types and sizes), so a
# cold plan parses it once; a header's validation depends only on these two values.
_HEADERS: Dict[tuple, tuple] = {}
_HEADERS_MAX = 4096
_NO_OPTIONS = Options({})
_HEAD = __import__("struct").Struct(">qii")


def _header_key(source):
    """``(head bytes, size)`` of a container, or None when its fixed part does not check out
    (the container parser then reports the error)."""
    size = source.size
    if size < 20:
        return None
    fixed = bytes(source.read_at(0, 16, "container header"))
    magic, version, head_len = _HEAD.unpack(fixed)
    if magic != _CONTAINER_MAGIC or head_len < 24 or head_len > size or head_len > 1 << 20:
        return None
    return bytes(source.read_at(0, head_len, "container header")), size


def _container_result(f: _File, source, names, types, predicate):
    layout = f.layout
    key = None
    if layout is None:
        key = _header_key(source)
        layout = _HEADERS.get(key) if key is not None else None
    if layout is not None and layout[2] == source.size:
        f.layout = layout
        res = _lean_result(source, layout[0], names, types, predicate)
    else:
        container = FileIndexFile(source, types, {}, layout)
        f.layout = container.layout()  # kept with the plan, i.e. for this snapshot
        if key is not None:
            if len(_HEADERS) >= _HEADERS_MAX:
                _HEADERS.clear()
            _HEADERS[key] = f.layout
        res = _result_of(container, predicate, names)
    if isinstance(res, BitmapResult):
        res.bitmap  # materialise while the stream is open
    return res


_LEAVES: Dict[tuple, Leaf] = {}


def _lean_result(source, entries, names, types, predicate):
    """What ``_result_of(FileIndexFile(source, types, {}, layout), predicate, names)`` answers,
    for a container whose header was parsed before (``entries``), without building the
    container object: the same readers, the same AND of every index on a column, the
    same errors turned into REMAIN (an index type we do not know, a column without a
    type, a reader that cannot answer or finds corrupt bytes)."""
    readers = {}

    def reader(col, itype, start, length):
        rd = readers.get((col, itype))
        if rd is None:
            dtype = DataType.parse(types[col])  # KeyError: no type, skipped as FileIndexFile does
            if start == _EMPTY_INDEX:
                rd = EmptyFileIndexReader(dtype, source.slice(0, 0), _NO_OPTIONS)
            else:
                rd = get_factory(itype).reader(dtype, source.slice(start, length, f"{itype} of {col}"), _NO_OPTIONS)
            readers[(col, itype)] = rd
        return rd

    def visit(leaf: Leaf):
        col = names.get(leaf.name)
        if col is None:
            return REMAIN
        try:
            k = (leaf.op, col, leaf.literals)
            try:
                fleaf = _LEAVES[k]
            except (KeyError, TypeError):  # TypeError: unhashable literal
                fleaf = Leaf(leaf.op, col, leaf.literals)
                try:
                    if len(_LEAVES) > 1024:
                        _LEAVES.clear()
                    _LEAVES[k] = fleaf
                except TypeError:
                    pass
            res = REMAIN
            for e in entries.get(col, ()):
                try:
                    rd = reader(col, *e)
                except (UnknownIndexTypeError, KeyError):
                    continue
                res = res.and_(rd.visit(fleaf))
            return res
        except (UnsupportedTypeError, UnknownIndexTypeError, KeyError, TypeError, ValueError):
            return REMAIN

    return evaluate_tree(predicate, visit)
