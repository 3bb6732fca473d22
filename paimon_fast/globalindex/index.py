"""Answering predicates with global index files.

:class:`GlobalIndex` is many ``bitmap`` files of one column, each with its
``SortedIndexFileMeta``: files are pruned by their metadata before any is opened,
the rest answer in threads and their row ids are unioned (see the package's
docstring for the rules).  :class:`MultiValueGlobalIndex` is the same over
``multivalue`` files of an ``ARRAY`` column; :class:`BitmapGlobalIndexReader` and
:class:`MultiValueGlobalIndexReader` read one file.

:class:`GlobalIndex` and what the kinds share are in :mod:`.manyfiles`; this module holds
the other kinds (BTree, multivalue) and the one-file readers, and hands those names on at
their old path.
"""

from __future__ import annotations

import struct
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from pyroaring import BitMap64

from ..core.literals import is_never, normalize_leaf
from ..core.predicate import ARRAY_OPS, Leaf, Predicate
from ..core.result import UNSUPPORTED
from . import btree as _bt
from .format import element_type
from .keys import KeyCodec
from .meta import SortedIndexFileMeta
from .manyfiles import (  # noqa: F401  (handed on at their old path)
    _ARROW_TYPES,
    _BT_DEFAULT_FALLBACK_BYTES,
    _CODECS,
    _DEFAULT_FALLBACK_BYTES,
    _INT_BOUNDS,
    _NO_OPTIONS,
    _STRING_ID,
    GlobalIndex,
    _arrow_type,
    _codec_for,
    _File,
    _prefix_upper,
)


class _OneFile:
    """What the one-file readers share (mixed into a :class:`GlobalIndex` kind over one file
    without metadata: never pruned): the file read at open, its footer and description, and
    ``=`` asked of the file directly."""

    def __init__(self, dtype, data_or_path, options=None, total_row_count=None):
        super().__init__([(data_or_path, None)], dtype, options, total_row_count)
        self.file = self._open(self.files[0])  # reads the footer only

    @property
    def footer(self):
        return self.file.footer

    def describe(self) -> dict:
        return self.file.describe()

    def _v_equal(self, v):
        # one file without metadata is never pruned: skip the selection and threading plumbing
        return BitMap64() if v is None else self.file.equal(self._key(v))

    def evaluate(self, predicate: Predicate):
        # ``x = 'str'`` on a string column and ``x = 42`` on an integer one, the commonest point
        # lookups: normalisation keeps such a leaf as it is (an integer inside the column's
        # range), so the key is the literal's own and the file answers directly
        if type(predicate) is Leaf and predicate.op == "equal":
            lits = predicate.literals
            if len(lits) == 1:
                lit = lits[0]
                tl = type(lit)
                if tl is str or tl is int:
                    at = self._arrow_t
                    if at is False:
                        at = self._arrow_t = _arrow_type(self.codec)
                    if at is not None:
                        if tl is str:
                            if at.id == _STRING_ID and self.codec.is_string:
                                return self.file.equal(lit.encode("utf-8", "surrogatepass"))
                        else:
                            b = _INT_BOUNDS.get(at.id)
                            if b is not None and b[0] <= lit <= b[1]:
                                return self.file.equal(self._key(lit))
        return super().evaluate(predicate)


class BitmapGlobalIndexReader(_OneFile, GlobalIndex):
    """A :class:`GlobalIndex` over one file (no metadata: never pruned)."""


class BTreeGlobalIndex(GlobalIndex):
    """Many BTree global index files of one column, each with its ``SortedIndexFileMeta``
    (Java's ``LazyFilteredBTreeReader``): files are pruned by their metadata as for the
    bitmap index, then each selected file answers with its SST blocks.

    ``=`` / ``IN`` read one data block per key; ``<``, ``<=``, ``>``, ``>=``, ``BETWEEN`` and
    ``NOT BETWEEN`` are range scans (refused, as Java does, past
    ``btree-index.fallback-scan-max-size``, default 256 mb; ``0 b`` refuses them all);
    ``starts_with`` and ``LIKE 'abc%'`` are a prefix range (never refused); other ``LIKE``
    patterns, ``ends_with`` and ``contains`` answer every non-null row (Java's superset, within
    the same limit); ``!=`` / ``NOT IN`` / ``IS NOT NULL`` are complements as for bitmap.
    :meth:`top_n` is Java's ``visitTopN``."""

    _fallback_option = _bt.OPT_FALLBACK
    _fallback_default = _BT_DEFAULT_FALLBACK_BYTES

    def _open(self, f: _File):
        if f._reader is None:
            f._reader = _bt.BTreeIndexFile(self.codec, f.where)
        return f._reader

    def _own_meta(self, f: _File):
        # what Java's writer returns for the file (SortedIndexFileMeta): its first and last
        # non-null keys and whether it holds a null, read from the index block, the first data
        # block and the footer
        r = self._open(f)
        return SortedIndexFileMeta(r.first_key(), r.last_key(), r.footer.has_nulls)

    def _scan(self, v, sel, bounds):
        """A range scan: ``bounds(key) -> (lo, hi, flags)`` over the files ``sel(meta, key)`` keeps."""
        if v is None or self.fallback_max <= 0:
            return UNSUPPORTED
        key = self._key(v)
        lo, hi, flags = bounds(key)
        return self._fallback(lambda m: sel(m, key), lambda r: r.range_rows(lo, hi, flags))

    def _v_less_than(self, v):
        return self._scan(v, lambda m, k: not m.only_nulls and self._first_cmp(m, k) < 0, lambda k: (None, k, 0))

    def _v_less_or_equal(self, v):
        return self._scan(
            v, lambda m, k: not m.only_nulls and self._first_cmp(m, k) <= 0, lambda k: (None, k, _bt.HI_INCLUSIVE)
        )

    def _v_greater_than(self, v):
        return self._scan(v, lambda m, k: not m.only_nulls and self._last_cmp(m, k) > 0, lambda k: (k, None, 0))

    def _v_greater_or_equal(self, v):
        return self._scan(
            v, lambda m, k: not m.only_nulls and self._last_cmp(m, k) >= 0, lambda k: (k, None, _bt.LO_INCLUSIVE)
        )

    def _v_between(self, a, b):
        if a is None or self.fallback_max <= 0 or b is None:
            return UNSUPPORTED
        ka, kb = self._key(a), self._key(b)
        if self._cmp(ka, kb) > 0:
            return BitMap64()
        both = _bt.LO_INCLUSIVE | _bt.HI_INCLUSIVE
        return self._fallback(lambda m: self._overlaps(m, ka, kb), lambda r: r.range_rows(ka, kb, both))

    def _v_not_between(self, a, b):
        if a is None or self.fallback_max <= 0 or b is None:
            return UNSUPPORTED
        ka, kb = self._key(a), self._key(b)
        sel = lambda m: not m.only_nulls and (self._first_cmp(m, ka) < 0 or self._last_cmp(m, kb) > 0)  # noqa: E731
        return self._fallback(sel, lambda r: r.range_rows(None, ka, 0) | r.range_rows(kb, None, 0))

    def _v_starts_with(self, v):
        if not self.codec.is_string or v is None:
            return UNSUPPORTED
        prefix = self._key(v)
        if not prefix:
            return self._run(self._select(self._not_only_nulls), lambda r: r.nonnull_rows())
        upper = _prefix_upper(prefix)
        sel = self._select(
            lambda m: (
                not m.only_nulls and self._last_cmp(m, prefix) >= 0 and (upper is None or self._first_cmp(m, upper) < 0)
            )
        )
        return self._run(sel, lambda r: r.range_rows(prefix, upper, _bt.LO_INCLUSIVE))

    def _v_ends_with(self, v):
        return self._string_fallback(v, lambda r: r.nonnull_rows())

    def _v_contains(self, v):
        return self._string_fallback(v, lambda r: r.nonnull_rows())

    def _like_scan(self, pattern: str):
        return self._string_fallback(pattern, lambda r: r.nonnull_rows())

    # ------------------------------------------------------------ top-N
    def top_n(self, limit: int, desc: bool = False, nulls_first: bool = False):
        """Java's ``visitTopN`` over every file (one sort key, ``limit`` >= 0): ``(row ids,
        groups)`` where ``groups`` is the ordered ``[(key bytes or None, row ids)]`` of Java's
        ``TopNGlobalIndexResult``: each file's first ``limit`` rows (nulls first or last as
        asked, then keys ascending or descending), merged across files (equal keys' row ids
        united, ascending) and cut to ``limit`` rows."""
        if limit < 0:
            raise ValueError("top-N limit must not be negative")
        if limit == 0 or not self.files:
            return BitMap64(), []
        got = self._map(self.files, lambda r: r.top_n(limit, desc, nulls_first))
        groups = [g for part in got for g in part]
        return merge_top_n(groups, self.codec, limit, desc, nulls_first)

    def _map(self, selected, fn):
        if len(selected) == 1:
            return [fn(self._open(selected[0]))]
        with ThreadPoolExecutor(max_workers=self.max_workers or min(8, len(selected))) as ex:
            return list(ex.map(lambda f: fn(self._open(f)), selected))


def merge_top_n(groups, codec: KeyCodec, limit: int, desc: bool, nulls_first: bool):
    """Java's ``TopNGlobalIndexResult`` of key groups ``[(key bytes or None, row ids)]``: sorted
    (stably) by key in the asked direction with nulls first or last, equal keys' row ids united
    (ascending), the first ``limit`` row ids kept.  Returns ``(BitMap64, groups)``."""
    import functools

    def cmp(a, b):
        ka, kb = a[0], b[0]
        if ka is None and kb is None:
            return 0
        if ka is None:
            return -1 if nulls_first else 1
        if kb is None:
            return 1 if nulls_first else -1
        c = codec.compare(ka, kb)
        return -c if desc else c

    srt = sorted(groups, key=functools.cmp_to_key(cmp))
    out, rows = [], BitMap64()
    remaining, i = limit, 0
    while remaining > 0 and i < len(srt):
        same = BitMap64(np.asarray(srt[i][1], dtype=np.uint64).tolist())
        key = srt[i][0]
        j = i + 1
        while j < len(srt) and cmp(srt[i], srt[j]) == 0:
            same.update(np.asarray(srt[j][1], dtype=np.uint64).tolist())
            j += 1
        take = np.asarray(same.to_array(), dtype=np.uint64)[:remaining]
        if len(take):
            out.append((key, take))
            rows.update(take.tolist())
            remaining -= len(take)
        i = j
    return rows, out


class BTreeGlobalIndexReader(_OneFile, BTreeGlobalIndex):
    """A :class:`BTreeGlobalIndex` over one file given without its metadata: it answers as Java's
    public reader does with the metadata Java's writer stores for the file.  A range or
    ``LIKE`` scan over a file larger than ``btree-index.fallback-scan-max-size`` first selects
    the file by the first and last keys and nulls it holds (an empty selection is no row) and only
    then refuses the scan."""


class MultiValueGlobalIndex(GlobalIndex):
    """Many ``multivalue`` global index files of one ARRAY column (Java's
    ``MultiValueBitmapIndexReader``): ``array_contains(c, x)`` the rows whose array holds x
    (none for a null x); ``arrays_overlap(c, [..])`` the union (null literals ignored, an empty
    list: no rows); ``array_contains_all(c, [..])`` the intersection (no rows if any literal
    is null; an empty list is not answered).  Every other predicate is
    :data:`paimon_fast.UNSUPPORTED` (the rows are read and filtered).  Files are pruned by
    their metadata (first / last element) as the bitmap index's are.
    """

    def __init__(self, files, dtype, options=None, total_row_count=None, max_workers=None):
        self.array_dtype = str(dtype)
        super().__init__(files, element_type(dtype), options, total_row_count, max_workers)

    def visit(self, leaf: Leaf):
        if leaf.op in ARRAY_OPS:  # literals as exact element values (5.5 is in no ARRAY<INT>)
            at = self._arrow_t
            if at is False:
                at = self._arrow_t = _arrow_type(self.codec, True)
            norm = normalize_leaf(leaf, at, ieee=False)
            if is_never(norm):
                return BitMap64()
            leaf = norm
        op = leaf.op
        try:
            if op == "array_contains":
                return self._v_equal(leaf.literal)
            if op == "arrays_overlap":
                return self._v_in(*leaf.literals)
            if op == "array_contains_all":
                return self._contains_all(leaf.literals)
        except struct.error as e:
            raise ValueError(f"literal of {leaf!r} does not fit type {self.dtype}: {e}") from None
        return UNSUPPORTED

    def _contains_all(self, literals):
        if not literals:
            return UNSUPPORTED
        if any(v is None for v in literals):
            return BitMap64()
        keys = list(dict.fromkeys(self._key(v) for v in literals))
        out = None
        for key in keys:
            r = self._run(self._select(lambda m: self._overlaps(m, key, key)), lambda rd: rd.equal(key))
            out = r if out is None else out & r
            if not out:
                break
        return out


class MultiValueGlobalIndexReader(MultiValueGlobalIndex):
    """A :class:`MultiValueGlobalIndex` over one file (no metadata: never pruned)."""

    def __init__(self, dtype, data_or_path, options=None, total_row_count=None):
        super().__init__([(data_or_path, None)], dtype, options, total_row_count)
        self.file = self._open(self.files[0])  # reads the footer only

    @property
    def footer(self):
        return self.file.footer

    def describe(self) -> dict:
        d = self.file.describe()
        d.update(format="multivalue global index", type=self.array_dtype)
        return d
