"""Where indexes live, per kind of table.

Each table kind lists its data files with their indexes and answers one
question, "which files and rows may match this predicate" (:meth:`plan`), so
the command line and the Spark read are written once for all kinds.

* :class:`ParquetDataset` (``tables/parquet.py``): a directory of Parquet files,
  partitioned or not, with a Paimon file index container per data file in
  ``_file_index/`` and a versioned JSON catalog (``tables/catalog.py``); every
  operation works on one snapshot, and an index is used only for the version of
  the file it was built from (``tables/identity.py``).
"""

from ..read.arrow_filter import coerce_literals, to_arrow_expression
from .parquet import CATALOG_NAME, BuildReport, DataFile, FilePlan, IndexSpec, ParquetDataset, ScanPlan, ScanReport

__all__ = [
    "ParquetDataset",
    "DataFile",
    "FilePlan",
    "ScanPlan",
    "ScanReport",
    "BuildReport",
    "IndexSpec",
    "CATALOG_NAME",
    "to_arrow_expression",
    "coerce_literals",
]
