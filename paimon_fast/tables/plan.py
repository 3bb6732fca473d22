"""The plan of a dataset read: :class:`FilePlan` (one file's answer), :class:`ScanPlan` (every
file's) and :class:`ScanReport` (what pruning did).  Made by
:meth:`paimon_fast.tables.parquet.ParquetDataset.plan`; read by the dataset's readers in this
process, on Spark's executors and by the streamed read (:mod:`paimon_fast.tables.stream`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional

from pyroaring import BitMap

from ..core.predicate import Predicate
from ..core.result import BitmapResult, FileIndexResult
from .layout import DataFile


@dataclass
class FilePlan:
    """One file's answer: ``result`` is REMAIN, SKIP or a BitmapResult (row positions in the file).

    ``deletion_vector`` is the file's current DeletionVector (None: no deleted
    rows); a BitmapResult never holds deleted positions.  ``exact``: the selected rows (the
    bitmap's, or every row not deleted) are exactly the rows where the predicate holds, because
    every leaf was answered exactly (a partition value, an index that keeps a bitmap per value
    or slice: :meth:`~paimon_fast.fileindex.base.FileIndexReader.answers_exactly`) by an index
    verified for this version of the file (its strong identity as recorded, its bytes as
    checksummed), so readers take them without evaluating the predicate; otherwise they are a
    superset.  ``why``: why the file's index did not answer (``changed since the build``, ``not in
    the catalog ...``, ``index checksum mismatch: ...``); None when it did or there is none.
    """

    file: DataFile
    result: FileIndexResult
    rows: int
    indexed: bool
    error: Optional[str] = None
    deletion_vector: Optional[object] = None
    exact: bool = False
    why: Optional[str] = None  # why the file's index did not answer for it (None: it did, or it has none)
    # of an inexact plan: ``(the plan's predicate, what of it the selected rows still have to be
    # tested against)``, the leaves the file's indexes answered exactly left out of a top-level
    # AND (readers given that predicate test only the rest); None: all of it
    residual: Optional[tuple] = None

    @property
    def skipped(self) -> bool:
        return not self.result.remain

    @property
    def bitmap(self) -> Optional[BitMap]:
        return self.result.bitmap if isinstance(self.result, BitmapResult) else None

    @property
    def rows_to_read(self) -> int:
        if self.skipped:
            return 0
        b = self.bitmap
        if b is not None:
            return min(len(b), self.rows)
        dv = self.deletion_vector
        return self.rows if dv is None else self.rows - dv.cardinality


@dataclass
class ScanReport:
    """What pruning did: files total / skipped, rows skipped by whole files and by bitmaps, time."""

    files_total: int = 0
    files_skipped: int = 0
    files_without_index: int = 0
    files_with_bitmap: int = 0
    index_errors: int = 0
    rows_total: int = 0
    rows_skipped_by_file: int = 0
    rows_skipped_by_bitmap: int = 0
    rows_skipped_by_deletion: int = 0
    files_all_deleted: int = 0
    rows_deleted_total: int = 0
    eval_seconds: float = 0.0
    predicate: str = ""
    global_index_used: List[str] = field(default_factory=list)
    global_index_stale: List[str] = field(default_factory=list)
    bytes_read: int = 0  # read from the store by this call (catalog, indexes; data files on remote stores)
    decoded: Optional[object] = None  # scan(): what the reads of files with row bitmaps decoded (PageReadStats)
    catalog_version: Optional[int] = None  # the catalog version of the snapshot planned (None: no catalog yet)
    unindexed: Dict[str, str] = field(default_factory=dict)  # file -> why its index did not answer

    @property
    def files_read(self) -> int:
        return self.files_total - self.files_skipped

    @property
    def rows_read(self) -> int:
        return self.rows_total - self.rows_skipped_by_file - self.rows_skipped_by_bitmap - self.rows_skipped_by_deletion

    def as_dict(self) -> dict:
        d = dict(self.__dict__)
        d.update(files_read=self.files_read, rows_read=self.rows_read)
        if self.decoded is not None:
            d["decoded"] = self.decoded.as_dict()
        return d

    def _why(self) -> str:
        if not self.unindexed:
            return ""
        by: Dict[str, int] = {}
        for w in self.unindexed.values():
            k = w.split(":", 1)[0]
            by[k] = by.get(k, 0) + 1
        return ": " + ", ".join(f"{n} {k}" for k, n in sorted(by.items()))

    def __str__(self):
        return (
            f"files {self.files_read}/{self.files_total} read ({self.files_skipped} skipped, "
            f"{self.files_without_index} without a current index{self._why()}), "
            f"rows {self.rows_read:,}/{self.rows_total:,} "
            f"read ({self.rows_skipped_by_file:,} skipped with files, {self.rows_skipped_by_bitmap:,} by bitmaps, "
            f"{self.rows_skipped_by_deletion:,} by deletion vectors), "
            f"index evaluation {self.eval_seconds * 1000:.1f} ms, {self.bytes_read:,} bytes read"
            + (f", global index on {', '.join(self.global_index_used)}" if self.global_index_used else "")
            + (
                f", stale global index ignored on {', '.join(self.global_index_stale)}"
                if self.global_index_stale
                else ""
            )
            + (f"; bitmap reads decoded {self.decoded}" if self.decoded is not None and self.decoded.rows else "")
        )


@dataclass
class ScanPlan:
    files: List[FilePlan]
    report: ScanReport
    predicate: Optional[Predicate] = None
    dataset: Optional[object] = field(default=None, repr=False, compare=False)  # the snapshot planned on

    @property
    def kept(self) -> List[FilePlan]:
        return [f for f in self.files if not f.skipped]
