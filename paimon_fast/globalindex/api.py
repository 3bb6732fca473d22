"""The names :mod:`paimon_fast.globalindex` exports (its ``__init__`` hands them on): the
writers, readers and many-file classes of the built-in global index types, the key codec,
option keys and LIKE helpers, and the registry of types by name (:mod:`.registry`)."""

from ..core.result import UNSUPPORTED
from .btree import BTreeGlobalIndexWriter, BTreeIndexFile, is_btree_index
from .factory import BTREE, INDEX_TYPE, INDEX_TYPES, MULTIVALUE, is_global_index, reader, writer
from .format import (
    DEFAULT_FALLBACK,
    FOOTER_LENGTH,
    MAGIC,
    OPT_BLOCK_SIZE,
    OPT_COMPRESSION,
    OPT_FALLBACK,
    OPT_LEVEL,
    OPT_MV_BLOCK_SIZE,
    OPT_MV_COMPRESSION,
    OPT_MV_LEVEL,
    BitmapGlobalIndexWriter,
    BitmapIndexFile,
    MultiValueGlobalIndexWriter,
    element_type,
    write_atomic,
)
from .keys import KINDS, KeyCodec
from .like import like_key_predicate, like_optimize, like_to_regex
from .meta import SortedIndexFileMeta
from .registry import GlobalIndexType
from .index import (
    BitmapGlobalIndexReader,
    BTreeGlobalIndex,
    BTreeGlobalIndexReader,
    GlobalIndex,
    MultiValueGlobalIndex,
    MultiValueGlobalIndexReader,
)

__all__ = [
    "writer",
    "reader",
    "GlobalIndex",
    "BitmapGlobalIndexWriter",
    "BitmapGlobalIndexReader",
    "BitmapIndexFile",
    "SortedIndexFileMeta",
    "KeyCodec",
    "MAGIC",
    "FOOTER_LENGTH",
    "UNSUPPORTED",
    "write_atomic",
    "is_global_index",
    "MultiValueGlobalIndexWriter",
    "MultiValueGlobalIndex",
    "MultiValueGlobalIndexReader",
    "MULTIVALUE",
    "BTreeGlobalIndexWriter",
    "BTreeGlobalIndex",
    "BTreeGlobalIndexReader",
    "BTreeIndexFile",
    "BTREE",
    "is_btree_index",
    # also handed on at this path: the type names, option keys and LIKE helpers
    "INDEX_TYPE",
    "INDEX_TYPES",
    "GlobalIndexType",
    "KINDS",
    "element_type",
    "DEFAULT_FALLBACK",
    "OPT_FALLBACK",
    "OPT_BLOCK_SIZE",
    "OPT_COMPRESSION",
    "OPT_LEVEL",
    "OPT_MV_BLOCK_SIZE",
    "OPT_MV_COMPRESSION",
    "OPT_MV_LEVEL",
    "like_optimize",
    "like_to_regex",
    "like_key_predicate",
]
