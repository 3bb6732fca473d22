"""What every table kind's ``explain()`` shares: one index's tally over the files
(:class:`Tally`), a predicate evaluated by one index alone (:func:`alone`), whether a file index
reader answers an operator (:func:`can_answer`), the operators a global bitmap index answers by
scanning its dictionary (:data:`FALLBACK_OPS`) and the note on indexes under OR (:func:`note_or`).
The Parquet dataset's, Paimon's and Hudi's explain build their rows from these."""

from __future__ import annotations

from typing import Dict, List

from ..core.result import REMAIN, BitmapResult
from ..fileindex import evaluate_tree
from ..fileindex.base import FileIndexReader
from .lazy import Explain, IndexUse

# global bitmap index leaves answered by scanning the dictionary (within the fallback budget)
FALLBACK_OPS = frozenset(
    {
        "less_than",
        "less_or_equal",
        "greater_than",
        "greater_or_equal",
        "between",
        "not_between",
        "ends_with",
        "contains",
        "like",
    }
)


def can_answer(reader, op: str) -> bool:
    """Whether a file index reader answers leaves of ``op`` (others answer REMAIN)."""
    if type(reader).visit is not FileIndexReader.visit:
        return True  # a reader that answers every leaf itself (the empty index)
    return callable(getattr(reader, "visit_" + op, None))


class Tally:
    """What one index did over the files, and what stopped it."""

    def __init__(self, use: IndexUse):
        self.use = use
        self.answered = 0
        self.stale = 0
        self.other: Dict[str, int] = {}  # why else the index was not used for files: reason -> files
        self.mismatch: List[str] = []
        self.errors: List[str] = []
        self.unsupported_ops: List[str] = []

    def removed(self, res, rows: int) -> None:
        if not res.remain:
            self.use.files_removed += 1
            self.use.rows_removed += rows
        elif isinstance(res, BitmapResult):
            bm = res.bitmap
            self.use.rows_removed += rows - (bm.range_cardinality(0, rows) if rows else 0)

    def finish(self) -> IndexUse:
        u = self.use
        u.used = self.answered > 0
        why = []
        if self.mismatch:
            why.append(f"type mismatch ({self.mismatch[0]})")
        if self.stale:
            why.append(f"stale file: {self.stale} data file{'s' if self.stale > 1 else ''} changed since the build")
        for reason, n in sorted(self.other.items()):
            why.append(f"{reason} ({n} data file{'s' if n > 1 else ''})")
        if self.unsupported_ops and not u.used:
            why.append(f"unsupported predicate: {u.index} cannot answer {', '.join(sorted(set(self.unsupported_ops)))}")
        if self.errors:
            why.append(f"unreadable: {self.errors[0]}")
        u.why = "; ".join(why)
        return u


def leaves_of(pred) -> list:
    """The leaves of a predicate tree, left to right."""
    from ..core.predicate import Leaf

    if isinstance(pred, Leaf):
        return [pred]
    return [x for c in getattr(pred, "children", ()) for x in leaves_of(c)]


def alone(pred, column: str, answer):
    """The predicate answered by one index: ``answer(leaf)`` for its column's leaves, REMAIN elsewhere."""
    return evaluate_tree(pred, lambda leaf: answer(leaf) if leaf.name == column else REMAIN)


def note_or(ex: Explain, pred) -> None:
    """Say why an index that answered removes nothing alone: the predicate joins its column's
    leaves by OR to other columns' leaves, so it removes files and rows only together with the
    indexes of the other side (the table's last row)."""
    from ..core.predicate import Or

    def or_columns(p, out):
        if isinstance(p, Or):
            cols = [{x.name for x in leaves_of(c)} for c in p.children]
            for i, c in enumerate(cols):
                if any(c - other for j, other in enumerate(cols) if j != i):
                    out |= c
        for c in getattr(p, "children", ()):
            or_columns(c, out)
        return out

    joined = or_columns(pred, set()) if pred is not None else set()
    for u in ex.indexes:
        if u.used and not u.files_removed and not u.rows_removed and u.column in joined and not u.why:
            u.why = "under OR with other columns: removes rows only together with their indexes"
