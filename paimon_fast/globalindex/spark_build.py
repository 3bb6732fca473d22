"""The old import path of a Parquet dataset's bitmap global index (kept for callers).

The listing, the build in this process, loading and the row-id mapping live in
:mod:`paimon_fast.tables.globalindex`; the sorted build on Spark in
:mod:`paimon_fast.tables.globalindex_spark`.
"""
# upward import: this module only hands the names on at their old path; the code sits
# with the dataset (tables/), above the index format, because it lists the dataset's files
from ..tables.globalindex import (INDEX_DIR, LISTING, RUNS_PREFIX, build_global_index_local, data_files,
                                  has_global_index, index_dir, listing_is_current, load_global_index, read_listing,
                                  row_ids_to_file_rows)
from ..tables.globalindex_spark import (LEGACY_MAX_PARALLELISM, LEGACY_RECORDS_PER_RANGE, OPT_MAX_PARALLELISM,
                                        OPT_RECORDS_PER_RANGE, build_global_index)

__all__ = ["INDEX_DIR", "LISTING", "RUNS_PREFIX", "OPT_RECORDS_PER_RANGE", "OPT_MAX_PARALLELISM",
           "LEGACY_RECORDS_PER_RANGE", "LEGACY_MAX_PARALLELISM", "data_files", "index_dir", "build_global_index",
           "build_global_index_local", "read_listing", "has_global_index", "listing_is_current",
           "load_global_index", "row_ids_to_file_rows"]
