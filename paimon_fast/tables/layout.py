"""A Parquet dataset's files: what they are called and where they sit.

Data files are the ``*.parquet`` files under the root; names and directories
starting with ``_`` or ``.`` are ignored (as Spark does).  Hive-style ``k=v``
directories give a file's partition values.

Everything paimon-fast writes lives under names that every Parquet reader skips (a
leading ``_``: Spark, Hive, pyarrow and DuckDB's ``**/*.parquet`` globs never see
them), so the directory stays a plain Parquet dataset to them: each data file's
Paimon file index container in ``_file_index/<relative path>.index``
(:func:`index_rel_path`), the catalog ``_paimon_fast_catalog.json``, the global
indexes in ``_global_index/``, deletion vectors in ``_deletion_vectors/``; see
:mod:`paimon_fast.tables.parquet`.  Datasets indexed before this layout keep their
containers beside the data files (``<name>.parquet.index``,
:attr:`DataFile.legacy_index_path`): they are read where they are and moved on the
next build.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional, Tuple

CATALOG_NAME = "_paimon_fast_catalog.json"
INDEX_SUFFIX = ".index"
FILE_INDEX_DIR = "_file_index"
DATA_SUFFIXES = (".parquet",)
HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"


def is_data_file_name(name: str) -> bool:
    return not name.startswith(("_", ".")) and name.endswith(DATA_SUFFIXES)


def index_rel_path(rel: str, tag: Optional[str] = None) -> str:
    """Where the file index container of the data file ``rel`` (relative POSIX path) lives,
    relative to the root: ``_file_index/<rel>.index``, or ``_file_index/<rel>.<tag>.index``
    with a content tag (object stores: a new name for new bytes)."""
    return f"{FILE_INDEX_DIR}/{rel}{'.' + tag if tag else ''}{INDEX_SUFFIX}"


def data_rel_of_index(rel_index: str) -> Optional[str]:
    """The data file (relative path) whose container is at ``rel_index`` (relative to the root),
    for both layouts: ``_file_index/<rel>[.<tag>].index`` and the old ``<rel>[.<tag>].index``."""
    if not rel_index.endswith(INDEX_SUFFIX):
        return None
    if rel_index.startswith(FILE_INDEX_DIR + "/"):
        rel_index = rel_index[len(FILE_INDEX_DIR) + 1 :]
    for suffix in DATA_SUFFIXES:
        cut = rel_index.rfind(suffix)
        if cut > 0:
            return rel_index[: cut + len(suffix)]
    return None


def local_path(uri: str) -> str:
    """A local filesystem path from a path or a ``file:`` URI (as Spark's ``_metadata.file_path``)."""
    if uri.startswith("file:"):
        from urllib.parse import unquote, urlparse

        return unquote(urlparse(uri).path)
    return uri


def parse_partition(rel_path: str) -> Dict[str, Optional[str]]:
    """``{"k": "v"}`` from the ``k=v`` directories of a relative path (raw strings; hive null -> None)."""
    out = {}
    for part in rel_path.split("/")[:-1]:
        if "=" in part:
            k, v = part.split("=", 1)
            from urllib.parse import unquote

            v = unquote(v)
            out[unquote(k)] = None if v == HIVE_NULL else v
    return out


@dataclass(frozen=True)
class DataFile:
    """One data file: relative POSIX path (the catalog key), absolute path, size, mtime, partition
    values, and the identity it had when listed (a :class:`paimon_fast.tables.identity.Identity`:
    what its indexes and deletion vector must have been recorded for; None when not listed)."""

    path: str
    abs_path: str
    size: int
    mtime_ns: int
    partition: Tuple[Tuple[str, Optional[str]], ...] = ()
    identity: Optional[object] = None

    @property
    def legacy_index_path(self) -> str:
        """Where datasets indexed before the ``_file_index/`` layout keep this file's container."""
        return self.abs_path + INDEX_SUFFIX

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]
