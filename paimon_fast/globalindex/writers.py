"""The bitmap and multivalue global index writers: :class:`BitmapGlobalIndexWriter` (one
file from ``(key, row id)`` batches), :class:`MultiValueGlobalIndexWriter` (one file over an
ARRAY column) and what they share (their options, the gathered batches, the row ids given,
the list columns flattened); the files are built by :mod:`.groups`."""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa

from ..errors import InvalidArgumentError, OptionError, UnsupportedTypeError
from ..fileindex.options import Options
from ..io.fsutil import write_atomic
from ..core.types import list_elements
from . import sst as _codec
from .groups import build_file, build_multivalue_file
from .keys import KeyCodec
from .layout import DEFAULT_BLOCK_SIZE, OPT_BLOCK_SIZE, OPT_COMPRESSION, OPT_LEVEL


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
