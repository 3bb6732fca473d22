"""Bitmap file index (``bitmap``), formats V1 and V2, byte-compatible with
Paimon's ``BitmapFileIndex`` / ``BitmapFileIndexMeta`` / ``BitmapFileIndexMetaV2``.

Both versions start ``u8 version, i32 row count, i32 distinct non-null values,
u8 has-nulls`` and end with a body of 32-bit portable roaring bitmaps (the
null bitmap first when >= 2 rows are null, then the values' bitmaps); a value
or null seen in exactly one row has no bitmap and is stored as offset
``-1 - row``.  All integers big-endian; keys are TINYINT 1 byte, SMALLINT 2,
INT/DATE/TIME/FLOAT 4, BIGINT/DOUBLE/timestamps 8 (millis when precision <= 3,
else micros), BOOLEAN 1, strings ``i32 length + UTF-8``.

* **V1** (option ``version=1``): ``[i32 null offset]`` then every value as
  ``(key, i32 offset)``; a reader parses all of them.
* **V2** (default): ``[i32 null offset, i32 null bitmap length]``, ``i32 B``,
  a directory of ``B x (first key, i32 block offset)``, ``i32 body offset``,
  then the index blocks (``i32 n + n x (key, i32 offset, i32 length)``, keys
  sorted across blocks, at most ``index-block-size`` (16kb) bytes each), then
  the body.  A lookup binary-searches the directory, reads one block and
  only the bitmaps it needs.

Entry order of V1 and body order of both follow the iteration order of the
``java.util.HashMap`` Java's writer fills (``_kernels/bitmap.pyx``
``java_order``), which is what makes the bytes identical.  When a bucket
collects 8 keys in a table of >= 64 buckets Java turns it into a red-black
tree, whose list order differs; the kernel detects this and the order then
comes from the full model in ``fileindex/java_hashmap.py`` (``JavaHashMap``),
checked against the JVM (``tests/data/hashmap_order``).

Oversize values (Paimon issue 9613): Java's V2 writer throws ``index fail``
when one entry (key + 8 bytes) does not fit in an empty block (``4`` bytes of
count + entry > ``index-block-size``), e.g. a 20 KB string with the default
16 KB blocks.  This writer instead gives such an entry a block of its own,
larger than the limit.  Nothing in the format bounds a block's size: Java's
reader locates the block by binary search over the directory's first keys
and parses it from its offset with a count-prefixed loop, so it reads the
file correctly (``tests/formats/fileindex/test_bitmap.py`` replays that algorithm).  For every
input Java accepts, the output is unchanged (byte-identical).

Answers are exact row sets (:class:`~paimon_fast.core.result.BitmapResult`):
``=``, ``IN`` (a null literal adds the null rows), ``IS NULL``, and their
complements over ``[0, row count)`` for ``!=``, ``NOT IN``, ``IS NOT NULL``
(so null rows count as "not equal", as in Java).

This module holds the reader (:class:`BitmapReader`) and the factory; the writer is in
:mod:`.bitmap_writer`, the keys per type and the format's fixed numbers in
:mod:`.bitmap_keys`, whose names are handed on here at their old path.
"""

from __future__ import annotations

import numpy as np
from pyroaring import BitMap

from .._kernels import load as _load
from ..errors import IndexFormatError
from ..core.roaring import check32
from ..core.result import BitmapResult
from .base import FileIndexReader
from .registry import IndexFactory, register
from .bitmap_keys import (  # noqa: F401  (handed on at their old path)
    _HEAD,
    _I32,
    _MAX_INT,
    _NULLS2,
    _SUPPORTED,
    DEFAULT_INDEX_BLOCK_SIZE,
    INDEX_TYPE,
    VERSION_1,
    VERSION_2,
    KeyCodec,
    _check_type,
    codec_for,
)
from .bitmap_writer import (  # noqa: F401  (handed on at their old path)
    _DENSE_MAX_CONTAINERS,
    _DENSE_MIN_ROWS,
    BitmapWriter,
    _sorted_ids,
    build_index,
)

_k = _load("bitmap")

# the looked-up keys a reader keeps the location (and bytes) of
LOCATED_MAX = 4096


# ---------------------------------------------------------------- reader


class BitmapReader(FileIndexReader):
    """Reads a V1 or V2 bitmap index lazily from a :class:`~paimon_fast.io.source.Source`.

    Construction parses the header (V2: including the block directory);
    a V2 lookup binary-searches the directory, reads one index block and the
    bitmaps it needs; V1 parses its entry table on the first lookup.
    """

    exact_ops = frozenset({"equal", "in", "is_null", "is_not_null"})  # one bitmap of rows per value
    index_type = INDEX_TYPE
    _CHUNK = 4096

    def __init__(self, dtype, source, options, kernels=None):
        super().__init__(dtype, source, options)
        #: search kernels (compiled by default; ``paimon_fast.reference.bitmap`` is the twin)
        self.kernels = kernels or _k
        self.codec = codec_for(dtype)
        self._base = getattr(source, "base", 0)
        self._cache = {}
        self._v1 = None
        self._parse_header()

    # ---------------------------------------------------------------- header
    def _fail(self, what, at):
        raise IndexFormatError(f"bitmap index (read as {self.dtype}): {what}", self._base + at)

    def _parse_header(self):
        src = self.source
        size = src.size
        if size < 10:
            self._fail(f"{size} bytes cannot hold the 10-byte header", 0)
        head = src.read_at(0, min(size, self._CHUNK), "bitmap index header")
        version, rows, D, has_null = _HEAD.unpack_from(head, 0)
        if version not in (VERSION_1, VERSION_2):
            self._fail(f"unsupported version {version}", 0)
        if rows < 0:
            self._fail(f"negative row count {rows}", 1)
        if D < 0:
            self._fail(f"negative value count {D}", 5)
        self.version, self.row_count, self.distinct = version, rows, D
        self.has_null = has_null != 0
        pos = 10
        self.null_offset, self.null_length = 0, -1
        need = 4 + (4 if version == VERSION_2 else 0) if self.has_null else 0
        if version == VERSION_2:
            need += 4
        if size < pos + need:
            self._fail("header truncated", pos)
        if self.has_null:
            (self.null_offset,) = _I32.unpack_from(head, pos)
            pos += 4
            if version == VERSION_2:
                (self.null_length,) = _I32.unpack_from(head, pos)
                pos += 4
        self._head = head
        if version == VERSION_1:
            self._entries_pos = pos
            w = self.codec.width
            if w is not None:
                if D > (size - pos) // (w + 4):
                    self._fail(f"{D} entries do not fit in {size - pos} bytes", 5)
                self.body_start = pos + D * (w + 4)
            else:
                if D > (size - pos) // 8:
                    self._fail(f"{D} entries do not fit in {size - pos} bytes", 5)
                self.body_start = None  # known after parsing the entries
            return
        (B,) = _I32.unpack_from(head, pos)
        pos += 4
        w = self.codec.width
        if B < 0 or B > (size - pos - 4) // (w + 4 if w else 8):
            self._fail(f"block count {B} does not fit in the data", pos - 4)
        self.block_count = B
        if w is not None:
            end = pos + B * (w + 4)
            head = self._ensure(head, end + 4)
            self._dir_pos = pos
            self._dir_keys = None
        else:
            while True:
                try:
                    got = self.kernels.scan_binary(head, pos, len(head), B, 1)
                except ValueError as e:
                    self._fail(f"block directory: {e}", pos)
                if got is not None or len(head) >= size:
                    break
                head = src.read_at(0, min(size, 4 * len(head)), "bitmap index header")
            if got is None:
                self._fail("block directory truncated", pos)
            self._dir_keys, _, ints, end = got
            self._dir_lens = _
            self._dir_offsets = ints[:, 0]
            self._dir_pos = pos
            head = self._ensure(head, end + 4)
        (self.body_offset,) = _I32.unpack_from(head, end)
        self.index_start = end + 4
        if self.body_offset < 0 or self.index_start + self.body_offset > size:
            self._fail(f"bitmap body offset {self.body_offset} outside the data", end)
        self.body_start = self.index_start + self.body_offset
        self._head = head

    def _ensure(self, head, end):
        if len(head) >= end:
            return head
        if end > self.source.size:
            self._fail("header truncated", len(head))
        return self.source.read_at(0, end, "bitmap index header")

    # ---------------------------------------------------------------- lookups
    def _find_v2(self, key):
        """``(offset, length)`` of a non-null key, or None."""
        B = self.block_count
        if B == 0:
            return None
        c = self.codec
        w = c.width
        head = self._head
        if w is not None:
            ok = c.order_key(key)
            bi = (
                self.kernels.search_fixed(head, self._dir_pos, B, w + 4, w, ok, c.cmp_mode, False)
                if B > 1
                else (0 if self.kernels.order_key(_get_be(head, self._dir_pos, w), c.cmp_mode) <= ok else -1)
            )
            if bi < 0:
                return None
            (boff,) = _I32.unpack_from(head, self._dir_pos + bi * (w + 4) + w)
        else:
            bi, _ = self.kernels.search_binary(head, self._dir_pos, len(head), B, 1, key, False)
            if bi < 0:
                return None
            boff = int(self._dir_offsets[bi])
        if boff < 0 or boff > self.body_offset - 4:
            self._fail(f"index block {bi} offset {boff} outside the index blocks", self.index_start)
        start = self.index_start + boff
        if w is not None:
            (cnt,) = _I32.unpack_from(self.source.read_at(start, 4, "index block"), 0)
            esz = w + 8
            if cnt < 0 or cnt > (self.body_start - start - 4) // esz:
                self._fail(f"index block {bi} claims {cnt} entries", start)
            blk = self.source.read_at(start + 4, cnt * esz, "index block")
            i = self.kernels.search_fixed(blk, 0, cnt, esz, w, ok, c.cmp_mode, True)
            if i < 0:
                return None
            return _NULLS2.unpack_from(blk, i * esz + w)
        end = self._block_end(bi, boff)
        blk = self.source.read_at(start, end - start, "index block")
        (cnt,) = _I32.unpack_from(blk, 0)
        if cnt < 0:
            self._fail(f"index block {bi} claims {cnt} entries", start)
        try:
            i, p = self.kernels.search_binary(blk, 4, len(blk), cnt, 2, key, True)
        except ValueError as e:
            if end < self.body_start:  # offsets not monotonic: let the block run to the body
                blk = self.source.read_at(start, self.body_start - start, "index block")
                try:
                    i, p = self.kernels.search_binary(blk, 4, len(blk), cnt, 2, key, True)
                except ValueError as e2:
                    self._fail(f"index block {bi}: {e2}", start)
            else:
                self._fail(f"index block {bi}: {e}", start)
        if i < 0:
            return None
        return _NULLS2.unpack_from(blk, p)

    def _block_end(self, bi, boff):
        if bi + 1 < self.block_count:
            nxt = int(self._dir_offsets[bi + 1])
            if boff < nxt <= self.body_offset:
                return self.index_start + nxt
        return self.body_start

    def _load_v1(self):
        if self._v1 is not None:
            return self._v1
        c = self.codec
        D = self.distinct
        pos = self._entries_pos
        if c.fixed:
            w = c.width
            raw = self.source.read_at(pos, D * (w + 4), "bitmap index entries")
            dt = np.dtype([("k", f">i{w}"), ("o", ">i4")])
            ent = np.frombuffer(raw, dtype=dt, count=D)
            keys = ent["k"].astype(np.int64)
            if c.cmp_mode in (_k.CMP_FLOAT, _k.CMP_DOUBLE):  # Float.equals: all NaNs are equal
                keys = (
                    np.array([c.order_key(int(x)) for x in keys], dtype=np.int64)
                    if D < 64
                    else _vec_order_keys(keys, c.cmp_mode)
                )
            elif c.cmp_mode == 3:
                keys = (keys != 0).astype(np.int64)
            offs = ent["o"].astype(np.int64)
            lookup = None
        else:
            size = self.source.size
            chunk = min(size - pos, max(self._CHUNK, 16 * D))
            while True:
                buf = self.source.read_at(pos, chunk, "bitmap index entries")
                try:
                    got = self.kernels.scan_binary(buf, 0, len(buf), D, 1)
                except ValueError as e:
                    self._fail(f"entries: {e}", pos)
                if got is not None or chunk >= size - pos:
                    break
                chunk = min(size - pos, chunk * 4)
            if got is None:
                self._fail("entries truncated", pos)
            ks, kl, ints, end = got
            self.body_start = pos + end
            mv = memoryview(buf)
            keys = [bytes(mv[s : s + n]) for s, n in zip(ks.tolist(), kl.tolist())]
            offs = ints[:, 0].astype(np.int64)
            lookup = {kk: i for i, kk in enumerate(keys)}  # a repeated key keeps the last entry, as Java's map
        # Java's V1 lengths: from consecutive non-negative offsets in entry order
        lens = np.full(D, -1, dtype=np.int64)
        nn = np.flatnonzero(offs >= 0)
        null_len = -1
        if len(nn):
            lens[nn[:-1]] = offs[nn[1:]] - offs[nn[:-1]]
            if self.null_offset >= 0:
                null_len = int(offs[nn[0]]) - self.null_offset
        self.null_length = null_len
        self._v1 = (keys, offs, lens, lookup)
        return self._v1

    def _find_v1(self, key):
        keys, offs, lens, lookup = self._load_v1()
        if lookup is not None:
            i = lookup.get(key)
        else:
            k = self.codec.order_key(key) if self.codec.cmp_mode in (_k.CMP_FLOAT, _k.CMP_DOUBLE, 3) else key
            hits = np.flatnonzero(keys == k)
            i = int(hits[-1]) if len(hits) else None
        if i is None:
            return None
        # a key repeated in a corrupt file: Java's LinkedHashMap keeps the last offset, the length of the last one
        return int(offs[i]), int(lens[i])

    def _bitmap_at(self, offset, length, what):
        """Where a bitmap is: ``-1 - row`` offsets give the row (an int), others
        ``(bytes, absolute offset)`` of the serialized bitmap (read, not parsed)."""
        if offset < 0:
            return -1 - offset
        at = self.body_start + offset
        size = self.source.size
        if at >= size:
            self._fail(f"{what} bitmap offset {offset} is past the end", self.body_start)
        if length == -1:  # V1's last bitmap: its size is only known by parsing it
            buf = self.source.read_at(at, min(size - at, self._CHUNK), what)
            try:
                length, _ = check32(buf, 0, -1, self._base + at)
            except IndexFormatError:
                buf = self.source.read_at(at, size - at, what)
                length, _ = check32(buf, 0, -1, self._base + at)
        elif length <= 0 or at + length > size:
            self._fail(f"{what} bitmap [{offset}, +{length}) outside the body", self.body_start)
        return (self.source.read_at(at, length, what), self._base + at)

    @staticmethod
    def _materialize(loc) -> BitMap:
        if loc is None:
            return BitMap()
        if loc.__class__ is int:
            return BitMap((loc,))
        buf, at = loc
        try:
            # CRoaring's bounds-checked portable deserializer + pyroaring's invariant check
            return BitMap.deserialize(memoryview(buf))
        except ValueError as e:
            check32(bytes(buf), 0, -1, at)  # a precise message where our validator finds the fault
            raise IndexFormatError(f"bitmap: {e}", at) from None

    def bitmap_of(self, value) -> BitMap:
        """Rows holding ``value`` (None = the null rows), a new BitMap each call.

        The location (and bytes) of each looked-up key are cached, not the
        bitmap, so callers may modify what they get."""
        if value is None:
            key = None
        else:
            key = self.codec.literal_key(value)
            if key is None:
                return BitMap()
        return self._materialize(self._located(key))

    def _located(self, key):
        """:meth:`_locate`, cached per key; at most :data:`LOCATED_MAX` keys (a reader held between
        plans may be asked for many: the cache starts again rather than grow with them)."""
        try:
            return self._cache[key]
        except KeyError:
            pass
        if len(self._cache) >= LOCATED_MAX:
            self._cache.clear()
        loc = self._cache[key] = self._locate(key)
        return loc

    def _locate(self, key):
        if key is None:
            if not self.has_null:
                return None
            if self.version == VERSION_1:
                self._load_v1()
            return self._bitmap_at(self.null_offset, self.null_length, "null")
        e = self._find_v2(key) if self.version == VERSION_2 else self._find_v1(key)
        if e is None:
            return None
        return self._bitmap_at(e[0], e[1], "value")

    def in_list(self, values) -> BitMap:
        """Union of the rows of each value (None = the null rows)."""
        if len(values) == 1:
            return self.bitmap_of(values[0])
        locs = []
        seen = set()
        for v in values:  # each distinct key once (the union does not change)
            key = None if v is None else self.codec.literal_key(v)
            if v is not None and key is None:
                continue
            if key in seen:
                continue
            seen.add(key)
            loc = self._located(key)
            if loc is not None:
                locs.append(loc)
        if not locs:
            return BitMap()
        acc = self._materialize(locs[0])  # a fresh bitmap: OR the others into it
        for x in locs[1:]:
            acc |= self._materialize(x)  # (pyroaring's n-ary union is much slower than this)
        return acc

    # ---------------------------------------------------------------- visitor
    def visit_equal(self, leaf):
        return BitmapResult(thunk=lambda: self.in_list(leaf.literals))

    def visit_in(self, leaf):
        return BitmapResult(thunk=lambda: self.in_list(leaf.literals))

    def visit_not_equal(self, leaf):
        return BitmapResult(thunk=lambda: self.in_list(leaf.literals).flip(0, self.row_count))

    visit_not_in = visit_not_equal

    def visit_is_null(self, leaf):
        return BitmapResult(thunk=lambda: self.in_list((None,)))

    def visit_is_not_null(self, leaf):
        return BitmapResult(thunk=lambda: self.in_list((None,)).flip(0, self.row_count))

    # ---------------------------------------------------------------- inspect
    def entries(self):
        """Every entry as ``(key, offset, length)`` (length -1 when not stored); reads all blocks."""
        c = self.codec
        out = []
        if self.version == VERSION_1:
            keys, offs, lens, lookup = self._load_v1()
            if lookup is None:
                raw = self.source.read_at(self._entries_pos, self.distinct * (c.width + 4), "entries")
                keys = [_get_be(raw, i * (c.width + 4), c.width) for i in range(self.distinct)]
            return list(zip(keys, offs.tolist(), lens.tolist()))
        for bi in range(self.block_count):
            if c.fixed:
                (boff,) = _I32.unpack_from(self._head, self._dir_pos + bi * (c.width + 4) + c.width)
            else:
                boff = int(self._dir_offsets[bi])
            if boff < 0 or boff > self.body_offset - 4:
                self._fail(f"index block {bi} offset {boff} outside the index blocks", self.index_start)
            start = self.index_start + boff
            blk = self.source.read_at(start, self.body_start - start, "index block")
            (cnt,) = _I32.unpack_from(blk, 0)
            if c.fixed:
                esz = c.width + 8
                if cnt < 0 or 4 + cnt * esz > len(blk):
                    self._fail(f"index block {bi} claims {cnt} entries", start)
                for i in range(cnt):
                    p = 4 + i * esz
                    out.append((_get_be(blk, p, c.width),) + _NULLS2.unpack_from(blk, p + c.width))
            else:
                if cnt < 0:
                    self._fail(f"index block {bi} claims {cnt} entries", start)
                try:
                    got = self.kernels.scan_binary(blk, 4, len(blk), cnt, 2)
                except ValueError as e:
                    self._fail(f"index block {bi}: {e}", start)
                if got is None:
                    self._fail(f"index block {bi} truncated", start)
                ks, kl, ints, _ = got
                for s, n, (o, ln) in zip(ks.tolist(), kl.tolist(), ints.tolist()):
                    out.append((bytes(blk[s : s + n]), o, ln))
        return out

    def describe(self, top: int = 5) -> dict:
        d = super().describe()
        null_count = 0
        if self.has_null:
            null_count = len(self.bitmap_of(None))
        ents = self.entries()
        sizes = []
        for key, off, ln in ents:
            if off < 0:
                continue
            at = self.body_start + off
            limit = at + ln if ln > 0 else self.source.size
            buf = self.source.read_at(at, limit - at, "bitmap")
            sz, card = check32(buf, 0, -1, self._base + at)
            sizes.append((card, sz, key))
        sizes.sort(key=lambda t: (-t[0], -t[1]))
        d.update(
            version=self.version,
            rows=self.row_count,
            distinct_values=self.distinct,
            null_count=null_count,
            single_row_values=sum(1 for e in ents if e[1] < 0),
            block_count=self.block_count if self.version == VERSION_2 else None,
            body_bytes=self.source.size - self.body_start,
            largest_bitmaps=[
                {"value": self.codec.display(k), "rows": card, "bytes": sz} for card, sz, k in sizes[:top]
            ],
        )
        return d


def _get_be(buf, pos, width):
    return int.from_bytes(bytes(buf[pos : pos + width]), "big", signed=True)


def _vec_order_keys(keys, mode):
    if mode == _k.CMP_FLOAT:
        k32 = keys.astype(np.int32)
        nan = ((k32 & 0x7F800000) == 0x7F800000) & ((k32 & 0x007FFFFF) != 0)
        k32 = np.where(nan, np.int32(0x7FC00000), k32).astype(np.int64)
        return np.where(k32 < 0, k32 ^ 0x7FFFFFFF, k32)
    nan = ((keys & 0x7FF0000000000000) == 0x7FF0000000000000) & ((keys & 0x000FFFFFFFFFFFFF) != 0)
    k = np.where(nan, np.int64(0x7FF8000000000000), keys)
    return np.where(k < 0, k ^ 0x7FFFFFFFFFFFFFFF, k)


@register
class BitmapFactory(IndexFactory):
    name = INDEX_TYPE
    writer_class = BitmapWriter
    reader_class = BitmapReader

    def check_type(self, dtype):
        _check_type(dtype)
