"""The bitmap file index writer, formats V1 and V2 (:class:`BitmapWriter`, and
:func:`build_index`, which lays out a whole column's index in Java's bytes); the format is
described in :mod:`.bitmap`, which holds the reader and hands these names on."""

from __future__ import annotations


import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .._kernels import load as _load
from ..errors import OptionError
from ..core.roaring import serialize_groups32, serialize_sorted32
from ..core.types import binary_buffers, to_arrow_array, validity_mask
from .base import FileIndexWriter
from .bitmap_keys import (
    _HEAD,
    _I32,
    _MAX_INT,
    _NULLS2,
    DEFAULT_INDEX_BLOCK_SIZE,
    INDEX_TYPE,
    VERSION_1,
    VERSION_2,
    KeyCodec,
    codec_for,
)

_k = _load("bitmap")

# dense (bit set per value) grouping: at most this many 8 KiB containers in memory, and only
# when values average this many rows per 65536-row container (else sorted positions are cheaper)
_DENSE_MAX_CONTAINERS = 2048
_DENSE_MIN_ROWS = 2048


# ---------------------------------------------------------------- writer


class BitmapWriter(FileIndexWriter):
    """Collects column batches; :meth:`finish` groups the rows by value and
    serializes V2 (default) or V1 (option ``version=1``).

    ``kernels`` selects the implementation of the grouping / order / layout
    steps (default: the compiled module; ``paimon_fast.reference.bitmap`` is
    the plain-Python twin with the same functions).
    """

    index_type = INDEX_TYPE

    def __init__(self, dtype, options, kernels=None):
        super().__init__(dtype, options)
        self.codec = codec_for(dtype)
        self.version = options.get_int("version", VERSION_2)
        if self.version not in (VERSION_1, VERSION_2):
            raise OptionError(f"bitmap index version must be 1 or 2, got {self.version}")
        self.block_size = options.get_memory_size("index-block-size", DEFAULT_INDEX_BLOCK_SIZE)
        if self.block_size <= 0:
            raise OptionError(f"index-block-size must be positive, got {self.block_size}")
        self.kernels = kernels or _k
        self._chunks = []
        #: after finish(): how the HashMap was replayed / how blocks were packed
        self.stats = {}

    def write_batch(self, values):
        arr = to_arrow_array(values, self.dtype)
        if self.row_count + len(arr) > _MAX_INT:
            raise OptionError("a bitmap index holds at most 2^31 - 1 rows (Java int row numbers)")
        self._chunks.append(arr)
        self.row_count += len(arr)

    def _column(self):
        if not self._chunks:
            arr = to_arrow_array([], self.dtype)
        elif len(self._chunks) == 1:
            arr = self._chunks[0]
        else:
            arr = pa.concat_arrays([c.cast(self._chunks[0].type) for c in self._chunks])
        return arr

    def finish(self) -> bytes:
        arr = self._column()
        return build_index(arr, self.codec, self.version, self.block_size, self.kernels, self.stats)


def build_index(arr, codec: KeyCodec, version: int, block_size: int, k=None, stats=None) -> bytes:
    """Serialize one column (Arrow array of the codec's type) as a bitmap index."""
    k = k or _k
    n = len(arr)
    mask = validity_mask(arr)
    valid = None if mask is None else np.ascontiguousarray(mask).view(np.uint8)
    dense_bits = None
    if codec.fixed:
        keys = np.ascontiguousarray(codec.keys_of(arr))
        # few values over many rows: group and build their bit sets in one pass (gives up early otherwise)
        nchunks = (n + 65535) >> 16
        max_dense = min(32, n // (_DENSE_MIN_ROWS * nchunks)) if n else 0
        got = k.group_dense_fixed(keys, valid, codec.hash_mode, max_dense) if max_dense >= 1 else None
        if got is not None:
            first, counts, jh, dense_bits = got
            codes = None
        else:
            codes, first, counts, jh = k.group_fixed(keys, valid, codec.hash_mode)
    else:
        offsets, data = binary_buffers(arr)
        codes, first, counts, jh = k.group_binary(np.ascontiguousarray(offsets), data, valid)
    D = len(first)
    if valid is None:
        null_rows = np.zeros(0, np.uint32)
        last_row = n - 1
    else:
        null_rows = np.flatnonzero(valid == 0).astype(np.uint32)
        nn = np.flatnonzero(valid)
        last_row = int(nn[-1]) if len(nn) else -1
    trailing = D > 0 and last_row != int(first[D - 1])
    order, table, tree_bins = k.java_order(jh, trailing)
    if tree_bins:
        # a bin of >= 8 keys became a red-black tree in Java: replay those bins (and only
        # those) with the full tree-aware model; per key of such bins, not per row
        from .java_hashmap import java_order_local

        if codec.fixed:

            def okey(i):
                return codec.order_key(int(keys[first[i]]))
        else:

            def okey(i):
                r = int(first[i])
                return bytes(data[offsets[r] : offsets[r + 1]])

        order, table = java_order_local(jh, okey, trailing, order, table)
    groups = int(np.count_nonzero(counts >= 2))
    containers = groups * ((n + 65535) >> 16)
    if dense_bits is not None:
        blob, sizes, multi = k.dense_from_bits(dense_bits, order, counts)
    elif groups and containers <= _DENSE_MAX_CONTAINERS and n >= containers * _DENSE_MIN_ROWS:
        # few values over many rows: bit sets beat sorted positions
        blob, sizes, multi = k.dense_serialize(codes, order, counts)
    else:
        pos, bounds, multi = k.scatter_positions(codes, order, counts)
        blob, sizes = serialize_groups32(pos, bounds)
    null_card = len(null_rows)
    null_bytes = serialize_sorted32(null_rows)
    has_null = null_card > 0
    base = len(null_bytes) if null_card > 1 else 0
    # per value id: offset in the body (or -1 - row) and bitmap length (or -1)
    off = -1 - first
    length = np.full(D, -1, dtype=np.int64)
    if len(multi):
        ends = base + np.cumsum(sizes)
        off[multi] = ends - sizes
        length[multi] = sizes
        final = int(ends[-1])
    else:
        final = base
    if final > _MAX_INT:
        raise OptionError("bitmap index body exceeds 2 GiB (Java int offsets)")
    null_offset = (-1 - int(null_rows[0])) if null_card == 1 else 0
    off32 = off.astype(np.int32)
    len32 = length.astype(np.int32)
    parts = [_HEAD.pack(version, n, D, 1 if has_null else 0)]
    if codec.fixed:
        ukeys = keys[first].astype(np.int64)

        def pack(ids, a, b=None, blocks=None):
            return k.pack_fixed(
                np.ascontiguousarray(ukeys[ids]),
                codec.width,
                np.ascontiguousarray(a),
                None if b is None else np.ascontiguousarray(b),
                blocks,
            )
    else:
        # the distinct values, compact and in id order: packing and sorting read them sequentially
        uniq = arr.take(pa.array(first))
        uoff, udata = binary_buffers(uniq)
        uoff = np.ascontiguousarray(uoff)

        def pack(ids, a, b=None, blocks=None):
            return k.pack_binary(
                uoff,
                udata,
                np.ascontiguousarray(ids, dtype=np.int64),
                np.ascontiguousarray(a),
                None if b is None else np.ascontiguousarray(b),
                blocks,
            )

    st = {"distinct": D, "hashmap_table": table, "tree_bins": tree_bins}
    if version == VERSION_1:
        if has_null:
            parts.append(_I32.pack(null_offset))
        parts.append(pack(order, off32[order]))
    else:
        if has_null:
            parts.append(_NULLS2.pack(null_offset, len(null_bytes)))
        ids = _sorted_ids(uniq if not codec.fixed else None, codec, keys if codec.fixed else None, first, k)
        if codec.fixed:
            ebytes = np.full(D, 8 + codec.width, dtype=np.int64)
        else:
            ebytes = 12 + (uoff[ids + 1] - uoff[ids]).astype(np.int64)
        bb, boffs, total, oversize = k.v2_layout(np.ascontiguousarray(ebytes), block_size)
        B = len(boffs)
        parts.append(_I32.pack(B))
        if B:
            parts.append(pack(ids[bb[:-1]], boffs.astype(np.int32)))
        parts.append(_I32.pack(total))
        if B:
            parts.append(pack(ids, off32[ids], len32[ids], bb))
        st.update(blocks=B, oversize_entries=oversize)
    if null_card > 1:
        parts.append(null_bytes)
    parts.append(blob)
    if stats is not None:
        stats.update(st)
    return b"".join(parts)


def _sorted_ids(uniq, codec: KeyCodec, keys, first, k=None) -> np.ndarray:
    """Value ids in the V2 comparator's order (``uniq``: the distinct strings in id order)."""
    if codec.fixed:
        return (k or _k).sort_fixed(np.ascontiguousarray(keys[first], dtype=np.int64), codec.cmp_mode)
    vals = uniq.cast(pa.large_binary() if pa.types.is_large_string(uniq.type) else pa.binary())
    return np.asarray(pc.sort_indices(vals), dtype=np.int64)
