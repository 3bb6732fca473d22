"""Exact top-N over a Paimon table: ``ORDER BY column [DESC] LIMIT k`` after a predicate.

Append tables the fast path covers (:mod:`.fastpath`: Parquet, main branch,
latest snapshot, no row tracking) are answered file by file from their
``range-bitmap`` file indexes (embedded or ``.index`` sidecars) with the merge
of :mod:`paimon_fast.read.topn`: files that cannot beat the current k-th row
are not read, the others only at their candidate rows; files without such an
index read the column.  Deletion vectors remove rows before anything is
ranked.  Every other table (primary keys, ORC, time travel...) is read with
:func:`~paimon_fast.paimon.stream.read_with_index` and sorted in Arrow, so the
answer is the same, only slower.

A row-tracking table with a ``btree`` global index on the column answers a top-N
without a predicate (k <= 100, no deletion vectors) as Java's ``visitTopN`` does: the
first k rows of every BTree file of the column, merged, plus the rows no BTree index
covers (none under the ``fast`` search mode of a data-evolution table) are the only rows
read; ``report.global_indexes`` names the index and the rows it selected.

Ties go to the earlier data file of the snapshot's manifests and then to the
lower row position (on the fallback path: the order pypaimon reads rows in).
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
import pyarrow as pa

from ..errors import ColumnNotFoundError, PaimonFastError
from ..fileindex.format import FileIndexFile
from ..core.result import REMAIN
from ..io.source import BytesSource, FileSource
from ..read.arrow_filter import filter_table
from ..io.parquet.rows import PageReadStats, read_rows
from ..read.topn import FILE, POS, TopNReport, TopNSource, check_k, check_orderable, order
from ..read.topn import top_n as _merge
from .compat import legacy_manifest_table
from .predicates import as_predicate


def top_n(
    table,
    column: str,
    k: int,
    *,
    desc: bool = True,
    predicate=None,
    columns: Optional[Sequence[str]] = None,
    nulls_first: bool = False,
    report: Optional[TopNReport] = None,
    use_cache: bool = True,
) -> pa.Table:
    """The first ``k`` rows of ``table`` where ``predicate`` holds, ordered by ``column``.

    ``desc`` (default) for the largest values first; nulls last unless
    ``nulls_first``; NaN above every other float; ``columns`` the output
    columns (default: all).  ``predicate`` is a paimon_fast predicate, SQL
    text or a pypaimon predicate.  ``report`` (a
    :class:`~paimon_fast.read.topn.TopNReport`) is filled in when given;
    ``report.fallback_reason`` says why a table was read without its indexes.
    """
    from .plan import check_table, get_plan
    from .pruning import Fallback

    table = legacy_manifest_table(table)
    names = list(table.field_names)
    out_cols = names if columns is None else list(columns)
    for c in [column, *out_cols]:
        if c not in names:
            raise ColumnNotFoundError(c, names)
    check_orderable(column, _empty(table, [column]).schema.field(column).type)
    if isinstance(predicate, str):
        from ..core.sqlpredicate import parse_predicate

        predicate = parse_predicate(predicate)
    pred = as_predicate(predicate)
    rep = report if report is not None else TopNReport()
    rep.fallback_reason = ""
    rep.global_indexes = []  # the BTree global index a top-N used, and the rows it selected
    try:
        check_table(table)
        plan, _ = get_plan(table, use_cache)
        if any(getattr(f, "write_cols", None) for f in plan.files):
            raise Fallback("data-evolution column groups (files holding some columns only)")
    except Fallback as e:
        rep.fallback_reason = str(e)
        return _read_and_sort(table, column, k, desc, nulls_first, pred, out_cols, rep)
    cand = None
    if pred is None:
        cand = _btree_candidates(table, plan, column, k, desc, nulls_first, rep)
    sources, opened = _sources(table, plan, column, pred, rep, cand)
    try:
        out = _merge(
            sources,
            column,
            k,
            desc=desc,
            nulls_first=nulls_first,
            where_columns=sorted(pred.fields()) if pred is not None else (),
            columns=out_cols,
            report=rep,
        )
    finally:
        for c in opened:
            c.close()
    if out is None:
        return _empty(table, out_cols)
    return out


def _empty(table, cols):
    from pypaimon.schema.data_types import PyarrowFieldParser

    fields = {f.name: f for f in table.fields}
    return PyarrowFieldParser.from_paimon_schema([fields[c] for c in cols]).empty_table()


def _read_and_sort(table, column, k, desc, nulls_first, pred, out_cols, rep):
    from .scan import _read_all

    check_k(k)
    cols = list(dict.fromkeys([*out_cols, column]))
    if pred is None:
        rb = table.new_read_builder().with_projection(cols)
        t = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    else:
        t, _ = _read_all(table, pred, cols, fast=False)
    if t is None or not t.num_rows or k == 0:
        return _empty(table, out_cols)
    rep.rows_read += t.num_rows
    t = t.append_column(FILE, pa.array(np.zeros(t.num_rows, np.int32))).append_column(
        POS, pa.array(np.arange(t.num_rows, dtype=np.int64))
    )
    return t.take(order(t, column, desc, nulls_first)[:k]).select(out_cols)


BTREE_TOP_N_MAX = 100  # Java's DataEvolutionGlobalIndexScanner pushes a top-N of at most 100 rows to BTree


def _btree_candidates(table, plan, column, k, desc, nulls_first, rep):
    """The row ids (BitMap64) a top-N may return by the column's BTree global indexes (Java's
    ``visitTopN`` over every BTree file of the column, merged, plus the rows those indexes do
    not cover, under the search mode), or None when none applies: no BTree index on the
    column, k above 100, deletion vectors, global indexes turned off."""
    from pyroaring import BitMap64

    from .globalindex import GlobalIndexAnswer, _table_options, _true

    opts = _table_options(table)
    if (
        not 0 <= k <= BTREE_TOP_N_MAX
        or not _true(opts, "row-tracking.enabled")
        or str(opts.get("global-index.enabled", "true")).strip().lower() == "false"
        or _true(opts, "deletion-vectors.enabled")
        or any(f.deletion is not None for f in plan.files)
    ):
        return None
    gi = GlobalIndexAnswer(table, None, snapshot=plan.snapshot)
    gi._load({column})
    fi = gi.fields.get(column)
    itype, ranges = _top_n_ranges(fi)
    if not ranges:
        return None
    from ..globalindex import registry
    from ..globalindex.index import merge_top_n

    index_class = registry.get(itype).index_class()
    groups = []
    for (start, end), files in sorted(ranges.items()):
        with index_class(
            [(gi._source(p), m) for p, m in files], fi.dtype, opts, total_row_count=end - start + 1
        ) as idx:
            _, got = idx.top_n(k, desc, nulls_first)
            groups += [(key, rids + np.uint64(start)) for key, rids in got]
    rows, _ = merge_top_n(groups, idx.codec, k, desc, nulls_first)
    selected = len(rows)
    cover = BitMap64()
    for start, end in ranges:
        cover.add_range(start, end + 1)
    if not (gi.data_evolution and gi.mode == "fast"):
        every = BitMap64()
        for f in plan.files:
            if f.first_row_id is not None:
                every.add_range(f.first_row_id, f.first_row_id + f.rows)
        rows |= every - cover
    n_files = len(fi.files[itype])
    rep.global_indexes = [
        f"{column} ({itype}, {n_files} files over {len(ranges)} row ranges, {selected:,} rows selected)"
    ]
    return rows


def _top_n_ranges(fi):
    """``(index type, {row range: files})`` of the first registered type answering a top-N
    (``top_n``: the ``btree`` index) that the field has, or ``(None, None)``."""
    if fi is None:
        return None, None
    from ..globalindex import registry

    for name in registry.names():
        if registry.get(name).top_n and fi.by_type.get(name):
            return name, fi.by_type[name]
    return None, None


def _sources(table, plan, column, pred, rep, candidates=None):
    """One :class:`TopNSource` per live data file that may hold matching rows (``candidates``:
    the row ids a BTree global index leaves, see :func:`_btree_candidates`)."""
    from pypaimon.schema.data_types import PyarrowFieldParser

    from .fastpath import _evaluate, _open_stream, _Schemas, _StatsFilter, _current_columns, file_candidates
    from .plan import _is_local

    schemas = _Schemas(table, plan)
    files = plan.files
    if pred is not None:
        stats = _StatsFilter(table, pred, schemas)
        files = [f for f in files if stats.keep(f)]
    full_schema = PyarrowFieldParser.from_paimon_schema(list(table.fields))
    sources, opened = [], []
    for f in files:
        res = REMAIN
        if pred is not None:
            res, _ = _evaluate(table, f, schemas, pred)
            if not res.remain:
                continue
        eligible = file_candidates(table, f, res)
        if candidates is not None and f.first_row_id is not None and not f.write_cols:
            from .fastpath import _stores_row_ids

            if not _stores_row_ids(table, f):
                from pyroaring import BitMap, BitMap64

                lo = f.first_row_id
                window = BitMap64()
                window.add_range(lo, lo + f.rows)
                r = candidates & window
                mine = BitMap((np.asarray(r.to_array(), dtype=np.int64) - lo).astype(np.uint32))
                eligible = mine if eligible is None else eligible & mine
        if eligible is not None and not len(eligible):
            continue
        reader = None
        names, types = schemas.index_view(f.schema_id)
        old = names.get(column)
        if old is not None:
            try:
                container = _container(table, f, types, _is_local)
                if container is not None:
                    opened.append(container)
                    reader = container.reader(old, "range-bitmap")
            except KeyError:
                reader = None
            except (PaimonFastError, OSError) as e:  # a broken index never fails a query: read the column
                rep.index_errors.append(f"{f.name}: {type(e).__name__}: {e}")
        sources.append(
            _source(
                table,
                f,
                schemas.mapping(f.schema_id),
                full_schema,
                eligible,
                reader,
                pred,
                _is_local(table.file_io),
                _open_stream,
                _current_columns,
                column,
            )
        )
    return sources, opened


def _container(table, f, types, is_local) -> Optional[FileIndexFile]:
    if f.embedded:
        return FileIndexFile(BytesSource(bytes(f.embedded)), types, {})
    for extra in f.extra:
        if extra.endswith(".index"):
            path = f"{f.fsdir}/{extra}"
            if is_local(table.file_io):
                return FileIndexFile(FileSource(path), types, {})
            return FileIndexFile(BytesSource(table.file_io.filesystem.open_input_file(path).read()), types, {})
    return None


def _source(
    table, f, mapping, full_schema, eligible, reader, pred, local, open_stream, current_columns, column=None
) -> TopNSource:
    need_pred = sorted(pred.fields()) if pred is not None else []
    decoded = PageReadStats()

    def read(positions, cols):
        names = list(dict.fromkeys([*cols, *need_pred]))
        phys = list(dict.fromkeys(mapping[c][0] for c in names if mapping[c][0] is not None))
        path = f"{f.fsdir}/{f.name}"
        if local:  # by path: its footer and page locations are cached
            t = read_rows(path, positions, phys, rows=f.rows, stats=decoded)
        else:
            with open_stream(table.file_io, path) as stream:
                t = read_rows(stream, positions, phys, rows=f.rows, stats=decoded)
        schema = pa.schema([full_schema.field(c) for c in names])
        t = pa.Table.from_arrays(current_columns(t, names, mapping, full_schema, t.num_rows), schema=schema)
        t = t.append_column(POS, pa.array(np.asarray(positions, dtype=np.int64)))
        return filter_table(t, pred).select([*cols, POS])

    def read_all(cols):
        if eligible is None:
            return read(np.arange(f.rows, dtype=np.int64), cols)
        return read(np.asarray(eligible.to_array(), dtype=np.int64), cols)

    return TopNSource(
        f.name,
        f.rows,
        eligible,
        reader,
        read,
        read_all,
        exact=pred is None,
        arrow_type=full_schema.field(column).type if column is not None else None,
        decoded=decoded,
    )
