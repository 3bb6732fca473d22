"""The range bitmap reader: :class:`RangeBitmapReader` answering predicates and top-k over the
bit slices, its chunked dictionary (fixed-length or string keys, :mod:`.dictionary`) opened
lazily."""

from __future__ import annotations

import math
import struct

import numpy as np
from pyroaring import BitMap

from ...io import memory as _memory
from ...errors import IndexFormatError
from ...core.predicate import TopN
from ...core.result import BitmapResult
from ..base import COMPARISON_OPS, FileIndexReader
from .._bitslice import (
    BLOCK_WORDS,
    _k,
    from_bitmap,
    nwords,
    positions_bitmap,
    range_bitmap,
    to_bitmap,
    topk_candidate_words,
)
from .dictionary import (
    _codec,
    _consecutive_offsets,
    _FixedDictionary,
    _Region,
    _StringDictionary,
)
from .keys import INDEX_TYPE, VERSION


class RangeBitmapReader(FileIndexReader):
    """Answers predicates and top-k from a serialized range bitmap.

    Opening parses the header only; the dictionary and the slices are read on
    first use.  Every answer is a :class:`BitmapResult` (built lazily, as Java).
    """

    # a bitmap per dictionary code range: comparisons are answered exactly
    exact_ops = COMPARISON_OPS
    index_type = INDEX_TYPE

    def __init__(self, dtype, source, options):
        super().__init__(dtype, source, options)
        self.codec = _codec(dtype)
        base = getattr(source, "base", 0)
        self._base = base
        (hl,) = struct.unpack(">i", bytes(source.read_at(0, 4, "range bitmap header length")))
        if hl < 13:
            raise IndexFormatError(f"range bitmap header length {hl} too small", base)
        h = bytes(source.read_at(4, hl, "range bitmap header"))
        if h[0] > VERSION:
            raise IndexFormatError(f"range bitmap version {h[0]} not supported", base + 4)
        self.row_count, self.cardinality = struct.unpack_from(">ii", h, 1)
        if self.row_count < 0:
            raise IndexFormatError(f"range bitmap row count {self.row_count} is negative", base + 5)
        p = 9
        self.min = self.max = None
        # the header is exactly version, counts, the min / max keys and the dictionary length:
        # keys of another width than this type's mean the index was written for another type
        fixed_hl = 13 + (2 * self.codec.size if self.cardinality > 0 else 0)
        if not self.codec.is_string and hl != fixed_hl:
            self._wrong_type(hl, base)
        if self.cardinality > 0:
            if self.cardinality > self.row_count:
                raise IndexFormatError("range bitmap cardinality exceeds its row count", base + 9)
            self.min, p = self._header_key(h, p)
            self.max, p = self._header_key(h, p)
        if p + 4 > len(h):
            raise IndexFormatError("range bitmap header truncated (dictionary length)", base + 4 + p)
        if p + 4 != len(h):
            self._wrong_type(hl, base)
        (dl,) = struct.unpack_from(">i", h, p)
        self._dict_at = 4 + hl
        self._bsi_at = self._dict_at + dl
        if dl < 0 or self._bsi_at > source.size:
            raise IndexFormatError(f"range bitmap dictionary length {dl} out of bounds", base + 4 + p)
        self._dictionary = None
        self._ebm = None
        self._slices = None
        self._summary = None

    def answers_exactly(self, leaf) -> bool:
        """As :meth:`FileIndexReader.answers_exactly`, and on FLOAT / DOUBLE too where Java's order
        of the keys (NaN above every number, -0.0 below 0.0) cannot matter: literals finite and not
        zero, and for ``>``, ``>=`` no NaN key in the index (its largest key is a number)."""
        if getattr(self.dtype, "root", None) not in ("FLOAT", "DOUBLE"):
            return super().answers_exactly(leaf)
        if leaf.op not in self.exact_ops:
            return False
        if leaf.op in ("is_null", "is_not_null"):
            return True
        try:
            lits = [float(v) for v in leaf.literals]
        except (TypeError, ValueError):
            return False
        if not lits or any(math.isnan(v) or math.isinf(v) or v == 0.0 for v in lits):
            return False
        if leaf.op in ("greater_than", "greater_or_equal"):
            if self.max is None:
                return True  # no key: no row but nulls
            top = self.codec.value_of(self.max)
            return isinstance(top, float) and not math.isnan(top)
        return True

    def _wrong_type(self, hl, base):
        want = "length-prefixed strings" if self.codec.is_string else f"{self.codec.size} bytes each"
        raise IndexFormatError(
            f"range bitmap header's min / max keys fill {hl - 13} bytes, which is not two "
            f"{self.dtype} keys ({want}): the index was written for another column type",
            base,
        )

    def _header_key(self, h, p):
        if self.codec.is_string:
            if p + 4 > len(h):
                raise IndexFormatError("range bitmap header truncated (key length)", self._base + 4 + p)
            (ln,) = struct.unpack_from(">i", h, p)
            if ln < 0 or p + 4 + ln > len(h):
                raise IndexFormatError(f"range bitmap header key length {ln} out of bounds", self._base + 4 + p)
            return h[p + 4 : p + 4 + ln], p + 4 + ln
        ks = self.codec.size
        if p + ks > len(h):
            raise IndexFormatError("range bitmap header truncated (min/max)", self._base + 4 + p)
        return self.codec.sort_key_from_file(h[p : p + ks]), p + ks

    # --- lazy parts
    @property
    def dictionary(self):
        if self._dictionary is None:
            self._dictionary = self._load_dictionary()
        return self._dictionary

    def _load_dictionary(self):
        # the dictionary's header and chunk table are read now, its keys a chunk at a time
        base = self._base + self._dict_at
        end = self._bsi_at - self._dict_at
        if end < 4:
            raise IndexFormatError("range bitmap dictionary truncated", base)
        (hl,) = struct.unpack(">i", bytes(self.source.read_at(self._dict_at, 4, "range bitmap dictionary")))
        if hl < 13 or 4 + hl > end:
            raise IndexFormatError(f"range bitmap dictionary header length {hl} out of bounds", base)
        (nc,) = struct.unpack(">i", bytes(self.source.read_at(self._dict_at + 5, 4, "range bitmap dictionary")))
        (cl,) = struct.unpack(">i", bytes(self.source.read_at(self._dict_at + 13, 4, "range bitmap dictionary")))
        head = 4 + hl + 4 * max(nc, 0) + max(cl, 0)  # the header, chunk offsets and chunk headers
        region = _Region(self.source, self._dict_at, end, min(end, head))
        d = region.head
        p = 0
        if len(d) < min(end, head):
            raise IndexFormatError("range bitmap dictionary truncated", base)
        if hl < 13 or p + 4 + hl > end:
            raise IndexFormatError(f"range bitmap dictionary header length {hl} out of bounds", base + p)
        if d[p + 4] > 1:
            raise IndexFormatError("range bitmap dictionary version > 1", base + p + 4)
        nchunks, olen, clen = struct.unpack_from(">iii", d, p + 5)
        body = p + 4 + hl
        if nchunks < 0 or olen != 4 * nchunks or clen < 0 or body + olen + clen > min(end, len(d)):
            raise IndexFormatError("range bitmap dictionary chunk table out of bounds", base + p + 5)
        chunks_at = body + olen
        keys_at = chunks_at + clen
        card = max(self.cardinality, 0)
        if self.codec.is_string:
            offsets = np.frombuffer(d, dtype=">i4", count=nchunks, offset=body).astype(np.int64)
            return _StringDictionary(d, base, nchunks, offsets, chunks_at, clen, keys_at, end, card, region)
        hs = 1 + self.codec.size + 20
        if clen != nchunks * hs or d[body : body + olen].tobytes() != _consecutive_offsets(nchunks, hs):
            raise IndexFormatError("range bitmap dictionary chunk offsets are not consecutive", base + body)
        return _FixedDictionary(self.codec, d, base, nchunks, chunks_at, keys_at, end, card, region)

    def _load_ebm(self):
        """The slices' header and the existence bitmap (the rows with a value); the slices are
        decoded only when a comparison needs them (:meth:`_load_bsi`): a key past the index's
        min / max is answered by the existence bitmap alone."""
        if self._ebm is not None:
            return
        # the slices' part of the index, read whole (a comparison reads every slice)
        d = np.frombuffer(
            self.source.read_at(self._bsi_at, self.source.size - self._bsi_at, "range bitmap slices"), np.uint8
        )
        base = self._base + self._bsi_at
        self._bsi_bytes = d  # (the slices read in place are views of it)
        p = 0
        if d.size - p < 4:
            raise IndexFormatError("range bitmap slices truncated", base + p)
        (hl,) = struct.unpack_from(">i", d, p)
        if hl < 10 or p + 4 + hl > d.size:
            raise IndexFormatError(f"range bitmap slice header length {hl} out of bounds", base + p)
        if d[p + 4] > 1:
            raise IndexFormatError("range bitmap slice index version > 1", base + p + 4)
        S = int(d[p + 5])
        want_s = max((self.cardinality - 1).bit_length(), 1) if self.cardinality > 0 else 64
        if S != want_s:
            raise IndexFormatError(
                f"range bitmap has {S} slices, its cardinality {self.cardinality} needs {want_s}", base + p + 5
            )
        ebm_len, idx_len = struct.unpack_from(">ii", d, p + 6)
        if idx_len != 8 * S or 10 + idx_len > hl:
            raise IndexFormatError(
                f"range bitmap slice index table length {idx_len} does not match {S} slices", base + p + 10
            )
        body = p + 4 + hl
        if ebm_len < 0 or body + ebm_len > d.size:
            raise IndexFormatError(f"range bitmap existence bitmap length {ebm_len} out of bounds", base + p + 6)
        # dense arrays cover the rows up to the last non-null one (never the
        # claimed row count, which the data cannot vouch for)
        _, _, last = _k.check_last(d, body, body + ebm_len, base)
        if last >= self.row_count:
            raise IndexFormatError(
                f"range bitmap existence bitmap holds row {last} beyond its {self.row_count} rows", base + body
            )
        n = last + 1
        self._nbits = n
        ebm = _memory.zeros(nwords(n), np.uint64)
        _k.decode_fast(d, body, body + ebm_len, ebm, n, base)
        self._slice_table = (p + 14, S, body + ebm_len, base)
        self._ebm = ebm

    def _load_bsi(self):
        self._load_ebm()
        if self._slices is not None:
            return
        d, n = self._bsi_bytes, self._nbits
        at0, S, sbase, base = self._slice_table
        W = nwords(n)
        slices = []
        # one kernel call reads and bounds-checks the slice table, one decodes the slices that
        # cannot be read in place, into one allocation (one page-fault run, not one per slice)
        layout = _k.slice_layout(d, at0, S, sbase, W, base)
        views = layout[:, 2].tolist()
        rows = _memory.array((sum(1 for view in views if view < 0), W), np.uint64)  # (every word is written)
        _k.decode_slices(d, layout, rows, n, base)
        k = 0
        for view in views:
            if view >= 0:
                # dense slice: read the container words in place (every answer is
                # masked by the existence bitmap, so nothing beyond it leaks)
                slices.append(d[view : view + 8 * W])
            else:
                slices.append(rows[k])
                k += 1
        self._slices = slices

    @property
    def ebm(self) -> np.ndarray:
        """Dense words of the non-null rows."""
        self._load_ebm()
        return self._ebm

    @property
    def slices(self) -> list:
        """Slice rows: uint64 word arrays, or uint8 views of the index bytes for
        dense slices read in place (bits beyond the existence bitmap are
        meaningless there; every answer is masked with :attr:`ebm`)."""
        self._load_bsi()
        return self._slices

    def slice_words(self, i: int) -> np.ndarray:
        """Slice i as an aligned uint64 array masked to the non-null rows."""
        row = self.slices[i]
        if row.dtype == np.uint8:
            row = np.frombuffer(row.tobytes(), dtype="<u8").astype(np.uint64)
        return row & self.ebm

    # --- dense answers (words over row_count rows)
    def _empty(self):
        self._load_ebm()
        return np.zeros(nwords(self._nbits), np.uint64)

    def _cmp(self, op, code):
        return _k.compare(self.slices, self.ebm, op, code)

    def _plan_eq(self, key):
        if self.cardinality <= 0:
            return ("none",)
        if key < self.min or key > self.max:
            return ("none",)
        if key == self.min == self.max:
            return ("all",)
        found, code = self.dictionary.find(key)
        return ("cmp", "eq", code) if found else ("none",)

    def _plan_gte(self, key):
        if self.cardinality <= 0:
            return ("none",)
        if key <= self.min:
            return ("all",)
        if key > self.max:
            return ("none",)
        _, code = self.dictionary.find(key)
        return ("cmp", "gte", code)

    def _plan_gt(self, key):
        if self.cardinality <= 0:
            return ("none",)
        if key < self.min:
            return ("all",)
        if key >= self.max:
            return ("none",)
        found, code = self.dictionary.find(key)
        return ("cmp", "gt" if found else "gte", code)

    def _plan_lte(self, key):
        if self.cardinality <= 0:
            return ("none",)
        if key >= self.max:
            return ("all",)
        if key < self.min:
            return ("none",)
        found, code = self.dictionary.find(key)
        return ("cmp", "lte" if found else "lt", code)

    def _plan_lt(self, key):
        if self.cardinality <= 0:
            return ("none",)
        if key > self.max:
            return ("all",)
        if key <= self.min:
            return ("none",)
        _, code = self.dictionary.find(key)
        return ("cmp", "lt", code)

    def _plan_between(self, lo, hi):
        # lo <= value <= hi in one kernel pass (Java: gte(lo) AND lte(hi))
        if self.cardinality <= 0 or lo > hi or lo > self.max or hi < self.min:
            return ("none",)
        if lo <= self.min:
            lc = 0
        else:
            _, lc = self.dictionary.find(lo)
        if hi >= self.max:
            hc = self.cardinality - 1
        else:
            found, hc = self.dictionary.find(hi)
            if not found:
                hc -= 1
        if hc < lc:
            return ("none",)
        if lc == 0 and hc == self.cardinality - 1:
            return ("all",)
        return ("between", lc, hc)

    # An answer is planned first (min / max short-circuits, dictionary lookup),
    # then computed either as dense words (to combine) or straight into a
    # BitMap by the fused compare -> roaring kernel.
    def _words(self, plan):
        kind = plan[0]
        if kind == "none":
            return self._empty()
        if kind == "all":
            return self.ebm.copy()
        if kind == "cmp":
            return _k.compare(self.slices, self.ebm, plan[1], plan[2])
        return _k.between(self.slices, self.ebm, plan[1], plan[2])

    def _bitmap(self, plan) -> BitMap:
        kind = plan[0]
        if kind == "none":
            return BitMap()
        if kind == "all":
            return to_bitmap(self.ebm)
        if kind == "cmp":
            return BitMap.deserialize(_k.compare_bytes(self.slices, self.ebm, plan[1], plan[2]))
        return BitMap.deserialize(_k.compare_bytes(self.slices, self.ebm, "gte", plan[1], plan[2]))

    def eq_words(self, key):
        """Dense words of the rows equal to ``key`` (a sort key)."""
        return self._words(self._plan_eq(key))

    def gte_words(self, key):
        return self._words(self._plan_gte(key))

    def gt_words(self, key):
        return self._words(self._plan_gt(key))

    def lte_words(self, key):
        return self._words(self._plan_lte(key))

    def lt_words(self, key):
        return self._words(self._plan_lt(key))

    def between_words(self, lo, hi):
        """``lo <= value <= hi`` (Java: gte(lo) AND lte(hi))."""
        return self._words(self._plan_between(lo, hi))

    def in_words(self, keys):
        if self.cardinality <= 0:
            return self._empty()
        out = self._empty()
        for key in keys:
            out |= self.eq_words(key)
        return out

    def not_words(self, words):
        if self.cardinality <= 0:
            return self._empty()
        return self.ebm & ~words

    def null_bitmap(self, found: BitMap | None = None) -> BitMap:
        """Rows in [0, row count) without a value (restricted to ``found``)."""
        bm = range_bitmap(0, self.row_count)
        if self.cardinality > 0:
            bm -= to_bitmap(self.ebm)
        return bm if found is None else bm & found

    # --- literal helpers
    def _lit(self, v):
        return self.codec.literal(v)

    def _lits(self, vs):
        if self.cardinality <= 0:
            return None
        return [self._lit(v) for v in vs]

    def _result(self, fn):
        return BitmapResult(thunk=lambda: to_bitmap(fn()))

    @staticmethod
    def _nothing():
        return BitmapResult(BitMap())

    # --- visitor (Java's Reader)
    def visit_is_null(self, leaf):
        return BitmapResult(thunk=self.null_bitmap)

    def visit_is_not_null(self, leaf):
        if self.cardinality <= 0:
            return self._nothing()
        return self._result(lambda: self.ebm)

    def _value_op(self, fn, v):
        if self.cardinality <= 0:
            return self._nothing()
        key = self._lit(v)
        return self._result(lambda: fn(key))

    def _planned(self, plan_fn, v):
        if self.cardinality <= 0:
            return self._nothing()
        key = self._lit(v)
        return BitmapResult(thunk=lambda: self._bitmap(plan_fn(key)))

    def visit_equal(self, leaf):
        return self._planned(self._plan_eq, leaf.literal)

    def visit_not_equal(self, leaf):
        return self._value_op(lambda k: self.not_words(self.eq_words(k)), leaf.literal)

    def visit_less_than(self, leaf):
        return self._planned(self._plan_lt, leaf.literal)

    def visit_less_or_equal(self, leaf):
        return self._planned(self._plan_lte, leaf.literal)

    def visit_greater_than(self, leaf):
        return self._planned(self._plan_gt, leaf.literal)

    def visit_greater_or_equal(self, leaf):
        return self._planned(self._plan_gte, leaf.literal)

    def visit_between(self, leaf):
        if self.cardinality <= 0:
            return self._nothing()
        lo, hi = self._lit(leaf.literals[0]), self._lit(leaf.literals[1])
        return BitmapResult(thunk=lambda: self._bitmap(self._plan_between(lo, hi)))

    def visit_in(self, leaf):
        keys = self._lits(leaf.literals)
        if keys is None:
            return self._nothing()
        return self._result(lambda: self.in_words(keys))

    def visit_not_in(self, leaf):
        keys = self._lits(leaf.literals)
        if keys is None:
            return self._nothing()
        return self._result(lambda: self.not_words(self.in_words(keys)))

    # --- top-k
    def _fill_nulls(self, k, nulls_first, found_set, largest, strict) -> BitMap:
        if k < 0:
            raise ValueError(f"k must be >= 0, got {k}")
        if self.cardinality <= 0:
            return range_bitmap(0, self.row_count)
        found = None if found_set is None else from_bitmap(found_set, self._nbits_loaded())
        found_empty = found_set is not None and len(found_set) == 0

        def topk(kk):
            if kk == 0 or found_empty:
                return BitMap()
            if found is None:
                words = topk_candidate_words(*self.block_summary(), kk, largest, len(self.ebm))
                return positions_bitmap(_k.topk_positions(self.slices, self.ebm, kk, largest, strict, words))
            return positions_bitmap(_k.topk_positions(self.slices, self.ebm & found, kk, largest, strict))

        def nulls():
            return BitMap() if found_empty else self.null_bitmap(found_set)

        if not nulls_first:
            bm = topk(k)
            c = len(bm)
            if c >= k:
                return bm
            nb = nulls()
            return bm | (nb[: k - c] if strict else nb)
        bm = nulls()
        c = len(bm)
        if c >= k:
            return bm[:k] if strict else bm
        return bm | topk(k - c)

    def block_summary(self):
        """Per 256-row block the largest / smallest dictionary code (cached):
        lets top-k / bottom-k without a found set visit only the blocks that
        can hold answers."""
        if self._summary is None:
            self._summary = _k.block_maxmin(self.slices, self.ebm, BLOCK_WORDS)
        return self._summary

    def _nbits_loaded(self):
        self._load_ebm()
        return self._nbits

    def top_k(self, k: int, nulls_first: bool = False, found_set: BitMap | None = None, strict: bool = True) -> BitMap:
        """Rows of ``ORDER BY col DESC LIMIT k`` as Java's ``RangeBitmap.topK``.

        Ties at the k-th value are all kept unless ``strict`` (then the lowest
        row ids of the tie group are dropped to return exactly k rows); nulls
        fill up to k rows (NULLS LAST) or come first (NULLS FIRST); with
        ``found_set`` only those rows are considered.  A column without any
        non-null value returns every row (Java quirk).
        """
        return self._fill_nulls(k, nulls_first, found_set, True, strict)

    def bottom_k(
        self, k: int, nulls_first: bool = False, found_set: BitMap | None = None, strict: bool = True
    ) -> BitMap:
        """Rows of ``ORDER BY col ASC LIMIT k`` (see :meth:`top_k`)."""
        return self._fill_nulls(k, nulls_first, found_set, False, strict)

    def visit_top_n(self, topn: TopN, result=None) -> BitmapResult:
        """Java's ``visitTopN``: a BitmapResult ``result`` restricts the rows."""
        found = result.bitmap if isinstance(result, BitmapResult) else None
        fn = self.top_k if topn.descending else self.bottom_k
        return BitmapResult(thunk=lambda: fn(topn.k, topn.nulls_first, found, topn.strict))

    # --- inspection
    def get(self, row: int):
        """The value of a row (None for null or out of range)."""
        if row < 0 or row >= self.row_count or self.cardinality <= 0 or row >= self._nbits_loaded():
            return None
        w, b = row >> 6, row & 63
        if not (int(self.ebm[w]) >> b) & 1:
            return None
        code = 0
        for i, row in enumerate(self.slices):
            word = int(row[w]) if row.dtype != np.uint8 else int.from_bytes(bytes(row[8 * w : 8 * w + 8]), "little")
            if (word >> b) & 1:
                code |= 1 << i
        if code >= self.cardinality:
            raise IndexFormatError(f"row {row} has code {code} beyond the dictionary", None)
        return self.codec.value_of(self.dictionary.key_at(code))

    def describe(self):
        d = super().describe()
        d.update(
            row_count=self.row_count,
            cardinality=self.cardinality,
            min=None if self.min is None else self.codec.value_of(self.min),
            max=None if self.max is None else self.codec.value_of(self.max),
            dictionary_bytes=self._bsi_at - self._dict_at,
            dictionary_chunks=self.dictionary.chunks,
            slices=len(self.slices),
            non_null_rows=int(_k.popcount(self.ebm)),
            slice_bytes=self.source.size - self._bsi_at,
        )
        return d
