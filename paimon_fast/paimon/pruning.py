"""What every index-pruned read of a Paimon table shares, beneath :mod:`.scan`
(pypaimon's planner) and :mod:`.fastpath` (our own planner): whether Java
would use file indexes on a table at all (:func:`index_applicability`), one
data file's index answer with the predicate's current column names mapped to
the file's own (:class:`_SchemaResolver`, :func:`_result_of`), the stream an
index is read through (:class:`_CountingSource`), the report of what
pruning did (:class:`PruneReport`), and :class:`Fallback`, raised where our own
path does not handle a table or query (the caller then takes pypaimon's).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field as dc_field
from typing import Dict, List, Optional, Tuple

from ..errors import UnknownIndexTypeError, UnsupportedTypeError
from ..io.parquet.rows import PageReadStats
from ..fileindex import evaluate_tree
from ..core.predicate import Leaf, Predicate
from ..core.result import REMAIN, FileIndexResult
from ..io.source import FileObjSource

INDEX_SUFFIX = ".index"


class Fallback(Exception):
    """The fast path does not handle this table or query (the reason is the message)."""


@dataclass
class PruneReport:
    """What index pruning did for one scan."""

    applied: bool = True
    reason: str = ""
    splits_planned: int = 0
    files_planned: int = 0
    files_skipped: int = 0
    files_with_index: int = 0
    rows_planned: int = 0
    rows_skipped: int = 0
    rows_selected: int = 0  # rows handed to pypaimon's reader (ranges after coalescing)
    rows_index_selected: int = 0  # rows the indexes and deletion vectors left, before coalescing
    rows_returned: Optional[int] = None
    index_bytes_read: int = 0
    deletion_vectors_folded: int = 0
    deletion_vectors_converted: int = 0  # 64-bit DVs of merge-read splits handed to pypaimon as 32-bit ones
    plan_seconds: float = 0.0
    index_seconds: float = 0.0
    read_seconds: Optional[float] = None
    skipped_files: List[str] = dc_field(default_factory=list)
    files_pruned_by_stats: int = 0  # fast path: files min/max stats ruled out (pypaimon's plan drops them unseen)
    rows_decoded: Optional[int] = None  # fast path: rows decoded (files scanned whole + pages of files read at rows)
    decoded: Optional[PageReadStats] = None  # fast path: what the reads at known rows decoded (rows, pages, bytes)
    fast_path: bool = False  # planned and read by :mod:`.fastpath` (else pypaimon's planner and reader)
    plan_cached: bool = False  # the fast path's plan came from its per-snapshot cache
    fallback_reason: str = ""  # why the fast path was not taken
    global_indexes: List[str] = dc_field(default_factory=list)  # global indexes used (row-tracking tables)
    global_index_search_mode: str = ""  # the search mode applied to rows no global index covers

    def as_dict(self) -> dict:
        d = asdict(self)
        d["skipped_files"] = list(self.skipped_files)
        return d

    def __str__(self):
        s = (
            f"files planned {self.files_planned}, skipped {self.files_skipped}; rows planned "
            f"{self.rows_planned}, skipped {self.rows_skipped}, to read {self.rows_selected}; "
            f"index {self.index_seconds * 1000:.1f} ms over {self.index_bytes_read} bytes"
        )
        if self.rows_returned is not None:
            s += f"; rows returned {self.rows_returned}"
        if self.fast_path:
            s += (
                f"; fast path (plan {'cached' if self.plan_cached else 'read'}, {self.files_pruned_by_stats} "
                f"files pruned by partition/stats)"
            )
            if self.rows_decoded is not None:
                s += f"; rows decoded {self.rows_decoded:,}"
            if self.decoded is not None and self.decoded.rows:
                s += f" (reads at known rows: {self.decoded})"
        elif self.fallback_reason:
            s += f"; pypaimon path ({self.fallback_reason})"
        if not self.applied:
            s += f" (index not applied: {self.reason})"
        for g in self.global_indexes:
            s += f"\nglobal index used: {g}" + (
                f", search mode {self.global_index_search_mode}" if self.global_index_search_mode else ""
            )
        return s


def _opt(table, key, default=None):
    try:
        return table.table_schema.options.get(key, default)
    except AttributeError:  # pragma: no cover - other table kinds
        return default


def _bool_opt(table, key, default: bool) -> bool:
    v = _opt(table, key)
    return default if v is None else str(v).strip().lower() == "true"


def index_applicability(table) -> Tuple[bool, str]:
    """Whether Java would use file indexes when reading ``table`` at all."""
    if not _bool_opt(table, "file-index.read.enabled", True):
        return False, "file-index.read.enabled is false"
    if _bool_opt(table, "data-evolution.enabled", False):
        return False, "data-evolution tables are not pruned by file index"
    if getattr(table, "is_primary_key_table", False) and not _bool_opt(table, "deletion-vectors.enabled", False):
        return False, "primary-key table without deletion vectors (Java reads it merged, without file index)"
    return True, ""


class _SchemaResolver:
    """Maps the table's current column names to a data file's own columns by field id."""

    def __init__(self, table):
        self.table = table
        self.current = {f.name: f for f in table.fields}
        self._by_schema: Dict[int, Tuple[Dict[str, str], Dict[str, str]]] = {}

    def for_schema(self, schema_id: int):
        """``(current name -> file name, file name -> type string)`` for a schema id."""
        got = self._by_schema.get(schema_id)
        if got is None:
            if schema_id == self.table.table_schema.id:
                schema = self.table.table_schema
            else:
                schema = self.table.schema_manager.get_schema(schema_id)
            by_id = {f.id: f for f in schema.fields}
            names: Dict[str, str] = {}
            types: Dict[str, str] = {}
            for name, cur in self.current.items():
                old = by_id.get(cur.id)
                # a column added later is absent from the file; a retyped one
                # has an index over the old type: neither can prune
                if old is None or str(old.type).replace(" NOT NULL", "") != str(cur.type).replace(" NOT NULL", ""):
                    continue
                names[name] = old.name
                types[old.name] = str(old.type)
            got = (names, types)
            self._by_schema[schema_id] = got
        return got


def _result_of(container, predicate: Predicate, names: Dict[str, str], global_leaf=None) -> FileIndexResult:
    """The file index's answer; ``global_leaf(leaf)`` (a global index's answer inside this
    file, or None) is ANDed in leaf by leaf.  ``container`` None: global answers only."""

    def visit(leaf: Leaf):
        res = REMAIN
        file_name = names.get(leaf.name)
        if file_name is not None and container is not None:
            try:
                res = container.visit_leaf(Leaf(leaf.op, file_name, leaf.literals))
            except (UnsupportedTypeError, UnknownIndexTypeError, KeyError, TypeError, ValueError):
                # an index that cannot answer this leaf keeps the file (IndexFormatError
                # is a ValueError too: a corrupt index must not drop data)
                res = REMAIN
        g = global_leaf(leaf) if global_leaf is not None else None
        return res if g is None else g.and_(res)

    return evaluate_tree(predicate, visit)


class _CountingSource(FileObjSource):
    """A seekable stream as a Source that counts the bytes it reads."""

    def __init__(self, f):
        super().__init__(f)
        self.bytes_read = 0

    def _read(self, offset, length):
        self.bytes_read += length
        return super()._read(offset, length)
