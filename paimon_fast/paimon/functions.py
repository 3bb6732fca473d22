"""The functions :mod:`paimon_fast.paimon` hands on, each raising one
:class:`~paimon_fast.errors.MissingDependencyError` naming the ``tables`` extra when pypaimon is
missing (not a bare ImportError)."""

from ..errors import needs
from .compat import legacy_file_io, legacy_manifest_table, upgrade_manifest_bytes
from .deletion import read_deletion_vector
from .globalindex import create_global_index
from .predicates import as_predicate, from_pypaimon, to_pypaimon
from .scan import IndexPruner, PruneReport, index_applicability, plan_with_index
from .stream import read_with_index

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
def read(table, where=None, columns=None, limit=None, **options):
    """The rows of the pypaimon table ``table`` where ``where`` (a predicate, a pypaimon
    ``Predicate`` or SQL text) holds, with ``columns``: a :class:`~paimon_fast.read.lazy.LazyRead`
    planned on first need and streamed split by split (:mod:`.stream`); ``limit`` stops reading
    once that many rows are out.  ``options``: ``max_workers``, ``fast`` (False: pypaimon's
    planner and reader), ``use_cache`` (the fast path's plan cache)."""
    from ..read.lazy import LazyRead
    from .stream import PaimonSource

    src = PaimonSource(table, where, None if columns is None else list(columns), **options)
    src.reader()  # the predicate and columns checked against the table now
    return LazyRead(src, limit)


@_needs_pypaimon
def read_builder(table, **options):
    """pypaimon's ``ReadBuilder`` shape over :func:`read`: see :mod:`paimon_fast.paimon.builder`."""
    from .builder import read_builder as _impl

    return _impl(table, **options)


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


@_needs_pypaimon
def optimize(table, cluster_by, strategy="order", **kw):
    """See :func:`paimon_fast.paimon.sort_compact.optimize`: the table's files rewritten clustered by
    ``cluster_by``, with its file indexes, in one commit."""
    from .sort_compact import optimize as _impl

    return _impl(table, cluster_by, strategy, **kw)


__all__ = [
    "read",
    "read_builder",
    "read_with_index",
    "plan_with_index",
    "IndexPruner",
    "PruneReport",
    "index_applicability",
    "legacy_manifest_table",
    "legacy_file_io",
    "upgrade_manifest_bytes",
    "read_deletion_vector",
    "to_pypaimon",
    "from_pypaimon",
    "as_predicate",
    "rewrite_file_index",
    "optimize",
    "create_global_index",
    "top_n",
]
