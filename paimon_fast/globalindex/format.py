"""The bitmap global index file (Paimon 2.0 ``bitmap`` global indexer), byte for byte.

Layout in write order: for each distinct non-null key (ascending by Java's
logical comparator) its row-id bitmap (``RoaringNavigableMap64``, portable,
run-optimised), with dictionary blocks interleaved as Java's streaming writer
emits them; the null-rows bitmap; the non-null-rows bitmap; the dictionary
block index; a 48-byte big-endian footer ``i64 nullOffset, i32 nullLength,
i64 nonNullOffset, i32 nonNullLength, i64 indexOffset, i32 indexLength,
i32 distinct keys, i32 version = 1, i32 magic = 0x42474958 ("BGIX")``.
Dictionary and index blocks are compressible blocks (see :mod:`.codec`).

This module holds the one-file reader (:class:`BitmapIndexFile`); the writers are in
:mod:`.writers`, the grouping and file building in :mod:`.groups`, the fixed numbers in
:mod:`.layout`, and their names are handed on here at their old path.
"""

from __future__ import annotations

import os
import struct
import threading
from collections import OrderedDict

import numpy as np
from pyroaring import BitMap64

from .._kernels import load as _load
from ..errors import IndexFormatError
from ..io.fsutil import Chunks, write_atomic  # noqa: F401  (part of this package's API)
from ..io.source import FileSource, as_source, file_tail
from . import sst as _codec
from .keys import _KEY_LENGTHS, KINDS, KeyCodec
from .layout import (  # noqa: F401  (handed on at their old path)
    _ANY_LENGTH,
    DEFAULT_BLOCK_SIZE,
    DEFAULT_FALLBACK,
    EMPTY64,
    FOOTER_LENGTH,
    FOOTER_STRUCT,
    MAGIC,
    OPT_BLOCK_SIZE,
    OPT_COMPRESSION,
    OPT_FALLBACK,
    OPT_LEVEL,
    SMALL_BITMAP,
    TAIL_READ,
    VERSION,
)
from .groups import (  # noqa: F401  (handed on at their old path)
    PARALLEL_GROUP_ROWS,
    Groups,
    assemble,
    body_parts,
    build_file,
    build_files,
    build_multivalue_file,
    files_from_groups,
    group_chunks,
    group_column,
    group_column_parallel,
    merge_groups,
    multivalue_file_from_groups,
    nearly_unique,
    serialize64_sorted_unique,
    serialize_groups,
)
from .writers import (  # noqa: F401  (handed on at their old path)
    _ARRAY_RE,
    OPT_MV_BLOCK_SIZE,
    OPT_MV_COMPRESSION,
    OPT_MV_LEVEL,
    BitmapGlobalIndexWriter,
    MultiValueGlobalIndexWriter,
    _block_options,
    _FileWriter,
    _options,
    _row_ids,
    element_type,
    flatten_lists,
)

_k = _load("globalindex")
_open_tail = getattr(_k, "open_tail", None)  # None with the plain-Python twins: FileSource reads


def is_global_index(path) -> bool:
    """Does the file end with the bitmap global index footer magic ("BGIX")?"""
    tail = file_tail(path, 4, FOOTER_LENGTH)
    return tail is not None and struct.unpack(">i", tail)[0] == MAGIC


def open_with_tail(data_or_path, footer_length: int, what: str, tail_read: int = None):
    """``(source, size, tail offset, tail)`` of a global index file: its last ``tail_read``
    bytes (16 KB: the footer and what the writers put before it) read at open.  A local path is
    opened, sized and read in one kernel call (``open_tail``); bytes, file objects and sources
    are taken as they are.  A file shorter than ``footer_length`` raises
    :class:`~paimon_fast.errors.IndexFormatError` (and is closed)."""
    tail_read = TAIL_READ if tail_read is None else tail_read
    tail = None
    if _open_tail is not None and (type(data_or_path) is str or isinstance(data_or_path, os.PathLike)):
        path = os.fspath(data_or_path)
        fd, size, tail = _open_tail(path, tail_read)
        source = FileSource.adopt(path, fd, size)
    else:
        source = as_source(data_or_path)
        size = source.size
    if size < footer_length:
        source.close()
        raise IndexFormatError(f"{what} file of {size} bytes is shorter than its footer", 0)
    tail_len = min(size, tail_read)
    if tail is None:
        tail = source.read_at(size - tail_len, tail_len, "footer")
    return source, size, size - tail_len, memoryview(tail).cast("B")


# ================================================================ reader (one file)


class Footer:
    __slots__ = (
        "null_offset",
        "null_length",
        "nonnull_offset",
        "nonnull_length",
        "index_offset",
        "index_length",
        "value_count",
        "version",
    )

    def __init__(self, raw, file_size: int, pos: int = 0):
        """The footer at ``raw[pos:pos + 48]`` of a file of ``file_size`` bytes, checked."""
        (no, nl, nno, nnl, io, il, vc, self.version, magic) = FOOTER_STRUCT.unpack_from(raw, pos)
        self.null_offset, self.null_length, self.nonnull_offset, self.nonnull_length = no, nl, nno, nnl
        self.index_offset, self.index_length, self.value_count = io, il, vc
        at = file_size - FOOTER_LENGTH
        if (
            magic == MAGIC
            and self.version == VERSION
            and vc >= 0
            and 0 <= no
            and 0 <= nl
            and no + nl <= at
            and 0 <= nno
            and 0 <= nnl
            and nno + nnl <= at
            and 0 <= io
            and 0 <= il
            and io + il + _codec.TRAILER <= at
        ):
            return  # the usual case, in one expression; else find what is wrong below
        if magic != MAGIC:
            raise IndexFormatError(f"not a bitmap global index file (footer magic 0x{magic & 0xFFFFFFFF:08x})", at + 44)
        if self.version != VERSION:
            raise IndexFormatError(f"unsupported bitmap global index version {self.version}", at + 40)
        if self.value_count < 0:
            raise IndexFormatError(f"invalid distinct value count {self.value_count}", at + 36)
        for i, (o, n, extra) in enumerate(
            (
                (self.null_offset, self.null_length, 0),
                (self.nonnull_offset, self.nonnull_length, 0),
                (self.index_offset, self.index_length, _codec.TRAILER),
            )
        ):
            if o < 0 or n < 0 or o + n + extra > at:
                raise IndexFormatError(f"footer block [{o}, {o + n + extra}) lies outside the file body", at + 12 * i)

    def as_dict(self):
        return {s: getattr(self, s) for s in self.__slots__}


class BitmapIndexFile:
    """One bitmap global index file, read lazily: opening reads only the 48-byte footer.

    Equality / IN binary-search the block index and read one dictionary block per
    key; null checks read one bitmap; scans read the dictionary.  Dictionary
    blocks are cached (LRU, at most ``max_cached_blocks`` blocks).
    """

    # filled on first need (class defaults: a cold reader sets none of them)
    _null = None
    _nonnull = None
    _index = None
    _index_raw = None  # the decoded block index (checked once), before it is parsed
    _walked = False  # the first point lookup walks the raw index instead of parsing it
    max_cached_blocks = 256

    def __init__(self, key_codec: KeyCodec, data_or_path, max_cached_blocks: int = 256):
        self.codec = key_codec
        self.kind = key_codec.kind
        # one read for the footer and the bytes before it: Java's writer puts the last
        # dictionary block, the null / non-null bitmaps and the block index there, so a
        # cold lookup in a small dictionary needs no further read but its bitmap's
        self.source, size, self._tail_at, self._tail = open_with_tail(
            data_or_path, FOOTER_LENGTH, "bitmap global index"
        )
        self.footer = Footer(self._tail, size, len(self._tail) - FOOTER_LENGTH)
        self._lock = threading.RLock()
        self._blocks = OrderedDict()
        if max_cached_blocks != 256:
            self.max_cached_blocks = max(1, int(max_cached_blocks))
        # Java's writer keeps keys in logical order; other writers (pypaimon 2.1 writes the
        # null bitmaps first and orders keys by their bytes) may not: then never trust order.
        f = self.footer
        self.ordered = key_codec.is_string or not (f.null_offset == 0 and f.value_count > 0)

    @property
    def size(self) -> int:
        return self.source.size

    def close(self):
        self.source.close()

    def _read_at(self, offset: int, length: int, what: str):
        """``source.read_at``, served from the bytes read at open when the range lies there."""
        t = self._tail_at
        if offset >= t and length >= 0 and offset + length <= self.source.size:
            return self._tail[offset - t : offset - t + length]
        return self.source.read_at(offset, length, what)

    # ------------------------------------------------------------ pieces
    def bitmap(self, offset: int, length: int) -> BitMap64:
        t = self._tail_at
        if offset >= t and length >= 0 and offset + length <= self.source.size:
            raw = bytes(self._tail[offset - t : offset - t + length])
        else:
            raw = self.source.read_at(offset, length, "bitmap")
        if length <= SMALL_BITMAP:
            # large bitmaps: pyroaring's safe deserialization (bounds-checked, then validated)
            # is the only pass; small ones also get our structural check (exact length)
            _k.check64(np.frombuffer(raw, np.uint8), offset)  # (the twin takes arrays only)
        try:  # _deserialize64, inlined: every cold lookup ends here
            return BitMap64.deserialize(raw)
        except (ValueError, IndexError, OverflowError, MemoryError) as e:
            raise IndexFormatError(f"invalid 64-bit roaring bitmap: {e}", offset) from None

    def null_rows(self) -> BitMap64:
        if self._null is None:
            f = self.footer
            self._null = self.bitmap(f.null_offset, f.null_length)
        return self._null

    def nonnull_rows(self) -> BitMap64:
        if self._nonnull is None:
            f = self.footer
            self._nonnull = self.bitmap(f.nonnull_offset, f.nonnull_length)
        return self._nonnull

    def _read_block(self, offset, length, what):
        if offset < 0 or length < 0:
            raise IndexFormatError(f"{what} has a negative offset or length", offset)
        blob = self._read_at(offset, length + _codec.TRAILER, what)
        raw, ctype = _codec.decode(blob, length, offset)
        return raw, ctype

    def index(self):
        """``(raw, key_start, key_len, block_offset, block_length)`` of the block index."""
        idx = self._index
        if idx is None:
            with self._lock:
                if self._index is None:
                    f = self.footer
                    u8 = self._index_u8()
                    ks, kl, of, ln = _k.parse_entries(u8, f.index_offset)
                    self.codec.check_key_lengths(kl, "bitmap global index block index", f.index_offset)
                    if not self.codec.is_string and len(ks) > 1:
                        if not _k.entries_sorted(self.kind, u8, ks, kl, f.index_offset):
                            self.ordered = False
                    self._index = (u8, ks, kl, of, ln)
                idx = self._index
        return idx

    def _index_u8(self) -> np.ndarray:
        """The decoded block index bytes (uint8 array), read and checked once."""
        u8 = self._index_raw
        if u8 is None:
            f = self.footer
            raw, _ = self._read_block(f.index_offset, f.index_length, "dictionary block index")
            u8 = self._index_raw = np.frombuffer(raw, np.uint8)
        return u8

    def block_count(self) -> int:
        return len(self.index()[1])

    def raw_block(self, i: int, off: int = None, length: int = None, blob=None) -> np.ndarray:
        """Decompressed bytes (uint8 array) of dictionary block i (LRU-cached); ``off`` and
        ``length`` are its place when the caller knows it (else read from the index), ``blob``
        its stored bytes and trailer when already read."""
        with self._lock:
            b = self._blocks.get(i)
            if b is not None:
                self._blocks.move_to_end(i)
                return b[0]
        if off is None:
            _, _, _, of, ln = self.index()
            off, length = int(of[i]), int(ln[i])
        if blob is None:
            raw, _ = self._read_block(off, length, f"dictionary block {i}")
        else:
            raw, _ = _codec.decode(blob, length, off)
        u8 = np.frombuffer(raw, np.uint8)
        with self._lock:
            self._blocks[i] = [u8, None]
            while len(self._blocks) > self.max_cached_blocks:
                self._blocks.popitem(last=False)
        return u8

    def block(self, i: int):
        """``(raw u8, key_start, key_len, bitmap_offset, bitmap_length)`` of dictionary block i."""
        u8 = self.raw_block(i)
        with self._lock:
            b = self._blocks.get(i)
            if b is not None and b[1] is not None:
                return (u8,) + b[1]
        parsed = _k.parse_entries(u8, int(self.index()[3][i]))
        with self._lock:
            b = self._blocks.get(i)
            if b is not None:
                b[1] = parsed
        return (u8,) + parsed

    # ------------------------------------------------------------ lookups
    def find(self, key: bytes):
        """``(bitmap offset, length)`` of a key (logical equality), or None."""
        return self._find(key, False)

    def _find(self, key: bytes, bitmap: bool):
        """:meth:`find`; with ``bitmap`` a cold reader's first lookup may give the bitmap's bytes
        instead (read and checked by the same kernel call)."""
        if not self._walked and self._index is None and self.ordered and hasattr(_k, "cold_find"):
            # a cold reader's first lookup: one kernel walk over the raw block index finds the
            # block (no entry arrays); whatever the walk does not vouch for (unordered or
            # malformed entries) goes the parsing way below, which answers and reports as ever
            # (so do the plain-Python twins, which have no walk)
            self._walked = True
            lim = _KEY_LENGTHS.get(self.kind, _ANY_LENGTH)
            f = self.footer
            # usually the index and the key's dictionary block lie in the bytes read at open;
            # a block before them is read by the kernel from a local file's descriptor
            fd = self.source._fd if type(self.source) is FileSource else None
            w = _k.cold_find(
                self.kind,
                self._tail,
                self._tail_at,
                f.index_offset,
                f.index_length,
                key,
                lim[0],
                lim[1],
                -1 if fd is None else fd,
                bitmap,
                SMALL_BITMAP,
            )
            if w is False:
                return None
            if w is not None and (type(w) is bytes or len(w) == 2):
                return w
            if w is None:
                w = _k.index_walk(self.kind, self._index_u8(), key, lim[0], lim[1])
            if w is not None:
                i, off, length = w[:3]
                if i < 0:
                    return None
                blob = w[3] if len(w) == 4 else None
                return _k.lookup(self.kind, self.raw_block(i, off, length, blob), key, off, True)
        u8, ks, kl, _, _ = self.index()
        if len(ks) == 0:
            return None
        lit = np.frombuffer(key, np.uint8)
        if self.ordered:
            i = _k.search_last_le(self.kind, u8, ks, kl, lit, self.footer.index_offset)
            if i < 0:
                return None
            return _k.lookup(self.kind, self.raw_block(i), lit, int(self.index()[3][i]), True)
        for i in range(len(ks)):
            hit = _k.lookup(self.kind, self.raw_block(i), lit, int(self.index()[3][i]))
            if hit is not None:
                return hit
        return None

    def equal(self, key: bytes) -> BitMap64:
        hit = self._find(key, True)
        if hit is None:
            return BitMap64()
        if type(hit) is bytes:  # read (and, when small, checked) by the cold lookup
            try:
                return BitMap64.deserialize(hit)
            except (ValueError, IndexError, OverflowError, MemoryError):
                hit = self.find(key)  # the usual read reports it, with where
                if hit is None:
                    return BitMap64()
        return self.bitmap(*hit)

    def isin(self, keys) -> BitMap64:
        seen = set()
        hits = []
        for key in keys:
            if key in seen:
                continue
            seen.add(key)
            hit = self.find(key)
            if hit is not None:
                hits.append(hit)
        return self.union_bitmaps(hits)

    def union_bitmaps(self, hits) -> BitMap64:
        """Union of the bitmaps at ``[(offset, length), ...]``."""
        if not hits:
            return BitMap64()
        if len(hits) == 1:
            return self.bitmap(*hits[0])
        a = np.array(hits, dtype=np.int64)
        return self.union_arrays(a[:, 0], a[:, 1])

    def union_arrays(self, offs: np.ndarray, lens: np.ndarray) -> BitMap64:
        """Union of the bitmaps at ``offs[i], lens[i]``: nearby ones are read in one go and
        merged by a kernel (decode, radix sort, one serialization)."""
        if len(offs) == 0:
            return BitMap64()
        if len(offs) <= 16:  # a few (possibly large) bitmaps: CRoaring's OR is cheapest
            out = BitMap64()
            for o, n in zip(offs.tolist(), lens.tolist()):
                out |= self.bitmap(o, n)
            return out
        lo = int(offs.min())
        hi = int((offs + lens).max())
        total = int(lens.sum())
        if lo >= 0 and hi - lo <= 2 * total + (1 << 20):
            span = np.frombuffer(self.source.read_at(lo, hi - lo, "bitmaps"), np.uint8)
            blob = _k.union64(
                span, np.ascontiguousarray(offs - lo, dtype=np.int64), np.ascontiguousarray(lens, dtype=np.int64), lo
            )
            return _deserialize64(blob, lo)
        out = BitMap64()
        for o, n in zip(offs.tolist(), lens.tolist()):
            out |= self.bitmap(o, n)
        return out

    def scan(self, mask_fn) -> BitMap64:
        """Union of the bitmaps of every dictionary entry for which ``mask_fn(raw, ks, kl)`` is True."""
        offs, lens = [], []
        for i in range(self.block_count()):
            u8, ks, kl, of, ln = self.block(i)
            m = mask_fn(u8, ks, kl, i)
            if m.any():
                offs.append(of[m])
                lens.append(ln[m])
        if not offs:
            return BitMap64()
        return self.union_arrays(np.concatenate(offs), np.concatenate(lens))

    def compare_scan(self, key: bytes, ops) -> BitMap64:
        """Scan with a logical comparison: ``ops(cmp int8 array) -> bool mask``."""
        lit = np.frombuffer(key, np.uint8)
        of = self.index()[3]

        def m(u8, ks, kl, i):
            return ops(_k.compare_to(self.kind, u8, ks, kl, lit, int(of[i])))

        return self.scan(m)

    def bytes_scan(self, mode: int, pattern: bytes) -> BitMap64:
        pat = np.frombuffer(pattern, np.uint8)
        return self.scan(lambda u8, ks, kl, i: _k.match_bytes(mode, u8, ks, kl, pat))

    def key_scan(self, pred) -> BitMap64:
        """Scan with a Python predicate on each key's bytes (LIKE fallbacks)."""

        def m(u8, ks, kl, i):
            raw = u8.tobytes()
            return np.fromiter(
                (pred(raw[s : s + n]) for s, n in zip(ks.tolist(), kl.tolist())), dtype=bool, count=len(ks)
            )

        return self.scan(m)

    def starts_with(self, prefix: bytes) -> BitMap64:
        """Java's prefix walk: from the block that may hold ``prefix`` to the first block
        whose first key reaches the prefix's upper bound."""
        if not prefix:
            return self.nonnull_rows()
        u8, ks, kl, of, ln = self.index()
        n = len(ks)
        if n == 0:
            return BitMap64()
        pat = np.frombuffer(prefix, np.uint8)
        start = max(_k.search_last_le(KINDS["BYTES"], u8, ks, kl, pat, self.footer.index_offset), 0)
        upper = _prefix_upper_bound(prefix)
        raw_index = u8.tobytes()
        offs, lens = [], []
        for i in range(start, n):
            if upper is not None and raw_index[ks[i] : ks[i] + kl[i]] >= upper:
                break
            bu8, bks, bkl, bof, bln = self.block(i)
            m = _k.match_bytes(0, bu8, bks, bkl, pat)
            if m.any():
                offs.append(bof[m])
                lens.append(bln[m])
        if not offs:
            return BitMap64()
        return self.union_arrays(np.concatenate(offs), np.concatenate(lens))

    # ------------------------------------------------------------ describe
    def keys(self):
        """Every dictionary key (bytes) in file order, with its bitmap (offset, length)."""
        for i in range(self.block_count()):
            u8, ks, kl, of, ln = self.block(i)
            raw = u8.tobytes()
            for s, n, o, l in zip(ks.tolist(), kl.tolist(), of.tolist(), ln.tolist()):
                yield raw[s : s + n], o, l

    def describe(self) -> dict:
        f = self.footer
        u8, ks, kl, of, ln = self.index()
        index_ctype = self.source.read_at(f.index_offset + f.index_length, 1, "trailer")[0]
        ctypes = {}
        dict_bytes = 0
        for o, n in zip(of.tolist(), ln.tolist()):
            t = self.source.read_at(o + n, 1, "trailer")[0]
            name = _codec.NAMES.get(t, f"unknown({t})")
            ctypes[name] = ctypes.get(name, 0) + 1
            dict_bytes += n + _codec.TRAILER
        nulls = len(self.null_rows())
        nonnull = len(self.nonnull_rows())
        first = last = None
        if len(ks):
            raw = u8.tobytes()
            first = self.codec.to_python(raw[ks[0] : ks[0] + kl[0]])
            blk = self.block(len(ks) - 1)
            braw = blk[0].tobytes()
            if len(blk[1]):
                last = self.codec.to_python(braw[blk[1][-1] : blk[1][-1] + blk[2][-1]])
        bitmap_bytes = f.index_offset - dict_bytes
        return {
            "format": "bitmap global index",
            "type": str(self.codec.dtype),
            "file_size": self.size,
            "footer": f.as_dict(),
            "rows": nulls + nonnull,
            "non_null_rows": nonnull,
            "null_count": nulls,
            "distinct_values": f.value_count,
            "dictionary_blocks": len(ks),
            "block_compression": ctypes,
            "index_block_compression": _codec.NAMES.get(index_ctype, f"unknown({index_ctype})"),
            "sizes": {
                "bitmaps": bitmap_bytes,
                "dictionary_blocks": dict_bytes,
                "index_block": f.index_length + _codec.TRAILER,
                "footer": FOOTER_LENGTH,
            },
            "first_key": first,
            "last_key": last,
            "written_in_key_order": self.ordered,
        }


def _deserialize64(raw: bytes, offset: int) -> BitMap64:
    # CRoaring validates more than the structural check (e.g. adjacent runs must be merged)
    try:
        return BitMap64.deserialize(raw)
    except (ValueError, IndexError, OverflowError, MemoryError) as e:
        raise IndexFormatError(f"invalid 64-bit roaring bitmap: {e}", offset) from None


def _prefix_upper_bound(prefix: bytes):
    for i in range(len(prefix) - 1, -1, -1):
        if prefix[i] != 0xFF:
            return prefix[:i] + bytes((prefix[i] + 1,))
    return None
