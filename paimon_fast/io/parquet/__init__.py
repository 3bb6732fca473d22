"""Parquet files read our own way: the footer, where each column chunk's pages are, and the rows
at known positions decoded from only the pages that hold them.

* :mod:`.rows`: :func:`read_rows` (the rows of a file at given positions), :func:`file_shape`,
  :func:`row_group_starts`, :func:`column_sizes` (each column's bytes, to estimate a read),
  :class:`PageReadStats` (what a read decoded), :func:`ranges_to_positions`, :func:`clear_cache`;
* :mod:`.footer`: a file's footer and its column chunks' page locations (page index or page
  headers), kept in a small cache of parsed footers;
* :mod:`.native`: the native reader (:func:`~.native.read_files`: rows of many files in one call,
  decoded on every thread without the GIL; C in ``csrc/pq_read.h`` and ``csrc/pq_codec.h``,
  Cython in ``_kernels/pqread.pyx``, twin ``reference/pqread.py``);
* :mod:`.thrift`: the Thrift compact codec the footer and page headers are written in.

The modules' old paths (``paimon_fast.io.parquet.rows``, ``parquet_footer``, ``thrift_compact``) are
the same module objects under another name.
"""

from .native import read_files
from .rows import (
    ColumnSizes,
    FileShape,
    PageReadStats,
    clear_cache,
    column_sizes,
    file_shape,
    ranges_to_positions,
    read_rows,
    row_group_starts,
)

__all__ = [
    "read_rows",
    "read_files",
    "file_shape",
    "FileShape",
    "column_sizes",
    "ColumnSizes",
    "PageReadStats",
    "ranges_to_positions",
    "clear_cache",
    "row_group_starts",
]
