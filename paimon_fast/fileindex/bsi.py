"""Bit-slice index file index (``bsi``), byte-compatible with Paimon's
``BitSliceIndexBitmapFileIndex`` / ``BitSliceIndexRoaringBitmap``
(FORMAT_NOTES.md section 10; deprecated in Paimon but still on disk)::

    u8 version=1 | i32 row count
    u8 has positive | [BSI of the values >= 0]
    u8 has negative | [BSI of |v| for the values < 0]
    BSI: u8 version=1 | i64 min (always 0) | i64 max | existence bitmap
         | i32 slices S = bitLength(max) | S slice bitmaps

Values are Java longs: TINYINT..BIGINT, DATE (days), TIME (millis),
TIMESTAMP / TIMESTAMP_LTZ (millis when precision <= 3, else micros), DECIMAL
(unscaled).  Long.MIN_VALUE cannot be stored (Java fails too).

Answers are exact row bitmaps over the non-null rows (``!=`` / ``NOT IN``
exclude nulls); a null literal raises :class:`NullLiteralError` (Java:
NullPointerException); a Long.MIN_VALUE literal is special-cased as in Java.
Comparisons run as O'Neil-Quass over dense words (Cython kernel).
"""

from __future__ import annotations

import struct

import numpy as np
from pyroaring import BitMap

from ..io import memory as _memory
from ..errors import IndexFormatError, UnsupportedTypeError
from ..core.types import DataType, decimal_unscaled, long_keys, to_arrow_array, validity_mask
from .base import COMPARISON_OPS, FileIndexReader, FileIndexWriter
from .registry import IndexFactory, register
from ._bitslice import NullLiteralError, _k, nwords, range_bitmap, read_roaring_dense, to_bitmap
from ..core.result import BitmapResult

INDEX_TYPE = "bsi"
VERSION = 1
LONG_MIN = -(1 << 63)

_SUPPORTED = {"TINYINT", "SMALLINT", "INT", "BIGINT", "DATE", "TIME", "TIMESTAMP", "TIMESTAMP_LTZ", "DECIMAL"}

__all__ = ["BsiWriter", "BsiReader", "NullLiteralError", "long_values"]


def check_type(dtype: DataType) -> None:
    if dtype.root not in _SUPPORTED:
        raise UnsupportedTypeError(f"{dtype} type is not support to build bsi index yet (as Java Paimon).")


def long_values(values, dtype: DataType):
    """``(int64 values, valid mask or None)`` as Java's BSI value mapper."""
    arr = to_arrow_array(values, dtype)
    valid = validity_mask(arr)
    if dtype.root == "DECIMAL":
        v = decimal_unscaled(arr)
    else:
        v = long_keys(arr, dtype)
    return np.asarray(v, dtype=np.int64), valid


_RANGES = {"TINYINT": 8, "SMALLINT": 16, "INT": 32, "DATE": 32}


def _value_range(dtype: DataType):
    """``(lo, hi)`` of the longs a column of ``dtype`` can store in a BSI (None: any long)."""
    bits = _RANGES.get(dtype.root)
    if bits is not None:
        return -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if dtype.root == "TIME":
        return 0, 86_399_999
    if dtype.root == "DECIMAL" and dtype.precision is not None and dtype.precision <= 18:
        return -(10**dtype.precision - 1), 10**dtype.precision - 1
    return None


class BsiWriter(FileIndexWriter):
    """Collects the column and serializes it as Java's BSI writer does.

    Batches are kept as the narrowest integer view of the values plus Arrow's
    validity bit map (copied only when they may alias a caller's numpy
    array); :meth:`finish` builds both parts' slices and their Java-exact
    roaring bytes in one Cython pass (``bitslice.bsi_build``)."""

    index_type = INDEX_TYPE

    def __init__(self, dtype, options):
        super().__init__(dtype, options)
        check_type(dtype)
        self._batches = []

    def write_batch(self, values):
        arr = to_arrow_array(values, self.dtype)
        v = decimal_unscaled(arr) if self.dtype.root == "DECIMAL" else long_keys(arr, self.dtype)
        v = np.ascontiguousarray(v)
        if v.dtype.kind != "i":
            v = v.astype(np.int64)
        elif isinstance(values, np.ndarray) and np.may_share_memory(v, values):
            v = v.copy()  # the caller may change its array before finish()
        bits = None
        if arr.null_count:
            bits = np.frombuffer(arr.buffers()[0], dtype=np.uint8)
            if isinstance(values, np.ndarray) and np.may_share_memory(bits, values):
                bits = bits.copy()
        self._batches.append((v, bits, arr.offset))
        self.row_count += len(v)

    def finish(self) -> bytes:
        if len(self._batches) == 1:
            v, bits, off = self._batches[0]
        elif not self._batches:
            v, bits, off = np.zeros(0, np.int64), None, 0
        else:
            v = np.concatenate([b[0].astype(np.int64, copy=False) for b in self._batches])
            bits, off = None, 0
            if any(b[1] is not None for b in self._batches):
                valid = np.concatenate(
                    [
                        np.ones(len(b[0]), bool)
                        if b[1] is None
                        else np.unpackbits(b[1], bitorder="little", count=b[2] + len(b[0]))[b[2] :].view(bool)
                        for b in self._batches
                    ]
                )
                bits = np.packbits(valid, bitorder="little")
        return _k.bsi_build(v, bits, off)


class _Part:
    """One parsed BitSliceIndexRoaringBitmap as dense words."""

    def __init__(self, nbits, mn=0, mx=0, ebm=None, slices=None):
        self.min = mn
        self.max = mx
        self.ebm = np.zeros(nwords(nbits), np.uint64) if ebm is None else ebm
        self.slices = np.zeros((0, nwords(nbits)), np.uint64) if slices is None else slices

    def compare(self, op, v):
        """Java's compare(): min/max short-circuits, then O'Neil over all slices."""
        mn, mx = self.min, self.max
        if op == "eq":
            if mn == mx == v:
                return self.ebm.copy()
            if v < mn or v > mx:
                return np.zeros_like(self.ebm)
        elif op == "gte":
            if v <= mn:
                return self.ebm.copy()
            if v > mx:
                return np.zeros_like(self.ebm)
        elif op == "gt":
            if v < mn:
                return self.ebm.copy()
            if v >= mx:
                return np.zeros_like(self.ebm)
        elif op == "lte":
            if v >= mx:
                return self.ebm.copy()
            if v < mn:
                return np.zeros_like(self.ebm)
        elif op == "lt":
            if v > mx:
                return self.ebm.copy()
            if v <= mn:
                return np.zeros_like(self.ebm)
        p = v - mn
        if p < 0 or p >= 1 << 64:  # cannot happen after the short-circuits of a sane file
            return np.zeros_like(self.ebm)
        return _k.compare(self.slices, self.ebm, op, p)


class BsiReader(FileIndexReader):
    """Parses the whole (small) payload on first use into dense words."""

    # bit slices of every value: comparisons are answered exactly
    exact_ops = COMPARISON_OPS
    index_type = INDEX_TYPE

    def __init__(self, dtype, source, options):
        super().__init__(dtype, source, options)
        check_type(dtype)
        self._base = getattr(source, "base", 0)
        head = bytes(source.read_at(0, 5, "bsi header"))
        if head[0] > VERSION:
            raise IndexFormatError(f"bsi version {head[0]} not supported", self._base)
        (self.row_count,) = struct.unpack_from(">i", head, 1)
        if self.row_count < 0:
            raise IndexFormatError(f"bsi row count {self.row_count} is negative", self._base + 1)
        self._pos = self._neg = None

    def _load(self):
        if self._pos is not None:
            return
        d = np.frombuffer(self.source.read_at(0, self.source.size, "bsi"), dtype=np.uint8)
        base = self._base
        # pass 1: validate every bitmap and find the last non-null row, so the
        # dense arrays never follow an unchecked row count
        p = 5
        layout = []
        ends_at = {}  # part -> where its last slice ends
        last = -1
        for which in ("positive", "negative"):
            if p + 1 > d.size:
                raise IndexFormatError(f"bsi truncated (has {which} flag)", base + p)
            flag = d[p]
            p += 1
            if not flag:
                layout.append(None)
                continue
            if p + 17 > d.size:
                raise IndexFormatError(f"bsi {which} header truncated", base + p)
            if d[p] > 1:
                raise IndexFormatError(f"bsi {which} version {d[p]} not supported", base + p)
            mn, mx = struct.unpack_from(">qq", d, p + 1)
            p += 17
            ebm_at = p
            size, _, l = _k.check_last(d, p, -1, base)
            last = max(last, l)
            p += size
            if p + 4 > d.size:
                raise IndexFormatError(f"bsi {which} slice count truncated", base + p)
            (S,) = struct.unpack_from(">i", d, p)
            if not 0 <= S <= 64:
                raise IndexFormatError(f"bsi {which} slice count {S} out of range [0, 64]", base + p)
            p += 4
            at = []
            for _ in range(S):
                size, _, _ = _k.check_last(d, p, -1, base)
                at.append(p)
                p += size
            ends_at[which] = p
            layout.append((mn, mx, ebm_at, at))
        if last >= self.row_count:
            raise IndexFormatError(f"bsi existence bitmap holds row {last} beyond its {self.row_count} rows", base)
        self._check_range(layout)
        n = self._nbits = last + 1
        parts = []
        for which, lay in zip(("positive", "negative"), layout):
            if lay is None:
                parts.append(_Part(n))
                continue
            mn, mx, ebm_at, at = lay
            ebm, _, _ = read_roaring_dense(d, ebm_at, -1, n, base, f"bsi {which} existence bitmap")
            # the slices, checked above, decoded in one kernel call into memory it writes whole
            slices = _memory.array((len(at), nwords(n)), np.uint64)
            ends = at[1:] + [ends_at[which]]
            layout = np.array([[q, e - q, -1] for q, e in zip(at, ends)], np.int64).reshape(-1, 3)
            _k.decode_slices(d, layout, slices, n, base)
            parts.append(_Part(n, mn, mx, ebm, slices))
        self._pos, self._neg = parts

    def _check_range(self, layout):
        """The format stores every type as longs; values outside the asked type's range
        mean the index was written for another (wider) column type."""
        rng = _value_range(self.dtype)
        if rng is None:
            return
        lo, hi = rng
        top = layout[0][1] if layout[0] is not None else None
        bottom = -layout[1][1] if layout[1] is not None else None
        if (top is not None and top > hi) or (bottom is not None and bottom < lo):
            held = " and ".join(f"{w} {v}" for w, v in (("down to", bottom), ("up to", top)) if v is not None)
            raise IndexFormatError(
                f"bsi holds values {held}, outside the range [{lo}, {hi}] of {self.dtype}: "
                "the index was written for another column type",
                self._base,
            )

    @property
    def positive(self) -> _Part:
        self._load()
        return self._pos

    @property
    def negative(self) -> _Part:
        self._load()
        return self._neg

    # --- dense answers
    def not_null_words(self):
        return self.positive.ebm | self.negative.ebm

    def _lit(self, v):
        if v is None:
            raise NullLiteralError("null literal in a BSI comparison (Java: NullPointerException)")
        if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
            return int(v)
        vals, _ = long_values([v], self.dtype)
        return int(vals[0])

    def _zeros(self):
        self._load()
        return np.zeros(nwords(self._nbits), np.uint64)

    def eq_words(self, v):
        if v == LONG_MIN:
            return self._zeros()
        return self.negative.compare("eq", -v) if v < 0 else self.positive.compare("eq", v)

    def in_words(self, vs):
        out = self._zeros()
        for v in vs:
            out |= self.eq_words(v)
        return out

    def lt_words(self, v):
        if v == LONG_MIN:
            return self._zeros()
        if v < 0:
            return self.negative.compare("gt", -v)
        return self.positive.compare("lt", v) | self.negative.ebm

    def lte_words(self, v):
        if v == LONG_MIN:
            return self._zeros()
        if v < 0:
            return self.negative.compare("gte", -v)
        return self.positive.compare("lte", v) | self.negative.ebm

    def gt_words(self, v):
        if v == LONG_MIN:
            return self.not_null_words()
        if v < 0:
            return self.positive.ebm | self.negative.compare("lt", -v)
        return self.positive.compare("gt", v)

    def gte_words(self, v):
        if v == LONG_MIN:
            return self.not_null_words()
        if v < 0:
            return self.positive.ebm | self.negative.compare("lte", -v)
        return self.positive.compare("gte", v)

    # --- visitor
    def _result(self, fn):
        return BitmapResult(thunk=lambda: to_bitmap(fn()))

    def visit_is_null(self, leaf):
        return BitmapResult(thunk=lambda: range_bitmap(0, self.row_count) - to_bitmap(self.not_null_words()))

    def visit_is_not_null(self, leaf):
        return self._result(self.not_null_words)

    def visit_in(self, leaf):
        vs = [self._lit(v) for v in leaf.literals]
        return self._result(lambda: self.in_words(vs))

    def visit_not_in(self, leaf):
        vs = [self._lit(v) for v in leaf.literals]
        return self._result(lambda: self.not_null_words() & ~self.in_words(vs))

    def visit_equal(self, leaf):
        return self.visit_in(leaf)

    def visit_not_equal(self, leaf):
        return self.visit_not_in(leaf)

    def visit_less_than(self, leaf):
        v = self._lit(leaf.literal)
        return self._result(lambda: self.lt_words(v))

    def visit_less_or_equal(self, leaf):
        v = self._lit(leaf.literal)
        return self._result(lambda: self.lte_words(v))

    def visit_greater_than(self, leaf):
        v = self._lit(leaf.literal)
        return self._result(lambda: self.gt_words(v))

    def visit_greater_or_equal(self, leaf):
        v = self._lit(leaf.literal)
        return self._result(lambda: self.gte_words(v))

    def visit_between(self, leaf):
        lo, hi = self._lit(leaf.literals[0]), self._lit(leaf.literals[1])

        def answer():
            if 0 <= lo <= hi:  # only the positive part holds such values: one pass, straight to a bitmap
                return self._positive_between(lo, hi)
            return to_bitmap(self.gte_words(lo) & self.lte_words(hi))

        return BitmapResult(thunk=answer)

    def _positive_between(self, lo: int, hi: int) -> BitMap:
        """Rows with ``lo <= value <= hi``, ``0 <= lo <= hi`` (Java: gte(lo) AND lte(hi)), by one
        pass over the positive part's slices into roaring bytes."""
        pos = self.positive
        if hi < pos.min or lo > pos.max:
            return BitMap()
        plo, phi = max(lo, pos.min) - pos.min, min(hi, pos.max) - pos.min
        return BitMap.deserialize(_k.compare_bytes(pos.slices, pos.ebm, "gte", plo, phi))

    def describe(self):
        d = super().describe()
        pos, neg = self.positive, self.negative
        d.update(
            row_count=self.row_count,
            positive=dict(rows=int(_k.popcount(pos.ebm)), min=pos.min, max=pos.max, slices=int(pos.slices.shape[0])),
            negative=dict(rows=int(_k.popcount(neg.ebm)), min=neg.min, max=neg.max, slices=int(neg.slices.shape[0])),
        )
        return d


@register
class BsiFactory(IndexFactory):
    name = INDEX_TYPE
    writer_class = BsiWriter
    reader_class = BsiReader

    def check_type(self, dtype):
        check_type(dtype)
