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


def _manifest_view(table_path):
    """(manifest, {identity: entry}, {column: arrow type}) cached per manifest file version."""
    from .build import _parse_type

    ms = storage.list_manifests(table_path)
    if not ms:
        return None, {}, {}
    p = os.path.join(storage.index_dir(table_path), "manifests", f"manifest-{ms[-1]}.json")
    try:
        st = os.stat(p)
    except FileNotFoundError:
        return _manifest_view(table_path) if storage.list_manifests(table_path) != ms else (None, {}, {})
    key = (p, st.st_mtime_ns, st.st_size)
    hit = _MANIFEST_CACHE.get(table_path)
    if hit is not None and hit[0] == key:
        return hit[1]
    m = storage.read_manifest(table_path, ms[-1])
    covered = {(e["partition"], e["file_id"], e["base_file"], tuple(e["log_files"])): e for e in m["slices"]}
    col_types = {c: _parse_type(t) for c, t in m["columns"].items()}
    view = (m, covered, col_types)
    _MANIFEST_CACHE[table_path] = (key, view)
    return view


def _slice_sets(p, by_value, nulls, counts, col_types, all_keys):
    """Slice-level superset of the slices where ``p`` can be TRUE (None = every slice),
    from record cardinalities only; exact for single leaves."""
    if isinstance(p, Leaf):
        t = col_types.get(p.name)
        if t is None or p.op not in INDEXED_OPS:
            return None
        op = p.op
        nc = nulls.get(p.name, {})
        if op == "is_null":
            return {sk for sk, c in nc.items() if c > 0}
        if op == "is_not_null":
            return {sk for sk in all_keys if counts[sk] - nc.get(sk, 0) > 0}
        canon = [model.canonical_literal(v, t) for v in p.literals]
        if op in ("equal", "in"):
            out = set()
            for c in canon:
                if c is not None:
                    out |= by_value.get((p.name, c), {}).keys()
            return out
        if any(v is None for v in p.literals):
            return set()
        hit = [by_value.get((p.name, c), {}) for c in set(canon) if c is not None]
        return {sk for sk in all_keys if counts[sk] - nc.get(sk, 0) - sum(h.get(sk, 0) for h in hit) > 0}
    if isinstance(p, And):
        acc = None
        for c in p.children:
            r = _slice_sets(c, by_value, nulls, counts, col_types, all_keys)
            if r is not None:
                acc = r if acc is None else (acc & r)
        return acc
    if isinstance(p, Or):
        acc = set()
        for c in p.children:
            r = _slice_sets(c, by_value, nulls, counts, col_types, all_keys)
            if r is None:
                return None
            acc |= r
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
    if manifest is not None:
        from .build import _parse_type

        covered = {(e["partition"], e["file_id"], e["base_file"], tuple(e["log_files"])): e
                   for e in manifest["slices"]}
        col_types = {c: _parse_type(t) for c, t in manifest["columns"].items()}
    else:
        manifest, covered, col_types = _manifest_view(table_path)
    if not use_index:
        manifest, covered, col_types = None, {}, {}
    t_list = time.perf_counter()
    candidates, pruned = [], []
    cov_slices = []
    for ref in state.slices:
        e = covered.get(ref.identity)
        if e is None:
            candidates.append(Candidate(ref, False, None, None))
        else:
            cov_slices.append((ref, e))
    prefixes = _lookups(pred, col_types) if pred is not None else set()
    used = pred is not None and bool(prefixes or any(
        l.name in col_types and l.op in INDEXED_OPS for l in pred.leaves()))
    recs = {}
    maybe = None
    if used and cov_slices:
        by_seg = {}
        for ref, e in cov_slices:
            by_seg.setdefault(e["segment"], set()).add(ref.file_id)
        by_value, nulls = {}, {}
        for seg in by_seg:
            t = storage.read_segment(table_path, seg, prefixes=prefixes,
                                     columns=["column", "value", "partition", "file_id", "bitmap", "cardinality"])
            cols = [t.column(x).to_pylist() for x in ("column", "value", "partition", "file_id", "bitmap",
                                                       "cardinality")]
            for c, v, p, f, b, n in zip(*cols):
                sk = (seg, p, f)
                recs.setdefault(sk, {})[(c, v)] = b
                if v is None:
                    nulls.setdefault(c, {})[sk] = n
                elif n > 0:
                    by_value.setdefault((c, v), {})[sk] = n
        counts = {(e["segment"], e["partition"], e["file_id"]): e["row_count"] for _, e in cov_slices}
        maybe = _slice_sets(pred, by_value, nulls, counts, col_types, counts.keys())
    rows_total = rows_skipped = 0
    for ref, e in cov_slices:
        n = e["row_count"]
        rows_total += n
        if not used:
            candidates.append(Candidate(ref, True, None, n, e["positions"]))
            continue
        sk = (e["segment"], e["partition"], e["file_id"])
        if maybe is not None and sk not in maybe:
            pruned.append((ref, n))
            rows_skipped += n
            continue
        ev = _SliceEval(recs.get(sk, {}), n, col_types)
        r = ev.ev(pred)
        if r is None:
            candidates.append(Candidate(ref, True, None, n, e["positions"]))
        elif not r:
            pruned.append((ref, n))
            rows_skipped += n
        else:
            if e["positions"]:
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
        "slices_covered": len(cov_slices),
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
