"""Hudi RFC-92 bitmap index, maintained in a sidecar and used for file-group and row pruning.

    import paimon_fast.hudi as ph
    ph.build_index(spark, "/data/trips", ["city", "rider"])      # or spark=None: in-process
    ph.prune("/data/trips", pf.field("city") == "chennai")       # candidate slices + row positions
    r = ph.read("/data/trips", "city = 'chennai'", columns=["rider"])   # in-process, lazy
    r.to_arrow(); r.to_duckdb("trips"); print(r.explain())
    res = ph.read(spark, "/data/trips", pf.field("city") == "chennai")   # on Spark
    res.df, res.report

See :mod:`paimon_fast.hudi.model` (record keys, canonical values, bitmap bytes),
:mod:`~paimon_fast.hudi.storage` (sidecar layout), :mod:`~paimon_fast.hudi.build`
(maintenance), :mod:`~paimon_fast.hudi.prune`, :mod:`~paimon_fast.hudi.slices` (reading a slice),
:mod:`~paimon_fast.hudi.stream` (the in-process read object) and :mod:`~paimon_fast.hudi.read_job`
(``read``: in-process, or on Spark with a SparkSession first).  ``paimon_fast.hudi.read`` is the
function; the module of that old path is :mod:`~paimon_fast.hudi.read_job` (``sys.modules`` maps
the old name to it).
"""

import sys as _sys

from .build import build_index, index_slice
from .model import bitmap_key, canonical_literal, canonical_strings, decode_bitmap, encode_bitmap, parse_key
from .prune import Candidate, PruneResult, prune
from . import read_job as _read_job
from .read_job import HudiRead, read, read_spark
from .stream import ArrowRead, read_arrow, read_table
from .storage import INDEX_DIR, read_manifest

# the old module path: ``from paimon_fast.hudi.read import read_arrow`` keeps working (the package's
# ``read`` is the function, so the module lives under another name)
_sys.modules.setdefault(__name__ + ".read", _read_job)

__all__ = [
    "build_index",
    "index_slice",
    "prune",
    "read",
    "read_spark",
    "read_table",
    "read_arrow",
    "ArrowRead",
    "HudiRead",
    "PruneResult",
    "Candidate",
    "bitmap_key",
    "parse_key",
    "canonical_literal",
    "canonical_strings",
    "encode_bitmap",
    "decode_bitmap",
    "INDEX_DIR",
    "read_manifest",
]
