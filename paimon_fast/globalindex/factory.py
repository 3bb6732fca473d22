"""The global index types, and a writer or a reader of one file of a type.

The types are those of :mod:`.registry` (the built-in ``"bitmap"``, Java's ``bitmap`` global
indexer, ``"multivalue"``, an ``ARRAY<T>`` column with one bitmap per distinct element, and
``"btree"``, Java's ``btree`` global indexer: SST files of keys and row-id lists, plus any
registered since); :func:`is_global_index` tells a bitmap global index file by its footer,
:func:`~paimon_fast.globalindex.btree.is_btree_index` a BTree one.
"""

from __future__ import annotations

from . import registry
from .format import is_global_index  # noqa: F401 (handed on at its old path)

INDEX_TYPE = "bitmap"
MULTIVALUE = "multivalue"
BTREE = "btree"
INDEX_TYPES = registry.names()  # the built-in types: ("bitmap", "multivalue", "btree")


def _check_type(index_type):
    """The registered type ``index_type`` (:class:`~paimon_fast.errors.UnknownGlobalIndexTypeError`,
    a ValueError, for an unknown name)."""
    return registry.get(index_type)


def writer(dtype, options=None, index_type=INDEX_TYPE):
    """A writer for one global index file over a column of Paimon type ``dtype``:
    ``index_type="bitmap"`` (:class:`BitmapGlobalIndexWriter`), ``"btree"``
    (:class:`~paimon_fast.globalindex.btree.BTreeGlobalIndexWriter`), ``"multivalue"`` for an
    ``ARRAY<T>`` column (:class:`MultiValueGlobalIndexWriter`, ``write_batch`` takes list arrays),
    or any type registered in :mod:`.registry`."""
    return _check_type(index_type).new_writer(dtype, options)


def reader(dtype, data_or_path, options=None, total_row_count=None, index_type=INDEX_TYPE):
    """A reader over one file (bytes, a path, a binary file or a Source); ``index_type``
    ``"multivalue"`` with an ``ARRAY<T>`` type reads a multivalue file, ``"btree"`` a BTree file
    (any registered type: its reader)."""
    return _check_type(index_type).new_reader(dtype, data_or_path, options, total_row_count)
