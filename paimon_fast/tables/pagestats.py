"""What a Parquet file's page index says about a predicate leaf: the pages whose rows may hold it.

A file written with a page index (``write_page_index``; every file :meth:`ParquetDataset.optimize`
writes) has per column chunk a ColumnIndex (each page's min, max, null count, and whether it
holds only nulls) beside the OffsetIndex (where each page starts and its first row).  Where a
row group's statistics cannot decide a leaf (:mod:`paimon_fast.tables.stats`), the pages can: in
a file sorted or clustered by the column, a range predicate keeps a few pages of each row group
and every other page is skipped.  :func:`page_answer` gives the rows to read as ranges, each
marked exact (every row of the page holds the leaf: signed integers and strings without nulls
only, as the statistics' ALL) or not (the rows are read and filtered).

The ColumnIndex of a column chunk is read once (one ranged read) and kept with the file's parsed
footer (:mod:`paimon_fast.io.parquet.footer`'s cache, keyed by the file's version).
"""

from __future__ import annotations

from typing import List, Optional, Tuple

import numpy as np

from ..errors import IndexFormatError
from ..core.predicate import Leaf
from .stats import (
    _INT32,
    _INT64,
    ChunkStats,
    _chunk,
    _decode,
    _lit,
    _unsigned,
    stats_arrays,
    file_stats,
    leaf_skips,
    stat_kind,
)

# the comparisons page statistics answer (besides IS NULL and IS NOT NULL)
COMPARED_OPS = ("equal", "less_than", "less_or_equal", "greater_than", "greater_or_equal", "between", "in")
_MAX_COLUMN_INDEX = 16 << 20


def _column_index(src, fo, rg: int, leaf: int):
    """The parsed ColumnIndex of a column chunk (``{1: null_pages, 2: mins, 3: maxes, 5: null
    counts}``), None when the chunk has none or it cannot be read."""
    from ..io.parquet.footer import Decoder

    key = ("column index", rg, leaf)
    if key in fo.pages:
        return fo.pages[key]
    got = None
    cc = fo.row_groups[rg][1][leaf]
    off, length = cc.get(6), cc.get(7)
    if isinstance(off, int) and isinstance(length, int) and 0 < length <= _MAX_COLUMN_INDEX:
        if 4 <= off and off + length <= fo.file_size:
            try:
                raw = src.read_at(off, length, "Parquet column index")
                ci = Decoder(raw, base=off, what="Parquet column index").struct(1)
                if isinstance(ci.get(2), list) and isinstance(ci.get(3), list) and isinstance(ci.get(1), list):
                    got = ci
            except (IndexFormatError, OSError):
                got = None
    with fo.lock:
        fo.pages[key] = got
    return got


def _add(out: list, s: int, e: int, exact: bool) -> None:
    if out and out[-1][1] == s and out[-1][2] == exact:
        out[-1] = (out[-1][0], e, exact)
    else:
        out.append((s, e, exact))


def _sorted_by(fo, leaf_index: int) -> bool:
    """Does every row group's ``sorting_columns`` start with the column (leaf) ``leaf_index``?"""
    for rg in fo.row_groups:
        sc = rg.get(4)
        if not isinstance(sc, list) or not sc or not isinstance(sc[0], dict) or sc[0].get(1) != leaf_index:
            return False
    return bool(fo.row_groups)


def _page_stats(fo, g: int, lf: int, ci: dict, pages, physical, kind: str, prepared: tuple):
    """A column chunk's pages as :class:`ChunkStats` (from its ColumnIndex ``ci`` and OffsetIndex
    ``pages``) and the pages they exclude for the leaf ``prepared`` (the
    :func:`~paimon_fast.tables.stats.leaf_prepared` form; None: not known), both kept with the
    parsed footer: a clustered file's 50-odd pages are asked with arrays, and only the pages left
    one by one."""
    key = ("page stats", g, lf, kind)
    got = fo.pages.get(key)
    if got is None:
        mins, maxs, nullp = ci[2], ci[3], ci[1]
        counts = ci.get(5) if isinstance(ci.get(5), list) else None
        stats = []
        for p in range(len(pages.first_row)):
            rows = int(pages.rows[p])
            nulls = rows if nullp[p] is True else None
            if counts is not None and p < len(counts) and isinstance(counts[p], int) and counts[p] >= 0:
                nulls = int(counts[p])
            if nullp[p] is True:
                stats.append(ChunkStats(rows, rows, None, None))
            else:
                stats.append(ChunkStats(rows, nulls, _decode(physical, mins[p]), _decode(physical, maxs[p])))
        got = (stats, stats_arrays(stats, kind) if kind in ("int", "float") else None)
        with fo.lock:
            fo.pages[key] = got
    stats, col = got
    return stats, None if col is None else leaf_skips(prepared, col)


def page_answer(
    source, column: str, leaf: Leaf, arrow_type, sorted_only: bool = False
) -> Optional[List[Tuple[int, int, bool]]]:
    """``[(start, stop, exact)]`` row ranges of the file where ``leaf`` may hold, from its row
    groups' statistics and, where those cannot decide, its pages' (None: the file has no page
    index for the column, or the leaf's kind is not answered, or, with ``sorted_only``, the
    footer's ``sorting_columns`` do not start with the column).  ``source``: a path (local files:
    the footer and column indexes are cached) or a :class:`~paimon_fast.io.source.Source`."""
    from ..io.parquet.footer import UnsupportedChunk, footer_for, chunk_pages
    from ..io.parquet.native import open_source

    kind = stat_kind(arrow_type)
    if kind is None or leaf.op not in (*COMPARED_OPS, "is_null", "is_not_null"):
        return None
    if leaf.op in COMPARED_OPS:
        lits = [_lit(kind, v) for v in leaf.literals]
        if not lits or any(v is None for v in lits):
            return None
    else:
        lits = ()
    src, key, _, owned = open_source(source)
    try:
        fo = footer_for(src, key)
        f = fo.by_name.get(column)
        if f is None or not f.flat:
            return None
        el = fo.elements[1 + sum(x.elements for x in fo.fields[: f.index])]
        physical = el.get(1)
        if physical in (_INT32, _INT64) and _unsigned(el):
            return None
        lf = f.leaves.start
        if sorted_only and not _sorted_by(fo, lf):
            return None
        groups = file_stats(fo, column) or [None] * len(fo.row_groups)
        out: List[Tuple[int, int, bool]] = []
        used_pages = False
        for g in range(len(fo.row_groups)):
            at, n = int(fo.starts[g]), int(fo.rg_rows[g])
            if n == 0:
                continue
            said = None
            if groups[g] is not None:
                try:
                    said = _chunk(leaf.op, lits, groups[g], kind)
                except Exception:  # noqa: BLE001 - the pages decide
                    said = None
            if said == "skip":
                continue
            if said == "all":
                _add(out, at, at + n, True)
                continue
            ci = _column_index(src, fo, g, lf)
            if ci is None:
                return None
            try:
                pages = chunk_pages(src, fo, g, lf)
            except (UnsupportedChunk, IndexFormatError):
                return None
            if not (len(ci[2]) == len(ci[3]) == len(ci[1]) == len(pages.first_row)):
                return None
            used_pages = True
            stats, skipped = _page_stats(fo, g, lf, ci, pages, physical, kind, (leaf.op, lits, kind))
            # (the arrays' answer: a page they keep is asked again only if it may hold the leaf
            # on every row: never a floating-point comparison's, NaN may be any row's value)
            ask = skipped is None or not (kind == "float" and leaf.op in COMPARED_OPS)
            if not ask:  # every page kept may hold the leaf: runs of adjacent pages, with arrays
                keep = np.flatnonzero(~skipped)
                if not len(keep):
                    continue
                starts = at + np.asarray(pages.first_row, dtype=np.int64)[keep]
                stops = starts + np.asarray(pages.rows, dtype=np.int64)[keep]
                cut = np.flatnonzero(starts[1:] != stops[:-1]) + 1
                for s, e in zip(starts[np.r_[0, cut]].tolist(), stops[np.r_[cut - 1, len(keep) - 1]].tolist()):
                    _add(out, s, e, False)
                continue
            for p in range(len(stats)) if skipped is None else np.flatnonzero(~skipped).tolist():
                cs = stats[p]
                rows = cs.rows
                try:
                    said = _chunk(leaf.op, lits, cs, kind) if ask else None
                except Exception:  # noqa: BLE001 - a bound of another type: the rows are read
                    said = None
                if said == "skip":
                    continue
                s = at + int(pages.first_row[p])
                _add(out, s, s + rows, said == "all")
        return out if used_pages else None
    except UnsupportedChunk:
        return None
    finally:
        if owned:
            src.close()
