"""Range bitmap file index (``range-bitmap``), byte-compatible with Paimon's
``RangeBitmapFileIndex`` / ``RangeBitmap`` / ``ChunkedDictionary`` /
``BitSliceIndexBitmap`` (FORMAT_NOTES.md section 9; all big-endian)::

    i32 header length | u8 version=1 | i32 row count | i32 cardinality
    [key min | key max]  (only when cardinality > 0) | i32 dictionary length
    dictionary: i32 13 | u8 1 | i32 chunks C | i32 4*C | i32 chunks length
                C x i32 chunk offsets | chunk headers | keys area
    bit-sliced codes: i32 header length | u8 1 | u8 slices S | i32 ebm length
                i32 8*S | S x (i32 offset, i32 length) | ebm | slices

Each distinct non-null value gets its rank as dictionary code; slice i holds
the rows whose code has bit i set (``S = max(bitLength(C-1), 1)``; 64 empty
slices when C = 0, as Java).  Keys: TINYINT 1 byte, SMALLINT 2, INT / DATE /
TIME 4, BIGINT / TIMESTAMP(p<=6) / DECIMAL(p<=18) 8 (millis, micros,
unscaled), FLOAT / DOUBLE raw IEEE bits (NaN canonicalised), BOOLEAN 1,
CHAR / VARCHAR / STRING ``i32 length + UTF-8``.  Order: signed numbers,
``Float.compare`` for floats (-0.0 < 0.0 < ... < +Inf < NaN), bytes for strings.

Reader answers are exact row bitmaps (:class:`~paimon_fast.result.BitmapResult`)
computed over dense 64-bit words by Cython kernels (O'Neil-Quass slice
comparisons, slice-by-slice top-k).  As Java, comparisons return only non-null
rows (``!=`` / ``NOT IN`` exclude nulls), and a null literal in a value
comparison raises :class:`NullLiteralError` (Java: NullPointerException).
"""
from __future__ import annotations

import bisect
import functools
import struct

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap

from ..errors import IndexFormatError, UnsupportedTypeError
from ..predicate import TopN
from ..result import BitmapResult
from ..types import DataType, decimal_unscaled, fixed_values, long_keys, to_arrow_array, validity_mask
from .base import FileIndexReader, FileIndexWriter
from .registry import IndexFactory, register
from ._bitslice import (BLOCK_WORDS, NullLiteralError, _k, from_bitmap, nwords, positions_bitmap, range_bitmap,
                         to_bitmap, topk_candidate_words)

INDEX_TYPE = "range-bitmap"
CHUNK_SIZE = "chunk-size"
VERSION = 1

__all__ = ["RangeBitmapWriter", "RangeBitmapReader", "NullLiteralError", "KeyCodec", "build_index"]

_FIXED = {
    "TINYINT": 1, "SMALLINT": 2, "INT": 4, "DATE": 4, "TIME": 4, "BIGINT": 8,
    "TIMESTAMP": 8, "TIMESTAMP_LTZ": 8, "DECIMAL": 8, "FLOAT": 4, "DOUBLE": 8, "BOOLEAN": 1,
}


_NARROW = ("TINYINT", "SMALLINT", "INT", "DATE")


def check_type(dtype: DataType) -> None:
    """Raise UnsupportedTypeError for types Java's range bitmap rejects."""
    r = dtype.root
    if r in ("TIMESTAMP", "TIMESTAMP_LTZ") and (dtype.precision or 0) > 6:
        raise UnsupportedTypeError("The range-bitmap index only supports TIMESTAMP with a precision in [0, 6].")
    if r == "DECIMAL" and (dtype.precision or 0) > 18:
        raise UnsupportedTypeError("The range-bitmap index only supports DECIMAL with a precision in [0, 18].")
    if r not in _FIXED and not dtype.is_string:
        raise UnsupportedTypeError(f"range-bitmap does not support type {dtype} (as Java Paimon)")


# ---------------------------------------------------------------- keys

def _float_sort32(bits: np.ndarray) -> np.ndarray:
    """int32 IEEE bits -> int64 keys ordered as Java's Float.compare (NaN canonical)."""
    b = bits.astype(np.int32, copy=True)
    nan = (b & 0x7F800000) == 0x7F800000
    nan &= (b & 0x007FFFFF) != 0
    b[nan] = 0x7FC00000
    return (b ^ ((b >> 31) & 0x7FFFFFFF)).astype(np.int64)


def _float_sort64(bits: np.ndarray) -> np.ndarray:
    b = bits.astype(np.int64, copy=True)
    nan = (b & 0x7FF0000000000000) == 0x7FF0000000000000
    nan &= (b & 0x000FFFFFFFFFFFFF) != 0
    b[nan] = 0x7FF8000000000000
    return b ^ ((b >> 63) & 0x7FFFFFFFFFFFFFFF)


class KeyCodec:
    """Per-type key handling: column -> order-preserving int64 keys (or bytes
    for strings), key <-> file bytes, literal -> key."""

    def __init__(self, dtype: DataType):
        check_type(dtype)
        self.dtype = dtype
        self.root = dtype.root
        self.is_string = dtype.is_string
        self.size = 0 if self.is_string else _FIXED[self.root]
        self.default_chunk = "0b" if self.root in ("BOOLEAN", "TINYINT", "SMALLINT") else "16kb"
        if not self.is_string:
            self.be = np.dtype(">u1") if self.root == "BOOLEAN" else np.dtype(f">i{self.size}")

    # --- columns
    def column(self, values):
        """``(keys, valid)``: int64 sort keys (or an Arrow binary array for
        strings) and a bool mask (None = no nulls)."""
        arr = to_arrow_array(values, self.dtype)
        valid = validity_mask(arr)
        if self.is_string:
            return arr, valid
        return self.sort_keys_of(arr), valid

    def sort_keys_of(self, arr) -> np.ndarray:
        r = self.root
        if r == "FLOAT":
            return _float_sort32(fixed_values(arr).view(np.int32))
        if r == "DOUBLE":
            return _float_sort64(fixed_values(arr).view(np.int64))
        if r == "DECIMAL":
            return decimal_unscaled(arr).astype(np.int64, copy=False)
        if r == "BOOLEAN":
            return fixed_values(arr).astype(np.int64)
        if r in _NARROW:  # 32-bit keys stay int32 (half the memory; the kernels take both)
            return long_keys(arr, self.dtype).astype(np.int32, copy=False)
        return long_keys(arr, self.dtype).astype(np.int64, copy=False)

    # --- file keys
    def raw_from_sort(self, keys: np.ndarray) -> np.ndarray:
        """Sort keys -> the integers Java writes (raw float bits for FLOAT/DOUBLE)."""
        if self.root == "FLOAT":
            k = keys.astype(np.int64)
            return (k ^ ((k >> 31) & 0x7FFFFFFF)).astype(np.int32)
        if self.root == "DOUBLE":
            return keys ^ ((keys >> 63) & 0x7FFFFFFFFFFFFFFF)
        return keys

    def sort_key_from_file(self, b: bytes) -> int:
        """One big-endian file key -> its sort key (:meth:`sort_from_file` for a scalar)."""
        raw = int.from_bytes(b, "big", signed=self.root != "BOOLEAN")
        if self.root == "FLOAT":
            if (raw & 0x7F800000) == 0x7F800000 and raw & 0x007FFFFF:
                raw = 0x7FC00000
            return raw ^ ((raw >> 31) & 0x7FFFFFFF)
        if self.root == "DOUBLE":
            if (raw & 0x7FF0000000000000) == 0x7FF0000000000000 and raw & 0x000FFFFFFFFFFFFF:
                raw = 0x7FF8000000000000
            return raw ^ ((raw >> 63) & 0x7FFFFFFFFFFFFFFF)
        return raw

    def sort_from_file(self, buf) -> np.ndarray:
        """Big-endian file keys -> sort keys."""
        raw = np.frombuffer(buf, dtype=self.be)
        if self.root == "FLOAT":
            return _float_sort32(raw.astype(np.int32))
        if self.root == "DOUBLE":
            return _float_sort64(raw.astype(np.int64))
        return raw.astype(np.int64)

    def to_file(self, keys: np.ndarray) -> bytes:
        return self.raw_from_sort(keys).astype(self.be).tobytes()

    def serialize_key(self, key) -> bytes:
        if self.is_string:
            return struct.pack(">i", len(key)) + key
        return self.to_file(np.array([key], dtype=np.int64))

    def value_of(self, key):
        """A sort key -> a plain Python value (for describe / get)."""
        if self.is_string:
            return key.decode("utf-8", "replace")
        r = self.root
        raw = int(self.raw_from_sort(np.array([key], dtype=np.int64))[0])
        if r == "FLOAT":
            return struct.unpack(">f", struct.pack(">i", raw))[0]
        if r == "DOUBLE":
            return struct.unpack(">d", struct.pack(">q", raw))[0]
        if r == "BOOLEAN":
            return bool(raw)
        return raw

    # --- literals
    def literal(self, v):
        """A predicate literal -> its sort key; None raises NullLiteralError."""
        if v is None:
            raise NullLiteralError("null literal in a range-bitmap value comparison (Java: NullPointerException)")
        if self.is_string:
            return v.encode("utf-8") if isinstance(v, str) else bytes(v)
        if self.root in ("TINYINT", "SMALLINT", "INT", "BIGINT") and isinstance(v, (int, np.integer)) \
                and not isinstance(v, bool):
            return int(v)
        return int(self.sort_keys_of(to_arrow_array([v], self.dtype))[0])


# ---------------------------------------------------------------- writer

def _codes_fixed(keys: np.ndarray, valid):
    """``(sorted distinct keys, int32 codes with -1 for null)``."""
    n = len(keys)
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int32)
    if keys.dtype != np.int32:
        keys = np.ascontiguousarray(keys, dtype=np.int64)
    v8 = np.ones(n, np.uint8) if valid is None else np.ascontiguousarray(valid).view(np.uint8)
    count, lo, hi = _k.minmax_valid(keys, v8)
    if count == 0:
        return np.zeros(0, np.int64), np.full(n, -1, np.int32)
    if hi - lo <= 64 * n + (1 << 20):
        return _k.dense_codes(keys, v8, lo, hi)
    return _k.sort_codes(np.ascontiguousarray(keys, dtype=np.int64), v8)


def _codes_string(arr: pa.Array):
    """``(sorted distinct keys as bytes list, int32 codes)`` for a string column."""
    n = len(arr)
    if n == 0 or arr.null_count == n:
        return [], np.full(n, -1, np.int32)
    bin_t = pa.large_binary() if pa.types.is_large_string(arr.type) else pa.binary()
    enc = arr.cast(bin_t).dictionary_encode()
    dic = enc.dictionary
    order = pc.sort_indices(dic).to_numpy()  # binary sorts byte-wise
    rank = np.empty(len(order), np.int32)
    rank[order] = np.arange(len(order), dtype=np.int32)
    idx = enc.indices.fill_null(0).to_numpy(zero_copy_only=False)
    codes = rank[idx]
    if enc.indices.null_count:
        codes[~validity_mask(enc.indices)] = -1
    keys = dic.take(pa.array(order)).to_pylist()
    return keys, codes


def _dictionary_fixed(codec: KeyCodec, uniq: np.ndarray, chunk: int) -> bytes:
    ks = codec.size
    card = len(uniq)
    per = chunk // ks  # further keys a chunk takes: (size+1)*ks <= chunk
    step = per + 1
    nchunks = (card + step - 1) // step
    hs = 1 + ks + 20
    firsts = np.arange(nchunks, dtype=np.int64) * step
    counts = np.minimum(card - firsts - 1, per)
    head = np.zeros(nchunks, dtype=[("v", "u1"), ("k", codec.be), ("code", ">i4"), ("off", ">i4"),
                                     ("n", ">i4"), ("klen", ">i4"), ("ks", ">i4")])
    head["v"] = 1
    raw = codec.raw_from_sort(uniq)
    head["k"] = raw[firsts]
    head["code"] = firsts
    head["off"] = np.concatenate(([0], np.cumsum(counts * ks)[:-1])) if nchunks else []
    head["n"] = counts
    head["klen"] = counts * ks
    head["ks"] = ks
    mask = np.ones(card, bool)
    mask[firsts] = False
    keys_area = raw[mask].astype(codec.be).tobytes()
    offsets = (np.arange(nchunks, dtype=np.int64) * hs).astype(">i4").tobytes()
    chunks = head.tobytes()
    return (struct.pack(">ibiii", 13, 1, nchunks, len(offsets), len(chunks)) + offsets + chunks + keys_area)


def _dictionary_string(keys, chunk: int) -> bytes:
    offsets = []
    chunks = []
    keys_parts = []
    chunks_len = 0
    keys_len = 0
    i = 0
    card = len(keys)
    while i < card:
        first = keys[i]
        j = i + 1
        used_k = 0
        used_o = 0
        rel = []
        body = []
        while j < card:
            ln = 4 + len(keys[j])
            if ln > chunk - used_k or 4 > chunk - used_o:
                break
            rel.append(used_k)
            body.append(struct.pack(">i", len(keys[j])) + keys[j])
            used_k += ln
            used_o += 4
            j += 1
        n = j - i - 1
        head = (b"\x01" + struct.pack(">i", len(first)) + first
                + struct.pack(">iiiii", i, keys_len, n, 4 * n, used_k))
        kbytes = np.array(rel, dtype=">i4").tobytes() + b"".join(body)
        offsets.append(chunks_len)
        chunks.append(head)
        keys_parts.append(kbytes)
        chunks_len += len(head)
        keys_len += len(kbytes)
        i = j
    off = np.array(offsets, dtype=">i4").tobytes()
    return (struct.pack(">ibiii", 13, 1, len(offsets), len(off), chunks_len) + off
            + b"".join(chunks) + b"".join(keys_parts))


def _bsi_bytes(codes: np.ndarray, card: int, n: int) -> bytes:
    S = max(int(card - 1).bit_length(), 1) if card > 0 else 64
    sel = (codes >= 0).view(np.uint8)
    ebm, slices = _k.build_slices(np.ascontiguousarray(codes), np.ascontiguousarray(sel), S)
    del sel
    return _k.encode_sliced(ebm, slices)  # one buffer, no bytes object per slice


def build_index(codec: KeyCodec, keys, valid, chunk: int) -> bytes:
    """Serialize a whole column: ``keys`` are int64 sort keys (or an Arrow
    string array), ``valid`` a bool mask or None."""
    n = len(keys)
    if codec.is_string:
        uniq, codes = _codes_string(keys)
        dictionary = _dictionary_string(uniq, chunk)
    else:
        uniq, codes = _codes_fixed(keys, valid)
        dictionary = _dictionary_fixed(codec, uniq, chunk)
    card = len(uniq)
    bsi = _bsi_bytes(codes, card, n)
    head = struct.pack(">Bii", VERSION, n, card)
    if card:
        head += codec.serialize_key(uniq[0]) + codec.serialize_key(uniq[-1])
    head += struct.pack(">i", len(dictionary))
    return b"".join((struct.pack(">i", len(head)), head, dictionary, bsi))


class RangeBitmapWriter(FileIndexWriter):
    """Collects the column's batches; :meth:`finish` builds the dictionary codes
    and slices (Cython) and serializes exactly as Java's ``RangeBitmap.Appender``.

    Option ``chunk-size`` (memory size, default 16kb; 0b for BOOLEAN / TINYINT /
    SMALLINT) bounds the further keys of a dictionary chunk.
    """

    index_type = INDEX_TYPE

    def __init__(self, dtype, options):
        super().__init__(dtype, options)
        self.codec = KeyCodec(dtype)
        self.chunk_size = options.get_memory_size(CHUNK_SIZE, self.codec.default_chunk)
        self._keys = []
        self._valid = []

    def write_batch(self, values):
        keys, valid = self.codec.column(values)
        n = len(keys)
        if not self.codec.is_string:
            keys = np.array(keys, dtype=np.int32 if keys.dtype == np.int32 else np.int64, copy=True)
        self._keys.append(keys)
        self._valid.append(np.ones(n, bool) if valid is None else valid.copy())
        self.row_count += n

    def finish(self) -> bytes:
        if self.codec.is_string:
            chunks = [k.cast(pa.large_string()) for k in self._keys]
            keys = pa.concat_arrays(chunks) if chunks else pa.array([], pa.large_string())
            valid = None
        else:
            if len(self._keys) == 1:  # no concatenation copy for a single batch
                keys, valid = self._keys[0], self._valid[0]
            else:
                keys = np.concatenate(self._keys) if self._keys else np.zeros(0, np.int64)
                valid = np.concatenate(self._valid) if self._valid else np.zeros(0, bool)
            if valid.all():
                valid = None
        return build_index(self.codec, keys, valid, self.chunk_size)


# ---------------------------------------------------------------- reader

@functools.lru_cache(maxsize=64)
def _consecutive_offsets(nchunks: int, hs: int) -> bytes:
    """The chunk offset table of a fixed-length dictionary (big-endian i32 k*hs)."""
    return (np.arange(nchunks, dtype=np.int64) * hs).astype(">i4").tobytes()


@functools.lru_cache(maxsize=None)
def _chunk_dtype(be: np.dtype) -> np.dtype:
    return np.dtype([("v", "u1"), ("k", be), ("code", ">i4"), ("off", ">i4"),
                     ("n", ">i4"), ("klen", ">i4"), ("ks", ">i4")])


class _FixedDictionary:
    """Chunked dictionary of fixed-length keys.  Opening reads only the chunks'
    first keys; a chunk's header is validated and its keys decoded when a
    lookup needs it (codes stay within [0, cardinality] whatever the bytes)."""

    def __init__(self, codec, data, base, nchunks, chunks_at, keys_at, keys_end, card):
        self.codec = codec
        self.data = data
        self.base = base
        self.chunks_at = chunks_at
        self.keys_at = keys_at
        self.keys_len = keys_end - keys_at
        self.card = card
        self.nchunks = nchunks
        dt = _chunk_dtype(codec.be)
        self.head = np.frombuffer(data, dtype=dt, count=nchunks, offset=chunks_at) if nchunks else np.zeros(0, dt)
        self.first = codec.sort_from_file(self.head["k"].tobytes()) if nchunks else np.zeros(0, np.int64)
        self._first = self.first.tolist()
        self._meta = {}
        self._cache = {}
        self._codes = None

    def meta(self, i):
        """``(code, n, keys offset)`` of chunk i, validated."""
        m = self._meta.get(i)
        if m is None:
            v, _, code, off, n, klen, ks = self.head[i].tolist()
            at = self.base + self.chunks_at + i * self.head.dtype.itemsize
            if v > 1:
                raise IndexFormatError("range bitmap dictionary chunk version > 1", at)
            if ks != self.codec.size or n < 0 or klen != n * ks or off < 0 or off + klen > self.keys_len:
                raise IndexFormatError("range bitmap dictionary chunk keys outside the keys area", at)
            if code < 0 or code + n >= self.card:
                raise IndexFormatError(f"range bitmap dictionary chunk codes [{code}, {code + n}] outside the "
                                       f"cardinality {self.card}", at)
            m = self._meta[i] = (code, n, self.keys_at + off)
        return m

    def _chunk(self, i):
        c = self._cache.get(i)
        if c is None:
            _, n, o = self.meta(i)
            c = self._cache[i] = self.codec.sort_from_file(self.data[o:o + n * self.codec.size])
        return c

    def find(self, key):
        """``(found, code)``; when not found ``code`` is the insertion point."""
        i = bisect.bisect_right(self._first, key) - 1
        if i < 0:
            return False, 0
        code = self.meta(i)[0]
        if self._first[i] == key:
            return True, code
        ck = self._chunk(i)
        j = int(np.searchsorted(ck, key, "left"))
        if j < len(ck) and ck[j] == key:
            return True, code + 1 + j
        return False, code + 1 + j

    def key_at(self, code):
        if self._codes is None:
            self._codes = self.head["code"].astype(np.int64)
        i = int(np.searchsorted(self._codes, code, "right")) - 1
        c0, n, _ = self.meta(max(i, 0))
        if code == c0:
            return int(self.first[i])
        if not 0 <= code - c0 - 1 < n:
            raise IndexFormatError(f"range bitmap dictionary has no key for code {code}", self.base + self.chunks_at)
        return int(self._chunk(i)[code - c0 - 1])

    @property
    def chunks(self):
        return self.nchunks


class _StringDictionary:
    """Chunked dictionary of variable-length (string) keys."""

    def __init__(self, data, base, nchunks, offsets, chunks_at, chunks_len, keys_at, keys_end, card):
        self.data = data
        self.base = base
        self.keys_at = keys_at
        self.keys_end = keys_end
        self.first, self.code, self.n, self.off, self.olen, self.klen = [], [], [], [], [], []
        for i in range(nchunks):
            p = chunks_at + int(offsets[i])
            end = chunks_at + (int(offsets[i + 1]) if i + 1 < nchunks else chunks_len)
            if not chunks_at <= p <= end <= chunks_at + chunks_len or end - p < 25:
                raise IndexFormatError("range bitmap dictionary chunk header out of bounds", base + p)
            if data[p] > 1:
                raise IndexFormatError("range bitmap dictionary chunk version > 1", base + p)
            (ln,) = struct.unpack_from(">i", data, p + 1)
            if ln < 0 or p + 5 + ln + 20 > end:
                raise IndexFormatError("range bitmap dictionary chunk key length out of bounds", base + p + 1)
            key = bytes(data[p + 5:p + 5 + ln])
            code, off, n, olen, klen = struct.unpack_from(">iiiii", data, p + 5 + ln)
            if n < 0 or olen != 4 * n or klen < 0 or off < 0 or keys_at + off + olen + klen > keys_end:
                raise IndexFormatError("range bitmap dictionary chunk keys outside the keys area", base + p)
            exp = (self.code[-1] + self.n[-1] + 1) if self.code else 0
            if code != exp:
                raise IndexFormatError("range bitmap dictionary codes out of sequence", base + p)
            self.first.append(key)
            self.code.append(code)
            self.n.append(n)
            self.off.append(keys_at + off)
            self.olen.append(olen)
            self.klen.append(klen)
        total = (self.code[-1] + self.n[-1] + 1) if self.code else 0
        if total != card:
            raise IndexFormatError("range bitmap dictionary codes do not cover the cardinality", base + chunks_at)

    def _key(self, i, j):
        o = self.off[i]
        (rel,) = struct.unpack_from(">i", self.data, o + 4 * j)
        p = o + self.olen[i] + rel
        if rel < 0 or p + 4 > o + self.olen[i] + self.klen[i]:
            raise IndexFormatError("range bitmap dictionary key offset out of bounds", self.base + o + 4 * j)
        (ln,) = struct.unpack_from(">i", self.data, p)
        if ln < 0 or p + 4 + ln > o + self.olen[i] + self.klen[i]:
            raise IndexFormatError("range bitmap dictionary key length out of bounds", self.base + p)
        return bytes(self.data[p + 4:p + 4 + ln])

    def find(self, key):
        i = bisect.bisect_right(self.first, key) - 1
        if i < 0:
            return False, 0
        if self.first[i] == key:
            return True, self.code[i]
        lo, hi = 0, self.n[i] - 1
        base = self.code[i] + 1
        while lo <= hi:
            mid = (lo + hi) >> 1
            k = self._key(i, mid)
            if k < key:
                lo = mid + 1
            elif k > key:
                hi = mid - 1
            else:
                return True, base + mid
        return False, base + lo

    def key_at(self, code):
        i = bisect.bisect_right(self.code, code) - 1
        if code == self.code[i]:
            return self.first[i]
        return self._key(i, code - self.code[i] - 1)

    @property
    def chunks(self):
        return len(self.code)


class RangeBitmapReader(FileIndexReader):
    """Answers predicates and top-k from a serialized range bitmap.

    Opening parses the header only; the dictionary and the slices are read on
    first use.  Every answer is a :class:`BitmapResult` (built lazily, as Java).
    """

    index_type = INDEX_TYPE

    def __init__(self, dtype, source, options):
        super().__init__(dtype, source, options)
        self.codec = KeyCodec(dtype)
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
        self._data = None
        self._summary = None

    def _wrong_type(self, hl, base):
        want = "length-prefixed strings" if self.codec.is_string else f"{self.codec.size} bytes each"
        raise IndexFormatError(f"range bitmap header's min / max keys fill {hl - 13} bytes, which is not two "
                               f"{self.dtype} keys ({want}): the index was written for another column type", base)

    def _header_key(self, h, p):
        if self.codec.is_string:
            if p + 4 > len(h):
                raise IndexFormatError("range bitmap header truncated (key length)", self._base + 4 + p)
            (ln,) = struct.unpack_from(">i", h, p)
            if ln < 0 or p + 4 + ln > len(h):
                raise IndexFormatError(f"range bitmap header key length {ln} out of bounds", self._base + 4 + p)
            return h[p + 4:p + 4 + ln], p + 4 + ln
        ks = self.codec.size
        if p + ks > len(h):
            raise IndexFormatError("range bitmap header truncated (min/max)", self._base + 4 + p)
        return self.codec.sort_key_from_file(h[p:p + ks]), p + ks

    # --- lazy parts
    @property
    def data(self):
        if self._data is None:
            self._data = np.frombuffer(self.source.read_at(0, self.source.size, "range bitmap"), dtype=np.uint8)
        return self._data

    @property
    def dictionary(self):
        if self._dictionary is None:
            self._dictionary = self._load_dictionary()
        return self._dictionary

    def _load_dictionary(self):
        d = self.data
        base = self._base
        p = self._dict_at
        end = self._bsi_at
        if end - p < 4:
            raise IndexFormatError("range bitmap dictionary truncated", base + p)
        (hl,) = struct.unpack_from(">i", d, p)
        if hl < 13 or p + 4 + hl > end:
            raise IndexFormatError(f"range bitmap dictionary header length {hl} out of bounds", base + p)
        if d[p + 4] > 1:
            raise IndexFormatError("range bitmap dictionary version > 1", base + p + 4)
        nchunks, olen, clen = struct.unpack_from(">iii", d, p + 5)
        body = p + 4 + hl
        if nchunks < 0 or olen != 4 * nchunks or clen < 0 or body + olen + clen > end:
            raise IndexFormatError("range bitmap dictionary chunk table out of bounds", base + p + 5)
        chunks_at = body + olen
        keys_at = chunks_at + clen
        card = max(self.cardinality, 0)
        if self.codec.is_string:
            offsets = np.frombuffer(d, dtype=">i4", count=nchunks, offset=body).astype(np.int64)
            return _StringDictionary(d, base, nchunks, offsets, chunks_at, clen, keys_at, end, card)
        hs = 1 + self.codec.size + 20
        if clen != nchunks * hs or d[body:body + olen].tobytes() != _consecutive_offsets(nchunks, hs):
            raise IndexFormatError("range bitmap dictionary chunk offsets are not consecutive", base + body)
        return _FixedDictionary(self.codec, d, base, nchunks, chunks_at, keys_at, end, card)

    def _load_bsi(self):
        if self._ebm is not None:
            return
        d = self.data
        base = self._base
        p = self._bsi_at
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
            raise IndexFormatError(f"range bitmap has {S} slices, its cardinality {self.cardinality} needs {want_s}",
                                   base + p + 5)
        ebm_len, idx_len = struct.unpack_from(">ii", d, p + 6)
        if idx_len != 8 * S or 10 + idx_len > hl:
            raise IndexFormatError(f"range bitmap slice index table length {idx_len} does not match {S} slices",
                                   base + p + 10)
        body = p + 4 + hl
        if ebm_len < 0 or body + ebm_len > d.size:
            raise IndexFormatError(f"range bitmap existence bitmap length {ebm_len} out of bounds", base + p + 6)
        # dense arrays cover the rows up to the last non-null one (never the
        # claimed row count, which the data cannot vouch for)
        _, _, last = _k.check_last(d, body, body + ebm_len, base)
        if last >= self.row_count:
            raise IndexFormatError(f"range bitmap existence bitmap holds row {last} beyond its {self.row_count} rows",
                                   base + body)
        n = last + 1
        self._nbits = n
        ebm = np.zeros(nwords(n), dtype=np.uint64)
        _k.decode_fast(d, body, body + ebm_len, ebm, n, base)
        W = nwords(n)
        slices = []
        # one kernel call reads and bounds-checks the slice table
        for at, ln, view in _k.slice_layout(d, p + 14, S, body + ebm_len, W, base).tolist():
            if view >= 0:
                # dense slice: read the container words in place (every answer is
                # masked by the existence bitmap, so nothing beyond it leaks)
                slices.append(d[view:view + 8 * W])
            else:
                row = np.zeros(W, dtype=np.uint64)
                _k.decode_fast(d, at, at + ln, row, n, base)
                slices.append(row)
        self._ebm = ebm
        self._slices = slices

    @property
    def ebm(self) -> np.ndarray:
        """Dense words of the non-null rows."""
        self._load_bsi()
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
        self._load_bsi()
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
            return bm | (nb[:k - c] if strict else nb)
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
        self._load_bsi()
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

    def bottom_k(self, k: int, nulls_first: bool = False, found_set: BitMap | None = None,
                 strict: bool = True) -> BitMap:
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
            word = int(row[w]) if row.dtype != np.uint8 else int.from_bytes(bytes(row[8 * w:8 * w + 8]), "little")
            if (word >> b) & 1:
                code |= 1 << i
        if code >= self.cardinality:
            raise IndexFormatError(f"row {row} has code {code} beyond the dictionary", None)
        return self.codec.value_of(self.dictionary.key_at(code))

    def describe(self):
        d = super().describe()
        d.update(row_count=self.row_count, cardinality=self.cardinality,
                 min=None if self.min is None else self.codec.value_of(self.min),
                 max=None if self.max is None else self.codec.value_of(self.max),
                 dictionary_bytes=self._bsi_at - self._dict_at,
                 dictionary_chunks=self.dictionary.chunks,
                 slices=len(self.slices),
                 non_null_rows=int(_k.popcount(self.ebm)),
                 slice_bytes=self.source.size - self._bsi_at)
        return d


@register
class RangeBitmapFactory(IndexFactory):
    name = INDEX_TYPE
    writer_class = RangeBitmapWriter
    reader_class = RangeBitmapReader

    def check_type(self, dtype):
        check_type(dtype)
