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

import contextvars
import os
import time
from dataclasses import dataclass
from typing import Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyroaring import BitMap

from ..errors import ColumnNotFoundError, IndexFormatError
from ..io.fs import IOCounter
from ..core.bind import bind
from ..core.predicate import And, Leaf, Or, Predicate
from . import model, storage
from .build import logs_changed, logs_untrusted
from .table import SliceRef, canonical, listing_is_current, table_state

INDEXED_OPS = {"equal", "not_equal", "in", "not_in", "is_null", "is_not_null"}


def as_predicate(where):
    """A Predicate from a Predicate, None, or SQL-like text (needs ``paimon_fast.core.sqlpredicate``)."""
    if where is None or isinstance(where, Predicate):
        return where
    if isinstance(where, str):
        try:
            from ..core.sqlpredicate import parse_predicate  # another module of the project, when present
        except ImportError:
            raise TypeError(
                "predicate strings need paimon_fast.core.sqlpredicate.parse_predicate, which is not "
                "available; pass a paimon_fast.core.predicate tree (pf.field('a') == 1)"
            ) from None
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


class HudiReport(dict):
    """What a Hudi read or prune did: a dict (its keys as before: ``slices_total``,
    ``slices_pruned``, ``rows_skipped``, ``read_on``...; JSON as it is) that prints as one line
    of text, as the other table kinds' reports do."""

    def __str__(self):
        g = self.get
        parts = []
        if "slices_total" in self:
            parts.append(
                f"file slices {g('slices_candidate', 0):,}/{g('slices_total', 0):,} to read "
                f"({g('slices_pruned', 0):,} pruned by the index, {g('slices_not_indexed', 0):,} not indexed)"
            )
        if "rows_indexed" in self:
            parts.append(
                f"rows {g('rows_candidate_indexed', 0):,}/{g('rows_indexed', 0):,} of the indexed slices kept "
                f"({g('rows_skipped', 0):,} skipped by the index)"
            )
        if g("index_instant") is not None or "stale" in self:
            state = "stale: the table has newer commits or unindexed slices" if g("stale") else "current"
            parts.append(f"index at {g('index_instant')} ({state})")
        if "ms_prune" in self:
            parts.append(f"index evaluation {g('ms_prune', 0.0):.1f} ms")
        if "bytes_read" in self:
            parts.append(f"{g('bytes_read', 0):,} bytes read")
        if "rows_returned" in self:
            parts.append(f"{g('rows_returned'):,} rows returned")
        if "read_on" in self:
            parts.append(f"read on the {g('read_on')}" + (f" ({g('why')})" if g("why") else ""))
        text = ", ".join(parts)
        decoded = g("decoded")
        if isinstance(decoded, dict) and decoded.get("rows"):
            from ..io.parquet.rows import PageReadStats

            try:
                text += f"; decoded {PageReadStats(**decoded)}"
            except TypeError:  # fields of another version: as they are
                text += f"; decoded {decoded}"
        return text or dict.__repr__(self)


class PruneResult:
    """``candidates`` (list of :class:`Candidate`), ``pruned`` ((SliceRef, row count)
    of every covered slice the index skipped, built on first access) and ``report``."""

    def __init__(self, candidates, pruned=None, report=None, *, _lazy=None):
        self.candidates = candidates
        self._pruned = pruned
        self._lazy = _lazy
        self.report = HudiReport(report or {})

    @property
    def pruned(self):
        if self._pruned is None:
            refs, idx, counts = self._lazy if self._lazy is not None else ((), (), ())
            self._pruned = [(refs[j], int(counts[j])) for j in idx]
        return self._pruned

    def __repr__(self):
        return f"PruneResult(candidates={len(self.candidates)}, report={self.report!r})"


_MANIFEST_CACHE = {}
_SEGMENT_CACHE = {}
_LOOKUP_COLUMNS = ["key", "column", "value", "partition", "file_id", "cardinality"]


class _View:
    """A manifest prepared for pruning (cached per manifest file version): per-entry
    arrays, per-segment lookup keys, and the slice references built on first use."""

    def __init__(self, m):
        from .build import _parse_type

        self.manifest = m
        self.entries = m["slices"]
        self.col_types = {c: _parse_type(t) for c, t in m["columns"].items()}
        self.counts = np.array([e["row_count"] for e in self.entries], dtype=np.int64)
        listing = m.get("listing")
        self.listing = listing if isinstance(listing, dict) else None
        self.unindexed = [SliceRef.from_json(d) for d in (self.listing or {}).get("unindexed", [])]
        by_seg = {}
        for j, e in enumerate(self.entries):
            d = by_seg.setdefault(e["segment"], ([], []))
            d[0].append(f"{e['partition']}\x00{e['file_id']}")
            d[1].append(j)
        self.segments = list(by_seg)
        self.seg_keys = {seg: (pa.array(k, pa.string()), np.array(j, np.int64)) for seg, (k, j) in by_seg.items()}
        self._refs = None
        self._covered = None

    @property
    def refs(self):
        """SliceRef of every entry (in entry order)."""
        if self._refs is None:
            self._refs = [
                SliceRef(e["partition"], e["file_id"], e["base_file"], tuple(e["log_files"]), e.get("instant", ""))
                for e in self.entries
            ]
        return self._refs

    @property
    def covered(self):
        """{slice identity: entry index}."""
        if self._covered is None:
            self._covered = {
                (e["partition"], e["file_id"], e["base_file"], tuple(e["log_files"])): j
                for j, e in enumerate(self.entries)
            }
        return self._covered


def _manifest_view(table_path):
    ms = storage.list_manifests(table_path)
    if not ms:
        return None
    p = storage.manifest_path(table_path, ms[-1])
    store = storage.index_location(table_path)[0]
    # locally a manifest is replaced in place (its identity tells); elsewhere a name is never reused
    e = store.head(p) if store.local else None
    st = (e.size, e.mtime_ns, e.ctime_ns, e.ino) if e is not None else None
    if store.local and st is None:  # replaced by a concurrent run: the next listing finds the new one
        ms2 = storage.list_manifests(table_path)
        return _manifest_view(table_path) if ms2 and ms2 != ms else None
    key = (p, st)
    hit = _MANIFEST_CACHE.get(table_path)
    if hit is not None and hit[0] == key:
        return hit[1]
    view = _View(storage.read_manifest(table_path, ms[-1]))
    _MANIFEST_CACHE[table_path] = (key, view)
    return view


_IO = contextvars.ContextVar("paimon_fast_hudi_io", default=None)


def _counter():
    """The IOCounter of the prune / read running in this context (None: not counted)."""
    return _IO.get()


def _segment_meta(table_path, seg):
    """(ParquetFile, key min/max per row group, row-group start rows), cached per file
    version (segments are immutable)."""
    store = storage.index_location(table_path)[0]
    path = storage.segment_path(table_path, seg)
    try:
        # segments are immutable under unique names; locally a changed file is still noticed
        st = os.stat(path) if store.local else None
        key = (path, st.st_mtime_ns, st.st_size, st.st_ctime_ns, st.st_ino) if st is not None else (store.uri(path),)
        hit = _SEGMENT_CACHE.get(path)
        if hit is not None and hit[0] == key:
            return (
                pq.ParquetFile(store.open_input(path, _counter()), metadata=hit[1][0], page_checksum_verification=True),
            ) + hit[1][1:]
        pf = pq.ParquetFile(store.open_input(path, _counter()), page_checksum_verification=True)
    except (OSError, pa.ArrowInvalid) as e:
        raise IndexFormatError(f"bitmap index segment {seg} unreadable: {e}") from None
    md = pf.metadata
    ki = pf.schema_arrow.get_field_index("key")
    lo, hi = [], []
    starts = np.zeros(md.num_row_groups + 1, np.int64)
    for g in range(md.num_row_groups):
        rg = md.row_group(g)
        starts[g + 1] = starts[g] + rg.num_rows
        stt = rg.column(ki).statistics
        if stt is None or not stt.has_min_max:
            lo.append(None)
            hi.append(None)
            continue
        a, b = stt.min, stt.max
        if isinstance(a, bytes):
            a, b = a.decode("utf-8", "replace"), b.decode("utf-8", "replace")
        lo.append(a)
        hi.append(b)
    if len(_SEGMENT_CACHE) > 256:
        _SEGMENT_CACHE.clear()
    _SEGMENT_CACHE[path] = (key, (md, lo, hi, starts))
    return pf, lo, hi, starts


def _groups_for(lo, hi, prefixes):
    out = []
    for g, (a, b) in enumerate(zip(lo, hi)):
        if a is None:
            out.append(g)
            continue
        for p in prefixes:
            # keys with prefix p lie in [p, p_end); p ends with '$', '%' is the next character
            if p <= b and a < p[:-1] + "%":
                out.append(g)
                break
    return out


def _read_groups(pf, seg, groups, columns):
    try:
        return pf.read_row_groups(groups, columns=columns)
    except (OSError, pa.ArrowInvalid) as e:
        raise IndexFormatError(f"bitmap index segment {seg} unreadable: {e}") from None


class _Records:
    """Index records of the live slices whose key starts with one of ``prefixes``,
    read without their bitmaps: column, value, cardinality, entry index ``j`` and where
    each record lies (segment, row group, row in group), so that afterwards only the
    bitmaps of the slices still undecided are read (:meth:`bitmaps`)."""

    def __init__(self, table_path, view, prefixes):
        self.table_path = table_path
        self.view = view
        self._colmask = {}
        prefixes = sorted(prefixes)
        cols, vals, cards, js, segs, grps, offs = [], [], [], [], [], [], []
        for si, seg in enumerate(view.segments):
            pf, lo, hi, starts = _segment_meta(table_path, seg)
            groups = _groups_for(lo, hi, prefixes)
            if not groups:
                continue
            t = _read_groups(pf, seg, groups, _LOOKUP_COLUMNS)
            keys = t.column("key")
            mask = None
            for p in prefixes:
                m = pc.starts_with(keys, p)
                mask = m if mask is None else pc.or_(mask, m)
            rows = np.flatnonzero(mask.to_numpy(zero_copy_only=False))
            if not rows.size:
                continue
            t = t.take(pa.array(rows, pa.int64()))
            gk = pc.binary_join_element_wise(t.column("partition"), t.column("file_id"), "\x00")
            skeys, sj = view.seg_keys[seg]
            idx = pc.index_in(gk, value_set=skeys).fill_null(-1).to_numpy(zero_copy_only=False)
            live = idx >= 0  # records of slices this manifest still lists
            if not live.any():
                continue
            rows, idx = rows[live], idx[live]
            t = t.filter(pa.array(live))
            sizes = np.diff(starts)[groups]
            cum = np.concatenate([[0], np.cumsum(sizes)])
            gpos = np.searchsorted(cum, rows, side="right") - 1
            cols.extend(t.column("column").chunks)
            vals.extend(t.column("value").chunks)
            cards.append(t.column("cardinality").to_numpy())
            js.append(sj[idx])
            segs.append(np.full(rows.size, si, np.int64))
            grps.append(np.asarray(groups, np.int64)[gpos])
            offs.append(rows - cum[gpos])
        self.n = int(sum(len(c) for c in cards))
        if self.n:
            self.col = pa.chunked_array(cols, pa.string())
            self.val = pa.chunked_array(vals, pa.string())
            self.card = np.concatenate(cards)
            self.j = np.concatenate(js)
            self.seg = np.concatenate(segs)
            self.grp = np.concatenate(grps)
            self.off = np.concatenate(offs)

    def match(self, column, value):
        """Bool array over records: those of (column, value); value None = the null record."""
        if not self.n:
            return np.zeros(0, bool)
        cm = self._colmask.get(column)
        if cm is None:
            cm = self._colmask[column] = pc.equal(self.col, column).to_numpy(zero_copy_only=False)
        vm = pc.is_null(self.val) if value is None else pc.fill_null(pc.equal(self.val, value), False)
        return cm & vm.to_numpy(zero_copy_only=False)

    def bitmaps(self, rec_idx):
        """Base64 bitmaps of records ``rec_idx`` (reads only their row groups' bitmap column)."""
        out = np.empty(len(rec_idx), object)
        if not len(rec_idx):
            return out
        seg, grp, off = self.seg[rec_idx], self.grp[rec_idx], self.off[rec_idx]
        for si in np.unique(seg).tolist():
            sel = np.flatnonzero(seg == si)
            name = self.view.segments[si]
            pf, _, _, starts = _segment_meta(self.table_path, name)
            groups = np.unique(grp[sel])
            sizes = np.diff(starts)[groups]
            base = np.zeros(int(groups.max()) + 1, np.int64)
            base[groups] = np.concatenate([[0], np.cumsum(sizes)[:-1]])
            t = _read_groups(pf, name, groups.tolist(), ["bitmap"])
            local = off[sel] + base[grp[sel]]
            vals = t.column("bitmap").take(pa.array(local, pa.int64())).to_pylist()
            for k, v in zip(sel.tolist(), vals):
                out[k] = v
        return out


class _Cards:
    """Per-slice cardinalities of the looked-up records, as dense arrays over manifest entries."""

    def __init__(self, n, records):
        self.n = n
        self.records = records
        self.cache = {}

    def of(self, column, value):
        k = (column, value)
        a = self.cache.get(k)
        if a is None:
            a = np.zeros(self.n, np.int64)
            if self.records.n:
                m = self.records.match(column, value)
                a[self.records.j[m]] = self.records.card[m]
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
        canon = {model.canonical_text(v, t) for v in p.literals} - {None}
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
                c = model.canonical_text(v, t)
                if c is not None:
                    prefixes.add(model.key_prefix(leaf.name, c))
        if leaf.op in ("not_equal", "not_in", "is_null", "is_not_null"):
            prefixes.add(model.key_prefix(leaf.name, None))
    return prefixes


class _SliceEval:
    __slots__ = ("records", "n", "col_types", "cache")

    def __init__(self, records, n, col_types):
        self.records = records  # {(column, value or None): base64 bitmap}
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
            canon = [model.canonical_text(v, t) for v in p.literals]
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


def _coverage(table_path, view, state):
    """(slices_total, latest_instant, uncovered SliceRefs, covered entry indices, refs by entry
    index, how the slices were found).  Reuses the manifest's listing while the timeline is
    exactly the one it was taken on; otherwise the ``hudi`` package lists the slices."""
    if state is None or state.slices is None:
        if view is not None and listing_is_current(table_path, view.listing):
            changed = [j for j, e in enumerate(view.entries) if logs_changed(table_path, e)]
            cov = np.setdiff1d(np.arange(len(view.entries), dtype=np.int64), np.array(changed, np.int64))
            return (
                len(view.entries) + len(view.unindexed),
                view.manifest["instant"],
                list(view.unindexed) + [view.refs[j] for j in changed],
                cov,
                view.refs,
                "index",
            )
        state = table_state(table_path)
    cached = getattr(state, "_pf_coverage", None)
    if cached is not None and cached[0] is view:
        return cached[1]  # same table state and manifest: reuse
    uncovered, cov, refs = [], [], [None] * (len(view.entries) if view is not None else 0)
    covered = view.covered if view is not None else {}
    if view is not None and logs_untrusted(view.manifest):
        # indexed while an instant was pending: a slice with logs may have changed under the same name
        covered = {k: j for k, j in covered.items() if not k[3]}
    for ref in state.slices:
        j = covered.get(ref.identity)
        if j is None or (ref.log_files and logs_changed(table_path, view.entries[j])):
            uncovered.append(ref)
        else:
            cov.append(j)
            refs[j] = ref
    out = (len(state.slices), state.latest_instant, uncovered, np.array(sorted(cov), np.int64), refs, "hudi")
    state._pf_coverage = (view, out)
    return out


def bind_to_state(pred, state):
    """``pred`` bound to the table's schema (literals exact values of its column types), where the
    table state knows it; a column it lacks is left to :func:`prune`, which names it."""
    if pred is None or state is None or state.schema is None:
        return pred
    return bind(pred, state.schema, missing="keep")


def _check_columns(pred, col_types, state, table_path):
    """ColumnNotFoundError for a predicate column the table does not have (it must not
    silently prune nothing); the schema is read only when a column is not an indexed one."""
    unknown = [c for c in sorted(pred.fields()) if c not in col_types]
    if not unknown:
        return
    if state is not None and state.schema is not None:
        names = state.schema.names
    else:
        from .table import open_table

        t = open_table(table_path, cached=True)
        populate = t.hudi_options().get("hoodie.populate.meta.fields", "true").lower() != "false"
        names = (t.get_schema_with_meta_fields() if populate else t.get_schema()).names
    for c in unknown:
        if c not in names:
            raise ColumnNotFoundError(c, names)


def prune(table_path: str, where=None, *, state=None, manifest=None, use_index: bool = True) -> PruneResult:
    """Candidate file slices (and exact row positions of base-only slices) for ``where``.

    ``where``: a :mod:`paimon_fast.core.predicate` tree, SQL-like text (when
    ``paimon_fast.core.sqlpredicate`` is installed) or None.  The result lists every
    current slice that may hold a matching row; slices the index does not cover
    are always candidates.  ``report`` counts slices and rows skipped.

    The current slices come from ``state`` (a :class:`~paimon_fast.hudi.table.TableState`
    with its listing) or, without it, from the index manifest when the table's
    timeline is exactly the one the manifest's listing was taken on (no instant
    pending), else from the ``hudi`` package's listing.
    ``use_index=False`` makes every slice a candidate (a full snapshot read, for comparison).
    """
    t0 = time.perf_counter()
    io = _IO.get()
    token = _IO.set(IOCounter()) if io is None else None
    try:
        return _prune(table_path, where, state, manifest, use_index, t0)
    finally:
        if token is not None:
            _IO.reset(token)


def _prune(table_path, where, state, manifest, use_index, t0):
    pred = as_predicate(where)
    table_path = canonical(state.path if state is not None else table_path)
    view = _View(manifest) if manifest is not None else _manifest_view(table_path)
    if not use_index:
        view = None
        if state is None or state.slices is None:
            state = table_state(table_path)
    col_types = view.col_types if view is not None else {}
    if pred is not None:
        _check_columns(pred, col_types, state, table_path)
        pred = bind(pred, col_types, missing="keep")  # once: the leaves below hold exact values
    total, latest, uncovered, cov, refs, how = _coverage(table_path, view, state)
    t_list = time.perf_counter()
    candidates = [Candidate(ref, False, None, None) for ref in uncovered]
    prefixes = _lookups(pred, col_types) if pred is not None else set()
    used = pred is not None and bool(
        prefixes or any(l.name in col_types and l.op in INDEXED_OPS for l in pred.leaves())
    )
    counts = view.counts if view is not None else np.zeros(0, np.int64)
    rows_total = int(counts[cov].sum()) if cov.size else 0
    rows_skipped = 0
    pruned_idx = np.zeros(0, np.int64)
    if cov.size and not used:
        for j in cov.tolist():
            e = view.entries[j]
            candidates.append(Candidate(refs[j], True, None, e["row_count"], e["positions"]))
    elif cov.size:
        recs = _Records(table_path, view, prefixes)
        maybe = _slice_mask(pred, _Cards(len(view.entries), recs), counts, col_types)
        if maybe is None:  # the record counts decide nothing: evaluate every covered slice
            todo_j = cov
        else:
            todo_j, pruned_idx = cov[maybe[cov]], cov[~maybe[cov]]
        rows_skipped = int(counts[pruned_idx].sum())
        per = {}
        if recs.n and todo_j.size:
            want = np.zeros(len(view.entries), bool)
            want[todo_j] = True
            ri = np.flatnonzero(want[recs.j])
            bms = recs.bitmaps(ri)
            cols = recs.col.take(pa.array(ri, pa.int64())).to_pylist()
            vals = recs.val.take(pa.array(ri, pa.int64())).to_pylist()
            for c, v, b, j in zip(cols, vals, bms.tolist(), recs.j[ri].tolist()):
                per.setdefault(j, {})[(c, v)] = b
        late = []
        for j in todo_j.tolist():
            ref, e = refs[j], view.entries[j]
            n = e["row_count"]
            r = _SliceEval(per.get(j, {}), n, col_types).ev(pred)
            if r is None:
                candidates.append(Candidate(ref, True, None, n, e["positions"]))
            elif not r:
                late.append(j)
                rows_skipped += n
            elif e["positions"]:
                candidates.append(Candidate(ref, True, r, n, True))
                rows_skipped += n - len(r)
            else:
                candidates.append(Candidate(ref, True, None, n, False))
        if late:
            pruned_idx = np.sort(np.concatenate([pruned_idx, np.array(late, np.int64)]))
    t1 = time.perf_counter()
    manifest = view.manifest if view is not None else None
    n_uncovered = len(uncovered)
    report = HudiReport(
        {
            "predicate": repr(pred),
            "index_instant": None if manifest is None else manifest["instant"],
            "table_instant": latest,
            "stale": manifest is None or manifest["instant"] != latest or bool(n_uncovered),
            "indexed_columns": list(col_types),
            "listing": how,
            "slices_total": total,
            "slices_covered": int(cov.size),
            "slices_not_indexed": n_uncovered,
            "slices_pruned": int(pruned_idx.size),
            "slices_candidate": len(candidates),
            "rows_indexed": rows_total,
            "rows_skipped": rows_skipped,
            "rows_candidate_indexed": rows_total - rows_skipped,
            "row_level": sum(1 for c in candidates if c.positions is not None),
            "ms_list": round((t_list - t0) * 1000, 2),
            "ms_prune": round((t1 - t_list) * 1000, 2),
            "bytes_read": _IO.get().bytes,  # index segments (and, in read_arrow, base files) read so far
        }
    )
    return PruneResult(candidates, report=report, _lazy=(refs, pruned_idx.tolist(), counts))
