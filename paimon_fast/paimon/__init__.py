"""Paimon tables read with pypaimon, pruned with their file indexes.

    from pypaimon import CatalogFactory
    import paimon_fast as pf
    from paimon_fast.paimon import read_with_index

    table = CatalogFactory.create({"warehouse": wh}).get_table("db.t")
    arrow, report = read_with_index(table, pf.field("category") == "red")
    print(report)      # files planned / skipped, rows skipped, index time

* :func:`read_with_index` / :func:`plan_with_index` / :class:`IndexPruner`:
  pruned scans (``scan.py``).
* :func:`legacy_manifest_table`: Paimon 0.9 manifests (``compat.py``).
* :func:`read_deletion_vector`: 32- and 64-bit deletion vectors (``deletion.py``).
* :func:`rewrite_file_index`: add the configured indexes to existing files (``rewrite.py``).
* :func:`top_n`: exact ``ORDER BY c [DESC] LIMIT k`` from range-bitmap file indexes (``topn.py``).
* :func:`create_global_index`: bitmap / multivalue global indexes inside row-tracking
  tables, in-process or on Spark (``globalindex.py``); the reads above use them.
* :func:`to_pypaimon` / :func:`from_pypaimon`: predicate translation.

Needs the ``tables`` extra (pypaimon): without it these functions raise
:class:`~paimon_fast.errors.MissingDependencyError` naming it.
"""
from ..errors import needs
from .compat import legacy_file_io, legacy_manifest_table, upgrade_manifest_bytes
from .deletion import read_deletion_vector
from .globalindex import create_global_index
from .predicates import as_predicate, from_pypaimon, to_pypaimon
from .scan import IndexPruner, PruneReport, index_applicability, plan_with_index, read_with_index

# without pypaimon these raise one MissingDependencyError naming the extra, not a bare ImportError
_needs_pypaimon = needs("pypaimon", "paimon_fast.paimon (Paimon tables)")
read_with_index = _needs_pypaimon(read_with_index)
plan_with_index = _needs_pypaimon(plan_with_index)
index_applicability = _needs_pypaimon(index_applicability)
legacy_file_io = _needs_pypaimon(legacy_file_io)
legacy_manifest_table = _needs_pypaimon(legacy_manifest_table)
to_pypaimon = _needs_pypaimon(to_pypaimon)
create_global_index = _needs_pypaimon(create_global_index)


@_needs_pypaimon
def top_n(table, column, k, **kw):
    """See :func:`paimon_fast.paimon.topn.top_n`."""
    from .topn import top_n as _impl

    return _impl(table, column, k, **kw)


@_needs_pypaimon
def rewrite_file_index(spark, table, options=None, **kw):
    """See :func:`paimon_fast.paimon.rewrite.rewrite_file_index`."""
    from .rewrite import rewrite_file_index as _impl

    return _impl(spark, table, options, **kw)


__all__ = [
    "read_with_index", "plan_with_index", "IndexPruner", "PruneReport", "index_applicability",
    "legacy_manifest_table", "legacy_file_io", "upgrade_manifest_bytes", "read_deletion_vector",
    "to_pypaimon", "from_pypaimon", "as_predicate", "rewrite_file_index", "create_global_index", "top_n",
]
