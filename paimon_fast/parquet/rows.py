"""Chosen rows of a Parquet file, decoding only the pages that hold them.

:func:`read_rows` returns the rows of a Parquet file at given positions (sorted
row numbers in the file), exactly what ``pq.read_table(path, columns).take(positions)``
returns, but without decoding whole row groups: pyarrow (14 to 26) cannot
select rows inside a row group, so for each column chunk it finds the data
pages that hold the wanted rows, copies those encoded pages (and the
dictionary page when they need it) into a small Parquet file in memory with a
footer of its own, lets pyarrow decode that and takes the rows from it.

Where the pages are: the column chunk's OffsetIndex when the file has a page
index (``write_page_index`` in pyarrow, the default of parquet-mr / Java
Paimon and pypaimon), otherwise the page headers walked from the chunk's first
page.  Everything read from the file is bounded by the file and checked:
corrupt metadata raises :class:`~paimon_fast.errors.IndexFormatError`, never a
crash, a hang or an allocation a length field asks for.

When a column or a file is something this reader does not handle it falls
back to pyarrow's row-group read for it (the answer is the same, only slower)
and counts why in :class:`PageReadStats`: nested columns (ARRAY, MAP, ROW:
their leaves' pages need not start on the same rows), encrypted files, column
chunks in other files, pages that disagree with their page index, a
``ARROW:schema`` that does not match the file.  A simple cost rule picks the
row-group read too: when the selected pages of a column (with its dictionary page
if they need it) are more than :data:`PAGE_FRACTION` of its chunk's bytes,
decoding them saves little and the copy costs (measured:
``benchmarks/bench_parquet_rows.py``).

Flat columns of plain types (integers, floats, booleans, dates, times, timestamps,
strings, binaries) are not decoded by pyarrow at all: the page decoder
(:mod:`paimon_fast.parquet.pages`) reads their selected pages value by value and builds
only the wanted rows, so the byte cost rule does not send them to the row-group read
(:data:`DECODER_PAGE_FRACTION`); rows likely in every page of a chunk still do when its pages
are small (fewer than :data:`DECODER_MIN_PAGE_ROWS` rows a page).

The footer and the page locations are read by :mod:`paimon_fast.parquet.footer`
with our own Thrift compact codec (:mod:`paimon_fast.parquet.thrift`), only as
large as the footer, page headers and page index need.
"""

from __future__ import annotations

import base64
import functools
import os
from dataclasses import dataclass, field
from typing import Dict, List, NamedTuple, Optional, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import ColumnNotFoundError, IndexFormatError, InvalidArgumentError
from .footer import (
    _DATA_PAGE,
    _DATA_PAGE_V2,
    _DICT_ENCODINGS,
    _DICTIONARY_PAGE,
    _INDEX_PAGE,
    _MAGIC,
    _Field,
    _Footer,
    _Pages,
    _Unsupported,
    _footer,
    _page_header,
    _pages,
)
from .footer import _read_footer  # noqa: F401  (handed on at this path)
from .footer import clear_cache as _clear_footers
from .pages import ChunkDictionaries, clear_dictionary_cache
from .pages import Unsupported as _DecoderUnsupported
from .pages import kernels as _page_kernels
from .pages import plan as _plan
from .pages import read_chunk as _read_chunk
from ..source import BytesSource, FileObjSource, FileSource, Source, as_source
from .thrift import _T_I32, _T_STRUCT, _Encoder

# A column's selected pages are decoded on their own when the bytes that takes (the pages, and
# the dictionary page when they are dictionary-encoded) are at most this fraction of the column
# chunk's; above it the row group's column is decoded whole (bench_parquet_rows.py measures it).
PAGE_FRACTION = 0.8
# The same for columns the page decoder reads (pages.py): it decompresses the selected pages
# and builds only the wanted values, where the row-group read decompresses and decodes every page,
# so no fraction makes the row-group read cheaper (bench_parquet_rows.py, test_page_decoder).  Rows
# spread over every page of a chunk still go to the row-group read (the per-page work adds up).
DECODER_PAGE_FRACTION = 1.0
# Rows spread over every page of a chunk go to the row-group read only when its pages are small: the
# page decoder's fixed work per page adds up past the row-group read's below about this many rows a
# page (1e6 rows, cold caches: 8 KB pages, 1,000 rows a page, 10,000 rows asked: decoder 204 ms,
# row group 158 ms; 64 KB and 1 MB pages: decoder 64-79 / 39-47 ms, row group 135-147 / 84-101 ms).
DECODER_MIN_PAGE_ROWS = 4096
# Who decodes the selected pages of flat columns when read_rows is not told (its page_decoder).
PAGE_DECODER = "kernel"


def _open(source):
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


# ---------------------------------------------------------------- what was read
@dataclass
class PageReadStats:
    """What :func:`read_rows` decoded, summed over the calls it is passed to.

    ``rows``: rows asked for; ``rows_decoded``: per row group, the most rows any one of
    its columns decoded (whole row groups count all their rows; the page decoder counts
    only the rows it returns); ``pages_read`` / ``pages_total``: data pages decoded / in
    the column chunks read page by page; ``pages_direct``: of ``pages_read``, those the
    page decoder (:mod:`paimon_fast.parquet.pages`) read value by value, the others
    pyarrow decoded whole;
    ``bytes_read`` / ``bytes_total``: compressed bytes decoded / in the column chunks of
    the row groups holding the rows; ``columns_by_page`` / ``columns_whole``: column chunks
    read page by page / whole; ``fallbacks``: why chunks were read whole, with counts
    (``"cost rule"`` when the selected pages were most of the chunk)."""

    rows: int = 0
    rows_decoded: int = 0
    pages_read: int = 0
    pages_total: int = 0
    pages_direct: int = 0
    bytes_read: int = 0
    bytes_total: int = 0
    columns_by_page: int = 0
    columns_whole: int = 0
    fallbacks: Dict[str, int] = field(default_factory=dict)

    def add(self, other: "PageReadStats") -> None:
        for k in (
            "rows",
            "rows_decoded",
            "pages_read",
            "pages_total",
            "pages_direct",
            "bytes_read",
            "bytes_total",
            "columns_by_page",
            "columns_whole",
        ):
            setattr(self, k, getattr(self, k) + getattr(other, k))
        for k, v in other.fallbacks.items():
            self.fallbacks[k] = self.fallbacks.get(k, 0) + v

    def _fallback(self, why: str, n: int = 1) -> None:
        self.fallbacks[why] = self.fallbacks.get(why, 0) + n

    def as_dict(self) -> dict:
        return {
            "rows": self.rows,
            "rows_decoded": self.rows_decoded,
            "pages_read": self.pages_read,
            "pages_total": self.pages_total,
            "pages_direct": self.pages_direct,
            "bytes_read": self.bytes_read,
            "bytes_total": self.bytes_total,
            "columns_by_page": self.columns_by_page,
            "columns_whole": self.columns_whole,
            "fallbacks": dict(self.fallbacks),
        }

    def __str__(self):
        s = (
            f"{self.rows:,} rows from {self.rows_decoded:,} decoded; pages {self.pages_read:,}/{self.pages_total:,} "
            f"({self.pages_direct:,} by the page decoder), "
            f"bytes {self.bytes_read:,}/{self.bytes_total:,}; column chunks by page {self.columns_by_page}, "
            f"whole {self.columns_whole}"
        )
        if self.fallbacks:
            s += " (" + ", ".join(f"{k}: {v}" for k, v in sorted(self.fallbacks.items())) + ")"
        return s


# ---------------------------------------------------------------- the small file
def _footer_bytes(fo: _Footer, fields: Sequence[_Field], placed: list, nrows: int, origin) -> bytes:
    """The footer (FileMetaData, its length, ``PAR1``) of a file of one row group (none when
    ``placed`` is empty) holding ``fields``, whose column chunks are ``placed[i] = (ColumnMetaData
    of the original chunk, chunk start, dictionary page offset or None, first data page offset,
    chunk bytes, values, uncompressed bytes)``.  Statistics, page indexes and bloom filters are
    left out; schema elements are the original's bytes."""
    e = _Encoder()
    e.struct_begin()
    e.int(1, fo.version, _T_I32)
    e.list_begin(2, _T_STRUCT, 1 + sum(f.elements for f in fields))
    e.struct_begin()
    e.binary(4, b"schema")
    e.int(5, len(fields), _T_I32)
    e.struct_end()
    for f in fields:
        e.out += f.raw
    e.int(3, nrows)
    e.list_begin(4, _T_STRUCT, 1 if placed else 0)
    if placed:
        e.struct_begin()
        e.list_begin(1, _T_STRUCT, len(placed))
        total = 0
        for meta, start, dict_off, data_off, nbytes, values, usize in placed:
            e.struct_begin()
            e.int(2, start)
            e.struct_begin(3)
            e.int(1, meta[1], _T_I32)
            e.list_ints(2, [v for v in meta[2] if isinstance(v, int)])
            e.list_binaries(3, [v for v in meta[3] if isinstance(v, bytes)])
            e.int(4, meta[4], _T_I32)
            e.int(5, values)
            e.int(6, usize)
            e.int(7, nbytes)
            e.int(9, data_off)
            if dict_off is not None:
                e.int(11, dict_off)
            e.struct_end()
            e.struct_end()
            total += usize
        e.int(2, total)
        e.int(3, nrows)
        e.struct_end()
    kv = [(k, v) for k, v in fo.kv.items() if k != b"ARROW:schema"]
    if origin is not None:  # pyarrow's stored schema, of these fields only (it is applied field by field)
        sub = pa.schema([origin.field(f.index) for f in fields], metadata=origin.metadata)
        kv.append((b"ARROW:schema", base64.b64encode(sub.serialize().to_pybytes())))
    if kv:
        e.list_begin(5, _T_STRUCT, len(kv))
        for k, v in kv:
            e.struct_begin()
            e.binary(1, k)
            if v is not None:
                e.binary(2, v)
            e.struct_end()
    e.struct_end()
    return bytes(e.out) + len(e.out).to_bytes(4, "little") + _MAGIC


def _read_into(src: Source, offset: int, out: memoryview, what: str) -> None:
    """``len(out)`` bytes of ``src`` at ``offset`` into ``out`` (straight from the file when local)."""
    n = len(out)
    if offset < 0 or offset + n > src.size:
        raise IndexFormatError(f"{what}: range [{offset}, {offset + n}) is outside the {src.size}-byte input", offset)
    if isinstance(src, FileSource) and src._fd is not None:
        got = os.preadv(src._fd, [out], offset)
        if got != n:
            raise IndexFormatError(f"short read from {src.path}: {got} of {n} bytes", offset)
    else:
        out[:] = src.read_at(offset, n, what)


class _Group:
    """Columns of one row group whose selected pages cover the same rows: one small file."""

    __slots__ = ("fields", "pages", "sels", "page_of")

    def __init__(self, page_of):
        self.page_of = page_of  # the page of each position, in the first column's pages
        self.fields: List[_Field] = []
        self.pages: List[_Pages] = []
        self.sels: List[np.ndarray] = []  # each column's selected pages (indexes into its own pages)

    def add(self, f: _Field, pages: _Pages, sel: np.ndarray) -> None:
        self.fields.append(f)
        self.pages.append(pages)
        self.sels.append(sel)


def _group_file(src: Source, fo: _Footer, g: _Group, origin) -> tuple:
    """``(small Parquet file of the group's selected pages, its rows, [pages, pages in the chunks,
    bytes])``.  The pages are read straight into the file's buffer: per column the room for
    its dictionary page, then its selected data pages (a run of adjacent pages in one read);
    the dictionary page is read only when a selected page is dictionary-encoded."""
    runs = []  # per column: [(file offset, length, position in buf)]
    size = 4
    for pg, sel in zip(g.pages, g.sels):
        offs, sizes = pg.offset[sel], pg.size[sel]
        size += pg.dict_range[1] if pg.dict_range is not None else 0
        brk = np.flatnonzero(offs[1:] != offs[:-1] + sizes[:-1]) + 1
        heads = np.concatenate(([0], brk))
        tails = np.concatenate((brk, [len(sel)]))
        col = []
        for a, b in zip(heads.tolist(), tails.tolist()):
            lo, n = int(offs[a]), int(offs[b - 1] + sizes[b - 1] - offs[a])
            col.append((lo, n, size))
            size += n
        runs.append(col)
    buf = bytearray(size)
    mv = memoryview(buf)
    buf[:4] = _MAGIC
    placed = []
    counts = [0, 0, 0]
    want_rows = 0
    for pg, sel, col in zip(g.pages, g.sels, runs):
        data_at = col[0][2]
        for lo, n, at in col:
            _read_into(src, lo, mv[at : at + n], "Parquet data pages")
        values = usize = rows_here = 0
        dict_needed = False
        at = data_at
        for k in sel.tolist():
            n = int(pg.size[k])
            ptype, hlen, csize, us, nv, rows, enc = _page_header(buf, at, at + n, int(pg.offset[k]))
            expect = int(pg.rows[k])
            if (
                ptype not in (_DATA_PAGE, _DATA_PAGE_V2)
                or hlen + csize != n
                or (rows if ptype == _DATA_PAGE_V2 else nv) != expect
            ):
                raise _Unsupported("pages disagree with the page index")
            values += nv
            usize += hlen + us
            rows_here += expect
            dict_needed |= enc in _DICT_ENCODINGS
            at += n
        start = data_at
        dict_off = None
        if dict_needed:
            if pg.dict_range is None:
                raise _Unsupported("dictionary-encoded pages without a dictionary page")
            dstart, dlen = pg.dict_range
            room = data_at - dlen
            _read_into(src, dstart, mv[room:data_at], "Parquet dictionary page")
            a, b, dus = _dictionary_page(buf, room, data_at, dstart)
            if b != data_at:  # something after the dictionary page: move the page next to the data pages
                buf[data_at - (b - a) : data_at] = bytes(buf[a:b])
            start = dict_off = data_at - (b - a)
            usize += dus
        placed.append((pg.meta, start, dict_off, data_at, at - start, values, usize))
        counts[0] += len(sel)
        counts[1] += len(pg.offset)
        counts[2] += at - start
        want_rows = rows_here
    del mv
    buf += _footer_bytes(fo, g.fields, placed, want_rows, origin)
    return buf, want_rows, counts


def _read_group(ctx, fo: _Footer, g: _Group, origin, upto: int) -> pa.Table:
    """The group's columns at its selected pages' rows, in order: at least the first ``upto``
    (all of them when decoding cannot stop early)."""
    stats = ctx.st
    try:
        buf, want_rows, counts = _group_file(ctx.src, fo, g, origin)
    except IndexFormatError as e:  # a page header we cannot follow: pyarrow's row-group read decides
        raise _Unsupported(f"pages not readable ({e.what})") from None
    try:
        t = ctx.decode(buf, [f.name for f in g.fields], upto)
    except (pa.ArrowException, OSError, ValueError) as e:
        raise _Unsupported(f"page read failed ({type(e).__name__})") from e
    if t.num_rows != want_rows and (t.num_rows < upto or t.num_rows > want_rows):
        raise _Unsupported("page read gave another row count")
    stats.pages_read += counts[0]
    stats.pages_total += counts[1]
    stats.bytes_read += counts[2]
    return t


def _dictionary_page(buf, pos: int, end: int, file_offset: int) -> tuple:
    """``(start, end, header + uncompressed size)`` of the dictionary page in ``buf[pos:end]``
    (the bytes before a chunk's first data page: an index page may come first)."""
    base = file_offset - pos
    while pos < end:
        ptype, hlen, csize, usize, _, _, _ = _page_header(buf, pos, end, base)
        if pos + hlen + csize > end:
            raise IndexFormatError("Parquet dictionary page runs into the data pages", base + pos)
        if ptype == _DICTIONARY_PAGE:
            return pos, pos + hlen + csize, hlen + usize
        if ptype != _INDEX_PAGE:
            raise _Unsupported("a data page before the page index's first page")
        pos += hlen + csize
    raise _Unsupported("no dictionary page before the data pages")


# ---------------------------------------------------------------- read_rows
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
    return pos.astype(np.int64, copy=False)


def ranges_to_positions(ranges) -> np.ndarray:
    """Sorted positions of the rows in half-open row ranges ``[(start, end), ...]`` (their union:
    ranges may come in any order and overlap)."""
    r = np.asarray(ranges, dtype=np.int64).reshape(-1, 2)
    if np.any(r[:, 1] < r[:, 0]):
        raise InvalidArgumentError("a row range [start, end) with end < start")
    r = r[r[:, 1] > r[:, 0]]
    if not len(r):
        return np.zeros(0, dtype=np.int64)
    r = r[np.argsort(r[:, 0], kind="stable")]
    reach = np.maximum.accumulate(r[:, 1])
    head = np.concatenate(([True], r[1:, 0] > reach[:-1]))  # a range not touching the ones before
    starts = r[head, 0]
    ends = reach[np.concatenate((np.flatnonzero(head)[1:] - 1, [len(r) - 1]))]
    lens = ends - starts
    out = np.ones(int(lens.sum()), dtype=np.int64)
    heads = np.zeros(len(starts), dtype=np.int64)
    np.cumsum(lens[:-1], out=heads[1:])
    out[0] = starts[0]
    out[heads[1:]] = starts[1:] - (ends[:-1] - 1)
    return np.cumsum(out)


def _take(t: pa.Table, local: np.ndarray) -> pa.Table:
    n = len(local)
    if n and local[-1] - local[0] == n - 1 and (n == 1 or np.all(np.diff(local) == 1)):
        return t.slice(int(local[0]), n)  # a run of rows: no copy
    return t.take(pa.array(local))


class _Ctx:
    """One :func:`read_rows` call: the input, pyarrow's view of it (opened on first need),
    the columns decoded as dictionaries, the cost rule's fraction, the stats, the page
    decoder's kernels (None: pyarrow decodes the pages) and the dictionaries it decoded."""

    __slots__ = ("src", "pa_source", "pf", "dict_cols", "st", "frac", "direct_frac", "threads", "kern", "dicts")

    def __init__(self, src, pa_source, dict_cols, st, frac, threads=False, kern=None, direct_frac=None):
        self.src = src
        self.pa_source = pa_source
        self.pf = None
        self.dict_cols = dict_cols
        self.st = st
        self.frac = frac
        self.direct_frac = frac if direct_frac is None else direct_frac
        self.threads = threads
        self.kern = kern
        self.dicts = ChunkDictionaries()

    def pyarrow_file(self):
        if self.pf is None:
            source = self.pa_source
            if source is None:
                source = pa.BufferReader(bytes(self.src.read_all()))
            try:
                self.pf = pq.ParquetFile(source, read_dictionary=sorted(self.dict_cols) or None)
            except (pa.ArrowException, OSError, ValueError) as e:
                raise IndexFormatError(f"Parquet file not readable: {type(e).__name__}: {e}", None) from None
        return self.pf

    def decode(self, buf, names, upto: Optional[int] = None) -> pa.Table:
        """pyarrow's read of a small file we made; with ``upto``, decoding stops at the batch
        holding row ``upto - 1`` (the pages are still decompressed whole)."""
        dc = [n for n in names if n in self.dict_cols]
        pf = pq.ParquetFile(pa.BufferReader(pa.py_buffer(buf)), read_dictionary=dc or None)
        if upto is None or upto > pf.metadata.num_rows - _SMALL_BATCH:
            return pf.read(use_threads=False)
        batches, n = [], 0
        for b in pf.iter_batches(batch_size=_SMALL_BATCH, use_threads=False):
            batches.append(b)
            n += b.num_rows
            if n >= upto:
                break
        return pa.Table.from_batches(batches)

    def whole(self, g: int, names: List[str], local: np.ndarray, nrows: int) -> pa.Table:
        """Columns ``names`` of row group ``g`` at rows ``local`` by pyarrow's row-group read;
        decoding stops at the batch holding the last row asked for."""
        pf = self.pyarrow_file()
        last = int(local[-1]) + 1
        try:
            if last > nrows - _BATCH:
                t = pf.read_row_group(g, columns=names, use_threads=self.threads)
                if t.num_rows != nrows:
                    raise IndexFormatError(f"Parquet row group {g}: {t.num_rows} rows, its metadata says {nrows}", None)
            else:
                batches, n = [], 0
                for b in pf.iter_batches(batch_size=_BATCH, row_groups=[g], columns=names, use_threads=self.threads):
                    batches.append(b)
                    n += b.num_rows
                    if n >= last:
                        break
                if n < last:
                    raise IndexFormatError(f"Parquet row group {g}: {n} rows, its metadata says {nrows}", None)
                t = pa.Table.from_batches(batches)
        except (pa.ArrowException, OSError, ValueError) as e:
            raise IndexFormatError(f"Parquet row group {g} not readable: {type(e).__name__}: {e}", None) from None
        self.st.columns_whole += len(names)
        return _take(t, local), t.num_rows


_BATCH = 1 << 16  # batch of a row-group read that stops early
_SMALL_BATCH = 1 << 13  # the same for a small file of pages


def read_rows(
    source,
    positions,
    columns: Optional[Sequence[str]] = None,
    *,
    rows: Optional[int] = None,
    dictionary_columns: Sequence[str] = (),
    stats: Optional[PageReadStats] = None,
    page_fraction: Optional[float] = None,
    use_threads: bool = False,
    page_decoder: Optional[str] = "default",
) -> pa.Table:
    """The rows of a Parquet file at ``positions``, as ``pyarrow.Table`` of ``columns`` (top-level
    names, default all): what ``pq.read_table(source, columns=columns).take(positions)`` returns,
    same types and schema metadata, decoding only the pages that hold those rows.

    ``source``: a path, bytes, a :class:`~paimon_fast.source.Source`, a pyarrow ``NativeFile``
    or a seekable binary file.  ``positions``: non-decreasing row numbers of the file (numpy
    integers, a sequence, a pyroaring ``BitMap``; :func:`ranges_to_positions` turns row
    ranges into positions); repeated positions repeat rows.  ``rows``: the file's row count
    as the caller knows it (e.g. a manifest): a footer that disagrees is an
    :class:`IndexFormatError`.  ``dictionary_columns`` come back dictionary-encoded (pyarrow's
    ``read_dictionary``).  ``stats`` (a :class:`PageReadStats`) is added to.
    ``page_fraction`` overrides :data:`PAGE_FRACTION` and :data:`DECODER_PAGE_FRACTION` (0 reads
    every column chunk whole, 1 reads pages whenever possible).  ``use_threads``: pyarrow's thread
    pool for column chunks read whole (small page reads are decoded in the calling thread).
    ``page_decoder``: who
    decodes the selected pages of flat columns of plain types: ``"kernel"`` (only the wanted
    values, :mod:`paimon_fast.parquet.pages`), ``"twin"`` (the same in pure Python, for tests)
    or None (pyarrow decodes whole pages copied into a small file, as for every other column);
    by default :data:`PAGE_DECODER` (``"kernel"``).

    Raises :class:`InvalidArgumentError` for positions out of order or outside the file,
    :class:`ColumnNotFoundError` for an unknown column, :class:`IndexFormatError` for a
    file neither this reader nor pyarrow can read.  Parsed footers and page locations of
    local files, and the dictionary pages the page decoder decoded, are cached by path, size and
    modification time (:func:`clear_cache`; at most ``pages.DICTIONARY_CACHE_BYTES`` of dictionaries).
    """
    pos = _as_positions(positions)
    if len(pos) > 1 and np.any(pos[1:] < pos[:-1]):
        raise InvalidArgumentError("row positions must be sorted (non-decreasing)")
    if page_decoder == "default":
        page_decoder = PAGE_DECODER
    if page_decoder not in ("kernel", "twin", None):
        raise InvalidArgumentError(f"page_decoder must be 'kernel', 'twin' or None, not {page_decoder!r}")
    kern = None if page_decoder is None else _page_kernels(page_decoder == "twin")
    st = PageReadStats()
    src, key, pa_source, owned = _open(source)
    ctx = _Ctx(
        src,
        pa_source,
        set(dictionary_columns),
        st,
        PAGE_FRACTION if page_fraction is None else float(page_fraction),
        use_threads,
        kern,
        DECODER_PAGE_FRACTION if page_fraction is None else float(page_fraction),
    )
    if key is not None and kern is not None:  # dictionaries kept across reads, per decoder
        ctx.dicts = ChunkDictionaries(key + (page_decoder,))
    try:
        try:
            fo = _footer(src, key)
        except _Unsupported as e:
            fo, why = None, str(e)
        except IndexFormatError:
            fo, why = None, "footer not readable by the page reader"
        out = _read_whole_file(ctx, pos, columns, rows, why) if fo is None else _read(ctx, fo, pos, columns, rows)
    finally:
        if owned:
            src.close()
    if stats is not None:
        stats.add(st)
    return out


def clear_cache() -> None:
    """Forget what is kept per local file across reads: parsed footers and page locations
    (path, size, mtime), decoded dictionary pages, and the Arrow schemas read from footers."""
    _clear_footers()
    clear_dictionary_cache()
    _schemas.cache_clear()


def no_columns(n: int) -> pa.Table:
    """A table of ``n`` rows and no column: what a read of no column gives (a count), which
    ``pa.Table.from_arrays([])`` cannot (it has no row)."""
    return pa.table({"": pa.nulls(n)}).select([])


class FileShape(NamedTuple):
    columns: List[str]  # top-level column names
    rows: int


def file_shape(source) -> FileShape:
    """The top-level column names and row count of a Parquet file (from the footer
    :func:`read_rows` caches for local paths)."""
    src, key, pa_source, owned = _open(source)
    try:
        try:
            fo = _footer(src, key)
            return FileShape([f.name for f in fo.fields], int(fo.starts[-1]))
        except (_Unsupported, IndexFormatError):
            pf = _Ctx(src, pa_source, (), PageReadStats(), 0).pyarrow_file()
            return FileShape(pf.schema_arrow.names, int(_row_group_starts(pf)[-1]))
    finally:
        if owned:
            src.close()


def row_group_starts(source) -> np.ndarray:
    """The first row of each row group of a Parquet file, and its row count last (int64; from
    the footer :func:`read_rows` caches for local paths): where a read can be cut into ranges
    that pyarrow reads as whole row groups."""
    src, key, pa_source, owned = _open(source)
    try:
        try:
            return np.array(_footer(src, key).starts, dtype=np.int64)
        except (_Unsupported, IndexFormatError):
            return _row_group_starts(_Ctx(src, pa_source, (), PageReadStats(), 0).pyarrow_file())
    finally:
        if owned:
            src.close()


class ColumnSizes(NamedTuple):
    rows: int
    uncompressed: Dict[str, int]  # top-level column -> uncompressed bytes of its chunks in every row group
    variable: Dict[str, bool]  # top-level column -> whether a leaf holds variable-length values


_BYTE_ARRAY = 6  # parquet.thrift Type


def column_sizes(source) -> ColumnSizes:
    """Each top-level column's uncompressed bytes in a Parquet file (from the footer
    :func:`read_rows` caches for local paths), to estimate what reading it costs."""
    src, key, pa_source, owned = _open(source)
    try:
        try:
            fo = _footer(src, key)
        except (_Unsupported, IndexFormatError):
            md = _Ctx(src, pa_source, (), PageReadStats(), 0).pyarrow_file().metadata
            size, var = {}, {}
            for g in range(md.num_row_groups):
                rg = md.row_group(g)
                for c in range(rg.num_columns):
                    cc = rg.column(c)
                    name = cc.path_in_schema.split(".", 1)[0]
                    size[name] = size.get(name, 0) + max(0, cc.total_uncompressed_size)
                    var[name] = var.get(name, False) or cc.physical_type == "BYTE_ARRAY"
            return ColumnSizes(md.num_rows, size, var)
        size, var = {}, {}
        for f in fo.fields:
            total, variable = 0, False
            for rg in fo.row_groups:
                for leaf in f.leaves:
                    meta = rg[1][leaf].get(3)
                    if isinstance(meta, dict):
                        n = meta.get(6)
                        total += n if isinstance(n, int) and n > 0 else 0
                        variable = variable or meta.get(1) == _BYTE_ARRAY
            size[f.name] = total
            var[f.name] = variable
        return ColumnSizes(int(fo.starts[-1]), size, var)
    finally:
        if owned:
            src.close()


def _row_group_starts(pf) -> np.ndarray:
    """First row of each row group of a ``pq.ParquetFile`` (and the total last), as the page
    reader counts rows: the row groups' own counts, checked."""
    md = pf.metadata
    n = np.array([md.row_group(i).num_rows for i in range(md.num_row_groups)], dtype=np.int64)
    if np.any(n < 0):
        raise IndexFormatError(f"Parquet footer: a row group with {int(n.min())} rows", None)
    starts = np.zeros(len(n) + 1, dtype=np.int64)
    np.cumsum(n, out=starts[1:])
    return starts


def _check_positions(pos: np.ndarray, total: int, rows: Optional[int]):
    if rows is not None and rows != total:
        raise IndexFormatError(f"Parquet file holds {total} rows, {rows} expected", None)
    if len(pos) and (pos[0] < 0 or pos[-1] >= total):
        raise InvalidArgumentError(f"row positions {int(pos[0])}..{int(pos[-1])} outside a file of {total} rows")


def _assemble(parts: List[Dict[str, pa.ChunkedArray]], typed: Dict[str, pa.Field], meta, names) -> pa.Table:
    """One table of the row groups' columns in one schema: pyarrow's types, field and schema metadata."""
    schema = pa.schema([typed[n] for n in names], metadata=meta)
    tables = []
    for cols in parts:
        arrays = [
            cols[n] if cols[n].type == schema.field(n).type else cols[n].cast(schema.field(n).type) for n in names
        ]
        tables.append(pa.Table.from_arrays(arrays, schema=schema))
    return pa.concat_tables(tables) if len(tables) > 1 else tables[0]


def _read_whole_file(ctx: _Ctx, pos, columns, rows, why) -> pa.Table:
    """pyarrow's row-group reads of the row groups holding ``pos`` (a file the page reader cannot open)."""
    pf = ctx.pyarrow_file()
    starts = _row_group_starts(pf)
    _check_positions(pos, int(starts[-1]), rows)
    all_names = pf.schema_arrow.names
    for c in columns or ():
        if c not in all_names:
            raise ColumnNotFoundError(c, all_names)
    names = list(columns) if columns is not None else all_names
    ctx.st.rows += len(pos)
    cuts = np.searchsorted(pos, starts)
    parts = []
    t = None
    for g in np.flatnonzero(cuts[1:] > cuts[:-1]).tolist():
        ctx.st._fallback(why)
        t, decoded = ctx.whole(g, names, pos[cuts[g] : cuts[g + 1]] - starts[g], int(starts[g + 1] - starts[g]))
        ctx.st.rows_decoded += decoded
        parts.append({n: t.column(n) for n in names})
    if t is None:
        return pf.schema_arrow.empty_table().select(names)
    return _assemble(parts, {fl.name: fl for fl in t.schema}, t.schema.metadata, names)


def _read(ctx: _Ctx, fo: _Footer, pos, columns, rows) -> pa.Table:
    st, src = ctx.st, ctx.src
    _check_positions(pos, int(fo.starts[-1]), rows)
    if columns is None:
        fields = list(fo.fields)
    else:
        fields = []
        for c in columns:
            if c not in fo.by_name:
                raise ColumnNotFoundError(c, [f.name for f in fo.fields])
            f = fo.by_name[c]
            if f is None:  # a name two top-level fields share: pyarrow decides
                return _read_whole_file(ctx, pos, columns, rows, "duplicate column names")
            fields.append(f)
    try:
        origin = fo.origin_schema()
    except _Unsupported as e:
        return _read_whole_file(ctx, pos, columns, rows, str(e))
    st.rows += len(pos)
    names = [f.name for f in fields]
    if not len(pos):  # the columns' schema, from a file of no row groups
        try:
            return ctx.decode(b"PAR1" + _footer_bytes(fo, fields, [], 0, origin), names)
        except (pa.ArrowException, OSError, ValueError):
            return _read_whole_file(ctx, pos, columns, rows, "schema not readable by the page reader")
    cuts = np.searchsorted(pos, fo.starts)
    parts: List[Dict[str, pa.ChunkedArray]] = []
    typed: Dict[str, pa.Field] = {}  # pyarrow's field of each column, from the first table decoding it
    meta = [None]  # and the schema metadata

    def keep(t, fs, cols):
        for f in fs:
            cols[f.name] = t.column(f.name)
            if f.name not in typed:
                typed[f.name] = t.schema.field(f.name)
                meta[0] = t.schema.metadata

    plans, plan_meta = _plans(fo, origin) if ctx.kern is not None else ({}, None)
    for g in np.flatnonzero(cuts[1:] > cuts[:-1]).tolist():
        local = pos[cuts[g] : cuts[g + 1]] - fo.starts[g]
        nrows = int(fo.rg_rows[g])
        groups: Dict[bytes, _Group] = {}
        whole: List[_Field] = []
        cols: Dict[str, pa.ChunkedArray] = {}
        decoded = 0
        # rows spread over (nearly) the whole row group: many of them may be in every page
        spread = len(local) > 8 and (local[-1] - local[0] + 1) * 16 >= nrows * 15
        for f in fields:
            p = plans.get(f.index) if f.name not in ctx.dict_cols else None
            frac = ctx.frac if p is None else ctx.direct_frac
            st.bytes_total += _chunk_bytes(fo, g, f)
            if not f.flat:
                whole.append(f)
                st._fallback("nested column")
                continue
            if spread and frac < 1 and _likely_every_page(fo, g, f.leaves.start, len(local)):
                whole.append(f)  # the cost rule's answer, without reading where the pages are
                st._fallback("cost rule")
                continue
            if (
                spread
                and p is not None
                and ctx.frac < 1
                and _likely_every_page(fo, g, f.leaves.start, len(local), DECODER_MIN_PAGE_ROWS)
            ):
                whole.append(f)  # many small pages, each holding rows: the decoder's work per page adds up
                st._fallback("cost rule")
                continue
            try:
                pg = _pages(src, fo, g, f.leaves.start)
            except _Unsupported as e:
                whole.append(f)
                st._fallback(str(e))
                continue
            j = np.searchsorted(pg.first_row, local, side="right") - 1
            sel = j[np.concatenate(([True], j[1:] != j[:-1]))] if len(j) > 1 else j
            # cost rule: the bytes each way decodes (the dictionary page only for dictionary-encoded pages)
            dict_bytes = pg.dict_range[1] if pg.dict_range is not None else 0
            by_page = int(pg.size[sel].sum()) + (dict_bytes if pg.dict_enc[sel].any() else 0)
            if by_page > frac * (pg.data_bytes + dict_bytes):
                whole.append(f)
                st._fallback("cost rule")
                continue
            if p is not None:
                try:
                    arr, nbytes = _read_chunk(src, pg, sel, j, local, p, ctx.dicts, (g, f.leaves.start), ctx.kern)
                except _DecoderUnsupported as e:
                    st._fallback(f"page decoder: {e}")
                except IndexFormatError:  # pyarrow's read of the pages decides
                    st._fallback("page decoder: page not readable")
                else:
                    cols[f.name] = pa.chunked_array([arr], type=p.field.type)
                    if f.name not in typed:
                        typed[f.name] = p.field
                        meta[0] = plan_meta
                    st.pages_read += len(sel)
                    st.pages_direct += len(sel)
                    st.pages_total += len(pg.offset)
                    st.bytes_read += nbytes
                    st.columns_by_page += 1
                    decoded = max(decoded, len(local))
                    continue
            key = pg.first_row[sel].tobytes() + pg.rows[sel].tobytes()  # the rows the pages cover
            grp = groups.get(key)
            if grp is None:
                grp = groups[key] = _Group(j)
            grp.add(f, pg, sel)
        for grp in groups.values():
            pg, sel, j = grp.pages[0], grp.sels[0], grp.page_of
            # positions -> rows of the selected pages, concatenated
            base = np.zeros(len(sel), dtype=np.int64)
            np.cumsum(pg.rows[sel][:-1], out=base[1:])
            loc = local - pg.first_row[j] + base[np.searchsorted(sel, j)]
            try:
                t = _read_group(ctx, fo, grp, origin, int(loc[-1]) + 1)
            except _Unsupported as e:
                whole.extend(grp.fields)
                st._fallback(str(e), len(grp.fields))
                continue
            keep(_take(t, loc), grp.fields, cols)
            st.columns_by_page += len(grp.fields)
            decoded = max(decoded, t.num_rows)
        if whole:
            t, n = ctx.whole(g, [f.name for f in whole], local, nrows)
            keep(t, whole, cols)
            decoded = max(decoded, n)
            st.bytes_read += sum(_chunk_bytes(fo, g, f) for f in whole)
        st.rows_decoded += decoded
        parts.append(cols)
    return _assemble(parts, typed, meta[0], names)


def _plans(fo: _Footer, origin) -> tuple:
    """``({field index: Plan}, schema metadata)``: the flat columns of the file the page decoder
    reads, with the Arrow field pyarrow gives each (from reads of the file's schema with and
    without its stored Arrow schema, no rows), kept with the cached footer."""
    got = fo.plans
    if got is None:
        flat, els, at = [], [], 1
        for f in fo.fields:
            if f.flat:
                flat.append(f)
                els.append(fo.elements[at])
            at += f.elements
        got = ({}, None)
        if flat:
            plain, typed = _schemas(_footer_bytes(fo, flat, [], 0, None), _footer_bytes(fo, flat, [], 0, origin))
            if plain is not None and len(plain) == len(typed) == len(flat):
                plans = {}
                for i, f in enumerate(flat):
                    p = _plan(plain.field(i).type, typed.field(i), els[i].get(3))
                    if p is not None:
                        plans[f.index] = p
                got = (plans, typed.metadata)
        fo.plans = got
    return got


@functools.lru_cache(maxsize=256)
def _schemas(plain_footer: bytes, typed_footer: bytes) -> tuple:
    """``(plain, typed)``: the Arrow schemas pyarrow reads from the two footers of a file of no
    rows (``(None, None)`` when it cannot).  Kept per footer bytes: the files of a table mostly
    share one schema, so a first read of several files reads it once (pyarrow's read of an
    empty file's footer: about 0.4 ms); :func:`clear_cache` forgets them."""
    try:
        return (
            pq.read_table(pa.BufferReader(b"PAR1" + plain_footer)).schema,
            pq.read_table(pa.BufferReader(b"PAR1" + typed_footer)).schema,
        )
    except (pa.ArrowException, OSError, ValueError):
        return None, None


def _likely_every_page(fo: _Footer, g: int, leaf: int, k: int, max_page_rows: Optional[int] = None) -> bool:
    """Would ``k`` rows spread over a row group likely fall in every data page of this column
    chunk (and, with ``max_page_rows``, do its pages hold fewer rows than that on average)?  Its
    page count comes from the footer's encoding stats (no page index read); with ``k >= 3 x
    pages`` uniformly spread rows miss a given page with probability under 5%."""
    meta = fo.row_groups[g][1][leaf].get(3)
    stats = meta.get(13) if isinstance(meta, dict) else None
    if not isinstance(stats, list):
        return False
    pages = sum(
        e.get(3)
        for e in stats
        if isinstance(e, dict)
        and e.get(1) in (_DATA_PAGE, _DATA_PAGE_V2)
        and isinstance(e.get(3), int)
        and e.get(3) > 0
    )
    if max_page_rows is not None and pages and fo.rg_rows[g] >= max_page_rows * pages:
        return False
    return 0 < pages and k >= 3 * pages


def _chunk_bytes(fo: _Footer, g: int, f: _Field) -> int:
    n = 0
    for leaf in f.leaves:
        meta = fo.row_groups[g][1][leaf].get(3)
        if isinstance(meta, dict) and isinstance(meta.get(7), int):
            n += meta[7]
    return n
