"""Hudi RFC-92 bitmap index, maintained in a sidecar and used for file-group and row pruning.

    import paimon_fast.hudi as ph
    ph.build_index(spark, "/data/trips", ["city", "rider"])      # or spark=None: in-process
    ph.prune("/data/trips", pf.field("city") == "chennai")       # candidate slices + row positions
    res = ph.read(spark, "/data/trips", pf.field("city") == "chennai")
    res.df, res.report

See :mod:`paimon_fast.hudi.model` (record keys, canonical values, bitmap bytes),
:mod:`~paimon_fast.hudi.storage` (sidecar layout), :mod:`~paimon_fast.hudi.build`
(maintenance), :mod:`~paimon_fast.hudi.prune` and :mod:`~paimon_fast.hudi.read`.
"""
from .build import build_index, index_slice
from .model import bitmap_key, canonical_literal, canonical_strings, decode_bitmap, encode_bitmap, parse_key
from .prune import Candidate, PruneResult, prune
from .read import ArrowRead, HudiRead, read, read_arrow
from .storage import INDEX_DIR, read_manifest

__all__ = [
    "build_index", "index_slice", "prune", "read", "read_arrow", "ArrowRead", "HudiRead", "PruneResult", "Candidate",
    "bitmap_key", "parse_key", "canonical_literal", "canonical_strings", "encode_bitmap", "decode_bitmap",
    "INDEX_DIR", "read_manifest",
]
