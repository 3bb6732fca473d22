"""``explain()`` of a Paimon table read: the file indexes (embedded in the manifest or beside the
data file) and global indexes the table holds on the predicate's columns, which answered, what
each removed on its own, and why the others did not.

The files are those pypaimon's planner keeps (partition and statistics pruning); each index is
evaluated alone (leaves on other columns answer REMAIN).  Reasons an index does not answer: Java
would not use file indexes on this table (``file-index.read.enabled``, data evolution, a
primary-key table without deletion vectors), the column changed type since the file was written
(type mismatch), the index cannot answer the predicate's operators (unsupported predicate), a
global bitmap index's range or LIKE scan would pass ``bitmap-index.fallback-scan-max-size``
(fallback budget), files written after a global index was built (stale), an index type read by
pypaimon's own scan; the search mode says which rows a global index leaves to read.
"""

from __future__ import annotations

from typing import Dict, Tuple

from ..read.lazy import Explain, IndexUse
from ..core.predicate import Leaf
from ..core.result import REMAIN
from ..read.explain import FALLBACK_OPS, Tally, alone, can_answer, leaves_of, note_or
from .pruning import INDEX_SUFFIX, _bool_opt, _SchemaResolver, index_applicability


def _name(table) -> str:
    ident = getattr(table, "identifier", None)
    full = getattr(ident, "get_full_name", None)
    return full() if callable(full) else str(getattr(table, "table_path", table))


def _planned_files(table, pred):
    """The data files pypaimon's planner keeps for ``pred`` (partition and statistics pruning)."""
    from .predicates import for_planning, to_pypaimon

    rb = table.new_read_builder()
    planned = for_planning(pred, table)
    if planned is not None:
        rb = rb.with_filter(to_pypaimon(planned, table))
    out = []
    for s in rb.new_scan().plan().splits():
        base = s.data_split() if callable(getattr(s, "data_split", None)) else s
        out.extend(base.files)
    return out


def _container(table, f):
    """The file's index container source (embedded bytes or the sidecar's), or None."""
    from ..io.source import BytesSource

    if f.embedded_index:
        return BytesSource(bytes(f.embedded_index))
    for extra in f.extra_files or ():
        if extra.endswith(INDEX_SUFFIX):
            with table.file_io.new_input_stream(f.aligned_file_path(extra)) as s:
                return BytesSource(s.read())
    return None


def explain_paimon(table, pred, splits, rep, fast: bool) -> Explain:
    """The :class:`~paimon_fast.read.lazy.Explain` of a planned read (its splits and report)."""
    from ..fileindex.format import FileIndexFormat

    rows_to_read = sum(s.row_count for s in splits)
    ex = Explain(
        "Paimon table",
        _name(table),
        repr(pred) if pred is not None else "",
        files_total=rep.files_planned,
        files_read=rep.files_planned - rep.files_skipped,
        rows_total=rep.rows_planned,
        rows_to_read=rows_to_read,
    )
    if fast:
        ex.notes.append(
            f"fast path: our manifest reader and Parquet reads ({rep.files_pruned_by_stats} files pruned "
            f"by partition and statistics)"
        )
    else:
        ex.notes.append(f"pypaimon's planner and reader ({rep.fallback_reason or 'as asked'})")
    if pred is None:
        return ex
    applicable, why_not = index_applicability(table)
    cols = sorted(pred.fields())
    ops = {c: [x.op for x in leaves_of(pred) if x.name == c] for c in cols}
    resolver = _SchemaResolver(table)
    tallies: Dict[Tuple[str, str], Tally] = {}
    mismatched: Dict[str, str] = {}

    def tally(itype, col):
        t = tallies.get((itype, col))
        if t is None:
            t = tallies[(itype, col)] = Tally(IndexUse(itype, col, "file"))
        return t

    for f in _planned_files(table, pred):
        try:
            src = _container(table, f)
        except OSError as e:
            for c in cols:
                tally("?", c).errors.append(f"{f.file_name}: {e}")
            continue
        if src is None:
            continue
        names, types = resolver.for_schema(f.schema_id)
        try:
            container = FileIndexFormat.open(src, types)
            metas = container.index_metas()
        except Exception as e:  # noqa: BLE001 - a corrupt container keeps its file
            for c in cols:
                tally("?", c).errors.append(f"{f.file_name}: {type(e).__name__}: {e}")
            continue
        for c in cols:
            fcol = names.get(c)
            if fcol is None:  # retyped (or added) since the file was written
                old = _old_field(table, f.schema_id, c)
                if old is not None:
                    for itype in _indexed_types(container, old.name):
                        t = tally(itype, c)
                        t.mismatch.append(f"the file's schema {f.schema_id} has {old.type}")
                        mismatched[c] = str(old.type)
                continue
            for itype in metas.get(fcol, {}):
                t = tally(itype, c)
                t.use.files += 1
                try:
                    rd = container.reader(fcol, itype)
                except Exception as e:  # noqa: BLE001 - an index type this build does not know
                    t.errors.append(f"{type(e).__name__}: {e}")
                    continue
                if not applicable:
                    continue
                answering = [op for op in ops[c] if can_answer(rd, op)]
                t.unsupported_ops += [op for op in ops[c] if op not in answering]
                if answering:
                    t.answered += 1

                def answer(leaf, rd=rd, fcol=fcol):
                    try:
                        return rd.visit(Leaf(leaf.op, fcol, leaf.literals))
                    except Exception:  # noqa: BLE001 - the read keeps such a file too
                        return REMAIN

                t.removed(alone(pred, c, answer), f.row_count)
    for (_, col), t in sorted(tallies.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        u = t.finish()
        if not applicable:
            u.used = False
            u.why = (u.why + "; " if u.why else "") + f"not read: {why_not}"
        ex.indexes.append(u)
    ex.indexes.extend(_global_rows(table, pred, cols, rep, ex))
    note_or(ex, pred)
    return ex


def _old_field(table, schema_id, name):
    """The field ``name`` (current name) as the file's schema has it, if its type differs."""
    cur = {f.name: f for f in table.fields}.get(name)
    if cur is None:
        return None
    schema = table.table_schema if schema_id == table.table_schema.id else table.schema_manager.get_schema(schema_id)
    for f in schema.fields:
        if f.id == cur.id:
            return f
    return None


def _indexed_types(container, col):
    return list(container.index_metas().get(col, {}))


def _global_rows(table, pred, cols, rep, ex):
    if not _bool_opt(table, "row-tracking.enabled", False):
        return []
    from .globalindex import GlobalIndexAnswer
    from .scan import _scanned_snapshot

    if not _bool_opt(table, "global-index.enabled", True):
        ex.notes.append("global-index.enabled is false: global indexes are not read")
    gi = GlobalIndexAnswer(table, pred, snapshot=_scanned_snapshot(table))
    out = []
    for t in gi.foreign_types:
        out.append(
            IndexUse(t, ",".join(cols), "global", why="read by pypaimon's data-evolution scan, not by paimon-fast")
        )
    if not gi.fields:
        return out
    if gi.data_evolution:
        mode_note = f"search mode {gi.mode}: rows no global index covers are " + (
            "not read" if gi.mode == "fast" else "read and filtered"
        )
    else:
        mode_note = "search mode full: Java reads no global index without data evolution; used to skip rows only"
    ex.notes.append(mode_note)
    files = _planned_files(table, None)  # every file (a data-evolution scan would drop the ones no index covers)
    fallback = (table.table_schema.options or {}).get("bitmap-index.fallback-scan-max-size", "256 mb")
    for c in cols:
        fi = gi.fields.get(c)
        if fi is None:
            continue
        u = IndexUse(fi.index_type, c, "global")
        out.append(u)
        leaves = [x for x in leaves_of(pred) if x.name == c]
        answered, unanswered = [], []
        for x in leaves:
            part = gi.leaf_part(x)
            (answered if len(part.cover) else unanswered).append(x)
        u.used = bool(answered) and _bool_opt(table, "global-index.enabled", True)
        why = []
        if unanswered:
            budget = sorted({x.op for x in unanswered if x.op in FALLBACK_OPS})
            other = sorted({x.op for x in unanswered if x.op not in FALLBACK_OPS})
            if budget:
                why.append(
                    f"fallback budget: {', '.join(budget)} would scan more than "
                    f"bitmap-index.fallback-scan-max-size ({fallback})"
                )
            if other:
                why.append(f"unsupported predicate: {fi.index_type} cannot answer {', '.join(other)}")
        cover = gi.leaf_part(answered[0]).cover if answered else None
        uncovered = 0
        for f in files:
            first = getattr(f, "first_row_id", None)
            if first is None or cover is None:
                continue
            if not cover.contains_range(first, first + f.row_count):
                uncovered += 1
                continue
            u.files += 1
            res = alone(pred, c, lambda leaf, first=first, n=f.row_count: gi.file_leaf_result(leaf, first, n) or REMAIN)
            Tally(u).removed(res, f.row_count)
        if uncovered:
            why.append(
                f"stale: {uncovered} data file{'s' if uncovered > 1 else ''} written after the build (not covered)"
            )
        u.why = "; ".join(why)
    return out
