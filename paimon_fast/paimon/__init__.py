"""Paimon tables read with pypaimon, pruned with their file indexes.

    from pypaimon import CatalogFactory
    import paimon_fast as pf
    from paimon_fast.paimon import read

    table = CatalogFactory.create({"warehouse": wh}).get_table("db.t")
    r = read(table, pf.field("category") == "red", columns=["id", "price"])
    r.to_arrow(); r.to_duckdb("t"); print(r.report, r.explain())

* :func:`read`: the lazy read object (Arrow, the batch reader, pandas, Polars, DuckDB, ``count``,
  ``explain``), streamed split by split (``stream.py``); :func:`read_builder`: pypaimon's
  ``ReadBuilder`` shape over it (``builder.py``).
* :func:`read_with_index` / :func:`plan_with_index` / :class:`IndexPruner`:
  pruned scans (``scan.py``).
* :func:`legacy_manifest_table`: Paimon 0.9 manifests (``compat.py``).
* :func:`read_deletion_vector`: 32- and 64-bit deletion vectors (``deletion.py``).
* :func:`rewrite_file_index`: add the configured indexes to existing files (``rewrite.py``).
* :func:`optimize`: rewrite an append table's files clustered by columns, with their file
  indexes, in one commit, as Paimon's sort compaction (``sort_compact.py``).
* :func:`top_n`: exact ``ORDER BY c [DESC] LIMIT k`` from range-bitmap file indexes (``topn.py``).
* :func:`create_global_index`: bitmap / multivalue global indexes inside row-tracking
  tables, in-process or on Spark (``globalindex.py``); the reads above use them.
* :func:`to_pypaimon` / :func:`from_pypaimon`: predicate translation.

Needs the ``tables`` extra (pypaimon): without it these functions raise
:class:`~paimon_fast.errors.MissingDependencyError` naming it.
"""

from .functions import *  # noqa: F401,F403 (the package's names, see functions.py)
from .functions import __all__  # noqa: F401
