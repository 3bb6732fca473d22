"""The many-file global index over ``bitmap`` files of one column (:class:`GlobalIndex`):
files pruned by their ``SortedIndexFileMeta`` before any is opened, the rest answering in
threads, their row ids unioned; with what it shares with the other kinds (the key codecs
and literal types per type, the files of an index).  The other kinds and the one-file
readers build on it in :mod:`.index`, which hands these names on."""

from __future__ import annotations

import struct
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
from pyroaring import BitMap64

from ..fileindex.options import Options
from ..core.literals import is_never, normalize_leaf, widen_to_keys
from ..core.predicate import ARRAY_OPS, And, Leaf, Or, Predicate
from ..core.result import UNSUPPORTED
from . import btree as _bt
from .format import DEFAULT_FALLBACK, OPT_FALLBACK, BitmapIndexFile
from .keys import KeyCodec
from .like import like_key_predicate, like_optimize
from .meta import SortedIndexFileMeta

import numpy as np
from .._kernels import load as _load

_kg = _load("globalindex")

_CODECS = {}
_NO_OPTIONS = Options({})  # read-only: shared by every index given no options
_DEFAULT_FALLBACK_BYTES = _NO_OPTIONS.get_memory_size(OPT_FALLBACK, DEFAULT_FALLBACK)
_BT_DEFAULT_FALLBACK_BYTES = _NO_OPTIONS.get_memory_size(_bt.OPT_FALLBACK, _bt.DEFAULT_FALLBACK)
_STRING_ID = pa.string().id
# integer Arrow types: the literals an equality may take as they are (normalisation keeps them)
_INT_BOUNDS = {
    t.id: (-(1 << (t.bit_width - 1)), (1 << (t.bit_width - 1)) - 1)
    for t in (pa.int8(), pa.int16(), pa.int32(), pa.int64())
}
_ARROW_TYPES = {}  # type string -> its Arrow type (None: has none), for literal normalisation


def _arrow_type(codec: KeyCodec, array: bool = False):
    """The Arrow type literals are normalised to (``list<T>`` when ``array``), cached per type
    (and on the codec itself: a cold reader looks it up once, and codecs are shared)."""
    mine = codec.__dict__.setdefault("_arrow_types", {})
    try:
        return mine[array]
    except KeyError:
        pass
    key = (str(codec.dtype), array)
    try:
        at = mine[array] = _ARROW_TYPES[key]
        return at
    except KeyError:
        pass
    try:
        at = codec.dtype.to_arrow()
        if array:
            at = pa.list_(at)
    except Exception:
        at = None
    if len(_ARROW_TYPES) < 1024:
        _ARROW_TYPES[key] = at
    mine[array] = at
    return at


def _codec_for(dtype) -> KeyCodec:
    """KeyCodec per type string, cached (parsing a type costs more than a cold lookup)."""
    if isinstance(dtype, KeyCodec):
        return dtype
    key = str(dtype)
    c = _CODECS.get(key)
    if c is None:
        c = KeyCodec(dtype)
        if len(_CODECS) < 1024:
            _CODECS[key] = c
    return c


class _File:
    """A file of a GlobalIndex: where it is, its metadata, and its reader once opened."""

    __slots__ = ("where", "meta", "_size", "_reader")

    def __init__(self, where, meta):
        self.where = where
        self.meta = None if meta is None else SortedIndexFileMeta.deserialize(meta)
        self._size = None
        self._reader = None

    @property
    def size(self) -> int:
        if self._size is None:
            if self._reader is not None:
                self._size = self._reader.size
            elif isinstance(self.where, (bytes, bytearray, memoryview)):
                self._size = len(self.where)
            elif hasattr(self.where, "read_at"):  # a Source (e.g. a lazily opened remote file)
                self._size = self.where.size
            else:
                import os

                self._size = os.path.getsize(self.where)
        return self._size


class GlobalIndex:
    """Many bitmap global index files of one column, each with its ``SortedIndexFileMeta``.

    ``files`` is a list of ``(bytes | path, meta)`` (meta: bytes, a
    SortedIndexFileMeta or None = unknown, never pruned).  :meth:`evaluate`
    prunes by metadata before opening any file, evaluates the remaining files in
    parallel and unions their row ids.
    """

    _fallback_option = OPT_FALLBACK  # the option limiting scans, and its default in bytes
    _fallback_default = _DEFAULT_FALLBACK_BYTES

    def __init__(self, files, dtype, options=None, total_row_count=None, max_workers=None):
        self.codec = _codec_for(dtype)
        self.dtype = self.codec.dtype
        if not options:  # the usual case: no options, the defaults
            self.options, self.fallback_max = _NO_OPTIONS, self._fallback_default
        else:
            self.options = options if isinstance(options, Options) else Options(options)
            fb = self.options.get(self._fallback_option)
            self.fallback_max = (
                self._fallback_default if fb is None else self.options.get_memory_size(self._fallback_option, fb)
            )
        if total_row_count is not None and total_row_count < 0:
            raise ValueError(f"total row count must be non-negative, got {total_row_count}")
        self.total_row_count = total_row_count
        self.files = [_File(w, m) for w, m in files]
        for f in self.files:  # the metas' keys tell a file written for another type before it is read
            if f.meta is not None:
                self.codec.check_key_lengths(
                    [len(k) for k in (f.meta.first_key, f.meta.last_key) if k is not None], "global index file metadata"
                )
        self.max_workers = max_workers
        self._arrow_t = False  # the Arrow type literals are normalised to, once looked up

    # ------------------------------------------------------------ plumbing
    def _open(self, f: _File) -> BitmapIndexFile:
        if f._reader is None:
            f._reader = BitmapIndexFile(self.codec, f.where)
        return f._reader

    def open_all(self):
        return [self._open(f) for f in self.files]

    def close(self):
        for f in self.files:
            if f._reader is not None:
                f._reader.close()
                f._reader = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _run(self, selected, fn):
        """Union of ``fn(reader)`` over the selected files (in parallel when several)."""
        if not selected:
            return BitMap64()
        if len(selected) == 1:
            return fn(self._open(selected[0]))
        with ThreadPoolExecutor(max_workers=self.max_workers or min(8, len(selected))) as ex:
            parts = list(ex.map(lambda f: fn(self._open(f)), selected))
        out = parts[0]
        for p in parts[1:]:
            out = out | p
        return out

    def _fallback(self, pred, fn):
        """A scan limited by the fallback size (Java's order): the files are selected by their
        metadata with ``pred`` first, an empty selection is no row, and only then is the selected
        files' total size held against ``*-index.fallback-scan-max-size`` (over it: UNSUPPORTED).
        A file given without metadata is selected by the metadata it holds itself
        (:meth:`_own_meta`) before it can push the total over the limit."""
        if self.fallback_max <= 0:
            return UNSUPPORTED
        selected = self._select(pred)
        if not selected:
            return BitMap64()
        if self._total_size(selected) > self.fallback_max:
            unknown = [f for f in selected if f.meta is None]
            for f in unknown:
                f.meta = self._own_meta(f)
            if unknown:
                selected = self._select(pred)
                if not selected:
                    return BitMap64()
            if self._total_size(selected) > self.fallback_max:
                return UNSUPPORTED
        return self._run(selected, fn)

    def _total_size(self, files) -> int:
        total = 0
        for f in files:
            total += f.size
            if total > self.fallback_max:
                break
        return total

    def _own_meta(self, f: _File):
        """The metadata a file without any holds itself, or None where its kind cannot say."""
        return None

    def _universe(self):
        if self.total_row_count is not None:
            u = getattr(self, "_universe_bm", None)
            if u is None:
                u = BitMap64()
                if self.total_row_count:
                    u.add_range(0, self.total_row_count)
                self._universe_bm = u
            return u
        return self._run(self.files, lambda r: r.null_rows() | r.nonnull_rows())

    def _complement(self, *excluded):
        out = self._universe()
        for e in excluded:
            if e is UNSUPPORTED:
                return UNSUPPORTED
            out = out - e
        return out

    # ------------------------------------------------------------ metadata pruning
    def _cmp(self, a: bytes, b: bytes) -> int:
        return self.codec.compare(a, b)

    def _select(self, pred):
        return [f for f in self.files if f.meta is None or pred(f.meta)]

    def _not_only_nulls(self, m):
        return not m.only_nulls

    def _overlaps(self, m, lo: bytes, hi: bytes) -> bool:
        if m.only_nulls:
            return False
        if m.first_key is not None and self._cmp(hi, m.first_key) < 0:
            return False
        if m.last_key is not None and self._cmp(lo, m.last_key) > 0:
            return False
        return True

    def _first_cmp(self, m, key):
        return -1 if m.first_key is None else self._cmp(m.first_key, key)

    def _last_cmp(self, m, key):
        return 1 if m.last_key is None else self._cmp(m.last_key, key)

    # ------------------------------------------------------------ evaluation
    def evaluate(self, predicate: Predicate):
        """Row ids (pyroaring ``BitMap64``) that may match, or :data:`UNSUPPORTED`.

        AND skips unsupported children (they only narrow nothing); OR of anything
        with an unsupported child is unsupported."""
        if isinstance(predicate, Leaf):
            return self.visit(predicate)
        if isinstance(predicate, And):
            out = UNSUPPORTED
            for c in predicate.children:
                r = self.evaluate(c)
                if r is UNSUPPORTED:
                    continue
                out = r if out is UNSUPPORTED else out & r
            return out
        if isinstance(predicate, Or):
            out = None
            for c in predicate.children:
                r = self.evaluate(c)
                if r is UNSUPPORTED:
                    return UNSUPPORTED
                out = r if out is None else out | r
            return out if out is not None else UNSUPPORTED
        raise TypeError(f"not a predicate: {predicate!r}")

    def _key(self, v) -> bytes:
        try:
            return self.codec.literal_bytes(v)
        except (OverflowError, ValueError, TypeError, ArithmeticError) as e:
            raise ValueError(f"literal {v!r} cannot be a {self.dtype} key: {e}") from None

    #: ops whose row ids are exactly the rows where the leaf holds (see :meth:`answers_exactly`)
    exact_ops = frozenset({"equal", "in", "is_null", "is_not_null"})

    def answers_exactly(self, leaf: Leaf) -> bool:
        """Are this index's row ids for ``leaf`` exactly the rows where it holds (one bitmap of
        row ids per key), not a superset?  Not for FLOAT / DOUBLE (keys ordered as Java's, NaN
        and -0.0 included) nor for keys coarser than the values (TIMESTAMP(7..9), TIME(4..9))."""
        if leaf.op not in self.exact_ops:
            return False
        d = self.dtype
        root = getattr(d, "root", None)
        if root in ("FLOAT", "DOUBLE"):
            return False
        if root in ("TIME", "TIMESTAMP", "TIMESTAMP_LTZ") and (d.precision or 0) > (3 if root == "TIME" else 6):
            return False
        return True

    def visit(self, leaf: Leaf):
        """Row ids for one leaf; literals are first normalised to the column type
        (:func:`paimon_fast.core.literals.normalize_leaf`: ``x = 5.5`` on INT is no row)."""
        at = self._arrow_t
        if at is False:
            at = self._arrow_t = _arrow_type(self.codec)
        norm = normalize_leaf(leaf, at, ieee=False)
        if at is not None and pa.types.is_time(at) and at.unit in ("us", "ns"):
            # TIME(4..9) keys are millis of the day (as Java's): no row whose value matches is dropped
            norm = widen_to_keys(norm, 1000)
        if norm is not leaf:
            if is_never(norm):
                return BitMap64()
            return self.evaluate(norm) if not isinstance(norm, Leaf) else self._visit(norm)
        return self._visit(leaf)

    def _visit(self, leaf: Leaf):
        op = leaf.op
        if op in ARRAY_OPS:
            return UNSUPPORTED
        fn = getattr(self, "_v_" + op, None)
        if fn is None:
            return UNSUPPORTED
        try:
            return fn(*leaf.literals)
        except struct.error as e:
            raise ValueError(f"literal of {leaf!r} does not fit type {self.dtype}: {e}") from None

    def _v_is_null(self):
        return self._run(self._select(lambda m: m.has_nulls), lambda r: r.null_rows())

    def _v_is_not_null(self):
        return self._complement(self._v_is_null())

    def _v_equal(self, v):
        if v is None:
            return BitMap64()
        key = self._key(v)
        return self._run(self._select(lambda m: self._overlaps(m, key, key)), lambda r: r.equal(key))

    def _v_not_equal(self, v):
        if v is None:
            return BitMap64()
        return self._complement(self._v_is_null(), self._v_equal(v))

    def _v_in(self, *vs):
        keys = [self._key(v) for v in vs if v is not None]
        sel = self._select(lambda m: any(self._overlaps(m, k, k) for k in keys))
        return self._run(sel, lambda r: r.isin(keys))

    def _v_not_in(self, *vs):
        if any(v is None for v in vs):
            return BitMap64()
        return self._complement(self._v_is_null(), self._v_in(*vs))

    def _range(self, v, sel, ops):
        if v is None or self.fallback_max <= 0:
            return UNSUPPORTED
        key = self._key(v)
        return self._fallback(lambda m: sel(m, key), lambda r: r.compare_scan(key, ops))

    def _v_less_than(self, v):
        return self._range(v, lambda m, k: not m.only_nulls and self._first_cmp(m, k) < 0, lambda c: c < 0)

    def _v_less_or_equal(self, v):
        return self._range(v, lambda m, k: not m.only_nulls and self._first_cmp(m, k) <= 0, lambda c: c <= 0)

    def _v_greater_than(self, v):
        return self._range(v, lambda m, k: not m.only_nulls and self._last_cmp(m, k) > 0, lambda c: c > 0)

    def _v_greater_or_equal(self, v):
        return self._range(v, lambda m, k: not m.only_nulls and self._last_cmp(m, k) >= 0, lambda c: c >= 0)

    def _v_between(self, a, b):
        if a is None or self.fallback_max <= 0 or b is None:
            return UNSUPPORTED
        ka, kb = self._key(a), self._key(b)
        if self._cmp(ka, kb) > 0:
            return BitMap64()
        lits = np.frombuffer(ka, np.uint8), np.frombuffer(kb, np.uint8)

        def scan(r):
            of = r.index()[3]
            return r.scan(
                lambda u8, ks, kl, i: (
                    (_kg.compare_to(r.kind, u8, ks, kl, lits[0], int(of[i])) >= 0)
                    & (_kg.compare_to(r.kind, u8, ks, kl, lits[1], int(of[i])) <= 0)
                )
            )

        return self._fallback(lambda m: self._overlaps(m, ka, kb), scan)

    def _v_not_between(self, a, b):
        if a is None or self.fallback_max <= 0 or b is None:
            return UNSUPPORTED
        ka, kb = self._key(a), self._key(b)
        sel = lambda m: not m.only_nulls and (self._first_cmp(m, ka) < 0 or self._last_cmp(m, kb) > 0)  # noqa: E731
        return self._fallback(sel, lambda r: r.compare_scan(ka, lambda c: c < 0) | r.compare_scan(kb, lambda c: c > 0))

    # string predicates --------------------------------------------------------
    def _v_starts_with(self, v):
        if not self.codec.is_string or v is None:
            return UNSUPPORTED
        prefix = self._key(v)
        if not prefix:
            return self._run(self._select(self._not_only_nulls), lambda r: r.starts_with(b""))
        upper = _prefix_upper(prefix)
        sel = self._select(
            lambda m: (
                not m.only_nulls and self._last_cmp(m, prefix) >= 0 and (upper is None or self._first_cmp(m, upper) < 0)
            )
        )
        return self._run(sel, lambda r: r.starts_with(prefix))

    def _string_fallback(self, v, fn):
        if self.fallback_max <= 0 or not self.codec.is_string or v is None:
            return UNSUPPORTED
        return self._fallback(self._not_only_nulls, fn)

    def _v_ends_with(self, v):
        pat = self._key(v) if v is not None else None
        return self._string_fallback(v, lambda r: r.nonnull_rows() if not pat else r.bytes_scan(1, pat))

    def _v_contains(self, v):
        pat = self._key(v) if v is not None else None
        return self._string_fallback(v, lambda r: r.nonnull_rows() if not pat else r.bytes_scan(2, pat))

    def _v_like(self, v):
        if not self.codec.is_string or v is None:
            return UNSUPPORTED
        pattern = v.decode("utf-8", "surrogatepass") if isinstance(v, (bytes, bytearray)) else str(v)
        opt = like_optimize(pattern)
        if opt is not None:
            op, lit = opt
            return getattr(self, "_v_" + op)(lit)
        return self._like_scan(pattern)

    def _like_scan(self, pattern: str):
        """A LIKE pattern that is no prefix, equality or range: the keys scanned with it."""
        pred = like_key_predicate(pattern)
        return self._string_fallback(pattern, lambda r: r.key_scan(pred))


def _prefix_upper(prefix: bytes):
    for i in range(len(prefix) - 1, -1, -1):
        if prefix[i] != 0xFF:
            return prefix[:i] + bytes((prefix[i] + 1,))
    return None
