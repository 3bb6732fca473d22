"""Rows of many Parquet files at once, decoded by the native reader (``csrc/pq_read.h``).

:func:`read_files` takes files with the rows wanted from each (sorted positions, or every row)
and returns one Arrow table of those rows, file after file.  The work is one call into the
compiled reader, which spreads the files' column chunks and pages over the threads
(:func:`paimon_fast.threads`) without the GIL: it reads only the pages that hold wanted rows
(located by the OffsetIndex where the file has one, else by walking the page headers),
decompresses each once and only as far as its last wanted value, and decodes the wanted
values straight into the output buffers, which become the Arrow arrays without a copy.  Python
does per file what the footer needs (parsed once and cached) and per column the Arrow array;
nothing per page or per column chunk.

What the native reader does not decode (nested columns, DELTA_BYTE_ARRAY and BYTE_STREAM_SPLIT
encodings, dictionary-typed or extension-typed reads, codecs whose library is missing: LZO,
Hadoop LZ4, and ZSTD / GZIP / BROTLI without the system's libzstd / libz / libbrotlidec) is
read by pyarrow's row-group read for that file and column, taken at the rows and spliced in;
:class:`~paimon_fast.io.parquet.rows.PageReadStats` counts why (``fallbacks``).  A data file that is
not valid Parquet raises :class:`~paimon_fast.errors.IndexFormatError` (what and where).
"""

from __future__ import annotations

import os
from bisect import bisect_left, bisect_right
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .. import memory as _memory
from . import buffercache as _buffercache
from . import filemap as _filemap
from ...errors import ColumnNotFoundError, IndexFormatError, InvalidArgumentError
from ..source import BytesSource, FileObjSource, FileSource, Source, as_source
from .footer import UnsupportedChunk, footer_for
from .footer import _MAX_METADATA, _Footer, _footer_bytes, _schemas  # noqa: F401  (handed on)
from .arrowmap import (  # noqa: F401  (handed on)
    _BOOLEAN,
    _BYTE_ARRAY,
    _CODECS,
    _DOUBLE,
    _FLBA,
    _FLOAT,
    _HANDLED_ENCODINGS,
    _INT32,
    _INT64,
    _INT96,
    Mapping,
    _arrow,
    _fits,
    _kernel,
    _null_mapping,
    converted,
    mapping,
)
from .layout import _Column, _Layout, _layout  # noqa: F401  (handed on)


def kernels(twin: bool = False):
    """The compiled reader, or its pure-Python twin (``reference/pqread.py``, loaded by name)."""
    if twin:
        from ..._kernels import load

        return load("pqread", twin=True)
    return _kernel()


# ---------------------------------------------------------------- the files of a read
class _File:
    """One file of a read: its source, footer and layout (or why pyarrow reads it), rows."""

    __slots__ = ("src", "key", "pa_source", "owned", "fo", "lay", "why", "pos", "all", "span", "nrows", "n", "out_at")

    def close(self):
        if self.owned:
            self.src.close()


def open_source(source):
    """``(Source, cache key or None, what pyarrow opens for a row-group read, close it?)``."""
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        src = FileSource(path)
        st = os.fstat(src._fd)  # a file's version: a rewrite keeping size and mtime has another ctime or inode
        return src, (path, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino), path, True
    if isinstance(source, Source):
        if isinstance(source, FileSource):
            return source, None, source.path, False
        if isinstance(source, FileObjSource):
            return source, None, source._f, False
        return source, None, None, False
    if isinstance(source, pa.NativeFile):
        return FileObjSource(source), None, source, False
    src = as_source(source)
    if isinstance(src, BytesSource):
        return src, None, pa.BufferReader(src._mv), False
    return src, None, source, False


def _as_positions(positions) -> np.ndarray:
    if hasattr(positions, "to_array") and not isinstance(positions, np.ndarray):  # pyroaring BitMap(64)
        return np.asarray(positions.to_array(), dtype=np.int64)
    try:
        pos = np.asarray(positions)
    except (TypeError, ValueError) as e:
        raise InvalidArgumentError(f"row positions must be integers: {e}") from None
    if pos.size and pos.dtype.kind not in "iu":
        raise InvalidArgumentError(f"row positions must be integers, got {pos.dtype}")
    if pos.ndim != 1:
        raise InvalidArgumentError(f"row positions must be one-dimensional, got shape {pos.shape}")
    if pos.dtype in (np.uint32, np.int32):  # (a bitmap's: the rows of the read widen them in one pass)
        return pos
    return pos.astype(np.int64, copy=False)


def no_columns(n: int) -> pa.Table:
    """A table of ``n`` rows and no column: what a read of no column gives (a count), which
    ``pa.Table.from_arrays([])`` cannot (it has no row)."""
    return pa.table({"": pa.nulls(n)}).select([])


def _as_sorted_positions(positions) -> np.ndarray:
    pos = _as_positions(positions)
    if len(pos) > 1 and np.any(pos[1:] < pos[:-1]):
        raise InvalidArgumentError("row positions must be sorted (non-decreasing)")
    return pos


def _pyarrow_file(fl: _File, dictionary: Sequence[str] = ()):
    source = fl.pa_source
    if source is None:
        source = pa.BufferReader(bytes(fl.src.read_all()))
    try:
        return pq.ParquetFile(source, read_dictionary=list(dictionary) or None)
    except (pa.ArrowException, OSError, ValueError) as e:
        raise IndexFormatError(f"Parquet file not readable: {type(e).__name__}: {e}", None) from None


def _row_group_starts(pf) -> np.ndarray:
    md = pf.metadata
    n = np.array([md.row_group(i).num_rows for i in range(md.num_row_groups)], dtype=np.int64)
    starts = np.zeros(len(n) + 1, dtype=np.int64)
    np.cumsum(n, out=starts[1:])
    return starts


def _row_group_rows(pf, fl: _File) -> int:
    """Rows of the row groups holding the file's wanted rows (what pyarrow's read decodes)."""
    starts = _row_group_starts(pf)
    if fl.all:
        return int(starts[-1])
    if fl.span is not None:
        lo, hi = fl.span.start, fl.span.stop
        g0, g1 = int(np.searchsorted(starts, lo, side="right")) - 1, int(np.searchsorted(starts, hi, side="left"))
        return int(starts[g1] - starts[max(g0, 0)]) if hi > lo else 0
    cuts = np.searchsorted(fl.pos, starts)
    groups = np.flatnonzero(cuts[1:] > cuts[:-1])
    return int((starts[groups + 1] - starts[groups]).sum())


def _pyarrow_rows(fl: _File, names: List[str], pf=None, use_threads: bool = False) -> pa.Table:
    """``names`` of the file at its rows, by pyarrow's row-group reads (what the native reader
    does not decode)."""
    pf = pf or _pyarrow_file(fl)
    starts = _row_group_starts(pf)
    try:
        if fl.all:
            return pf.read(columns=names, use_threads=use_threads)
        pos = fl.pos if fl.span is None else np.arange(fl.span.start, fl.span.stop, dtype=np.int64)
        cuts = np.searchsorted(pos, starts)
        groups = np.flatnonzero(cuts[1:] > cuts[:-1]).tolist()
        if not groups:
            return pf.schema_arrow.empty_table().select(names)
        t = pf.read_row_groups(groups, columns=names, use_threads=use_threads)
        base = np.repeat(
            np.cumsum([0] + [int(starts[g + 1] - starts[g]) for g in groups[:-1]]),
            [cuts[g + 1] - cuts[g] for g in groups],
        )
        local = pos - np.repeat(starts[groups], [cuts[g + 1] - cuts[g] for g in groups]) + base
        return t.take(pa.array(local))
    except (pa.ArrowException, OSError, ValueError) as e:
        raise IndexFormatError(f"Parquet file not readable: {type(e).__name__}: {e}", None) from None


def read_files(
    items: Sequence[Tuple[object, Optional[object]]],
    columns: Optional[Sequence[str]] = None,
    *,
    schema: Optional[pa.Schema] = None,
    threads: Optional[int] = None,
    stats=None,
    twin: bool = False,
    pyarrow_only: bool = False,
    dictionary_columns: Sequence[str] = (),
    use_threads: bool = False,
    expect_rows: Optional[Sequence[Optional[int]]] = None,
    sorted_positions: bool = False,
) -> Tuple[pa.Table, np.ndarray]:
    """The rows of Parquet files, as one table: ``items`` are ``(source, positions)`` with a
    source as :func:`~paimon_fast.io.parquet.read_rows` takes it (a local path is read with pread,
    other sources through their reads) and sorted row positions (a ``range`` of rows, or None:
    every row).

    ``columns``: top-level names (default: the first file's).  ``schema``: the Arrow field of
    each column (a dataset's schema); a file without a column gives nulls, a file whose type
    differs is converted (by the reader where it can: int32 -> int64, float -> double, string
    -> large_string; by pyarrow's cast otherwise).  Without ``schema`` every file must have the
    columns (:class:`ColumnNotFoundError`) and the first file's types are the table's.
    ``threads``: the reader's threads (default :func:`paimon_fast.threads`).  ``stats``: a
    :class:`~paimon_fast.io.parquet.rows.PageReadStats` to add to.  ``twin``: decode with the
    pure-Python twin (tests); ``pyarrow_only``: read everything with pyarrow's row-group reads
    (comparisons); ``dictionary_columns`` come back dictionary-encoded (pyarrow reads them, with
    ``use_threads``).  ``expect_rows``: each file's row count as the caller knows it (a
    manifest; None skips one): a file that disagrees is an :class:`IndexFormatError`.
    ``sorted_positions``: the caller vouches that every positions array is sorted (a bitmap's),
    so it is not checked again (a pass over every position).  Returns ``(table, rows of each
    item)``."""
    from ..pool import threads as default_threads

    st = stats if stats is not None else _NoStats()
    files: List[_File] = []
    try:
        for source, positions in items:
            fl = _File()
            fl.src, fl.key, fl.pa_source, fl.owned = open_source(source)
            files.append(fl)
            fl.all = positions is None
            fl.span = positions if isinstance(positions, range) else None
            if fl.span is not None and fl.span.step != 1:
                raise InvalidArgumentError(f"a row range must have step 1, got {positions!r}")
            fl.pos = (
                None
                if fl.all or fl.span is not None
                else _as_positions(positions)
                if sorted_positions
                else _as_sorted_positions(positions)
            )
            fl.why = ""
            try:
                fl.fo = footer_for(fl.src, fl.key)
                fl.lay = _layout(fl.fo)
                fl.nrows = int(fl.fo.starts[-1])
            except UnsupportedChunk as e:
                fl.fo, fl.lay, fl.why = None, None, str(e)
            except IndexFormatError:
                fl.fo, fl.lay, fl.why = None, None, "footer not readable natively"
            if fl.fo is None:
                pf = _pyarrow_file(fl)
                fl.nrows = int(pf.metadata.num_rows)
            want = expect_rows[len(files) - 1] if expect_rows is not None else None
            if want is not None and want != fl.nrows:
                raise IndexFormatError(f"Parquet file {_name(fl)} holds {fl.nrows} rows, {want} expected", None)
            if fl.span is not None:
                lo, hi = max(0, fl.span.start), min(fl.nrows, fl.span.stop)
                fl.span = range(lo, max(lo, hi))
                if fl.span.start == 0 and fl.span.stop == fl.nrows:
                    fl.all, fl.span = True, None
                elif fl.fo is None:  # pyarrow reads it: as positions
                    fl.pos, fl.span = np.arange(fl.span.start, fl.span.stop, dtype=np.int64), None
            if fl.pos is not None and len(fl.pos) and (fl.pos[0] < 0 or fl.pos[-1] >= fl.nrows):
                raise InvalidArgumentError(
                    f"row positions {int(fl.pos[0])}..{int(fl.pos[-1])} outside a file of {fl.nrows} rows"
                )
            fl.n = fl.nrows if fl.all else len(fl.span) if fl.span is not None else len(fl.pos)
        opts = _Opts(twin, pyarrow_only, frozenset(dictionary_columns), use_threads)
        table, counts = _read(files, columns, schema, threads or default_threads(), st, opts)
    finally:
        for fl in files:
            fl.close()
    return table, counts


class _Opts(NamedTuple):
    twin: bool
    pyarrow_only: bool
    dictionary: frozenset
    use_threads: bool


class _NoStats:
    """Where a read without ``stats`` counts (nowhere)."""

    rows = rows_decoded = pages_read = pages_total = pages_direct = bytes_read = bytes_total = 0
    columns_by_page = columns_whole = 0

    def _fallback(self, why: str, n: int = 1) -> None:
        pass


def _names_and_fields(files: List[_File], columns, schema, dictionary=frozenset()) -> Tuple[List[str], List[pa.Field]]:
    first = files[0] if files else None

    def file_names(fl):
        if fl.lay is not None:
            return fl.lay.names
        return _pyarrow_file(fl).schema_arrow.names

    if columns is None:
        if schema is not None:
            names = list(schema.names)
        elif first is not None:
            names = list(file_names(first))
        else:
            names = []
    else:
        names = list(columns)
    fields = []
    for n in names:
        if schema is not None:
            if n not in schema.names:
                raise ColumnNotFoundError(n, schema.names)
            fields.append(schema.field(n))
            continue
        fld = None
        for fl in files:
            have = file_names(fl)
            if n not in have:
                raise ColumnNotFoundError(n, have)
            if fld is None:
                if fl.lay is not None and fl.lay.origin_ok and fl.lay.columns[n].field is not None:
                    fld = fl.lay.columns[n].field
                else:
                    fld = _pyarrow_file(fl).schema_arrow.field(n)
        if fld is None:
            raise ColumnNotFoundError(n, [])
        if n in dictionary and not pa.types.is_dictionary(fld.type):
            fld = fld.with_type(pa.dictionary(pa.int32(), fld.type))
        fields.append(fld)
    return names, fields


# where the chunk table's fields come from (pqread.FIELDS): a native column's tuple (column, leaf,
# physical, type length, max definition, conversion), a chunk's row of _Layout.chunks (start,
# length, codec, values, offset index offset, its length) and a row group's row of the read
_T_OF_COLUMN, _COLUMN_FIELDS = np.array([1, 2, 3, 5, 6]), np.array([0, 2, 3, 4, 5])
_T_OF_CHUNK, _CHUNK_FIELDS = np.array([4, 7, 8, 9, 10, 12]), np.array([2, 0, 1, 4, 5, 3])
_T_OF_GROUP = np.array([11, 13, 14, 15, 16])  # rows, rows_off, nsel, how, output slot


def _span_groups(fo, span: Optional[range], K) -> Tuple[List[int], List[List[int]]]:
    """The row groups of a read of every row (``span`` None) or of the rows in ``span``, and per
    group ``[its rows, the first wanted row of a range (0: every row), rows wanted, CK_EVERY or
    CK_RANGE, 0]`` (the last, the group's output slot, is the caller's), in Python ints: a read
    has few row groups, and numpy's calls cost more than the arithmetic."""
    starts = fo.starts_list
    if span is None:
        gl = [g for g in range(len(starts) - 1) if starts[g + 1] > starts[g]]
        return gl, [[starts[g + 1] - starts[g], 0, starts[g + 1] - starts[g], K.CK_EVERY, 0] for g in gl]
    lo, hi = span.start, span.stop
    gl, per = [], []
    for g in range(max(bisect_right(starts, lo) - 1, 0), bisect_left(starts, hi)):
        s0, s1 = starts[g], starts[g + 1]
        if s1 <= s0:
            continue
        a, b = max(s0, lo), min(s1, hi)
        whole = a == s0 and b == s1
        gl.append(g)
        per.append([s1 - s0, 0 if whole else a - s0, b - a, K.CK_EVERY if whole else K.CK_RANGE, 0])
    return gl, per


def _read(files: List[_File], columns, schema, threads: int, st, opts: _Opts) -> Tuple[pa.Table, np.ndarray]:
    K = kernels(opts.twin)
    names, fields = _names_and_fields(files, columns, schema, opts.dictionary)
    ns = [fl.n for fl in files]
    counts = np.array(ns, dtype=np.int64)
    total = sum(ns)
    st.rows += total
    ncol = len(names)
    if not ncol:
        return no_columns(total), counts
    out_at = [0]  # each file's first output slot (Python ints: a read of a few files costs less so)
    for n in ns:
        out_at.append(out_at[-1] + n)
    # per column: the mapping of the output, whether it needs validity
    col_map: List[Optional[Mapping]] = [None] * ncol
    needs_valid = [False] * ncol
    chunk_rows: List[np.ndarray] = []  # pieces of the chunk table
    row_parts: List[np.ndarray] = []  # pieces of the rows array
    rows_len = 0
    fallback: List[Tuple[int, int, str]] = []  # (file, column, why): pyarrow reads them
    for fi, fl in enumerate(files):
        if fl.n == 0:
            continue
        if fl.lay is None or opts.pyarrow_only:
            why = fl.why or ("pyarrow asked for" if opts.pyarrow_only else "file not read natively")
            fallback.extend((fi, ci, why) for ci in range(ncol))
            continue
        lay, fo = fl.lay, fl.fo
        # the row groups holding wanted rows, and per group: its rows in the footer, the rows
        # wanted, the first of them (a range) or their place in the rows array (positions), how
        # they are given, the output slot of the first
        if fl.pos is None:  # every row, or a range of rows: each row group's part of it
            gl, per = _span_groups(fo, fl.span, K)
            groups = np.array(gl, dtype=np.int64)
            at = out_at[fi]
            for g in per:
                g[4] = at
                at += g[2]
            per_group = np.array(per, dtype=np.int64).reshape(len(gl), 5)
        else:
            starts = fo.starts
            if fl.pos.dtype != starts.dtype and starts[-1] <= np.iinfo(fl.pos.dtype).max:
                starts = starts.astype(fl.pos.dtype)  # (else numpy widens every position first)
            cuts = np.searchsorted(fl.pos, starts)
            groups = np.flatnonzero(cuts[1:] > cuts[:-1])
            nsel = (cuts[1:] - cuts[:-1])[groups]
            if len(groups) == 1:  # (one row group: no per-row repeat of its start)
                local = fl.pos - fo.starts[groups[0]] if fo.starts[groups[0]] else fl.pos
            else:
                local = fl.pos - np.repeat(fo.starts[groups], nsel)
            before = np.concatenate(([0], np.cumsum(nsel)[:-1])).astype(np.int64)
            per_group = np.empty((len(groups), 5), dtype=np.int64)
            per_group[:, 0] = fo.rg_rows[groups]
            per_group[:, 1] = rows_len + before
            per_group[:, 2] = nsel
            per_group[:, 3] = K.CK_POSITIONS
            per_group[:, 4] = out_at[fi] + before
            row_parts.append(local)
            rows_len += len(local)
        native_cols = []  # (column, leaf, physical, type length, max definition, conversion)
        null_cols = []  # columns the file lacks: nulls of their type
        good = lay.ok[groups[0]] if len(groups) == 1 else lay.ok[groups].all(axis=0)  # per leaf: read natively
        for ci, (name, want) in enumerate(zip(names, fields)):
            col = lay.columns.get(name)
            if pa.types.is_null(want.type):  # a column of nulls by its type: nothing to read
                continue
            if name in opts.dictionary:
                fallback.append((fi, ci, "dictionary column"))
                continue
            if col is None:
                if schema is None:
                    raise ColumnNotFoundError(name, lay.names)
                needs_valid[ci] = True
                if col_map[ci] is None:
                    col_map[ci] = _null_mapping(want.type)
                    if col_map[ci] is None:
                        fallback.append((fi, ci, f"type {want.type} not decoded natively"))
                        continue
                null_cols.append(ci)
                continue
            m = col.mapping
            if m is not None:
                m = converted(m, col.field.type, want.type)
            if m is None:
                fallback.append((fi, ci, col.why or f"type {col.field.type} read as {want.type}"))
                continue
            leaf = col.leaf
            if not good[leaf]:
                bad = ~lay.ok[groups, leaf]
                fallback.append((fi, ci, lay.chunk_why.get((int(groups[bad][0]), leaf), "column chunk")))
                continue
            prev = col_map[ci]
            if prev is not None and (prev.kind, prev.width) != (m.kind, m.width):
                fallback.append((fi, ci, "type differs from another file's"))
                continue
            if prev is None or prev.conv == K.CV_NULL:
                col_map[ci] = m
            if col.max_def:
                needs_valid[ci] = True
            native_cols.append((ci, leaf, col.physical, col.type_len, col.max_def, m.conv))
        # the file's chunk table: a row per (column, row group), the columns' rows one after another
        tables = []
        if native_cols:
            a = np.array(native_cols, dtype=np.int64)  # (columns, 6)
            t = np.empty((len(a), len(groups), 17), dtype=np.int64)
            t[:, :, _T_OF_COLUMN] = a[:, None, _COLUMN_FIELDS]
            t[:, :, _T_OF_CHUNK] = lay.chunks[groups][:, a[:, 1]].transpose(1, 0, 2)[:, :, _CHUNK_FIELDS]
            tables.append(t)
        if null_cols:
            t = np.zeros((len(null_cols), len(groups), 17), dtype=np.int64)
            t[:, :, 1] = np.array(null_cols, dtype=np.int64)[:, None]
            t[:, :, 6] = K.CV_NULL
            t[:, :, 9] = -1
            tables.append(t)
        for t in tables:
            t[:, :, 0] = fi
            t[:, :, _T_OF_GROUP] = per_group  # (the same per group for every column)
            chunk_rows.append(t.reshape(-1, 17))
    # columns no file reads natively still need an output (every file falls back)
    pyarrow_cols = set()  # columns every file of which pyarrow reads: no output of the reader
    for ci in range(ncol):
        if col_map[ci] is None:
            col_map[ci] = _null_mapping(fields[ci].type)
            if col_map[ci] is None:
                col_map[ci] = Mapping(K.OUT_FIXED, 1, K.CV_NULL)
                pyarrow_cols.add(ci)
        if col_map[ci].conv == K.CV_NULL:
            needs_valid[ci] = True
    cols = []
    # not cleared: every slot of a chunk the reader decodes gets its byte (a unit of nulls: 0), and
    # the slots of the chunks pyarrow reads are replaced by its reads (_splice).  One allocation
    # holds every column's (no output array keeps them: _arrow packs them into bits)
    nvalid = sum(needs_valid)
    valids = _buffer(total * nvalid) if nvalid else None
    for ci in range(ncol):
        m = col_map[ci]
        valid = None
        if needs_valid[ci]:
            nvalid -= 1
            valid = valids[nvalid * total : (nvalid + 1) * total]
        if m.kind == K.OUT_FIXED:
            cols.append((m.kind, m.width, total, _buffer(total * m.width), valid, None))
        elif m.kind == K.OUT_BOOL:
            cols.append((m.kind, 1, total, _buffer(total), valid, None))
        else:
            dt = np.int64 if m.kind == K.OUT_LBYTES else np.int32
            off = _buffer(total + 1, dt)  # the reader writes the slots of its chunks (a length each)
            off[0] = 0
            cols.append((m.kind, 0, total, None, valid, off))
    chunks = np.concatenate(chunk_rows) if chunk_rows else np.zeros((0, 17), dtype=np.int64)
    if len(row_parts) == 1 and row_parts[0].dtype == np.int64 and row_parts[0].flags.c_contiguous:
        rows = row_parts[0]  # (one file's positions: taken as they are, not copied)
    else:
        rows = np.concatenate(row_parts, out=_buffer(rows_len, np.int64)) if row_parts else np.zeros(0, dtype=np.int64)
    kfiles = [_kernel_file(fl, fi, chunks, opts.twin) for fi, fl in enumerate(files)]
    gaps = {ci for _, ci, _ in fallback}  # columns with slots the reader is not given
    for fi, ci, _ in fallback:  # their lengths: 0 (pyarrow's reads replace them, _splice)
        off = cols[ci][5]
        if off is not None:
            off[out_at[fi] + 1 : out_at[fi + 1] + 1] = 0
    _buffercache.apply(K)
    status, err_at, errors, _, data, overflow, summary = K.read(kfiles, chunks, rows, cols, max(1, int(threads)))
    pages_total, pages_read, bytes_read, bytes_total, columns_ok, nulls, bad = summary
    for ci in gaps:
        off = cols[ci][5]
        if off is not None:  # their offsets are still 0: each takes its predecessor's end, so
            np.maximum.accumulate(off, out=off)  # the values after them start where they should
    # what did not decode natively: pyarrow reads it
    for k in bad:
        fi, ci = int(chunks[k, 0]), int(chunks[k, 1])
        why = errors.get(k, "")
        if status[k] == K.IO:
            raise IndexFormatError(
                f"Parquet file {_name(files[fi])} changed or shrank while it was read ({why})",
                int(err_at[k]) if err_at[k] >= 0 else None,  # (a mapped page: where is not known)
            )
        if status[k] == K.NOMEM:
            raise MemoryError(f"out of memory reading {_name(files[fi])}")
        label = "not valid Parquet" if status[k] == K.CORRUPT else "not decoded natively"
        fallback.append((fi, ci, f"{label}: {why}"))
    st.pages_total += pages_total
    st.pages_read += pages_read
    st.pages_direct += pages_read
    st.bytes_read += bytes_read
    st.bytes_total += bytes_total
    st.columns_by_page += columns_ok
    st.rows_decoded += total
    # (nulls: each column's as the reader counted them; a column it left slots of is counted below)
    partial = {ci for _, ci, _ in fallback}
    arrays = []
    for ci in range(ncol):
        if overflow[ci]:  # more than 2 GiB of values for int32 offsets: pyarrow reads it file by file
            arrays.append(pa.nulls(total, fields[ci].type))
            fallback.extend((fi, ci, "values over 2 GiB") for fi in range(len(files)))
        elif ci in pyarrow_cols or pa.types.is_null(fields[ci].type):
            arrays.append(pa.nulls(total, fields[ci].type))
        else:
            known = None if ci in partial else int(nulls[ci])
            arrays.append(_arrow(K, cols[ci], data[ci], fields[ci].type, known))
    # splice pyarrow's reads of the (file, column)s the reader left
    if fallback:
        arrays = _splice(files, names, fields, arrays, fallback, out_at, st, opts)
    if schema is not None and not opts.dictionary and names == schema.names:
        out_schema = schema  # (its fields are the table's: no schema made anew a read)
    else:
        out_schema = pa.schema(fields, metadata=_metadata(files, schema))
    return pa.Table.from_arrays(arrays, schema=out_schema), counts


def _buffer(n: int, dtype=np.uint8, fill=None) -> np.ndarray:
    """A writable array of ``n`` values over memory of pyarrow's pool (:mod:`paimon_fast.io.memory`)."""
    return _memory.array(n, dtype, fill)


def _metadata(files, schema):
    if schema is not None:
        return schema.metadata
    for fl in files:
        if fl.lay is not None and fl.lay.schema is not None:
            return fl.lay.schema.metadata
    return None


def _name(fl: _File) -> str:
    return getattr(fl.src, "path", None) or "<in memory>"


def _kernel_file(fl: _File, fi: int, chunks: np.ndarray, twin: bool = False):
    """``(fd, size, segments)`` of a file for the reader: a local file by its mapping (read
    before: :mod:`~paimon_fast.io.parquet.filemap`) or its descriptor, bytes in memory as they
    are, any other source as the byte ranges its chunks need, read now."""
    src = fl.src
    if isinstance(src, FileSource) and src._fd is not None and type(src) is FileSource:
        m = None if twin else _filemap.mapping(src._fd, src.size, fl.key)
        return (src._fd, src.size, None) if m is None else (-1, src.size, [(0, m)])
    if isinstance(src, BytesSource):
        return (-1, src.size, [(0, src._mv)])
    return (-1, src.size, _segments(src, chunks[chunks[:, 0] == fi]))


# Ranges of a remote file closer than this are read by one request, the bytes between them
# included: a request costs a round trip (tens of ms on S3), in which about this much more would
# have arrived.  pyarrow's pre-buffering merges holes of up to 8 KiB by default and derives a hole
# limit from latency x bandwidth for object stores (1 MiB at 10 ms and 100 MiB/s); this takes
# that lower bound.
_HOLE_BYTES = 1 << 20
# ... but a range is not grown past this by merging (pyarrow's default range limit): the memory a
# read holds stays bounded by what it needs plus at most one hole per range.
_RANGE_BYTES = 32 << 20


def _merge_ranges(ranges, hole: int = _HOLE_BYTES, limit: int = _RANGE_BYTES) -> list:
    """``[[start, end]]`` covering ``ranges`` (``(start, end)`` pairs): overlapping or touching
    ranges merged, and ranges at most ``hole`` bytes apart while the merged range stays within
    ``limit`` bytes."""
    merged = []
    for a, b in sorted(ranges):
        last = merged[-1] if merged else None
        if last is not None and (a <= last[1] or (a - last[1] <= hole and max(b, last[1]) - last[0] <= limit)):
            last[1] = max(last[1], b)
        else:
            merged.append([a, b])
    return merged


def _segments(src: Source, mine: np.ndarray) -> list:
    """The byte ranges the reader needs of a file it cannot read itself (its chunks in the job
    and their offset indexes), read with the source's reads: one read per run of ranges less
    than :data:`_HOLE_BYTES` apart (:func:`_merge_ranges`; each read is a request on an object
    store, and the reader finds a chunk anywhere inside a segment)."""
    K = _kernel()
    mine = mine[mine[:, 6] != K.CV_NULL]
    ranges = [(int(a), int(a + n)) for a, n in zip(mine[:, 7], mine[:, 8])]
    ranges += [(int(a), int(a + n)) for a, n in zip(mine[:, 9], mine[:, 10]) if a >= 0]
    merged = _merge_ranges(ranges, _HOLE_BYTES, _RANGE_BYTES)
    return [(a, src.read_at(a, b - a, "Parquet column chunk")) for a, b in merged]


def _splice(files, names, fields, arrays, fallback, out_at, st, opts) -> list:
    """The columns with pyarrow's reads of the (file, column)s in ``fallback`` put in their
    slots (the reader's output around them is kept: slices, no copy)."""
    by_file: Dict[int, Dict[int, str]] = {}
    for fi, ci, why in fallback:
        by_file.setdefault(fi, {}).setdefault(ci, why)
    repl: Dict[int, List[Tuple[int, pa.Array]]] = {}
    for fi, cols in sorted(by_file.items()):
        fl = files[fi]
        if fl.n == 0:
            continue
        read_names = [names[ci] for ci in cols]
        dc = sorted(opts.dictionary & set(read_names))
        pf = _pyarrow_file(fl, dc)
        have = pf.schema_arrow.names
        read_names = [n for n in read_names if n in have]
        t = _pyarrow_rows(fl, read_names, pf, opts.use_threads) if read_names else None
        if read_names:  # the row groups pyarrow decoded, past the rows the reader counted
            st.rows_decoded += max(0, _row_group_rows(pf, fl) - fl.n)
        for ci, why in cols.items():
            st._fallback(why)
            st.columns_whole += 1
            want = fields[ci].type
            if names[ci] in have:
                a = t.column(names[ci])
                a = a.combine_chunks() if a.num_chunks != 1 else a.chunk(0)
                if a.type != want:
                    a = a.cast(want)
            else:
                a = pa.nulls(fl.n, want)
            repl.setdefault(ci, []).append((int(out_at[fi]), a))
    out = []
    for ci, arr in enumerate(arrays):
        if ci not in repl:
            out.append(arr)
            continue
        pieces, at = [], 0
        for start, a in sorted(repl[ci], key=lambda x: x[0]):
            if start > at:
                pieces.append(arr.slice(at, start - at))
            pieces.append(a)
            at = start + len(a)
        if at < len(arr):
            pieces.append(arr.slice(at))
        out.append(pa.chunked_array(pieces, type=fields[ci].type))
    return out


def read_file_rows(source, positions, columns=None, *, stats=None, threads=None, twin=False) -> pa.Table:
    """One file's rows at ``positions`` (None: all): :func:`read_files` of one item."""
    t, _ = read_files([(source, positions)], columns, stats=stats, threads=threads, twin=twin)
    return t


__all__ = ["read_files", "read_file_rows", "mapping", "converted", "Mapping", "kernels"]
