"""The built-in global index types, registered by name (:mod:`.registry`): ``bitmap`` (Java's
``bitmap`` global indexer), ``multivalue`` (an ``ARRAY<T>`` column, one bitmap per distinct
element) and ``btree`` (Java's ``btree`` indexer: SST files of keys and row-id lists).

Each registration names its writer, one-file reader, many-file class and the build hooks a
Paimon table's build uses (``group``: one piece of a row range as :class:`~.format.Groups`;
``cut``: a range's merged groups into files).
"""

from __future__ import annotations

import numpy as np

from .btree import BTreeGlobalIndexWriter, is_btree_index
from .btree import files_from_groups as _btree_files
from .format import (
    BitmapGlobalIndexWriter,
    MultiValueGlobalIndexWriter,
    files_from_groups,
    flatten_lists,
    group_column,
    group_column_parallel,
    is_global_index,
    multivalue_file_from_groups,
)
from .index import (
    BitmapGlobalIndexReader,
    BTreeGlobalIndex,
    BTreeGlobalIndexReader,
    GlobalIndex,
    MultiValueGlobalIndex,
    MultiValueGlobalIndexReader,
)
from .registry import GlobalIndexType, register


def group_keys(w, values, local_rids):
    """One piece of a sorted build: the rows grouped by key (the writer's key codec)."""
    arr, _ = w.codec.column(values)
    return group_column_parallel(w.codec, arr, local_rids), len(local_rids)


def group_elements(w, values, local_rids):
    """One piece of a multivalue build: the arrays' elements grouped, and the number of rows."""
    n, elems, erids = flatten_lists(values, np.ascontiguousarray(local_rids, dtype=np.uint64), w.codec)
    return group_column(w.codec, elems, erids), n


def cut_bitmap(groups, w, max_records):
    return files_from_groups(groups, w.block_size, w.encoder, max_records, chunks=True)


def cut_btree(groups, w, max_records):
    return _btree_files(groups, w.block_size, w.encoder, max_records, chunks=True)


def cut_multivalue(groups, w, max_records=None):
    """One file of the shard; its row count is the shard's rows (None: the caller's range)."""
    data, meta = multivalue_file_from_groups(groups, w.block_size, w.encoder)
    return [(data, meta, None)]


register(
    GlobalIndexType(
        "bitmap",
        writer=BitmapGlobalIndexWriter,
        reader=BitmapGlobalIndexReader,
        index=GlobalIndex,
        option_prefix="bitmap-index.",
        detect=is_global_index,
        group=group_keys,
        cut=cut_bitmap,
        sorted=True,
    )
)
register(
    GlobalIndexType(
        "multivalue",
        writer=MultiValueGlobalIndexWriter,
        reader=MultiValueGlobalIndexReader,
        index=MultiValueGlobalIndex,
        option_prefix="multivalue-index.",
        column="array",
        detect=is_global_index,
        group=group_elements,
        cut=cut_multivalue,
        sharded=True,
    )
)
register(
    GlobalIndexType(
        "btree",
        writer=BTreeGlobalIndexWriter,
        reader=BTreeGlobalIndexReader,
        index=BTreeGlobalIndex,
        option_prefix="btree-index.",
        detect=is_btree_index,
        top_n=True,
        group=group_keys,
        cut=cut_btree,
        sorted=True,
    )
)
