"""The deletion vectors, 32-bit (:class:`BitmapDeletionVector`) and 64-bit
(:class:`Bitmap64DeletionVector`), over their common base :class:`DeletionVector`: built
from positions, probed, merged, serialized and read back byte for byte like Java (the
layouts are described in :mod:`.deletion`, which holds the deletion files and hands these
names on), and applying a vector to Arrow data (:func:`apply_deletion_vector`,
:func:`filter_batches`: the deleted rows dropped by the kernels)."""

from __future__ import annotations

import struct
import zlib
from typing import Iterable

import numpy as np

from ..core.roaring import check32 as _check32

from ..core import roaring
from .._kernels import load as _load
from ..errors import IndexFormatError, IndexTooLargeError, InvalidArgumentError

_k = _load("dv")

MAGIC32 = 1581511376
MAGIC64 = 1681511377
MAX_POSITION_32 = 2**31 - 1
MAX_POSITION_64 = ((2**31 - 2) << 32) | 0x80000000
_MAX_JAVA_ARRAY = 2**31 - 1
_CHUNK_BITS = 65536
_CHUNK_WORDS = 1024
_EMPTY32 = roaring.EMPTY32
_MAGIC32_BE = struct.pack(">i", MAGIC32)


def _dense_ok(max_pos: int, card: int) -> bool:
    """Use a bit set when it costs at most 32 bytes per deleted row (or <= 1 MiB)."""
    nbytes = ((max_pos >> 16) + 1) * 8192
    return nbytes <= max(1 << 20, 32 * card)


def _as_positions(positions) -> np.ndarray:
    """Any sequence / numpy / Arrow array / pyroaring bitmap -> int64 array."""
    try:
        import pyarrow as pa

        if isinstance(positions, pa.ChunkedArray):
            positions = positions.combine_chunks()
        if isinstance(positions, pa.Array):
            if positions.null_count:
                raise ValueError("deletion positions must not contain nulls")
            positions = positions.to_numpy(zero_copy_only=False)
    except ImportError:  # pragma: no cover
        pass
    if hasattr(positions, "to_array") and not isinstance(positions, np.ndarray):
        arr = positions.to_array()  # pyroaring BitMap / BitMap64
        positions = np.frombuffer(arr, dtype=np.uint64 if arr.itemsize == 8 else np.uint32) if len(arr) else []
    a = np.asarray(positions)
    if a.dtype == object and a.size:
        if not all(isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) for v in a.ravel()):
            bad = next(v for v in a.ravel() if not isinstance(v, (int, np.integer)) or isinstance(v, (bool, np.bool_)))
            raise InvalidArgumentError(f"deletion positions must be integers, got {bad!r}")
        a = np.asarray(a, dtype=np.int64)
    elif a.dtype == object or a.dtype.kind == "f":
        if a.size and not np.all(np.isfinite(a) & (a == np.floor(a))):
            bad = a.ravel()[~(np.isfinite(a.ravel()) & (a.ravel() == np.floor(a.ravel())))][0]
            raise InvalidArgumentError(
                f"deletion positions must be integers, got {float(bad)!r} (a fractional position is not truncated)"
            )
        a = np.asarray(a, dtype=np.int64) if a.size else np.zeros(0, np.int64)
    if a.size == 0:
        return np.zeros(0, np.int64)
    if a.dtype.kind not in "iu":
        raise TypeError(f"deletion positions must be integers, got {a.dtype}")
    if a.dtype == np.uint64 and a.max() > np.uint64(2**63 - 1):
        raise ValueError(f"deletion position {int(a.max())} is beyond the supported maximum")
    return np.ascontiguousarray(a.ravel(), dtype=np.int64)


class DeletionVector:
    """Deleted row positions of one data file (immutable).

    Build with :meth:`from_positions`, read with :meth:`deserialize` (bin) or
    :meth:`from_blob` (size + bin + CRC).  ``bitmap64`` tells the kind.
    """

    bitmap64 = False
    MAGIC = MAGIC32
    MAX_POSITION = MAX_POSITION_32
    __slots__ = ("_words", "_sorted", "_card", "_nkeys")

    def __init__(self, *, words=None, sorted_positions=None, cardinality=None, nkeys=None):
        if type(self) is DeletionVector:
            raise TypeError("use DeletionVector.from_positions(...) or a subclass")
        self._words = words
        self._sorted = sorted_positions
        if cardinality is None:
            cardinality = int(_k.popcount(words)) if words is not None else len(sorted_positions)
        self._card = int(cardinality)
        self._nkeys = nkeys

    # ------------------------------------------------------------ building
    @staticmethod
    def from_positions(positions, bitmap64: bool = False) -> "DeletionVector":
        """A vector deleting ``positions`` (any order, duplicates allowed).

        ``bitmap64=False`` -> :class:`BitmapDeletionVector` (positions <= 2^31-1),
        ``True`` -> :class:`Bitmap64DeletionVector` (positions <= Java's
        ``OptimizedRoaringBitmap64.MAX_VALUE``).  Out-of-range positions raise
        ``ValueError``.
        """
        cls = Bitmap64DeletionVector if bitmap64 else BitmapDeletionVector
        return cls._build(_as_positions(positions))

    @classmethod
    def empty(cls, bitmap64: bool = False) -> "DeletionVector":
        cls = Bitmap64DeletionVector if bitmap64 else BitmapDeletionVector
        return cls._from_sorted(np.zeros(0, np.uint64))

    @classmethod
    def _check_range(cls, lo: int, hi: int):
        if lo < 0:
            raise ValueError(f"deletion position {lo} is negative")
        if hi > cls.MAX_POSITION:
            if cls.bitmap64:
                raise ValueError(
                    f"Bitmap64DeletionVector supports positions that are >= 0 and <= {MAX_POSITION_64}: {hi}"
                )
            raise ValueError(
                f"deletion position {hi} is beyond 2147483647: the file has too many rows "
                "for a 32-bit deletion vector (use bitmap64=True)"
            )

    @classmethod
    def _build(cls, pos: np.ndarray) -> "DeletionVector":
        if pos.size == 0:
            return cls._from_sorted(np.zeros(0, np.uint64))
        lo, hi = int(pos.min()), int(pos.max())
        cls._check_range(lo, hi)
        if _dense_ok(hi, pos.size):
            nwords = ((hi >> 16) + 1) * _CHUNK_WORDS
            words, card = _k.build_bits(pos, nwords)
            return cls(words=words, cardinality=card, nkeys=(hi >> 32) + 1)
        s = np.sort(pos).view(np.uint64)
        n = _k.unique_sorted_inplace(s)
        return cls._from_sorted(s[:n].copy() if n != s.size else s)

    @classmethod
    def _from_sorted(cls, s: np.ndarray, nkeys=None) -> "DeletionVector":
        """From a sorted unique uint64 array (picks the in-memory form)."""
        if nkeys is None:
            nkeys = int(s[-1] >> np.uint64(32)) + 1 if s.size else 0
        if s.size and _dense_ok(int(s[-1]), s.size):
            nwords = ((int(s[-1]) >> 16) + 1) * _CHUNK_WORDS
            words, card = _k.build_bits(s.view(np.int64), nwords)
            return cls(words=words, cardinality=card, nkeys=nkeys)
        return cls(sorted_positions=s, cardinality=s.size, nkeys=nkeys)

    # ------------------------------------------------------------ queries
    @property
    def cardinality(self) -> int:
        """Number of deleted rows (Java ``getCardinality()``)."""
        return self._card

    def get_cardinality(self) -> int:
        return self._card

    def is_empty(self) -> bool:
        return self._card == 0

    def __len__(self):
        return self._card

    def positions(self) -> np.ndarray:
        """Deleted positions, ascending, as uint64."""
        if self._words is not None:
            return _k.bits_to_sorted(self._words, self._card)
        return self._sorted

    def is_deleted(self, position: int) -> bool:
        return bool(self.is_deleted_batch(np.array([position], dtype=np.int64))[0])

    def is_deleted_batch(self, positions) -> np.ndarray:
        """numpy bool mask: ``positions[i]`` is deleted (negative / out of range -> False)."""
        p = np.ascontiguousarray(positions, dtype=np.int64)
        if self._words is not None:
            out = _k.contains_bits(self._words, p.ravel())
        else:
            out = _k.contains_sorted(self._sorted, p.ravel())
        return out.view(np.bool_).reshape(p.shape)

    def keep_mask(self, start: int, length: int) -> np.ndarray:
        """Bool array of ``length``: row ``start + i`` is kept (not deleted)."""
        if start < 0:
            raise ValueError("start row must be >= 0")
        if self._words is not None:
            return _k.keep_mask_bits(self._words, start, length)
        return _k.keep_mask_sorted(self._sorted, start, length)

    def deleted_in_range(self, start: int, length: int) -> int:
        """How many rows of ``[start, start + length)`` are deleted."""
        return int(length - np.count_nonzero(self.keep_mask(start, length)))

    def remove_deleted(self, rows):
        """``rows`` (row positions: numpy array, or a pyroaring BitMap / BitMap64
        such as an index result's bitmap) without the deleted ones, same kind back."""
        if hasattr(rows, "to_array") and not isinstance(rows, np.ndarray):
            arr = rows.to_array()
            pos = (
                np.frombuffer(arr, dtype=np.uint64 if arr.itemsize == 8 else np.uint32)
                if len(arr)
                else np.zeros(0, np.uint32)
            )
            kept = pos[~self.is_deleted_batch(pos.astype(np.int64))]
            return type(rows)(kept)
        r = np.asarray(rows)
        return r[~self.is_deleted_batch(r.astype(np.int64))]

    def filter_batch(self, batch, start: int):
        """Drop deleted rows from an Arrow RecordBatch / Table whose first row has
        position ``start`` in its data file."""
        return apply_deletion_vector(self, batch, start)

    # ------------------------------------------------------------ combining
    def merge(self, other: "DeletionVector") -> "DeletionVector":
        """Union with a vector of the same kind (Java ``merge``); returns a new vector."""
        if type(other) is not type(self):
            raise TypeError("Only instance with the same class type can be merged.")
        nkeys = max(self._nkeys or 0, other._nkeys or 0)
        if self._words is not None and other._words is not None:
            a, b = self._words, other._words
            if a.size < b.size:
                a, b = b, a
            w = a.copy()
            w[: b.size] |= b
            return type(self)(words=w, nkeys=nkeys)
        u = np.union1d(self.positions(), other.positions()).astype(np.uint64)
        return type(self)._from_sorted(u, nkeys=nkeys)

    __or__ = merge

    def with_deleted(self, positions) -> "DeletionVector":
        """A new vector with ``positions`` deleted as well."""
        return self.merge(type(self)._build(_as_positions(positions)))

    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        if self._card != other._card:
            return False
        return bool(np.array_equal(self.positions(), other.positions()))

    def __hash__(self):  # pragma: no cover - mutable-looking value object
        return hash((type(self).__name__, self._card))

    def __repr__(self):
        form = "bitset" if self._words is not None else "sorted"
        return f"{type(self).__name__}(cardinality={self._card}, {form})"

    @classmethod
    def _decode_groups(cls, u8, groups, base, nkeys=None):
        """groups: (key, offset, header cardinality, last container key) of bitmaps
        whose extent was checked by ``scan32``; keys ascending.  The content is
        validated here: while filling the bit set (dense) or before decoding."""
        total = sum(g[2] for g in groups)
        nonempty = [g for g in groups if g[3] >= 0]
        if nkeys is None:
            nkeys = (groups[-1][0] + 1) if groups else 0
        if not nonempty:
            return cls(sorted_positions=np.zeros(0, np.uint64), cardinality=0, nkeys=nkeys)
        k, _, _, last = nonempty[-1]
        max_pos = (k << 32) | (last << 16) | 0xFFFF
        if _dense_ok(max_pos, total):
            nchunks = (max_pos >> 16) + 1
            words = np.zeros(nchunks * _CHUNK_WORDS, dtype=np.uint64)
            for k, o, c, last in nonempty:
                _k.fill_bits(u8, o, words, k << 16, last, base)
            return cls(words=words, cardinality=total, nkeys=nkeys)
        out = np.empty(total, dtype=np.uint64)
        at = 0
        for k, o, c, last in nonempty:
            _, checked = _check32(u8, o, -1, base)
            if checked != c:  # pragma: no cover - check32 verifies card against content
                raise IndexFormatError("roaring bitmap cardinality mismatch", base + o)
            _k.roaring_to_sorted(u8, o, k, out, at, c)
            at += c
        return cls(sorted_positions=out, cardinality=total, nkeys=nkeys)

    # ------------------------------------------------------------ bytes
    def serialize(self) -> bytes:
        """The bin: magic + bitmap, identical to Java's."""
        raise NotImplementedError

    def to_blob(self) -> bytes:
        """``i32 BE size, bin, i32 BE CRC-32(bin)`` (Java ``serializeTo``); for 64-bit
        vectors this is Iceberg's deletion-vector-v1 blob."""
        b = self.serialize()
        if len(b) + 8 > _MAX_JAVA_ARRAY:
            raise IndexTooLargeError("Can't serialize index > 2GB")
        return struct.pack(">i", len(b)) + b + struct.pack(">I", zlib.crc32(b))

    serialize_to_bytes = to_blob

    @property
    def meta_length(self) -> int:
        """Length Paimon's index metadata records for this vector."""
        n = len(self.serialize())
        return n + 8 if self.bitmap64 else n

    @staticmethod
    def deserialize(data, base: int = 0) -> "DeletionVector":
        """Read a bin (magic + bitmap); the kind is told by the magic."""
        u8 = np.frombuffer(data, dtype=np.uint8) if not isinstance(data, np.ndarray) else data
        if len(u8) < 4:
            raise IndexFormatError("deletion vector truncated (magic)", base)
        head = bytes(u8[:4])
        if struct.unpack(">i", head)[0] == MAGIC32:
            return BitmapDeletionVector._read(u8, base)
        if struct.unpack("<i", head)[0] == MAGIC64:
            return Bitmap64DeletionVector._read(u8, base)
        raise IndexFormatError(
            f"invalid deletion vector magic {struct.unpack('>i', head)[0]}, expected {MAGIC32} (32-bit, BE) "
            f"or {MAGIC64} (64-bit, LE)",
            base,
        )

    @staticmethod
    def from_blob(blob, base: int = 0, data_file: str | None = None) -> "DeletionVector":
        """Read ``size + bin + CRC`` (CRC checked)."""
        mv = memoryview(blob).cast("B")
        who = f" of data file {data_file!r}" if data_file is not None else ""
        if len(mv) < 8:
            raise IndexFormatError(f"deletion vector blob{who} truncated ({len(mv)} bytes)", base)
        (size,) = struct.unpack_from(">i", mv, 0)
        if size < 4 or size != len(mv) - 8:
            raise IndexFormatError(
                f"deletion vector{who}: size field {size} does not match the {len(mv)}-byte blob", base
            )
        b = mv[4 : 4 + size]
        (crc,) = struct.unpack_from(">I", mv, 4 + size)
        if zlib.crc32(b) != crc:
            raise IndexFormatError(
                f"deletion vector{who}: CRC-32 mismatch (stored {crc:#010x}, computed {zlib.crc32(b):#010x})",
                base + 4 + size,
            )
        return DeletionVector.deserialize(np.frombuffer(b, dtype=np.uint8), base + 4)

    deserialize_from_bytes = from_blob


class BitmapDeletionVector(DeletionVector):
    """32-bit deletion vector (Paimon's default)."""

    bitmap64 = False
    MAGIC = MAGIC32
    MAX_POSITION = MAX_POSITION_32
    __slots__ = ()

    def serialize(self) -> bytes:
        if self._words is not None:
            return _k.bits_serialize(self._words, 0, self._words.size // _CHUNK_WORDS, _MAGIC32_BE)
        return _MAGIC32_BE + roaring.serialize_sorted32(self._sorted.astype(np.uint32))

    @classmethod
    def _read(cls, u8: np.ndarray, base: int) -> "BitmapDeletionVector":
        size, card, last = _k.scan32(u8, 4, base)
        if 4 + size != len(u8):
            raise IndexFormatError(
                f"32-bit deletion vector: {len(u8) - 4 - size} bytes after the bitmap", base + 4 + size
            )
        return cls._decode_groups(u8, [(0, 4, card, last)], base)

    def to_bitmap64(self) -> "Bitmap64DeletionVector":
        """Java ``Bitmap64DeletionVector.fromBitmapDeletionVector``."""
        return Bitmap64DeletionVector(words=self._words, sorted_positions=self._sorted, cardinality=self._card, nkeys=1)


class Bitmap64DeletionVector(DeletionVector):
    """64-bit deletion vector (``deletion-vectors.bitmap64``), Iceberg compatible."""

    bitmap64 = True
    MAGIC = MAGIC64
    MAX_POSITION = MAX_POSITION_64
    __slots__ = ()

    def _nonempty(self):
        """``[(key, 32-bit bitmap bytes)]`` of the keys holding positions, ascending
        (empty keys cost nothing here: :meth:`serialize` writes them in bulk)."""
        if self._words is not None:
            nchunks = self._words.size // _CHUNK_WORDS
            out = []
            for key in range((nchunks + (1 << 16) - 1) >> 16):
                c0 = key << 16
                bm = _k.bits_serialize(self._words, c0, min(nchunks - c0, 1 << 16))
                if bm != _EMPTY32:
                    out.append((key, bm))
            return out
        s = self._sorted
        if not s.size:
            return []
        hi = (s >> np.uint64(32)).astype(np.int64)
        keys = np.unique(hi)
        bounds = np.append(np.searchsorted(hi, keys), hi.size).astype(np.int64)
        lo = (s & np.uint64(0xFFFFFFFF)).astype(np.uint32)
        blob, sizes = roaring.serialize_groups32(lo, bounds)
        ends = np.cumsum(sizes)
        starts = ends - sizes
        mv = memoryview(blob)
        return [(k, mv[x:y]) for k, x, y in zip(keys.tolist(), starts.tolist(), ends.tolist())]

    def _bitmaps(self):
        """(32-bit bitmap bytes) for every key 0 .. nkeys-1 (dense, as Java); for small vectors only."""
        got = dict(self._nonempty())
        return [got.get(k, _EMPTY32) for k in range(self._nkeys or 0)]

    @staticmethod
    def _java_size(nkeys: int, nonempty) -> int:
        """Bytes of the bin in Java's dense layout: every key 0 .. nkeys-1 with an (often empty) bitmap."""
        return 12 + 12 * nkeys + sum(len(bm) - len(_EMPTY32) for _, bm in nonempty)

    def serialize(self) -> bytes:
        nkeys = self._nkeys or 0
        if nkeys == 1 and self._words is not None and self._words.size <= (_CHUNK_WORDS << 16):
            # one key: write magic, count and key in front of the bitmap in one buffer
            return _k.bits_serialize(
                self._words, 0, self._words.size // _CHUNK_WORDS, struct.pack("<iQI", MAGIC64, 1, 0)
            )
        nonempty = self._nonempty()
        size = self._java_size(nkeys, nonempty)
        if size + 8 > _MAX_JAVA_ARRAY:
            raise IndexTooLargeError(
                f"Can't serialize index > 2GB: a 64-bit deletion vector over {nkeys} bitmap "
                f"keys is {size} bytes in Java's layout (Java fails too)"
            )
        out = bytearray(size)
        struct.pack_into("<iQ", out, 0, MAGIC64, nkeys)
        p = 12
        nxt = 0
        for key, bm in nonempty + [(nkeys, b"")]:
            if key > nxt:  # keys nxt .. key-1 are empty: (u32 key, empty bitmap) records, written in bulk
                run = np.frombuffer(out, np.uint32, 3 * (key - nxt), p).reshape(-1, 3)  # a view: no copy
                run[:, 0] = np.arange(nxt, key, dtype=np.uint32)
                run[:, 1:] = np.frombuffer(_EMPTY32, np.uint32)
                p += run.nbytes
                del run
            if key < nkeys:
                struct.pack_into("<I", out, p, key)
                out[p + 4 : p + 4 + len(bm)] = bm
                p += 4 + len(bm)
            nxt = key + 1
        return bytes(out)

    @classmethod
    def _read(cls, u8: np.ndarray, base: int) -> "Bitmap64DeletionVector":
        n = len(u8)
        if n < 12:
            raise IndexFormatError("64-bit deletion vector truncated (bitmap count)", base + 4)
        (count,) = struct.unpack_from("<Q", u8, 4)
        # every bitmap needs a 4-byte key and >= 8 bytes: check before looping / allocating
        if count > (n - 12) // 12:
            raise IndexFormatError(
                f"64-bit deletion vector claims {count} bitmaps, more than its {n} bytes can hold", base + 4
            )
        p = 12
        last = -1
        groups = []  # the records holding positions (or not in Java's empty form), scanned
        extra = 0  # their bytes beyond an empty bitmap's 8, for the dense size below
        left = count
        while left:
            # Java writes every key 0 .. the last one: long runs of (key, empty bitmap) records are
            # checked in bulk, not one Python iteration each (a sparse vector has millions)
            run = _empty_run(u8, p, last, left)
            if run:
                last += run
                left -= run
                p += 12 * run
                continue
            if n - p < 4:
                raise IndexFormatError("64-bit deletion vector truncated (key)", base + p)
            (key,) = struct.unpack_from("<i", u8, p)
            if key < 0:
                raise IndexFormatError(f"Invalid unsigned key: {key}", base + p)
            if key > 2**31 - 2:
                raise IndexFormatError(f"Key is too large: {key}", base + p)
            if key <= last:
                raise IndexFormatError("Keys must be sorted in ascending order", base + p)
            size, card, lastc = _k.scan32(u8, p + 4, base)
            groups.append((key, p + 4, card, lastc))
            extra += size - len(_EMPTY32)
            last = key
            left -= 1
            p += 4 + size
        if p != n:
            raise IndexFormatError(f"64-bit deletion vector: {n - p} bytes after the bitmaps", base + p)
        nk = last + 1
        # a vector whose dense form exceeds Java's 2 GB array limit cannot be written back by Java
        # (or by us): refuse it here
        dense = 12 + 12 * nk + extra
        if count and dense + 8 > _MAX_JAVA_ARRAY:
            raise IndexFormatError(
                f"64-bit deletion vector: bitmap key {nk - 1} makes its Java layout "
                f"{dense} bytes, beyond Java's 2 GB limit (it cannot be written back)",
                base + 4,
            )
        if groups and groups[-1][0] == 2**31 - 2:
            # Java rejects such positions on add; keep the reader as strict as the writer
            mx = cls._decode_groups(u8, groups[-1:], base)
            if mx.cardinality and int(mx.positions()[-1]) > MAX_POSITION_64:
                raise IndexFormatError("64-bit deletion vector holds a position beyond Java's maximum", base)
        return cls._decode_groups(u8, groups, base, nkeys=nk)


_EMPTY_RECORD = np.frombuffer(_EMPTY32, np.uint32)  # the (cookie, container count) of an empty bitmap
_RUN_MIN = 32  # shorter runs go through the record loop


def _empty_run(u8: np.ndarray, p: int, last: int, left: int) -> int:
    """How many records from ``p`` on are ``(last + 1 + i, empty bitmap)`` in Java's form (12 bytes
    each: ascending consecutive keys, cookie 12346, no containers), at most ``left``; 0 for a run
    shorter than ``_RUN_MIN`` (the record loop checks those one by one, with its error messages)."""
    room = min(left, (len(u8) - p) // 12, 2**31 - 2 - last)
    if room < _RUN_MIN or bytes(u8[p + 4 : p + 12]) != _EMPTY32 or int.from_bytes(u8[p : p + 4], "little") != last + 1:
        return 0
    done = 0
    step = 4096
    while done < room:
        m = min(step, room - done)
        at = p + 12 * done
        rec = u8[at : at + 12 * m].view("<u4").reshape(m, 3)
        ok = (
            (rec[:, 0] == np.arange(last + 1 + done, last + 1 + done + m, dtype=np.int64))
            & (rec[:, 1] == _EMPTY_RECORD[0])
            & (rec[:, 2] == _EMPTY_RECORD[1])
        )
        if not ok.all():
            done += int(np.argmin(ok))
            break
        done += m
        step = min(step * 4, 1 << 20)
    return done if done >= _RUN_MIN else 0


# ---------------------------------------------------------------- applying to data


def _fixed_width(t) -> int:
    import pyarrow as pa

    if pa.types.is_boolean(t):
        return -1
    if (
        pa.types.is_integer(t)
        or pa.types.is_floating(t)
        or pa.types.is_temporal(t)
        or pa.types.is_decimal(t)
        or pa.types.is_fixed_size_binary(t)
    ):
        try:
            bw = t.bit_width
        except ValueError:
            return 0
        return bw // 8 if bw % 8 == 0 else 0
    return 0


def _alloc(nbytes: int):
    """A writable Arrow buffer (Arrow's pool reuses freed pages) and a uint8 view."""
    import pyarrow as pa

    buf = pa.allocate_buffer(max(int(nbytes), 1))
    return buf, np.frombuffer(buf, np.uint8)


def _filter_array(arr, keep_u8: np.ndarray, nkeep: int, keep_pa):
    """``arr`` without the rows whose keep byte is 0 (kernels for flat types,
    Arrow's filter otherwise)."""
    import pyarrow as pa

    t = arr.type
    n = len(arr)
    off = arr.offset
    bufs = arr.buffers()
    validity = None
    if arr.null_count and bufs[0] is not None:
        validity, v = _alloc(nkeep // 8 + 1)
        _k.filter_bits(np.frombuffer(bufs[0], np.uint8), off, keep_u8, nkeep, v)
    w = _fixed_width(t)
    if w > 0:
        src = np.frombuffer(bufs[1], np.uint8)[off * w : (off + n) * w]
        out, o = _alloc((nkeep + 1) * w)
        _k.filter_fixed(src, w, keep_u8, nkeep, o)
        return pa.Array.from_buffers(t, nkeep, [validity, out])
    if w == -1:  # boolean values are bits
        out, o = _alloc(nkeep // 8 + 1)
        _k.filter_bits(np.frombuffer(bufs[1], np.uint8), off, keep_u8, nkeep, o)
        return pa.Array.from_buffers(t, nkeep, [validity, out])
    if pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_large_string(t) or pa.types.is_large_binary(t):
        large = pa.types.is_large_string(t) or pa.types.is_large_binary(t)
        offs = np.frombuffer(bufs[1], np.int64 if large else np.int32, count=off + n + 1)[off:]
        offs = np.ascontiguousarray(offs, dtype=np.int64)
        data = np.frombuffer(bufs[2], np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
        total = _k.var_kept_bytes(offs, len(data), keep_u8)
        ow = 8 if large else 4
        out_off, oo = _alloc((nkeep + 1) * ow)
        out_data, od = _alloc(total)
        _k.filter_var(offs, data, keep_u8, nkeep, oo, ow, od)
        return pa.Array.from_buffers(t, nkeep, [validity, out_off, out_data])
    return arr.filter(keep_pa)


def apply_deletion_vector(dv: DeletionVector | None, batch, start: int):
    """Drop the deleted rows of ``batch`` (Arrow RecordBatch or Table) whose first
    row is row ``start`` of its data file; ``dv=None`` returns the batch as is.

    The keep-mask comes from a kernel and flat columns (numbers, temporal,
    decimal, boolean, string, binary) are compacted by kernels too, without a
    Python object per row; other column types use Arrow's filter.  A batch
    without deleted rows is returned unchanged.
    """
    if dv is None or dv.is_empty():
        return batch
    import pyarrow as pa

    n = batch.num_rows
    if n == 0:
        return batch
    mask = dv.keep_mask(start, n)
    keep_u8 = mask.view(np.uint8)
    nkeep = int(np.count_nonzero(keep_u8))
    if nkeep == n:
        return batch
    keep_pa = pa.BooleanArray.from_buffers(pa.bool_(), n, [None, pa.py_buffer(np.packbits(keep_u8, bitorder="little"))])
    if isinstance(batch, pa.RecordBatch):
        cols = [_filter_array(c, keep_u8, nkeep, keep_pa) for c in batch.columns]
        return pa.RecordBatch.from_arrays(cols, schema=batch.schema)
    return batch.filter(keep_pa)


def filter_batches(dv: DeletionVector | None, batches: Iterable, start: int = 0):
    """Yield each batch of a data file (in order, starting at row ``start``) with
    its deleted rows removed."""
    pos = start
    for b in batches:
        n = b.num_rows
        yield apply_deletion_vector(dv, b, pos)
        pos += n
