"""A Parquet dataset's files: what they are called and where they sit.

Data files are the ``*.parquet`` files under the root; names and directories
starting with ``_`` or ``.`` are ignored (as Spark does).  Hive-style ``k=v``
directories give a file's partition values.  Each data file's Paimon file index
container sits beside it (``<name>.parquet.index``) and the catalog at the root
(``_paimon_fast_catalog.json``); see :mod:`paimon_fast.tables.parquet`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional, Tuple

CATALOG_NAME = "_paimon_fast_catalog.json"
INDEX_SUFFIX = ".index"
DATA_SUFFIXES = (".parquet",)
HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"


def is_data_file_name(name: str) -> bool:
    return not name.startswith(("_", ".")) and name.endswith(DATA_SUFFIXES)


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
    """One data file: relative POSIX path (the catalog key), absolute path, size, mtime, partition values."""

    path: str
    abs_path: str
    size: int
    mtime_ns: int
    partition: Tuple[Tuple[str, Optional[str]], ...] = ()

    @property
    def index_path(self) -> str:
        return self.abs_path + INDEX_SUFFIX

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]
