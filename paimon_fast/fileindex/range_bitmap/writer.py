"""The range bitmap writer: dictionary codes and bit slices of a column, serialized as Java's
``RangeBitmap.Appender`` does (:func:`build_index`, :class:`RangeBitmapWriter`)."""

from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...core.types import validity_mask
from ..base import FileIndexWriter
from .._bitslice import _k
from .keys import CHUNK_SIZE, INDEX_TYPE, VERSION, KeyCodec


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
    head = np.zeros(
        nchunks,
        dtype=[
            ("v", "u1"),
            ("k", codec.be),
            ("code", ">i4"),
            ("off", ">i4"),
            ("n", ">i4"),
            ("klen", ">i4"),
            ("ks", ">i4"),
        ],
    )
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
    return struct.pack(">ibiii", 13, 1, nchunks, len(offsets), len(chunks)) + offsets + chunks + keys_area


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
        head = b"\x01" + struct.pack(">i", len(first)) + first + struct.pack(">iiiii", i, keys_len, n, 4 * n, used_k)
        kbytes = np.array(rel, dtype=">i4").tobytes() + b"".join(body)
        offsets.append(chunks_len)
        chunks.append(head)
        keys_parts.append(kbytes)
        chunks_len += len(head)
        keys_len += len(kbytes)
        i = j
    off = np.array(offsets, dtype=">i4").tobytes()
    return (
        struct.pack(">ibiii", 13, 1, len(offsets), len(off), chunks_len) + off + b"".join(chunks) + b"".join(keys_parts)
    )


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
