"""``explain()`` of a Hudi table read: the RFC-92 bitmap index's columns among the predicate's,
which answered, what each removed on its own (file slices and rows), and why the others did not.

Each column's index is asked alone (the predicate with every leaf on another column taken as TRUE,
:func:`paimon_fast.core.predicate.relax`), through the same pruning the read uses.  The index answers
``=``, ``!=``, ``IN``, ``NOT IN``, ``IS [NOT] NULL`` (any other leaf keeps every row: unsupported
predicate); file slices written since the last index run are read whole (stale).
"""

from __future__ import annotations

from ..read.lazy import Explain, IndexUse
from ..core.predicate import relax
from ..read.explain import leaves_of
from .prune import INDEXED_OPS, prune


def explain_hudi(state, pred, pr) -> Explain:
    """The :class:`~paimon_fast.read.lazy.Explain` of a pruned read (``pr``: its :class:`.prune.PruneResult`)."""
    rep = pr.report
    to_read = [c.rows_to_read for c in pr.candidates]
    ex = Explain(
        "Hudi table",
        state.path,
        repr(pred) if pred is not None else "",
        files_total=rep.get("slices_total", 0),
        files_read=rep.get("slices_candidate", 0),
        rows_total=rep.get("rows_indexed", 0),
        rows_to_read=None if any(r is None for r in to_read) else sum(to_read),
    )
    ex.notes.append("files are file slices; rows counted over the slices the index covers")
    if rep.get("slices_not_indexed"):
        ex.notes.append(f"{rep['slices_not_indexed']} file slices the index does not cover are read whole")
    if pred is None:
        return ex
    indexed = list(rep.get("indexed_columns") or [])
    for c in sorted(pred.fields()):
        if c not in indexed:
            continue
        u = IndexUse("bitmap (RFC-92)", c, "sidecar", files=rep.get("slices_covered", 0))
        ops = [x.op for x in leaves_of(pred) if x.name == c]
        answering = [op for op in ops if op in INDEXED_OPS]
        u.used = bool(answering)
        why = []
        if not answering:
            why.append(f"unsupported predicate: the bitmap index cannot answer {', '.join(sorted(set(ops)))}")
        if rep.get("slices_not_indexed"):
            n = rep["slices_not_indexed"]
            why.append(f"stale file: {n} file slice{'s' if n > 1 else ''} written since the index run")
        if answering:
            alone = relax(pred, lambda leaf, c=c: leaf.name != c)
            r = prune(state.path, alone, state=state).report if alone is not None else {}
            u.files_removed = int(r.get("slices_pruned", 0))
            u.rows_removed = int(r.get("rows_skipped", 0))
        u.why = "; ".join(why)
        ex.indexes.append(u)
    return ex
