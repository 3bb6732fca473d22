"""Planning a read of a :class:`~paimon_fast.tables.parquet.ParquetDataset` (a mixin).

:meth:`_PlanMixin.plan` answers a predicate for every data file from its partition values, the
catalog's statistics, the footer's row groups and page index, the global indexes and the file's
index, and removes deleted rows; the helpers it asks (a file's footer statistics and pages, the
files the catalog's statistics exclude, the predicate bound to the schema) sit beside it.
:class:`_PlanMixin` is one of the bases of ``ParquetDataset``; it imports nothing of
:mod:`paimon_fast.tables.parquet`."""

from __future__ import annotations

import threading
import time
from typing import Mapping, Optional, Tuple

import numpy as np
import pyarrow as pa

from ..fileindex import evaluate_tree
from ..fileindex._bitslice import NullLiteralError, range_bitmap
from ..core.bind import bind
from ..core.predicate import And, Leaf, Predicate
from ..core.result import REMAIN, SKIP, BitmapResult, FileIndexResult
from . import identity as _identity
from . import replaced as _replaced
from ..read.arrow_filter import to_arrow_expression
from .dataset_build import ensure_index_types
from .layout import DataFile
from .globalindex import GlobalAnswers
from .stats import stats_arrays, leaf_answer, leaf_prepared, leaf_skips, stat_kind, tree_skips
from .writer import clustered_columns, entry_stats
from .pagestats import COMPARED_OPS
from .plan import FilePlan, ScanPlan, ScanReport

# plans settle the files the catalog's statistics exclude with arrays, all files at once (tests turn
# it off to compare with the file-by-file answers)
_CATALOG_VECTORS = True
# plans ask the bloom filters of every file for a point lookup's ``=`` / ``IN`` leaves at once, of
# the readers earlier plans read, kept while the listing and the catalog stay the same (tests turn it
# off likewise) ...
_BLOOM_VECTORS = True
# ... up to this many bytes of filters a dataset (past them: file by file)
BLOOM_KEEP_BYTES = 64 << 20
_BLOOM_OPS = ("equal", "in")
_BLOOM_LOCK = threading.Lock()
# a leaf whose page index keeps at most 1/8 of a file's rows is answered from those pages: the rows
# of the column's index where it answers exactly, else the pages read and filtered; a leaf that
# keeps more is asked of the index first
PAGES_BEFORE_INDEX = 8


class _KeptBlooms:
    """The bloom filter readers plans keep for a snapshot's ``stable`` (:meth:`_PlanMixin._bloom_kept`):
    ``readers`` ``{column: {path: (file, reader)}}``, the filters' ``bytes`` and the
    ``generation`` of the held readers they were kept in."""

    __slots__ = ("generation", "readers", "bytes")

    def __init__(self, generation: int):
        self.generation, self.readers, self.bytes = generation, {}, 0


class _PlanMixin:
    """ParquetDataset's plan of a predicate (:meth:`plan`) and what it asks of a file's statistics and pages."""

    def _file_stats(self, f: DataFile, column: str):
        """The statistics of ``column`` in data file ``f``'s footer (None: none usable, or the
        footer not readable here)."""
        from ..io.parquet.footer import footer_for, cached
        from ..io.parquet.native import open_source
        from .stats import file_stats

        ident = getattr(f, "identity", None)
        if ident is not None and ident.ctime_ns is not None and ident.ino is not None:
            # the listing's version of the file: its footer, parsed before, found without opening it
            fo = cached((f.abs_path, ident.size, ident.mtime_ns, ident.ctime_ns, ident.ino))
            if fo is not None:
                try:
                    return file_stats(fo, column)
                except Exception:  # noqa: BLE001 - statistics only ever help
                    return None
        try:
            src, key, _, owned = open_source(_replaced.locate(self.store, self.root, f))
        except OSError:
            return None
        try:
            return file_stats(footer_for(src, key), column)
        except Exception:  # noqa: BLE001 - statistics only ever help: the index or the filter decides
            return None
        finally:
            if owned:
                src.close()

    def _pages_asked_for(self, f: DataFile, entry: Optional[dict], column: str) -> Optional[bool]:
        """:func:`_pages_asked` for ``f`` (its catalog ``entry``) as :meth:`plan` decides it."""
        trusted = bool(entry) and "stats" in entry and self._entry_matches(f, entry)
        indexed = self._index_current(f, entry, None)
        file_indexed = ((entry or {}).get("file_index") or {}).get("types") or {} if indexed else {}
        return _pages_asked(column, trusted, clustered_columns(entry) if trusted else (), file_indexed)

    def _page_answer(self, f: DataFile, leaf: Leaf, t: pa.DataType, sorted_only: bool = False):
        """The row ranges of ``f`` its page index keeps for ``leaf`` (None: no answer; with
        ``sorted_only``, none unless the file's footer says it is sorted by the column)."""
        from .pagestats import page_answer

        try:
            return page_answer(_replaced.locate(self.store, self.root, f), leaf.name, leaf, t, sorted_only)
        except Exception:  # noqa: BLE001 - statistics only ever help: the filter decides
            return None

    def _catalog_excluded(self, pred, files, entries, counts, part_types, data_types, prepared) -> frozenset:
        """The paths of ``files`` whose catalog statistics exclude ``pred`` (what the per-file
        ``evaluate_tree`` over the catalog's statistics says SKIP to), found with arrays of every
        file's statistics per column (kept while the listing and the catalog stay the same).  Only
        leaves on numeric columns are answered here; the plan still checks each file's identity
        before it takes the answer."""
        if pred is None or not files or _CATALOG_VECTORS is False:
            return frozenset()
        memo = self._memo.get("catalog-columns")
        stable = self._snap.stable  # (the same object for every snapshot of these files and catalog)
        if memo is None or memo[0] is not entries or (memo[3] is not stable and not _same_files(memo[1], files)):
            memo = self._memo["catalog-columns"] = (entries, list(files), {}, stable)
        cols = memo[2]

        def leaf(lf: Leaf):
            t = data_types.get(lf.name)
            if t is None or lf.name in part_types:
                return None
            col = cols.get(lf.name)
            if col is None:
                col = cols[lf.name] = stats_arrays(
                    [entry_stats(entries.get(f.path), lf.name, counts[f.path]) for f in files], stat_kind(t)
                )
            return leaf_skips(prepared(lf), col)

        mask = tree_skips(pred, leaf, len(files))
        return frozenset(files[i].path for i in np.flatnonzero(mask).tolist())

    def _bloom_kept(self, pred) -> Optional["_KeptBlooms"]:
        """What :meth:`_bloom_excluded` asks and :meth:`_keep_blooms` fills for ``pred``'s ``=`` and
        ``IN`` columns, kept for every snapshot of the same listing and catalog (the snapshot's
        ``stable``) while the held index readers are not cleared (``HELD_READERS.clear()`` drops
        these too, and with its ``max_bytes = 0`` none are kept); None: nothing to ask."""
        if pred is None or _BLOOM_VECTORS is False:
            return None
        held = self._held_readers()
        if held.max_bytes <= 0:
            return None
        cols = {lf.name for lf in pred.leaves() if lf.op in _BLOOM_OPS}
        if not cols:
            return None
        with _BLOOM_LOCK:
            kept = self._snap.stable.get("bloom-readers")
            if kept is None or kept.generation != held.generation:
                kept = self._snap.stable["bloom-readers"] = _KeptBlooms(held.generation)
            for c in cols:
                kept.readers.setdefault(c, {})
        return kept

    @staticmethod
    def _bloom_excluded(pred, files, kept: Optional["_KeptBlooms"]) -> frozenset:
        """The paths of ``files`` whose kept bloom filter readers (:meth:`_keep_blooms`) answer SKIP
        to ``pred`` (its ``=`` and ``IN`` leaves, combined as
        :func:`~paimon_fast.fileindex.evaluate_tree` does), asked of every file in one pass.  A bloom
        filter never drops a value it holds, so such a file has no row where the predicate holds,
        whatever its other indexes and statistics would say.  Files without a kept reader are
        planned one by one, as before: a point lookup's plan opened every file's index container in
        Python (about 0.1 ms a file), and now does so only the first time and for the files kept."""
        if kept is None or not files:
            return frozenset()

        def leaf(lf: Leaf):
            if lf.op not in _BLOOM_OPS:
                return None
            rds = kept.readers.get(lf.name)
            if not rds:
                return None
            out = np.zeros(len(files), dtype=bool)
            for i, f in enumerate(files):
                rd = rds.get(f.path)
                if rd is not None and rd[0] is f:
                    try:
                        out[i] = not rd[1].visit(lf).remain
                    except Exception:  # noqa: BLE001 - the file-by-file plan asks it again and reports
                        pass
            return out

        mask = tree_skips(pred, leaf, len(files))
        return frozenset(files[i].path for i in np.flatnonzero(mask).tolist())

    def _keep_blooms(self, f: DataFile, idx, kept: "_KeptBlooms") -> None:
        """After ``f``'s plan asked its index without an error: the bloom filter readers of the
        columns ``kept`` is for whose bits it read (and checked), kept for the next plans while
        :data:`BLOOM_KEEP_BYTES` allows.  Only for a file whose identity was judged once for the
        snapshot (a verdict that read the file's witness holds for one snapshot)."""
        for col, rds in kept.readers.items():
            rd = idx.loaded_reader(col, "bloom-filter")
            if rd is None or not rd.bits_loaded or f.path in rds:
                continue
            if not self._judged_once(f):
                return
            with _BLOOM_LOCK:
                n = len(rd.bits)
                if kept.bytes + n <= BLOOM_KEEP_BYTES:
                    kept.bytes += n
                    rds[f.path] = (f, rd)

    def _bound(self, predicate) -> Optional[Predicate]:
        """``predicate`` (a :class:`~paimon_fast.core.predicate.Predicate`, SQL text or None) parsed and
        bound to this dataset's schema: its literals made exact values of their columns' types
        (:func:`~paimon_fast.core.bind.bind`; a column the dataset lacks
        raises).  SQL text, or a predicate object, is bound once for every snapshot of the same
        files and catalog."""
        if predicate is None:
            return None
        from ..core.sqlpredicate import parse_predicate

        def make():
            return bind(parse_predicate(predicate), self.schema())

        if self._snap is None:
            return make()
        known = self._snap.stable.setdefault("bound", {})
        # SQL text by its value; a Predicate object by itself (hashing its tree costs more than
        # binding it), so one the caller bound is bound again for no later plan
        text = isinstance(predicate, str)
        key = predicate if text else id(predicate)
        got = known.get(key)
        if got is None or not (text or got[0] is predicate):
            if len(known) >= 256:
                known.clear()
            got = known[key] = (predicate, make())
        return got[1]

    def plan(self, predicate: Optional[Predicate], threads: Optional[int] = None) -> ScanPlan:
        """Evaluate every file's index (and partition values) against ``predicate``.

        Works on this dataset's snapshot (an unpinned dataset takes one now).  Index evaluation
        runs in a thread pool; a file whose index is missing, describes another version of the
        file (:mod:`paimon_fast.tables.identity`), fails its checksum or is unreadable is kept
        (REMAIN) and counted in the report, which says why (``report.unindexed``).  A file's plan
        is exact (its rows are not filtered again) only where every index that answered for it
        was verified: the file's strong identity is the one recorded and the index bytes read
        passed their checksums.  A file the catalog's statistics of its listed version exclude
        is settled first, before its index file is looked for (it counts as indexed if its entry
        names an index)."""
        if self._snap is None:
            return self.snapshot().plan(predicate, threads)
        t0 = time.perf_counter()
        b0 = self.io.snapshot()[0]
        cat = self.read_catalog()
        ensure_index_types(cat.get("file_index", {}).get("types", {}))
        entries = cat["files"]
        files = self.files()
        pred = self._bound(predicate)
        counts = self.row_counts()
        part_types = {f.name: f.type for f in self.partition_schema()}
        from .deletes import load_vectors

        vectors = load_vectors(self, cat)
        gi = GlobalAnswers(self, pred, counts, part_types) if pred is not None else None
        # the files' own statistics answer leaves first: the catalog's (no file opened: on every
        # store, whatever ``statistics`` says), then the footers' row groups and the page indexes'
        # pages (``statistics``; by default local files only: their footers are parsed once, cached)
        use_stats = self._uses_statistics() and pred is not None
        data_types = {fl.name: fl.type for fl in self.data_schema()} if pred is not None else {}

        def one(f: DataFile) -> FilePlan:
            if excluded and f.path in excluded:
                p = settle(f)
                if p is not None:
                    return p
            if bloomed and f.path in bloomed:  # its bloom filters answered SKIP (an index verified for it)
                p = FilePlan(f, SKIP, counts[f.path], True, None, None, True, None)
                p.deletion_vector = vectors.get(f.path)
                if p.deletion_vector is None:
                    quick.append(p)
                return p
            p = evaluate(f)
            dv = p.deletion_vector = vectors.get(f.path)
            if dv is None or p.skipped:
                return p
            if dv.cardinality >= p.rows:
                p.result = SKIP  # every row of the file is deleted
            elif p.bitmap is not None:
                kept = dv.remove_deleted(p.bitmap)
                p.result = BitmapResult(kept) if len(kept) else SKIP
            return p

        preps: dict = {}  # id(leaf) -> leaf_prepared of it (the predicate's leaves live as long)

        def prepared(leaf: Leaf):
            got = preps.get(id(leaf), preps)
            if got is preps:
                got = preps[id(leaf)] = leaf_prepared(leaf, data_types[leaf.name])
            return got

        def by_catalog(leaf: Leaf, entry: Optional[dict], rows: int, part: Mapping, trusted: bool):
            """``(answer or None, exact, the catalog's statistics of the leaf's column or None)``
            of a leaf from the file's partition values and (``trusted``: they describe its listed
            version) the catalog's statistics alone."""
            if leaf.name in part_types:
                res, is_exact = _partition_leaf(leaf, part.get(leaf.name), part_types[leaf.name])
                return res, is_exact, None
            cs = entry_stats(entry, leaf.name, rows) if trusted and leaf.name in data_types else None
            if cs is not None:
                said = leaf_answer(leaf, [cs], data_types[leaf.name], prepared(leaf))
                if said == "skip":
                    return SKIP, True, cs
                if said == "all":
                    return BitmapResult(range_bitmap(0, rows)), True, cs
            return None, True, cs

        # the files the catalog's statistics exclude for sure, found for all files at once (numeric
        # leaves; a file left out here is asked one by one below, as before)
        excluded = self._catalog_excluded(pred, files, entries, counts, part_types, data_types, prepared)
        # the files whose bloom filters, read by earlier plans, answer SKIP (point lookups)
        bloom_kept = self._bloom_kept(pred)
        bloomed = self._bloom_excluded(pred, files, bloom_kept)

        # what a file the catalog's statistics exclude is settled with, for every snapshot of the
        # same listing and catalog: ``(file, rows, indexed, why)``, or False when its catalog
        # entry may not answer for it (kept only for a verdict judged once per such snapshot)
        stable = self._snap.stable
        settled = stable.setdefault("settled", {}) if excluded else None

        def settle(f: DataFile) -> Optional[FilePlan]:
            """The plan of ``f`` (in ``excluded``) when its catalog entry describes its listed
            version (AND / OR only refine: a SKIP from fewer answers stays one), else None."""
            got = settled.get(f.path)
            if got is None or (got and got[0] is not f):
                entry = entries.get(f.path)
                verdict = self.trust(f, entry)
                if entry and "stats" in entry and _identity.usable(verdict):
                    fi = entry.get("file_index")
                    got = (f, counts[f.path], bool(fi), None if fi else "not indexed")
                else:
                    got = False
                if self._judged_once(f):
                    settled[f.path] = got
            if not got:
                return None
            p = FilePlan(f, SKIP, got[1], got[2], None, None, True, got[3])
            p.deletion_vector = vectors.get(f.path)
            if p.deletion_vector is None:
                quick.append(p)
            return p

        quick: list = []  # the plans settle() made of files without deleted rows (reported in bulk)

        def evaluate(f: DataFile) -> FilePlan:
            rows = counts[f.path]
            entry = entries.get(f.path)
            verdict = self.trust(f, entry)  # (judged once: every check below asks it)
            said_by_catalog = {}  # id(leaf) -> by_catalog's answer, asked once a leaf
            if pred is not None and entry and "stats" in entry and _identity.usable(verdict):
                part = dict(f.partition)

                def catalog_only(leaf: Leaf):
                    got = said_by_catalog[id(leaf)] = by_catalog(leaf, entry, rows, part, True)
                    return REMAIN if got[0] is None else got[0]

                if evaluate_tree(pred, catalog_only) is SKIP:
                    fi = entry.get("file_index")
                    return FilePlan(f, SKIP, rows, bool(fi), exact=True, why=None if fi else "not indexed")
            # an index over the file's current bytes answers correctly whatever options built it
            indexed = self._index_current(f, entry, None, verdict)
            why = None if indexed else self.why_unindexed(f, entry)
            if pred is None:
                return FilePlan(f, REMAIN, rows, indexed, exact=True, why=why)
            sure = indexed and self.verified(f, entry, verdict)  # its index answers may be taken as exact
            err = None
            opened = [False, None]  # the index, opened when a leaf first needs it
            exact = [True]  # every leaf visited was answered exactly
            part = dict(f.partition)
            stats = {}  # column -> the file's statistics of it (read on first need)
            # the catalog's statistics of the file, if they describe its listed version
            trusted = bool(entry) and "stats" in entry and _identity.usable(verdict)
            file_indexed = ((entry or {}).get("file_index") or {}).get("types") or {} if indexed else {}
            clustered = clustered_columns(entry) if trusted else ()
            one_group = trusted and entry.get("row_groups") == 1

            def index():
                nonlocal err
                if not opened[0]:
                    opened[0] = True
                    if indexed:
                        try:
                            opened[1] = self.open_index(f, entry, current=True)
                        except Exception as e:  # a broken index never fails a query: read the file
                            err = f"{type(e).__name__}: {e}"
                return opened[1]

            sure_leaves = set()  # id() of the leaves answered exactly (the residual leaves them out)
            last_exact = [False]  # was the leaf being visited answered exactly?

            def answered(res, is_exact):
                if not is_exact:
                    exact[0] = False
                last_exact[0] = is_exact
                return res

            def ask_index(leaf: Leaf):
                """``(answer, exact)`` of the file's index for ``leaf``, or None: no index, a NULL
                literal in a BSI / range-bitmap comparison (Java: NullPointerException; not a broken
                index: the file is read and the filter answers, no rows), or a failure (``err``: a
                broken index never fails a query)."""
                idx = index()
                if idx is None:
                    return None
                try:
                    return idx.visit_leaf_exact(leaf)
                except NullLiteralError:
                    return None
                except Exception as e:
                    nonlocal err
                    err = f"{type(e).__name__}: {e}"
                    return None

            def visit(leaf: Leaf):
                last_exact[0] = False
                res = visit_leaf(leaf)
                if last_exact[0]:
                    sure_leaves.add(id(leaf))
                return res

            def visit_leaf(leaf: Leaf):
                # (trusted: the catalog-only pass above asked the same of the same entry)
                got = said_by_catalog.get(id(leaf)) if trusted else None
                res, is_exact, cs = got if got is not None else by_catalog(leaf, entry, rows, part, trusted)
                if res is not None:
                    return answered(res, is_exact)
                # (a file of one row group: its footer's statistics are the catalog's)
                if use_stats and leaf.name in data_types and not (cs is not None and one_group):
                    if leaf.name not in stats:
                        stats[leaf.name] = self._file_stats(f, leaf.name)
                    said = leaf_answer(leaf, stats[leaf.name], data_types[leaf.name], prepared(leaf))
                    if said == "skip":
                        return answered(SKIP, True)
                    if said == "all":
                        return answered(BitmapResult(range_bitmap(0, rows)), True)
                    if isinstance(said, list):  # row groups wholly in, the others wholly out
                        return answered(BitmapResult.of_ranges(said), True)
                g = gi.result(leaf, f.path)
                if g is not None:
                    return answered(g, gi.exact(leaf))
                sorted_only = _pages_asked(leaf.name, trusted, clustered, file_indexed) if use_stats else None
                early = None  # the index's answer when asked before the pages (False: it gave none)
                if sorted_only is not None and leaf.name in data_types:
                    if (
                        leaf.name in file_indexed
                        and leaf.op in COMPARED_OPS
                        and pa.types.is_floating(data_types[leaf.name])
                    ):
                        # the pages of a floating-point comparison are never sure of their rows (NaN
                        # may be any row's value), so an index that answers exactly decides alone
                        early = ask_index(leaf) or False
                        if early and early[1]:
                            return answered(early[0], sure)
                    pages = self._page_answer(f, leaf, data_types[leaf.name], sorted_only)
                    if pages is not None:  # the pages that may hold the leaf
                        sure_pages = all(x for _, _, x in pages)
                        kept = sum(b - a for a, b, _ in pages)
                        if not pages:
                            return answered(SKIP, True)
                        # pages wholly in (or out): their rows are the answer.  A few pages that
                        # may hold the leaf (a clustered column's boundary): the column's index
                        # answers exactly if it can (one file's index, held between plans, costs less
                        # than reading and filtering the pages), else they are read and filtered;
                        # many pages: the index, if any, may answer exactly
                        few = kept * PAGES_BEFORE_INDEX <= rows if leaf.name in file_indexed else kept < rows
                        if sure_pages:
                            return answered(BitmapResult.of_ranges(pages), True)
                        if few:
                            said = None
                            if leaf.name in file_indexed:
                                said = ask_index(leaf) if early is None else early or None
                            if said is not None and said[1]:  # (exact as below: if verified)
                                return answered(said[0], sure)
                            return answered(BitmapResult.of_ranges(pages), False)
                said = ask_index(leaf) if early is None else early or None
                if said is None:
                    return answered(REMAIN, False)
                return answered(said[0], said[1] and sure)

            res = evaluate_tree(pred, visit)
            idx = opened[1]
            if idx is not None and bloom_kept and err is None:
                self._keep_blooms(f, idx, bloom_kept)
            if idx is not None:
                if isinstance(res, BitmapResult):
                    try:  # a lazy result (bitmap index) reads the index: materialise it before closing
                        res.bitmap
                    except Exception as e:
                        err = f"{type(e).__name__}: {e}"
                        res = REMAIN
                        exact[0] = False
                idx.close()
            if err is not None and "ChecksumMismatchError" in err:
                # damaged or foreign index bytes: nothing this index said is used for the file
                res, why = REMAIN, f"index checksum mismatch: {err.split(': ', 1)[-1]}"
                if gi.used:  # the global indexes' answers stand on their own
                    res = evaluate_tree(pred, lambda leaf: visit_without_file_index(leaf, f, part))
            fp = FilePlan(f, res, rows, indexed, err, exact=exact[0] and err is None, why=why)
            if not fp.exact and err is None and sure_leaves and not fp.skipped:
                rest = _residual(pred, sure_leaves)
                fp.residual = None if rest is None else (pred, rest)
            return fp

        def visit_without_file_index(leaf: Leaf, f: DataFile, part):
            if leaf.name in part_types:
                return _partition_leaf(leaf, part.get(leaf.name), part_types[leaf.name])[0]
            g = gi.result(leaf, f.path)
            return REMAIN if g is None else g

        n = len(files)
        from ..io.pool import threads as cores

        # locally the per-file work holds the GIL (threads only add hand-offs: one thread); on object
        # stores reads wait on the network, so up to 4 per core overlap their latency
        workers = threads or min(16, 4 * cores())
        if n > 1 and not self.store.local and workers > 1:
            from ..io.pool import map_on_pool

            plans = map_on_pool(one, files, workers)  # the process's threads: none started per plan
        else:
            plans = [one(f) for f in files]
        rep = ScanReport(files_total=n, predicate="" if pred is None else repr(pred))
        rep.catalog_version = self.snapshot_version
        if gi is not None:
            rep.global_index_used = sorted(gi.used)
            rep.global_index_stale = sorted(gi.stale)
            rep.index_errors += len(gi.errors)
        if quick:  # skipped, indexed or not, no error, no bitmap, no deletion vector
            seen = set(map(id, quick))
            rows = sum(p.rows for p in quick)
            rep.rows_total += rows
            rep.files_skipped += len(quick)
            rep.rows_skipped_by_file += rows
            for p in quick:
                if p.why is not None:
                    rep.files_without_index += 1
                    rep.unindexed[p.file.path] = p.why
            plans_left = [p for p in plans if id(p) not in seen]
        else:
            plans_left = plans
        for p in plans_left:
            rep.rows_total += p.rows
            dv = p.deletion_vector
            if dv is not None:
                rep.rows_deleted_total += dv.cardinality
                rep.files_all_deleted += dv.cardinality >= p.rows
                if not p.skipped and p.bitmap is None:
                    rep.rows_skipped_by_deletion += dv.cardinality
            rep.files_without_index += not p.indexed
            if p.why is not None:
                rep.unindexed[p.file.path] = p.why
            rep.index_errors += p.error is not None
            if p.skipped:
                rep.files_skipped += 1
                rep.rows_skipped_by_file += p.rows
            elif p.bitmap is not None:
                rep.files_with_bitmap += 1
                rep.rows_skipped_by_bitmap += p.rows - p.rows_to_read
        rep.eval_seconds = time.perf_counter() - t0
        rep.bytes_read = self.io.snapshot()[0] - b0
        plan = ScanPlan(plans, rep, pred)
        plan.dataset = self
        return plan


def _same_files(a: list, b: list) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


def _residual(pred: Predicate, sure: set) -> Optional[Predicate]:
    """What of ``pred`` a reader still has to test on a file's selected rows, when the leaves
    whose ``id()`` is in ``sure`` were answered exactly: the other children of a top-level AND (a
    leaf, itself or nothing).  None: all of ``pred`` (an OR, a NOT, or nothing left out)."""
    children = pred.children if isinstance(pred, And) else (pred,) if isinstance(pred, Leaf) else None
    if children is None:
        return None
    left = [c for c in children if not (isinstance(c, Leaf) and id(c) in sure)]
    if len(left) == len(children) or not left:
        return None  # (nothing left: the plan is exact, and readers do not filter)
    return left[0] if len(left) == 1 else And(tuple(left))


def _partition_leaf(leaf: Leaf, raw: Optional[str], t: pa.DataType) -> Tuple[FileIndexResult, bool]:
    """``(answer, exact)`` of a leaf on a partition column (the file has one value): REMAIN when
    every row holds, SKIP when none does; ``exact`` False when the value could not be compared
    (REMAIN: the rows are read and filtered)."""
    arr = pa.array([raw], pa.string()).cast(t)
    tab = pa.table({leaf.name: arr})
    try:
        keep = tab.filter(to_arrow_expression(leaf, tab.schema)).num_rows > 0
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, TypeError):
        return REMAIN, False
    return (REMAIN if keep else SKIP), True


def _pages_asked(column: str, trusted: bool, clustered, file_indexed) -> Optional[bool]:
    """Whether a plan asks a file's page index about ``column``: None (it does not), else its
    ``sorted_only`` (the pages answer only when the footer says the file is sorted by the column).

    Pages narrow a column the file is clustered by (an optimize wrote it: the catalog says so,
    ``trusted`` and ``clustered``) and one it is sorted by (the footer says so); of the others every
    page spans about the file's range.  A file no optimize wrote (no trusted catalog statistics)
    has its pages asked for a column without a file index (``file_indexed``: nothing else narrows
    it), for an indexed column only when the footer says the file is sorted by it."""
    if trusted and column not in clustered:
        return None
    return column not in clustered and column in file_indexed
