"""The old import path of a Parquet dataset's bitmap global index (kept for callers).

The listing, the build in this process, loading and the row-id mapping live in
:mod:`paimon_fast.tables.globalindex`; the sorted build on Spark in
:mod:`paimon_fast.tables.globalindex_spark`.
"""

# upward import: this module only hands the names on at their old path; the code sits
# with the dataset (tables/), above the index format, because it lists the dataset's files
from ..tables import globalindex as _dataset
from ..tables import globalindex_spark as _spark

INDEX_DIR, LISTING, RUNS_PREFIX = _dataset.INDEX_DIR, _dataset.LISTING, _dataset.RUNS_PREFIX
data_files = _dataset.data_files
index_dir = _dataset.index_dir
build_global_index_local = _dataset.build_global_index_local
read_listing = _dataset.read_listing
has_global_index = _dataset.has_global_index
listing_is_current = _dataset.listing_is_current
load_global_index = _dataset.load_global_index
row_ids_to_file_rows = _dataset.row_ids_to_file_rows

OPT_RECORDS_PER_RANGE, OPT_MAX_PARALLELISM = _spark.OPT_RECORDS_PER_RANGE, _spark.OPT_MAX_PARALLELISM
LEGACY_RECORDS_PER_RANGE, LEGACY_MAX_PARALLELISM = _spark.LEGACY_RECORDS_PER_RANGE, _spark.LEGACY_MAX_PARALLELISM
build_global_index = _spark.build_global_index

__all__ = [
    "INDEX_DIR",
    "LISTING",
    "RUNS_PREFIX",
    "OPT_RECORDS_PER_RANGE",
    "OPT_MAX_PARALLELISM",
    "LEGACY_RECORDS_PER_RANGE",
    "LEGACY_MAX_PARALLELISM",
    "data_files",
    "index_dir",
    "build_global_index",
    "build_global_index_local",
    "read_listing",
    "has_global_index",
    "listing_is_current",
    "load_global_index",
    "row_ids_to_file_rows",
]
