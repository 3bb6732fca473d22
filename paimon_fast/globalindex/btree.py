"""The BTree global index file (Java's ``btree`` global indexer), byte for byte.

One SST file per writer (:mod:`.sst`), all integers little-endian:

1. data blocks, each followed by a 5-byte trailer: one entry per distinct non-null key in
   the type's logical order (Java's comparator: strings as unsigned bytes, floats as
   ``Float.compare`` with ``-0.0 < 0.0`` and NaN largest), key = the ``KeySerializer`` bytes,
   value = ``varint count`` + the key's row ids as var-longs (ascending);
2. when some key is null: the null rows' ``RoaringNavigableMap64`` (portable, run-optimised)
   and the ``u32`` CRC-32 of those bytes;
3. a bloom filter (Java's writer writes none; one written by another writer is read);
4. the index block + trailer: each data block's last key and handle (always written);
5. a 52-byte footer ``i64 bloom offset, i32 bloom size, i64 bloom expected entries, i64
   index offset, i32 index size, i64 null offset, i32 null size, i32 version = 1, i32 magic
   = 0x50425449`` (absent parts zeros; sizes exclude trailers and CRC).

:class:`BTreeGlobalIndexWriter` writes one file from ``(key, row id)`` batches in any
order; :class:`BTreeIndexFile` reads one lazily (its answers live in
:class:`~paimon_fast.globalindex.index.BTreeGlobalIndex`).
"""

from __future__ import annotations

import itertools
import struct
import threading
from collections import OrderedDict

import numpy as np
from pyroaring import BitMap64

from .._kernels import load as _load
from ..errors import IndexFormatError
from ..fileindex.options import Options
from ..io.source import FileSource, file_tail
from . import sst as _sst
from .format import (
    SMALL_BITMAP,
    BitmapGlobalIndexWriter,
    Groups,
    _block_options,
    _FileWriter,
    group_chunks,
    group_column,
    open_with_tail,
    serialize64_sorted_unique,
    _deserialize64,
)
from .keys import KeyCodec
from .meta import SortedIndexFileMeta

_ks = _sst.kernels
_kg = _load("globalindex")

MAGIC = 0x50425449
VERSION = 1
FOOTER_LENGTH = 52
TAIL_READ = 16384  # bytes read at open: the footer and the index block (usually) before it
# a bloom filter no writer makes: Java's filter counts its bits in an int, and its probes a key
# are round(bits / keys * ln 2) = log2(1 / fpp), 7 for 1% (128 would mean fpp 2**-128)
MAX_BLOOM_BYTES = 0x7FFFFFFF // 8
MAX_BLOOM_HASHES = 128
_FOOTER = struct.Struct("<qiqqiqiii")

OPT_BLOCK_SIZE = "btree-index.block-size"
OPT_COMPRESSION = "btree-index.compression"
OPT_LEVEL = "btree-index.compression-level"
OPT_FALLBACK = "btree-index.fallback-scan-max-size"
DEFAULT_BLOCK_SIZE = "64 kb"
DEFAULT_FALLBACK = "256 mb"

# flags of a range walk: which bounds are inclusive
LO_INCLUSIVE, HI_INCLUSIVE = 1, 2


# ================================================================ writer


class BTreeGlobalIndexWriter(_FileWriter):
    """Writes one BTree global index file from ``(key, row id)`` batches.

    Batches may come in any order and any number; :meth:`finish` sorts the rows by (key, row
    id) with the grouping kernels and lays the file out as Java's ``BTreeIndexWriter`` does
    after receiving them in that order.  Options (Paimon's names and defaults):
    ``btree-index.block-size`` (64 kb), ``btree-index.compression`` (none; lz4, zstd, lzo),
    ``btree-index.compression-level`` (1).
    """

    def __init__(self, dtype, options=None):
        self.codec = KeyCodec(dtype)
        self.dtype = self.codec.dtype
        self.options = options if isinstance(options, Options) else Options(options)
        self.block_size, self.compression, self.level, self.encoder = _block_options(
            self.options, OPT_BLOCK_SIZE, OPT_COMPRESSION, OPT_LEVEL, DEFAULT_BLOCK_SIZE
        )
        self._keys = []
        self._rids = []
        self.row_count = 0

    def write_batch(self, keys, row_ids=None) -> None:
        """Add a batch: ``keys`` (Arrow / numpy / sequence, None = null) and their 64-bit
        row ids (default: the next ``len(keys)`` positions)."""
        BitmapGlobalIndexWriter.write_batch(self, keys, row_ids)  # the same checks and buffers

    def write(self, key, row_id: int) -> None:
        """Add one row (convenience; batches are much faster)."""
        self.write_batch([key], np.array([row_id], dtype=np.uint64))

    def finish(self):
        """``(file bytes, SortedIndexFileMeta bytes)``, or ``(None, None)`` for 0 rows (Java's
        writer refuses to write an empty file)."""
        if self.row_count == 0:
            return None, None
        arr, rids = self._gathered()
        data, meta = file_from_groups(group_column(self.codec, arr, rids), self.block_size, self.encoder)
        return bytes(data) if not isinstance(data, bytes) else data, meta


def file_from_groups(groups: Groups, block_size: int, encoder, chunks: bool = False):
    """``(file, meta bytes)`` of the rows of a :class:`~paimon_fast.globalindex.format.Groups`
    (the file as bytes, or as :class:`~paimon_fast.io.fsutil.Chunks` with ``chunks``)."""
    return _assemble(
        groups.nulls, groups.rids, groups.bounds, groups.key_off, groups.key_data, block_size, encoder, chunks
    )


def files_from_groups(groups: Groups, block_size: int, encoder, max_records: int, chunks: bool = False):
    """Files of at most ``max_records`` records each, cut as Java's rotating sorted index
    writer cuts them (see :func:`~paimon_fast.globalindex.format.group_chunks`):
    ``[(file, meta bytes, records)]``."""
    return [
        _assemble(nulls, rids, bounds, off, data, block_size, encoder, chunks) + (records,)
        for nulls, rids, bounds, off, data, records, _ in group_chunks(groups, max_records)
    ]


def _assemble(nulls, rids, bounds, key_off, key_data, block_size, encoder, chunks):
    from ..io.fsutil import Chunks

    key_off = np.ascontiguousarray(key_off, dtype=np.int64)
    key_data = np.ascontiguousarray(key_data, dtype=np.uint8)
    ng = len(bounds) - 1
    frame = encoder.ctype == _sst.NONE
    body, offs, sizes, last = _ks.btree_blocks(
        key_off,
        key_data,
        np.ascontiguousarray(rids, dtype=np.uint64),
        np.ascontiguousarray(bounds, dtype=np.int64),
        block_size,
        frame,
    )
    if frame:
        parts = [body]
        pos = len(body)
    else:  # compress block by block (each kept only when it saves an eighth)
        parts, hoffs, hsizes, pos = [], [], [], 0
        view = memoryview(body)
        for o, n in zip(offs.tolist(), sizes.tolist()):
            stored = encoder(bytes(view[o : o + n]))
            parts.append(stored)
            hoffs.append(pos)
            hsizes.append(len(stored) - _sst.TRAILER)
            pos += len(stored)
        offs = np.array(hoffs, dtype=np.int64)
        sizes = np.array(hsizes, dtype=np.int64)
    null_off = null_len = 0
    if len(nulls):
        bm = serialize64_sorted_unique(nulls)
        null_off, null_len = pos, len(bm)
        parts += [bm, struct.pack("<I", _sst._crc32(bm))]
        pos += len(bm) + 4
    stored = encoder(_ks.index_block(key_off, key_data, last, offs, sizes))
    index_off, index_len = pos, len(stored) - _sst.TRAILER
    parts.append(stored)
    parts.append(_FOOTER.pack(0, 0, 0, index_off, index_len, null_off, null_len, VERSION, MAGIC))
    kd = key_data
    first = kd[key_off[0] : key_off[1]].tobytes() if ng else None
    lastk = kd[key_off[ng - 1] : key_off[ng]].tobytes() if ng else None
    meta = SortedIndexFileMeta(first, lastk, len(nulls) > 0).serialize()
    return (Chunks(parts) if chunks else b"".join(parts)), meta


# ================================================================ reader (one file)


class BTreeFooter:
    """The 52-byte footer, checked against the file's size."""

    __slots__ = (
        "bloom_offset",
        "bloom_size",
        "bloom_expected",
        "index_offset",
        "index_size",
        "null_offset",
        "null_size",
        "version",
    )

    def __init__(self, raw, file_size: int, pos: int = 0):
        (
            self.bloom_offset,
            self.bloom_size,
            self.bloom_expected,
            self.index_offset,
            self.index_size,
            self.null_offset,
            self.null_size,
            self.version,
            magic,
        ) = _FOOTER.unpack_from(raw, pos)
        at = file_size - FOOTER_LENGTH
        if magic != MAGIC:
            raise IndexFormatError(f"not a btree global index file (footer magic 0x{magic & 0xFFFFFFFF:08x})", at + 48)
        if self.version != VERSION:
            raise IndexFormatError(f"unsupported btree global index version {self.version}", at + 44)
        io, isz = self.index_offset, self.index_size
        if io < 0 or isz < 0 or io + isz + _sst.TRAILER > at:
            raise IndexFormatError(f"index block [{io}, {io + isz + _sst.TRAILER}) lies outside the file body", at + 20)
        if self.null_offset or self.null_size:
            no, ns = self.null_offset, self.null_size
            if no < 0 or ns < 0 or no + ns + 4 > at:
                raise IndexFormatError(f"null bitmap [{no}, {no + ns + 4}) lies outside the file body", at + 32)
        if self.bloom_offset or self.bloom_size or self.bloom_expected:
            bo, bs, be = self.bloom_offset, self.bloom_size, self.bloom_expected
            if bo < 0 or bs <= 0 or be <= 0 or bo + bs > at:
                raise IndexFormatError(
                    f"bloom filter [{bo}, {bo + bs}) with {be} expected entries is not valid inside the file body", at
                )

    @property
    def has_nulls(self) -> bool:
        return bool(self.null_offset or self.null_size)

    @property
    def has_bloom(self) -> bool:
        return bool(self.bloom_offset or self.bloom_size or self.bloom_expected)

    def as_dict(self):
        return {s: getattr(self, s) for s in self.__slots__}


class BTreeIndexFile:
    """One BTree global index file, read lazily: opening reads the footer (and the bytes
    before it, where the index block usually lies); lookups binary-search the index block
    and walk the data blocks they need (LRU-cached, at most ``max_cached_blocks``)."""

    _null = None
    _nonnull = None
    _index = None
    _index_raw = None
    _bloom = None
    max_cached_blocks = 64

    def __init__(self, key_codec: KeyCodec, data_or_path, max_cached_blocks: int = 64):
        self.codec = key_codec
        self.kind = key_codec.kind
        self.source, size, self._tail_at, self._tail = open_with_tail(
            data_or_path, FOOTER_LENGTH, "btree global index", TAIL_READ
        )
        try:
            self.footer = BTreeFooter(self._tail, size, len(self._tail) - FOOTER_LENGTH)
        except BaseException:
            self.source.close()
            raise
        self._lock = threading.RLock()
        self._blocks = OrderedDict()
        if max_cached_blocks != 64:
            self.max_cached_blocks = max(1, int(max_cached_blocks))

    @property
    def size(self) -> int:
        return self.source.size

    def close(self):
        self.source.close()

    def _read_at(self, offset: int, length: int, what: str):
        t = self._tail_at
        if offset >= t and length >= 0 and offset + length <= self.source.size:
            return self._tail[offset - t : offset - t + length]
        return self.source.read_at(offset, length, what)

    def _block_raw(self, offset: int, length: int, what: str) -> np.ndarray:
        if offset < 0 or length < 0:
            raise IndexFormatError(f"{what} has a negative offset or size", offset)
        t = self._tail_at
        fd = self.source._fd if type(self.source) is FileSource and offset < t else None
        if fd is not None and hasattr(_ks, "read_block"):  # a local file: read and checked in one call
            stored, ctype = _ks.read_block(fd, offset, length, self.size - FOOTER_LENGTH)
            if ctype == _sst.NONE:
                return np.frombuffer(stored, np.uint8, count=length)
            raw, _ = _sst.decode(stored, length, offset)
            return np.frombuffer(raw, np.uint8)
        raw, _ = _sst.decode(self._read_at(offset, length + _sst.TRAILER, what), length, offset)
        return np.frombuffer(raw, np.uint8)

    # ------------------------------------------------------------ pieces
    def _index_u8(self) -> np.ndarray:
        """The decoded index block (read and CRC-checked once), before it is parsed."""
        u8 = self._index_raw
        if u8 is None:
            f = self.footer
            u8 = self._index_raw = self._block_raw(f.index_offset, f.index_size, "index block")
        return u8

    def _check_handle(self, j: int, off: int, size: int):
        if off < 0 or size < 0 or off + size + _sst.TRAILER > self.size - FOOTER_LENGTH:
            raise IndexFormatError(
                f"data block {j} [{off}, {off + size}) lies outside the file body", self.footer.index_offset
            )

    def index(self):
        """``(raw u8, key starts, key lengths, block offsets, block sizes)`` of the index block,
        read and checked once: every handle lies inside the file body."""
        idx = self._index
        if idx is None:
            with self._lock:
                if self._index is None:
                    f = self.footer
                    u8 = self._index_u8()
                    ks, kl, _, _ = _ks.block_entries(u8, f.index_offset)
                    offs, sizes = _ks.handles(u8, f.index_offset)
                    self.codec.check_key_lengths(kl, "btree global index block index", f.index_offset)
                    body = self.size - FOOTER_LENGTH
                    # offs + sizes could wrap in int64 (a var-int offset near 2**63): compare
                    # each with what is left instead
                    bad = np.flatnonzero(
                        (offs < 0) | (sizes < 0) | (offs > body) | (sizes > body - _sst.TRAILER - offs)
                    )
                    if len(bad):
                        j = int(bad[0])
                        self._check_handle(j, int(offs[j]), int(sizes[j]))
                    # Java writes the data blocks one after another: a handle that goes back
                    # or overlaps its predecessor would make a range scan read one block again
                    # and again (a 1 MB file asking for 60 GB of row ids)
                    back = np.flatnonzero(offs[1:] < offs[:-1] + sizes[:-1] + _sst.TRAILER)
                    if len(back):
                        j = int(back[0]) + 1
                        raise IndexFormatError(
                            f"data block {j} at {int(offs[j])} overlaps or precedes data block {j - 1} "
                            f"[{int(offs[j - 1])}, {int(offs[j - 1] + sizes[j - 1])})",
                            f.index_offset,
                        )
                    self._index = (u8, ks, kl, offs, sizes)
                idx = self._index
        return idx

    def block_count(self) -> int:
        return len(self.index()[3])

    def block(self, i: int, off: int = None, size: int = None) -> np.ndarray:
        """Decompressed bytes (uint8 array) of data block i (LRU-cached); ``off`` and ``size``
        are its checked handle when the caller has it (else read from the index)."""
        with self._lock:
            b = self._blocks.get(i)
            if b is not None:
                self._blocks.move_to_end(i)
                return b
        if off is None:
            _, _, _, offs, sizes = self.index()
            off, size = int(offs[i]), int(sizes[i])
        u8 = self._block_raw(off, size, f"data block {i}")
        with self._lock:
            self._blocks[i] = u8
            while len(self._blocks) > self.max_cached_blocks:
                self._blocks.popitem(last=False)
        return u8

    def null_rows(self) -> BitMap64:
        """The null rows' ids (empty when the file has no null bitmap)."""
        if self._null is None:
            f = self.footer
            if not f.has_nulls:
                self._null = BitMap64()
            else:
                blob = self._read_at(f.null_offset, f.null_size + 4, "null bitmap")
                raw = bytes(blob[: f.null_size])
                (crc,) = struct.unpack_from("<I", blob, f.null_size)
                want = _sst._crc32(raw)
                if crc != want:
                    raise IndexFormatError(
                        f"null bitmap CRC mismatch: stored 0x{crc:08x}, computed 0x{want:08x}",
                        f.null_offset + f.null_size,
                    )
                if len(raw) <= SMALL_BITMAP:
                    _kg.check64(np.frombuffer(raw, np.uint8), f.null_offset)
                self._null = _deserialize64(raw, f.null_offset)
        return self._null

    def nonnull_rows(self) -> BitMap64:
        """Every non-null row's id: all the data blocks walked (Java's ``allNonNullRows``)."""
        if self._nonnull is None:
            self._nonnull = self.range_rows(None, None, 0)
        return self._nonnull

    def _bloom_bits(self):
        b = self._bloom
        if b is None:
            f = self.footer
            import math

            hashes = max(1, int(math.floor(f.bloom_size * 8 / f.bloom_expected * math.log(2) + 0.5)))
            if hashes > MAX_BLOOM_HASHES or not 0 < f.bloom_size <= MAX_BLOOM_BYTES:
                raise IndexFormatError(
                    f"bloom filter of {f.bloom_size} bytes for {f.bloom_expected} keys ({hashes} probes a key): "
                    f"no writer's (at most {MAX_BLOOM_BYTES} bytes and {MAX_BLOOM_HASHES} probes)",
                    self.size - FOOTER_LENGTH,
                )
            bits = np.frombuffer(bytes(self._read_at(f.bloom_offset, f.bloom_size, "bloom filter")), np.uint8)
            b = self._bloom = (bits, hashes)
        return b

    def may_contain(self, key: bytes) -> bool:
        """The bloom filter's answer for a key (True when the file has none)."""
        if not self.footer.has_bloom:
            return True
        bits, hashes = self._bloom_bits()
        return bool(_ks.bloom_test(bits, hashes, key))

    # ------------------------------------------------------------ lookups
    def range_rows(self, lo, hi, flags: int) -> BitMap64:
        """Row ids of the keys between ``lo`` and ``hi`` (key bytes or None: unbounded; ``flags``
        :data:`LO_INCLUSIVE` / :data:`HI_INCLUSIVE`), walked as Java's range query: the index
        block's seek to ``lo``, then data blocks forward until a key passes ``hi``."""
        return _to_bitmap(self._range_parts(lo, hi, flags))

    def _range_parts(self, lo, hi, flags):
        u8, _, _, offs, _ = self.index()
        n = len(offs)
        if not n:
            return []
        start = 0
        if lo is not None:
            start = _ks.seek(self.kind, u8, lo, self.footer.index_offset)
            if start < 0:
                return []
        parts = []
        for i in range(start, n):
            rids, stop = _ks.scan(self.kind, self.block(i), lo, hi, flags, int(offs[i]))
            if len(rids):
                parts.append(rids)
            if stop:
                break
        return parts

    def equal(self, key: bytes) -> BitMap64:
        """Row ids of one key: the index block's seek (a cold reader decodes only the entry it
        lands on), then that data block's."""
        if not self.may_contain(key):
            return BitMap64()
        f = self.footer
        idx = self._index
        if idx is None and self._index_raw is None and hasattr(_ks, "cold_equal"):
            # a fresh reader: index block, data block and row ids in one kernel call when the
            # index lies in the bytes read at open and the blocks are uncompressed
            fd = self.source._fd if type(self.source) is FileSource else -1
            rids = _ks.cold_equal(
                self.kind, self._tail, self._tail_at, f.index_offset, f.index_size, key, fd, self.size - FOOTER_LENGTH
            )
            if rids is not None:
                return _to_bitmap([rids])
        if idx is None:
            got = _ks.seek_handle(self.kind, self._index_u8(), key, f.index_offset)
            if got is None:
                return BitMap64()
            i, off, size = got
            self._check_handle(i, off, size)
        else:
            if not len(idx[3]):
                return BitMap64()
            i = _ks.seek(self.kind, idx[0], key, f.index_offset)
            if i < 0:
                return BitMap64()
            off, size = int(idx[3][i]), int(idx[4][i])
        rids, _ = _ks.scan(self.kind, self.block(i, off, size), key, key, LO_INCLUSIVE | HI_INCLUSIVE, off)
        return _to_bitmap([rids])

    def isin(self, keys) -> BitMap64:
        out = BitMap64()
        for key in dict.fromkeys(keys):
            out |= self.equal(key)
        return out

    def entries(self, descending: bool = False):
        """``(key bytes, value start, value length, block raw)`` of every entry, in key order
        (reversed when ``descending``)."""
        _, _, _, offs, _ = self.index()
        order = range(len(offs) - 1, -1, -1) if descending else range(len(offs))
        for i in order:
            raw = self.block(i)
            ks, kl, vs, vl = _ks.block_entries(raw, int(offs[i]))
            b = raw.tobytes()
            idx = range(len(ks) - 1, -1, -1) if descending else range(len(ks))
            for j in idx:
                yield b[ks[j] : ks[j] + kl[j]], int(vs[j]), int(vl[j]), raw, int(offs[i])

    def top_n(self, limit: int, descending: bool, nulls_first: bool):
        """Java's ``BTreeIndexReader.visitTopN`` of one file: ``[(key bytes or None, row ids)]``
        in order, nulls first or last as asked (the lowest null row ids), then keys ascending
        or descending with each key's row ids in stored order, ``limit`` rows in all."""
        out = []
        remaining = int(limit)
        if remaining <= 0:
            return out

        def nulls():
            nonlocal remaining
            nb = self.null_rows()
            if len(nb) and remaining > 0:
                take = np.fromiter(itertools.islice(iter(nb), remaining), dtype=np.uint64)
                out.append((None, take))
                remaining -= len(take)

        if nulls_first:
            nulls()
        if remaining > 0:
            for key, vs, vl, raw, base in self.entries(descending):
                rids = _ks.entry_row_ids(raw, vs, vl, remaining, base)
                out.append((key, rids))
                remaining -= len(rids)
                if remaining <= 0:
                    break
        if remaining > 0 and not nulls_first:
            nulls()
        return out

    # ------------------------------------------------------------ describe
    def first_key(self):
        """The smallest key's bytes (None: no non-null key)."""
        for key, _, _, _, _ in self.entries():
            return key
        return None

    def last_key(self):
        u8, ks, kl, _, _ = self.index()
        return u8[ks[-1] : ks[-1] + kl[-1]].tobytes() if len(ks) else None

    def describe(self) -> dict:
        f = self.footer
        u8, ks, kl, offs, sizes = self.index()
        ctypes, data_bytes, entries = {}, 0, 0
        for i, (o, n) in enumerate(zip(offs.tolist(), sizes.tolist())):
            t = bytes(self._read_at(o + n, 1, "trailer"))[0]
            name = _sst.NAMES.get(t, f"unknown({t})")
            ctypes[name] = ctypes.get(name, 0) + 1
            data_bytes += n + _sst.TRAILER
            entries += len(_ks.block_entries(self.block(i), o)[0])
        index_ctype = bytes(self._read_at(f.index_offset + f.index_size, 1, "trailer"))[0]
        nulls = len(self.null_rows())
        nonnull = len(self.nonnull_rows())
        first, last = self.first_key(), self.last_key()

        def show(k):
            if k is None:
                return None
            try:
                return self.codec.to_python(k)
            except (OverflowError, ValueError, IndexFormatError):  # a key no value of the type has
                return "0x" + k.hex()

        return {
            "format": "btree global index",
            "type": str(self.codec.dtype),
            "file_size": self.size,
            "footer": f.as_dict(),
            "rows": nulls + nonnull,
            "non_null_rows": nonnull,
            "null_count": nulls,
            "distinct_values": entries,
            "data_blocks": len(offs),
            "block_compression": ctypes,
            "index_block_compression": _sst.NAMES.get(index_ctype, f"unknown({index_ctype})"),
            "bloom_filter": f.has_bloom,
            "sizes": {
                "data_blocks": data_bytes,
                "null_bitmap": (f.null_size + 4) if f.has_nulls else 0,
                "bloom_filter": f.bloom_size if f.has_bloom else 0,
                "index_block": f.index_size + _sst.TRAILER,
                "footer": FOOTER_LENGTH,
            },
            "first_key": show(first),
            "last_key": show(last),
        }


def _to_bitmap(parts) -> BitMap64:
    """A BitMap64 of row id arrays (distinct row ids, in any order)."""
    if len(parts) == 1:
        a = parts[0]
        if len(a) <= 4096:
            return BitMap64(a.tolist())
    parts = [p for p in parts if len(p)]
    if not parts:
        return BitMap64()
    a = parts[0] if len(parts) == 1 else np.concatenate(parts)
    if len(a) <= 4096:
        return BitMap64(a.tolist())
    return _deserialize64(serialize64_sorted_unique(a), 0)


def is_btree_index(path) -> bool:
    """Does the file end with the BTree global index footer (magic 0x50425449)?"""
    tail = file_tail(path, 4, FOOTER_LENGTH)
    return tail is not None and struct.unpack("<i", tail)[0] == MAGIC
