"""``explain()`` of a Parquet dataset read: which indexes the dataset holds on the predicate's
columns, which answered, what each removed on its own, and why the others did not answer.

Each index is evaluated alone (the predicate's leaves on other columns answer REMAIN), file by
file, so its row says what it removes by itself; the header's totals and the table's last row
(``together``) are the plan's, every index together, the report's figures.  Under an OR of
leaves on several columns an index removes nothing alone (the other side keeps every row), and
its row says so.  Reasons an index does not answer: its file is stale (the data file changed since the
build), it was built for another type of the column (type mismatch), it cannot answer the
predicate's operators on its column (unsupported predicate), a global index's range or LIKE scan
would pass ``bitmap-index.fallback-scan-max-size`` (fallback budget), or it could not be read.
"""

from __future__ import annotations

from typing import Dict, List, Tuple

from dataclasses import replace

from ..io.checksum import ChecksumMismatchError
from ..errors import IndexFormatError
from ..fileindex.options import indexes_from_table_options
from ..read.explain import FALLBACK_OPS, Tally, alone, can_answer, leaves_of, note_or
from ..read.lazy import Explain, IndexUse
from ..core.result import REMAIN, UNSUPPORTED, BitmapResult


def _bare(type_text: str):
    from ..core.types import DataType

    return replace(DataType.parse(type_text), nullable=True)


def explain_dataset(ds, plan) -> Explain:
    """The :class:`~paimon_fast.read.lazy.Explain` of ``plan`` (a :meth:`ParquetDataset.plan`)."""
    pred = plan.predicate
    rep = plan.report
    ex = Explain(
        "Parquet dataset",
        ds.uri,
        repr(pred) if pred is not None else "",
        files_total=rep.files_total,
        files_read=rep.files_read,
        rows_total=rep.rows_total,
        rows_to_read=rep.rows_read,
    )
    if rep.rows_deleted_total:
        ex.notes.append(f"deletion vectors remove {rep.rows_deleted_total:,} rows")
    if rep.catalog_version is not None:
        ex.notes.append(f"snapshot: catalog version {rep.catalog_version}, {rep.files_total} data files listed")
    copied = [f for f in ds.files() if ds.trust(f, ds.read_catalog()["files"].get(f.path)) == "copied"]
    if copied:
        from .identity import COPIED_NOTE

        ex.notes.append(f"{len(copied)} file{'s' if len(copied) > 1 else ''} {COPIED_NOTE}")
    if rep.unindexed:
        by: Dict[str, int] = {}
        for why in rep.unindexed.values():
            by[why] = by.get(why, 0) + 1
        for why, n in sorted(by.items()):
            ex.notes.append(f"{n} file{'s' if n > 1 else ''} read without {'their' if n > 1 else 'its'} index: {why}")
    if pred is None:
        return ex
    part_types = {f.name: f.type for f in ds.partition_schema()}
    leaves = leaves_of(pred)
    cols = sorted({x.name for x in leaves if x.name not in part_types})
    if any(x.name in part_types for x in leaves):
        ex.notes.append("partition columns are answered from the file paths")
    ops = {c: [x.op for x in leaves if x.name == c] for c in cols}
    cat = ds.read_catalog()
    entries = cat["files"]
    row_type = ds.row_type()
    counts = ds.row_counts(cat)
    spec = indexes_from_table_options((cat.get("file_index") or {}).get("options") or {})
    tallies: Dict[Tuple[str, str], Tally] = {}

    def tally(itype: str, col: str) -> Tally:
        t = tallies.get((itype, col))
        if t is None:
            t = tallies[(itype, col)] = Tally(IndexUse(itype, col, "file"))
        return t

    for f in ds.files():
        e = entries.get(f.path)
        fi = (e or {}).get("file_index") or {}
        if not fi or fi.get("none"):
            continue
        rows = counts[f.path]
        reason = ds.why_unindexed(f, e)
        if reason is not None:
            for c in cols:
                for itype in spec.get(c, {}):
                    t = tally(itype, c)
                    if reason == "changed since the build":
                        t.stale += 1
                    else:
                        t.other[reason] = t.other.get(reason, 0) + 1
            continue
        built = fi.get("types") or {}
        try:
            idx = ds.open_index(f, e)
        except IndexFormatError as err:
            if isinstance(err, ChecksumMismatchError):
                for c in cols:
                    for itype in spec.get(c, {}):
                        t = tally(itype, c)
                        t.other["checksum mismatch"] = t.other.get("checksum mismatch", 0) + 1
                        t.errors.append(f"{type(err).__name__}: {err}")
                continue
            # an index built for another type of a column: the whole container is refused
            for c in cols:
                for itype in spec.get(c, {}):
                    t = tally(itype, c)
                    now, was = row_type.get(c), built.get(c)
                    if now and was and _bare(now) != _bare(was):
                        t.mismatch.append(f"built for {was}, the column is {now}")
                    else:
                        t.errors.append(str(err))
            continue
        except Exception as err:  # noqa: BLE001 - unreadable: the plan kept the file
            for c in cols:
                for itype in spec.get(c, {}):
                    tally(itype, c).errors.append(f"{type(err).__name__}: {err}")
            continue
        if idx is None:
            continue
        try:
            metas = idx.index_metas()
            for c in cols:
                for itype in metas.get(c, {}):
                    t = tally(itype, c)
                    t.use.files += 1
                    try:
                        rd = idx.reader(c, itype)
                    except Exception as err:  # noqa: BLE001 - an index type this build does not know
                        t.errors.append(f"{type(err).__name__}: {err}")
                        continue
                    answering = [op for op in ops[c] if can_answer(rd, op)]
                    t.unsupported_ops += [op for op in ops[c] if op not in answering]
                    if answering:
                        t.answered += 1

                    def answer(leaf, rd=rd):
                        try:
                            return rd.visit(leaf)
                        except Exception:  # noqa: BLE001 - the plan keeps such a file too
                            return REMAIN

                    t.removed(alone(pred, c, answer), rows)
        finally:
            idx.close()
    ex.indexes.extend(t.finish() for _, t in sorted(tallies.items(), key=lambda kv: (kv[0][1], kv[0][0])))
    ex.indexes.extend(_statistics_rows(ds, pred, cols, counts))
    ex.indexes.extend(_page_rows(ds, pred, cols, counts))
    ex.indexes.extend(_global_rows(ds, pred, cols, counts, part_types, ops))
    note_or(ex, pred)
    return ex


def _statistics_rows(ds, pred, cols, counts) -> List[IndexUse]:
    """A row per predicate column whose files' Parquet statistics settled a leaf for some file
    (the plan consults them before any index: :mod:`paimon_fast.tables.stats`), with what they
    alone remove."""

    from ..core.result import SKIP
    from .stats import leaf_answer

    if not ds._uses_statistics():
        return []
    types = {fl.name: fl.type for fl in ds.data_schema()}
    out = []
    for c in [c for c in cols if c in types]:
        u = IndexUse("parquet statistics", c, "file")
        t = Tally(u)
        for f in ds.files():
            st = ds._file_stats(f, c)
            if st is None:
                continue
            u.files += 1
            rows = counts[f.path]

            def answer(leaf, st=st, rows=rows):
                said = leaf_answer(leaf, st, types[c])
                if said is None:
                    return REMAIN
                u.used = True  # a leaf settled by the statistics in this file
                if said == "skip":
                    return SKIP
                return BitmapResult.of_ranges([(0, rows)] if said == "all" else said)

            t.removed(alone(pred, c, answer), rows)
        if u.used:  # (a column whose statistics settle nothing is left out: they were only a try)
            out.append(u)
    return out


def _page_rows(ds, pred, cols, counts) -> List[IndexUse]:
    """A row per predicate column whose files' Parquet page indexes narrowed a leaf to some pages
    in some file, where the plan asks them (a column an optimize clustered the file by, or one the
    footer says it is sorted by: :meth:`ParquetDataset._pages_asked_for`), with what they alone
    remove (the rows of the other pages)."""

    from ..core.result import SKIP

    if not ds._uses_statistics():
        return []
    types = {fl.name: fl.type for fl in ds.data_schema()}
    entries = ds.read_catalog()["files"]
    out = []
    for c in [c for c in cols if c in types]:
        u = IndexUse("parquet page index", c, "file")
        t = Tally(u)
        for f in ds.files():
            sorted_only = ds._pages_asked_for(f, entries.get(f.path), c)
            if sorted_only is None:
                continue
            rows = counts[f.path]
            answered = []

            def answer(leaf, f=f, rows=rows, sorted_only=sorted_only, answered=answered):
                pages = ds._page_answer(f, leaf, types[c], sorted_only)
                if pages is None:
                    return REMAIN
                answered.append(1)
                if not pages:
                    return SKIP
                return BitmapResult.of_ranges(pages)

            res = alone(pred, c, answer)
            if answered:
                u.files += 1
                t.removed(res, rows)
        u.used = u.rows_removed > 0
        if u.used:  # (pages that narrow nothing were only a try)
            out.append(u)
    return out


def _listing_type(gi, ds, column) -> str:
    """The global index type a column's listing records (``bitmap`` for older listings, or when
    the listing cannot be read: :class:`GlobalAnswers` reports that)."""
    try:
        return str(gi.listing_of(ds, column).get("index_type", "bitmap"))
    except Exception:  # noqa: BLE001 - a damaged or vanished listing: reported by the answers
        return "bitmap"


def _global_rows(ds, pred, cols, counts, part_types, ops) -> List[IndexUse]:
    from . import globalindex as gi
    from .globalindex import GlobalAnswers

    have = [c for c in cols if gi.has_listing(ds, c)]
    if not have:
        return []
    answers = GlobalAnswers(ds, pred, counts, part_types)
    files = ds.files()
    out = []
    for c in have:
        u = IndexUse(_listing_type(gi, ds, c), c, "global")
        out.append(u)
        if c in answers.stale:
            u.why = "stale file: the data files changed since the build (rebuild it)"
            continue
        errs = [x for x in answers.errors if x.startswith(f"{c}:")]
        if errs:
            u.why = f"unreadable: {errs[0]}"
            continue
        u.files = len(files)
        leaves = [x for x in leaves_of(pred) if x.name == c]
        answered = [x for x in leaves if id(x) in answers._ids]
        unanswered = [x for x in leaves if id(x) not in answers._ids]
        u.used = bool(answered)
        if unanswered:
            budget = [x.op for x in unanswered if x.op in FALLBACK_OPS]
            other = [x.op for x in unanswered if x.op not in FALLBACK_OPS]
            why = []
            if budget:
                limit = _fallback_limit(ds, c)
                why.append(
                    f"fallback budget: {', '.join(sorted(set(budget)))} would scan more than "
                    f"bitmap-index.fallback-scan-max-size ({limit})"
                )
            if other:
                why.append(
                    f"unsupported predicate: the global bitmap index cannot answer {', '.join(sorted(set(other)))}"
                )
            u.why = "; ".join(why)
        if not answered:
            continue
        for f in files:
            res = alone(pred, c, lambda leaf, path=f.path: answers.result(leaf, path) or REMAIN)
            if res is UNSUPPORTED:
                continue
            Tally(u).removed(res, counts[f.path])
    return out


def _fallback_limit(ds, column: str) -> str:
    from .globalindex import listing_of, load_global_index

    try:
        g = load_global_index(ds.root, column, filesystem=ds.store, _listing=listing_of(ds, column))
    except Exception:  # noqa: BLE001
        return "?"
    try:
        n = g.fallback_max
    finally:
        g.close()
    return f"{n:,} bytes" if n > 0 else "0: range and LIKE scans are off"
