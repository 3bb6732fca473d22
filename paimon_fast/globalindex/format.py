"""The bitmap global index file (Paimon 2.0 ``bitmap`` global indexer), byte for byte.

Layout in write order: for each distinct non-null key (ascending by Java's
logical comparator) its row-id bitmap (``RoaringNavigableMap64``, portable,
run-optimised), with dictionary blocks interleaved as Java's streaming writer
emits them; the null-rows bitmap; the non-null-rows bitmap; the dictionary
block index; a 48-byte big-endian footer ``i64 nullOffset, i32 nullLength,
i64 nonNullOffset, i32 nonNullLength, i64 indexOffset, i32 indexLength,
i32 distinct keys, i32 version = 1, i32 magic = 0x42474958 ("BGIX")``.
Dictionary and index blocks are compressible blocks (see :mod:`.codec`).
"""

from __future__ import annotations

import os
import re
import struct
import threading
from collections import OrderedDict

import numpy as np
import pyarrow as pa
from pyroaring import BitMap64

from .._kernels import load as _load
from ..errors import IndexFormatError, InvalidArgumentError, OptionError, UnsupportedTypeError
from ..fileindex.options import Options
from ..io.fsutil import Chunks, write_atomic  # noqa: F401  (part of this package's API)
from ..io.serde import encode_varint
from ..io.source import FileSource, as_source
from ..core.types import binary_buffers, list_elements
from . import sst as _codec
from .keys import _KEY_LENGTHS, KINDS, KeyCodec
from .meta import SortedIndexFileMeta

_k = _load("globalindex")
_open_tail = getattr(_k, "open_tail", None)  # None with the plain-Python twins: FileSource reads


def is_global_index(path) -> bool:
    """Does the file end with the bitmap global index footer magic ("BGIX")?"""
    try:
        size = os.path.getsize(path)
        if size < FOOTER_LENGTH:
            return False
        with open(path, "rb") as f:
            f.seek(size - 4)
            return struct.unpack(">i", f.read(4))[0] == MAGIC
    except OSError:
        return False


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


MAGIC = 0x42474958
VERSION = 1
FOOTER_LENGTH = 48
TAIL_READ = 16384  # bytes read at open: footer and what Java writes before it
SMALL_BITMAP = 4096  # bitmaps up to this size get our structural check before pyroaring's
FOOTER_STRUCT = struct.Struct(">qiqiqiiii")

OPT_BLOCK_SIZE = "bitmap-index.dictionary-block-size"
OPT_COMPRESSION = "bitmap-index.compression"
OPT_LEVEL = "bitmap-index.compression-level"
OPT_FALLBACK = "bitmap-index.fallback-scan-max-size"
DEFAULT_BLOCK_SIZE = "16 kb"
DEFAULT_FALLBACK = "256 mb"

EMPTY64 = b"\x00" * 8
_ANY_LENGTH = (0, 0x7FFFFFFF)


def _options(options) -> Options:
    return options if isinstance(options, Options) else Options(options)


# ================================================================ writer


def _block_options(opts, block_key: str, compression_key: str, level_key: str, default: str = DEFAULT_BLOCK_SIZE):
    """``(block size, compression, level, block encoder)`` from a writer's options (the bitmap,
    multivalue and BTree writers read the same three options under their own names)."""
    block_size = opts.get_memory_size(block_key, default)
    if not 0 < block_size < 2**31:
        raise OptionError(f"{block_key} must be greater than 0, got {opts.get(block_key)!r}")
    compression = _codec.compression_type(opts.get(compression_key, "none"), compression_key)
    level = opts.get_int(level_key, 1)
    return block_size, compression, level, _codec.BlockEncoder(compression, level)


class _FileWriter:
    """``finish_to`` for the writers whose ``finish()`` gives ``(file bytes, meta bytes)``."""

    def finish_to(self, path):
        """Write the file to ``path`` (temporary name + atomic rename); returns the meta bytes
        (None for 0 rows, and then no file is written)."""
        data, meta = self.finish()
        if data is None:
            return None
        write_atomic(path, data)
        return meta

    def _gathered(self):
        """``(keys, row ids)`` written so far: the keys as one Arrow array of the first batch's
        type, the row ids as given.  A row id given twice is refused (InvalidArgumentError)."""
        arr = (
            self._keys[0]
            if len(self._keys) == 1
            else pa.concat_arrays([a.cast(self._keys[0].type) for a in self._keys])
        )
        rids = self._rids[0] if len(self._rids) == 1 else np.concatenate(self._rids)
        # row ids usually arrive ascending (one pass proves them distinct); else sort a copy
        srt = rids if rids.size < 2 or bool(np.all(rids[1:] > rids[:-1])) else np.sort(rids)
        dup = np.flatnonzero(srt[1:] == srt[:-1])
        if dup.size:
            raise InvalidArgumentError(
                f"row id {int(srt[dup[0]])} is given {int((srt == srt[dup[0]]).sum())} times: "
                "a global index maps each row id to one value"
            )
        return arr, rids


class BitmapGlobalIndexWriter(_FileWriter):
    """Writes one bitmap global index file from ``(key, row id)`` batches.

    Batches may come in any order and any number; :meth:`finish` sorts by key
    (a radix-sort kernel), groups row ids per key and lays the file out exactly
    as Java's ``BitmapGlobalIndexWriter`` would after receiving the rows sorted
    by key then row id.
    """

    def __init__(self, dtype, options=None):
        self.codec = KeyCodec(dtype)
        self.dtype = self.codec.dtype
        self.options = _options(options)
        self.block_size, self.compression, self.level, self.encoder = _block_options(
            self.options, OPT_BLOCK_SIZE, OPT_COMPRESSION, OPT_LEVEL
        )
        self._keys = []
        self._rids = []
        self.row_count = 0

    def write_batch(self, keys, row_ids=None) -> None:
        """Add a batch: ``keys`` (Arrow / numpy / sequence, None = null) and their 64-bit
        row ids (default: the next ``len(keys)`` positions)."""
        arr, _ = self.codec.column(keys)
        n = len(arr)
        if row_ids is None:
            rids = np.arange(self.row_count, self.row_count + n, dtype=np.uint64)
        else:
            if isinstance(row_ids, (pa.Array, pa.ChunkedArray)):
                row_ids = row_ids.to_numpy(zero_copy_only=False)
            r = np.asarray(row_ids)
            if r.dtype.kind == "i":
                if r.size and r.min() < 0:
                    raise ValueError("row ids must be non-negative")
                r = r.astype(np.int64, copy=False).view(np.uint64)
            elif r.dtype.kind != "u":
                if r.dtype.kind == "f" and r.size and not np.all(np.isfinite(r) & (r == np.floor(r))):
                    raise InvalidArgumentError("row ids must be integers (a fractional row id is not truncated)")
                if r.dtype.kind == "b":
                    raise InvalidArgumentError("row ids must be integers, got booleans")
                r = r.astype(np.int64)
                if r.size and r.min() < 0:
                    raise ValueError("row ids must be non-negative")
                r = r.view(np.uint64)
            rids = np.ascontiguousarray(r, dtype=np.uint64)
            if len(rids) != n:
                raise ValueError(f"{n} keys but {len(rids)} row ids")
        self._keys.append(arr)
        self._rids.append(rids)
        self.row_count += n

    def write(self, key, row_id: int) -> None:
        """Add one row (convenience; batches are much faster)."""
        self.write_batch([key], np.array([row_id], dtype=np.uint64))

    # ------------------------------------------------------------ finish
    def finish(self):
        """``(file bytes, SortedIndexFileMeta bytes)``, or ``(None, None)`` for 0 rows
        (Java writes no file then)."""
        if self.row_count == 0:
            return None, None
        arr, rids = self._gathered()
        return build_file(self.codec, arr, rids, self.block_size, self.encoder)


# ================================================================ multivalue writer (ARRAY columns)

OPT_MV_BLOCK_SIZE = "multivalue-index.dictionary-block-size"
OPT_MV_COMPRESSION = "multivalue-index.compression"
OPT_MV_LEVEL = "multivalue-index.compression-level"

_ARRAY_RE = re.compile(r"^\s*ARRAY\s*<\s*(?P<elem>.*?)\s*>\s*(?P<nn>NOT\s+NULL)?\s*$", re.IGNORECASE | re.DOTALL)


def element_type(dtype) -> str:
    """The element type string of ``"ARRAY<T>"`` (``IndexError``-free: raises
    :class:`UnsupportedTypeError` for anything that is not an ARRAY type)."""
    m = _ARRAY_RE.match(str(dtype))
    if not m or not m.group("elem"):
        raise UnsupportedTypeError(f"the multivalue index needs an ARRAY column type, got {dtype!r}")
    return m.group("elem")


def flatten_lists(values, row_ids, element_codec: KeyCodec):
    """``(elements, row ids)`` of every non-null element of a list column: the list array's
    values (nulls and null arrays dropped) and each element's row id (its array's row id
    repeated), all in Arrow / numpy kernels (no Python object per element)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
    if not isinstance(values, pa.Array):
        values = pa.array(list(values), type=pa.list_(element_codec.dtype.to_arrow()))
    t = values.type
    if not (
        pa.types.is_list(t)
        or pa.types.is_large_list(t)
        or pa.types.is_fixed_size_list(t)
        or (hasattr(pa.types, "is_list_view") and (pa.types.is_list_view(t) or pa.types.is_large_list_view(t)))
    ):
        raise TypeError(f"the multivalue index takes list arrays, got {t}")
    if not (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)):
        values = values.cast(pa.large_list(t.value_type))
    n = len(values)
    flat, parents = list_elements(values)
    elems, valid = element_codec.column(flat)
    rids = row_ids[parents]
    if valid is not None:
        elems = elems.filter(pa.array(valid))
        rids = rids[valid]
    return n, elems, np.ascontiguousarray(rids, dtype=np.uint64)


class MultiValueGlobalIndexWriter(_FileWriter):
    """Writes one ``multivalue`` global index file over an ARRAY column (Java's
    ``MultiValueGlobalIndexer``): one row-id bitmap per distinct non-null element, keys in
    the element type's logical order, in the bitmap global index layout (footer version 1)
    with empty null-rows and non-null-rows bitmaps; null arrays and null elements index
    nothing.  Options ``multivalue-index.dictionary-block-size`` (16 kb),
    ``multivalue-index.compression`` (none) and ``multivalue-index.compression-level`` (1);
    the ``bitmap-index.*`` options do not apply.
    """

    def __init__(self, dtype, options=None):
        self.dtype = str(dtype)
        self.codec = KeyCodec(element_type(dtype))
        self.element_type = self.codec.dtype
        self.options = _options(options)
        self.block_size, self.compression, self.level, self.encoder = _block_options(
            self.options, OPT_MV_BLOCK_SIZE, OPT_MV_COMPRESSION, OPT_MV_LEVEL
        )
        self._elems = []
        self._rids = []
        self.row_count = 0

    def write_batch(self, values, row_ids=None) -> None:
        """Add a batch: ``values`` a pyarrow list array (or chunked / a sequence of lists,
        None = null array) and the 64-bit row id of each array (default: the next
        ``len(values)`` positions)."""
        n = len(values)
        if row_ids is None:
            rids = np.arange(self.row_count, self.row_count + n, dtype=np.uint64)
        else:
            rids = _row_ids(row_ids)
            if len(rids) != n:
                raise ValueError(f"{n} arrays but {len(rids)} row ids")
        n, elems, erids = flatten_lists(values, rids, self.codec)
        self._elems.append(elems)
        self._rids.append(erids)
        self.row_count += n

    def write(self, value, row_id: int) -> None:
        """Add one row's array (convenience; batches are much faster)."""
        self.write_batch([value], np.array([row_id], dtype=np.uint64))

    def finish(self):
        """``(file bytes, SortedIndexFileMeta bytes)``; ``(None, None)`` for 0 rows (Java
        writes no file then).  Rows holding no element give a file without dictionary
        blocks whose meta has both keys null."""
        if self.row_count == 0:
            return None, None
        arr = (
            self._elems[0]
            if len(self._elems) == 1
            else pa.concat_arrays([a.cast(self._elems[0].type) for a in self._elems])
        )
        rids = self._rids[0] if len(self._rids) == 1 else np.concatenate(self._rids)
        return build_multivalue_file(self.codec, arr, rids, self.block_size, self.encoder)


def build_multivalue_file(key_codec: KeyCodec, elems: pa.Array, rids: np.ndarray, block_size: int, encoder):
    """The multivalue file of non-null ``elems`` with their row ids: the bitmap layout with
    empty null / non-null bitmaps (meta: first / last key, has nulls = false)."""
    return multivalue_file_from_groups(group_column(key_codec, elems, rids), block_size, encoder)


def multivalue_file_from_groups(groups, block_size: int, encoder):
    """:func:`build_multivalue_file` from the elements' :class:`Groups`."""
    blob, sizes = serialize_groups(groups.rids, groups.bounds)
    body, first_idx, boffs, blens = _k.pack(groups.key_off, groups.key_data, blob, sizes, block_size, encoder)
    empty = np.zeros(0, dtype=np.uint64)
    return assemble(body, groups.key_off, groups.key_data, first_idx, boffs, blens, empty, empty, len(sizes), encoder)


def _row_ids(row_ids) -> np.ndarray:
    if isinstance(row_ids, (pa.Array, pa.ChunkedArray)):
        row_ids = row_ids.to_numpy(zero_copy_only=False)
    r = np.asarray(row_ids)
    if r.dtype.kind == "i":
        if r.size and r.min() < 0:
            raise ValueError("row ids must be non-negative")
        r = r.astype(np.int64, copy=False).view(np.uint64)
    elif r.dtype.kind != "u":
        r = r.astype(np.int64)
        if r.size and r.min() < 0:
            raise ValueError("row ids must be non-negative")
        r = r.view(np.uint64)
    return np.ascontiguousarray(r, dtype=np.uint64)


class Groups:
    """A column sorted and grouped by key (:func:`group_column`): the null rows' ids
    ``nulls`` (ascending); the strictly increasing row ids ``rids[bounds[g]:bounds[g+1]]``
    of the g-th smallest key, whose serialized bytes are ``key_data[key_off[g]:key_off[g+1]]``;
    for non-string keys also their order keys ``ghi`` / ``glo`` (None for strings: their
    bytes order them); ``nonnull``: every non-null row id ascending, when known without a
    sort (else None).  Groupings of disjoint, ascending row-id intervals merge into the
    grouping of their union (:func:`merge_groups`)."""

    __slots__ = ("nulls", "rids", "bounds", "key_off", "key_data", "ghi", "glo", "nonnull")

    def __init__(self, nulls, rids, bounds, key_off, key_data, ghi=None, glo=None, nonnull=None):
        self.nulls = np.ascontiguousarray(nulls, dtype=np.uint64)
        self.rids = np.ascontiguousarray(rids, dtype=np.uint64)
        self.bounds = np.ascontiguousarray(bounds, dtype=np.int64)
        self.key_off = np.ascontiguousarray(key_off, dtype=np.int64)
        self.key_data = np.ascontiguousarray(
            key_data if isinstance(key_data, np.ndarray) else np.frombuffer(key_data, np.uint8), dtype=np.uint8
        )
        self.ghi = None if ghi is None else np.ascontiguousarray(ghi, dtype=np.int64)
        self.glo = None if glo is None else np.ascontiguousarray(glo, dtype=np.uint64)
        self.nonnull = None if nonnull is None else np.ascontiguousarray(nonnull, dtype=np.uint64)

    @property
    def keys(self) -> int:
        return len(self.bounds) - 1


def group_column(key_codec: KeyCodec, arr: pa.Array, rids: np.ndarray) -> Groups:
    """Sort ``arr``'s rows by (key, row id) with the kernels and group them (:class:`Groups`)."""
    valid = None
    if arr.null_count:
        from ..core.types import validity_mask

        valid = validity_mask(arr)
    if valid is None:
        nn_rids = rids
        null_rids = rids[:0]
    else:
        nn_rids = rids[valid]
        null_rids = rids[~valid]
    nn_rids = np.ascontiguousarray(nn_rids, dtype=np.uint64)
    rid_sorted = bool(nn_rids.size < 2 or (nn_rids[1:] >= nn_rids[:-1]).all())
    null_rids = np.ascontiguousarray(null_rids, dtype=np.uint64)
    if null_rids.size > 1 and not (null_rids[1:] >= null_rids[:-1]).all():
        null_rids = np.sort(null_rids)
    if key_codec.is_string:
        off, data = binary_buffers(arr)
        rank, key_off, key_data = _k.string_ranks(
            np.ascontiguousarray(off), data, None if valid is None else valid.view(np.uint8)
        )
        hi = rank if valid is None else rank[valid]
        hi = np.ascontiguousarray(hi, dtype=np.int64)
        lo = np.zeros(len(hi), dtype=np.uint64)
        g_rids, bounds, _, _ = _k.sort_group(hi, lo, nn_rids, rid_sorted)
        return Groups(null_rids, g_rids, bounds, key_off, key_data, nonnull=nn_rids if rid_sorted else None)
    hi, lo = key_codec.order_keys(arr)
    if valid is not None:
        hi, lo = hi[valid], lo[valid]
    hi = np.ascontiguousarray(hi, dtype=np.int64)
    lo = np.ascontiguousarray(lo, dtype=np.uint64)
    g_rids, bounds, ghi, glo = _k.sort_group(hi, lo, nn_rids, rid_sorted)
    key_off, key_data = _k.serialize_keys(key_codec.kind, ghi, glo)
    return Groups(null_rids, g_rids, bounds, key_off, key_data, ghi, glo, nn_rids if rid_sorted else None)


PARALLEL_GROUP_ROWS = 1 << 21  # columns of at least this many rows are grouped in slices side by side


def group_column_parallel(key_codec: KeyCodec, arr: pa.Array, rids: np.ndarray, threads: int = None) -> Groups:
    """:func:`group_column` of ``arr`` cut into ``threads`` (default: up to 2 cores) consecutive
    slices grouped side by side (the kernels release the GIL) and merged by
    :func:`merge_groups`: the same :class:`Groups`.  Only when the row ids strictly ascend (the
    slices are then disjoint, ascending row-id intervals) and the column has at least
    :data:`PARALLEL_GROUP_ROWS` rows; else one :func:`group_column`."""
    n = len(arr)
    if threads is None:
        from ..io.pool import threads as _threads

        threads = min(2, _threads())
    rids = np.ascontiguousarray(rids, dtype=np.uint64)
    if threads < 2 or n < max(PARALLEL_GROUP_ROWS, 2) or not bool((rids[1:] > rids[:-1]).all()) or nearly_unique(arr):
        return group_column(key_codec, arr, rids)
    cuts = np.linspace(0, n, threads + 1).astype(np.int64).tolist()
    from concurrent.futures import ThreadPoolExecutor

    def one(ab):
        a, b = ab
        return group_column(key_codec, arr.slice(a, b - a), rids[a:b])

    with ThreadPoolExecutor(threads) as ex:
        parts = list(ex.map(one, zip(cuts[:-1], cuts[1:])))
    # without nulls the slices' non-null row ids are the slices of rids: no copy of them all
    return merge_groups(parts, nonnull=rids if arr.null_count == 0 else None)


def nearly_unique(arr: pa.Array, sample: int = 1 << 16) -> bool:
    """Are nine in ten of a sample of ``arr``'s values distinct?  Then the slices' groupings
    hold about as many keys as rows and merging them costs what the slices saved."""
    import pyarrow.compute as pc

    idx = np.unique(np.random.default_rng(len(arr)).integers(0, len(arr), min(sample, len(arr))))  # distinct rows
    part = arr.take(pa.array(idx))
    return pc.count_distinct(part).as_py() > 0.9 * len(part)


def merge_groups(parts, nonnull=None) -> Groups:
    """The :class:`Groups` of the union of ``parts`` (groupings of disjoint row-id intervals,
    in ascending row-id order): the distinct keys of all parts ranked together (the string
    kernel over the parts' few distinct keys, or numpy on the order keys), then each key's
    row ids are its parts' runs one after the other (a gather, no sort of rows).
    ``nonnull``: the union's non-null row ids ascending, when the caller has them (else the
    parts' are concatenated, when every part knows its own)."""
    parts = [p for p in parts if p.keys or len(p.nulls)]
    if len(parts) <= 1:
        return (
            parts[0]
            if parts
            else Groups(
                np.zeros(0, np.uint64),
                np.zeros(0, np.uint64),
                np.zeros(1, np.int64),
                np.zeros(1, np.int64),
                np.zeros(0, np.uint8),
            )
        )
    nulls = np.concatenate([p.nulls for p in parts])
    base = np.cumsum([0] + [p.key_off[-1] for p in parts])
    key_off = np.concatenate([parts[0].key_off[:1]] + [p.key_off[1:] + b for p, b in zip(parts, base)])
    key_data = np.concatenate([p.key_data[: p.key_off[-1]] for p in parts])
    if parts[0].ghi is None:  # strings: rank the parts' distinct keys by bytes
        rank, m_off, m_data = _k.string_ranks(key_off, key_data, None)
        ghi = glo = None
    else:
        hi = np.concatenate([p.ghi for p in parts])
        lo = np.concatenate([p.glo for p in parts])
        order = np.lexsort((lo, hi))
        new = np.ones(len(order), dtype=bool)
        new[1:] = (hi[order][1:] != hi[order][:-1]) | (lo[order][1:] != lo[order][:-1])
        rank = np.empty(len(order), dtype=np.int64)
        rank[order] = np.cumsum(new) - 1
        first = order[new]
        ghi, glo = hi[first], lo[first]
        starts, ends = key_off[first], key_off[first + 1]
        lens = ends - starts
        m_off = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
        m_data = key_data[np.repeat(starts - m_off[:-1], lens) + np.arange(m_off[-1])] if len(lens) else key_data[:0]
    # every part's group g is a segment of its row ids; stable by rank keeps the parts' order
    seg_part = np.repeat(np.arange(len(parts), dtype=np.int64), [p.keys for p in parts])
    seg_start = np.concatenate([p.bounds[:-1] for p in parts])
    seg_len = np.concatenate([np.diff(p.bounds) for p in parts])
    order = np.argsort(rank, kind="stable")
    rids = _k.gather_segments(
        [p.rids for p in parts],
        np.ascontiguousarray(seg_part[order]),
        np.ascontiguousarray(seg_start[order]),
        np.ascontiguousarray(seg_len[order]),
    )
    bounds = np.zeros(len(m_off), dtype=np.int64)
    np.cumsum(np.bincount(rank, weights=seg_len, minlength=len(m_off) - 1).astype(np.int64), out=bounds[1:])
    if nonnull is None and not any(p.nonnull is None for p in parts):
        nonnull = np.concatenate([p.nonnull for p in parts])
    return Groups(nulls, rids, bounds, m_off, m_data, ghi, glo, nonnull)


def serialize_groups(rids: np.ndarray, bounds: np.ndarray, threads: int = 2, join: bool = True):
    """``serialize64_groups`` of many groups, cut into ``threads`` slices of about equal row
    counts serialized side by side (the kernel releases the GIL); the same bytes.  With
    ``join=False``, the slices' bitmaps are left as they are: ``([blob, ...], sizes)``."""
    ng = len(bounds) - 1
    if threads < 2 or len(rids) < 1 << 20 or ng < threads:
        blob, sizes = _k.serialize64_groups(rids, bounds)
        return (blob, sizes) if join else ([blob], sizes)
    cuts = np.unique(
        np.concatenate([[0], np.searchsorted(bounds, np.linspace(0, bounds[-1], threads + 1)[1:-1]), [ng]])
    )
    from concurrent.futures import ThreadPoolExecutor

    def one(ab):
        a, b = bounds[ab[0]], bounds[ab[1]]
        return _k.serialize64_groups(rids[a:b], np.ascontiguousarray(bounds[ab[0] : ab[1] + 1] - a))

    with ThreadPoolExecutor(len(cuts) - 1) as ex:
        got = list(ex.map(one, zip(cuts[:-1], cuts[1:])))
    sizes = np.concatenate([g[1] for g in got])
    return (b"".join(g[0] for g in got) if join else [g[0] for g in got]), sizes


def body_parts(blobs, sizes: np.ndarray, after: np.ndarray, blocks) -> list:
    """A body laid out by the kernel ``pack_blocks`` as buffers in file order, without
    copying the bitmaps: ``blobs`` hold the bitmaps of ``sizes`` one after another
    (split anywhere between bitmaps), dictionary block j follows the bitmap of key
    ``after[j]``.  Joined, the parts are ``pack``'s body."""
    views = [memoryview(b).cast("B") for b in blobs]
    starts = np.cumsum([0] + [len(v) for v in views]).tolist()
    ends = np.cumsum(sizes, dtype=np.int64)
    if starts[-1] != (int(ends[-1]) if len(ends) else 0):
        raise ValueError(f"bitmap sizes add up to {int(ends[-1]) if len(ends) else 0}, the blobs hold {starts[-1]}")
    parts = []
    cur = bi = 0

    def take(upto):
        nonlocal cur, bi
        while cur < upto:
            while starts[bi + 1] <= cur:
                bi += 1
            e = min(upto, starts[bi + 1])
            parts.append(views[bi][cur - starts[bi] : e - starts[bi]])
            cur = e

    for j, cut in enumerate(ends[after].tolist() if len(after) else []):
        take(cut)
        parts.append(blocks[j])
    take(starts[-1])
    return parts


def build_file(key_codec: KeyCodec, arr: pa.Array, rids: np.ndarray, block_size: int, encoder):
    g = group_column(key_codec, arr, rids)
    blob, sizes = serialize_groups(g.rids, g.bounds)
    body, first_idx, boffs, blens = _k.pack(g.key_off, g.key_data, blob, sizes, block_size, encoder)
    return assemble(
        body,
        g.key_off,
        g.key_data,
        first_idx,
        boffs,
        blens,
        g.nulls,
        g.rids if g.nonnull is None else g.nonnull,
        len(sizes),
        encoder,
    )


def build_files(key_codec: KeyCodec, arr: pa.Array, rids: np.ndarray, block_size: int, encoder, max_records: int):
    """Files of at most ``max_records`` records each, as Java's rotating sorted index writer
    cuts them: the records in (nulls first, then key, then row id) order, a new file every
    ``max_records`` records (a key's row ids may continue in the next file).  Returns
    ``[(file bytes, meta bytes, record count)]``; one sort for all files."""
    return files_from_groups(group_column(key_codec, arr, rids), block_size, encoder, max_records)


def files_from_groups(groups: Groups, block_size: int, encoder, max_records: int, chunks: bool = False):
    """:func:`build_files` from the column's :class:`Groups`; with ``chunks`` each file's bytes
    are :class:`~paimon_fast.io.fsutil.Chunks` (its bitmaps never copied into one buffer)."""
    out = []
    for nulls, sub_rids, sub_bounds, sub_off, sub_data, records, whole in group_chunks(groups, max_records):
        if chunks:
            blobs, sizes = serialize_groups(sub_rids, sub_bounds, join=False)
            blocks, after, first_idx, boffs, blens = _k.pack_blocks(sub_off, sub_data, sizes, block_size, encoder)
            body = body_parts(blobs, sizes, after, blocks)
        else:
            blob, sizes = serialize_groups(sub_rids, sub_bounds)
            body, first_idx, boffs, blens = _k.pack(sub_off, sub_data, blob, sizes, block_size, encoder)
        data, meta = assemble(
            body,
            sub_off,
            sub_data,
            first_idx,
            boffs,
            blens,
            nulls,
            groups.nonnull if whole else sub_rids,
            len(sizes),
            encoder,
        )
        out.append((data, meta, records))
    return out


def group_chunks(groups: Groups, max_records: int):
    """Cut a column's :class:`Groups` into files of at most ``max_records`` records, as Java's
    rotating sorted index writer does: the records in (nulls first, then key, then row id)
    order, a new file every ``max_records`` records (a key's row ids may continue in the next
    file).  Yields ``(null row ids, row ids, bounds, key offsets, key bytes, records, whole)``
    per file, ``whole`` when the one file holds every record and the non-null row ids are
    known sorted (``groups.nonnull``)."""
    if max_records <= 0:
        raise OptionError(f"records per file must be positive, got {max_records}")
    null_rids, g_rids, bounds = groups.nulls, groups.rids, groups.bounds
    key_off, key_data = groups.key_off, groups.key_data
    n_null, n_nn = len(null_rids), len(g_rids)
    total = n_null + n_nn
    for s in range(0, total, max_records):
        e = min(total, s + max_records)
        nulls = null_rids[min(s, n_null) : min(e, n_null)]
        a, b = max(s - n_null, 0), max(e - n_null, 0)
        if b > a:
            g0 = int(np.searchsorted(bounds, a, "right")) - 1
            g1 = int(np.searchsorted(bounds, b - 1, "right")) - 1
            sub_bounds = np.clip(bounds[g0 : g1 + 2], a, b) - a
            sub_rids = np.ascontiguousarray(g_rids[a:b])
            sub_off = key_off[g0 : g1 + 2] - key_off[g0]
            sub_data = np.ascontiguousarray(key_data[key_off[g0] : key_off[g1 + 1]])
        else:
            sub_bounds = np.zeros(1, dtype=np.int64)
            sub_rids = g_rids[:0]
            sub_off = np.zeros(1, dtype=np.int64)
            sub_data = np.zeros(0, dtype=np.uint8)
        yield (
            nulls,
            sub_rids,
            np.ascontiguousarray(sub_bounds, dtype=np.int64),
            np.ascontiguousarray(sub_off),
            sub_data,
            e - s,
            s == 0 and e == total and groups.nonnull is not None,
        )


def serialize64_sorted_unique(values: np.ndarray) -> bytes:
    u = np.ascontiguousarray(values, dtype=np.uint64)
    if u.size > 1 and not (u[1:] > u[:-1]).all():
        lo = u.min()
        span = int(u.max() - lo) + 1
        if span <= 8 * u.size:  # dense (a row range's rows): a mask over the span, no sort
            mask = np.zeros(span, dtype=bool)
            mask[u - lo] = True
            u = np.flatnonzero(mask).astype(np.uint64) + lo
        else:
            u = _k.sort_unique_u64(u)
    blob, _ = _k.serialize64_groups(u, np.array([0, len(u)], dtype=np.int64))
    return blob


def assemble(body, key_off, key_data, first_idx, boffs, blens, null_rids, nn_rids, value_count, encoder):
    """Null / non-null bitmaps, index block, footer after the packed body; plus the meta.
    ``body`` is bytes (the file is then bytes) or a list of buffers (:func:`body_parts`: the
    file is then :class:`~paimon_fast.io.fsutil.Chunks`)."""
    chunked = isinstance(body, list)
    parts = list(body) if chunked else [body]
    pos = sum(len(p) for p in parts) if chunked else len(body)
    null_bm = serialize64_sorted_unique(null_rids)
    nn_bm = serialize64_sorted_unique(nn_rids)
    null_off, nn_off = pos, pos + len(null_bm)
    parts += [null_bm, nn_bm]
    pos += len(null_bm) + len(nn_bm)
    idx = bytearray(encode_varint(len(first_idx)))
    kd = key_data.tobytes() if isinstance(key_data, np.ndarray) else bytes(key_data)
    for g, o, ln in zip(first_idx.tolist(), boffs.tolist(), blens.tolist()):
        key = kd[key_off[g] : key_off[g + 1]]
        idx += encode_varint(len(key)) + key + encode_varint(o) + encode_varint(ln)
    stored = encoder(bytes(idx))
    index_off, index_len = pos, len(stored) - _codec.TRAILER
    parts.append(stored)
    parts.append(
        FOOTER_STRUCT.pack(
            null_off, len(null_bm), nn_off, len(nn_bm), index_off, index_len, value_count, VERSION, MAGIC
        )
    )
    if value_count:
        first = kd[key_off[0] : key_off[1]]
        last = kd[key_off[value_count - 1] : key_off[value_count]]
    else:
        first = last = None
    meta = SortedIndexFileMeta(first, last, len(null_rids) > 0).serialize()
    return (Chunks(parts) if chunked else b"".join(parts)), meta


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
