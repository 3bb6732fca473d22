"""The global index types, and a writer or a reader of one file of a type.

``index_type="bitmap"`` (Java's ``bitmap`` global indexer), ``"btree"`` (Java's ``btree``
global indexer: SST files of keys and row-id lists) or ``"multivalue"`` (an ``ARRAY<T>``
column, one bitmap per distinct element); :func:`is_global_index` tells a bitmap global
index file by its footer, :func:`~paimon_fast.globalindex.btree.is_btree_index` a BTree one.
"""

from __future__ import annotations

from .btree import BTreeGlobalIndexWriter
from .format import FOOTER_LENGTH, MAGIC, BitmapGlobalIndexWriter, MultiValueGlobalIndexWriter
from .index import BitmapGlobalIndexReader, BTreeGlobalIndexReader, MultiValueGlobalIndexReader

INDEX_TYPE = "bitmap"
MULTIVALUE = "multivalue"
BTREE = "btree"
INDEX_TYPES = (INDEX_TYPE, MULTIVALUE, BTREE)


def _check_type(index_type):
    if index_type not in INDEX_TYPES:
        raise ValueError(f"unknown global index type {index_type!r} (known: {', '.join(INDEX_TYPES)})")


def writer(dtype, options=None, index_type=INDEX_TYPE):
    """A writer for one global index file over a column of Paimon type ``dtype``:
    ``index_type="bitmap"`` (:class:`BitmapGlobalIndexWriter`), ``"btree"``
    (:class:`~paimon_fast.globalindex.btree.BTreeGlobalIndexWriter`) or ``"multivalue"`` for an
    ``ARRAY<T>`` column (:class:`MultiValueGlobalIndexWriter`, ``write_batch`` takes list arrays)."""
    _check_type(index_type)
    if index_type == MULTIVALUE:
        return MultiValueGlobalIndexWriter(dtype, options)
    if index_type == BTREE:
        return BTreeGlobalIndexWriter(dtype, options)
    return BitmapGlobalIndexWriter(dtype, options)


def reader(dtype, data_or_path, options=None, total_row_count=None, index_type=INDEX_TYPE):
    """A reader over one file (bytes, a path, a binary file or a Source); ``index_type``
    ``"multivalue"`` with an ``ARRAY<T>`` type reads a multivalue file, ``"btree"`` a BTree file."""
    _check_type(index_type)
    if index_type == MULTIVALUE:
        return MultiValueGlobalIndexReader(dtype, data_or_path, options, total_row_count)
    if index_type == BTREE:
        return BTreeGlobalIndexReader(dtype, data_or_path, options, total_row_count)
    return BitmapGlobalIndexReader(dtype, data_or_path, options, total_row_count)


def is_global_index(path) -> bool:
    """Does the file end with the bitmap global index footer magic ("BGIX")?"""
    import os
    import struct

    try:
        size = os.path.getsize(path)
        if size < FOOTER_LENGTH:
            return False
        with open(path, "rb") as f:
            f.seek(size - 4)
            return struct.unpack(">i", f.read(4))[0] == MAGIC
    except OSError:
        return False
