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
from typing import Dict, List, Optional

import numpy as np
from pyroaring import BitMap  # noqa: F401  (handed on at this path)

from ..io.parquet.native import read_files
from ..io.parquet.rows import PageReadStats, clear_cache as _clear_row_cache
from ..core.result import REMAIN, BitmapResult  # noqa: F401  (BitmapResult handed on at this path)
from ..io.source import BytesSource  # noqa: F401  (handed on at this path)
from ..read.arrow_filter import to_arrow_expression
from .avro import _HEADER_CACHE, _SCHEMA_CACHE, _SCHEMA_LOCK
from .avro import read_avro  # noqa: F401  (handed on at this path)
from .fastpath_index import (  # noqa: F401  (handed on at their old path)
    _HEAD,
    _HEADERS,
    _HEADERS_MAX,
    _LEAVES,
    _NO_OPTIONS,
    _container_result,
    _evaluate,
    _global_results,
    _header_key,
    _lean_result,
    _open_stream,
    _PreadSource,
    _stores_row_ids,
    file_candidates,
)
from .fastpath_schemas import _Schemas, _StatsFilter  # noqa: F401  (handed on at their old path)
from .plan import _PLAN_CACHE, _PLAN_LOCK, _File, _is_local, _is_true, _options, _split, check_table, get_plan
from .pruning import Fallback, PruneReport, index_applicability


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
