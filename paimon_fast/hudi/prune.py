"""Stale-safe pruning of file slices and rows with the bitmap index.

For every current file slice (listed by the ``hudi`` package) the index either
covers it (same partition, file id, base file and log files as a manifest entry)
or not.  An uncovered slice - written by a Java writer since the last index run,
by an instant in flight, after a rollback - is always a candidate, so a stale
index never loses rows.  A covered slice is evaluated exactly:

* ``=`` / ``IN``: the value bitmaps (union for IN); a value without a record
  does not occur in the slice;
* ``!=`` / ``NOT IN``: ``[0, row count) - nulls - values``;
* ``IS NULL`` / ``IS NOT NULL``: the null bitmap or its complement;
* ``AND`` / ``OR``: intersection / union;
* anything else (ranges, LIKE, columns not indexed): every row (no pruning).

This is the set of rows where the predicate is TRUE under SQL's three-valued
logic (the predicate trees carry negation only inside leaves).  An empty result
prunes the slice; for a slice whose positions are base-file positions the result
is the exact list of rows to read.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap

from ..predicate import And, Leaf, Or, Predicate
from . import model, storage
from .table import SliceRef, table_state

INDEXED_OPS = {"equal", "not_equal", "in", "not_in", "is_null", "is_not_null"}


def as_predicate(where):
    """A Predicate from a Predicate, None, or SQL-like text (needs ``paimon_fast.sqlpredicate``)."""
    if where is None or isinstance(where, Predicate):
        return where
    if isinstance(where, str):
        try:
            from ..sqlpredicate import parse_predicate  # another module of the project, when present
        except ImportError:
            raise TypeError("predicate strings need paimon_fast.sqlpredicate.parse_predicate, which is not "
                            "available; pass a paimon_fast.predicate tree (pf.field('a') == 1)") from None
        return parse_predicate(where)
    raise TypeError(f"where must be a Predicate, a string or None, not {type(where).__name__}")


@dataclass
class Candidate:
    """A file slice that must be read; ``positions`` = exact base-file rows, or None for all rows."""

    slice: SliceRef
    covered: bool
    positions: Optional[BitMap]
    row_count: Optional[int]
    has_positions: bool = False

    @property
    def rows_to_read(self):
        if self.positions is not None:
            return len(self.positions)
        return self.row_count


@dataclass
class PruneResult:
    candidates: list
    pruned: list                      # (SliceRef, row_count)
    report: dict = field(default_factory=dict)


_MANIFEST_CACHE = {}


class _View:
    """A manifest prepared for pruning (cached per manifest file version)."""

    def __init__(self, m):
        from .build import _parse_type

        self.manifest = m
        self.entries = m["slices"]
        self.col_types = {c: _parse_type(t) for c, t in m["columns"].items()}
        self.covered = {(e["partition"], e["file_id"], e["base_file"], tuple(e["log_files"])): j
                        for j, e in enumerate(self.entries)}
        self.counts = np.array([e["row_count"] for e in self.entries], dtype=np.int64)
        self.by_segment = {}
        for j, e in enumerate(self.entries):
            d = self.by_segment.setdefault(e["segment"], ([], [], []))
            d[0].append(e["partition"])
            d[1].append(e["file_id"])
            d[2].append(j)
        self.seg_tables = {seg: pa.table({"partition": pa.array(p, pa.string()), "file_id": pa.array(f, pa.string()),
                                          "_j": pa.array(j, pa.int64())})
                           for seg, (p, f, j) in self.by_segment.items()}


def _manifest_view(table_path):
    ms = storage.list_manifests(table_path)
    if not ms:
        return None
    p = os.path.join(storage.index_dir(table_path), "manifests", f"manifest-{ms[-1]}.json")
    try:
        st = os.stat(p)
    except FileNotFoundError:   # replaced by a concurrent run: the next listing finds the new one
        ms2 = storage.list_manifests(table_path)
        return _manifest_view(table_path) if ms2 and ms2 != ms else None
    key = (p, st.st_mtime_ns, st.st_size)
    hit = _MANIFEST_CACHE.get(table_path)
    if hit is not None and hit[0] == key:
        return hit[1]
    view = _View(storage.read_manifest(table_path, ms[-1]))
    _MANIFEST_CACHE[table_path] = (key, view)
    return view


class _Cards:
    """Per-slice cardinalities of the looked-up records, as dense arrays over manifest entries."""

    def __init__(self, n, col, val, card, j):
        self.n = n
        self.col, self.val, self.card, self.j = col, val, card, j
        self.cache = {}

    def of(self, column, value):
        k = (column, value)
        a = self.cache.get(k)
        if a is None:
            a = np.zeros(self.n, np.int64)
            if len(self.col):
                m = self.col == column
                m &= (self.val == value) if value is not None else self.isnull
                a[self.j[m]] = self.card[m]
            self.cache[k] = a
        return a


def _slice_mask(p, cards, counts, col_types):
    """Bool array over manifest entries: the slices where ``p`` can be TRUE (None = all),
    from record cardinalities alone (exact for a single leaf, a superset for AND)."""
    if isinstance(p, Leaf):
        t = col_types.get(p.name)
        if t is None or p.op not in INDEXED_OPS:
            return None
        op = p.op
        nulls = cards.of(p.name, None)
        if op == "is_null":
            return nulls > 0
        if op == "is_not_null":
            return counts - nulls > 0
        canon = {model.canonical_literal(v, t) for v in p.literals} - {None}
        if op in ("equal", "in"):
            out = np.zeros(len(counts), bool)
            for c in canon:
                out |= cards.of(p.name, c) > 0
            return out
        if any(v is None for v in p.literals):
            return np.zeros(len(counts), bool)
        rest = counts - nulls
        for c in canon:
            rest = rest - cards.of(p.name, c)
        return rest > 0
    if isinstance(p, And):
        acc = None
        for c in p.children:
            r = _slice_mask(c, cards, counts, col_types)
            if r is not None:
                acc = r if acc is None else (acc & r)
        return acc
    if isinstance(p, Or):
        acc = np.zeros(len(counts), bool)
        for c in p.children:
            r = _slice_mask(c, cards, counts, col_types)
            if r is None:
                return None
            acc = acc | r
        return acc
    raise TypeError(f"not a predicate: {p!r}")


def _lookups(pred, col_types):
    """(prefixes to read, needs_nulls columns) for the indexed leaves of ``pred``."""
    prefixes = set()
    for leaf in pred.leaves():
        if leaf.name not in col_types or leaf.op not in INDEXED_OPS:
            continue
        t = col_types[leaf.name]
        if leaf.op in ("equal", "not_equal", "in", "not_in"):
            for v in leaf.literals:
                c = model.canonical_literal(v, t)
                if c is not None:
                    prefixes.add(model.key_prefix(leaf.name, c))
        if leaf.op in ("not_equal", "not_in", "is_null", "is_not_null"):
            prefixes.add(model.key_prefix(leaf.name, None))
    return prefixes


class _SliceEval:
    __slots__ = ("records", "n", "col_types", "cache")

    def __init__(self, records, n, col_types):
        self.records = records      # {(column, value or None): base64 bitmap}
        self.n = n
        self.col_types = col_types
        self.cache = {}

    def bm(self, col, val):
        k = (col, val)
        b = self.cache.get(k)
        if b is None:
            s = self.records.get(k)
            b = model.decode_bitmap(s) if s is not None else BitMap()
            self.cache[k] = b
        return b

    def universe(self):
        b = self.cache.get("U")
        if b is None:
            b = self.cache["U"] = BitMap(range(self.n))
        return b

    def nonnull(self, col):
        return self.universe() - self.bm(col, None)

    def ev(self, p):
        """BitMap of rows where p is TRUE, or None = unknown (every row)."""
        if isinstance(p, Leaf):
            t = self.col_types.get(p.name)
            if t is None or p.op not in INDEXED_OPS:
                return None
            op = p.op
            if op == "is_null":
                return self.bm(p.name, None)
            if op == "is_not_null":
                return self.nonnull(p.name)
            canon = [model.canonical_literal(v, t) for v in p.literals]
            if op in ("equal", "in"):
                out = BitMap()
                for c in canon:
                    if c is not None:
                        out |= self.bm(p.name, c)
                return out
            # not_equal / not_in: a NULL literal makes the predicate never TRUE
            if any(v is None for v in p.literals):
                return BitMap()
            out = self.nonnull(p.name)
            for c in canon:
                if c is not None:
                    out = out - self.bm(p.name, c)
            return out
        if isinstance(p, And):
            acc = None
            for c in p.children:
                r = self.ev(c)
                if r is None:
                    continue
                acc = r if acc is None else (acc & r)
                if not acc:
                    return acc
            return acc
        if isinstance(p, Or):
            acc = BitMap()
            for c in p.children:
                r = self.ev(c)
                if r is None:
                    return None
                acc = acc | r
            return acc
        raise TypeError(f"not a predicate: {p!r}")


def prune(table_path: str, where=None, *, state=None, manifest=None, use_index: bool = True) -> PruneResult:
    """Candidate file slices (and exact row positions of base-only slices) for ``where``.

    ``where``: a :mod:`paimon_fast.predicate` tree, SQL-like text (when
    ``paimon_fast.sqlpredicate`` is installed) or None.  The result lists every
    current slice that may hold a matching row; slices the index does not cover
    are always candidates.  ``report`` counts slices and rows skipped.
    ``use_index=False`` makes every slice a candidate (a full snapshot read, for comparison).
    """
    t0 = time.perf_counter()
    pred = as_predicate(where)
    state = state or table_state(table_path)
    table_path = state.path
    view = _View(manifest) if manifest is not None else _manifest_view(table_path)
    if not use_index:
        view = None
    manifest = view.manifest if view is not None else None
    col_types = view.col_types if view is not None else {}
    t_list = time.perf_counter()
    candidates, pruned = [], []
    cached = getattr(state, "_pf_coverage", None)
    if cached is not None and cached[0] is view:
        uncovered, cov_refs = cached[1], cached[2]        # same table state and manifest: reuse
    else:
        uncovered, cov_refs = [], {}
        covered = view.covered if view is not None else {}
        for ref in state.slices:
            j = covered.get(ref.identity)
            if j is None:
                uncovered.append(ref)
            else:
                cov_refs[j] = ref
        state._pf_coverage = (view, uncovered, cov_refs)
    candidates.extend(Candidate(ref, False, None, None) for ref in uncovered)
    prefixes = _lookups(pred, col_types) if pred is not None else set()
    used = pred is not None and bool(prefixes or any(
        l.name in col_types and l.op in INDEXED_OPS for l in pred.leaves()))
    rows_total = rows_skipped = 0
    if not cov_refs:
        pass
    elif not used:
        for j, ref in cov_refs.items():
            e = view.entries[j]
            rows_total += e["row_count"]
            candidates.append(Candidate(ref, True, None, e["row_count"], e["positions"]))
    else:
        segs = list(view.by_segment)
        parts = []
        for seg in segs:
            t = storage.read_segment(table_path, seg, prefixes=prefixes,
                                     columns=["column", "value", "partition", "file_id", "cardinality", "bitmap"])
            if t.num_rows:
                parts.append(t.join(view.seg_tables[seg], keys=["partition", "file_id"], join_type="inner"))
        if parts:
            recs = pa.concat_tables(parts)
            col = recs.column("column").to_numpy(zero_copy_only=False)
            val = recs.column("value").to_numpy(zero_copy_only=False)
            cards = _Cards(len(view.entries), col, val, recs.column("cardinality").to_numpy(),
                           recs.column("_j").to_numpy())
            cards.isnull = recs.column("value").is_null().to_numpy(zero_copy_only=False)
        else:
            recs = None
            cards = _Cards(len(view.entries), np.zeros(0, object), np.zeros(0, object), np.zeros(0, np.int64),
                           np.zeros(0, np.int64))
            cards.isnull = np.zeros(0, bool)
        maybe = _slice_mask(pred, cards, view.counts, col_types)
        cov_mask = np.zeros(len(view.entries), bool)
        cov_mask[list(cov_refs)] = True
        rows_total = int(view.counts[cov_mask].sum())
        todo = cov_mask if maybe is None else (cov_mask & maybe)
        for j in np.flatnonzero(cov_mask & ~todo).tolist():
            pruned.append((cov_refs[j], int(view.counts[j])))
            rows_skipped += int(view.counts[j])
        todo_j = np.flatnonzero(todo)
        per = {}
        if recs is not None and todo_j.size:
            sel = recs.filter(pc.is_in(recs.column("_j"), value_set=pa.array(todo_j, pa.int64())))
            for c, v, b, j in zip(*(sel.column(x).to_pylist() for x in ("column", "value", "bitmap", "_j"))):
                per.setdefault(j, {})[(c, v)] = b
        for j in todo_j.tolist():
            ref, e = cov_refs[j], view.entries[j]
            n = e["row_count"]
            r = _SliceEval(per.get(j, {}), n, col_types).ev(pred)
            if r is None:
                candidates.append(Candidate(ref, True, None, n, e["positions"]))
            elif not r:
                pruned.append((ref, n))
                rows_skipped += n
            elif e["positions"]:
                candidates.append(Candidate(ref, True, r, n, True))
                rows_skipped += n - len(r)
            else:
                candidates.append(Candidate(ref, True, None, n, False))
    uncovered = [c for c in candidates if not c.covered]
    t1 = time.perf_counter()
    report = {
        "predicate": repr(pred),
        "index_instant": None if manifest is None else manifest["instant"],
        "table_instant": state.latest_instant,
        "stale": manifest is None or manifest["instant"] != state.latest_instant or bool(uncovered),
        "indexed_columns": list(col_types),
        "slices_total": len(state.slices),
        "slices_covered": len(cov_refs),
        "slices_not_indexed": len(uncovered),
        "slices_pruned": len(pruned),
        "slices_candidate": len(candidates),
        "rows_indexed": rows_total,
        "rows_skipped": rows_skipped,
        "rows_candidate_indexed": rows_total - rows_skipped,
        "row_level": sum(1 for c in candidates if c.positions is not None),
        "ms_list": round((t_list - t0) * 1000, 2),
        "ms_prune": round((t1 - t_list) * 1000, 2),
    }
    return PruneResult(candidates, pruned, report)
