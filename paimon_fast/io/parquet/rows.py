"""Chosen rows of a Parquet file: :func:`read_rows` and what goes with it.

:func:`read_rows` returns the rows of a Parquet file at given positions (sorted row numbers in
the file), exactly what ``pq.read_table(path, columns).take(positions)`` returns, decoding only
the pages that hold them: it is the native reader (:mod:`paimon_fast.io.parquet.native`, one file)
with the argument checks of this API.  Where the pages are: the column chunk's OffsetIndex when
the file has a page index (``write_page_index`` in pyarrow, the default of parquet-mr / Java
Paimon and pypaimon), otherwise the page headers walked from the chunk's first page.  What the
native reader does not decode (nested columns, DELTA_* and BYTE_STREAM_SPLIT encodings,
dictionary-typed reads, codecs whose library is missing) pyarrow's row-group read reads, and
:class:`PageReadStats` counts why.  Everything read from the file is bounded by the file and
checked: corrupt metadata raises :class:`~paimon_fast.errors.IndexFormatError`, never a crash,
a hang or an allocation a length field asks for.

Also here: :func:`file_shape`, :func:`row_group_starts` and :func:`column_sizes` (from the
footers :mod:`paimon_fast.io.parquet.footer` parses and caches per local file),
:func:`ranges_to_positions`, :func:`no_columns` and :func:`clear_cache`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, NamedTuple, Optional, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ...errors import IndexFormatError, InvalidArgumentError
from .footer import footer_for, UnsupportedChunk, _schemas
from .footer import _read_footer  # noqa: F401  (handed on at this path)
from .footer import clear_cache as _clear_footers
from .native import _as_positions, open_source, no_columns, read_files

# Who decodes the rows when read_rows is not told (its page_decoder): "kernel", the native reader;
# "twin", its pure-Python twin (tests); None, pyarrow's row-group read taken at the rows.
PAGE_DECODER = "kernel"


# ---------------------------------------------------------------- what was read
@dataclass
class PageReadStats:
    """What :func:`read_rows` decoded, summed over the calls it is passed to.

    ``rows``: rows asked for; ``rows_decoded``: per row group, the most rows any one of
    its columns decoded (whole row groups count all their rows; the page decoder counts
    only the rows it returns); ``pages_read`` / ``pages_total``: data pages decoded / in
    the column chunks read page by page; ``pages_direct``: of ``pages_read``, those the
    page decoder (:mod:`paimon_fast.io.parquet.pages`) read value by value, the others
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


# ---------------------------------------------------------------- read_rows
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
    threads: Optional[int] = None,
) -> pa.Table:
    """The rows of a Parquet file at ``positions``, as ``pyarrow.Table`` of ``columns`` (top-level
    names, default all): what ``pq.read_table(source, columns=columns).take(positions)`` returns,
    same types and schema metadata, decoding only the pages that hold those rows.

    ``source``: a path, bytes, a :class:`~paimon_fast.io.source.Source`, a pyarrow ``NativeFile``
    or a seekable binary file.  ``positions``: non-decreasing row numbers of the file (numpy
    integers, a sequence, a pyroaring ``BitMap``; :func:`ranges_to_positions` turns row
    ranges into positions); repeated positions repeat rows.  ``rows``: the file's row count
    as the caller knows it (e.g. a manifest): a footer that disagrees is an
    :class:`IndexFormatError`.  ``dictionary_columns`` come back dictionary-encoded (pyarrow's
    ``read_dictionary``; pyarrow reads them).  ``stats`` (a :class:`PageReadStats`) is added to.
    ``page_decoder``: ``"kernel"`` (the native reader), ``"twin"`` (its pure-Python twin, for
    tests) or None (pyarrow's row-group read taken at the rows); by default
    :data:`PAGE_DECODER`.  ``page_fraction=0`` is the same as ``page_decoder=None`` (any other
    value: no effect; the native reader decodes only the wanted rows however many pages hold
    them).  ``threads``: the native reader's threads (default :func:`paimon_fast.threads`;
    ``use_threads`` is pyarrow's, for what pyarrow reads).

    Raises :class:`InvalidArgumentError` for positions out of order or outside the file,
    :class:`~paimon_fast.errors.ColumnNotFoundError` for an unknown column,
    :class:`IndexFormatError` for a file neither this reader nor pyarrow can read.  Parsed
    footers of local files are cached by path, size and modification time (:func:`clear_cache`).
    """
    pos = _as_positions(positions)
    if len(pos) > 1 and np.any(pos[1:] < pos[:-1]):
        raise InvalidArgumentError("row positions must be sorted (non-decreasing)")
    if page_decoder == "default":
        page_decoder = PAGE_DECODER
    if page_decoder not in ("kernel", "twin", None):
        raise InvalidArgumentError(f"page_decoder must be 'kernel', 'twin' or None, not {page_decoder!r}")
    if page_fraction is not None and float(page_fraction) <= 0:
        page_decoder = None
    st = PageReadStats()
    if rows is not None:
        shape = file_shape(source)
        if shape.rows != rows:
            raise IndexFormatError(f"Parquet file holds {shape.rows} rows, {rows} expected", None)
    t, _ = read_files(
        [(source, pos)],
        columns,
        stats=st,
        threads=threads,
        twin=page_decoder == "twin",
        pyarrow_only=page_decoder is None,
        dictionary_columns=dictionary_columns,
        use_threads=use_threads,
    )
    if stats is not None:
        stats.add(st)
    return t


def clear_cache() -> None:
    """Forget what is kept per local file across reads: parsed footers (path, size, mtime) and
    the Arrow schemas read from footers."""
    _clear_footers()
    _schemas.cache_clear()


class FileShape(NamedTuple):
    columns: List[str]  # top-level column names
    rows: int


def file_shape(source) -> FileShape:
    """The top-level column names and row count of a Parquet file (from the footer
    :func:`read_rows` caches for local paths)."""
    src, key, pa_source, owned = open_source(source)
    try:
        try:
            fo = footer_for(src, key)
            return FileShape([f.name for f in fo.fields], int(fo.starts[-1]))
        except (UnsupportedChunk, IndexFormatError):
            pf = _pyarrow_file(src, pa_source)
            return FileShape(pf.schema_arrow.names, int(_row_group_starts(pf)[-1]))
    finally:
        if owned:
            src.close()


def row_group_starts(source) -> np.ndarray:
    """The first row of each row group of a Parquet file, and its row count last (int64; from
    the footer :func:`read_rows` caches for local paths): where a read can be cut into ranges
    that pyarrow reads as whole row groups."""
    src, key, pa_source, owned = open_source(source)
    try:
        try:
            return np.array(footer_for(src, key).starts, dtype=np.int64)
        except (UnsupportedChunk, IndexFormatError):
            return _row_group_starts(_pyarrow_file(src, pa_source))
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
    src, key, pa_source, owned = open_source(source)
    try:
        try:
            fo = footer_for(src, key)
        except (UnsupportedChunk, IndexFormatError):
            md = _pyarrow_file(src, pa_source).metadata
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


def _pyarrow_file(src, pa_source) -> pq.ParquetFile:
    source = pa_source if pa_source is not None else pa.BufferReader(bytes(src.read_all()))
    try:
        return pq.ParquetFile(source)
    except (pa.ArrowException, OSError, ValueError) as e:
        raise IndexFormatError(f"Parquet file not readable: {type(e).__name__}: {e}", None) from None


__all__ = [
    "read_rows",
    "PageReadStats",
    "file_shape",
    "FileShape",
    "row_group_starts",
    "column_sizes",
    "ColumnSizes",
    "ranges_to_positions",
    "no_columns",
    "clear_cache",
    "PAGE_DECODER",
]
