"""The fast path's index answers per data file (:mod:`paimon_fast.paimon.fastpath`): the global
indexes' rows, each file's index container (embedded or its ``.index`` sidecar, headers parsed once
per table) and the candidate rows left after its answer and deletion vector."""

from __future__ import annotations

from typing import Dict, Optional

import numpy as np
from pyroaring import BitMap

from ..errors import PaimonFastError
from ..errors import UnknownIndexTypeError, UnsupportedTypeError
from ..fileindex import EmptyFileIndexReader, evaluate_tree, get_factory
from ..fileindex.format import EMPTY_INDEX_FLAG as _EMPTY_INDEX, MAGIC as _CONTAINER_MAGIC, FileIndexFile
from ..fileindex.options import Options
from ..core.predicate import Leaf
from ..core.types import DataType
from ..core.result import REMAIN, BitmapResult
from ..core.roaring import bitmap_of
from ..io.source import BytesSource, FileSource
from .deletion import read_deletion_vector
from .plan import _File, _is_local, _is_true, _options
from .pruning import Fallback, _CountingSource, _result_of
from .fastpath_schemas import _Schemas


def _open_stream(file_io, fspath):
    """A seekable binary stream of a filesystem path (a plain file when local: cheaper to open)."""
    if _is_local(file_io):
        return open(fspath, "rb")
    return file_io.filesystem.open_input_file(fspath)


def _stores_row_ids(table, f: _File) -> bool:
    """Does the data file carry a physical ``_ROW_ID`` column (then row id != first row id +
    position)?  Read from the Parquet footer once per file."""
    if f.stored_row_ids is None:
        import pyarrow.parquet as pq

        with table.file_io.filesystem.open_input_file(f"{f.fsdir}/{f.name}") as fh:
            f.stored_row_ids = "_ROW_ID" in pq.read_schema(fh).names
    return f.stored_row_ids


def _global_results(table, predicate, files, rep, snapshot=None):
    """Per file, the global indexes' rows as a ``BitmapResult`` of positions (None: no answer
    for that file), or None when no global index answers the predicate.  Data-evolution
    tables follow the search mode (``fast``: rows outside the indexed ranges are not read);
    on other row-tracking tables, which Java reads without global indexes, rows no index
    covers are always kept.  ``snapshot``: the one planned (default: the latest)."""
    from pyroaring import BitMap64

    if not _is_true(_options(table), "global-index.enabled", True):
        return None
    from .globalindex import GlobalIndexAnswer

    gi = GlobalIndexAnswer(table, predicate, snapshot)
    if gi.data_evolution and gi.foreign_types:
        raise Fallback(f"global index types paimon-fast does not read: {', '.join(gi.foreign_types)}")
    if not gi.has_index:
        return None
    part = gi.evaluate()
    if not len(part.cover):
        return None
    only_indexed = gi.data_evolution and gi.mode == "fast"
    out = []
    for f in files:
        if f.first_row_id is None or f.write_cols:
            raise Fallback(f"data file {f.name}: no first row id or a column group")
        lo, hi = f.first_row_id, f.first_row_id + f.rows
        covered = part.cover.range_cardinality(lo, hi)
        if not covered and not only_indexed:
            out.append(None)  # nothing indexed here: the file index (or a read) decides
            continue
        if _stores_row_ids(table, f):
            raise Fallback(f"data file {f.name} stores _ROW_ID")
        r = BitMap64()
        r.add_range(lo, hi)
        sel = r & part.rows
        if not only_indexed and covered < f.rows:
            sel |= r - part.cover
        out.append(BitmapResult(bitmap_of(np.asarray(sel.to_array(), dtype=np.int64) - lo)))
    rep.global_indexes = list(gi.used)
    rep.index_bytes_read += gi.index_bytes_read
    rep.global_index_search_mode = (
        gi.mode if gi.data_evolution else "full (Java reads no global index without data evolution)"
    )
    return out


def file_candidates(table, f: _File, res) -> Optional[BitMap]:
    """The rows of ``f`` left to read after its index answer ``res`` (an exact bitmap, clipped to
    the file) and its deletion vector; None when every row is (no exact answer, nothing deleted)."""
    cand = None
    if isinstance(res, BitmapResult):
        cand = BitMap(res.bitmap)
        if len(cand) and cand.max() >= f.rows:
            cand.remove_range(f.rows, cand.max() + 1)
    if f.deletion is not None:
        dv = read_deletion_vector(table.file_io, f.deletion)
        if cand is None:
            cand = BitMap()
            cand.add_range(0, f.rows)
        cand -= dv
    return cand


def _evaluate(table, f: _File, schemas: _Schemas, predicate):
    """``(result, index bytes read)`` of one file; bytes -1 when it has no index."""
    names, types = schemas.index_view(f.schema_id)
    try:
        if f.embedded:
            data = bytes(f.embedded)
            return _container_result(f, BytesSource(data), names, types, predicate), len(data)
        for extra in f.extra:
            if extra.endswith(".index"):
                path = f"{f.fsdir}/{extra}"
                if _is_local(table.file_io):
                    try:
                        src = _PreadSource(path)
                    except OSError:
                        return REMAIN, 0
                    with src:
                        return _container_result(f, src, names, types, predicate), src.bytes_read
                try:
                    stream = _open_stream(table.file_io, path)
                except OSError:
                    return REMAIN, 0
                with stream:
                    src = _CountingSource(stream)
                    return _container_result(f, src, names, types, predicate), src.bytes_read
    except (PaimonFastError, OSError):
        return REMAIN, 0
    return REMAIN, -1


class _PreadSource(FileSource):
    """A local index file read with ``os.pread`` (no buffered stream), counting the bytes read."""

    _FIRST = 4096  # the container header and the start of the first index: one read

    def __init__(self, path):
        super().__init__(path)
        self._first = b""
        self.bytes_read = 0

    def _read(self, offset, length):
        end = offset + length
        first = self._first
        if end <= len(first):
            return first[offset:end]
        if offset == 0 and not first and length <= self._FIRST:
            first = self._first = super()._read(0, min(self.size, self._FIRST))
            self.bytes_read += len(first)
            return first[:length]
        self.bytes_read += length
        return super()._read(offset, length)


# Parsed container headers by their exact bytes and the container's size.  The files
# of one table usually share one header (same columns, index types and sizes), so a
# cold plan parses it once; a header's validation depends only on these two values.
_HEADERS: Dict[tuple, tuple] = {}
_HEADERS_MAX = 4096
_NO_OPTIONS = Options({})
_HEAD = __import__("struct").Struct(">qii")


def _header_key(source):
    """``(head bytes, size)`` of a container, or None when its fixed part does not check out
    (the container parser then reports the error)."""
    size = source.size
    if size < 20:
        return None
    fixed = bytes(source.read_at(0, 16, "container header"))
    magic, version, head_len = _HEAD.unpack(fixed)
    if magic != _CONTAINER_MAGIC or head_len < 24 or head_len > size or head_len > 1 << 20:
        return None
    return bytes(source.read_at(0, head_len, "container header")), size


def _container_result(f: _File, source, names, types, predicate):
    layout = f.layout
    key = None
    if layout is None:
        key = _header_key(source)
        layout = _HEADERS.get(key) if key is not None else None
    if layout is not None and layout[2] == source.size:
        f.layout = layout
        res = _lean_result(source, layout[0], names, types, predicate)
    else:
        container = FileIndexFile(source, types, {}, layout)
        f.layout = container.layout()  # kept with the plan, i.e. for this snapshot
        if key is not None:
            if len(_HEADERS) >= _HEADERS_MAX:
                _HEADERS.clear()
            _HEADERS[key] = f.layout
        res = _result_of(container, predicate, names)
    if isinstance(res, BitmapResult):
        res.bitmap  # materialise while the stream is open
    return res


_LEAVES: Dict[tuple, Leaf] = {}


def _lean_result(source, entries, names, types, predicate):
    """What ``_result_of(FileIndexFile(source, types, {}, layout), predicate, names)`` answers,
    for a container whose header was parsed before (``entries``), without building the
    container object: the same readers, the same AND of every index on a column, the
    same errors turned into REMAIN (an index type we do not know, a column without a
    type, a reader that cannot answer or finds corrupt bytes)."""
    readers = {}

    def reader(col, itype, start, length):
        rd = readers.get((col, itype))
        if rd is None:
            dtype = DataType.parse(types[col])  # KeyError: no type, skipped as FileIndexFile does
            if start == _EMPTY_INDEX:
                rd = EmptyFileIndexReader(dtype, source.slice(0, 0), _NO_OPTIONS)
            else:
                rd = get_factory(itype).reader(dtype, source.slice(start, length, f"{itype} of {col}"), _NO_OPTIONS)
            readers[(col, itype)] = rd
        return rd

    def visit(leaf: Leaf):
        col = names.get(leaf.name)
        if col is None:
            return REMAIN
        try:
            k = (leaf.op, col, leaf.literals)
            try:
                fleaf = _LEAVES[k]
            except (KeyError, TypeError):  # TypeError: unhashable literal
                fleaf = Leaf(leaf.op, col, leaf.literals)
                try:
                    if len(_LEAVES) > 1024:
                        _LEAVES.clear()
                    _LEAVES[k] = fleaf
                except TypeError:
                    pass
            res = REMAIN
            for e in entries.get(col, ()):
                try:
                    rd = reader(col, *e)
                except (UnknownIndexTypeError, KeyError):
                    continue
                res = res.and_(rd.visit(fleaf))
            return res
        except (UnsupportedTypeError, UnknownIndexTypeError, KeyError, TypeError, ValueError):
            return REMAIN

    return evaluate_tree(predicate, visit)
